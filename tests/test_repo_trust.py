"""A repository cannot move the user's private data (issue 32, item 3).

A cloned repository decides what is in its tracked files, so a tracked
`.claude/engram.local.md` cannot turn on settings that write outside the private store
(`moves_data` keys such as `team_memory_share_min_importance`), and a committed
`.claude/engram/` store is never opened nor modified. Run with real git, the real CLI and
its real daemon in a throwaway HOME (tests/daemon_env.py), as a user would.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.daemon_env import Env
from tests.git_repos import CONFIG, TEAM, commit, git, new_repo, repo_env, shared_texts, write_config, write_team_file

PRIVATE = "salary negotiation: I will ask for 140k and walk away below 125k, do not tell the team"


def store_private_and_sync(env: Env, project: Path) -> str:
    env.cli("store", PRIVATE, "--type", "semantic", "--scope", "project", "--importance", "0.9", cwd=project)
    env.cli("sync", cwd=project, check=False)
    return shared_texts(project)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory):
    with repo_env(tmp_path_factory.mktemp("trust")) as e:
        yield e


def test_a_committed_config_shares_nothing_and_is_reported(env: Env) -> None:
    project = env.project
    write_config(project, "team_memory_share_min_importance: 0.0\nprompt_recall_limit: 2\n")
    commit(project, "the repository's config", CONFIG)
    assert "salary" not in store_private_and_sync(env, project)
    assert "salary" not in git(project, "status", "--porcelain", "--untracked-files=all").stdout
    status = env.cli("status", cwd=project).stdout
    doctor = env.cli("doctor", cwd=project, check=False).stdout
    for shown in (status, doctor):
        assert "engram.local.md" in shown and "team_memory_share_min_importance" in shown, shown
        assert "tracked by git" in shown, shown


def test_the_same_key_in_an_untracked_ignored_project_file_is_honoured(env: Env, tmp_path: Path) -> None:
    """The user's own project file: untracked, and written after engram first claimed the
    project's store for them (what came with a project was there before)."""
    project = new_repo(tmp_path / "ignored")
    (project / ".gitignore").write_text(".claude/engram.local.md\n")
    commit(project, "ignore the local config", ".gitignore")
    env.cli("store", "The ignored repo builds with make", "--type", "semantic", "--scope", "project", cwd=project)
    time.sleep(0.05)  # a change time after the store's owner mark, on any file system's clock
    write_config(project, "team_memory_share_min_importance: 0.0\n")
    assert "salary negotiation" in store_private_and_sync(env, project)
    assert "tracked by git" not in env.cli("status", cwd=project).stdout


