"""Export / import / reindex: lossless JSONL round trips."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from tests.fakes import FakeEmbedder
from tests.lockwatch import HoldTimer
from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import new_ulid
from engram_mcp.index.scope_index import record_key
from engram_mcp.services.service import MemoryService, RequestContext
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
    from engram_mcp.services.records import jsonable, public_memory

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
    path = tmp_path / "engram.jsonl"  # export refuses a directory that does not exist
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
    out = dst.import_(dctx, path, keep_origins=True)  # another machine's engram: the user vouches for the file
    assert out["origins"]["kept"]
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
    hits = [m["id"] for m in dst.recall(dctx, query="AuthService TokenValidator lifetimes", scope="project", strengthen=False,
                                        include_superseded=True)["memories"]]
    a, b = ids[0], ids[1]
    assert hits.index(b) < hits.index(a)
    assert ids[3] not in hits
    default = [m["id"] for m in dst.recall(dctx, query="AuthService TokenValidator lifetimes", scope="project", strengthen=False)["memories"]]
    assert b in default and a not in default  # a superseded memory is hidden by default


def test_a_re_export_equals_the_export_except_the_header(exported, target, tmp_path):
    _src, _ids, path, _res = exported
    dst, dctx = target
    dst.import_(dctx, path, keep_origins=True)
    again = dst.export(dctx, tmp_path / "again.jsonl")["path"]
    first, second = path.read_text().splitlines(), Path(again).read_text().splitlines()
    assert first[1:-1] == second[1:-1]  # the header, and the signature of another key, apart


def test_a_re_export_holds_the_same_records_apart_from_graph_timestamps(exported, target, tmp_path):
    _src, _ids, path, _res = exported
    dst, dctx = target
    dst.import_(dctx, path, keep_origins=True)
    again = Path(dst.export(dctx, tmp_path / "again.jsonl")["path"])

    def norm(line):
        obj = json.loads(line)
        if obj["kind"] in ("mention", "relation", "link"):
            obj.pop("created_at", None)
        if obj["kind"] == "entity":
            obj["record"].pop("created_at", None)
            obj["record"].pop("updated_at", None)
        return json.dumps(obj, sort_keys=True)

    first = sorted(norm(l) for l in path.read_text().splitlines()[1:-1])
    second = sorted(norm(l) for l in again.read_text().splitlines()[1:-1])
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


@pytest.mark.parametrize("bad,lineno", [("{not json", 3), ("[1, 2]", 2), ('{"no_kind": 1}', 4), ("\udcff", 5)])
def test_a_malformed_line_is_reported_naming_file_and_line_and_the_rest_imported(exported, target, bad, lineno):
    _src, _ids, path, res = exported
    dst, dctx = target
    lines = path.read_text().splitlines()
    lines.insert(lineno - 1, bad)
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    out = dst.import_(dctx, path)
    assert out["counts"]["rejected"] == 1 and out["counts"]["memory"] == res["counts"]["memory"]
    assert out["rejected"][0]["line"] == lineno and f"{path}:{lineno}" in out["rejected"][0]["error"]


def test_a_memory_line_with_a_bad_id_names_the_line(exported, target):
    _src, _ids, path, res = exported
    dst, dctx = target
    lines = path.read_text().splitlines()
    obj = json.loads(lines[1])
    obj["id"] = "x; DELETE memory"
    lines[1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")
    out = dst.import_(dctx, path)
    assert [(r["line"], r["field"]) for r in out["rejected"] if r["line"] == 2] == [(2, "id")]
    assert out["counts"]["memory"] == res["counts"]["memory"] - 1


def test_a_file_of_bad_lines_only_is_invalid_input_naming_the_line(target, tmp_path):
    dst, dctx = target
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n"
                 + json.dumps({"kind": "memory", "scope": "project", "id": new_ulid(), "record": {"memory_type": "semantic", "content": "x",
                                                                                                  "created_at": "yesterday"}}) + "\n")
    with pytest.raises(InvalidInput) as err:
        dst.import_(dctx, p)
    assert f"{p}:2" in err.value.message and err.value.field == "created_at"
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


# ------------------------------------------------------------------ issue 12: import applies every store check
def _line(key: str | None = None, **record) -> dict:
    rec = {"memory_type": "semantic", "content": "a good memory about the build", "created_at": "2026-01-02T03:04:05Z", **record}
    return {"kind": "memory", "scope": "project", "id": key or new_ulid(), "record": rec}


def _write(path: Path, *objs) -> Path:
    text = "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


HEADER = {"kind": "header", "format": "engram-export", "version": 1}
GOOD_VEC = base64.b64encode(FakeEmbedder().embed_query("x").astype("<f4").tobytes()).decode()
# (bad line, the field the rejection must name): one per class of check `store` applies
BAD_MEMORY_LINES = [
    (lambda: _line(content="x" * 200_000), "content"),
    (lambda: _line(tags=[f"t{i}" for i in range(500)]), "tags"),
    (lambda: _line(tags=["t" * 100]), "tags"),
    (lambda: _line(summary="s" * 5_000), "summary"),
    (lambda: _line(created_at="yesterday"), "created_at"),
    (lambda: _line(updated_at=12345), "updated_at"),
    (lambda: _line(forgotten_at="2026-13-45T00:00:00Z"), "forgotten_at"),
    (lambda: _line(importance=2), "importance"),
    (lambda: _line(importance="high"), "importance"),
    (lambda: _line(confidence=float("nan")), "confidence"),
    (lambda: _line(access_count=-1), "access_count"),
    (lambda: _line(version="one"), "version"),
    (lambda: _line(memory_type="dream"), "memory_type"),
    (lambda: _line(memory_type="working"), "memory_type"),
    (lambda: _line(status="zombie"), "status"),
    (lambda: _line(content="\ud800 lone surrogate"), "content"),
    (lambda: _line(metadata={"k": "\udfff"}), "metadata"),
    (lambda: _line(tags=["ok", "\ud83d"]), "tags"),
    (lambda: _line(metadata={"n": 10**30}), "metadata"),
    (lambda: _line(metadata={"n": float("inf")}), "metadata"),
    (lambda: _line(metadata="not an object"), "metadata"),
    (lambda: _line(source=["not", "an", "object"]), "source"),
    (lambda: _line(promotion_chain="chain"), "promotion_chain"),
    (lambda: _line(session_id="s" * 1_000), "session_id"),
    (lambda: _line(forget_reason="r" * 1_000), "forget_reason"),
    (lambda: _line(content="<private>only private</private>"), "content"),
    (lambda: _line(content=None), "content"),
    (lambda: {**_line(embedding_model="fake-hash-384"), "vector_b64": base64.b64encode(b"\0" * 12).decode()}, "vector_b64"),
    (lambda: {**_line(embedding_model="fake-hash-384"), "vector_b64": "!!! not base64 !!!"}, "vector_b64"),
    (lambda: {**_line(embedding_model="fake-hash-384"),
              "vector_b64": base64.b64encode(__import__("numpy").full(384, float("nan"), dtype="<f4").tobytes()).decode()}, "vector_b64"),
    (lambda: {**_line(), "id": "memory:not-a-ulid"}, "id"),
    (lambda: {**_line(), "scope": "galaxy"}, "scope"),
]


@pytest.mark.parametrize("make,field", BAD_MEMORY_LINES, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD_MEMORY_LINES)])
def test_a_bad_memory_line_is_rejected_naming_line_and_field_and_the_rest_imported(target, tmp_path, make, field):
    dst, dctx = target
    good = _line(content="the good memory is imported")
    path = _write(tmp_path / "in.jsonl", HEADER, good, make())
    out = dst.import_(dctx, path)
    assert out["counts"]["memory"] == 1 and out["counts"]["rejected"] == 1, out
    bad = out["rejected"][0]
    assert bad["line"] == 3 and bad["field"] == field and f"{path}:3: {field}" in bad["error"], bad
    assert dst.get(dctx, good["id"])["content"] == "the good memory is imported"
    alone = _write(tmp_path / "alone.jsonl", HEADER, make())
    with pytest.raises(InvalidInput) as err:  # nothing usable at all: a clear argument error, not internal_error
        dst.import_(dctx, alone)
    assert err.value.field == field and f"{alone}:2" in err.value.message


BAD_GRAPH_LINES = [
    (lambda m: {"kind": "history", "scope": "project", "memory_id": m, "entry": {"version": "two", "change": "update"}}, "entry.version"),
    (lambda m: {"kind": "history", "scope": "project", "memory_id": m, "entry": {"version": 1, "change": "update", "changed_at": "noon"}},
     "entry.changed_at"),
    (lambda m: {"kind": "history", "scope": "project", "memory_id": m, "entry": {"version": 1, "change": "x" * 500}}, "entry.change"),
    (lambda m: {"kind": "history", "scope": "project", "memory_id": m,
                "entry": {"version": 1, "change": "update", "snapshot": {"content": "x" * 200_000}}}, "entry.snapshot.content"),
    (lambda m: {"kind": "history", "scope": "project", "memory_id": new_ulid(), "entry": {"version": 1, "change": "update"}}, "memory_id"),
    (lambda m: {"kind": "entity", "scope": "project", "key": "e1", "record": {"name": "n" * 5_000}}, "record.name"),
    (lambda m: {"kind": "entity", "scope": "project", "key": "e1; DELETE entity", "record": {"name": "x"}}, "key"),
    (lambda m: {"kind": "entity", "scope": "project", "key": "e1", "record": {"name": "x", "created_at": [1]}}, "record.created_at"),
    (lambda m: {"kind": "mention", "scope": "project", "memory_id": m, "entity_key": "nowhere"}, "entity_key"),
    (lambda m: {"kind": "relation", "scope": "project", "from": "ea", "to": "eb", "relation_type": "uses", "weight": "heavy"}, "weight"),
    (lambda m: {"kind": "relation", "scope": "project", "from": "ea", "to": "eb", "relation_type": "uses", "weight": float("nan")}, "weight"),
    (lambda m: {"kind": "relation", "scope": "project", "from": "ea", "to": "eb", "relation_type": "uses", "evidence": ["e"] * 500}, "evidence"),
    (lambda m: {"kind": "relation", "scope": "project", "from": "ea", "to": "eb", "relation_type": "\ud800"}, "relation_type"),
    (lambda m: {"kind": "link", "scope": "project", "from": m, "to": m, "relation_type": "loves"}, "relation_type"),
    (lambda m: {"kind": "link", "scope": "project", "from": m, "to": m, "relation_type": "similar_to", "strength": 7}, "strength"),
    (lambda m: {"kind": "link", "scope": "project", "from": m, "to": new_ulid(), "relation_type": "similar_to"}, "to"),
    (lambda m: {"kind": "spaceship", "scope": "project"}, "kind"),
]


@pytest.mark.parametrize("make,field", BAD_GRAPH_LINES, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD_GRAPH_LINES)])
def test_a_bad_history_or_graph_line_is_rejected_naming_line_and_field(target, tmp_path, make, field):
    dst, dctx = target
    good = _line(content="the good memory is imported")
    ents = [{"kind": "entity", "scope": "project", "key": k, "record": {"name": k.upper(), "entity_type": "service"}} for k in ("ea", "eb")]
    path = _write(tmp_path / "in.jsonl", HEADER, good, *ents, make(good["id"]))
    out = dst.import_(dctx, path)
    assert out["counts"]["memory"] == 1 and out["counts"]["entity"] == 2 and out["counts"]["rejected"] == 1, out
    bad = out["rejected"][0]
    assert bad["line"] == 5 and bad["field"] == field, bad


def test_imported_nul_characters_are_removed_as_store_removes_them_and_the_store_stays_usable(target, tmp_path):
    dst, dctx = target
    lines = [_line(content="nul in\u0000 content"), _line(summary="nul\u0000 summary"), _line(tags=["a\u0000b"]),
             _line(metadata={"k\u0000": ["v\u0000", {"deep": "x\u0000"}]}, source={"tool": "E\u0000dit"}, category="fa\u0000ct")]
    history = {"kind": "history", "scope": "project", "memory_id": lines[0]["id"],
               "entry": {"version": 1, "change": "update", "snapshot": {"content": "old\u0000", "metadata": {"z": "\u0000"}}}}
    path = _write(tmp_path / "nul.jsonl", HEADER, *lines, history)
    out = dst.import_(dctx, path)
    assert out["counts"]["memory"] == 4 and out["counts"]["history"] == 1 and out["counts"]["rejected"] == 0
    dump = dst.export(dctx, tmp_path / "again.jsonl")  # every read path still works
    assert "\\u0000" not in Path(dump["path"]).read_text()
    assert dst.get(dctx, lines[0]["id"], history=True)["content"] == "nul in content"
    assert dst.get(dctx, lines[2]["id"])["tags"] == ["ab"]
    assert {m["id"] for m in dst.recall(dctx, query="nul content summary", limit=10)["memories"]} >= {"memory:" + lines[0]["id"]}
    assert dst.forget(dctx, lines[3]["id"])["status"] == "forgotten"


def test_import_never_holds_the_service_lock_while_it_embeds(tmp_path):
    """Defect 7: a recall beside a large import waits one small write batch at most."""
    import threading
    import time as _time

    class SlowEmbedder(FakeEmbedder):
        def embed_documents(self, texts):
            _time.sleep(0.002 * len(texts))  # like the real model: ~2 ms a text, on the other core
            return super().embed_documents(texts)

    home = tmp_path / "h"
    home.mkdir()
    svc = MemoryService(home=home, embedder=SlowEmbedder())
    ctx = RequestContext(_project(tmp_path, "p"))
    timer = HoldTimer(svc.lock).start()  # holds net of garbage collections (lockwatch.py)
    holds = timer.holds
    try:
        svc.store(ctx, content="warm the store up", type="semantic", scope="project")
        svc.recall(ctx, query="warm store", limit=3)  # first-call costs (lazy imports) are not lock holds
        path = _write(tmp_path / "many.jsonl", HEADER, *[_line(content=f"imported fact {i} about service {i % 31}") for i in range(1500)])
        svc.access.lock = timer  # every operation takes the access layer's lock
        waits: list[float] = []
        done = threading.Event()

        def recall_loop():
            while not done.is_set():
                started = _time.perf_counter()
                svc.recall(ctx, query="warm store", limit=3)
                waits.append(_time.perf_counter() - started)
                _time.sleep(0.02)

        t = threading.Thread(target=recall_loop)
        t.start()
        out = svc.import_(ctx, path)
        done.set()
        t.join()
        assert out["counts"]["memory"] == 1500 and out["counts"]["embedded"] == 1500
        assert len(waits) >= 10, "recalls ran during the import"
        assert max(holds) < 0.5, f"longest lock hold {max(holds) * 1000:.0f} ms"  # was the whole import (seconds)
        assert max(waits) < 1.0, f"slowest recall during the import {max(waits) * 1000:.0f} ms"
        holds.clear()
        out = svc.export(ctx, tmp_path / "all.jsonl")  # export reads page by page too
        assert out["counts"]["memory"] == 1501
        assert max(holds) < 0.5, f"longest lock hold of the export {max(holds) * 1000:.0f} ms"
    finally:
        timer.stop()
        svc.close()


# ------------------------------------------------------------------ issue 15: bulk import at the engine's pace
def _vector_lines(n: int, model: str) -> list[dict]:
    import numpy as np

    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        v = rng.standard_normal(384).astype("<f4")
        v /= np.linalg.norm(v)
        line = _line(content=f"bulk fact {i} about service {i % 17}", embedding_model=model, embedding_dim=384)
        line["vector_b64"] = base64.b64encode(v.tobytes()).decode()
        out.append(line)
    return out



def _spy_batch_sizes(monkeypatch) -> list[int]:
    """The number of memories of each import batch, as the repository's insert_many receives them."""
    from engram_mcp.storage.repository import ScopeRepository

    sizes: list[int] = []
    real = ScopeRepository.insert_many

    def spy(self, items):
        items = list(items)
        sizes.append(len(items))
        return real(self, items)

    monkeypatch.setattr(ScopeRepository, "insert_many", spy)
    return sizes

