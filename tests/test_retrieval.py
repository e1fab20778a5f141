"""recall_memories with the real model: scopes, filters, strategies, dedup, supersedes, degradation."""

from __future__ import annotations

import time

import numpy as np
import pytest

from engram_mcp.index.embeddings import DEFAULT_MODEL, EmbeddingsUnavailable
from engram_mcp.core.errors import InvalidInput
from engram_mcp.services.service import MemoryService, RequestContext
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.slow


def _ids(res: dict) -> list[str]:
    return [m["id"] for m in res["memories"]]


def _store(svc, ctx, content, scope="project", type="semantic", **kw) -> str:
    return svc.store(ctx, content=content, type=type, scope=scope, **kw)["memory_id"]


class BrokenEmbedder:
    """The real model's name and size, but the model cannot be loaded."""

    model_name = DEFAULT_MODEL
    dim = 384
    loaded = False

    def embed_query(self, text):
        raise EmbeddingsUnavailable("the model file is missing (test)")

    def embed_documents(self, texts):
        raise EmbeddingsUnavailable("the model file is missing (test)")


def test_one_recall_returns_memories_from_all_three_scopes(real_service, ctx):
    s = _store(real_service, ctx, "In this session we switched the HTTP client to httpx", scope="session", type="episodic")
    p = _store(real_service, ctx, "The project's HTTP client is httpx with a 10 second timeout")
    u = _store(real_service, ctx, "I prefer httpx over requests as the HTTP client in Python", scope="user")
    _store(real_service, ctx, "The office coffee machine is on the third floor")
    res = real_service.recall(ctx, query="which HTTP client library do we use", limit=3)
    assert set(_ids(res)) == {s, p, u}
    assert {m["scope"] for m in res["memories"]} == {"session", "project", "user"}
    assert res["strategy_used"] == "hybrid" and res["warnings"] == [] and res["degraded"] is False
    for m in res["memories"]:
        assert 0 <= m["relevance_score"] <= 1 and m["score"] > 0


def test_each_filter_excludes_what_it_should(real_service, ctx):
    q = "database connection pooling"
    a = _store(real_service, ctx, "Database connection pooling uses pgbouncer in transaction mode", importance=0.9,
               category="architecture", tags=["db", "infra"])
    b = _store(real_service, ctx, "How to tune database connection pooling: raise max_client_conn first", type="procedural",
               importance=0.4, category="procedure", tags=["db"])
    c = _store(real_service, ctx, "Database connection pooling was added in 2023 after an outage", type="episodic",
               importance=0.6, tags=["history"], created_at="2023-06-01T00:00:00Z")
    d = _store(real_service, ctx, "My usual database connection pooling defaults: 20 connections", scope="user", importance=0.7,
               category="preference")
    e = _store(real_service, ctx, "Database connection pooling in the session: pool exhausted at 3pm", scope="session", type="episodic")
    f = _store(real_service, ctx, "Old note on database connection pooling with pgpool", importance=0.8)
    real_service.forget(ctx, f)

    def ids(**kw):
        return set(_ids(real_service.recall(ctx, query=q, limit=20, strengthen=False, **kw)))

    assert ids() == {a, b, c, d, e}
    assert ids(scope="user") == {d}
    assert ids(scope=["project", "session"]) == {a, b, c, e}
    assert ids(type="procedural") == {b}
    assert ids(type=["episodic"]) == {c, e}
    assert ids(category="architecture") == {a}
    assert ids(category=["procedure", "preference"]) == {b, d}
    assert ids(tags=["db"]) == {a, b}
    assert ids(tags=["history", "infra"]) == {a, c}
    assert ids(time_range={"before": "2024-01-01T00:00:00Z"}) == {c}
    assert ids(time_range={"after": "2024-01-01T00:00:00Z"}) == {a, b, d, e}
    assert ids(min_importance=0.65) == {a, d}
    assert ids(include_forgotten=True) == {a, b, c, d, e, f}
    assert ids(include_forgotten=True, min_importance=0.75) == {a, f}


