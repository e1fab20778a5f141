"""Helpers for tests that run the real owner process (engramd) in a throwaway HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from engram_mcp.daemon.client import DaemonClient

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Env:
    home: Path
    project: Path
    env: dict[str, str]

    @property
    def user_dir(self) -> Path:
        return self.home / ".claude" / "engram"

    def client(self, name: str = "test") -> DaemonClient:
        os.environ["ENGRAM_HOME"] = str(self.user_dir)
        return DaemonClient(self.user_dir, client_name=name)

    def cli(self, *args: str, input: str | None = None, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "engram_mcp.interfaces.cli", *args], cwd=str(cwd or self.project), env=self.env,
                              input=input, capture_output=True, text=True, timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"engram {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    def shutdown(self) -> None:
        stop_daemon(self.user_dir)


def make_env(tmp: Path) -> Env:
    home, project = tmp / "home", tmp / "proj"
    home.mkdir(parents=True)
    (project / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_") and not k.startswith("CLAUDE")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), ENGRAM_HOME=str(home / ".claude" / "engram"))
    return Env(home, project, env)


def daemon_request(d, op: str, args: dict, ctx) -> dict:
    """One request line through an in-process Daemon, as the socket would deliver it."""
    import json

    line = json.dumps({"id": 1, "op": op, "args": args, "ctx": {"project_root": str(ctx.project_root), "session_id": ctx.session_id}})
    return d._handle_line(line.encode())


def stop_daemon(user_dir: Path, *, wait_s: float = 15.0) -> None:
    """Ask the daemon of `user_dir` to stop (if one runs) and wait until its socket is gone."""
    import time

    from engram_mcp.daemon.client import socket_path

    try:
        DaemonClient(user_dir, autostart=False, timeout=10).call("shutdown")
    except Exception:
        pass
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and socket_path(user_dir).exists():
        time.sleep(0.1)


def probe_while(
    call: Callable[[], Any], probe: Callable[[], float], *, max_probes: int = 200, pause_s: float = 0.02, timeout_s: float = 60.0
) -> tuple[Any, float, list[float]]:
    """Runs `call` in a thread and `probe` again and again until it returns: (call's result, its
    seconds, the probe's values sorted). How one request's latency fares while another works."""
    result: dict[str, Any] = {}

    def run() -> None:
        t0 = time.monotonic()
        result["value"] = call()
        result["seconds"] = time.monotonic() - t0

    thread = threading.Thread(target=run)
    thread.start()
    values = []
    while thread.is_alive() and len(values) < max_probes:
        values.append(probe())
        time.sleep(pause_s)
    thread.join(timeout=timeout_s)
    assert "seconds" in result, "the call did not finish"
    return result["value"], result["seconds"], sorted(values)
