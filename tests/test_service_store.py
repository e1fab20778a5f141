"""store / get / update / forget: the record, validation, dedup, history, redaction."""

from __future__ import annotations

import base64
from datetime import datetime

import numpy as np
import pytest

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import new_ulid
from engram_mcp.services.records import MAX_CONTENT_CHARS
from engram_mcp.services.service import RequestContext
from engram_mcp.storage import queries as q

AWS_KEY = "AKIAZ7Q3XK2LMN4PQRST"
GH_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _total(svc, ctx, scope="project") -> int:
    return svc.status(ctx)["scopes"][scope]["total"]


def _vec(mem: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(mem["embedding_b64"]), dtype="<f4")


def _raw(svc, ctx, memory_id: str, scope: str = "project") -> dict:
    return svc.handle(ctx, scope).q(q.GET_MEMORY, {"id": memory_id.split(":", 1)[1]})[0]


def svc_record(svc, ctx, memory_id: str, scope: str = "project") -> dict:
    """The record as the repository reads it (the fields left unwritten put back)."""
    return svc.handle(ctx, scope).repo.get(memory_id.split(":", 1)[1])


# ------------------------------------------------------------------ the record
def test_get_returns_every_field_of_the_memory_model(fake_service, ctx):
    res = fake_service.store(
        ctx, content="The API gateway retries idempotent requests three times", type="procedural", scope="project",
        summary="gateway retries x3", category="Error Fix", tags=["Gateway", "retries", "gateway"], importance=0.8,
        confidence=0.9, source={"tool": "Edit", "file": "gw.py"}, metadata={"ticket": "OPS-12"},
    )
    assert res["action"] == "created" and res["embedding_generated"] is True
    assert res["memory_id"].startswith("memory:") and len(res["memory_id"]) == len("memory:") + 26
    mem = fake_service.get(ctx, res["memory_id"], include_embedding=True)
    assert mem["id"] == res["memory_id"]
    assert mem["type"] == "procedural"
    assert mem["scope"] == "project"
    assert mem["content"] == "The API gateway retries idempotent requests three times"
    assert mem["summary"] == "gateway retries x3"
    assert mem["category"] == "error_fix"
    assert mem["tags"] == ["gateway", "retries"]
    assert mem["importance"] == 0.8
    assert mem["confidence"] == 0.9
    assert mem["access_count"] == 0
    assert mem["status"] == "created"
    assert mem["source"] == {"tool": "Edit", "file": "gw.py"}
    assert mem["session_id"] == "sess-1"
    assert mem["version"] == 1
    assert mem["promotion_chain"] == []
    assert mem["metadata"] == {"ticket": "OPS-12"}
    assert mem["embedding_model"] == fake_service.model_name
    assert mem["has_embedding"] is True
    vec = _vec(mem)
    # kept as int8 with a scale (core/vector_codec.py): unit length to within its rounding
    assert vec.shape == (384,) and abs(float(np.linalg.norm(vec)) - 1.0) < 5e-3
    created = datetime.fromisoformat(mem["created_at"].replace("Z", "+00:00"))
    for f in ("updated_at", "last_accessed_at"):
        assert abs((datetime.fromisoformat(mem[f].replace("Z", "+00:00")) - created).total_seconds()) < 1
    assert 0.79 <= mem["strength"] <= 0.8
    raw = _raw(fake_service, ctx, res["memory_id"])
    assert raw["embedding_dim"] == 384
    # a time equal to the creation is not written; the repository's read puts it back
    assert "status_changed_at" not in raw
    assert svc_record(fake_service, ctx, res["memory_id"])["status_changed_at"] == raw["created_at"]
    for key in ("entities", "links", "also_in"):
        assert mem[key] == []


def test_defaults_importance_half_confidence_point_seven(fake_service, ctx):
    mid = fake_service.store(ctx, content="defaults apply", type="semantic", scope="user")["memory_id"]
    mem = fake_service.get(ctx, mid)
    assert (mem["importance"], mem["confidence"], mem["scope"], mem["tags"]) == (0.5, 0.7, "user", [])


