"""Opening a source file safely: regular files only, never a link, never a wait.

A FIFO named `notes.md` would block `open()` forever (no writer ever comes), a device or
socket is no note, and a symlink may point anywhere on the machine. So the path is checked
with `lstat` first, then opened with O_NONBLOCK|O_NOFOLLOW (a FIFO swapped in between the check
and the open neither blocks nor is followed), and the opened descriptor is checked again.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import IO

MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024  # a JSONL graph or a note folder's file; more is not a memory source


class NotRegular(ValueError):
    """The path is not a regular file (a FIFO, device, socket, folder or link)."""


def check_regular(path: Path) -> os.stat_result:
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegular(f"{path.name} is not a regular file ({_kind(st.st_mode)}); left out")
    return st


def open_regular(path: Path, *, max_bytes: int = MAX_SOURCE_FILE_BYTES) -> IO[str]:
    """The file opened for reading as UTF-8 text (undecodable bytes replaced)."""
    return io.TextIOWrapper(open_regular_binary(path, max_bytes=max_bytes), encoding="utf-8", errors="replace")


def open_regular_binary(path: Path, *, max_bytes: int = MAX_SOURCE_FILE_BYTES) -> IO[bytes]:
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{path.name} is not a regular file ({_kind(st.st_mode)}); left out")
        if st.st_size > max_bytes:
            raise NotRegular(f"{path.name} is {st.st_size} bytes; files over {max_bytes} are left out")
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_text(path: Path, *, max_bytes: int) -> tuple[str, os.stat_result]:
    """A regular file's whole text (strict UTF-8) and its stat (for its dates)."""
    with open_regular_binary(path, max_bytes=max_bytes) as f:
        st = os.fstat(f.fileno())
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotRegular(f"{path.name} is over {max_bytes} bytes; left out")
    return data.decode("utf-8"), st


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a file"
