"""A missing or stale index file is rebuilt in the background while recall answers from what
is loaded, and says so (services/handles.py `BackgroundRebuild`).

The store is real; the memories are imported with keys (ULIDs) made at chosen times, so the
newest-first windows of the rebuild are all exercised. The constants are shrunk so a few dozen
memories take several pages, and a gate holds the loader between pages where a test needs the
partial state to last.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engram_mcp.core.ids import new_ulid, ulid_floor
from engram_mcp.services import handles
from engram_mcp.services.handles import BackgroundRebuild, StoreRegistry
from engram_mcp.services.service import MemoryService, RequestContext
from tests.fakes import FakeEmbedder

DAY_MS = 86_400_000
#: (age in days, how many): the newest window is one day, the next ones 4, 16, 64, ... days long
AGES = [(0, 6), (2, 6), (10, 6), (40, 6), (200, 6), (3000, 6)]
FIRST_ROWS = 8
PAGE = 4


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handles, "REBUILD_PAGE", PAGE)
    monkeypatch.setattr(handles, "REBUILD_BACKGROUND_PAGE", PAGE - 1)
    monkeypatch.setattr(handles, "REBUILD_FIRST_ROWS", FIRST_ROWS)


def _lines(now_ms: int) -> list[dict]:
    """Memories whose keys were made at each age of AGES; every one mentions 'kiwi'."""
    rng = np.random.default_rng(5)
    out = []
    for age, count in AGES:
        for i in range(count):
            ms = now_ms - age * DAY_MS - int(rng.integers(0, 3_600_000))
            out.append(
                {
                    "kind": "memory",
                    "scope": "project",
                    "id": new_ulid(ms),
                    "record": {"memory_type": "semantic", "content": f"kiwi note {age} days old, number {i}"},
                }
            )
    return out


def _seeded(home: Path, project: Path, tmp_path: Path) -> list[str]:
    """A project store holding the memories of `_lines` plus one stored now that supersedes the
    oldest, its index file then removed. Returns every key, newest first."""
    lines = _lines(int(time.time() * 1000))
    path = tmp_path / "seed.jsonl"
    header = {"kind": "header", "format": "engram-export", "version": 1}
    path.write_text("\n".join(json.dumps(o) for o in [header, *lines]) + "\n")
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ctx = RequestContext(project)
        assert svc.import_(ctx, path)["counts"]["memory"] == len(lines)
        oldest = min(line["id"] for line in lines)
        newer = svc.store(
            ctx,
            content="kiwi note that replaces the oldest",
            type="semantic",
            scope="project",
            supersedes=f"memory:{oldest}",
        )["memory_id"]
    finally:
        svc.close()
    shutil.rmtree(project / ".claude" / "engram" / "index")
    return sorted([newer[len("memory:") :], *(line["id"] for line in lines)], reverse=True)


def _newer_than(keys: list[str], days: float) -> set[str]:
    return {k for k in keys if k >= ulid_floor(int(time.time() * 1000 - days * DAY_MS))}


def _gated(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[int]]:
    """Hold the background loader before each page until `go` is set; `pages` counts the pages it took."""
    go, pages = threading.Event(), []
    real = StoreRegistry._rebuild_in_background

    def wrapped(self, handle, repo, rest):
        def held() -> Iterator:
            for rows in rest:
                assert go.wait(60), "the loader was never released"
                pages.append(len(rows))
                yield rows

        return real(self, handle, repo, held())

    monkeypatch.setattr(StoreRegistry, "_rebuild_in_background", wrapped)
    return go, pages


def _recall_keys(svc: MemoryService, ctx: RequestContext) -> tuple[list[str], list[dict]]:
    out = svc.recall(ctx, query="kiwi note", limit=50, strengthen=False, scope="project")
    return [m["id"][len("memory:") :] for m in out["memories"]], out["warnings"]


def test_recall_answers_from_the_newest_memories_while_the_rest_load(
    home: Path, project: Path, tmp_path: Path, small_pages: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = _seeded(home, project, tmp_path)
    go, pages = _gated(monkeypatch)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project)
    try:
        keys, warnings = _recall_keys(svc, ctx)
        handle = svc.access.handle(ctx, "project", early_ok=True)
        loading = handle.rebuilding
        assert isinstance(loading, BackgroundRebuild) and FIRST_ROWS <= len(handle.index) < len(everything)
        # newest first: the last day whole, the window before it begun, nothing older
        loaded = set(handle.index.keys())
        assert len(loaded) == len(handle.index)
        assert _newer_than(everything, 1) <= loaded <= _newer_than(everything, 5)
        assert keys and set(keys) <= loaded
        assert [w["code"] for w in warnings] == ["partial_results"]
        assert "being rebuilt" in warnings[0]["message"] and str(len(handle.index)) in warnings[0]["message"]
        # a checkpoint meanwhile writes nothing: a partly loaded index is never trusted later
        assert svc.access.registry.checkpoint(handle) is False
        assert not StoreRegistry.index_path(project / ".claude" / "engram", handle.ns, handle.db).exists()

        # anything but recall waits for the whole index
        counted: list[int] = []
        waiter = threading.Thread(target=lambda: counted.append(len(svc.access.handle(ctx, "project").index)))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not counted
        go.set()
        waiter.join(60)
        assert counted == [len(everything)]
        assert handle.rebuilding is None and len(pages) >= 3 and max(pages) <= PAGE - 1  # the background's size

        keys, warnings = _recall_keys(svc, ctx)
        assert not warnings and len(keys) == len(everything) - 1  # the superseded one is hidden
    finally:
        go.set()
        svc.close()


def test_the_index_loaded_in_the_background_equals_a_full_rebuild(
    home: Path, project: Path, tmp_path: Path, small_pages: None
) -> None:
    _seeded(home, project, tmp_path)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project)
    try:
        handle = svc.access.handle(ctx, "project", early_ok=True)
        assert handle.early is not None
        handle.wait_engine()
        full = svc.access.registry._rebuild("project", handle.store.repository(handle.ns, handle.db))
        assert sorted(handle.index.keys()) == sorted(full.keys())
        assert handle.index.superseded_by == full.superseded_by and full.superseded_by
        for key in full.keys():
            a, b = handle.index.slot_of(key), full.slot_of(key)
            assert np.array_equal(handle.index.vectors.get(a), full.vectors.get(b))
            assert handle.index.cols.status_code[a] == full.cols.status_code[b]
        keys, warnings = _recall_keys(svc, ctx)
        assert not warnings and keys
    finally:
        svc.close()
    # the complete index was written at close, and loads from its file next time
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        handle = svc.access.handle(ctx, "project")
        assert handle.index_status == "loaded" and handle.rebuilding is None
    finally:
        svc.close()


def test_closing_while_the_index_loads_stops_the_loader_and_writes_no_file(
    home: Path, project: Path, tmp_path: Path, small_pages: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    newest_first = _seeded(home, project, tmp_path)
    go, _pages = _gated(monkeypatch)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project)
    handle = svc.access.handle(ctx, "project", early_ok=True)
    assert handle.rebuilding is not None
    go.set()  # the loader may take its page in flight; then it sees the cancel
    started = time.monotonic()
    svc.close()
    assert time.monotonic() - started < 30
    index_file = StoreRegistry.index_path(project / ".claude" / "engram", handle.ns, handle.db)
    if index_file.exists():  # only if the loader finished before the cancel: then it is whole
        svc = MemoryService(home=home, embedder=FakeEmbedder())
        try:
            assert len(svc.access.handle(ctx, "project").index) == len(newest_first)
        finally:
            svc.close()


def test_pages_cover_every_key_once_newest_window_first(home: Path, project: Path, tmp_path: Path) -> None:
    newest_first = _seeded(home, project, tmp_path)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        store = svc.access.registry.store_for(project / ".claude" / "engram", "project", project)
        handle = svc.access.handle(RequestContext(project), "project")
        repo = store.repository(handle.ns, handle.db)
        pages = list(handles.NewestFirst(repo, 3, int(time.time() * 1000)))
        seen = [str(r["id"]) for page in pages for r in page]
        assert len(seen) == len(set(seen)) and set(seen) == set(newest_first)
        assert all(1 <= len(p) <= 3 for p in pages)
        # window by window back in time: every key of a page is newer than every key of a later
        # window, so the order of windows is the order of the keys' times
        windows = [1, 5, 21, 85, 341, 1365, 10_000]
        rank = [next(i for i, days in enumerate(windows) if k in _newer_than(newest_first, days)) for k in seen]
        assert rank == sorted(rank) and rank[0] == 0 and rank[-1] >= 5
    finally:
        svc.close()


def test_recalls_racing_the_loader_all_answer_and_the_result_is_whole(
    home: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recalls from two threads while the loader adds two-memory pages: none fails, each
    answers from memories that exist, and the index ends equal to a full rebuild."""
    monkeypatch.setattr(handles, "REBUILD_PAGE", 2)
    monkeypatch.setattr(handles, "REBUILD_BACKGROUND_PAGE", 2)
    monkeypatch.setattr(handles, "REBUILD_FIRST_ROWS", 4)
    everything = _seeded(home, project, tmp_path)
    real = StoreRegistry._rebuild_in_background

    def slowed(self, handle, repo, rest):
        def paced() -> Iterator:
            for rows in rest:
                time.sleep(0.01)  # the pages of a large store take longer than these few
                yield rows

        return real(self, handle, repo, paced())

    monkeypatch.setattr(StoreRegistry, "_rebuild_in_background", slowed)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project)
    answers: list[tuple[list[str], list[dict]]] = []
    errors: list[BaseException] = []
    try:
        handle = svc.access.handle(ctx, "project", early_ok=True)
        assert handle.rebuilding is not None

        def ask() -> None:
            try:
                while handle.rebuilding is not None:
                    answers.append(_recall_keys(svc, ctx))
                    time.sleep(0.002)  # a pause between recalls, as between requests
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        askers = [threading.Thread(target=ask) for _ in range(2)]
        for t in askers:
            t.start()
        for t in askers:
            t.join(60)
        assert not errors, errors
        assert any(w for _k, w in answers), "no recall overlapped the loader"
        for keys, warnings in answers:
            assert set(keys) <= set(everything)
            assert all(w["code"] == "partial_results" for w in warnings)
        full = svc.access.registry._rebuild("project", handle.store.repository(handle.ns, handle.db))
        assert sorted(handle.index.keys()) == sorted(full.keys()) == sorted(everything)
    finally:
        svc.close()
