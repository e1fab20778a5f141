"""Shared fixtures for the engine tests (storage, service, retrieval, lifecycle, ...).

Every test gets its own home and git project under tmp_path, and a real MemoryService on
the embedded engine. `fake_service` uses the deterministic FakeEmbedder (fast);
`real_service` uses the real default model, loaded once per test run from a cache
directory shared by every test (the model is assembled once).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterator

import pytest

from engram_mcp.index.embeddings import DEFAULT_MODEL, FastEmbedEmbedder
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage.store import SurrealStore
from tests.fakes import FakeEmbedder

SESSION_ID = "sess-1"


def _scrub_engram_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's ENGRAM_* settings must not leak into a test."""
    for name in list(os.environ):
        if name.startswith("ENGRAM_"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private home directory (user store at <home>/.claude/engram)."""
    _scrub_engram_env(monkeypatch)
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project root: <tmp>/proj with a .git directory."""
    path = tmp_path / "proj"
    (path / ".git").mkdir(parents=True)
    return path


@pytest.fixture
def ctx(project: Path) -> RequestContext:
    return RequestContext(project, SESSION_ID)


@pytest.fixture
def fake_service(home: Path):
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        yield svc
    finally:
        svc.close()


@pytest.fixture(scope="session")
def real_embedder(tmp_path_factory: pytest.TempPathFactory) -> FastEmbedEmbedder:
    """The real default model, assembled once per run in a shared cache directory."""
    cache = tmp_path_factory.mktemp("engram-models")
    emb = FastEmbedEmbedder(DEFAULT_MODEL, cache_dir=str(cache))
    emb.load()
    return emb


@pytest.fixture
def real_service(home: Path, real_embedder: FastEmbedEmbedder):
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        yield svc
    finally:
        svc.close()


@pytest.fixture
def daemon(fake_service):
    """An in-process Daemon serving `fake_service` (no socket): drive it with daemon_env.daemon_request."""
    from engram_mcp.daemon.process import Daemon

    d = Daemon(fake_service.user_dir)
    d.service = fake_service
    d.ready.set()
    return d


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Holds every store open made by a background thread until set (the early window of
    services/handles.py's early answers)."""
    released = threading.Event()
    real_open = SurrealStore.open

    def gated_open(self: SurrealStore) -> None:
        if threading.current_thread().name.startswith("engram-open"):
            assert released.wait(60), "the gate was never opened"
        real_open(self)

    monkeypatch.setattr(SurrealStore, "open", gated_open)
    yield released
    released.set()


def install_before_store_marks(home: Path) -> None:
    """`home` as an engram from before project stores carried an owner mark left it: a user store
    with data. A project store written before the first run of this version is then taken as the
    user's own (`core/store_owner.py`); one written after is refused."""
    from engram_mcp.core.paths import user_dir

    SurrealStore(user_dir(home), label="user").open().close()
