"""engram inside real Claude Code sessions (issue 4.5).

The plugin is installed from this repository's marketplace into a throwaway HOME; the
model is a scripted stand-in on loopback (tests/claude_harness.py); everything else is
real: Claude Code 2.1.330, the hooks, the MCP server, the daemon, embedded SurrealDB and
the offline embedding model.

Session 1 (project A) edits a file, runs a failing command and stores a convention and
the fix (in the session scope); the Stop hook never blocks (tests/test_e2e_stop.py covers
its note); SessionEnd promotes the fix. Session 2 (project A) starts with both in its
SessionStart context and recalls them through the tool. Project B never sees project A's
memories but sees the user-scope one. A broken store never fails a session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engram_mcp.daemon.client import DaemonClient
from tests.claude_harness import (
    FakeAnthropic,
    Text,
    ToolUse,
    git_project,
    result_json,
    run_claude,
    tool_results,
)
from tests.daemon_env import stop_daemon

pytestmark = [pytest.mark.claude, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
MARKETPLACE = "engram-dev"
TOOL = "mcp__plugin_engram_engram__"
CONVENTION = "Convention: HTTP handlers live in src/handlers/ and always return JSON through respond()."
FIX = "Fix: `python3 -m pytest` failed with ModuleNotFoundError for yaml; install the test extra with pip install -e '.[test]' first."
PREFERENCE = "The user prefers short answers with the command first."
STOP_MARKER = "engram memory check"


def install_engram(home: Path, base: Path) -> dict[str, str]:
    """Install engram from a shipped copy of the repository into `home`, as a user would (marketplace
    add + install); returns the environment its sessions run with (this test run's Python)."""
    source = plugin_copy(base / "engram-src")
    env = {"ENGRAM_PYTHON": sys.executable}
    for args in (["plugin", "marketplace", "add", str(source)], ["plugin", "install", f"engram@{MARKETPLACE}"]):
        proc = run_claude(args, home=home, cwd=base, env_extra=env, timeout=120)
        assert proc.returncode == 0, f"claude {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return env


def plugin_copy(dest: Path) -> Path:
    """The repository as git would ship it (tracked + new files, no .venv/node_modules)."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.split(b"\0")
    for raw in filter(None, files):
        rel = raw.decode()
        src = REPO / rel
        if src.is_symlink():  # plugin/ (what the marketplace lists) links to the root's files
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).symlink_to(os.readlink(src))
            continue
        if not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return dest


@pytest.fixture(scope="module")
def world(tmp_path_factory, claude_cli_path):
    """One HOME with engram installed, shared by the sessions of this module (they build on each other)."""
    base = tmp_path_factory.mktemp("e2e")
    home = base / "home"
    home.mkdir()
    env = install_engram(home, base)
    w = {"home": home, "base": base, "env": env, "a": git_project(base / "project-a"), "b": git_project(base / "project-b")}
    yield w
    stop_daemon(home / ".claude" / "engram")


@pytest.fixture(scope="module")
def claude_cli_path():
    from tests.claude_harness import ensure_claude_installed

    return ensure_claude_installed()


def session(world, project: Path, script, prompt: str = "please help") -> tuple[dict, FakeAnthropic]:
    with FakeAnthropic(script) as api:
        proc = run_claude(
            ["-p", prompt, "--output-format", "json", "--allowedTools", f"{TOOL[:-2]},Write,Edit,Bash"],
            home=world["home"], cwd=project, env_extra=api.env(**world["env"]), timeout=240,
        )
    assert not api.errors, api.errors
    return result_json(proc), api


def system_context(req) -> str:
    """The SessionStart additionalContext as Claude Code hands it to the model."""
    texts = []
    for msg in req.body.get("messages", []):
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts.extend(b.get("text", "") for b in blocks if isinstance(b, dict))
    return "\n".join(t for t in texts if "engram-memory" in t)


def tool_text(req) -> str:
    return "\n".join(json.dumps(r.get("content")) for r in tool_results(req.body))


def test_session_one_captures_stores_and_promotes(world):
    a = world["a"]
    script = [
        ToolUse(TOOL + "store_memory", {"content": CONVENTION, "type": "semantic", "scope": "project", "importance": 0.8,
                                        "category": "convention", "tags": ["http", "handlers"]}),
        ToolUse(TOOL + "store_memory", {"content": PREFERENCE, "type": "semantic", "scope": "user", "importance": 0.8,
                                        "category": "preference"}),
        ToolUse("Write", {"file_path": str(a / "src" / "handlers" / "users.py"), "content": "def get_user():\n    return respond({})\n"}),
        ToolUse("Bash", {"command": "python3 -c 'import yaml_not_installed_xyz'", "description": "run tests"}),
        ToolUse("Edit", {"file_path": str(a / "src" / "handlers" / "users.py"), "old_string": "respond({})", "new_string": "respond({'ok': True})"}),
        ToolUse(TOOL + "store_memory", {"content": FIX, "type": "procedural", "scope": "session", "importance": 0.7,
                                        "category": "error_fix", "tags": ["pytest", "setup"]}),
        Text("Done; stored the fix."),
    ]
    result, api = session(world, a, script, "add a users handler and run the tests")
    assert result["result"] == "Done; stored the fix.", result
    assert api.remaining_turns == 0 and len(api.conversation) == len(script)  # the Stop hook never blocks
    assert not [r for r in api.conversation if STOP_MARKER in json.dumps(r.body["messages"])]
    errors = {r["tool_use_id"]: r for r in tool_results(api.conversation[-1].body) if r.get("is_error")}
    assert len(errors) == 1 and "yaml_not_installed_xyz" in json.dumps(list(errors.values())), errors  # only the failing command

    with DaemonClient(world["home"] / ".claude" / "engram", autostart=False, timeout=60) as c:
        status = c.call("status", project_root=str(a))
        found = c.call("recall", {"query": "ModuleNotFoundError yaml test extra", "scope": "project", "strengthen": False},
                       project_root=str(a))
        summaries = c.call("recall", {"query": "session summary", "category": "session_summary", "scope": "project",
                                      "strengthen": False}, project_root=str(a))
    texts = [m["content"] for m in found["memories"]]
    assert FIX in texts, f"SessionEnd did not promote the session's fix: {texts}"
    assert status["scopes"]["project"]["total"] >= 3, status  # convention, fix, session summary
    [summary] = [m["content"] for m in summaries["memories"]]
    # the summary says what the session learned (issue 33); the hooks' captures of the failed command
    # and the new file were scratch of the session: never promoted nor quoted
    assert FIX[:60] in summary, summary
    assert "yaml_not_installed_xyz" not in summary and "src/handlers/users.py" not in summary, summary


def test_session_two_starts_with_the_convention_and_the_fix_and_recalls_them(world):
    a = world["a"]
    result, api = session(world, a, [
        ToolUse(TOOL + "recall_memories", {"query": "how do I fix ModuleNotFoundError when running tests"}),
        "ok",
    ])
    first = api.conversation[0]
    context = system_context(first)
    assert CONVENTION in context and FIX in context and PREFERENCE in context
    assert "not instructions" in context  # fenced and labelled as data
    recalled = tool_text(api.conversation[1])
    assert "install the test extra" in recalled


def test_another_project_sees_user_memories_but_never_project_a(world):
    result, api = session(world, world["b"], [
        ToolUse(TOOL + "recall_memories", {"query": "HTTP handlers respond JSON convention"}),
        "ok",
    ])
    context = system_context(api.conversation[0])
    assert PREFERENCE in context
    assert CONVENTION not in context and FIX not in context
    assert "src/handlers" not in tool_text(api.conversation[1])


def test_a_failed_step_shows_the_memory_it_needs_before_claude_answers(world):
    """A memory another session stored (so not in this session's start block) reaches Claude right
    after the failed command that needed it: PostToolUseFailure's context, in the request Claude Code
    sends next, where the month replay's full mode reads it (bench/month/full.step_contexts)."""
    from bench.month.full import step_contexts

    b = world["b"]
    rule = "Project B's billing database listens on port 5433, not 5432: psql -h localhost -p 5433 billing_b."

    def store_elsewhere_then_connect(body):
        with DaemonClient(world["home"] / ".claude" / "engram", autostart=False, timeout=60) as c:
            c.call("store", {"content": rule, "type": "semantic", "scope": "project", "importance": 0.7},
                   project_root=str(b))
        return ToolUse("Bash", {"command": "psql -h localhost -p 5432 billing_b", "description": "connect"})

    result, api = session(world, b, [store_elsewhere_then_connect, "ok"], "open the billing database")
    assert result["result"] == "ok", result
    assert [r for r in tool_results(api.conversation[1].body) if r.get("is_error")]  # the command failed
    assert rule not in json.dumps(api.conversation[0].body["messages"])  # not in the start block
    [block] = step_contexts(api.conversation[1].body)
    assert "## Memory for this step" in block and "localhost -p 5433 billing_b" in block, block
    assert block.startswith("<engram-memory>") and block.endswith("</engram-memory>")


@pytest.mark.parametrize("breakage", ["corrupt", "file-instead-of-directory"])
def test_a_broken_project_store_never_fails_a_session(world, breakage):
    project = git_project(world["base"] / f"broken-{breakage}")
    store = project / ".claude" / "engram"
    if breakage == "corrupt":
        for sub, name in (("clog", "00000000000000000000.clog"), ("manifest", "00000000000000000000.manifest")):
            (store / "data" / sub).mkdir(parents=True)
            (store / "data" / sub / name).write_bytes(os.urandom(4096))
    else:
        store.parent.mkdir(parents=True)
        store.write_text("not a directory")
    result, api = session(world, project, [
        ToolUse("Write", {"file_path": str(project / "x.txt"), "content": "x\n"}),
        ToolUse(TOOL + "store_memory", {"content": "A note in a broken project.", "type": "semantic", "scope": "project"}),
        "still fine",
    ])
    assert result["result"] == "still fine" and result["is_error"] is False
    answer = tool_text(api.conversation[-1])
    assert "degraded" in answer or "queued" in answer, answer  # the tool said what happened


def _tree_state(root: Path) -> dict[str, tuple]:
    entries = [root] + [Path(d) / n for d, dirs, files in os.walk(root) for n in dirs + files]
    return {str(p): (p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns) for p in entries}


@pytest.mark.parametrize("link", [".claude/engram", ".claude"])
def test_a_repository_that_commits_a_link_changes_nothing_it_points_to(world, link):
    """Opening a repository whose `.claude/engram` (or `.claude`) is a committed link to a directory of
    the user's: the session runs, the store is refused and says why, the target keeps its files and modes."""
    victim = world["base"] / f"victim-{link.replace('/', '-')}"
    (victim / "bin").mkdir(parents=True)
    (victim / "bin" / "deploy.sh").write_text("#!/bin/sh\necho deploy\n")
    os.chmod(victim / "bin" / "deploy.sh", 0o755)
    os.chmod(victim, 0o755)
    before = _tree_state(victim)
    project = git_project(world["base"] / f"linked-{link.replace('/', '-')}")
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(victim)
    result, api = session(world, project, [
        ToolUse(TOOL + "store_memory", {"content": "A note in a repository with a committed link.", "type": "semantic",
                                        "scope": "project"}),
        "still fine",
    ])
    assert result["result"] == "still fine" and result["is_error"] is False
    answer = tool_text(api.conversation[-1])
    assert "queued" in answer and "symbolic link" in answer, answer
    assert _tree_state(victim) == before, "engram wrote or chmodded through the committed link"
    assert os.access(victim / "bin" / "deploy.sh", os.X_OK)