def test_import_batches_grow_to_the_lock_budget_and_stay_within_their_bounds(target, tmp_path, monkeypatch):
    """The first batch is WRITE_BATCH; later ones are sized from the time the last one held the
    lock (a generous budget makes them grow, never past MAX_WRITE_BATCH); every memory lands once."""
    from engram_mcp.services import transfer

    dst, dctx = target
    sizes = _spy_batch_sizes(monkeypatch)
    monkeypatch.setattr(transfer, "WRITE_LOCK_BUDGET_MS", 10_000.0)
    monkeypatch.setattr(transfer, "MAX_WRITE_BATCH", 100)
    lines = _vector_lines(400, FakeEmbedder().model_name)
    out = dst.import_(dctx, _write(tmp_path / "bulk.jsonl", HEADER, *lines))
    assert out["counts"]["memory"] == 400 and out["counts"]["embedded"] == 0
    assert sizes[0] == transfer.WRITE_BATCH and max(sizes) == 100 and sum(sizes) == 400
    h = dst.handle(dctx, "project")
    assert len(h.index) == 400 and all(h.index.slot_of(line["id"]) is not None for line in lines)


def test_import_batches_stay_at_the_floor_when_the_budget_is_tiny(target, tmp_path, monkeypatch):
    from engram_mcp.services import transfer

    dst, dctx = target
    sizes = _spy_batch_sizes(monkeypatch)
    monkeypatch.setattr(transfer, "WRITE_LOCK_BUDGET_MS", 0.001)
    out = dst.import_(dctx, _write(tmp_path / "bulk.jsonl", HEADER, *_vector_lines(100, FakeEmbedder().model_name)))
    assert out["counts"]["memory"] == 100
    assert set(sizes[:-1]) == {transfer.WRITE_BATCH} and sum(sizes) == 100


