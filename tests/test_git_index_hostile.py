"""A repository's `.git` is untrusted input: an unpacked archive keeps FIFOs and links.

When engram asks whether a path is tracked (`paths.git_tracked`, `store_is_tracked`,
`refuse_tracked_store`), a `.git/index` that is a FIFO or a link to /dev/zero, a `.git` that is
itself a FIFO, or a `.git` file naming a git directory with such an index must neither block
(the daemon asks while holding its service lock: every project would stall) nor fill memory.
Tracking is then undetermined (None), and callers fail safe as when git cannot answer.

The hostile cases run in a child process in its own session, with its address space capped,
killed with its whole process group when it overruns: a read of a FIFO or /dev/zero never
hangs the suite or the machine, and no git left waiting on a FIFO outlives the test.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram_mcp.core import paths

STORE = ".claude/engram"
#: The calls must answer at once; the child is killed (a hang) past HANG_SECONDS.
ANSWER_SECONDS = 2.0
HANG_SECONDS = 4.0
#: The child's address space: far above what it needs, far below what reading /dev/zero takes.
CHILD_MEMORY_BYTES = 1024 * 1024 * 1024

GIT_ENV = {
    "GIT_AUTHOR_NAME": "tester",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "tester",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}

CHILD = r"""
import json, sys, time
from pathlib import Path
from engram_mcp.core import paths

root, mode = Path(sys.argv[1]), sys.argv[2]
if mode == "no-git":
    paths._ask_git = lambda *_args: None  # git cannot answer: engram reads the index itself
out = {}
t0 = time.monotonic()
if mode == "index-names":
    out["index_names"] = paths._index_names(root / ".git", sys.argv[3])
else:
    out["tracked"] = paths.git_tracked(root, sys.argv[3])
    out["store_is_tracked"] = paths.store_is_tracked(root / ".claude" / "engram", root)
    try:
        paths.refuse_tracked_store(root / ".claude" / "engram", root)
        out["refused"] = False
    except paths.UnsafePath:
        out["refused"] = True
out["seconds"] = time.monotonic() - t0
# this process's peak memory (VmHWM starts anew at exec; ru_maxrss would carry the parent's)
status = Path("/proc/self/status").read_text() if Path("/proc/self/status").exists() else ""
out["peak_kib"] = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
print(json.dumps(out))
"""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        timeout=30,
    )


def new_repo(path: Path, *init_args: str) -> Path:
    """A repository with a tracked README.md and a tracked file in the project store."""
    path.mkdir(parents=True)
    git(path, "init", "-q", *init_args)
    (path / "README.md").write_text("x\n")
    (path / ".claude" / "engram").mkdir(parents=True)
    (path / ".claude" / "engram" / "memories.jsonl").write_text("{}\n")
    git(path, "add", "README.md", ".claude/engram/memories.jsonl")
    git(path, "commit", "-q", "-m", "init")
    return path


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def ask_in_child(root: Path, relpath: str = STORE, mode: str = "public") -> dict:
    """Run the tracking questions in a capped child; fail the test when it hangs or errs."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), mode, relpath],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_limit_child,
        cwd=Path(__file__).resolve().parent.parent,
    )
    started = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the child and any git it left waiting on a FIFO
        proc.communicate()
        pytest.fail(f"asking whether {relpath} is tracked hung for {time.monotonic() - started:.1f}s")
    assert proc.returncode == 0, stderr.decode(errors="replace")[-2000:]
    out = json.loads(stdout)
    assert out["seconds"] < ANSWER_SECONDS, out
    return out


def assert_fails_safe(out: dict) -> None:
    """Tracking undetermined (None); a store is then used as before, not refused (its docstring)."""
    assert out["tracked"] is None, out
    assert out["store_is_tracked"] is False, out
    assert out["refused"] is False, out


# --------------------------------------------------------------------------- hostile index


def test_fifo_index_fails_safe_at_once(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / "index").unlink()
    os.mkfifo(repo / ".git" / "index")
    assert_fails_safe(ask_in_child(repo))


@pytest.mark.parametrize("name", ["HEAD", "config", "commondir"])
def test_fifo_among_the_files_git_reads_first_fails_safe_at_once(tmp_path: Path, name: str) -> None:
    """git opens HEAD, config and (when present) commondir before the index, blocking on a FIFO."""
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / name).unlink(missing_ok=True)
    os.mkfifo(repo / ".git" / name)
    assert_fails_safe(ask_in_child(repo))


