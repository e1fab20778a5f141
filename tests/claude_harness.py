"""Drive the real Claude Code CLI in tests, against a scripted stand-in for the Messages API.

Facts below were verified on this machine with Claude Code 2.1.330 (pinned in
tests/claude-cli/package.json).

Install
    ``npm ci`` in ``tests/claude-cli/`` (``make setup`` runs it) installs ``@anthropic-ai/claude-code``
    and the platform package (``@anthropic-ai/claude-code-linux-x64``, a 381 MB native ELF binary)
    into ``tests/claude-cli/node_modules/``; ``node_modules/.bin/claude`` there is a symlink to that
    binary, so Node's own version (20 here, although the package declares ``engines.node >= 22``)
    does not matter.
    ``npm ci`` takes ~5-7 s, with a warm or a cold npm cache (169 MB download, 364 MB on disk).
    npm 11 prints an "install-scripts not yet covered by allowScripts" warning for the
    package's postinstall; the binary works regardless. ``claude --version`` prints ``2.1.330 (Claude Code)``.

Isolation (:func:`isolated_env`)
    Claude Code keeps its state in ``$HOME/.claude.json`` and ``$HOME/.claude/`` (or
    ``$CLAUDE_CONFIG_DIR``). Every run gets a throwaway HOME, and the environment is built from
    a short allow-list rather than copied, so no real ``ANTHROPIC_*``/``CLAUDE_*``/proxy/OTEL
    variable leaks in. Even ``claude plugin validate`` writes ``.claude.json``, a backup and
    telemetry spool files under HOME. ``DISABLE_AUTOUPDATER=1``,
    ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and ``DISABLE_TELEMETRY=1`` keep it quiet.
    With ``ANTHROPIC_API_KEY`` set, ``-p`` mode needs no onboarding, login or trust dialog.

Permissions
    We run as root: ``--dangerously-skip-permissions`` and ``--permission-mode
    bypassPermissions`` are refused. Allow a plugin's MCP tools with
    ``--allowedTools mcp__plugin_<plugin>_<server>`` (the whole server) or the full tool name.
    Both refused flags exit 1 with "--dangerously-skip-permissions cannot be used with
    root/sudo privileges". Without the allow-list, ``-p`` denies the call without asking: the
    run still exits 0, ``permission_denials`` lists the call, and the model receives a
    ``tool_result`` with ``is_error: true`` and "Claude requested permissions to use <tool>, but
    you haven't granted it yet."

The fake API (:class:`FakeAnthropic`)
    With ``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`` and any ``ANTHROPIC_API_KEY`` Claude Code
    sends everything there: in ``-p`` mode only ``POST /v1/messages?beta=true`` (no HEAD/GET
    probe, no count_tokens, no title generation). A plain ``claude -p`` run takes ~0.5 s; with a
    plugin (hooks + a Python MCP server) and one tool call ~0.9 s.

    * The conversation streams (SSE) and offers ``tools``. Prompt-type hooks *also* stream, but
      with ``"tools": []`` and ``output_config.format`` = a JSON schema (``ok``, ``reason``), so
      the fake routes a messages request to the script only when it streams *and* has tools;
      every other one gets ``side_reply`` (as SSE or JSON, matching the request).
    * The SSE events the CLI accepts: ``message_start`` (with a full ``message`` incl. ``usage``),
      ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
      ``input_json_delta`` with the whole input as one ``partial_json``) / ``content_block_stop``
      per block, ``message_delta`` (``stop_reason`` ``end_turn`` or ``tool_use``, ``usage``),
      ``message_stop``. HTTP/1.1 with Content-Length works; the client keeps connections alive.
    * MCP tools are deferred by default (named in a ``role: system`` message, not in ``tools``;
      see :func:`deferred_tool_names`); a scripted ``tool_use`` can call them directly. Set
      ``ENABLE_TOOL_SEARCH=false`` to get their full schemas in ``tools``.
    * ``--output-format json`` prints one JSON object: ``result`` (final text), ``session_id``,
      ``is_error``, ``num_turns``, ``permission_denials``, ``usage``, ...

    ``tests/test_claude_harness.py`` documents (and checks) the request shapes, how hook output
    reaches the model, the hook stdin JSON and the environment of hooks and MCP servers; real
    examples are in ``tests/data/claude_hook_inputs/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Union

REPO_ROOT = Path(__file__).resolve().parent.parent
# The pinned CLI's package.json + lock. Not at the repository root: Claude Code runs `npm
# install` in an installed plugin whose root has a package.json (~370 MB per install).
CLAUDE_CLI_DIR = REPO_ROOT / "tests" / "claude-cli"

# Variables copied from the calling environment; everything else is dropped.
_PASSTHROUGH_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "USER",
    "LOGNAME",
    "SHELL",
    "SYSTEMROOT",  # Windows: needed by any subprocess
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


# --------------------------------------------------------------------------------------------
# Installing and running the CLI
# --------------------------------------------------------------------------------------------


def claude_bin() -> Path | None:
    """``tests/claude-cli/node_modules/.bin/claude``, or None when ``npm ci`` has not run there."""
    name = "claude.cmd" if os.name == "nt" else "claude"
    path = CLAUDE_CLI_DIR / "node_modules" / ".bin" / name
    return path if path.exists() else None


def pinned_claude_version() -> str:
    """The Claude Code version ``tests/claude-cli/package.json`` pins."""
    package = json.loads((CLAUDE_CLI_DIR / "package.json").read_text())
    return package["devDependencies"]["@anthropic-ai/claude-code"]


def ensure_claude_installed(timeout: float = 600) -> Path:
    """Return the CLI path, running ``npm ci`` in ``tests/claude-cli`` first if it is missing."""
    existing = claude_bin()
    if existing is not None:
        return existing
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            f"Claude Code is not installed (no {CLAUDE_CLI_DIR}/node_modules/.bin/claude) and npm is not on PATH; "
            f"install Node.js >= 20 with npm, then run `make setup` (or `npm ci` in {CLAUDE_CLI_DIR})"
        )
    proc = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=CLAUDE_CLI_DIR,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    installed = claude_bin()
    if proc.returncode != 0 or installed is None:
        raise RuntimeError(
            f"`npm ci` in {CLAUDE_CLI_DIR} failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
        )
    return installed


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment for running ``claude`` that cannot see or change the real user's config.

    ``home`` becomes HOME (and holds the XDG directories); keyword arguments are added last and
    win, e.g. ``isolated_env(tmp, ANTHROPIC_BASE_URL=api.base_url)``.
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    xdg = {
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_RUNTIME_DIR": home / ".run",
    }
    for key, path in xdg.items():
        path.mkdir(parents=True, exist_ok=True)
        env[key] = str(path)
    os.chmod(xdg["XDG_RUNTIME_DIR"], 0o700)
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "USERPROFILE": str(home),
            "TMPDIR": str(tmp),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_API_KEY": "test-key",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_claude(
    args: Sequence[str | os.PathLike[str]],
    *,
    home: Path,
    cwd: Path,
    env_extra: Mapping[str, str] | None = None,
    timeout: float = 120,
    input: str | None = None,  # noqa: A002 - mirrors subprocess.run
) -> subprocess.CompletedProcess[str]:
    """Run ``claude *args`` in ``cwd`` with :func:`isolated_env` and capture text output.

    stdin is closed (DEVNULL) unless ``input`` is given: ``claude -p`` otherwise waits on it.
    """
    binary = ensure_claude_installed()
    env = isolated_env(Path(home), **dict(env_extra or {}))
    return subprocess.run(
        [str(binary), *map(str, args)],
        cwd=cwd,
        env=env,
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def git_project(path: Path) -> Path:
    """Make ``path`` a git repository with one commit (a realistic project for ``claude -p``)."""
    path.mkdir(parents=True, exist_ok=True)
    git_env = {
        **{k: os.environ[k] for k in ("PATH",) if k in os.environ},
        "HOME": str(path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }
    (path / "README.md").write_text("# demo project\n")
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "init"]):
        subprocess.run(cmd, cwd=path, env=git_env, check=True, capture_output=True)
    return path


# --------------------------------------------------------------------------------------------
# The scripted Messages API
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """An assistant text block."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """An assistant tool_use block; the reply's stop_reason becomes ``tool_use``."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: "toolu_" + uuid.uuid4().hex[:24])


