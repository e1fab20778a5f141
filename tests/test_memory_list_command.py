"""`/engram:memory list` in the real Claude Code CLI: browsing what engram knows, newest first.

The command calls `recall_memories` without a query (issue 13, item 4); the model is a
scripted stand-in for the Messages API (tests/claude_harness.py), the MCP server, the owner
process and the store are real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.claude_harness import (
    FakeAnthropic,
    ToolUse,
    block_text,
    claude_cli,  # noqa: F401 - pytest fixture
    claude_home,  # noqa: F401 - pytest fixture
    claude_project,  # noqa: F401 - pytest fixture
    isolated_env,
    result_json,
    run_claude,
    tool_results,
)
from tests.daemon_env import stop_daemon
from tests.test_plugin_markdown import PLUGIN, PREFIX, command_text, engram_env, lean_plugin

SERVER_WAIT_ATTEMPTS = 20  # `claude -p` may send the first request before the MCP server has connected


@pytest.mark.claude
def test_memory_list_browses_newest_first_with_filters(claude_cli, claude_home, claude_project, tmp_path):
    plugin = lean_plugin(tmp_path, with_server=True)
    env = isolated_env(claude_home, **engram_env())

    def cli(*args: str) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, "-m", "engram_mcp.interfaces.cli", *args, "--json"], cwd=claude_project, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    seen: dict[str, Any] = {"attempts": 0}
    call = ToolUse(PREFIX + "recall_memories", {"type": "procedural", "limit": 2})

    def turn(body: dict) -> Any:
        results = tool_results(body)
        if not results:
            seen["command"] = command_text(body)
            return call
        last = results[-1]
        text = block_text(last["content"])
        if last.get("is_error") and seen["attempts"] < SERVER_WAIT_ATTEMPTS and "No such tool" in text:
            seen["attempts"] += 1
            time.sleep(1)
            return ToolUse(call.name, dict(call.input))
        seen["result"], seen["is_error"] = text, last.get("is_error")
        return "listed"

    try:
        older = cli("store", "Run the linters with make lint", "--type", "procedural")["memory_id"]
        cli("store", "The API is served by uvicorn", "--type", "semantic")
        newer = cli("store", "Release by tagging vX.Y.Z and pushing the tag", "--type", "procedural")["memory_id"]
        with FakeAnthropic([turn] * (SERVER_WAIT_ATTEMPTS + 3)) as api:
            result = result_json(run_claude(
                ["-p", f"/{PLUGIN}:memory list --type procedural", "--output-format", "json", "--plugin-dir", plugin],
                home=claude_home, cwd=claude_project, env_extra=api.env(**engram_env()), timeout=180))
    finally:
        stop_daemon(claude_home / ".claude" / "engram")

    assert not api.errors and result["permission_denials"] == [], (api.errors, result)
    assert "without a query" in seen["command"]  # the command tells the model how to list
    assert not seen["is_error"], seen["result"]
    listed = json.loads(seen["result"])
    assert [m["id"] for m in listed["memories"]] == [newer, older]  # newest first, the semantic one filtered out
    assert listed["total_matched"] == 2 and all(m["access_count"] == 0 for m in listed["memories"])
