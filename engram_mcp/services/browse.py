"""Browse memories without a query: newest first, filtered, paged (`engram list`).

Recall ranks by relevance and strengthens what it returns; browsing must do neither. It
answers "what does engram know here?" from the derived in-memory index (scope_index.py),
whose filter columns (type, status, created_at, tags, category) are already held per slot:
a page costs one vectorised mask per scope, a partial sort of the matching slots by
creation time, and one database read of the `limit` records shown (without their
vectors). Nothing is decoded for the memories that are not on the page, so a page is as
cheap at 100k memories as at 100.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.vocabulary import MEMORY_TYPES, RECALLABLE_STATUSES, SCOPES, STATUSES
from engram_mcp.index.scope_index import Filters
from engram_mcp.index.scoring import to_epoch
from engram_mcp.services.access import SCOPE_ORDER, RequestContext, ScopeAccess
from engram_mcp.services.records import check_tags, parse_time, public_memory

DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 200
MAX_LIST_PAGE = 100_000


def _names(value: Any, allowed: tuple[str, ...] | None, field: str) -> tuple[str, ...]:
    """A string or a list of strings, each one of `allowed` (when given), without repeats."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise InvalidInput(f"{field} must be a string or a list of strings", field=field)
    items = [i.strip().lower() for i in items if i.strip()]
    if allowed is not None:
        for i in items:
            if i not in allowed:
                raise InvalidInput(f"{field} {i[:40]!r} is not one of {', '.join(allowed)}", field=field)
    return tuple(dict.fromkeys(items))