# ------------------------------------------------------------------ validation
BAD_STORES = [
    ({"type": "fact"}, "type"),
    ({"type": None}, "type"),
    ({"scope": "global"}, "scope"),
    ({"type": "working", "scope": "project"}, "type"),
    ({"type": "working", "scope": "user"}, "type"),
    ({"importance": 1.5}, "importance"),
    ({"importance": -0.1}, "importance"),
    ({"importance": "high"}, "importance"),
    ({"confidence": 2}, "confidence"),
    ({"content": ""}, "content"),
    ({"content": "   \n\t"}, "content"),
    ({"content": None}, "content"),
    ({"content": "<private>only a secret</private>"}, "content"),
    ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "content"),
    ({"summary": "s" * 501}, "summary"),
    ({"tags": "not-a-list"}, "tags"),
    ({"tags": ["t" * 65]}, "tags"),
    ({"related_entities": [{"name": "NoType"}]}, "related_entities"),
    ({"supersedes": "memory:x; DELETE memory"}, "supersedes"),
    ({"derived_from": ["memory:x; DELETE memory"]}, "derived_from"),
    ({"created_at": "yesterday"}, "created_at"),
    ({"session_id": "../../etc", "scope": "session"}, "session_id"),
]


@pytest.mark.parametrize("override,field", BAD_STORES, ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD_STORES)])
def test_invalid_store_input_raises_invalid_input_naming_the_field_and_stores_nothing(fake_service, ctx, override, field):
    args = {"content": "a perfectly fine memory", "type": "semantic", "scope": "project", **override}
    with pytest.raises(InvalidInput) as err:
        fake_service.store(ctx, **args)
    assert err.value.field == field
    assert err.value.envelope()["error"] == "invalid_input"
    assert _total(fake_service, ctx, "project") == 0
    assert _total(fake_service, ctx, "user") == 0
    assert _total(fake_service, ctx, "session") == 0


def test_working_memory_without_a_session_is_refused(fake_service, project):
    with pytest.raises(InvalidInput) as err:
        fake_service.store(RequestContext(project), content="scratch", type="working", scope="session")
    assert err.value.field == "scope"


def test_supersedes_an_unknown_memory_raises_and_stores_nothing(fake_service, ctx):
    with pytest.raises(InvalidInput) as err:
        fake_service.store(ctx, content="the new truth", type="semantic", scope="project", supersedes=f"memory:{new_ulid()}")
    assert err.value.field == "supersedes"
    assert _total(fake_service, ctx) == 0


def test_a_store_that_merges_still_records_what_it_supersedes(fake_service, ctx):
    old = fake_service.store(ctx, content="The API listens on port 8080", type="semantic", scope="project")["memory_id"]
    twin = fake_service.store(ctx, content="The API server listens on port 9090", type="semantic", scope="project")["memory_id"]
    res = fake_service.store(ctx, content="The API server listens on port 9090", type="semantic", scope="project", supersedes=old)
    assert res["action"] == "merged" and res["memory_id"] == twin
    assert fake_service.get(ctx, twin)["links"] == [{"from": twin, "to": old, "relation": "supersedes"}]


BAD_IDS = ["memory:x; DELETE memory", "x; DELETE memory", "memory:01ABC", "", "memory:⟨x⟩; REMOVE TABLE memory", None, 42,
           "memory:" + "0" * 25 + "'"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=[repr(b) for b in BAD_IDS])
def test_malformed_memory_ids_are_rejected_before_reaching_the_database(fake_service, ctx, bad):
    mid = fake_service.store(ctx, content="survives injection attempts", type="semantic", scope="project")["memory_id"]
    good = mid
    calls = [
        lambda: fake_service.get(ctx, bad),
        lambda: fake_service.update(ctx, bad, content="changed"),
        lambda: fake_service.forget(ctx, bad),
        lambda: fake_service.tag(ctx, bad, add=["x"]),
        lambda: fake_service.link(ctx, bad, good, "similar_to"),
        lambda: fake_service.promote(ctx, bad, "user"),
    ]
    for call in calls:
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == "memory_id"
    with pytest.raises(InvalidInput) as err:
        fake_service.link(ctx, good, bad, "similar_to")
    assert err.value.field == "to_id"
    assert fake_service.get(ctx, good)["content"] == "survives injection attempts"
    assert _total(fake_service, ctx) == 1


