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

from engram_mcp.core.errors import EngramError
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
    ("bom_prefix", b"\xef\xbb\xbf" + _line(_req(123, "ping")), 123),
    ("two_messages_on_one_line", _line(_req(124, "ping")) + _line(_req(125, "ping")), 124),
    ("id_is_true", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None),
    ("nan_in_tool_argument", b'{"jsonrpc":"2.0","id":126,"method":"tools/call","params":{"name":"' + TOOL.encode()
     + b'","arguments":{"query":"x","limit":NaN}}}', "tool_error"),
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
    client = LineClient([PYTHON, "-m", "engram_mcp.interfaces.server"], env, running.project, tmp_path / "server.err")
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
    argv = [PYTHON, "-S", "-m", "engram_mcp.interfaces.bootstrap_server", "--root", str(REPO), "--data", str(data)]
    client = LineClient(argv, env, sandbox.project, tmp_path / "standin.err")
    try:
        counts = _attack_stdio(client)
    finally:
        code = client.close()
    assert code == 0, f"stand-in exit code {code}"
    _stderr_is_clean(tmp_path / "standin.err")
    record("protocol", standin_bad_lines=counts["tried"], standin_hangs=counts["hangs"], standin_unclear=counts["unclear"],
           standin_crashes=0)


# ---------------------------------------------------------------------- the daemon socket
def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _raw_call(path: Path, line: bytes, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any] | None:
    """One raw request line on a fresh connection; the reply, or None when the daemon closed it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall(line)
        reply = s.makefile("rb").readline()
    return json.loads(reply) if reply else None


def test_daemon_export_to_a_fifo_or_device_is_refused_at_once(running: Sandbox, tmp_path: Path) -> None:
    fifo = tmp_path / "export.fifo"
    os.mkfifo(fifo)
    reader_fd = None
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "target.jsonl")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(tmp_path / "export.sock"))
    cases = {"fifo_without_reader": fifo, "fifo_with_reader": fifo, "device": Path("/dev/null"), "full_device": Path("/dev/full"),
             "symlink": link, "socket": tmp_path / "export.sock"}
    tried = 0
    try:
        for name, path in cases.items():
            if name == "fifo_with_reader":
                reader_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            started = time.monotonic()
            with running.client(timeout=REPLY_TIMEOUT_S) as c:
                with pytest.raises(EngramError) as err:
                    c.call("export", {"path": str(path)}, project_root=str(running.project))
            tried += 1
            assert err.value.code == "invalid_input", (name, err.value.envelope())
            assert "regular file" in err.value.message or "symbolic link" in err.value.message, (name, err.value.message)
            assert time.monotonic() - started < 5, name
    finally:
        if reader_fd is not None:
            os.close(reader_fd)
        unix.close()
    assert not (tmp_path / "target.jsonl").exists(), "the export followed the symlink"
    # a regular file still works, and the daemon has no request stuck
    out = tmp_path / "real.jsonl"
    assert running.call("export", {"path": str(out)})["path"] == str(out)
    assert out.read_text().startswith('{"kind": "header"')
    record("protocol", export_bad_destinations=tried)


def test_daemon_idle_connections_cannot_starve_hooks_or_threads(running: Sandbox) -> None:
    from engram_mcp.interfaces.hooks import nudge

    path = socket_of(running)
    pid = running.daemon.pid
    idle: list[socket.socket] = []
    try:
        for _ in range(300):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(path))
            idle.append(s)
        for s in idle[:100]:  # a third of them are half way through a request
            s.sendall(b'{"op": "ping", "args": {')
        time.sleep(0.5)
        started = time.monotonic()
        nudge(running.user_dir)  # what every capture hook does
        with running.client(timeout=REPLY_TIMEOUT_S) as c:
            assert c.call("ping")["pong"]
            recall = c.call("recall", {"query": "anything"}, project_root=str(running.project))
        elapsed = time.monotonic() - started
        assert isinstance(recall, dict)
        assert elapsed < 5, f"nudge + recall took {elapsed:.1f}s beside 300 idle connections"
        threads = _threads(pid)
        assert threads < 60, f"{threads} daemon threads for 300 idle connections"
    finally:
        for s in idle:
            s.close()
    record("protocol", idle_connections=len(idle), daemon_threads_with_idle=threads)


def test_daemon_answers_garbage_lines_with_invalid_input(running: Sandbox) -> None:
    path = socket_of(running)
    lines = {
        "deep_list": b"[" * HUGE_NESTING + b"\n",
        "deep_args": b'{"id": 7, "op": "recall", "args": {"query": ' + b"[" * HUGE_NESTING + b"\n",
        "not_utf8": b'{"id": 8, "op": "ping\xff\xfe"}\n',
        "lone_surrogate_escape": b'{"id": 9, "op": "recall", "args": {"query": "x\\ud83d"}}\n',
        "truncated": b'{"id": 10, "op": "recall"\n',
    }
    unclear = 0
    for name, line in lines.items():
        reply = _raw_call(path, line)
        assert reply is not None, f"{name}: the daemon closed the connection without an answer"
        if reply.get("ok"):
            continue
        error = reply["error"]
        if error["error"] != "invalid_input" or not error["message"]:
            unclear += 1
        assert error["error"] == "invalid_input", (name, error)
    # a line over the size limit is refused without being buffered whole, and the daemon lives on
    from engram_mcp.daemon.connections import MAX_REQUEST_BYTES

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(REPLY_TIMEOUT_S)
        s.connect(str(path))
        chunk = b"A" * (1024 * 1024)
        try:
            for _ in range(MAX_REQUEST_BYTES // len(chunk) + 2):
                s.sendall(chunk)
        except OSError:
            pass  # closed on us once over the limit: expected
        reply = s.makefile("rb").readline()
    assert reply and json.loads(reply)["error"]["error"] == "invalid_input", reply[:200]
    assert running.call("ping")["pid"] == running.daemon.pid
    record("protocol", daemon_garbage_lines=len(lines) + 1, daemon_unclear=unclear, daemon_crashes=0)


# ---------------------------------------------------------------------- the socket loop itself (real sockets, in process)
class _Loop:
    """`connections.ConnectionServer` on a real Unix socket with a handler that can be made slow."""

    def __init__(self, tmp: Path, **kw: Any) -> None:
        from engram_mcp.daemon.connections import ConnectionServer

        self.path = tmp / "loop.sock"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        self.listener.listen(128)
        self.stopping = threading.Event()
        self.release = threading.Event()
        self.count = 0
        self.server = ConnectionServer(self.listener, self.handle, self.stopping, on_tick=lambda: None,
                                       on_count=self._count, on_stop=self.stopping.set, **kw)
        self.thread = threading.Thread(target=self.server.serve, daemon=True)
        self.thread.start()

    def _count(self, n: int) -> None:
        self.count = n

    def handle(self, line: bytes, stream: Any) -> dict[str, Any]:
        req = json.loads(line)
        if req.get("op") == "slow":
            self.release.wait(30)
        return {"id": req.get("id"), "ok": True, "result": {"op": req.get("op")}}

    def connect(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(REPLY_TIMEOUT_S)
        s.connect(str(self.path))
        return s

    def close(self) -> None:
        self.release.set()
        self.stopping.set()
        self.thread.join(10)
        self.listener.close()


def test_loop_over_the_cap_gets_a_busy_reply_and_idle_connections_make_room(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engram_mcp.daemon.connections as connections

    monkeypatch.setattr(connections, "EVICT_IDLE_S", 0.3)
    loop = _Loop(tmp_path, max_connections=4, workers=2)
    held: list[socket.socket] = []
    try:
        for i in range(4):  # four connections, each in the middle of a request: not idle
            s = loop.connect()
            s.sendall(b'{"id": %d, "op": "slow"}\n' % i)
            held.append(s)
        time.sleep(0.5)
        extra = loop.connect()
        busy = json.loads(extra.makefile("rb").readline())
        assert busy["ok"] is False and busy["error"]["error"] == "daemon_unavailable" and busy["error"]["retry_possible"], busy
        assert "busy" in busy["error"]["message"], busy
        assert extra.recv(10) == b"", "the refused connection is closed"
        extra.close()
        loop.release.set()  # the four requests finish; their connections become idle
        for i, s in enumerate(held):
            assert json.loads(s.makefile("rb").readline())["id"] == i
        time.sleep(0.6)
        s = loop.connect()  # the cap is reached by idle connections: the idlest makes room
        s.sendall(b'{"id": 99, "op": "ping"}\n')
        assert json.loads(s.makefile("rb").readline())["id"] == 99
        s.close()
        assert loop.count <= 4
    finally:
        for s in held:
            s.close()
        loop.close()


def test_loop_pipelined_requests_are_answered_in_order_and_nudges_skip_the_queue(tmp_path: Path) -> None:
    loop = _Loop(tmp_path, max_connections=16, workers=1)
    try:
        blocker = loop.connect()
        blocker.sendall(b'{"id": 1, "op": "slow"}\n')  # the only worker is stuck
        time.sleep(0.2)
        nudge = loop.connect()
        started = time.monotonic()
        nudge.sendall(b'{"id": 2, "op": "drain"}\n{"id": 3, "op": "ping"}\n')
        f = nudge.makefile("rb")
        assert [json.loads(f.readline())["id"] for _ in range(2)] == [2, 3]
        assert time.monotonic() - started < 2, "a nudge waited for a worker"
        piped = loop.connect()
        piped.sendall(b"".join(b'{"id": %d, "op": "work"}\n' % i for i in range(10, 20)))
        loop.release.set()
        f = piped.makefile("rb")
        assert [json.loads(f.readline())["id"] for _ in range(10)] == list(range(10, 20))
        for s in (blocker, nudge, piped):
            s.close()
    finally:
        loop.close()


def test_loop_times_out_stalled_and_silent_connections(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engram_mcp.daemon.connections as connections

    monkeypatch.setattr(connections, "PARTIAL_TIMEOUT_S", 0.5)
    monkeypatch.setattr(connections, "UNUSED_TIMEOUT_S", 0.5)
    monkeypatch.setattr(connections, "WRITE_TIMEOUT_S", 0.5)
    monkeypatch.setattr(connections, "TICK_S", 0.1)
    loop = _Loop(tmp_path, max_connections=16, workers=2)
    try:
        silent = loop.connect()
        stalled = loop.connect()
        stalled.sendall(b'{"id": 1, "op": ')
        deaf = loop.connect()  # sends requests, never reads: its replies back up
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        big = b'{"id": 5, "op": "work", "pad": "' + b"x" * 400 + b'"}\n'
        try:
            for _ in range(5000):
                deaf.sendall(big)
        except OSError:
            pass
        for s in (silent, stalled):
            assert s.recv(10) == b"", "the daemon closed it"
        assert wait_for_count(loop, 0, 10), f"{loop.count} connections still open"
        ok = loop.connect()  # and the loop still serves
        ok.sendall(b'{"id": 9, "op": "ping"}\n')
        assert json.loads(ok.makefile("rb").readline())["id"] == 9
        for s in (silent, stalled, deaf, ok):
            s.close()
    finally:
        loop.close()


def wait_for_count(loop: _Loop, n: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if loop.count <= n:
            return True
        time.sleep(0.05)
    return False


def test_daemon_still_exits_when_idle_after_a_fifo_export(sandbox: Sandbox, tmp_path: Path) -> None:
    """A refused export leaves nothing behind that keeps the daemon alive (idle exit at 10 s)."""
    proc = sandbox.start_daemon({"ENGRAM_DAEMON_IDLE_EXIT_SECONDS": "10"})
    fifo = tmp_path / "idle.fifo"
    os.mkfifo(fifo)
    with sandbox.client(timeout=REPLY_TIMEOUT_S) as c:
        with pytest.raises(EngramError):
            c.call("export", {"path": str(fifo)}, project_root=str(sandbox.project))
    idle = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(20)]
    for s in idle:
        s.connect(str(socket_of(sandbox)))
        s.close()
    try:
        proc.wait(40)
    except subprocess.TimeoutExpired:
        pytest.fail("the daemon did not exit 10 s after its last client")
    assert not socket_of(sandbox).exists()


# ---------------------------------------------------------------------- hooks
HOOK_EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "PreCompact", "Stop", "SubagentStop",
               "SessionEnd"]


def _hook_inputs(project: Path) -> dict[str, bytes]:
    base = {"session_id": SESSION, "cwd": str(project), "transcript_path": str(project / "none.jsonl")}

    def payload(**extra: Any) -> bytes:
        return json.dumps({**base, **extra}).encode()

    return {
        "deep_list": b"[" * HUGE_NESTING,
        "deep_objects": b'{"a":' * HUGE_NESTING,
        "deep_closed": b"[" * 5000 + b"]" * 5000,
        "deep_inside_payload": payload(tool_name="Bash")[:-1] + b', "tool_input": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "just_under_the_parser_limit": payload(tool_name="Bash")[:-1] + b', "tool_input": ' + b"[" * 980 + b"]" * 980 + b"}",
        "huge": payload(prompt="x" * (20 * 1024 * 1024)),
        "non_utf8": payload(prompt="abc")[:-1] + b', "tool_name": "Bash\xff\xfe", "x": "\xc3\x28"}',
        "array": b'[{"session_id": "s"}]',
        "number": b"42",
        "null": b"null",
        "string": b'"PostToolUse"',
        "nul_bytes": b"\x00" * 1000,
        "lone_surrogates": payload(prompt="fix the \ud83d bug, always use make test", tool_name="Bash",
                                   tool_input={"command": "make test \ud83d"},
                                   tool_response={"stderr": "error: boom \udfff", "exit_code": 1}, error="failed \ud83d",
                                   last_assistant_message="The fix was \ud83d done"),
    }


def test_every_hook_exits_0_without_a_traceback_whatever_its_input(running: Sandbox) -> None:
    from concurrent.futures import ThreadPoolExecutor

    env = running.env_with(session=SESSION, ENGRAM_PYTHON=PYTHON)
    inputs = _hook_inputs(running.project)
    cases = [(event, name) for event in HOOK_EVENTS for name in inputs]

    def run(case: tuple[str, str]) -> tuple[str, str, subprocess.CompletedProcess, float]:
        event, name = case
        started = time.monotonic()
        proc = subprocess.run([str(REPO / "bin" / "engram-hook"), event], input=inputs[name], capture_output=True, env=env,
                              cwd=str(running.project), timeout=90)
        return event, name, proc, time.monotonic() - started

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, cases))
    crashes, noisy, slowest = [], [], 0.0
    for event, name, proc, elapsed in results:
        err = proc.stderr.decode(errors="replace")
        slowest = max(slowest, elapsed)
        if proc.returncode != 0 or "Traceback" in err:
            crashes.append((event, name, proc.returncode, err[-500:]))
        elif len([line for line in err.splitlines() if line.strip()]) > 1:
            noisy.append((event, name, err[:500]))
        if proc.stdout:
            json.loads(proc.stdout)  # whatever a hook prints is its JSON answer
    record("protocol", hook_inputs=len(cases), hook_crashes=len(crashes), hook_noisy=len(noisy),
           hook_slowest_s=round(slowest, 2))
    assert not crashes, crashes[:5]
    assert not noisy, noisy[:5]
    assert running.call("ping")["pid"] == running.daemon.pid


# ---------------------------------------------------------------------- the client against a broken daemon
CLIENT_TIMEOUT_S = 1.5


def _fake_daemon(path: Path, behaviour: str, stop: threading.Event, ready: threading.Event) -> None:
    """Accept connections on `path` and answer every request the broken way `behaviour` names."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(8)
    srv.settimeout(0.2)
    ready.set()  # the socket file exists from bind(), but connections are refused until listen()
    conns = []
    try:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            conns.append(conn)
            if behaviour == "never_reads":
                continue
            conn.settimeout(5)
            try:
                req = json.loads(conn.makefile("rb").readline())
                rid = req["id"]
                if behaviour == "not_json":
                    conn.sendall(b"<html>502 Bad Gateway</html>\n")
                elif behaviour == "not_an_object":
                    conn.sendall(b"[1, 2, 3]\n")
                elif behaviour == "deep_nesting":
                    conn.sendall(b"[" * HUGE_NESTING + b"\n")
                elif behaviour == "huge":
                    chunk = b"A" * (1024 * 1024)
                    for _ in range(70):
                        conn.sendall(chunk)
                elif behaviour == "dribble":
                    for ch in b'{"id": %d, "ok": true, "result": {}}' % rid:
                        if stop.wait(0.4):
                            break
                        conn.sendall(bytes([ch]))
                elif behaviour == "wrong_id":
                    conn.sendall(b'{"id": %d, "ok": true, "result": {"stale": true}}\n' % (rid + 1000))
                elif behaviour == "no_result_no_error":
                    conn.sendall(b'{"id": %d}\n' % rid)
                elif behaviour == "half_a_reply":
                    conn.sendall(b'{"id": %d, "ok": tr' % rid)
                    conn.close()
                elif behaviour == "bad_progress_then_result":
                    conn.sendall(b'{"id": %d, "progress": {"done": "many", "total": []}}\n' % rid)
                    conn.sendall(b'{"id": %d, "ok": true, "result": {"fine": true}}\n' % rid)
                # "silent": read the request, never answer
            except OSError:
                pass
    finally:
        for c in conns:
            c.close()
        srv.close()


