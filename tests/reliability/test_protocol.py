"""Requests that get no answer (issue 12, defect 8) and hooks that die on their input (item 9).

Every bad input here goes through the real process over its real channel: the MCP server and
the first-start stand-in over stdio, the daemon over its Unix socket, the hooks through
`bin/engram-hook`. The rule under test: a caller always gets an answer (an error reply with its
id when the id can be recovered) within a short timeout, the process survives and serves the
next request, and a hook always exits 0 without a traceback.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.errors import EngramError
from tests.reliability._support import PYTHON, REPO, Sandbox, record, socket_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REPLY_TIMEOUT_S = 10.0  # generous for a loaded 2-core machine; a dropped request never answers
SESSION = "protocol-session-1"
HUGE_NESTING = 100_000

# ---------------------------------------------------------------------- hostile JSON-RPC lines
# (name, raw line without its newline, the id an error reply must carry: a value, None for
# `"id": null`, or "result" when the line is valid enough to be served normally)
TOOL = "recall_memories"


def _req(rid: Any, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def _line(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg).encode()


BAD_LINES: list[tuple[str, bytes, Any]] = [
    ("surrogate_in_tool_argument", _line(_req(101, "tools/call", {"name": TOOL, "arguments": {"query": "smile \ud83d"}})), "tool_error"),
    ("trailing_surrogate_in_tool_argument", _line(_req("s-102", "tools/call", {"name": TOOL, "arguments": {"query": "x\udfff"}})), "tool_error"),
    ("surrogate_in_nested_argument", _line(_req(103, "tools/call", {"name": "store_memory", "arguments": {
        "content": "ok", "type": "semantic", "scope": "project", "tags": ["a", "\ud800"]}})), "tool_error"),
    ("surrogate_in_tool_name", _line(_req(104, "tools/call", {"name": "recall\ud83d", "arguments": {}})), 104),
    ("surrogate_in_method", _line(_req(105, "ping\ud83d")), 105),
    ("surrogate_in_id", _line(_req("id-\ud83d", "ping")), "id-\ud83d"),
    ("deep_nesting_in_params", b'{"jsonrpc":"2.0","id":106,"method":"ping","params":{"x":' + b"[" * HUGE_NESTING, 106),
    ("deep_nesting_closed", b'{"jsonrpc":"2.0","id":107,"method":"ping","params":{"x":' + b"[" * 5000 + b"]" * 5000 + b"}}", 107),
    ("deep_nesting_id_last", b'{"jsonrpc":"2.0","method":"ping","params":{"x":' + b"{\"a\":" * 200 + b"1" + b"}" * 200 + b'},"id":108}', 108),
    ("only_brackets", b"[" * HUGE_NESTING, None),
    ("only_braces", b"{" * HUGE_NESTING, None),
    ("truncated_object", b'{"jsonrpc":"2.0","id":109,"method":"ping"', 109),
    ("trailing_comma", b'{"jsonrpc":"2.0","id":"s-110","method":"tools/list",}', "s-110"),
    ("nested_id_before_real_id", b'{"params":{"id":999,"x":[1,2},"id":111,"jsonrpc":"2.0","method":"ping"', 111),
    ("not_json", b"hello there", None),
    ("a_number", b"42", None),
    ("a_string", b'"ping"', None),
    ("null", b"null", None),
    ("a_batch", b'[{"jsonrpc":"2.0","id":112,"method":"ping"}]', None),
    ("method_not_a_string", b'{"jsonrpc":"2.0","id":113,"method":7}', 113),
    ("wrong_version", b'{"jsonrpc":"1.0","id":114,"method":"ping"}', 114),
    ("id_is_an_object", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', None),
    ("id_is_null", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', None),
    ("id_is_a_float", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None),
    ("params_is_a_list", b'{"jsonrpc":"2.0","id":115,"method":"tools/call","params":[1,2]}', 115),
    ("number_too_long", b'{"jsonrpc":"2.0","id":116,"method":"ping","params":{"x":1' + b"0" * 6000 + b"}}", 116),
    ("oversized_line", b'{"jsonrpc":"2.0","id":117,"method":"tools/call","params":{"name":"x","arguments":{"q":"' + b"A" * (5 * 1024 * 1024) + b'"}}}', 117),
    ("invalid_utf8_in_argument", b'{"jsonrpc":"2.0","id":118,"method":"tools/call","params":{"name":"' + TOOL.encode() + b'","arguments":{"limit":"\xff\xfe"}}}', "tool_result"),
    ("cesu_surrogate_bytes", b'{"jsonrpc":"2.0","id":119,"method":"tools/call","params":{"name":"' + TOOL.encode() + b'","arguments":{"limit":"\xed\xa0\xbd"}}}', "tool_result"),
    ("nul_in_method", b'{"jsonrpc":"2.0","id":120,"method":"ping\\u0000"}', 120),
    ("unknown_method", _line(_req(121, "no/such/method")), 121),
    ("bad_escape", b'{"jsonrpc":"2.0","id":122,"method":"ping","params":{"x":"\\q"}}', 122),
    ("surrogate_notification", _line({"jsonrpc": "2.0", "method": "notifications/x\ud83d"}), "silent"),
    ("garbage_notification", b'{"jsonrpc":"2.0","method":5}', "silent"),
]


class LineClient:
    """A JSON-RPC peer over a process's real stdin/stdout, one message per line."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, stderr_path: Path) -> None:
        self._err = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, env=env, cwd=str(cwd))
        self.replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            try:
                self.replies.put(json.loads(line))
            except ValueError:
                self.replies.put({"unparseable_reply": line[:200].decode(errors="replace")})
        self.replies.put(None)

    def send(self, raw: bytes) -> None:
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def next_reply(self, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any] | None:
        """The next reply, or None when none came in time (a hang) or the process ended."""
        try:
            return self.replies.get(timeout=timeout)
        except queue.Empty:
            return None

    def request(self, msg: dict[str, Any]) -> dict[str, Any] | None:
        self.send(_line(msg))
        return self.next_reply()

    def close(self) -> int | None:
        try:
            self.proc.stdin.close()
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            return None
        finally:
            self._err.close()


