"""Shared machinery of the reliability suite (issue 6): sandboxes with a real daemon,
an in-process MCP tool handler, raw store scans and the run's counters.

Scale: the CI run uses the small numbers; `make stress` sets RELIABILITY_STRESS=1 (not an
ENGRAM_* variable: the config layer would reject an unknown ENGRAM_ key) for the full ones.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from engram_mcp.daemon.client import DaemonClient, socket_path
from tests.fakes import launcher_command

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
STRESS = os.environ.get("RELIABILITY_STRESS") == "1"
RESULTS = REPO / "bench" / "results" / "reliability.json"
ENVELOPE_KEYS = {"error", "message", "degraded", "retry_possible"}
ERROR_CODES = {"invalid_input", "not_found", "memory_unavailable", "storage_full", "schema_too_new",
               "daemon_unavailable", "engram_error", "internal_error"}


def scaled(ci: int, stress: int) -> int:
    return stress if STRESS else ci


def hooks_available() -> bool:
    return (REPO / "engram_mcp" / "interfaces" / "hooks.py").is_file()


# ---------------------------------------------------------------------- counters
_counts_lock = threading.Lock()


def record(section: str, **counts: Any) -> None:
    """Set counts for the report (bench/results/reliability.json, git-ignored), per mode."""
    with _counts_lock:
        try:
            data = json.loads(RESULTS.read_text())
        except (OSError, ValueError):
            data = {}
        run = data.setdefault("stress" if STRESS else "ci", {})
        run.setdefault(section, {}).update(counts)
        run["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def reset_counts() -> None:
    with _counts_lock:
        try:
            data = json.loads(RESULTS.read_text())
        except (OSError, ValueError):
            return
        data.pop("stress" if STRESS else "ci", None)
        RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_counts() -> dict[str, Any]:
    try:
        return json.loads(RESULTS.read_text()).get("stress" if STRESS else "ci", {})
    except (OSError, ValueError):
        return {}


# ---------------------------------------------------------------------- sandboxes
def make_project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Sandbox:
    """A throwaway HOME (user store) and a git project, and the daemon that owns them."""

    root: Path
    home: Path
    project: Path
    env: dict[str, str]
    daemon: subprocess.Popen | None = None
    daemon_log: Path | None = None
    extra_daemon_env: dict[str, str] = field(default_factory=dict)
    #: Start the daemon with the model-free FakeEmbedder installed (tests/fakes.launcher_command).
    fake_embedder: bool = True

    @property
    def user_dir(self) -> Path:
        return self.home / ".claude" / "engram"

    def env_with(self, *, project: Path | None = None, session: str | None = None, **extra: str) -> dict[str, str]:
        env = dict(self.env)
        env["CLAUDE_PROJECT_DIR"] = str(project or self.project)
        if session:
            env["CLAUDE_CODE_SESSION_ID"] = session
        env.update(extra)
        return env

    # -- daemon ---------------------------------------------------------------------
    def _daemon_command(self) -> list[str]:
        args = ("--user-dir", str(self.user_dir))
        if self.fake_embedder:
            return launcher_command("engram_mcp.daemon.process", *args)
        return [PYTHON, "-m", "engram_mcp.daemon.process", *args]

    def start_daemon(self, extra_env: dict[str, str] | None = None, *, timeout: float = 90.0,
                     preexec_fn: Any = None) -> subprocess.Popen:
        assert self.daemon is None or self.daemon.poll() is not None, "daemon already running"
        env = dict(self.env)
        env.update(self.extra_daemon_env)
        env.update(extra_env or {})
        self.user_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.daemon_log = self.root / "daemon.out"
        with open(self.daemon_log, "ab") as out:
            self.daemon = subprocess.Popen(
                self._daemon_command(),
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, cwd=str(self.root),
                preexec_fn=preexec_fn,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.daemon.poll() is not None:
                raise AssertionError(f"daemon exited with {self.daemon.returncode}: {self.daemon_output()[-2000:]}")
            try:
                with self.client(timeout=5) as c:
                    if c.call("ping").get("ready"):
                        return self.daemon
            except Exception:
                pass
            time.sleep(0.03)
        raise AssertionError("daemon did not become ready")

    def daemon_output(self) -> str:
        try:
            return self.daemon_log.read_text(errors="replace") if self.daemon_log else ""
        except OSError:
            return ""

    def stop_daemon(self, timeout: float = 60.0) -> None:
        proc = self.daemon
        if proc is None or proc.poll() is not None:
            self.daemon = None
            return
        try:
            with self.client(timeout=10) as c:
                c.call("shutdown")
        except Exception:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        self.daemon = None

    def kill_daemon(self) -> None:
        proc = self.daemon
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        self.daemon = None

    def client(self, *, timeout: float = 120.0, name: str = "reliability") -> DaemonClient:
        return DaemonClient(self.user_dir, autostart=False, timeout=timeout, client_name=name)

    def call(self, op: str, args: dict[str, Any] | None = None, *, project: Path | None = None, session: str | None = None) -> Any:
        with self.client() as c:
            return c.call(op, args or {}, project_root=str(project or self.project), session_id=session)

    # -- processes --------------------------------------------------------------------
    def cli(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True,
            input: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([PYTHON, "-m", "engram_mcp.interfaces.cli", *args], cwd=str(cwd or self.project), env=env or self.env,
                              input=input, capture_output=True, text=True, timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"engram {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    # -- in-process view (daemon stopped) ------------------------------------------------
    @contextlib.contextmanager
    def service(self) -> Iterator[Any]:
        from tests.fakes import FakeEmbedder
        from engram_mcp.services.service import MemoryService

        assert self.daemon is None or self.daemon.poll() is not None, "stop the daemon first: one owner per store"
        svc = MemoryService(home=self.home, embedder=FakeEmbedder())
        try:
            yield svc
        finally:
            svc.close()

    def cleanup(self) -> None:
        try:
            self.stop_daemon(timeout=20)
        except Exception:
            self.kill_daemon()


@contextlib.contextmanager
def shared_sandbox(factory: Any, name: str) -> Iterator[Sandbox]:
    """A sandbox with a running daemon for a whole module (tests use projects of their own)."""
    for k in [k for k in os.environ if k.startswith(("ENGRAM_", "CLAUDE"))]:
        os.environ.pop(k)
    sb = make_sandbox(factory.mktemp(name))
    sb.start_daemon()
    try:
        yield sb
    finally:
        sb.cleanup()


def fresh_project(sb: Sandbox, name: str) -> Path:
    return make_project(sb.root / f"{name}-{time.monotonic_ns()}")


def make_sandbox(root: Path, *, fake_embedder: bool = True) -> Sandbox:
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    home.mkdir(exist_ok=True)
    project = make_project(root / "proj")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "CLAUDE"))}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), ENGRAM_HOME=str(home / ".claude" / "engram"), PYTHONDONTWRITEBYTECODE="1")
    return Sandbox(root=root, home=home, project=project, env=env, fake_embedder=fake_embedder)


# ---------------------------------------------------------------------- in-process MCP handler
class InProcessMCP:
    """The MCP server's own tool/resource handlers, called in this process (no stdio),
    forwarding to the sandbox's real daemon. Project and session come from the
    environment per call, exactly as in the stdio server."""

    def __init__(self, sandbox: Sandbox) -> None:
        from anyio.from_thread import start_blocking_portal

        from engram_mcp.interfaces.server import build_server

        self.sandbox = sandbox
        self.server = build_server(sandbox.user_dir)
        self.engram = self.server.engram
        self._portal_cm = start_blocking_portal("asyncio")
        self.portal = self._portal_cm.__enter__()
        self.calls = 0

    def close(self) -> None:
        self.engram.pool.close()
        self._portal_cm.__exit__(None, None, None)

    @contextlib.contextmanager
    def _context(self, project: Path | None, session: str | None) -> Iterator[None]:
        saved = {k: os.environ.get(k) for k in ("CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID")}
        os.environ["CLAUDE_PROJECT_DIR"] = str(project or self.sandbox.project)
        if session:
            os.environ["CLAUDE_CODE_SESSION_ID"] = session
        else:
            os.environ.pop("CLAUDE_CODE_SESSION_ID", None)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def call_raw(self, tool: str, arguments: Any, *, project: Path | None = None, session: str | None = None) -> Any:
        import mcp_types as types

        params = types.CallToolRequestParams.model_construct(name=tool, arguments=arguments)
        with self._context(project, session):
            self.calls += 1
            return self.portal.call(self.engram.call_tool, None, params)

    def call(self, tool: str, arguments: Any, **kw: Any) -> tuple[bool, Any]:
        """(is_error, parsed JSON payload)."""
        res = self.call_raw(tool, arguments, **kw)
        assert len(res.content) == 1 and res.content[0].type == "text", res
        return bool(res.is_error), json.loads(res.content[0].text)

    def ok(self, tool: str, arguments: Any, **kw: Any) -> Any:
        is_error, payload = self.call(tool, arguments, **kw)
        assert not is_error, f"{tool} failed: {payload}"
        return payload

    def read_resource(self, uri: str, *, project: Path | None = None, session: str | None = None) -> str:
        import mcp_types as types

        params = types.ReadResourceRequestParams(uri=uri)
        with self._context(project, session):
            res = self.portal.call(self.engram.read_resource, None, params)
        return res.contents[0].text


def assert_envelope(payload: Any) -> dict[str, Any]:
    """A structured error envelope: the four keys with the right types, a known code."""
    assert isinstance(payload, dict), payload
    assert ENVELOPE_KEYS <= set(payload), payload
    assert set(payload) <= ENVELOPE_KEYS | {"field", "details"}, payload
    assert isinstance(payload["error"], str) and payload["error"] in ERROR_CODES, payload
    assert isinstance(payload["message"], str) and payload["message"].strip(), payload
    assert isinstance(payload["degraded"], bool) and isinstance(payload["retry_possible"], bool), payload
    assert len(payload["message"]) <= 2000, "messages never echo huge values"
    return payload


# ---------------------------------------------------------------------- store inspection
def store_dirs(sandbox: Sandbox, *projects: Path) -> list[Path]:
    return [sandbox.user_dir] + [p / ".claude" / "engram" for p in (projects or (sandbox.project,))]


def raw_files(*dirs: Path) -> Iterator[tuple[Path, bytes]]:
    for d in dirs:
        for root, _dirs, files in os.walk(d):
            for name in files:
                p = Path(root) / name
                if p.is_socket() or p.is_symlink():
                    continue
                try:
                    yield p, p.read_bytes()
                except OSError:
                    continue


def find_in_raw(needles: list[str], *dirs: Path) -> dict[str, list[str]]:
    """Which needles occur (case-insensitively, as UTF-8 or JSON-escaped) in any file below dirs."""
    variants = {}
    for n in needles:
        forms = {n.encode("utf-8").lower(), json.dumps(n)[1:-1].encode("utf-8").lower()}
        variants[n] = [f for f in forms if f]
    hits: dict[str, list[str]] = {}
    for path, data in raw_files(*dirs):
        low = data.lower()
        for n, forms in variants.items():
            if any(f in low for f in forms):
                hits.setdefault(n, []).append(str(path))
    return hits


def all_rows(handle: Any, sql: str) -> list[dict[str, Any]]:
    return list(handle.q(sql) or [])


def key_of(row: dict[str, Any]) -> str:
    from engram_mcp.index.scope_index import record_key

    return record_key(row)


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def socket_of(sandbox: Sandbox) -> Path:
    return socket_path(sandbox.user_dir)