CLIENT_CASES = ["silent", "never_reads", "not_json", "not_an_object", "deep_nesting", "huge", "dribble", "wrong_id",
                "no_result_no_error", "half_a_reply", "bad_progress_then_result"]


@pytest.mark.parametrize("behaviour", CLIENT_CASES)
def test_client_gives_a_clear_error_within_its_timeout(tmp_path: Path, behaviour: str) -> None:
    from engram_mcp.daemon.client import DaemonClient
    from engram_mcp.core.errors import DaemonUnavailable

    sock_path = tmp_path / "d.sock"
    stop, ready = threading.Event(), threading.Event()
    server = threading.Thread(target=_fake_daemon, args=(sock_path, behaviour, stop, ready), daemon=True)
    server.start()
    assert ready.wait(10)

    class Client(DaemonClient):
        @property
        def path(self) -> Path:
            return sock_path

    client = Client(tmp_path, autostart=False, timeout=CLIENT_TIMEOUT_S)
    args = {"content": "x" * (8 * 1024 * 1024)} if behaviour == "never_reads" else {}
    started = time.monotonic()
    try:
        if behaviour == "bad_progress_then_result":
            seen: list[Any] = []
            assert client.call("export", {}, on_progress=lambda *a: seen.append(a)) == {"fine": True}
            return
        with pytest.raises(DaemonUnavailable) as err:
            client.call("recall", args)
    finally:
        elapsed = time.monotonic() - started
        client.close()
        stop.set()
        server.join(5)
    message = err.value.message
    assert message.startswith("engram daemon did not answer"), message  # never queued as "not received"
    assert len(message) < 400, message
    assert elapsed < CLIENT_TIMEOUT_S * 2 + 1, f"{behaviour}: {elapsed:.1f}s for a {CLIENT_TIMEOUT_S}s timeout"
    record("protocol", **{f"client_{behaviour}_s": round(elapsed, 2)})


