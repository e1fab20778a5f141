"""The durable write queue (spool.py), the idempotent store it relies on, and the daemon's
replay of it, in-process (the real-daemon, real-failure tests are in test_degraded.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engram_mcp.core import spool
from engram_mcp.daemon.process import Daemon
from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import new_ulid
from engram_mcp.services.service import RequestContext
from engram_mcp.storage import queries as q
from tests.daemon_env import REPO, daemon_request


def _user_dir(home: Path) -> Path:
    return home / ".claude" / "engram"


# ---------------------------------------------------------------------- spool.py
def test_entries_are_private_whole_and_oldest_first(tmp_path: Path) -> None:
    ids = [spool.enqueue(tmp_path, "store", {"content": f"c{i}"}, {"project_root": "/p"}) for i in range(5)]
    paths = spool.pending(tmp_path)
    assert [p.stem for p in paths] == ids == sorted(ids)
    assert stat.S_IMODE(spool.spool_dir(tmp_path).stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in paths)
    entry = spool.read(paths[2])
    assert entry["id"] == ids[2] and entry["op"] == "store" and entry["args"] == {"content": "c2"} and entry["ctx"] == {"project_root": "/p"}
    spool.done(paths[0])
    assert spool.count(tmp_path) == {"pending": 4, "rejected": 0}
    assert spool.read(paths[0]) is None  # taken by someone else: not an error


def test_enqueue_refuses_what_could_never_apply(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ULID"):
        spool.enqueue(tmp_path, "store", {}, entry_id="../../etc/passwd")
    with pytest.raises(ValueError, match="plain JSON"):
        spool.enqueue(tmp_path, "store", {"x": object()})
    with pytest.raises(ValueError, match="exceeds"):
        spool.enqueue(tmp_path, "store", {"content": "x" * (spool.MAX_ENTRY_BYTES + 1)})
    assert spool.count(tmp_path)["pending"] == 0
    assert not spool.spool_dir(tmp_path).exists() or not os.listdir(spool.spool_dir(tmp_path)), "no temporary file left behind"


def test_reject_keeps_the_entry_with_its_error(tmp_path: Path) -> None:
    eid = spool.enqueue(tmp_path, "store", {"content": "x", "type": "bogus"})
    target = spool.reject(spool.pending(tmp_path)[0], "invalid_input: type must be one of ...")
    assert target.parent.name == "rejected" and not spool.pending(tmp_path)
    saved = json.loads(target.read_text())
    assert saved["id"] == eid and saved["args"]["type"] == "bogus" and saved["rejected_error"].startswith("invalid_input")
    assert spool.count(tmp_path) == {"pending": 0, "rejected": 1}


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engram_mcp.core import spool
    d = Path(sys.argv[1])
    print("ready", flush=True)
    i = 0
    while True:
        spool.enqueue(d, "store", {"content": "observation %d " % i + "x" * 3000, "type": "episodic", "scope": "session"})
        i += 1
    """
)


def test_kill_9_of_a_writer_leaves_only_whole_entries(tmp_path: Path) -> None:
    for trial in range(3):
        d = tmp_path / f"t{trial}"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(d)], stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.3 + 0.1 * trial)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        entries = spool.pending(d)
        assert entries, "the writer wrote something before it was killed"
        for p in entries:
            e = spool.read(p)  # raises if a reader could ever see half an entry
            assert e["args"]["content"].startswith("observation ") and e["id"] == p.stem


# ---------------------------------------------------------------------- idempotent store
def test_store_with_request_id_uses_it_as_key_and_stores_once(fake_service, ctx: RequestContext) -> None:
    rid = new_ulid()
    first = fake_service.store(ctx, content="The CI runs on two cores", type="semantic", scope="project", request_id=rid)
    again = fake_service.store(ctx, content="The CI runs on two cores", type="semantic", scope="project", request_id=rid)
    assert first["action"] == "created" and first["memory_id"] == f"memory:{rid}"
    assert again["action"] == "exists" and again["memory_id"] == first["memory_id"]
    h = fake_service.handle(ctx, "project")
    assert len(h.q(q.ALL_MEMORIES)) == 1 and len(h.index) == 1
    with pytest.raises(InvalidInput, match="request_id"):
        fake_service.store(ctx, content="x", type="semantic", scope="project", request_id="not-a-ulid")


