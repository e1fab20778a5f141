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
read). A file a few changes behind is loaded and repaired from the store's change log (each
bump names the records its transaction wrote): only those records are read again. A missing,
torn, corrupt or foreign-model file, or a stale one the log cannot repair, is ignored and the
index is rebuilt from the records, as without persistence. `checkpoint` writes the file (at idle in
the daemon, and when the service closes). The engine stays the system of record: a file is
only ever trusted after comparing its stamp with the engine's counter, so a `kill -9` at any
point costs a repair or a rebuild, never a wrong answer.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from engram_mcp.core import store_owner
from engram_mcp.core.errors import InvalidInput, SchemaTooNew, StoreUnavailable
from engram_mcp.core.ids import session_db_name, ulid_floor
from engram_mcp.core.paths import DATA_DIRNAME, UnsafePath, fsync_dir, project_dir, project_id, store_is_tracked
from engram_mcp.index.persist import IndexFileError, read_index_file, write_index_file
from engram_mcp.index.scope_index import ScopeIndex
from engram_mcp.storage.repository import ScopeRepository
from engram_mcp.storage.rows import LinkRow, MemoryRecord
from engram_mcp.storage.store import SurrealStore

log = logging.getLogger("engram.handles")
USER_NS, USER_DB = "user", "default"
PROJECT_NS = "project"
SESSION_NS = "session"
#: Where a store keeps its persisted indexes (beside `data/`).
INDEX_DIRNAME = "index"
INDEX_SUFFIX = ".eidx"
#: Beside an index file: written (fsynced) after the checkpoint that wrote the file, removed before
#: the first engine commit that moves the database's change counter after it.
CLEAN_SUFFIX = ".clean"
#: Inside the store's `data/` (so it travels with the data, not with the index files): the
#: generation of a database's last checkpoint whose `clean` marker stands, `<prefix><ns>.<db>`.
#: Written before the marker, removed with it before the next counter-moving commit. A
#: `data/` restored alone (older or newer than `index/`), or an older index file put back with
#: its marker, carries another generation (or none), so the file is not answered from early.
DATA_TOKEN_PREFIX = "engram-index."
#: In each database's `engram_meta` (an unindexed write): the generation of the index file its
#: last checkpoint wrote. A file of another generation (a fork: data restored, then written,
#: then an index file from the first history put back) is rebuilt, whatever its stamp says.
INDEX_GENERATION_KEY = "index_generation"
#: `<ns>.databases.clean` beside the index files: the databases a namespace held when listed,
#: removed before the first commit in any other database of it (a new session's, mostly).
DATABASES_SUFFIX = ".databases"
#: How long a project root's database name (from its resolved path) is reused, in seconds.
PROJECT_NAME_TTL_S = 2.0
#: Records read per statement when a checkpoint copies what recall returns into the file.
RECORD_PAGE = 2000
#: Records an idle checkpoint reads from the store at most (~0.3 ms each, under the service
#: lock): after a rebuild a large store gets its records over several idle checkpoints (or all
#: at once at exit), and its `clean` marker once it has them all.
RECORD_READ_MAX = 10_000


#: A rebuild reads the records newest first, this many per statement while a request waits
#: (~0.1 s each here)...
REBUILD_PAGE = 500
#: ...and this many once the rest loads in the background: the engine holds the interpreter lock
#: while it reads, so a recall meanwhile waits up to a page's read (~20 ms), a little more in all.
REBUILD_BACKGROUND_PAGE = 100
#: Per handle key (directory, ns, db): its store's index-moving writes and its index's edits
#: at one moment (`StoreRegistry.write_marks`).
IndexMarks = dict[tuple[Path, str, str], tuple[int, int]]
#: With early answers on, a handle is returned once its rebuild holds this many memories; the
#: rest load in a background thread while recall answers from what is loaded, and says so.
REBUILD_FIRST_ROWS = 2000
#: The newest window of a rebuild spans this long before now; each older one is 4x as long.
REBUILD_WINDOW_MS = 86_400_000
#: A stale index file is repaired from the change log when its changes name at most this many
#: memories (re-read at ~0.3 ms each while the opening request waits); beyond, or when one of
#: them cannot say what it wrote, the index is rebuilt (answering early, in the background).
REPAIR_KEYS_MAX = 5_000
#: Change log rows a repair reads at most (one per write transaction since the file's stamp).
REPAIR_CHANGES_MAX = 20_000
#: Below and above every memory key (ULIDs; any text key too).
_KEY_MIN, _KEY_MAX = "", "\uffff"


class EarlyAnswerWithdrawn(Exception):
    """The engine opened and did not match the index file: an answer from the file must not be given."""


@dataclass
class RecordSnapshot:
    """The record arrays of an index file and the key each slot held when it was written."""

    keys: list[str | None]
    offsets: np.ndarray
    crcs: np.ndarray
    blob: np.ndarray


class EarlyOpen:
    """A handle served from its index file while its store opens in a background thread."""

    def __init__(self, stamp: str, offsets: np.ndarray, crcs: np.ndarray, blob: np.ndarray) -> None:
        self.stamp = stamp
        self._offsets = offsets
        self._crcs = crcs
        self._blob = blob
        self.done = threading.Event()
        #: Starts the background open (set by the registry; a no-op once started).
        self.start: Callable[[], None] = lambda: None
        #: Set (before anything else changes) when the engine did not match the file.
        self.withdrawn = False
        self.error: BaseException | None = None
        #: Answering for a database the store's list said did not exist (`_open_absent`): empty.
        self.absent = False
        #: The file's checkpoint generation, checked against the store's once the engine is open.
        self.generation: str | None = None

    def rows(self, index: ScopeIndex, keys: Iterable[str]) -> list[dict[str, Any]]:
        """The records of `keys` as the checkpoint read them (what `get_many_for_recall` returns)."""
        out = []
        n = self._offsets.shape[0] - 1
        for key in keys:
            slot = index.slot_of(key)
            if slot is None or slot >= n:
                continue
            try:
                row = _slot_record(self._offsets, self._crcs, self._blob, slot)
            except _ChecksumMismatch as exc:
                self.withdrawn = True
                raise EarlyAnswerWithdrawn(str(exc)) from None
            if row is None:
                continue
            if record_key_text(row.get("id")) != key:
                raise EarlyAnswerWithdrawn(f"record blob of slot {slot} names another memory")
            out.append(row)
        if self.withdrawn:
            raise EarlyAnswerWithdrawn("the engine did not match the index file")
        return out