# ---------------------------------------------------------------------- replies that UTF-8 cannot carry
def test_replies_holding_a_lone_surrogate_are_still_sent() -> None:
    """A stored text with a lone surrogate must not kill the reply that carries it (it would hang the caller)."""
    import mcp_types as types

    from engram_mcp.interfaces.server import _outbound

    reply = types.JSONRPCResponse(jsonrpc="2.0", id=5, result={"content": [{"type": "text", "text": "half \ud83d emoji"}]})
    line = _outbound(reply)
    decoded = json.loads(line.decode("utf-8"))
    assert decoded["id"] == 5 and decoded["result"]["content"][0]["text"] == "half \ufffd emoji"


def test_daemon_reply_holding_a_lone_surrogate_is_escaped_not_dropped(tmp_path: Path) -> None:
    loop = _Loop(tmp_path, max_connections=4, workers=1)
    loop.handle = lambda line, stream: {"id": 1, "ok": True, "result": {"text": "x\udfff"}}  # type: ignore[method-assign]
    loop.server.handle = loop.handle
    try:
        s = loop.connect()
        s.sendall(b'{"id": 1, "op": "get"}\n')
        reply = json.loads(s.makefile("rb").readline())
        assert reply["ok"] and reply["result"]["text"] == "x\udfff"
        s.close()
    finally:
        loop.close()


