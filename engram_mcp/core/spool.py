"""A durable, crash-safe queue of writes waiting for the engram daemon.

Why it exists: two paths must accept a write without waiting for the stores.
  * Hooks (PostToolUse above all) have a ~100 ms budget, and opening SurrealDB or the
    embedding model costs seconds. They append the observation here and return.
  * When a store cannot be opened (locked, corrupt, disk full, permission denied) the
    daemon queues writes here instead of failing them, and applies them when the store
    comes back (see `daemon.Daemon.drain_spool`).

Each entry is one small JSON file, written to a temporary name, fsync'd and renamed into
place, so a reader never sees half an entry and `kill -9` of the writer at any point
leaves either no entry or a whole one. Many writers need no lock: names are ULIDs
(time-ordered, unique). The consumer applies an entry and then deletes it; an entry whose
apply was interrupted is applied again, so every op applied from here is idempotent by
its entry id (`request_id`). Entries that can never apply (invalid input) move to
`rejected/` with the error, so nothing is silently dropped.

Standard library only (imported by hooks under any python3).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from engram_mcp.core.ids import CROCKFORD, ULID_RE
from engram_mcp.core.paths import fsync_dir
from engram_mcp.core.redaction import redact_obj

SPOOL_DIR_NAME = "spool"
REJECTED_DIR_NAME = "rejected"
ENTRY_SUFFIX = ".json"
SPOOL_FORMAT_VERSION = 1
MAX_ENTRY_BYTES = 256 * 1024  # an observation is a few KB; refuse absurd entries early


_id_lock = threading.Lock()
_last_id = [0, 0]  # (milliseconds, random part) of this process's last entry id


def new_entry_id() -> str:
    """A ULID that sorts after every id this process made before, even within one millisecond
    (plain ULIDs are random inside a millisecond, which would break oldest-first order)."""
    with _id_lock:
        ms = int(time.time() * 1000)
        if ms <= _last_id[0]:
            ms, rnd = _last_id[0], _last_id[1] + 1
        else:
            rnd = int.from_bytes(os.urandom(10), "big") >> 1  # headroom for increments
        _last_id[0], _last_id[1] = ms, rnd
    value = (ms << 80) | rnd
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def spool_dir(user_dir: Path) -> Path:
    return Path(user_dir) / SPOOL_DIR_NAME


def _ensure_dir(path: Path) -> Path:
    from engram_mcp.core.paths import make_private_dirs  # every level 0700, whatever the umask

    return make_private_dirs(path)


def enqueue(
    user_dir: Path,
    op: str,
    args: dict[str, Any],
    ctx: dict[str, Any] | None = None,
    *,
    entry_id: str | None = None,
    reason: str | None = None,
) -> str:
    """Durably queue one operation; returns its entry id (also its idempotency key).

    Raises OSError when the entry cannot be written (disk full, read-only) and ValueError
    when it is not one (no op, args not a JSON object, an entry id that is not a ULID, too
    big): the caller decides how to fail open.
    """
    eid = entry_id or new_entry_id()
    if not ULID_RE.match(eid):  # it names a file and becomes a memory key
        raise ValueError(f"spool entry id {eid[:40]!r} is not a ULID")
    if not isinstance(op, str) or not op or not isinstance(args, dict):
        raise ValueError("a spool entry needs an operation name and an args object")
    args = redact_obj(args)[0]  # the spool is on disk: secrets never reach it in clear
    entry = {
        "v": SPOOL_FORMAT_VERSION,
        "id": eid,
        "op": op,
        "args": args,
        "ctx": ctx or {},
        "queued_at": time.time(),
        "reason": reason,
    }
    try:
        data = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"spool entry is not plain JSON: {exc}") from None
    if len(data) > MAX_ENTRY_BYTES:
        raise ValueError(f"spool entry of {len(data)} bytes exceeds {MAX_ENTRY_BYTES}")
    d = _ensure_dir(spool_dir(user_dir))
    tmp = d / f".{eid}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.rename(tmp, d / f"{eid}{ENTRY_SUFFIX}")
    fsync_dir(d)
    return eid


def pending(user_dir: Path) -> list[Path]:
    """Queued entries, oldest first (ULID names sort by time)."""
    d = spool_dir(user_dir)
    try:
        names = [n for n in os.listdir(d) if n.endswith(ENTRY_SUFFIX) and not n.startswith(".")]
    except FileNotFoundError:
        return []
    return [d / n for n in sorted(names)]


def count(user_dir: Path) -> dict[str, int]:
    d = spool_dir(user_dir)
    rejected = d / REJECTED_DIR_NAME
    try:
        n_rejected = sum(1 for n in os.listdir(rejected) if n.endswith(ENTRY_SUFFIX))
    except FileNotFoundError:
        n_rejected = 0
    return {"pending": len(pending(user_dir)), "rejected": n_rejected}


def read(path: Path) -> dict[str, Any] | None:
    """The entry at `path`, or None if it vanished (another consumer took it)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    entry = json.loads(raw)
    if not isinstance(entry, dict) or not isinstance(entry.get("op"), str):
        raise ValueError("not a spool entry")
    return entry


def done(path: Path) -> None:
    path.unlink(missing_ok=True)


def reject(path: Path, error: str) -> Path:
    """Move an entry that can never apply aside, with the error, instead of dropping it."""
    target_dir = _ensure_dir(path.parent / REJECTED_DIR_NAME)
    target = target_dir / path.name
    try:
        entry = json.loads(path.read_bytes())
        if not isinstance(entry, dict):
            entry = {"raw": entry}
    except (OSError, ValueError):
        entry = {"raw": path.read_bytes().decode("utf-8", "replace") if path.exists() else None}
    entry["rejected_error"] = error[:2000]
    entry["rejected_at"] = time.time()
    tmp = target_dir / f".{path.name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(entry, ensure_ascii=False).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, target)
    path.unlink(missing_ok=True)
    return target


def queued_answer(entry_id: str, cause_code: str, message: str, *, keyed: bool) -> dict[str, Any]:
    """The answer to a write that was queued instead of applied (accepted, not yet stored).

    `keyed` ops become a memory whose id is the entry id once applied (unless the memory
    merges into a near-duplicate), so the caller can refer to it already.
    """
    result: dict[str, Any] = {
        "queued": True,
        "degraded": True,
        "action": "queued",
        "queue_id": entry_id,
        "cause": cause_code,
        "warnings": [{"code": "queued", "message": message}],
    }
    if keyed:
        result["memory_id"] = f"memory:{entry_id}"
    return result
