"""The MCP server over real stdio, driven by the SDK's own client.

Each test spawns `python -m engram_mcp.interfaces.server` the way Claude Code does (project dir, session
id and an isolated HOME in the environment) and talks MCP to it; the server forwards to one
engram daemon per module, which the module fixture shuts down at the end. Every tool and every
resource is exercised, and so is every kind of invalid input.
"""

from __future__ import annotations

import json
import re
import os
import statistics
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from engram_mcp.daemon.client import DaemonClient, socket_path
from engram_mcp.core.operations import SCHEMAS, TOOL_NAMES
from tests.daemon_env import stop_daemon

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python")
if not Path(PYTHON).exists():
    PYTHON = sys.executable
SESSION_ID = "test-session-1"
RESOURCE_URIS = {
    "memory://status",
    "memory://session/summary",
    "memory://project/knowledge-graph",
    "memory://user/preferences",
}
ENVELOPE_KEYS = {"error", "message", "degraded", "retry_possible"}

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------------- fixtures
def _make_home(base: Path) -> tuple[Path, Path]:
    home = base / "home"
    user_dir = home / ".claude" / "engram"
    home.mkdir(parents=True, exist_ok=True)
    return home, user_dir


@pytest.fixture(scope="module")
def engram_home(tmp_path_factory: pytest.TempPathFactory):
    """One HOME (and so one daemon, with the fake embedder) for the module; shut down after."""
    base = tmp_path_factory.mktemp("mcp")
    home, user_dir = _make_home(base)
    yield home, user_dir
    stop_daemon(user_dir)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh git project per test: its project store starts empty."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    return proj


def server_env(home: Path, user_dir: Path, project: Path, **extra: str) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "ENGRAM_HOME": str(user_dir),
        "CLAUDE_PROJECT_DIR": str(project),
        "CLAUDE_CODE_SESSION_ID": SESSION_ID,
        "PYTHONPATH": str(REPO_ROOT),
    }
    env.update(extra)
    return env


@pytest.fixture
def env(engram_home, project: Path) -> dict[str, str]:
    home, user_dir = engram_home
    return server_env(home, user_dir, project)


@asynccontextmanager
async def mcp_session(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=PYTHON, args=["-m", "engram_mcp.interfaces.server"], env=env, cwd=env["CLAUDE_PROJECT_DIR"])
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=180) as session:
                await session.initialize()
                yield session


