"""The one registry of engram's operations: what exists, its arguments, its handler, its flags.

Every caller derives from `OPERATIONS`: the MCP tool surface (`tools/list` of the SDK server
and of the standard-library stand-in, and `tool_calls`' tool name -> op map), the daemon's
protocol (which ops exist, which are queued when their store is unavailable, replayed with a
key, streamed with progress, answered on the selector thread), the hooks' ops and the CLI's.
Adding a read-only operation is one entry here plus its function in a services module.

A handler is a string, resolved by the daemon (core never imports services):
- `"engram_mcp.services.<module>:<function>"`: imported once, called as
  `fn(service.access, ctx, **args)`;
- a bare name: a `MemoryService` method, called as `getattr(service, name)(ctx, **args)`;
- None: answered by the daemon itself (ping, shutdown, drain).
The daemon binds the arguments to the handler's signature before calling it, so a caller's
bad argument is told from a bug by where it fails, not by reading a traceback.

Standard library only: the stand-in and the hooks import it under `python -S`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from engram_mcp.core import schemas as s


@dataclass(frozen=True)
class Tool:
    """How an operation is offered to the model as an MCP tool (every character is context)."""

    name: str
    title: str
    description: str
    destructive: bool = False
    idempotent: bool = False


@dataclass(frozen=True)
class Operation:
    """One daemon operation.

    `schema` is its arguments' JSON Schema (the tool's `inputSchema` when `tool` is set).
    Flags: `queueable` writes are queued in the spool and answered as accepted when their store
    is unavailable; `keyed` replays carry the spool entry id as `request_id` (applied once);
    `progress` ops may stream progress lines; `quick` ops are answered on the daemon's selector
    thread without a worker; `replayable` is False for what a queued entry may never run;
    `read_only` ops change nothing that recall shows (recall's strengthening is bookkeeping).
    `browse_op` is the op that serves a call without a `query` (recall_memories browses).
    """

    name: str
    handler: str | None
    schema: dict[str, Any]
    read_only: bool
    tool: Tool | None = None
    queueable: bool = False
    keyed: bool = False
    progress: bool = False
    quick: bool = False
    replayable: bool = True
    browse_op: str | None = None

    def tool_spec(self) -> dict[str, Any]:
        """The MCP `tools/list` entry (camelCase keys, as on the wire)."""
        if self.tool is None:
            raise ValueError(f"operation {self.name!r} is not an MCP tool")
        t = self.tool
        return {
            "name": t.name,
            "description": t.description,
            "inputSchema": self.schema,
            "annotations": s.tool_annotations(
                t.title, read_only=self.read_only, destructive=t.destructive, idempotent=t.idempotent
            ),
        }


OPERATIONS: tuple[Operation, ...] = (
    # -- the MCP tools, in the order tools/list shows them
    Operation(
        "store",
        "engram_mcp.services.store:store",
        s.STORE,
        read_only=False,
        queueable=True,
        keyed=True,
        tool=Tool(
            "store_memory",
            "Store memory",
            "Store a memory. A near-duplicate in its scope is strengthened instead (action "
            "merged). Secrets and <private> spans are redacted.",
        ),
    ),
    Operation(
        "recall",
        "engram_mcp.services.recall:recall",
        s.RECALL,
        read_only=True,
        browse_op="list",
        tool=Tool(
            "recall_memories",
            "Recall memories",
            "Search memories across scopes, ranked by relevance, importance and recency; forgotten ones only "
            "with include_forgotten. Results count as accessed. No query: newest first.",
        ),
    ),
    Operation(
        "graph",
        "engram_mcp.services.graph:search",
        s.GRAPH,
        read_only=True,
        tool=Tool(
            "search_knowledge_graph",
            "Search knowledge graph",
            "Entity graph from related_entities: relationships up to depth hops and the memories mentioning "
            "them; without entity, the most-mentioned entities.",
        ),
    ),
    Operation(
        "forget",
        "engram_mcp.services.edit:forget",
        s.FORGET,
        read_only=False,
        queueable=True,
        tool=Tool(
            "forget_memory",
            "Forget memory",
            "Soft-delete a memory: hidden from recall and context, not erased (include_forgotten shows it). "
            "undo=true restores it. purge_now=true erases a stored secret now, history and disk too (no undo).",
            destructive=True,
            idempotent=True,
        ),
    ),
    Operation(
        "update",
        "engram_mcp.services.edit:update",
        s.UPDATE,
        read_only=False,
        queueable=True,
        tool=Tool(
            "update_memory",
            "Update memory",
            "Edit a memory: content, summary, importance, category, metadata, entity links, tags "
            "(also the tagging tool). Previous versions are kept.",
            destructive=True,
        ),
    ),
    Operation(
        "promote",
        "engram_mcp.services.travel_ops:promote",  # target `team` shares; the others promote
        s.PROMOTE,
        read_only=False,
        queueable=True,
        tool=Tool(
            "promote_memory",
            "Promote memory",
            "Copy a memory to a broader scope (same id), or merge it into a near-duplicate there. The original stays.",
            idempotent=True,
        ),
    ),
    # the user's `engram promote` (no tool: Claude cannot call it): the one promotion that carries a
    # team file's or an import's memory into the user scope
    Operation(
        "promote_by_user",
        "engram_mcp.services.travel_ops:promote_by_user",
        s.PROMOTE,
        read_only=False,
        replayable=False,
    ),
    Operation(
        "consolidate",
        "engram_mcp.services.consolidate:consolidate",
        s.CONSOLIDATE,
        read_only=False,
        tool=Tool(
            "reflect_and_consolidate",
            "Reflect and consolidate",
            "Consolidate a scope (default: session, else project): related episodes become semantic summaries; "
            "duplicates and low-value memories are archived, not deleted; patterns are reported. dry_run: plan "
            "only.",
            destructive=True,
        ),
    ),
    Operation(
        "context",
        "engram_mcp.services.context:build_context",
        s.CONTEXT,
        read_only=True,
        tool=Tool(
            "get_memory_context",
            "Get memory context",
            "Fenced markdown block of the memories relevant to a task (preferences, project knowledge, recent "
            "sessions, procedures) within max_tokens.",
        ),
    ),
    Operation(
        "status",
        "engram_mcp.services.status:status",
        s.NO_ARGUMENTS,
        read_only=True,
        tool=Tool(
            "get_memory_status",
            "Memory status",
            "Store health; memory counts by scope, type and status; entities, relationships, embedding model.",
        ),
    ),
    # -- the CLI's and the daemon's own
    Operation("ping", None, s.NO_ARGUMENTS, read_only=True, quick=True, replayable=False),
    Operation("shutdown", None, s.NO_ARGUMENTS, read_only=False, quick=True, replayable=False),
    Operation("drain", None, s.NO_ARGUMENTS, read_only=False, quick=True, replayable=False),
    Operation("list", "engram_mcp.services.browse:list_memories", s.LIST, read_only=True),
    Operation("get", "engram_mcp.services.edit:get", s.GET, read_only=True),
    Operation("tags", "engram_mcp.services.tags:tags_in_use", s.TAGS_IN_USE, read_only=True),
    Operation("tag", "engram_mcp.services.edit:tag", s.TAG, read_only=False, queueable=True),
    Operation("link", "engram_mcp.services.edit:link", s.LINK, read_only=False, queueable=True),
    Operation("session_start", "engram_mcp.services.promotion:session_start", s.SESSION_START, read_only=False),
    # The service methods narrow these two: a caller never sets the end reason of a plain
    # session end, nor the clock of a maintenance pass (lifecycle.maintain takes `now` for tests).
    Operation("session_end", "session_end", s.SESSION_END, read_only=False, queueable=True),
    Operation("maintain", "maintain", s.NO_ARGUMENTS, read_only=False, progress=True),
    Operation(
        "export", "engram_mcp.services.transfer:export", s.EXPORT, read_only=True, progress=True, replayable=False
    ),
    Operation(
        "import", "engram_mcp.services.transfer:import_", s.IMPORT, read_only=False, progress=True, replayable=False
    ),
    Operation(
        "reindex", "engram_mcp.services.transfer:reindex", s.REINDEX, read_only=False, progress=True, replayable=False
    ),
    # -- `engram ui`'s views and its step-by-step consolidation (services/curation.py, consolidate.py)
    Operation("quality", "engram_mcp.services.curation:quality", s.NO_ARGUMENTS, read_only=True),
    Operation("decay_curve", "engram_mcp.services.curation:decay_curve", s.DECAY_CURVE, read_only=True),
    Operation("sessions", "engram_mcp.services.curation:sessions", s.NO_ARGUMENTS, read_only=True),
    Operation("resolve_id", "engram_mcp.services.curation:resolve_id", s.RESOLVE_ID, read_only=True),
    Operation("search", "engram_mcp.services.browse:search", s.SEARCH, read_only=True),
    Operation(
        "consolidate_steps",
        "engram_mcp.services.consolidate:apply_steps",
        s.CONSOLIDATE_STEPS,
        read_only=False,
        replayable=False,
    ),
    # -- memory that travels (services/sharing, services/importers, services/travel_ops.py): files read
    # now, so never replayed later
    Operation("share", "engram_mcp.services.sharing:share", s.SHARE, read_only=False, replayable=False),
    Operation("sync", "engram_mcp.services.travel_ops:sync", s.SYNC, read_only=False, replayable=False),
    Operation(
        "import_from",
        "engram_mcp.services.importers:run_import",
        s.IMPORT_FROM,
        read_only=False,
        progress=True,
        replayable=False,
    ),
    # -- the hooks' (policy in services/hook_ops.py)
    Operation(
        "hook_session_start", "engram_mcp.services.hook_ops:session_start", s.HOOK_SESSION_START, read_only=False
    ),
    Operation("hook_prompt", "engram_mcp.services.hook_ops:prompt_context", s.HOOK_PROMPT, read_only=True),
    Operation("hook_step", "engram_mcp.services.hook_ops:step_context", s.HOOK_STEP, read_only=True),
    Operation("hook_turn_changes", "engram_mcp.services.hook_ops:turn_changes", s.HOOK_TURN_CHANGES, read_only=True),
    Operation(
        "hook_promote_stated",
        "engram_mcp.services.hook_ops:promote_stated",
        s.HOOK_PROMOTE_STATED,
        read_only=False,
        queueable=True,
    ),
    Operation(
        "hook_capture",
        "engram_mcp.services.hook_ops:capture",
        s.HOOK_CAPTURE,
        read_only=False,
        queueable=True,
        keyed=True,
    ),
    Operation(
        "hook_session_end",
        "engram_mcp.services.hook_ops:session_end",
        s.HOOK_SESSION_END,
        read_only=False,
        queueable=True,
    ),
    Operation("hook_config", "engram_mcp.services.hook_ops:hook_config", s.NO_ARGUMENTS, read_only=True),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
BY_TOOL: dict[str, Operation] = {op.tool.name: op for op in OPERATIONS if op.tool is not None}


def get(name: Any) -> Operation | None:
    """The operation called `name`, or None (also for a name that is not a string)."""
    return BY_NAME.get(name) if isinstance(name, str) else None


def names(where: Callable[[Operation], bool]) -> tuple[str, ...]:
    """The names of the operations for which `where` holds, in registry order."""
    return tuple(op.name for op in OPERATIONS if where(op))


QUEUEABLE_OPS = names(lambda op: op.queueable)
KEYED_OPS = names(lambda op: op.keyed)
PROGRESS_OPS = names(lambda op: op.progress)
QUICK_OPS = names(lambda op: op.quick)

# The MCP tool surface: tool name -> daemon op, the tools/list entries and their schemas.
TOOL_OPS: dict[str, str] = {tool: op.name for tool, op in BY_TOOL.items()}
TOOLS: list[dict[str, Any]] = [op.tool_spec() for op in BY_TOOL.values()]
TOOL_NAMES: tuple[str, ...] = tuple(BY_TOOL)
SCHEMAS: dict[str, dict[str, Any]] = {tool: op.schema for tool, op in BY_TOOL.items()}
# Tool writes queued in the spool when the daemon cannot be reached at all.
QUEUEABLE_TOOLS: tuple[str, ...] = tuple(tool for tool, op in BY_TOOL.items() if op.queueable)