def test_replayed_merge_is_not_merged_twice(fake_service, ctx: RequestContext) -> None:
    original = fake_service.store(ctx, content="Deploys go through the staging cluster first", type="semantic", scope="project")
    rid = new_ulid()
    merged = fake_service.store(ctx, content="Deploys go through the staging cluster first", type="semantic", scope="project", request_id=rid)
    assert merged["action"] == "merged" and merged["memory_id"] == original["memory_id"]
    row = fake_service.get(ctx, original["memory_id"])
    replay = fake_service.store(ctx, content="Deploys go through the staging cluster first", type="semantic", scope="project", request_id=rid)
    assert replay["action"] == "exists" and replay["memory_id"] == original["memory_id"]
    after = fake_service.get(ctx, original["memory_id"])
    assert after["access_count"] == row["access_count"] and after["version"] == row["version"]
    # a different request is a real second observation and merges again
    other = fake_service.store(ctx, content="Deploys go through the staging cluster first", type="semantic", scope="project", request_id=new_ulid())
    assert other["action"] == "merged"


# ---------------------------------------------------------------------- daemon replay, in-process
def test_replaying_the_same_entry_twice_stores_once(daemon, fake_service, ctx: RequestContext) -> None:
    udir = fake_service.user_dir
    eid = spool.enqueue(udir, "store", {"content": "Use ruff for linting", "type": "procedural", "scope": "project"},
                        {"project_root": str(ctx.project_root), "session_id": ctx.session_id})
    saved = spool.pending(udir)[0].read_bytes()
    assert daemon.drain_spool()["applied"] == 1
    (spool.spool_dir(udir) / f"{eid}.json").write_bytes(saved)  # as if the daemon died before deleting it
    assert daemon.drain_spool() == {"applied": 1, "rejected": 0, "kept": 0, "blocked": {}}
    rows = fake_service.handle(ctx, "project").q(q.ALL_MEMORIES)
    assert [r["content"] for r in rows] == ["Use ruff for linting"]
    assert str(rows[0]["id"].id) == eid, "the memory's id is the entry id"
    assert spool.count(udir) == {"pending": 0, "rejected": 0}


def test_invalid_entries_are_rejected_with_their_error_and_the_rest_applies(daemon, fake_service, ctx: RequestContext) -> None:
    udir = fake_service.user_dir
    c = {"project_root": str(ctx.project_root), "session_id": ctx.session_id}
    spool.enqueue(udir, "store", {"content": "x", "type": "bogus", "scope": "project"}, c)
    spool.enqueue(udir, "store", {"content": "x", "type": "semantic", "scope": "project", "colour": "red"}, c)
    spool.enqueue(udir, "no_such_op", {}, c)
    spool.enqueue(udir, "store", {"content": "x", "type": "semantic", "scope": "project"}, {"project_root": str(ctx.project_root / "gone")})
    spool.enqueue(udir, "store", {"content": "Valid one", "type": "semantic", "scope": "project"}, c)
    (spool.spool_dir(udir) / f"{new_ulid()}.json").write_text("{not json")
    report = daemon.drain_spool()
    assert report["applied"] == 1 and report["rejected"] == 5 and report["kept"] == 0
    errors = sorted(json.loads(p.read_text())["rejected_error"] for p in (spool.spool_dir(udir) / "rejected").glob("*.json"))
    assert any("type" in e and "bogus" in e for e in errors)
    assert any("bad arguments" in e and "colour" in e for e in errors)
    assert any("no_such_op" in e for e in errors)
    assert any("no longer exists" in e for e in errors)
    assert any("unreadable" in e for e in errors)
    status = daemon_request(daemon, "status", {}, ctx)["result"]
    assert status["write_queue"]["pending"] == 0 and status["write_queue"]["rejected"] == 5


