"""The real Claude Code CLI, driven against FakeAnthropic: the harness works and the facts hold.

Everything here was observed with Claude Code 2.1.330 (tests/claude-cli/package.json pins it);
a test fails when a version bump changes one of these facts.

Runs and timings (2-core machine)
    ``claude --version`` ~10 ms. ``claude plugin validate`` ~0.5 s. ``claude -p`` against the
    fake API ~0.5 s; with a plugin (6 command hooks + a Python stdio MCP server) and one tool
    call ~0.9 s. The whole module runs in a few seconds.

What the fake API receives
    * Only ``POST /v1/messages?beta=true``. No HEAD/GET probe, no ``count_tokens``, no title
      generation in ``-p`` mode (the harness answers them anyway).
    * Headers: ``x-api-key: test-key``, ``anthropic-version: 2023-06-01``, ``anthropic-beta``
      (a long list), ``user-agent: claude-cli/2.1.330 (external, sdk-cli)``, ``x-app: cli``, and
      ``x-claude-code-session-id`` = the session id (also in ``metadata.user_id``, a JSON string).
    * The conversation request streams and has ``model`` (``claude-opus-5-5`` by default),
      ``system`` (a list of text blocks), ``tools``, ``messages``, ``thinking``,
      ``context_management``, ``output_config`` (``{"effort": "medium"}``), ``max_tokens``.
    * ``messages[0]`` is the user turn: ``<system-reminder>`` text blocks (git status,
      attribution) followed by the prompt as the last text block. ``messages[1]`` is a
      ``{"role": "system", ...}`` entry holding the environment, the deferred-tool list, skills,
      hook context and the date.
    * MCP tools are *deferred* by default: not in ``tools``, only named in ``messages[1]`` after
      "The following deferred tools are now available via ToolSearch". A scripted ``tool_use``
      may call them directly anyway. With ``ENABLE_TOOL_SEARCH=false`` they appear in ``tools``
      with their full ``input_schema`` and description.
    * The tool result comes back as ``{"role": "user", "content": [{"tool_use_id": ...,
      "type": "tool_result", "content": [{"type": "text", "text": "echo: ..."}]}]}``.

Hook output as the model sees it
    * SessionStart ``additionalContext`` X: the ``role: system`` message starts with
      ``"SessionStart hook additional context: X\\n\\n# Environment ..."``.
    * UserPromptSubmit ``additionalContext`` X: near the end of that same system message,
      ``"UserPromptSubmit hook additional context: X\\n\\nToday's date is ..."``.
    * PostToolUse ``additionalContext`` X: a new ``role: system`` message right after the
      tool_result, ``"PostToolUse:<tool name> hook additional context: X"``.

Hook stdin (examples in ``tests/data/claude_hook_inputs/<Event>.json``)
    Every event has ``session_id``, ``transcript_path``
    (``$HOME/.claude/projects/<cwd with every non-alphanumeric char as '-'>/<session>.jsonl``),
    ``cwd`` and ``hook_event_name``. SessionStart adds ``source: "startup"``; later events add
    ``prompt_id`` and (except SessionEnd) ``permission_mode``; UserPromptSubmit ``prompt``;
    Pre/PostToolUse ``tool_name``, ``tool_input``, ``tool_use_id``, ``mcp_server: {"name":
    "plugin:<plugin>:<server>", "source": "plugin"}`` and for PostToolUse ``tool_response`` (the
    MCP content list) and ``duration_ms``; Stop ``stop_hook_active``, ``last_assistant_message``,
    ``background_tasks``, ``session_crons``; SessionEnd ``reason`` (``"other"`` after ``-p``).
    SessionEnd runs before ``claude -p`` exits.

Environment of hooks and plugin MCP servers (``environment.json`` in the same directory)
    Both get ``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_PROJECT_DIR``, ``CLAUDE_PLUGIN_ROOT``,
    ``CLAUDE_PLUGIN_DATA`` (``$CLAUDE_CONFIG_DIR/plugins/data/<plugin>-inline`` for
    ``--plugin-dir``), ``CLAUDECODE=1``; SessionStart hooks also ``CLAUDE_ENV_FILE``. The MCP
    server inherits claude's whole environment (including ``ANTHROPIC_API_KEY``) and starts with
    the project as its cwd.

Prompt-type hooks
    A ``{"type": "prompt"}`` Stop hook is sent to the same endpoint, *streaming* (not
    non-streaming, as older reports say), with ``"tools": []``, the whole transcript as
    ``messages``, a final user message "... Condition: <prompt with $ARGUMENTS replaced by the
    hook input JSON>", and ``output_config.format`` = a JSON schema requiring ``ok`` (bool) and
    ``reason`` (str), optional ``impossible``. ``{"ok": true}`` without a reason, or non-JSON,
    let the stop go ahead (fail open). ``{"ok": false, "reason": R}`` blocks: the next
    conversation request ends with a user message ``"Stop hook feedback:\\n[<prompt>]: R"`` and
    the following Stop has ``stop_hook_active: true``. A hook that always blocks is cut off after
    8 re-prompts (9 conversation requests; the run still exits 0 with an empty ``result``).

Regenerate the example files with ``ENGRAM_CAPTURE_HOOK_INPUTS=1 pytest -m claude
tests/test_claude_harness.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.claude_harness import (
    REPO_ROOT,
    FakeAnthropic,
    ToolUse,
    available_tool_names,
    block_text,
    claude_cli,  # noqa: F401 - pytest fixture
    claude_home,  # noqa: F401 - pytest fixture
    claude_project,  # noqa: F401 - pytest fixture
    deferred_tool_names,
    result_json,
    run_claude,
    tool_names,
    tool_results,
    write_plugin,
)

pytestmark = pytest.mark.claude

HOOK_INPUTS_DIR = REPO_ROOT / "tests" / "data" / "claude_hook_inputs"
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")
PLUGIN = "probe"
SERVER = "echo"
ECHO_TOOL = f"mcp__plugin_{PLUGIN}_{SERVER}__echo"

# A stdio MCP server in plain stdlib: newline-delimited JSON-RPC, one tool `echo`.
ECHO_SERVER = r'''
import json, os, sys

if len(sys.argv) > 1:  # record the environment the client started us with
    with open(sys.argv[1], "w") as f:
        json.dump({"environ": dict(os.environ), "cwd": os.getcwd()}, f)

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

TOOL = {
    "name": "echo",
    "description": "Echo the given text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}

for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    rid, method = request.get("id"), request.get("method")
    if rid is None:  # a notification (notifications/initialized, ...)
        continue
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-06-18")
        result = {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo", "version": "0.0.1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": "echo: " + text}]}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no method " + str(method)}})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": result})
'''

# A command hook: appends {"stdin": <parsed hook input>, "env": <CLAUDE* vars>} to
# <dump>/<Event>.jsonl; SessionStart also injects MARKER-123.
DUMP_HOOK = r'''
import json, os, sys
event, dump = sys.argv[1], sys.argv[2]
record = {"stdin": json.loads(sys.stdin.read() or "null"),
          "env": {k: v for k, v in os.environ.items() if k.startswith("CLAUDE") or k == "AI_AGENT"}}
with open(os.path.join(dump, event + ".jsonl"), "a") as f:
    f.write(json.dumps(record) + "\n")
if event == "SessionStart":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "MARKER-123"}}))
'''


def probe_plugin(root: Path, dump: Path, *, stop_prompt: str | None = None) -> Path:
    """A plugin with a dumping command hook on every event and the echo MCP server."""
    dump.mkdir(parents=True, exist_ok=True)
    py = shlex.quote(sys.executable)

    def command(event: str) -> dict:
        return {
            "type": "command",
            "command": f'{py} "${{CLAUDE_PLUGIN_ROOT}}/hooks/dump_hook.py" {event} {shlex.quote(str(dump))}',
            "timeout": 30,
        }

    hooks: dict = {event: [{"hooks": [command(event)]}] for event in EVENTS}
    for event in ("PreToolUse", "PostToolUse"):
        hooks[event][0]["matcher"] = "*"
    if stop_prompt is not None:
        hooks["Stop"][0]["hooks"].append({"type": "prompt", "prompt": stop_prompt, "timeout": 30})
    return write_plugin(
        root,
        PLUGIN,
        hooks=hooks,
        mcp_servers={
            SERVER: {"command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/echo_server.py", str(dump / "mcp_env.json")]}
        },
        files={"echo_server.py": ECHO_SERVER, "hooks/dump_hook.py": DUMP_HOOK},
    )


def hook_records(dump: Path, event: str) -> list[dict]:
    path = dump / f"{event}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def system_texts(body: dict) -> list[str]:
    return [block_text(m.get("content")) for m in body["messages"] if m.get("role") == "system"]


# --------------------------------------------------------------------------------------------
# (a) install, (b) manifests
# --------------------------------------------------------------------------------------------


def test_claude_version_comes_from_the_pinned_npm_install(claude_cli, claude_home, tmp_path):
    from tests.claude_harness import CLAUDE_CLI_DIR, pinned_claude_version

    pinned = pinned_claude_version()
    assert claude_cli == CLAUDE_CLI_DIR / "node_modules" / ".bin" / "claude"

    proc = run_claude(["--version"], home=claude_home, cwd=tmp_path, timeout=60)

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{pinned} (Claude Code)"


@pytest.mark.parametrize("manifest", ["plugin.json", "marketplace.json"])
def test_manifest_passes_strict_validation_without_warnings(claude_cli, claude_home, manifest):
    path = REPO_ROOT / ".claude-plugin" / manifest

    proc = run_claude(["plugin", "validate", "--strict", "--json", path], home=claude_home, cwd=REPO_ROOT, timeout=60)

    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["success"] is True
    assert report["manifest"]["type"] == manifest.removesuffix(".json")
    assert report["manifest"]["errors"] == []
    assert report["manifest"]["warnings"] == []


def test_marketplace_lists_the_plugin_from_the_repository_root():
    """It lists ./plugin, the repository root's plugin as links (see tests/test_plugin_install.py)."""
    plugin = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text())
    marketplace = json.loads((REPO_ROOT / ".claude-plugin" / "marketplace.json").read_text())

    [entry] = marketplace["plugins"]
    assert (entry["name"], entry["source"]) == (plugin["name"], "./plugin") == ("engram", "./plugin")
    assert json.loads((REPO_ROOT / "plugin" / ".claude-plugin" / "plugin.json").read_text()) == plugin


