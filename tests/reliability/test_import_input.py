"""Bad input, import and stored records (issue 12): a hostile or broken import file, a store
poisoned by an older engram, and lone surrogates in every text argument, all through the real
daemon (CLI processes and the daemon socket).

Counted for the closing note (bench/results/reliability.json, section `bad_input_import`):
bad inputs tried, crashes (the daemon died), hangs (a call that did not answer in time) and
unclear errors (an answer that is not a clear argument error naming the line and field:
`internal_error`, `memory_unavailable`, `degraded: true`, or a rejection without its line).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core.errors import EngramError
from engram_mcp.core.ids import new_ulid
from tests.reliability._support import Sandbox, fresh_project, record
from tests.test_transfer import BAD_GRAPH_LINES, BAD_MEMORY_LINES, HEADER, _line, _write

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CLI_TIMEOUT_S = 120


class Tally:
    """What the closing note reports for each class of bad input."""

    def __init__(self) -> None:
        self.tried = self.crashes = self.hangs = self.unclear = 0
        self.notes: list[str] = []

    def unclear_answer(self, what: str) -> None:
        self.unclear += 1
        self.notes.append(what[:300])


def _cli_json(sb: Sandbox, project: Path, tally: Tally, *args: str) -> tuple[int, Any]:
    env = sb.env_with(project=project)
    try:
        proc = subprocess.run([sb_python(), "-m", "engram_mcp.interfaces.cli", "--json", *args], cwd=str(project), env=env,
                              capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        tally.hangs += 1
        return -1, None
    if sb.daemon is not None and sb.daemon.poll() is not None:
        tally.crashes += 1
    try:
        return proc.returncode, json.loads(proc.stdout or proc.stderr or "null")
    except ValueError:
        return proc.returncode, {"raw": (proc.stdout + proc.stderr)[-2000:]}


def sb_python() -> str:
    from tests.reliability._support import PYTHON

    return PYTHON


def test_every_bad_import_line_is_reported_with_line_and_field_and_the_rest_is_imported(shared: Sandbox) -> None:
    project = fresh_project(shared, "imp")
    tally = Tally()
    first, last = _line(content="the first good memory: deploys run from bin/deploy"), _line(content="the last good memory: CI is GitHub Actions")
    entities = [{"kind": "entity", "scope": "project", "key": k, "record": {"name": k.upper(), "entity_type": "service"}} for k in ("ea", "eb")]
    bad = [(make(), field) for make, field in BAD_MEMORY_LINES] + [(make(first["id"]), field) for make, field in BAD_GRAPH_LINES]
    objs = [HEADER, first, *entities, *[b for b, _ in bad], last, "{broken json", "[1, 2]"]
    expected = {4 + i + 1: field for i, (_, field) in enumerate(bad)}  # line number -> the field its rejection must name
    path = _write(project / "import.jsonl", *objs)
    tally.tried = len(bad) + 2
    code, out = _cli_json(shared, project, tally, "import", str(path))
    assert code == 0, out
    assert out["counts"]["memory"] == 2 and out["counts"]["entity"] == 2, out["counts"]
    assert out["counts"]["rejected"] == len(bad) + 2, out["counts"]
    got = {r["line"]: r for r in out["rejected"]}
    for line, field in expected.items():
        r = got.get(line)
        if r is None or r.get("field") != field or f"{path}:{line}" not in r.get("error", ""):
            tally.unclear_answer(f"line {line} ({field}): {r}")
    for line in (len(objs) - 1, len(objs)):  # the two lines that are not records at all
        if line not in got:
            tally.unclear_answer(f"line {line} not reported")
    # the store the import went into works for every read and write
    for args in (["show", first["id"], "--history"], ["recall", "how do deploys run"], ["export", str(project / "out.jsonl")],
                 ["forget", last["id"], "--reason", "test"], ["status"]):
        code, res = _cli_json(shared, project, tally, *args)
        if code != 0:
            tally.unclear_answer(f"{args[0]} after the import failed: {res}")
    record("bad_input_import", lines_tried=tally.tried, lines_crashes=tally.crashes, lines_hangs=tally.hangs, lines_unclear=tally.unclear)
    assert (tally.crashes, tally.hangs, tally.unclear) == (0, 0, 0), tally.notes


def test_a_file_of_only_bad_lines_is_an_argument_error_naming_line_and_field(shared: Sandbox) -> None:
    project = fresh_project(shared, "imp-bad")
    tally = Tally()
    cases = [(_line(created_at="31/12/2025"), "created_at"), (_line(importance="very"), "importance"),
             ({**_line(embedding_model="fake-hash-384"), "vector_b64": "AAAA"}, "vector_b64"),
             ({"kind": "relation", "scope": "project", "from": "ea", "to": "eb", "relation_type": "uses", "weight": "x"}, "weight"),
             (_line(content="lone \ud800 surrogate"), "content")]
    for obj, field in cases:
        tally.tried += 1
        path = _write(project / f"bad-{field}.jsonl", HEADER, obj)
        code, out = _cli_json(shared, project, tally, "import", str(path))
        err = out.get("error") if isinstance(out, dict) else None
        if code == 0 or err != "invalid_input" or out.get("degraded") or out.get("field") != field or f"{path}:2" not in out.get("message", ""):
            tally.unclear_answer(f"{field}: exit {code}: {out}")
    record("bad_input_import", files_tried=tally.tried, files_crashes=tally.crashes, files_hangs=tally.hangs, files_unclear=tally.unclear)
    assert (tally.crashes, tally.hangs, tally.unclear) == (0, 0, 0), tally.notes


SURROGATE = "bad \ud800 text"


def _surrogate_calls(mid: str, root: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(op, args, ctx override) with a lone surrogate in one text argument each."""
    store = {"type": "semantic", "scope": "project"}
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("store", {**store, "content": SURROGATE}, {}),
        ("store", {**store, "content": "x", "summary": SURROGATE}, {}),
        ("store", {**store, "content": "x", "tags": [SURROGATE]}, {}),
        ("store", {**store, "content": "x", "category": SURROGATE}, {}),
        ("store", {**store, "content": "x", "metadata": {SURROGATE: 1}}, {}),
        ("store", {**store, "content": "x", "metadata": {"k": [SURROGATE]}}, {}),
        ("store", {**store, "content": "x", "source": {"a": SURROGATE}}, {}),
        ("store", {**store, "content": "x", "related_entities": [{"name": SURROGATE, "type": "t"}]}, {}),
        ("store", {**store, "content": "x", "type": SURROGATE}, {}),
        ("recall", {"query": SURROGATE}, {}),
        ("recall", {"query": "x", "tags": [SURROGATE]}, {}),
        ("update", {"memory_id": mid, "content": SURROGATE}, {}),
        ("update", {"memory_id": mid, "summary": SURROGATE}, {}),
        ("update", {"memory_id": mid, "metadata": {"k": SURROGATE}}, {}),
        ("tag", {"memory_id": mid, "add": [SURROGATE]}, {}),
        ("forget", {"memory_id": mid, "reason": SURROGATE}, {}),
        ("promote", {"memory_id": mid, "target_scope": "user", "reason": SURROGATE}, {}),
        ("get", {"memory_id": SURROGATE}, {}),
        ("link", {"from_id": mid, "to_id": mid, "relation": SURROGATE}, {}),
        ("export", {"path": f"/tmp/{SURROGATE}.jsonl"}, {}),
        ("import", {"path": f"/tmp/{SURROGATE}.jsonl"}, {}),
        ("session_end", {"summary": SURROGATE}, {"session_id": "surrogate-session"}),
        ("status", {}, {"project_root": root + SURROGATE}),
        ("store", {**store, "content": "x"}, {"session_id": SURROGATE}),
    ]
    return calls


