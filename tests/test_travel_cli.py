"""`engram share`, `engram sync` and `engram import --from`, end to end: the real CLI, one real
owner process per HOME, the real model, and git between two clones of one repository."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.daemon_env import Env, make_env

DATA = Path(__file__).parent / "data" / "importers"
TEAM = ".claude/team-memory"


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(cwd),
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def two(tmp_path: Path):
    """Two HOMEs, each with a clone of one origin repository as its project."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    envs: list[Env] = []
    for who in ("alice", "bob"):
        e = make_env(tmp_path / who)
        shutil.rmtree(e.project)
        git(tmp_path, "clone", "-q", str(origin), str(e.project))
        git(e.project, "checkout", "-q", "-B", "main")
        envs.append(e)
    a = envs[0].project
    (a / "README").write_text("x\n")
    git(a, "add", "README")
    git(a, "commit", "-q", "-m", "init")
    git(a, "push", "-q", "origin", "main")
    git(envs[1].project, "pull", "-q", "origin", "main")
    yield envs
    for e in envs:
        e.shutdown()


def js(proc) -> dict:
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_team_memory_travels_through_git_with_the_cli(two) -> None:
    alice, bob = two
    mid = js(
        alice.cli(
            "--json",
            "store",
            "Never edit a merged migration; add a new one.",
            "--type",
            "procedural",
            "--scope",
            "project",
            "--importance",
            "0.9",
            "--tags",
            "db",
        )
    )["memory_id"]
    shared = alice.cli("share", mid[-8:]).stdout  # the short id `engram list` shows works too
    assert f"{TEAM}/never-edit-a-merged-migration-add" in shared and "commit" in shared
    git(alice.project, "add", TEAM)
    git(alice.project, "commit", "-q", "-m", "share")
    git(alice.project, "push", "-q", "origin", "main")

    # bob pulls: his next session start applies the file (the SessionStart hook's operation)
    git(bob.project, "pull", "-q", "origin", "main")
    client = bob.client()
    started = client.call("hook_session_start", {"source": "startup"}, project_root=bob.project, session_id="s-bob")
    team = started["session"]["team_memory"]
    assert team["counts"] == {"added": 1, "updated": 0} and team["added"][0]["memory_id"] == mid
    assert team["authors"] == {"t": 1} and team["review"] == "engram sync" and not team["conflicts"]
    assert "Never edit a merged migration" in (started["additional_context"] or "")
    assert js(bob.cli("--json", "show", mid))["content"] == "Never edit a merged migration; add a new one."

    # an edit travels back, and a conflicting edit is reported with exit code 3
    bob.cli("update", mid, "--content", "Never edit a merged migration; write a new migration instead.")
    assert "1 written" in bob.cli("sync").stdout
    git(bob.project, "commit", "-q", "-am", "edit")
    git(bob.project, "push", "-q", "origin", "main")
    alice.cli("update", mid, "--content", "Merged migrations are frozen.")
    git(alice.project, "pull", "-q", "--no-rebase", "origin", "main")
    proc = alice.cli("sync", check=False)
    assert proc.returncode == 3 and "conflict:" in proc.stdout and "write a new migration" in proc.stdout
    assert js(alice.cli("--json", "show", mid))["content"] == "Merged migrations are frozen."


@pytest.mark.slow
def test_user_scope_converges_and_imports_run_twice_through_the_cli(tmp_path: Path) -> None:
    a, b = make_env(tmp_path / "a"), make_env(tmp_path / "b")
    mirror = tmp_path / "mirror"
    try:
        a.cli("store", "I prefer rebase over merge commits.", "--type", "procedural", "--scope", "user")
        b.cli("store", "My terminal font is Iosevka.", "--type", "semantic", "--scope", "user")
        for e in (a, b, a):
            e.cli("sync", "--user", str(mirror))
        for e in (a, b):
            listed = e.cli("--json", "list", "--scope", "user").stdout
            assert "rebase over merge" in listed and "Iosevka" in listed

        dry = js(a.cli("--json", "import", "--from", "mcp-memory", str(DATA / "mcp-memory.jsonl"), "--dry-run"))
        assert dry["new_memories"] == 7 and dry["dry_run"]  # 4 observations, 3 relations as text
        first = a.cli("import", "--from", "mcp-memory", str(DATA / "mcp-memory.jsonl")).stdout
        assert "added 7 memories, updated 0, 0 unchanged" in first
        second = a.cli("import", "--from", "mcp-memory", str(DATA / "mcp-memory.jsonl")).stdout
        assert "added 0 memories, updated 0, 7 unchanged" in second
    finally:
        a.shutdown()
        b.shutdown()


def test_sync_output_never_carries_terminal_escapes_from_files_or_commits() -> None:
    from engram_mcp.interfaces.cli_travel import render_sync

    evil = "a\x1b]0;owned\x07b\x1b[2J\u202ec\r"
    report = {
        "folder": f".claude/team-memory{evil}",
        "counts": {"added": 1, "conflicts": 1, "errors": 1},
        "arrivals": [{"change": "added", "path": f"x{evil}.md", "memory_id": "memory:X", "author": evil}],
        "conflicts": [{"memory_id": "memory:Y", "path": f"y{evil}.md", "file": evil, "local": evil, "resolve": evil}],
        "errors": [{"path": "z.md", "error": f"z{evil}.md: bad"}],
        "redactions": [{"path": f"s{evil}.md", "message": "the file holds secrets"}],
    }
    out = render_sync(report)
    assert not any(ch in out for ch in "\x1b\x07\u202e\r"), repr(out)
    assert "left alone: zab" in out and "need a person" in out


def test_the_import_report_lists_memories_kept_from_before_sources_were_recorded() -> None:
    """A re-import after the upgrade adds a changed record beside the memory imported before
    sources were recorded (never overwritten: it could have come from any file); the text report
    says so and lists them, not only --json."""
    from engram_mcp.interfaces.cli_travel import render_import_from

    report = {
        "source": "markdown",
        "path": "/home/me/notes",
        "read": {"memories": 2},
        "dry_run": False,
        "added": 1,
        "updated": 0,
        "unchanged": 1,
        "legacy_kept": 1,
        "legacy_kept_ids": ["memory:01KT18T11PD3JR4KKWQZ99EB1M"],
    }
    text = render_import_from(report)
    assert "1 memory imported before sources were recorded kept as they are" in text
    assert "  memory:01KT18T11PD3JR4KKWQZ99EB1M" in text.splitlines()
