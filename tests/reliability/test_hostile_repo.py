"""Hostile repositories and hostile neighbours (issue 12: defects 1, 2 and two of item 9).

A repository is untrusted input: it can commit `.claude`, `.claude/engram`, anything inside
the store or `.claude/engram.local.md` as a symbolic link to any directory or file of the
user's, and a config file built to explode when parsed. Another local user can pre-create
predictable names in /tmp. Each class is driven through the real parts: the SessionStart
hook (bin/engram-hook), the CLI and the real daemon; nothing outside the project may change,
every refusal is named, no write is lost, and a bad project never slows another.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from engram_mcp.daemon.client import SOCKET_DIR_RECORD, DaemonClient, socket_path
from tests.daemon_env import stop_daemon
from tests.reliability._support import (
    PYTHON,
    REPO,
    Sandbox,
    fresh_project,
    hooks_available,
    make_sandbox,
    record,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HOOK = REPO / "bin" / "engram-hook"
#: A 370-byte YAML alias bomb (nine levels of nine aliases: ~387 million leaves) under a
#: known key: the shape of the file that stalled the daemon for every project.
ALIAS_BOMB = "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")) + "scope_weights: *i\n---\n"
#: A request in a healthy project while another project's config is hostile (seconds).
OTHER_PROJECT_BUDGET_S = 2.0
#: The hostile project's own request: its config is refused at once, not parsed for a minute.
HOSTILE_PROJECT_BUDGET_S = 3.0
#: Growth of the daemon's peak RSS allowed while it reads a hostile config (bytes).
RSS_GROWTH_BUDGET_BYTES = 150 * 1024 * 1024


# ---------------------------------------------------------------------- helpers
def _victim(root: Path) -> Path:
    """A directory of the user's that a repository points a link at: scripts, notes, a subdir."""
    victim = root / "victim"
    (victim / "bin").mkdir(parents=True)
    (victim / "sub").mkdir()
    (victim / "bin" / "deploy.sh").write_text("#!/bin/sh\necho deploying\n")
    (victim / "notes.txt").write_text("the user's own notes\n")
    (victim / "sub" / "data.bin").write_bytes(os.urandom(64))
    modes = {victim: 0o755, victim / "bin": 0o755, victim / "sub": 0o750, victim / "bin" / "deploy.sh": 0o755,
             victim / "notes.txt": 0o644, victim / "sub" / "data.bin": 0o640}
    for path, mode in modes.items():
        os.chmod(path, mode)
    return victim