Block = Union[Text, ToolUse]
# One scripted reply: a string (text), a block, several blocks, or a callable that receives the
# request body (a dict) and returns any of those.
Turn = Union[str, Block, Sequence[Block], Callable[[dict[str, Any]], Any]]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw: bytes = b""

    @property
    def streaming(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def is_messages(self) -> bool:
        """A ``POST /v1/messages`` (Claude Code adds ``?beta=true``) with a JSON body."""
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages" and isinstance(self.body, dict)

    def text(self) -> str:
        """The JSON body as text: handy for ``"MARKER" in req.text()``."""
        return json.dumps(self.body, ensure_ascii=False) if self.body is not None else ""


def _normalise(turn: Any) -> list[Block]:
    if isinstance(turn, str):
        return [Text(turn)]
    if isinstance(turn, (Text, ToolUse)):
        return [turn]
    if isinstance(turn, Iterable):
        blocks = list(turn)
        if all(isinstance(b, (Text, ToolUse)) for b in blocks) and blocks:
            return blocks
    raise TypeError(f"a scripted turn must be str, Text, ToolUse or a list of them, not {turn!r}")


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def sse_message(blocks: Sequence[Block], model: str = "claude-fake") -> bytes:
    """The SSE byte stream of one assistant message made of ``blocks``."""
    stop_reason = "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn"
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.text}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(block.input))}
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def json_message(blocks: Sequence[Block], model: str = "claude-fake") -> dict[str, Any]:
    """A complete non-streaming Messages API response made of ``blocks``."""
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)})
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class FakeAnthropic:
    """A scripted Messages API on 127.0.0.1 (ephemeral port), run in a background thread.

    ``with FakeAnthropic(["hello", ToolUse("mcp__plugin_x_y__echo", {"text": "hi"})]) as api:``
    then run claude with ``env_extra=api.env()``.

    * ``script``: turns consumed in order by *streaming* ``POST /v1/messages`` requests (the main
      conversation). A turn is a string, :class:`Text`, :class:`ToolUse`, a list of blocks, or a
      callable ``f(body) -> turn`` deciding from the request. When the script is exhausted the
      reply is the text ``fallback_text`` ("ok").
    * Non-streaming ``POST /v1/messages`` requests (prompt-type hooks, side queries) get
      ``side_reply`` (default: a text block ``{"ok": true}``; a turn or callable as above) and are
      recorded in ``side_requests`` as well as in ``requests``.
    * ``/v1/messages/count_tokens`` answers ``{"input_tokens": 1}``; any other path answers
      ``{}``; HEAD/GET answer 200.

    Recorded: ``requests`` (every request, in arrival order), ``conversation`` (the streaming
    message requests), ``side_requests`` (the non-streaming message requests).
    """

    def __init__(
        self,
        script: Sequence[Turn] = (),
        *,
        side_reply: Turn = '{"ok": true}',
        fallback_text: str = "ok",
    ) -> None:
        self._script: list[Turn] = list(script)
        self.side_reply = side_reply
        self.fallback_text = fallback_text
        self.requests: list[RecordedRequest] = []
        self.conversation: list[RecordedRequest] = []
        self.side_requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="FakeAnthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeAnthropic is not running"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, **extra: str) -> dict[str, str]:
        """Environment additions pointing claude at this server."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": "test-key", **extra}

    # -- script ------------------------------------------------------------------------------

    @staticmethod
    def is_conversation(req: RecordedRequest) -> bool:
        """Whether a messages request belongs to the scripted conversation.

        The main loop (and subagents) stream *and* offer tools. Prompt-type hooks also stream
        in 2.1.330, but with ``"tools": []`` and a JSON-schema ``output_config.format``, so
        "streaming" alone does not tell them apart. Override in a subclass if a test runs
        claude with no tools at all.
        """
        return req.streaming and bool(req.body.get("tools"))

    def add_turns(self, *turns: Turn) -> None:
        with self._lock:
            self._script.extend(turns)

    @property
    def remaining_turns(self) -> int:
        with self._lock:
            return len(self._script)

    def _next_turn(self) -> Turn:
        with self._lock:
            return self._script.pop(0) if self._script else self.fallback_text

    def _resolve(self, turn: Turn, body: dict[str, Any]) -> list[Block]:
        if callable(turn) and not isinstance(turn, (Text, ToolUse)):
            turn = turn(body)
        return _normalise(turn)

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            if req.is_messages:
                (self.conversation if self.is_conversation(req) else self.side_requests).append(req)


def _make_handler(api: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
            pass

        def _read(self) -> RecordedRequest:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            req = RecordedRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
            api._record(req)
            return req

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _json(self, obj: Any, status: int = 200) -> None:
            self._send(status, json.dumps(obj).encode(), "application/json")

        def do_HEAD(self) -> None:  # noqa: N802
            self._read()
            self._json({})

        def do_GET(self) -> None:  # noqa: N802
            self._read()
            self._json({})

        def do_POST(self) -> None:  # noqa: N802
            req = self._read()
            route = req.path.split("?")[0]
            try:
                if route == "/v1/messages/count_tokens":
                    self._json({"input_tokens": 1})
                elif req.is_messages:
                    model = req.body.get("model", "claude-fake")
                    turn = api._next_turn() if api.is_conversation(req) else api.side_reply
                    blocks = api._resolve(turn, req.body)
                    if req.streaming:
                        self._send(200, sse_message(blocks, model), "text/event-stream")
                    else:
                        self._json(json_message(blocks, model))
                else:
                    self._json({})
            except Exception as exc:  # a broken script must show up in the test, not hang it
                api.errors.append(exc)
                self._json({"type": "error", "error": {"type": "api_error", "message": repr(exc)}}, 500)

        do_PUT = do_PATCH = do_DELETE = do_POST  # noqa: N815

    return Handler


# --------------------------------------------------------------------------------------------
# Helpers for reading requests
# --------------------------------------------------------------------------------------------


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools offered in a Messages API request body."""
    return [t.get("name", "") for t in body.get("tools") or []]