def test_vector_keyword_hybrid_and_graph_strategies_all_answer(real_service, ctx):
    auth = _store(real_service, ctx, "Token refresh happens in the middleware before each request",
                  related_entities=[{"name": "AuthService", "type": "service", "relationship": "implements"}])
    tv = _store(real_service, ctx, "Signatures are checked with the JWKS keys cached for one hour",
                related_entities=[{"name": "TokenValidator", "type": "class"}])
    real_service.update(ctx, auth, related_entities={"add": [{"name": "AuthService", "type": "service", "relationship": "depends_on",
                                                               "target": "TokenValidator"}]})
    _store(real_service, ctx, "AuthService is mentioned here in text but not linked in the graph")
    _store(real_service, ctx, "Invoices are generated on the first of the month",
           related_entities=[{"name": "BillingService", "type": "service"}])

    semantic = real_service.recall(ctx, query="how are access tokens renewed", strategy="vector", limit=1, strengthen=False)
    assert semantic["strategy_used"] == "vector" and _ids(semantic) == [auth]
    keyword = real_service.recall(ctx, query="JWKS", strategy="keyword", strengthen=False)
    assert keyword["strategy_used"] == "keyword" and _ids(keyword) == [tv]
    hybrid = real_service.recall(ctx, query="JWKS signature keys", strategy="hybrid", limit=1, strengthen=False)
    assert hybrid["strategy_used"] == "hybrid" and _ids(hybrid) == [tv]
    graph = real_service.recall(ctx, query="what do we know about AuthService?", strategy="graph", strengthen=False)
    assert graph["strategy_used"] == "graph"
    # the memory linked to AuthService and the one linked to its neighbour TokenValidator; not the
    # text-only mention, not BillingService
    assert set(_ids(graph)) == {auth, tv}


def test_keyword_strategy_finds_an_exact_rare_token_that_vector_search_misses(real_service, ctx):
    target = _store(real_service, ctx, "The regression was introduced by commit 9f3ac21e and reverted the next day after a long "
                    "investigation of the flaky scheduler", dedup=False)
    for text in ["Commit hashes are short SHA-1 prefixes such as 9f3ac21f", "Commit 9f3ac21d bumped the version",
                 "Commit 9f3bc21e touched the README", "Commit 8f3ac21e updated dependencies", "Git commit 9e3ac21e fixed a typo"]:
        _store(real_service, ctx, text, dedup=False)
    vector = real_service.recall(ctx, query="9f3ac21e", strategy="vector", limit=3, strengthen=False)
    assert target not in _ids(vector)
    keyword = real_service.recall(ctx, query="9f3ac21e", strategy="keyword", limit=3, strengthen=False)
    assert _ids(keyword) == [target]
    hybrid = real_service.recall(ctx, query="9f3ac21e", strategy="hybrid", limit=3, strengthen=False)
    assert _ids(hybrid)[0] == target


def test_a_memory_present_in_session_and_project_is_returned_once_with_also_in(real_service, ctx):
    mid = _store(real_service, ctx, "The feature flag service is LaunchDarkly, keyed by tenant id", scope="session", importance=0.8)
    res = real_service.promote(ctx, mid, "project")
    assert res["target_id"] == mid and res["action"] == "created"
    found = real_service.recall(ctx, query="which feature flag service", limit=5)
    hits = [m for m in found["memories"] if m["id"] == mid]
    assert len(hits) == 1
    # the copy in the scope the profile favours is shown (project), and it names the other
    assert hits[0]["scope"] == "project" and hits[0]["also_in"] == ["session"]
    assert real_service.get(ctx, mid)["also_in"] == ["project"]


def test_near_identical_memories_in_project_and_user_are_returned_once(real_service, ctx):
    p = _store(real_service, ctx, "Use ruff for linting Python code")
    u = _store(real_service, ctx, "Use ruff for linting the Python code", scope="user")
    res = real_service.recall(ctx, query="which linter for Python", limit=5, strengthen=False)
    kept = [m for m in res["memories"] if m["id"] in (p, u)]
    assert len(kept) == 1
    assert kept[0]["id"] == p and kept[0]["also_in"] == ["user"]
    # within one scope both stay (dedup across scopes only)
    p2 = _store(real_service, ctx, "Use ruff for linting the Python code", dedup=False)
    res = real_service.recall(ctx, query="which linter for Python", scope="project", limit=5, strengthen=False)
    assert {p, p2} <= set(_ids(res))


