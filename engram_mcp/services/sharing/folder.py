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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_mcp.core.paths import open_dir_at, open_private_dir, write_private_file_at

from .memory_file import MAX_FILE_BYTES

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
#: Names listed at most: a folder of a million files must not make a listing take seconds.
MAX_FOLDER_FILES = 20_000


@dataclass
class Reading:
    """What one bounded read of the folder got: the files read, and the names left unread
    (time or byte budget spent) for the next sync, which must not take them for deletions."""

    files: list["FileText"] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    too_many: bool = False  # more than MAX_FOLDER_FILES names: the rest were never listed


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
        return self.read_within().files

    def read_within(self, *, deadline: float | None = None, max_total_bytes: int | None = None) -> Reading:
        """The `*.md` files in name order, stopping before a file once `deadline` (monotonic)
        has passed or `max_total_bytes` were read: a session start reads what its budget
        allows, checked per file and before any parse, and the rest is listed as unread."""
        out = Reading()
        fd = self._open(create=False)
        if fd is None:
            return out
        try:
            names = self._names(fd, out)
            spent = 0
            for i, name in enumerate(names):
                if (deadline is not None and time.monotonic() >= deadline) or (
                    max_total_bytes is not None and spent >= max_total_bytes
                ):
                    out.unread = names[i:]
                    break
                ft = self._read_one(fd, name)
                spent += len(ft.text or "")
                out.files.append(ft)
            return out
        finally:
            os.close(fd)

    @staticmethod
    def _names(fd: int, out: Reading) -> list[str]:
        names: list[str] = []
        with os.scandir(fd) as it:
            for entry in it:
                if entry.name.endswith(".md") and not entry.name.startswith("."):
                    if len(names) >= MAX_FOLDER_FILES:
                        out.too_many = True
                        break
                    names.append(entry.name)
        return sorted(names)

    @staticmethod
    def _read_one(dir_fd: int, name: str) -> FileText:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes (surrogates) must not travel into reports and JSON
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            return FileText(shown, None, "has a file name that is not UTF-8; rename it")
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as exc:
            return FileText(name, None, f"cannot be opened ({exc.strerror}; a symbolic link is never followed)")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return FileText(name, None, "is not a regular file")
            if st.st_nlink != 1:  # git and the sync tools write files of one name; a second name is a planted one
                return FileText(
                    name, None, "has another name on this disk (a hard link); engram reads a file with one name only"
                )
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