def test_invalid_update_input_names_the_field_and_changes_nothing(fake_service, ctx):
    mid = fake_service.store(ctx, content="stable memory", type="semantic", scope="project")["memory_id"]
    for kwargs, field in [({"importance": 1.5}, "importance"), ({"content": ""}, "content"), ({"memory_type": "fact"}, "memory_type"),
                          ({"memory_type": "working"}, "memory_type"), ({"content": "y" * (MAX_CONTENT_CHARS + 1)}, "content"),
                          ({"tags": {"add": "x"}}, "tags.add")]:
        with pytest.raises(InvalidInput) as err:
            fake_service.update(ctx, mid, **kwargs)
        assert err.value.field == field, kwargs
    mem = fake_service.get(ctx, mid, history=True)
    assert (mem["content"], mem["version"], mem["history"], mem["type"]) == ("stable memory", 1, [], "semantic")


# ------------------------------------------------------------------ dedup
@pytest.mark.slow
def test_storing_a_paraphrase_merges_into_the_existing_memory(real_service, ctx):
    first = real_service.store(ctx, content="The project uses PostgreSQL 16 as its database", type="semantic", scope="project",
                               importance=0.4, tags=["db"])
    again = real_service.store(ctx, content="This project's database is PostgreSQL version 16", type="semantic", scope="project",
                               importance=0.9, tags=["postgres", "db"])
    assert again["action"] == "merged"
    assert again["memory_id"] == first["memory_id"]
    assert again["similarity"] >= 0.85
    mem = real_service.get(ctx, first["memory_id"], history=True)
    assert mem["content"] == "The project uses PostgreSQL 16 as its database"
    assert mem["tags"] == ["db", "postgres"]
    assert mem["importance"] == 0.9
    assert mem["access_count"] == 1
    merges = mem["metadata"]["merged"]
    assert len(merges) == 1
    assert merges[0]["content"] == "This project's database is PostgreSQL version 16"
    assert merges[0]["similarity"] >= 0.85 and merges[0]["session_id"] == "sess-1"
    assert [h["change"] for h in mem["history"]] == ["merge"]
    assert _total(real_service, ctx) == 1

    # a lower importance never lowers the kept one
    third = real_service.store(ctx, content="The project's database is PostgreSQL 16", type="semantic", scope="project", importance=0.1)
    assert third["action"] == "merged"
    mem = real_service.get(ctx, first["memory_id"])
    assert mem["importance"] == 0.9 and mem["access_count"] == 2 and len(mem["metadata"]["merged"]) == 2

    other = real_service.store(ctx, content="Deploy to production with cdk deploy --all from the infra directory", type="procedural", scope="project")
    assert other["action"] == "created"
    assert other["memory_id"] != first["memory_id"]
    assert _total(real_service, ctx) == 2


@pytest.mark.slow
def test_dedup_stays_within_one_scope_and_can_be_disabled(real_service, ctx):
    a = real_service.store(ctx, content="Run the tests with pytest -q from the repository root", type="procedural", scope="project")
    b = real_service.store(ctx, content="Run the tests with pytest -q from the repository root", type="procedural", scope="user")
    c = real_service.store(ctx, content="Run the tests with pytest -q from the repository root", type="procedural", scope="project", dedup=False)
    assert a["action"] == b["action"] == c["action"] == "created"
    assert len({a["memory_id"], b["memory_id"], c["memory_id"]}) == 3


# ------------------------------------------------------------------ history
def test_every_update_keeps_the_previous_version_in_history(fake_service, ctx):
    mid = fake_service.store(ctx, content="The cache lives in redis", type="semantic", scope="project", importance=0.5, tags=["cache"])["memory_id"]
    v1 = fake_service.get(ctx, mid, include_embedding=True)
    r = fake_service.update(ctx, mid, content="The cache lives in memcached since March")
    assert r["re_embedded"] is True and r["version"] == 2 and "content" in r["updated_fields"]
    v2 = fake_service.get(ctx, mid, include_embedding=True)
    assert not np.allclose(_vec(v1), _vec(v2))
    fake_service.update(ctx, mid, importance=0.9, tags={"add": ["memcached"], "remove": ["cache"]})
    fake_service.update(ctx, mid, summary="cache = memcached", metadata={"owner": "ops"}, category="decision")
    mem = fake_service.get(ctx, mid, history=True, include_embedding=True)
    assert mem["version"] == 4
    assert mem["importance"] == 0.9 and mem["tags"] == ["memcached"] and mem["summary"] == "cache = memcached"
    assert mem["metadata"] == {"owner": "ops"} and mem["category"] == "decision"
    hist = mem["history"]
    assert [h["version"] for h in hist] == [1, 2, 3]
    assert [h["change"] for h in hist] == ["update"] * 3
    assert hist[0]["snapshot"]["content"] == "The cache lives in redis"
    assert hist[0]["snapshot"]["tags"] == ["cache"]
    assert hist[1]["snapshot"]["content"] == "The cache lives in memcached since March"
    assert hist[1]["snapshot"]["importance"] == 0.5
    assert hist[2]["snapshot"]["importance"] == 0.9 and hist[2]["snapshot"].get("summary") is None
    assert all("embedding" not in h["snapshot"] for h in hist)
    # a metadata-only update does not re-embed
    assert np.allclose(_vec(v2), _vec(mem))


