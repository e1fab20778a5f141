"""The MCP tool surface: names, descriptions, input schemas and annotations.

The model reads all of this in every session, so it is lean (DECISIONS.md, "MCP
surface"): short descriptions that say what a tool does and does not do, and input
schemas that are also the validation contract (`server.py` validates every call against
exactly these dicts with JSON Schema Draft 2020-12 before anything reaches the daemon).
`additionalProperties: false` everywhere except `update_memory.metadata`, which is an
arbitrary key/value patch by design.

Every schema costs context tokens (the whole `tools/list` must stay <= 2,000, measured by
tests/test_mcp_server.py into bench/results/tools_list_tokens.json), so schemas state only
the limits the model benefits from knowing (content 20,000 characters, summary 500, the
ranges of numbers). The server adds generic bounds (strings <= 20,000 characters, arrays
<= 100 entries, nesting <= 8 levels) and the daemon enforces the precise ones of
`records.py` (32 tags of 64 characters, 32 entities, ...), all with the same error envelope.

Annotations: recall, graph search, context and status are marked read-only although a
recall strengthens what it returns (access count, last access): bookkeeping, not a change
to what is remembered. forget (undoable) and update (history kept) are marked destructive
because they change what recall shows; forget and promote are idempotent, update is not
(every call that names a change writes a new version).

Standard library only: imported by the MCP server at start-up.
"""

from __future__ import annotations

import json
from typing import Any

from engram_mcp.core.vocabulary import (
    CONSOLIDATE_STRATEGIES,
    CONTEXT_SECTIONS,
    GRAPH_DIRECTIONS,
    MEMORY_TYPES,
    PERSISTENT_SCOPES,
    RECALL_STRATEGIES,
)
from engram_mcp.core.vocabulary import SCOPES as _SCOPES

SCOPES = list(_SCOPES)
TYPES = list(MEMORY_TYPES)
ID_PATTERN = "^(memory:)?[0-9A-Za-z]{26}$"  # the daemon checks the exact ULID alphabet
SESSION_PATTERN = "^[A-Za-z0-9_-]{1,128}$"


