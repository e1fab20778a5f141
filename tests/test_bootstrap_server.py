"""The stand-in MCP server of a fresh install (engram_mcp/interfaces/bootstrap_server.py), over real pipes.

It runs as `python -S -P -m engram_mcp.interfaces.bootstrap_server` (no site-packages: any python3 >= 3.11
must do), so these tests run it that way too: an import of the mcp SDK or jsonschema would
fail here. They check that it answers like the real server (initialize, tools/list), that a
tool call while the environment is being built gets the structured "preparing" error, that
a write is queued in the spool instead, that a failed build is reported with its log, that
bin/engram-python starts the build detached and serves the stand-in, and that once the
build is done the same process relays calls to the daemon (which applies the queued write).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.interfaces import bootstrap_server
from engram_mcp.core import spool
from engram_mcp.daemon.client import socket_path
from engram_mcp.interfaces.tool_calls import _Validators
from engram_mcp.core.operations import TOOLS
from tests.daemon_env import stop_daemon

pytestmark = pytest.mark.timeout(180)

REPO = Path(__file__).resolve().parents[1]
SESSION = "sess-boot"
STORE = {"content": "The billing service uses PostgreSQL 16", "type": "semantic", "scope": "project"}


class Shim:
    """One MCP server process driven over its stdin/stdout."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.ids = iter(range(1, 10_000))

    def send(self, message: dict[str, Any]) -> None:
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = next(self.ids)
        self.send({"id": rid, "method": method, **({"params": params} if params is not None else {})})
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the server closed stdout; stderr:\n{self.proc.stderr.read().decode()[-3000:]}"
            reply = json.loads(line)
            if reply.get("id") == rid:
                return reply

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.request(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def initialize(self, version: str = "2025-06-18") -> dict[str, Any]:
        result = self.result("initialize", {"protocolVersion": version, "capabilities": {},
                                            "clientInfo": {"name": "test", "version": "1"}})
        self.send({"method": "notifications/initialized"})
        return result

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """(isError, the JSON in the result's text)."""
        result = self.result("tools/call", {"name": name, "arguments": arguments})
        return result["isError"], json.loads(result["content"][0]["text"])

    def close(self) -> str:
        """Close stdin (the session ends); the server exits. Returns its stderr."""
        self.proc.stdin.close()
        self.proc.wait(30)
        return self.proc.stderr.read().decode()


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Any]:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    data = tmp_path / "data"
    data.mkdir()
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "ENGRAM_HOME": str(home / ".claude" / "engram"),
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_CODE_SESSION_ID": SESSION,
        "PYTHONPATH": str(REPO),
    }
    return {"home": home, "user_dir": home / ".claude" / "engram", "project": project, "data": data, "env": env}


def shim(sandbox: dict[str, Any], **extra_env: str) -> Shim:
    cmd = [sys.executable, "-S", "-P", "-m", "engram_mcp.interfaces.bootstrap_server", "--root", str(REPO), "--data", str(sandbox["data"])]
    return Shim(cmd, {**sandbox["env"], **extra_env}, sandbox["project"])


class BuildRunning:
    """Holds bootstrap.lock as bin/engram-bootstrap does while it builds."""

    def __init__(self, data: Path) -> None:
        self.file = open(data / "bootstrap.lock", "w")
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def release(self) -> None:
        self.file.close()


def fake_ready_venv(data: Path) -> None:
    """`<data>/venv` as a finished build leaves it, borrowing this test run's virtualenv."""
    venv = data / "venv"
    site = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / site).mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib" / site / "site-packages").symlink_to(Path(sys.prefix) / "lib" / site / "site-packages")
    shutil.copy(REPO / "pyproject.toml", venv / "engram-pyproject.toml")  # the stamp, written last


