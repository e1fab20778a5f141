"""engram's stand-in MCP server while a fresh install prepares its Python environment.

The first start after `claude plugin install` has no virtualenv yet, and building one
(`bin/engram-bootstrap`: pip install from PyPI) takes 40-60 s while Claude Code gives an MCP
server 30 s to connect. So `bin/engram-python` starts the build detached and runs this
instead: the standard library only (`python3 -S -P -m engram_mcp.interfaces.bootstrap_server`), it
speaks MCP over stdio (JSON-RPC 2.0, one message per line) with the real server's identity,
capabilities and exactly its tools (`operations.TOOLS`, the registry's), so the session connects at once.

`tools/call`, depending on where the build stands (checked on every call):
- building: a tool error whose text is the envelope `{"error": "unavailable", "message":
  "engram is preparing its Python environment (...; log: ...); try again shortly",
  "degraded": true, "retry_possible": true}`; writes (`store_memory`, `update_memory`,
  `forget_memory`, `promote_memory`) are queued durably in the spool instead
  (`{"queued": true, "degraded": true, ...}`) and applied by the first daemon.
- failed (`<data>/bootstrap.failed`, or the build stopped): the same, saying what failed,
  with the log's path and `retry_possible: false`; writes are still queued.
- ready (the build's stamp matches `pyproject.toml`): relayed to the daemon exactly as
  `server.py` does (`tool_calls`: same ops, validation, results and envelopes), the daemon
  running on the new virtualenv.
Only arguments' sizes are checked before the environment exists (`jsonschema` lives in it);
the daemon validates queued writes when it applies them and sets invalid ones aside in
`spool/rejected/`. Resources are listed as none: the real server has them from the next
session on.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engram_mcp import __version__
from engram_mcp.core.errors import DaemonUnavailable, EngramError
from engram_mcp.core.operations import SCHEMAS, TOOL_OPS, TOOLS
from engram_mcp.core.paths import lock_held
from engram_mcp.core.schemas import with_mcp_origin
from engram_mcp.daemon.client import PLUGIN_VENV_PYTHON, DaemonClient, plugin_env_python
from engram_mcp.interfaces import jsonrpc_wire
from engram_mcp.interfaces.tool_calls import (
    _coerce_integers,
    _compact,
    _envelope,
    _error_envelope,
    _guard,
    _json,
    _Validators,
    project_root,
    queue_locally,
    session_id,
)

log = logging.getLogger("engram.mcp")

# What server.py's SDK answers to `initialize` (tests/test_bootstrap_server.py compares).
SERVER_INFO = {"name": "engram", "title": "engram memory", "version": __version__}
CAPABILITIES = {"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}}
# The revisions the mcp SDK negotiates through `initialize` (mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS):
# the client's one if known, else the newest.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# Files of bin/engram-bootstrap in the data directory.
VENV_PYTHON = PLUGIN_VENV_PYTHON
FAILED = "bootstrap.failed"
LOCK = "bootstrap.lock"
LOG = "bootstrap.log"
STOPPED_GRACE_S = 15.0  # a build not running this long after our start is not about to start

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = (
    jsonrpc_wire.PARSE_ERROR,
    jsonrpc_wire.INVALID_REQUEST,
    jsonrpc_wire.METHOD_NOT_FOUND,
    jsonrpc_wire.INVALID_PARAMS,
)


class Unavailable(DaemonUnavailable):
    """engram's Python environment is not there (yet)."""

    code = "unavailable"


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Environment:
    """Where the build of `<data>/venv` stands: ready, building or failed."""

    def __init__(self, root: Path, data: Path) -> None:
        self.root, self.data = Path(root), Path(data)
        self.log_path = self.data / LOG
        self.started = time.monotonic()

    @property
    def python(self) -> Path:
        return self.data / VENV_PYTHON

    def ready(self) -> bool:
        """The build's stamp matches this plugin's pyproject.toml (the python alone proves nothing)."""
        return plugin_env_python(self.data, self.root) is not None

    def _build_running(self) -> bool:
        return lock_held(self.data / LOCK)

    def state(self) -> tuple[str, str]:
        """("ready" | "building" | "failed", why it failed)."""
        if self.ready():
            return "ready", ""
        if not self._build_running():
            try:
                failure = (self.data / FAILED).read_text(errors="replace").strip()
            except OSError:
                failure = ""
            if not failure and time.monotonic() - self.started > STOPPED_GRACE_S:
                failure = "the build stopped before it finished"
            if failure and not self.ready():  # (it may have finished just now)
                return "failed", failure
        return ("ready", "") if self.ready() else ("building", "")

    def unavailable(self, state: str, failure: str, *, write: bool) -> Unavailable:
        """The error for a call that cannot run; for a write, worded to precede "the write was queued"."""
        if state == "failed":
            lines = failure.splitlines()
            last = next((line.strip() for line in reversed(lines[1:]) if line.strip()), "")
            what = lines[0] + (f" ({last[:300]})" if last else "")
            err = Unavailable(
                f"engram could not prepare its Python environment: {what}; log: {self.log_path}. "
                "It needs Python 3.11+ with venv and pip, and access to PyPI; fix the cause and restart Claude Code"
            )
            err.retry_possible = False
            return err
        if write:
            return Unavailable(
                f"engram is preparing its Python environment (first run, about a minute; log: {self.log_path})"
            )
        return Unavailable(
            f"engram is preparing its Python environment (first run, about a minute; log: {self.log_path}); try again shortly"
        )