# --------------------------------------------------------------------------------------------
# (c) a plain conversation
# --------------------------------------------------------------------------------------------


def test_print_mode_returns_the_scripted_text(claude_cli, claude_home, claude_project):
    with FakeAnthropic(["Hello from the fake API"]) as api:
        proc = run_claude(
            ["-p", "hello", "--output-format", "json"], home=claude_home, cwd=claude_project, env_extra=api.env()
        )

    result = result_json(proc)
    assert result["result"] == "Hello from the fake API"
    assert result["is_error"] is False
    assert not api.errors
    assert [r.path for r in api.requests] == ["/v1/messages?beta=true"]
    [request] = api.conversation
    assert request.streaming and tool_names(request.body)
    assert request.headers["x-api-key"] == "test-key"
    assert request.headers["x-claude-code-session-id"] == result["session_id"]
    first_user = request.body["messages"][0]
    assert first_user["role"] == "user"
    assert first_user["content"][-1] == {"type": "text", "text": "hello"}


# --------------------------------------------------------------------------------------------
# (d) hooks, (e) a tool call through a plugin MCP server
# --------------------------------------------------------------------------------------------


def test_plugin_hooks_reach_the_model_and_see_the_session(claude_cli, claude_home, claude_project, tmp_path):
    dump = tmp_path / "dump"
    plugin = probe_plugin(tmp_path / "probe", dump)

    with FakeAnthropic(["fine"]) as api:
        proc = run_claude(
            ["-p", "hi", "--output-format", "json", "--plugin-dir", plugin],
            home=claude_home,
            cwd=claude_project,
            env_extra=api.env(),
        )

    result = result_json(proc)
    first = api.conversation[0].body
    assert "MARKER-123" in json.dumps(first)
    assert any(t.startswith("SessionStart hook additional context: MARKER-123\n") for t in system_texts(first))
    [end] = hook_records(dump, "SessionEnd")
    assert end["stdin"]["hook_event_name"] == "SessionEnd"
    assert end["stdin"]["session_id"] == result["session_id"]
    assert end["stdin"]["cwd"] == str(claude_project)
    [start] = hook_records(dump, "SessionStart")
    assert start["stdin"]["source"] == "startup"
    assert start["env"]["CLAUDE_PROJECT_DIR"] == str(claude_project)
    assert start["env"]["CLAUDE_PLUGIN_ROOT"] == str(plugin)
    assert "CLAUDE_ENV_FILE" in start["env"]