def test_unavailable_store_queues_writes_and_keeps_them_in_order(daemon, fake_service, ctx: RequestContext) -> None:
    import fcntl

    from engram_mcp.core.paths import project_dir

    udir = fake_service.user_dir
    lock_path = project_dir(ctx.project_root) / "LOCK"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # flock locks are per open file: this process is a foreign owner too
    try:
        first = daemon_request(daemon, "store", {"content": "Queued while locked", "type": "semantic", "scope": "project"}, ctx)
        assert first["ok"] and first["result"]["queued"] and first["result"]["degraded"]
        assert "locked by another engram process" in first["result"]["warnings"][0]["message"]
        mid = first["result"]["memory_id"]
        upd = daemon_request(daemon, "update", {"memory_id": mid, "importance": 0.9}, ctx)
        assert upd["ok"] and upd["result"]["queued"], "an update of a memory that may be in the locked store is queued"
        got = daemon_request(daemon, "get", {"memory_id": mid}, ctx)
        assert not got["ok"] and got["error"]["degraded"] and "locked" in got["error"]["message"]
        rec = daemon_request(daemon, "recall", {"query": "queued"}, ctx)
        assert rec["ok"] and rec["result"]["degraded"] and rec["result"]["warnings"][0]["code"] == "scope_unavailable"
        status = daemon_request(daemon, "status", {}, ctx)["result"]
        assert status["write_queue"]["pending"] == 2 and "locked" in status["write_queue"]["blocked_by"][0]
        assert status["connection"]["status"] == "degraded"
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    daemon._drain_retry_at = 0.0
    assert daemon_request(daemon, "get", {"memory_id": mid}, ctx)["result"]["importance"] == 0.9, "queued store then update applied in order"
    assert spool.count(udir) == {"pending": 0, "rejected": 0}


def test_daemon_start_failure_queues_writes(tmp_path: Path) -> None:
    d = Daemon(tmp_path / "u")
    d.startup_error = "engram daemon failed to start: boom"
    d.ready.set()
    res = d._handle_line(json.dumps({"id": 1, "op": "store", "args": {"content": "x", "type": "semantic", "scope": "user"}, "ctx": {}}).encode())
    assert res["ok"] and res["result"]["queued"] and "boom" in res["result"]["warnings"][0]["message"]
    res = d._handle_line(b'{"id": 2, "op": "recall", "args": {"query": "x"}, "ctx": {}}')
    assert not res["ok"] and res["error"]["degraded"] and "boom" in res["error"]["message"]
    assert spool.count(tmp_path / "u")["pending"] == 1
    shutil.rmtree(tmp_path / "u")


def _slow_first_replay(daemon, monkeypatch: pytest.MonkeyPatch):
    """Hold the drain's first replay until the returned event is set (a daemon's first pass
    also opens its stores and warms the model: seconds on a cold machine)."""
    import threading

    release, entered = threading.Event(), threading.Event()
    replay = daemon._replay

    def held(entry, raw_ctx):
        entered.set()
        release.wait(30)
        return replay(entry, raw_ctx)

    monkeypatch.setattr(daemon, "_replay", held)
    return release, entered


def test_a_request_waits_for_a_running_pass_to_apply_what_was_queued_before_it(
    daemon, fake_service, ctx: RequestContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    c = {"project_root": str(ctx.project_root), "session_id": ctx.session_id}
    spool.enqueue(fake_service.user_dir, "store", {"content": "Makefiles are indented with tabs", "type": "semantic", "scope": "user"}, c)
    release, entered = _slow_first_replay(daemon, monkeypatch)
    drain = threading.Thread(target=daemon.drain_spool)
    drain.start()
    assert entered.wait(10)
    answers: list[dict] = []
    request = threading.Thread(target=lambda: answers.append(daemon_request(daemon, "recall", {"query": "Makefiles tabs"}, ctx)))
    request.start()
    request.join(3.0)  # a first pass on a cold 2-core machine: seconds
    assert request.is_alive(), "the request waits for the pass that applies the entry queued before it"
    release.set()
    request.join(10)
    drain.join(10)
    assert answers and answers[0]["ok"]
    assert [m["content"] for m in answers[0]["result"]["memories"]] == ["Makefiles are indented with tabs"]


def test_a_pass_that_hangs_delays_a_request_by_a_bounded_time(
    daemon, fake_service, ctx: RequestContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import engram_mcp.daemon.process as process

    monkeypatch.setattr(process, "DRAIN_FIRST_WAIT_S", 0.4)
    c = {"project_root": str(ctx.project_root), "session_id": ctx.session_id}
    spool.enqueue(fake_service.user_dir, "store", {"content": "Queued behind a slow pass", "type": "semantic", "scope": "user"}, c)
    release, entered = _slow_first_replay(daemon, monkeypatch)
    drain = threading.Thread(target=daemon.drain_spool)
    drain.start()
    try:
        assert entered.wait(10)
        started = time.monotonic()
        answer = daemon_request(daemon, "status", {}, ctx)
        took = time.monotonic() - started
        assert answer["ok"] and answer["result"]["write_queue"]["pending"] == 1
        assert 0.35 <= took < 5, f"served after {took:.2f}s: waited the bound, then answered"
    finally:
        release.set()
        drain.join(10)
    assert spool.count(fake_service.user_dir)["pending"] == 0
