"""The engine files a crash can leave without their header, and their removal.

SurrealKV, the embedded engine, starts each commit-log segment (`data/clog/*.clog`) and each
manifest (`data/manifest/*.manifest`) with a header: a 4-byte big-endian length, then that
many bytes of options. A process killed after creating such a file and before writing its
header leaves it shorter than the header. Then the engine refuses the whole store ("failed to
fill whole buffer") at every later open. This was measured: kill -9 while a new project store
was being created left an empty `.clog`, and the store stayed shut until it was repaired by hand.

No record can come before a header, so such a file holds nothing. Removing it loses nothing,
and the engine writes a new one. Only the newest file of each kind can be in that state, since
the engine creates the next file only after the one before it is complete. The repair runs
only after the engine has refused a store for a short read (`refused_for_short_read`), and it
touches nothing else: a file whose header is whole stays as it is, and so does the refusal.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from engram_mcp.core.paths import DATA_DIRNAME, NOFOLLOW_FILE_FLAGS, open_dir_at

#: The engine's files that start with a header, by directory under `data/`.
HEADED_FILES = (("clog", ".clog"), ("manifest", ".manifest"))
HEADER_LENGTH_BYTES = 4  # the big-endian length in front of the header's options
#: A header the engine writes is ~170 bytes. A first length beyond this is not a header this
#: module knows (damage, or another format), so its file is never taken for a torn one.
MAX_HEADER_BYTES = 4096
#: The engine's words when a read ends before the bytes it expects.
SHORT_READ_MARKERS = ("failed to fill whole buffer", "unexpected end of file")


def refused_for_short_read(exc: BaseException) -> bool:
    """Whether the engine refused to open because a read ended early (what a torn header gives)."""
    text = str(exc).lower()
    return any(m in text for m in SHORT_READ_MARKERS)


def drop_torn_heads(store_fd: int, shown: Path) -> list[Path]:
    """Remove the newest clog segment and manifest when either is shorter than its header.

    `store_fd` is the store directory, already locked and vetted (no links, ours). Each step
    goes by descriptor and never follows a link. Returns the paths removed, for the log.
    """
    removed: list[Path] = []
    data_fd = _open_dir(store_fd, DATA_DIRNAME, shown / DATA_DIRNAME)
    if data_fd is None:
        return removed
    try:
        for sub, suffix in HEADED_FILES:
            sub_fd = _open_dir(data_fd, sub, shown / DATA_DIRNAME / sub)
            if sub_fd is None:
                continue
            try:
                name = _newest(sub_fd, suffix)
                if name is not None and _header_torn(sub_fd, name):
                    os.unlink(name, dir_fd=sub_fd)
                    os.fsync(sub_fd)
                    removed.append(shown / DATA_DIRNAME / sub / name)
            finally:
                os.close(sub_fd)
    finally:
        os.close(data_fd)
    return removed


def _open_dir(parent_fd: int, name: str, shown: Path) -> int | None:
    """`paths.open_dir_at` (never through a link, ours), or None when the engine has not made it."""
    try:
        return open_dir_at(parent_fd, name, shown, create=False)[0]
    except FileNotFoundError:
        return None


def _newest(dir_fd: int, suffix: str) -> str | None:
    """The file the engine wrote last: its names are zero-padded counters, so the greatest."""
    names = sorted(n for n in os.listdir(dir_fd) if n.endswith(suffix) and not n.startswith("."))
    return names[-1] if names else None


def _header_torn(dir_fd: int, name: str) -> bool:
    """Whether a regular file is shorter than the header its first bytes declare (a header of a
    plausible length: a file with records is never removed for a damaged first length)."""
    fd = os.open(name, NOFOLLOW_FILE_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        head = os.pread(fd, HEADER_LENGTH_BYTES, 0)
    finally:
        os.close(fd)
    if len(head) < HEADER_LENGTH_BYTES:
        return True
    declared = int.from_bytes(head, "big")
    return declared <= MAX_HEADER_BYTES and st.st_size < HEADER_LENGTH_BYTES + declared
