"""The repository seam: storage owns SurrealQL and record ids, callers see keys and typed rows."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import grimp
import pytest

from engram_mcp.core.ids import new_ulid
from engram_mcp.storage.repository import ScopeRepository
from engram_mcp.storage.rows import (
    EntityRow,
    HistoryEntry,
    LinkRow,
    MentionedEntity,
    MentionRow,
    RelationRow,
    SessionRow,
    StrengthenBump,
)
from engram_mcp.storage.store import SurrealStore

NS, DB = "project", "p_repo_test"


@pytest.fixture
def store(tmp_path: Path):
    s = SurrealStore(tmp_path / "store", label="project").open()
    s.ensure_schema(NS, DB)
    yield s
    s.close()


@pytest.fixture
def repo(store: SurrealStore) -> ScopeRepository:
    return store.repository(NS, DB)


def _record(content: str, **extra) -> dict:
    return {"memory_type": "semantic", "scope": "project", "content": content, "tags": ["t"], **extra}


def _edited(repo: ScopeRepository, key: str, **changes) -> dict:
    """The whole record of `key` with `changes`, as a versioned write sends it."""
    return {**{k: v for k, v in repo.get(key).items() if k != "id"}, **changes}


def _holds_record_id(value) -> bool:
    """Whether an engine record id hides anywhere in a returned value."""
    if hasattr(value, "table_name"):
        return True
    if isinstance(value, dict):
        return any(_holds_record_id(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_record_id(v) for v in value)
    if hasattr(value, "__slots__") and hasattr(value, "__dataclass_fields__"):
        return any(_holds_record_id(getattr(value, f)) for f in value.__dataclass_fields__)
    return False


def test_memory_rows_carry_plain_keys(repo: ScopeRepository):
    a, b = new_ulid(), new_ulid()
    repo.insert(a, _record("alpha"))
    repo.insert(b, _record("beta", embedding=b"\x00" * 16, embedding_model="m"))
    row = repo.get(a)
    assert row is not None and row["id"] == a and row["content"] == "alpha"
    assert repo.get(new_ulid()) is None
    assert {r["id"] for r in repo.get_many([a, b, new_ulid()])} == {a, b}
    assert repo.get_many([]) == []
    recall = {r["id"]: r for r in repo.get_many_for_recall([a, b])}
    assert "embedding" not in recall[b] and recall[b]["has_embedding"] is True and recall[a]["has_embedding"] is False
    assert repo.exists(a) and not repo.exists(new_ulid())
    assert sorted(r["id"] for r in repo.all_memories()) == sorted([a, b])
    assert sorted(r["id"] for r in repo.index_rows()) == sorted([a, b])
    for rows in (repo.all_memories(), repo.index_rows(), repo.get_many([a, b]), [repo.get(a)]):
        assert not _holds_record_id(rows)


def test_key_ranges_read_in_key_order_with_their_bounds(repo: ScopeRepository):
    keys = sorted(new_ulid(1_700_000_000_000 + i * 1000) for i in range(7))
    for k in reversed(keys):
        repo.insert(k, _record(f"memory {k}"))
    assert repo.first_memory_key() == keys[0]
    assert [r["id"] for r in repo.get_key_range(keys[1], keys[4])] == keys[1:5]  # both ends included
    page = repo.index_rows_between(keys[1], keys[5], after=None, limit=10)
    assert [r["id"] for r in page] == keys[1:5]  # the high end excluded
    assert [r["id"] for r in repo.index_rows_between(keys[1], keys[5], after=keys[2], limit=1)] == [keys[3]]
    assert [r["id"] for r in repo.index_rows_between("", "\uffff", after=None, limit=3)] == keys[:3]
    assert not _holds_record_id(page) and "embedding" in page[0]


def test_first_memory_key_of_an_empty_database_is_none(repo: ScopeRepository):
    assert repo.first_memory_key() is None


def test_replace_status_and_counts(repo: ScopeRepository):
    a, b = new_ulid(), new_ulid()
    repo.insert(a, _record("alpha"))
    repo.insert(b, _record("beta"))
    repo.replace(a, _edited(repo, a, content="alpha v2", version=2))
    assert repo.get(a)["content"] == "alpha v2"
    repo.set_status([a, b], "archived")
    assert {r["status"] for r in repo.all_memories()} == {"archived"}
    counts = repo.count_by_type_status()
    assert [(c.memory_type, c.status, c.n) for c in counts] == [("semantic", "archived", 2)]


def test_atomic_writes_land_together_or_not_at_all(repo: ScopeRepository):
    a = new_ulid()
    repo.insert(a, _record("alpha"))
    with pytest.raises(Exception):
        with repo.atomic() as tx:
            tx.add_history(a, version=1, change="update", snapshot={"content": "alpha"})
            tx.insert(a, _record("duplicate key: this statement fails"))
    assert repo.history_of(a) == []  # the history entry was rolled back with the failed insert
    new = _edited(repo, a, content="alpha v2", version=2)
    with repo.atomic() as tx:
        tx.add_history(a, version=1, change="update", snapshot={"content": "alpha"})
        tx.replace(a, new)
    assert repo.get(a)["content"] == "alpha v2"
    assert [(h.version, h.change, h.snapshot) for h in repo.history_of(a)] == [(1, "update", {"content": "alpha"})]
    with pytest.raises(RuntimeError, match="read inside atomic"):
        with repo.atomic() as tx:
            tx.get(a)


def test_history_rows_are_typed_and_keep_their_time(repo: ScopeRepository):
    a = new_ulid()
    repo.insert(a, _record("alpha"))
    when = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    repo.add_history(a, version=1, change="update", snapshot={"content": "old"}, changed_at=when)
    repo.add_history(a, version=2, change="update", snapshot={"content": "older"})
    entries = repo.history_of(a)
    assert all(isinstance(e, HistoryEntry) and e.memory == a for e in entries)
    assert [e.version for e in entries] == [1, 2] and entries[0].changed_at == when
    repo.set_history_snapshot(entries[0].id, {"content": "[forgotten]"})
    assert repo.history_of(a)[0].snapshot == {"content": "[forgotten]"}
    assert {e.id for e in repo.all_history()} == {e.id for e in entries}
    assert not _holds_record_id(repo.all_history())


def test_links_between_memories(repo: ScopeRepository):
    a, b, c = new_ulid(), new_ulid(), new_ulid()
    for k in (a, b, c):
        repo.insert(k, _record(k))
    repo.add_link(a, b, "supersedes", 0.9)
    assert repo.has_link(a, b, "supersedes") and not repo.has_link(b, a, "supersedes")
    when = datetime(2024, 5, 6, tzinfo=timezone.utc)
    repo.import_link(LinkRow(c, a, "similar_to", 0.4, when))
    assert {(x.src, x.dst, x.relation_type) for x in repo.links_of(a)} == {(a, b, "supersedes"), (c, a, "similar_to")}
    imported = [x for x in repo.all_links() if x.src == c]
    assert imported == [LinkRow(c, a, "similar_to", 0.4, when)]


def test_entities_mentions_and_relations(repo: ScopeRepository):
    m = new_ulid()
    repo.insert(m, _record("auth uses tokens"))
    repo.upsert_entity("auth", "AuthService", "authservice", "service")
    repo.upsert_entity("tok", "Tokens", "tokens", "concept")
    repo.set_entity_type("tok", "library")
    repo.add_mention(m, "auth", "mentions")
    repo.bump_mentions("auth", 1)
    assert repo.has_mention(m, "auth", "mentions") and not repo.has_mention(m, "tok", "mentions")
    auth = repo.entity("auth")
    assert isinstance(auth, EntityRow) and (auth.key, auth.name, auth.mention_count) == ("auth", "AuthService", 1)
    assert repo.entity("nope") is None
    assert [e.key for e in repo.entities_by_name("tokens")] == ["tok"] and repo.entity("tok").entity_type == "library"
    assert {e.key for e in repo.entities_by_names(["tokens", "authservice"])} == {"auth", "tok"}
    assert [e.key for e in repo.top_entities(1)] == ["auth"]
    assert {e.key for e in repo.entities(["auth", "tok"])} == {"auth", "tok"}
    assert repo.mentions_of(m) == [MentionedEntity("AuthService", "service", "mentions")]
    assert repo.mentions_of_entities(["auth"]) == [MentionRow(m, "auth", "mentions")]
    assert repo.entities_mentioned_by(m) == ["auth"]

    repo.add_relation("auth", "tok", "depends_on", weight=0.5, evidence=["mem_1"])
    rel = repo.find_relation("auth", "tok", "depends_on")
    assert rel is not None and repo.find_relation("tok", "auth", "depends_on") is None
    repo.add_relation_evidence(rel, ["mem_2"])
    (edge,) = repo.edges_touching(["tok"])
    assert isinstance(edge, RelationRow) and (edge.src, edge.dst) == ("auth", "tok")
    assert edge.weight == pytest.approx(0.6)
    assert set(repo.all_relations()[0].evidence) == {"mem_1", "mem_2"}
    assert repo.count_entities() == 2 and repo.count_relations() == 1
    assert repo.unlink_mentions(m, ["auth", "tok"]) == ["auth"]
    assert repo.mentions_of(m) == [] and repo.all_mentions() == []
    for rows in (repo.all_entities(), repo.all_relations(), repo.edges_touching(["auth"])):
        assert not _holds_record_id(rows)


def test_import_restores_graph_rows_with_their_times(repo: ScopeRepository):
    m = new_ulid()
    repo.insert(m, _record("x"))
    when = datetime(2023, 3, 3, tzinfo=timezone.utc)
    repo.import_entity("e1", {"name": "E1", "name_key": "e1", "entity_type": "t", "mention_count": 1})
    repo.import_entity("e2", {"name": "E2", "name_key": "e2", "entity_type": "t"})
    repo.import_mention(MentionRow(m, "e1", "uses", when))
    repo.import_relation(RelationRow("e1", "e2", "calls", 0.7, ("mem_x",), when))
    assert repo.all_mentions() == [MentionRow(m, "e1", "uses", when)]
    assert repo.all_relations() == [RelationRow("e1", "e2", "calls", 0.7, ("mem_x",), when)]


def test_purge_drops_history_mentions_and_orphan_entities(repo: ScopeRepository):
    a, b = new_ulid(), new_ulid()
    repo.insert(a, _record("secret"))
    repo.insert(b, _record("other"))
    for key, name in (("solo", "Solo"), ("shared", "Shared")):
        repo.upsert_entity(key, name, name.lower(), "t")
    repo.add_mention(a, "solo", "mentions")
    repo.add_mention(a, "shared", "mentions")
    repo.add_mention(b, "shared", "mentions")
    repo.add_history(a, version=1, change="update", snapshot={"content": "secret"})
    skeleton = _edited(repo, a, content="", status="forgotten")
    with repo.atomic() as tx:
        tx.purge(a, skeleton, ["solo", "shared"])
    assert repo.history_of(a) == [] and repo.mentions_of(a) == []
    assert "solo" not in {e.key for e in repo.all_entities()}
    assert repo.get(a)["status"] == "forgotten"


def test_sessions_promotions_queue_and_sightings(repo: ScopeRepository):
    started = datetime(2024, 1, 1, tzinfo=timezone.utc)
    repo.upsert_session("s1", {"session_id": "s1", "status": "active", "started_at": started, "info": {"x": 1}})
    repo.touch_session("s2", "s2")
    s1 = repo.session("s1")
    assert isinstance(s1, SessionRow) and (s1.key, s1.status, s1.started_at, s1.info) == (
        "s1",
        "active",
        started,
        {"x": 1},
    )
    assert repo.session("nope") is None
    assert {s.session_id for s in repo.sessions_with_status("active")} == {"s1", "s2"}

    repo.log_promotion(
        {
            "memory_id": "mem_A",
            "from_scope": "session",
            "to_scope": "project",
            "action": "created",
            "target_id": "mem_B",
        }
    )
    (p,) = repo.promotions_of("mem_A")
    assert (p.memory_id, p.target_id, p.action) == ("mem_A", "mem_B", "created") and repo.promotions_of("mem_C") == []

    keys = [new_ulid() for _ in range(3)]
    for k in keys:
        repo.insert(k, _record(k))
    repo.enqueue(keys[0], "decay", 0.3)
    assert repo.is_queued(keys[0], "decay") and not repo.is_queued(keys[0], "merge")
    repo.enqueue_many(keys[1:], "decay", 0.9)
    assert repo.queued_keys("decay") == set(keys)
    pending = repo.pending_queue(10)
    assert pending[0].priority == pytest.approx(0.9) and {e.memory for e in pending} == set(keys)
    repo.complete_queued(keys[:2])
    assert repo.queued_keys("decay") == {keys[2]}

    repo.upsert_sighting("p_a", {"project": "p", "memory_id": "mem_A", "fingerprint": "f", "embedding_model": "m"})
    (s,) = repo.all_sightings()
    assert (s.project, s.memory_id, s.fingerprint, s.embedding, s.embedding_model) == ("p", "mem_A", "f", None, "m")
    repo.delete_sighting("p_a")
    assert repo.all_sightings() == []
    assert repo.meta_get("k") is None
    repo.meta_set("k", {"v": 1})
    assert repo.meta_get("k") == {"v": 1}


def test_strengthen_bumps_counts_and_skips_deleted(repo: ScopeRepository):
    a = new_ulid()
    repo.insert(a, _record("alpha"))
    at = datetime.now(timezone.utc) + timedelta(days=1)
    repo.strengthen([StrengthenBump(a, 3, at, ("s1",)), StrengthenBump(new_ulid(), 1, at)])
    row = repo.get(a)
    assert row["access_count"] == 3 and row["status"] == "active" and row["metadata"]["recall_sessions"] == ["s1"]
    assert repo.get_many([]) == [] and len(repo.all_memories()) == 1  # the missing key was not created


def test_store_databases(store: SurrealStore):
    store.define_database("session", "s_repo_a")
    assert "s_repo_a" in store.databases("session")
    store.remove_database("session", "s_repo_a")
    assert "s_repo_a" not in store.databases("session")


def test_every_query_is_run_by_the_package():
    """No dead statement: each constant of queries.py is used by engram itself (one, the node
    upsert of engram before schema v3, only builds legacy stores in tests)."""
    from engram_mcp.storage import queries

    source = "\n".join(
        p.read_text() for p in Path(queries.__file__).parents[1].rglob("*.py") if p.name != "queries.py"
    )
    names = [n for n in vars(queries) if n.isupper() and not n.startswith("_")]  # _X: a part of statements
    assert len(names) > 50, "the scan found too few statements: it is not reading queries.py"
    unused = [n for n in names if not re.search(rf"\bq\.{n}\b", source) and n != "UPSERT_ENTITY"]
    assert unused == [], f"queries nothing runs: {unused}"


def test_only_storage_imports_the_surrealdb_sdk():
    """The SDK (and its RecordID) stays behind the repositories: no other package imports it,
    at module level or inside a function."""
    graph = grimp.build_graph("engram_mcp", include_external_packages=True)
    importers = graph.find_modules_that_directly_import("surrealdb")
    outside = sorted(m for m in importers if not m.startswith("engram_mcp.storage"))
    assert importers, "the scan found no importer at all: it is not looking at the package"
    assert outside == [], f"modules outside storage/ import surrealdb: {outside}"
    query_users = graph.find_modules_that_directly_import("engram_mcp.storage.queries")
    assert sorted(m for m in query_users if not m.startswith("engram_mcp.storage")) == []


@pytest.mark.parametrize("limit", [1, 3, 7, 1000])
def test_graph_pages_read_every_row_once_in_id_order(repo: ScopeRepository, store: SurrealStore, limit: int):
    """Keyset pages (an export reads the graph a page per lock hold) must cover each table
    exactly as the whole-table read does, whatever the page size and the ids' kinds."""
    from engram_mcp.storage.repository import GRAPH_PAGE_KINDS

    mems = [new_ulid() for _ in range(6)]
    for i, m in enumerate(mems):
        repo.insert(m, _record(f"memory {i}"))
        repo.add_history(m, version=1, change="created", snapshot={"content": f"memory {i}"})
    for i in range(8):
        repo.upsert_entity(f"e{i}", f"Entity {i}", f"entity {i}", "concept")
    store.query(NS, DB, "CREATE entity:7 SET name = 'numbered', name_key = 'numbered', entity_type = 'x'")  # a number id
    for i, m in enumerate(mems):
        repo.add_mention(m, f"e{i}", "mentions")
        repo.add_mention(m, f"e{(i + 1) % 8}", "uses")
    for i in range(5):
        repo.add_relation(f"e{i}", f"e{i + 1}", "calls", weight=0.5, evidence=[mems[i]])
    for a, b in zip(mems, mems[1:]):
        repo.add_link(a, b, "similar_to", 0.4)
    whole = {"history": repo.all_history(), "entity": repo.all_entities(), "mention": repo.all_mentions(),
             "relation": repo.all_relations(), "link": repo.all_links()}
    for kind in GRAPH_PAGE_KINDS:
        rows, after, calls = [], None, 0
        while True:
            page, after = repo.graph_page(kind, after, limit)
            assert len(page) <= limit
            rows += page
            calls += 1
            if after is None:
                break
        assert sorted(map(repr, rows)) == sorted(map(repr, whole[kind])), kind
        assert len(rows) == len(whole[kind]) and calls <= len(rows) // limit + 1, kind
    assert len(whole["entity"]) == 9 and len(whole["mention"]) == 12 and len(whole["link"]) == 5


def test_strengthen_keeps_the_last_recalling_sessions_not_every_one(repo: ScopeRepository):
    """A memory recalled in session after session keeps only the newest RECALL_SESSIONS_KEPT
    session ids in the store: the list is read only for a count, and it would otherwise grow with
    every session for as long as the memory is used."""
    from engram_mcp.storage.rows import RECALL_SESSIONS_KEPT

    a = new_ulid()
    repo.insert(a, _record("alpha"))
    at = datetime.now(timezone.utc)
    first = tuple(f"s{i}" for i in range(RECALL_SESSIONS_KEPT - 2))
    repo.strengthen([StrengthenBump(a, 1, at, first)])
    repo.strengthen([StrengthenBump(a, 1, at, ("s0", "late-1", "late-2", "late-3", "late-4"))])
    sessions = repo.get(a)["metadata"]["recall_sessions"]
    assert len(sessions) == RECALL_SESSIONS_KEPT
    assert sessions[-4:] == ["late-1", "late-2", "late-3", "late-4"] and sessions[0] == "s2"
