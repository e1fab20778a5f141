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
