"""The persisted retrieval index (index/persist.py, services/handles.py): a file is trusted only
when its stamp equals the store's change counter, and then it is the same index a rebuild from
the store gives; a stale, torn, corrupt, foreign or missing file means a rebuild, and a kill -9
at any point of writes and checkpoints never leaves a wrong index behind.

Everything runs on the real engine; the FakeEmbedder stands in for the model, whose vectors the
persistence never looks at.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_mcp.core.paths import project_id
from engram_mcp.index.persist import IndexFileError, read_index_file, write_index_file
from engram_mcp.index.scope_index import Filters, ScopeIndex
from engram_mcp.services.handles import StoreRegistry
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q
from engram_mcp.storage.store import _is_write, _moves_index
from tests.fakes import FAKE_MODEL, FakeEmbedder

ROOT = Path(__file__).resolve().parents[1]
WORDS = "alpha beta gamma delta cache deploy index query token retry schema parser merge branch".split()


# ------------------------------------------------------------------------ comparing indexes
def fingerprint(index: ScopeIndex) -> dict[str, Any]:
    """Everything an index answers with, by memory key (slot numbers may differ between a
    persisted index, which keeps its history of slots, and a rebuild)."""
    per_key = {}
    c = index.cols
    for key in index.keys():
        s = index.slot_of(key)
        assert s is not None
        vec = index.vectors.get(s)
        doc = index.bm25._doc_terms[s] if s < len(index.bm25._doc_terms) else None
        terms = {}
        if doc is not None:
            vocab = list(index.bm25._vocab)
            terms = {vocab[t]: int(f) for t, f in zip(doc[0].tolist(), doc[1].tolist(), strict=True)}
        per_key[key] = (
            int(c.type_code[s]),
            int(c.status_code[s]),
            round(float(c.importance[s]), 5),
            int(c.access_count[s]),
            round(float(c.created_at[s]), 3),
            round(float(c.last_accessed[s]), 3),
            tuple(sorted(index.tags.get(s, ()))),
            index.category.get(s),
            index.session_of.get(s),
            index.slot_hash.get(s),
            None if vec is None else np.round(vec, 5).tobytes(),
            tuple(sorted(terms.items())),
            s in index.without_vector,
        )
    live_terms = {t: index.bm25.doc_freq(t) for t in index.bm25._vocab if index.bm25.doc_freq(t)}
    return {
        "per_key": per_key,
        "superseded_by": dict(index.superseded_by),
        "hash_owner": {h: index.key_of(s) for h, s in index.hash_to_slot.items()},
        "bm25": (index.bm25.doc_count, index.bm25._total_len, live_terms),
    }


def answers(index: ScopeIndex, seed: int = 5) -> list[Any]:
    """Vector and keyword top-10s, by key, under a few filters."""
    rng = np.random.default_rng(seed)
    out = []
    for f in (Filters(), Filters(types=frozenset({"episodic"})), Filters(tags=frozenset({"alpha", "cache"}))):
        mask = index.mask(f)
        for _ in range(3):
            slots, scores = index.vectors.search(rng.standard_normal(index.dim).astype(np.float32), 10, mask)
            out.append([(index.key_of(s), round(float(x), 4)) for s, x in zip(slots, scores, strict=True)])
        for query in ("alpha cache", "deploy", "merge branch token"):
            slots, scores = index.bm25.search(query, 10, mask)
            out.append([(index.key_of(s), round(float(x), 4)) for s, x in zip(slots, scores, strict=True)])
    return out


def random_index(rnd: random.Random, n: int, dim: int = 384) -> ScopeIndex:
    """An index with every kind of content: tags, categories, sessions, forgotten and removed
    memories, memories without a vector, supersedes, strengthening."""
    index = ScopeIndex("project", dim, FAKE_MODEL)
    rng = np.random.default_rng(rnd.randrange(10**6))
    keys = [f"K{i:05d}" for i in range(n)]
    for i, key in enumerate(keys):
        row = {
            "id": key,
            "memory_type": rnd.choice(["episodic", "semantic", "procedural"]),
            "content": " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 9))) + (f" n{i}" if i % 7 else ""),
            "tags": rnd.sample(WORDS, rnd.randint(0, 2)),
            "category": rnd.choice([None, "decision", "convention"]),
            "importance": rnd.random(),
            "access_count": rnd.randint(0, 4),
            "status": rnd.choice(["created", "active", "active", "archived", "forgotten"]),
            "created_at": 1.7e9 + i * 60,
            "session_id": rnd.choice([None, "s1", "s2"]),
        }
        vec = rng.standard_normal(dim).astype(np.float32) if rnd.random() < 0.9 else None
        index.upsert(row, vec)
    for key in rnd.sample(keys, n // 10):
        index.remove(key)
    live = index.keys()
    for _ in range(n // 20):
        a, b = rnd.sample(live, 2)
        index.mark_superseded(a, b)
    index.touch(rnd.sample(live, n // 5), 1.8e9)
    return index


# ------------------------------------------------------------------------------- the file
def test_round_trip_gives_the_same_index_which_then_takes_writes_like_the_original(tmp_path: Path) -> None:
    rnd = random.Random(3)
    original = random_index(rnd, 2600)  # three vector blocks, the last one partly used
    meta, arrays = original.export_state()
    meta["changes"] = 7
    path = tmp_path / "x.eidx"
    write_index_file(path, meta, arrays)
    meta2, arrays2 = read_index_file(path, unchecked=ScopeIndex.UNCHECKED_ARRAYS, writable=ScopeIndex.WRITABLE_ARRAYS)
    assert meta2["changes"] == 7
    loaded = ScopeIndex.from_state(meta2, arrays2)
    assert fingerprint(loaded) == fingerprint(original)
    assert answers(loaded) == answers(original)
    # the same writes on both (into copy-on-write pages of the mapping, and past its end)
    for idx in (original, loaded):
        r, rng = random.Random(9), np.random.default_rng(1)
        for key in r.sample(idx.keys(), 300):
            idx.remove(key)
        for i in range(2000):
            idx.upsert(
                {
                    "id": f"N{i}",
                    "memory_type": "episodic",
                    "content": f"{r.choice(WORDS)} fresh {i}",
                    "status": "active",
                    "created_at": 1.9e9 + i,
                    "tags": ["alpha"],
                },
                rng.standard_normal(384),
            )
        idx.touch(r.sample(idx.keys(), 50), 1.95e9)
    assert fingerprint(loaded) == fingerprint(original)
    assert answers(loaded) == answers(original)
    # the file itself never changes (private mapping)
    _, again = read_index_file(path)
    assert again["col_access_count"].tolist() == arrays["col_access_count"].tolist()


def test_an_index_whose_terms_were_cut_by_another_tokenizer_is_refused(tmp_path: Path) -> None:
    from engram_mcp.index.tokenizer import TOKENIZER_VERSION

    original = random_index(random.Random(4), 50)
    meta, arrays = original.export_state()
    write_index_file(tmp_path / "x.eidx", meta, arrays)
    meta, arrays = read_index_file(tmp_path / "x.eidx", unchecked=ScopeIndex.UNCHECKED_ARRAYS)
    assert meta["tokenizer"] == TOKENIZER_VERSION
    assert fingerprint(ScopeIndex.from_state(meta, arrays)) == fingerprint(original)
    for other in (None, TOKENIZER_VERSION - 1):  # a file from before the stamp, or an older cut
        with pytest.raises(ValueError, match="tokenizer"):
            ScopeIndex.from_state({**meta, "tokenizer": other}, arrays)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "header"])
def test_a_damaged_file_is_refused(tmp_path: Path, damage: str) -> None:
    original = random_index(random.Random(4), 500)
    meta, arrays = original.export_state()
    path = tmp_path / "x.eidx"
    write_index_file(path, meta, arrays)
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":  # one byte inside the int8 rows, which are checksummed
        spec = _header(data)["arrays"]["vec_i8"]
        data[_data_start(data) + spec["offset"] + spec["nbytes"] // 2] ^= 0x01
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "empty":
        data = bytearray()
    elif damage == "header":
        data[20] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(IndexFileError):
        read_index_file(path, unchecked=ScopeIndex.UNCHECKED_ARRAYS)


def _header(data: bytes) -> dict[str, Any]:
    (hlen,) = struct.unpack_from("<Q", data, 8)
    return json.loads(bytes(data[16 : 16 + hlen]))


def _data_start(data: bytes) -> int:
    (hlen,) = struct.unpack_from("<Q", data, 8)
    return -(-(16 + hlen) // 64) * 64


def test_a_link_or_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError, match="missing"):
        read_index_file(tmp_path / "none.eidx")
    target = tmp_path / "real.eidx"
    write_index_file(target, {}, {"a": np.arange(3)})
    link = tmp_path / "link.eidx"
    link.symlink_to(target)
    with pytest.raises(IndexFileError):
        read_index_file(link)


# ----------------------------------------------------------------------- the change counter
def test_writes_declared_unindexed_never_touch_what_the_index_reads() -> None:
    """Every write moves the change counter except those `UNINDEXED_WRITES` names; none of
    those may write a memory or a memory link (a new or unlisted statement is counted)."""
    names = {v: k for k, v in vars(q).items() if k.isupper() and isinstance(v, str)}
    for sql in q.UNINDEXED_WRITES:
        assert sql in names, "UNINDEXED_WRITES holds a statement that is not a constant of queries.py"
        assert _is_write(sql), names[sql]
        assert not re.search(r"(?<![$.])\bmemory\b|\bmemory_link\b|type::table", sql.split(" WHERE ")[0]), names[sql]
    assert _moves_index(q.CREATE_MEMORY) and _moves_index(q.SET_STATUS) and _moves_index(q.STRENGTHEN_BATCH)
    assert _moves_index(q.CREATE_LINK) and _moves_index("UPDATE memory SET importance = 0.1")
    assert not _moves_index(q.GET_MEMORY) and not _moves_index(q.UPSERT_ENTITY)


def test_indexed_writes_move_the_counter_and_other_writes_do_not(
    fake_service: MemoryService, ctx: RequestContext
) -> None:
    h = fake_service.access.handle(ctx, "project")

    def counter() -> tuple[str, int]:
        store_id, _, n = h.repo.changes().rpartition(":")
        return store_id, int(n)

    mid = fake_service.store(ctx, content="the counter moves with memories", type="semantic", scope="project")[
        "memory_id"
    ]
    store_id, after_store = counter()
    assert len(store_id) == 36 and after_store > 0
    h.repo.upsert_entity("e1", "Thing", "thing", "concept")
    assert counter() == (store_id, after_store)
    fake_service.recall(ctx, query="counter memories", limit=3)
    fake_service.access.write_behind.flush_all()
    assert counter()[1] > after_store  # strengthening rewrites the memory
    after_recall = counter()[1]
    fake_service.forget(ctx, mid, reason="test")
    assert counter()[0] == store_id and counter()[1] > after_recall
    # another database has its own id: a file copied across never matches
    other = fake_service.access.handle(ctx, "user")
    fake_service.store(ctx, content="a user memory", type="semantic", scope="user")
    assert other.repo.changes().rpartition(":")[0] not in ("", store_id)


# ------------------------------------------------------------------- opening a store
def open_service(home: Path, persist: bool) -> MemoryService:
    os.environ["ENGRAM_INDEX_PERSIST"] = "true" if persist else "false"
    try:
        svc = MemoryService(home=home, embedder=FakeEmbedder())
        svc.access.config(None)
    finally:
        del os.environ["ENGRAM_INDEX_PERSIST"]
    return svc


def reopen_and_compare(home: Path, project: Path) -> list[str]:
    """Open every scope with the persisted file and with a rebuild: the same index, the same
    recall. Returns the index status of each scope."""
    ctx = RequestContext(project, None)
    statuses = []
    persisted, rebuilt = open_service(home, True), None
    try:
        for scope in ("project", "user"):
            statuses.append(persisted.access.handle(ctx, scope).index_status)
        got = {s: fingerprint(persisted.access.handle(ctx, s).index) for s in ("project", "user")}
        got_answers = {s: answers(persisted.access.handle(ctx, s).index) for s in ("project", "user")}
        got_recall = [
            persisted.recall(ctx, query=w, limit=8, strengthen=False) for w in ("alpha cache", "deploy merge")
        ]
        persisted.close()
        rebuilt = open_service(home, False)
        for scope in ("project", "user"):
            assert rebuilt.access.handle(ctx, scope).index_status == "rebuilt (off)"
            assert fingerprint(rebuilt.access.handle(ctx, scope).index) == got[scope], scope
            assert answers(rebuilt.access.handle(ctx, scope).index) == got_answers[scope], scope
        want_recall = [rebuilt.recall(ctx, query=w, limit=8, strengthen=False) for w in ("alpha cache", "deploy merge")]
        for got_r, want_r in zip(got_recall, want_recall, strict=True):
            # the same memories with the same signals; scores equal but for the recency terms,
            # which moved with the seconds between the two recalls (so near-ties may swap places)
            got_by_id = {m["id"]: m for m in got_r["memories"]}
            want_by_id = {m["id"]: m for m in want_r["memories"]}
            assert got_by_id.keys() == want_by_id.keys()
            for mid, g in got_by_id.items():
                assert g["score"] == pytest.approx(want_by_id[mid]["score"], abs=2e-3)
                assert g["similarity"] == want_by_id[mid]["similarity"]
                assert g["relevance_score"] == want_by_id[mid]["relevance_score"]
    finally:
        persisted.close()
        if rebuilt is not None:
            rebuilt.close()
    return statuses


def fill(svc: MemoryService, ctx: RequestContext, n: int, seed: int = 1) -> list[str]:
    rnd = random.Random(seed)
    ids = []
    for i in range(n):
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 10))) + f" item{i}"
        scope = "user" if i % 5 == 0 else "project"
        ids.append(
            svc.store(
                ctx, content=text, type=rnd.choice(["semantic", "episodic"]), scope=scope, tags=[rnd.choice(WORDS)]
            )["memory_id"]
        )
    return ids


def test_a_closed_store_reopens_from_its_file_with_the_index_a_rebuild_gives(home: Path, project: Path) -> None:
    ctx = RequestContext(project, "s1")
    svc = open_service(home, True)
    ids = fill(svc, ctx, 40)
    svc.forget(ctx, ids[3], reason="test")
    svc.link(ctx, ids[1], ids[2], "supersedes")
    svc.recall(ctx, query="alpha", limit=5)
    svc.close()
    files = sorted(p.name for p in (project / ".claude" / "engram" / "index").iterdir())
    assert any(f.startswith("project.") for f in files) and any(f.startswith("session.") for f in files)
    assert (home / ".claude" / "engram" / "index" / "user.default.eidx").exists()
    assert reopen_and_compare(home, project) == ["loaded", "loaded"]
    again = open_service(home, True)
    try:
        assert again.status(RequestContext(project, None))["scopes"]["project"]["index"] == "loaded"
    finally:
        again.close()


def test_a_store_older_than_the_counter_gets_one_at_the_first_checkpoint(home: Path, project: Path) -> None:
    ctx = RequestContext(project, None)
    svc = open_service(home, True)
    fill(svc, ctx, 10)
    h = svc.access.handle(ctx, "project")
    # as in a store written before the counter existed (straight to the engine: any write
    # through the store would bump the counter again)
    h.store._use(h.ns, h.db)
    h.store._conn.query("DELETE engram_meta:changes")
    assert h.repo.changes() == ""
    h.index.edits += 1  # a checkpoint is due
    svc.close()
    assert reopen_and_compare(home, project)[0] == "loaded"
    # the restarted counter passes values the change log already holds rows for: writes go on
    again = open_service(home, True)
    try:
        fill(again, ctx, 10, seed=2)
    finally:
        again.close()
    assert reopen_and_compare(home, project)[0] == "loaded"


def _write_behind_its_back(home: Path, project: Path, ids: list[str], then: Any = None) -> None:
    """Writes the file does not see: an update, a forget, a new memory and a supersede link,
    then `then(handle)`, and the stores close with no checkpoint, as at a crash."""
    ctx = RequestContext(project, None)
    other = open_service(home, True)
    try:
        other.update(ctx, ids[1], content="changed behind the index's back: deploy merge")
        other.forget(ctx, ids[2], reason="test")
        new = other.store(ctx, content="alpha cache written behind the file", type="semantic", scope="project")
        other.link(ctx, new["memory_id"], ids[4], "supersedes")
        if then is not None:
            then(other.access.handle(ctx, "project"))
        other.access.registry.close_all()
    finally:
        other.close()


def test_a_stale_file_is_repaired_from_the_change_log_to_what_a_rebuild_gives(home: Path, project: Path) -> None:
    """The counter ran ahead of the file's stamp, and the log names every write since: the
    file is loaded, those records are read again, and the index equals a rebuild's."""
    ctx = RequestContext(project, None)
    svc = open_service(home, True)
    ids = fill(svc, ctx, 40)
    svc.close()
    _write_behind_its_back(home, project, [i for n, i in enumerate(ids) if n % 5])
    statuses = reopen_and_compare(home, project)
    assert statuses[0] == "loaded and repaired from the change log (3 memories re-read)", statuses
    assert statuses[1] == "loaded"
    # the repaired index was written back at close, and the log pruned up to its stamp
    assert reopen_and_compare(home, project)[0] == "loaded"
    svc = open_service(home, True)
    try:
        assert svc.access.handle(ctx, "project").repo.changes_after(0, 100) == []
    finally:
        svc.close()