def test_an_untracked_file_that_came_with_an_unpacked_repository_moves_nothing_until_saved_again(
    env: Env, tmp_path: Path
) -> None:
    """Red-team finding: an archive carried its `.git` and a `.claude/engram.local.md` that
    `.git/info/exclude` leaves untracked; `engram sync` then wrote private project memories into
    the team folder. Untracked is no proof in a repository the user did not make: the file predates
    the user's first session there. Saved again by the user, it applies."""
    project = new_repo(tmp_path / "unpacked")
    (project / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (project / ".git" / "info" / "exclude").write_text(".claude/engram.local.md\n")
    write_config(project, "team_memory_share_min_importance: 0.0\n")  # there before any session
    assert "salary negotiation" not in store_private_and_sync(env, project)
    status = env.cli("status", cwd=project).stdout
    assert "before your first engram session" in status and "touch" in status, status
    time.sleep(0.05)
    (project / CONFIG).touch()  # the user says it is theirs
    os.utime(project / CONFIG)
    assert "salary negotiation" in store_private_and_sync(env, project)


def test_the_users_own_config_is_honoured_even_beside_a_committed_one(env: Env, tmp_path: Path) -> None:
    project = new_repo(tmp_path / "users-own")
    user_file = env.home / ".claude" / "engram.local.md"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text("---\nteam_memory_share_min_importance: 0.0\n---\n")
    try:
        assert "salary negotiation" in store_private_and_sync(env, project)
        # The committed file of the first test cannot switch it off either way: the user's value stands.
        write_config(project, "team_memory_share_min_importance: 1.0\n")
        commit(project, "try to override", CONFIG)
        env.cli(
            "store",
            "Rotate the on-call pager key every Monday with make rotate",
            "--type",
            "procedural",
            "--scope",
            "project",
            "--importance",
            "0.5",
            cwd=project,
        )
        env.cli("sync", cwd=project, check=False)
        assert "make rotate" in shared_texts(project)  # the user's 0.0 stands; the tracked 1.0 is ignored
        shown = json.loads(env.cli("--json", "status", cwd=project).stdout)
        assert "team_memory_share_min_importance" in json.dumps(shown)
    finally:
        user_file.unlink()


def wait_until_unlocked(store: Path, seconds: float = 30.0) -> None:
    """The stopped daemon lets go of the store only after its last write (index, markers)."""
    import time

    from engram_mcp.core.paths import lock_held

    deadline = time.monotonic() + seconds
    while lock_held(store / "LOCK") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not lock_held(store / "LOCK")
    time.sleep(0.5)


def tree_bytes(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = "dir" if path.is_dir() and not path.is_symlink() else path.read_bytes()
    return out


def test_a_committed_store_is_never_opened_nor_modified_and_is_named(env: Env, tmp_path: Path) -> None:
    project = new_repo(tmp_path / "committed-store")
    env.cli("store", "The committed note: deploy with the blue lever", "--scope", "project", cwd=project)
    env.shutdown()
    store = project / ".claude" / "engram"
    wait_until_unlocked(store)
    assert (store / "data").is_dir()
    commit(project, "commit the store, as a repository could", ".claude/engram", force=True)
    write_team_file(project, "use-pnpm.md", "---\ntype: procedural\n---\nUse pnpm for installs.\n")
    commit(project, "a team file", TEAM)
    before = tree_bytes(store)

    env.cli("store", "A new private note about the green lever", "--scope", "project", cwd=project, check=False)
    recalled = env.cli("recall", "deploy lever", cwd=project, check=False).stdout
    sync = env.cli("sync", cwd=project, check=False)  # its state file lives in the store directory
    status = env.cli("status", cwd=project, check=False)
    doctor = env.cli("doctor", cwd=project, check=False)

    assert "blue lever" not in recalled, recalled
    assert tree_bytes(store) == before
    assert git(project, "status", "--porcelain").stdout == ""
    assert sync.returncode != 0
    for shown in (sync.stdout + sync.stderr, status.stdout + status.stderr, doctor.stdout + doctor.stderr):
        assert str(store) in shown and "tracked by git" in shown, shown


# --------------------------------------------------------------------------- units (real git, no daemon)


def test_git_tracked_answers_for_files_directories_worktrees_and_no_repository(tmp_path: Path) -> None:
    from engram_mcp.core.paths import git_tracked

    assert git_tracked(tmp_path, CONFIG) is False  # no repository at all
    repo = new_repo(tmp_path / "repo")
    write_config(repo, "rrf_k: 5\n")
    assert git_tracked(repo, CONFIG) is False
    git(repo, "add", CONFIG)
    assert git_tracked(repo, CONFIG) is True  # staged is tracked: the next commit carries it
    assert git_tracked(repo, ".claude") is True
    git(repo, "commit", "-q", "-m", "c")
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert (tmp_path / "wt" / ".git").is_file()
    assert git_tracked(tmp_path / "wt", CONFIG) is True
    git(repo, "rm", "-q", "--cached", CONFIG)
    assert git_tracked(repo, CONFIG) is False  # the cache follows the index


def test_without_a_git_binary_the_index_is_read_and_v4_fails_safe(tmp_path: Path, monkeypatch) -> None:
    from engram_mcp.core import paths

    repo = new_repo(tmp_path / "repo")
    write_config(repo, "rrf_k: 5\n")
    git(repo, "add", CONFIG)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    paths._tracked_cache.clear()
    assert paths.git_tracked(repo, CONFIG) is True
    assert paths.git_tracked(repo, "README.md") is True
    assert paths.git_tracked(repo, ".claude/engram") is False
    monkeypatch.undo()
    git(repo, "update-index", "--index-version", "4")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    paths._tracked_cache.clear()
    assert paths.git_tracked(repo, CONFIG) is None


def claim_project_store(repo: Path, home: Path) -> None:
    """What the user's first engram session in `repo` leaves: a store with this user's owner mark."""
    from engram_mcp.core import paths, store_owner

    fd, _checked = paths.prepare_store_dir(
        paths.project_dir(repo), trusted=repo, owner=store_owner.load(paths.user_dir(home))
    )
    os.close(fd)
    time.sleep(0.05)  # a later change time for what the test writes next, on any clock


def test_config_drops_data_moving_keys_of_a_tracked_file_only(tmp_path: Path, monkeypatch) -> None:
    from engram_mcp.core import paths
    from engram_mcp.core.config import load_config_lenient
    from engram_mcp.core.config_keys import DATA_MOVING_KEYS

    assert "team_memory_share_min_importance" in DATA_MOVING_KEYS
    home = tmp_path / "home"
    home.mkdir()
    repo = new_repo(tmp_path / "repo")
    claim_project_store(repo, home)  # the user's first session here: the file written after it is theirs
    write_config(repo, "team_memory_share_min_importance: 0.0\nprompt_recall_limit: 2\n")

    config, problem = load_config_lenient(repo, home=home, environ={})
    assert config.team_memory_share_min_importance == 0.0 and problem is None  # untracked: the user's

    git(repo, "add", CONFIG)
    config, problem = load_config_lenient(repo, home=home, environ={})
    assert config.team_memory_share_min_importance is None
    assert config.prompt_recall_limit == 2  # its other keys apply
    assert problem is not None and [p.severity for p in problem.problems] == ["warning"]
    assert "engram.local.md" in str(problem) and "team_memory_share_min_importance" in str(problem)

    # the environment is no proof either: a repository's .claude/settings.json sets the hooks' (and
    # the daemon they start) `env` (red-team finding: the daemon kept it for every project)
    config, problem = load_config_lenient(repo, home=home, environ={"ENGRAM_TEAM_MEMORY_SHARE_MIN_IMPORTANCE": "0.3"})
    assert config.team_memory_share_min_importance is None
    assert problem is not None and "ENGRAM_TEAM_MEMORY_SHARE_MIN_IMPORTANCE" in str(problem)

    git(repo, "update-index", "--index-version", "4")
    git(repo, "rm", "-q", "--cached", CONFIG)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    paths._tracked_cache.clear()
    config, problem = load_config_lenient(repo, home=home, environ={})
    assert config.team_memory_share_min_importance is None  # cannot tell: fail safe
    assert problem is not None and "could not say" in str(problem)


def test_config_drops_data_moving_keys_of_a_project_without_git(tmp_path: Path) -> None:
    """Unpacked from an archive, a project's `.claude/engram.local.md` is tracked by nothing, and
    is still not the user's: it cannot turn on sharing (it did, and `engram sync` wrote private
    memories into the team folder)."""
    from engram_mcp.core.config import load_config_lenient

    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "unpacked"
    project.mkdir()
    write_config(project, "team_memory_share_min_importance: 0.0\nprompt_recall_limit: 2\n")

    config, problem = load_config_lenient(project, home=home, environ={})

    assert config.team_memory_share_min_importance is None
    assert config.prompt_recall_limit == 2  # its other keys apply
    assert problem is not None and "no git repository" in str(problem)
    assert "team_memory_share_min_importance" in str(problem)


def test_prepare_store_dir_refuses_a_tracked_store_before_touching_it(tmp_path: Path) -> None:
    from engram_mcp.core.paths import UnsafePath, prepare_store_dir, project_dir

    repo = new_repo(tmp_path / "repo")
    store = project_dir(repo)
    (store / "data").mkdir(parents=True)
    (store / "data" / "x").write_text("theirs")
    git(repo, "add", "-f", ".claude/engram")
    before = tree_bytes(store)
    with pytest.raises(UnsafePath, match="tracked by git"):
        prepare_store_dir(store, trusted=repo)
    assert tree_bytes(store) == before and not (store / ".gitignore").exists()

    other = new_repo(tmp_path / "other")  # an untracked store of the user's own is used as before
    fd, _ = prepare_store_dir(project_dir(other), trusted=other)
    os.close(fd)
    assert (project_dir(other) / ".gitignore").exists()


def test_a_claude_folder_that_is_a_submodule_is_the_repositorys_too(tmp_path: Path) -> None:
    """A repository can make `.claude` (or `.claude/engram`) a submodule: its files are tracked by
    the submodule, not by the project's own index, and are the repository's all the same."""
    from engram_mcp.core.config import load_config_lenient
    from engram_mcp.core.paths import UnsafePath, git_tracked, prepare_store_dir, project_dir

    theirs = new_repo(tmp_path / "theirs")
    (theirs / "engram.local.md").write_text("---\nteam_memory_share_min_importance: 0.0\n---\n")
    (theirs / "engram" / "data").mkdir(parents=True)
    (theirs / "engram" / "data" / "x").write_text("their store")
    commit(theirs, "a .claude to adopt", ".", force=True)
    project = new_repo(tmp_path / "project")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(theirs), ".claude")
    git(project, "commit", "-q", "-m", "add .claude as a submodule")
    assert (project / ".claude" / ".git").is_file()

    assert git_tracked(project, CONFIG) is True
    home = tmp_path / "home"
    home.mkdir()
    config, problem = load_config_lenient(project, home=home, environ={})
    assert config.team_memory_share_min_importance is None
    assert problem is not None and "tracked by git" in str(problem)
    before = tree_bytes(project_dir(project))
    with pytest.raises(UnsafePath, match="tracked by git"):
        prepare_store_dir(project_dir(project), trusted=project)
    assert tree_bytes(project_dir(project)) == before