def _positive_int(value: Any, field: str, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise InvalidInput(f"{field} must be an integer from 1 to {top}", field=field)
    return value


def _statuses(status: Any) -> frozenset[str]:
    """Default: what recall can return (created, active, consolidated); `all` adds archived and forgotten."""
    names = _names(status, STATUSES + ("all",), "status")
    if not names:
        return frozenset(RECALLABLE_STATUSES)
    if "all" in names:
        return frozenset(STATUSES)
    return frozenset(names)


def _newest(index: Any, filters: Filters, want: int) -> tuple[int, list[tuple[float, str]]]:
    """(matching count, the `want` newest (created_at, key) of one scope index), newest first."""
    slots = np.flatnonzero(index.mask(filters))
    count = int(slots.size)
    if count == 0:
        return 0, []
    created = index.cols.created_at[slots]
    if slots.size > want:
        top = np.argpartition(-created, want - 1)[:want]
        slots, created = slots[top], created[top]
    order = np.argsort(-created, kind="stable")
    out = []
    for i in order:
        key = index.key_of(int(slots[i]))
        if key is not None:
            out.append((float(created[i]), key))
    return count, out


def list_memories(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    scope: str | list[str] | None = None,
    type: str | list[str] | None = None,
    status: str | list[str] | None = None,
    tags: list[str] | None = None,
    category: str | list[str] | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIST_LIMIT,
    page: int = 1,
) -> dict[str, Any]:
    """One page of memories, newest first, across the caller's scopes; never strengthens.

    `after`/`before` bound created_at (ISO 8601). A scope that cannot be opened becomes a
    warning, as in recall. The answer says how many match and which page comes next.
    """
    started = time.perf_counter()
    limit = _positive_int(limit, "limit", MAX_LIST_LIMIT)
    page = _positive_int(page, "page", MAX_LIST_PAGE)
    scopes = _names(scope, SCOPES, "scope") or SCOPE_ORDER
    types = _names(type, MEMORY_TYPES, "type")
    categories = _names(category, None, "category")
    after_dt, before_dt = parse_time(after, "after"), parse_time(before, "before")
    filters = Filters(
        types=frozenset(types) or None,
        tags=frozenset(check_tags(tags)) or None if tags else None,
        category=frozenset(categories) or None,
        after=to_epoch(after_dt) if after_dt else None,
        before=to_epoch(before_dt) if before_dt else None,
        statuses=_statuses(status),
        include_superseded=True,  # browsing lists what engram holds; a replaced memory is marked, not hidden
    )
    want = page * limit
    warnings: list[dict[str, Any]] = []
    with access.lock:
        total, candidates, handles = 0, [], {}
        for name, h in access.open_scopes(ctx, scopes, warnings):
            handles[name] = h
            count, newest = _newest(h.index, filters, want)
            total += count
            candidates += [(created, key, name) for created, key in newest]
        candidates.sort(key=lambda c: (c[0], c[1]), reverse=True)  # ULIDs break ties in time order
        shown = candidates[(page - 1) * limit : want]
        memories = _fetch(handles, shown)
    pages = max(1, math.ceil(total / limit))
    return {
        "memories": memories,
        "total_matched": total,
        "page": page,
        "pages": pages,
        "limit": limit,
        "next_page": page + 1 if page < pages else None,
        "query_time_ms": round((time.perf_counter() - started) * 1000, 2),
        "warnings": warnings,
        "degraded": bool(warnings),
    }


def _fetch(handles: dict[str, Any], shown: list[tuple[float, str, str]]) -> list[dict[str, Any]]:
    """The records of one page (one query per scope, without vectors), in page order."""
    by_scope: dict[str, list[str]] = {}
    for _, key, name in shown:
        by_scope.setdefault(name, []).append(key)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for name, keys in by_scope.items():
        h = handles[name]
        for row in h.repo.get_many_for_recall(keys):
            row["embedding"] = bool(row.pop("has_embedding", False))
            rows[(name, row["id"])] = row
    now = time.time()
    out = []
    for _, key, name in shown:
        if (name, key) in rows:
            mem = public_memory(rows[(name, key)], frozen=(name == "session"), now=now)
            newer = _successor(handles[name].index, key)
            if newer:
                mem["superseded_by"] = format_memory_id(newer)
            out.append(mem)
    return out


def _successor(index: Any, key: str) -> str | None:
    """The memory that replaced `key`, when recall hides `key` for it (the successor is live)."""
    newer = index.superseded_by.get(key)
    slot = index.slot_of(key)
    if newer is None or slot is None:
        return None
    visible = index.mask(Filters(statuses=frozenset(STATUSES)))  # all statuses; superseded slots drop out
    return None if slot < visible.size and visible[slot] else str(newer)


#: Candidates per strategy per scope a UI search ranks (recall's default is 100): the total is
#: every relevant memory, and the last page the last one, up to this many per scope (beyond, the
#: answer says the total is a lower bound). Measured at 10k memories on a loaded 2-core machine:
#: 500 adds ~8 ms to a search's p50 over recall's own pool, 2,000 added ~18 ms.
SEARCH_POOL = 500
MAX_SEARCH_LIMIT = 50


def search(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    query: str,
    scope: str | list[str] | None = None,
    type: str | list[str] | None = None,
    status: str | list[str] | None = None,
    tags: list[str] | None = None,
    category: str | list[str] | None = None,
    after: str | None = None,
    before: str | None = None,
    strategy: str = "hybrid",
    limit: int = DEFAULT_LIST_LIMIT,
    page: int = 1,
) -> dict[str, Any]:
    """One page of a ranked search that changes nothing (`engram ui`): recall's ranking with
    browse's filters and pages. The status filter is in recall's candidate mask (an archived
    match is found however far down it ranks), the candidates are widened to SEARCH_POOL per
    scope so the total counts every relevant memory (up to that many), and nothing is strengthened."""
    from engram_mcp.services.recall import MAX_RECALL_OFFSET, recall

    limit = _positive_int(limit, "limit", MAX_SEARCH_LIMIT)
    page = _positive_int(page, "page", MAX_RECALL_OFFSET // limit + 1)
    time_range = {k: v for k, v in (("after", after), ("before", before)) if v}
    result = recall(
        access,
        ctx,
        query=query,
        scope=scope,
        type=type,
        strategy=strategy,
        limit=limit,
        tags=tags,
        category=category,
        time_range=time_range or None,
        statuses=list(_statuses(status)),
        strengthen=False,
        offset=(page - 1) * limit,
        pool=SEARCH_POOL,
    )
    matched = int(result.get("total_matched") or 0)
    reachable = min(matched, MAX_RECALL_OFFSET + limit)
    pages = max(1, math.ceil(reachable / limit))
    return {
        **result,
        "total_matched": matched,
        "total_is_lower_bound": matched >= SEARCH_POOL,  # a scope's candidates were cut at the pool
        "page": page,
        "pages": pages,
        "limit": limit,
        "next_page": page + 1 if page < pages else None,
    }
