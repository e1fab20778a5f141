"""Compaction: rewrite a datastore so that deleted and overwritten values leave the disk.

SurrealKV (surrealkv 0.9.3 inside surrealdb-core 2.3.10) is an append-only commit log:
an UPDATE or DELETE appends a new version and the old bytes stay in
`data/clog/*.clog` for good. Measured here: a value written, updated, deleted, followed
by 2,000 more writes and a reopen is still in the log byte for byte. The engine has a
compaction routine, but neither SurrealQL nor the Python SDK reaches it (no statement, no
method, no environment variable). So `forget --purge-now` compacts by rewriting: every
namespace, database, definition and row is copied into a fresh datastore beside the old
one, the copy is checked (row counts per table), and the directories are swapped.

Crash safety (the caller holds the store's LOCK and its mutex; no write runs meanwhile):
1. the copy is built in `data.compact/`; a crash here leaves a half copy that the next
   open deletes (no marker yet), and `data/` untouched. It is first made while other
   statements still run (reads and writes interleave, page by page); if anything was written
   meanwhile (the store's write counter moved), it is made again holding the store, so
   the marker is only ever put on a copy of the current data;
2. the marker file `COMPACT_READY` is written and fsynced: the copy is complete;
3. `data/` -> `data.old/`, `data.compact/` -> `data/`, directory fsynced, marker removed;
4. `data.old/` is overwritten with zeros and deleted.
`recover()` runs at every open, before the engine sees `data/`, and finishes whatever
step a crash interrupted: with the marker, the swap is completed; without it, a half
copy is dropped. At no point is there neither a complete `data/` nor a complete copy.

A purge must not depend on the process living through its compaction: `PURGE_PENDING` is
written (fsynced) before the transaction that purges commits, and removed only once a
compaction has swapped in a copy without the purged values. A `kill -9` anywhere in between
leaves it; the next open then compacts again before any request is answered, and removes
the derived index files beside `data/` (they may hold the purged text; they are rebuilt).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Any

from engram_mcp.core.paths import fsync_dir

log = logging.getLogger("engram.compact")

COMPACT_DIRNAME = "data.compact"
OLD_DIRNAME = "data.old"
READY_MARKER = "COMPACT_READY"
#: Beside `data/`: a purge committed (or is about to) whose values may still be on disk.
PURGE_INTENT = "PURGE_PENDING"
#: Beside `data/`: the derived index files (services/handles.py INDEX_DIRNAME), which copy
#: memory text; removed when a purge is resumed.
DERIVED_DIRNAME = "index"
#: Rows read and written per statement while copying (a memory row with its vector is ~3 KB).
#: Pages are read in the table's own key order: `ORDER BY id` with START made a 5,000-memory
#: copy 4.2 s instead of 0.8 s here.
COPY_BATCH_ROWS = 1000
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Definition kinds of INFO FOR DB, in the order they must be replayed (tables after what they use).
_DB_DEFINITIONS = ("params", "analyzers", "functions", "models", "configs", "accesses", "users", "tables")
_TABLE_DEFINITIONS = ("fields", "indexes", "events")


class CompactionFailed(Exception):
    """The copy could not be made or did not match; the original datastore is untouched."""


def _safe_name(name: str, what: str) -> str:
    """Names are formatted into statements (SurrealQL cannot bind them): only plain identifiers."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise CompactionFailed(f"{what} name {str(name)[:60]!r} is not a plain identifier; not copied")
    return name


def _one(conn: Any, sql: str, params: dict[str, Any] | None = None) -> Any:
    """Run one statement and raise on its error (the SDK's query() hides later statements' errors)."""
    raw = conn.query_raw(sql, params or {})
    if raw.get("error"):
        raise CompactionFailed(f"{sql[:60]}: {raw['error']}")
    result = (raw.get("result") or [{}])[0]
    if result.get("status") != "OK":
        raise CompactionFailed(f"{sql[:60]}: {str(result.get('result'))[:300]}")
    return result.get("result")


def _define(conn: Any, statement: str) -> None:
    """Replay one definition; one that the engine already derived from another (the `[*]`
    field of an `array<object>` field) is left as it is."""
    try:
        _one(conn, statement)
    except CompactionFailed as exc:
        if "already exists" not in str(exc):
            raise


def _info(conn: Any, sql: str) -> dict[str, Any]:
    out = _one(conn, sql)
    return out if isinstance(out, dict) else {}


