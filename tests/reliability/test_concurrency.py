"""Concurrency (issue 6, part 1): 4 Claude Code windows on one project, each a real MCP server
over stdio plus up to 2 short-lived processes at a time (hooks through bin/engram-hook and
`engram` CLI calls: 8 at once in all), running a seeded mix of store, update, recall, forget,
promote, context and SessionEnd. Afterwards every acknowledged write is present exactly once
with its acknowledged content, tags and status; histories are intact; the retrieval indexes
agree with the records, both live in the daemon and rebuilt from disk; nothing is left queued.

CI runs ~600 operations; `make stress` runs 5,000.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core import spool
from engram_mcp.services.service import RequestContext
from engram_mcp.storage import queries as q
from tests.reliability._support import PYTHON, STRESS, Sandbox, hooks_available, key_of, record, scaled

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600 if STRESS else 600)]

WINDOWS = 4
OPS = scaled(600, 5000)
EPOCHS = scaled(2, 5)
WORKER = Path(__file__).with_name("window_worker.py")
TOKEN_RE = re.compile(r"tk\d+x\d+q\d+")


def _run_windows(sb: Sandbox, side: str) -> list[dict[str, Any]]:
    procs, outs = [], []
    for w in range(WINDOWS):
        out = sb.root / f"window{w}.jsonl"
        cfg = {"window": w, "seed": 1000 + w, "project": str(sb.project), "ops": OPS // WINDOWS, "epochs": EPOCHS,
               "out": str(out), "side": side, "side_parallel": 2,
               "env": {**sb.env, "ENGRAM_PYTHON": PYTHON}}
        cfg_path = sb.root / f"window{w}.json"
        cfg_path.write_text(json.dumps(cfg))
        outs.append(out)
        procs.append(subprocess.Popen([PYTHON, str(WORKER), str(cfg_path)], env={**sb.env, "ENGRAM_PYTHON": PYTHON},
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(sb.project)))
    failures = []
    for w, p in enumerate(procs):
        stdout, stderr = p.communicate(timeout=3000 if STRESS else 540)
        if p.returncode != 0:
            failures.append(f"window {w} exited {p.returncode}:\n{stderr[-4000:]}")
    assert not failures, "\n".join(failures)
    events = []
    for w, out in enumerate(outs):
        for line in out.read_text().splitlines():
            e = json.loads(line)
            e["_window"] = w
            events.append(e)
    return events


def _expected(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Replay the acknowledged writes (each window's in order) into the state they must leave."""
    mem: dict[str, dict[str, Any]] = {}
    for e in events:
        ev = e["ev"]
        if ev == "store" and e["action"] == "created":
            mem[e["id"]] = {"scopes": {e["scope"]}, "content": e["content"], "token": e["token"], "forgotten": False,
                            "gone": False, "tags": {t.lower() for t in e["tags"]}, "session": e["session"], "ever_session": e["scope"] == "session"}
        elif ev == "update" and e["id"] in mem:
            m = mem[e["id"]]
            if e.get("content") is not None:
                m["content"] = e["content"]
            m["tags"] |= {t.lower() for t in e.get("tags_add") or []}
        elif ev == "forget" and e["id"] in mem:
            mem[e["id"]]["forgotten"] = not e["undo"]
        elif ev == "promote" and e["id"] in mem and e["action"] == "created":
            mem[e["id"]]["scopes"].add(e["target"])
        elif ev == "session_end":
            for m in mem.values():
                if m["gone"] or m["session"] != e["session"] or "session" not in m["scopes"]:
                    continue
                m["scopes"].discard("session")
                if not m["forgotten"]:
                    m["scopes"].add("project")
                elif not m["scopes"]:
                    m["gone"] = True
    return mem