def test_fifo_a_config_includes_fails_safe_at_once(tmp_path: Path) -> None:
    """A regular config whose `[include]` names a FIFO: git opens the included file blocking."""
    repo = new_repo(tmp_path / "repo")
    os.mkfifo(tmp_path / "ff")
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f"[include]\n\tpath = {tmp_path / 'ff'}\n")
    assert_fails_safe(ask_in_child(repo))


def test_fifo_config_of_a_worktrees_common_dir_fails_safe_at_once(tmp_path: Path) -> None:
    """A linked worktree's git directory names its common one (`commondir`), whose config git reads."""
    main = new_repo(tmp_path / "main")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    (main / ".git" / "config").unlink()
    os.mkfifo(main / ".git" / "config")
    assert_fails_safe(ask_in_child(tmp_path / "wt"))


def test_index_linked_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / "index").unlink()
    (repo / ".git" / "index").symlink_to("/dev/zero")
    out = ask_in_child(repo)
    assert_fails_safe(out)
    assert out["peak_kib"] < 256 * 1024, out  # nothing of /dev/zero was read into memory


def test_fifo_shared_index_part_fails_safe_at_once(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    git(repo, "update-index", "--split-index")
    shared = sorted((repo / ".git").glob("sharedindex.*"))
    assert shared, "git wrote no shared index part"
    for part in shared:
        part.unlink()
        os.mkfifo(part)
    assert_fails_safe(ask_in_child(repo))
    # engram's own reader (used when git cannot answer) refuses it too, without waiting
    assert ask_in_child(repo, mode="index-names")["index_names"] is None


def test_index_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    """A (sparse) index past _GIT_INDEX_MAX_BYTES naming the store is not read: tracking unknown."""
    repo = new_repo(tmp_path / "repo")
    index = repo / ".git" / "index"
    index.unlink()
    with open(index, "wb") as fh:
        fh.write(b"DIRC" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big") + b"\0" * 60)
        fh.write(b".claude/engram/memories.jsonl\0")
        fh.truncate(paths._GIT_INDEX_MAX_BYTES + 1)
    out = ask_in_child(repo, mode="no-git")
    assert_fails_safe(out)
    assert out["peak_kib"] < 128 * 1024, out  # nor the index


# --------------------------------------------------------------------------- hostile .git entry


@pytest.mark.parametrize("kind", ["fifo", "link-to-fifo"])
def test_git_entry_that_is_a_fifo_fails_safe_at_once(tmp_path: Path, kind: str) -> None:
    repo = new_repo(tmp_path / "repo")
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    if kind == "fifo":
        os.mkfifo(repo / ".git")
    else:
        os.mkfifo(tmp_path / "fifo")
        (repo / ".git").symlink_to(tmp_path / "fifo")
    assert_fails_safe(ask_in_child(repo))


def test_git_file_naming_a_git_dir_with_a_fifo_index_fails_safe_at_once(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", "--separate-git-dir", str(tmp_path / "gitdir"))
    assert (repo / ".git").is_file()
    (tmp_path / "gitdir" / "index").unlink()
    os.mkfifo(tmp_path / "gitdir" / "index")
    assert_fails_safe(ask_in_child(repo))


# --------------------------------------------------------------------------- normal repositories


def test_normal_repositories_still_answer_with_and_without_git(tmp_path: Path, monkeypatch) -> None:
    plain = new_repo(tmp_path / "plain")
    separate = new_repo(tmp_path / "separate", "--separate-git-dir", str(tmp_path / "separate.git"))
    assert (separate / ".git").is_file()
    (plain / "notes.txt").write_text("untracked\n")

    def check(repo: Path) -> None:
        paths._tracked_cache.clear()
        assert paths.git_tracked(repo, STORE) is True
        assert paths.git_tracked(repo, "README.md") is True
        assert paths.git_tracked(repo, "notes.txt") is False
        assert paths.store_is_tracked(repo / ".claude" / "engram", repo) is True
        with pytest.raises(paths.UnsafePath):
            paths.refuse_tracked_store(repo / ".claude" / "engram", repo)

    for repo in (plain, separate):
        check(repo)
        monkeypatch.setattr(paths, "_ask_git", lambda *_args: None)  # engram reads the index itself
        check(repo)
        monkeypatch.undo()
    paths._tracked_cache.clear()