class BackgroundRebuild(EarlyOpen):
    """A handle whose index is still loading from its open store, newest memories first.

    Recall ranks on what is loaded (under the registry's `build_lock`, which the loader holds
    while it adds a page) and reads its hits from the engine; everything else waits for `done`,
    as for an early open, so nothing writes to the database or reads the partial index meanwhile."""

    def __init__(self, repo: ScopeRepository) -> None:
        empty = np.zeros(1, dtype=np.int64)
        super().__init__("", empty, empty, np.zeros(0, dtype=np.uint8))
        self._repo = repo
        #: Set to make the loader stop between pages (the store is closing).
        self.cancelled = threading.Event()

    def rows(self, index: ScopeIndex, keys: Iterable[str]) -> list[dict[str, Any]]:
        """The hits' records, from the engine (open, unlike an early open's)."""
        return self._repo.get_many_for_recall(keys)


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
    #: Set while the store opens in the background and recall answers from the index file.
    early: EarlyOpen | None = None
    #: The records in the index file last written or loaded (mapped), with the key of each slot
    #: then: a checkpoint re-reads only the records written since (storage `take_changed_records`).
    records: "RecordSnapshot | None" = None
    #: Recall strengthening written to the engine since `records` was taken, key -> (the counts
    #: summed, the last write's epoch seconds): what `file_rows` replays on a record from the file.
    flushed: dict[str, tuple[int, float]] = field(default_factory=dict, repr=False)
    #: Every read and write of this database, by intent (storage/repository.py); each
    #: statement runs after `before_io`.
    repo: ScopeRepository = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # looked up at each call, not bound once: `q` and `tx` are the handle's one way to the store
        self.repo = ScopeRepository(lambda sql, params: self.q(sql, params), lambda stmts: self.tx(stmts))

    @property
    def engine_pending(self) -> bool:
        """Whether the store is still opening in the background (statements wait for it)."""
        early = self.early
        return early is not None and not early.done.is_set()

    @property
    def rebuilding(self) -> BackgroundRebuild | None:
        """The background rebuild still loading this handle's index, if any."""
        early = self.early
        if isinstance(early, BackgroundRebuild) and not early.done.is_set():
            return early
        return None

    def wait_engine(self) -> None:
        """Block until a background open finished; raise what made it fail."""
        early = self.early
        if early is None:
            return
        early.start()
        early.done.wait()
        if early.error is not None:
            if isinstance(early.error, StoreUnavailable):
                raise early.error
            raise StoreUnavailable(f"{self.scope} store {self.store.directory} could not open: {early.error}")

    def early_rows(self, keys: Iterable[str], ranked_on: ScopeIndex) -> list[dict[str, Any]] | None:
        """Recall's records from the index file while the engine opens; None once it is open and
        the hits were ranked on the index the handle holds (read them from the engine then).
        Raises EarlyAnswerWithdrawn when the answer must be ranked again after the engine opened:
        the file did not match the engine (the index was rebuilt), or a record failed its check."""
        early = self.early
        if early is None:
            return None
        if early.done.is_set() and early.error is None:
            if ranked_on is not self.index:
                raise EarlyAnswerWithdrawn("the index was rebuilt from the engine")
            return None
        if early.withdrawn:
            raise EarlyAnswerWithdrawn("the index file is no longer trusted")
        return early.rows(ranked_on, keys)

    def file_rows(self, keys: list[str], ranked_on: ScopeIndex) -> tuple[list[dict[str, Any]], list[str]]:
        """Recall's records of `keys` taken from the index file's record arrays where the engine
        has not rewritten them since (the store names the memory records each commit writes:
        `rewritten_since_take`, reset when the file was read or written; strengthening written
        since is replayed from `flushed`), and the keys left to read from the engine: rewritten,
        not in the file, or failing their checksum. Reading 10 records from the engine took
        ~2.5 ms of a 100k-memory recall, decoding them ~0.2 ms."""
        snapshot = self.records
        if snapshot is None or ranked_on is not self.index or not keys:
            return [], keys
        written = self.store.rewritten_since_take(self.ns, self.db, keys)
        if written is None:
            return [], keys
        rows: list[dict[str, Any]] = []
        rest: list[str] = []
        for key in keys:
            row = None if key in written else _snapshot_row(snapshot, self.index.slot_of(key), key)
            if row is None:
                rest.append(key)
                continue
            bump = self.flushed.get(key)
            if bump is not None:  # as queries.STRENGTHEN_BATCH wrote it, once per flush
                row["access_count"] = int(row.get("access_count", 0)) + bump[0]
                row["last_accessed_at"] = datetime.fromtimestamp(bump[1], timezone.utc)
                if row.get("status") == "created":
                    row["status"] = "active"
            rows.append(row)
        return rows, rest

    def note_flushed(self, pending: dict[str, list[Any]], written: bool) -> None:
        """Recall strengthening was written (`written`), or its write failed: then the engine may
        hold it or not, so the file's records are not used until the next checkpoint."""
        if not written:
            self.records, self.flushed = None, {}
            return
        for key, (n, at, _sessions) in pending.items():  # flushes come in time order: the last `at` stands
            before = self.flushed.get(key, (0, at))
            self.flushed[key] = (before[0] + n, at)

    def direct_repo(self) -> ScopeRepository:
        """The repository without `before_io`: for the write-behind flush itself, and for recall's
        reads of the hits, which the flush must not delay (services/strengthen.py)."""
        self.wait_engine()
        return self.store.repository(self.ns, self.db)

    def q(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        """Run one statement of storage/queries.py (the repository's way in; tests read with it too)."""
        self.wait_engine()
        if self.before_io is not None:
            self.before_io(self)
        return self.store.query(self.ns, self.db, sql, params)

    def tx(self, statements: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Run statements as one transaction (what `repo.atomic()` commits)."""
        self.wait_engine()
        if self.before_io is not None:
            self.before_io(self)
        return self.store.transaction(self.ns, self.db, statements)

    @property
    def label(self) -> str:
        return f"{self.scope}:{self.db}"


class StoreRegistry:
    """Opens stores lazily and keeps one handle per scope database."""

    def __init__(
        self,
        user_dir: Path,
        make_index: Callable[[str], ScopeIndex],
        persist: Callable[[], bool] = lambda: True,
        early: Callable[[], bool] = lambda: False,
    ) -> None:
        self.user_dir = user_dir
        self._store_owner: store_owner.StoreOwner | None = None
        self._make_index = make_index
        self._persist = persist  # config `index_persist`, read when a scope opens or checkpoints
        self._early = early  # config `index_early_answers`
        self._opening: dict[Path, threading.Thread] = {}  # store directory -> its background open
        self._start_lock = threading.Lock()
        #: store directory -> early handles its background open still has to check, while that
        #: open runs (a project store's project and session databases share one open)
        self._early_pending: dict[Path, list[tuple[ScopeHandle, Path]]] = {}
        self._loaded_records: dict[tuple[Path, str, str], RecordSnapshot] = {}
        self._stores: dict[Path, SurrealStore] = {}
        self._handles: dict[tuple[Path, str, str], ScopeHandle] = {}
        self._failures: dict[Path, tuple[float, str]] = {}
        self.load_seconds: dict[str, float] = {}
        self._project_dbs: dict[Path, tuple[str, float]] = {}  # project root -> (database name, when)
        #: (store directory, ns, db) -> the thread loading the rest of that handle's index
        self._rebuilds: dict[tuple[Path, str, str], threading.Thread] = {}
        #: Held by a background rebuild while it adds a page to an index, and by recall while it
        #: reads indexes (services/recall.py). The loader takes no other lock while holding it.
        self.build_lock = threading.Lock()

    # -- stores --------------------------------------------------------------------
    def store_for(self, directory: Path, label: str, root: Path | None = None) -> SurrealStore:
        """The open store of a directory. A project store (`root` given) is checked from the
        project root down: `.claude` and `.claude/engram` come from the repository, so neither
        may be a link or belong to someone else (paths.py); the user store from its parent."""
        directory = Path(directory)
        opening = self._opening.get(directory)
        if opening is not None and opening is not threading.current_thread():
            self._start(opening)
            opening.join()
        store = self._stores.get(directory)
        if store is not None and store.is_open:
            return store
        store = SurrealStore(directory, label=label, trusted=root, owner=self._owner_of(root))
        self._adopt_database_list(store)
        try:
            store.open()
        except StoreUnavailable as exc:
            self._failures[directory] = (time.time(), exc.message)
            raise
        self._failures.pop(directory, None)
        self._stores[directory] = store
        return store

    def _owner_of(self, root: Path | None) -> store_owner.StoreOwner | None:
        """The claim a project store must pass (`store_owner`); None for the user store, and for a
        project whose store directory is the user store's (Claude Code started in the home
        directory): the user chose that place, as for the user store itself."""
        if root is None or os.path.realpath(project_dir(root)) == os.path.realpath(self.user_dir):
            return None
        if self._store_owner is None:
            try:
                self._store_owner = store_owner.load(self.user_dir)
            except UnsafePath as exc:
                raise StoreUnavailable(f"project stores cannot be checked: {exc.message}") from None
            except OSError as exc:
                raise StoreUnavailable(f"project stores cannot be checked: {self.user_dir}: {exc}") from exc
        return self._store_owner

    def _owns(self, directory: Path) -> bool:
        try:
            owner = self._owner_of(Path(directory).parent.parent)
        except StoreUnavailable:
            return False
        return owner is None or owner.owns(directory)

    def failures(self) -> dict[str, str]:
        """Store directories that cannot be used right now -> why (failed open, or closed after an I/O error)."""
        out = {str(k): s.failure for k, s in self._stores.items() if not s.is_open and s.failure}
        out.update({str(k): v[1] for k, v in self._failures.items()})
        return out

    def open_stores(self) -> list[SurrealStore]:
        return [s for s in self._stores.values() if s.is_open]

    def wait_for_openings(self) -> None:
        """Wait for every background store open to finish, and stop every background rebuild
        (before closing or checkpointing all: a partly loaded index is dropped, never written)."""
        for thread in list(self._opening.values()):
            if thread is not threading.current_thread():
                self._start(thread)
                thread.join()
        self._stop_rebuilds(None)

    def _stop_rebuilds(self, directory: Path | None) -> None:
        """Make the background rebuilds of a store (or of every store) stop, and wait for them."""
        for key, thread in list(self._rebuilds.items()):
            if directory is not None and key[0] != directory:
                continue
            handle = self._handles.get(key)
            if handle is not None and handle.rebuilding is not None:
                handle.rebuilding.cancelled.set()
            if thread is not threading.current_thread():
                thread.join()

    def close_all(self) -> None:
        """Close every store (callers checkpoint first: `checkpoint_all`)."""
        self.wait_for_openings()
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        self._handles.clear()

    def close_store(self, directory: Path) -> None:
        opening = self._opening.get(Path(directory))
        if opening is not None and opening is not threading.current_thread():
            self._start(opening)
            opening.join()  # closing a store a thread is still opening would leave it open
        self._stop_rebuilds(Path(directory))
        store = self._stores.pop(Path(directory), None)
        if store is not None:
            store.close()
        for key in [k for k in self._handles if k[0] == Path(directory)]:
            del self._handles[key]

    # -- handles ------------------------------------------------------------------
    def user(self) -> ScopeHandle:
        return self._handle(self.user_dir, "user", USER_NS, USER_DB, None, None)

    def project(self, root: Path) -> ScopeHandle:
        return self._handle(project_dir(root), "project", PROJECT_NS, self._project_db(root), root, None)

    def session(self, root: Path, session_id: str) -> ScopeHandle:
        return self._handle(project_dir(root), "session", SESSION_NS, session_db_name(session_id), root, session_id)

    def _project_db(self, root: Path) -> str:
        """The project's database name, reused for PROJECT_NAME_TTL_S: it comes from the root's
        resolved path, and `realpath` walks every level of it (about 0.1 ms, several times a recall)."""
        now = time.monotonic()
        hit = self._project_dbs.get(root)
        if hit is not None and now - hit[1] < PROJECT_NAME_TTL_S:
            return hit[0]
        if len(self._project_dbs) > 1000:  # roots seen over a long life: start over
            self._project_dbs.clear()
        name = project_id(root)
        self._project_dbs[root] = (name, now)
        return name

    def cached_session(self, root: Path, session_id: str) -> ScopeHandle | None:
        return self._handles.get((project_dir(root), SESSION_NS, session_db_name(session_id)))

    def _handle(
        self, directory: Path, scope: str, ns: str, db: str, root: Path | None, session_id: str | None
    ) -> ScopeHandle:
        key = (Path(directory), ns, db)
        handle = self._handles.get(key)
        if handle is not None and (handle.store.is_open or handle.engine_pending):
            return handle
        label = scope if scope != "session" else "project"
        fresh_store = Path(directory) not in self._stores and Path(directory) not in self._opening
        if (
            (fresh_store or Path(directory) in self._early_pending)
            and self._persist()
            and self._early()
            and (root is None or self._owns(directory))  # a foreign store's files are never read early
        ):
            early_handle = self._open_early(Path(directory), label, scope, ns, db, root, session_id)
            if early_handle is None and ns == SESSION_NS:
                early_handle = self._open_absent(Path(directory), label, scope, ns, db, root, session_id)
            if early_handle is not None:
                self._handles[key] = early_handle
                return early_handle
        store = self.store_for(directory, label, root)
        self._watch_marker(store, ns, db)
        if ns == SESSION_NS:
            store.define_database(ns, db)
        store.ensure_schema(ns, db)
        index = self._make_index(scope)
        started = time.perf_counter()
        repo = store.repository(ns, db)
        loaded, why, repaired = (
            self._load_persisted(Path(directory), ns, db, index, repo) if self._persist() else (None, "off", None)
        )
        rest: Iterator[list[MemoryRecord]] | None = None
        if loaded is not None:
            index = loaded
        else:
            first = REBUILD_FIRST_ROWS if self._early() and why != "off" else None
            index, rest = self._rebuild_first(scope, repo, first)
        self.load_seconds[f"{scope}:{db}"] = time.perf_counter() - started
        log.info(
            "%s:%s index %s in %.2f s",
            scope,
            db,
            "rebuilt" if loaded is None else "loaded" if repaired is None else f"repaired ({len(repaired)} re-read)",
            time.perf_counter() - started,
        )
        handle = ScopeHandle(scope, store, ns, db, index, root, session_id)
        store.take_changed_records(ns, db)  # the snapshot below is the state at this point
        if loaded is not None:
            handle.index_status, handle.persisted_changes, handle.persisted_edits = "loaded", why, index.edits
            handle.records = self._loaded_records.pop((Path(directory), ns, db), None)
            if repaired is not None:  # the file is behind: the next checkpoint rewrites it
                handle.index_status = f"loaded and repaired from the change log ({len(repaired)} memories re-read)"
                handle.persisted_changes, handle.persisted_edits = None, -1
                store.note_changed_records(ns, db, repaired)
        else:
            handle.index_status = f"rebuilt ({why})"
            if "checksum" in why or "generation" in why:  # damaged, or not this data's: say so
                log.warning("%s index file withdrawn and rebuilt from the store: %s", handle.label, why)
            elif why != "off":
                log.info("%s index rebuilt from the store: %s", handle.label, why)
        self._handles[key] = handle
        if rest is not None:
            self._rebuild_in_background(handle, repo, rest)
        return handle

    def _rebuild(self, scope: str, repo: ScopeRepository) -> ScopeIndex:
        """The index built from every record."""
        return self._rebuild_first(scope, repo, None)[0]

    def _rebuild_first(
        self, scope: str, repo: ScopeRepository, first_rows: int | None
    ) -> tuple[ScopeIndex, Iterator[list[MemoryRecord]] | None]:
        """The index built from the records, newest first: all of them, or once it holds
        `first_rows` (when given), it and the pages still to load (None when none are left).

        Links first, oldest first, so when a memory was superseded twice the latest link wins,
        as it did when the links were made, and a partly loaded index already hides what its
        newer memories supersede."""
        index = self._make_index(scope)
        index.replace_superseded(_supersedes(repo))
        reader = NewestFirst(repo, REBUILD_PAGE, int(time.time() * 1000))
        pages = iter(reader)
        loaded = 0
        for rows in pages:
            index.bulk_load(rows)
            loaded += len(rows)
            if first_rows is not None and loaded >= first_rows:
                reader.page_rows = REBUILD_BACKGROUND_PAGE
                return index, pages
        return index, None

    def _rebuild_in_background(
        self, handle: ScopeHandle, repo: ScopeRepository, rest: Iterator[list[MemoryRecord]]
    ) -> None:
        """Load the pages left in a thread; recall answers from the handle meanwhile (`BackgroundRebuild`)."""
        rebuild = BackgroundRebuild(repo)
        key = (handle.store.directory, handle.ns, handle.db)
        handle.early = rebuild
        handle.index_status += ", loading in the background"
        thread = threading.Thread(
            target=self._load_rest, args=(handle, rebuild, rest), name=f"engram-rebuild-{handle.label}", daemon=True
        )
        rebuild.start = lambda: self._start(thread)
        with self._start_lock:
            self._rebuilds[key] = thread
        self._start(thread)

    def _load_rest(self, handle: ScopeHandle, rebuild: BackgroundRebuild, rest: Iterator[list[MemoryRecord]]) -> None:
        """Read each page (outside `build_lock`: the engine's read is most of the time) and add it
        to the index under it. A failure or a cancel drops the handle: the next request rebuilds."""
        key = (handle.store.directory, handle.ns, handle.db)
        started = time.perf_counter()
        try:
            for rows in rest:
                if rebuild.cancelled.is_set():
                    raise StoreUnavailable(f"{handle.label}: its index was still loading when the store closed")
                with self.build_lock:
                    handle.index.bulk_load(rows)
            handle.index_status = handle.index_status.replace(", loading in the background", "")
            log.info("%s index loaded in the background in %.2f s", handle.label, time.perf_counter() - started)
        except BaseException as exc:
            rebuild.error = exc
            if self._handles.get(key) is handle:
                del self._handles[key]
            if not rebuild.cancelled.is_set():
                log.warning("%s index could not load in the background: %s", handle.label, exc)
        finally:
            with self._start_lock:
                self._rebuilds.pop(key, None)
            rebuild.done.set()

    # -- early answers: the index file while the engine opens ---------------------------
    def _open_early(
        self, directory: Path, label: str, scope: str, ns: str, db: str, root: Path | None, session_id: str | None
    ) -> ScopeHandle | None:
        """A handle answering recall from the index file at once, when its `clean` marker says the
        file is exactly the engine's state; the store opens in a background thread. None: take the
        ordinary path (no marker, or it does not match the file)."""
        started = time.perf_counter()
        if root is not None and store_is_tracked(directory, root):
            return None  # a committed store is never read: the ordinary open refuses it, naming it
        path = self.index_path(directory, ns, db)
        marker = read_marker(path)
        if marker is None:
            return None
        try:
            meta, arrays = read_index_file(
                path,
                unchecked=ScopeIndex.SUMMED_ARRAYS | _UNCHECKED_RECORD_ARRAYS,
                lazy=_UNCHECKED_RECORD_ARRAYS,  # each record is checked against its CRC when read
                writable=ScopeIndex.WRITABLE_ARRAYS,
                random_access=ScopeIndex.UNCHECKED_ARRAYS | _UNCHECKED_RECORD_ARRAYS,
            )
        except IndexFileError as exc:
            log.info("%s:%s index file not used before the store opens: %s", scope, db, exc)
            return None
        fresh = self._make_index(scope)
        stamp = meta.get("changes")
        if (
            meta.get("ns") != ns
            or meta.get("db") != db
            or meta.get("model") != fresh.model_name
            or meta.get("dim") != fresh.dim
            or not stamp
            or marker.get("changes") != stamp
            or marker.get("file") != _file_identity(path)
            or not all(name in arrays for name in RECORD_ARRAYS)
        ):
            return None
        generation = meta.get("generation")
        if not generation or marker.get("generation") != generation or _data_token(directory, ns, db) != generation:
            log.warning(
                "%s:%s index file not used before the store opens: its generation is not the one in the "
                "store's data (data/ restored apart from index/, or an older index file put back)",
                scope,
                db,
            )
            return None
        try:
            index = ScopeIndex.from_state(meta, arrays)
            offsets, crcs, blob = arrays["rec_offsets"], arrays["rec_crc"], arrays["rec_json"]
            n = index.slots.size
            if (
                offsets.shape != (n + 1,)
                or crcs.shape != (n,)
                or int(offsets[0]) != 0
                or int(offsets[-1]) != blob.shape[0]
                or bool(np.any(np.diff(offsets) < 0))
            ):
                raise ValueError("record blob does not fit")
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            log.info("%s:%s index file not used before the store opens: %s", scope, db, exc)
            return None
        index.scope = fresh.scope

        def fill(handle: ScopeHandle) -> None:
            handle.records = _snapshot(index, arrays)
            handle.index_status, handle.persisted_changes, handle.persisted_edits = "loaded", str(stamp), index.edits

        early = EarlyOpen(str(stamp), offsets, crcs, blob)
        early.generation = str(generation)
        handle = self._join_early_open(directory, label, scope, ns, db, root, session_id, index, early, fill)
        if handle is not None:
            self.load_seconds[f"{scope}:{db}"] = time.perf_counter() - started
            log.info(
                "%s:%s index loaded in %.2f s (answering before the store opens)",
                scope,
                db,
                time.perf_counter() - started,
            )
        return handle

    def _open_absent(
        self, directory: Path, label: str, scope: str, ns: str, db: str, root: Path | None, session_id: str | None
    ) -> ScopeHandle | None:
        """An empty handle for a database the store's `clean` list of its namespace does not name
        (a session Claude Code just started): the list is removed before the first commit in
        any database it does not name (`watch_new_databases`), so while it stands such a
        database holds no memories, and recall need not wait for the engine to say so. None:
        no list, or it names the database."""
        names = _database_list(self._databases_path(directory, ns))
        if names is None or db in names:
            return None
        early = EarlyOpen("", np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.uint8))
        early.absent = True

        def fill(handle: ScopeHandle) -> None:
            handle.index_status = "new (absent from the store's list of databases)"

        handle = self._join_early_open(
            directory, label, scope, ns, db, root, session_id, self._make_index(scope), early, fill
        )
        if handle is not None:
            log.info("%s:%s is new, its index empty (answering before the store opens)", scope, db)
        return handle

    def _join_early_open(
        self,
        directory: Path,
        label: str,
        scope: str,
        ns: str,
        db: str,
        root: Path | None,
        session_id: str | None,
        index: ScopeIndex,
        early: EarlyOpen,
        fill: Callable[["ScopeHandle"], None],
    ) -> ScopeHandle | None:
        """A handle answering from `index` while the store opens in the background: one open per
        store, started now or joined (a project's session). None: the store opened meanwhile."""
        path = self.index_path(directory, ns, db)
        with self._start_lock:
            pending = self._early_pending.get(directory)
            if pending is None:
                if directory in self._stores or directory in self._opening:
                    return None  # the store opened meanwhile: the ordinary path
                store = SurrealStore(directory, label=label, trusted=root, owner=self._owner_of(root))
                self._adopt_database_list(store)
                pending = self._early_pending[directory] = []
                thread = threading.Thread(
                    target=self._finish_early, args=(directory, store), name=f"engram-open-{label}", daemon=True
                )
                self._stores[directory] = store
                self._opening[directory] = thread
            else:  # another database of a store already opening (a project's session): one open
                store, thread = self._stores[directory], self._opening[directory]
            handle = ScopeHandle(scope, store, ns, db, index, root, session_id)
            handle.early = early
            fill(handle)
            early.start = lambda: self._start(thread)
            self._watch_marker(store, ns, db)  # before any write, a migration included
            pending.append((handle, path))
        return handle

    def _start(self, thread: threading.Thread) -> None:
        with self._start_lock:
            if thread.ident is None:
                thread.start()

    def start_opens(self) -> None:
        """Start the background opens not started yet. Not at once when a handle answers early:
        the engine's open holds the interpreter lock throughout (measured: the other threads
        stall for the whole 0.7 s of a 20k store's open), so it starts once the answer is out
        (the daemon calls this after a reply) or when something needs the engine."""
        for thread in list(self._opening.values()):
            self._start(thread)

    def opens_waiting(self) -> bool:
        """Whether a background open waits to be started (`start_opens`)."""
        return any(thread.ident is None for thread in list(self._opening.values()))

    def _finish_early(self, directory: Path, store: SurrealStore) -> None:
        """Open the store of early handles, then check each database's counter against its file's
        stamp (`_check_early`). Handles of the store that answer early meanwhile join the list
        until it is found empty, under the lock that adds them."""
        try:
            try:
                store.open()
            except StoreUnavailable as exc:
                self._failures[store.directory] = (time.time(), exc.message)
                raise
            self._failures.pop(store.directory, None)
        except BaseException as exc:
            with self._start_lock:
                failed = self._early_pending.pop(directory, [])
                self._opening.pop(directory, None)
                self._stores.pop(directory, None)
            store.close()
            log.warning("%s store did not open: %s", store.label, exc)
            for handle, path in failed:
                self._early_failed(handle, path, exc)
            return
        while True:
            with self._start_lock:
                pending = self._early_pending.get(directory)
                if not pending:
                    self._early_pending.pop(directory, None)
                    self._opening.pop(directory, None)
                    return
                handle, path = pending.pop(0)
            try:
                self._check_early(handle, path)
            except BaseException as exc:
                log.warning("%s store did not open: %s", handle.label, exc)
                self._early_failed(handle, path, exc)
            finally:
                assert handle.early is not None
                handle.early.done.set()

    def _check_early(self, handle: ScopeHandle, path: Path) -> None:
        """The engine is open: compare the database's counter with the file's stamp; on a
        mismatch, withdraw the early answers and rebuild the index from the engine."""
        early = handle.early
        assert early is not None
        store = handle.store
        if handle.ns == SESSION_NS:
            store.define_database(handle.ns, handle.db)
        store.ensure_schema(handle.ns, handle.db)
        repo = store.repository(handle.ns, handle.db)
        if early.absent:
            self._check_absent(handle, repo)
            return
        changes = repo.changes()
        if changes != early.stamp or repo.meta_get(INDEX_GENERATION_KEY) != early.generation:
            early.withdrawn = True  # first: no answer from the file from here on
            remove_marker(path)
            log.error(
                "%s index file was marked clean at change %s but the store is at %s: rebuilding it",
                handle.label,
                early.stamp,
                changes,
            )
            old = handle.index
            index = self._rebuild(handle.scope, repo)
            index.pending_strengthen = old.pending_strengthen
            handle.index = index
            handle.index_status = "rebuilt (index file marked clean but stale)"
            handle.persisted_changes, handle.persisted_edits = None, -1
            handle.records = None

    def _check_absent(self, handle: ScopeHandle, repo: ScopeRepository) -> None:
        """The engine is open: a database answered for as absent must hold no memories; if it
        holds some (the list was wrong), withdraw the empty answers and load them."""
        index = self._rebuild(handle.scope, repo)
        if len(index) == 0:
            return
        assert handle.early is not None
        handle.early.withdrawn = True
        remove_marker(self._databases_path(handle.store.directory, handle.ns))
        log.error("%s was listed as absent from its store but holds memories: loading them", handle.label)
        index.pending_strengthen = handle.index.pending_strengthen
        handle.index = index
        handle.index_status = "rebuilt (listed as absent but present)"

    def _early_failed(self, handle: ScopeHandle, path: Path, exc: BaseException) -> None:
        """The store (or this database of it) did not open. The file stays what the engine last
        committed (its marker says so): recall may go on answering from it; everything else gets
        this error, and the next request tries again."""
        early = handle.early
        assert early is not None
        early.error = exc
        if isinstance(exc, SchemaTooNew):
            # refused for good, not busy: a newer engram owns this store, and what it means by
            # its records is not ours to serve. No more answers from the file, now or at the
            # next open (the marker is ours; the store itself stays untouched).
            early.withdrawn = True
            remove_marker(path)
        self._handles.pop((handle.store.directory, handle.ns, handle.db), None)
        early.done.set()

    def _watch_marker(self, store: SurrealStore, ns: str, db: str) -> None:
        """Have the store remove the database's `clean` marker before its next counter-moving commit."""
        path, token = self.index_path(store.directory, ns, db), data_token_path(store.directory, ns, db)

        def unmark() -> None:
            remove_marker(path)
            _remove_durably(token)

        store.before_counter_moves(ns, db, unmark)

    # -- the persisted index ------------------------------------------------------------
    @staticmethod
    def index_path(directory: Path, ns: str, db: str) -> Path:
        """The index file of database (ns, db) of the store in `directory` (names from core/ids.py)."""
        return Path(directory) / INDEX_DIRNAME / f"{ns}.{db}{INDEX_SUFFIX}"

    def _load_persisted(
        self, directory: Path, ns: str, db: str, fresh: ScopeIndex, repo: ScopeRepository
    ) -> tuple[ScopeIndex | None, str, set[str] | None]:
        """(the persisted index, its stamp as text, None) when it may be trusted as it is;
        (the index, the store's stamp, the keys re-read) when the change log repaired it;
        else (None, why not, None)."""
        try:
            meta, arrays = read_index_file(
                self.index_path(directory, ns, db),
                unchecked=ScopeIndex.SUMMED_ARRAYS | RECORD_ARRAYS,
                lazy=_UNCHECKED_RECORD_ARRAYS,  # each record is checked against its CRC when read
                writable=ScopeIndex.WRITABLE_ARRAYS,
                random_access=ScopeIndex.UNCHECKED_ARRAYS,
            )
        except IndexFileError as exc:
            return None, f"index file {exc}", None
        if meta.get("ns") != ns or meta.get("db") != db:
            return None, "index file of another database", None
        if meta.get("model") != fresh.model_name or meta.get("dim") != fresh.dim:
            return None, f"index file made with {meta.get('model')}/{meta.get('dim')}", None
        recorded = repo.meta_get(INDEX_GENERATION_KEY)
        if not meta.get("generation") or recorded != meta.get("generation"):
            return None, "index file not the one the store's last checkpoint wrote (generation differs)", None
        changes = repo.changes()
        plan: tuple[set[str], bool] | None = None
        if not changes or meta.get("changes") != changes:
            try:
                plan = _repair_plan(str(meta.get("changes") or ""), changes, repo)
            except (StoreUnavailable, InvalidInput, TypeError, ValueError, AttributeError) as exc:
                log.warning("could not read the change log of %s/%s: %s", ns, db, exc)
            if plan is None:
                return None, f"index file stale (change {meta.get('changes')}, store at {changes})", None
        try:
            index = ScopeIndex.from_state(meta, arrays)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            return None, f"index file inconsistent ({exc})", None
        index.scope = fresh.scope
        snapshot = _snapshot(index, arrays)
        if plan is not None:
            try:
                _repair(index, repo, *plan)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a log row or record not as written
                return None, f"index file stale, its repair failed ({exc})", None
            if repo.changes() != changes:  # a write elsewhere meanwhile (none under the lock): start over
                return None, f"store moved while its index file was repaired (at {changes})", None
        if snapshot is not None:
            self._loaded_records[(Path(directory), ns, db)] = snapshot
        return index, changes, plan[0] if plan is not None else None

    def checkpoint(self, handle: ScopeHandle, record_read_max: int | None = None) -> bool:
        """Write the handle's index to its file when it changed since the last write or load.

        The caller holds the service lock, so no operation is half applied: reading the counter
        first writes any held-back strengthening (`before_io`), then the index and the engine
        agree at that counter. Returns whether a file was written."""
        if (
            not handle.store.is_open
            or handle.rebuilding is not None  # partly loaded: never written
            or handle.index.edits == handle.persisted_edits
        ):
            return False
        if not self._persist():  # no file to repair: the change log only grows, so it is emptied
            handle.persisted_edits = handle.index.edits
            _prune_change_log(handle, handle.repo.changes())
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
        generation = uuid.uuid4().hex
        meta.update(changes=changes, ns=handle.ns, db=handle.db, generation=generation)
        path = self.index_path(handle.store.directory, handle.ns, handle.db)
        _private_dir(path.parent)
        for leftover in path.parent.glob(f".{path.name}.*.tmp"):  # a write a crash cut short
            leftover.unlink(missing_ok=True)
        started = time.perf_counter()
        remove_marker(path)  # the file is about to change: no marker may name the old one
        early = self._early()
        snapshot, handle.records, handle.flushed = handle.records, None, {}
        changed = handle.store.take_changed_records(handle.ns, handle.db)
        reread, complete = 0, False
        if early:
            records, reread, complete = _record_arrays(handle, snapshot, changed, record_read_max)
            arrays = {**records, **arrays}
        records_s = time.perf_counter() - started
        token = data_token_path(handle.store.directory, handle.ns, handle.db)
        _remove_durably(token)
        write_index_file(path, meta, arrays)
        handle.repo.meta_set(INDEX_GENERATION_KEY, generation)  # the store names the file it last had
        _prune_change_log(handle, changes)
        if early and complete and handle.repo.changes() == changes:  # nothing moved while they were read
            _write_durably(token, {"generation": generation})
            write_marker(path, changes, generation)
            self._watch_marker(handle.store, handle.ns, handle.db)
        if early:
            try:
                _meta, mapped = read_index_file(path, lazy=frozenset(arrays), random_access=RECORD_ARRAYS)
                handle.records = _snapshot(handle.index, mapped)
            except IndexFileError as exc:
                log.warning("could not map the index file just written for %s: %s", handle.label, exc)
        handle.persisted_changes, handle.persisted_edits = changes, edits
        if early and not complete:  # the next checkpoint reads the records still missing
            handle.persisted_changes, handle.persisted_edits = None, -1
        log.info(
            "%s index file written in %.2f s (records %.2f s, %d read from the store)",
            handle.label,
            time.perf_counter() - started,
            records_s,
            reread,
        )
        return True

    def write_marks(self) -> IndexMarks:
        """Where each index held in memory stands now (its store's index-moving writes, its own
        edits), so that after a failure `distrust_indexes` drops only what moved since."""
        return {key: (h.store.index_writes, h.index.edits) for key, h in list(self._handles.items())}

    def moved_since(self, since: IndexMarks) -> set[Path]:
        """The stores a failed request may have written since `write_marks` gave `since`: one whose
        index-moving writes or an index's edits moved, or with a handle opened meanwhile. Taken
        before anything else writes (the held-back strengthening flushed after a failure moves
        counters of its own)."""
        return {
            h.store.directory
            for key, h in list(self._handles.items())
            if since.get(key) != (h.store.index_writes, h.index.edits)
        }

    def distrust_indexes(self, stores: set[Path] | None = None) -> None:
        """Forget the indexes held in memory that may miss a commit, and their `clean` markers:
        neither is written again from what may miss a commit. With `stores` (`moved_since`), only
        the indexes of those stores; the others (another project's) are kept. A handle still
        opening in the background is left alone (it has not written). Its store stays open; the
        next handle of each database checks the file's stamp against the store's counter, and
        rebuilds when they differ."""
        dropped, kept = [], []
        for key, handle in list(self._handles.items()):
            if handle.engine_pending or (stores is not None and handle.store.directory not in stores):
                kept.append(handle.label)
                continue
            remove_marker(self.index_path(handle.store.directory, handle.ns, handle.db))
            del self._handles[key]
            dropped.append(f"{handle.label} ({handle.store.directory})")
        log.warning(
            "after an unexpected error in a write, dropped the indexes in memory of %s: their stores may hold "
            "a commit they miss; kept %d of stores it did not write",
            ", ".join(sorted(dropped)) or "none",
            len(kept),
        )

    def checkpoint_all(self, record_read_max: int | None = None) -> int:
        """`checkpoint` every open handle; a failure is logged (the file is only a cache).
        `record_read_max`: records each may read from the store (None: all; at idle, not at exit)."""
        written = 0
        for handle in list(self._handles.values()):
            try:
                written += self.checkpoint(handle, record_read_max)
            except Exception as exc:
                log.warning("could not write the index of %s: %s", handle.label, exc)
        if self._persist() and self._early():
            for store in list(self._stores.values()):
                if store.label == "project" and store.is_open and not store.watching_new_databases(SESSION_NS):
                    try:
                        self._list_databases(store, SESSION_NS)
                    except Exception as exc:
                        log.warning("could not list the session databases of %s: %s", store.directory, exc)
        return written

    @staticmethod
    def _databases_path(directory: Path, ns: str) -> Path:
        """Beside the index files: the base name of the `clean` list of namespace `ns`'s databases."""
        return Path(directory) / INDEX_DIRNAME / f"{ns}{DATABASES_SUFFIX}"

    def _adopt_database_list(self, store: SurrealStore) -> None:
        """Before a store can write: a `clean` list of its session databases left by an earlier
        process is removed before the first commit in a database it does not name, as if this
        process had written it."""
        path = self._databases_path(store.directory, SESSION_NS)
        names = _database_list(path)
        if names is not None:
            store.watch_listed_databases(SESSION_NS, names, lambda: remove_marker(path))
        elif read_marker(path) is not None:
            remove_marker(path)  # not a list this code wrote: drop it

    def _list_databases(self, store: SurrealStore, ns: str) -> None:
        """Write the `clean` list of `ns`'s databases (`_open_absent` reads it), removed before the
        first commit in a database it does not name."""
        path = self._databases_path(store.directory, ns)
        _private_dir(path.parent)
        remove_marker(path)

        def mark(names: frozenset[str]) -> None:
            _write_durably(marker_path(path), {"databases": sorted(names)})

        store.watch_new_databases(ns, mark, lambda: remove_marker(path))

    def drop_session(self, root: Path, session_id: str) -> None:
        """Remove a session database (after its promotion) and forget its handle."""
        db = session_db_name(session_id)
        directory = project_dir(root)
        store = self.store_for(directory, "project", root)
        store.remove_database(SESSION_NS, db)
        self._handles.pop((directory, SESSION_NS, db), None)
        remove_marker(self.index_path(directory, SESSION_NS, db))
        self.index_path(directory, SESSION_NS, db).unlink(missing_ok=True)

    def session_databases(self, root: Path) -> list[str]:
        """Names of the session databases present in a project store."""
        store = self.store_for(project_dir(root), "project", root)
        return sorted(name for name in store.databases(SESSION_NS) if name.startswith("s_"))


#: The arrays of an index file holding what recall returns for each slot: `rec_json` is read a
#: record at a time and each record is checked against its CRC-32 in `rec_crc` when read (the
#: offsets and CRCs are checked at open like every other array).
RECORD_ARRAYS = frozenset({"rec_offsets", "rec_crc", "rec_json"})
_UNCHECKED_RECORD_ARRAYS = frozenset({"rec_json"})


def _stamp_parts(stamp: str) -> tuple[str, int] | None:
    """(store id, counter) of a stamp "<store id>:<counter>", or None when it is not one."""
    store_id, sep, counter = stamp.rpartition(":")
    if not sep or not store_id or not counter.isdigit():
        return None
    return store_id, int(counter)


def _repair_plan(stamp: str, changes: str, repo: ScopeRepository) -> tuple[set[str], bool] | None:
    """(the memory keys written since `stamp`, whether links were) when the change log names
    every write from the file's stamp to the store's `changes`; None: rebuild instead (another
    store, a gap in the log, a write that cannot name its records, or too many of them)."""
    was, now = _stamp_parts(stamp), _stamp_parts(changes)
    if was is None or now is None or was[0] != now[0] or not was[1] < now[1]:
        return None
    if now[1] - was[1] > REPAIR_CHANGES_MAX:
        return None
    rows = repo.changes_after(was[1], now[1] - was[1])  # rows past the counter, if any, are not read
    keys: set[str] = set()
    links = False
    for expected, row in enumerate(rows, start=was[1] + 1):
        named = row.get("keys")
        if row.get("n") != expected or not isinstance(named, list) or not all(isinstance(k, str) for k in named):
            return None  # a gap (pruned, or bumped by an older engram), "anything may have changed", or not ours
        keys.update(named)
        links = links or bool(row.get("links"))
        if len(keys) > REPAIR_KEYS_MAX:
            return None
    if len(rows) != now[1] - was[1]:
        return None
    return keys, links


def _repair(index: ScopeIndex, repo: ScopeRepository, keys: set[str], links: bool) -> None:
    """Bring a loaded index up to the store: re-read the records the log named (a record gone is
    removed) and, when links were written, take the supersede links afresh."""
    wanted = sorted(keys)
    found: dict[str, MemoryRecord] = {}
    for start in range(0, len(wanted), RECORD_PAGE):
        for row in repo.index_rows_of(wanted[start : start + RECORD_PAGE]):
            found[record_key_text(row.get("id"))] = row
    for key in wanted:
        record = found.get(key)
        if record is None:
            index.remove(key)
        else:
            index.upsert(record)
    if links:
        index.replace_superseded(_supersedes(repo))


def _prune_change_log(handle: ScopeHandle, changes: str) -> None:
    """The file now stands at `changes`: the log rows up to it can go (a failure only keeps them)."""
    parts = _stamp_parts(changes)
    if parts is None:
        return
    try:
        handle.repo.prune_changes(parts[1])
    except Exception as exc:
        log.warning("could not prune the change log of %s: %s", handle.label, exc)


def _snapshot_row(snapshot: RecordSnapshot, slot: int | None, key: str) -> dict[str, Any] | None:
    """The record the snapshot holds for `key` at `slot`, or None: another key's slot, an empty
    entry (a record a checkpoint has not read yet), a failed checksum or a record naming another
    memory (then the engine is asked instead)."""
    if slot is None or snapshot.keys[slot : slot + 1] != [key]:
        return None
    try:
        row = _slot_record(snapshot.offsets, snapshot.crcs, snapshot.blob, slot)
    except _ChecksumMismatch as exc:
        log.warning("the index file's %s; reading it from the store", exc)
        return None
    return row if row is not None and record_key_text(row.get("id")) == key else None


class _ChecksumMismatch(Exception):
    """A record of the index file whose bytes fail their CRC-32."""


def _slot_record(offsets: np.ndarray, crcs: np.ndarray, blob: np.ndarray, slot: int) -> dict[str, Any] | None:
    """The record the file's arrays hold at `slot`, or None for an empty entry (a record no
    checkpoint has read yet). Raises _ChecksumMismatch: what to do then is the caller's (an
    early answer is withdrawn, a recall on an open store asks the engine instead)."""
    start, end = int(offsets[slot]), int(offsets[slot + 1])
    if end <= start:
        return None
    data = blob[start:end].tobytes()
    if zlib.crc32(data) != int(crcs[slot]) & 0xFFFFFFFF:
        raise _ChecksumMismatch(f"record of slot {slot} fails its checksum")
    return decode_record(data)


def _snapshot(index: ScopeIndex, arrays: dict[str, np.ndarray]) -> RecordSnapshot | None:
    """The record arrays of a file just read or written, when present and fitting the index."""
    if not all(name in arrays for name in RECORD_ARRAYS):
        return None
    n = index.slots.size
    offsets, crcs, blob = arrays["rec_offsets"], arrays["rec_crc"], arrays["rec_json"]
    if offsets.shape != (n + 1,) or crcs.shape != (n,) or int(offsets[-1]) != blob.shape[0]:
        return None
    return RecordSnapshot([index.slots.key_at(s) for s in range(n)], offsets, crcs, blob)


def _record_arrays(
    handle: ScopeHandle, snapshot: RecordSnapshot | None, changed: set[str] | None, read_max: int | None = None
) -> tuple[dict[str, np.ndarray], int, bool]:
    """Per slot, the record recall returns for it (`get_many_for_recall`), as UTF-8 JSON:
    `rec_json` holds them end to end, `rec_offsets[slot]:rec_offsets[slot + 1]` is one,
    `rec_crc[slot]` its CRC-32. A record the previous file holds for the same key and slot, not
    written since (`changed`; None: unknown), is copied from it; the others are read from the
    store, at most `read_max` of them (the rest stay empty until the next checkpoint).
    Returns the arrays, how many records were read and whether every live slot has its record."""
    index = handle.index
    n = index.slots.size
    keys = [index.slots.key_at(slot) for slot in range(n)]
    parts: list[bytes] = [b""] * n
    crcs = np.zeros(n, dtype=np.uint32)
    need: dict[str, int] = {}
    old = snapshot if changed is not None else None
    for slot, key in enumerate(keys):
        if key is None:
            continue
        if old is not None and changed is not None and key not in changed and old.keys[slot : slot + 1] == [key]:
            start, end = int(old.offsets[slot]), int(old.offsets[slot + 1])
            if end > start:
                parts[slot] = old.blob[start:end].tobytes()
                crcs[slot] = int(old.crcs[slot]) & 0xFFFFFFFF
                continue
        need[key] = slot
    repo = handle.direct_repo()
    wanted = list(need) if read_max is None else list(need)[:read_max]
    complete = len(wanted) == len(need)
    for start in range(0, len(wanted), RECORD_PAGE):
        for row in repo.get_many_for_recall(wanted[start : start + RECORD_PAGE]):
            at = need.get(record_key_text(row.get("id")))
            if at is not None:
                parts[at] = encode_record(row)
                crcs[at] = zlib.crc32(parts[at])
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    pos = int(offsets[-1])
    blob = np.frombuffer(b"".join(parts) or b"\0", dtype=np.uint8)[:pos]
    return {"rec_offsets": offsets, "rec_crc": crcs.view(np.int32), "rec_json": blob}, len(wanted), complete


def encode_record(row: dict[str, Any]) -> bytes:
    """A record as UTF-8 JSON: {"r": the record with its times as ISO text, "t": the paths of
    those times}. The paths, not a tag inside the values, say what was a time, so no stored
    value (memory metadata is untrusted) can pass for one."""
    times: list[list[Any]] = []
    plain = _plain(row, [], times)
    return json.dumps({"r": plain, "t": times}, separators=(",", ":"), ensure_ascii=False).encode()


def decode_record(data: bytes) -> dict[str, Any]:
    """What `encode_record` was given (record ids come back as their text)."""
    obj = json.loads(data)
    row = obj["r"]
    for path in obj["t"]:
        parent = row
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = datetime.fromisoformat(parent[path[-1]])
    if not isinstance(row, dict):
        raise ValueError("a record is an object")
    return row


def _plain(value: Any, path: list[Any], times: list[list[Any]]) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, datetime):
        times.append(path)
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v, [*path, str(k)], times) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, [*path, i], times) for i, v in enumerate(value)]
    if isinstance(value, (bytes, bytearray)):
        raise TypeError("a record for recall carries no bytes")
    return str(value)  # record ids: recall reads them as text


