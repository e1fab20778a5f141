"""One embedded SurrealKV datastore, owned exclusively by this process.

Measured on this engine (docs/decisions.md): two processes opening one `surrealkv://` path
corrupt it silently, and concurrent async writes in one process lose updates. So:
- a store is opened only while holding an exclusive `flock` on `<dir>/LOCK`; a second
  opener (another daemon, a stray CLI) gets StoreUnavailable naming the holder's pid
  instead of corrupting the data;
- all statements go through one re-entrant lock on the blocking client, so writes are
  serialised even if a caller forgets to;
- commits are fsynced (`SURREAL_SYNC_DATA=true`, ~0.3 ms extra per commit) so an
  acknowledged write survives a crash of the machine, not only of the process;
- a write that would leave less than a small reserve of free space is refused before it reaches
  the engine (`StorageFull`), because once a surrealkv commit fails for lack of space the engine
  fails every later read of a value too ("fsync failed") and cannot be reopened on the full disk
  (measured on a full tmpfs). Refused early, the store keeps answering reads while the disk is full.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import resource
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable

from engram_mcp.core.errors import EngramError, InvalidInput, SchemaTooNew, StorageFull, StoreUnavailable
from engram_mcp.core.paths import (
    DATA_DIRNAME,
    UnsafePath,
    dir_bytes,
    open_private_file_at,
    prepare_store_dir,
    tighten_store_data,
    vet_store_entries,
)
from engram_mcp.storage import compact, torn, wire
from engram_mcp.storage import queries as q
from engram_mcp.storage.repository import ScopeRepository
from engram_mcp.storage.schema import CURRENT_SCHEMA_VERSION, MIGRATIONS

log = logging.getLogger("engram.store")
LOCK_FILENAME = "LOCK"
#: Free space every write must leave on the store's filesystem (and under the process's file-size
#: limit), on top of its own estimated size: room for the engine's log records, manifest updates and
#: the write that is already in flight when a check passes.
FREE_SPACE_RESERVE_BYTES = 64 * 1024
#: Bytes on disk per byte of statement parameters (measured ~3 KB on disk for a memory whose
#: parameters are ~1.5 KB with its vector; the factor is generous, the check is cheap).
WRITE_AMPLIFICATION = 3
#: With this much room, writes are not sized at all (no import batch comes near it).
AMPLE_ROOM_BYTES = 256 * 1024 * 1024
#: Compaction copies made while writes go on before one is made holding the store (compact()).
COMPACT_OPTIMISTIC_TRIES = 2
_READ_STATEMENTS = frozenset({"SELECT", "INFO", "RETURN"})


def _is_write(sql: str) -> bool:
    """Whether a statement may write (every statement is a constant of storage/queries.py)."""
    head = sql.lstrip().split(None, 1)
    return not head or head[0].upper() not in _READ_STATEMENTS


def _moves_index(sql: str) -> bool:
    """Whether a statement may change what the retrieval index holds: every write but the ones
    `queries.UNINDEXED_WRITES` names (so an unlisted or ad-hoc write is counted, never missed)."""
    return sql not in q.UNINDEXED_WRITES and _is_write(sql)


def _key(rid: Any) -> str:
    """The bare key of a record id (the engine's RecordID, or text)."""
    key = getattr(rid, "id", None)
    if key is None:
        text = str(rid)
        key = text.split(":", 1)[1] if ":" in text else text
    return str(key)


#: Writes of memory records that name every record they write, and how to read the keys from
#: their parameters. Any other statement that moves the change counter, except
#: link writes and the bumps, counts as changing any record (`written_by`).
_NAMED_RECORD_WRITES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    q.CREATE_MEMORY: lambda p: [str(p["id"])],
    q.REPLACE_MEMORY: lambda p: [str(p["id"])],
    q.INSERT_MEMORIES: lambda p: [_key(r["id"]) for r in p["rows"]],
    q.SET_STATUS: lambda p: [_key(r) for r in p["ids"]],
    q.STRENGTHEN_BATCH: lambda p: [_key(b["id"]) for b in p["batch"]],
}
#: Counter-moving writes of memory -> memory links (they change no memory record).
_LINK_WRITES = frozenset({q.CREATE_LINK, q.IMPORT_LINK})
#: The counter's own bumps.
_BUMPS = frozenset({q.BUMP_CHANGES, q.LOG_CHANGE})


