"""Early answers (services/handles.py): recall served from the persisted index file while the
engine opens in the background, only when the file's `clean` marker says it is exactly the
engine's state; the marker goes before the first counter-moving commit after a checkpoint.

Everything runs on the real engine. The engine open is held back by a gate where a test needs
the early window to last.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_mcp.index.embeddings import FastEmbedEmbedder
from engram_mcp.index.persist import read_index_file
from engram_mcp.services.handles import EarlyAnswerWithdrawn, StoreRegistry, marker_path, read_marker
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q
from engram_mcp.storage.store import SurrealStore
from tests.fakes import FakeEmbedder

ROOT = Path(__file__).resolve().parents[1]
WORDS = "alpha beta gamma delta cache deploy index query token retry schema parser merge branch".split()
QUERIES = ("alpha cache", "deploy merge", "schema parser token", "retry branch")
#: Fields that move with the clock between two recalls (strength and the score's recency terms).
CLOCK_FIELDS = {"strength", "score"}


def fill(svc: MemoryService, ctx: RequestContext, n: int, seed: int = 1) -> list[str]:
    rnd = random.Random(seed)
    ids = []
    for i in range(n):
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 10))) + f" item{i}"
        scope = "user" if i % 5 == 0 else "project"
        ids.append(
            svc.store(
                ctx,
                content=text,
                summary=f"summary {i}",
                type=rnd.choice(["semantic", "episodic"]),
                scope=scope,
                tags=[rnd.choice(WORDS)],
                importance=round(rnd.uniform(0.3, 0.9), 2),
            )["memory_id"]
        )
    return ids


def comparable(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k not in CLOCK_FIELDS} for m in result["memories"]]


def index_files(store_dir: Path) -> list[Path]:
    return sorted((store_dir / "index").glob("*.eidx"))


def engine_changes(store_dir: Path, ns: str, db: str) -> str:
    store = SurrealStore(store_dir, label="check")
    store.open()
    try:
        return store.repository(ns, db).changes()
    finally:
        store.close()


# ------------------------------------------------------------------------ early == late
def test_an_early_answer_is_the_answer_given_once_the_engine_is_open(
    home: Path, project: Path, real_embedder: FastEmbedEmbedder, gate: threading.Event
) -> None:
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=real_embedder)
    ids = fill(svc, ctx, 60)
    svc.forget(ctx, ids[3], reason="test")
    svc.link(ctx, ids[1], ids[2], "supersedes")
    svc.recall(ctx, query="alpha", limit=5)  # strengthened, then written and checkpointed at close
    svc.close()
    assert read_marker(home / ".claude" / "engram" / "index" / "user.default.eidx") is not None

    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        early = [svc.recall(ctx, query=w, limit=10, strengthen=False) for w in QUERIES]
        early_strengthened = svc.recall(ctx, query="deploy cache", limit=4)
        for scope in ("user", "project"):
            handle = svc.access.handle(ctx, scope, early_ok=True)
            assert handle.engine_pending and not handle.store.is_open, scope  # answered from the file
        gate.set()
        for scope in ("user", "project"):
            svc.access.handle(ctx, scope, early_ok=True).wait_engine()
            assert svc.access.handle(ctx, scope, early_ok=True).index_status == "loaded"
        late = [svc.recall(ctx, query=w, limit=10, strengthen=False) for w in QUERIES]
        for e, lt in zip(early, late, strict=True):
            assert e["memories"], e
            bumped = {m["id"] for m in early_strengthened["memories"]}
            for a, b in zip(e["memories"], lt["memories"], strict=True):
                if a["id"] in bumped:  # strengthened by the recall in between: one more access
                    assert b["access_count"] == a["access_count"] + 1 and b["status"] == "active"
                    for m in (a, b):
                        del m["access_count"], m["status"], m["last_accessed_at"]
            assert comparable(e) == comparable(lt)
            for a, b in zip(e["memories"], lt["memories"], strict=True):
                assert a["score"] == pytest.approx(b["score"], abs=2e-3)
        # the strengthening held back during the open reached the engine afterwards
        svc.access.write_behind.flush_all()
        for mem in early_strengthened["memories"]:
            got = svc.get(ctx, mem["id"])
            assert got["access_count"] == mem["access_count"] + 1, mem["id"]
    finally:
        gate.set()
        svc.close()


def test_with_early_answers_off_no_marker_is_written_and_the_engine_opens_first(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_INDEX_EARLY_ANSWERS", "false")
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    fill(svc, ctx, 10)
    svc.close()
    assert all(read_marker(p) is None for p in index_files(project / ".claude" / "engram"))
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        svc.recall(ctx, query="alpha", limit=3)
        assert svc.access.handle(ctx, "project", early_ok=True).early is None
        assert svc.access.handle(ctx, "project", early_ok=True).index_status == "loaded"
    finally:
        svc.close()


def test_a_session_and_its_project_answer_early_on_one_open_of_their_store(
    home: Path, project: Path, gate: threading.Event
) -> None:
    """Claude Code's case: the project and the session databases live in one store. Both answer
    from their files while that store opens once, and each is checked against the engine."""
    ctx = RequestContext(project, "s-early-1")
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    fill(svc, ctx, 20)
    svc.store(ctx, content="alpha cache in this session", type="episodic", scope="session")
    svc.close()

    opens: list[str] = []
    real_open = SurrealStore.open

    def counted(self: SurrealStore) -> None:
        opens.append(threading.current_thread().name)
        real_open(self)

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(SurrealStore, "open", counted)
            early = svc.recall(ctx, query="alpha cache", limit=10, strengthen=False)
            assert "session" in {m["scope"] for m in early["memories"]} and "project" in {
                m["scope"] for m in early["memories"]
            }
            for scope in ("session", "project", "user"):
                handle = svc.access.handle(ctx, scope, early_ok=True)
                assert handle.engine_pending and not handle.store.is_open, scope  # all three from their files
            gate.set()
            for scope in ("session", "project", "user"):
                svc.access.handle(ctx, scope, early_ok=True).wait_engine()
                assert svc.access.handle(ctx, scope, early_ok=True).index_status == "loaded", scope
        assert sorted(opens) == ["engram-open-project", "engram-open-user"], "one open per store"
        late = svc.recall(ctx, query="alpha cache", limit=10, strengthen=False)
        assert comparable(early) == comparable(late)
    finally:
        gate.set()
        svc.close()


# ------------------------------------------------------------------- the marker protocol
class _Watch:
    """Wraps an engine connection: records, for every transaction moving the change counter,
    whether the marker still existed when the engine received it."""

    def __init__(self, conn: Any, marker: Path) -> None:
        self._conn = conn
        self._marker = marker
        self.seen: list[bool] = []

    def query_raw(self, sql: str, params: Any) -> Any:
        if q.BUMP_CHANGES.split(" RETURN")[0] in sql:
            self.seen.append(self._marker.exists())
        return self._conn.query_raw(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_write_after_a_checkpoint_removes_the_marker_before_the_engine_commits(home: Path, project: Path) -> None:
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ids = fill(svc, ctx, 10)
        svc.checkpoint()
        handle = svc.access.handle(ctx, "project", early_ok=True)
        path = StoreRegistry.index_path(handle.store.directory, handle.ns, handle.db)
        marker = read_marker(path)
        meta, _ = read_index_file(path)
        assert marker is not None and marker["changes"] == meta["changes"] == handle.repo.changes()
        watch = _Watch(handle.store._conn, marker_path(path))
        handle.store._conn = watch
        svc.update(ctx, ids[1], content="changed after the checkpoint")
        assert watch.seen and not any(watch.seen)  # gone before the engine saw the commit
        assert read_marker(path) is None
        svc.checkpoint()  # the checkpoint puts it back, naming the new state
        assert read_marker(path)["changes"] == handle.repo.changes() != meta["changes"]
        # a write that could not remove the marker is not sent at all
        real_remove = os.unlink
        try:
            os.unlink = _refuse  # type: ignore[assignment]
            with pytest.raises(PermissionError):
                svc.update(ctx, ids[2], content="must not be written")
        finally:
            os.unlink = real_remove  # type: ignore[assignment]
        assert read_marker(path) is not None
        assert svc.get(ctx, ids[2])["content"] != "must not be written"
    finally:
        svc.close()


def _refuse(*_args: Any, **_kwargs: Any) -> None:
    raise PermissionError("refused by the test")


WORKER = """
import sys, time
from pathlib import Path
from engram_mcp.services.service import MemoryService, RequestContext
from tests.fakes import FakeEmbedder
svc = MemoryService(home=Path(sys.argv[1]), embedder=FakeEmbedder())
ctx = RequestContext(Path(sys.argv[2]), None)
for i in range(5):
    svc.store(ctx, content=f"alpha cache item {i}", type="semantic", scope="project")
