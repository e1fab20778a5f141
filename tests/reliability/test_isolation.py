"""Isolation and permissions (issue 6, part 5): two projects never see each other's memories
through any tool, resource, command, hook or the graph (nor two sessions before promotion);
store directories are 0700 and files 0600; the project store is git-ignored; nothing listens on
TCP or UDP; symlinked and relative paths to one project map to one store.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.reliability._support import (
    PYTHON,
    REPO,
    InProcessMCP,
    Sandbox,
    assert_envelope,
    hooks_available,
    fresh_project,
    record,
    store_dirs,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HOOK = REPO / "bin" / "engram-hook"
A_TOKENS = ["zorblatfacts", "quibbleworth", "xylomancer"]
A_ENTITY = "FrobnicatorServiceA"
SA, SB = "iso-session-a", "iso-session-b"


def _leaks(text: str) -> list[str]:
    return [t for t in A_TOKENS + [A_ENTITY, A_ENTITY.lower()] if t in text]


@pytest.fixture
def running(shared: Sandbox):
    """The module's daemon, with a project of the test's own as `project`."""
    shared.project = fresh_project(shared, "proj")
    return shared


@pytest.fixture
def two_projects(running: Sandbox):
    a = running.project
    b = fresh_project(running, "projB")
    mcp = InProcessMCP(running)
    ids = []
    for i, tok in enumerate(A_TOKENS):
        for scope in ("project", "session"):
            res = mcp.ok("store_memory", {"content": f"{tok} is how project A deploys its {scope} things", "type": "semantic",
                                          "scope": scope, "importance": 0.9, "tags": [tok], "category": "decision",
                                          "related_entities": [{"name": A_ENTITY, "type": "service", "relationship": "deploys",
                                                                "target": f"{tok}Target"}]},
                         project=a, session=SA)
            ids.append(res["memory_id"])
    forgotten = mcp.ok("store_memory", {"content": f"{A_TOKENS[0]} forgotten fact of project A", "type": "semantic", "scope": "project"},
                       project=a, session=SA)["memory_id"]
    mcp.ok("forget_memory", {"memory_id": forgotten}, project=a, session=SA)
    ids.append(forgotten)
    try:
        yield running, mcp, a, b, ids
    finally:
        mcp.close()


def test_project_b_sees_nothing_of_project_a(two_projects: Any) -> None:
    sb, mcp, a, b, ids = two_projects
    before = mcp.ok("get_memory_status", {}, project=a, session=SA)["scopes"]
    checked = 0
    answers: list[str] = []
    for tok in A_TOKENS + [A_ENTITY]:
        for strategy in ("hybrid", "vector", "keyword", "graph"):
            for extra in ({}, {"include_forgotten": True}, {"scope": ["session", "project"]}, {"tags": [tok]},
                          {"category": "decision"}):
                answers.append(json.dumps(mcp.ok("recall_memories", {"query": tok, "strategy": strategy, "limit": 50, **extra},
                                                 project=b, session=SB)))
                checked += 1
        answers.append(json.dumps(mcp.ok("search_knowledge_graph", {"entity": tok, "depth": 3, "limit": 100}, project=b, session=SB)))
        answers.append(json.dumps(mcp.ok("get_memory_context", {"task_description": f"deploy with {tok}", "max_tokens": 8000},
                                         project=b, session=SB)))
        checked += 2
    answers.append(json.dumps(mcp.ok("search_knowledge_graph", {"limit": 100}, project=b, session=SB)))
    answers.append(json.dumps(mcp.ok("reflect_and_consolidate", {"strategy": "full", "dry_run": True, "scope": "project"},
                                     project=b, session=SB)))
    answers.append(json.dumps(mcp.ok("reflect_and_consolidate", {"strategy": "full", "dry_run": True, "session_id": SA},
                                     project=b, session=SB)))
    status = mcp.ok("get_memory_status", {}, project=b, session=SB)
    assert status["scopes"]["project"]["total"] == 0 and status["scopes"]["session"]["total"] == 0
    assert Path(status["scopes"]["project"]["path"]) == (b / ".claude" / "engram").resolve()
    for uri in ("memory://status", "memory://session/summary", "memory://project/knowledge-graph", "memory://user/preferences"):
        answers.append(mcp.read_resource(uri, project=b, session=SB))
        checked += 1
    # writes from B naming A's ids find nothing and change nothing
    for mid in ids:
        for tool, args in (("forget_memory", {"memory_id": mid}), ("forget_memory", {"memory_id": mid, "undo": True}),
                           ("update_memory", {"memory_id": mid, "content": "overwritten from B", "tags": {"add": ["fromb"]}}),
                           ("promote_memory", {"memory_id": mid, "target_scope": "user"})):
            is_error, payload = mcp.call(tool, args, project=b, session=SB)
            assert is_error, f"{tool} on project A's {mid} from project B succeeded: {payload}"
            assert assert_envelope(payload)["error"] in ("not_found", "invalid_input"), payload
            checked += 1
    # the command line in B
    for args in (["recall", A_TOKENS[0], "--limit", "50"], ["status"], ["context", "--task", A_TOKENS[1]]):
        proc = sb.cli("--json", *args, cwd=b)
        answers.append(proc.stdout)
        checked += 1
    for mid in ids[:2]:
        proc = sb.cli("--json", "show", mid, cwd=b, check=False)
        assert proc.returncode != 0 and not _leaks(proc.stdout + proc.stderr)
    export = sb.root / "b-export.jsonl"
    sb.cli("export", str(export), "--scope", "project", cwd=b)
    answers.append(export.read_text())
    # the hooks of a session in B
    if hooks_available():
        for event, extra in (("SessionStart", {"source": "startup"}),
                             ("UserPromptSubmit", {"prompt": f"how do we deploy with {A_TOKENS[0]} and {A_ENTITY}?"})):
            payload = {"session_id": SB, "cwd": str(b), "hook_event_name": event, "transcript_path": "/nonexistent", **extra}
            proc = subprocess.run([str(HOOK), event], input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                                  env=sb.env_with(project=b, session=SB, ENGRAM_PYTHON=PYTHON), cwd=str(b))
            assert proc.returncode == 0
            answers.append(proc.stdout)
            checked += 1
    leaks = sorted({t for a_ in answers for t in _leaks(a_)})
    assert not leaks, f"project B saw project A's {leaks}"
    # and A is untouched
    after = mcp.ok("get_memory_status", {}, project=a, session=SA)["scopes"]
    assert {s: (v["total"], v.get("by_status")) for s, v in after.items()} == {s: (v["total"], v.get("by_status")) for s, v in before.items()}
    found = mcp.ok("recall_memories", {"query": A_TOKENS[0], "strategy": "keyword", "limit": 50}, project=a, session=SA)
    assert all("overwritten from B" not in m["content"] and "fromb" not in m["tags"] for m in found["memories"])
    record("isolation", cross_project_probes=checked)


def test_a_session_does_not_see_another_sessions_memories_before_promotion(two_projects: Any) -> None:
    sb, mcp, a, b, ids = two_projects
    other = "iso-session-a2"
    res = mcp.ok("recall_memories", {"query": A_TOKENS[1], "scope": "session", "limit": 50, "include_forgotten": True},
                 project=a, session=other)
    assert res["memories"] == []
    ctx = mcp.ok("get_memory_context", {"sections": ["session_history"], "max_tokens": 4000}, project=a, session=other)
    assert "session things" not in ctx["context_block"]


@pytest.mark.parametrize("pair", [("iso-x-y", "iso_x_y"), ("IsoCase", "isocase")], ids=["dash-vs-underscore", "case"])
def test_distinct_session_ids_get_distinct_session_scopes(running: Sandbox, pair: tuple[str, str]) -> None:
    first, second = pair
    running.call("store", {"content": f"only for session {first}: plumbago", "type": "semantic", "scope": "session"}, session=first)
    seen = running.call("recall", {"query": "plumbago", "scope": "session", "limit": 10, "strengthen": False}, session=second)
    assert seen["memories"] == [], f"session {second!r} sees the session memories of {first!r}"


# ---------------------------------------------------------------------- permissions
def _walk_modes(root: Path) -> list[tuple[str, str]]:
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            p = Path(dirpath) / name
            mode = stat.S_IMODE(p.lstat().st_mode)
            if not p.is_symlink() and mode != 0o700:
                bad.append((str(p), oct(mode)))
        for name in filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                continue
            if stat.S_IMODE(st.st_mode) != 0o600:
                bad.append((str(p), oct(stat.S_IMODE(st.st_mode))))
    mode = stat.S_IMODE(root.stat().st_mode)
    if mode != 0o700:
        bad.append((str(root), oct(mode)))
    return bad


def _exercise(sb: Sandbox, projects: list[Path]) -> None:
    """Enough activity that the engine rotates and creates its files, hooks log and queue."""
    with sb.client() as c:
        for p in projects:
            for i in range(40):
                c.call("store", {"content": f"permission probe {i} " + "payload " * 60 + str(i), "type": "semantic",
                                 "scope": ("project", "session", "user")[i % 3], "dedup": False},
                       project_root=str(p), session_id="perm-session")
            c.call("session_end", {}, project_root=str(p), session_id="perm-session")
    if hooks_available():
        payload = {"session_id": "perm-hook", "cwd": str(projects[0]), "hook_event_name": "PostToolUse", "tool_name": "Edit",
                   "tool_input": {"file_path": f"{projects[0]}/x.py", "old_string": "a", "new_string": "b"}, "tool_response": {}}
        subprocess.run([str(HOOK), "PostToolUse"], input=json.dumps(payload), text=True, capture_output=True, timeout=60,
                       env=sb.env_with(project=projects[0], session="perm-hook", ENGRAM_PYTHON=PYTHON))
        subprocess.run([str(HOOK), "PostToolUse"], input="garbage", text=True, capture_output=True, timeout=60,
                       env=sb.env_with(project=projects[0], session="perm-hook", ENGRAM_PYTHON=PYTHON))
    sb.cli("status")


def test_store_directories_are_0700_and_files_0600(running: Sandbox) -> None:
    b = fresh_project(running, "projB")
    _exercise(running, [running.project, b])
    bad = []
    for d in store_dirs(running, running.project, b):
        bad += _walk_modes(d)
    running.stop_daemon()
    for d in store_dirs(running, running.project, b):
        bad += _walk_modes(d)  # after a clean shutdown too (the engine writes on close)
    running.start_daemon()
    assert not bad, f"{len(bad)} paths not private: {bad[:8]}"
    n = sum(len(files) + len(dirs) for d in store_dirs(running, running.project, b) for _, dirs, files in os.walk(d))
    record("isolation", private_paths_checked=n)


def test_project_store_is_git_ignored(running: Sandbox) -> None:
    proj = running.project
    subprocess.run(["git", "init", "-q", str(proj)], check=True, capture_output=True)
    _exercise(running, [proj])
    files = [p for p in (proj / ".claude" / "engram").rglob("*") if p.is_file() and not p.is_socket()]
    assert files
    rel = [str(p.relative_to(proj)) for p in files]
    git = ["git", "-C", str(proj), "-c", "core.excludesFile=/dev/null"]
    ignored = subprocess.run([*git, "check-ignore", "--no-index", *rel], capture_output=True, text=True)
    assert set(ignored.stdout.split()) == set(rel), set(rel) - set(ignored.stdout.split())
    status = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"], capture_output=True, text=True, check=True)
    assert ".claude/engram" not in status.stdout, status.stdout
    assert not (proj / ".gitignore").exists(), "the user's own .gitignore is not touched"


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def _inet_inodes() -> dict[str, str]:
    found = {}
    for name in ("tcp", "tcp6", "udp", "udp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            cols = line.split()
            if len(cols) > 9:
                found[cols[9]] = f"{name} {cols[1]} state {cols[3]}"
    return found


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(p.name))
    return out


def test_nothing_listens_on_tcp_or_udp(running: Sandbox) -> None:
    env = running.env_with(session="net-session")
    server = subprocess.Popen([PYTHON, "-m", "engram_mcp.interfaces.server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, cwd=str(running.project))
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                               "clientInfo": {"name": "t", "version": "0"}}}
        server.stdin.write((json.dumps(init) + "\n").encode())
        server.stdin.flush()
        assert b'"result"' in server.stdout.readline()
        for line in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                     {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "store_memory", "arguments": {
                         "content": "network probe", "type": "semantic", "scope": "project"}}}):
            server.stdin.write((json.dumps(line) + "\n").encode())
            server.stdin.flush()
        while True:
            reply = json.loads(server.stdout.readline())
            if reply.get("id") == 2:
                assert "result" in reply, reply
                break
        running.cli("status")
        pids = [running.daemon.pid, server.pid] + _children(running.daemon.pid) + _children(server.pid)
        inet = _inet_inodes()
        leaks = {pid: [inet[i] for i in _socket_inodes(pid) if i in inet] for pid in pids}
        leaks = {k: v for k, v in leaks.items() if v}
        assert not leaks, f"engram processes own internet sockets: {leaks}"
        unix = [i for pid in pids for i in _socket_inodes(pid)]
        assert unix, "the socket scan sees the processes' Unix sockets (positive control)"
        sock = running.user_dir / "engramd.sock"
        if sock.exists():
            assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    finally:
        server.terminate()
        server.wait(20)


def test_symlinked_and_relative_paths_map_to_one_store(running: Sandbox) -> None:
    real = running.project
    (real / "src" / "deep").mkdir(parents=True)
    link = running.root / f"link-to-{real.name}"
    link.symlink_to(real)
    (real / "src" / "inner-link").symlink_to(real / "src" / "deep")
    mcp = InProcessMCP(running)
    try:
        stored = mcp.ok("store_memory", {"content": "one store through any path: heliotrope", "type": "semantic", "scope": "project"},
                        project=link)
        views = []
        for proj in (real, link, link / "src" / "deep", real / "src" / "inner-link", Path(str(real) + "/"), real / "src" / ".." / "src"):
            st = mcp.ok("get_memory_status", {}, project=proj)
            found = mcp.ok("recall_memories", {"query": "heliotrope", "strategy": "keyword"}, project=proj)
            views.append((st["project_root"], st["scopes"]["project"]["database"], st["scopes"]["project"]["path"]))
            assert stored["memory_id"] in [m["id"] for m in found["memories"]], proj
    finally:
        mcp.close()
    # the command line, from a subdirectory, and with a relative --project from elsewhere
    for cwd, args in ((real / "src" / "deep", []), (running.root, ["--project", f"{link.name}/src"]),
                      (real / "src", ["--project", "../src/inner-link/../.."])):
        proc = running.cli(*args, "--json", "status", cwd=cwd)
        st = json.loads(proc.stdout)
        views.append((st["project_root"], st["scopes"]["project"]["database"], st["scopes"]["project"]["path"]))
    assert len(set(views)) == 1, views
    assert Path(views[0][0]) == real.resolve()
    stores = [p for p in running.root.rglob("engram") if p.is_dir() and p.parent.name == ".claude" and not p.is_symlink()
              and "home" not in p.parts and real.name in str(p.resolve())]
    assert {p.resolve() for p in stores} == {(real / ".claude" / "engram").resolve()}, stores
    assert not (link / ".claude").is_symlink() and (link / ".claude" / "engram").resolve() == (real / ".claude" / "engram").resolve()
    record("isolation", path_variants=len(views))
