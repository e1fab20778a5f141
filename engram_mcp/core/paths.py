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

A repository is untrusted input: it can commit `.claude`, `.claude/engram` or anything
inside it as a symbolic link to any directory of the user's. So below the *trusted* part of
a store path (the project root, or the user directory's parent, both chosen by the user)
every level is opened one at a time relative to its parent's descriptor, never through a
link (`O_NOFOLLOW | O_DIRECTORY`), and must be a real directory owned by this user; anything
else is refused with `UnsafePath`, naming the path, why, and what to do. Modes are set only
on what engram creates (explicitly, so the umask never decides) and on what the engine
creates under `data/`; nothing is ever changed through a link or outside the store.

A repository can also commit a whole store at `.claude/engram/` (adopted when a clone lands
at the path it was built at, as in devcontainers and CI: its memories would pass for the
user's own, and engram would then modify tracked files). A project store directory holding
any file git tracks is refused the same way (`UnsafePath`), before anything in it is opened.
Whether git tracks a path is asked of `git ls-files` (`git_tracked`), which knows every index
format, worktrees and split indexes; it costs 3-10 ms and is cached per repository index stamp.
A repository's `.git` is untrusted input too (an unpacked archive keeps FIFOs and links): git is
not asked when its `.git` entry is neither a regular file nor a directory or its index is no
regular file (git would wait on a FIFO until its timeout), and what engram reads of `.git` itself
is read like any repository file, never through a link, never waiting, a regular file only and
bounded in size (`_read_git_file`); whatever fails that leaves tracking undetermined.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

from engram_mcp.core.ids import project_db_name

STORE_DIR_MODE = 0o700
STORE_FILE_MODE = 0o600
ENGRAM_DIRNAME = "engram"
DATA_DIRNAME = "data"
GITIGNORE_TEXT = "# engram memory store: personal, never committed\n*\n"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW_DIR_FLAGS = _DIR_FLAGS | os.O_NOFOLLOW
#: Opening a file only to read or fix its mode: never through a link, never blocking on a FIFO.
NOFOLLOW_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_LINK_TARGET_SHOWN_CHARS = 80  # the target is the repository's text: named, not echoed at length
#: A `git ls-files` of one path answers in 3-10 ms; past this something is wrong (a hung
#: network file system): tracking is then undetermined, and callers fail safe.
GIT_TIMEOUT_SECONDS = 5.0
#: Bytes of a `.git` file (worktree or submodule checkout) read to find its git directory.
_GIT_FILE_MAX_BYTES = 4096
_GIT_CONFIG_MAX_BYTES = 256 * 1024  # a repository's config; larger ones are not searched for includes
#: The largest git index (or shared part of a split index) engram reads itself when git cannot
#: answer: an entry takes ~70 bytes plus its path, so this is millions of files. A larger one is
#: not read (nor is a link, FIFO or device), and tracking is then undetermined.
_GIT_INDEX_MAX_BYTES = 256 * 1024 * 1024
#: Variables that would point git at another repository or index than the project's own.
_GIT_REDIRECT_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
)


class UnsafePath(Exception):
    """A path engram would create or open is not a real directory/file of this user's.

    `message` names the path, why it is refused and what to do; engram then works without
    it (a store is reported unavailable, writes are queued; a config file is ignored).
    """

    def __init__(self, path: Path | str, reason: str, fix: str | None = None, *, explain: str | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.fix = fix or f"remove or rename {self.path}; engram then creates what it needs there itself"
        explain = explain or (
            "engram only uses a real directory (or file) owned by you there, so it never writes or changes "
            "permissions through a link a repository may have committed"
        )
        self.message = f"{self.path} {reason}; {explain}. Fix: {self.fix}"
        super().__init__(self.message)


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


# ---------------------------------------------------------------------- private directories
def fsync_dir(directory: Path) -> None:
    """Make a rename or a new entry in `directory` durable: an fsync of the file alone is not."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_private_dirs(path: Path) -> Path:
    """Create `path` and its missing parents, each exactly 0700 whatever the umask.

    For paths the user chose (the user directory, its logs and queue): existing levels are
    used as they are, links included. `Path.mkdir(parents=True, mode=...)` would create the
    parents with the umask's mode (0777 under umask 000), hence one level at a time.
    """
    path = Path(path)
    missing: list[Path] = []
    probe = path
    while not os.path.lexists(probe) and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, STORE_DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else (another engram process): not ours to chmod
        _set_mode_nofollow(directory, STORE_DIR_MODE)
    return path


def rotate_log(log: Path, max_bytes: int) -> None:
    """Move `log` to `<log>.1` (replacing the one before) once it holds `max_bytes` or more, so
    the next write begins a new file: a log and its predecessor are all engram keeps, and nothing
    else ever trims them. Only a regular file moves (never a link placed there). Writers that
    race each rename it once; the second's `.1` then holds the few lines in between, and an old
    line lost beats a file that grows for as long as engram is installed."""
    try:
        st = os.lstat(log)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_size >= max_bytes:
        try:
            os.replace(log, log.with_name(log.name + ".1"))
        except OSError:
            pass


def _set_mode_nofollow(path: Path, mode: int) -> None:
    """chmod a directory engram just created, through a descriptor opened without following links."""
    fd = os.open(path, _NOFOLLOW_DIR_FLAGS)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def describe(path: Path | str, *, dir_fd: int | None = None, name: str | None = None) -> str:
    """What is at a path, in words, without following it (for refusal messages)."""
    try:
        st = os.stat(name if name is not None else path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name if name is not None else path, dir_fd=dir_fd)
        except OSError:
            target = "?"
        return f"is a symbolic link (to {target[:_LINK_TARGET_SHOWN_CHARS]!r})"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if stat.S_ISREG(st.st_mode):
        return "is a regular file"
    return "is a special file (fifo, socket or device)"


def _check_owner(fd: int, shown: Path | str) -> os.stat_result:
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        raise UnsafePath(shown, f"is owned by uid {st.st_uid}, not by you (uid {os.getuid()})")
    return st


def open_dir_at(parent_fd: int, name: str, shown: Path | str, *, create: bool) -> tuple[int, bool]:
    """A descriptor of directory `name` inside `parent_fd`, never reached through a link.

    Created 0700 when missing (and `create`); else it must be a real directory owned by
    this user. Returns (fd, created); the caller closes fd.
    """
    created = False
    if create:
        try:
            os.mkdir(name, STORE_DIR_MODE, dir_fd=parent_fd)
            created = True
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _NOFOLLOW_DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafePath(shown, describe(shown, dir_fd=parent_fd, name=name) + ", not a directory") from None
        raise
    try:
        st = _check_owner(fd, shown)
        if created and stat.S_IMODE(st.st_mode) != STORE_DIR_MODE:
            os.fchmod(fd, STORE_DIR_MODE)  # mkdir's mode is masked by the umask
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def open_private_dir(path: Path, *, trusted: Path) -> tuple[int, Path]:
    """Open (creating as needed) the directory `path` below the `trusted` ancestor.

    `trusted` is the part the user chose (a project root, the user directory's parent): it
    is created 0700 if missing and followed as it is. Every level below it is opened with
    `open_dir_at` (no links, owned by this user). A project store git tracks files of is
    refused here, so no writer (the store, sync's state file) ever reaches into it. Returns (fd of `path`, its checked path,
    with `trusted` resolved); the caller closes fd.
    """
    path, trusted = Path(path), Path(trusted)
    parts = path.relative_to(trusted).parts
    if parts[:2] == (".claude", ENGRAM_DIRNAME):  # a project's store, or a file engram keeps in it
        refuse_tracked_store(trusted / ".claude" / ENGRAM_DIRNAME, trusted)
    make_private_dirs(trusted)
    shown = Path(os.path.realpath(trusted))
    fd = os.open(shown, _DIR_FLAGS)
    try:
        for part in parts:
            shown = shown / part
            child, _created = open_dir_at(fd, part, shown, create=True)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, shown


def _store_trust_split(path: Path, trusted: Path | None) -> tuple[Path, Path]:
    """(path, trusted ancestor): without one given, the resolved parent of the resolved path."""
    if trusted is not None:
        return Path(path), Path(trusted)
    real = Path(os.path.realpath(path))
    return real, real.parent


def prepare_store_dir(path: Path, *, trusted: Path | None = None, owner: Any = None) -> tuple[int, Path]:
    """Make `path` a usable store directory: real, owned by this user, with `.gitignore` and `data/`.

    Returns (fd of the store directory, its checked path); raises `UnsafePath` for a link or
    a foreign entry at any level below `trusted`, for a project store git tracks files of
    (`refuse_tracked_store`), or for one `owner` (a project store's `store_owner.StoreOwner`)
    does not claim; OSError for what the system refuses.
    """
    path, trusted = _store_trust_split(path, trusted)
    fd, checked = open_private_dir(path, trusted=trusted)
    try:
        if owner is not None:
            try:
                owner.claim(fd, checked)  # before anything is written or read in it
            except UnsafePath:
                refuse_unsafe_entries(fd, checked)  # a link in it is named first: the more exact reason
                raise
        if not _exists_at(fd, ".gitignore"):
            write_private_file_at(fd, ".gitignore", GITIGNORE_TEXT)
        data_fd, _created = open_dir_at(fd, DATA_DIRNAME, checked / DATA_DIRNAME, create=True)
        os.close(data_fd)
    except BaseException:
        os.close(fd)
        raise
    return fd, checked


def refuse_tracked_store(path: Path, trusted: Path) -> None:
    """Raise `UnsafePath` when `path` is a project's store directory git tracks files of
    (`store_is_tracked`): a committed store is the repository's content, so it is never opened
    (its memories would be shown as the user's own) and never modified (engram would rewrite
    tracked files). Refused before anything in it is read, like a link."""
    if store_is_tracked(path, trusted):
        relative = Path(path).relative_to(trusted).as_posix()
        raise UnsafePath(
            path,
            "holds files tracked by git",
            f"remove it from the repository (git rm -r -q --cached {relative} && git commit), or delete the "
            "directory; engram then creates your own store there, which git ignores",
            explain="a store committed to the repository is the repository's content, not your memory, so engram "
            "neither reads nor changes it",
        )


def store_is_tracked(path: Path, trusted: Path) -> bool:
    """Whether `path` is a project's store directory (`<trusted>/.claude/engram`, `trusted` the
    project root) holding a file git tracks. When git cannot say (no git binary and an index it
    cannot read, a repository git refuses), an existing store is used as before: refusing would
    take every user without a working git off their own memory, and a committed store needs a
    repository git can read to be cloned at all.

    The user store is never checked: its place is the user's choice, and a dotfiles repository
    that tracks it does so because the user said so."""
    path, trusted = Path(path), Path(trusted)
    try:
        parts = path.relative_to(trusted).parts
    except ValueError:
        return False
    if parts != (".claude", ENGRAM_DIRNAME) or not os.path.lexists(path):
        return False
    return git_tracked(trusted, f".claude/{ENGRAM_DIRNAME}") is True


# ---------------------------------------------------------------------- git tracking
_tracked_cache: dict[tuple[str, str], tuple[tuple[int, int, int], bool]] = {}
_tracked_lock = threading.Lock()


def git_tracked(root: Path, relpath: str) -> bool | None:
    """Whether git tracks `relpath` (a file, or any file below a directory) under `root`.

    Asked in the repository nearest to the path, not to `root`: a repository can make
    `.claude` a submodule, whose files the project's own index does not list. False when the
    path is in no git repository (no `.git` entry at or above it); None when it is in one but
    tracking cannot be determined (no git binary and no readable index, git refusing the
    repository, a timeout, a `.git` entry or index that is no regular file or directory, such
    as a FIFO an unpacked archive kept): callers treat that as tracked where trusting the file
    could move private data, and say so. Cached per path until that repository's index changes (its
    inode, size or mtime), so the daemon's config reloads stay cheap.
    """
    target = Path(os.path.realpath(root)) / relpath
    where = target if os.path.isdir(target) and not os.path.islink(target) else target.parent
    while not os.path.isdir(where) and where.parent != where:
        where = where.parent
    pathspec = os.path.relpath(target, where)
    found = _find_git_entry(where)
    if found is None:
        return False
    repo_root, git_dir = found
    stamp = _index_stamp(git_dir)
    key = (str(where), pathspec)
    with _tracked_lock:
        cached = _tracked_cache.get(key)
    if stamp is not None and cached is not None and cached[0] == stamp:
        return cached[1]
    if not _git_can_be_asked(repo_root, git_dir):
        return None  # git would wait on a FIFO (holding the daemon's lock) or read a device
    answer = _ask_git(where, pathspec)
    if answer is None and git_dir is not None:
        answer = _index_names(git_dir, target.relative_to(repo_root).as_posix())
    if answer is not None and stamp is not None:
        with _tracked_lock:
            _tracked_cache[key] = (stamp, answer)
    return answer


def in_git_repository(path: Path) -> bool:
    """Whether `path` (resolved) is at or below a directory holding a `.git` entry."""
    return _find_git_entry(Path(os.path.realpath(path))) is not None


def _find_git_entry(root: Path) -> tuple[Path, Path | None] | None:
    """(repository top, its git directory or None when a `.git` file cannot be read), or None."""
    probe = root
    while True:
        entry = probe / ".git"
        if os.path.isdir(entry) and not os.path.islink(entry):
            return probe, entry
        if os.path.lexists(entry):
            return probe, _git_dir_of_file(entry)
        if probe.parent == probe:
            return None
        probe = probe.parent


def _git_dir_of_file(entry: Path) -> Path | None:
    """The directory a `.git` file (`gitdir: <path>`) of a worktree or submodule names (None
    when it cannot be read: a link, a FIFO, no such text)."""
    try:
        data = _read_git_file(entry, _GIT_FILE_MAX_BYTES, prefix=True)
    except OSError:
        return None
    text = data.decode("utf-8", "replace") if data is not None else ""
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    return (entry.parent / first[len("gitdir:") :].strip()).resolve()


#: The files of a git directory that `git ls-files` opens (blocking) before it answers: the
#: repository's HEAD, config and commondir, then its index.
_GIT_FILES_READ = ("HEAD", "config", "commondir", "index")


def _git_can_be_asked(repo_root: Path, git_dir: Path | None) -> bool:
    """Whether git may be asked about this repository without waiting: its `.git` entry is a
    regular file or a directory, and the files git reads from its git directory (HEAD, config,
    commondir, the index and any shared index part) are regular files (each through a link, as
    git follows one). git opens them blocking, so a FIFO there holds it (and the daemon, which
    asks under its lock) until GIT_TIMEOUT_SECONDS, and a device is no such file; tracking is then
    undetermined without asking. What cannot be looked at is left to git, which fails on it at
    once."""
    if git_dir is None:
        names = [repo_root / ".git"]
    else:
        dirs = [git_dir, *_common_dir(git_dir)]
        names = [*(d / name for d in dirs for name in _GIT_FILES_READ), *git_dir.glob("sharedindex.*")]
        if any(_includes_other_files(d / "config") for d in dirs):
            return False  # git would read files the config names, anywhere (a FIFO among them)
    for name in names:
        try:
            st = os.stat(name)
        except OSError:
            continue
        if not (stat.S_ISREG(st.st_mode) or (git_dir is None and stat.S_ISDIR(st.st_mode))):
            return False
    return True


def main_worktree(project_root: Path) -> Path:
    """The main worktree of the repository `project_root` is a linked worktree of, else itself.

    A linked worktree's `.git` is a file `gitdir: <main>/.git/worktrees/<name>`, whose
    `commondir` names the main `.git` (relative to that gitdir); its parent is the main worktree.
    The `.git` file is the project's, so an unpacked archive can name any repository there:
    the named directory must point back (its `gitdir` file names this `.git` file, as git
    writes it for a worktree it made; relative to that directory with
    `worktree.useRelativePaths`), else another repository's data (Claude Code's auto memory)
    would be read as this project's; and it must lie in the `worktrees/` of the `.git` its
    `commondir` names. Every file is read as `_read_git_file` reads one (never a link, never a
    wait).
    """
    dot_git = project_root / ".git"
    gitdir = _git_dir_of_file(dot_git)
    if gitdir is None:
        return project_root
    try:
        back = _read_git_file(gitdir / "gitdir", _GIT_FILE_MAX_BYTES, prefix=True)
    except OSError:
        return project_root
    if back is None or (gitdir / back.decode("utf-8", "replace").strip()).resolve() != dot_git.resolve():
        return project_root
    if os.path.lexists(gitdir / "commondir"):
        named = _common_dir(gitdir)
        if not named:
            return project_root  # a commondir that cannot be read (a FIFO, a link) names nothing
        common_dir = named[0]
    else:
        common_dir = gitdir.parent.parent
    # the worktree's directory lies in that repository's own worktrees/ (an archive can make a
    # directory that points back, never one inside another repository's .git)
    if common_dir.name == ".git" and common_dir.parent.is_dir() and gitdir.parent == common_dir / "worktrees":
        return common_dir.parent
    return project_root


def _common_dir(git_dir: Path) -> list[Path]:
    """The git directory a linked worktree's `commondir` names (its config and HEAD are read too)."""
    try:
        data = _read_git_file(git_dir / "commondir", _GIT_FILE_MAX_BYTES, prefix=True)
    except OSError:
        return []
    text = data.decode("utf-8", "replace").strip() if data else ""
    return [(git_dir / text).resolve()] if text else []


#: A config section that makes git read another file: `[include]`, `[includeIf "…"]`.
_CONFIG_INCLUDE_RE = re.compile(rb"^\s*\[\s*include(?:if)?\b", re.IGNORECASE | re.MULTILINE)


def _includes_other_files(config: Path) -> bool:
    """Whether a repository's config includes other files (which may be FIFOs or devices: git
    opens them blocking). A config that cannot be read says nothing here; the file check above
    judges it."""
    try:
        data = _read_git_file(config, _GIT_CONFIG_MAX_BYTES)
    except OSError:
        return False
    if data is None:
        return True  # larger than any config a repository needs (or no regular file): not asked
    return _CONFIG_INCLUDE_RE.search(data) is not None


def _read_git_file(path: Path, max_bytes: int, *, prefix: bool = False) -> bytes | None:
    """The bytes of a file of a repository's git metadata (a `.git` file, the index), read the way
    engram reads any file of a repository, which may come from an archive that kept FIFOs and
    links: checked with `lstat` first, then opened never through a link (O_NOFOLLOW) and never
    waiting (O_NONBLOCK), the descriptor checked again. None when it is no regular file (a FIFO
    would block the read forever, a link to /dev/zero would fill memory) or holds more than
    `max_bytes` (with `prefix`, its first `max_bytes` are returned instead). Raises OSError when
    it cannot be opened (FileNotFoundError when it does not exist)."""
    if not stat.S_ISREG(os.lstat(path).st_mode):
        return None
    fd = os.open(path, NOFOLLOW_FILE_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_size > max_bytes and not prefix):
            return None
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read(min(st.st_size, max_bytes) + 1)  # one byte more: one grown since is seen
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return data[:max_bytes] if prefix else None
    return data


def _index_stamp(git_dir: Path | None) -> tuple[int, int, int] | None:
    if git_dir is None:
        return None
    try:
        st = os.stat(git_dir / "index")
    except FileNotFoundError:
        return (0, 0, 0)  # no index yet (a fresh `git init`): nothing is tracked until one appears
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _ask_git(root: Path, relpath: str) -> bool | None:
    """`git ls-files` of one path: True when it lists anything, None when git cannot answer."""
    import subprocess  # here: the hooks import this module under a tight budget and never ask git

    env = {k: v for k, v in os.environ.items() if k not in _GIT_REDIRECT_VARS}
    command = ["git", "-c", "core.fsmonitor=false", "-C", str(root), "ls-files", "-z", "--cached", "--", relpath]
    try:
        proc = subprocess.run(
            command, env=env, capture_output=True, timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git binary, or it hung
    if proc.returncode != 0:
        return None
    return bool(proc.stdout.strip(b"\0"))


def _index_names(git_dir: Path, repo_path: str) -> bool | None:
    """Without git: whether the index (or a split index's shared part) holds `repo_path` or a
    file below it. Index versions 2 and 3 store every path whole, so a byte search answers;
    version 4 compresses paths, so it cannot (None); nor can one that is no regular file or is
    larger than _GIT_INDEX_MAX_BYTES (`_read_git_file`)."""
    names = [git_dir / "index", *sorted(git_dir.glob("sharedindex.*"))]
    needles = (repo_path.encode() + b"\0", repo_path.encode() + b"/")
    for name in names:
        try:
            data = _read_git_file(name, _GIT_INDEX_MAX_BYTES)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        if data is None or data[:4] != b"DIRC" or int.from_bytes(data[4:8], "big") not in (2, 3):
            return None
        if any(needle in data for needle in needles):
            return True
    return False


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def write_private_file_at(dir_fd: int, name: str, text: str) -> None:
    """Write a 0600 file atomically inside `dir_fd` (temp file + rename): readers never see
    half a file, and a link planted at either name is replaced, never written through."""
    tmp = f".{name}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, STORE_FILE_MODE, dir_fd=dir_fd)
    except FileExistsError:  # left by a crash of this pid's predecessor
        os.unlink(tmp, dir_fd=dir_fd)
        fd = os.open(tmp, flags, STORE_FILE_MODE, dir_fd=dir_fd)
    try:
        os.fchmod(fd, STORE_FILE_MODE)
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def open_private_file_at(dir_fd: int, name: str, shown: Path | str) -> int:
    """Open (creating 0600) a read/write file engram owns inside `dir_fd` (the store's LOCK).

    Never through a link; an existing file must be a regular file owned by this user. Its
    mode is set only when engram creates it.
    """
    base = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        try:
            fd = os.open(name, base | os.O_CREAT | os.O_EXCL, STORE_FILE_MODE, dir_fd=dir_fd)
            os.fchmod(fd, STORE_FILE_MODE)
            return fd
        except FileExistsError:
            fd = os.open(name, base, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise UnsafePath(shown, describe(shown, dir_fd=dir_fd, name=name) + ", not a regular file") from None
        raise
    try:
        st = _check_owner(fd, shown)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(shown, "is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def tighten_store_data(store_fd: int, shown: Path) -> None:
    """Give what the storage engine created under `data/` private modes (0700/0600).

    The engine creates its files with the process umask; this runs at each open. It walks
    by descriptor and never follows a link; a link, a special file or an entry owned by
    someone else under `data/` is refused (the engine would follow or share it). Files with
    other hard links are left alone: their mode is not only ours.
    """
    _tighten_store_tree(store_fd, shown, DATA_DIRNAME)


def vet_store_entries(store_fd: int, shown: Path, *names: str) -> None:
    """Check entries engram keeps beside `data/` (a compaction's copy, old copy and marker).

    A repository can commit them too, as links: recovering an interrupted compaction renames,
    overwrites and deletes them, so each one present must be engram's own, like `data/`: no
    link, owned by this user, and a directory's whole tree vetted (`UnsafePath` otherwise).
    """
    for name in names:
        try:
            st = os.stat(name, dir_fd=store_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            _tighten_store_tree(store_fd, shown, name)
        else:
            _tighten_entry(store_fd, name, shown / name)


#: Entries of a refused store looked at for a link to name (`refuse_unsafe_entries`).
UNSAFE_SCAN_ENTRIES = 10_000


def refuse_unsafe_entries(store_fd: int, shown: Path) -> None:
    """Raise `UnsafePath` naming the first link, special file or entry of another user's in the
    store's tree, looked at without following or changing anything; return when there is none."""
    seen = 0
    for root, dirs, files, root_fd in os.fwalk(".", dir_fd=store_fd, follow_symlinks=False):
        for name in dirs + files:
            seen += 1
            if seen > UNSAFE_SCAN_ENTRIES:
                return
            where = Path(os.path.normpath(shown / root / name))
            try:
                st = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            _refuse_foreign_entry(root_fd, name, where, st)


def _tighten_store_tree(store_fd: int, shown: Path, top: str) -> None:
    for root, dirs, files, root_fd in os.fwalk(top, dir_fd=store_fd, follow_symlinks=False):
        where = shown / root
        st = _check_owner(root_fd, where)
        if stat.S_IMODE(st.st_mode) != STORE_DIR_MODE:
            os.fchmod(root_fd, STORE_DIR_MODE)
        for name in dirs + files:  # fwalk lists a link to a directory among `dirs` (and skips it)
            _tighten_entry(root_fd, name, where / name)


def _refuse_foreign_entry(dir_fd: int, name: str, shown: Path, st: os.stat_result) -> None:
    """Raise `UnsafePath` for an entry of a store's tree that is neither a directory nor a regular
    file (a link, a FIFO, a device), or that another user owns."""
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise UnsafePath(
            shown,
            describe(shown, dir_fd=dir_fd, name=name) + " inside the store directory",
            f"remove {shown}; engram's store holds only its own files there",
        )
    if st.st_uid != os.getuid():
        raise UnsafePath(shown, f"is owned by uid {st.st_uid}, not by you (uid {os.getuid()})")


def _tighten_entry(dir_fd: int, name: str, shown: Path) -> None:
    """One entry of the data tree: directories are checked when walked, files here."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return  # removed by the engine meanwhile
    if stat.S_ISDIR(st.st_mode):
        return
    _refuse_foreign_entry(dir_fd, name, shown, st)
    if stat.S_IMODE(st.st_mode) == STORE_FILE_MODE or st.st_nlink != 1:
        return
    try:
        fd = os.open(name, NOFOLLOW_FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return  # vanished or unreadable: nothing to tighten through
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            os.fchmod(fd, STORE_FILE_MODE)
    finally:
        os.close(fd)


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