def test_update_of_content_is_searchable_by_the_new_text_only(fake_service, ctx):
    mid = fake_service.store(ctx, content="Service zebrafoo listens on port 8080", type="semantic", scope="project")["memory_id"]
    fake_service.update(ctx, mid, content="Service quokkabar listens on port 9090")
    assert [m["id"] for m in fake_service.recall(ctx, query="quokkabar", strategy="keyword")["memories"]] == [mid]
    assert fake_service.recall(ctx, query="zebrafoo", strategy="keyword")["memories"] == []


# ------------------------------------------------------------------ forget
def test_forget_excludes_from_recall_include_forgotten_finds_it_and_undo_restores(fake_service, ctx):
    mid = fake_service.store(ctx, content="The staging database password rotates weekly", type="semantic", scope="project")["memory_id"]
    fake_service.recall(ctx, query="staging database rotates")  # -> active
    res = fake_service.forget(ctx, mid, reason="outdated")
    assert res["status"] == "forgotten" and res["undo_hint"]
    assert fake_service.recall(ctx, query="staging database rotates")["memories"] == []
    found = fake_service.recall(ctx, query="staging database rotates", include_forgotten=True, strengthen=False)["memories"]
    assert [m["id"] for m in found] == [mid]
    assert found[0]["status"] == "forgotten" and found[0]["forget_reason"] == "outdated"
    assert found[0]["content"] == "The staging database password rotates weekly"  # soft delete keeps content until purge
    fake_service.forget(ctx, mid, undo=True)
    mem = fake_service.get(ctx, mid, history=True)
    assert mem["status"] == "active"
    assert "prior_status" not in mem["metadata"]
    assert [h["change"] for h in mem["history"]] == ["forget", "restore"]
    assert [m["id"] for m in fake_service.recall(ctx, query="staging database rotates")["memories"]] == [mid]


# ------------------------------------------------------------------ redaction
def test_secrets_are_redacted_at_store_and_update(fake_service, ctx):
    res = fake_service.store(
        ctx, content=f"The CI uses access key {AWS_KEY} for uploads", summary=f"key {AWS_KEY}", type="semantic", scope="project",
        metadata={"env": f"AWS_ACCESS_KEY_ID={AWS_KEY}"}, source={"command": f"aws configure set key {AWS_KEY}"},
    )
    assert res["redactions"].get("aws-access-key", 0) >= 4
    mem = fake_service.get(ctx, res["memory_id"], history=True)
    assert mem["content"] == "The CI uses access key [REDACTED:aws-access-key] for uploads"
    assert mem["summary"] == "key [REDACTED:aws-access-key]"
    raw = _raw(fake_service, ctx, res["memory_id"])
    assert AWS_KEY not in repr(raw)

    upd = fake_service.update(ctx, res["memory_id"], content=f"Rotated: the new key is {GH_TOKEN} and {AWS_KEY}",
                              metadata={"note": f"token {GH_TOKEN}"})
    assert upd["redactions"].get("aws-access-key") == 1 and upd["redactions"].get("github-token") == 2
    mem = fake_service.get(ctx, res["memory_id"], history=True)
    assert mem["content"] == "Rotated: the new key is [REDACTED:github-token] and [REDACTED:aws-access-key]"
    everything = repr(_raw(fake_service, ctx, res["memory_id"])) + repr(mem)
    assert AWS_KEY not in everything and GH_TOKEN not in everything
    assert fake_service.recall(ctx, query=AWS_KEY, strategy="keyword", include_forgotten=True)["memories"] == []