def test_a_memory_written_meanwhile_is_skipped_and_the_rest_of_its_batch_lands(target, tmp_path, monkeypatch):
    """Between the check of a line and its batch's write, another client may write the same
    memory (through the service, so the index knows it): the batch leaves it as that client
    wrote it, counts it as skipped, and writes the others in its one statement."""
    from engram_mcp.services import transfer

    dst, dctx = target
    lines = _vector_lines(20, FakeEmbedder().model_name)
    h = dst.handle(dctx, "project")
    real_batch = transfer._write_batch

    def sneak_in(run, batch):
        if h.index.slot_of(lines[4]["id"]) is None:
            rec = {"memory_type": "semantic", "scope": "project", "content": "written meanwhile"}
            with dst.lock:
                h.repo.insert(lines[4]["id"], rec)
                h.index.upsert({**rec, "id": lines[4]["id"]})
        return real_batch(run, batch)

    monkeypatch.setattr(transfer, "_write_batch", sneak_in)
    out = dst.import_(dctx, _write(tmp_path / "bulk.jsonl", HEADER, *lines))
    assert out["counts"]["memory"] == 19 and out["counts"]["skipped"] == 1 and out["counts"]["rejected"] == 0
    assert h.repo.get(lines[4]["id"])["content"] == "written meanwhile"
    assert all(h.repo.get(line["id"]) is not None for line in lines)