def _snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry below `root` (links not followed): kind, mode, size, mtime, content hash."""
    out: dict[str, tuple[Any, ...]] = {}
    entries = [root] + [Path(d) / n for d, dirs, files in os.walk(root) for n in dirs + files]
    for path in entries:
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
        out[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), oct(stat.S_IMODE(st.st_mode)), st.st_size, st.st_mtime_ns, digest)
    return out


def _link_store(project: Path, victim: Path) -> Path:
    (project / ".claude").mkdir()
    (project / ".claude" / "engram").symlink_to(victim)
    return project / ".claude" / "engram"


def _link_claude(project: Path, victim: Path) -> Path:
    (project / ".claude").symlink_to(victim)
    return project / ".claude"


def _real_store(project: Path) -> Path:
    store = project / ".claude" / "engram"
    store.mkdir(parents=True)
    return store


def _link_data(project: Path, victim: Path) -> Path:
    (_real_store(project) / "data").symlink_to(victim)
    return project / ".claude" / "engram" / "data"


def _link_engine_dir(project: Path, victim: Path) -> Path:
    data = _real_store(project) / "data"
    data.mkdir()
    (data / "clog").symlink_to(victim)
    return data / "clog"


def _link_lock(project: Path, victim: Path) -> Path:
    (_real_store(project) / "LOCK").symlink_to(victim / "notes.txt")
    return project / ".claude" / "engram" / "LOCK"


def _link_gitignore(project: Path, victim: Path) -> Path:
    (_real_store(project) / ".gitignore").symlink_to(victim / "notes.txt")
    return project / ".claude" / "engram" / ".gitignore"


def _link_compaction_leftover(project: Path, victim: Path) -> Path:
    """What an interrupted compaction leaves (data.old/): recovery zero-fills and deletes it."""
    (_real_store(project) / "data.old").symlink_to(victim)
    return project / ".claude" / "engram" / "data.old"


#: Where a repository can put a link, and whether engram must refuse the store for it (a
#: committed `.gitignore` link is harmless as long as nothing is written through it).
LINKS: dict[str, tuple[Callable[[Path, Path], Path], bool]] = {
    "store-dir": (_link_store, True),
    "dot-claude": (_link_claude, True),
    "data-dir": (_link_data, True),
    "engine-subdir": (_link_engine_dir, True),
    "lock-file": (_link_lock, True),
    "gitignore": (_link_gitignore, False),
    "compaction-leftover": (_link_compaction_leftover, True),
}


def _hook(sb: Sandbox, event: str, project: Path, session: str, **payload: Any) -> subprocess.CompletedProcess:
    body = {"session_id": session, "cwd": str(project), "hook_event_name": event, **payload}
    return subprocess.run([str(HOOK), event], input=json.dumps(body), text=True, capture_output=True, timeout=120,
                          env=sb.env_with(project=project, session=session, ENGRAM_PYTHON=PYTHON))


def _hooks_log(sb: Sandbox) -> str:
    try:
        return (sb.user_dir / "logs" / "hooks.log").read_text(errors="replace")
    except OSError:
        return ""


@pytest.fixture
def running(shared: Sandbox) -> Sandbox:
    shared.project = fresh_project(shared, "hostile")
    return shared


# ---------------------------------------------------------------------- 1. committed links
@pytest.mark.parametrize("where", list(LINKS))
def test_a_committed_link_never_lets_engram_touch_what_it_points_to(running: Sandbox, where: str, tmp_path: Path) -> None:
    make_link, refused = LINKS[where]
    victim = _victim(tmp_path)
    before = _snapshot(victim)
    project = running.project
    link = make_link(project, victim)
    session = f"hostile-{where}"

    running.call("store", {"content": "The user prefers answers that start with the command (zebu marker).", "type": "semantic",
                           "scope": "user", "importance": 0.95, "category": "preference"})
    if hooks_available():
        started = _hook(running, "SessionStart", project, session, source="startup")
        assert started.returncode == 0, started.stderr
        context = json.loads(started.stdout or "{}").get("hookSpecificOutput", {}).get("additionalContext", "")
        assert "zebu marker" in context, f"SessionStart still gives the user scope's context: {started.stdout[:500]}"
    stored = running.cli("store", f"hostile repository probe {where} quokka", "--type", "semantic", "--scope", "project",
                         "--json", cwd=project)
    answer = json.loads(stored.stdout)
    status = running.cli("status", cwd=project).stdout
    recalled = running.cli("recall", "quokka probe", "--json", cwd=project)
    assert recalled.returncode == 0

    assert _snapshot(victim) == before, f"engram changed the link's target ({where})"
    if refused:
        assert answer.get("queued") is True and answer.get("degraded") is True, answer
        assert str(link) in status and "symbolic link" in status, status
        assert "Fix:" in status, "the refusal says what to do"
        if hooks_available():
            assert str(link) in _hooks_log(running), "the SessionStart hook reports the refusal in its log"
        # the user removes the link: the queued write is applied, nothing was lost
        link.unlink()
        assert wait_for(lambda: "quokka" in running.cli("recall", "quokka probe", cwd=project).stdout, timeout=60), \
            "the write queued while the store was refused is applied once it is fixed"
    else:
        assert answer.get("queued") is not True, answer
        assert (project / ".claude" / "engram" / ".gitignore").is_symlink(), "the committed link is left as it is"
    assert _snapshot(victim) == before
    store = project / ".claude" / "engram"
    if store.is_dir() and not store.is_symlink():
        assert stat.S_IMODE(store.lstat().st_mode) == 0o700 or where in ("data-dir", "engine-subdir", "lock-file", "gitignore",
                                                                          "compaction-leftover")
    record("hostile_repo", **{f"link_{where}_victim_untouched": 1})


def test_a_store_owned_by_someone_else_is_refused_with_its_owner_named(running: Sandbox) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to create a directory owned by another user")
    project = running.project
    store = project / ".claude" / "engram"
    store.mkdir(parents=True)
    os.chown(store, 12345, 12345)
    answer = json.loads(running.cli("store", "foreign owner probe", "--type", "semantic", "--scope", "project", "--json", cwd=project).stdout)
    assert answer.get("queued") is True, answer
    status = running.cli("status", cwd=project).stdout
    assert "owned by uid 12345" in status, status
    assert not any(store.iterdir()), "nothing was written into a directory that is not the user's"


def test_a_linked_project_config_is_refused_named_and_never_followed(running: Sandbox, tmp_path: Path) -> None:
    project = running.project
    outside = tmp_path / "elsewhere.md"
    outside.write_text("---\ncontext_token_budget: 100\nuser_prompt_recall: false\n---\n")
    (project / ".claude").mkdir()
    link = project / ".claude" / "engram.local.md"
    link.symlink_to(outside)
    cfg = running.call("hook_config", {})
    assert cfg.get("user_prompt_recall", True) is True, f"the linked file's settings were applied: {cfg}"
    doctor = running.cli("doctor", cwd=project, check=False).stdout
    assert str(link) in doctor and "symbolic link" in doctor and "defaults" in doctor, doctor


def test_a_config_that_is_a_fifo_never_blocks_the_daemon(running: Sandbox) -> None:
    project = running.project
    (project / ".claude").mkdir()
    os.mkfifo(project / ".claude" / "engram.local.md")
    started = time.monotonic()
    running.call("recall", {"query": "anything"}, project=project)
    assert time.monotonic() - started < OTHER_PROJECT_BUDGET_S
    doctor = running.cli("doctor", cwd=project, check=False).stdout
    assert "not a regular file" in doctor, doctor


# ---------------------------------------------------------------------- 2. hostile config files
def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


HOSTILE_CONFIGS = {
    "alias-bomb": ALIAS_BOMB,
    "deep-nesting": "---\nscope_weights: " + "[" * 50_000 + "]" * 50_000 + "\n---\n",
    "huge-file": "---\n" + "".join(f"k{i}: {'x' * 60}\n" for i in range(200_000)) + "---\n",
    "many-unknown-keys": "---\n" + "".join(f"unknown_key_{i}: [1, 2, 3]\n" for i in range(3000)) + "---\n",
    "huge-integer": "---\nrrf_k: " + "9" * 20_000 + "\n---\n",
    "bad-date": "---\nlog_level: 2024-13-45\nfusion: 2024-02-31\n---\n",
    "long-value": "---\nfusion: " + "z" * 50_000 + "\n---\n",
}


@pytest.mark.parametrize("kind", list(HOSTILE_CONFIGS))
def test_a_hostile_config_in_one_project_never_slows_another(running: Sandbox, kind: str) -> None:
    hostile, healthy = running.project, fresh_project(running, "healthy")
    running.call("store", {"content": "healthy project fact: the kettle is blue", "type": "semantic", "scope": "project"},
                 project=healthy)
    (hostile / ".claude").mkdir()
    (hostile / ".claude" / "engram.local.md").write_text(HOSTILE_CONFIGS[kind])
    pid = running.daemon.pid
    rss_before = _peak_rss_bytes(pid)

    timings: dict[str, float] = {}
    results: dict[str, Any] = {}

    def hostile_request() -> None:
        started = time.monotonic()
        with running.client(timeout=120) as c:
            results["hostile"] = c.call("recall", {"query": "anything at all"}, project_root=str(hostile))
            results["status"] = c.call("status", {}, project_root=str(hostile))
        timings["hostile"] = time.monotonic() - started

    worker = threading.Thread(target=hostile_request, daemon=True)
    worker.start()
    time.sleep(0.05)  # the hostile request is in flight
    started = time.monotonic()
    with running.client(timeout=120) as c:
        found = c.call("recall", {"query": "what colour is the kettle"}, project_root=str(healthy))
    timings["healthy"] = time.monotonic() - started
    worker.join(120)

    assert any("kettle" in m["content"] for m in found["memories"]), found
    assert timings["healthy"] < OTHER_PROJECT_BUDGET_S, f"a recall in a clean project took {timings['healthy']:.1f}s"
    assert "hostile" in timings and timings["hostile"] < HOSTILE_PROJECT_BUDGET_S, timings
    problem = results["status"].get("config_problem") or ""
    assert "engram.local.md" in problem, problem
    assert len(problem) < 4000, f"the problem echoes the hostile value ({len(problem)} characters)"
    growth = _peak_rss_bytes(pid) - rss_before
    assert growth < RSS_GROWTH_BUDGET_BYTES, f"peak RSS grew by {growth / 1e6:.0f} MB"
    record("hostile_repo", **{f"config_{kind}_healthy_recall_ms": round(timings["healthy"] * 1000),
                              f"config_{kind}_hostile_request_ms": round(timings["hostile"] * 1000)})


# ---------------------------------------------------------------------- 3. umask 000
def _umask_zero() -> None:
    os.umask(0)


def _private_tree_problems(root: Path) -> list[str]:
    bad = []
    entries = [root] + [Path(d) / n for d, dirs, files in os.walk(root) for n in dirs + files]
    for path in entries:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or stat.S_ISSOCK(st.st_mode):
            continue
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) != want:
            bad.append(f"{path} {oct(stat.S_IMODE(st.st_mode))}")
    return bad


def test_everything_engram_creates_is_private_under_umask_000(tmp_path: Path) -> None:
    sb = make_sandbox(tmp_path / "umask")  # HOME without .claude: engram creates every level itself
    project = sb.project
    env = sb.env_with(project=project, session="umask-session", ENGRAM_PYTHON=PYTHON)
    try:
        if hooks_available():
            for event, extra in (("SessionStart", {"source": "startup"}),
                                 ("PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": f"{project}/a.py", "old_string": "a",
                                                                                       "new_string": "b"}, "tool_response": {}})):
                body = {"session_id": "umask-session", "cwd": str(project), "hook_event_name": event, **extra}
                done = subprocess.run([str(HOOK), event], input=json.dumps(body), text=True, capture_output=True, timeout=120,
                                      env=env, preexec_fn=_umask_zero)
                assert done.returncode == 0, done.stderr
        for scope in ("project", "user"):
            done = subprocess.run([PYTHON, "-m", "engram_mcp.interfaces.cli", "store", f"umask probe for the {scope} scope", "--type", "semantic", "--scope", scope],
                                  cwd=str(project), env=env, capture_output=True, text=True, timeout=300, preexec_fn=_umask_zero)
            assert done.returncode == 0, done.stdout + done.stderr
        subprocess.run([PYTHON, "-m", "engram_mcp.interfaces.cli", "status"], cwd=str(project), env=env, capture_output=True, timeout=300,
                       preexec_fn=_umask_zero, check=True)
        problems = []
        for claude in (sb.home / ".claude", project / ".claude"):
            assert claude.is_dir()
            if stat.S_IMODE(claude.stat().st_mode) != 0o700:
                problems.append(f"{claude} {oct(stat.S_IMODE(claude.stat().st_mode))}")
        problems += _private_tree_problems(sb.user_dir) + _private_tree_problems(project / ".claude" / "engram")
        assert not problems, f"not private under umask 000: {problems[:10]}"
        record("hostile_repo", umask_000_paths_checked=sum(1 for _ in sb.user_dir.rglob("*")) + sum(1 for _ in (project / ".claude").rglob("*")))
    finally:
        stop_daemon(sb.user_dir)


# ---------------------------------------------------------------------- 4. the socket's directory
def _long_user_dir(root: Path) -> Path:
    deep = root / ("d" * 60) / ("e" * 60)
    return deep / ".claude" / "engram"


def test_a_too_long_socket_path_uses_a_fresh_private_directory_that_clients_find(tmp_path: Path) -> None:
    sb = make_sandbox(tmp_path / "sock")
    user_dir = _long_user_dir(tmp_path)
    sb.env["ENGRAM_HOME"] = str(user_dir)
    sb.home = user_dir.parent.parent
    sb.home.mkdir(parents=True, exist_ok=True)
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    sb.env["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        sb.start_daemon()
        path = socket_path(user_dir)
        assert path.parent.parent == runtime, f"the socket is not in $XDG_RUNTIME_DIR: {path}"
        st = path.parent.lstat()
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
        assert (user_dir / SOCKET_DIR_RECORD).read_text().strip() == str(path.parent)
        assert sb.call("ping")["pong"]
        # a client without XDG_RUNTIME_DIR (another terminal, cron) finds the same daemon
        out = subprocess.run([PYTHON, "-m", "engram_mcp.interfaces.cli", "status"], cwd=str(sb.project), capture_output=True, text=True,
                             env={k: v for k, v in sb.env.items() if k != "XDG_RUNTIME_DIR"}, timeout=120)
        assert out.returncode == 0 and "connected" in out.stdout, out.stdout + out.stderr
    finally:
        sb.cleanup()


@pytest.mark.parametrize("tamper", ["symlink", "group-writable", "foreign-owner", "missing"])
def test_a_recorded_socket_directory_that_is_not_private_is_never_used(tmp_path: Path, tamper: str) -> None:
    if tamper == "foreign-owner" and os.getuid() != 0:
        pytest.skip("needs root to create a directory owned by another user")
    sb = make_sandbox(tmp_path / "sock")
    user_dir = _long_user_dir(tmp_path)
    sb.env["ENGRAM_HOME"] = str(user_dir)
    sb.home = user_dir.parent.parent
    sb.home.mkdir(parents=True, exist_ok=True)
    user_dir.mkdir(parents=True, mode=0o700)
    planted = tmp_path / "planted"
    if tamper == "symlink":
        real = tmp_path / "real"
        real.mkdir(mode=0o700)
        planted.symlink_to(real)
    elif tamper == "group-writable":
        planted.mkdir()
        os.chmod(planted, 0o770)
    elif tamper == "foreign-owner":
        planted.mkdir(mode=0o700)
        os.chown(planted, 12345, 12345)
    (user_dir / SOCKET_DIR_RECORD).write_text(str(planted))
    try:
        sb.start_daemon()
        path = socket_path(user_dir)
        assert planted not in path.parents and path.parent != planted.resolve(), path
        assert sb.call("ping")["pong"]
        assert not (planted.exists() and any(p.name.endswith(".sock") for p in planted.iterdir()))
        record("hostile_repo", **{f"socket_record_{tamper}_ignored": 1})
    finally:
        sb.cleanup()


SQUAT_UID = 65534  # "nobody": runs the client side; root plays the other local user
SQUAT_CHECK = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from engram_mcp.daemon.client import socket_path
user_dir = Path(sys.argv[2])
made = socket_path(user_dir, create=True) if "create" in socket_path.__code__.co_varnames else socket_path(user_dir)
print(made)
print(socket_path(user_dir))
"""


