"""Real git repositories holding what a cloned repository can hold (test helper).

For the tests that play a repository as untrusted input (test_repo_trust.py,
test_team_hostile.py, test_hostile_classes.py): a repository is made with real git, its
`.claude/` files are written and committed as a given author, and engram (a service, or the
real CLI and daemon of tests/daemon_env.py) works on it. git runs with a fixed environment
(no system or user configuration, HOME in the repository), so a developer's git settings
(signing, hooks, templates) never change what a test sees.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engram_mcp.services.sharing import TEAM_MEMORY_DIR
from tests.daemon_env import Env, make_env

#: The team folder (`.claude/team-memory`) and the project's config file, relative to a repository.
TEAM = TEAM_MEMORY_DIR
CONFIG = ".claude/engram.local.md"


def git(cwd: Path, *args: str | Path, check: bool = True, author: str = "t") -> subprocess.CompletedProcess:
    """Run git in `cwd`; a commit is authored by `author` (the name is the repository's text)."""
    env = {
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    argv = ["git", *map(str, args)]
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert not check or proc.returncode == 0, f"{' '.join(argv)}: {proc.stderr}"
    return proc


def new_repo(path: Path) -> Path:
    """A git repository at `path` (made if missing) on branch main, with one commit (README.md)."""
    path.mkdir(parents=True, exist_ok=True)
    if (path / ".git").is_dir() and not any((path / ".git").iterdir()):
        (path / ".git").rmdir()  # the stand-in `.git` folder of a test project (make_env, conftest)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("a project\n")
    commit(path, "init", "README.md")
    return path


def commit(repo: Path, message: str, *paths: str | Path, author: str = "t", force: bool = False) -> None:
    """Stage `paths` (new, changed and deleted files; the whole tree if none; ignored ones too
    with `force`) and commit them as `author`."""
    git(repo, "add", "-A", *(["-f"] if force else []), "--", *paths)
    git(repo, "commit", "-q", "-m", message, author=author)


def write_file(repo: Path, rel: str | Path, text: str | bytes) -> Path:
    """Write the file `rel` of `repo` (its folders made), UTF-8 unless given bytes."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def write_team_file(repo: Path, name: str, text: str | bytes) -> Path:
    return write_file(repo, TEAM / name, text)


def write_config(repo: Path, frontmatter: str, body: str = "notes\n") -> Path:
    """The project's `.claude/engram.local.md`: `frontmatter` holds its lines, each ending in a newline."""
    return write_file(repo, CONFIG, f"---\n{frontmatter}---\n{body}")


def shared_texts(repo: Path) -> str:
    """Every team file's text, in name order ("" without a team folder)."""
    folder = repo / TEAM
    return "".join(p.read_text() for p in sorted(folder.rglob("*.md"))) if folder.is_dir() else ""


@contextmanager
def repo_env(tmp: Path) -> Iterator[Env]:
    """A throwaway HOME (tests/daemon_env.py) whose project is a new repository; its daemon is
    stopped at the end."""
    env = make_env(tmp)
    try:
        new_repo(env.project)
        yield env
    finally:
        env.shutdown()