def test_a_superseded_memory_is_hidden_from_recall_unless_asked_for(real_service, ctx):
    old = _store(real_service, ctx, "The API server listens on port 8080 behind nginx", importance=1.0)
    new = _store(real_service, ctx, "Ports were reshuffled in May", supersedes=old, importance=0.1)
    query = "The API server listens on port 8080 behind nginx"
    for strategy in ("hybrid", "keyword", "vector"):
        order = _ids(real_service.recall(ctx, query=query, strategy=strategy, limit=5, strengthen=False))
        assert old not in order, strategy  # the outdated fact never reaches Claude by default
    res = real_service.recall(ctx, query=query, limit=5, strengthen=False, include_superseded=True)
    by_id = {m["id"]: m for m in res["memories"]}
    assert by_id[old]["relevance_score"] > by_id[new]["relevance_score"]  # the old one matches better...
    order = _ids(res)
    assert order.index(new) < order.index(old)  # ...and still ranks below, saying what replaced it
    assert by_id[old]["score"] < by_id[new]["score"] and by_id[old]["superseded_by"] == new
    links = real_service.get(ctx, new)["links"]
    assert links == [{"from": new, "to": old, "relation": "supersedes"}]
    shown = real_service.get(ctx, old)  # still reachable by id
    assert shown["id"] == old


def test_forgetting_the_replacement_brings_the_old_fact_back(real_service, ctx):
    old = _store(real_service, ctx, "Deploys run from the Jenkins job deploy-prod")
    new = _store(real_service, ctx, "Deploys run from the GitHub Actions workflow deploy.yml", supersedes=old)
    assert old not in _ids(real_service.recall(ctx, query="how do deploys run", limit=5, strengthen=False))
    real_service.forget(ctx, new, reason="wrong correction")
    assert old in _ids(real_service.recall(ctx, query="how do deploys run", limit=5, strengthen=False))


def test_update_memory_can_mark_an_older_memory_superseded(real_service, ctx):
    old = _store(real_service, ctx, "Python dependencies are managed with Poetry")
    new = _store(real_service, ctx, "Dependencies moved to uv: uv add, uv sync, uv.lock is committed")
    assert old in _ids(real_service.recall(ctx, query="how are Python dependencies managed", limit=5, strengthen=False))
    res = real_service.update(ctx, new, supersedes=old)
    assert "supersedes" in res["updated_fields"]
    found = _ids(real_service.recall(ctx, query="how are Python dependencies managed", limit=5, strengthen=False))
    assert new in found and old not in found
    with pytest.raises(InvalidInput):
        real_service.update(ctx, new, supersedes=new)
    with pytest.raises(InvalidInput):  # a memory that does not exist in its scopes
        real_service.update(ctx, new, content="Dependencies moved to pip-tools", importance=0.2,
                            supersedes="memory:01J0000000000000000000000Z")
    kept = real_service.get(ctx, new)  # a refused update changes nothing, not even its other fields
    assert kept["content"].startswith("Dependencies moved to uv") and kept["importance"] == 0.5


def test_a_new_memory_close_to_an_older_one_comes_back_with_a_supersede_hint(real_service, ctx):
    old = _store(real_service, ctx, "The staging database runs PostgreSQL 14 on db-staging-1")
    res = real_service.store(ctx, content="The staging database now runs PostgreSQL 16 on db-staging-2 after the upgrade",
                             type="semantic", scope="project")
    assert res["action"] == "created"
    hint = res["possibly_supersedes"]
    assert hint["memory_id"] == old and 0.65 <= hint["similarity"] < 0.85
    assert "PostgreSQL 14" in hint["content"] and "supersedes" in hint["if_it_replaces_it"]
    unrelated = real_service.store(ctx, content="Frontend bundles are built with Vite and served by Caddy",
                                   type="semantic", scope="project")
    assert "possibly_supersedes" not in unrelated
    explicit = real_service.store(ctx, content="The staging database runs PostgreSQL 17 on db-staging-3",
                                  type="semantic", scope="project", supersedes=res["memory_id"])
    assert "possibly_supersedes" not in explicit  # Claude already said what it replaces


def test_supersession_survives_a_restart(real_service, home, ctx, real_embedder):
    old = _store(real_service, ctx, "Releases are cut from the develop branch", importance=1.0)
    new = _store(real_service, ctx, "Branching model changed", supersedes=old, importance=0.1)
    real_service.close()
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        query = "Releases are cut from the develop branch"
        assert old not in _ids(svc.recall(ctx, query=query, limit=5, strengthen=False))
        order = _ids(svc.recall(ctx, query=query, limit=5, strengthen=False, include_superseded=True))
        assert order.index(new) < order.index(old)
    finally:
        svc.close()


