"""How the daemon maps failures to error envelopes (in-process, no socket)."""

from __future__ import annotations

from engram_mcp.services import graph
from engram_mcp.core.errors import MemoryNotFound
from tests.daemon_env import daemon_request


def test_a_bad_argument_name_is_invalid_input(daemon, ctx):
    res = daemon_request(daemon, "recall", {"query": "x", "colour": "red"}, ctx)
    assert res["error"]["error"] == "invalid_input" and "colour" in res["error"]["message"]
    res = daemon_request(daemon, "graph", {"entity": "x", "colour": "red"}, ctx)  # a bound operation (service lambda)
    assert res["error"]["error"] == "invalid_input"


def test_a_type_error_inside_the_engine_is_an_internal_error_not_the_callers_fault(daemon, ctx, monkeypatch):
    def broken(*_a, **_k):
        raise TypeError("link_entities() got an unexpected keyword argument 'weight'")  # a bug, worded like bad input

    monkeypatch.setattr(graph, "link_entities", broken)
    res = daemon_request(daemon, "store", {"content": "Celery uses Redis", "type": "semantic", "scope": "project",
                                  "related_entities": [{"name": "Redis", "type": "database"}]}, ctx)
    assert res["ok"] is False
    assert res["error"]["error"] == "internal_error" and res["error"]["retry_possible"] is True


def test_an_op_that_is_not_a_name_is_invalid_input(daemon, ctx):
    """A list or an object as the op is the caller's mistake (it was an internal_error: unhashable)."""
    for op in ([], {"name": "recall"}, 5, None):
        res = daemon_request(daemon, op, {}, ctx)
        assert res["ok"] is False
        assert res["error"]["error"] == "invalid_input" and res["error"]["retry_possible"] is False, op
        assert "unknown operation" in res["error"]["message"]


def test_not_found_names_the_memory_id_field(daemon, fake_service, ctx):
    res = daemon_request(daemon, "get", {"memory_id": "memory:01JAAAAAAAAAAAAAAAAAAAAAAA"}, ctx)
    assert res["error"]["error"] == "not_found" and res["error"]["field"] == "memory_id"
    assert MemoryNotFound("gone").envelope()["field"] == "memory_id"


def test_a_write_that_fails_after_its_commit_leaves_no_index_that_misses_it(daemon, fake_service, ctx, monkeypatch):
    """A bug between a store's commit and the index update: the index is dropped, so recall finds
    the memory (rebuilt from the store) and no file written later is trusted without it."""
    from engram_mcp.index.scope_index import ScopeIndex
    from engram_mcp.services.service import MemoryService
    from tests.fakes import FakeEmbedder

    assert daemon_request(daemon, "store", {"content": "Deploys go through staging first", "type": "semantic", "scope": "project"}, ctx)["ok"]
    fake_service.checkpoint()
    real_upsert = ScopeIndex.upsert
    broken = []

    def upsert_once_broken(self, row, vector=None):
        if not broken:
            broken.append(row["id"])
            raise RuntimeError("a bug after the commit")
        return real_upsert(self, row, vector)

    monkeypatch.setattr(ScopeIndex, "upsert", upsert_once_broken)
    res = daemon_request(daemon, "store", {"content": "The cache server listens on port 6380", "type": "semantic", "scope": "project"}, ctx)
    assert not res["ok"] and res["error"]["error"] == "internal_error", res
    assert broken, "the failure struck inside the index update"
    hits = daemon_request(daemon, "recall", {"query": "cache server port", "strengthen": False}, ctx)["result"]["memories"]
    assert [m["content"] for m in hits][:1] == ["The cache server listens on port 6380"], "rebuilt from the store"

    fake_service.close()  # checkpoints what it holds now
    again = MemoryService(home=fake_service.home, embedder=FakeEmbedder())
    try:
        hits = again.recall(ctx, query="cache server port", strengthen=False)["memories"]
        assert [m["content"] for m in hits][:1] == ["The cache server listens on port 6380"]
    finally:
        again.close()