def test_scripted_tool_use_calls_the_plugin_mcp_server(claude_cli, claude_home, claude_project, tmp_path):
    dump = tmp_path / "dump"
    plugin = probe_plugin(tmp_path / "probe", dump)

    def call_echo(body: dict) -> ToolUse:
        assert ECHO_TOOL in deferred_tool_names(body)  # MCP tools are deferred, not in `tools`
        [name] = [n for n in available_tool_names(body) if n.endswith("__echo")]
        return ToolUse(name, {"text": "remember the milk"}, id="toolu_01echo")

    with FakeAnthropic([call_echo, "all done"]) as api:
        proc = run_claude(
            ["-p", "use the echo tool", "--output-format", "json", "--plugin-dir", plugin,
             "--allowedTools", f"mcp__plugin_{PLUGIN}_{SERVER}"],
            home=claude_home,
            cwd=claude_project,
            env_extra=api.env(),
        )

    result = result_json(proc)
    assert not api.errors
    assert result["result"] == "all done"
    assert result["permission_denials"] == []
    assert len(api.conversation) == 2
    [tool_result] = tool_results(api.conversation[1].body)
    assert tool_result["content"] == [{"type": "text", "text": "echo: remember the milk"}]

    [post] = hook_records(dump, "PostToolUse")
    assert post["stdin"]["tool_name"] == ECHO_TOOL
    assert post["stdin"]["tool_input"] == {"text": "remember the milk"}
    assert post["stdin"]["tool_response"] == [{"type": "text", "text": "echo: remember the milk"}]
    assert post["stdin"]["mcp_server"] == {"name": f"plugin:{PLUGIN}:{SERVER}", "source": "plugin"}

    mcp = json.loads((dump / "mcp_env.json").read_text())
    assert mcp["environ"]["CLAUDE_CODE_SESSION_ID"] == result["session_id"]
    assert mcp["environ"]["CLAUDE_PROJECT_DIR"] == str(claude_project)
    assert mcp["environ"]["CLAUDE_PLUGIN_ROOT"] == str(plugin)
    assert mcp["environ"]["CLAUDE_PLUGIN_DATA"].endswith(f"/plugins/data/{PLUGIN}-inline")
    assert mcp["cwd"] == str(claude_project)

    check_hook_inputs_against_examples(dump, claude_home, claude_project, plugin, result["session_id"])


