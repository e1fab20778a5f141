"""Resource faults (issue 6, part 7): a full disk, a read-only store, a store locked by another
process, missing embedding model files and a store written by a newer engram. Each gives a
clear message and degraded operation (the other scopes keep working; writes to the broken store
are queued or refused with a typed, retryable error), and nothing acknowledged is lost.

The disk is a small tmpfs mounted over the project's `.claude` (we run as root in a container);
without mount rights the full disk is an RLIMIT_FSIZE on the daemon and the read-only store is a
chmod (which root ignores, so that case is skipped).

Written to the degradation rules (docs/decisions.md, "Never block Claude", and the daemon's
write queue): where a behaviour is missing the test is a strict xfail that says what.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import re
import resource
import signal
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core.errors import EngramError
from engram_mcp.core.paths import project_dir, project_id
from engram_mcp.services.service import RequestContext
from engram_mcp.storage import queries as q
from engram_mcp.storage.memory_shape import restore
from engram_mcp.storage.schema import CURRENT_SCHEMA_VERSION
from engram_mcp.storage.store import SurrealStore
from tests.reliability._support import Sandbox, assert_envelope, key_of, record, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = os.geteuid() == 0
RND = random.Random(7)


def _words(n: int = 30) -> str:
    return " ".join("".join(RND.choice(string.ascii_lowercase) for _ in range(8)) for _ in range(n))


# ---------------------------------------------------------------------- a small disk
def _mount_works() -> bool:
    if not ROOT or os.environ.get("RELIABILITY_NO_MOUNT") == "1":
        return False
    probe = Path("/tmp") / f"engram-mount-probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", "-l", str(probe)], capture_output=True)
        return ok
    finally:
        probe.rmdir()


MOUNT = _mount_works()


class SmallDisk:
    """The project's `.claude` on a tmpfs of `size` (or, without mount rights, a file size limit)."""

    def __init__(self, sb: Sandbox, size: str) -> None:
        self.sb = sb
        self.path = sb.project / ".claude"
        self.size = size
        self.mounted = False

    def __enter__(self) -> "SmallDisk":
        self.path.mkdir(exist_ok=True)
        if MOUNT:
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size},mode=0700", "tmpfs", str(self.path)], check=True)
            self.mounted = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.mounted:
            self.sb.cleanup()
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)

    def daemon_limits(self) -> Any:
        """preexec_fn for the daemon: without a tmpfs, files may not grow past ~1 MB (EFBIG, not SIGXFSZ)."""
        if self.mounted:
            return None

        def limit() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, resource.RLIM_INFINITY))

        return limit

    def grow(self, size: str = "256m") -> None:
        if self.mounted:
            subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)
        elif self.sb.daemon is not None:
            resource.prlimit(self.sb.daemon.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def read_only(self, on: bool) -> None:
        assert self.mounted
        subprocess.run(["mount", "-o", f"remount,{'ro' if on else 'rw'}", str(self.path)], check=True)


def _store(c: Any, sb: Sandbox, scope: str = "project", **extra: Any) -> tuple[str, dict[str, Any], str]:
    """(outcome, payload, content): outcome is created | merged | queued | error."""
    token = "fz" + "".join(RND.choice(string.ascii_lowercase) for _ in range(10))
    content = f"{token} {_words()}"
    try:
        res = c.call("store", {"content": content, "type": "semantic", "scope": scope, **extra}, project_root=str(sb.project))
    except EngramError as exc:
        return "error", exc.envelope(), content
    if res.get("queued"):
        assert res.get("degraded") is True and res.get("warnings"), res
        return "queued", res, content
    return res["action"], res, content


def _fill(sb: Sandbox, c: Any, limit: int = 5000) -> tuple[list[tuple[str, str]], tuple[str, dict[str, Any], str]]:
    acked = []
    for _ in range(limit):
        outcome, res, content = _store(c, sb)
        if outcome == "created":
            acked.append((res["memory_id"], content))
            continue
        return acked, (outcome, res, content)
    raise AssertionError("the small disk never filled up")


def _in_store(sb: Sandbox, contents: list[str]) -> set[str]:
    """Which contents are in the project store (daemon stopped)."""
    with sb.service() as svc:
        rows = svc.handle(RequestContext(sb.project), "project").q(q.ALL_MEMORIES) or []
        have = {r["content"] for r in rows}
    return {c for c in contents if c in have}


def _user_memory(c: Any, sb: Sandbox) -> tuple[str, str]:
    outcome, res, content = _store(c, sb, scope="user")
    assert outcome == "created"
    return res["memory_id"], content


def _recall(c: Any, sb: Sandbox, query: str, scope: str | None = None) -> tuple[str, Any]:
    args: dict[str, Any] = {"query": query, "strategy": "keyword", "limit": 10, "strengthen": False}
    if scope:
        args["scope"] = scope
    try:
        return "ok", c.call("recall", args, project_root=str(sb.project))
    except EngramError as exc:
        return "error", exc.envelope()


# ---------------------------------------------------------------------- disk full
# One scenario for the module, in phases (the tests run in file order): fill the disk, check the
# answers while it is full, give space back, then check nothing acknowledged was lost.
class FullDisk:
    def __init__(self, sb: Sandbox, disk: SmallDisk) -> None:
        self.sb, self.disk = sb, disk
        self.acked: list[tuple[str, str]] = []
        self.first_failure: tuple[str, dict[str, Any], str] | None = None
        self.during: list[tuple[str, dict[str, Any], str]] = []
        self.user: tuple[str, str] = ("", "")
        self.pid = 0


@pytest.fixture(scope="module")
def full_disk(tmp_path_factory: pytest.TempPathFactory):
    from tests.reliability._support import make_sandbox

    sb = make_sandbox(tmp_path_factory.mktemp("fulldisk"))
    with SmallDisk(sb, "1m") as disk:
        state = FullDisk(sb, disk)
        state.pid = sb.start_daemon(preexec_fn=disk.daemon_limits()).pid
        with sb.client() as c:
            state.user = _user_memory(c, sb)
            state.acked, state.first_failure = _fill(sb, c)
        yield state
        sb.cleanup()


def test_disk_full_is_a_clear_storage_full_answer(full_disk: FullDisk) -> None:
    sb = full_disk.sb
    outcome, res, content = full_disk.first_failure
    assert len(full_disk.acked) > 20
    if outcome == "error":
        env = assert_envelope(res)
        assert env["error"] == "storage_full" and env["degraded"] is True and env["retry_possible"] is True, env
        assert re.search(r"full|space", env["message"], re.I), env
    else:
        assert outcome == "queued", (outcome, res)
        assert res["cause"] == "storage_full" and re.search(r"full|space", res["warnings"][0]["message"], re.I), res
    full_disk.during.append(full_disk.first_failure)
    with sb.client() as c:
        more = [_store(c, sb) for _ in range(5)]
        full_disk.during += more
        assert all(o in ("error", "queued") for o, _, _ in more), more
        for o, r, _ in more:
            if o == "error":
                assert assert_envelope(r)["error"] in ("storage_full", "memory_unavailable"), r
        assert c.call("ping")["pid"] == full_disk.pid, "the daemon survived the full disk"
        status = c.call("status", {}, project_root=str(sb.project))
        assert status["connection"]["status"] == "degraded" and "project" in status["connection"]["degraded_scopes"], status


def test_disk_full_leaves_the_other_scopes_working(full_disk: FullDisk) -> None:
    sb = full_disk.sb
    user_id, user_content = full_disk.user
    with sb.client() as c:
        kind, res = _recall(c, sb, user_content.split()[0])
        assert kind == "ok", res
        assert user_id in [m["id"] for m in res["memories"]]
        assert res.get("degraded") and any(w.get("scope") == "project" for w in res.get("warnings", [])), res
        outcome, res2, _ = _store(c, sb, scope="user")
        assert outcome == "created", res2


def test_disk_full_reads_of_the_full_store_keep_answering(full_disk: FullDisk) -> None:
    sb = full_disk.sb
    mid, content = full_disk.acked[len(full_disk.acked) // 2]
    with sb.client() as c:
        kind, res = _recall(c, sb, content.split()[0], scope="project")
    assert kind == "ok" and mid in [m["id"] for m in res["memories"]], json.dumps(res)[:2000]
    assert res["degraded"] and [w["code"] for w in res["warnings"]] == ["scope_read_only"], res["warnings"]
    assert re.search(r"full", res["warnings"][0]["message"]), res["warnings"]
    with sb.client() as c:
        got = c.call("get", {"memory_id": mid}, project_root=str(sb.project))
        assert got["content"] == content
        status = c.call("status", {}, project_root=str(sb.project))
        assert status["scopes"]["project"]["status"] == "read_only" and status["scopes"]["project"]["total"] >= len(full_disk.acked)


def test_disk_full_recovers_when_space_returns_without_a_restart(full_disk: FullDisk) -> None:
    sb = full_disk.sb
    full_disk.disk.grow()
    with sb.client() as c:
        ok = wait_for(lambda: _store(c, sb)[0] == "created", timeout=30, interval=0.5)
        assert ok, "writes still fail after space came back"
        assert wait_for(lambda: c.call("status", {}, project_root=str(sb.project)).get("write_queue", {}).get("pending", 0) == 0,
                        timeout=30, interval=0.5), "the writes queued while the disk was full were applied"
        assert c.call("ping")["pid"] == full_disk.pid


def test_disk_full_lost_nothing_acknowledged_or_queued(full_disk: FullDisk) -> None:
    sb = full_disk.sb
    full_disk.disk.grow()
    sb.stop_daemon()
    expected = [c_ for _, c_ in full_disk.acked] + [c_ for o, _, c_ in full_disk.during if o == "queued"]
    present = _in_store(sb, expected)
    assert len(present) == len(expected), f"{len(expected) - len(present)} acknowledged or queued memories lost"
    record("faults", disk_full_acknowledged_before_full=len(full_disk.acked),
           disk_full_writes_queued=sum(o == "queued" for o, _, _ in full_disk.during),
           disk=("tmpfs" if full_disk.disk.mounted else "RLIMIT_FSIZE"))


# ---------------------------------------------------------------------- read-only store
@pytest.mark.skipif(not MOUNT, reason="a read-only store needs a remountable filesystem (root ignores chmod)")
def test_read_only_store_degrades_clearly_and_loses_nothing(sandbox: Sandbox) -> None:
    with SmallDisk(sandbox, "64m") as disk:
        sandbox.start_daemon()
        with sandbox.client() as c:
            user_id, user_content = _user_memory(c, sandbox)
            acked = [_store(c, sandbox) for _ in range(20)]
            assert all(o == "created" for o, _, _ in acked)
        sandbox.stop_daemon()
        disk.read_only(True)
        sandbox.start_daemon()
        with sandbox.client() as c:
            outcome, res, content = _store(c, sandbox)
            assert outcome in ("queued", "error"), res
            message = res["warnings"][0]["message"] if outcome == "queued" else assert_envelope(res)["message"]
            assert re.search(r"read-only|not writable|permission", message, re.I), message
            if outcome == "error":
                assert res["degraded"] is True and res["error"] == "memory_unavailable"
            kind, found = _recall(c, sandbox, user_content.split()[0])
            assert kind == "ok" and user_id in [m["id"] for m in found["memories"]], found
            status = c.call("status", {}, project_root=str(sandbox.project))
            assert status["connection"]["status"] == "degraded", status["connection"]
            assert status["scopes"]["project"]["status"] != "connected"
        disk.read_only(False)  # writable again: the same daemon recovers, no restart
        with sandbox.client() as c:
            assert wait_for(lambda: _store(c, sandbox)[0] == "created", timeout=30, interval=0.5), "writes still fail"
            if outcome == "queued":
                assert wait_for(lambda: c.call("status", {}, project_root=str(sandbox.project))["write_queue"]["pending"] == 0,
                                timeout=30, interval=0.5)
        sandbox.stop_daemon()
        expected = [c_ for _, _, c_ in acked] + ([content] if outcome == "queued" else [])
        assert _in_store(sandbox, expected) == set(expected)
    record("faults", read_only_store="tmpfs remount ro")


# ---------------------------------------------------------------------- locked by another process
def test_store_locked_by_another_process_queues_writes_and_applies_them_after(sandbox: Sandbox) -> None:
    store_dir = project_dir(sandbox.project)
    store_dir.mkdir(parents=True, mode=0o700)
    fd = os.open(store_dir / "LOCK", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.pwrite(fd, b"424242", 0)
    try:
        sandbox.start_daemon()
        with sandbox.client() as c:
            user_id, user_content = _user_memory(c, sandbox)
            outcome, res, content = _store(c, sandbox)
            assert outcome in ("queued", "error"), res
            message = res["warnings"][0]["message"] if outcome == "queued" else assert_envelope(res)["message"]
            assert "locked" in message and "424242" in message, message
            kind, found = _recall(c, sandbox, user_content.split()[0])
            assert kind == "ok" and user_id in [m["id"] for m in found["memories"]]
            assert any(w.get("scope") == "project" for w in found.get("warnings", [])) or found.get("degraded"), found
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    with sandbox.client() as c:
        assert wait_for(lambda: _store(c, sandbox)[0] == "created", timeout=30, interval=0.5), "the store stays locked"
        if outcome == "queued":
            assert wait_for(lambda: c.call("status", {}, project_root=str(sandbox.project))["write_queue"]["pending"] == 0,
                            timeout=30, interval=0.5)
    sandbox.stop_daemon()
    if outcome == "queued":
        assert _in_store(sandbox, [content]) == {content}, "the queued write was applied"


# ---------------------------------------------------------------------- missing model
def test_missing_model_files_degrade_to_keyword_search_and_reindex_recovers(sandbox: Sandbox) -> None:
    missing = sandbox.root / "no-such-model-dir"
    env = dict(sandbox.env)
    env["ENGRAM_EMBEDDING_MODEL_PATH"] = str(missing)
    saved = sandbox.env
    sandbox.env = env
    sandbox.fake_embedder = False  # the real model, pointed at missing files
    try:
        sandbox.start_daemon()
        with sandbox.client() as c:
            stored = []
            for _ in range(5):
                outcome, res, content = _store(c, sandbox)
                assert outcome == "created", res
                warn = " ".join(w["message"] for w in res.get("warnings", []))
                assert res["embedding_generated"] is False and str(missing) in warn, res
                stored.append((res["memory_id"], content))
            found = c.call("recall", {"query": stored[0][1].split()[0], "limit": 5}, project_root=str(sandbox.project))
            assert stored[0][0] in [m["id"] for m in found["memories"]]
            assert found["strategy_used"] == "keyword" and found["warnings"], found
            status = c.call("status", {}, project_root=str(sandbox.project))
            assert str(missing) in (status["embedding"]["error"] or ""), status["embedding"]
            assert status["scopes"]["project"]["without_vectors"] == 5
        doctor = sandbox.cli("doctor", check=False)
        assert doctor.returncode != 0 and str(missing) in doctor.stdout, doctor.stdout
        sandbox.stop_daemon()
    finally:
        sandbox.env = saved
        sandbox.fake_embedder = True
    # the model is back: reindex embeds what was stored without vectors; nothing was lost
    sandbox.start_daemon()
    with sandbox.client() as c:
        res = c.call("reindex", {}, project_root=str(sandbox.project))
        assert res["reindexed"] == 5 and res["failed"] == 0
        for mid, content in stored:
            found = c.call("recall", {"query": content, "strategy": "vector", "limit": 3}, project_root=str(sandbox.project))
            assert mid in [m["id"] for m in found["memories"]]
    record("faults", missing_model_memories=len(stored))


# ---------------------------------------------------------------------- newer schema
def test_store_from_a_newer_schema_is_refused_untouched_and_the_rest_works(sandbox: Sandbox) -> None:
    sandbox.start_daemon()
    with sandbox.client() as c:
        user_id, user_content = _user_memory(c, sandbox)
        acked = [_store(c, sandbox) for _ in range(10)]
    sandbox.stop_daemon()
    ns, db = "project", project_id(sandbox.project)
    store = SurrealStore(project_dir(sandbox.project), label="project").open()
    future = CURRENT_SCHEMA_VERSION + 5
    store.query(ns, db, q.SET_SCHEMA_VERSION, {"version": future})
    before = sorted((key_of(r), r["content"], r["version"]) for r in map(restore, store.query(ns, db, q.ALL_MEMORIES) or []))
    store.close()

    sandbox.start_daemon()
    with sandbox.client() as c:
        outcome, res, content = _store(c, sandbox)
        assert outcome in ("queued", "error"), res
        message = res["warnings"][0]["message"] if outcome == "queued" else assert_envelope(res)["message"]
        assert re.search(r"newer|upgrade", message, re.I) and str(future) in message, message
        if outcome == "error":
            assert res["error"] == "schema_too_new" and res["degraded"] is True and res["retry_possible"] is False
        kind, found = _recall(c, sandbox, user_content.split()[0])
        assert kind == "ok" and user_id in [m["id"] for m in found["memories"]], found
        assert any(w.get("scope") == "project" and re.search("newer|upgrade", w.get("message", ""), re.I)
                   for w in found.get("warnings", [])), found.get("warnings")
        status = c.call("status", {}, project_root=str(sandbox.project))
        assert status["scopes"]["project"]["status"] == "unavailable" and str(future) in status["scopes"]["project"]["message"]
        assert status["connection"]["status"] == "degraded"
        proc = sandbox.cli("status", check=False)
        assert "newer" in proc.stdout + proc.stderr or "Upgrade" in proc.stdout + proc.stderr
    sandbox.stop_daemon()
    store = SurrealStore(project_dir(sandbox.project), label="project").open()
    try:
        assert store.schema_version(ns, db) == future, "the newer store's version was not touched"
        after = sorted((key_of(r), r["content"], r["version"]) for r in map(restore, store.query(ns, db, q.ALL_MEMORIES) or []))
        assert after == before, "the newer store's memories were not touched"
        assert len(after) == len([a for a in acked if a[0] == "created"])
    finally:
        store.close()
    record("faults", newer_schema_version=future)

