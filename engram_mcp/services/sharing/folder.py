"""Reading and writing a folder of memory files without ever following a link.

A shared folder lives in a repository, which is untrusted: it can commit the folder, or a
file in it, as a symbolic link pointing anywhere. So every level is opened by descriptor
with O_NOFOLLOW (core.paths), files are read only when they are regular files of bounded
size, and writes replace a file atomically (temp file + rename) inside the checked
directory. A folder that does not exist is not created by a read: a session start in a
project without shared memory must leave no trace in it.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_mcp.core.paths import open_dir_at, open_private_dir, write_private_file_at

from .memory_file import MAX_FILE_BYTES

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass
class FileText:
    """One `.md` file of the folder: its text, or why it could not be read."""

    name: str
    text: str | None
    error: str | None = None


class Folder:
    """A directory of memory files below a trusted root (the project, or the user's chosen DIR)."""

    def __init__(self, path: Path, trusted: Path) -> None:
        self.path = Path(path)
        self.trusted = Path(trusted)

    def _open(self, *, create: bool) -> int | None:
        """A descriptor of the folder (the caller closes it), or None when it does not exist."""
        if create:
            fd, _checked = open_private_dir(self.path, trusted=self.trusted)
            return fd
        try:
            fd = os.open(os.path.realpath(self.trusted), _DIR_FLAGS)
        except FileNotFoundError:
            return None
        shown = Path(os.path.realpath(self.trusted))
        try:
            for part in self.path.relative_to(self.trusted).parts:
                shown = shown / part
                try:
                    child, _created = open_dir_at(fd, part, shown, create=False)
                except FileNotFoundError:
                    os.close(fd)
                    return None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read_all(self) -> list[FileText]:
        """Every `*.md` file directly in the folder, sorted by name; unreadable ones with a reason."""
        fd = self._open(create=False)
        if fd is None:
            return []
        try:
            names = sorted(n for n in os.listdir(fd) if n.endswith(".md") and not n.startswith("."))
            return [self._read_one(fd, n) for n in names]
        finally:
            os.close(fd)

    @staticmethod
    def _read_one(dir_fd: int, name: str) -> FileText:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            return FileText(name, None, f"cannot be opened ({exc.strerror}; a symbolic link is never followed)")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return FileText(name, None, "is not a regular file")
            if st.st_size > MAX_FILE_BYTES:
                return FileText(name, None, f"is {st.st_size} bytes; a memory file is at most {MAX_FILE_BYTES}")
            with os.fdopen(os.dup(fd), "rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        finally:
            os.close(fd)
        try:
            return FileText(name, raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return FileText(name, None, f"is not UTF-8 text (byte {exc.start})")

    def write(self, name: str, text: str) -> None:
        """Create or replace `name` atomically (creating the folder if needed)."""
        fd, _checked = open_private_dir(self.path, trusted=self.trusted)
        try:
            write_private_file_at(fd, name, text)
        finally:
            os.close(fd)

    def delete(self, name: str) -> bool:
        """Remove `name` if present (a link is removed, never followed)."""
        fd = self._open(create=False)
        if fd is None:
            return False
        try:
            os.unlink(name, dir_fd=fd)
            return True
        except FileNotFoundError:
            return False
        finally:
            os.close(fd)


class StateFile:
    """What the last sync saw, per shared memory: the three-way merge's common base.

    Kept beside the store (git-ignored), never in the shared folder: it is this machine's
    view. Losing it is safe: the next sync treats every file as new, and adding what is
    already there is a no-op (ids are kept, duplicates are merged).
    """

    VERSION = 1

    def __init__(self, directory: Path, trusted: Path, name: str) -> None:
        self.directory, self.trusted, self.name = Path(directory), Path(trusted), name

    def load(self) -> dict[str, dict[str, Any]]:
        path = self.directory / self.name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (FileNotFoundError, OSError):
            return {}
        try:
            with os.fdopen(fd, "r", encoding="utf-8") as f:
                data = json.load(f)
        except (ValueError, OSError):
            return {}
        entries = data.get("entries") if isinstance(data, dict) else None
        return {k: v for k, v in (entries or {}).items() if isinstance(v, dict)}

    def save(self, entries: dict[str, dict[str, Any]]) -> None:
        fd, _checked = open_private_dir(self.directory, trusted=self.trusted)
        try:
            text = json.dumps({"version": self.VERSION, "entries": entries}, sort_keys=True, indent=1)
            write_private_file_at(fd, self.name, text)
        finally:
            os.close(fd)
