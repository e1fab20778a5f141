"""Open stores and their scope databases: who owns what, and where it lives.

A `StoreRegistry` opens each datastore directory once (the user store under
`~/.claude/engram/`, one store per project under `<project>/.claude/engram/`) and keeps,
per scope database, a `ScopeHandle`: the store, the SurrealDB namespace/database and
the derived retrieval index. Session scopes live in the project store's `session`
namespace, so hooks and the MCP server of one session share them and a crash loses
nothing until they are promoted.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engram_mcp.core.errors import StoreUnavailable
from engram_mcp.core.ids import session_db_name
from engram_mcp.core.paths import project_dir, project_id
from engram_mcp.index.scope_index import ScopeIndex
from engram_mcp.storage.repository import ScopeRepository
from engram_mcp.storage.store import SurrealStore

log = logging.getLogger("engram.handles")
USER_NS, USER_DB = "user", "default"
PROJECT_NS = "project"
SESSION_NS = "session"


@dataclass
class ScopeHandle:
    """One scope database plus its in-memory index."""

    scope: str
    store: SurrealStore
    ns: str
    db: str
    index: ScopeIndex
    project_root: Path | None = None
    session_id: str | None = None
    # Called with this handle before any statement runs on it: writes what is held back in
    # memory (recall strengthening, engram_mcp/services/strengthen.py) so every statement sees it.
    before_io: Callable[["ScopeHandle"], None] | None = None
    #: Every read and write of this database, by intent (storage/repository.py); each
    #: statement runs after `before_io`.
    repo: ScopeRepository = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # looked up at each call, not bound once: `q` and `tx` are the handle's one way to the store
        self.repo = ScopeRepository(lambda sql, params: self.q(sql, params), lambda stmts: self.tx(stmts))

    def direct_repo(self) -> ScopeRepository:
        """The repository without `before_io`: for the write-behind flush itself, and for recall's
        reads of the hits, which the flush must not delay (services/strengthen.py)."""
        return self.store.repository(self.ns, self.db)

    def q(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        """Run one statement of storage/queries.py (the repository's way in; tests read with it too)."""
        if self.before_io is not None:
            self.before_io(self)
        return self.store.query(self.ns, self.db, sql, params)

    def tx(self, statements: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Run statements as one transaction (what `repo.atomic()` commits)."""
        if self.before_io is not None:
            self.before_io(self)
        return self.store.transaction(self.ns, self.db, statements)

    @property
    def label(self) -> str:
        return f"{self.scope}:{self.db}"


class StoreRegistry:
    """Opens stores lazily and keeps one handle per scope database."""

    def __init__(self, user_dir: Path, make_index: Callable[[str], ScopeIndex]) -> None:
        self.user_dir = user_dir
        self._make_index = make_index
        self._stores: dict[Path, SurrealStore] = {}
        self._handles: dict[tuple[Path, str, str], ScopeHandle] = {}
        self._failures: dict[Path, tuple[float, str]] = {}
        self.load_seconds: dict[str, float] = {}

    # -- stores --------------------------------------------------------------------
    def store_for(self, directory: Path, label: str, root: Path | None = None) -> SurrealStore:
        """The open store of a directory. A project store (`root` given) is checked from the
        project root down: `.claude` and `.claude/engram` come from the repository, so neither
        may be a link or belong to someone else (paths.py); the user store from its parent."""
        directory = Path(directory)
        store = self._stores.get(directory)
        if store is not None and store.is_open:
            return store
        store = SurrealStore(directory, label=label, trusted=root)
        try:
            store.open()
        except StoreUnavailable as exc:
            self._failures[directory] = (time.time(), exc.message)
            raise
        self._failures.pop(directory, None)
        self._stores[directory] = store
        return store

    def failures(self) -> dict[str, str]:
        """Store directories that cannot be used right now -> why (failed open, or closed after an I/O error)."""
        out = {str(k): s.failure for k, s in self._stores.items() if not s.is_open and s.failure}
        out.update({str(k): v[1] for k, v in self._failures.items()})
        return out

    def open_stores(self) -> list[SurrealStore]:
        return [s for s in self._stores.values() if s.is_open]

    def close_all(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        self._handles.clear()

    def close_store(self, directory: Path) -> None:
        store = self._stores.pop(Path(directory), None)
        if store is not None:
            store.close()
        for key in [k for k in self._handles if k[0] == Path(directory)]:
            del self._handles[key]

    # -- handles ------------------------------------------------------------------
    def user(self) -> ScopeHandle:
        return self._handle(self.user_dir, "user", USER_NS, USER_DB, None, None)

    def project(self, root: Path) -> ScopeHandle:
        return self._handle(project_dir(root), "project", PROJECT_NS, project_id(root), root, None)

    def session(self, root: Path, session_id: str) -> ScopeHandle:
        return self._handle(project_dir(root), "session", SESSION_NS, session_db_name(session_id), root, session_id)

    def cached_session(self, root: Path, session_id: str) -> ScopeHandle | None:
        return self._handles.get((project_dir(root), SESSION_NS, session_db_name(session_id)))

    def _handle(
        self, directory: Path, scope: str, ns: str, db: str, root: Path | None, session_id: str | None
    ) -> ScopeHandle:
        key = (Path(directory), ns, db)
        handle = self._handles.get(key)
        if handle is not None and handle.store.is_open:
            return handle
        store = self.store_for(directory, scope if scope != "session" else "project", root)
        if ns == SESSION_NS:
            store.define_database(ns, db)
        store.ensure_schema(ns, db)
        index = self._make_index(scope)
        started = time.perf_counter()
        repo = store.repository(ns, db)
        index.bulk_load(repo.index_rows())
        for link in repo.all_links():
            if link.relation_type == "supersedes":
                index.mark_superseded(link.dst, link.src)
        self.load_seconds[f"{scope}:{db}"] = time.perf_counter() - started
        handle = ScopeHandle(scope, store, ns, db, index, root, session_id)
        self._handles[key] = handle
        return handle

    def drop_session(self, root: Path, session_id: str) -> None:
        """Remove a session database (after its promotion) and forget its handle."""
        db = session_db_name(session_id)
        directory = project_dir(root)
        store = self.store_for(directory, "project", root)
        store.remove_database(SESSION_NS, db)
        self._handles.pop((directory, SESSION_NS, db), None)

    def session_databases(self, root: Path) -> list[str]:
        """Names of the session databases present in a project store."""
        store = self.store_for(project_dir(root), "project", root)
        return sorted(name for name in store.databases(SESSION_NS) if name.startswith("s_"))
