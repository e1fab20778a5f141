"""The stored shape of a memory (storage/memory_shape.py, schema version 5): every field is
checked on write as the table's definitions checked it, defaults are not written, and every read
puts them back, so a record reads the same whether it was written whole or sparse."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import new_ulid
from engram_mcp.storage import queries as q
from engram_mcp.storage.memory_shape import DEFAULTS, FIELDS, TIMES_OF_CREATION, restore, stored
from engram_mcp.storage.schema import MIGRATIONS
from engram_mcp.storage.store import SurrealStore

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)


def _whole(**over) -> dict:
    """A record as the services build one: every field."""
    rec = {
        "memory_type": "semantic", "scope": "project", "content": "the deploy runs on Fridays",
        "tags": [], "importance": 0.5, "confidence": 0.7, "access_count": 0, "status": "active",
        "source": {}, "version": 1, "promotion_chain": [], "metadata": {},
        "embedding": b"\x00" * 16, "embedding_model": "m", "embedding_dim": 4,
        "created_at": T0, "updated_at": T0, "last_accessed_at": T0, "status_changed_at": T0,
    }
    rec.update(over)
    return rec


# ------------------------------------------------------------------ stored / restore
def test_defaults_nones_undeclared_fields_and_creation_times_are_not_written():
    out = stored({**_whole(), "summary": None, "has_embedding": True, "id": "x", "strength": 0.9})
    assert set(out) == {"memory_type", "scope", "content", "status", "embedding", "embedding_model",
                        "embedding_dim", "created_at"}


def test_values_other_than_the_default_are_written():
    later = T0 + timedelta(hours=1)
    rec = _whole(tags=["a"], importance=0.9, confidence=0.2, access_count=3, source={"tool": "Edit"}, version=2,
                 promotion_chain=[{"from": "session"}], metadata={"k": 1}, updated_at=later,
                 last_accessed_at=later, status_changed_at=later, summary="s", category="decision",
                 session_id="s1", forgotten_at=later, forget_reason="r")
    out = stored(rec)
    assert out == {k: v for k, v in rec.items()}


def test_status_and_creation_time_are_always_written():
    before = datetime.now(timezone.utc)
    out = stored({"memory_type": "episodic", "scope": "session", "content": "x"})
    assert out["status"] == "created"
    assert before <= out["created_at"] <= datetime.now(timezone.utc)


@pytest.mark.parametrize(
    "name,value",
    [("memory_type", "note"), ("scope", "team"), ("status", "ACTIVE"), ("content", 3), ("summary", ["x"]),
     ("tags", ["a", 1]), ("tags", "a"), ("importance", 1.5), ("importance", math.nan), ("importance", True),
     ("confidence", -0.1), ("access_count", "3"), ("access_count", True), ("access_count", 1.5),
     ("version", "1"), ("source", []), ("metadata", "x"), ("promotion_chain", [1]),
     ("created_at", "2026-11-01T12:00:00Z"), ("updated_at", 0), ("embedding", "AAAA"), ("embedding_dim", "4"),
     ("forget_reason", 1)],
)
def test_a_bad_field_is_refused_by_name_before_the_engine(name, value):
    with pytest.raises(InvalidInput) as err:
        stored(_whole(**{name: value}))
    assert err.value.field == name


@pytest.mark.parametrize("name", ["memory_type", "scope", "content"])
def test_a_record_without_a_required_field_is_refused(name):
    rec = _whole()
    del rec[name]
    with pytest.raises(InvalidInput) as err:
        stored(rec)
    assert err.value.field == name


def test_numbers_are_stored_as_their_declared_type():
    out = stored(_whole(importance=1, confidence=0, access_count=4.0, version=3.0))
    assert out["importance"] == 1.0 and isinstance(out["importance"], float)
    assert isinstance(out["confidence"], float) and "confidence" in out  # 0.0 is not the default 0.7
    assert out["access_count"] == 4 and isinstance(out["access_count"], int)
    assert out["version"] == 3 and isinstance(out["version"], int)


def test_restore_gives_back_the_whole_record_and_fresh_containers():
    rec = _whole()
    back = restore(stored(rec))
    assert back == rec
    other = restore(stored(rec))
    back["tags"].append("x")
    back["metadata"]["k"] = 1
    assert other["tags"] == [] and other["metadata"] == {} and DEFAULTS["tags"] == [] and DEFAULTS["metadata"] == {}


def test_restore_of_a_selection_fills_only_the_selected_fields():
    row = {"id": "k", "access_count": None, "tags": None, "created_at": T0, "last_accessed_at": None}
    assert restore(row, whole=False) == {"id": "k", "access_count": 0, "tags": [], "created_at": T0,
                                         "last_accessed_at": T0}


def test_every_declared_field_has_a_check_and_the_defaults_and_times_are_declared():
    assert set(DEFAULTS) <= set(FIELDS) and set(TIMES_OF_CREATION) <= set(FIELDS)
    for name, default in DEFAULTS.items():
        assert FIELDS[name](default, name) == default


# ------------------------------------------------------------------ the real engine
@pytest.fixture()
def store(tmp_path):
    s = SurrealStore(tmp_path / "store", label="project").open()
    s.ensure_schema("project", "p_shape")
    yield s
    s.close()


def test_every_read_gives_back_what_was_written_whole(store):
    repo = store.repository("project", "p_shape")
    later = T0 + timedelta(days=2)
    records = {new_ulid(): _whole(content=f"memory {i}", access_count=i % 2, tags=["t"] * (i % 2),
                                  last_accessed_at=later if i % 3 else T0) for i in range(6)}
    keys = list(records)
    repo.insert(keys[0], records[keys[0]])
    repo.insert_many((k, records[k]) for k in keys[1:])
    edited = _whole(content="memory 0, edited", version=2, updated_at=later)
    repo.replace(keys[0], edited)
    records[keys[0]] = edited
    expect = {k: {**r, "id": k} for k, r in records.items()}
    assert repo.get(keys[0]) == expect[keys[0]]
    assert {r["id"]: r for r in repo.get_many(keys)} == expect
    assert {r["id"]: r for r in repo.all_memories()} == expect
    assert {r["id"]: r for r in repo.get_key_range(min(keys), max(keys))} == expect
    for row in repo.index_rows():
        whole = expect[row["id"]]
        assert {k: v for k, v in row.items() if k != "id" and v is not None} == {
            k: whole[k] for k in row if k != "id" and whole.get(k) is not None}


def test_the_engines_own_statements_read_sparse_records(store):
    repo = store.repository("project", "p_shape")
    key = new_ulid()
    repo.insert(key, _whole(status="created"))
    assert "access_count" not in store.query("project", "p_shape", q.GET_MEMORY, {"id": key})[0]
    from engram_mcp.storage.rows import StrengthenBump

    repo.strengthen([StrengthenBump(key=key, n=3, at=T0 + timedelta(hours=1), sessions=("s1",))])
    rec = repo.get(key)
    assert rec["access_count"] == 3 and rec["status"] == "active" and rec["metadata"] == {"recall_sessions": ["s1"]}
    assert [(c.memory_type, c.status, c.n) for c in repo.count_by_type_status()] == [("semantic", "active", 1)]


def test_a_torn_history_row_of_a_sparse_memory_is_found(store):
    """A history row at or above the version of a memory written without its version (1) is an
    update that never landed; rows of a memory that no longer exists are left alone."""
    repo = store.repository("project", "p_shape")
    live, gone = new_ulid(), new_ulid()
    repo.insert(live, _whole())
    repo.add_history(live, version=1, change="update", snapshot={"content": "x"})
    repo.add_history(gone, version=1, change="update", snapshot={"content": "y"})
    dropped = store.query("project", "p_shape", q.DROP_TORN_HISTORY) or []
    assert [str(r["memory"]).split(":", 1)[1].strip("⟨⟩`") for r in dropped] == [live]
    assert len(repo.history_of(gone)) == 1


def test_a_version_4_store_opens_schemaless_and_reads_the_same(tmp_path):
    s = SurrealStore(tmp_path / "v4", label="project").open()
    try:
        s.ensure_schema("project", "p_old", migrations=MIGRATIONS[:4])
        repo = s.repository("project", "p_old")
        key = new_ulid()
        s.query("project", "p_old", q.CREATE_MEMORY, {"id": key, "record": _whole(tags=["kept"])})
        before = repo.get(key)
        assert s.query("project", "p_old", "INFO FOR TABLE memory")["fields"]
        s.ensure_schema("project", "p_old")
        assert s.query("project", "p_old", "INFO FOR TABLE memory")["fields"] == {}
        assert repo.get(key) == before
        with pytest.raises(InvalidInput):  # the checks moved to Python, they did not go away
            repo.insert(new_ulid(), _whole(status="bogus"))
    finally:
        s.close()


def test_a_vector_is_written_packed_and_read_whole_as_float32(store):
    """Issue 36: the store keeps a vector as int8 with a scale (core/vector_codec.py, 4 + dim
    bytes instead of 4 * dim); a whole record reads it as float32 bytes again, the index's rows
    keep it packed, and a record written before (float32) reads as it was written."""
    import numpy as np

    from engram_mcp.core import vector_codec

    repo = store.repository("project", "p_vec")
    rng = np.random.default_rng(36)
    vecs = rng.standard_normal((4, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    keys = [new_ulid() for _ in range(4)]
    recs = [_whole(content=f"vector {i}", embedding=vecs[i].astype("<f4").tobytes(), embedding_dim=8) for i in range(4)]
    repo.insert(keys[0], recs[0])
    repo.insert_many(zip(keys[1:3], recs[1:3], strict=True))
    legacy = {**stored(_whole(content="legacy")), "embedding": vecs[3].astype("<f4").tobytes(), "embedding_dim": 8}
    repo._q(q.CREATE_MEMORY, {"id": keys[3], "record": legacy})  # as an engram before packing wrote it
    assert recs[0]["embedding"] == vecs[0].astype("<f4").tobytes()  # the caller's record is not changed
    from engram_mcp.storage.repository import key_of, record_id

    raw = {key_of(r["id"]): r for r in repo._q(q.GET_MEMORIES, {"ids": [record_id("memory", k) for k in keys]})}
    for i, key in enumerate(keys[:3]):
        assert bytes(raw[key]["embedding"]) == vector_codec.pack(vecs[i])
        whole = repo.get(key)
        assert whole["embedding"] == vector_codec.float_bytes(vector_codec.pack(vecs[i]), 8)
        assert vector_codec.pack_float_bytes(whole["embedding"], 8) == vector_codec.pack(vecs[i])  # read, written back
        assert np.abs(np.frombuffer(whole["embedding"], dtype="<f4") - vecs[i]).max() < 0.01
    assert bytes(raw[keys[3]]["embedding"]) == vecs[3].astype("<f4").tobytes()
    assert repo.get(keys[3])["embedding"] == vecs[3].astype("<f4").tobytes()
    rows = {r["id"]: r for r in repo.index_rows()}
    assert bytes(rows[keys[1]]["embedding"]) == vector_codec.pack(vecs[1])
    assert bytes(rows[keys[3]]["embedding"]) == vecs[3].astype("<f4").tobytes()