# ---------------------------------------------------------------------- helpers
async def call(session: ClientSession, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; return its JSON result."""
    res = await session.call_tool(tool, args or {})
    text = res.content[0].text
    assert not res.is_error, f"{tool} failed: {text}"
    return json.loads(text)


async def call_error(session: ClientSession, tool: str, args: Any) -> dict[str, Any]:
    """Call a tool that must fail; return its error envelope."""
    res = await session.call_tool(tool, args)
    text = res.content[0].text
    assert res.is_error, f"{tool} unexpectedly succeeded: {text[:300]}"
    envelope = json.loads(text)
    assert ENVELOPE_KEYS <= set(envelope), envelope
    return envelope


async def store(session: ClientSession, content: str, **kw: Any) -> dict[str, Any]:
    args = {"content": content, "type": kw.pop("type", "semantic"), "scope": kw.pop("scope", "project"), **kw}
    return await call(session, "store_memory", args)


def ids(result: dict[str, Any]) -> list[str]:
    return [m["id"] for m in result.get("memories", [])]


def counts(status: dict[str, Any]) -> dict[str, Any]:
    """The parts of get_memory_status that change only when memories change."""
    return {
        scope: {k: v.get(k) for k in ("total", "by_type", "by_status", "entities", "relationships")}
        for scope, v in status["scopes"].items()
    }


EPISODES = [  # three distinct memories for the real model (store-time dedup merges at cosine 0.85)
    "Fixed the flaky login test by waiting for the session cookie before asserting",
    "Login test failed again: the cookie arrived late, after the assertion",
    "Waiting for the session cookie made the login test pass reliably on CI",
]
_WORDS = ["amber", "basalt", "cedar", "dune", "ember", "fjord", "granite", "harbor", "indigo", "juniper", "kelp",
          "lagoon", "meadow", "nectar", "obsidian", "prairie", "quartz", "river", "saffron", "tundra", "umber",
          "violet", "willow", "xenon", "yarrow", "zephyr"]
FACTS = [
    f"{_WORDS[i].title()} service: {_WORDS[(i + 7) % 26]} records, {_WORDS[(i + 13) % 26]} queue, "
    f"{_WORDS[(i + 19) % 26]} cache"
    for i in range(12)
]


# ---------------------------------------------------------------------- surface
async def test_server_lists_every_tool_with_its_exact_schema_and_annotations(env):
    async with mcp_session(env) as s:
        tools = (await s.list_tools()).tools
        resources = (await s.list_resources()).resources
    assert [t.name for t in tools] == list(TOOL_NAMES)
    assert len(tools) == 9
    for t in tools:
        assert t.input_schema == SCHEMAS[t.name]
        assert t.input_schema["additionalProperties"] is False
        assert t.description and len(t.description) < 260
        a = t.annotations
        assert a is not None and a.title and a.open_world_hint is False
        assert a.read_only_hint is not None and a.destructive_hint is not None
    by_name = {t.name: t for t in tools}
    assert by_name["forget_memory"].annotations.destructive_hint is True
    assert by_name["forget_memory"].annotations.idempotent_hint is True
    assert by_name["recall_memories"].annotations.read_only_hint is True
    assert by_name["store_memory"].annotations.destructive_hint is False
    assert "tag" in by_name["update_memory"].description
    assert {str(r.uri) for r in resources} == RESOURCE_URIS
    mimes = {str(r.uri): r.mime_type for r in resources}
    assert mimes["memory://status"] == "application/json"
    assert {mimes[u] for u in RESOURCE_URIS - {"memory://status"}} == {"text/markdown"}


async def test_tools_list_costs_at_most_2000_tokens(env):
    async with mcp_session(env) as s:
        listed = await s.list_tools()
    wire = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
    tools_only = json.dumps({"tools": wire["tools"]}, ensure_ascii=False, separators=(",", ":"))
    report = {
        "what": "tools/list result as sent by the engram MCP server (compact JSON)",
        "method": "tokens estimated as ceil(chars / 4); no tokenizer installed",
        "chars": len(text),
        "tokens_estimate": -(-len(text) // 4),
        "tools_only_chars": len(tools_only),
        "tools_only_tokens_estimate": -(-len(tools_only) // 4),
        "budget_tokens": 2000,
        "per_tool_tokens_estimate": {
            t["name"]: -(-len(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) // 4) for t in wire["tools"]
        },
    }
    out = REPO_ROOT / "bench" / "results" / "tools_list_tokens.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\ntools/list: {report['chars']} chars, ~{report['tokens_estimate']} tokens")
    assert report["tokens_estimate"] <= 2000


async def test_spawn_to_initialize_reply_median_over_five_runs(env):
    timings = []
    for _ in range(5):
        params = StdioServerParameters(command=PYTHON, args=["-m", "engram_mcp.interfaces.server"], env=env, cwd=env["CLAUDE_PROJECT_DIR"])
        started = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=120) as session:
                    init = await session.initialize()
                    timings.append(time.perf_counter() - started)
                    assert init.server_info.name == "engram"
                    assert init.capabilities.tools is not None and init.capabilities.resources is not None
    median = statistics.median(timings)
    print(f"\nspawn -> initialize reply: median {median * 1000:.0f} ms over 5 runs ({', '.join(f'{t * 1000:.0f}' for t in timings)} ms)")
    assert len(timings) == 5


async def test_initialize_and_tools_list_do_not_wait_for_the_daemon(tmp_path, project):
    """With a daemon that can never start, the handshake and tools/list still answer."""
    home, user_dir = _make_home(tmp_path / "nodaemon")
    env = server_env(home, user_dir, project, ENGRAM_PYTHON="/bin/false")
    started = time.perf_counter()
    async with mcp_session(env) as s:
        tools = (await s.list_tools()).tools
        elapsed = time.perf_counter() - started
    assert len(tools) == 9
    assert elapsed < 30  # the daemon start timeout is 60 s; we did not wait for it
    assert not socket_path(user_dir).exists()


# ---------------------------------------------------------------------- tools
async def test_stored_memory_is_found_by_recall_with_every_strategy(env):
    async with mcp_session(env) as s:
        stored = await store(s, "The billing service stores invoices in PostgreSQL", tags=["billing"], category="architecture",
                             importance=0.8, summary="billing uses PostgreSQL", source={"tool": "Read", "file": "billing/db.py", "conversation_turn": 3})
        assert stored["action"] == "created" and stored["memory_id"].startswith("memory:")
        assert stored["embedding_generated"] is True
        mid = stored["memory_id"]
        found = await call(s, "recall_memories", {"query": "billing invoices PostgreSQL"})
        assert found["memories"][0]["id"] == mid
        assert found["memories"][0]["tags"] == ["billing"]
        for strategy in ("vector", "keyword", "hybrid"):
            res = await call(s, "recall_memories", {"query": "billing invoices PostgreSQL", "strategy": strategy, "limit": 5})
            assert mid in ids(res), strategy
        filtered = await call(s, "recall_memories", {"query": "billing invoices", "scope": ["user"], "type": "semantic"})
        assert mid not in ids(filtered)
        by_tag = await call(s, "recall_memories", {"query": "invoices", "tags": ["billing"], "category": "architecture",
                                                    "min_importance": 0.5, "time_range": {"after": "2000-01-01T00:00:00Z"}})
        assert mid in ids(by_tag)


async def test_storing_a_near_duplicate_merges_into_the_existing_memory(env):
    async with mcp_session(env) as s:
        first = await store(s, "Run the test suite with make test before pushing", type="procedural")
        second = await store(s, "Run the test suite with make test before pushing.", type="procedural", tags=["ci"])
        assert second["action"] == "merged"
        assert second["memory_id"] == first["memory_id"]
        status = await call(s, "get_memory_status")
        assert status["scopes"]["project"]["total"] == 1


async def test_update_re_embeds_the_content_and_keeps_history(env, engram_home):
    async with mcp_session(env) as s:
        mid = (await store(s, "Deployments go through the staging cluster first"))["memory_id"]
        upd = await call(s, "update_memory", {"memory_id": mid, "content": "Deployments go through the canary cluster first",
                                              "importance": 0.9, "summary": "canary first", "category": "convention",
                                              "metadata": {"ticket": "OPS-12"}})
        assert upd["re_embedded"] is True
        assert {"content", "importance", "summary", "category", "metadata"} <= set(upd["updated_fields"])
        assert upd["version"] == 2
        tagged = await call(s, "update_memory", {"memory_id": mid, "tags": {"add": ["deploy", "ops"], "remove": []},
                                                 "related_entities": {"add": [{"name": "canary", "type": "environment", "relationship": "uses"}]}})
        assert tagged["version"] == 3
        untagged = await call(s, "update_memory", {"memory_id": mid, "tags": {"remove": ["ops"]}, "related_entities": {"remove": ["canary"]}})
        assert "tags" in untagged["updated_fields"]
        found = await call(s, "recall_memories", {"query": "canary cluster deployments", "strategy": "vector"})
        top = found["memories"][0]
        assert top["id"] == mid and "canary" in top["content"]
        assert top["tags"] == ["deploy"] and top["importance"] == 0.9 and top["version"] == 4
    _, user_dir = engram_home
    with DaemonClient(user_dir, autostart=False) as daemon:
        mem = daemon.call("get", {"memory_id": mid, "history": True}, project_root=env["CLAUDE_PROJECT_DIR"], session_id=SESSION_ID)
    assert [h["version"] for h in mem["history"]][:3] == [1, 2, 3]
    assert mem["history"][0]["snapshot"]["content"] == "Deployments go through the staging cluster first"


async def test_forgotten_memory_is_hidden_shown_on_request_and_restored_by_undo(env):
    async with mcp_session(env) as s:
        mid = (await store(s, "The legacy API lives under /v1 and is deprecated"))["memory_id"]
        other = (await store(s, "The legacy admin panel is written in AngularJS"))["memory_id"]
        forgot = await call(s, "forget_memory", {"memory_id": mid, "reason": "v1 was removed"})
        assert forgot["status"] == "forgotten" and forgot["reason"] == "v1 was removed"
        hidden = await call(s, "recall_memories", {"query": "legacy API v1 deprecated"})
        assert mid not in ids(hidden) and other in ids(hidden)
        shown = await call(s, "recall_memories", {"query": "legacy API v1 deprecated", "include_forgotten": True})
        assert mid in ids(shown)
        assert next(m for m in shown["memories"] if m["id"] == mid)["status"] == "forgotten"
        again = await call(s, "forget_memory", {"memory_id": mid})  # idempotent
        assert again["status"] == "forgotten"
        restored = await call(s, "forget_memory", {"memory_id": mid, "undo": True})
        assert restored["status"] == "active"
        back = await call(s, "recall_memories", {"query": "legacy API v1 deprecated"})
        assert mid in ids(back)


async def test_promote_moves_a_session_memory_to_project_scope(env):
    async with mcp_session(env) as s:
        mid = (await store(s, "Use the ruff formatter, not black, in this repository", scope="session", type="procedural"))["memory_id"]
        before = await call(s, "recall_memories", {"query": "ruff formatter black", "scope": "project"})
        assert mid not in ids(before)
        promoted = await call(s, "promote_memory", {"memory_id": mid, "target_scope": "project", "reason": "repository convention"})
        assert promoted["previous_scope"] == "session" and promoted["new_scope"] == "project"
        assert promoted["action"] == "created" and promoted["target_id"] == mid
        after = await call(s, "recall_memories", {"query": "ruff formatter black", "scope": "project"})
        assert mid in ids(after)
        again = await call(s, "promote_memory", {"memory_id": mid, "target_scope": "project"})  # idempotent
        assert again["action"] == "already_promoted" and again["target_id"] == mid
        project_only = (await store(s, "Releases are tagged vX.Y.Z by the release script"))["memory_id"]
        narrower = await call_error(s, "promote_memory", {"memory_id": project_only, "target_scope": "project"})
        assert narrower["error"] == "invalid_input" and narrower["field"] == "target_scope"


async def test_graph_search_finds_entities_from_related_entities(env):
    async with mcp_session(env) as s:
        mid = (await store(s, "AuthService validates every request token with TokenValidator", related_entities=[
            {"name": "AuthService", "type": "component", "relationship": "depends_on", "target": "TokenValidator"},
            {"name": "TokenValidator", "type": "component", "relationship": "mentions"},
        ]))["memory_id"]
        res = await call(s, "search_knowledge_graph", {"entity": "AuthService", "depth": 2, "direction": "both", "include_memories": True, "limit": 10})
        names = {e["name"] for e in res["entities"]}
        assert {"AuthService", "TokenValidator"} <= names
        auth = next(e for e in res["entities"] if e["name"] == "AuthService")
        assert {"type": "depends_on", "target": "TokenValidator", "direction": "outgoing"} in auth["relationships"]
        assert mid in ids(res)
        outgoing = await call(s, "search_knowledge_graph", {"entity": "TokenValidator", "direction": "outgoing", "relationship_type": "depends_on"})
        assert all(r["direction"] == "outgoing" for e in outgoing["entities"] for r in e.get("relationships", []))
        overview = await call(s, "search_knowledge_graph", {})
        assert "AuthService" in {e["name"] for e in overview["entities"]}
        graph_recall = await call(s, "recall_memories", {"query": "AuthService", "strategy": "graph"})
        assert mid in ids(graph_recall)


async def test_consolidate_dry_run_writes_nothing_and_a_real_run_applies_the_plan(env):
    async with mcp_session(env) as s:
        for text in EPISODES:
            await store(s, text, type="episodic", scope="session")
        before = counts(await call(s, "get_memory_status"))
        assert before["session"]["total"] == len(EPISODES)
        plan = await call(s, "reflect_and_consolidate", {"strategy": "full", "dry_run": True})
        assert plan["dry_run"] is True and plan["scope"] == "session"
        assert plan["session_stats"]["memories_analyzed"] == len(EPISODES)
        assert "applied" not in plan
        assert counts(await call(s, "get_memory_status")) == before
        other = await call(s, "reflect_and_consolidate", {"strategy": "summarize", "dry_run": True, "scope": "project", "session_id": SESSION_ID})
        assert other["scope"] == "project"
        applied = await call(s, "reflect_and_consolidate", {"strategy": "summarize"})
        assert applied["dry_run"] is False and "applied" in applied
        assert len(applied["applied"]["created"]) == len(applied["consolidated_memories"])


async def test_memory_context_is_a_fenced_block_within_the_token_budget(env):
    async with mcp_session(env) as s:
        await store(s, "The user prefers concise answers with code first", scope="user", type="semantic", importance=0.9, category="preference")
        await store(s, "This project formats SQL with sqlfluff", importance=0.7)
        for text in FACTS:
            await store(s, text)
        for text in ["SQL migrations: indentation uses four spaces, keywords upper-case, identifiers snake_case everywhere.",
                     "Format each SQL migration file so sqlfluff passes; the lint-sql CI job rejects any violation.",
                     "Migrations are numbered NNNN_verb_noun.sql and an applied migration is never edited afterwards.",
                     "Data fixes in SQL migrations run inside one explicit transaction with a rollback section.",
                     "Every foreign key column gets its own index in the same SQL migration that adds it.",
                     "Keep DDL and DML in separate migration files so reviewers can read schema changes alone."]:
            await store(s, text)
        ctx = await call(s, "get_memory_context", {"task_description": "format the SQL migrations", "files_in_context": ["db/m1.sql"],
                                                    "max_tokens": 200})
        block = ctx["context_block"]
        assert block.startswith("<engram-memory>") and block.rstrip().endswith("</engram-memory>")
        assert ctx["tokens_used"] <= 200 and len(block) / 4 <= 200
        assert ctx["memories_used"] >= 1 and ctx["truncated"] is True
        prefs = await call(s, "get_memory_context", {"sections": ["preferences"], "max_tokens": 2000})
        assert "concise answers" in prefs["context_block"]


async def test_memory_status_reports_counts_per_scope_and_the_session(env):
    async with mcp_session(env) as s:
        empty = await call(s, "get_memory_status")
        assert empty["scopes"]["project"]["total"] == 0
        await store(s, "The CI runs on GitHub Actions", related_entities=[{"name": "GitHub Actions", "type": "service", "relationship": "uses"}])
        await store(s, "Scratch: try the second approach", scope="session", type="working")
        status = await call(s, "get_memory_status")
    assert status["connection"]["status"] == "connected"
    assert status["scopes"]["project"]["total"] == 1 and status["scopes"]["project"]["entities"] == 1
    assert status["scopes"]["session"]["by_type"] == {"working": 1}
    assert status["current_session"]["session_id"] == SESSION_ID
    assert Path(status["project_root"]) == Path(env["CLAUDE_PROJECT_DIR"]).resolve()


async def test_concurrent_tool_calls_are_all_answered(env):
    import anyio

    results: list[dict[str, Any]] = []
    async with mcp_session(env) as s:
        async def one(i: int) -> None:
            results.append(await store(s, FACTS[i], tags=[f"svc{i}"]))

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(one, i)
            tg.start_soon(call, s, "get_memory_status")
        status = await call(s, "get_memory_status")
    assert len({r["memory_id"] for r in results}) == 6
    assert status["scopes"]["project"]["total"] == 6


# ---------------------------------------------------------------------- resources
async def test_resources_render_status_session_graph_and_preferences(env):
    async with mcp_session(env) as s:
        await store(s, "The user wants commit messages in the imperative mood", scope="user", type="procedural", importance=0.9)
        await store(s, "Investigated the slow checkout page", scope="session", type="episodic")
        await store(s, "Checkout calls PaymentGateway", related_entities=[{"name": "PaymentGateway", "type": "service", "relationship": "calls"}])
        out = {}
        for uri in sorted(RESOURCE_URIS):
            res = await s.read_resource(uri)
            assert len(res.contents) == 1 and str(res.contents[0].uri) == uri
            out[uri] = res.contents[0]
        with pytest.raises(MCPError):
            await s.read_resource("memory://nope")
        assert (await call(s, "get_memory_status"))["connection"]["status"] == "connected"
    status = json.loads(out["memory://status"].text)
    assert out["memory://status"].mime_type == "application/json"
    assert status["scopes"]["project"]["total"] == 1
    summary = out["memory://session/summary"].text
    assert SESSION_ID in summary and "1 episodic" in summary and "slow checkout" in summary
    assert "PaymentGateway" in out["memory://project/knowledge-graph"].text
    prefs = out["memory://user/preferences"].text
    assert "imperative mood" in prefs and "<engram-memory>" in prefs
    assert all(out[u].mime_type == "text/markdown" for u in RESOURCE_URIS - {"memory://status"})


# ---------------------------------------------------------------------- invalid input
INVALID_CALLS = [
    ("store_memory", {}, "content"),
    ("store_memory", {"type": "semantic", "scope": "project"}, "content"),
    ("store_memory", {"content": 5, "type": "semantic", "scope": "project"}, "content"),
    ("store_memory", {"content": "x", "type": "dream", "scope": "project"}, "type"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "galaxy"}, "scope"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "color": "red"}, "color"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "importance": 1.5}, "importance"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "importance": True}, "importance"),
    ("store_memory", {"content": "x" * 100_000, "type": "semantic", "scope": "project"}, "content"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "tags": [f"t{i}" for i in range(500)]}, "tags"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "related_entities": [{"name": "A"}]}, "related_entities[0].type"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "source": {"line": 3}}, "source.line"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "derived_from": ["memory:bad"]}, "derived_from[0]"),
    ("store_memory", {"content": "x", "type": "semantic", "scope": "project", "supersedes": "memory:x; DELETE memory"}, "supersedes"),
    ("recall_memories", {"query": "x", "limit": 0}, "limit"),
    ("recall_memories", {"query": "x", "limit": 51}, "limit"),
    ("recall_memories", {"query": "x", "limit": "5"}, "limit"),
    ("recall_memories", {"query": "x", "scope": "galaxy"}, "scope"),
    ("recall_memories", {"query": "x", "scope": ["project", "galaxy"]}, "scope"),
    ("recall_memories", {"query": "x", "strategy": "psychic"}, "strategy"),
    ("recall_memories", {"query": "q" * 50_000}, "query"),
    ("recall_memories", {"query": "x", "time_range": {"since": "2020"}}, "time_range.since"),
    ("search_knowledge_graph", {"depth": 4}, "depth"),
    ("search_knowledge_graph", {"direction": "sideways"}, "direction"),
    ("forget_memory", {"memory_id": "memory:x; DELETE memory"}, "memory_id"),
    ("forget_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV", "undo": "yes"}, "undo"),
    ("forget_memory", {}, "memory_id"),
    ("update_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV", "tags": {"drop": ["a"]}}, "tags.drop"),
    ("update_memory", {"memory_id": "x' OR 1=1 --"}, "memory_id"),
    ("promote_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV", "target_scope": "session"}, "target_scope"),
    ("promote_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "target_scope"),
    ("reflect_and_consolidate", {"session_id": "../../etc"}, "session_id"),
    ("reflect_and_consolidate", {"strategy": "everything"}, "strategy"),
    ("get_memory_context", {"max_tokens": 50}, "max_tokens"),
    ("get_memory_context", {"sections": ["gossip"]}, "sections[0]"),
    ("get_memory_status", {"verbose": True}, "verbose"),
    ("update_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}}, "metadata.a.b.c.d.e.f.g"),
]


async def test_invalid_inputs_return_an_envelope_naming_the_field_and_change_nothing(env):
    async with mcp_session(env) as s:
        mid = (await store(s, "A memory that must survive every bad call"))["memory_id"]
        before = counts(await call(s, "get_memory_status"))
        for tool, args, field in INVALID_CALLS:
            envelope = await call_error(s, tool, args)
            assert envelope["error"] == "invalid_input", (tool, args, envelope)
            assert envelope["field"] == field, (tool, field, envelope)
            assert envelope["degraded"] is False and envelope["retry_possible"] is False
            assert field.split("[")[0].split(".")[-1] in envelope["message"] or field in envelope["message"], envelope
            assert len(envelope["message"]) < 400  # huge values are never echoed
        # the daemon's own checks come back in the same envelope
        missing = await call_error(s, "update_memory", {"memory_id": "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV", "importance": 0.3})
        assert missing["error"] == "not_found" and missing["retry_possible"] is False
        long_tag = await call_error(s, "store_memory", {"content": "x", "type": "semantic", "scope": "project", "tags": ["t" * 100]})
        assert long_tag["error"] == "invalid_input" and long_tag["field"] == "tags"
        working = await call_error(s, "store_memory", {"content": "scratch", "type": "working", "scope": "project"})
        assert working["field"] == "type"
        with pytest.raises(MCPError):
            await s.call_tool("drop_all_memories", {})
        # nothing changed, and the server still answers
        assert counts(await call(s, "get_memory_status")) == before
        assert mid in ids(await call(s, "recall_memories", {"query": "memory that must survive"}))
        nulls = await call(s, "recall_memories", {"query": "survive", "scope": None, "limit": 5.0})
        assert mid in ids(nulls)


# ---------------------------------------------------------------------- real model
@pytest.mark.slow
async def test_real_embedding_model_recalls_by_meaning(tmp_path, project):
    home, user_dir = _make_home(tmp_path / "real")
    env = server_env(home, user_dir, project)
    try:
        async with mcp_session(env) as s:
            mid = (await store(s, "The team chose PostgreSQL as the database for the billing service"))["memory_id"]
            await store(s, "The frontend is built with React and Vite")
            status = await call(s, "get_memory_status")
            assert "fake" not in status["embedding"]["model"]
            found = await call(s, "recall_memories", {"query": "which datastore does invoicing use?", "strategy": "vector", "limit": 1})
            assert ids(found) == [mid]
    finally:
        stop_daemon(user_dir)


async def test_the_short_id_a_context_line_shows_is_taken_by_every_tool(env):
    """Block lines show a memory's short id (its last 8 characters). Claude copies ids from them, so
    the tools take one where an id goes: the memory acted on, `supersedes` and `link`'s `to_id`;
    a short id that names no memory is refused without a write."""
    async with mcp_session(env) as s:
        old = await store(s, "The staging API listens on port 8443 behind the bastion host.")
        block = (await call(s, "get_memory_context", {"task_description": "staging API port"}))["context_block"]
        line = next(ln for ln in block.splitlines() if "8443" in ln)
        short = re.search(r"^- \[.*?, ([0-9A-Z]{8})\] ", line).group(1)
        assert old["memory_id"].endswith(short) and old["memory_id"] not in block
        new = await store(s, "Staging API moved: it now listens on port 9443, still behind the bastion host.", supersedes=short)
        assert new["memory_id"] != old["memory_id"]
        found = await call(s, "recall_memories", {"query": "staging API port", "include_superseded": False})
        assert new["memory_id"] in ids(found) and old["memory_id"] not in ids(found)
        updated = await call(s, "update_memory", {"memory_id": new["memory_id"][-8:], "importance": 0.9})
        assert updated["memory_id"] == new["memory_id"]
        missing = await call_error(s, "update_memory", {"memory_id": "ZZZZZZZZ", "importance": 0.9})
        assert missing["error"] == "not_found" and "ZZZZZZZZ" in missing["message"]