def test_tool_search_off_puts_plugin_tool_schemas_in_the_request(claude_cli, claude_home, claude_project, tmp_path):
    plugin = probe_plugin(tmp_path / "probe", tmp_path / "dump")

    with FakeAnthropic() as api:
        result_json(
            run_claude(
                ["-p", "hi", "--output-format", "json", "--plugin-dir", plugin],
                home=claude_home,
                cwd=claude_project,
                env_extra=api.env(ENABLE_TOOL_SEARCH="false"),
            )
        )

    [echo] = [t for t in api.conversation[0].body["tools"] if t["name"] == ECHO_TOOL]
    assert echo["description"] == "Echo the given text back."
    assert echo["input_schema"]["required"] == ["text"]
    assert deferred_tool_names(api.conversation[0].body) == []


# --------------------------------------------------------------------------------------------
# prompt-type hooks
# --------------------------------------------------------------------------------------------


def test_prompt_stop_hook_is_a_side_request_whose_refusal_reprompts_claude(
    claude_cli, claude_home, claude_project, tmp_path
):
    dump = tmp_path / "dump"
    plugin = probe_plugin(tmp_path / "probe", dump, stop_prompt="PROMPT-MARKER: was a memory saved? $ARGUMENTS")

    def judge(body: dict) -> str:
        condition = block_text(body["messages"][-1]["content"])
        if '"stop_hook_active":true' in condition:
            return '{"ok": true, "reason": "saved"}'
        return '{"ok": false, "reason": "REASON-777: save a memory first"}'

    with FakeAnthropic(["first answer", "second answer"], side_reply=judge) as api:
        result = result_json(
            run_claude(
                ["-p", "hi", "--output-format", "json", "--plugin-dir", plugin],
                home=claude_home,
                cwd=claude_project,
                env_extra=api.env(),
            )
        )

    assert not api.errors
    assert result["result"] == "second answer"
    assert len(api.conversation) == 2 and len(api.side_requests) == 2
    side = api.side_requests[0]
    assert side.streaming and side.body["tools"] == []
    assert side.body["output_config"]["format"]["type"] == "json_schema"
    assert side.body["output_config"]["format"]["schema"]["required"] == ["ok", "reason"]
    condition = block_text(side.body["messages"][-1]["content"])
    assert "Condition: PROMPT-MARKER: was a memory saved? {" in condition  # $ARGUMENTS -> hook input JSON
    assert '"hook_event_name":"Stop"' in condition
    feedback = block_text(api.conversation[1].body["messages"][-1]["content"])
    assert feedback.startswith("Stop hook feedback:\n")
    assert "REASON-777: save a memory first" in feedback
    assert [r["stdin"]["stop_hook_active"] for r in hook_records(dump, "Stop")] == [False, True]

    if os.environ.get("ENGRAM_CAPTURE_HOOK_INPUTS"):
        body = dict(side.body)
        example = {
            "note": "Trimmed body of the request a prompt-type Stop hook sends (Claude Code 2.1.330).",
            "keys": sorted(body),
            "stream": body["stream"],
            "tools": body["tools"],
            "output_config": body["output_config"],
            "system_last": body["system"][-1]["text"],
            "last_message": body["messages"][-1],
        }
        normalise = normaliser(claude_home, claude_project, result["session_id"], plugin)
        HOOK_INPUTS_DIR.mkdir(parents=True, exist_ok=True)
        (HOOK_INPUTS_DIR / "Stop.prompt_hook_request.json").write_text(json.dumps(normalise(example), indent=2) + "\n")


