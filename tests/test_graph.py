"""The knowledge graph: entities, mentions, entity -> entity edges, traversal."""

from __future__ import annotations

import pytest
from engram_mcp.core.errors import InvalidInput
from engram_mcp.index.scope_index import record_key
from engram_mcp.storage import queries as q


def _store(svc, ctx, content, entities, scope="project"):
    return svc.store(ctx, content=content, type="semantic", scope=scope, related_entities=entities, dedup=False)


def _names(res) -> dict[str, int]:
    return {e["name"]: e["hops"] for e in res["entities"]}


def test_related_entities_create_entities_and_mentions(fake_service, ctx):
    res = _store(fake_service, ctx, "The AuthService validates JWTs with PyJWT",
                 [{"name": "AuthService", "type": "Service", "relationship": "describes"}, {"name": "PyJWT", "type": "library"}])
    assert res["graph_edges_created"] == 2
    mem = fake_service.get(ctx, res["memory_id"])
    assert sorted(mem["entities"], key=lambda e: e["name"]) == [
        {"name": "AuthService", "entity_type": "service", "relationship": "describes"},
        {"name": "PyJWT", "entity_type": "library", "relationship": "mentions"},
    ]
    h = fake_service.handle(ctx, "project")
    ents = {e["name"]: e for e in h.q(q.ALL_ENTITIES)}
    assert set(ents) == {"AuthService", "PyJWT"} and ents["AuthService"]["mention_count"] == 1
    # a second memory about the same entity (any case) reuses the node and counts the mention
    res2 = _store(fake_service, ctx, "authservice caches keys for an hour", [{"name": "authservice", "type": "service"}])
    ents = {e["name"].casefold(): e for e in h.q(q.ALL_ENTITIES)}
    assert len(ents) == 2 and ents["authservice"]["mention_count"] == 2
    mentions = h.q(q.ALL_MENTIONS)
    assert len(mentions) == 3
    assert {record_key({"id": m["in"]}) for m in mentions} == {res["memory_id"][7:], res2["memory_id"][7:]}
    status = fake_service.status(ctx)["scopes"]["project"]
    assert status["entities"] == 2 and status["relationships"] == 0


def test_a_target_creates_an_entity_to_entity_edge_with_evidence(fake_service, ctx):
    res = _store(fake_service, ctx, "AuthService depends on TokenValidator for signature checks",
                 [{"name": "AuthService", "type": "service", "relationship": "depends_on", "target": "TokenValidator"}])
    assert res["graph_edges_created"] == 2  # the mention and the edge
    h = fake_service.handle(ctx, "project")
    rels = h.q(q.ALL_RELATIONS)
    assert len(rels) == 1
    names = {record_key(e): e["name"] for e in h.q(q.ALL_ENTITIES)}
    edge = rels[0]
    assert (names[record_key({"id": edge["in"]})], names[record_key({"id": edge["out"]})], edge["relation_type"]) == (
        "AuthService", "TokenValidator", "depends_on")
    assert rels[0]["evidence"] == [res["memory_id"]]
    # the same edge again only adds evidence and weight
    res2 = _store(fake_service, ctx, "AuthService still depends on TokenValidator",
                  [{"name": "AuthService", "type": "service", "relationship": "depends_on", "target": "TokenValidator"}])
    rels = h.q(q.ALL_RELATIONS)
    assert len(rels) == 1 and rels[0]["evidence"] == [res["memory_id"], res2["memory_id"]]
    assert rels[0]["weight"] == pytest.approx(0.6)


@pytest.fixture
def chain(fake_service, ctx):
    """Alpha -depends_on-> Beta -depends_on-> Gamma -calls-> Delta, each with a memory."""
    mems = {}
    for name in ("Beta", "Gamma", "Delta"):
        mems[name] = _store(fake_service, ctx, f"{name} notes", [{"name": name, "type": "service"}])["memory_id"]
    for a, rel, b in (("Alpha", "depends_on", "Beta"), ("Beta", "depends_on", "Gamma"), ("Gamma", "calls", "Delta")):
        mid = _store(fake_service, ctx, f"{a} {rel} {b}", [{"name": a, "type": "service", "relationship": rel, "target": b}])["memory_id"]
        mems.setdefault(a, mid)
    return mems


