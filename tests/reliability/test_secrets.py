"""Secrets (issue 6, part 4; issue 12, defect 4): the realistic secrets of
tests/data/secrets_corpus.jsonl (168 of 50+ kinds), inside tool output captured by hooks, memory
text stored and updated through MCP and the CLI, metadata, tags, entity names, and imported
files: none is stored in clear by any path, and the redaction is visible (`[REDACTED:<kind>]`).
Checked per write path by reading back what that path stored (the counts: secrets tried and
left in clear, per path, go to the reliability report), and by scanning every byte the stores,
the write queue and the logs keep on disk.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core.redaction import sanitize
from tests.reliability._support import (
    PYTHON,
    REPO,
    InProcessMCP,
    Sandbox,
    find_in_raw,
    hooks_available,
    make_sandbox,
    record,
    store_dirs,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CORPUS = [json.loads(l) for l in (REPO / "tests" / "data" / "secrets_corpus.jsonl").read_text().splitlines() if l.strip()]
SESSION = "secrets-session-1"
LABEL = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
HOOK = REPO / "bin" / "engram-hook"


def _pieces(secret: str) -> list[str]:
    return [p for p in re.split(r"\s+|\\n", secret) if len(p) >= 12]


def _needles() -> dict[str, int]:
    """Strings whose presence anywhere on disk means a secret leaked: each secret (10+ characters)
    and its long fragments, unless the correctly redacted corpus itself contains them."""
    redacted_all = "\n".join(sanitize(e["context"]).text for e in CORPUS).lower()
    out: dict[str, int] = {}
    for i, e in enumerate(CORPUS):
        for n in ([e["secret"]] if len(e["secret"]) >= 10 else []) + _pieces(e["secret"]):
            if n.lower() not in redacted_all and "\n" not in n:
                out.setdefault(n, i)
    return out


NEEDLES = _needles()
ENTRY_NEEDLES: dict[int, list[str]] = {}
for _needle, _i in NEEDLES.items():
    ENTRY_NEEDLES.setdefault(_i, []).append(_needle)


class PathCounts:
    """Per write path: how many corpus secrets were written through it, how many came back in clear."""

    def __init__(self) -> None:
        self.tried: dict[str, int] = {}
        self.in_clear: dict[str, list[int]] = {}

    def check(self, path: str, i: int, stored: str) -> None:
        """Entry `i` was written through `path`; `stored` is everything that path kept of it."""
        self.tried[path] = self.tried.get(path, 0) + 1
        low = stored.lower()
        if any(n.lower() in low for n in ENTRY_NEEDLES.get(i, [])):
            self.in_clear.setdefault(path, []).append(i)

    def report(self) -> dict[str, dict[str, int]]:
        return {p: {"tried": n, "in_clear": len(self.in_clear.get(p, []))} for p, n in sorted(self.tried.items())}


def _bare(secret: str) -> bool:
    """A secret recognisable on its own (a provider format), short enough to be a tag."""
    return len(secret) <= 60 and "\n" not in secret and sanitize(secret).redacted


def _leaks_in(text: str) -> list[str]:
    low = text.lower()
    return [n for n in NEEDLES if n.lower() in low]


def test_the_corpus_gives_at_least_50_secrets_to_hunt() -> None:
    assert len(CORPUS) >= 50
    assert len({i for i in NEEDLES.values()}) >= 50, "needles cover at least 50 distinct secrets"


# ---------------------------------------------------------------------- the paths
def _via_mcp(mcp: InProcessMCP, ids: list[str], counts: PathCounts, sb: Sandbox) -> int:
    def sb_get(mid: str) -> Any:  # the memory with its history: an update must not leave the secret there
        return sb.call("get", {"memory_id": mid, "history": True}, session=SESSION)

    n = 0
    for i, e in enumerate(CORPUS):
        ctx, secret = e["context"], e["secret"]
        scope = ("project", "session", "user")[i % 3]
        args: dict[str, Any] = {"content": f"note {i}: {ctx}", "type": "episodic" if scope == "session" else "semantic",
                                "scope": scope, "summary": ctx[:500], "category": "error_fix",
                                "source": {"tool": "Bash", "file": f"cfg/{i}.env", "conversation_turn": i},
                                "related_entities": [{"name": ctx[:200], "type": "config", "relationship": "mentions"}]}
        if _bare(secret):
            args["tags"] = [secret, "secret-test"]
        res = mcp.ok("store_memory", args, session=SESSION)
        assert res["action"] == "created", res
        assert res.get("redactions"), f"corpus line {i}: nothing reported as redacted"
        ids.append(res["memory_id"])
        counts.check("mcp store_memory", i, json.dumps(sb_get(res["memory_id"])))
        n += 1
    # updates: new content, metadata, tags and entities carrying the secrets
    for i, e in enumerate(CORPUS):
        ctx, secret = e["context"], e["secret"]
        mid = ids[(i * 7) % len(ids)]
        args = {"memory_id": mid, "content": f"updated {i}: {ctx}", "summary": f"s {ctx}"[:500],
                "metadata": {"env": ctx, "nested": {"cmd": ctx[:1000]}, ctx[:60]: "key holds it"},
                "related_entities": {"add": [{"name": ctx[:200], "type": "config", "relationship": "uses"}]}}
        if _bare(secret):
            args["tags"] = {"add": [secret]}
        res = mcp.ok("update_memory", args, session=SESSION)
        assert res.get("redactions"), f"update with corpus line {i}: nothing reported as redacted"
        counts.check("mcp update_memory", i, json.dumps(sb_get(mid)))
        n += 1
    return n


def _via_cli(sb: Sandbox, counts: PathCounts) -> int:
    n = 0
    for i in range(0, len(CORPUS), 6):
        e = CORPUS[i]
        out = sb.cli("--session", SESSION, "store", f"cli {i}: {e['context']}", "--type", "semantic", "--scope", "project", "--json",
                     "--summary", e["context"][:500])
        mid = json.loads(out.stdout)["memory_id"]
        counts.check("cli store", i, json.dumps(sb.call("get", {"memory_id": mid}, session=SESSION)))
        sb.cli("--session", SESSION, "update", mid, "--content", f"cli updated {i}: {e['context']}", "--json")
        counts.check("cli update", i, json.dumps(sb.call("get", {"memory_id": mid, "history": True}, session=SESSION)))
        n += 2
    return n


def _hook(sb: Sandbox, event: str, payload: dict[str, Any]) -> subprocess.CompletedProcess:
    base = {"session_id": SESSION, "transcript_path": payload.pop("transcript_path", "/nonexistent.jsonl"), "cwd": str(sb.project),
            "hook_event_name": event}
    proc = subprocess.run([str(HOOK), event], input=json.dumps({**base, **payload}), capture_output=True, text=True,
                          env=sb.env_with(session=SESSION, ENGRAM_PYTHON=PYTHON), cwd=str(sb.project), timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc


HOOK_PATHS = ("hook PostToolUse Bash", "hook PostToolUse Edit", "hook PostToolUseFailure Bash", "hook SubagentStop")


def _via_hooks(sb: Sandbox, tmp: Path, counts: PathCounts) -> int:
    from concurrent.futures import ThreadPoolExecutor

    calls: list[tuple[str, dict[str, Any]]] = []
    for i, e in enumerate(CORPUS):
        ctx, secret = e["context"], e["secret"]
        kind = i % 4
        if kind == 0:
            calls.append(("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": f"deploy --token {secret}"},
                                          "tool_response": {"stdout": "", "stderr": f"error: deploy failed\n{ctx}", "interrupted": False}}))
        elif kind == 1:
            calls.append(("PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": f"{sb.project}/conf{i}.env", "old_string": "x",
                                                                             "new_string": ctx}, "tool_response": {"filePath": f"{sb.project}/conf{i}.env"}}))
        elif kind == 2:
            calls.append(("PostToolUseFailure", {"tool_name": "Bash", "tool_input": {"command": f"curl -H 'Authorization: Bearer {secret}'"},
                                                 "error": f"Exit code 1\n{ctx}"}))
        else:
            calls.append(("SubagentStop", {"last_assistant_message": f"I inspected the configuration in depth. {ctx} " + "Details follow. " * 20,
                                           "agent_type": "explorer"}))
        if i % 8 == 0:
            calls.append(("UserPromptSubmit", {"prompt": f"why does this fail? {ctx}"}))
    transcript = tmp / "transcript.jsonl"
    with open(transcript, "w") as fh:
        for e in CORPUS[:20]:
            fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": f"set it up with {e['context']}"}}) + "\n")
            fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": f"Done: {e['context']}"}]}}) + "\n")
    calls.append(("PreCompact", {"trigger": "auto", "transcript_path": str(transcript)}))
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda c: _hook(sb, *c), calls))
    # the captures reach the session: the queue drains before the next request is answered
    found = sb.call("recall", {"query": "Command", "scope": "session", "limit": 50, "strengthen": False}, session=SESSION)
    assert found["memories"], "the hooks' captures were stored"
    # everything the hooks stored: the session's captured memories (they carry source.hook)
    export = tmp / "hooks-export.jsonl"
    sb.call("export", {"path": str(export), "scopes": ["session"]}, session=SESSION)
    captured = "\n".join(line for line in export.read_text().splitlines() if '"hook"' in line)
    export.unlink()
    for i in range(len(CORPUS)):
        counts.check(HOOK_PATHS[i % 4], i, captured)
    for i in range(0, min(20, len(CORPUS))):
        counts.check("hook PreCompact", i, captured)
    return len(calls)


@pytest.fixture(scope="module")
def leaked(tmp_path_factory: pytest.TempPathFactory):
    """Every path fed with every secret; then the answers and the disk, collected once."""
    sb = make_sandbox(tmp_path_factory.mktemp("secrets"))
    sb.start_daemon()
    mcp = InProcessMCP(sb)
    canary = f"rawscan-canary-{uuid.uuid4().hex}"
    ids: list[str] = []
    counts = PathCounts()
    try:
        calls = _via_mcp(mcp, ids, counts, sb)
        mcp.ok("store_memory", {"content": f"plain text {canary}", "type": "semantic", "scope": "project"}, session=SESSION)
        calls += _via_cli(sb, counts)
        if hooks_available():
            calls += _via_hooks(sb, sb.root, counts)
        # answers: recall, get with history, context, graph, export
        answers = []
        for e in CORPUS[::5]:
            answers.append(json.dumps(mcp.ok("recall_memories", {"query": e["context"][:200], "limit": 50, "include_forgotten": True},
                                             session=SESSION)))
        for mid in ids:
            answers.append(json.dumps(sb.call("get", {"memory_id": mid, "history": True}, session=SESSION)))
        answers.append(json.dumps(mcp.ok("get_memory_context", {"task_description": "deploy credentials", "max_tokens": 8000},
                                         session=SESSION)))
        answers.append(json.dumps(mcp.ok("search_knowledge_graph", {"limit": 100}, session=SESSION)))
        export = sb.root / "export.jsonl"
        sb.call("export", {"path": str(export), "scopes": ["session", "project", "user"]}, session=SESSION)
        answers.append(export.read_text())
        status = sb.call("status", {}, session=SESSION)
        sb.stop_daemon()  # everything flushed and closed before the disk is read
        raw = find_in_raw(list(NEEDLES) + [canary], *store_dirs(sb))
        yield {"answers": answers, "raw": raw, "canary": canary, "ids": ids, "calls": calls, "status": status, "sandbox": sb,
               "per_path": counts}
    finally:
        mcp.close()
        sb.cleanup()


def test_no_write_path_keeps_a_secret_in_clear(leaked: dict[str, Any]) -> None:
    """Per path: each corpus secret written through it, read back from what it stored."""
    counts: PathCounts = leaked["per_path"]
    report = counts.report()
    record("secrets", per_path=report)
    print("\nsecrets per write path (tried / in clear): " + ", ".join(f"{p} {v['tried']}/{v['in_clear']}" for p, v in report.items()))
    assert len(report) >= 4 + (len(HOOK_PATHS) + 1 if hooks_available() else 0)
    leaks = {p: [CORPUS[i]["kind"] for i in idx] for p, idx in counts.in_clear.items()}
    assert not leaks, f"secrets in clear per path: {leaks}"


def test_no_secret_in_any_answer(leaked: dict[str, Any]) -> None:
    leaks = sorted({n for a in leaked["answers"] for n in _leaks_in(a)})
    assert not leaks, f"{len(leaks)} secrets answered in clear, e.g. {leaks[:5]}"
    record("secrets", corpus_secrets=len(CORPUS), secrets_hunted=len(set(NEEDLES.values())), writes_with_secrets=leaked["calls"])


def test_redaction_is_visible_in_what_was_stored(leaked: dict[str, Any]) -> None:
    sb: Sandbox = leaked["sandbox"]
    with sb.service() as svc:
        from engram_mcp.services.service import RequestContext

        for mid in leaked["ids"]:
            mem = svc.get(RequestContext(sb.project, SESSION), mid, history=True)
            assert LABEL.search(mem["content"]), mem["content"][:300]
            for h in mem["history"]:
                assert not _leaks_in(json.dumps(h["snapshot"])), "history snapshots hold only redacted text"


def test_no_secret_in_any_file_on_disk(leaked: dict[str, Any]) -> None:
    raw = leaked["raw"]
    assert leaked["canary"] in raw, "the raw scan reads the store files (positive control)"
    leaks = {n: paths for n, paths in raw.items() if n != leaked["canary"]}
    assert not leaks, "secrets in clear on disk: " + "; ".join(f"{n[:12]}... in {sorted(set(Path(p).name for p in ps))}" for n, ps in list(leaks.items())[:8])


@pytest.mark.parametrize("entry", [e for e in CORPUS if e["kind"] == "private-key"], ids=lambda e: e["secret"][11:30])
@pytest.mark.parametrize("shape", ["cut_at_200", "cut_at_500", "squeezed", "squeezed_cut_at_200"])
def test_cut_or_squeezed_private_keys_are_redacted(entry: dict[str, Any], shape: str) -> None:
    """Tool output is cut (summaries, snippets) and entity names are whitespace-squeezed before
    redaction: a private key block without its END line, or on one line, is still a private key."""
    ctx = entry["context"]
    text = {"cut_at_200": ctx[:200], "cut_at_500": ctx[:500], "squeezed": " ".join(ctx.split()),
            "squeezed_cut_at_200": " ".join(ctx.split())[:200]}[shape]
    out = sanitize(text).text
    assert not [p for p in _pieces(entry["secret"]) if p in out], out
    if re.search(r"[A-Za-z0-9+/]{60,}\s+[A-Za-z0-9+/]{60,}\s+[A-Za-z0-9+/]{16,}", text.split("Private-Lines:")[-1] if "PuTTY" in text else text):
        assert "[REDACTED:private-key]" in out  # key material was in the cut text


def test_update_tags_are_redacted(running: Sandbox) -> None:
    """update_memory lower-cases tags: redaction must come first (records.check_tags does it)."""
    bare = [e["secret"] for e in CORPUS if _bare(e["secret"])]
    mid = running.call("store", {"content": "a memory to tag", "type": "semantic", "scope": "project"})["memory_id"]
    for secret in bare:
        running.call("update", {"memory_id": mid, "tags": {"add": [secret]}})
    tags = running.call("get", {"memory_id": mid})["tags"]
    leaks = [s for s in bare if s.lower() in " ".join(tags).lower()]
    assert not leaks, f"{len(leaks)} of {len(bare)} tokens stored in clear as tags, e.g. {leaks[:3]}"


# ---------------------------------------------------------------------- import
def _export_line(i: int, e: dict[str, Any]) -> list[dict[str, Any]]:
    mid = f"01K{i:023d}"
    rec = {"memory_type": "semantic", "scope": "project", "content": f"imported {i}: {e['context']}", "summary": e["context"][:500],
           "tags": [e["secret"][:60].lower()], "importance": 0.5, "status": "active", "metadata": {"env": e["context"]},
           "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z", "version": 2, "access_count": 0}
    return [
        {"kind": "memory", "scope": "project", "id": mid, "record": rec},
        {"kind": "history", "scope": "project", "memory_id": mid,
         "entry": {"version": 1, "change": "update", "snapshot": {"content": f"old {e['context']}"}, "changed_at": "2026-01-01T00:00:00Z"}},
        {"kind": "entity", "scope": "project", "key": f"k{i}", "record": {"name": e["context"][:200], "entity_type": "config"}},
    ]


def test_import_redacts_secrets(sandbox: Sandbox) -> None:
    sandbox.start_daemon()
    path = sandbox.root / "import.jsonl"
    with open(path, "w") as fh:
        fh.write(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n")
        for i, e in enumerate(CORPUS):
            for line in _export_line(i, e):
                fh.write(json.dumps(line) + "\n")
    sandbox.cli("import", str(path), "--json")
    sandbox.stop_daemon()
    path.unlink()
    raw = find_in_raw(list(NEEDLES), *store_dirs(sandbox))
    in_clear = {NEEDLES[n] for n in raw}
    record("secrets", per_path_import={"import": {"tried": len(CORPUS), "in_clear": len(in_clear)}})
    assert not raw, f"{len(raw)} secrets stored in clear by import"


# ---------------------------------------------------------------------- the write queue
def test_writes_queued_while_the_daemon_is_down_are_redacted_on_disk(sandbox: Sandbox) -> None:
    """The MCP server queues a write in the spool when no daemon answers: the spool is on disk too."""
    env_home = sandbox.user_dir
    env_home.mkdir(parents=True, exist_ok=True)
    mcp = InProcessMCP(sandbox)
    # no daemon, and none can start: the server's own queue takes the write
    import os

    saved = os.environ.get("ENGRAM_PYTHON")
    os.environ["ENGRAM_PYTHON"] = "/bin/false"
    try:
        mcp.engram.pool._acquire = _no_autostart(mcp.engram.pool, sandbox)  # type: ignore[method-assign]
        queued = 0
        for i, e in enumerate(CORPUS[:30]):
            is_error, res = mcp.call("store_memory", {"content": f"queued {i}: {e['context']}", "type": "semantic", "scope": "project"})
            if not is_error and res.get("queued"):
                queued += 1
    finally:
        if saved is None:
            os.environ.pop("ENGRAM_PYTHON", None)
        else:
            os.environ["ENGRAM_PYTHON"] = saved
        mcp.close()
    if not queued:
        pytest.skip("this server does not queue writes while the daemon is down")
    raw = find_in_raw(list(NEEDLES), sandbox.user_dir)
    record("secrets", queued_writes_scanned=queued,
           per_path_queue={"mcp store_memory queued (daemon down)": {"tried": queued, "in_clear": len({NEEDLES[n] for n in raw})}})
    assert not raw, f"{len(raw)} secrets in clear in the write queue, e.g. in {sorted({Path(p).name for ps in raw.values() for p in ps})[:3]}"


def _no_autostart(pool: Any, sb: Sandbox) -> Any:
    from engram_mcp.daemon.client import DaemonClient

    def acquire() -> DaemonClient:
        c = DaemonClient(sb.user_dir, autostart=False, client_name="mcp")
        c.connect()
        return c

    return acquire