_DEFERRED_HEADER = "The following deferred tools are now available via ToolSearch"


def deferred_tool_names(body: Mapping[str, Any]) -> list[str]:
    """Tools Claude Code announced as *deferred* (loaded on demand through ToolSearch).

    By default 2.1.330 does not put MCP tools in ``tools``: it lists their names, one per line,
    after a "The following deferred tools are now available via ToolSearch..." paragraph in a
    ``role: system`` message. A scripted ``tool_use`` may still call them directly.
    """
    names: list[str] = []
    for message in body.get("messages") or []:
        text = block_text(message.get("content"))
        start = text.find(_DEFERRED_HEADER)
        if start < 0:
            continue
        lines = text[start:].split("\n")[1:]
        for line in lines:
            if not line.strip():
                break
            names.append(line.strip())
    return names


def available_tool_names(body: Mapping[str, Any]) -> list[str]:
    """Tools the model could call: those in ``tools`` plus the deferred ones."""
    return tool_names(body) + [n for n in deferred_tool_names(body) if n not in tool_names(body)]


def tool_results(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ``tool_result`` block in a request's messages."""
    found = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            found.extend(b for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    return found


def block_text(block: Any) -> str:
    """Flatten a content value (string, block or list of blocks) to its text."""
    if isinstance(block, str):
        return block
    if isinstance(block, list):
        return "".join(block_text(b) for b in block)
    if isinstance(block, dict):
        if "text" in block:
            return str(block["text"])
        if "content" in block:
            return block_text(block["content"])
    return ""


def result_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """Parse the ``--output-format json`` result of a run, failing with its stderr if it broke."""
    if proc.returncode != 0:
        raise AssertionError(f"claude exited {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError(f"claude did not print JSON:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}") from exc


def write_plugin(
    root: Path,
    name: str,
    *,
    hooks: Mapping[str, Any] | None = None,
    mcp_servers: Mapping[str, Any] | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write a throwaway plugin (manifest, optional ``hooks/hooks.json`` and ``.mcp.json``).

    ``hooks`` is the value of the ``"hooks"`` key (``{"SessionStart": [{"hooks": [...]}]}``);
    ``mcp_servers`` the value of ``"mcpServers"``; ``files`` extra relative path -> text.
    Load it with ``claude --plugin-dir <root>``.
    """
    root = Path(root)
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": name,
        "version": "0.0.1",
        "description": f"Throwaway test plugin {name}.",
        "author": {"name": "engram tests"},
    }
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest, indent=2))
    if hooks is not None:
        (root / "hooks").mkdir(exist_ok=True)
        (root / "hooks" / "hooks.json").write_text(json.dumps({"description": f"{name} test hooks", "hooks": hooks}, indent=2))
    if mcp_servers is not None:
        (root / ".mcp.json").write_text(json.dumps({"mcpServers": mcp_servers}, indent=2))
    for rel, text in (files or {}).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


# --------------------------------------------------------------------------------------------
# pytest fixtures: import them into a test module (``from tests.claude_harness import
# claude_cli, claude_home, claude_project, fake_api``) to use them.
# --------------------------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # the helpers above stay usable without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def claude_cli() -> Path:
        """The installed CLI (runs ``npm ci`` once if needed; fails loudly without npm)."""
        return ensure_claude_installed()

    @pytest.fixture
    def claude_home(tmp_path: Path) -> Path:
        """A throwaway HOME for one test."""
        home = tmp_path / "home"
        home.mkdir()
        return home

    @pytest.fixture
    def claude_project(tmp_path: Path) -> Path:
        """A throwaway git project with one commit, to run claude in."""
        return git_project(tmp_path / "project")

    @pytest.fixture
    def fake_api():
        """A running :class:`FakeAnthropic` with an empty script (use ``add_turns``)."""
        with FakeAnthropic() as api:
            yield api
            assert not api.errors, f"FakeAnthropic script raised: {api.errors!r}"