def test_tags_remembered_per_process_give_the_same_tags_and_findings_every_time():
    from engram_mcp.services.records import MAX_CACHED_TAG_CHARS, check_tags, clean_tags

    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    for value in (["Deploy", secret, "deploy", "  cache  "], [secret, "x" * (MAX_CACHED_TAG_CHARS + 1)]):
        runs = []
        for _ in range(2):
            findings: list = []
            try:
                runs.append((clean_tags(list(value), findings), [f.kind for f in findings]))
            except InvalidInput as exc:
                runs.append(("error", exc.field))
        assert runs[0] == runs[1]
        if runs[0][0] != "error":
            assert runs[0][1], "the secret tag is counted on every call, cached or not"
            assert all("ghp_" not in t for t in runs[0][0])
    assert clean_tags(["Deploy", "deploy", "cache"], []) == check_tags(["Deploy", "deploy", "cache"]) == ["deploy", "cache"]


def test_a_memory_imported_without_times_is_new_to_the_index_and_to_maintenance(target, tmp_path):
    """A line without created_at gets now, as the engine would: the index that is written at
    once must agree. It used to read 1970, and the next maintenance archived the memory."""
    import time as _time

    dst, dctx = target
    line = _line(content="imported without any timestamp", importance=0.5)
    del line["record"]["created_at"]
    dst.import_(dctx, _write(tmp_path / "t.jsonl", HEADER, line))
    h = dst.handle(dctx, "project")
    slot = h.index.slot_of(line["id"])
    assert abs(h.index.cols.created_at[slot] - _time.time()) < 120
    assert abs(h.index.cols.last_accessed[slot] - _time.time()) < 120
    report = dst.maintain(dctx)["project"]
    assert not report.get("archived") and not report.get("forgotten")
    assert dst.get(dctx, line["id"])["status"] != "archived"


