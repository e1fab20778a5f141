"""recall_memories: hybrid search across the caller's scopes, and the testing effect.

The ranking itself is index/retrieval.py (`rank` over one `ScopeView` per scope); this
module checks the arguments, embeds the query outside the write lock, fetches the records
of the hits (`materialise`) and strengthens every returned memory (`strengthen_hits`, written
behind the recall by strengthen.py).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

import numpy as np

from engram_mcp.core.config import SCOPE_WEIGHT_PROFILES, scale_scope_weights
from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.vocabulary import MEMORY_TYPES, RECALLABLE_STATUSES, SCOPES, STATUSES
from engram_mcp.index.retrieval import STRATEGIES, Hit, KeywordFirst, RetrievalSettings, ScopeView, keyword_first, rank
from engram_mcp.index.scope_index import STATUS_CODE, Filters
from engram_mcp.index.scoring import REACTIVATE_AT_STRENGTH, decay_factor, to_epoch
from engram_mcp.services import backfill, graph
from engram_mcp.services.access import SCOPE_ORDER, RequestContext, ScopeAccess
from engram_mcp.services.handles import EarlyAnswerWithdrawn
from engram_mcp.services.records import (
    check_enum,
    check_object,
    check_tags,
    check_text,
    check_unit,
    parse_time,
    public_memory,
)

MAX_RECALL_LIMIT = 50
MAX_RECALL_OFFSET = 5_000  # how deep a caller that pages (`engram ui`'s search) may go


def recall(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    query: str,
    scope: str | list[str] | None = None,
    type: str | list[str] | None = None,
    strategy: str = "hybrid",
    limit: int = 10,
    min_importance: float = 0.0,
    tags: list[str] | None = None,
    category: str | list[str] | None = None,
    time_range: dict[str, str] | None = None,
    include_forgotten: bool = False,
    include_superseded: bool = False,
    strengthen: bool = True,
    profile: str | None = None,
    statuses: str | list[str] | None = None,
    offset: int = 0,
    pool: int | None = None,
) -> dict[str, Any]:
    """Hybrid recall across scopes; every returned memory is strengthened.

    A memory superseded by a live one is left out unless `include_superseded` (then it
    ranks right below its successor and says `superseded_by`). For a caller that pages
    (`engram ui`'s search, services/browse.search): `statuses` filters in the candidate mask
    (overriding `include_forgotten`), `offset` skips that many of the ranked hits, and `pool`
    widens the candidates per strategy per scope so the total and the deep pages are complete.
    """
    started = time.perf_counter()
    query = check_text(query, "query", limit=4_000)
    check_enum(strategy, STRATEGIES, "strategy")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_RECALL_LIMIT}", field="limit")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_RECALL_OFFSET:
        raise InvalidInput(f"offset must be an integer from 0 to {MAX_RECALL_OFFSET}", field="offset")
    scopes = _as_tuple(scope, SCOPES, "scope") or SCOPE_ORDER
    types = _as_tuple(type, MEMORY_TYPES, "type")
    categories = _as_tuple(category, None, "category")
    tr = check_object(time_range, "time_range")
    after, before = (
        parse_time(tr.get("after"), "time_range.after"),
        parse_time(tr.get("before"), "time_range.before"),
    )
    filters = Filters(
        types=frozenset(types) if types else None,
        tags=frozenset(check_tags(tags)) or None if tags else None,
        category=frozenset(c.lower() for c in categories) if categories else None,
        min_importance=check_unit(min_importance, "min_importance", 0.0),
        after=to_epoch(after) if after else None,
        before=to_epoch(before) if before else None,
        statuses=_statuses(statuses, include_forgotten),
        include_superseded=bool(include_superseded),
    )
    cfg = access.config(ctx.project_root)
    if profile:
        check_enum(profile, tuple(SCOPE_WEIGHT_PROFILES), "profile")
    settings = RetrievalSettings.from_config(cfg)
    if pool is not None:
        if isinstance(pool, bool) or not isinstance(pool, int) or not 1 <= pool <= MAX_RECALL_OFFSET * 2:
            raise InvalidInput(f"pool must be an integer from 1 to {MAX_RECALL_OFFSET * 2}", field="pool")
        settings.candidate_pool = max(settings.candidate_pool, pool)
    qvec: np.ndarray | None = None
    warnings: list[dict[str, Any]] = []
    effective = strategy
    views: list[ScopeView] | None = None
    scope_warnings: list[dict[str, Any]] = []
    first: KeywordFirst | None = None
    made_on: list[tuple[int, int]] = []
    if strategy != "keyword":
        # The query embeds here while a worker opens the stores (on a cold start the model loads
        # meanwhile) and, for a hybrid recall, runs the keyword half (`keyword_first`).
        def prepare() -> tuple[list[ScopeView], list[dict[str, Any]], list[tuple[int, int]], KeywordFirst | None]:
            with access.lock:
                got, got_warnings = access.views(ctx, scopes, cfg)
                with access.registry.build_lock:  # an index still loading gets no page meanwhile
                    half = keyword_first(got, query, filters, settings.candidate_pool) if strategy == "hybrid" else None
                    return got, got_warnings, _edits(got), half

        if access.holds_lock():  # called under the lock (context, consolidation): one after the other
            qvec, warning = access.embed_query(query)
        else:
            prepared = access.beside(prepare)
            qvec, warning = access.embed_query(query)  # the embedder picks its session (docs/architecture.md)
            try:
                views, scope_warnings, made_on, first = prepared.result()
            except StoreUnavailable:
                views = None  # the attempt below opens them again and says why
        if warning:
            warnings.append({"code": "partial_results", "message": f"{warning}; fell back to keyword search"})
        effective = strategy if qvec is not None else "keyword"
    with access.lock:
        for attempt in range(2):
            if views is None or _edits(views) != made_on:  # a write landed while the query embedded
                views, scope_warnings = access.views(ctx, scopes, cfg)
                first = None
            restrict = None
            if effective == "graph":  # reads the store's graph: waits for an index still loading
                restrict = graph.reachable_memories(access, ctx, [v.scope for v in views], query)
            try:
                # No wait for a store inside: the loader of an index needs this lock to finish.
                with access.registry.build_lock:
                    if first is not None and _edits(views) != made_on:  # a page of a loading index landed
                        first = None
                    if effective == "hybrid" and first is None:
                        first = keyword_first(views, query, filters, settings.candidate_pool)
                    if profile:
                        weights = scale_scope_weights(SCOPE_WEIGHT_PROFILES[profile])
                        for v in views:
                            v.weight = weights[v.scope]
                    hits, matched = rank(
                        views, qvec, query, filters, effective, settings, offset + limit, restrict=restrict, first=first
                    )
                    hits = hits[offset:]
                    memories = materialise(access, ctx, hits, views)
                if not _still_current(access, ctx, views):
                    raise EarlyAnswerWithdrawn("an index was rebuilt while this recall ranked on it")
                break
            except EarlyAnswerWithdrawn:
                # the store opened and did not match its index file: rank again on the rebuilt index
                for v in views:
                    try:
                        h = access.handle(ctx, v.scope, early_ok=True)
                        if h.rebuilding is None:  # one still loading is read as it is
                            h.wait_engine()
                    except StoreUnavailable:
                        pass  # the next attempt names the scope as unavailable
                if attempt:
                    raise StoreUnavailable(
                        "a store changed while this recall read it (it opened and its index was rebuilt); try again"
                    ) from None
                first, views = None, None  # the second attempt opens its views again
        warnings.extend(scope_warnings)
        if effective != "keyword":  # memories awaiting a large import's vectors matched by keywords only
            warnings.extend(backfill.awaiting_warnings(access, ctx, views or []))
        if strengthen and memories:
            strengthen_hits(access, ctx, hits, ctx.session_id)
        access.state.recalls += 1
    return {
        "memories": memories,
        "total_matched": matched,
        "strategy_used": effective,
        "query_time_ms": round((time.perf_counter() - started) * 1000, 2),
        "warnings": warnings,
        "degraded": bool(scope_warnings),
    }


def _edits(views: list[ScopeView]) -> list[tuple[int, int]]:
    """Which index each view reads and how far it has changed: `keyword_first`'s results hold
    while this is the same."""
    return [(id(v.index), v.index.edits) for v in views]


def _still_current(access: ScopeAccess, ctx: RequestContext, views: list[ScopeView]) -> bool:
    """Whether every scope still holds the index the hits were ranked on (a store that opened in
    the background and did not match its index file has a rebuilt one: services/handles.py)."""
    for v in views:
        try:
            if access.handle(ctx, v.scope, early_ok=True).index is not v.index:
                return False
        except StoreUnavailable:
            return False
    return True


def _statuses(statuses: Any, include_forgotten: bool) -> frozenset[str]:
    """The statuses a recall's mask keeps: `statuses` when given (`all`: every one), else the
    recallable ones, every one with `include_forgotten`."""
    if statuses is None:
        return frozenset(STATUSES) if include_forgotten else frozenset(RECALLABLE_STATUSES)
    names = _as_tuple(statuses, STATUSES + ("all",), "statuses")
    if not names:
        return frozenset(RECALLABLE_STATUSES)
    return frozenset(STATUSES) if "all" in names else frozenset(names)


def _as_tuple(value: Any, allowed: tuple[str, ...] | None, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise InvalidInput(f"{field} must be a string or a list of strings", field=field)
    if allowed is not None:
        for i in items:
            check_enum(i, allowed, field)
    return tuple(dict.fromkeys(items))


def materialise(
    access: ScopeAccess, ctx: RequestContext, hits: list[Hit], views: list[ScopeView]
) -> list[dict[str, Any]]:
    """Fetch the records of the ranked hits, without their vectors: from the index file's
    records where the store has not rewritten them since (`ScopeHandle.early_rows` while the
    store opens, `ScopeHandle.file_rows` after), the rest in one query per scope.

    The read bypasses `ScopeHandle.before_io` (`direct_repo`), so strengthening held back from earlier
    recalls is not written here (that is the point of the write-behind); it is overlaid
    on the fetched rows instead, so callers see the same numbers as after a write.
    """
    by_scope: dict[str, list] = {}
    for h in hits:
        by_scope.setdefault(h.scope, []).append(h)
    rows: dict[tuple[str, str], dict] = {}
    now = time.time()
    for scope, scope_hits in by_scope.items():
        handle = access.handle(ctx, scope, early_ok=True)
        pending = handle.index.pending_strengthen
        keys = [h.key for h in scope_hits]
        ranked_on = next(v.index for v in views if v.scope == scope)
        early = handle.early_rows(keys, ranked_on)  # the store still opens: the records the index file carries
        if early is None:  # open: the file's records unless written since, the rest from the engine
            early, rest = handle.file_rows(keys, ranked_on)
            if rest:
                early += handle.direct_repo().get_many_for_recall(rest)
        for row in early:
            key = row["id"]
            row["embedding"] = bool(row.pop("has_embedding", False))  # all public_memory reads of it
            bump = pending.get(key)
            if bump is not None:
                row["access_count"] = int(row.get("access_count", 0)) + bump[0]
                row["last_accessed_at"] = datetime.fromtimestamp(bump[1], timezone.utc)
                if row.get("status") == "created":
                    row["status"] = "active"
            rows[(scope, key)] = row
    out = []
    for h in hits:
        hit_row = rows.get((h.scope, h.key))
        if hit_row is None:
            continue
        mem = public_memory(hit_row, frozen=(h.scope == "session"), now=now)
        mem["relevance_score"] = round(h.relevance, 4)
        mem["similarity"] = round(h.vector, 4)
        mem["score"] = round(h.score, 4)
        if h.also_in:
            mem["also_in"] = h.also_in
        newer = next((v.index.superseded_by[h.key] for v in reversed(views) if h.key in v.index.superseded_by), None)
        if newer:
            mem["superseded_by"] = format_memory_id(newer)
        out.append(mem)
    return out


def strengthen_hits(access: ScopeAccess, ctx: RequestContext, hits: list[Hit], session_id: str | None) -> None:
    """Testing effect: access_count + 1 and last access now for every returned memory.

    Applied to the in-memory index at once and written to the engine behind the recall
    (engram_mcp/services/strengthen.py): before the next statement on that database, within a
    second, or at close.
    """
    now = time.time()
    by_scope: dict[str, list[str]] = {}
    for h in hits:
        by_scope.setdefault(h.scope, []).append(h.key)
    write_behind = access.write_behind
    for scope, keys in by_scope.items():
        handle = access.handle(ctx, scope, early_ok=True)
        if handle.rebuilding is not None:  # its index is still loading: not strengthened (a partial answer)
            continue
        write_behind.record(handle, keys, now, session_id)  # index now, engine shortly (strengthen.py)
        reactivate = []
        for k in keys:
            slot = handle.index.slot_of(k)
            if slot is None:
                continue
            status = int(handle.index.cols.status_code[slot])
            if status in (STATUS_CODE["consolidated"], STATUS_CODE["archived"]):
                f = decay_factor(
                    MEMORY_TYPES[handle.index.cols.type_code[slot]], 0.0, int(handle.index.cols.access_count[slot])
                )
                if float(handle.index.cols.importance[slot]) * f >= REACTIVATE_AT_STRENGTH:
                    reactivate.append(k)
        if reactivate:
            handle.repo.set_status(reactivate, "active")
            for k in reactivate:
                handle.index.set_status(k, "active")