@pytest.mark.parametrize("why", ["gap", "unnamed", "not_ours"])
def test_a_stale_file_the_log_cannot_repair_is_never_trusted(home: Path, project: Path, why: str) -> None:
    """A row missing from the log (pruned, or a bump by an engram before the log), a write
    that could not name its records, or a row engram did not write: the next open rebuilds."""
    ctx = RequestContext(project, None)
    svc = open_service(home, True)
    ids = fill(svc, ctx, 30)
    svc.close()

    def then(h: Any) -> None:
        if why == "gap":  # straight to the engine, as an older engram's bump would leave it
            first = h.repo.changes_after(0, 1)[0]["n"]
            h.store._use(h.ns, h.db)
            h.store._conn.query(f"DELETE engram_change:{first}")
        elif why == "unnamed":
            h.store.query(h.ns, h.db, "UPDATE memory SET importance = 0.25 WHERE content CONTAINS 'alpha'")
        else:  # keys as text: read as a list of characters it would name none of the records
            last = h.repo.changes_after(0, 1000)[-1]["n"]
            h.store._use(h.ns, h.db)
            h.store._conn.query(f"UPDATE engram_change:{last} SET keys = 'abc'")

    _write_behind_its_back(home, project, [i for n, i in enumerate(ids) if n % 5], then)
    statuses = reopen_and_compare(home, project)
    assert statuses[0].startswith("rebuilt (index file stale"), statuses