def test_loop_out_of_descriptors_pauses_accepting_instead_of_spinning(tmp_path: Path) -> None:
    """accept() failing with EMFILE leaves the listener readable: the loop must back off, then recover."""
    import errno

    class Exhausted:
        """The real listener, whose accept() fails as if the process had no descriptor left."""

        def __init__(self, real: socket.socket) -> None:
            self.real, self.failing, self.calls = real, True, 0

        def accept(self) -> tuple[socket.socket, Any]:
            self.calls += 1
            if self.failing:
                raise OSError(errno.EMFILE, "Too many open files")
            return self.real.accept()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

    loop = _Loop(tmp_path, max_connections=8, workers=1)
    loop.stopping.set()
    loop.thread.join(5)  # restart it on the exhausted listener
    from engram_mcp.daemon.connections import ConnectionServer

    loop.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    (tmp_path / "loop.sock").unlink()
    loop.listener.bind(str(loop.path))
    loop.listener.listen(8)
    exhausted = Exhausted(loop.listener)
    loop.stopping = threading.Event()
    loop.server = ConnectionServer(exhausted, loop.handle, loop.stopping, on_tick=lambda: None, on_count=loop._count,
                                   on_stop=loop.stopping.set, max_connections=8, workers=1)  # type: ignore[arg-type]
    loop.thread = threading.Thread(target=loop.server.serve, daemon=True)
    loop.thread.start()
    try:
        waiting = loop.connect()  # queued in the backlog; accept() keeps failing
        time.sleep(1.0)
        assert exhausted.calls < 50, f"accept() called {exhausted.calls} times in 1 s: the loop spins"
        exhausted.failing = False  # descriptors are back
        waiting.sendall(b'{"id": 1, "op": "ping"}\n')
        assert json.loads(waiting.makefile("rb").readline())["id"] == 1
        waiting.close()
    finally:
        loop.close()


def test_daemon_request_waits_a_bounded_time_for_a_start_that_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service that never finishes loading must not hold requests (and workers) forever:
    reads are answered memory_unavailable, writes are queued in the spool."""
    import engram_mcp.daemon.process as daemon
    from engram_mcp.core import spool

    monkeypatch.setattr(daemon, "READY_WAIT_S", 0.5)
    d = daemon.Daemon(tmp_path / "user")  # its service is never loaded: ready is never set
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    ctx = {"project_root": str(project), "session_id": None}
    started = time.monotonic()
    read = d._handle_line(json.dumps({"id": 1, "op": "recall", "args": {"query": "x"}, "ctx": ctx}).encode())
    write = d._handle_line(json.dumps({"id": 2, "op": "store", "args": {"content": "kept for later", "type": "semantic",
                                                                        "scope": "project"}, "ctx": ctx}).encode())
    assert time.monotonic() - started < 3
    assert read["ok"] is False and read["error"]["error"] == "memory_unavailable", read
    assert "still starting" in read["error"]["message"], read
    assert write["ok"] is True and write["result"]["queued"] is True, write
    assert len(spool.pending(tmp_path / "user")) == 1