svc.checkpoint()
print("checkpointed", flush=True)
sys.stdin.readline()
svc.store(ctx, content="written after the checkpoint", type="semantic", scope="project")
print("wrote", flush=True)
time.sleep(600)
"""


def _spawn(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, *args],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
        **kw,
    )


@pytest.mark.timeout(120)
def test_a_kill_right_after_a_write_returns_leaves_no_marker(home: Path, project: Path) -> None:
    proc = _spawn(["-c", WORKER, str(home), str(project)])
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "checkpointed", proc.stderr.read() if proc.stderr else ""
        files = index_files(project / ".claude" / "engram")
        assert files and all(read_marker(p) is not None for p in files)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "wrote"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    project_file = next(p for p in index_files(project / ".claude" / "engram") if p.name.startswith("project."))
    assert read_marker(project_file) is None
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ctx = RequestContext(project, None)
        got = svc.recall(ctx, query="written after the checkpoint", limit=3, strengthen=False)
        handle = svc.access.handle(ctx, "project", early_ok=True)
        assert handle.early is None and handle.index_status.startswith("loaded and repaired")
        assert got["memories"][0]["content"] == "written after the checkpoint"
    finally:
        svc.close()


#: Where each run of the crash worker is killed: standing still after a checkpoint (markers
#: stand), after a write (the project's marker is gone), or at a random moment.
STOPS = ("checkpoint", "write", "any", "any", "checkpoint", "write", "any", "any", "any", "any")


@pytest.mark.timeout(300)
def test_after_a_kill_9_at_any_point_a_marker_always_names_the_engines_state(home: Path, project: Path) -> None:
    """The crash worker stores, updates, forgets, recalls and checkpoints at random and is killed
    at a point it reached on purpose or at a random moment; every marker left must name the file
    beside it and the engine's counter. Then recall through the normal open (early when a
    marker allows) equals a rebuild's."""
    rnd = random.Random(7)
    with_marker = without = 0
    for cycle, stop_at in enumerate(STOPS):
        proc = kill_crash_worker(home, project, 100 + cycle, stop_at, rnd)
        for store_dir in (project / ".claude" / "engram", home / ".claude" / "engram"):
            for path in index_files(store_dir):
                marker = read_marker(path)
                # the project's own file was open in this run (a session's may be an earlier run's)
                if stop_at == "checkpoint" and path.name.startswith("project."):
                    assert marker is not None, path
                elif stop_at == "write" and path.name.startswith("project."):
                    assert marker is None, path
                if marker is None:
                    without += 1
                    continue
                with_marker += 1
                meta, _ = read_index_file(path)
                assert marker["changes"] == meta["changes"] == engine_changes(store_dir, meta["ns"], meta["db"]), path
        assert proc.returncode is not None
        _early_equals_rebuild(home, project)
    assert with_marker and without  # both sides of the protocol were exercised