def _raw_call(sb: Sandbox, op: str, args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """One request as a JavaScript client writes it: JSON text with the surrogate escaped (\\ud800)."""
    import socket

    from tests.reliability._support import socket_of

    line = json.dumps({"id": 1, "op": op, "args": args, "ctx": ctx}).encode() + b"\n"  # ensure_ascii: "\\ud800" in the text
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(str(socket_of(sb)))
        s.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


def test_a_lone_surrogate_in_any_text_argument_is_a_clear_argument_error(shared: Sandbox) -> None:
    """Item 9: a lone surrogate (what a JS client sends when it slices an emoji) must be
    `invalid_input`, never `memory_unavailable` with degraded: true (looks like a broken store)."""
    project = fresh_project(shared, "surrogate")
    mid = shared.call("store", {"content": "a memory to edit", "type": "semantic", "scope": "project"}, project=project)["memory_id"]
    tally = Tally()
    for op, args, ctx in _surrogate_calls(mid, str(project)):
        tally.tried += 1
        try:
            answer = _raw_call(shared, op, args, {"project_root": ctx.get("project_root", str(project)), "session_id": ctx.get("session_id")})
        except (TimeoutError, OSError):
            tally.hangs += 1
            continue
        if shared.daemon is not None and shared.daemon.poll() is not None:
            tally.crashes += 1
        env = answer.get("error") or {}
        if answer.get("ok") or env.get("error") != "invalid_input" or env.get("degraded"):
            tally.unclear_answer(f"{op} {sorted(args)}: {answer}")
    # the same through the client library (the CLI, hooks): a clear error before anything is sent
    with pytest.raises(EngramError) as err:
        with shared.client(timeout=60) as c:
            c.call("store", {"content": SURROGATE, "type": "semantic", "scope": "project"}, project_root=str(project))
    assert err.value.code == "invalid_input"
    assert shared.call("get", {"memory_id": mid}, project=project)["content"] == "a memory to edit"  # nothing changed
    record("bad_input_import", surrogate_tried=tally.tried, surrogate_crashes=tally.crashes, surrogate_hangs=tally.hangs,
           surrogate_unclear=tally.unclear)
    assert (tally.crashes, tally.hangs, tally.unclear) == (0, 0, 0), tally.notes


def _poison(sb: Sandbox, project: Path) -> dict[str, str]:
    """Records holding NUL in every kind of field, written as an older engram could have
    (straight into the engine, past today's checks). Returns their ids by what they poison."""
    from surrealdb import RecordID

    from engram_mcp.services.records import now_dt
    from engram_mcp.services.service import RequestContext
    from engram_mcp.storage import queries as q

    ctx = RequestContext(project)
    ids = {}
    with sb.service() as svc:
        healthy = svc.store(ctx, content="a healthy memory: the deploy key rotates monthly", type="semantic", scope="project")
        ids["healthy"] = healthy["memory_id"]
        h = svc.handle(ctx, "project")
        now = now_dt()
        base = {"memory_type": "semantic", "scope": "project", "created_at": now, "updated_at": now, "last_accessed_at": now,
                "status_changed_at": now}
        for name, fields in {"content": {"content": "poisoned\x00 deploy content"},
                             "summary": {"content": "deploy summary poisoned", "summary": "s\x00"},
                             "tags": {"content": "deploy tags poisoned", "tags": ["t\x00ag"]},
                             "metadata": {"content": "deploy metadata poisoned", "metadata": {"k\x00": ["v\x00", {"d": "\x00"}]}}}.items():
            key = new_ulid()
            h.q(q.CREATE_MEMORY, {"id": key, "record": {**base, **fields}})
            ids[name] = f"memory:{key}"
        h.q(q.CREATE_HISTORY, {"entry": {"memory": RecordID("memory", ids["content"][7:]), "version": 1, "change": "up\x00date",
                                         "snapshot": {"content": "old\x00 text"}}})
        # indexed fields (entity name, memory status, category, session) never held one: the engine refuses NUL in an index key
        h.q(q.IMPORT_ENTITY, {"key": "enul", "record": {"name": "Deploy", "name_key": "deploy", "entity_type": "t\x00",
                                                         "description": "d\x00", "mention_count": 0, "created_at": now, "updated_at": now}})
    # written behind the index's back (no older engram persisted one): its file goes, as an upgrade finds none
    shutil.rmtree(project / ".claude" / "engram" / "index", ignore_errors=True)
    return ids


def test_a_store_poisoned_by_an_older_version_stays_usable(shared: Sandbox) -> None:
    """Defect 3, second half: records with NUL already in a store (written before import
    checked) no longer break export, recall, show, forget, context or a queued forget."""
    shared.stop_daemon()
    project = fresh_project(shared, "poisoned")
    try:
        ids = _poison(shared, project)
    finally:
        shared.start_daemon()
    tally = Tally()
    checks = [
        ("export", lambda: shared.call("export", {"path": str(project / "dump.jsonl")}, project=project)["counts"]["memory"] == 5),
        ("recall", lambda: len(shared.call("recall", {"query": "deploy poisoned", "limit": 10}, project=project)["memories"]) >= 4),
        ("show", lambda: shared.call("get", {"memory_id": ids["content"], "history": True}, project=project)["content"]
         == "poisoned deploy content"),
        ("show tags", lambda: shared.call("get", {"memory_id": ids["tags"]}, project=project)["tags"] == ["tag"]),
        ("context", lambda: "deploy" in shared.call("context", {}, project=project)["context_block"]),
        ("forget", lambda: shared.call("forget", {"memory_id": ids["metadata"]}, project=project)["status"] == "forgotten"),
        ("graph", lambda: isinstance(shared.call("graph", {"entity": "Deploy"}, project=project), dict)),
        ("status", lambda: shared.call("status", {}, project=project)["scopes"]["project"]["repaired_records"] >= 4),
    ]
    for name, check in checks:
        tally.tried += 1
        try:
            ok = check()
        except EngramError as exc:
            ok = False
            tally.unclear_answer(f"{name}: {exc.envelope()}")
        if not ok:
            tally.unclear_answer(f"{name} gave a wrong answer")
    assert "null byte" not in shared.daemon_output().lower() or "removed nul" in shared.daemon_output().lower()
    record("bad_input_import", poisoned_store_reads_tried=tally.tried, poisoned_store_failures=tally.unclear)
    assert tally.unclear == 0, tally.notes


def test_a_queued_forget_of_a_poisoned_record_applies(sandbox: Sandbox) -> None:
    """A forget queued while the daemon was away is replayed against a record holding NUL."""
    from engram_mcp.core import spool

    ids = _poison(sandbox, sandbox.project)
    entry = spool.enqueue(sandbox.user_dir, "forget", {"memory_id": ids["summary"], "reason": "queued"},
                          {"project_root": str(sandbox.project), "session_id": None})
    assert entry
    sandbox.start_daemon()
    from tests.reliability._support import wait_for

    assert wait_for(lambda: sandbox.call("get", {"memory_id": ids["summary"]})["status"] == "forgotten", timeout=60)
    assert not list((sandbox.user_dir / "spool" / "rejected").glob("*")) if (sandbox.user_dir / "spool" / "rejected").exists() else True


def test_a_link_strength_is_checked_as_import_checks_it(shared: Sandbox) -> None:
    """The same rule on both paths: a NaN stored by `link` was exported as NaN and then
    rejected by the import of that very export."""
    project = fresh_project(shared, "link-weight")
    a = shared.call("store", {"content": "alpha: the cache is Redis", "type": "semantic", "scope": "project"}, project=project)["memory_id"]
    b = shared.call("store", {"content": "beta: sessions expire after 15 minutes", "type": "semantic", "scope": "project"},
                    project=project)["memory_id"]
    for bad in (float("nan"), float("inf"), 5, -1, "strong", True):
        with pytest.raises(EngramError) as err:
            shared.call("link", {"from_id": a, "to_id": b, "relation": "similar_to", "strength": bad}, project=project)
        assert err.value.code == "invalid_input" and err.value.field == "strength"
    assert shared.call("link", {"from_id": a, "to_id": b, "relation": "similar_to", "strength": 0.3}, project=project)["created"]


def test_tags_stay_within_the_limit_on_every_path(shared: Sandbox) -> None:
    """Store and import refuse more than 32 tags; an update that adds tags, a merge into a
    near-duplicate and a promotion merge must not grow a memory past it either."""
    project = fresh_project(shared, "tags")
    first = [f"a{i}" for i in range(30)]
    mid = shared.call("store", {"content": "the tag limit holds on updates", "type": "semantic", "scope": "project", "tags": first},
                      project=project)["memory_id"]
    with pytest.raises(EngramError) as err:
        shared.call("update", {"memory_id": mid, "tags": {"add": [f"b{i}" for i in range(10)]}}, project=project)
    assert err.value.code == "invalid_input" and err.value.field == "tags"
    merged = shared.call("store", {"content": "the tag limit holds on updates", "type": "semantic", "scope": "project",
                                   "tags": [f"c{i}" for i in range(20)]}, project=project)
    assert merged["action"] == "merged"
    assert len(shared.call("get", {"memory_id": mid}, project=project)["tags"]) <= 32
