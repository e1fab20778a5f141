"""The argument schemas of engram's operations (JSON Schema, Draft 2020-12).

Where an operation is an MCP tool (`operations.py` says which), its schema here is the tool's
`inputSchema`: the model reads all of it in every session, so it is lean (docs/decisions.md,
"The MCP surface": short descriptions, only the limits the model benefits from knowing: content
20,000 characters, summary 500, the ranges of numbers), and it is also the validation contract
(`tool_calls.py` validates every call against exactly these dicts before anything reaches the
daemon).
`additionalProperties: false` everywhere except `update_memory.metadata`, which is an
arbitrary key/value patch by design.

Every tool schema costs context tokens (the whole `tools/list` must stay <= 2,000, measured by
tests/test_mcp_server.py into bench/results/tools_list_tokens.json). The MCP servers add
generic bounds (strings <= 20,000 characters, arrays <= 100 entries, nesting <= 8 levels) and
the daemon enforces the precise ones of `records.py` (32 tags of 64 characters, 32 entities,
...), all with the same error envelope.

The schemas of operations that are not tools (the CLI's and the hooks') name the arguments
their callers send; the daemon binds arguments to the handler's signature, so these are a
declaration checked against the handlers (tests/test_operations.py), not a second validator.

Standard library only: imported by the MCP servers at start-up and by hooks under `python -S`.
"""

from __future__ import annotations

from typing import Any

from engram_mcp.core.vocabulary import (
    CONSOLIDATE_STRATEGIES,
    CONTEXT_SECTIONS,
    GRAPH_DIRECTIONS,
    MEMORY_TYPES,
    PERSISTENT_SCOPES,
    PROMOTE_TARGETS,
    RECALL_STRATEGIES,
)
from engram_mcp.core.vocabulary import SCOPES as _SCOPES

SCOPES = list(_SCOPES)
TYPES = list(MEMORY_TYPES)
# a whole id, or a short one (its last 6 to 25 characters, as memory lines show 8): the daemon
# checks the exact ULID alphabet and makes a short one whole (daemon/dispatch.with_whole_ids)
ID_PATTERN = "^(memory:)?[0-9A-Za-z]{6,26}$"
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


def tool_annotations(
    title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False
) -> dict[str, Any]:
    a: dict[str, Any] = {"title": title, "readOnlyHint": read_only, "destructiveHint": destructive}
    if idempotent:
        a["idempotentHint"] = True
    a["openWorldHint"] = False
    return a


# ---------------------------------------------------------------------- tools
STORE = _obj(
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
        "source": _obj({"tool": _str(), "file": _str(), "conversation_turn": {"type": "integer", "minimum": 0}}),
        "supersedes": {**ID, "description": "memory it replaces"},
        "derived_from": _arr(ID, "memories it summarises (marked consolidated)"),
    },
    ["content", "type", "scope"],
)
RECALL = _obj(
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
)
GRAPH = _obj(
    {
        "entity": _str(),
        "relationship_type": _str(),
        "direction": _enum(list(GRAPH_DIRECTIONS)),
        "depth": _int(1, 3, 1),
        "include_memories": {**BOOL, "default": True},
        "limit": _int(1, 100, 20),
    }
)
FORGET = _obj({"memory_id": ID, "reason": _str(), "undo": BOOL, "purge_now": BOOL}, ["memory_id"])
UPDATE = _obj(
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
)
PROMOTE = _obj(
    {"memory_id": ID, "target_scope": _enum(list(PROMOTE_TARGETS)), "reason": _str()},
    ["memory_id", "target_scope"],
)
CONSOLIDATE = _obj(
    {
        "strategy": _enum(list(CONSOLIDATE_STRATEGIES)),
        "dry_run": BOOL,
        "session_id": _str(pattern=SESSION_PATTERN),
        "scope": _enum(SCOPES),
    }
)
CONTEXT = _obj(
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
)
NO_ARGUMENTS = _obj({})