def test_reindex_embeds_every_chunk_while_writing_the_last_and_reports_progress(tmp_path):
    """Memories imported while the model was missing are embedded by reindex, chunk after chunk
    (the next embedding while the last is written), each written once, progress to the end."""
    from engram_mcp.services import transfer

    class Missing(FakeEmbedder):
        def embed_documents(self, texts):
            raise RuntimeError("model files missing")

    home = tmp_path / "h"
    home.mkdir()
    ctx = RequestContext(_project(tmp_path, "p"))
    n = 2 * transfer.EMBED_BATCH + 22
    path = _write(tmp_path / "plain.jsonl", HEADER, *[_line(content=f"fact {i} about queue {i % 7}") for i in range(n)])
    svc = MemoryService(home=home, embedder=Missing())
    try:
        out = svc.import_(ctx, path)
        assert out["counts"]["memory"] == n and out["counts"]["embedded"] == 0
    finally:
        svc.close()
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        assert svc.handle(ctx, "project").index.missing_vectors == n
        calls = []
        out = svc.reindex(ctx, progress=lambda d, t, label: calls.append((d, t)))
        assert out == {"reindexed": n, "failed": 0, "model": FakeEmbedder().model_name}
        assert calls[-1] == (n, n) and len(calls) == 3
        h = svc.handle(ctx, "project")
        assert h.index.missing_vectors == 0
        assert all(r.get("embedding_model") == FakeEmbedder().model_name for r in h.repo.all_memories())
    finally:
        svc.close()