def test_another_user_cannot_disable_engram_by_squatting_tmp(tmp_path: Path) -> None:
    """Another local user pre-creates /tmp/engram-<uid> (the old fixed fallback): engram goes on."""
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if os.getuid() != 0 or system_python is None:
        pytest.skip("needs root (to act as two users) and a system python3")
    squat = Path("/tmp") / f"engram-{SQUAT_UID}"
    if os.path.lexists(squat):
        pytest.skip(f"{squat} exists already")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="engram-squat-test-", dir="/tmp"))  # traversable by the other uid
    os.chmod(base, 0o755)
    user_dir = base / ("u" * 80) / ".claude" / "engram"
    user_dir.mkdir(parents=True)
    for level in [user_dir, *user_dir.parents]:
        if level == base:
            break
        os.chown(level, SQUAT_UID, SQUAT_UID)
    # The checkout may sit in a directory the other uid cannot enter (a CI clone under a 0700
    # temp dir): give it a readable copy of the package.
    pkg = base / "pkg"
    shutil.copytree(REPO / "engram_mcp", pkg / "engram_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    for root, dirs, files in os.walk(pkg):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    squat.mkdir(mode=0o755)  # owned by root: the "other user"
    made: Path | None = None
    try:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(base), "ENGRAM_HOME": str(user_dir)}
        out = subprocess.run([system_python, "-S", "-c", SQUAT_CHECK, str(pkg), str(user_dir)], capture_output=True, text=True,
                             timeout=60, env=env, preexec_fn=lambda: (os.setgid(SQUAT_UID), os.setuid(SQUAT_UID)))
        assert out.returncode == 0, out.stderr[-2000:]
        first, again = out.stdout.split()
        made = Path(first).parent
        assert first == again, "client and daemon agree on the socket path"
        st = made.lstat()
        assert st.st_uid == SQUAT_UID and stat.S_IMODE(st.st_mode) == 0o700 and stat.S_ISDIR(st.st_mode)
        assert made != squat
        record("hostile_repo", socket_squatted_tmp_survived=1)
    finally:
        squat.rmdir()
        shutil.rmtree(base, ignore_errors=True)
        if made is not None and made.is_dir() and made.parent == Path("/tmp") and made.name.startswith(f"engram-{SQUAT_UID}-"):
            shutil.rmtree(made, ignore_errors=True)


@pytest.mark.parametrize("kind", ["file", "link"])
def test_the_daemon_never_deletes_a_file_at_the_socket_path(tmp_path: Path, kind: str) -> None:
    """ENGRAM_SOCKET can come from an environment a repository sets (Claude Code project settings):
    the daemon replaces only a stale socket there, never the user's file or link."""
    sb = make_sandbox(tmp_path / "sockfile")
    victim = tmp_path / "important.txt"
    victim.write_text("the user's file\n")
    target = victim if kind == "file" else tmp_path / "a-link"
    if kind == "link":
        target.symlink_to(victim)
    env = dict(sb.env, ENGRAM_SOCKET=str(target))
    sb.user_dir.mkdir(parents=True, mode=0o700)
    done = subprocess.run([PYTHON, "-m", "engram_mcp.daemon.process", "--user-dir", str(sb.user_dir)], env=env, capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path))
    assert done.returncode != 0
    assert victim.read_text() == "the user's file\n" and os.path.lexists(target)
    if kind == "link":
        assert target.is_symlink()
    assert "not a socket" in (sb.user_dir / "logs" / "engramd.log").read_text()
    record("hostile_repo", **{f"socket_path_{kind}_kept": 1})