# --------------------------------------------------------------------------------------------
# Example hook inputs: compared with tests/data/claude_hook_inputs, regenerated on request
# --------------------------------------------------------------------------------------------

# Keys whose values change on every run, replaced in the stored examples.
VOLATILE = {
    "CLAUDE_PID": "<pid>",
    "CLAUDE_CODE_MESSAGING_TOKEN": "<token>",
    "prompt_id": "11111111-1111-4111-8111-111111111111",
}


def normaliser(home: Path, project: Path, session_id: str, plugin: Path | None = None):
    """Replace run-specific paths and ids with stable placeholders."""
    replacements = [(str(plugin), "/path/to/probe-plugin")] if plugin is not None else []
    replacements += [
        (str(project), "/home/user/project"),
        (re.sub(r"[^A-Za-z0-9]", "-", str(project)), "-home-user-project"),
        (str(home), "/home/user"),
        (session_id, "00000000-0000-4000-8000-000000000000"),
    ]

    def normalise(value):
        if isinstance(value, str):
            for old, new in replacements:
                value = value.replace(old, new)
            return re.sub(r"cc-socks/\d+\.sock", "cc-socks/<pid>.sock", value)
        if isinstance(value, list):
            return [normalise(v) for v in value]
        if isinstance(value, dict):
            return {k: VOLATILE[k] if k in VOLATILE else normalise(v) for k, v in value.items()}
        return value

    return normalise