def test_a_batch_grows_at_most_twofold_and_shrinks_at_once():
    from engram_mcp.services.transfer import next_batch

    assert next_batch(16, 16, 0.001, 60.0, 16, 2000) == 32  # fast: would fit 960, grows to twice
    assert next_batch(1000, 1000, 0.6, 60.0, 16, 2000) == 100  # ten times too slow: down at once
    assert next_batch(64, 64, 2.0, 60.0, 16, 2000) == 16  # never below the floor
    assert next_batch(1500, 1500, 0.001, 60.0, 16, 2000) == 2000  # never above the ceiling
    assert next_batch(50, 0, 0.0, 60.0, 16, 2000) == 50  # nothing timed: unchanged


def test_an_export_holds_what_existed_when_it_began_though_writes_land_between_its_pages(
    target, tmp_path, monkeypatch
):
    """Export reads each page as one range of keys. A memory written meanwhile whose key sorts
    inside a later page is not exported, one removed meanwhile is left out, and every other
    memory is exported once, in key order."""
    from engram_mcp.services import transfer

    svc, tctx = target
    lines = _vector_lines(12, FakeEmbedder().model_name)
    svc.import_(tctx, _write(tmp_path / "bulk.jsonl", HEADER, *lines))
    keys = sorted(line["id"] for line in lines)
    h = svc.handle(tctx, "project")
    between = keys[9][:-1] + chr(ord(keys[9][-1]) + 1)  # inside the last page's range of keys
    assert keys[9] < between < keys[10]
    monkeypatch.setattr(transfer, "EXPORT_PAGE", 3)
    monkeypatch.setattr(transfer, "MAX_EXPORT_PAGE", 3)
    seen: list[int] = []

    def progress(done, total, label):
        if not seen:  # after the first page: one write, one removal, both in later pages
            with svc.lock:
                h.repo.insert(between, {"memory_type": "semantic", "scope": "project", "content": "written meanwhile"})
                h.q("DELETE type::thing('memory', $id) RETURN NONE", {"id": keys[10]})
        seen.append(done)

    out = svc.export(tctx, tmp_path / "out.jsonl", scopes=("project",), progress=progress)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()[1:]]
    exported = [row["id"] for row in rows if row["kind"] == "memory"]
    assert exported == [k for k in keys if k != keys[10]]
    assert out["counts"]["memory"] == 11 and seen == [3, 6, 9, 12]


