"""Open stores and their scope databases: who owns what, and where it lives.

A `StoreRegistry` opens each datastore directory once (the user store under
`~/.claude/engram/`, one store per project under `<project>/.claude/engram/`) and keeps,
per scope database, a `ScopeHandle`: the store, the SurrealDB namespace/database and
the derived retrieval index. Session scopes live in the project store's `session`
namespace, so hooks and the MCP server of one session share them and a crash loses
nothing until they are promoted.

The derived index is persisted next to its store (`<store dir>/index/<ns>.<db>.eidx`,
index/persist.py), stamped with the database's change counter, which the store bumps in the
same transaction as every write that may change what the index holds (every write but
storage/queries.py UNINDEXED_WRITES).
Opening a scope loads the file when its stamp equals the counter (the file is mapped, not
read); a missing, torn, corrupt, foreign-model or stale file is ignored and the index is
rebuilt from the records, as without persistence. `checkpoint` writes the file (at idle in
the daemon, and when the service closes). The engine stays the system of record: a file is
only ever trusted after comparing its stamp with the engine's counter, so a `kill -9` at any
point costs a rebuild, never a wrong answer.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engram_mcp.core.errors import StoreUnavailable
from engram_mcp.core.ids import session_db_name
from engram_mcp.core.paths import project_dir, project_id
from engram_mcp.index.persist import IndexFileError, read_index_file, write_index_file
from engram_mcp.index.scope_index import ScopeIndex
from engram_mcp.storage.repository import ScopeRepository
from engram_mcp.storage.rows import LinkRow
from engram_mcp.storage.store import SurrealStore

log = logging.getLogger("engram.handles")
USER_NS, USER_DB = "user", "default"
PROJECT_NS = "project"
SESSION_NS = "session"
#: Where a store keeps its persisted indexes (beside `data/`).
INDEX_DIRNAME = "index"
INDEX_SUFFIX = ".eidx"
_EPOCH = datetime.fromtimestamp(0, timezone.utc)


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
    #: How the index came to be: "loaded" from its file, or "rebuilt (<why the file was not used>)".
    index_status: str = "rebuilt"
    #: The change stamp the index file on disk reflects (None: no usable file).
    persisted_changes: str | None = None
    #: `index.edits` when the file was last written or loaded (a checkpoint is due when it moved).
    persisted_edits: int = -1
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

    def __init__(
        self, user_dir: Path, make_index: Callable[[str], ScopeIndex], persist: Callable[[], bool] = lambda: True
    ) -> None:
        self.user_dir = user_dir
        self._make_index = make_index
        self._persist = persist  # config `index_persist`, read when a scope opens or checkpoints
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
        """Close every store (callers checkpoint first: `checkpoint_all`)."""
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
        loaded, why = self._load_persisted(Path(directory), ns, db, index, repo) if self._persist() else (None, "off")
        if loaded is not None:
            index = loaded
        else:
            index.bulk_load(repo.index_rows())
            # oldest first, so when a memory was superseded twice the latest link wins, as it
            # did when the links were made (the table's own order is arbitrary)
            for link in sorted(repo.all_links(), key=_link_time):
                if link.relation_type == "supersedes":
                    index.mark_superseded(link.dst, link.src)
        self.load_seconds[f"{scope}:{db}"] = time.perf_counter() - started
        log.info(
            "%s:%s index %s in %.2f s",
            scope,
            db,
            "loaded" if loaded is not None else "rebuilt",
            time.perf_counter() - started,
        )
        handle = ScopeHandle(scope, store, ns, db, index, root, session_id)
        if loaded is not None:
            handle.index_status, handle.persisted_changes, handle.persisted_edits = "loaded", why, index.edits
        else:
            handle.index_status = f"rebuilt ({why})"
            if why != "off":
                log.info("%s index rebuilt from the store: %s", handle.label, why)
        self._handles[key] = handle
        return handle

    # -- the persisted index ------------------------------------------------------------
    @staticmethod
    def index_path(directory: Path, ns: str, db: str) -> Path:
        """The index file of database (ns, db) of the store in `directory` (names from core/ids.py)."""
        return Path(directory) / INDEX_DIRNAME / f"{ns}.{db}{INDEX_SUFFIX}"

    def _load_persisted(
        self, directory: Path, ns: str, db: str, fresh: ScopeIndex, repo: ScopeRepository
    ) -> tuple[ScopeIndex | None, str]:
        """(the persisted index, its stamp as text) when it may be trusted, else (None, why not)."""
        try:
            meta, arrays = read_index_file(
                self.index_path(directory, ns, db),
                unchecked=ScopeIndex.UNCHECKED_ARRAYS,
                writable=ScopeIndex.WRITABLE_ARRAYS,
                random_access=ScopeIndex.UNCHECKED_ARRAYS,
            )
        except IndexFileError as exc:
            return None, f"index file {exc}"
        if meta.get("ns") != ns or meta.get("db") != db:
            return None, "index file of another database"
        if meta.get("model") != fresh.model_name or meta.get("dim") != fresh.dim:
            return None, f"index file made with {meta.get('model')}/{meta.get('dim')}"
        changes = repo.changes()
        if not changes or meta.get("changes") != changes:
            return None, f"index file stale (change {meta.get('changes')}, store at {changes})"
        try:
            index = ScopeIndex.from_state(meta, arrays)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            return None, f"index file inconsistent ({exc})"
        index.scope = fresh.scope
        return index, changes

    def checkpoint(self, handle: ScopeHandle) -> bool:
        """Write the handle's index to its file when it changed since the last write or load.

        The caller holds the service lock, so no operation is half applied: reading the counter
        first writes any held-back strengthening (`before_io`), then the index and the engine
        agree at that counter. Returns whether a file was written."""
        if not self._persist() or not handle.store.is_open or handle.index.edits == handle.persisted_edits:
            return False
        changes = handle.repo.changes()
        if not changes:  # no counter yet (a store older than it): start one, or no stamp can match
            handle.repo.start_changes()
            changes = handle.repo.changes()
        edits = handle.index.edits
        if changes == handle.persisted_changes:
            handle.persisted_edits = edits
            return False
        meta, arrays = handle.index.export_state()
        meta.update(changes=changes, ns=handle.ns, db=handle.db)
        path = self.index_path(handle.store.directory, handle.ns, handle.db)
        _private_dir(path.parent)
        for leftover in path.parent.glob(f".{path.name}.*.tmp"):  # a write a crash cut short
            leftover.unlink(missing_ok=True)
        write_index_file(path, meta, arrays)
        handle.persisted_changes, handle.persisted_edits = changes, edits
        return True

    def checkpoint_all(self) -> int:
        """`checkpoint` every open handle; a failure is logged (the file is only a cache)."""
        written = 0
        for handle in list(self._handles.values()):
            try:
                written += self.checkpoint(handle)
            except Exception as exc:
                log.warning("could not write the index of %s: %s", handle.label, exc)
        return written

    def drop_session(self, root: Path, session_id: str) -> None:
        """Remove a session database (after its promotion) and forget its handle."""
        db = session_db_name(session_id)
        directory = project_dir(root)
        store = self.store_for(directory, "project", root)
        store.remove_database(SESSION_NS, db)
        self._handles.pop((directory, SESSION_NS, db), None)
        self.index_path(directory, SESSION_NS, db).unlink(missing_ok=True)

    def session_databases(self, root: Path) -> list[str]:
        """Names of the session databases present in a project store."""
        store = self.store_for(project_dir(root), "project", root)
        return sorted(name for name in store.databases(SESSION_NS) if name.startswith("s_"))


def _private_dir(path: Path) -> None:
    """Create the index directory (0700) or check the one there: a real directory of this user
    (a repository could ship a link there; the file writes would follow it)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise OSError(f"{path} is not a directory of this user") from None


def _link_time(link: LinkRow) -> datetime:
    return link.created_at or _EPOCH
