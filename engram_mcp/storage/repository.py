"""The repository of one scope database: every read and write the services make, by intent.

`storage/queries.py` holds the SurrealQL; this module is the only one above the store that
runs it, and it owns record ids: callers pass plain keys (a memory's ULID, an entity's key)
and get typed rows back (`storage/rows.py`), never a `surrealdb.RecordID` or a raw engine
dict. So the services need neither the SDK nor the query text, and a change of schema or of
engine touches storage only.

A repository runs statements through two callables it is given (one statement; several in
one transaction), which is how `ScopeHandle` adds its write-behind flush before each one.
Writes that must land together are made inside `atomic()`:

    with repo.atomic() as tx:
        tx.add_history(key, version=3, change="update", snapshot=old)
        tx.replace(key, record)

collects the writes and runs them as one transaction when the block ends (nothing is
written if it raises). Reads are refused inside `atomic()`: they would see none of it.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator

from engram_mcp.storage import queries as q
from engram_mcp.storage.memory_shape import restore, stored, stored_many
from engram_mcp.storage.rows import (
    RECALL_SESSIONS_KEPT,
    EntityRow,
    HistoryEntry,
    LinkRow,
    MemoryRecord,
    MentionedEntity,
    MentionRow,
    ProjectChangeRow,
    PromotionEntry,
    QueueEntry,
    RelationRow,
    SessionRow,
    SightingRow,
    StrengthenBump,
    TypeStatusCount,
)

Params = dict[str, Any]
Statement = tuple[str, Params]
RunOne = Callable[[str, "Params | None"], Any]
RunMany = Callable[[list[Statement]], list[Any]]
_READ_HEADS = frozenset({"SELECT", "INFO", "RETURN"})


def record_id(table: str, key: str) -> Any:
    """The engine's id of `table:key` (the SDK is imported on first use: ~0.3 s)."""
    from surrealdb import RecordID

    return RecordID(table, key)


def record_range(table: str, first: Any, last: Any, *, after: bool = False, before: bool = False) -> Any:
    """The engine's id range from `table:first` to `table:last`, each included unless `after`
    (first excluded) or `before` (last excluded) says otherwise; passed as a parameter. A None
    end is open: the range runs from the table's first id, or to its last, of every kind."""
    from surrealdb import RecordID
    from surrealdb.data.types.range import BoundExcluded, BoundIncluded, Range

    begin = None if first is None else BoundExcluded(first) if after else BoundIncluded(first)
    end = None if last is None else BoundExcluded(last) if before else BoundIncluded(last)
    return RecordID(table, Range(begin, end))  # type: ignore[arg-type]  # None: NONE, unbounded (tests/test_storage_repository.py)


def key_of(value: Any) -> str:
    """The bare key of an engine record id (or of a `table:key` string, or of a key)."""
    key = getattr(value, "id", None)
    if key is None:
        key = getattr(value, "record_id", None)
    if key is None:
        text = str(value)
        key = text.split(":", 1)[1] if ":" in text else text
    return str(key)


def _memory(row: dict[str, Any], whole: bool = True) -> MemoryRecord:
    """An engine row of `memory` as a MemoryRecord: its id becomes the bare key and the fields
    left unwritten are put back (`memory_shape.restore`; `whole`: a whole record, not a
    selection of fields). In place: the SDK's dict is ours, and a copy per row would cost on
    the bulk reads."""
    if "id" in row:
        row["id"] = key_of(row["id"])
    return restore(row, whole=whole)


def _memories(rows: Any, whole: bool = True) -> list[MemoryRecord]:
    return [_memory(r, whole) for r in rows or []]


def _count(rows: Any) -> int:
    return int(rows[0]["n"]) if rows else 0