def test_every_recall_strengthens_what_it_returns(real_service, ctx):
    p = _store(real_service, ctx, "Migrations are written with alembic autogenerate")
    s = _store(real_service, ctx, "Alembic migration 0042 added the invoices table", scope="session", type="episodic")
    before = {m: real_service.get(ctx, m) for m in (p, s)}
    time.sleep(0.01)
    returned = _ids(real_service.recall(ctx, query="alembic migrations", limit=2))
    assert set(returned) == {p, s}
    for mid in (p, s):
        after = real_service.get(ctx, mid)
        assert after["access_count"] == before[mid]["access_count"] + 1
        assert after["last_accessed_at"] > before[mid]["last_accessed_at"]
        assert after["status"] == "active"
    real_service.recall(ctx, query="alembic migrations", limit=2)
    assert real_service.get(ctx, p)["access_count"] == 2
    # strengthen=False (used by context building) leaves them alone
    real_service.recall(ctx, query="alembic migrations", limit=2, strengthen=False)
    assert real_service.get(ctx, p)["access_count"] == 2


def test_a_recall_does_not_strengthen_memories_unrelated_to_the_query(real_service, ctx):
    vite = _store(real_service, ctx, "Frontend assets are built with vite", scope="session", importance=0.3)
    unrelated = {_store(real_service, ctx, text, scope="session", type="episodic", importance=0.2)
                 for text in ("Looked at the logs briefly", "Lunch was at noon", "The ORM is SQLAlchemy 2.0 with async sessions",
                              "The CI runs on GitHub Actions")}
    for _ in range(2):
        res = real_service.recall(ctx, query="how is the frontend built with vite")
        assert _ids(res)[0] == vite
    assert real_service.get(ctx, vite)["access_count"] == 2
    assert [real_service.get(ctx, m)["access_count"] for m in unrelated] == [0] * len(unrelated)


def test_without_embeddings_store_and_recall_degrade_and_reindex_catches_up_later(home, project, real_embedder):
    ctx = RequestContext(project, "sess-1")
    broken = MemoryService(home=home, embedder=BrokenEmbedder())
    try:
        res = broken.store(ctx, content="The deploy pipeline runs on GitHub Actions", type="procedural", scope="project")
        assert res["action"] == "created" and res["embedding_generated"] is False
        assert res["warnings"][0]["code"] == "embedding_failed" and "missing" in res["warnings"][0]["message"]
        broken.store(ctx, content="Kubernetes manifests live in deploy/k8s", type="semantic", scope="user")
        mem = broken.get(ctx, res["memory_id"])
        assert mem["has_embedding"] is False and "embedding_model" not in mem
        found = broken.recall(ctx, query="deploy pipeline")
        assert found["strategy_used"] == "keyword"
        assert found["warnings"][0]["code"] == "partial_results" and "keyword" in found["warnings"][0]["message"]
        assert found["memories"][0]["id"] == res["memory_id"]
        status = broken.status(ctx)
        assert "missing" in status["embedding"]["error"]
    finally:
        broken.close()

    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        status = svc.status(ctx)
        assert status["scopes"]["project"]["without_vectors"] == 1
        assert status["scopes"]["user"]["without_vectors"] == 1
        out = svc.reindex(ctx)
        assert out == {"reindexed": 2, "failed": 0, "model": DEFAULT_MODEL}
        status = svc.status(ctx)
        assert status["scopes"]["project"]["without_vectors"] == 0 and status["scopes"]["user"]["without_vectors"] == 0
        assert svc.get(ctx, res["memory_id"])["embedding_model"] == DEFAULT_MODEL
        vec = svc.recall(ctx, query="continuous integration workflow that ships releases", strategy="vector", limit=1)
        assert vec["strategy_used"] == "vector" and vec["warnings"] == []
        assert _ids(vec) == [res["memory_id"]]
        assert svc.reindex(ctx)["reindexed"] == 0
    finally:
        svc.close()


