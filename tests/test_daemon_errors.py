"""How the daemon maps failures to error envelopes (in-process, no socket)."""

from __future__ import annotations

from engram_mcp.core.errors import MemoryNotFound
from engram_mcp.services import graph
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
    res = daemon_request(
        daemon,
        "store",
        {
            "content": "Celery uses Redis",
            "type": "semantic",
            "scope": "project",
            "related_entities": [{"name": "Redis", "type": "database"}],
        },
        ctx,
    )
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

    assert daemon_request(
        daemon, "store", {"content": "Deploys go through staging first", "type": "semantic", "scope": "project"}, ctx
    )["ok"]
    fake_service.checkpoint()
    real_upsert = ScopeIndex.upsert
    broken = []

    def upsert_once_broken(self, row, vector=None):
        if not broken:
            broken.append(row["id"])
            raise RuntimeError("a bug after the commit")
        return real_upsert(self, row, vector)

    monkeypatch.setattr(ScopeIndex, "upsert", upsert_once_broken)
    res = daemon_request(
        daemon,
        "store",
        {"content": "The cache server listens on port 6380", "type": "semantic", "scope": "project"},
        ctx,
    )
    assert not res["ok"] and res["error"]["error"] == "internal_error", res
    assert broken, "the failure struck inside the index update"
    hits = daemon_request(daemon, "recall", {"query": "cache server port", "strengthen": False}, ctx)["result"][
        "memories"
    ]
    assert [m["content"] for m in hits][:1] == ["The cache server listens on port 6380"], "rebuilt from the store"

    fake_service.close()  # checkpoints what it holds now
    again = MemoryService(home=fake_service.home, embedder=FakeEmbedder())
    try:
        hits = again.recall(ctx, query="cache server port", strengthen=False)["memories"]
        assert [m["content"] for m in hits][:1] == ["The cache server listens on port 6380"]
    finally:
        again.close()


def test_a_write_failing_in_one_project_keeps_the_other_projects_indexes(daemon, fake_service, tmp_path, monkeypatch):
    """An unexpected error in project A's write drops what A's store may have missed, not
    project B's index (nor the user store's, which the write did not reach): B's next recall
    answers from the index it had, at once."""
    import time

    from engram_mcp.index.scope_index import ScopeIndex
    from engram_mcp.services.service import RequestContext

    a, b = tmp_path / "proj_a", tmp_path / "proj_b"
    for root in (a, b):
        (root / ".git").mkdir(parents=True)
    ctx_a, ctx_b = RequestContext(a, None), RequestContext(b, None)
    for i in range(300):
        fake_service.store(
            ctx_b, content=f"project b note {i} about the deploy pipeline", type="semantic", scope="project"
        )
    fake_service.store(ctx_a, content="project a keeps its cache warm", type="semantic", scope="project")
    assert daemon_request(daemon, "recall", {"query": "deploy pipeline"}, ctx_b)["ok"]
    kept_b = fake_service.access.handle(ctx_b, "project").index
    kept_user = fake_service.access.handle(ctx_b, "user").index
    before_a = fake_service.access.handle(ctx_a, "project").index
    real_upsert = ScopeIndex.upsert

    def upsert_broken_in_a(self, row, vector=None):
        if self is before_a:
            raise RuntimeError("a bug after the commit, in project a only")
        return real_upsert(self, row, vector)

    monkeypatch.setattr(ScopeIndex, "upsert", upsert_broken_in_a)
    res = daemon_request(
        daemon, "store", {"content": "project a: the port is 6380", "type": "semantic", "scope": "project"}, ctx_a
    )
    assert not res["ok"] and res["error"]["error"] == "internal_error", res
    monkeypatch.setattr(ScopeIndex, "upsert", real_upsert)

    started = time.perf_counter()
    got = daemon_request(daemon, "recall", {"query": "deploy pipeline"}, ctx_b)
    elapsed_s = time.perf_counter() - started
    assert got["ok"] and got["result"]["memories"]
    assert fake_service.access.handle(ctx_b, "project").index is kept_b, "project b's index was dropped"
    assert fake_service.access.handle(ctx_b, "user").index is kept_user, "the user store's index was dropped"
    assert elapsed_s < 0.1, elapsed_s
    assert fake_service.access.handle(ctx_a, "project").index is not before_a  # a's own index goes
    hits = daemon_request(daemon, "recall", {"query": "port 6380", "strengthen": False}, ctx_a)["result"]["memories"]
    assert hits and hits[0]["content"] == "project a: the port is 6380"