def kill_crash_worker(home: Path, project: Path, seed: int, stop_at: str, rnd: random.Random) -> subprocess.Popen[str]:
    """Run tests/index_crash_worker.py and kill -9 it where `stop_at` says: once it says it stands
    there ("checkpoint", "write"), or after a random pause ("any")."""
    args = ["-m", "tests.index_crash_worker", str(home), str(project), str(seed)]
    proc = _spawn(args + ([] if stop_at == "any" else [stop_at]))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        if stop_at == "any":
            time.sleep(rnd.uniform(0.05, 1.2))
        else:
            assert proc.stdout.readline().strip() == f"at {stop_at}", proc.stderr.read() if proc.stderr else ""
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return proc


def _early_equals_rebuild(home: Path, project: Path) -> None:
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        got = [comparable(svc.recall(ctx, query=w, limit=8, strengthen=False)) for w in QUERIES]
    finally:
        svc.close()
    os.environ["ENGRAM_INDEX_PERSIST"] = "false"
    try:
        svc = MemoryService(home=home, embedder=FakeEmbedder())
        svc.access.config(None)
    finally:
        del os.environ["ENGRAM_INDEX_PERSIST"]
    try:
        want = [comparable(svc.recall(ctx, query=w, limit=8, strengthen=False)) for w in QUERIES]
    finally:
        svc.close()
    for g, w in zip(got, want, strict=True):
        assert {m["id"]: m for m in g} == {m["id"]: m for m in w}


