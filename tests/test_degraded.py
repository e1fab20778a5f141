"""Degradation with a durable write queue, through the real owner process.

A store that cannot be used (locked by a foreign process, corrupt, disk full) must not
lose a write: the daemon acknowledges it as queued, the spool keeps it through `kill -9`,
and it is applied exactly once when the store comes back. Reads say why they are degraded;
status, `engram status` and `engram doctor` show the queue. (We run as root, which ignores
permission bits, so "not writable" is covered by the lock and corrupt-store cases.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engram_mcp.core import spool
from engram_mcp.daemon.client import DaemonClient, socket_path
from engram_mcp.core.errors import StoreUnavailable
from tests.daemon_env import REPO, Env, make_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    path = sys.argv[1]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    print("locked", flush=True)
    sys.stdin.read()
    """
)


# ---------------------------------------------------------------------- helpers
def _client(env: Env) -> DaemonClient:
    return DaemonClient(env.user_dir, autostart=False, timeout=60)


def _call(env: Env, op: str, args: dict | None = None, project: Path | None = None):
    with _client(env) as c:
        return c.call(op, args or {}, project_root=project or env.project)


def _start(env: Env) -> int:
    """Start the daemon the way a client does (the CLI, with the test's environment)."""
    env.cli("daemon", "start")
    return _call(env, "ping")["pid"]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")  # a zombie holds no locks
    except FileNotFoundError:
        return True


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def _stop(env: Env, pid: int) -> None:
    env.shutdown()
    _wait(lambda: _gone(pid), 30, "the daemon to exit")