def _history(row: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(
        id=key_of(row.get("id")),
        memory=key_of(row.get("memory")),
        version=row.get("version"),
        change=row.get("change"),
        snapshot=row.get("snapshot") or {},
        changed_at=row.get("changed_at"),
    )


def _entity(row: dict[str, Any]) -> EntityRow:
    return EntityRow(
        key=key_of(row.get("id")),
        name=row.get("name") or "",
        entity_type=row.get("entity_type") or "",
        name_key=row.get("name_key"),
        description=row.get("description") or "",
        mention_count=int(row.get("mention_count") or 0),
        created_at=row.get("created_at"),
        updated_at=row.get("updated_at"),
    )


def _relation(row: dict[str, Any]) -> RelationRow:
    return RelationRow(
        src=key_of(row["in"]),
        dst=key_of(row["out"]),
        relation_type=row.get("relation_type") or "",
        weight=row.get("weight"),
        evidence=tuple(row.get("evidence") or ()),
        created_at=row.get("created_at"),
    )


def _link(row: dict[str, Any]) -> LinkRow:
    return LinkRow(
        src=key_of(row["in"]),
        dst=key_of(row["out"]),
        relation_type=row.get("relation_type") or "",
        strength=row.get("strength"),
        created_at=row.get("created_at"),
    )


def _session(row: dict[str, Any]) -> SessionRow:
    return SessionRow(
        key=key_of(row.get("id")),
        session_id=row.get("session_id"),
        status=row.get("status"),
        started_at=row.get("started_at"),
        last_seen_at=row.get("last_seen_at"),
        ended_at=row.get("ended_at"),
        memories_promoted=row.get("memories_promoted"),
        summary=row.get("summary"),
        info=row.get("info") or {},
    )


def _mention(row: dict[str, Any]) -> MentionRow:
    return MentionRow(key_of(row["in"]), key_of(row["out"]), row.get("relationship") or "", row.get("created_at"))


#: The graph tables `ScopeRepository.graph_page` reads: kind -> (table, page query, row converter).
_GRAPH_PAGES: dict[str, tuple[str, str, Callable[[dict[str, Any]], Any]]] = {
    "history": ("memory_history", q.HISTORY_PAGE, _history),
    "entity": ("entity", q.ENTITIES_PAGE, _entity),
    "mention": ("mentions", q.MENTIONS_PAGE, _mention),
    "relation": ("relates_to", q.RELATIONS_PAGE, _relation),
    "link": ("memory_link", q.LINKS_PAGE, _link),
}
GRAPH_PAGE_KINDS = tuple(_GRAPH_PAGES)


class ScopeRepository:
    """Reads and writes of one scope database (module docstring)."""

    def __init__(self, run: RunOne, run_many: RunMany) -> None:
        self._run = run
        self._run_many = run_many

    def _q(self, sql: str, params: Params | None = None) -> Any:
        return self._run(sql, params)

    @contextmanager
    def atomic(self) -> Iterator["ScopeRepository"]:
        """A repository whose writes are collected and committed together at the end."""
        collected: list[Statement] = []
        yield _Collecting(collected)
        if collected:
            self._run_many(collected)

    # -- meta -------------------------------------------------------------------------
    def meta_get(self, key: str) -> Any:
        """A value kept in `engram_meta` (None when absent)."""
        return self._q(q.GET_META, {"key": key})

    def meta_set(self, key: str, value: Any) -> None:
        self._q(q.SET_META, {"key": key, "value": value})

    def changes(self) -> str:
        """The database's change stamp, "<store id>:<counter>": the counter is bumped with every
        write that may change what the retrieval index holds (all but queries.UNINDEXED_WRITES),
        the id is drawn at the first bump; "" before the first one."""
        row = self._q(q.GET_CHANGES)
        if isinstance(row, list):
            row = row[0] if row else None
        if not isinstance(row, dict) or row.get("n") is None:
            return ""
        return f"{row.get('store_id')}:{int(row['n'])}"

    def start_changes(self) -> None:
        """Create the change counter of a database that never had an indexed write since it
        existed (a store older than the counter): its index file can then be stamped."""
        self._q(q.BUMP_CHANGES)

    def changes_after(self, after: int, limit: int) -> list[dict[str, Any]]:
        """The change log's rows after counter value `after`, oldest first, at most `limit`:
        ``{"n": counter value, "keys": memory keys or None (any), "links": bool}``."""
        rows = self._q(q.CHANGES_AFTER, {"after": int(after), "limit": int(limit)}) or []
        return [r for r in rows if isinstance(r, dict)]

    def prune_changes(self, upto: int) -> None:
        """Drop the change log's rows up to counter value `upto` (an index file stamped `upto`
        no longer needs them); moves no counter."""
        self._q(q.PRUNE_CHANGES, {"upto": int(upto)})

    # -- memories ---------------------------------------------------------------------
    def get(self, key: str) -> MemoryRecord | None:
        rows = self._q(q.GET_MEMORY, {"id": key}) or []
        return _memory(rows[0]) if rows else None

    def imported_from(self, kind: str) -> list[dict[str, Any]]:
        """{key, source, status} of every memory an importer of `kind` brought."""
        rows = self._q(q.IMPORTED_FROM, {"kind": kind}) or []
        return [{"key": key_of(r["id"]), "source": r.get("source") or {}, "status": r.get("status")} for r in rows]

    def get_many(self, keys: Iterable[str]) -> list[MemoryRecord]:
        """The records of `keys` that exist (in no particular order)."""
        ids = [record_id("memory", k) for k in keys]
        return _memories(self._q(q.GET_MEMORIES, {"ids": ids})) if ids else []

    def get_key_range(self, first: str, last: str) -> list[MemoryRecord]:
        """The records whose keys sort from `first` to `last` (both included), in key order.

        One range read of the table, where `get_many` looks each key up and first encodes every
        id it is given: 2,000 records of a 100k store took 0.29 s here against 0.42 s."""
        return _memories(self._q(q.GET_MEMORY_RANGE, {"range": record_range("memory", first, last)}))

    def get_many_for_recall(self, keys: Iterable[str]) -> list[MemoryRecord]:
        """Records without their vector (1.5 KB each); `has_embedding` says whether they have one."""
        ids = [record_id("memory", k) for k in keys]
        return _memories(self._q(q.GET_MEMORIES_FOR_RECALL, {"ids": ids})) if ids else []

    def exists(self, key: str) -> bool:
        return bool(self._q(q.EXISTS_MEMORY, {"id": key}))

    def all_memories(self) -> list[MemoryRecord]:
        return _memories(self._q(q.ALL_MEMORIES))

    def index_rows(self) -> list[MemoryRecord]:
        """Every memory with only the fields the retrieval index holds (store open)."""
        return _memories(self._q(q.INDEX_ROWS), whole=False)

    def index_rows_of(self, keys: Iterable[str]) -> list[MemoryRecord]:
        """`index_rows` of the records of `keys` that exist (in no particular order)."""
        ids = [record_id("memory", k) for k in keys]
        return _memories(self._q(q.INDEX_ROWS_OF, {"ids": ids}), whole=False) if ids else []

    def index_rows_between(self, low: str, high: str, *, after: str | None, limit: int) -> list[MemoryRecord]:
        """`index_rows` of the keys from `low` (included) to `high` (excluded), starting after
        `after` when given, in key order, at most `limit`: a rebuild's page (services/handles.py)."""
        if after is None:
            rng = record_range("memory", low, high, before=True)
        else:
            rng = record_range("memory", after, high, after=True, before=True)
        return _memories(self._q(q.INDEX_ROWS_RANGE, {"range": rng, "limit": int(limit)}), whole=False)

    def first_memory_key(self) -> str | None:
        """The smallest memory key, or None when the database holds no memory."""
        rows = self._q(q.FIRST_MEMORY_KEY)
        return key_of(rows[0]) if rows else None

    # Every memory write goes through `memory_shape.stored`: checked field by field (the table
    # is schemaless), written without the fields at their defaults.
    def insert(self, key: str, record: dict[str, Any]) -> None:
        """Create memory `key` (fails if it exists)."""
        self._q(q.CREATE_MEMORY, {"id": key, "record": stored(record)})

    def insert_many(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Create many memories in one statement (fails whole if any `key` exists, or if any
        record is refused): a bulk import pays one statement per batch instead of one per memory."""
        pairs = list(items)
        rows = stored_many([record for _key, record in pairs])  # vectors packed in one pass
        for (key, _record), row in zip(pairs, rows, strict=True):
            row["id"] = record_id("memory", key)
        if rows:
            self._q(q.INSERT_MEMORIES, {"rows": rows})

    def replace(self, key: str, record: dict[str, Any]) -> None:
        """Overwrite memory `key` with `record` (its whole content)."""
        self._q(q.REPLACE_MEMORY, {"id": key, "record": stored(record)})

    def set_status(self, keys: Iterable[str], status: str) -> None:
        ids = [record_id("memory", k) for k in keys]
        if ids:
            self._q(q.SET_STATUS, {"ids": ids, "status": status})

    def strengthen(self, bumps: Iterable[StrengthenBump]) -> None:
        """Write recall strengthening held back in memory (services/strengthen.py); a memory
        deleted in the meantime is skipped (UPDATE never creates)."""
        batch = [{"id": record_id("memory", b.key), "n": b.n, "at": b.at, "sessions": list(b.sessions)} for b in bumps]
        if batch:
            self._q(q.STRENGTHEN_BATCH, {"batch": batch, "kept": RECALL_SESSIONS_KEPT})

    def count_by_type_status(self) -> list[TypeStatusCount]:
        return [
            TypeStatusCount(r["memory_type"], r["status"], int(r["n"])) for r in self._q(q.COUNT_BY_TYPE_STATUS) or []
        ]

    # -- history ----------------------------------------------------------------------
    def add_history(
        self,
        memory_key: str,
        *,
        version: int | None,
        change: str | None,
        snapshot: dict[str, Any],
        changed_at: datetime | None = None,
    ) -> None:
        """Keep a previous version of a memory (`changed_at` defaults to now)."""
        entry: dict[str, Any] = {
            "memory": record_id("memory", memory_key),
            "version": version,
            "change": change,
            "snapshot": snapshot,
        }
        if changed_at is not None:
            entry["changed_at"] = changed_at
        self._q(q.CREATE_HISTORY, {"entry": entry})

    def history_of(self, memory_key: str) -> list[HistoryEntry]:
        """A memory's previous versions, oldest first."""
        return [_history(r) for r in self._q(q.HISTORY_OF, {"memory": record_id("memory", memory_key)}) or []]

    def all_history(self) -> list[HistoryEntry]:
        return [_history(r) for r in self._q(q.ALL_HISTORY) or []]

    def graph_page(self, kind: str, after: Any, limit: int) -> tuple[list[Any], Any]:
        """One page of a graph table (`GRAPH_PAGE_KINDS`) in id order: the first `limit` rows
        after the id `after` (a value `graph_page` returned; None: from the start), and the id
        to pass next, None once the table is read to its end."""
        table, query, convert = _GRAPH_PAGES[kind]
        rows = self._q(query, {"range": record_range(table, after, None, after=True), "limit": int(limit)}) or []
        last = rows[-1]["id"].id if len(rows) >= limit else None  # the id as the engine holds it (any kind)
        return [convert(r) for r in rows], last

    def set_history_snapshot(self, entry_id: str, snapshot: dict[str, Any]) -> None:
        self._q(q.SET_HISTORY_SNAPSHOT, {"id": record_id("memory_history", entry_id), "snapshot": snapshot})

    # -- purge ------------------------------------------------------------------------
    def entities_mentioned_by(self, memory_key: str) -> list[str]:
        """Keys of the entities a memory mentions."""
        rows = self._q(q.ENTITIES_MENTIONED_BY, {"memory": record_id("memory", memory_key)}) or []
        return [key_of(e) for e in rows]

    def purge(self, memory_key: str, skeleton: dict[str, Any], entity_keys: list[str]) -> None:
        """Replace a memory by its skeleton and drop its history, its mentions and the entities
        among `entity_keys` that nothing else mentions (with their edges)."""
        rid = record_id("memory", memory_key)
        self._q(q.DELETE_HISTORY_OF, {"memory": rid})
        self._q(q.DELETE_MENTIONS_OF, {"memory": rid})
        self._q(q.DELETE_ORPHAN_ENTITIES, {"entities": [record_id("entity", k) for k in entity_keys]})
        self._q(q.REPLACE_MEMORY, {"id": memory_key, "record": stored(skeleton)})

    # -- memory -> memory links -------------------------------------------------------
    def has_link(self, src: str, dst: str, relation_type: str) -> bool:
        params = {"a": record_id("memory", src), "b": record_id("memory", dst), "relation_type": relation_type}
        return bool(self._q(q.FIND_LINK, params))

    def add_link(self, src: str, dst: str, relation_type: str, strength: float) -> None:
        params = {"a": record_id("memory", src), "b": record_id("memory", dst), "relation_type": relation_type}
        self._q(q.CREATE_LINK, {**params, "strength": float(strength)})

    def import_link(self, link: LinkRow) -> None:
        """A link restored with its own creation time."""
        self._q(
            q.IMPORT_LINK,
            {
                "a": record_id("memory", link.src),
                "b": record_id("memory", link.dst),
                "relation_type": link.relation_type,
                "strength": link.strength,
                "created_at": link.created_at,
            },
        )

    def links_of(self, memory_key: str) -> list[LinkRow]:
        """Links from or to a memory."""
        return [_link(r) for r in self._q(q.LINKS_OF_MEMORY, {"memory": record_id("memory", memory_key)}) or []]

    def all_links(self) -> list[LinkRow]:
        return [_link(r) for r in self._q(q.ALL_LINKS) or []]

    # -- entities ---------------------------------------------------------------------
    def entity(self, key: str) -> EntityRow | None:
        rows = self._q(q.GET_ENTITY, {"key": key}) or []
        return _entity(rows[0]) if rows else None

    def entities(self, keys: Iterable[str]) -> list[EntityRow]:
        ids = [record_id("entity", k) for k in keys]
        return [_entity(r) for r in self._q(q.GET_ENTITIES, {"ids": ids}) or []] if ids else []

    def entities_by_name(self, name_key: str) -> list[EntityRow]:
        """The nodes of one case-folded name (stores older than schema v3 may hold several)."""
        return [_entity(r) for r in self._q(q.ENTITIES_BY_NAME_KEY, {"name_key": name_key}) or []]

    def entities_by_names(self, name_keys: list[str]) -> list[EntityRow]:
        """The nodes of any of the case-folded names."""
        return [_entity(r) for r in self._q(q.ENTITIES_BY_NAME_KEYS, {"name_keys": name_keys}) or []]

    def top_entities(self, limit: int) -> list[EntityRow]:
        """The most mentioned nodes."""
        return [_entity(r) for r in self._q(q.TOP_ENTITIES, {"limit": limit}) or []]

    def all_entities(self) -> list[EntityRow]:
        return [_entity(r) for r in self._q(q.ALL_ENTITIES) or []]

    def upsert_entity(self, key: str, name: str, name_key: str, entity_type: str) -> None:
        record = {"name": name, "name_key": name_key, "entity_type": entity_type}
        self._q(q.UPSERT_ENTITY_NODE, {"key": key, "record": record})

    def import_entity(self, key: str, record: dict[str, Any]) -> None:
        """A node restored as exported (fails if `key` exists)."""
        self._q(q.IMPORT_ENTITY, {"key": key, "record": record})

    def set_entity_type(self, key: str, entity_type: str) -> None:
        self._q(q.SET_ENTITY_TYPE, {"key": key, "entity_type": entity_type})

    def bump_mentions(self, key: str, n: int) -> None:
        """Add `n` (may be negative) to an entity's count of mentioning memories."""
        self._q(q.BUMP_ENTITY_MENTIONS, {"key": key, "n": n})

    def count_entities(self) -> int:
        return _count(self._q(q.COUNT_ENTITIES))

    # -- mentions (memory -> entity) --------------------------------------------------
    def _mention_params(self, memory_key: str, entity_key: str, relationship: str) -> Params:
        return {
            "memory": record_id("memory", memory_key),
            "entity": record_id("entity", entity_key),
            "relationship": relationship,
        }

    def has_mention(self, memory_key: str, entity_key: str, relationship: str) -> bool:
        return bool(self._q(q.FIND_MENTION, self._mention_params(memory_key, entity_key, relationship)))

    def add_mention(self, memory_key: str, entity_key: str, relationship: str) -> None:
        self._q(q.RELATE_MENTION, self._mention_params(memory_key, entity_key, relationship))

    def import_mention(self, mention: MentionRow) -> None:
        """A mention restored with its own creation time."""
        params = self._mention_params(mention.memory, mention.entity, mention.relationship)
        self._q(q.IMPORT_MENTION, {**params, "created_at": mention.created_at})

    def import_mentions(self, mentions: Iterable[MentionRow]) -> None:
        """Many mentions restored with their own creation times, in one statement (fails whole
        if the engine refuses one: `import_mention` then finds which)."""
        rows = [
            {
                "in": record_id("memory", m.memory),
                "out": record_id("entity", m.entity),
                "relationship": m.relationship,
                "created_at": m.created_at,
            }
            for m in mentions
        ]
        if rows:
            self._q(q.IMPORT_MENTIONS, {"rows": rows})

    def unlink_mentions(self, memory_key: str, entity_keys: list[str]) -> list[str]:
        """Remove a memory's mentions of the entities; the entity key of each removed edge."""
        params = {"memory": record_id("memory", memory_key), "entities": [record_id("entity", k) for k in entity_keys]}
        return [key_of(edge["out"]) for edge in self._q(q.UNLINK_MENTIONS_BY_NAME, params) or []]

    def mentions_of(self, memory_key: str) -> list[MentionedEntity]:
        """The entities a memory mentions: name, type and relationship."""
        rows = self._q(q.MENTIONS_OF_MEMORY, {"memory": record_id("memory", memory_key)}) or []
        return [MentionedEntity(r.get("name"), r.get("entity_type") or "", r.get("relationship") or "") for r in rows]

    def mentions_of_entities(self, entity_keys: Iterable[str]) -> list[MentionRow]:
        """The mentions of any of the entities (memory, entity, relationship)."""
        ids = [record_id("entity", k) for k in entity_keys]
        if not ids:
            return []
        rows = self._q(q.MEMORIES_OF_ENTITIES, {"entities": ids}) or []
        return [MentionRow(key_of(r["memory"]), key_of(r["entity"]), r.get("relationship") or "") for r in rows]

    def all_mentions(self) -> list[MentionRow]:
        return [_mention(m) for m in self._q(q.ALL_MENTIONS) or []]

    # -- relations (entity -> entity) -------------------------------------------------
    def _relation_params(self, src: str, dst: str, relation_type: str) -> Params:
        return {"a": record_id("entity", src), "b": record_id("entity", dst), "relation_type": relation_type}

    def find_relation(self, src: str, dst: str, relation_type: str) -> str | None:
        """The key of the `src -relation_type-> dst` edge, None when there is none."""
        rows = self._q(q.FIND_RELATION, self._relation_params(src, dst, relation_type)) or []
        return key_of(rows[0]) if rows else None

    def add_relation(self, src: str, dst: str, relation_type: str, *, weight: float, evidence: list[str]) -> None:
        self._q(
            q.RELATE_ENTITIES,
            {**self._relation_params(src, dst, relation_type), "weight": weight, "evidence": evidence},
        )

    def add_relation_evidence(self, relation_key: str, evidence: list[str]) -> None:
        """More evidence (memory ids) for an edge, which strengthens it a little."""
        self._q(q.ADD_RELATION_EVIDENCE, {"id": record_id("relates_to", relation_key), "evidence": evidence})

    def import_relation(self, relation: RelationRow) -> None:
        """An edge restored with its own creation time."""
        params = self._relation_params(relation.src, relation.dst, relation.relation_type)
        self._q(
            q.IMPORT_RELATION,
            {
                **params,
                "weight": relation.weight,
                "evidence": list(relation.evidence),
                "created_at": relation.created_at,
            },
        )

    def edges_touching(self, entity_keys: list[str]) -> list[RelationRow]:
        """Edges out of, then into, any of the entities (two indexed lookups)."""
        ids = [record_id("entity", k) for k in entity_keys]
        rows = [*(self._q(q.EDGES_FROM, {"frontier": ids}) or []), *(self._q(q.EDGES_TO, {"frontier": ids}) or [])]
        return [_relation(r) for r in rows]

    def all_relations(self) -> list[RelationRow]:
        return [_relation(r) for r in self._q(q.ALL_RELATIONS) or []]

    def count_relations(self) -> int:
        return _count(self._q(q.COUNT_RELATIONS))

    # -- sessions and promotion -------------------------------------------------------
    def session(self, key: str) -> SessionRow | None:
        rows = self._q(q.GET_SESSION, {"key": key}) or []
        return _session(rows[0]) if rows else None

    def sessions_with_status(self, status: str) -> list[SessionRow]:
        """Registered sessions with `status`, the most recently started first."""
        return [_session(r) for r in self._q(q.SESSIONS_BY_STATUS, {"status": status}) or []]

    def upsert_session(self, key: str, fields: dict[str, Any]) -> None:
        """Create a session's entry or merge `fields` into it."""
        self._q(q.UPSERT_SESSION, {"key": key, "fields": fields})

    def touch_session(self, key: str, session_id: str) -> None:
        """Mark a session as seen now (activity keeps it from being recovered as abandoned)."""
        self._q(q.TOUCH_SESSION, {"key": key, "session_id": session_id})

    def promotions_of(self, memory_id: str) -> list[PromotionEntry]:
        """Where memory `memory_id` (formatted id) was promoted to in this database."""
        return [
            PromotionEntry(
                r.get("memory_id") or memory_id,
                r.get("target_id"),
                r.get("action"),
                r.get("from_scope"),
                r.get("to_scope"),
            )
            for r in self._q(q.PROMOTIONS_OF, {"memory_id": memory_id}) or []
        ]

    def log_promotion(self, entry: dict[str, Any]) -> None:
        self._q(q.CREATE_PROMOTION_LOG, {"entry": entry})

    # -- consolidation queue ----------------------------------------------------------
    def is_queued(self, memory_key: str, reason: str) -> bool:
        return bool(self._q(q.QUEUED_FOR, {"memory": record_id("memory", memory_key), "reason": reason}))

    def enqueue(self, memory_key: str, reason: str, priority: float) -> None:
        entry = {
            "memory": record_id("memory", memory_key),
            "reason": reason,
            "priority": float(priority),
            "status": "pending",
        }
        self._q(q.ENQUEUE, {"entry": entry})

    def queued_keys(self, reason: str) -> set[str]:
        """Memories with a pending entry for `reason`."""
        return {key_of(m) for m in self._q(q.QUEUED_MEMORIES, {"reason": reason}) or []}

    def enqueue_many(self, memory_keys: list[str], reason: str, priority: float) -> None:
        """Pending entries for many memories in one statement."""
        entries = [
            {"memory": record_id("memory", k), "reason": reason, "priority": float(priority), "status": "pending"}
            for k in memory_keys
        ]
        if entries:
            self._q(q.ENQUEUE_MANY, {"entries": entries})

    def pending_queue(self, limit: int) -> list[QueueEntry]:
        """Pending entries, the highest priority first."""
        return [
            QueueEntry(key_of(r["memory"]), r.get("reason"), r.get("priority"))
            for r in self._q(q.PENDING_QUEUE, {"limit": limit}) or []
        ]

    def complete_queued(self, memory_keys: list[str]) -> None:
        """Close the pending entries of these memories."""
        self._q(q.COMPLETE_QUEUE, {"memories": [record_id("memory", k) for k in memory_keys]})

    # -- project sightings (user store) -----------------------------------------------
    def upsert_sighting(self, key: str, record: dict[str, Any]) -> None:
        self._q(q.UPSERT_SIGHTING, {"key": key, "record": record})

    def delete_sighting(self, key: str) -> None:
        self._q(q.DELETE_SIGHTING, {"key": key})

    def all_sightings(self) -> list[SightingRow]:
        return [
            SightingRow(r["project"], r["memory_id"], r["fingerprint"], r.get("embedding"), r.get("embedding_model"))
            for r in self._q(q.ALL_SIGHTINGS) or []
        ]

    # -- changes stated in projects (user store) ----------------------------------------
    def upsert_project_change(self, key: str, record: dict[str, Any]) -> None:
        self._q(q.UPSERT_PROJECT_CHANGE, {"key": key, "record": record})

    def delete_project_change(self, key: str) -> None:
        self._q(q.DELETE_PROJECT_CHANGE, {"key": key})

    def recent_project_changes(self, *, other_than: str, since: Any, limit: int) -> list[ProjectChangeRow]:
        """The newest changes stated in projects other than `other_than` (a project db), since `since`."""
        rows = self._q(q.RECENT_PROJECT_CHANGES, {"project": other_than, "since": since, "limit": int(limit)}) or []
        return [
            ProjectChangeRow(r["project"], r["project_name"], r["memory_id"], r["content"], r["created_at"])
            for r in rows
        ]


class _Collecting(ScopeRepository):
    """The repository inside `atomic()`: writes are collected, reads refused."""

    def __init__(self, collected: list[Statement]) -> None:
        super().__init__(self._collect, self._nested)
        self._collected = collected

    def _collect(self, sql: str, params: Params | None) -> None:
        head = sql.lstrip().split(None, 1)[0].upper()
        if head in _READ_HEADS:
            raise RuntimeError("a read inside atomic() would not see the writes collected so far")
        self._collected.append((sql, dict(params or {})))

    def _nested(self, statements: list[Statement]) -> list[Any]:
        self._collected.extend(statements)
        return []
