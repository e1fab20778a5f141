"""Where engram keeps things, and how it keeps them private.

Project root = the nearest ancestor (of the realpath of the working directory) that
holds a `.git` entry, else the working directory itself. A `.git` *file* marks a git
worktree or submodule checkout: each worktree is its own project with its own store,
because its files (and so what is true about them) can differ from the main checkout.
Resolving realpath first makes symlinked and relative paths to one project map to one
store. We walk the tree instead of running `git` because hooks have a ~100 ms budget.

Stores are directories created 0700 with files 0600, and each store directory holds a
`.gitignore` containing `*` so the project store never reaches git without touching
the user's own `.gitignore`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .ids import project_db_name

STORE_DIR_MODE = 0o700
STORE_FILE_MODE = 0o600
ENGRAM_DIRNAME = "engram"


def resolve_project_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The project root for a working directory (see module docstring)."""
    env_root = os.environ.get("ENGRAM_PROJECT_ROOT")
    start = Path(env_root if (cwd is None and env_root) else (cwd or os.getcwd()))
    real = Path(os.path.realpath(start))
    probe = real
    while True:
        if (probe / ".git").exists():
            return probe
        if probe.parent == probe:
            return real
        probe = probe.parent


def project_id(project_root: Path) -> str:
    """The SurrealDB database name of a project (`p_<hash>`)."""
    return project_db_name(os.path.realpath(project_root))


def user_dir(home: Path | None = None) -> Path:
    """The user store directory: `$ENGRAM_HOME` or `~/.claude/engram`."""
    env = os.environ.get("ENGRAM_HOME")
    if env and home is None:
        return Path(env).expanduser()
    return (home or Path.home()) / ".claude" / ENGRAM_DIRNAME


def project_dir(project_root: Path) -> Path:
    """The project store directory: `<project>/.claude/engram`."""
    return Path(project_root) / ".claude" / ENGRAM_DIRNAME


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) and make it 0700; keep it out of git."""
    path.mkdir(parents=True, exist_ok=True, mode=STORE_DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) != STORE_DIR_MODE:
        path.chmod(STORE_DIR_MODE)
    ignore = path / ".gitignore"
    if not ignore.exists():
        write_private_file(ignore, "# engram memory store: personal, never committed\n*\n")
    return path


def write_private_file(path: Path, text: str) -> None:
    """Write a 0600 file atomically (temp file + rename): readers never see half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, STORE_FILE_MODE)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def tighten_tree(path: Path) -> None:
    """Make every directory 0700 and every file 0600 below `path`.

    The storage engine creates its own files with the process umask; we run this
    after opening a store so nothing in it is readable by other local users.
    """
    if not path.exists():
        return
    for root, dirs, files in os.walk(path):
        for name in dirs:
            _chmod_quiet(Path(root) / name, STORE_DIR_MODE)
        for name in files:
            _chmod_quiet(Path(root) / name, STORE_FILE_MODE)
    _chmod_quiet(path, STORE_DIR_MODE)


def _chmod_quiet(p: Path, mode: int) -> None:
    try:
        if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) != mode:
            p.chmod(mode)
    except OSError:
        pass


def lock_held(path: Path) -> bool:
    """Whether another process holds an exclusive flock on `path` (a running daemon or build).

    Takes a shared lock without waiting and lets it go at once; a missing file is "not held".
    """
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases our shared lock, if we got it
    return False


def dir_bytes(path: Path) -> int:
    """Bytes of the files below `path` (files that vanish meanwhile count as 0)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
