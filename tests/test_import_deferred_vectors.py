"""Deferred vectors for large imports (issue 35: 20,000 observations in under 30 s).

An import with at least `import_defer_vectors_min` memories to embed, where a worker will finish
the job (the daemon's, daemon/backfill.py), writes them without vectors: keyword-recallable at
once, with a `partial_results` warning, and semantically recallable once the backfill has run.
The backfill survives `kill -9` (the list of scopes awaiting vectors and the records are on
disk), never drops or duplicates a memory, and keeps another project's recall fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engram_mcp.daemon.backfill import VectorBackfill
from engram_mcp.daemon.client import DaemonClient
from engram_mcp.services import backfill
from engram_mcp.services.importers import run_import
from engram_mcp.services.service import MemoryService, RequestContext
from tests.daemon_env import REPO, make_env, stop_daemon
from tests.fakes import FakeEmbedder

#: One observation a paraphrase shares no content word with (found by meaning only).
TARGET = "Kafka consumers are restarted whenever the broker certificate rotates"
PARAPHRASE = "what happens to message queue readers after TLS credentials get renewed"


def _source(path: Path, n: int) -> Path:
    """An mcp-memory graph (its server's `saveGraph` lines): one entity of `n` observations."""
    obs = [f"Observation {i} about invoices: shard {i % 97} holds customers {i * 13}" for i in range(n - 1)]
    obs.insert(n // 2, TARGET)
    path.write_text(json.dumps({"type": "entity", "name": "Billing", "entityType": "service", "observations": obs}))
    return path


def _target_id(res: dict) -> str | None:
    for m in res["memories"]:
        if TARGET in m["content"]:
            return m["id"]
    return None


def _awaiting(svc: MemoryService, ctx: RequestContext) -> int:
    return int(svc.status(ctx)["awaiting_vectors"])


def test_a_large_import_returns_before_its_vectors_then_the_backfill_makes_them_semantic(
    home: Path, project: Path, real_embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_IMPORT_DEFER_VECTORS_MIN", "100")
    svc = MemoryService(home=home, embedder=real_embedder)
    ctx = RequestContext(project, None)
    woken = threading.Event()
    backfill.attach(svc.access, woken.set)  # a worker exists, but runs only when this test says
    try:
        res = run_import(
            svc.access, ctx, source="mcp-memory", path=str(_source(project / "m.jsonl", 300)), scope="project"
        )
        counts = res["imported"]["counts"]
        assert counts["memory"] == 300 and counts["vectors_deferred"] == 300 and counts["embedded"] == 0
        assert woken.is_set(), "the import wakes the worker"
        # returned before any vector exists: every memory is there, found by its words
        assert _awaiting(svc, ctx) == 300
        st = svc.status(ctx)["scopes"]["project"]
        assert st["total"] == 300 and st["awaiting_vectors"] == 300 and st["without_vectors"] == 300
        kw = svc.recall(ctx, query="broker certificate rotates Kafka consumers", limit=3, strengthen=False)
        tid = _target_id(kw)
        assert tid is not None and kw["memories"][0]["id"] == tid
        assert any(w["code"] == "partial_results" and "300 memories" in w["message"] for w in kw["warnings"])
        assert svc.get(ctx, tid)["has_embedding"] is False

        # the worker, as the daemon runs it
        worker = VectorBackfill(svc, threading.Event(), lambda: False)
        assert worker.run_pending() is True
        assert worker.written == 300
        assert _awaiting(svc, ctx) == 0 and svc.status(ctx)["scopes"]["project"]["without_vectors"] == 0
        assert backfill.pending(svc.access) == [] and json.loads((svc.user_dir / backfill.LIST_NAME).read_text()) == {
            "scopes": []
        }
        sem = svc.recall(ctx, query=PARAPHRASE, limit=3, strengthen=False)
        assert _target_id(sem) == sem["memories"][0]["id"] == tid, [m["content"] for m in sem["memories"]]
        assert not [w for w in sem["warnings"] if w["code"] == "partial_results"]
        got = svc.get(ctx, tid)
        assert got["has_embedding"] is True
        # the vector is the model's own for that text (not a neighbour's)
        h = svc.handle(ctx, "project")
        slot = h.index.slot_of(tid.split(":", 1)[1])
        vec = h.index.vectors.similarities(real_embedder.embed_documents([f"Billing: {TARGET}"])[0], np.array([slot]))
        assert float(vec[0]) > 0.97
        # a re-import changes nothing and defers nothing
        again = run_import(svc.access, ctx, source="mcp-memory", path=str(project / "m.jsonl"), scope="project")
        assert again["added"] == 0 and again["unchanged"] == 300
        assert svc.status(ctx)["scopes"]["project"]["total"] == 300
    finally:
        svc.close()


def test_small_imports_and_imports_without_a_worker_embed_as_before(home: Path, project: Path, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_IMPORT_DEFER_VECTORS_MIN", "100")
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project, None)
    try:
        res = run_import(
            svc.access, ctx, source="mcp-memory", path=str(_source(project / "a.jsonl", 150)), scope="project"
        )
        assert res["imported"]["counts"]["embedded"] == 150 and "vectors_deferred" not in res["imported"]["counts"]
        backfill.attach(svc.access, lambda: None)
        small = project / "b.jsonl"
        small.write_text(
            json.dumps({"type": "entity", "name": "Search", "observations": [f"fact {i}" for i in range(99)]})
        )
        res = run_import(svc.access, ctx, source="mcp-memory", path=str(small), scope="project")
        assert res["imported"]["counts"]["embedded"] == 99 and "vectors_deferred" not in res["imported"]["counts"]
        assert svc.status(ctx)["scopes"]["project"]["without_vectors"] == 0 and _awaiting(svc, ctx) == 0
        assert not (svc.user_dir / backfill.LIST_NAME).exists()
    finally:
        svc.close()


def test_another_projects_recall_stays_fast_while_the_backfill_runs(
    home: Path, project: Path, tmp_path: Path, real_embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_IMPORT_DEFER_VECTORS_MIN", "100")
    svc = MemoryService(home=home, embedder=real_embedder)
    ctx = RequestContext(project, None)
    other = RequestContext(tmp_path / "other", None)
    (other.project_root / ".git").mkdir(parents=True)
    stopping, in_flight = threading.Event(), threading.Event()
    worker = VectorBackfill(svc, stopping, in_flight.is_set)
    steps: list[int] = []
    worker.after_step = lambda written, remaining: steps.append(written)
    try:
        for i in range(100):
            svc.store(
                other,
                content=f"Project B fact {i}: the cache for service {i} expires after {i} minutes",
                scope="project",
                type="semantic",
            )
        hold = threading.Event()
        backfill.attach(svc.access, hold.set)  # the import runs first, the worker after it (forced order)
        run_import(svc.access, ctx, source="mcp-memory", path=str(_source(project / "m.jsonl", 1500)), scope="project")
        assert _awaiting(svc, ctx) == 1500
        worker.start()
        lat: list[float] = []
        first = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            with svc.lock:
                left = backfill.awaiting(svc.access, svc.handle(ctx, "project"))
            if left == 0:
                break
            if first is None and steps:
                first = steps[-1]
            t = time.perf_counter()
            in_flight.set()
            try:
                svc.recall(other, query="when does the cache of service 42 expire", limit=5, strengthen=False)
            finally:
                in_flight.clear()
            if first is not None:
                lat.append(time.perf_counter() - t)
            time.sleep(0.02)
        assert left == 0, "the backfill finished"
        assert first is not None and steps[-1] - first >= 500, "recalls ran while the backfill wrote vectors"
        assert len(lat) >= 20
        p95 = sorted(lat)[int(0.95 * (len(lat) - 1))] * 1000
        assert p95 < 200, f"another project's recall p95 {p95:.0f} ms over {len(lat)} recalls during the backfill"
    finally:
        worker.stop(timeout_s=60)
        svc.close()


#: Runs the real daemon with the worker's test hook set: after its first step that wrote vectors it
#: writes "<written> <remaining>" to the signal file and holds there (so the kill lands mid-backfill).
HELD_DAEMON = textwrap.dedent(
    """
    import os, runpy, sys, threading
    sys.path.insert(0, sys.argv.pop(1))
    signal_file = sys.argv.pop(1)
    from engram_mcp.daemon import backfill

    def hold(written, remaining):
        with open(signal_file + ".tmp", "w") as f:
            f.write(f"{written} {remaining}")
        os.replace(signal_file + ".tmp", signal_file)
        threading.Event().wait()

    backfill.VectorBackfill.after_step = staticmethod(hold)
    sys.argv[0] = "engram_mcp.daemon.process"
    runpy.run_module("engram_mcp.daemon.process", run_name="__main__", alter_sys=True)
    """
)


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def _call(user_dir: Path, project: Path, op: str, args: dict | None = None):
    with DaemonClient(user_dir, autostart=False, timeout=120) as c:
        return c.call(op, args or {}, project_root=str(project))


def _alive(user_dir: Path) -> bool:
    try:
        with DaemonClient(user_dir, autostart=False, timeout=5) as c:
            return bool(c.call("ping").get("ready"))
    except Exception:
        return False


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_daemon_killed_mid_backfill_finishes_it_after_restart(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.env["ENGRAM_IMPORT_DEFER_VECTORS_MIN"] = "50"
    user_dir = env.user_dir
    user_dir.mkdir(parents=True, mode=0o700)
    signal_file = tmp_path / "backfill-held"
    n = 200
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_DAEMON, str(REPO), str(signal_file), "--user-dir", str(user_dir)],
        env=env.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait(lambda: _alive(user_dir) or proc.poll() is not None, 120, "the daemon")
        assert proc.poll() is None
        res = _call(
            user_dir,
            env.project,
            "import_from",
            {"source": "mcp-memory", "path": str(_source(tmp_path / "m.jsonl", n)), "scope": "project"},
        )
        assert res["added"] == n and res["imported"]["counts"]["vectors_deferred"] == n
        _wait(signal_file.exists, 120, "the backfill's first step")
        written, remaining = map(int, signal_file.read_text().split())
        assert 0 < written < n and written + remaining == n
        status = _call(user_dir, env.project, "status")
        assert status["scopes"]["project"]["awaiting_vectors"] == remaining == status["awaiting_vectors"]
        human = env.cli("status").stdout
        assert f"{remaining} memories awaiting vectors" in human, human
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)

    listed = json.loads((user_dir / backfill.LIST_NAME).read_text())["scopes"]
    assert [e["scope"] for e in listed] == ["project"], "the list survived the kill"
    env.cli("daemon", "start")  # a plain daemon: finds the list at start and finishes
    try:
        _wait(lambda: _call(user_dir, env.project, "status")["awaiting_vectors"] == 0, 300, "the backfill to finish")
        st = _call(user_dir, env.project, "status")["scopes"]["project"]
        assert st["total"] == n and st["without_vectors"] == 0, st  # none lost, none written twice
        assert json.loads((user_dir / backfill.LIST_NAME).read_text()) == {"scopes": []}
        sem = _call(user_dir, env.project, "recall", {"query": PARAPHRASE, "limit": 3, "strengthen": False})
        assert TARGET in sem["memories"][0]["content"], [m["content"] for m in sem["memories"]]
        assert not [w for w in sem["warnings"] if w["code"] == "partial_results"]
        again = _call(
            user_dir,
            env.project,
            "import_from",
            {"source": "mcp-memory", "path": str(tmp_path / "m.jsonl"), "scope": "project"},
        )
        assert again["added"] == 0 and again["unchanged"] == n
    finally:
        stop_daemon(user_dir)