def _obj(props: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    schema.update(extra)
    return schema


def _str(max_len: int | None = None, desc: str | None = None, **extra: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string", **extra}
    if max_len:
        s["maxLength"] = max_len
    if desc:
        s["description"] = desc
    return s


def _int(lo: int, hi: int, default: int | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "integer", "minimum": lo, "maximum": hi}
    if default is not None:
        s["default"] = default
    return s


def _enum(values: list[str], desc: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"enum": values}
    if desc:
        s["description"] = desc
    return s


def _arr(items: dict[str, Any], desc: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "array", "items": items}
    if desc:
        s["description"] = desc
    return s


def _one_or_many(values: list[str]) -> dict[str, Any]:
    return {"anyOf": [{"enum": values}, {"type": "array", "items": {"enum": values}}]}


BOOL = {"type": "boolean"}
UNIT = {"type": "number", "minimum": 0, "maximum": 1}
ID = {"type": "string", "pattern": ID_PATTERN}
TAGS = _arr(_str())
ENTITY = _obj(
    {"name": _str(), "type": _str(), "relationship": _str(), "target": _str()}, ["name", "type", "relationship"]
)
ENTITIES = _arr(ENTITY)


def _annotations(title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False) -> dict[str, Any]:
    a: dict[str, Any] = {"title": title, "readOnlyHint": read_only, "destructiveHint": destructive}
    if idempotent:
        a["idempotentHint"] = True
    a["openWorldHint"] = False
    return a


TOOLS: list[dict[str, Any]] = [
    {
        "name": "store_memory",
        "description": (
            "Store a memory (embedded for search). A near-duplicate in its scope is strengthened instead (action "
            "merged). Secrets and <private> spans are redacted."
        ),
        "inputSchema": _obj(
            {
                "content": _str(20000),
                "type": _enum(TYPES, "episodic=event, semantic=fact, procedural=how-to, working=session scratch"),
                "scope": _enum(SCOPES, "session=this conversation, project=this repository, user=all projects"),
                "importance": {**UNIT, "default": 0.5},
                "tags": TAGS,
                "category": _str(desc="e.g. decision, convention, error_fix, preference"),
                "summary": _str(500),
                "related_entities": {
                    **ENTITIES,
                    "description": "graph links; target adds edge entity-[relationship]->target",
                },
                "source": _obj(
                    {"tool": _str(), "file": _str(), "conversation_turn": {"type": "integer", "minimum": 0}}
                ),
                "supersedes": {**ID, "description": "memory it replaces"},
                "derived_from": _arr(ID, "memories it summarises (marked consolidated)"),
            },
            ["content", "type", "scope"],
        ),
        "annotations": _annotations("Store memory", read_only=False),
    },
    {
        "name": "recall_memories",
        "description": (
            "Search memories across scopes, ranked by relevance, importance and recency; forgotten ones only "
            "with include_forgotten. Results count as accessed. No query: newest first."
        ),
        "inputSchema": _obj(
            {
                "query": _str(),
                "scope": _one_or_many(SCOPES),
                "type": _one_or_many(TYPES),
                "strategy": _enum(list(RECALL_STRATEGIES)),
                "limit": _int(1, 50, 10),
                "min_importance": UNIT,
                "tags": {**TAGS, "description": "any of"},
                "category": _str(),
                "time_range": _obj({"after": _str(), "before": _str()}, description="ISO 8601"),
                "include_forgotten": BOOL,
                "include_superseded": BOOL,
                "page": {"type": "integer"},  # checked by the daemon (1 or more)
            },
        ),
        "annotations": _annotations("Recall memories", read_only=True),
    },
    {
        "name": "search_knowledge_graph",
        "description": (
            "Entity graph from related_entities: relationships up to depth hops and the memories mentioning "
            "them; without entity, the most-mentioned entities."
        ),
        "inputSchema": _obj(
            {
                "entity": _str(),
                "relationship_type": _str(),
                "direction": _enum(list(GRAPH_DIRECTIONS)),
                "depth": _int(1, 3, 1),
                "include_memories": {**BOOL, "default": True},
                "limit": _int(1, 100, 20),
            }
        ),
        "annotations": _annotations("Search knowledge graph", read_only=True),
    },
    {
        "name": "forget_memory",
        "description": (
            "Soft-delete a memory: hidden from recall and context, not erased (include_forgotten shows it). "
            "undo=true restores it. purge_now=true erases a stored secret now, history and disk too (no undo)."
        ),
        "inputSchema": _obj({"memory_id": ID, "reason": _str(), "undo": BOOL, "purge_now": BOOL}, ["memory_id"]),
        "annotations": _annotations("Forget memory", read_only=False, destructive=True, idempotent=True),
    },
    {
        "name": "update_memory",
        "description": (
            "Edit a memory: content (re-embedded), summary, importance, category, metadata, entity links, tags "
            "(also the tagging tool). Previous versions are kept."
        ),
        "inputSchema": _obj(
            {
                "memory_id": ID,
                "content": _str(20000),
                "summary": _str(500),
                "importance": UNIT,
                "category": _str(),
                "tags": _obj({"add": TAGS, "remove": TAGS}),
                "metadata": {"type": "object", "maxProperties": 32, "description": "keys to merge; null deletes"},
                "related_entities": _obj({"add": ENTITIES, "remove": _arr(_str(), "entity names")}),
                "supersedes": {**ID, "description": "memory it replaces"},
            },
            ["memory_id"],
        ),
        "annotations": _annotations("Update memory", read_only=False, destructive=True),
    },
    {
        "name": "promote_memory",
        "description": (
            "Copy a memory to a broader scope (same id), or merge it into a near-duplicate there. The original stays."
        ),
        "inputSchema": _obj(
            {"memory_id": ID, "target_scope": _enum(list(PERSISTENT_SCOPES)), "reason": _str()},
            ["memory_id", "target_scope"],
        ),
        "annotations": _annotations("Promote memory", read_only=False, idempotent=True),
    },
    {
        "name": "reflect_and_consolidate",
        "description": (
            "Consolidate a scope (default: session, else project): related episodes become semantic summaries; "
            "duplicates and low-value memories are archived, not deleted; patterns are reported. dry_run: plan "
            "only."
        ),
        "inputSchema": _obj(
            {
                "strategy": _enum(list(CONSOLIDATE_STRATEGIES)),
                "dry_run": BOOL,
                "session_id": _str(pattern=SESSION_PATTERN),
                "scope": _enum(SCOPES),
            }
        ),
        "annotations": _annotations("Reflect and consolidate", read_only=False, destructive=True),
    },
    {
        "name": "get_memory_context",
        "description": (
            "Fenced markdown block of the memories relevant to a task (preferences, project knowledge, recent "
            "sessions, procedures) within max_tokens."
        ),
        "inputSchema": _obj(
            {
                "task_description": _str(),
                "files_in_context": _arr(_str()),
                "max_tokens": _int(100, 8000, 2000),
                "sections": {
                    "type": "array",
                    "items": _enum(list(CONTEXT_SECTIONS)),
                    "uniqueItems": True,
                },
            }
        ),
        "annotations": _annotations("Get memory context", read_only=True),
    },
    {
        "name": "get_memory_status",
        "description": "Store health; memory counts by scope, type and status; entities, relationships, embedding model.",
        "inputSchema": _obj({}),
        "annotations": _annotations("Memory status", read_only=True),
    },
]

TOOL_NAMES: tuple[str, ...] = tuple(t["name"] for t in TOOLS)
SCHEMAS: dict[str, dict[str, Any]] = {t["name"]: t["inputSchema"] for t in TOOLS}


def tools_list_payload() -> dict[str, Any]:
    """The `tools/list` tools as they go over the wire (camelCase keys; the SDK adds ttlMs etc.)."""
    return {"tools": TOOLS}


def token_estimate(payload: dict[str, Any] | None = None) -> dict[str, int]:
    """Characters and estimated tokens (len/4) of the compact JSON of `tools/list`."""
    text = json.dumps(
        payload if payload is not None else tools_list_payload(), ensure_ascii=False, separators=(",", ":")
    )
    return {"chars": len(text), "tokens_estimate": (len(text) + 3) // 4}