def test_with_persistence_off_the_change_log_is_emptied_at_checkpoint(home: Path, project: Path) -> None:
    ctx = RequestContext(project, None)
    svc = open_service(home, False)
    try:
        fill(svc, ctx, 5)
        repo = svc.access.handle(ctx, "project").repo
        assert len(repo.changes_after(0, 100)) >= 4
        svc.access.registry.checkpoint_all()
        assert repo.changes_after(0, 100) == []
        assert not (project / ".claude" / "engram" / "index").exists()
    finally:
        svc.close()


def test_the_change_log_names_what_each_transaction_wrote(fake_service: MemoryService, ctx: RequestContext) -> None:
    h = fake_service.access.handle(ctx, "project")
    a = fake_service.store(ctx, content="first logged memory", type="semantic", scope="project")["memory_id"]
    b = fake_service.store(ctx, content="second logged memory", type="semantic", scope="project")["memory_id"]
    fake_service.link(ctx, b, a, "supersedes")
    h.repo.upsert_entity("e1", "Thing", "thing", "concept")  # unindexed: no row
    n = int(h.repo.changes().rpartition(":")[2])
    rows = h.repo.changes_after(0, 1000)
    assert [r["n"] for r in rows] == list(range(rows[0]["n"], n + 1))  # one row per counter move
    assert rows[-1] == {"n": n, "keys": [], "links": True}
    assert [r["keys"] for r in rows[-3:-1]] == [[a.removeprefix("memory:")], [b.removeprefix("memory:")]]
    assert rows[0]["keys"] is None  # the schema's migrations: anything may have changed


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "missing", "model"])
def test_a_damaged_missing_or_foreign_file_means_a_rebuild(home: Path, project: Path, damage: str) -> None:
    ctx = RequestContext(project, None)
    svc = open_service(home, True)
    fill(svc, ctx, 30)
    svc.close()
    path = StoreRegistry.index_path(project / ".claude" / "engram", "project", project_id(project))
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:-4000])
    elif damage == "corrupt":
        data = bytearray(path.read_bytes())
        data[-20] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "missing":
        path.unlink()
    else:
        meta, arrays = read_index_file(path)
        meta["model"] = "another-model"
        write_index_file(path, meta, {k: np.array(v) for k, v in arrays.items()})
    statuses = reopen_and_compare(home, project)
    assert statuses[0].startswith("rebuilt (index file"), statuses
    # the rebuild is written back at close: the next open loads it
    assert reopen_and_compare(home, project)[0] == "loaded"


