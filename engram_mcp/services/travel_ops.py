"""Operations for memory that travels: share, sync, import from other tools, promote to `team`.

Each is `op(access, ctx, **args)` like every operation, declared in core/operations.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram_mcp.services import promotion, sharing

if TYPE_CHECKING:
    from engram_mcp.services.access import RequestContext, ScopeAccess

#: Time a session start spends applying shared files (measured: ~25 ms per new file, ~1 ms per
#: unchanged one); the rest waits for the next session or `engram sync`, so the context never
#: waits on a large first pull.
SESSION_START_BUDGET_S = 3.0


def promote(
    access: "ScopeAccess", ctx: "RequestContext", memory_id: str, target_scope: str, reason: str | None = None
) -> dict[str, Any]:
    """`promote_memory`: `target_scope: "team"` shares a project memory (its file in
    `.claude/team-memory/`); any other target is the service's promotion. Claude shares through
    the tool it already has, so the tool list grows by one word."""
    if target_scope == "team":
        return sharing.share(access, ctx, memory_id)
    return promotion.promote(access, ctx, memory_id, target_scope, reason)


def sync(access: "ScopeAccess", ctx: "RequestContext", user_dir: str | None = None) -> dict[str, Any]:
    """`engram sync`: the project's team memory; with `user_dir`, the user scope's mirror instead."""
    if user_dir is not None:
        return sharing.sync_user(access, ctx, user_dir)
    return sharing.sync_project(access, ctx)


def apply_team_memory(access: "ScopeAccess", ctx: "RequestContext") -> dict[str, Any] | None:
    """At session start: apply teammates' shared files (never writes into the repository).

    None when the project has no shared folder (one stat). Fails open: a problem is logged
    and returned, and the session's context still comes.
    """
    if not sharing.has_team_memory(ctx):
        return None
    try:
        report = sharing.sync_project(access, ctx, pull_only=True, budget_s=SESSION_START_BUDGET_S)
    except Exception as exc:  # noqa: BLE001 - memory is an enhancement: never block a session start
        import logging

        logging.getLogger("engram.sharing").warning("applying team memory failed: %s", exc)
        return {"error": str(exc)[:300]}
    return {k: v for k, v in report["counts"].items() if v} or None