# ------------------------------------------------------------------ a marker that lies
def test_a_stale_file_under_a_marker_is_withdrawn_and_rebuilt_when_the_engine_opens(
    home: Path, project: Path, gate: threading.Event
) -> None:
    """A marker that names the file but not the engine (the protocol never leaves one; here a
    write skips the removal): early answers may come from the file, but once the engine opens the
    mismatch is found, the index is rebuilt and no answer comes from the stale data again."""
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ids = fill(svc, ctx, 20)
    svc.checkpoint()
    handle = svc.access.handle(ctx, "project", early_ok=True)
    handle.store._before_counter_moves.clear()  # the write below leaves the marker in place
    svc.update(ctx, ids[1], content="zeta zeta fresh content")
    svc.access.write_behind.flush_all()
    path = StoreRegistry.index_path(handle.store.directory, handle.ns, handle.db)
    stale = read_marker(path)
    assert stale is not None
    svc.registry.close_all()  # no checkpoint: the file and its marker stay as they are
    svc.close()
    assert read_marker(path) == stale

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        handle = svc.access.handle(ctx, "project", early_ok=True)
        assert handle.engine_pending
        ranked_on = handle.index
        gate.set()
        handle.wait_engine()
        assert handle.index_status == "rebuilt (index file marked clean but stale)"
        assert handle.index is not ranked_on
        assert read_marker(path) is None
        with pytest.raises(EarlyAnswerWithdrawn):  # hits ranked on the old index are never materialised
            handle.early_rows([ids[1].split(":")[-1]], ranked_on)
        got = svc.recall(ctx, query="zeta fresh", limit=3, strengthen=False)
        assert got["memories"][0]["content"] == "zeta zeta fresh content"
    finally:
        gate.set()
        svc.close()


