"""The words engram's records, tools and commands are made of, declared once.

Scopes, memory types, statuses and link types appear in the store's schema (SurrealQL
ASSERTs), the MCP tool schemas (JSON Schema enums), the CLI's argument choices, the
hooks and the service's argument checks. Every Python spelling imports them from here, and
tests/test_vocabulary.py checks that the tool schemas, the CLI and the schema's ASSERTs
say the same; so adding a word is one edit here plus, for the store, a new migration.

Order matters where it is stated: ``SCOPES`` is the order scopes are searched and reported
in (narrowest first), and ``MEMORY_TYPES`` / ``STATUSES`` are numbered by position in the
in-memory index (``TYPE_CODE`` / ``STATUS_CODE``), so new words go at the end.

Standard library only (nothing at all is imported): hooks and the stand-in server import
this under ``python -S``.
"""

from __future__ import annotations

#: Where a memory lives: this conversation, this repository, every project of the user.
#: Narrowest first: the order scopes are searched, listed and reported in.
SCOPES: tuple[str, ...] = ("session", "project", "user")
#: The scopes that outlive a session: promotion targets, export and import scopes.
PERSISTENT_SCOPES: tuple[str, ...] = ("project", "user")
#: Where `promote_memory` sends a memory: a broader scope, or `team` (its shared file in the repository).
PROMOTE_TARGETS: tuple[str, ...] = (*PERSISTENT_SCOPES, "team")

#: What kind of knowledge a memory is (each decays at its own rate, see index/scoring.py).
#: Positions are the type codes of the in-memory index: append only.
MEMORY_TYPES: tuple[str, ...] = ("episodic", "semantic", "procedural", "working")
#: Knowledge that stays true: what may reach scope "user" and what consolidation compares.
DURABLE_TYPES: tuple[str, ...] = ("semantic", "procedural")

#: A memory's lifecycle, in order. Positions are the status codes of the in-memory index.
STATUSES: tuple[str, ...] = ("created", "active", "consolidated", "archived", "forgotten")
#: Statuses recall shows (forgotten and archived memories are hidden unless asked for).
RECALLABLE_STATUSES: tuple[str, ...] = ("created", "active", "consolidated")
#: Statuses of a live memory, not yet consolidated, archived or forgotten (store-time dedup
#: merges a new memory only into these).
LIVE_STATUSES: tuple[str, ...] = ("created", "active")

#: Typed links between two memories (the memory_link relation).
LINK_TYPES: tuple[str, ...] = ("supersedes", "contradicts", "derived_from", "similar_to")

#: A session's state in session_registry.
SESSION_STATUSES: tuple[str, ...] = ("active", "completed", "abandoned")

#: Why a memory waits in consolidation_queue, and where its entry stands.
QUEUE_REASONS: tuple[str, ...] = ("decay", "duplicate", "promotion", "merge", "scheduled")
QUEUE_STATUSES: tuple[str, ...] = ("pending", "processing", "completed", "failed")

#: How recall finds candidates: embeddings, BM25, both fused, or both plus the entity graph.
RECALL_STRATEGIES: tuple[str, ...] = ("hybrid", "vector", "keyword", "graph")
#: What consolidate_memories does with related memories.
CONSOLIDATE_STRATEGIES: tuple[str, ...] = ("full", "summarize", "extract_patterns")
#: Which edges a knowledge-graph search follows from an entity.
GRAPH_DIRECTIONS: tuple[str, ...] = ("both", "outgoing", "incoming")
#: Where a memory came from (its `origin`, derived from the record's `source` by
#: services/records.origin_of): the user (CLI, UI), Claude (MCP tools), a hook's capture, a
#: repository's team file, the user's sync folder, an import from another tool.
ORIGIN_KINDS: tuple[str, ...] = ("user", "claude", "hook", "team-file", "user-sync", "import")
#: Origins whose text someone or something other than the user and their Claude wrote: shown
#: apart in the context, never among the user's preferences, whatever their category claims.
FOREIGN_ORIGINS: tuple[str, ...] = ("team-file", "user-sync", "import")

#: The parts of the memory context block, in the order they are shown.
CONTEXT_SECTIONS: tuple[str, ...] = ("preferences", "project_context", "session_history", "relevant_procedures")

__all__ = [
    "CONSOLIDATE_STRATEGIES",
    "CONTEXT_SECTIONS",
    "DURABLE_TYPES",
    "GRAPH_DIRECTIONS",
    "LINK_TYPES",
    "LIVE_STATUSES",
    "FOREIGN_ORIGINS",
    "MEMORY_TYPES",
    "ORIGIN_KINDS",
    "PERSISTENT_SCOPES",
    "PROMOTE_TARGETS",
    "QUEUE_REASONS",
    "QUEUE_STATUSES",
    "RECALLABLE_STATUSES",
    "RECALL_STRATEGIES",
    "SCOPES",
    "SESSION_STATUSES",
    "STATUSES",
]