class StandIn:
    """The MCP request handlers (no I/O here: `serve` does the stdio)."""

    def __init__(self, env: Environment, user_dir: Path | None = None) -> None:
        self.env = env
        self.user_dir = user_dir
        self.validators = _Validators()
        self._client: DaemonClient | None = None
        self._client_lock = threading.Lock()
        self._activated = False

    # -- JSON-RPC ---------------------------------------------------------------------------
    def handle(self, message: Any) -> dict[str, Any] | None:
        """The response to one message, or None (notifications, stray responses)."""
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid request: a message must be a JSON object")
        rid = message.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
            return _error(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer")
        method = message.get("method")
        if not isinstance(method, str) and "id" in message and ("result" in message or "error" in message):
            return None  # a response: we never send requests
        if "id" not in message:
            return None  # notifications/initialized, notifications/cancelled, ... (and invalid ones: nobody waits)
        if message.get("jsonrpc") != "2.0":
            return _error(rid, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
        if not isinstance(method, str):
            return _error(rid, INVALID_REQUEST, "Invalid request: method must be a string")
        params = message.get("params") or {}
        try:
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "params must be an object")
            return {"jsonrpc": "2.0", "id": rid, "result": self.dispatch(method, params)}
        except RpcError as exc:
            return _error(rid, exc.code, exc.message, exc.data)

    def dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            return {"capabilities": CAPABILITIES, "protocolVersion": version, "serverInfo": SERVER_INFO}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": TOOLS}
        if method == "tools/call":
            return self.call_tool(params)
        if method == "resources/list":
            return {"resources": []}
        if method == "resources/templates/list":
            return {"resourceTemplates": []}
        if method == "resources/read":
            raise RpcError(
                INVALID_PARAMS,
                "engram's resources are available from the next session (its Python environment is being prepared)",
            )
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)

    # -- tools ------------------------------------------------------------------------------
    def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str) or name not in TOOL_OPS:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {str(name)[:80]}; tools: {', '.join(TOOL_OPS)}")
        op = TOOL_OPS[name]
        try:
            raw = params.get("arguments")
            if raw is None:
                raw = {}
            if not isinstance(raw, dict):
                return _fail(_envelope("invalid_input", "arguments must be an object", field="arguments"))
            args = {k: v for k, v in raw.items() if v is not None}  # null = not given
            surrogate = jsonrpc_wire.surrogate_problem(args)
            if surrogate is not None:
                return _fail(_envelope("invalid_input", surrogate[1], field=surrogate[0]))
            state, failure = self.env.state()
            if state == "ready":
                self._activate()
            problem = self._check(name, args)
            if problem is not None:
                return _fail(problem)
            args = with_mcp_origin(name, _coerce_integers(args, SCHEMAS[name]))
            if state != "ready":
                queued = queue_locally(self.user_dir, name, op, args, self.env.unavailable(state, failure, write=True))
                if queued is not None:
                    return _ok(queued)
                raise self.env.unavailable(state, failure, write=False)
            try:
                return _ok(self._daemon(op, args))
            except DaemonUnavailable as exc:
                queued = queue_locally(self.user_dir, name, op, args, exc)
                if queued is None:
                    raise
                return _ok(queued)
        except Exception as exc:
            return _fail(_error_envelope(exc))

    def _check(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """server.py's validation when jsonschema can be imported, else the size limits only."""
        try:
            return self.validators.check(tool, args)
        except ImportError:
            return _guard(args)

    def _activate(self) -> None:
        """Once the environment is ready: the daemon runs on it, and its jsonschema validates."""
        if self._activated:
            return
        self._activated = True
        os.environ["ENGRAM_PYTHON"] = str(self.env.python)  # client.find_python's first choice
        site = self.env.data / "venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        if site.is_dir():  # same interpreter version as ours: its pure and compiled modules import here
            sys.path.append(str(site))
            try:
                self.validators.load()
            except Exception as exc:  # the size limits still apply, and the daemon validates
                log.warning("jsonschema from %s is not usable here: %s", site, exc)
            finally:
                sys.path.remove(str(site))  # nothing else may come from there (client.find_python looks)

    def _daemon(self, op: str, args: dict[str, Any]) -> Any:
        with self._client_lock:  # one blocking socket: calls take turns
            if self._client is None:
                self._client = DaemonClient(self.user_dir, client_name="mcp")
            try:
                return self._client.call(op, args, project_root=project_root(), session_id=session_id())
            except EngramError:
                raise
            except BaseException:
                self._client.close()
                raise

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()


def _ok(result: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": _json(_compact(result))}], "isError": False}


def _fail(envelope: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": _json(envelope)}], "isError": True}


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def serve(handler: StandIn, stdin: Any, stdout: Any) -> None:
    """Read messages from `stdin` (binary, one per line) until EOF; answer on `stdout`.

    Every request is answered, also one that cannot be read: `jsonrpc_wire` bounds the line,
    refuses deep nesting before parsing and recovers the id for the error reply.

    `tools/call` runs in a thread of its own (a daemon call can take seconds; pings and
    lists are answered meanwhile); everything else is answered in order.
    """
    write_lock = threading.Lock()
    workers: list[threading.Thread] = []

    def send(response: dict[str, Any] | None) -> None:
        if response is None:
            return
        try:
            data = (json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        except (ValueError, UnicodeError):  # a lone surrogate in a result: UTF-8 cannot carry it
            data = (json.dumps(jsonrpc_wire.scrub(response), ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with write_lock:
            stdout.write(data)
            stdout.flush()

    def answer(message: Any) -> None:
        try:
            send(handler.handle(message))
        except Exception:  # never die on one message
            log.exception("engram stand-in failed to answer")
            if isinstance(message, dict) and "id" in message:
                send(_error(message["id"], -32603, "Internal error"))

    while True:
        got = jsonrpc_wire.read_line(stdin)
        if got is None:
            break
        line, truncated = got
        if not line.strip():
            continue
        message = jsonrpc_wire.decode(line, truncated)
        if not isinstance(message, jsonrpc_wire.Rejected):
            message = jsonrpc_wire.check_surrogates(message) or jsonrpc_wire.check_id(message) or message
        if isinstance(message, jsonrpc_wire.Rejected):
            log.warning("unreadable message: %s", message.reason)
            if message.reply is not None:
                with write_lock:
                    stdout.write(message.reply)
                    stdout.flush()
            continue
        if message.get("method") == "tools/call" and "id" in message:
            worker = threading.Thread(target=answer, args=(message,), name="engram-tool-call", daemon=True)
            workers.append(worker)
            worker.start()
            workers = [w for w in workers if w.is_alive()]
        else:
            answer(message)
    deadline = time.monotonic() + 10  # let calls in flight (a queued write) finish
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m engram_mcp.interfaces.bootstrap_server")
    ap.add_argument("--root", required=True, type=Path, help="the plugin root (holds pyproject.toml)")
    ap.add_argument("--data", required=True, type=Path, help="where bin/engram-bootstrap builds venv/")
    args = ap.parse_args(argv)
    level = os.environ.get("ENGRAM_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "WARNING",
        format="engram-mcp %(levelname)s %(name)s: %(message)s",
    )
    # stdout carries only the protocol: keep it for us and point fd 1 (stray prints) at stderr.
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    handler = StandIn(Environment(args.root.resolve(), args.data.resolve()))
    print(
        f"engram: its Python environment is being prepared in {args.data} (log: {args.data / LOG}); "
        "serving a stand-in until the next session",
        file=sys.stderr,
        flush=True,
    )
    try:
        serve(handler, sys.stdin.buffer, protocol_out)
    except KeyboardInterrupt:
        pass
    finally:
        handler.close()


if __name__ == "__main__":
    main()
