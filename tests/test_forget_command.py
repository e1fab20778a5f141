"""/engram:forget finishes: confirm, then forget, with the real Claude Code CLI (issue 13.3).

A command's `allowed-tools` hold only while the command's turn runs: a "yes" typed in a later
message starts a turn where `forget_memory` needs a permission it does not have ("Claude
requested permissions to use mcp__plugin_engram_engram__forget_memory"). So the command must
confirm inside its own turn (the AskUserQuestion tool, in an interactive session), or, where
nobody can be asked (`claude -p`: AskUserQuestion is disabled there), list the matches and let
the user run `/engram:forget <ids>`, whose ids are the confirmation.

The model is a scripted stand-in that does what the command's text says at the confirmation
step (`ForgetModel`): ask with AskUserQuestion if the text says so, else ask in prose and end
the turn (the old text). The user's side is played as the text tells a user to act. Everything
else is real: Claude Code 2.1.330, its permission checks, the MCP server, the daemon, the store.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.claude_harness import (
    FakeAnthropic,
    Text,
    ToolUse,
    block_text,
    claude_bin,
    git_project,
    isolated_env,
    result_json,
    run_claude,
)
from tests.daemon_env import stop_daemon
from tests.test_plugin_markdown import PLUGIN, engram_env, lean_plugin

pytestmark = [pytest.mark.claude, pytest.mark.timeout(300)]

TOOL = "mcp__plugin_engram_engram__"
FORGET = f"/{PLUGIN}:forget"
MEMORY = "The staging host is staging-3.internal, reached through the bastion."
ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[a-zA-Z~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")
ID = re.compile(r"memory:[0-9A-Z]{26}")


class ForgetModel:
    """A model that follows /engram:forget's text at its confirmation step (see the module docstring)."""

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        self.asked_with_the_tool = False
        self.confirmed_in_advance = False

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = [m for m in body["messages"] if m["role"] in ("user", "assistant")]  # (2.1.330 adds role: system ones)
        last = messages[-1]
        results = [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"] \
            if isinstance(last.get("content"), list) else []
        if not results:  # a user's message: the command, or a reply to a question asked in prose
            said = block_text(last["content"])
            if FORGET in said and ID.search(said.split(FORGET, 1)[1].split("</command-args>")[0]):
                return self._show_then_forget(messages)
            if FORGET in said:
                self.confirmed_in_advance = "--yes" in said.split(FORGET, 1)[1][:40] and "`--yes`" in self._command_text(messages)
                return ToolUse(TOOL + "recall_memories", {"query": "the staging host", "limit": 10})
            return self._forget() if "all" in said.lower() else Text("Kept.")
        called = self._tool_names(messages[-2])
        result = results[-1]
        if called.get(result["tool_use_id"]) == TOOL + "recall_memories":
            listing = f"1. {self.memory_id} (project, semantic): {MEMORY}"
            if self.confirmed_in_advance:
                return [Text(listing), self._forget()]
            if "AskUserQuestion" in self._command_text(messages):
                self.asked_with_the_tool = True
                return [Text(listing), ToolUse("AskUserQuestion", {"questions": [{
                    "question": "Forget these 1 memories?", "header": "Forget", "multiSelect": False,
                    "options": [{"label": "Forget all 1", "description": "soft-delete, undoable for 30 days"},
                                {"label": "Keep them", "description": "forget nothing"}]}]})]
            return Text(f"{listing}\nForget it? Reply all or none.")  # the old text: wait for a later message
        if called.get(result["tool_use_id"]) == "AskUserQuestion":
            answer = block_text(result.get("content"))
            if "Forget all" in answer and not result.get("is_error"):
                return self._forget()
            if result.get("is_error"):  # no one to ask (claude -p): the text says to hand over the ids
                return Text(f"1. {self.memory_id}: {MEMORY}\nNothing forgotten. To forget it: `{FORGET} {self.memory_id}`")
            return Text("Kept.")
        if called.get(result["tool_use_id"], "").startswith("Bash"):
            return self._forget()
        return Text(f"Forgot {self.memory_id}; `forget_memory` with `undo: true` restores it within 30 days.")

    def _forget(self) -> ToolUse:
        return ToolUse(TOOL + "forget_memory", {"memory_id": self.memory_id, "reason": "user request: the staging host"})

    def _show_then_forget(self, messages: list[dict[str, Any]]) -> ToolUse:
        """The id path: show the memory with the command's own CLI line (pre-approved), then forget."""
        line = next(line for line in self._command_text(messages).splitlines() if "engram_mcp.interfaces.cli show <id>" in line)
        command = line.strip().strip("`").replace("<id>", self.memory_id)
        return ToolUse("Bash", {"command": command[command.index("CLAUDE_PLUGIN_DATA="):], "description": "show the memory"})

    @staticmethod
    def _command_text(messages: list[dict[str, Any]]) -> str:
        """The expanded command of this invocation (the last user message that carries one)."""
        texts = [block_text(m["content"]) for m in messages if m["role"] == "user"]
        return next((t for t in reversed(texts) if "Forget (soft-delete) engram memories" in t), "")

    @staticmethod
    def _tool_names(message: dict[str, Any]) -> dict[str, str]:
        content = message.get("content") if isinstance(message.get("content"), list) else []
        return {b["id"]: b["name"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"}


@pytest.fixture
def world(tmp_path: Path):
    home = tmp_path / "home"
    project = git_project(tmp_path / "project")
    plugin = lean_plugin(tmp_path / "plugins", with_server=True)
    env = engram_env(ENGRAM_DAEMON_IDLE_EXIT_SECONDS="20")
    stored = subprocess.run([sys.executable, "-m", "engram_mcp.interfaces.cli", "store", MEMORY, "--type", "semantic", "--scope", "project",
                             "--json"], env=isolated_env(home, **env), cwd=project, capture_output=True, text=True, timeout=120)
    assert stored.returncode == 0, stored.stdout + stored.stderr
    yield {"home": home, "project": project, "plugin": plugin, "env": env, "id": json.loads(stored.stdout)["memory_id"]}
    stop_daemon(home / ".claude" / "engram")


def status(world: dict[str, Any]) -> str:
    shown = subprocess.run([sys.executable, "-m", "engram_mcp.interfaces.cli", "show", world["id"], "--json"],
                           env=isolated_env(world["home"], **world["env"]), cwd=world["project"],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return json.loads(shown.stdout)["status"]


def test_the_command_confirms_in_its_own_turn() -> None:
    from tests.test_plugin_markdown import REPO_ROOT, split_frontmatter, tool_list

    meta, body = split_frontmatter((REPO_ROOT / "commands" / "forget.md").read_text())
    assert {TOOL + "recall_memories", TOOL + "forget_memory", "AskUserQuestion"} <= set(tool_list(meta["allowed-tools"]))
    assert "AskUserQuestion" in body and "never end\nthe turn to wait" in body
    assert "later message" not in body.replace("a later message could not act on it", "")
    assert f"{FORGET} <id> <id>" in body, "where nobody can be asked, the ids are the confirmation"


def test_print_mode_lists_then_the_ids_forget_without_a_permission_request(world) -> None:
    """claude -p: nobody can answer a question, so the listing hands the ids to a second invocation."""
    model = ForgetModel(world["id"])
    runs = []
    with FakeAnthropic([model] * 12) as api:
        def run(*args: str) -> dict[str, Any]:
            proc = run_claude(["-p", *args, "--output-format", "json", "--plugin-dir", world["plugin"]], home=world["home"],
                              cwd=world["project"], env_extra=api.env(**world["env"]), timeout=180)
            runs.append(result_json(proc))
            return runs[-1]

        listed = run(f"{FORGET} the staging host")
        assert status(world) != "forgotten", "nothing is forgotten before the user has chosen"
        if f"{FORGET} {world['id']}" in listed["result"]:
            run(f"{FORGET} {world['id']}")  # the user does what the listing says
        else:
            run("--continue", "all")  # the old text: the user answers in a later message
    assert not api.errors, api.errors
    assert [r["permission_denials"] for r in runs] == [[], []], runs
    assert status(world) == "forgotten"
    assert "undo: true" in runs[-1]["result"]


def _tui(world: dict[str, Any], api: FakeAnthropic) -> tuple[int, int]:
    """Claude Code's interactive UI on a pseudo-terminal, past onboarding, asking before tools (not auto mode)."""
    config = world["home"] / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    (config / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "customApiKeyResponses": {"approved": ["test-key"], "rejected": []},
        "projects": {str(world["project"]): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
    }))
    env = isolated_env(world["home"], **api.env(**world["env"]), TERM="xterm-256color", COLUMNS="120", LINES="40")
    pid, fd = pty.fork()
    if pid == 0:  # the child: become claude
        os.chdir(world["project"])
        os.execve(str(claude_bin()), [str(claude_bin()), "--permission-mode", "default", "--plugin-dir", str(world["plugin"])], env)
    return pid, fd


def _screen_until(fd: int, pattern: str, timeout_s: float) -> str:
    """Read the terminal until `pattern` (a regex over the text without escapes and spaces) shows, or time out."""
    seen = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
        text = re.sub(r"\s+", "", ANSI.sub(b"", seen).decode(errors="replace"))
        if re.search(pattern, text):
            return text
    return re.sub(r"\s+", "", ANSI.sub(b"", seen).decode(errors="replace"))


def test_interactive_session_asks_and_forgets_in_the_same_turn(world) -> None:
    """The user types the command, picks "Forget all 1" in the question, and the memory is forgotten: no permission dialog."""
    model = ForgetModel(world["id"])
    with FakeAnthropic([model] * 12) as api:
        pid, fd = _tui(world, api)
        try:
            assert "manualmodeon" in _screen_until(fd, r"manualmodeon", 60), "the prompt is ready"
            os.write(fd, f"{FORGET} the staging host".encode())
            _screen_until(fd, r"thestaginghost", 15)  # typed into the prompt
            time.sleep(0.5)
            os.write(fd, b"\r")
            asked = r"Forgetthese1memories\?.*Entertoselect|Replyallornone"  # the question's dialog, drawn whole
            screen = _screen_until(fd, asked, 30)
            if not re.search(asked, screen) and not api.conversation:
                os.write(fd, b"\r")  # the first Enter only completed the command's name in the menu
                screen = _screen_until(fd, asked, 90)
            time.sleep(0.5)
            if not model.asked_with_the_tool:
                os.write(fd, b"all\r")  # the old text: the user answers in a later message
            else:
                assert "1.Forgetall1" in screen, screen[-1500:]
            os.write(fd, b"\r")  # picks the highlighted first option ("Forget all 1"); harmless at an empty prompt
            screen = _screen_until(fd, r"Forgot" + re.escape(world["id"]) + r"|Doyouwantto|requestedpermissions", 90)
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(fd)
    assert not api.errors, api.errors
    assert not re.search(r"Doyouwantto|requestedpermissions", screen), "a permission dialog interrupted the command:\n" + screen[-1500:]
    assert model.asked_with_the_tool, "the confirmation came from the AskUserQuestion tool in the command's own turn"
    assert status(world) == "forgotten", screen[-1500:]


def test_print_mode_with_yes_forgets_the_matches_in_one_invocation(world) -> None:
    """`/engram:forget --yes <query>`: confirmed in advance, so a script forgets in one run, and is told what."""
    model = ForgetModel(world["id"])
    with FakeAnthropic([model] * 8) as api:
        result = result_json(run_claude(["-p", f"{FORGET} --yes the staging host", "--output-format", "json", "--plugin-dir",
                                         world["plugin"]], home=world["home"], cwd=world["project"],
                                        env_extra=api.env(**world["env"]), timeout=180))
    assert not api.errors, api.errors
    assert result["permission_denials"] == [] and not model.asked_with_the_tool
    assert status(world) == "forgotten"
    assert world["id"] in result["result"] and "undo: true" in result["result"]
