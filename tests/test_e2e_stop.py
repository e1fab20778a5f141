"""engram's Stop hook in real Claude Code sessions (issue 13, item 2).

The plugin is installed from this repository's marketplace into a throwaway HOME, the model
is a scripted stand-in that records every request (tests/claude_harness.py); the hooks, the
MCP server, the daemon and the stores are real. One conversation, continued turn by turn
with `claude -p --continue`:

1. an ordinary task ("...; it should be off by default") is not blocked: one request per
   model step, no note left;
2. an `/engram:remember` turn leaves no note, though its text says "from now on";
3. a turn stating a rule for the future is not blocked either, but leaves a note;
4. the next prompt carries the note: it reaches the model once (not twice, as a blocked
   Stop's reason did), and Claude stores the rule;
5. the note is not repeated on the turn after.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.claude_harness import FakeAnthropic, Text, ToolUse, git_project, result_json, run_claude
from tests.daemon_env import stop_daemon
from tests.test_e2e_claude import TOOL, install_engram

pytestmark = [pytest.mark.claude, pytest.mark.slow]

NOTE_MARK = "engram memory check"
BLOCK_MARKS = ("Stop hook feedback", "Stop hook blocking error")
RULE = "Run the linter (make lint) before reporting a task as done."


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """engram installed in a throwaway HOME, one project; the turns of this module build on each other."""
    from tests.claude_harness import ensure_claude_installed

    ensure_claude_installed()
    base = tmp_path_factory.mktemp("e2e-stop")
    home = base / "home"
    home.mkdir()
    env = install_engram(home, base)
    w = {"home": home, "env": env, "project": git_project(base / "project"), "turns": 0}
    yield w
    stop_daemon(home / ".claude" / "engram")


def turn(world, prompt: str, script) -> tuple[dict, FakeAnthropic]:
    """One `claude -p` turn of the module's conversation (continued after the first)."""
    args = ["-p", prompt, "--output-format", "json", "--allowedTools", f"{TOOL[:-2]},Write,Edit,Bash"]
    if world["turns"]:
        args.append("--continue")
    with FakeAnthropic(script) as api:
        proc = run_claude(args, home=world["home"], cwd=world["project"], env_extra=api.env(**world["env"]), timeout=240)
    world["turns"] += 1
    assert not api.errors, api.errors
    return result_json(proc), api


def notes(world) -> list[Path]:
    folder = world["home"] / ".claude" / "engram" / "stop-notes"
    return sorted(folder.glob("*.json")) if folder.exists() else []


def texts(api: FakeAnthropic) -> list[str]:
    return [json.dumps(r.body.get("messages", []), ensure_ascii=False) for r in api.conversation]


def assert_not_blocked(api: FakeAnthropic, steps: int) -> None:
    """Exactly one conversation request per scripted model step, and no Stop-hook reason anywhere."""
    assert len(api.conversation) == steps, [t[-300:] for t in texts(api)]
    for text in texts(api):
        assert not any(mark in text for mark in BLOCK_MARKS), text[-500:]


def test_an_ordinary_task_is_not_blocked(world):
    target = world["project"] / "cli.py"
    result, api = turn(world, "Add a --verbose flag; it should be off by default", [
        ToolUse("Write", {"file_path": str(target), "content": "import argparse\np = argparse.ArgumentParser()\n"
                                                                "p.add_argument('--verbose', action='store_true')\n"}),
        Text("Added --verbose (off by default)."),
    ])
    assert result["result"] == "Added --verbose (off by default).", result
    assert_not_blocked(api, steps=2)
    assert not notes(world)


def test_an_engram_remember_command_leaves_no_note(world):
    result, api = turn(world, "/engram:remember from now on we always tag releases with a v prefix", [
        ToolUse(TOOL + "store_memory", {"content": "Release tags use a v prefix (v1.2.3).", "type": "procedural",
                                        "scope": "project", "importance": 0.7}),
        Text("Stored."),
    ])
    assert result["result"] == "Stored.", result
    assert_not_blocked(api, steps=2)
    assert not notes(world)


def test_a_rule_for_the_future_is_not_blocked_but_noted(world):
    result, api = turn(world, "From now on, run the linter before you tell me a task is done.", [Text("Understood.")])
    assert result["result"] == "Understood.", result
    assert_not_blocked(api, steps=1)
    assert len(notes(world)) == 1


def test_the_next_prompt_carries_the_note_once_and_claude_stores_the_rule(world):
    result, api = turn(world, "Now rename the flag to --loud please.", [
        ToolUse(TOOL + "store_memory", {"content": RULE, "type": "procedural", "scope": "project", "importance": 0.8,
                                        "tags": ["lint"]}),
        Text("Stored the rule and renamed the flag."),
    ])
    assert result["result"] == "Stored the rule and renamed the flag.", result
    assert_not_blocked(api, steps=2)
    # the note reaches the model once per request (with the prompt), never twice
    assert [t.count(NOTE_MARK) for t in texts(api)] == [1, 1]
    assert not notes(world)  # taken
    stored = [b for r in api.conversation[1:] for m in r.body["messages"] if isinstance(m.get("content"), list)
              for b in m["content"] if b.get("type") == "tool_result"]
    assert stored and not stored[-1].get("is_error"), stored


def test_the_note_is_not_repeated_on_the_turn_after(world):
    result, api = turn(world, "What is left to do on this branch?", [Text("Nothing else.")])
    assert result["result"] == "Nothing else.", result
    assert_not_blocked(api, steps=1)
    assert texts(api)[0].count(NOTE_MARK) <= 1  # at most the earlier turn's, as history
    assert not notes(world)


@pytest.mark.parametrize("style,expected", [("json", 2), ("exit2", 1)])
def test_how_claude_code_delivers_a_blocking_stop_reason(tmp_path, style, expected):
    """Why engram does not block (docs/architecture.md#stop-hook): Claude Code 2.1.330 hands the reason
    of a `{"decision": "block", "reason": R}` Stop hook to the model twice ("Stop hook feedback" and
    "Stop hook blocking error"), the stderr of an exit-2 hook once; either costs one more request."""
    from tests.claude_harness import write_plugin

    emit = {"json": 'print(json.dumps({"decision": "block", "reason": "REASON-4711 store it"}))',
            "exit2": 'sys.stderr.write("REASON-4711 store it"); sys.exit(2)'}[style]
    script = f"import json, sys\np = json.load(sys.stdin)\nif not p.get('stop_hook_active'):\n    {emit}\n"
    plugin = write_plugin(tmp_path / "probe", "probe", files={"stop.py": script},
                          hooks={"Stop": [{"hooks": [{"type": "command", "command": f"python3 {tmp_path / 'probe' / 'stop.py'}"}]}]})
    with FakeAnthropic(["first answer", "second answer"]) as api:
        proc = run_claude(["-p", "hello", "--output-format", "json", "--plugin-dir", str(plugin)], home=tmp_path / "home",
                          cwd=git_project(tmp_path / "project"), env_extra=api.env(), timeout=120)
    assert result_json(proc)["result"] == "second answer"
    assert len(api.conversation) == 2  # the block cost one more main-model request
    assert [t.count("REASON-4711") for t in texts(api)] == [0, expected]