def test_traversal_follows_depth_and_direction(fake_service, ctx, chain):
    def walk(entity, depth, direction="both", **kw):
        return fake_service.graph_search(ctx, entity=entity, depth=depth, direction=direction, include_memories=False, **kw)

    assert _names(walk("Alpha", 1, "outgoing")) == {"Alpha": 0, "Beta": 1}
    assert _names(walk("Alpha", 2, "outgoing")) == {"Alpha": 0, "Beta": 1, "Gamma": 2}
    res = walk("Alpha", 3, "outgoing")
    assert _names(res) == {"Alpha": 0, "Beta": 1, "Gamma": 2, "Delta": 3}
    assert res["graph_stats"]["depth_reached"] == 3 and res["graph_stats"]["relationships_found"] == 3
    assert _names(walk("Alpha", 3, "incoming")) == {"Alpha": 0}
    assert _names(walk("Delta", 1, "incoming")) == {"Delta": 0, "Gamma": 1}
    assert _names(walk("Delta", 3, "incoming")) == {"Delta": 0, "Gamma": 1, "Beta": 2, "Alpha": 3}
    assert _names(walk("Delta", 3, "outgoing")) == {"Delta": 0}
    assert _names(walk("Beta", 1, "both")) == {"Beta": 0, "Alpha": 1, "Gamma": 1}
    assert _names(walk("Beta", 2, "both")) == {"Beta": 0, "Alpha": 1, "Gamma": 1, "Delta": 2}
    beta = next(e for e in walk("Beta", 1)["entities"] if e["name"] == "Beta")
    assert sorted((r["type"], r["target"], r["direction"]) for r in beta["relationships"]) == [
        ("depends_on", "Alpha", "incoming"), ("depends_on", "Gamma", "outgoing")]


def test_traversal_can_be_limited_to_one_relationship_type(fake_service, ctx, chain):
    res = fake_service.graph_search(ctx, entity="Alpha", depth=3, direction="outgoing", relationship_type="depends_on", include_memories=False)
    assert _names(res) == {"Alpha": 0, "Beta": 1, "Gamma": 2}
    res = fake_service.graph_search(ctx, entity="Gamma", depth=3, relationship_type="calls", include_memories=False)
    assert _names(res) == {"Gamma": 0, "Delta": 1}


def test_include_memories_attaches_the_linked_memories(fake_service, ctx, chain):
    res = fake_service.graph_search(ctx, entity="Beta", depth=1, direction="outgoing")
    got = {m["id"]: m["linked_entities"] for m in res["memories"]}
    assert chain["Beta"] in got and chain["Gamma"] in got
    assert got[chain["Gamma"]] == ["Gamma"]
    assert chain["Delta"] not in got
    counts = {e["name"]: e["memory_count"] for e in res["entities"]}
    assert counts["Beta"] == 2  # "Beta notes" + "Beta depends_on Gamma"
    assert fake_service.graph_search(ctx, entity="Beta", depth=1, include_memories=False)["memories"] == []
    # forgotten memories are not attached
    fake_service.forget(ctx, chain["Gamma"])
    res = fake_service.graph_search(ctx, entity="Beta", depth=1, direction="outgoing")
    assert chain["Gamma"] not in {m["id"] for m in res["memories"]}


def test_without_an_entity_the_busiest_entities_are_listed(fake_service, ctx, chain):
    res = fake_service.graph_search(ctx, depth=1, include_memories=False)
    assert {"Alpha", "Beta", "Gamma", "Delta"} <= set(_names(res))


def test_graph_search_validates_its_arguments(fake_service, ctx):
    for kwargs, field in [({"depth": 4}, "depth"), ({"depth": 0}, "depth"), ({"direction": "up"}, "direction"), ({"limit": 0}, "limit")]:
        with pytest.raises(InvalidInput) as err:
            fake_service.graph_search(ctx, entity="x", **kwargs)
        assert err.value.field == field


