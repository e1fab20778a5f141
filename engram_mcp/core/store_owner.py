"""Whose project store this is: one engram made in this project for this user, or one that came
with the project.

A project's store lives in the project (`<project>/.claude/engram/`), so whatever delivers the
project can deliver a store with it: an archive or a copy (no git to say it is tracked), a
template, a devcontainer image. Such a store's memories would be shown as the user's own, from
the first session start. So each project store carries a mark only this user's engram can
write: `owner` holds a random store id and an HMAC of it under a key kept in the user directory
(`store-key`, 0600), which no repository reaches. A store with a mark that does not verify, or
with memories and no mark, is refused before anything in it is read (`UnsafePath`); a new store
gets its mark before its first write. The mark names no path, so a project the user moves or
renames keeps its store.

Stores written before marks existed have none. The key file records when it was made, and
whether this user's engram had run before (a user store with data); a store without a mark whose
data directory last changed before then is this user's old store and gets its mark. Unpacking
an archive sets every directory's change time to the moment of unpacking (tar restores
modification times only), so a store that arrives later is refused whatever dates it carries.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from engram_mcp.core.paths import (
    DATA_DIRNAME,
    STORE_FILE_MODE,
    UnsafePath,
    make_private_dirs,
    open_private_dir,
    project_dir,
)

#: In the user directory: the key, and when this user's stores were all made by engram.
KEY_FILE = "store-key"
#: In a project store: its id and the id's HMAC under the key.
OWNER_FILE = "owner"
_OWNER_FORMAT = "engram-store-owner v1"
#: What a store holds before its first write (`prepare_store_dir` and the engine's lock).
_FRESH_ENTRIES = frozenset({".gitignore", "LOCK", DATA_DIRNAME, OWNER_FILE})
_MAX_FILE_BYTES = 512
_NOFOLLOW_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class StoreOwner:
    """This user's key, and the time before which a store without a mark is theirs (0: none is)."""

    key: bytes
    legacy_before: float

    def claim(self, store_fd: int, shown: Path) -> None:
        """Return when the store open at `store_fd` is this user's (marking a new or an old one);
        raise `UnsafePath` when it came from elsewhere."""
        mark = _read_small(store_fd, OWNER_FILE, shown)
        if mark is not None:
            if not self._verifies(mark):
                raise _foreign(shown, "carries another engram's owner mark")
            return
        if not _is_fresh(store_fd) and not self._is_old_store(store_fd):
            raise _foreign(shown, "holds memories engram did not write here for you")
        self._mark(store_fd, shown)

    def owns(self, store_dir: Path) -> bool:
        """Whether the store at `store_dir` carries this user's mark (no side effects: for reading
        its index file before the store is opened and claimed)."""
        try:
            fd = os.open(store_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            mark = _read_small(fd, OWNER_FILE, Path(store_dir))
        except UnsafePath:
            return False
        finally:
            os.close(fd)
        return mark is not None and self._verifies(mark)

    def _verifies(self, mark: str) -> bool:
        head, _sep, rest = mark.strip().rpartition(" ")
        prefix, _sep, store_id = head.rpartition(" ")
        return prefix == _OWNER_FORMAT and hmac.compare_digest(rest, self._sign(store_id))

    def _sign(self, store_id: str) -> str:
        return hmac.new(self.key, store_id.encode("ascii", "replace"), hashlib.sha256).hexdigest()

    def _is_old_store(self, store_fd: int) -> bool:
        try:
            st = os.stat(DATA_DIRNAME, dir_fd=store_fd, follow_symlinks=False)
        except OSError:
            return False
        return st.st_ctime < self.legacy_before

    def _mark(self, store_fd: int, shown: Path) -> None:
        store_id = secrets.token_hex(16)
        text = f"{_OWNER_FORMAT} {store_id} {self._sign(store_id)}\n"
        try:
            fd = os.open(
                OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, STORE_FILE_MODE, dir_fd=store_fd
            )
        except FileExistsError:  # another process marked it meanwhile: it must verify
            mark = _read_small(store_fd, OWNER_FILE, shown)
            if mark is None or not self._verifies(mark):
                raise _foreign(shown, "carries another engram's owner mark") from None
            return
        try:
            os.fchmod(fd, STORE_FILE_MODE)
            os.write(fd, text.encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)


def adopt(user_dir: Path, project_root: Path) -> Path:
    """Mark the store of `project_root` as this user's, whatever it holds: for a store the user
    knows is theirs (restored from a backup, carried over from another machine), on their word
    (`engram adopt-store`). Returns the store's path; `UnsafePath` for a link, a store git tracks,
    or no store."""
    store = project_dir(project_root)
    if not os.path.lexists(store):
        raise UnsafePath(
            store,
            "does not exist",
            "run engram in the project first; it creates the store itself",
            explain="there is no project store to adopt",
        )
    owner = load(user_dir)
    fd, checked = open_private_dir(store, trusted=Path(project_root))
    try:
        try:
            os.unlink(OWNER_FILE, dir_fd=fd)
        except FileNotFoundError:
            pass
        owner._mark(fd, checked)
    finally:
        os.close(fd)
    return checked


def load(user_dir: Path) -> StoreOwner:
    """This user's key (made on first use, with when this user's existing stores were made)."""
    path = Path(user_dir) / KEY_FILE
    text = _read_key(path)
    if text is None:
        legacy_before = time.time() if _has_data(Path(user_dir)) else 0.0
        make_private_dirs(Path(user_dir))
        _make_key(path, legacy_before=legacy_before)
        text = _read_key(path)
    if text is None:
        raise UnsafePath(
            path, "cannot be read or written", explain="engram keeps the key marking your project stores there"
        )
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    try:
        return StoreOwner(bytes.fromhex(fields["key"]), float(fields.get("legacy_before", "0")))
    except (KeyError, ValueError):
        raise UnsafePath(path, "is not an engram store key", fix=f"delete {path}; engram makes a new one") from None


def _make_key(path: Path, *, legacy_before: float) -> None:
    text = f"key={secrets.token_hex(32)}\nlegacy_before={legacy_before:.3f}\n"
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, STORE_FILE_MODE)
    try:
        os.fchmod(fd, STORE_FILE_MODE)
        os.write(fd, text.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # the first process's key wins; a second one reads it
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


def _read_key(path: Path) -> str | None:
    try:
        fd = os.open(path, _NOFOLLOW_READ)
    except FileNotFoundError:
        return None
    try:
        return os.read(fd, 4096).decode("ascii", "replace")
    finally:
        os.close(fd)


def _has_data(user_dir: Path) -> bool:
    try:
        return any(os.scandir(user_dir / DATA_DIRNAME))
    except OSError:
        return False


def _read_small(dir_fd: int, name: str, shown: Path) -> str | None:
    try:
        fd = os.open(name, _NOFOLLOW_READ, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError:
        raise _foreign(shown, f"has an {name} entry that is not a regular file") from None
    try:
        return os.read(fd, _MAX_FILE_BYTES).decode("ascii", "replace")
    finally:
        os.close(fd)


def _is_fresh(store_fd: int) -> bool:
    """Nothing but what an empty store holds: no memories, no index, no sync state."""
    try:
        names = set(os.listdir(store_fd))
    except OSError:
        return False
    if not names <= _FRESH_ENTRIES:
        return False
    if DATA_DIRNAME not in names:
        return True
    try:
        st = os.stat(DATA_DIRNAME, dir_fd=store_fd, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            return True  # a link or a file: `prepare_store_dir` refuses it, naming what it is
        data_fd = os.open(DATA_DIRNAME, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=store_fd)
    except OSError:
        return False
    try:
        return not os.listdir(data_fd)
    finally:
        os.close(data_fd)


def _foreign(shown: Path, reason: str) -> UnsafePath:
    return UnsafePath(
        shown,
        reason,
        f"if it came with the project (an archive, a copy, a template), delete or move {shown}: engram then "
        "creates your own store there; if it is yours (restored from a backup), run `engram adopt-store` in the project",
        explain="a project store engram did not make here for you is someone else's text, so engram neither shows "
        "its memories as yours nor changes it",
    )