def _nudge(env: Env) -> None:
    """What a hook does: one `drain` line, then hang up without reading the answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(socket_path(env.user_dir)))
    s.sendall(b'{"id":0,"op":"drain","args":{},"ctx":{}}\n')
    s.close()


def _pending(env: Env) -> int:
    return spool.count(env.user_dir)["pending"]


def _contents(env: Env, project: Path | None = None) -> list[str]:
    res = _call(env, "recall", {"query": "fact", "limit": 50, "strengthen": False, "include_forgotten": True}, project)
    return sorted(m["content"] for m in res["memories"])


def _project_total(env: Env, project: Path | None = None) -> int:
    return _call(env, "status", {}, project)["scopes"]["project"]["total"]


def _hold_lock(directory: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory / "LOCK")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked"
    return proc


def _release(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=10)


# ---------------------------------------------------------------------- tests
def test_store_while_locked_by_a_foreign_process_is_queued_survives_kill_9_and_lands_once(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.env["ENGRAM_DAEMON_IDLE_EXIT_SECONDS"] = "10"
    store_dir = env.project / ".claude" / "engram"
    holder = _hold_lock(store_dir)
    pid = None
    try:
        pid = _start(env)
        res = _call(env, "store", {"content": "fact: the staging database is reset every night", "type": "semantic", "scope": "project"})
        assert res["queued"] is True and res["degraded"] is True and res["action"] == "queued"
        assert f"locked by another engram process (pid {holder.pid})" in res["warnings"][0]["message"]
        mid = res["memory_id"]
        assert mid == f"memory:{res['queue_id']}"

        # reads: the error envelope names the cause, or partial results with a warning
        with pytest.raises(StoreUnavailable) as err:
            _call(env, "get", {"memory_id": mid})
        assert err.value.degraded and "locked by another engram process" in err.value.message
        rec = _call(env, "recall", {"query": "staging database"})
        assert rec["degraded"] is True and rec["warnings"][0]["code"] == "scope_unavailable"

        # status, `engram status` and `engram doctor` show the queue and why it waits
        st = _call(env, "status")
        assert st["write_queue"]["pending"] == 1 and st["write_queue"]["rejected"] == 0
        assert "locked" in st["write_queue"]["blocked_by"][0] and st["connection"]["status"] == "degraded"
        human = env.cli("status").stdout
        assert "1 queued writes, 0 rejected; waiting for:" in human and "locked by another engram process" in human
        doctor = env.cli("doctor", check=False)
        assert doctor.returncode != 0 and "✘ write queue: 1 queued, 0 rejected; waiting for:" in doctor.stdout

        # kill -9: the acknowledged write is on disk, not in the dead process
        entry = spool.pending(env.user_dir)[0]
        saved = entry.read_bytes()
        os.kill(pid, signal.SIGKILL)
        _wait(lambda: _gone(pid), 30, "the killed daemon to go")
        assert _pending(env) == 1

        # a new daemon, store still locked: the entry stays and does not keep the daemon alive
        pid = _start(env)
        _nudge(env)
        time.sleep(1.5)
        assert _pending(env) == 1
        _wait(lambda: _gone(pid), 40, "the idle daemon to exit despite a pending entry")
        pid = None
    finally:
        _release(holder)

    # the store is back: the next daemon applies the queue as soon as its service is loaded
    pid = _start(env)
    try:
        _wait(lambda: _pending(env) == 0, 60, "the queue to drain")
        assert _call(env, "get", {"memory_id": mid})["content"] == "fact: the staging database is reset every night"
        assert _project_total(env) == 1

        # replaying the same entry again (a daemon killed between applying and deleting it)
        (spool.spool_dir(env.user_dir) / entry.name).write_bytes(saved)
        _nudge(env)
        _wait(lambda: _pending(env) == 0, 60, "the replayed entry to drain")
        assert _project_total(env) == 1, "replaying an entry twice stores once"
        assert _contents(env) == ["fact: the staging database is reset every night"]
        assert spool.count(env.user_dir) == {"pending": 0, "rejected": 0}
    finally:
        _stop(env, pid)


def test_corrupt_store_queues_then_recovers_and_invalid_entries_are_rejected(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    pid = _start(env)
    try:
        assert _call(env, "store", {"content": "fact one: builds use make", "type": "semantic", "scope": "project"})["action"] == "created"
    finally:
        _stop(env, pid)
    data = env.project / ".claude" / "engram" / "data"
    backup = tmp_path / "data-backup"
    shutil.copytree(data, backup)
    for manifest in data.rglob("*.manifest"):  # a manifest cut inside its record: the engine refuses the store
        header = 4 + int.from_bytes(manifest.read_bytes()[:4], "big")  # a cut header would be repaired (torn.py)
        with open(manifest, "r+b") as f:
            f.truncate(header + (manifest.stat().st_size - header) // 2)

    pid = _start(env)
    try:
        res = _call(env, "store", {"content": "fact two: releases are tagged on main", "type": "semantic", "scope": "project"})
        assert res["queued"] and res["degraded"] and "Failed to create datastore" in res["warnings"][0]["message"]
        with pytest.raises(StoreUnavailable) as err:
            _call(env, "get", {"memory_id": res["memory_id"]})
        assert err.value.degraded and "datastore" in err.value.message

        # a hook-style entry that can never apply, and a client that hangs up mid-request
        spool.enqueue(env.user_dir, "store", {"content": "fact three", "type": "not-a-type", "scope": "user"}, {})
        _nudge(env)
        _wait(lambda: spool.count(env.user_dir)["rejected"] == 1, 30, "the invalid entry to be rejected")
        rejected = json.loads(next((spool.spool_dir(env.user_dir) / "rejected").glob("*.json")).read_text())
        assert rejected["args"]["type"] == "not-a-type" and "type" in rejected["rejected_error"]
        st = _call(env, "status")["write_queue"]
        assert st["pending"] == 1 and st["rejected"] == 1
        assert "1 queued writes, 1 rejected" in env.cli("status").stdout
        assert "✘ write queue: 1 queued, 1 rejected" in env.cli("doctor", check=False).stdout

        shutil.rmtree(data)
        shutil.copytree(backup, data)  # the user restores the store
        _nudge(env)
        _wait(lambda: _pending(env) == 0, 60, "the queue to drain after the store came back")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(socket_path(env.user_dir)))
        s.sendall(json.dumps({"id": 9, "op": "store", "args": {"content": "fact four: sent by a client that hung up", "type": "semantic", "scope": "project"},
                              "ctx": {"project_root": str(env.project)}}).encode() + b"\n")
        s.close()
        _wait(lambda: "fact four: sent by a client that hung up" in _contents(env), 30, "the hung-up client's store")
        assert _contents(env) == ["fact four: sent by a client that hung up", "fact one: builds use make", "fact two: releases are tagged on main"]
        assert _call(env, "ping")["pid"] == pid, "the daemon survived clients that never read its answer"
    finally:
        _stop(env, pid)


def _mount_tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    path.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], capture_output=True).returncode == 0


def test_disk_full_queues_writes_and_applies_them_once_space_is_freed(tmp_path: Path) -> None:
    mnt = tmp_path / "small-disk"
    if not _mount_tmpfs(mnt, "4m"):
        pytest.skip("cannot mount a small tmpfs here (needs root and mount permission)")
    env = make_env(tmp_path)
    project = mnt / "proj"
    (project / ".git").mkdir(parents=True)
    filler = mnt / "filler"
    pid = None
    try:
        pid = _start(env)
        assert _call(env, "store", {"content": "fact A: written before the disk filled", "type": "semantic", "scope": "project"}, project)["action"] == "created"
        with pytest.raises(OSError):
            with open(filler, "wb") as f:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        res = _call(env, "store", {"content": "fact B: written while the disk was full " + "x" * 2000, "type": "semantic", "scope": "project"}, project)
        assert res["queued"] and res["cause"] == "storage_full" and "disk is full" in res["warnings"][0]["message"]
        st = _call(env, "status", {}, project)
        assert st["write_queue"]["pending"] == 1 and st["scopes"]["project"]["status"] == "read_only"
        # the write was refused before the engine saw it, so the full store still answers reads
        found = _call(env, "recall", {"query": "fact written before the disk filled", "strategy": "keyword"}, project)
        assert [m["content"][:6] for m in found["memories"]] == ["fact A"]
        assert [w["code"] for w in found["warnings"]] == ["scope_read_only"]
        filler.unlink()
        _nudge(env)
        _wait(lambda: _pending(env) == 0, 60, "the queue to drain once space was freed")
        assert [c[:6] for c in _contents(env, project)] == ["fact A", "fact B"]
        assert _project_total(env, project) == 2
    finally:
        if pid is not None:
            _stop(env, pid)
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_mcp_server_queues_a_write_when_the_daemon_cannot_be_reached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio
    import mcp_types as types

    from engram_mcp.daemon import client
    from engram_mcp.interfaces import server

    user_dir = tmp_path / "home" / ".claude" / "engram"
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "sess-q")
    monkeypatch.setattr(client, "spawn_daemon", lambda *a, **k: None)  # as if engram's Python were missing
    engram = server.Engram(user_dir)

    async def run() -> tuple[types.CallToolResult, types.CallToolResult]:
        stored = await engram.call_tool(None, types.CallToolRequestParams(name="store_memory", arguments={"content": "fact", "type": "semantic", "scope": "project"}))
        recalled = await engram.call_tool(None, types.CallToolRequestParams(name="recall_memories", arguments={"query": "fact"}))
        return stored, recalled

    stored, recalled = anyio.run(run)
    body = json.loads(stored.content[0].text)
    assert not stored.is_error and body["queued"] and body["degraded"] and body["cause"] == "daemon_unavailable"
    entry = spool.read(spool.pending(user_dir)[0])
    assert entry["op"] == "store" and entry["args"]["content"] == "fact"
    assert entry["ctx"] == {"project_root": str(project.resolve()), "session_id": "sess-q"}
    assert body["memory_id"] == f"memory:{entry['id']}"
    env = json.loads(recalled.content[0].text)
    assert recalled.is_error and env["error"] == "daemon_unavailable" and env["degraded"] is True