# ------------------------------------------------------------------------------ protocol
def test_it_answers_initialize_and_lists_the_real_tools(sandbox) -> None:
    s = shim(sandbox)
    started = time.monotonic()
    init = s.initialize("2025-06-18")
    first_answer_s = time.monotonic() - started
    assert init == {"protocolVersion": "2025-06-18", "serverInfo": {"name": "engram", "title": "engram memory", "version": "0.1.0"},
                    "capabilities": {"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}}}
    assert s.result("ping") == {}
    assert s.result("tools/list") == {"tools": TOOLS}
    assert s.result("resources/list") == {"resources": []}
    assert s.request("resources/read", {"uri": "memory://status"})["error"]["code"] == -32602
    assert s.request("no/such/method")["error"] == {"code": -32601, "message": "Method not found", "data": "no/such/method"}
    unknown = s.request("tools/call", {"name": "nope", "arguments": {}})["error"]
    assert unknown["code"] == -32602 and unknown["message"].startswith("Unknown tool: nope; tools: store_memory")
    s.proc.stdin.write(b"not json\n\n")
    s.proc.stdin.flush()
    parse_error = json.loads(s.proc.stdout.readline())
    assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
    assert parse_error["error"]["message"].startswith("Parse error: Expecting value at line 1 column 1")
    stderr = s.close()
    assert s.proc.returncode == 0, stderr
    assert "being prepared" in stderr and "Traceback" not in stderr
    assert first_answer_s < 5, f"initialize took {first_answer_s:.1f}s"


def test_protocol_versions_and_answers_match_the_real_server(sandbox) -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert bootstrap_server.PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    # The real server; ENGRAM_PYTHON=/bin/false keeps its warm-up from starting a daemon.
    real = Shim([sys.executable, "-m", "engram_mcp.interfaces.server"], {**sandbox["env"], "ENGRAM_PYTHON": "/bin/false"}, sandbox["project"])
    stand_in = shim(sandbox)
    try:
        for version in ("2024-11-05", "2025-11-25", "1999-01-01"):
            r, s = real.result("initialize", _init_params(version)), stand_in.result("initialize", _init_params(version))
            assert s == r, version
        assert stand_in.result("tools/list") == real.result("tools/list")
    finally:
        real.close()
        stand_in.close()


def _init_params(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


# ------------------------------------------------------------------------------ while building
def test_calls_while_building_say_so_and_writes_are_queued(sandbox) -> None:
    build = BuildRunning(sandbox["data"])
    s = shim(sandbox)
    try:
        s.initialize()
        is_error, env = s.call("recall_memories", {"query": "database"})
        log = sandbox["data"] / "bootstrap.log"
        assert is_error and env == {
            "error": "unavailable",
            "message": f"engram is preparing its Python environment (first run, about a minute; log: {log}); try again shortly",
            "degraded": True, "retry_possible": True,
        }
        is_error, queued = s.call("store_memory", {**STORE, "importance": 0.8, "tags": None})
        assert not is_error and queued["queued"] is True and queued["degraded"] is True and queued["cause"] == "unavailable"
        assert "preparing its Python environment" in queued["warnings"][0]["message"]
        [path] = spool.pending(sandbox["user_dir"])
        entry = spool.read(path)
        # null = not given; the queued write carries Claude's origin (schemas.with_mcp_origin)
        assert entry["op"] == "store" and entry["args"] == {**STORE, "importance": 0.8, "source": {"origin": "claude", "via": "mcp"}}
        assert entry["ctx"] == {"project_root": str(sandbox["project"].resolve()), "session_id": SESSION}
        assert queued["memory_id"] == f"memory:{entry['id']}"
        # The size limits apply before anything is queued.
        is_error, env = s.call("store_memory", {**STORE, "content": "x" * 20_001})
        assert is_error and env["error"] == "invalid_input" and env["field"] == "content"
        is_error, env = s.call("forget_memory", [1, 2])  # type: ignore[arg-type]
        assert is_error and env["error"] == "invalid_input" and env["field"] == "arguments"
        assert len(spool.pending(sandbox["user_dir"])) == 1
        assert not socket_path(sandbox["user_dir"]).exists(), "no daemon without the environment"
    finally:
        s.close()
        build.release()


def test_a_failed_build_is_reported_with_its_log_and_writes_still_queue(sandbox) -> None:
    (sandbox["data"] / "bootstrap.failed").write_text(
        "installing its dependencies from PyPI failed (exit 1)\n$ pip install ...\n"
        "ERROR: Could not find a version that satisfies the requirement surrealdb\n")
    s = shim(sandbox)
    try:
        s.initialize()
        is_error, env = s.call("get_memory_status", {})
        assert is_error and env["error"] == "unavailable" and env["degraded"] is True and env["retry_possible"] is False
        assert env["message"].startswith("engram could not prepare its Python environment: installing its dependencies "
                                         "from PyPI failed (exit 1) (ERROR: Could not find a version that satisfies")
        assert str(sandbox["data"] / "bootstrap.log") in env["message"] and "restart Claude Code" in env["message"]
        is_error, queued = s.call("forget_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV"})
        assert not is_error and queued["queued"] and "could not prepare" in queued["warnings"][0]["message"]
    finally:
        s.close()


def test_environment_states(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    root.mkdir()
    data.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    env = bootstrap_server.Environment(root, data)
    assert env.state() == ("building", "")  # just started: the build may not hold its lock yet
    env.started -= bootstrap_server.STOPPED_GRACE_S + 1
    assert env.state() == ("failed", "the build stopped before it finished")
    build = BuildRunning(data)
    assert env.state() == ("building", "")  # a build (another window's) holds the lock
    (data / "venv" / "bin").mkdir(parents=True)
    (data / "venv" / "bin" / "python").touch()
    (data / "venv" / "engram-pyproject.toml").write_text("[project]\nname = 'old'\n")
    assert env.state() == ("building", ""), "a stamp of another pyproject.toml is a rebuild"
    (data / "venv" / "engram-pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert env.state() == ("ready", "")
    build.release()


def test_once_ready_the_daemon_runs_on_the_new_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    fake_ready_venv(data)
    monkeypatch.setenv("ENGRAM_PYTHON", "")  # recorded, so that the value set below is undone after the test
    monkeypatch.delenv("ENGRAM_PYTHON")
    path_before = list(sys.path)
    handler = bootstrap_server.StandIn(bootstrap_server.Environment(REPO, data))
    assert handler.env.state() == ("ready", "")
    handler._activate()
    assert os.environ["ENGRAM_PYTHON"] == str(data / "venv" / "bin" / "python")  # client.find_python's first choice
    assert sys.path == path_before, "the venv's site-packages served jsonschema only"
    assert handler._check("store_memory", {**STORE, "importance": 2}) == _Validators().check("store_memory", {**STORE, "importance": 2})


# ------------------------------------------------------------------------------ bin/engram-python
def test_engram_python_starts_the_build_detached_and_serves_the_stand_in(tmp_path: Path, sandbox) -> None:
    """A plugin root without .venv: the MCP server start spawns bin/engram-bootstrap in the
    background and execs the stand-in; any other command waits for the build."""
    root = tmp_path / "plugin"
    (root / "bin").mkdir(parents=True)
    shutil.copy(REPO / "bin" / "engram-python", root / "bin" / "engram-python")
    (root / "engram_mcp").symlink_to(REPO / "engram_mcp")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "bin" / "engram-bootstrap").write_text(  # records how it was started, then "fails"
        "import json, os, sys, time\n"
        "data = sys.argv[sys.argv.index('--data') + 1]\n"
        "os.makedirs(data, exist_ok=True)\n"
        "with open(os.path.join(data, 'stub-runs'), 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[1:], 'ppid': os.getppid()}) + '\\n')\n"
        "print('stub bootstrap: no network', file=sys.stderr)\n"
        "sys.exit(1)\n")
    data = sandbox["data"]
    (data / "bootstrap.failed").write_text("an old failure\n")
    env = {k: v for k, v in sandbox["env"].items() if k != "PYTHONPATH"}
    env["CLAUDE_PLUGIN_DATA"] = str(data)
    s = Shim(["/bin/sh", str(root / "bin" / "engram-python"), "-m", "engram_mcp.interfaces.server"], env, sandbox["project"])
    try:
        assert s.initialize()["serverInfo"]["name"] == "engram"
        assert s.result("tools/list") == {"tools": TOOLS}
        deadline = time.monotonic() + 20
        runs = data / "stub-runs"
        # the stub creates the file before it writes its line: wait for a whole line, not the file
        while not (runs.exists() and runs.read_text().endswith("\n")) and time.monotonic() < deadline:
            time.sleep(0.05)
        [run] = [json.loads(line) for line in (data / "stub-runs").read_text().splitlines()]
        assert run["argv"] == ["--root", str(root), "--data", str(data), "--unless-running"]
        assert run["ppid"] != s.proc.pid, "the build is not a child of the server (no zombie, not killed with it)"
        is_error, env_ = s.call("recall_memories", {"query": "x"})
        assert is_error and "preparing its Python environment" in env_["message"], "the stale failure was cleared"
    finally:
        s.close()
    cli = subprocess.run(["/bin/sh", str(root / "bin" / "engram-python"), "-m", "engram_mcp.interfaces.cli", "status"], env=env,
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert cli.returncode == 1 and "stub bootstrap: no network" in cli.stderr, "the CLI waits for the build and reports it"
    assert len((data / "stub-runs").read_text().splitlines()) == 2


# ------------------------------------------------------------------------------ once ready
def test_once_the_build_is_done_calls_reach_the_daemon_and_the_queued_write_applies(sandbox) -> None:
    build = BuildRunning(sandbox["data"])
    s = shim(sandbox, ENGRAM_DAEMON_IDLE_EXIT_SECONDS="20")
    try:
        s.initialize()
        is_error, queued = s.call("store_memory", STORE)
        assert not is_error and queued["queued"]
        fake_ready_venv(sandbox["data"])  # the build finishes while the session goes on
        build.release()
        is_error, found = s.call("recall_memories", {"query": "which database does billing use"})
        assert not is_error, found
        assert [m["id"] for m in found["memories"]][:1] == [queued["memory_id"]], "the daemon applied the queued write first"
        assert spool.pending(sandbox["user_dir"]) == []
        is_error, stored = s.call("store_memory", {**STORE, "content": "Deploys go through the canary first", "importance": 1.0})
        assert not is_error and stored["action"] == "created" and stored["memory_id"].startswith("memory:")
        bad = {**STORE, "importance": 1.5}
        is_error, env = s.call("store_memory", bad)
        assert is_error and env == _Validators().check("store_memory", bad), "server.py's own validation (jsonschema)"
        is_error, env = s.call("update_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV", "importance": 0.3})
        assert is_error and env["error"] == "not_found" and env["field"] == "memory_id"
    finally:
        stderr = s.close()
        stop_daemon(sandbox["user_dir"])
    assert "Traceback" not in stderr, stderr


# ------------------------------------------------------------------------------ a half-built environment
def plugin_root(dest: Path) -> Path:
    """An installed plugin's files (bin/, engram_mcp/, pyproject.toml), without a .venv."""
    shutil.copytree(REPO / "bin", dest / "bin")
    shutil.copytree(REPO / "engram_mcp", dest / "engram_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, dest / name)
    return dest


def half_built_venv(data: Path) -> Path:
    """`<data>/venv` as a build leaves it before pip has run: a python, no packages, no stamp."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(data / "venv")], check=True, capture_output=True, timeout=120)
    assert not (data / "venv" / "engram-pyproject.toml").exists()
    return data / "venv" / "bin" / "python"


def run_hook(root: Path, event: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """One hook as Claude Code runs it (hooks.json's command, in the project's directory); its wall time."""
    started = time.monotonic()
    proc = subprocess.run(["/bin/sh", str(root / "bin" / "engram-hook"), event], input=json.dumps(payload), env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    return proc, time.monotonic() - started


HOOK_FAST_S = 3.0  # a hook that starts no daemon costs one Python start (~0.1 s); the old wait was 25 s


@pytest.mark.parametrize("in_checkout", [False, True], ids=["in-a-project", "in-an-engram-checkout"])
def test_hooks_never_use_a_half_built_environment(tmp_path: Path, sandbox, in_checkout: bool) -> None:
    """The build's venv has a python seconds after it starts, and packages only a minute later.

    Until the stamp is written the hooks must not start a daemon on it (it dies on its
    imports while SessionStart waits 25 s for it): context hooks return at once with nothing,
    captures and the session's end are queued in the spool, and the log says why, in words for a
    plugin user (no `make setup`). Nor may a project that is itself an engram checkout (with
    its own engram_mcp/ and a finished .venv) stand in for the plugin's code.
    """
    root = plugin_root(tmp_path / "plugin")
    data = sandbox["data"]
    half_built_venv(data)
    user_dir = sandbox["home"] / ".claude" / "engram"
    env = {k: v for k, v in sandbox["env"].items() if k not in ("PYTHONPATH", "ENGRAM_HOME")}
    env |= {"CLAUDE_PLUGIN_ROOT": str(root), "CLAUDE_PLUGIN_DATA": str(data), "ENGRAM_DAEMON_IDLE_EXIT_SECONDS": "5"}
    project = str(sandbox["project"])
    base = {"session_id": SESSION, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": project}
    calls = [
        ("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        ("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy the billing service?"}),
        ("PostToolUse", {**base, "hook_event_name": "PostToolUse", "tool_name": "Write",
                         "tool_input": {"file_path": f"{project}/app.py", "content": "print('hi')\n"}, "tool_response": {}}),
        ("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "other"}),
    ]
    try:
        for event, payload in calls:
            proc, took = run_hook(root, event, payload, env, REPO if in_checkout else sandbox["project"])
            assert proc.returncode == 0 and proc.stdout == "", (event, proc.stdout, proc.stderr)
            assert took < HOOK_FAST_S, f"{event} took {took:.1f}s on a half-built environment: {proc.stderr}"
        log = (user_dir / "logs" / "hooks.log").read_text()
        assert "engram is preparing its Python environment" in log and str(data / "bootstrap.log") in log, log
        for wrong in ("No module named", "did not start", "make setup"):
            assert wrong not in log, log
        assert not (user_dir / "logs" / "engramd.out").exists(), "no daemon was started on the half-built venv"
        assert not socket_path(user_dir).exists()
        ops = sorted(spool.read(p)["op"] for p in spool.pending(user_dir))
        assert ops == ["hook_capture", "hook_session_end"], ops
    finally:
        stop_daemon(user_dir)


def test_engram_python_serves_the_stand_in_until_the_checkout_venv_is_stamped(tmp_path: Path, sandbox) -> None:
    """A checkout's .venv whose `make setup` has not finished (no .venv/.engram-stamp) is not used."""
    root = plugin_root(tmp_path / "plugin")
    (root / "bin" / "engram-bootstrap").write_text("import sys\nsys.exit(1)\n")  # no build in this test
    half_built_venv(root)  # root/venv: moved to where make setup puts it
    (root / "venv").rename(root / ".venv")
    env = {k: v for k, v in sandbox["env"].items() if k != "PYTHONPATH"} | {"CLAUDE_PLUGIN_DATA": str(sandbox["data"])}
    s = Shim(["/bin/sh", str(root / "bin" / "engram-python"), "-m", "engram_mcp.interfaces.server"], env, sandbox["project"])
    try:
        assert s.initialize()["serverInfo"]["name"] == "engram"
        cmdline = Path(f"/proc/{s.proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        assert "engram_mcp.interfaces.bootstrap_server" in cmdline and str(root / ".venv") not in cmdline, cmdline
    finally:
        s.close()


def test_a_detached_start_while_a_build_runs_leaves_it_to_that_build(sandbox) -> None:
    """Every session's server start during the build launches bin/engram-bootstrap; those must not queue up behind it."""
    build = BuildRunning(sandbox["data"])
    try:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, str(REPO / "bin" / "engram-bootstrap"), "--root", str(REPO), "--data",
                               str(sandbox["data"]), "--unless-running"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and time.monotonic() - started < 10, proc.stderr
        assert not (sandbox["data"] / "venv").exists() and not (sandbox["data"] / "bootstrap.log").exists()
    finally:
        build.release()


def test_doctor_tells_a_plugin_user_how_to_rebuild_not_make_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engram_mcp.interfaces import doctor

    venv = tmp_path / "data" / "venv"
    venv.mkdir(parents=True)
    (venv / "engram-pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(sys, "prefix", str(venv))
    hint = doctor._dependencies_hint()
    assert "make setup" not in hint and f"delete {venv}" in hint and "restart Claude Code" in hint


def test_the_client_finds_the_plugin_root_it_lives_in() -> None:
    """The plugin root (where pyproject.toml and bin/ live) is what the stamp check and the
    spawned daemon's PYTHONPATH use; a package move that shifts it breaks every installed plugin."""
    from engram_mcp.daemon import client

    root = client.PACKAGE_PARENT
    assert (root / "pyproject.toml").is_file() and (root / "engram_mcp" / "__init__.py").is_file(), root
    assert client.checkout_env_python() == root / ".venv" / "bin" / "python" or not (root / ".venv").exists()
