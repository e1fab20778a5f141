#!/usr/bin/env python3
"""A real demonstration of engram on the embedded default (no server, no network).

It runs in a throwaway HOME and git project, through the same owner process (engramd)
and client the plugin uses, with the real offline embedding model:
  1. memories of each type in each scope,
  2. one recall across all three scopes,
  3. session end: promotion session -> project, and an explicit project -> user promotion,
  4. decay: an old, unused event fades and the maintenance pass archives it,
  5. a Claude Code session as the plugin's hooks see it (real hook processes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="engram-demo-"))
    home, project = tmp / "home", tmp / "acme-api"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    os.environ["HOME"] = str(home)
    os.environ.pop("ENGRAM_HOME", None)
    from engram_mcp.daemon.client import DaemonClient
    from engram_mcp.index.scoring import strength

    user_dir = home / ".claude" / "engram"
    client = DaemonClient(user_dir, client_name="demo")
    session = "demo-session-1"

    def call(op, args=None, sid=session):
        return client.call(op, args or {}, project_root=project, session_id=sid)

    def show(title):
        print(f"\n== {title}")

    try:
        show(f"Throwaway HOME {home} and project {project}")
        started = time.perf_counter()
        call("session_start", {"info": {"source": "demo"}})
        print(f"engramd started and session opened in {time.perf_counter() - started:.1f}s (model loads once, then stays warm)")

        show("1. Memories of each type in each scope")
        items = [
            ("User prefers pytest with plain asserts over unittest classes", "semantic", "user", 0.8, "preference"),
            ("To bisect a regression: git bisect start, mark good/bad, run the test each step", "procedural", "user", 0.8, "procedure"),
            ("acme-api stores orders in PostgreSQL 16; migrations live in db/migrations", "semantic", "project", 0.7, "architecture"),
            ("Run the API tests with `make test`; they need DATABASE_URL=postgres://localhost/acme_test", "procedural", "project", 0.7, "convention"),
            ("Commit messages: an imperative subject under 50 characters, then a blank line and the why", "semantic", "project", 0.7, "convention"),
            ("Fixed flaky order test by freezing time with freezegun", "episodic", "session", 0.6, "error_fix"),
            ("Decided to add an index on orders.created_at for the reporting query", "semantic", "session", 0.7, "decision"),
            ("Currently checking why /orders is slow", "working", "session", 0.3, None),
        ]
        for content, mtype, scope, imp, cat in items:
            r = call("store", {"content": content, "type": mtype, "scope": scope, "importance": imp, "category": cat})
            print(f"  {r['action']:<7} {scope:<8} {mtype:<10} {content[:70]}")
        dup = call("store", {"content": "The user likes pytest-style plain assert statements rather than unittest classes", "type": "semantic", "scope": "user"})
        print(f"  a paraphrase of the pytest preference -> {dup['action']} (similarity {dup.get('similarity')})")

        show("2. One recall across session, project and user")
        res = call("recall", {"query": "how should I write and run tests here?", "limit": 5})
        for m in res["memories"]:
            print(f"  {m['score']:.3f} [{m['scope']:<7} {m['type']:<10}] {m['content'][:80]}")
        print(f"  ({res['query_time_ms']} ms, strategy {res['strategy_used']}; each returned memory was strengthened)")

        show("3. Promotion: session end promotes what proved valuable")
        end = call("session_end", {})
        print(f"  promoted {end['promoted']} session memories to the project (working scratch is never promoted); session scope dropped")
        res = call("recall", {"query": "index on orders created_at", "limit": 1}, sid=None)
        m = res["memories"][0]
        print(f"  now in scope '{m['scope']}': {m['content'][:70]}  chain: {[e['scope'] + '->' + e['action'] for e in m['promotion_chain']]}")
        pref = call("recall", {"query": "commit message style", "limit": 1, "scope": "project"}, sid=None)["memories"][0]
        up = call("promote", {"memory_id": pref["id"], "target_scope": "user", "reason": "the user writes every repository's commits this way"}, sid=None)
        print(f"  explicit project -> user promotion ({up['action']}): {pref['content'][:60]}")

        show("4. Decay: strength = importance x exp(-ln2 x days / (half-life x (1 + 0.2 x recalls)))")
        for mtype in ("working", "episodic", "semantic", "procedural"):
            row = "  ".join(f"{d:>3}d {strength(0.8, mtype, d * 86400, 0):.3f}" for d in (0, 1, 7, 30))
            print(f"  {mtype:<10} importance 0.8 -> {row}")
        old = (datetime.now(timezone.utc) - timedelta(days=10)).isoformat()
        call("store", {"content": "Ran the linter once last week", "type": "episodic", "scope": "project", "importance": 0.5, "created_at": old}, sid=None)
        report = call("maintain", {}, sid=None)
        print(f"  a 10-day-old unused episode has strength {strength(0.5, 'episodic', 10 * 86400, 0):.4f}; maintenance: {report['project']}")

        show("5. The next Claude Code session, through the plugin's hooks (bin/engram-hook)")
        hook_session = "demo-session-2"

        def hook(event, **payload):
            data = {"session_id": hook_session, "cwd": str(project), "hook_event_name": event, **payload}
            t0 = time.perf_counter()
            proc = subprocess.run([str(ROOT / "bin" / "engram-hook"), event], input=json.dumps(data), text=True,
                                  capture_output=True, env={**os.environ, "ENGRAM_PYTHON": sys.executable}, timeout=60)
            ms = (time.perf_counter() - t0) * 1000
            out = json.loads(proc.stdout) if proc.stdout.strip() else {}
            return out, ms

        out, ms = hook("SessionStart", source="startup")
        block = out.get("hookSpecificOutput", {}).get("additionalContext", "")
        print(f"  SessionStart ({ms:.0f} ms) injects {len(block) // 4} tokens of context:")
        for line in block.splitlines()[:12]:
            print(f"    | {line[:100]}")
        _, ms = hook("PostToolUseFailure", tool_name="Bash", tool_input={"command": "make test"},
                     error="Exit code 2\npsycopg.OperationalError: connection to postgres://app:s3cr3tPassw0rd@localhost failed")
        print(f"  PostToolUseFailure ({ms:.0f} ms): failed command queued as a session episode (password redacted)")
        # meanwhile another session of this project (a second terminal) learns something the
        # start block could not have shown
        call("store", {"content": "The API test database needs the pgcrypto extension: run `make db-extensions` once after creating acme_test",
                       "type": "semantic", "scope": "project", "importance": 0.7}, sid=None)
        out, ms = hook("UserPromptSubmit", prompt="the API tests fail on gen_random_uuid in the test database, what is missing?")
        extra = out.get("hookSpecificOutput", {}).get("additionalContext", "")
        added = extra.count("- [")
        print(f"  UserPromptSubmit ({ms:.0f} ms) adds {added} {'memory' if added == 1 else 'memories'} for the prompt "
              "(above the relevance bar, never one already shown this session):")
        for line in extra.splitlines():
            if line.startswith("- ["):
                print(f"    | {line[:100]}")
        _, ms = hook("SessionEnd", reason="exit")
        summary = call("recall", {"query": "session summary make test failed", "category": "session_summary", "limit": 1}, sid=None)["memories"]
        print(f"  SessionEnd ({ms:.0f} ms) promoted and kept a summary: {' '.join(summary[0]['content'].split())[:110] if summary else '(none)'}")

        show("Status")
        st = call("status", {}, sid=None)
        for scope, info in st["scopes"].items():
            print(f"  {scope:<8} {info.get('total', 0)} memories {info.get('by_status', {})}")
        print(f"\nDemo finished. Stores are in {project / '.claude' / 'engram'} and {user_dir}.")
        return 0
    finally:
        try:
            client.call("shutdown")
        except Exception:
            pass
        client.close()


if __name__ == "__main__":
    sys.exit(main())
