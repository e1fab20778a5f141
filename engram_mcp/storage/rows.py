"""Typed rows the repositories return: record ids are plain keys from here up.

The engine answers with dicts whose ids are `surrealdb.RecordID` objects; the repositories
(`storage/repository.py`) turn each answer into one of the types below, so no layer above
storage ever sees a RecordID or needs the SDK.

Two forms, chosen by what the callers do with a row:

- Rows of a fixed shape (links, history, entities, mentions, relations, sessions, sightings,
  queue and promotion entries) are frozen dataclasses with `__slots__`: cheap to build and
  read, and their fields are checked by the type checker.
- A memory record is a `MemoryRecord`, the engine's dict with its `id` turned into the plain
  key (the ULID), in place. Its body is the schema's flexible document (`source` and
  `metadata` are free objects) that the services read, edit as a copy and write back whole
  as the next version. A dict costs nothing extra per row on the bulk paths, where a
  dataclass would (the index build when a store opens reads every record; export, import
  and recall materialisation page through them): measured here, turning the id into a key
  costs ~0.2-1 us per row, a frozen slots dataclass of the same five fields ~0.6-1.3 us
  (a plain slots one 0.2 us), against tens of microseconds for the engine to decode the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: A memory as stored (its fields: storage/schema.py, table `memory`), with `id` the bare key
#: (the ULID), never a RecordID. A plain dict (module docstring): the services edit a copy and
#: write it back whole, and a TypedDict is not a `dict[str, Any]` to the type checker, so every
#: function that reads a record (rendering, scoring, the index build) would need a new signature.
MemoryRecord = dict[str, Any]


@dataclass(frozen=True, slots=True)
class LinkRow:
    """A memory -> memory link (`memory_link`): `src` supersedes/contradicts/... `dst`."""

    src: str
    dst: str
    relation_type: str
    strength: float | None = None
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One previous version of a memory (`memory_history`); `id` is the entry's own key."""

    id: str
    memory: str
    version: int | None
    change: str | None
    snapshot: dict[str, Any]
    changed_at: datetime | None = None

    def record(self) -> dict[str, Any]:
        """The stored fields but the ids, by name (the engine's order), absent ones left out."""
        fields = {
            "change": self.change,
            "changed_at": self.changed_at,
            "snapshot": self.snapshot,
            "version": self.version,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, slots=True)
class EntityRow:
    """A knowledge-graph node (`entity`), one per case-folded name since schema v3."""

    key: str
    name: str
    entity_type: str
    name_key: str | None = None
    description: str = ""
    mention_count: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def record(self) -> dict[str, Any]:
        """The stored fields but the key, by name (the engine's order), absent ones left out."""
        fields = {
            "created_at": self.created_at,
            "description": self.description,
            "entity_type": self.entity_type,
            "mention_count": self.mention_count,
            "name": self.name,
            "name_key": self.name_key,
            "updated_at": self.updated_at,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, slots=True)
class MentionRow:
    """A memory -> entity mention (`mentions`)."""

    memory: str
    entity: str
    relationship: str
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class MentionedEntity:
    """What a memory mentions, as `get` shows it: the entity's name and type, and how."""

    name: str | None
    entity_type: str
    relationship: str


@dataclass(frozen=True, slots=True)
class RelationRow:
    """An entity -> entity edge (`relates_to`)."""

    src: str
    dst: str
    relation_type: str
    weight: float | None = None
    evidence: tuple[str, ...] = ()
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A session's entry in the project's `session_registry`."""

    key: str
    session_id: str | None
    status: str | None
    started_at: datetime | None = None
    last_seen_at: datetime | None = None
    ended_at: datetime | None = None
    memories_promoted: int | None = None
    summary: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PromotionEntry:
    """A `promotion_log` entry: `memory_id` went from one scope to another as `target_id`."""

    memory_id: str
    target_id: str | None
    action: str | None
    from_scope: str | None = None
    to_scope: str | None = None


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """A pending `consolidation_queue` entry for a memory."""

    memory: str
    reason: str | None
    priority: float | None


@dataclass(frozen=True, slots=True)
class SightingRow:
    """A memory seen in a project (`project_sighting`, user store): the cross-project signal."""

    project: str
    memory_id: str
    fingerprint: str
    embedding: bytes | None = None
    embedding_model: str | None = None


@dataclass(frozen=True, slots=True)
class ProjectChangeRow:
    """A change stated in a project (`project_change`, user store): what another project's lines may
    have gone out of date by."""

    project: str
    project_name: str
    memory_id: str
    content: str
    created_at: Any


@dataclass(frozen=True, slots=True)
class TypeStatusCount:
    """How many memories have a type and a status."""

    memory_type: str
    status: str
    n: int


#: The recalling sessions a memory keeps (the most recent): maintenance reads only whether there
#: are `promote_user_min_sessions` of them, and the list grows with every session that recalls
#: the memory, so a long-used memory's list would otherwise grow without end in the store and
#: outgrow a record's bounds on export.
RECALL_SESSIONS_KEPT = 1000


@dataclass(frozen=True, slots=True)
class StrengthenBump:
    """Recall strengthening written behind for one memory: `n` recalls, the last `at`."""

    key: str
    n: int
    at: datetime
    sessions: tuple[str, ...] = ()
