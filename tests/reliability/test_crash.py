"""Crashes (issue 6, part 2): kill -9 of the writing process (the daemon) at random points
while it stores, updates, forgets and promotes, while it ends a session (promotion to the
project), and while it migrates an old store. Every time: the store opens, no acknowledged
write is lost (the one write in flight may or may not have landed, whole), an update and its
history entry land together, and a promotion is never half-applied: a memory is in the
session, the project or both with the promotion recorded, never in neither.

CI kills 15 times; `make stress` 62 times.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core import store_owner
from engram_mcp.core.errors import EngramError
from engram_mcp.core.ids import new_ulid, session_db_name
from engram_mcp.core.paths import project_dir, project_id
from engram_mcp.services.service import RequestContext
from engram_mcp.storage import queries as q
from engram_mcp.storage.memory_shape import restore
from engram_mcp.storage.schema import CURRENT_SCHEMA_VERSION, MIGRATIONS
from engram_mcp.storage.store import SurrealStore
from tests.reliability._support import STRESS, Sandbox, key_of, record, scaled, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600 if STRESS else 600)]

KILLS_DURING_WRITES = scaled(5, 20)
KILLS_DURING_PROMOTION = scaled(4, 18)
KILLS_DURING_MIGRATION = scaled(3, 12)
WRITER_THREADS = 3


# ---------------------------------------------------------------------- writes
class Writer(threading.Thread):
    """Issues a random mix of writes through its own connection until the daemon dies.
    `acked` is what the daemon acknowledged; `inflight` the one request without an answer."""

    def __init__(self, sb: Sandbox, n: int, cycle: int, rnd: random.Random, state: dict[str, dict[str, Any]]) -> None:
        super().__init__(daemon=True)
        self.sb, self.n, self.cycle, self.rnd, self.state = sb, n, cycle, rnd, state
        self.session = f"crash-w{n}-c{cycle}"
        self.inflight: dict[str, Any] | None = None
        self.acked_ops = 0
        self.error: BaseException | None = None
        self.mine = [k for k, v in state.items() if v["writer"] == n]

    def call(self, c: Any, op: str, args: dict[str, Any], session: str | None = None) -> Any:
        return c.call(op, args, project_root=str(self.sb.project), session_id=session)

    def run(self) -> None:
        try:
            with self.sb.client(timeout=30, name=f"writer{self.n}") as c:
                i = 0
                while True:
                    i += 1
                    self.step(c, i)
                    self.acked_ops += 1
        except EngramError:
            return  # the daemon was killed: expected
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def step(self, c: Any, i: int) -> None:
        r = self.rnd
        roll = r.random()
        live = [k for k in self.mine if not any(self.state[k]["forgotten_at"].values())]
        if roll < 0.45 or not live:
            scope = r.choice(["project", "project", "session", "user"])
            token = f"cr{self.n}c{self.cycle}i{i}z{r.randrange(10**6)}"
            content = f"{token} " + " ".join(r.choice(WORDS) for _ in range(10))
            self.inflight = {"op": "store", "token": token, "content": content, "scope": scope}
            res = self.call(c, "store", {"content": content, "type": "semantic", "scope": scope, "importance": 0.7},
                            self.session if scope == "session" else None)
            self.inflight = None
            if res["action"] == "created":
                key = res["memory_id"].split(":")[1]
                self.state[key] = {"writer": self.n, "scopes": {scope}, "home": scope, "content_at": {scope: content}, "token": token,
                                   "forgotten_at": {scope: False}, "session": self.session if scope == "session" else None}
                self.mine.append(key)
            return
        key = r.choice(live)
        m = self.state[key]
        session = m["session"]
        if roll < 0.70:
            content = f"{m['token']} edit{i} " + " ".join(r.choice(WORDS) for _ in range(10))
            self.inflight = {"op": "update", "key": key, "content": content}
            self.call(c, "update", {"memory_id": key, "content": content, "tags": {"add": [f"e{i}"]}}, session)
            m["content_at"] = {s: content for s in m["scopes"]}
        elif roll < 0.80:
            self.inflight = {"op": "forget", "key": key}
            self.call(c, "forget", {"memory_id": key, "reason": "crash test"}, session)
            m["forgotten_at"] = {s: True for s in m["scopes"]}
        elif roll < 0.92 and m["home"] == "session" and "project" not in m["scopes"]:
            self.inflight = {"op": "promote", "key": key, "target": "project"}
            res = self.call(c, "promote", {"memory_id": key, "target_scope": "project"}, session)
            if res["action"] in ("created", "already_promoted"):
                m["scopes"].add("project")
                m["content_at"]["project"] = m["content_at"]["session"]
                m["forgotten_at"]["project"] = m["forgotten_at"]["session"]
        else:
            self.inflight = {"op": "recall"}
            self.call(c, "recall", {"query": m["token"], "limit": 5}, session)
        self.inflight = None


_VOCAB_RND = random.Random(5)
WORDS = ["".join(_VOCAB_RND.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(5000)]


def _check_writes(sb: Sandbox, state: dict[str, dict[str, Any]], writers: list[Writer]) -> tuple[list[Any], int]:
    """In-process, after the kill: acknowledged state present; the in-flight write whole or absent."""
    problems: list[Any] = []
    inflight = {w.n: w.inflight for w in writers}
    landed: dict[str, set[str]] = {}
    touched: dict[str, set[str]] = {}
    with sb.service() as svc:
        sessions = set(svc.registry.session_databases(sb.project))
        handles: dict[tuple[str, str | None], Any] = {}

        def handle(scope: str, session: str | None) -> Any:
            if (scope, session) not in handles:
                handles[(scope, session)] = svc.handle(RequestContext(sb.project, session), scope)
            return handles[(scope, session)]

        for key, m in state.items():
            flight = inflight.get(m["writer"]) or {}
            on_me = flight.get("key") == key
            for scope in m["scopes"] | ({"project"} if on_me and flight["op"] == "promote" else set()):
                session = m["session"] if scope == "session" else None
                if scope == "session" and session_db_name(session) not in sessions:
                    problems.append(("session database lost", key, session))
                    continue
                h = handle(scope, session)
                rows = [restore(r) for r in h.q(q.GET_MEMORY, {"id": key}) or []]  # unwritten defaults back
                if not rows:
                    if on_me and flight["op"] == "promote" and scope == "project":
                        continue  # the promotion in flight did not land: fine, it was never acknowledged
                    problems.append(("acknowledged memory lost", key, scope))
                    continue
                row = rows[0]
                if on_me and flight["op"] == "promote" and scope == "project" and scope not in m["scopes"]:
                    m["scopes"].add("project")  # it landed: from now on an acknowledged copy
                    m["content_at"]["project"] = row["content"]
                    m["forgotten_at"]["project"] = row["status"] == "forgotten"
                # each copy holds its acknowledged state or the in-flight one: an update or forget of a
                # memory with copies in two scopes is one transaction per copy, so a kill can land between them
                contents = {m["content_at"][scope]} | ({flight["content"]} if on_me and flight["op"] == "update" else set())
                if row["content"] not in contents:
                    problems.append(("content is neither acknowledged nor in flight", key, scope))
                forgotten = {m["forgotten_at"][scope]} | ({True} if on_me and flight["op"] == "forget" else set())
                if (row["status"] == "forgotten") not in forgotten:
                    problems.append(("status is neither acknowledged nor in flight", key, scope, row["status"]))
                if on_me and flight["op"] == "update" and row["content"] == flight["content"]:
                    m["content_at"][scope] = flight["content"]  # it landed here: adopt it
                    landed.setdefault(key, set()).add(scope)
                if on_me and flight["op"] == "forget" and row["status"] == "forgotten":
                    m["forgotten_at"][scope] = True
                    landed.setdefault(key, set()).add(scope)
                if on_me and flight["op"] in ("update", "forget"):
                    touched.setdefault(key, set()).add(scope)
                if scope == m["home"]:
                    hist = h.q(q.HISTORY_OF, {"memory": _rid(key)}) or []
                    versions = sorted(int(e["version"]) for e in hist)
                    if versions != list(range(1, int(row["version"]))):
                        problems.append(("update and history not applied together", key, versions, row["version"]))
        # nothing extra: a record with a writer token that nobody acknowledged must be an in-flight store
        flight_tokens = {f["token"]: f for f in inflight.values() if f and f.get("op") == "store"}
        known = {m["token"] for m in state.values()}
        for scope, session in [("project", None), ("user", None)] + [("session", w.session) for w in writers]:
            if scope == "session" and session_db_name(session) not in sessions:
                continue
            for row in handle(scope, session).q(q.ALL_MEMORIES) or []:
                token = (row.get("content") or "").split(" ", 1)[0]
                if not token.startswith("cr") or token in known:
                    continue
                f = flight_tokens.get(token)
                if f is None or f["content"] != row["content"] or f["scope"] != scope:
                    problems.append(("a record nobody wrote", scope, key_of(row), token))
                else:
                    # it landed: from now on it is a memory like the others
                    state[key_of(row)] = {"writer": -1, "scopes": {scope}, "home": scope, "content_at": {scope: row["content"]},
                                          "token": token, "forgotten_at": {scope: False}, "session": session if scope == "session" else None}
        for scope, h in handles.items():
            assert len(h.index) == len(h.q(q.ALL_MEMORIES) or []), scope
    split = sum(1 for k, scopes in touched.items() if landed.get(k) and landed[k] != scopes)
    return problems, split


def _rid(key: str) -> Any:
    from surrealdb import RecordID

    return RecordID("memory", key)


def test_kill_9_during_writes_loses_no_acknowledged_write(sandbox: Sandbox) -> None:
    rnd = random.Random(20261122)
    state: dict[str, dict[str, Any]] = {}
    acked_total, mid_op, split_total = 0, 0, 0
    for cycle in range(KILLS_DURING_WRITES):
        sandbox.start_daemon()
        writers = [Writer(sandbox, n, cycle, random.Random(rnd.random()), state) for n in range(WRITER_THREADS)]
        for w in writers:
            w.start()
        time.sleep(rnd.uniform(0.1, 1.5))
        sandbox.kill_daemon()
        for w in writers:
            w.join(30)
            assert not w.is_alive()
            assert w.error is None, repr(w.error)
        acked_total += sum(w.acked_ops for w in writers)
        mid_op += sum(1 for w in writers if w.inflight)
        problems, split = _check_writes(sandbox, state, writers)
        split_total += split
        assert not problems, f"cycle {cycle}: {problems[:10]}"
    # the store still works normally after all that
    sandbox.start_daemon()
    res = sandbox.call("store", {"content": "after the crashes", "type": "semantic", "scope": "project"})
    assert res["action"] == "created"
    record("crash", kills_during_writes=KILLS_DURING_WRITES, writes_acknowledged_before_kills=acked_total,
           requests_in_flight_at_kill=mid_op, memories_checked=len(state), unacknowledged_updates_split_across_copies=split_total)


# ---------------------------------------------------------------------- promotion at session end
def _session_memories(sb: Sandbox, sid: str, rnd: random.Random, n: int) -> dict[str, dict[str, Any]]:
    out = {}
    with sb.client(name="promo") as c:
        for i in range(n):
            importance = 0.8 if rnd.random() < 0.7 else 0.2
            content = f"pm{sid}i{i} " + " ".join(rnd.choice(WORDS) for _ in range(10))
            res = c.call("store", {"content": content, "type": rnd.choice(["semantic", "procedural", "episodic"]), "scope": "session",
                                   "importance": importance}, project_root=str(sb.project), session_id=sid)
            key = res["memory_id"].split(":")[1]
            out[key] = {"content": content, "qualifies": importance >= 0.5, "forgotten": False, "explicit": False}
            roll = rnd.random()
            if roll < 0.08:
                c.call("forget", {"memory_id": key}, project_root=str(sb.project), session_id=sid)
                out[key].update(forgotten=True, qualifies=False)
            elif roll < 0.16 and importance >= 0.5:
                c.call("promote", {"memory_id": key, "target_scope": "project"}, project_root=str(sb.project), session_id=sid)
                out[key]["explicit"] = True
    return out


def _check_promotion(sb: Sandbox, sid: str, mems: dict[str, dict[str, Any]], *, finished: bool) -> list[Any]:
    problems: list[Any] = []
    with sb.service() as svc:
        ctx = RequestContext(sb.project, sid)
        has_session = session_db_name(sid) in svc.registry.session_databases(sb.project)
        session_rows = {key_of(r): r for r in svc.handle(ctx, "session").q(q.ALL_MEMORIES) or []} if has_session else {}
        project = svc.handle(ctx, "project")
        project_rows = {key_of(r): r for r in project.q(q.ALL_MEMORIES) or []}
        logs: dict[str, int] = {}
        for e in project.q("SELECT * FROM promotion_log") or []:
            logs[str(e["memory_id"])] = logs.get(str(e["memory_id"]), 0) + 1
        if finished and has_session:
            problems.append(("session database not dropped after a completed session end", sid))
        for key, m in mems.items():
            in_s, in_p = key in session_rows, key in project_rows
            logged = logs.get(f"memory:{key}", 0)
            if logged > 1:
                problems.append(("promotion logged twice", key, logged))
            if m["qualifies"] or m["explicit"]:
                if not in_s and not in_p:
                    problems.append(("promotion half-applied: in neither session nor project", key))
                if in_p and not logged:
                    problems.append(("in the project without its promotion recorded", key))
                if in_p and project_rows[key]["content"] != m["content"]:
                    problems.append(("promoted content differs", key))
                if in_p and not any(e.get("memory_id") == f"memory:{key}" for e in project_rows[key].get("promotion_chain") or []):
                    problems.append(("promotion_chain lacks the step", key))
                if finished and not in_p:
                    problems.append(("completed session end did not promote", key))
            else:
                if in_p:
                    problems.append(("promoted although it does not qualify", key))
                if has_session and not in_s:
                    problems.append(("non-qualifying memory vanished from a live session", key))
    return problems


def test_kill_9_during_session_end_never_half_applies_a_promotion(sandbox: Sandbox) -> None:
    rnd = random.Random(4242)
    duration = 0.5  # learnt from the session ends that finish before the kill
    pending: tuple[str, dict[str, Any]] | None = None
    kills = mid = 0
    promoted_checked = 0
    while kills < KILLS_DURING_PROMOTION:
        sandbox.start_daemon()
        if pending is not None:  # recovery: ending the crashed session again completes it, exactly once
            psid, pmems = pending
            sandbox.call("session_end", {}, session=psid)
        sid = f"promo-{kills}-{rnd.randrange(10**6)}"
        mems = _session_memories(sandbox, sid, rnd, rnd.randint(20, scaled(60, 120)))
        done: dict[str, Any] = {}

        def end() -> None:
            try:
                started = time.monotonic()
                with sandbox.client(timeout=60, name="ender") as c:
                    done["result"] = c.call("session_end", {}, project_root=str(sandbox.project), session_id=sid)
                done["seconds"] = time.monotonic() - started
            except EngramError as exc:
                done["error"] = exc

        t = threading.Thread(target=end, daemon=True)
        t.start()
        time.sleep(rnd.uniform(0.0, duration * 1.1))
        sandbox.kill_daemon()
        t.join(30)
        kills += 1
        if "result" in done:
            duration = max(0.05, 0.7 * duration + 0.3 * done["seconds"])
        else:
            mid += 1
        problems = _check_promotion(sandbox, sid, mems, finished="result" in done)
        if pending is not None:
            problems += _check_promotion(sandbox, pending[0], pending[1], finished=True)
        assert not problems, f"kill {kills}: {problems[:10]}"
        promoted_checked += len(mems)
        pending = (sid, mems) if "result" not in done else None
    if pending is not None:
        sandbox.start_daemon()
        sandbox.call("session_end", {}, session=pending[0])
        sandbox.stop_daemon()
        assert not _check_promotion(sandbox, pending[0], pending[1], finished=True)
    record("crash", kills_during_session_end=kills, session_end_interrupted=mid, session_memories_checked=promoted_checked)


# ---------------------------------------------------------------------- migrations
def _build_old_store(project: Path, n: int) -> None:
    """A project store at schema version 1 with `n` memories and some entities (as an old engram wrote it)."""
    store = SurrealStore(project_dir(project), label="project").open()
    ns, db = "project", project_id(project)
    store.ensure_schema(ns, db, migrations=MIGRATIONS[:1])
    now = datetime.now(timezone.utc)
    for b in range(0, n, 250):
        stmts = []
        for i in range(b, min(n, b + 250)):
            rec = {"memory_type": "semantic", "scope": "project", "content": f"legacy memory {i} token lg{i}x", "tags": ["legacy"],
                   "importance": 0.5, "status": "active", "metadata": {"category": ["decision", "convention", "fact"][i % 3], "n": i},
                   "created_at": now, "updated_at": now, "last_accessed_at": now, "status_changed_at": now, "version": 1}
            stmts.append((q.CREATE_MEMORY, {"id": new_ulid(), "record": rec}))
        store.transaction(ns, db, stmts)
    for i in range(min(200, n)):
        store.query(ns, db, q.UPSERT_ENTITY, {"key": f"e{i}", "name": f"Legacy Entity {i}", "entity_type": "component", "mentions": 1,
                                              "description": None})
    assert store.schema_version(ns, db) == 1
    store.close()


def _migration_seconds(template: Path, project: Path) -> float:
    """How long opening (and so migrating) a copy of the old store takes, in this process."""
    shutil.copytree(template, project_dir(project))
    store = SurrealStore(project_dir(project), label="project").open()
    started = time.monotonic()
    store.ensure_schema("project", project_id(project))
    seconds = time.monotonic() - started
    store.close()
    shutil.rmtree(project_dir(project))
    return seconds


def test_kill_9_during_migration_leaves_a_store_that_opens_complete(sandbox: Sandbox, tmp_path: Path) -> None:
    n = scaled(1000, 3000)
    _build_old_store(sandbox.project, n)
    store_owner.adopt(sandbox.user_dir, sandbox.project)  # the user's own old store: its copies are theirs too
    template = tmp_path / "template"
    shutil.copytree(project_dir(sandbox.project), template)
    shutil.rmtree(project_dir(sandbox.project))
    # the daemon also opens the user store and loads the index: give the kills room past the migration
    duration = 2.0 * _migration_seconds(template, sandbox.project) + 0.2
    rnd = random.Random(99)
    kills = mid = 0
    while kills < KILLS_DURING_MIGRATION:
        shutil.rmtree(project_dir(sandbox.project), ignore_errors=True)
        shutil.copytree(template, project_dir(sandbox.project))
        shutil.rmtree(sandbox.user_dir / "data", ignore_errors=True)  # the user store is created (v0 -> current) too
        sandbox.start_daemon()
        done: dict[str, Any] = {}

        def open_stores() -> None:
            try:
                with sandbox.client(timeout=120, name="migrate") as c:
                    done["status"] = c.call("status", {}, project_root=str(sandbox.project))
            except EngramError as exc:
                done["error"] = exc

        t = threading.Thread(target=open_stores, daemon=True)
        t.start()
        time.sleep(rnd.uniform(0.0, duration))
        sandbox.kill_daemon()
        t.join(30)
        kills += 1
        mid += "status" not in done
        with sandbox.service() as svc:  # the store opens (finishing the migration) with everything in it
            h = svc.handle(RequestContext(sandbox.project), "project")
            assert h.store.schema_version(h.ns, h.db) == CURRENT_SCHEMA_VERSION
            rows = h.q("SELECT category, metadata, content FROM memory") or []
            assert len(rows) == n, f"kill {kills}: {len(rows)} of {n} memories"
            assert all(r.get("category") in ("decision", "convention", "fact") for r in rows)
            assert not any("category" in (r.get("metadata") or {}) for r in rows), "category moved, not copied"
            ents = h.q("SELECT name, name_key FROM entity") or []
            assert len(ents) == min(200, n) and all(e.get("name_key") == e["name"].lower() for e in ents)
            assert len(h.index) == n
            u = svc.handle(RequestContext(sandbox.project), "user")
            assert u.store.schema_version(u.ns, u.db) == CURRENT_SCHEMA_VERSION
    assert mid, "at least one kill landed while the stores were opening"
    record("crash", kills_during_migration=kills, migration_interrupted=mid, migrated_memories=n)


# ---------------------------------------------------------------------- a live MCP server across kills
KILLS_UNDER_MCP = scaled(3, 12)


def _daemon_pid(sb: Sandbox) -> int | None:
    """The live daemon's pid (from its lock file); a zombie (restarted by this process) is dead."""
    try:
        pid = int((sb.user_dir / "engramd.lock").read_text().strip())
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    if state == "Z":
        os.waitpid(pid, os.WNOHANG)
        return None
    return pid


