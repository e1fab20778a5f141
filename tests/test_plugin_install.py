"""engram installs as a Claude Code plugin and its MCP server connects, on a fresh HOME.

What these tests established with Claude Code 2.1.330 (pinned in tests/claude-cli/package.json):

* `claude plugin validate --strict` passes for `.claude-plugin/plugin.json` and
  `.claude-plugin/marketplace.json` (validated one by one: given the directory it checks
  only the marketplace).
* `claude plugin marketplace add <dir>` + `claude plugin install engram@engram-dev` copy the
  *whole* plugin source directory (ignored files, a `.venv`, anything: only `.git` is left out;
  no ignore file is read) to `~/.claude/plugins/cache/engram-dev/engram/<version>/`. From a
  set-up checkout with `"source": "./"` that was 1.2 GB (`.venv` and the test CLI in
  `tests/claude-cli/node_modules`). So the marketplace lists `./plugin`: a directory of
  relative symlinks to what the plugin runs (bin/, engram_mcp/, the markdown components,
  pyproject.toml, ...), plus real copies of the two manifests `claude plugin validate` refuses
  to read through a link (`.claude-plugin/plugin.json`, `hooks/hooks.json`). The copy
  follows links that stay inside the marketplace directory, so the cache holds ~2 MB
  whatever else the checkout holds. When the root has a `package.json`
  + `package-lock.json` they also run `npm ci` there (Claude Code documents that automatic
  install and offers no way to turn it off): with the test-only pin of
  `@anthropic-ai/claude-code` at the root that put ~370 MB into every install, so the pin
  lives in `tests/claude-cli/`, and the installed copy has no `node_modules`.
* For a directory marketplace the plugin still *runs from the source directory*:
  `${CLAUDE_PLUGIN_ROOT}` is the plugin's directory in the marketplace given to `marketplace
  add` (`claude plugin list` says "Read from: <dir>/plugin"), and `${CLAUDE_PLUGIN_DATA}` is
  `~/.claude/plugins/data/engram-engram-dev/`.
* `bin/engram-python` picks `$ENGRAM_PYTHON`, else the plugin root's `.venv`, else builds a
  virtualenv in `${CLAUDE_PLUGIN_DATA}/venv` with `bin/engram-bootstrap` (pip, from PyPI).
  That build takes ~40-60 s here, longer than Claude Code waits for an MCP server (30 s,
  "connection timed out after 30000ms"), so for the MCP server it starts the build detached
  and serves the standard-library stand-in `engram_mcp/interfaces/bootstrap_server.py` meanwhile: the
  first session connects at once with the real tools, calls say the environment is being
  prepared, writes are queued; the next start runs the real server, whose daemon applies
  the queued writes.
* Without `ANTHROPIC_BASE_URL` pointing somewhere local, `plugin details`, `mcp list` and
  `marketplace add` each stall ~19 s on a network lookup that cannot succeed here; the tests
  point it at a closed local port.

Most tests install from a small copy of the repository (the files git knows about, tracked or
new and not ignored); `test_install_from_a_set_up_checkout_stays_small_and_works` installs from
a copy that has a `.venv` and the test CLI's `node_modules`, as a developer's checkout does.
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

import pytest

from engram_mcp.core import spool
from engram_mcp.daemon.client import socket_path
from engram_mcp.core.paths import lock_held
from tests.daemon_env import stop_daemon
from tests.claude_harness import (
    CLAUDE_CLI_DIR,
    REPO_ROOT,
    FakeAnthropic,
    ToolUse,
    block_text,
    isolated_env,
    result_json,
    run_claude,
    tool_results,
)
from tests.test_bootstrap_server import Shim

pytestmark = [pytest.mark.claude, pytest.mark.timeout(900)]

MARKETPLACE = "engram-dev"
PLUGIN = f"engram@{MARKETPLACE}"
SERVER_LINE = "plugin:engram:engram:"
TOOL = "mcp__plugin_engram_engram__"
OFFLINE = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}  # see the module docstring
BOOTSTRAP_WAIT_S = 900
PAYLOAD_DIR = "plugin"  # what the marketplace lists: the installed plugin is a copy of it
# Every entry of the payload: a relative link to the root's entry of the same name, except the
# manifests `claude plugin validate --strict` will not read through a link (byte-equal copies).
PAYLOAD_LINKS = {".mcp.json", "README.md", "agents", "bin", "commands", "config.local.md.example", "engram_mcp",
                 "pyproject.toml", "skills"}
PAYLOAD_COPIES = {".claude-plugin/plugin.json", "hooks/hooks.json"}
INSTALLED_MAX_BYTES = 30 * 1024 * 1024  # "tens of MB at most"; the payload is ~2 MB
PLUGIN_OVERHEAD_MAX_S = 3.0  # a first-session turn over the same turn without the plugin


def _repo_copy(dest: Path) -> Path:
    """The files git knows about (tracked, or new and not ignored), copied to `dest`."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                         capture_output=True, check=True).stdout.decode()
    for rel in filter(None, out.split("\0")):
        src = REPO_ROOT / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    return dest