def test_a_memory_line_by_orjson_reads_back_as_the_json_line_did():
    """The fast path must write what the json path writes, as data, for every kind of value a
    record holds; a value orjson refuses falls back to json instead of failing the export."""
    from datetime import datetime, timedelta, timezone

    from surrealdb.data.types.record_id import RecordID

    from engram_mcp.services import transfer

    assert transfer._ORJSON_DUMPS is not None
    when = datetime(2026, 11, 27, 3, 4, 5, 678901, tzinfo=timezone.utc)
    record = {"content": "ü \U0001f600 \"q\" \n\t\x01 \u2028", "tags": ["a"], "importance": 0.625, "access_count": 3,
              "created_at": when, "updated_at": when.replace(microsecond=0), "forgotten_at": None,
              "last_accessed_at": datetime(2026, 1, 2), "status_changed_at": when.astimezone(timezone(timedelta(hours=2))),
              "metadata": {"n": [1, 2.5e-7, None, True, {"at": when}], "ref": RecordID("memory", "k")},
              "promotion_chain": [{"from": "session", "at": when}]}

    def by_json(rec):
        json_line = {"kind": "memory", "scope": "project", "id": "k", "record": dict(rec)}
        saved = transfer._ORJSON_DUMPS
        transfer._ORJSON_DUMPS = None
        try:
            return transfer._line(json_line)
        finally:
            transfer._ORJSON_DUMPS = saved

    fast = transfer._line({"kind": "memory", "scope": "project", "id": "k", "record": dict(record)})
    assert fast != by_json(record)  # not the same bytes (orjson writes no spaces)...
    assert json.loads(fast) == json.loads(by_json(record))  # ...but the same data
    assert json.loads(fast)["record"]["created_at"] == "2026-11-27T03:04:05.678901Z"
    huge = {**record, "metadata": {"n": 2**70}}  # beyond orjson: json writes it
    assert json.loads(transfer._line({"kind": "memory", "scope": "p", "id": "k", "record": huge}))["record"][
        "metadata"] == {"n": 2**70}


def test_an_export_read_in_pages_of_one_writes_what_one_page_writes(exported, ctx, tmp_path, monkeypatch):
    """The graph is read a page per lock hold: the smallest pages must give the same lines,
    and no hold reads more than a page."""
    from engram_mcp.services import transfer
    from engram_mcp.storage.repository import ScopeRepository

    svc, _ids, path, res = exported
    assert all(res["counts"][k] > 0 for k in ("history", "entity", "mention", "relation", "link"))
    pages: list[int] = []
    real = ScopeRepository.graph_page

    def counted(self, kind, after, limit):
        rows, nxt = real(self, kind, after, limit)
        pages.append(len(rows))
        return rows, nxt

    monkeypatch.setattr(ScopeRepository, "graph_page", counted)
    monkeypatch.setattr(transfer, "EXPORT_PAGE", 1)
    monkeypatch.setattr(transfer, "MAX_EXPORT_PAGE", 1)
    again = svc.export(ctx, tmp_path / "paged.jsonl")
    assert again["counts"] == res["counts"]
    assert Path(again["path"]).read_text().splitlines()[1:] == path.read_text().splitlines()[1:]
    assert max(pages) == 1 and sum(pages) == sum(res["counts"][k] for k in ("history", "entity", "mention", "relation", "link"))