def copy_datastore(src: Any, dst: Any, *, repair: Any = None) -> dict[str, int]:
    """Copy every namespace, database, definition and row of `src` into the empty `dst`.

    `repair(ns, db)` is called when a table cannot be read because a stored string holds a
    NUL (an engine serialisation failure), then the read is retried once. Returns rows
    copied per `ns/db/table`.
    """
    copied: dict[str, int] = {}
    for ns in _info(src, "INFO FOR ROOT").get("namespaces", {}):
        _safe_name(ns, "namespace")
        _one(dst, f"DEFINE NAMESPACE IF NOT EXISTS {ns}")
        src.use(ns, "engram_compact")
        dst.use(ns, "engram_compact")
        for db in _info(src, "INFO FOR NS").get("databases", {}):
            _safe_name(db, "database")
            _one(dst, f"DEFINE DATABASE IF NOT EXISTS {db}")
            src.use(ns, db)
            dst.use(ns, db)
            copied.update(_copy_database(src, dst, ns, db, repair))
    return copied


def _copy_database(src: Any, dst: Any, ns: str, db: str, repair: Any) -> dict[str, int]:
    info = _info(src, "INFO FOR DB")
    for kind in _DB_DEFINITIONS:
        for statement in (info.get(kind) or {}).values():
            _define(dst, statement)
    copied = {}
    for table, definition in (info.get("tables") or {}).items():
        _safe_name(table, "table")
        tinfo = _info(src, f"INFO FOR TABLE {table}")
        for kind in _TABLE_DEFINITIONS:
            for statement in (tinfo.get(kind) or {}).values():
                _define(dst, statement)
        relation = "TYPE RELATION" in str(definition).upper()
        copied[f"{ns}/{db}/{table}"] = _copy_rows(src, dst, ns, db, table, relation, repair)
    return copied


def _copy_rows(src: Any, dst: Any, ns: str, db: str, table: str, relation: bool, repair: Any) -> int:
    insert = f"INSERT {'RELATION ' if relation else ''}INTO {table} $rows RETURN NONE"
    start, total = 0, 0
    while True:
        sql = f"SELECT * FROM {table} LIMIT {COPY_BATCH_ROWS} START {start}"
        try:
            rows = _one(src, sql) or []
        except Exception as exc:
            if repair is None or "null byte" not in str(exc).lower():
                raise
            repair(ns, db)
            src.use(ns, db)
            rows = _one(src, sql) or []
        if not rows:
            return total
        _one(dst, insert, {"rows": rows})
        total += len(rows)
        start += len(rows)


def count_rows(conn: Any) -> dict[str, int]:
    """Rows per `ns/db/table` (the check that a copy is complete)."""
    counts: dict[str, int] = {}
    for ns in _info(conn, "INFO FOR ROOT").get("namespaces", {}):
        conn.use(ns, "engram_compact")
        for db in _info(conn, "INFO FOR NS").get("databases", {}):
            conn.use(ns, db)
            for table in _info(conn, "INFO FOR DB").get("tables") or {}:
                rows = _one(conn, f"SELECT count() AS n FROM {_safe_name(table, 'table')} GROUP ALL") or []
                counts[f"{ns}/{db}/{table}"] = int(rows[0]["n"]) if rows else 0
    return counts


def build_copy(src: Any, directory: Path, *, repair: Any = None, mark: bool = True) -> dict[str, int]:
    """Step 1 (and 2 with `mark`): the complete, checked copy in `data.compact/` (and the READY
    marker). A copy made while writes may still happen is built without the marker: it is
    marked only once it is known to be current (`write_marker`), or it could replace newer data."""
    from surrealdb import Surreal

    new = directory / COMPACT_DIRNAME
    _remove_tree(new)
    (directory / READY_MARKER).unlink(missing_ok=True)
    dst = Surreal(f"surrealkv://{new}")
    try:
        copied = copy_datastore(src, dst, repair=repair)
        expected = count_rows(src)
        got = count_rows(dst)
    finally:
        dst.close()
    if got != expected:
        _remove_tree(new)
        diff = {k: (expected.get(k), got.get(k)) for k in set(expected) | set(got) if expected.get(k) != got.get(k)}
        raise CompactionFailed(f"the copy does not match the store (rows expected, copied): {str(diff)[:300]}")
    _fsync_tree(new)
    if mark:
        write_marker(directory)
    return copied


def drop_copy(directory: Path) -> None:
    """Forget a copy that will not be used (a failed or abandoned compaction)."""
    (directory / READY_MARKER).unlink(missing_ok=True)
    _remove_tree(directory / COMPACT_DIRNAME)


def swap(directory: Path) -> None:
    """Steps 3-4: put the copy in place of `data/`, then destroy the old files."""
    data, new, old = directory / "data", directory / COMPACT_DIRNAME, directory / OLD_DIRNAME
    _remove_tree(old)
    if data.exists():
        os.rename(data, old)
    os.rename(new, data)
    fsync_dir(directory)
    (directory / READY_MARKER).unlink(missing_ok=True)
    fsync_dir(directory)
    _scrub_tree(old)


