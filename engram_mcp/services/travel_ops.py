"""Operations for memory that travels: share, sync, import from other tools, promote to `team`.

Each is `op(access, ctx, **args)` like every operation, declared in core/operations.py.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from engram_mcp.core.display import context_safe
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


def promote_by_user(
    access: "ScopeAccess", ctx: "RequestContext", memory_id: str, target_scope: str, reason: str | None = None
) -> dict[str, Any]:
    """`engram promote` (no MCP tool): the user's own promotion, which alone carries a team
    file's or an import's memory into the user scope (`promotion.check_user_scope`)."""
    if target_scope == "team":
        return sharing.share(access, ctx, memory_id)
    return promotion.promote_by_user(access, ctx, memory_id, target_scope, reason)


def sync(access: "ScopeAccess", ctx: "RequestContext", user_dir: str | None = None) -> dict[str, Any]:
    """`engram sync`: the project's team memory; with `user_dir`, the user scope's mirror instead."""
    if user_dir is not None:
        return sharing.sync_user(access, ctx, user_dir)
    return sharing.sync_project(access, ctx)


def apply_team_memory(access: "ScopeAccess", ctx: "RequestContext") -> dict[str, Any] | None:
    """At session start: apply teammates' shared files (never writes into the repository),
    within SESSION_START_BUDGET_S, checked while the files are read.

    Returns None when the project has no shared folder (one stat) or nothing happened, else
    what the pull brought, for the SessionStart hook to tell the user::

        {
          "added":   [{"memory_id", "path", "author"?, "commit"?}, ...],  # at most REPORT_MAX_ITEMS
          "updated": [... same shape ...],
          "authors": {"Alice": 2, ...},   # git author -> memories added or changed ("unknown" when untracked)
          "conflicts": 1,                 # files or memories changed on both sides, merge markers, copies
          "left_alone": 1,                # files that could not be read or parsed (each named by `engram sync`)
          "pending": 0,                   # files not reached within the budget (applied next time)
          "redactions": 0,                # files that held secrets (applied redacted)
          "review": "engram sync",        # the command that shows all of it and resolves it
        }

    Counts are always present; lists only list the first REPORT_MAX_ITEMS. Fails open: a
    problem is logged and returned as {"error": ...}, and the session's context still comes.
    """
    linked = linked_team_folder(ctx)
    if linked is not None:
        return linked
    if not sharing.has_team_memory(ctx):
        return None
    try:
        report = sharing.sync_project(access, ctx, pull_only=True, budget_s=SESSION_START_BUDGET_S)
    except Exception as exc:  # noqa: BLE001 - memory is an enhancement: never block a session start
        import logging

        logging.getLogger("engram.sharing").warning("applying team memory failed: %s", exc)
        return {"error": context_safe(str(exc))[:300], "review": REVIEW_COMMAND}
    return session_report(report)


def linked_team_folder(ctx: "RequestContext") -> dict[str, Any] | None:
    """The apply report for a `.claude` or `.claude/team-memory` that is a symbolic link (whether
    its target exists or not): left alone and said why, as `engram sync` does, never followed
    and never skipped in silence. The link's target is the repository's text: not quoted."""
    from pathlib import Path

    root = Path(ctx.project_root)
    for rel in (Path(".claude"), sharing.TEAM_MEMORY_DIR):
        if os.path.islink(root / rel):
            why = (
                f"{rel.as_posix()} is a symbolic link: engram never follows one (a repository may point it "
                "anywhere), so its team memory was left alone; make it a real folder"
            )
            return {
                "added": [],
                "updated": [],
                "authors": {},
                "conflicts": 0,
                "left_alone": 1,
                "left_alone_items": [{"path": rel.as_posix(), "why": why}],
                "pending": 0,
                "redactions": 0,
                "forgotten": 0,
                "counts": {"added": 0, "updated": 0},
                "error": why,
                "review": REVIEW_COMMAND,
            }
    return None


#: Entries listed per kind in the session-start report (the counts say how many in all).
REPORT_MAX_ITEMS = 10
MAX_ITEM_CHARS = 200
REVIEW_COMMAND = "engram sync"


def session_report(report: dict[str, Any]) -> dict[str, Any] | None:
    """The session-start summary of a sync report (see apply_team_memory); None if nothing happened."""
    arrivals = report.get("arrivals") or []
    by_change: dict[str, list[dict[str, Any]]] = {"added": [], "updated": []}
    authors: dict[str, int] = {}
    for a in arrivals:
        # paths and authors come from a repository: nothing invisible or acting reaches the context
        by_change.setdefault(a.get("change", "updated"), []).append(
            {k: context_safe(str(a[k]))[:MAX_ITEM_CHARS] for k in ("memory_id", "path", "author", "commit") if k in a}
        )
        who = context_safe(str(a.get("author") or "unknown"))[:MAX_ITEM_CHARS]
        authors[who] = authors.get(who, 0) + 1
    counts = report.get("counts") or {}
    out: dict[str, Any] = {
        "added": by_change["added"][:REPORT_MAX_ITEMS],
        "updated": by_change["updated"][:REPORT_MAX_ITEMS],
        "authors": authors,
        "conflicts": int(counts.get("conflicts", 0)),
        "left_alone": int(counts.get("errors", 0)),
        "pending": int(counts.get("pending", 0)),
        "redactions": int(counts.get("redactions", 0)),
        "forgotten": int(counts.get("forgotten", 0)),
    }
    if not (arrivals or any(out[k] for k in ("conflicts", "left_alone", "pending", "redactions", "forgotten"))):
        return None
    out["counts"] = {"added": len(by_change["added"]), "updated": len(by_change["updated"])}
    out["review"] = REVIEW_COMMAND
    return out