def test_kill_9_under_a_live_mcp_server_each_acknowledged_store_lands_once(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's MCP server keeps going when the daemon dies: it restarts the daemon (or queues
    the write) and retries. A store it acknowledged is there exactly once, never twice."""
    from tests.reliability._support import InProcessMCP

    for k, v in sandbox.env.items():
        monkeypatch.setenv(k, v)  # the daemons this server restarts run in the sandbox
    sandbox.start_daemon()
    mcp = InProcessMCP(sandbox)
    rnd = random.Random(31)
    acked: dict[str, str] = {}
    inflight: list[str] = []
    stop = threading.Event()
    errors: list[Any] = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            content = f"mcpkill{i}z{rnd.randrange(10**9)} " + " ".join(rnd.choice(WORDS) for _ in range(10))
            inflight[:] = [content]
            is_error, res = mcp.call("store_memory", {"content": content, "type": "semantic", "scope": "project"})
            inflight[:] = []
            if not is_error and res.get("action") in ("created", "queued"):
                acked[content] = res["memory_id"]
            elif is_error and res.get("error") not in ("daemon_unavailable", "memory_unavailable"):
                errors.append(res)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    kills = 0
    try:
        _kill_loop(sandbox, rnd, mcp, stop, t, acked, errors)
    finally:
        mcp.close()
    record("crash", kills_under_live_mcp_server=KILLS_UNDER_MCP, mcp_stores_acknowledged=len(acked))


def _kill_loop(sandbox: Sandbox, rnd: random.Random, mcp: Any, stop: threading.Event, t: threading.Thread,
               acked: dict[str, str], errors: list[Any]) -> None:
    kills = 0
    try:
        for _ in range(KILLS_UNDER_MCP):
            time.sleep(rnd.uniform(0.3, 1.2))
            pid = _daemon_pid(sandbox)
            assert pid is not None, "a daemon is running (the server restarts it)"
            os.kill(pid, signal.SIGKILL)
            kills += 1
            assert wait_for_pid_change(sandbox, pid), "the MCP server brought a daemon back"
        time.sleep(0.5)
    finally:
        stop.set()
        t.join(120)
        sandbox.daemon = None
    assert not errors, errors[:5]
    # let the last daemon apply anything queued, then stop it
    with sandbox.client() as c:
        queue: dict[str, Any] = {}

        def drained() -> bool:
            queue.update(c.call("status", {}, project_root=str(sandbox.project)).get("write_queue") or {})
            return queue.get("pending", 0) == 0

        assert wait_for(drained, timeout=60, interval=0.5), f"the queue stays: {queue}"
        c.call("shutdown")
    assert wait_for(lambda: _daemon_pid(sandbox) is None, timeout=30)
    with sandbox.service() as svc:
        rows = svc.handle(RequestContext(sandbox.project), "project").q(q.ALL_MEMORIES) or []
    by_token: dict[str, int] = {}
    for r in rows:
        token = r["content"].split(" ", 1)[0]
        by_token[token] = by_token.get(token, 0) + 1
    lost = [c for c in acked if by_token.get(c.split(" ", 1)[0], 0) == 0]
    twice = [t_ for t_, n in by_token.items() if n > 1]
    assert not lost, f"{len(lost)} acknowledged stores lost"
    assert not twice, f"stored more than once: {twice[:5]}"


def wait_for_pid_change(sb: Sandbox, old: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = _daemon_pid(sb)
        if pid is not None and pid != old:
            return True
        time.sleep(0.05)
    return False