def record_key_text(rid: Any) -> str:
    """The bare key of a record id, from the engine's RecordID or its text."""
    key = getattr(rid, "id", None) or getattr(rid, "record_id", None)
    if key is None:
        text = str(rid)
        key = text.split(":", 1)[1] if ":" in text else text
    return str(key)


def marker_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + CLEAN_SUFFIX)


def _file_identity(path: Path) -> list[int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def write_marker(index_path: Path, changes: str, generation: str | None = None) -> None:
    """Say that the index file is exactly the engine at `changes` (fsynced, then the directory),
    and of which checkpoint (`generation`, also in the file's header and in `data/`)."""
    content = {"changes": changes, "file": _file_identity(index_path), "generation": generation}
    _write_durably(marker_path(index_path), content)


def data_token_path(directory: Path, ns: str, db: str) -> Path:
    """Where the generation of the database's clean index file is kept inside `data/`."""
    return Path(directory) / DATA_DIRNAME / f"{DATA_TOKEN_PREFIX}{ns}.{db}"


def _data_token(directory: Path, ns: str, db: str) -> str | None:
    """The generation `data/` says its clean index file has, or None."""
    found = _read_small_json(data_token_path(directory, ns, db))
    generation = found.get("generation") if found is not None else None
    return generation if isinstance(generation, str) else None


def _remove_durably(target: Path) -> None:
    """Remove a small file we wrote, durably (unlink, then fsync of its directory)."""
    try:
        os.unlink(target)
    except FileNotFoundError:
        return
    fsync_dir(target.parent)


def _write_durably(target: Path, content: dict[str, Any]) -> None:
    """Write a small JSON file whole or not at all, and fsync it and its directory."""
    body = json.dumps(content).encode()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fsync_dir(target.parent)


def remove_marker(index_path: Path) -> None:
    """Remove the `clean` marker, durably (unlink, then fsync of the directory); raises if it cannot."""
    target = marker_path(index_path)
    try:
        os.unlink(target)
    except FileNotFoundError:
        return
    fsync_dir(target.parent)


def read_marker(index_path: Path) -> dict[str, Any] | None:
    return _read_small_json(marker_path(index_path))


def _read_small_json(target: Path) -> dict[str, Any] | None:
    """A small JSON object file of this user's (no link), or None."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > 4096:
            return None
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        marker = json.loads(data)
    except ValueError:
        return None
    return marker if isinstance(marker, dict) else None


def _database_list(path: Path) -> frozenset[str] | None:
    """The database names of a `clean` list beside the index files, or None: no list, or not
    one this code wrote (both readers, `_open_absent` and `_adopt_database_list`, use this)."""
    listed = read_marker(path)
    names = listed.get("databases") if listed is not None else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return frozenset(names)


def _private_dir(path: Path) -> None:
    """Create the index directory (0700) or check the one there: a real directory of this user
    (a repository could ship a link there; the file writes would follow it)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise OSError(f"{path} is not a directory of this user") from None


class NewestFirst:
    """Every memory's index row, in pages of at most `page_rows` (which may change between
    pages), newest first by window.

    Memory keys are ULIDs, which sort by creation time. The newest window covers keys from a
    day before now up (and any key sorting above, such as a clock ahead); each older window is
    4x as long, down to the smallest key, and the last one takes every key below. Within a
    window, pages follow the key order from a cursor, so each read is one range scan that
    stops at its limit. The windows tile the whole key space: nothing is skipped or read twice."""

    def __init__(self, repo: ScopeRepository, page_rows: int, now_ms: int) -> None:
        self.repo = repo
        self.page_rows = page_rows
        self.now_ms = now_ms

    def __iter__(self) -> Iterator[list[MemoryRecord]]:
        oldest = self.repo.first_memory_key()
        if oldest is None:
            return
        high, span_ms = _KEY_MAX, REBUILD_WINDOW_MS
        while True:
            low = ulid_floor(self.now_ms - span_ms) if self.now_ms > span_ms else _KEY_MIN
            if low <= oldest:
                low = _KEY_MIN
            after: str | None = None
            while True:
                limit = self.page_rows
                rows = self.repo.index_rows_between(low, high, after=after, limit=limit)
                if rows:
                    yield rows
                if len(rows) < limit:
                    break
                after = max(str(r["id"]) for r in rows)
            if low == _KEY_MIN:
                return
            high, span_ms = low, span_ms * 4


def _link_time(link: LinkRow) -> datetime:
    return link.created_at or _EPOCH


def _supersedes(repo: ScopeRepository) -> list[tuple[str, str]]:
    """(old key, new key) of every supersede link of the store, oldest first: so when a memory
    was superseded twice the latest link wins, as it did when the links were made."""
    ordered = sorted(repo.all_links(), key=_link_time)
    return [(link.dst, link.src) for link in ordered if link.relation_type == "supersedes"]