# ---------------------------------------------------------------------- operations that are not tools
ONE_OR_MANY_STRINGS = {"anyOf": [_str(), _arr(_str())]}
LIST = _obj(
    {
        "scope": _one_or_many(SCOPES),
        "type": _one_or_many(TYPES),
        "status": ONE_OR_MANY_STRINGS,
        "tags": TAGS,
        "category": ONE_OR_MANY_STRINGS,
        "after": _str(),
        "before": _str(),
        "limit": {"type": "integer", "minimum": 1},
        "page": {"type": "integer", "minimum": 1},
    }
)
GET = _obj({"memory_id": ID, "history": BOOL, "include_embedding": BOOL}, ["memory_id"])
TAG = _obj({"memory_id": ID, "add": TAGS, "remove": TAGS}, ["memory_id"])
LINK = _obj(
    {"from_id": ID, "to_id": ID, "relation": _str(), "strength": UNIT},
    ["from_id", "to_id", "relation"],
)
SCOPE_LIST = _arr(_enum(SCOPES))
TAGS_IN_USE = _obj({"scope": _one_or_many(SCOPES), "limit": {"type": "integer", "minimum": 1}})
SESSION_START = _obj({"info": {"type": "object"}})
SESSION_END = _obj({"summary": _str()})
EXPORT = _obj({"path": _str(), "scopes": SCOPE_LIST, "include_vectors": BOOL}, ["path"])
IMPORT = _obj({"path": _str(), "target_scope": _enum(SCOPES), "keep_origins": BOOL}, ["path"])
#: Memory that travels (services/travel_ops.py): share one memory, sync a folder, import another tool's data.
SHARE = _obj({"memory_id": _str(80)}, ["memory_id"])  # a full or a short id, as `engram share` takes
SYNC = _obj({"user_dir": _str(4096)})
IMPORT_FROM = _obj(
    {
        "source": _enum(["auto-memory", "claude-mem", "mcp-memory", "markdown"]),
        "path": _str(4096),
        "dry_run": BOOL,
        "scope": _enum(list(PERSISTENT_SCOPES)),
        "project": _str(200),
        "include_sensitive": BOOL,
    },
    ["source"],
)
REINDEX = _obj({"scopes": SCOPE_LIST})
#: `engram ui`'s: a memory's decay curve; the approved steps of a consolidation plan.
SEARCH = _obj(
    {
        "query": _str(),
        "scope": _one_or_many(SCOPES),
        "type": _one_or_many(TYPES),
        "status": ONE_OR_MANY_STRINGS,
        "tags": TAGS,
        "category": ONE_OR_MANY_STRINGS,
        "after": _str(),
        "before": _str(),
        "strategy": _enum(list(RECALL_STRATEGIES)),
        "limit": _int(1, 50, 20),
        "page": {"type": "integer", "minimum": 1},
    },
    ["query"],
)
DECAY_CURVE = _obj({"memory_id": ID}, ["memory_id"])
RESOLVE_ID = _obj({"short_id": _str(40)}, ["short_id"])
CONSOLIDATE_STEPS = _obj(
    {
        "steps": _arr(_str(100)),
        "strategy": _enum(list(CONSOLIDATE_STRATEGIES)),
        "session_id": _str(pattern=SESSION_PATTERN),
        "scope": _enum(SCOPES),
    },
    ["steps"],
)
#: Stamped over `source` of every memory the MCP tools store: the memory is Claude's, whatever
#: the call's own `source` says (services/records.origin_of reads it; a call cannot pass for the user).
MCP_ORIGIN: dict[str, str] = {"origin": "claude", "via": "mcp"}


def with_mcp_origin(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """`args` of an MCP tool call with the origin stamped where the tool stores a memory."""
    if tool != "store_memory":
        return args
    given = args.get("source")
    source = given if isinstance(given, dict) else {}
    return {**args, "source": {**source, **MCP_ORIGIN}}


HOOK_SESSION_START = _obj({"source": _str(40)})
HOOK_PROMPT = _obj({"prompt": _str(4000), "max_tokens": _int(0, 8000)}, ["prompt"])
HOOK_STEP = _obj({"step": _str(4000)}, ["step"])
HOOK_TURN_CHANGES = _obj({"prompt": _str(4000), "answer": _str(4000)}, ["prompt"])
HOOK_PROMOTE_STATED = _obj({"ids": {"type": "array", "items": _str(80), "maxItems": 8}}, ["ids"])
HOOK_CAPTURE = _obj(
    {
        "content": _str(20000),
        "type": _enum(TYPES),
        "importance": UNIT,
        "category": _str(),
        "tags": TAGS,
        "source": {"type": "object"},
        "dedup": BOOL,
        "metadata": {"type": "object"},
        "created_at": _str(),
        "request_id": _str(),
    },
    ["content"],
)
HOOK_SESSION_END = _obj({"reason": _str(40)})
