"""The process model holds under load: 4 processes x 250 interleaved stores and recalls
on one project store through the real owner process, then every acknowledged memory is
present exactly once and the retrieval index agrees with the records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q
from tests.daemon_env import make_env

WORKERS = 4
OPS_PER_WORKER = 250

WORKER = textwrap.dedent(
    """
    import json, random, sys
    from engram_mcp.daemon.client import DaemonClient
    from pathlib import Path
    user_dir, project, worker, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()
    rnd = random.Random(worker)
    acked = []
    with DaemonClient(user_dir, client_name=f"worker{worker}") as c:
        for i in range(n):
            if i % 2 == 0:
                token = f"tok{worker}x{i}"
                text = f"{token} " + " ".join(rnd.choice(words) for _ in range(8))
                r = c.call("store", {"content": text, "type": "semantic", "scope": "project", "dedup": False}, project_root=project)
                acked.append([r["memory_id"], token, text])
            else:
                c.call("recall", {"query": rnd.choice(words) + " " + rnd.choice(words), "limit": 5}, project_root=project)
    print(json.dumps(acked))
    """
)


@pytest.mark.slow
def test_four_processes_interleaving_stores_and_recalls_lose_nothing(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, str(script), str(env.user_dir), str(env.project), str(w), str(OPS_PER_WORKER)],
                env=env.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(WORKERS)
        ]
        acked = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0, err
            acked.extend(json.loads(out))
    finally:
        env.shutdown()
    assert len(acked) == WORKERS * OPS_PER_WORKER // 2

    _wait_for_daemon_exit(env.user_dir)
    os.environ.pop("ENGRAM_HOME", None)
    svc = MemoryService(home=env.home, embedder=_fake())
    try:
        h = svc.handle(RequestContext(env.project), "project")
        rows = h.q(q.ALL_MEMORIES)
        by_id = {f"memory:{r['id'].id}": r for r in rows}
        assert len(rows) == len(acked), "every acknowledged store present, nothing extra"
        for mid, _token, text in acked:
            assert by_id[mid]["content"] == text
        contents = [r["content"] for r in rows]
        assert len(set(contents)) == len(contents), "no memory stored twice"
        assert len(h.index) == len(rows), "index holds exactly the records"
        for mid, token, _ in acked:
            slots, _scores = h.index.bm25.search(token, 1)
            assert h.index.key_of(int(slots[0])) == mid.split(":")[1], f"BM25 index lost {mid}"
    finally:
        svc.close()


def _fake():
    from tests.fakes import FakeEmbedder

    return FakeEmbedder()


def _wait_for_daemon_exit(user_dir: Path, timeout: float = 30.0) -> None:
    """The daemon releases the stores' locks when it exits."""
    import fcntl
    import time

    deadline = time.monotonic() + timeout
    lock = user_dir / "engramd.lock"
    while time.monotonic() < deadline:
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(0.1)
        finally:
            os.close(fd)
    raise AssertionError("daemon did not exit")


def test_engram_python_wins_over_a_checkout_venv_that_cannot_be_looked_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout whose `.venv` cannot even be stat'ed (another user's, not searchable: the
    tests run as root, so the refusal is raised by hand) must not stop ENGRAM_PYTHON."""
    from engram_mcp.daemon import client

    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    real_stat = Path.stat

    def refusing_stat(self: Path, *a: object, **kw: object) -> os.stat_result:
        if ".venv" in self.parts:
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "stat", refusing_stat)
    monkeypatch.setattr(client.checkout_env_python, "__defaults__", (checkout,))
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    chosen = tmp_path / "custom" / "python"  # outside any .venv, as a custom install's
    chosen.parent.mkdir()
    chosen.write_text("#!/bin/sh\n")
    chosen.chmod(0o755)
    monkeypatch.setenv("ENGRAM_PYTHON", str(chosen))
    assert client.find_python() == str(chosen)
    monkeypatch.delenv("ENGRAM_PYTHON")
    assert client.checkout_env_python() is None  # refused, not raised


def test_an_engram_python_that_cannot_run_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engram_mcp.daemon import client

    not_runnable = tmp_path / "python"
    not_runnable.write_text("")
    not_runnable.chmod(0o644)
    monkeypatch.setenv("ENGRAM_PYTHON", str(not_runnable))
    assert client.find_python() != str(not_runnable)


STOP_RUNS = 4


@pytest.mark.timeout(600)
def test_daemon_stop_returns_once_the_daemon_exited_so_removing_its_stores_never_races(tmp_path: Path) -> None:
    """`engram daemon stop && rm -rf <stores>`: the daemon writes its index files at exit (it
    holds 200 unsaved memories here, so that takes a while); stop returns only once the process
    is gone, so nothing is written after the removal, and its socket folder is gone too."""
    for run in range(STOP_RUNS):
        env = make_env(tmp_path / f"run{run}")
        stores = [env.user_dir, env.project / ".claude" / "engram"]
        with env.client() as c:
            for i in range(200):
                c.call(
                    "store",
                    {
                        "content": f"note {i} on the deploy pipeline",
                        "type": "semantic",
                        "scope": "project",
                        "dedup": False,
                    },
                    project_root=str(env.project),
                )
            pid = c.call("ping")["pid"]
        script = f"{sys.executable} -m engram_mcp.interfaces.cli daemon stop && rm -rf {' '.join(map(str, stores))}"
        done = subprocess.run(
            ["sh", "-c", script], cwd=str(env.project), env=env.env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert _gone(pid), f"run {run}: stop returned while the daemon (pid {pid}) still ran"
        assert not any(p.exists() for p in stores), f"run {run}: the daemon wrote after the removal"
        assert "stopped" in done.stdout, done.stdout


def test_a_daemon_with_a_long_socket_path_removes_its_socket_folder_when_it_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user directory too deep for AF_UNIX gets a private socket folder (`engram-<uid>-*` in the
    temporary folder): a stop removes it, and its record."""
    from engram_mcp.daemon.client import SOCKET_DIR_RECORD, socket_path

    env = make_env(tmp_path / ("deep" * 30))
    tmpdir = tmp_path / "t"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # the daemon started below inherits these
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("ENGRAM_SOCKET", raising=False)
    try:
        with env.client() as c:
            c.call("ping")
        folder = socket_path(env.user_dir).parent
        assert folder.parent == tmpdir and folder.name.startswith(f"engram-{os.getuid()}-"), folder
        env.cli("daemon", "stop")
        assert not folder.exists() and not list(tmpdir.glob("engram-*"))
        assert not (env.user_dir / SOCKET_DIR_RECORD).exists()
    finally:
        env.shutdown()


def _gone(pid: int) -> bool:
    """Whether process `pid` has exited (gone, or a zombie its parent has not reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] in ("Z", "X")
    except OSError:
        return True