def _live_checks(sb: Sandbox, expected: dict[str, dict[str, Any]], limit: int) -> tuple[int, dict[str, Any]]:
    """Through the running daemon: its in-memory BM25 and vector indexes find what the records hold."""
    checked = 0
    problems = []
    with sb.client(name="verify") as c:
        for mid, m in list(expected.items())[:limit]:
            if m["gone"]:
                continue
            for scope in sorted(m["scopes"]):
                kw = c.call("recall", {"query": m["token"], "strategy": "keyword", "scope": scope, "limit": 10,
                                       "include_forgotten": True, "strengthen": False}, project_root=str(sb.project))
                vec = c.call("recall", {"query": m["content"], "strategy": "vector", "scope": scope, "limit": 5,
                                        "include_forgotten": True, "strengthen": False}, project_root=str(sb.project))
                plain = c.call("recall", {"query": m["token"], "strategy": "keyword", "scope": scope, "limit": 10,
                                          "strengthen": False}, project_root=str(sb.project))
                if mid not in [x["id"] for x in kw["memories"]]:
                    problems.append(("bm25 index lost it", mid, scope))
                if mid not in [x["id"] for x in vec["memories"]]:
                    problems.append(("vector index lost it", mid, scope))
                if (mid in [x["id"] for x in plain["memories"]]) == m["forgotten"]:
                    problems.append(("status filter disagrees", mid, scope, m["forgotten"]))
                checked += 1
        status = c.call("status", {}, project_root=str(sb.project))
    assert not problems, problems[:20]
    return checked, status


