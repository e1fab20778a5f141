"""Export / import / reindex: lossless JSONL round trips."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from engram_mcp.embeddings import FakeEmbedder
from engram_mcp.errors import InvalidInput
from engram_mcp.ids import new_ulid
from engram_mcp.scope_index import record_key
from engram_mcp.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q


def _project(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    (p / ".git").mkdir(parents=True)
    return p


def _populate(svc: MemoryService, ctx: RequestContext) -> list[str]:
    """Memories in both scopes with history, entities, relations, links, forgets, promotion."""
    ids = []
    a = svc.store(ctx, content="AuthService depends on TokenValidator", type="semantic", scope="project", tags=["auth"],
                  category="architecture", importance=0.8, source={"tool": "Edit"}, metadata={"ticket": "SEC-1"},
                  related_entities=[{"name": "AuthService", "type": "service", "relationship": "depends_on", "target": "TokenValidator"}])["memory_id"]
    ids.append(a)
    svc.update(ctx, a, content="AuthService depends on TokenValidator and KeyCache", tags={"add": ["cache"]})
    svc.update(ctx, a, importance=0.9, summary="auth deps")
    b = svc.store(ctx, content="Token lifetimes are 15 minutes", type="semantic", scope="project", supersedes=a,
                  related_entities=[{"name": "TokenValidator", "type": "class"}])["memory_id"]
    ids.append(b)
    c = svc.store(ctx, content="Run make test before pushing", type="procedural", scope="project", importance=0.7)["memory_id"]
    ids.append(c)
    svc.link(ctx, c, b, "similar_to", strength=0.3)
    d = svc.store(ctx, content="An aside that was forgotten", type="episodic", scope="project")["memory_id"]
    svc.forget(ctx, d, reason="noise")
    ids.append(d)
    e = svc.store(ctx, content="I prefer small pull requests", type="procedural", scope="user", importance=0.9,
                  related_entities=[{"name": "GitHub", "type": "tool"}])["memory_id"]
    ids.append(e)
    f = svc.store(ctx, content="Promoted from a session: use uv for Python envs", type="procedural", scope="session", importance=0.9)["memory_id"]
    svc.promote(ctx, f, "project")
    svc.promote(RequestContext(ctx.project_root), f, "user")
    ids.append(f)
    svc.recall(ctx, query="auth tokens")  # access counts, statuses, recall_sessions
    return ids


def _snapshot(svc: MemoryService, ctx: RequestContext, ids: list[str]) -> dict:
    """Every copy of every memory: the project copy as `get` shows it (history, entities, links,
    also_in, vector), the user copy from its own row and history."""
    from engram_mcp.records import jsonable, public_memory

    out = {}
    pctx = RequestContext(ctx.project_root)  # no session: project copies first
    project_keys = {record_key(r) for r in svc.handle(ctx, "project").q(q.ALL_MEMORIES)}
    user = svc.handle(ctx, "user")
    for mid in ids:
        if mid[7:] in project_keys:
            mem = svc.get(pctx, mid, history=True, include_embedding=True)
            mem.pop("strength")  # computed at read time
            out[("project", mid)] = mem
        rows = user.q(q.GET_MEMORY, {"id": mid[7:]})
        if rows:
            mem = public_memory(rows[0], include_embedding=True)
            mem.pop("strength")
            mem["history"] = jsonable(user.q(q.HISTORY_OF, {"memory": rows[0]["id"]}))
            for h in mem["history"]:
                h.pop("id")
            out[("user", mid)] = mem
    return out


def _graph(svc: MemoryService, ctx: RequestContext) -> dict:
    out = {}
    for scope in ("project", "user"):
        h = svc.handle(ctx, scope)
        out[scope] = {
            "entities": sorted((record_key(e), e["name"], e["entity_type"], e["mention_count"], e["description"]) for e in h.q(q.ALL_ENTITIES)),
            "mentions": sorted((record_key({"id": m["in"]}), record_key({"id": m["out"]}), m["relationship"]) for m in h.q(q.ALL_MENTIONS)),
            "relations": sorted((record_key({"id": r["in"]}), record_key({"id": r["out"]}), r["relation_type"], r["weight"], tuple(r["evidence"]))
                                for r in h.q(q.ALL_RELATIONS)),
            "links": sorted((record_key({"id": l["in"]}), record_key({"id": l["out"]}), l["relation_type"], l["strength"]) for l in h.q(q.ALL_LINKS)),
            "history": len(h.q(q.ALL_HISTORY)),
        }
    return out


@pytest.fixture
def exported(fake_service, ctx, tmp_path):
    ids = _populate(fake_service, ctx)
    path = tmp_path / "out" / "engram.jsonl"
    res = fake_service.export(ctx, path)
    return fake_service, ids, path, res


@pytest.fixture
def target(tmp_path):
    home = tmp_path / "home2"
    home.mkdir()
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    yield svc, RequestContext(_project(tmp_path, "proj2"), "sess-2")
    svc.close()


def test_export_writes_a_private_jsonl_file_with_a_header(exported):
    _svc, ids, path, res = exported
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["kind"] == "header" and header["format"] == "engram-export" and header["scopes"] == ["project", "user"]
    kinds = [json.loads(l)["kind"] for l in lines[1:]]
    assert res["counts"] == {k: kinds.count(k) for k in ("memory", "history", "entity", "mention", "relation", "link")}
    assert res["counts"]["memory"] == 7  # 5 project (incl. the promoted one) + 2 user


def test_export_then_import_into_a_fresh_home_is_lossless(exported, target, ctx):
    src, ids, path, res = exported
    dst, dctx = target
    sctx = RequestContext(ctx.project_root)
    before_mem, before_graph = _snapshot(src, sctx, ids), _graph(src, sctx)
    out = dst.import_(dctx, path)
    assert out["counts"]["memory"] == res["counts"]["memory"] and out["counts"]["skipped"] == 0
    assert out["counts"]["embedded"] == 0  # same model: vectors travel along
    for kind in ("history", "entity", "mention", "relation", "link"):
        assert out["counts"][kind] == res["counts"][kind], kind
    after_mem, after_graph = _snapshot(dst, dctx, ids), _graph(dst, dctx)
    assert set(after_mem) == set(before_mem)
    for key, mem in before_mem.items():
        assert after_mem[key] == mem, key
    assert after_graph == before_graph
    # the imported store works: supersession, forgotten state, recall
    hits = [m["id"] for m in dst.recall(dctx, query="AuthService TokenValidator lifetimes", scope="project", strengthen=False)["memories"]]
    a, b = ids[0], ids[1]
    assert hits.index(b) < hits.index(a)
    assert ids[3] not in hits


def test_a_re_export_equals_the_export_except_the_header(exported, target, tmp_path):
    _src, _ids, path, _res = exported
    dst, dctx = target
    dst.import_(dctx, path)
    again = dst.export(dctx, tmp_path / "again.jsonl")["path"]
    first, second = path.read_text().splitlines(), Path(again).read_text().splitlines()
    assert first[1:] == second[1:]


def test_a_re_export_holds_the_same_records_apart_from_graph_timestamps(exported, target, tmp_path):
    _src, _ids, path, _res = exported
    dst, dctx = target
    dst.import_(dctx, path)
    again = Path(dst.export(dctx, tmp_path / "again.jsonl")["path"])

    def norm(line):
        obj = json.loads(line)
        if obj["kind"] in ("mention", "relation", "link"):
            obj.pop("created_at", None)
        if obj["kind"] == "entity":
            obj["record"].pop("created_at", None)
            obj["record"].pop("updated_at", None)
        return json.dumps(obj, sort_keys=True)

    first = sorted(norm(l) for l in path.read_text().splitlines()[1:])
    second = sorted(norm(l) for l in again.read_text().splitlines()[1:])
    assert first == second
    # memory lines are byte-for-byte identical and in the same order
    mem = lambda p: [l for l in p.read_text().splitlines() if json.loads(l)["kind"] == "memory"]
    assert mem(path) == mem(again)


def test_importing_twice_skips_the_memories_already_present(exported, target):
    _src, _ids, path, res = exported
    dst, dctx = target
    dst.import_(dctx, path)
    second = dst.import_(dctx, path)
    assert second["counts"]["memory"] == 0 and second["counts"]["skipped"] == res["counts"]["memory"]
    assert second["counts"]["mention"] == second["counts"]["relation"] == second["counts"]["link"] == 0
    total = sum(dst.status(dctx)["scopes"][s]["total"] for s in ("project", "user"))
    assert total == res["counts"]["memory"]


def test_importing_twice_does_not_duplicate_history_or_inflate_mention_counts(exported, target):
    _src, _ids, path, _res = exported
    dst, dctx = target
    dst.import_(dctx, path)
    once = _graph(dst, dctx)
    second = dst.import_(dctx, path)
    assert second["counts"]["history"] == 0
    assert _graph(dst, dctx) == once


def test_import_reports_progress(exported, target):
    _src, _ids, path, _res = exported
    dst, dctx = target
    calls = []
    dst.import_(dctx, path, progress=lambda done, total, label: calls.append((done, total, label)))
    assert calls and calls[-1][2] == "done" and calls[-1][0] == calls[-1][1]
    export_calls = []
    dst.export(dctx, path.with_name("x.jsonl"), progress=lambda d, t, l: export_calls.append((d, t, l)))
    assert ("export project" in {c[2] for c in export_calls}) and all(d <= t for d, t, _ in export_calls)


@pytest.mark.parametrize("bad,lineno", [("{not json", 3), ("[1, 2]", 2), ('{"no_kind": 1}', 4)])
def test_a_malformed_line_raises_invalid_input_naming_file_and_line(exported, target, bad, lineno):
    _src, _ids, path, _res = exported
    dst, dctx = target
    lines = path.read_text().splitlines()
    lines.insert(lineno - 1, bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidInput) as err:
        dst.import_(dctx, path)
    assert f"{path}:{lineno}" in err.value.message


def test_a_memory_line_with_a_bad_id_names_the_line(exported, target):
    _src, _ids, path, _res = exported
    dst, dctx = target
    lines = path.read_text().splitlines()
    obj = json.loads(lines[1])
    obj["id"] = "x; DELETE memory"
    lines[1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidInput) as err:
        dst.import_(dctx, path)
    assert "line 2" in err.value.message
    assert dst.status(dctx)["scopes"]["project"]["total"] == 0


def test_a_file_that_is_not_an_engram_export_is_refused(target, tmp_path):
    dst, dctx = target
    p = tmp_path / "other.jsonl"
    p.write_text(json.dumps({"kind": "header", "format": "something-else", "version": 1}) + "\n")
    with pytest.raises(InvalidInput):
        dst.import_(dctx, p)
    with pytest.raises(InvalidInput):
        dst.import_(dctx, tmp_path / "missing.jsonl")


# ------------------------------------------------------------------ vectors (real model)
@pytest.mark.slow
def test_vectors_travel_with_the_export_and_are_recomputed_when_left_out(real_service, ctx, tmp_path, real_embedder):
    texts = ["The build runs in GitHub Actions", "Releases are tagged vX.Y.Z", "Use ruff for linting"]
    ids = [real_service.store(ctx, content=t, type="semantic", scope="project")["memory_id"] for t in texts]
    with_vecs = Path(real_service.export(ctx, tmp_path / "with.jsonl")["path"])
    without = Path(real_service.export(ctx, tmp_path / "without.jsonl", include_vectors=False)["path"])
    assert all("vector_b64" in json.loads(l) for l in with_vecs.read_text().splitlines()[1:] if json.loads(l)["kind"] == "memory")
    assert "vector_b64" not in without.read_text()
    original = {m: real_service.get(ctx, m, include_embedding=True)["embedding_b64"] for m in ids}

    for name, path, embedded in (("a", with_vecs, 0), ("b", without, 3)):
        home = tmp_path / f"home-{name}"
        home.mkdir()
        svc = MemoryService(home=home, embedder=real_embedder)
        try:
            dctx = RequestContext(_project(tmp_path, f"proj-{name}"))
            out = svc.import_(dctx, path)
            assert out["counts"]["memory"] == 3 and out["counts"]["embedded"] == embedded
            for m in ids:
                got = svc.get(dctx, m, include_embedding=True)
                assert got["embedding_model"] == real_embedder.model_name
                if embedded == 0:
                    assert got["embedding_b64"] == original[m]
            hit = svc.recall(dctx, query="where does the CI build run", strategy="vector", limit=1)["memories"]
            assert hit[0]["id"] == ids[0]
        finally:
            svc.close()


@pytest.mark.slow
def test_vectors_of_another_model_are_recomputed_on_import(fake_service, ctx, tmp_path, real_embedder):
    fake_service.store(ctx, content="Vectors from the fake model", type="semantic", scope="project")
    path = Path(fake_service.export(ctx, tmp_path / "fake.jsonl")["path"])
    home = tmp_path / "home-real"
    home.mkdir()
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        out = svc.import_(RequestContext(_project(tmp_path, "proj-real")), path)
        assert out["counts"]["embedded"] == 1
    finally:
        svc.close()


def test_import_redacts_secrets_like_store_does(target, tmp_path):
    dst, dctx = target
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    key = new_ulid()
    vec = FakeEmbedder().embed_query(f"the deploy token is {token}")
    lines = [
        {"kind": "header", "format": "engram-export", "version": 1},
        {"kind": "memory", "scope": "project", "id": key, "vector_b64": base64.b64encode(vec.astype("<f4").tobytes()).decode(),
         "record": {"memory_type": "semantic", "content": f"the deploy token is {token}", "summary": f"token {token}",
                    "tags": [f"t {token}"], "category": "fact", "metadata": {"note": f"see {token}", "password": "hunter2-hunter2"},
                    "embedding_model": dst.model_name, "created_at": "2026-01-02T03:04:05Z"}},
        {"kind": "history", "scope": "project", "memory_id": key,
         "entry": {"version": 1, "change": "update", "changed_at": "2026-01-02T03:04:06Z",
                   "snapshot": {"content": f"old {token}", "summary": f"s {token}", "metadata": {"k": token}}}},
    ]
    path = tmp_path / "secret.jsonl"
    path.write_text("\n".join(json.dumps(l) for l in lines) + "\n")
    out = dst.import_(dctx, path)
    assert out["counts"]["memory"] == 1 and out["counts"]["history"] == 1
    assert out["counts"]["embedded"] == 1, "a vector of the unredacted text is not reused"
    assert out["redactions"]
    h = dst.handle(dctx, "project")
    dump = repr(h.q(q.ALL_MEMORIES)) + repr(h.q(q.ALL_HISTORY))
    assert token.lower() not in dump.lower() and "hunter2-hunter2" not in dump
    assert "the deploy token is" in dump