# ------------------------------------------------------------------------------ kill -9
#: Where each run is killed: standing after a checkpoint (the files are trusted and loaded),
#: after a write (the project's file is stale and repaired), or at a random moment.
STOPS = ("checkpoint", "write", "any", "any", "checkpoint", "write", "any", "any")


@pytest.mark.timeout(300)
def test_kill_9_during_writes_and_checkpoints_never_leaves_a_wrong_index(home: Path, project: Path) -> None:
    """A process stores, updates, forgets, supersedes, recalls and checkpoints at random; it is
    killed at a point it reached on purpose or at a random moment, then every scope is opened
    from its file (when the stamp allows) and compared with a rebuild from the store. The
    kills after a checkpoint load the file as it is; those after a write repair a stale file
    from the change log."""
    from tests.test_index_early import kill_crash_worker

    rnd = random.Random(20)
    seen: list[str] = []
    for cycle, stop_at in enumerate(STOPS):
        kill_crash_worker(home, project, cycle, stop_at, rnd)
        statuses = reopen_and_compare(home, project)
        if stop_at == "checkpoint":
            assert "loaded" in statuses, statuses
        elif stop_at == "write":
            assert any(s.startswith("loaded and repaired") for s in statuses), statuses
        seen.extend(statuses)
    assert "loaded" in seen  # the comparisons covered trusted files ...
    assert any(s.startswith("loaded and repaired") for s in seen)  # ... and stale ones, repaired