def check_hook_inputs_against_examples(dump: Path, home: Path, project: Path, plugin: Path, session_id: str) -> None:
    records = {event: hook_records(dump, event) for event in EVENTS}
    for event, recs in records.items():
        assert len(recs) == 1, f"{event} fired {len(recs)} times"
        stdin = recs[0]["stdin"]
        assert stdin["hook_event_name"] == event
        assert stdin["session_id"] == session_id
        assert stdin["cwd"] == str(project)
        assert stdin["transcript_path"].endswith(f"/{session_id}.jsonl")

    normalise = normaliser(home, project, session_id, plugin)
    if os.environ.get("ENGRAM_CAPTURE_HOOK_INPUTS"):
        HOOK_INPUTS_DIR.mkdir(parents=True, exist_ok=True)
        for event, recs in records.items():
            (HOOK_INPUTS_DIR / f"{event}.json").write_text(json.dumps(normalise(recs[0]["stdin"]), indent=2) + "\n")
        mcp = json.loads((dump / "mcp_env.json").read_text())
        environment = {
            "note": "CLAUDE* variables seen by plugin hooks (per event) and by a plugin stdio MCP server "
            "(Claude Code 2.1.330, claude -p --plugin-dir). The MCP server inherits the whole environment.",
            "hooks": {event: dict(sorted(normalise(recs[0]["env"]).items())) for event, recs in records.items()},
            "mcp_server": dict(
                sorted(normalise({k: v for k, v in mcp["environ"].items() if k.startswith("CLAUDE") or k == "AI_AGENT"}).items())
            ),
            "mcp_server_cwd": normalise(mcp["cwd"]),
        }
        (HOOK_INPUTS_DIR / "environment.json").write_text(json.dumps(environment, indent=2) + "\n")

    for event, recs in records.items():
        example = HOOK_INPUTS_DIR / f"{event}.json"
        if example.exists():
            missing = set(json.loads(example.read_text())) - set(recs[0]["stdin"])
            assert not missing, f"{event} hook input lost keys {sorted(missing)} (see {example})"


# --------------------------------------------------------------------------------------------
# FakeAnthropic on its own
# --------------------------------------------------------------------------------------------


def test_fake_api_answers_probes_and_side_requests_without_consuming_the_script():
    import urllib.request

    def call(method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(api.base_url + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()

    with FakeAnthropic(["scripted"], side_reply=lambda body: '{"ok": false, "reason": "r"}') as api:
        assert call("HEAD", "/")[0] == 200
        assert call("GET", "/v1/models")[0] == 200
        assert json.loads(call("POST", "/v1/messages/count_tokens", {"messages": []})[1]) == {"input_tokens": 1}
        status, raw = call("POST", "/v1/messages", {"model": "m", "messages": [], "max_tokens": 5})
        side = json.loads(raw)
        streamed = call("POST", "/v1/messages?beta=true", {"model": "m", "messages": [], "stream": True,
                                                           "tools": [{"name": "t"}]})[1].decode()

    assert status == 200 and side["content"] == [{"type": "text", "text": '{"ok": false, "reason": "r"}'}]
    assert side["stop_reason"] == "end_turn"
    events = [line.removeprefix("event: ") for line in streamed.splitlines() if line.startswith("event: ")]
    assert events == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                      "message_delta", "message_stop"]
    assert '"text": "scripted"' in streamed
    assert api.remaining_turns == 0
    assert [r.method for r in api.requests] == ["HEAD", "GET", "POST", "POST", "POST"]
    assert len(api.side_requests) == 1 and len(api.conversation) == 1