def test_status_counts_memories_stored_without_a_vector_immediately(home, project, real_embedder):
    ctx = RequestContext(project, "sess-1")
    broken = MemoryService(home=home, embedder=BrokenEmbedder())
    try:
        mid = broken.store(ctx, content="stored while the model is missing", type="semantic", scope="project")["memory_id"]
        assert broken.status(ctx)["scopes"]["project"]["without_vectors"] == 1
        broken.update(ctx, mid, importance=0.9)
        assert broken.status(ctx)["scopes"]["project"]["without_vectors"] == 1
        broken.forget(ctx, mid)  # reindex skips forgotten memories
        assert broken.status(ctx)["scopes"]["project"]["without_vectors"] == 0
        broken.forget(ctx, mid, undo=True)
        assert broken.status(ctx)["scopes"]["project"]["without_vectors"] == 1
    finally:
        broken.close()
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        svc.store(ctx, content="stored with the model", type="semantic", scope="project")
        assert svc.status(ctx)["scopes"]["project"]["without_vectors"] == 1
    finally:
        svc.close()


def test_the_consolidation_plan_pairs_a_changed_fact_with_the_one_it_replaces(real_service, ctx):
    old = _store(real_service, ctx, "CI runs on Jenkins: the pipeline is defined in the Jenkinsfile at the repo root", created_at="2026-01-05T10:00:00Z")
    _store(real_service, ctx, "Frontend bundles are built with Vite and served by Caddy", created_at="2026-02-01T10:00:00Z")
    new = _store(real_service, ctx, "CI moved to GitHub Actions: the pipeline is defined in .github/workflows/ci.yml")
    plan = real_service.consolidate(ctx, scope="project", dry_run=True)
    pairs = [(p["older"]["memory_id"], p["newer"]["memory_id"]) for p in plan["possible_contradictions"]]
    assert (old, new) in pairs
    pair = next(p for p in plan["possible_contradictions"] if p["newer"]["memory_id"] == new)
    assert "Jenkins" in pair["older"]["content"] and f"supersedes='{old}'" in pair["if_newer_replaces_older"]
    # acting on it (as the consolidator does) hides the old fact; the plan no longer proposes it
    real_service.update(ctx, new, supersedes=old)
    assert old not in _ids(real_service.recall(ctx, query="where is the CI pipeline defined", limit=5, strengthen=False))
    again = real_service.consolidate(ctx, scope="project", dry_run=True)["possible_contradictions"]
    assert all(p["older"]["memory_id"] != old for p in again)


def test_a_rule_restated_in_other_words_is_stored_once(real_service, ctx):
    first = real_service.store(ctx, content="Use pnpm, not npm, in this repo", type="procedural", scope="project")
    second = real_service.store(ctx, content="This repo uses pnpm, not npm: install with pnpm install", type="semantic",
                                scope="project")
    assert second["action"] == "merged" and second["memory_id"] == first["memory_id"]


def test_a_write_landing_while_the_query_embeds_is_seen_by_the_keyword_half(home, project, monkeypatch):
    """The keyword half runs on a worker while the query embeds (services/recall.py); a write that
    lands in between makes the recall search again instead of ranking on the older search."""
    import threading

    import engram_mcp.services.recall as recall_mod

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project, "sess-1")
    try:
        _store(svc, ctx, "the staging cluster runs on spot instances")
        searched = threading.Event()
        real_first = recall_mod.keyword_first
        calls: list[int] = []

        def counted(*args, **kwargs):
            calls.append(1)
            out = real_first(*args, **kwargs)
            searched.set()
            return out

        real_embed = svc.access.embed_query

        wrote: list[int] = []

        def embed_after_a_write(text, **kwargs):
            if not wrote:  # the recall's query (the store below embeds through here too)
                wrote.append(1)
                assert searched.wait(10)  # the keyword half has searched
                _store(svc, ctx, "zanzibar quokka fleet migrated on friday")
            return real_embed(text, **kwargs)

        monkeypatch.setattr(recall_mod, "keyword_first", counted)
        monkeypatch.setattr(svc.access, "embed_query", embed_after_a_write)
        got = svc.recall(ctx, query="zanzibar quokka", limit=3)
        assert len(calls) == 2  # searched again on the index the write changed
        assert got["memories"][0]["content"] == "zanzibar quokka fleet migrated on friday"
        assert got["strategy_used"] == "hybrid"
    finally:
        svc.close()