def _judge(name: str, expected: Any, reply: dict[str, Any] | None) -> str:
    """"ok", or what went wrong: "hang", "unclear" (an answer that is not the error it must be)."""
    if expected == "silent":
        return "ok" if reply is None or reply.get("id") is None else "unclear"
    if reply is None:
        return "hang"
    if expected == "tool_result":  # invalid UTF-8 becomes U+FFFD: an ordinary call (the stand-in may not validate yet)
        result = reply.get("result") or {}
        return "ok" if result.get("content") and reply.get("id") is not None else "unclear"
    if expected == "tool_error":
        result = reply.get("result") or {}
        if not result.get("isError"):
            return "unclear"
        env = json.loads(result["content"][0]["text"])
        ok = env.get("error") == "invalid_input" and env.get("field") and env.get("message")
        return "ok" if ok else "unclear"
    error = reply.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("code"), int) or not error.get("message"):
        return "unclear"
    if reply.get("id") != expected:
        return "unclear"
    if expected is None and error["code"] not in (-32700, -32600):
        return "unclear"
    return "ok"


def _attack_stdio(client: LineClient) -> dict[str, Any]:
    """Each bad line, then a valid ping: an answer to both, in time. Returns the counts."""
    init = client.request(_req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "protocol-test", "version": "1"}}))
    assert init is not None and "result" in init, init
    client.send(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    verdicts: dict[str, str] = {}
    for i, (name, raw, expected) in enumerate(BAD_LINES):
        started = time.monotonic()
        client.send(raw)
        reply = None if expected == "silent" else client.next_reply()
        verdicts[name] = _judge(name, expected, reply)
        assert verdicts[name] != "hang", f"{name}: no answer within {REPLY_TIMEOUT_S}s"
        ping_id = 10_000 + i
        pong = client.request(_req(ping_id, "ping"))
        if expected == "silent" and pong is not None and pong.get("id") != ping_id:  # a stray reply to the notification
            verdicts[name] = "unclear"
            pong = client.next_reply()
        assert pong is not None, f"the server stopped answering after {name}"
        assert pong.get("id") == ping_id and pong.get("result") == {}, (name, pong)
        assert time.monotonic() - started < 2 * REPLY_TIMEOUT_S
    unclear = {k: v for k, v in verdicts.items() if v != "ok"}
    assert not unclear, unclear
    return {"tried": len(BAD_LINES), "hangs": 0, "unclear": len(unclear)}


def _stderr_is_clean(path: Path) -> str:
    text = path.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    return text


def test_mcp_server_answers_every_bad_line_and_keeps_serving(running: Sandbox, tmp_path: Path) -> None:
    env = running.env_with(session=SESSION)
    client = LineClient([PYTHON, "-m", "engram_mcp.server"], env, running.project, tmp_path / "server.err")
    try:
        counts = _attack_stdio(client)
        tools = client.request(_req(2, "tools/list"))
        assert tools and len(tools["result"]["tools"]) >= 5
        # a lone surrogate in a tool argument names the field
        reply = client.request(_req(3, "tools/call", {"name": TOOL, "arguments": {"query": "cut \ud83d emoji"}}))
        env_ = json.loads(reply["result"]["content"][0]["text"])
        assert env_["field"] == "query" and "surrogate" in env_["message"], env_
        # and a normal call still works end to end (daemon included)
        ok = client.request(_req(4, "tools/call", {"name": TOOL, "arguments": {"query": "anything at all"}}))
        assert ok and not ok["result"].get("isError"), ok
    finally:
        code = client.close()
    assert code == 0, f"server exit code {code}"
    _stderr_is_clean(tmp_path / "server.err")
    record("protocol", mcp_bad_lines=counts["tried"], mcp_hangs=counts["hangs"], mcp_unclear=counts["unclear"], mcp_crashes=0)


def test_bootstrap_stand_in_answers_every_bad_line_and_keeps_serving(sandbox: Sandbox, tmp_path: Path) -> None:
    data = tmp_path / "plugin-data"
    data.mkdir()
    env = sandbox.env_with(session=SESSION)
    argv = [PYTHON, "-S", "-m", "engram_mcp.bootstrap_server", "--root", str(REPO), "--data", str(data)]
    client = LineClient(argv, env, sandbox.project, tmp_path / "standin.err")
    try:
        counts = _attack_stdio(client)
    finally:
        code = client.close()
    assert code == 0, f"stand-in exit code {code}"
    _stderr_is_clean(tmp_path / "standin.err")
    record("protocol", standin_bad_lines=counts["tried"], standin_hangs=counts["hangs"], standin_unclear=counts["unclear"],
           standin_crashes=0)
