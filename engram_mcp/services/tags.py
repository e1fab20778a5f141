"""The tags in use, with how many memories carry each (`engram tags`).

Tags are free text, so a user filtering by tag (`engram list --tags`, `recall_memories`'s
`tags`) needs to know which ones exist and how they are spelled. This reads the per-scope
indexes (the same ones recall and `engram list` read), never the database, and counts only
the memories recall can return (created, active, consolidated): forgotten and archived ones
are not offered as filters.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.vocabulary import RECALLABLE_STATUSES, SCOPES
from engram_mcp.services.access import SCOPE_ORDER, RequestContext, ScopeAccess

DEFAULT_TAGS_LIMIT = 50
MAX_TAGS_LIMIT = 1000


def _scopes(scope: Any) -> tuple[str, ...]:
    """The scopes asked for (one name or a list), defaulting to all the caller's."""
    if scope is None:
        return SCOPE_ORDER
    items = [scope] if isinstance(scope, str) else scope
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise InvalidInput("scope must be a scope name or a list of them", field="scope")
    for name in items:
        if name not in SCOPES:
            raise InvalidInput(f"scope {name[:40]!r} is not one of {', '.join(SCOPES)}", field="scope")
    return tuple(s for s in SCOPE_ORDER if s in items)


def tags_in_use(
    access: ScopeAccess, ctx: RequestContext, *, scope: str | list[str] | None = None, limit: int = DEFAULT_TAGS_LIMIT
) -> dict[str, Any]:
    """The `limit` most used tags across the caller's scopes, most used first (ties by name).

    Each entry gives the total and the count per scope; `total_tags` says how many distinct
    tags there are in all, so a caller knows when the list was cut. A scope whose store cannot
    be opened is left out with a `scope_unavailable` warning, as in recall.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TAGS_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_TAGS_LIMIT}", field="limit")
    warnings: list[dict[str, Any]] = []
    per_scope: dict[str, Counter[str]] = {}
    with access.lock:
        for name, handle in access.open_scopes(ctx, _scopes(scope), warnings):
            per_scope[name] = _count_tags(handle.index)
    total: Counter[str] = Counter()
    for counts in per_scope.values():
        total.update(counts)
    ranked = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return {
        "tags": [
            {"tag": tag, "count": n, "by_scope": {s: c[tag] for s, c in per_scope.items() if c[tag]}}
            for tag, n in ranked
        ],
        "total_tags": len(total),
        "scopes": list(per_scope),
        "warnings": warnings,
    }


def _count_tags(index: Any) -> Counter[str]:
    """Tag -> number of recallable memories of one scope index carrying it."""
    recallable = index.live_mask_for(RECALLABLE_STATUSES)
    counts: Counter[str] = Counter()
    for slot, tags in index.tags.items():
        if slot < recallable.size and recallable[slot]:
            counts.update(tags)
    return counts
