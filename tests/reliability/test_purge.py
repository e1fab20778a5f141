"""Secrets in other fields and in history (issue 12, defect 5): every free-text field is
redacted on every write path, and `forget --purge-now` removes a secret that slipped
through from the answers *and* from the bytes on disk (SurrealKV keeps every old version in
its log until the datastore is rewritten; storage/compact.py).

The raw-bytes checks read every file under the user directory (user store, spool, logs) and
the project store, as UTF-8 and JSON-escaped, case-insensitively.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import pytest

from tests.reliability._support import InProcessMCP, Sandbox, find_in_raw, fresh_project, record, store_dirs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

GITHUB_TOKEN = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Ub5Cd7Ef9Gh0Jk2Lm4"  # the shape every redactor knows


def _needle(tag: str) -> str:
    """A unique text no redactor recognises as a secret: only purge can remove it."""
    return f"needle-{tag}-{secrets.token_hex(8)}"


def _raw_hits(sb: Sandbox, project: Path, *needles: str) -> dict[str, list[str]]:
    return find_in_raw(list(needles), *store_dirs(sb, project))


def test_purge_now_over_mcp_removes_content_and_history_from_every_file(shared: Sandbox) -> None:
    project = fresh_project(shared, "purge-mcp")
    first, second, summary, host = _needle("v1"), _needle("v2"), _needle("summary"), _needle("host")
    mcp = InProcessMCP(shared)
    try:
        mid = mcp.ok("store_memory", {"content": f"the staging bucket is {first}", "type": "semantic", "scope": "project",
                                      "summary": summary, "tags": ["staging"],
                                      "related_entities": [{"name": host, "type": "host", "relationship": "runs_on", "target": "Postgres"}]},
                     project=project)["memory_id"]
        mcp.ok("update_memory", {"memory_id": mid, "content": f"the staging bucket is now {second}"}, project=project)
        mcp.ok("promote_memory", {"memory_id": mid, "target_scope": "user"}, project=project)
        for i in range(30):  # other memories, so the rewrite has something to keep
            mcp.ok("store_memory", {"content": f"unrelated fact {i}: service {i} listens on port {8000 + i}", "type": "semantic",
                                    "scope": "project"}, project=project)
        assert set(_raw_hits(shared, project, first, second, summary, host)) == {first, second, summary, host}, "the test could not fail"
        out = mcp.ok("forget_memory", {"memory_id": mid, "reason": "leaked", "purge_now": True}, project=project)
        assert out["purged"] is True and set(out["scopes"]) == {"project", "user"} and not out.get("warnings")
        assert _raw_hits(shared, project, first, second, summary, host) == {}  # an entity only it mentioned goes too
        shown = mcp.ok("recall_memories", {"query": "staging bucket", "include_forgotten": True}, project=project)
        assert all(first not in m["content"] and second not in m["content"] for m in shown["memories"])
        kept = mcp.ok("recall_memories", {"query": "which port does service 7 listen on", "limit": 3}, project=project)
        assert any("service 7 " in m["content"] for m in kept["memories"]), "the rewrite kept everything else"
    finally:
        mcp.close()
    assert shared.call("get", {"memory_id": mid, "history": True}, project=project)["history"] == []


def test_purge_now_from_the_cli_and_the_store_still_works_after_a_restart(sandbox: Sandbox) -> None:
    sandbox.start_daemon()
    needle = _needle("cli")
    out = json.loads(sandbox.cli("store", f"the db dump is at {needle}", "--type", "semantic", "--scope", "project", "--json").stdout)
    mid = out["memory_id"]
    sandbox.cli("update", mid, "--importance", "0.9")
    sandbox.cli("forget", mid, "--reason", "old")  # soft first: the text stays (undoable)
    assert needle in _raw_hits(sandbox, sandbox.project, needle)
    purged = json.loads(sandbox.cli("forget", mid, "--purge-now", "--json").stdout)
    assert purged["purged"] and purged["compacted"]
    assert _raw_hits(sandbox, sandbox.project, needle) == {}
    human = sandbox.cli("forget", mid, "--purge-now").stdout
    assert "purged" in human and "rewritten" in human
    sandbox.stop_daemon()
    sandbox.start_daemon()
    other = sandbox.cli("store", "the store still takes writes after a purge", "--type", "semantic", "--scope", "project")
    assert other.returncode == 0
    assert json.loads(sandbox.cli("show", mid, "--json").stdout)["content"] == "[forgotten]"
    undo = sandbox.cli("forget", mid, "--undo", check=False)
    assert undo.returncode != 0 and "purged" in (undo.stdout + undo.stderr)


REASON_PATHS = ["cli forget --reason", "cli promote --reason", "mcp forget_memory reason", "mcp promote_memory reason"]


def test_reasons_are_redacted_on_every_path(shared: Sandbox) -> None:
    project = fresh_project(shared, "reasons")
    mcp = InProcessMCP(shared)
    clear = []
    try:
        for path in REASON_PATHS:
            mid = mcp.ok("store_memory", {"content": f"a memory for {path}", "type": "semantic", "scope": "project"},
                         project=project)["memory_id"]
            reason = f"because of {GITHUB_TOKEN}"
            if path == "cli forget --reason":
                shared.cli("forget", mid, "--reason", reason, cwd=project, env=shared.env_with(project=project))
            elif path == "cli promote --reason":
                shared.cli("promote", mid, "user", "--reason", reason, cwd=project, env=shared.env_with(project=project))
            elif path == "mcp forget_memory reason":
                mcp.ok("forget_memory", {"memory_id": mid, "reason": reason}, project=project)
            else:
                mcp.ok("promote_memory", {"memory_id": mid, "target_scope": "user", "reason": reason}, project=project)
            if _raw_hits(shared, project, GITHUB_TOKEN):
                clear.append(path)
                break
    finally:
        mcp.close()
    record("secrets_other_fields", reason_paths_tried=len(REASON_PATHS), reason_paths_in_clear=len(clear))
    assert clear == []


def test_fields_only_import_writes_are_redacted(shared: Sandbox) -> None:
    """Forget reason, promotion chain, session id, history change text and snapshot, entity and
    relation types, evidence: each carries its own secret; none reaches the store."""
    from engram_mcp.core.ids import new_ulid

    project = fresh_project(shared, "import-secrets")
    token = lambda i: "ghp_" + f"{i:02d}" + "Zq8Xw2Lm4Np6Rt1Vy3Ub5Cd7Ef9Gh0Jk2"  # noqa: E731
    mid = new_ulid()
    fields = {
        "forget_reason": token(1), "promotion_chain": token(2), "session_id": token(3), "history change": token(4),
        "history snapshot": token(5), "entity type": token(6), "entity description": token(7), "relation type": token(8),
        "evidence": token(9), "mention relationship": token(10), "metadata": token(11), "source": token(12),
    }
    lines = [
        {"kind": "header", "format": "engram-export", "version": 1},
        {"kind": "memory", "scope": "project", "id": mid, "record": {
            "memory_type": "semantic", "content": "a memory imported with secrets in every side field", "status": "forgotten",
            "forget_reason": f"leak {fields['forget_reason']}", "session_id": fields["session_id"],
            "promotion_chain": [{"scope": "session", "reason": f"r {fields['promotion_chain']}"}],
            "metadata": {"note": fields["metadata"]}, "source": {"cmd": f"token {fields['source']}"}}},
        {"kind": "history", "scope": "project", "memory_id": mid, "entry": {
            "version": 1, "change": fields["history change"], "snapshot": {"content": f"old {fields['history snapshot']}"}}},
        {"kind": "entity", "scope": "project", "key": "ea", "record": {"name": "Vault", "entity_type": fields["entity type"],
                                                                       "description": f"d {fields['entity description']}"}},
        {"kind": "entity", "scope": "project", "key": "eb", "record": {"name": "Deploy", "entity_type": "service"}},
        {"kind": "relation", "scope": "project", "from": "ea", "to": "eb", "relation_type": fields["relation type"],
         "evidence": [f"seen {fields['evidence']}"]},
        {"kind": "mention", "scope": "project", "memory_id": mid, "entity_key": "ea", "relationship": fields["mention relationship"]},
    ]
    path = project / "secrets.jsonl"
    path.write_text("\n".join(json.dumps(l) for l in lines) + "\n")
    out = shared.call("import", {"path": str(path)}, project=project)
    assert out["counts"]["memory"] == 1 and out["counts"]["rejected"] == 0, out
    os.unlink(path)
    hits = _raw_hits(shared, project, *fields.values())
    clear = sorted(name for name, value in fields.items() if value in hits)
    record("secrets_other_fields", import_fields_tried=len(fields), import_fields_in_clear=len(clear))
    assert clear == []


# ---------------------------------------------------------------------- compaction crash safety
def _store_with(tmp_path: Path, n: int = 50):
    from engram_mcp.storage.store import SurrealStore

    store = SurrealStore(tmp_path / "store", label="project").open()
    store.ensure_schema("project", "p_test")
    for i in range(n):
        store.query("project", "p_test", "CREATE type::thing('memory', $id) CONTENT $r RETURN NONE",
                    {"id": f"K{i:04d}", "r": {"memory_type": "semantic", "scope": "project", "content": f"row {i}"}})
    return store


def _count(store) -> int:
    return store.query("project", "p_test", "SELECT count() AS n FROM memory GROUP ALL")[0]["n"]


@pytest.mark.parametrize("stage", ["half copy, no marker", "marker written", "data moved aside", "copy in place, old left"])
def test_a_compaction_interrupted_at_any_step_is_finished_or_dropped_at_the_next_open(tmp_path: Path, stage: str) -> None:
    from engram_mcp.storage import compact

    store = _store_with(tmp_path)
    directory = store.directory
    if stage == "half copy, no marker":  # a crash while copying: the copy is dropped, data/ (with a later write) stays
        (directory / compact.COMPACT_DIRNAME).mkdir()
        (directory / compact.COMPACT_DIRNAME / "junk").write_bytes(b"partial")
        store.query("project", "p_test", "CREATE type::thing('memory', 'LATE') CONTENT $r RETURN NONE",
                    {"r": {"memory_type": "semantic", "scope": "project", "content": "written after the copy began"}})
    else:
        compact.build_copy(store._conn, directory)
    store.close()
    if stage == "data moved aside":
        os.rename(directory / "data", directory / compact.OLD_DIRNAME)
    if stage == "copy in place, old left":
        os.rename(directory / "data", directory / compact.OLD_DIRNAME)
        os.rename(directory / compact.COMPACT_DIRNAME, directory / "data")
    from engram_mcp.storage.store import SurrealStore

    again = SurrealStore(directory, label="project").open()
    try:
        expected = 51 if stage == "half copy, no marker" else 50
        assert _count(again) == expected
        left = sorted(p.name for p in directory.iterdir())
        assert compact.COMPACT_DIRNAME not in left and compact.OLD_DIRNAME not in left and compact.READY_MARKER not in left, left
    finally:
        again.close()


def test_a_failed_copy_leaves_the_store_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engram_mcp.core.errors import StoreUnavailable
    from engram_mcp.storage import compact

    store = _store_with(tmp_path)
    from engram_mcp.storage.store import _StoreConn

    real = compact.count_rows

    def short_copy(conn):  # the store counts as it is, every copy comes up one row short
        counts = real(conn)
        return counts if isinstance(conn, _StoreConn) else {**counts, "project/p_test/memory": counts["project/p_test/memory"] - 1}

    monkeypatch.setattr(compact, "count_rows", short_copy)
    with pytest.raises(StoreUnavailable):
        store.compact()
    try:
        assert _count(store) == 50
        assert not (store.directory / compact.COMPACT_DIRNAME).exists() and not (store.directory / compact.READY_MARKER).exists()
    finally:
        store.close()
    shutil.rmtree(tmp_path / "store")


def test_writes_and_recalls_during_a_purge_are_kept_and_not_held_up(sandbox: Sandbox) -> None:
    """The compaction copies while other requests run; a write made meanwhile must be in the
    store afterwards (the stale copy is made again, never swapped in), and a recall waits
    for one statement, not for the whole copy."""
    import threading
    import time

    from engram_mcp.services.service import RequestContext

    ctx = RequestContext(sandbox.project)
    needle = _needle("busy")
    with sandbox.service() as svc:
        for i in range(1500):
            svc.store(ctx, content=f"background fact {i}: worker {i % 37} drains queue {i % 11}", type="semantic", scope="project",
                      dedup=False)
        mid = svc.store(ctx, content=f"leaked {needle}", type="semantic", scope="project")["memory_id"]
        stop, written, waits = threading.Event(), [], []

        def writer():
            while not stop.is_set():
                written.append(svc.store(ctx, content=f"written during the purge {len(written)}", type="episodic", scope="project",
                                         dedup=False)["memory_id"])

        def reader():
            while not stop.is_set():
                t0 = time.perf_counter()
                svc.recall(ctx, query="worker drains queue", limit=3)
                waits.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        out = svc.forget(ctx, mid, purge_now=True)
        stop.set()
        for t in threads:
            t.join()
        assert out["compacted"] and not out["warnings"]
        assert written and waits
        h = svc.handle(ctx, "project")
        present = {r["id"].id for r in h.q("SELECT id FROM memory")}
        assert {w[7:] for w in written} <= present, "a write made during the compaction was lost"
        record("purge", concurrent_writes=len(written), recalls_during=len(waits), recall_max_ms=round(max(waits) * 1000, 1),
               compaction_seconds=out["compacted"][0]["seconds"])
    assert _raw_hits(sandbox, sandbox.project, needle) == {}


def test_purge_now_also_removes_the_text_from_the_write_queue(sandbox: Sandbox) -> None:
    """A rejected queue entry holding the text, or a pending edit of the purged memory, would
    keep the secret on disk (or write it back when replayed): the purge removes them."""
    from engram_mcp.core import spool
    from engram_mcp.services.service import RequestContext

    ctx = RequestContext(sandbox.project)
    needle, later = _needle("queued"), _needle("pending-edit")
    with sandbox.service() as svc:
        mid = svc.store(ctx, content=f"the backup passphrase is {needle}", type="semantic", scope="project")["memory_id"]
        ctx_json = {"project_root": str(sandbox.project), "session_id": None}
        spool.enqueue(sandbox.user_dir, "update", {"memory_id": mid, "content": f"the passphrase is now {later}"}, ctx_json)
        bad = spool.enqueue(sandbox.user_dir, "store", {"content": f"the backup passphrase is {needle}", "type": "nonsense"}, ctx_json)
        spool.reject(spool.spool_dir(sandbox.user_dir) / f"{bad}{spool.ENTRY_SUFFIX}", "invalid type")
        keep = spool.enqueue(sandbox.user_dir, "store", {"content": "an unrelated queued memory", "type": "semantic",
                                                         "scope": "project"}, ctx_json)
        assert set(_raw_hits(sandbox, sandbox.project, needle, later)) == {needle, later}
        out = svc.forget(ctx, mid, purge_now=True)
        assert out["queued_entries_removed"] == 2
    assert _raw_hits(sandbox, sandbox.project, needle, later) == {}
    assert [p.name for p in spool.pending(sandbox.user_dir)] == [f"{keep}{spool.ENTRY_SUFFIX}"]


def test_a_compaction_leftover_that_is_a_link_is_removed_never_followed(tmp_path: Path) -> None:
    """A repository can commit `.claude/engram/data.compact` (or `data.old`) as a link, with a
    READY marker: the next open must neither swap it in nor zero what it points at."""
    from engram_mcp.storage import compact
    from engram_mcp.storage.store import SurrealStore

    store = _store_with(tmp_path, n=5)
    directory = store.directory
    store.close()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "deploy.sh").write_text("#!/bin/sh\necho deploy\n")
    os.symlink(victim, directory / compact.COMPACT_DIRNAME)
    os.symlink(victim, directory / compact.OLD_DIRNAME)
    (directory / compact.READY_MARKER).write_text("1\n")
    from engram_mcp.core.errors import StoreUnavailable

    try:  # refused with the link named (paths.py), or opened with its own data: never through the link
        again = SurrealStore(directory, label="project").open()
    except StoreUnavailable as exc:
        assert "link" in exc.message
    else:
        try:
            assert _count(again) == 5
        finally:
            again.close()
    assert (victim / "deploy.sh").read_text() == "#!/bin/sh\necho deploy\n"
    assert compact.recover(directory) is not None  # the leftovers themselves: links removed, not followed
    assert not (directory / compact.COMPACT_DIRNAME).is_symlink() and not (directory / compact.OLD_DIRNAME).is_symlink()
    assert (victim / "deploy.sh").read_text() == "#!/bin/sh\necho deploy\n"
    again = SurrealStore(directory, label="project").open()
    try:
        assert _count(again) == 5
    finally:
        again.close()
