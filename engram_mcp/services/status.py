"""memory_status: health and counts of the caller's scopes; never raises for a broken store."""

from __future__ import annotations

import time
from typing import Any

from engram_mcp.core.errors import StoreUnavailable
from engram_mcp.core.vocabulary import RECALLABLE_STATUSES
from engram_mcp.index.scope_index import Filters
from engram_mcp.services import backfill
from engram_mcp.services.access import SCOPE_ORDER, RequestContext, ScopeAccess


def status(access: ScopeAccess, ctx: RequestContext) -> dict[str, Any]:
    """Health and counts across the caller's scopes; never raises for a broken store."""
    access.config(
        ctx.project_root
    )  # reads and validates the config files now: status reports their state, not a stale one
    config_problem = access.state.config_problem
    with access.lock:
        scopes: dict[str, Any] = {}
        degraded = []
        for scope, h in access.try_scopes(ctx, SCOPE_ORDER):
            if isinstance(h, StoreUnavailable):
                scopes[scope] = {"status": "unavailable", "message": h.message}
                degraded.append(scope)
                continue
            by_type: dict[str, int] = {}
            by_status: dict[str, int] = {}
            for c in h.repo.count_by_type_status():
                by_type[c.memory_type] = by_type.get(c.memory_type, 0) + c.n
                by_status[c.status] = by_status.get(c.status, 0) + c.n
            refused = h.store.failure  # open and readable, but writes are refused (disk full)
            if refused:
                degraded.append(scope)
            scopes[scope] = {
                "status": "read_only" if refused else "connected",
                **({"message": refused} if refused else {}),
                "database": f"{h.ns}/{h.db}",
                "path": str(h.store.directory),
                "total": sum(by_type.values()),
                **_live_and_superseded(h.index),
                "by_type": by_type,
                "by_status": by_status,
                "entities": h.repo.count_entities(),
                "relationships": h.repo.count_relations(),
                "without_vectors": h.index.missing_vectors,
                # of those, the ones a large import left to the daemon's backfill (services/backfill.py)
                "awaiting_vectors": backfill.awaiting(access, h),
                # "loaded" from its file, or "rebuilt (why the file was not used)" (handles.py)
                "index": h.index_status,
                "repaired_records": h.store.nul_repairs.get(
                    (h.ns, h.db), 0
                ),  # NULs removed from old records (storage/store.py)
                "database_size_bytes": h.store.size_bytes() if scope != "session" else None,
            }
        emb = access.embedder
        return {
            "connection": {
                "status": "degraded" if degraded else "connected",
                "mode": "embedded-surrealkv",
                "uptime_seconds": round(time.time() - access.state.started_at, 1),
                "degraded_scopes": degraded,
            },
            "project_root": str(ctx.project_root),
            "scopes": scopes,
            "embedding": {
                "model": emb.model_name,
                "dimensions": access.dim(),
                "loaded": bool(getattr(emb, "loaded", True)),
                "error": access.state.embedding_error,
            },
            "current_session": {"session_id": ctx.session_id} if ctx.session_id else None,
            "config_problem": config_problem,
            "awaiting_vectors": sum(int(s.get("awaiting_vectors") or 0) for s in scopes.values()),
        }


def _live_and_superseded(index: Any) -> dict[str, int]:
    """Recallable memories split as recall sees them: `live` ones it can return, `superseded`
    ones it hides because a newer live memory replaced them (both counted from the index)."""
    statuses = frozenset(RECALLABLE_STATUSES)
    live = int(index.mask(Filters(statuses=statuses)).sum())
    every = int(index.mask(Filters(statuses=statuses, include_superseded=True)).sum())
    return {"live": live, "superseded": every - live}
