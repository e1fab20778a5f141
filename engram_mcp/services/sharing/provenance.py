"""Who wrote a shared file: the last commit touching it and its author, from git.

A memory that arrives from a team file or a synced folder records where it came from, so the
context and `engram show` can say "team memory of this repository, by Alice" instead of
passing it off as the user's own. The history is read with ONE `git log` over the folder
(never one process per file), bounded in commits, time and output, and its text is
untrusted (an author name is whatever a committer typed): it is reduced to printable
characters of bounded length, and a record that does not have the expected shape is dropped.
Without git, outside a repository, or past the time box, files simply have no commit.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import time
import unicodedata
from pathlib import Path

from engram_mcp.core.display import printable

#: Commits of the folder's history read at most: the last change of every file is almost
#: always among the recent ones, and a huge history must not cost a session start seconds.
MAX_COMMITS = 1000
#: Bytes of `git log` output read at most (a hostile history can name millions of files).
MAX_LOG_BYTES = 4 * 1024 * 1024
MAX_AUTHOR_CHARS = 80
MAX_PATH_CHARS = 200  # a file's path as its memory's `source` records it
_COMMIT_RE = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
#: Unicode categories never kept from untrusted text: controls (terminal escapes), format
#: characters (bidi overrides, zero-width), separators that break lines, private and surrogates.
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
#: git is run with the repository's own hooks and monitors off: reading a log must never
#: execute something a cloned repository configured.
_GIT_SAFETY = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "log.showSignature=false")


def clean_text(text: str, limit: int) -> str:
    """Untrusted text reduced to printable characters (whitespace runs become one space):
    escape sequences go whole (their parameters too), then every control and format character."""
    text = printable(text)
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if unicodedata.category(ch) not in _DROPPED_CATEGORIES or ch.isspace()
    )
    one = " ".join(kept.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def last_commits(folder: Path, *, timeout_s: float) -> dict[str, dict[str, str]]:
    """{file name directly in `folder`: {"commit", "author"}} from the newest commit touching
    it; {} when the folder is not in a git repository, git is missing, or it takes too long. A
    file changed or added since its last commit has no entry: its text is not that author's.
    Nothing here lets git run a command the repository configures (`_blob_id`)."""
    if timeout_s <= 0:
        return {}
    started = time.monotonic()
    cmd = [
        "git",
        *_GIT_SAFETY,
        "log",
        "-z",
        "--no-renames",
        "--relative",
        "--name-only",
        "--no-color",
        "--format=%x1e%H%x1f%an",
        f"-n{MAX_COMMITS}",
        "--",
        ".",
    ]
    log_out = _git(folder, cmd, timeout_s)
    if log_out is None:
        return {}
    found = parse_log(log_out[:MAX_LOG_BYTES])
    # modified in the working tree, or never committed: whoever wrote it, not the last author
    staged = _git(folder, ["git", *_GIT_SAFETY, "ls-files", "-z", "--stage", "--", "."], _left(started, timeout_s))
    if staged is None:
        return {}
    committed = parse_stage(staged[:MAX_LOG_BYTES])
    return {
        name: origin
        for name, origin in found.items()
        if name in committed and committed[name] == _blob_id(folder / name, committed[name])
    }


def _left(started: float, timeout_s: float) -> float:
    return timeout_s - (time.monotonic() - started)


def parse_stage(raw: bytes) -> dict[str, str]:
    """{file name directly in the folder: its object id in the index} from `git ls-files -z --stage`
    (`<mode> <object> <stage>\\t<path>`): regular files only, and only unconflicted entries."""
    out: dict[str, str] = {}
    for entry in raw.decode("utf-8", "replace").split("\x00"):
        head, _tab, name = entry.partition("\t")
        fields = head.split(" ")
        if len(fields) != 3 or fields[0] not in ("100644", "100755") or fields[2] != "0" or "/" in name:
            continue
        if _COMMIT_RE.match(fields[1]):
            out[name] = fields[1]
    return out


def _blob_id(path: Path, expected: str) -> str | None:
    """The git object id of the regular file at `path` as it is on disk, computed here, in the
    hash the index uses (`expected`'s length). Here and not by git: git may pass a working file
    through a filter the repository configures (`filter.<x>.clean` in .git/config, named by its
    .gitattributes), and a project unpacked from an archive brings its own .git/config; asking
    git which files changed since their commit ran such a filter's command at session start. A
    file a legitimate filter rewrites (LFS, line endings) simply reads as changed, so its text is
    not credited to its last author, which is the safe side."""
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HASHED_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256 if len(expected) == 64 else hashlib.sha1
    return digest(b"blob %d\x00" % len(data) + data).hexdigest()


#: Files larger than this are never credited to a commit (a team memory file is a few KB).
MAX_HASHED_BYTES = 1024 * 1024


def _git(folder: Path, cmd: list[str], timeout_s: float) -> bytes | None:
    """stdout of one git command in `folder`, or None (no git, no repository, too slow)."""
    if timeout_s <= 0:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", LC_ALL="C")
    try:
        proc = subprocess.run(
            cmd, cwd=str(folder), env=env, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def parse_log(raw: bytes) -> dict[str, dict[str, str]]:
    """The output of the `git log` above, newest first: each file's first sighting wins."""
    out: dict[str, dict[str, str]] = {}
    for record in raw.decode("utf-8", "replace").split("\x1e"):
        head, _sep, names = record.partition("\x00")
        commit, _sep, author = head.partition("\x1f")
        if not _COMMIT_RE.match(commit):
            continue
        origin = {"commit": commit, "author": clean_text(author, MAX_AUTHOR_CHARS)}
        for name in names.split("\x00"):
            name = name.strip("\n")
            if name and "/" not in name and name not in out:
                out[name] = origin
    return out