def recover(directory: Path) -> str | None:
    """Finish or undo a compaction a crash interrupted (module docstring); None if none was."""
    data, new, old = directory / "data", directory / COMPACT_DIRNAME, directory / OLD_DIRNAME
    marker = directory / READY_MARKER
    action = None
    for path in (new, old):  # only trees engram made are used: a link (a hostile checkout) is removed, never followed
        if path.is_symlink() or (path.exists() and not _is_own_tree(path)):
            _remove_tree(path) if path.is_symlink() else shutil.rmtree(path, ignore_errors=True)
            action = f"removed {path.name}, which engram did not make"
    if marker.is_symlink():
        marker.unlink()
    if marker.exists():
        if new.exists():
            if data.exists() and not old.exists():
                os.rename(data, old)
            elif data.exists():
                _remove_tree(data)  # `old` holds the original; `data` can only be a stray
            os.rename(new, data)
            fsync_dir(directory)
            action = "finished an interrupted compaction"
        marker.unlink(missing_ok=True)
        fsync_dir(directory)
    elif new.exists():
        _remove_tree(new)
        action = "dropped an incomplete compaction copy"
    if old.exists():
        if not data.exists():
            os.rename(old, data)  # cannot happen by the steps above; never lose the only copy
            fsync_dir(directory)
            action = "restored the datastore from before a compaction"
        else:
            _scrub_tree(old)
            action = action or "removed the datastore left from a compaction"
    if action:
        log.warning("store %s: %s", directory, action)
    return action


def _is_own_tree(root: Path) -> bool:
    """A real directory of this user's holding only regular files and directories of this user's."""
    uid = os.getuid()
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        for name in [dirpath, *(os.path.join(dirpath, n) for n in dirs + files)]:
            try:
                st = os.lstat(name)
            except OSError:
                return False
            if st.st_uid != uid or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                return False
    return True


def write_marker(directory: Path) -> None:
    """Step 2: the copy in `data.compact/` is complete and current; from here a crash completes the swap."""
    fd = os.open(directory / READY_MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, f"{time.time():.3f}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(directory)


def write_purge_intent(directory: Path) -> None:
    """Before a purge commits: say so durably, so that a crash before its compaction has
    swapped in a clean copy makes the next open compact (`purge_pending`)."""
    path = Path(directory) / PURGE_INTENT
    if path.is_file() and not path.is_symlink():
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, f"{time.time():.3f}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(Path(directory))


def purge_pending(directory: Path) -> bool:
    """Whether a purge's compaction has not finished (a crash interrupted it)."""
    path = Path(directory) / PURGE_INTENT
    return path.is_file() and not path.is_symlink()


def clear_purge_intent(directory: Path) -> None:
    """A compaction swapped in a copy made after every purge so far: nothing purged is left."""
    path = Path(directory) / PURGE_INTENT
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(Path(directory))


def scrub_derived(directory: Path) -> int:
    """Zero and remove the derived index files beside `data/` (a resumed purge: they may copy the
    purged text, and are rebuilt from the store); how many. Only regular files of ours."""
    root = Path(directory) / DERIVED_DIRNAME
    if root.is_symlink() or not root.is_dir():
        return 0
    removed = 0
    for entry in root.iterdir():
        if entry.is_symlink() or not entry.is_file():
            continue
        _zero_file(entry)
        entry.unlink(missing_ok=True)
        removed += 1
    fsync_dir(root)
    return removed


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            os.chmod(path, 0o600)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.chmod(dirpath, 0o700)
        fsync_dir(Path(dirpath))


def _scrub_tree(root: Path) -> None:
    """Overwrite every file with zeros before deleting it: on most filesystems this also
    clears the blocks the old values were in (an SSD may keep remapped copies).

    Only what engram wrote is zeroed: a link (to anywhere) is removed, never followed; a
    file owned by someone else or with other hard links is only unlinked."""
    if root.is_symlink() or not root.is_dir():
        _remove_tree(root)
        return
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            _zero_file(Path(dirpath) / name)
    _remove_tree(root)


def _zero_file(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:
        return  # a link, or gone: nothing of ours to zero
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_nlink != 1:
            return
        chunk, left = b"\0" * (1 << 20), st.st_size
        while left > 0:
            left -= os.write(fd, chunk[: min(left, len(chunk))])
        os.fsync(fd)
    except OSError as exc:
        log.warning("could not scrub %s: %s", path, exc)
    finally:
        os.close(fd)


def _remove_tree(root: Path) -> None:
    if root.is_symlink():
        root.unlink()
    elif root.exists():
        shutil.rmtree(root)


def data_bytes(directory: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(directory / "data"):
        for name in files:
            try:
                total += (Path(dirpath) / name).stat().st_size
            except OSError:
                pass
    return total