def test_a_recall_ranked_early_is_ranked_again_when_the_engine_withdraws_the_file(
    home: Path, project: Path, gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine opens (and finds the file stale) between ranking and fetching the records."""
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ids = fill(svc, ctx, 20)
    svc.checkpoint()
    handle = svc.access.handle(ctx, "project", early_ok=True)
    handle.store._before_counter_moves.clear()
    svc.update(ctx, ids[1], content="zeta zeta fresh content")
    svc.access.write_behind.flush_all()
    svc.registry.close_all()
    svc.close()

    import engram_mcp.services.recall as recall_mod

    real_rank = recall_mod.rank
    calls = []

    def rank_then_open(*args: Any, **kwargs: Any) -> Any:
        out = real_rank(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:  # the engine opens right after the first (early) ranking
            gate.set()
            for scope in ("user", "project"):
                svc.access.handle(ctx, scope, early_ok=True).wait_engine()
        return out

    monkeypatch.setattr(recall_mod, "rank", rank_then_open)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        got = svc.recall(ctx, query="zeta fresh", limit=3, strengthen=False)
        assert len(calls) == 2  # ranked again on the rebuilt index
        assert got["memories"][0]["content"] == "zeta zeta fresh content"
    finally:
        gate.set()
        svc.close()


@pytest.mark.parametrize("damage", ["record", "identity", "stamp"])
def test_a_tampered_file_is_not_trusted(home: Path, project: Path, damage: str, gate: threading.Event) -> None:
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    fill(svc, ctx, 20)
    svc.close()
    path = next(p for p in index_files(project / ".claude" / "engram") if p.name.startswith("project."))
    want = None
    if damage == "record":  # bytes of the records changed in place, size and marker kept
        meta, arrays = read_index_file(path)
        data = bytearray(path.read_bytes())
        blob = bytes(arrays["rec_json"])
        at = data.find(blob[:64])
        assert at > 0
        body = data[at : at + len(blob)].replace(b"alpha", b"ALPHA")
        assert body != data[at : at + len(blob)]
        data[at : at + len(blob)] = body
        stat = path.stat()
        path.write_bytes(bytes(data))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    elif damage == "identity":  # the file was replaced after the marker was written
        copy = path.with_name(path.name + ".copy")
        copy.write_bytes(path.read_bytes())
        os.replace(copy, path)
    else:  # a marker naming another state
        marker = json.loads(marker_path(path).read_text())
        marker["changes"] = marker["changes"] + "0"
        marker_path(path).write_text(json.dumps(marker))
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        if damage != "record":
            assert svc.access.handle(ctx, "project", early_ok=True).early is None  # the ordinary open
            gate.set()
        else:
            threading.Timer(0.5, gate.set).start()  # the recall waits for the engine instead
        got = svc.recall(ctx, query="alpha", limit=10, strengthen=False)
        gate.set()
        want = comparable(got)
        assert not any("ALPHA" in m["content"] for m in want)
    finally:
        gate.set()
        svc.close()
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        assert comparable(svc.recall(ctx, query="alpha", limit=10, strengthen=False)) == want
    finally:
        svc.close()


def test_a_store_that_fails_to_open_in_the_background_is_reported_and_tried_again(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ids = fill(svc, ctx, 10)
    svc.close()
    from engram_mcp.core.errors import StoreUnavailable

    real_open = SurrealStore.open
    failures = []

    def failing_open(self: SurrealStore) -> None:
        if threading.current_thread().name.startswith("engram-open") and not failures:
            failures.append(1)
            raise StoreUnavailable("refused by the test")
        real_open(self)

    monkeypatch.setattr(SurrealStore, "open", failing_open)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        handle = svc.access.handle(ctx, "user", early_ok=True)  # the first background open fails
        with pytest.raises(StoreUnavailable):
            handle.wait_engine()
        assert svc.get(ctx, ids[0])["id"] == ids[0]  # opened again, in the foreground
    finally:
        svc.close()


def test_record_blob_offsets_are_consistent(home: Path, project: Path) -> None:
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    fill(svc, ctx, 12)
    svc.close()
    for path in index_files(project / ".claude" / "engram"):
        meta, arrays = read_index_file(path)
        offsets = arrays["rec_offsets"]
        assert offsets[0] == 0 and offsets[-1] == arrays["rec_json"].shape[0]
        assert bool(np.all(np.diff(offsets) >= 0))


def test_record_encoding_round_trips_times_and_no_stored_value_passes_for_one() -> None:
    from datetime import datetime, timezone

    from engram_mcp.services.handles import decode_record, encode_record

    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    row = {
        "id": "memory:01ABC",
        "created_at": at,
        "metadata": {"$t": "not a time", "t": [at, {"x": at}], "r": {"$t": "2020-01-01T00:00:00+00:00"}},
        "promotion_chain": [{"at": at, "from": "session"}],
        "tags": ["a", "b"],
        "importance": 0.5,
        "summary": None,
    }
    back = decode_record(encode_record(row))
    assert back == row
    assert back["metadata"]["r"] == {"$t": "2020-01-01T00:00:00+00:00"}  # text stays text


def test_a_checkpoint_rereads_only_the_records_written_since_and_gets_what_a_full_read_gets(
    home: Path, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from engram_mcp.services.handles import _record_arrays

    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ids = fill(svc, ctx, 30)
        svc.checkpoint()
        handle = svc.access.handle(ctx, "project", early_ok=True)
        project_ids = [i for i in ids if svc.get(ctx, i)["scope"] == "project"]
        svc.update(ctx, project_ids[0], content="rewritten alpha content", importance=0.9)
        svc.forget(ctx, project_ids[1], reason="test")
        svc.link(ctx, project_ids[2], project_ids[3], "supersedes")
        svc.recall(ctx, query="alpha", limit=3)  # strengthened: written by the checkpoint's flush
        new = svc.store(ctx, content="a new project memory", type="semantic", scope="project")["memory_id"]
        caplog.set_level("INFO", logger="engram.handles")
        svc.checkpoint()
        line = next(
            r.getMessage() for r in caplog.records if handle.label in r.getMessage() and "written" in r.getMessage()
        )
        reread = int(line.split("records ")[1].split(", ")[1].split(" ")[0])
        assert 3 <= reread < 15, line  # the written ones, not all 24
        path = StoreRegistry.index_path(handle.store.directory, handle.ns, handle.db)
        _meta, arrays = read_index_file(path)
        full, _, complete = _record_arrays(handle, None, None)
        assert complete
        for name in ("rec_offsets", "rec_crc", "rec_json"):
            assert np.array_equal(arrays[name], full[name]), name
        assert b"rewritten alpha content" in arrays["rec_json"].tobytes()
        assert new.split(":")[-1].encode() in arrays["rec_json"].tobytes()
    finally:
        svc.close()


def test_a_write_that_does_not_name_its_records_makes_the_next_checkpoint_read_them_all(home: Path) -> None:
    store = SurrealStore(home / "s", label="test")
    store.open()
    try:
        store.ensure_schema("user", "default")
        store.take_changed_records("user", "default")
        store.repository("user", "default").set_status(["01K", "01L"], "active")
        assert store.take_changed_records("user", "default") == {"01K", "01L"}
        store.transaction("user", "default", [("UPDATE memory SET importance = 0.5 RETURN NONE", {})])
        assert store.take_changed_records("user", "default") is None
        assert store.take_changed_records("user", "default") == set()
    finally:
        store.close()


def test_a_large_rebuilt_store_gets_its_records_over_several_checkpoints_and_then_its_marker(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engram_mcp.services.access as access_mod
    import engram_mcp.services.handles as handles_mod

    monkeypatch.setattr(access_mod, "RECORD_READ_MAX", 7)
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        fill(svc, ctx, 25)  # 20 project memories: 7 + 7 + 6 records
        handle = svc.access.handle(ctx, "project")
        path = StoreRegistry.index_path(handle.store.directory, handle.ns, handle.db)
        seen = []
        for _ in range(4):
            svc.checkpoint()  # at idle: 7 records at most
            seen.append(read_marker(path) is not None)
        assert seen == [False, False, True, True]
        _meta, arrays = read_index_file(path)
        full, _, _ = handles_mod._record_arrays(handle, None, None)
        assert np.array_equal(arrays["rec_json"], full["rec_json"])
    finally:
        svc.close()


def test_a_store_a_newer_engram_owns_is_not_served_from_its_file_once_refused(
    home: Path, project: Path, gate: threading.Event
) -> None:
    """A background open refused for a newer schema withdraws the file for good (its marker goes);
    a store that is only busy keeps its file (the test above)."""
    from engram_mcp.core.paths import project_dir, project_id
    from engram_mcp.storage.schema import CURRENT_SCHEMA_VERSION

    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    fill(svc, ctx, 10)
    svc.access.handle(ctx, "project").q(q.SET_SCHEMA_VERSION, {"version": CURRENT_SCHEMA_VERSION + 1})
    svc.close()
    index = project_dir(project) / "index" / f"project.{project_id(project)}.eidx"
    assert read_marker(index) is not None, "the version write moves no index: the file stays clean"

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        first = svc.recall(ctx, query="alpha cache", scope="project", strengthen=False)
        assert first["memories"], "answered from the clean file before the engine said anything"
        gate.set()
        deadline = time.monotonic() + 30
        while read_marker(index) is not None and time.monotonic() < deadline:
            svc.access.registry.start_opens()
            time.sleep(0.05)
        assert read_marker(index) is None, "the refusal removed the marker"
        later = svc.recall(ctx, query="alpha cache", scope="project", strengthen=False)
        assert later["memories"] == [] and later["degraded"]
        assert any(w["code"] == "schema_too_new" or "newer" in w["message"] for w in later["warnings"]), later[
            "warnings"
        ]
    finally:
        svc.close()
    store = SurrealStore(project_dir(project), label="check")
    store.open()
    try:
        assert store.schema_version("project", project_id(project)) == CURRENT_SCHEMA_VERSION + 1, "left untouched"
    finally:
        store.close()


def test_an_export_waits_for_a_store_still_opening_without_holding_the_lock(
    home: Path, project: Path, gate: threading.Event, tmp_path: Path
) -> None:
    """Recalls answer early while a store opens; an export that meets the open waits for it
    outside the service lock, so those recalls are not kept waiting behind it."""
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    fill(svc, ctx, 30)
    svc.close()

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        svc.recall(ctx, query="alpha", limit=3, strengthen=False)  # both stores now open in the background
        assert svc.access.handle(ctx, "project", early_ok=True).engine_pending
        result: dict[str, Any] = {}
        exporter = threading.Thread(target=lambda: result.update(svc.export(ctx, tmp_path / "out.jsonl")))
        exporter.start()
        time.sleep(0.3)  # the export is now waiting for the gated open
        assert exporter.is_alive()
        took = time.perf_counter()
        assert svc.access.lock.acquire(timeout=5), "the export held the lock while the store opened"
        svc.access.lock.release()
        assert time.perf_counter() - took < 1.0
        assert svc.recall(ctx, query="deploy cache", limit=3, strengthen=False)["memories"]
        gate.set()
        exporter.join(60)
        assert not exporter.is_alive() and result["counts"]["memory"] == 30
    finally:
        gate.set()
        svc.close()


# ------------------------------------------------------------------ records from the file, engine open
def _engine_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The memory keys recall reads from the engine from now on."""
    from engram_mcp.storage.repository import ScopeRepository

    reads: list[str] = []
    real = ScopeRepository.get_many_for_recall

    def counted(self: ScopeRepository, keys: Any) -> Any:
        keys = list(keys)
        reads.extend(keys)
        return real(self, keys)

    monkeypatch.setattr(ScopeRepository, "get_many_for_recall", counted)
    return reads


def _engine_only_answer(svc: MemoryService, ctx: RequestContext, query: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    from engram_mcp.services.handles import ScopeHandle

    with monkeypatch.context() as m:
        m.setattr(ScopeHandle, "file_rows", lambda self, keys, ranked_on: ([], list(keys)))
        return svc.recall(ctx, query=query, limit=6, strengthen=False)


def test_an_open_store_takes_recall_records_from_the_file_unless_written_since(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the engine is open, recall reads from the engine only the hits written since the
    file's records were read or written; the answer is the one the engine gives."""
    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        fill(svc, ctx, 30)
        svc.checkpoint()
        reads = _engine_reads(monkeypatch)
        for query in QUERIES:
            got = svc.recall(ctx, query=query, limit=6, strengthen=False)
            assert got["memories"] and reads == []
            assert comparable(got) == comparable(_engine_only_answer(svc, ctx, query, monkeypatch))
            assert len(reads) == len(got["memories"])  # the comparison did read them all
            reads.clear()
        hit = svc.recall(ctx, query="alpha cache", limit=1, strengthen=False)["memories"][0]["id"]
        svc.update(ctx, hit, content="rewritten zebra alpha cache")
        reads.clear()
        got = svc.recall(ctx, query="zebra alpha cache", limit=6, strengthen=False)
        assert got["memories"][0]["content"] == "rewritten zebra alpha cache"
        assert reads == [hit.split(":")[-1]]  # the written one only
        assert comparable(got) == comparable(_engine_only_answer(svc, ctx, "zebra alpha cache", monkeypatch))
        svc.checkpoint()  # the file now holds the new text: read from it again
        reads.clear()
        assert svc.recall(ctx, query="zebra alpha cache", limit=6, strengthen=False)["memories"] and reads == []
    finally:
        svc.close()


def test_recall_reads_from_the_engine_what_the_file_cannot_vouch_for(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record failing its checksum is read from the engine, and so is every hit after a write
    that does not name the records it wrote."""
    from engram_mcp.services.handles import RecordSnapshot

    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        fill(svc, ctx, 30)
        svc.checkpoint()
        want = comparable(_engine_only_answer(svc, ctx, "alpha cache", monkeypatch))
        top = svc.recall(ctx, query="alpha cache", limit=1, strengthen=False)["memories"][0]
        handle = svc.access.handle(ctx, top["scope"])
        snap = handle.records
        assert snap is not None
        key = top["id"].split(":")[-1]
        crcs = snap.crcs.copy()
        crcs[handle.index.slot_of(key)] ^= 1
        handle.records = RecordSnapshot(snap.keys, snap.offsets, crcs, snap.blob)
        reads = _engine_reads(monkeypatch)
        assert comparable(svc.recall(ctx, query="alpha cache", limit=6, strengthen=False)) == want
        assert reads == [key]
        for scope in ("user", "project"):
            h = svc.access.handle(ctx, scope)
            h.store.note_changed_records(h.ns, h.db, None)
        reads.clear()
        got = svc.recall(ctx, query="alpha cache", limit=6, strengthen=False)
        assert comparable(got) == want
        assert sorted(reads) == sorted(m["id"].split(":")[-1] for m in got["memories"])
    finally:
        svc.close()


def test_strengthening_written_since_the_file_is_replayed_on_its_records(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall strengthening written after the file's records were taken is replayed on them as
    the engine applied it (count, last access, created -> active), so a hit recalled again is
    still read from the file and equals the engine's record; a strengthening write that failed
    leaves the engine's state unknown, and the engine answers until the next checkpoint."""
    from engram_mcp.storage.repository import ScopeRepository

    ctx = RequestContext(project, None)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        fill(svc, ctx, 30)
        svc.checkpoint()
        for _ in range(3):
            svc.recall(ctx, query="alpha cache", limit=6)
            svc.access.write_behind.flush_all()
        svc.recall(ctx, query="alpha cache", limit=6)  # held back, overlaid as before
        reads = _engine_reads(monkeypatch)
        got = svc.recall(ctx, query="alpha cache", limit=6, strengthen=False)
        assert reads == []
        assert {m["access_count"] for m in got["memories"]} == {4}
        assert {m["status"] for m in got["memories"]} == {"active"}
        svc.access.write_behind.flush_all()
        assert comparable(got) == comparable(_engine_only_answer(svc, ctx, "alpha cache", monkeypatch))

        def refused(self: ScopeRepository, bumps: Any) -> None:
            raise RuntimeError("disk gone (test)")

        monkeypatch.setattr(ScopeRepository, "strengthen", refused)
        svc.recall(ctx, query="alpha cache", limit=6)
        svc.access.write_behind.flush_all()
        reads.clear()
        got = svc.recall(ctx, query="alpha cache", limit=6, strengthen=False)
        assert sorted(reads) == sorted(m["id"].split(":")[-1] for m in got["memories"])
    finally:
        svc.close()