def _pip_env() -> dict[str, str]:
    """Let the bootstrap use the real pip cache and any index configuration (CI mirrors)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    return env


def _claude(home: Path, cwd: Path, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    return run_claude(list(args), home=home, cwd=cwd, env_extra={**OFFLINE, **env}, timeout=timeout)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _server_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith(SERVER_LINE)]
    assert lines, f"engram's server is not listed:\n{out}"
    return lines[0]


def _daemon_running(user_dir: Path) -> bool:
    """engramd holds an exclusive flock on engramd.lock while it runs."""
    return lock_held(user_dir / "engramd.lock")


def _stop_daemon(home: Path) -> None:
    """`claude mcp list` starts the MCP server, whose warm-up starts engramd in that HOME.

    The daemon may still be starting when `claude mcp list` returns (not listening yet), so
    this waits until no daemon has run for a few seconds, shutting down any that does.
    """
    user_dir = home / ".claude" / "engram"
    deadline = time.monotonic() + 60
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < 3:
        if _daemon_running(user_dir) or socket_path(user_dir).exists():
            stop_daemon(user_dir, wait_s=0)
            quiet_since = time.monotonic()
        time.sleep(0.2)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory):
    """A fresh HOME with engram installed from a small copy of the repository."""
    base = tmp_path_factory.mktemp("plugin-install")
    plugin = _repo_copy(base / "engram")
    assert not (plugin / ".venv").exists() and not (plugin / "node_modules").exists()
    home = base / "home"
    project = base / "project"
    (project / ".git").mkdir(parents=True)
    for manifest in ("plugin.json", "marketplace.json"):
        out = _ok(_claude(home, project, "plugin", "validate", "--strict", str(plugin / ".claude-plugin" / manifest)))
        assert "Validation passed" in out
    assert "Successfully added marketplace: engram-dev" in _ok(_claude(home, project, "plugin", "marketplace", "add", str(plugin)))
    assert f"Successfully installed plugin: {PLUGIN}" in _ok(_claude(home, project, "plugin", "install", PLUGIN, timeout=600))
    yield plugin, home, project
    _stop_daemon(home)


def test_install_copies_the_plugin_and_reports_its_components(installed) -> None:
    plugin, home, project = installed
    record = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())["plugins"][PLUGIN][0]
    cache = Path(record["installPath"])
    assert cache == home / ".claude" / "plugins" / "cache" / MARKETPLACE / "engram" / record["version"]
    for rel in (".claude-plugin/plugin.json", ".mcp.json", "bin/engram-python", "bin/engram-bootstrap", "engram_mcp/interfaces/server.py",
                "engram_mcp/interfaces/bootstrap_server.py", "pyproject.toml"):
        assert (cache / rel).is_file(), f"{rel} missing from the installed copy"
    assert not (cache / ".venv").exists(), "the installed copy has no virtualenv: first use must build one"
    assert not (cache / "package.json").exists(), "a root package.json makes Claude Code run npm in every install"
    nested = [str(p.relative_to(cache)) for p in cache.rglob("node_modules")]
    assert nested == [], f"the install ran npm: {nested}"
    listed = _ok(_claude(home, project, "plugin", "list"))
    assert PLUGIN in listed and f"Read from: {plugin / PAYLOAD_DIR}" in listed and "enabled" in listed

    details = _ok(_claude(home, project, "plugin", "details", PLUGIN))
    assert "engram 0.1.0" in details and "MCP servers (1)  engram" in details


def test_mcp_list_reports_the_server_connected(installed) -> None:
    plugin, home, project = installed
    out = _ok(_claude(home, project, "mcp", "list", timeout=120, ENGRAM_PYTHON=sys.executable,
                      ENGRAM_DAEMON_IDLE_EXIT_SECONDS="10"))
    line = _server_line(out)
    assert f"{plugin / PAYLOAD_DIR}/bin/engram-python -m engram_mcp.interfaces.server" in line, "the server runs from the plugin root"
    assert "✔ Connected" in line, out
    _stop_daemon(home)


def _fake_path(tmp: Path, python3: str | None) -> str:
    """A PATH with the tools bin/engram-python needs and, optionally, a stand-in python3."""
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("dirname", "cmp"):
        (bin_dir / tool).unlink(missing_ok=True)
        (bin_dir / tool).symlink_to(shutil.which(tool))
    for name in ("python3", "python3.11"):
        (bin_dir / name).unlink(missing_ok=True)
    if python3 is not None:
        (bin_dir / "python3").write_text(python3)
        (bin_dir / "python3").chmod(0o755)
        # a version shim that exists but has no interpreter behind it (pyenv does this)
        (bin_dir / "python3.11").write_text("#!/bin/sh\necho 'pyenv: python3.11: command not found' >&2\nexit 127\n")
        (bin_dir / "python3.11").chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize(
    "python3, expected",
    [
        ("#!/bin/sh\necho 3.9\nexit 1\n", "found only: python3 is 3.9;"),
        (None, "found no python3 on PATH;"),
    ],
    ids=["too-old", "missing"],
)
def test_first_use_without_a_usable_python_says_what_to_do(installed, tmp_path: Path, python3: str | None, expected: str) -> None:
    plugin, home, project = installed
    env = {"PATH": _fake_path(tmp_path, python3), "HOME": str(tmp_path), "CLAUDE_PLUGIN_DATA": str(tmp_path / "data")}
    started = time.monotonic()
    proc = subprocess.run(["/bin/sh", str(plugin / "bin" / "engram-python"), "-m", "engram_mcp.interfaces.server"], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "engram: needs Python 3.11 or newer to set itself up, but " + expected in proc.stderr
    assert "install Python 3.11+" in proc.stderr and "ENGRAM_PYTHON" in proc.stderr
    assert time.monotonic() - started < 10
    assert not (tmp_path / "data" / "venv").exists()


def _bootstrap_running(data: Path) -> bool:
    """Someone holds the bootstrap's lock (or has not taken it yet: the build just started)."""
    lock = data / "bootstrap.lock"
    return not lock.exists() or lock_held(lock)