@pytest.mark.parametrize("side", ["hooks" if hooks_available() else "cli"])
def test_four_windows_with_hooks_and_cli_lose_and_duplicate_nothing(sandbox: Sandbox, side: str) -> None:
    sb = sandbox
    sb.start_daemon()
    started = time.monotonic()
    events = _run_windows(sb, side)
    elapsed = time.monotonic() - started
    anomalies = [e for e in events if e["ev"] == "anomaly"]
    assert not anomalies, json.dumps(anomalies[:10], indent=1)[:6000]
    ops = [e for e in events if e["ev"] == "op"]
    assert all(e["ok"] or e["via"] in ("mcp", "cli") for e in ops)
    assert sum(e["ev"] == "done" for e in events) == WINDOWS
    expected = _expected(events)
    captures = [e for e in events if e["ev"] == "capture"]

    # nothing left in the write queue, and nothing rejected
    assert spool.count(sb.user_dir) == {"pending": 0, "rejected": 0}, list((sb.user_dir / "spool").rglob("*"))
    live_checked, live_status = _live_checks(sb, expected, scaled(10_000, 800))
    sb.stop_daemon()

    with sb.service() as svc:
        ctx = RequestContext(sb.project)
        assert svc.registry.session_databases(sb.project) == [], "every session was ended and dropped"
        handles = {"project": svc.handle(ctx, "project"), "user": svc.handle(ctx, "user")}
        rows = {s: {key_of(r): r for r in h.q(q.ALL_MEMORIES) or []} for s, h in handles.items()}
        history = {s: h.q(q.ALL_HISTORY) or [] for s, h in handles.items()}
        logs = {s: h.q("SELECT * FROM promotion_log") or [] for s, h in handles.items()}

        # the daemon's live counts are the records' counts
        for s in ("project", "user"):
            assert live_status["scopes"][s]["total"] == len(rows[s]), s

        problems: list[Any] = []
        promoted_into: dict[str, str] = {}
        for s in ("project", "user"):
            for k, r in rows[s].items():
                for entry in r.get("promotion_chain") or []:
                    if entry.get("action") == "merged":
                        promoted_into[str(entry.get("memory_id"))] = f"memory:{k}"
        for mid, m in expected.items():
            key = mid.split(":", 1)[1]
            for s in ("project", "user"):
                row = rows[s].get(key)
                want = not m["gone"] and s in m["scopes"]
                if want and row is None:
                    if mid in promoted_into:
                        continue  # merged into a near-duplicate at promotion: recorded in its chain
                    problems.append(("acknowledged memory missing", mid, s))
                elif row is not None and not want:
                    problems.append(("memory present where it must not be", mid, s, sorted(m["scopes"]), m["gone"]))
                elif row is not None:
                    if row["content"] != m["content"]:
                        problems.append(("content is not the last acknowledged", mid, s))
                    if (row["status"] == "forgotten") != m["forgotten"]:
                        problems.append(("status is not the acknowledged one", mid, s, row["status"]))
                    if set(row.get("tags") or []) != m["tags"]:
                        problems.append(("tags differ", mid, s, sorted(row.get("tags") or []), sorted(m["tags"])))
        # exactly once: no token (memory or capture) in two records of one scope
        capture_tokens = {c["token"] for c in captures}
        for s in ("project", "user"):
            seen: Counter = Counter()
            for r in rows[s].values():
                if r.get("category") == "session_summary":
                    continue  # a session's summary quotes its memories
                for tok in set(TOKEN_RE.findall(r.get("content") or "")):
                    seen[tok] += 1
            dups = [t for t, n in seen.items() if n > 1]
            if dups:
                problems.append(("stored more than once", s, dups[:10]))
            # every record is accounted for: an acknowledged memory, a session summary, or a promoted capture
            known = {mid.split(":", 1)[1] for mid in expected}
            for k, r in rows[s].items():
                if k in known or r.get("category") == "session_summary":
                    continue
                toks = set(TOKEN_RE.findall(r.get("content") or ""))
                if toks & capture_tokens and r.get("promotion_chain"):
                    continue
                problems.append(("record nobody acknowledged", s, k, (r.get("content") or "")[:80]))
        # history: per record, versions unique, contiguous and ending just below the record's version;
        # a memory never in a session has its whole history from version 1
        for s in ("project", "user"):
            by_mem: dict[str, list[int]] = defaultdict(list)
            for h in history[s]:
                by_mem[key_of({"id": h["memory"]})].append(int(h["version"]))
            for k, r in rows[s].items():
                versions = sorted(by_mem.get(k, []))
                v = int(r.get("version", 1))
                if len(versions) != len(set(versions)):
                    problems.append(("history has a version twice", s, k, versions))
                elif versions and versions != list(range(versions[0], v)):
                    problems.append(("history has a gap or runs past the record", s, k, versions, v))
                m = expected.get(f"memory:{k}")
                if m is not None and not m["ever_session"] and not r.get("promotion_chain") and versions[:1] not in ([], [1]):
                    problems.append(("history does not start at version 1", s, k, versions))
                if m is not None and not m["ever_session"] and not r.get("promotion_chain") and len(versions) != v - 1:
                    problems.append(("history incomplete", s, k, versions, v))
        # promotions: one log entry per promoted memory and target
        for s in ("project", "user"):
            per = Counter(str(e.get("memory_id")) for e in logs[s])
            twice = [mid for mid, n in per.items() if n > 1]
            if twice:
                problems.append(("promotion logged twice", s, twice[:10]))
            for k, r in rows[s].items():
                if r.get("promotion_chain") and per.get(f"memory:{k}", 0) == 0 and not any(
                        e.get("target_id") == f"memory:{k}" for e in logs[s]):
                    problems.append(("promoted without a log entry", s, k))
        # the indexes rebuilt from disk agree with the records
        for s, h in handles.items():
            assert len(h.index) == len(rows[s]), s
            for k, r in list(rows[s].items())[:300]:
                toks = TOKEN_RE.findall(r.get("content") or "")
                if toks:
                    slots, _scores = h.index.bm25.search(toks[0], 5)
                    if k not in [h.index.key_of(int(x)) for x in slots]:
                        problems.append(("rebuilt bm25 misses a record", s, k))
        assert not problems, "\n".join(map(str, problems[:30]))

    by_via = Counter(e["via"] for e in ops)
    record("concurrency", side=side, operations=len(ops), operations_by_interface=dict(by_via),
           operations_by_kind=dict(Counter(e["kind"] for e in ops)), memories_acknowledged=len(expected),
           captures_acknowledged=len(captures), session_ends=sum(e["ev"] == "session_end" for e in events),
           live_index_checks=live_checked, windows=WINDOWS, seconds=round(elapsed, 1))
    assert len(ops) >= OPS * 0.9, f"only {len(ops)} operations ran"


def test_a_promoted_memory_keeps_its_session_history(running: Sandbox) -> None:
    sid = "history-session"
    mid = running.call("store", {"content": "first version of the build note", "type": "semantic", "scope": "session",
                                 "importance": 0.9}, session=sid)["memory_id"]
    running.call("update", {"memory_id": mid, "content": "second version of the build note"}, session=sid)
    running.call("update", {"memory_id": mid, "content": "third version of the build note"}, session=sid)
    running.call("session_end", {}, session=sid)
    mem = running.call("get", {"memory_id": mid, "history": True})
    assert mem["scope"] == "project" and mem["content"] == "third version of the build note"
    assert [h["version"] for h in mem["history"]][:2] == [1, 2], mem["history"]
    assert mem["history"][0]["snapshot"]["content"] == "first version of the build note"