def test_update_adds_and_removes_related_entities(fake_service, ctx):
    mid = _store(fake_service, ctx, "The worker uses Celery and Redis", [{"name": "Celery", "type": "library"}])["memory_id"]
    res = fake_service.update(ctx, mid, related_entities={"add": [{"name": "Redis", "type": "database", "relationship": "uses"}]})
    assert "related_entities" in res["updated_fields"]
    assert {e["name"] for e in fake_service.get(ctx, mid)["entities"]} == {"Celery", "Redis"}
    fake_service.update(ctx, mid, related_entities={"remove": ["celery"]})
    assert [e["name"] for e in fake_service.get(ctx, mid)["entities"]] == ["Redis"]
    res = fake_service.graph_search(ctx, entity="Celery", depth=1)
    assert res["memories"] == []
    with pytest.raises(InvalidInput):
        fake_service.update(ctx, mid, related_entities={"remove": "Redis"})


def test_the_graph_of_each_scope_is_separate(fake_service, ctx):
    _store(fake_service, ctx, "I like the Django ORM", [{"name": "Django", "type": "framework"}], scope="user")
    _store(fake_service, ctx, "This project pins Django 5.1", [{"name": "Django", "type": "framework"}])
    res = fake_service.graph_search(ctx, entity="Django", depth=1)
    assert sorted(e["scope"] for e in res["entities"]) == ["project", "user"]
    assert len(res["memories"]) == 2


def test_a_target_and_a_later_mention_of_it_are_one_entity(fake_service, ctx):
    _store(fake_service, ctx, "Alpha depends on Beta", [{"name": "Alpha", "type": "service", "relationship": "depends_on", "target": "Beta"}])
    beta = _store(fake_service, ctx, "Beta is the billing backend", [{"name": "Beta", "type": "service"}])["memory_id"]
    res = fake_service.graph_search(ctx, entity="Alpha", depth=1, direction="outgoing")
    assert beta in {m["id"] for m in res["memories"]}
    assert [e["name"] for e in fake_service.handle(ctx, "project").q(q.ALL_ENTITIES)].count("Beta") == 1


def test_a_store_from_before_one_node_per_name_stays_readable_and_converges(home, project, ctx):
    """Schema v2 keyed entities by (name, type): 'Beta' could be two nodes. After the v3
    migration both are still found by name, and new links go to the typed one."""
    from tests.fakes import FakeEmbedder
    from engram_mcp.core.ids import entity_key
    from engram_mcp.core.paths import project_dir, project_id
    from engram_mcp.services.service import MemoryService
    from engram_mcp.storage.schema import MIGRATIONS
    from engram_mcp.storage.store import SurrealStore
    from tests.conftest import install_before_store_marks

    ns, db = "project", project_id(project)
    install_before_store_marks(home)  # an old store, from an old install
    store = SurrealStore(project_dir(project), label="project").open()
    try:
        store.ensure_schema(ns, db, migrations=MIGRATIONS[:2])
        for etype, count in (("concept", 0), ("service", 3)):
            store.query(ns, db, q.UPSERT_ENTITY, {"key": entity_key("Beta", etype), "name": "Beta", "entity_type": etype,
                                                  "mentions": count, "description": None})
    finally:
        store.close()
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        mid = _store(svc, ctx, "beta bills monthly", [{"name": "beta", "type": "service"}])["memory_id"]
        h = svc.handle(ctx, "project")
        ents = {record_key(e): e for e in h.q(q.ALL_ENTITIES)}
        assert len(ents) == 2 and all(e["name_key"] == "beta" for e in ents.values())
        assert ents[entity_key("Beta", "service")]["mention_count"] == 4  # the typed, busiest node got the mention
        assert mid in {m["id"] for m in svc.graph_search(ctx, entity="BETA")["memories"]}
        # the same memory naming it again is not a new mention
        svc.update(ctx, mid, related_entities={"add": [{"name": "Beta", "type": "service"}]})
        assert {record_key(e): e for e in h.q(q.ALL_ENTITIES)}[entity_key("Beta", "service")]["mention_count"] == 4
    finally:
        svc.close()