def _server_over_stdio(plugin: Path, home: Path, project: Path, data: Path, **env: str) -> Shim:
    """`bin/engram-python -m engram_mcp.interfaces.server` started as Claude Code starts it (.mcp.json)."""
    root = plugin / PAYLOAD_DIR
    full = isolated_env(home, CLAUDE_PLUGIN_ROOT=str(root), CLAUDE_PLUGIN_DATA=str(data), PYTHONPATH=str(root),
                        CLAUDE_PROJECT_DIR=str(project), CLAUDE_CODE_SESSION_ID="first-session", **env)
    return Shim([str(root / "bin" / "engram-python"), "-m", "engram_mcp.interfaces.server"], full, project)


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


@pytest.mark.slow
def test_first_use_connects_at_once_and_the_real_server_follows(installed) -> None:
    """The real first start: no ENGRAM_PYTHON, no .venv, so bin/engram-bootstrap runs pip.

    The test holds the build's lock for the first session's checks, as a build started by
    another window would: the stand-in certainly sees the build running (a warm pip cache
    could otherwise finish it first), and the servers started meanwhile leave the build to
    that one (their detached starts exit). When the lock is released without a finished
    build (the other window's build died), the next server start builds.
    """
    plugin, home, project = installed
    data = home / ".claude" / "plugins" / "data" / "engram-engram-dev"
    user_dir = home / ".claude" / "engram"
    stamp = data / "venv" / "engram-pyproject.toml"
    assert not stamp.exists()
    _stop_daemon(home)  # no daemon from the tests before (they ran with ENGRAM_PYTHON)
    env = {**_pip_env(), "ENGRAM_DAEMON_IDLE_EXIT_SECONDS": "10"}
    data.mkdir(parents=True, exist_ok=True)
    lock = open(data / "bootstrap.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        started = time.monotonic()
        first = _server_line(_ok(_claude(home, project, "mcp", "list", timeout=120, **env)))
        first_s = time.monotonic() - started
        assert "✔ Connected" in first, first
        assert f"{plugin / PAYLOAD_DIR}/bin/engram-python -m engram_mcp.interfaces.server" in first

        shim = _server_over_stdio(plugin, home, project, data, **env)
        try:
            shim.initialize()
            assert "engram_mcp.interfaces.bootstrap_server" in _cmdline(shim.proc.pid), "the stand-in (engram-python has exec'd it)"
            shim_tools = shim.result("tools/list")
            is_error, preparing = shim.call("recall_memories", {"query": "which database does billing use"})
            is_error_w, queued = shim.call("store_memory", {"content": "Billing runs on PostgreSQL 16", "type": "semantic", "scope": "project"})
        finally:
            shim_stderr = shim.close()
        assert is_error and preparing == {
            "error": "unavailable",
            "message": f"engram is preparing its Python environment (first run, about a minute; log: {data / 'bootstrap.log'}); try again shortly",
            "degraded": True, "retry_possible": True,
        }, shim_stderr
        assert not is_error_w and queued["queued"] and queued["degraded"], queued

        # The same through Claude Code: the model sees the structured error, and its write is queued.
        script = [ToolUse(TOOL + "recall_memories", {"query": "deploy steps"}),
                  ToolUse(TOOL + "store_memory", {"content": "Deploys go through the canary first", "type": "procedural", "scope": "project"}),
                  "done"]
        with FakeAnthropic(script) as api:
            session = result_json(run_claude(["-p", "recall, then remember", "--output-format", "json", "--allowedTools", TOOL[:-2]],
                                             home=home, cwd=project, env_extra=api.env(**env), timeout=180))
        assert not api.errors and not session["is_error"], session
        recall_result = tool_results(api.conversation[1].body)[-1]  # (each request carries the whole history)
        store_result = tool_results(api.conversation[2].body)[-1]
        # Claude Code appends a note on deferred tools' schemas to an error's text: the envelope comes first.
        envelope = json.JSONDecoder().raw_decode(block_text(recall_result))[0]
        assert recall_result.get("is_error") and envelope == preparing, recall_result
        stored_by_model = json.JSONDecoder().raw_decode(block_text(store_result))[0]
        assert not store_result.get("is_error") and stored_by_model["queued"] is True, store_result
        pending = {p.name for p in spool.pending(user_dir)}
        assert {f"{queued['queue_id']}.json", f"{stored_by_model['queue_id']}.json"} <= pending
        assert not _daemon_running(user_dir), "no daemon runs before the environment exists"
        assert not stamp.exists(), "the build waits for the lock"
    finally:
        lock.close()  # the "other window's build" ends without a stamp

    assert not (data / "bootstrap.log").exists(), "no second build queued behind the running one"
    assert "✔ Connected" in _server_line(_ok(_claude(home, project, "mcp", "list", timeout=120, **env)))  # builds now
    released = time.monotonic()
    deadline = released + BOOTSTRAP_WAIT_S
    time.sleep(1)
    while not stamp.exists() and time.monotonic() < deadline and _bootstrap_running(data):
        time.sleep(1)
    log = (data / "bootstrap.log").read_text(errors="replace") if (data / "bootstrap.log").exists() else "(no log)"
    assert stamp.exists(), "the bootstrap did not finish:\n" + log[-3000:]
    built_s = time.monotonic() - released
    print(f"\nengram first use: first `claude mcp list` {first_s:.1f}s (stand-in connected); "
          f"environment built {built_s:.0f}s after the lock was released ({log.strip().splitlines()[-1]})")
    assert stamp.read_bytes() == (plugin / "pyproject.toml").read_bytes()
    assert not (data / "bootstrap.failed").exists()
    assert not (plugin / "build").exists() and not list(plugin.glob("*.egg-info")), "the bootstrap must not write into the plugin root"

    second = _server_line(_ok(_claude(home, project, "mcp", "list", timeout=120, **env)))
    assert "✔ Connected" in second, second
    real = _server_over_stdio(plugin, home, project, data, **env)
    try:
        real.initialize()
        assert f"{data}/venv/bin/python -m engram_mcp.interfaces.server" in _cmdline(real.proc.pid), "the real server now"
        assert real.result("tools/list") == shim_tools, "the stand-in listed exactly the real tools"
        is_error, found = real.call("recall_memories", {"query": "which database does billing use"})
        _, deploys = real.call("recall_memories", {"query": "how do deploys go"})
    finally:
        real.close()
    assert stored_by_model["memory_id"] in [m["id"] for m in deploys["memories"]], deploys
    assert not is_error and found["memories"][0]["id"] == queued["memory_id"], "the write queued in the first session applied"
    pending = {p.name for p in spool.pending(user_dir)}
    assert f"{queued['queue_id']}.json" not in pending and f"{stored_by_model['queue_id']}.json" not in pending
    venv_python = data / "venv" / "bin" / "python"
    check = subprocess.run([str(venv_python), "-c", "import surrealdb, fastembed, mcp, numpy, jsonschema, frontmatter, yaml, Stemmer"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    assert (data / "venv" / "bin" / "engram").exists(), "the venv has the `engram` command"
    _stop_daemon(home)


# ------------------------------------------------------------------------------ what an install copies
def test_the_payload_is_the_root_plugin_and_nothing_else() -> None:
    """`plugin/` (what the marketplace lists, so what an install copies) holds what the plugin runs.

    Links for everything but the two manifests the validator reads only as plain files; those
    must equal the root's (edit the root's, then copy: `cp hooks/hooks.json plugin/hooks/hooks.json`).
    """
    marketplace = json.loads((REPO_ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert [e["source"] for e in marketplace["plugins"]] == [f"./{PAYLOAD_DIR}"]
    payload = REPO_ROOT / PAYLOAD_DIR
    entries = {p.name for p in payload.iterdir()}
    assert entries == PAYLOAD_LINKS | {rel.split("/")[0] for rel in PAYLOAD_COPIES}, "only what the plugin runs"
    for name in PAYLOAD_LINKS:
        link = payload / name
        assert link.is_symlink() and not os.path.isabs(os.readlink(link)), f"{link}: a relative link (it works in any clone)"
        assert link.resolve() == (REPO_ROOT / name).resolve(), f"{link} -> {os.readlink(link)}"
    for rel in PAYLOAD_COPIES:
        copy = payload / rel
        assert copy.is_file() and not copy.is_symlink() and not copy.parent.is_symlink(), rel
        assert copy.read_bytes() == (REPO_ROOT / rel).read_bytes(), f"{rel} changed: run `cp {rel} {PAYLOAD_DIR}/{rel}`"
        assert sorted(p.name for p in copy.parent.iterdir()) == [copy.name]
    # Everything the manifests start is inside the payload.
    hooks = json.loads((payload / "hooks" / "hooks.json").read_text())["hooks"]
    mcp = json.loads((payload / ".mcp.json").read_text())["mcpServers"]
    commands = [h["command"] for entries_ in hooks.values() for e in entries_ for h in e["hooks"]]
    commands += [server["command"] for server in mcp.values()]
    for command in commands:
        rel = command.split("${CLAUDE_PLUGIN_ROOT}/", 1)[1].split('"')[0].split()[0]
        assert (payload / rel).is_file() and os.access(payload / rel, os.X_OK), command


def _link_tree(src: Path, dest: Path) -> None:
    """`dest` as a hard-linked copy of `src` (a copy where hard links cannot cross filesystems)."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in dirnames + filenames:
            source, target = Path(dirpath) / name, dest / rel / name
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
                if name in dirnames:
                    dirnames.remove(name)
            elif name in filenames:
                try:
                    os.link(source, target)
                except OSError:
                    shutil.copy2(source, target)


def _set_up_checkout(dest: Path) -> Path:
    """A checkout as `make setup` leaves it: the repository's files, a finished `.venv` (this
    test run's, hard-linked, with its stamp) and the test CLI in tests/claude-cli/node_modules."""
    checkout = _repo_copy(dest)
    _link_tree(Path(sys.prefix), checkout / ".venv")
    stamp = checkout / ".venv" / ".engram-stamp"
    if not stamp.exists():
        shutil.copy(checkout / "pyproject.toml", stamp)
    _link_tree(CLAUDE_CLI_DIR / "node_modules", checkout / "tests" / "claude-cli" / "node_modules")
    return checkout


def _tree_bytes(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def test_install_from_a_set_up_checkout_stays_small_and_works(tmp_path: Path) -> None:
    """A developer's checkout after `make setup` holds ~850 MB beside the plugin; installing
    from it must copy only the plugin, and that plugin must run (on the checkout's .venv)."""
    checkout = _set_up_checkout(tmp_path / "engram")
    assert _tree_bytes(checkout / ".venv") + _tree_bytes(checkout / "tests" / "claude-cli") > 300 * 1024 * 1024
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    env = {"ENGRAM_DAEMON_IDLE_EXIT_SECONDS": "10"}  # no ENGRAM_PYTHON
    try:
        _ok(_claude(home, project, "plugin", "marketplace", "add", str(checkout)))
        _ok(_claude(home, project, "plugin", "install", PLUGIN, timeout=600))
        record = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())["plugins"][PLUGIN][0]
        cache = Path(record["installPath"])
        size = _tree_bytes(cache)
        top = sorted(p.name for p in cache.iterdir())
        print(f"\ninstalled from a set-up checkout: {size / 1e6:.1f} MB in {cache} ({', '.join(top)})")
        assert size < INSTALLED_MAX_BYTES, f"the install copied {size / 1e6:.0f} MB: {top}"
        assert not {".venv", "tests", "node_modules", ".git", "bench"} & set(top), top
        for rel in (".claude-plugin/plugin.json", ".mcp.json", "hooks/hooks.json", "bin/engram-python", "bin/engram-hook",
                    "bin/engram-bootstrap", "engram_mcp/interfaces/server.py", "engram_mcp/interfaces/hooks.py", "commands/forget.md",
                    "skills/using-memory/SKILL.md", "agents/memory-consolidator.md", "pyproject.toml", "README.md"):
            assert (cache / rel).is_file() and not (cache / rel).is_symlink(), f"{rel} missing from the installed copy"

        listed = _ok(_claude(home, project, "plugin", "list"))
        assert f"Read from: {checkout / PAYLOAD_DIR}" in listed, listed
        line = _server_line(_ok(_claude(home, project, "mcp", "list", timeout=120, **env)))
        assert "✔ Connected" in line and f"{checkout / PAYLOAD_DIR}/bin/engram-python -m engram_mcp.interfaces.server" in line, line

        # The hooks run (on the checkout's .venv): SessionStart brings a stored preference into the session.
        preference = "The user prefers tabs over spaces in Makefiles."
        store = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-m", "engram_mcp.interfaces.cli", "store", preference,
                                "--type", "semantic", "--scope", "user", "--importance", "0.9"],
                               env=isolated_env(home, PYTHONPATH=str(checkout), **env), cwd=project,
                               capture_output=True, text=True, timeout=120)
        assert store.returncode == 0, store.stdout + store.stderr
        with FakeAnthropic(["ok"]) as api:
            session = result_json(run_claude(["-p", "set up the build", "--output-format", "json"], home=home, cwd=project,
                                             env_extra=api.env(**env), timeout=180))
        assert not api.errors and not session["is_error"], session
        assert preference in api.conversation[0].text(), "SessionStart's context reached the model"
        log = home / ".claude" / "engram" / "logs" / "hooks.log"
        assert not log.exists() or "skipped" not in log.read_text(), log.read_text()
    finally:
        _stop_daemon(home)


# ------------------------------------------------------------------------------ the first session during the build
def _timed_turn(home: Path, project: Path, script: list, env: dict[str, str], *args: str) -> tuple[dict, FakeAnthropic, float]:
    """One `claude -p` turn against the scripted API; (its result, the API, its wall time)."""
    with FakeAnthropic(script) as api:
        started = time.monotonic()
        proc = run_claude(["-p", "hello there, what next?", "--output-format", "json", *args], home=home, cwd=project,
                          env_extra=api.env(**env), timeout=240)
        took = time.monotonic() - started
    result = result_json(proc)
    assert not api.errors and not result["is_error"], result
    return result, api, took


@pytest.mark.slow
def test_the_first_session_during_the_build_never_waits_and_the_next_one_works(tmp_path: Path) -> None:
    """The README's first use, with the build caught half-way (the venv has its python, pip has not run).

    `claude mcp list` starts the build; a session then meets the half-built environment: its
    hooks must return at once (no daemon on that venv, nothing in the logs about its missing
    modules), its captures and writes go to the queue, and once the build is done the next
    session runs on it and sees what the first one stored.
    """
    plugin = _repo_copy(tmp_path / "engram")
    assert not (plugin / ".venv").exists()
    home, project, bare_home = tmp_path / "home", tmp_path / "project", tmp_path / "bare-home"
    (project / ".git").mkdir(parents=True)
    data = home / ".claude" / "plugins" / "data" / "engram-engram-dev"
    user_dir = home / ".claude" / "engram"
    python, stamp = data / "venv" / "bin" / "python", data / "venv" / "engram-pyproject.toml"
    hold = tmp_path / "hold-the-build"
    hold.touch()
    env = {**_pip_env(), "ENGRAM_TEST_BOOTSTRAP_HOLD": str(hold),
           "ENGRAM_DAEMON_IDLE_EXIT_SECONDS": "10"}  # no ENGRAM_PYTHON: the plugin's own environment
    try:
        _ok(_claude(home, project, "plugin", "marketplace", "add", str(plugin)))
        _ok(_claude(home, project, "plugin", "install", PLUGIN, timeout=600))
        assert "✔ Connected" in _server_line(_ok(_claude(home, project, "mcp", "list", timeout=120, **env)))
        build_log = data / "bootstrap.log"
        deadline = time.monotonic() + 180
        while not (build_log.exists() and "held before installing" in build_log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert python.exists() and not stamp.exists(), "the build is half-way: a python, no packages"
        assert "held before installing" in build_log.read_text(), build_log.read_text()

        _, _, bare_s = _timed_turn(bare_home, project, ["Hi."], env)  # the first turn of a HOME, as below
        _, api, first_s = _timed_turn(home, project, ["Hi."], env)
        print(f"\nfirst session during the build: {first_s:.1f}s for a turn that takes {bare_s:.1f}s without the plugin")
        assert first_s - bare_s < PLUGIN_OVERHEAD_MAX_S, f"the turn took {first_s:.1f}s, {bare_s:.1f}s without the plugin"
        assert "engram-memory" not in api.conversation[0].text(), "no context before the environment exists"

        # Captures and writes of a session during the build are queued.
        preference = "The user prefers tabs over spaces in Makefiles."
        script = [ToolUse("Write", {"file_path": str(project / "Makefile"), "content": "all:\n\techo hi\n"}),
                  ToolUse(TOOL + "store_memory", {"content": preference, "type": "semantic", "scope": "user",
                                                  "importance": 0.8, "category": "preference"}),
                  "Noted."]
        _timed_turn(home, project, script, env, "--allowedTools", f"{TOOL[:-2]},Write")
        queued = sorted(spool.read(p)["op"] for p in spool.pending(user_dir))
        assert "hook_capture" in queued and "store" in queued, queued
        logs = user_dir / "logs"
        hooks_log = (logs / "hooks.log").read_text() if (logs / "hooks.log").exists() else ""
        for wrong in ("No module named", "did not start", "make setup", "Traceback"):
            assert wrong not in hooks_log, hooks_log
        assert not (logs / "engramd.out").exists(), (logs / "engramd.out").read_text()
        assert not _daemon_running(user_dir), "no daemon on a half-built environment"
        assert not stamp.exists()
    finally:
        hold.unlink(missing_ok=True)  # the build goes on

    deadline = time.monotonic() + BOOTSTRAP_WAIT_S
    while not stamp.exists() and time.monotonic() < deadline and _bootstrap_running(data):
        time.sleep(1)
    log = (data / "bootstrap.log").read_text(errors="replace") if (data / "bootstrap.log").exists() else "(no log)"
    assert stamp.exists(), "the bootstrap did not finish:\n" + log[-3000:]
    try:
        _, api, next_s = _timed_turn(home, project, ["Sure."], env)
        print(f"next session, on the built environment: {next_s:.1f}s")
        assert preference in api.conversation[0].text(), "the next session's context has what the first one stored"
        assert spool.pending(user_dir) == [], "the daemon applied the queue"
        hooks_log = (user_dir / "logs" / "hooks.log").read_text()
        assert "No module named" not in hooks_log and "did not start" not in hooks_log, hooks_log
    finally:
        _stop_daemon(home)