def test_private_spans_are_never_stored(fake_service, ctx):
    res = fake_service.store(ctx, content="Deploy key is <private>hunter2-zzq</private>; rotate monthly", type="semantic",
                             scope="session", metadata={"x": "<private>hunter2-zzq</private>"})
    mem = fake_service.get(ctx, res["memory_id"])
    assert mem["content"] == "Deploy key is [private]; rotate monthly"
    fake_service.update(ctx, res["memory_id"], content="Now it is <PRIVATE>\nhunter3-zzq\n</private> on a card")
    mem = fake_service.get(ctx, res["memory_id"], history=True)
    assert mem["content"] == "Now it is [private] on a card"
    dump = repr(_raw(fake_service, ctx, res["memory_id"], "session")) + repr(mem)
    assert "hunter2" not in dump and "hunter3" not in dump
    assert fake_service.recall(ctx, query="hunter2-zzq hunter3-zzq", strategy="keyword")["memories"] == []


def test_secrets_in_tags_category_and_entity_names_are_redacted_too(fake_service, ctx):
    res = fake_service.store(ctx, content="uploads use a token", type="semantic", scope="project", tags=[GH_TOKEN], category=GH_TOKEN,
                             related_entities=[{"name": GH_TOKEN, "type": "credential"}])
    mid = res["memory_id"]
    fake_service.update(ctx, mid, tags={"add": [f"tok {GH_TOKEN}"]}, related_entities={"add": [{"name": f"t {GH_TOKEN}", "type": "x"}]})
    dump = repr(_raw(fake_service, ctx, mid)) + repr(fake_service.get(ctx, mid, history=True))
    dump += repr(fake_service.handle(ctx, "project").q("SELECT * FROM entity"))
    assert GH_TOKEN.lower() not in dump.lower()


def test_update_validates_and_redacts_the_category_like_store_does(fake_service, ctx):
    mid = fake_service.store(ctx, content="uploads use a token", type="semantic", scope="project")["memory_id"]
    with pytest.raises(InvalidInput) as err:
        fake_service.update(ctx, mid, category=123)
    assert err.value.field == "category"
    with pytest.raises(InvalidInput):
        fake_service.update(ctx, mid, category="c" * 65)
    fake_service.update(ctx, mid, category=GH_TOKEN)
    assert GH_TOKEN.lower() not in repr(_raw(fake_service, ctx, mid)).lower()


def test_an_update_or_tag_that_changes_nothing_writes_no_version_and_no_history(fake_service, ctx):
    mid = fake_service.store(ctx, content="CI runs on every push", type="semantic", scope="project", importance=0.6,
                             tags=["ci"], category="fact", metadata={"origin": "x"})["memory_id"]
    same = [
        {"content": "CI runs on every push"}, {"importance": 0.6}, {"category": "Fact"}, {"tags": {"add": ["ci"]}},
        {"tags": {"remove": ["absent"]}}, {"metadata": {"origin": "x"}}, {"metadata": {"gone": None}},
    ]
    for change in same:
        res = fake_service.update(ctx, mid, **change)
        assert res["updated_fields"] == [] and res["version"] == 1 and res["re_embedded"] is False, change
    fake_service.tag(ctx, mid, add=["CI"])
    mem = fake_service.get(ctx, mid, history=True)
    assert mem["version"] == 1 and mem["history"] == []
    res = fake_service.update(ctx, mid, importance=0.7, tags={"add": ["ci"]})
    assert res["updated_fields"] == ["importance"] and res["version"] == 2
    assert len(fake_service.get(ctx, mid, history=True)["history"]) == 1


def test_a_short_id_names_one_memory_and_an_ambiguous_one_is_refused(fake_service, ctx):
    from engram_mcp.core.errors import InvalidInput, MemoryNotFound

    a = fake_service.store(ctx, content="Deploys go through Nomad", type="semantic", scope="project",
                           request_id="01J000000000000000A0QBCDEF")["memory_id"]
    fake_service.store(ctx, content="The CI runs on GitHub Actions", type="semantic", scope="user",
                       request_id="01J000000000000000A1QBCDEF")
    assert fake_service.get(ctx, "0QBCDEF")["id"] == a  # unique among the caller's scopes, any case
    assert fake_service.get(ctx, "memory:0qbcdef")["id"] == a
    with pytest.raises(InvalidInput, match="matches 2 memories"):
        fake_service.get(ctx, "QBCDEF")
    with pytest.raises(MemoryNotFound, match="engram list"):
        fake_service.get(ctx, "ZZZZZZZZ")
    with pytest.raises(InvalidInput):  # five characters are not an id at all
        fake_service.get(ctx, "BCDEF")