def written_by(statements: list[tuple[str, dict[str, Any]]]) -> tuple[set[str] | None, bool]:
    """(the keys of the memory records these statements write, whether they write memory ->
    memory links). Keys None: one of them may write records it does not name (a migration, an
    ad-hoc write), and links is then True too: a reader must assume everything changed."""
    keys: set[str] = set()
    links = False
    for sql, params in statements:
        if sql in _NAMED_RECORD_WRITES:
            try:
                keys.update(_NAMED_RECORD_WRITES[sql](params))
                continue
            except (KeyError, TypeError, AttributeError):
                return None, True
        if sql in _LINK_WRITES:
            links = True
        elif sql not in _BUMPS and _moves_index(sql):
            return None, True
    return keys, links


def approx_bytes(value: Any) -> int:
    """A cheap upper-ish estimate of the stored size of statement parameters (vectors are bytes)."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) + 8
    if isinstance(value, dict):
        return sum(len(str(k)) + approx_bytes(v) for k, v in value.items()) + 8
    if isinstance(value, (list, tuple)):
        return sum(approx_bytes(v) for v in value) + 8
    return 16


def _classify(exc: BaseException, where: str) -> Exception:
    """Turn an engine exception into a typed engram error with a useful message."""
    text = str(exc)
    low = text.lower()
    full = ("no space left", "no storage space", "disk full", "quota exceeded", "file too large")
    if any(s in low for s in full) or (
        isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
    ):
        return StorageFull(f"{where}: the disk is full ({text[:200]}). Free some space; writes are kept and retried.")
    if "read-only" in low or "permission denied" in low or "readonly" in low:
        return StoreUnavailable(f"{where}: the store is not writable ({text[:200]}). Check permissions.")
    if "but expected" in low or "must conform to" in low:
        return InvalidInput(f"{where}: {text[:300]}")
    if isinstance(exc, UnicodeError) or "surrogates not allowed" in low:  # the caller's text, not the store
        return InvalidInput(
            "a text value is not valid Unicode (it holds a lone surrogate such as \\ud800); send valid UTF-8 text"
        )
    return StoreUnavailable(f"{where}: database error: {text[:300]}")


def _holds_nul(exc: BaseException) -> bool:
    """The engine stores a string holding NUL but then cannot serialise any answer holding it."""
    return "null byte" in str(exc).lower()


def _nul_in(value: Any, depth: int = 0) -> bool:
    """Whether statement parameters carry a NUL (in a string or an object key)."""
    if isinstance(value, str):
        return "\x00" in value
    if depth > 64:
        return False
    if isinstance(value, dict):
        return any(_nul_in(k, depth + 1) or _nul_in(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_nul_in(v, depth + 1) for v in value)
    return False


# Engine errors after which the open engine cannot be trusted: surrealkv keeps failing
# every later transaction ("fsync failed") even once space is freed, and only a reopen
# (which repairs the log's torn tail) recovers. Measured on a full tmpfs.
_IO_FAILURE_MARKERS = (
    "io error",
    "fsync",
    "no space left",
    "no storage space",
    "read-only",
    "readonly",
    "permission denied",
    "file too large",
    "corrupt",
)


def _is_io_failure(err: Exception) -> bool:
    if isinstance(err, StorageFull):
        return True
    return isinstance(err, StoreUnavailable) and any(m in str(err).lower() for m in _IO_FAILURE_MARKERS)


class _StoreConn:
    """The store's engine as compact.py reads it: each statement under the store's mutex,
    so a copy interleaves with other statements instead of holding them all up."""

    def __init__(self, store: "SurrealStore") -> None:
        self._store = store
        self._target: tuple[str, str] | None = None

    def use(self, ns: str, db: str) -> None:
        self._target = (ns, db)

    def query_raw(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        with self._store._mutex:
            if self._store._conn is None:
                raise StoreUnavailable(
                    f"{self._store.label} store {self._store.directory} was closed during compaction"
                )
            if self._target is not None:
                self._store._use(*self._target)
            return self._store._conn.query_raw(sql, params or {})


class SurrealStore:
    """A datastore directory: `<dir>/data` (SurrealKV) + `<dir>/LOCK`."""

    def __init__(self, directory: Path, *, label: str, trusted: Path | None = None, owner: Any = None) -> None:
        self.directory = Path(directory)
        self.label = label
        # A project store's `store_owner.StoreOwner`: the store is opened only when it claims it.
        self.owner = owner
        # The part of the path the user chose (a project root); every level below it must be a
        # real directory of this user's (paths.py). None: the directory's resolved parent.
        self.trusted = Path(trusted) if trusted is not None else None
        self._conn: Any = None
        self._lock_fd: int | None = None
        self._mutex = threading.RLock()
        self._current: tuple[str, str] | None = None
        self._migrated: set[tuple[str, str]] = set()
        # The last owner did not close the engine (its pid was still in LOCK): each database is
        # checked once for what a torn transaction left (`_reconcile_after_crash`).
        self._unclean = False
        self._reconciled: set[tuple[str, str]] = set()
        self._check_skipped = False  # a check failed: LOCK keeps the pid so the next open checks
        self.torn_repairs: dict[tuple[str, str], int] = {}  # history rows dropped, per database
        self._io_failure: str | None = None  # why the engine was closed after an I/O error
        self.nul_repairs: dict[tuple[str, str], int] = {}  # records whose NULs were removed, per database
        self._repairing = False
        self._write_seq = 0  # statements that may have written: a compaction copy is current if it did not move
        # Writes that moved a change counter (what a retrieval index reads), in any database: a
        # failed request that did not move it left every index of this store true (handles.py).
        self.index_writes = 0
        self._compacting = threading.Lock()  # one compaction of this store at a time (one `data.compact/`)
        self._low_space: tuple[str, int] | None = None  # (why, bytes it needed): the last write refused
        # (ns, db) -> what to run before the next write that moves its change counter: removes the
        # `clean` marker of its persisted index (services/handles.py), BEFORE the engine commits.
        self._before_counter_moves: dict[tuple[str, str], Callable[[], None]] = {}
        # ns -> (the databases it held when watched, what to run before the first counter move in
        # any other database of it): removes the list that lets a new session answer early.
        self._before_new_database_moves: dict[str, tuple[frozenset[str], Callable[[], None]]] = {}
        # (ns, db) -> keys of the memory records written since `take_changed_records` last ran
        # (None: a statement wrote records it does not name, e.g. a migration: assume all)
        self._changed_records: dict[tuple[str, str], set[str] | None] = {}
        # ...and those of them written by anything but recall strengthening (`rewritten_since_take`)
        self._rewritten_records: dict[tuple[str, str], set[str] | None] = {}

    # -- lifecycle --------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self._conn is not None

    @property
    def failure(self) -> str | None:
        """Why this store cannot take writes right now (None when it can, as far as we know)."""
        if self._low_space is not None and self._room_bytes() >= self._low_space[1]:
            self._low_space = None  # space came back: the next write will be tried
        return self._io_failure or (self._low_space[0] if self._low_space else None)

    def _room_bytes(self) -> int:
        """Bytes a write may still add: free space on the filesystem, and under RLIMIT_FSIZE."""
        try:
            st = os.statvfs(self.directory)
        except OSError:
            return 1 << 62  # cannot tell: let the engine try (and fail with a real error)
        room = st.f_bavail * st.f_frsize
        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if soft != resource.RLIM_INFINITY:
            room = min(room, soft - self._largest_data_file())
        return room

    def _largest_data_file(self) -> int:
        largest = 0
        for sub in (self.directory / DATA_DIRNAME).glob("*"):
            try:
                entries = list(os.scandir(sub)) if sub.is_dir() else []
            except OSError:
                continue
            for entry in entries:
                try:
                    largest = max(largest, entry.stat().st_size)
                except OSError:
                    pass
        return largest

    def _check_room(self, params: Any) -> None:
        """Refuse a write that would fill the disk, before the engine sees it (module docstring)."""
        room = self._room_bytes()
        if room >= AMPLE_ROOM_BYTES and self._low_space is None:
            return  # the common case: no need to size the write
        need = FREE_SPACE_RESERVE_BYTES + WRITE_AMPLIFICATION * approx_bytes(params)
        if room >= need:
            self._low_space = None
            return
        message = (
            f"{self.label} store {self.directory}: the disk is full ({max(room, 0) // 1024} KiB left, a write needs "
            f"{need // 1024} KiB). Free some space; writes are kept and retried, reads keep working."
        )
        self._low_space = (message, need)
        raise StorageFull(message)

    def open(self) -> "SurrealStore":
        """Lock the directory and start the embedded engine on it."""
        with self._mutex:
            if self._conn is not None:
                return self
            started = time.perf_counter()
            dir_fd, checked = self._prepare_directory()
            try:
                self._recover_compaction(dir_fd, checked)
                try:
                    self._conn = self._start_engine(dir_fd, checked)
                except Exception as exc:  # engine refused: corrupt files, permissions, ...
                    self._release_lock()
                    raise _classify(exc, f"{self.label} store {self.directory}") from exc
                self._tighten_after_open(dir_fd, checked)
            finally:
                os.close(dir_fd)
            if compact.purge_pending(self.directory):
                self._resume_purge()
            log.info("%s store %s opened in %.2f s", self.label, self.directory, time.perf_counter() - started)
            return self

    def _start_engine(self, dir_fd: int, checked: Path) -> Any:
        """The engine on `data/`. When it refuses for a short read, a file a crash left without
        its header is the likely cause: such files are removed (`torn.py`) and the engine tried
        once more. Any other refusal, or one the removal does not explain, is raised."""
        os.environ.setdefault("SURREAL_SYNC_DATA", "true")
        from surrealdb import Surreal  # heavy import (~0.3 s): only the owner process pays it

        wire.install_fast_decoder()
        wire.install_fast_encoder()
        url = f"surrealkv://{checked / DATA_DIRNAME}"
        try:
            return Surreal(url)
        except Exception as exc:
            if not torn.refused_for_short_read(exc):
                raise
            removed = torn.drop_torn_heads(dir_fd, checked)
            if not removed:
                raise
            log.warning(
                "%s store %s: removed %s, left without a header by a crash (no records lost); opening again",
                self.label,
                self.directory,
                ", ".join(str(p) for p in removed),
            )
            self._unclean = True  # the crash may also have torn a transaction
        return Surreal(url)

    def _resume_purge(self) -> None:
        """A purge's compaction was interrupted (a crash after its commit): finish it now, before
        any request reads or copies the store, and drop the derived index files, which may hold
        the purged text. A failure is logged and the intent kept: the next open tries again."""
        log.warning("%s store %s: a purge was interrupted; compacting now", self.label, self.directory)
        try:
            done = self.compact()
            scrubbed = compact.scrub_derived(self.directory)
        except (StoreUnavailable, OSError) as exc:
            log.error("%s store %s: the interrupted purge could not be finished: %s", self.label, self.directory, exc)
            return
        log.warning(
            "%s store %s: interrupted purge finished (%d rows copied, %d index files removed)",
            self.label,
            self.directory,
            done["rows"],
            scrubbed,
        )

    def _prepare_directory(self) -> tuple[int, Path]:
        """Check/create the directory (no links, owned by us), lock it and vet its data tree
        before the engine, which follows paths, ever sees it. Returns (dir fd, checked path)."""
        dir_fd, checked = self._guard(lambda: prepare_store_dir(self.directory, trusted=self.trusted, owner=self.owner))
        try:
            self._guard(lambda: self._acquire_lock(dir_fd, checked))
            try:
                self._guard(lambda: tighten_store_data(dir_fd, checked))
            except StoreUnavailable:
                self._release_lock()
                raise
        except BaseException:
            os.close(dir_fd)
            raise
        return dir_fd, checked

    def _tighten_after_open(self, dir_fd: int, checked: Path) -> None:
        """Private modes for the files the engine just created (it uses the process umask)."""
        try:
            self._guard(lambda: tighten_store_data(dir_fd, checked))
        except StoreUnavailable as exc:
            if self._conn is None:  # refused (a link appeared meanwhile): already closed
                raise
            log.warning("%s store %s: could not tighten modes: %s", self.label, self.directory, exc.message)

    def _guard(self, step: Any) -> Any:
        """Run a filesystem step; a refusal or OS error becomes a typed StoreUnavailable."""
        try:
            return step()
        except UnsafePath as exc:
            self.close()
            raise StoreUnavailable(
                f"{self.label} store {self.directory} refused: {exc.message}. Until then, writes to it are queued "
                "and applied once it is fixed, and reads go on without it."
            ) from None
        except OSError as exc:
            raise _classify(exc, f"{self.label} store {self.directory}") from exc

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None:
                try:
                    self._conn.close()
                    self._mark_closed_cleanly()
                except Exception:  # closing a broken engine must not mask the original problem
                    log.exception("closing %s", self.directory)
                self._conn = None
            self._current = None
            self._migrated.clear()
            self._release_lock()

    def _mark_closed_cleanly(self) -> None:
        """Empty LOCK after the engine closed without an I/O failure: the next owner need not
        look for a torn transaction (`_reconcile_after_crash`). A read-only file system keeps
        the pid, which only costs that check."""
        if self._io_failure is None and not self._check_skipped and self._lock_fd is not None:
            try:
                os.ftruncate(self._lock_fd, 0)
            except OSError:
                pass

    def _failed(self, err: Exception) -> Exception:
        """After an I/O failure, close the engine so the next use reopens (and repairs) it."""
        if _is_io_failure(err) and self._conn is not None:
            log.warning(
                "%s store %s failed (%s); closing it, it will be reopened on next use", self.label, self.directory, err
            )
            self.close()
            self._io_failure = str(err)
        return err

    def _acquire_lock(self, dir_fd: int, checked: Path) -> None:
        fd = open_private_file_at(dir_fd, LOCK_FILENAME, checked / LOCK_FILENAME)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreUnavailable(
                f"{self.label} store {self.directory} is locked by another engram process (pid {holder}); "
                "it will be used when that process exits.",
                retry_possible=True,
            ) from None
        # A pid left in the file: its owner died (or an older engram closed it) without a clean
        # close, so a transaction may have been torn at the log's end.
        self._unclean = self._unclean or bool(os.pread(fd, 32, 0).strip())
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    # -- statements ---------------------------------------------------------------
    def before_counter_moves(self, ns: str, db: str, callback: Callable[[], None]) -> None:
        """Run `callback` once, before the next statement that moves (ns, db)'s change counter is
        sent to the engine (the caller holds the store mutex then). If it raises, the write is
        not sent and the callback stays registered: a marker that could not be removed must
        never be left beside a store that moved on."""
        with self._mutex:
            self._before_counter_moves[(ns, db)] = callback

    def watch_new_databases(self, ns: str, mark: Callable[[frozenset[str]], None], unmark: Callable[[], None]) -> None:
        """List the databases of `ns` and call `mark` with them, then run `unmark` once before the
        next counter-moving statement in any database NOT in that list, with the rules of
        `before_counter_moves`. All under the store mutex, so no such statement can land between
        the listing and the watch: while `mark`'s record stands, a database it does not name
        holds no memories."""
        with self._mutex:
            names = frozenset(self.databases(ns))
            mark(names)
            self._before_new_database_moves[ns] = (names, unmark)

    def watch_listed_databases(self, ns: str, names: frozenset[str], unmark: Callable[[], None]) -> None:
        """`watch_new_databases` for a list made earlier (by another process): run `unmark` before
        the first counter-moving statement in a database of `ns` it does not name."""
        with self._mutex:
            self._before_new_database_moves[ns] = (names, unmark)

    def watching_new_databases(self, ns: str) -> bool:
        """Whether a `watch_new_databases` of `ns` still stands (nothing outside its list moved)."""
        with self._mutex:
            return ns in self._before_new_database_moves

    def take_changed_records(self, ns: str, db: str) -> set[str] | None:
        """The keys of the memory records of (ns, db) written since the last call (or since the
        store opened), and forget them; None when some write may have changed records it does
        not name. Lets a checkpoint re-read only those records (services/handles.py)."""
        with self._mutex:
            self._rewritten_records.pop((ns, db), None)
            return self._changed_records.pop((ns, db), set())

    def rewritten_since_take(self, ns: str, db: str, keys: Iterable[str]) -> set[str] | None:
        """Which of `keys` were written since the last `take_changed_records` by anything but
        recall strengthening (`queries.STRENGTHEN_BATCH`, whose effect a reader can replay),
        without forgetting anything; None when some write may have changed records it does not
        name."""
        with self._mutex:
            rewritten = self._rewritten_records.get((ns, db), set())
            return None if rewritten is None else rewritten.intersection(keys)

    def _note_record_writes(self, ns: str, db: str, keys: set[str] | None, strengthening_only: bool = False) -> None:
        for table, skip in ((self._changed_records, False), (self._rewritten_records, strengthening_only)):
            changed = table.setdefault((ns, db), set())
            if changed is None or skip:
                continue
            if keys is None:
                table[(ns, db)] = None
            else:
                changed.update(keys)

    def note_changed_records(self, ns: str, db: str, keys: set[str] | None) -> None:
        """Count `keys` as written since the last `take_changed_records` (an index repaired from
        the change log: the records it re-read must be re-read by the next checkpoint too)."""
        with self._mutex:
            self._note_record_writes(ns, db, keys)

    def _counter_moves(self, ns: str, db: str) -> None:
        self.index_writes += 1
        callback = self._before_counter_moves.pop((ns, db), None)
        if callback is not None:
            try:
                callback()
            except BaseException:
                self._before_counter_moves[(ns, db)] = callback
                raise
        watch = self._before_new_database_moves.get(ns)
        if watch is not None and db not in watch[0]:
            watch[1]()  # raises: the watch stays and the write is not sent
            del self._before_new_database_moves[ns]

    def _use(self, ns: str, db: str) -> None:
        if self._conn is None:
            raise StoreUnavailable(f"{self.label} store {self.directory} is not open")
        if self._current != (ns, db):
            self._conn.use(ns, db)
            self._current = (ns, db)

    def query(self, ns: str, db: str, sql: str, params: dict[str, Any] | None = None) -> Any:
        """Run ONE statement and return its result (the SDK only reports the first)."""
        if _moves_index(sql):  # the change counter goes with it, atomically
            return self.transaction(ns, db, [(sql, params or {})])[0]
        with self._mutex:
            self._use(ns, db)
            if _is_write(sql):
                self._check_room(params)
                self._write_seq += 1
                if sql == q.BUMP_CHANGES:
                    self._counter_moves(ns, db)
            try:
                return self._conn.query(sql, params or {})
            except Exception as exc:
                if _holds_nul(exc) and _nul_in(params):  # the caller's value, not a stored one: bad input
                    raise InvalidInput("a text value holds a NUL character, which the store cannot keep") from exc
                if _holds_nul(exc) and self.repair_nul(ns, db):  # a record written before NULs were refused
                    return self.query(ns, db, sql, params)
                raise self._failed(_classify(exc, f"{self.label} store")) from exc

    def transaction(self, ns: str, db: str, statements: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Run statements atomically (BEGIN/COMMIT in one request; rolls back on error).

        Each statement's params are renamed with a per-statement prefix so they can
        share one request without colliding. When one of them may change what the retrieval
        index holds (`_moves_index`), the database's change counter is bumped in the same
        transaction (its result is not returned).
        """
        given = statements
        # One bump per transaction: when the caller bumps itself (a migration), none is added. Two
        # UPSERTs of the counter in one transaction read back as n + 2 in this process but were
        # found at n + 1 after a reopen (measured), which would tell a persisted index it is stale.
        # The bump is the change log's (LOG_CHANGE): it names what the transaction wrote.
        bumps = any(sql in _BUMPS for sql, _ in statements)
        trim = 1 if not bumps and any(_moves_index(sql) for sql, _ in statements) else 0
        written: tuple[set[str] | None, bool] = (None, True)
        if trim or bumps:
            written = written_by(given)
            log_params = {"keys": sorted(written[0]) if written[0] is not None else None, "links": written[1]}
            statements = [(q.LOG_CHANGE, log_params) if sql in _BUMPS else (sql, p) for sql, p in statements]
        if trim:
            # First: the engine keeps a prefix of a transaction a crash tore (`_reconcile_after_crash`),
            # so any of its writes that survive come with the log row naming them, and the index
            # file they make stale is repaired instead of trusted.
            statements = [(q.LOG_CHANGE, log_params), *statements]
        body, params = [], {}
        for i, (sql, p) in enumerate(statements):
            renamed = sql
            for name in sorted(p, key=len, reverse=True):
                renamed = renamed.replace(f"${name}", f"$s{i}_{name}")
                params[f"s{i}_{name}"] = p[name]
            body.append(renamed.rstrip().rstrip(";") + ";")
        text = "BEGIN TRANSACTION;\n" + "\n".join(body) + "\nCOMMIT TRANSACTION;"
        with self._mutex:
            self._use(ns, db)
            self._check_room(params)
            if any(sql == q.DELETE_HISTORY_OF for sql, _ in statements):  # a purge: see compact.py
                compact.write_purge_intent(self.directory)
            self._write_seq += 1
            if trim or bumps:
                self._counter_moves(ns, db)
                strengthening_only = all(sql == q.STRENGTHEN_BATCH or sql in _BUMPS for sql, _ in statements)
                self._note_record_writes(ns, db, written[0], strengthening_only)
            try:
                raw = self._conn.query_raw(text, params)
            except Exception as exc:
                if _holds_nul(exc) and _nul_in(params):
                    raise InvalidInput("a text value holds a NUL character, which the store cannot keep") from exc
                if _holds_nul(exc) and self.repair_nul(ns, db):
                    return self.transaction(ns, db, given)
                raise self._failed(_classify(exc, f"{self.label} store")) from exc
            if raw.get("error"):
                raise self._failed(_classify(RuntimeError(str(raw["error"])), f"{self.label} store"))
            results = raw.get("result") or []
            failures = [r for r in results if r.get("status") != "OK"]
            if failures:
                real = [r for r in failures if "failed transaction" not in str(r.get("result"))] or failures
                raise self._failed(_classify(RuntimeError(str(real[0].get("result"))), f"{self.label} store"))
        return [r.get("result") for r in results][trim:]

    def execute_ddl(self, ns: str, sql: str) -> Any:
        """DDL at namespace level (define/remove a database); `sql` uses validated names only."""
        with self._mutex:
            if self._conn is None:
                raise StoreUnavailable(f"{self.label} store is not open")
            self._conn.use(ns, "engram_bootstrap")
            self._current = (ns, "engram_bootstrap")
            if _is_write(sql):
                self._check_room(None)
                self._write_seq += 1
            try:
                return self._conn.query(sql)
            except Exception as exc:
                raise self._failed(_classify(exc, f"{self.label} store")) from exc

    def define_database(self, ns: str, db: str) -> None:
        """Create database `db` of namespace `ns` if absent (`db` from core/ids.py only)."""
        self.execute_ddl(ns, q.DEFINE_DATABASE.format(db=db))

    def remove_database(self, ns: str, db: str) -> None:
        """Remove database `db` of namespace `ns` and everything in it, if present."""
        self.execute_ddl(ns, q.REMOVE_DATABASE.format(db=db))

    def databases(self, ns: str) -> list[str]:
        """Names of the databases of namespace `ns`."""
        info = self.execute_ddl(ns, q.LIST_DATABASES) or {}
        return list(info.get("databases", {}) if isinstance(info, dict) else {})

    def repository(self, ns: str, db: str) -> ScopeRepository:
        """The repository of database (ns, db), statements run directly on this store."""
        return ScopeRepository(
            lambda sql, params: self.query(ns, db, sql, params),
            lambda statements: self.transaction(ns, db, statements),
        )

    # -- schema -------------------------------------------------------------------
    def ensure_schema(self, ns: str, db: str, *, migrations: list | None = None) -> int:
        """Apply pending migrations to (ns, db); return the schema version now in force."""
        key = (ns, db)
        if key in self._migrated and migrations is None:
            return CURRENT_SCHEMA_VERSION
        plan = MIGRATIONS if migrations is None else migrations
        target = plan[-1][0]
        with self._mutex:
            current = self.query(ns, db, q.GET_SCHEMA_VERSION) or 0
            if isinstance(current, list):
                current = current[0] if current else 0
            current = int(current or 0)
            if current > CURRENT_SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"{self.label} store {self.directory} ({ns}/{db}) has schema version {current}, newer than "
                    f"this engram understands ({CURRENT_SCHEMA_VERSION}). Upgrade engram; the store was not touched."
                )
            for version, description, statements in plan:
                if version <= current:
                    continue
                log.info("migrating %s %s/%s to v%d: %s", self.label, ns, db, version, description)
                # a migration may rewrite memories: the change counter moves with it
                self.transaction(
                    ns,
                    db,
                    [(s, {}) for s in statements]
                    + [(q.SET_SCHEMA_VERSION, {"version": version}), (q.BUMP_CHANGES, {})],
                )
                current = version
            if migrations is None:
                self._migrated.add(key)
            self._reconcile_after_crash(ns, db)
            return max(current, target) if current >= target else current

    def _reconcile_after_crash(self, ns: str, db: str) -> None:
        """Drop what a transaction torn by a crash left, once per database after an unclean close.

        SurrealKV repairs a log whose end a crash cut off by keeping the records before the cut,
        and it keeps the first writes of the transaction that was cut (measured with the engine
        this package pins: an update's history row landed, its new record version did not). An
        update writes its history row first, so what can be left is a history row for a version
        the memory never reached; it is removed, and the update counts as never made, as an
        update in flight at a crash may. Rows of finished updates are never touched: their
        versions are below the memory's.
        """
        if not self._unclean or (ns, db) in self._reconciled:
            return
        self._reconciled.add((ns, db))
        try:
            dropped = self.query(ns, db, q.DROP_TORN_HISTORY) or []
        except EngramError as exc:  # a full disk or a read-only store: still open it, check next time
            self._check_skipped = True
            log.warning("%s store %s (%s/%s): torn-update check skipped: %s", self.label, self.directory, ns, db, exc)
            return
        if dropped:
            self.torn_repairs[(ns, db)] = self.torn_repairs.get((ns, db), 0) + len(dropped)
            log.warning(
                "%s store %s (%s/%s): removed %d history entr%s of an update a crash interrupted",
                self.label,
                self.directory,
                ns,
                db,
                len(dropped),
                "y" if len(dropped) == 1 else "ies",
            )

    def schema_version(self, ns: str, db: str) -> int:
        current = self.query(ns, db, q.GET_SCHEMA_VERSION)
        if isinstance(current, list):
            current = current[0] if current else 0
        return int(current or 0)

    # -- repair and compaction ------------------------------------------------------
    def repair_nul(self, ns: str, db: str) -> int:
        """Remove NUL characters from every record of (ns, db) that holds one; the number repaired.

        An older engram (or an import before it checked) could store a string with NUL:
        the engine keeps it, then fails every read of that record ("to be serialized string
        contained a null byte"), so export, recall, show and forget of the whole table fail
        and context drops the project. Reads call this once on that error and retry: the
        record is rewritten as `store` would have written it (NUL removed, as records.py does
        for new text), in one transaction, and each repair is logged and counted in
        `nul_repairs` (engram status shows it).
        """
        with self._mutex:
            if self._repairing:
                return 0
            self._repairing = True
            try:
                return self._repair_nul(ns, db)
            finally:
                self._repairing = False

    def _repair_nul(self, ns: str, db: str) -> int:
        with self._mutex:
            self._use(ns, db)
            tables = list((self._conn.query(q.INFO_FOR_DB) or {}).get("tables") or {})
            statements: list[tuple[str, dict[str, Any]]] = [(q.DEFINE_DENUL_FUNCTION, {})]
            statements += [(q.REPAIR_NUL_IN_TABLE, {"table": t, "nul": "\x00"}) for t in tables]
            statements.append((q.REMOVE_DENUL_FUNCTION, {}))
            try:
                results = self.transaction(ns, db, statements)
            except Exception as exc:  # a repair that fails must not hide the original error
                log.error("%s store %s (%s/%s): NUL repair failed: %s", self.label, self.directory, ns, db, exc)
                return 0
            repaired = sum(len(r or []) for r in results[1:-1])
            if repaired:
                self.nul_repairs[(ns, db)] = self.nul_repairs.get((ns, db), 0) + repaired
                log.warning(
                    "%s store %s (%s/%s): removed NUL characters from %d records (written by an older engram "
                    "or a bad import); they are readable again",
                    self.label,
                    self.directory,
                    ns,
                    db,
                    repaired,
                )
            return repaired

    def compact(self) -> dict[str, Any]:
        """Rewrite the datastore so that overwritten and deleted values leave the disk (compact.py).

        The copy is made page by page while other statements go on (a recall is not held up:
        5,000 memories take ~2-6 s to copy here); if nothing was written meanwhile, only the
        swap holds the store (~0.1 s). After COMPACT_OPTIMISTIC_TRIES copies that a write
        overtook, the copy is made holding the store throughout. On failure the original
        datastore stays and stays open.
        """
        with self._compacting:
            if self._conn is None:
                raise StoreUnavailable(f"{self.label} store {self.directory} is not open")
            started, before = time.perf_counter(), compact.data_bytes(self.directory)
            copied = None
            for _attempt in range(COMPACT_OPTIMISTIC_TRIES):
                seq = self._write_seq
                try:
                    copied = compact.build_copy(_StoreConn(self), self.directory, repair=self.repair_nul, mark=False)
                except compact.CompactionFailed:
                    continue  # a count that moved under a write: try again
                except Exception as exc:
                    raise self._compaction_failed(exc) from exc
                with self._mutex:
                    if self._write_seq == seq:
                        self._swap_in()
                        break
            else:
                with self._mutex:
                    try:
                        copied = compact.build_copy(
                            _StoreConn(self), self.directory, repair=self.repair_nul, mark=False
                        )
                    except Exception as exc:
                        raise self._compaction_failed(exc) from exc
                    self._swap_in()
            return {
                "directory": str(self.directory),
                "rows": sum(copied.values()),
                "bytes_before": before,
                "bytes_after": compact.data_bytes(self.directory),
                "seconds": round(time.perf_counter() - started, 3),
            }

    def _swap_in(self) -> None:
        """Mark the current copy, close the engine, swap the directories, reopen (mutex held).
        The copy holds every write so far (the caller checked), every purge's included: a
        pending purge's intent goes once the old files are destroyed."""
        try:
            compact.write_marker(self.directory)
        except Exception as exc:
            raise self._compaction_failed(exc) from exc
        self._conn.close()
        self._conn, self._current = None, None
        self._migrated.clear()
        try:
            compact.swap(self.directory)
        finally:
            from surrealdb import Surreal

            self._conn = Surreal(f"surrealkv://{self.directory / DATA_DIRNAME}")
        compact.clear_purge_intent(self.directory)

    def _compaction_failed(self, exc: BaseException) -> StoreUnavailable:
        self._current = None
        compact.drop_copy(self.directory)
        log.error("%s store %s: compaction failed, the store is unchanged: %s", self.label, self.directory, exc)
        return StoreUnavailable(
            f"{self.label} store {self.directory}: compaction failed ({str(exc)[:200]}); the store is unchanged"
        )

    def _recover_compaction(self, dir_fd: int, checked: Path) -> None:
        """Finish (or drop) a compaction a crash interrupted, before the engine opens `data/`.

        Recovery renames, zero-fills and deletes `data.compact/`, `data.old/` and the marker by
        path, so each must first be engram's own (a repository can commit them as links to the
        user's files); the `data/` it may swap in is vetted again before the engine sees it.
        """
        entries = (compact.COMPACT_DIRNAME, compact.OLD_DIRNAME, compact.READY_MARKER, compact.PURGE_INTENT)
        self._guard(lambda: vet_store_entries(dir_fd, checked, *entries))
        try:
            acted = compact.recover(checked)
        except OSError as exc:
            self._release_lock()
            raise _classify(exc, f"{self.label} store {self.directory}") from exc
        if acted:
            self._guard(lambda: tighten_store_data(dir_fd, checked))

    def size_bytes(self) -> int:
        return dir_bytes(self.directory / DATA_DIRNAME)
