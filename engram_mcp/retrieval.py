"""Cross-scope hybrid retrieval: candidates, fusion, composite score, dedup.

Per scope: vector top-k and BM25 top-k over the filter mask; every candidate gets
both signals (a BM25-only hit still gets its cosine, and the reverse) so fusion is
never lopsided. Fusion is normalised weighted score fusion by default (measured above
RRF on LoCoMo, see retrieval-calibration.md and bench/), RRF on request. Then the
composite `(0.6 relevance + 0.2 importance + 0.2 recency) * scope_weight`, the
supersedes rule, and dedup across scopes (same id, then cosine >= 0.90).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .scope_index import STATUS_CODE, Filters, ScopeIndex
from .scoring import (
    CONSOLIDATED_RANK_FACTOR,
    composite,
    decay_factors,
    normalise_max,
    rrf_fusion,
    score_fusion,
)

STRATEGIES = ("vector", "keyword", "hybrid", "graph")
SUPERSEDED_MARGIN = 1e-3
SCOPE_PRIORITY = {"user": 3, "project": 2, "session": 1}


@dataclass
class Hit:
    """One ranked memory before its record is fetched."""

    scope: str
    key: str
    slot: int
    relevance: float
    score: float
    keyword: float = 0.0
    vector: float = 0.0
    also_in: list[str] = field(default_factory=list)


@dataclass
class ScopeView:
    """What retrieval needs from a scope: its index, weight and decay rule."""

    scope: str
    index: ScopeIndex
    weight: float
    frozen: bool = False  # live session: no decay


@dataclass
class RetrievalSettings:
    fusion: str = "score"
    keyword_weight: float = 0.5
    rrf_k: int = 60
    candidate_pool: int = 100
    cross_scope_dedup_similarity: float = 0.90


def _candidates(view: ScopeView, qvec, text: str, mask: np.ndarray, strategy: str, pool: int):
    """Union of vector and BM25 top-k for one scope, with both signals for every slot."""
    idx = view.index
    vec_slots = kw_slots = np.empty(0, dtype=np.int64)
    if strategy in ("vector", "hybrid", "graph") and qvec is not None:
        vec_slots, _ = idx.vectors.search(qvec, pool, mask)
    if strategy in ("keyword", "hybrid") and text.strip():
        kw_slots, _ = idx.bm25.search(text, pool, mask)
    slots = np.unique(np.concatenate([vec_slots, kw_slots]).astype(np.int64))
    if slots.size == 0:
        return slots, np.empty(0), np.empty(0), {}, {}
    kw = idx.bm25.scores_for(text, slots) if text.strip() else np.zeros(slots.size)
    vec = idx.vectors.similarities(qvec, slots) if qvec is not None else np.full(slots.size, np.nan)
    vec_rank = {int(s): i + 1 for i, s in enumerate(vec_slots)}
    kw_rank = {int(s): i + 1 for i, s in enumerate(kw_slots)}
    return slots, np.asarray(kw, dtype=np.float64), np.asarray(vec, dtype=np.float64), kw_rank, vec_rank


def rank(
    views: Sequence[ScopeView],
    qvec: np.ndarray | None,
    text: str,
    filters: Filters,
    strategy: str,
    settings: RetrievalSettings,
    limit: int,
    *,
    now: float | None = None,
    restrict: dict[str, set[str]] | None = None,
) -> tuple[list[Hit], int]:
    """Rank memories across scopes; returns (hits best first, total candidates matched).

    `restrict` limits a scope to given keys (the graph strategy's reachable memories).
    """
    now = time.time() if now is None else now
    parts = []
    for view in views:
        mask = view.index.mask(filters)
        if restrict is not None:
            allowed = np.zeros_like(mask)
            for key in restrict.get(view.scope, ()):
                slot = view.index.slot_of(key)
                if slot is not None and slot < allowed.size:
                    allowed[slot] = True
            mask &= allowed
        if not mask.any():
            continue
        eff = "hybrid" if strategy == "graph" else strategy
        slots, kw, vec, kw_rank, vec_rank = _candidates(view, qvec, text, mask, eff, settings.candidate_pool)
        if restrict is not None and slots.size == 0:
            slots = np.flatnonzero(mask)[: settings.candidate_pool]
            kw = view.index.bm25.scores_for(text, slots) if text.strip() else np.zeros(slots.size)
            vec = view.index.vectors.similarities(qvec, slots) if qvec is not None else np.full(slots.size, np.nan)
            kw_rank, vec_rank = {}, {}
        if slots.size:
            parts.append((view, slots, kw, vec, kw_rank, vec_rank))
    if not parts:
        return [], 0

    kw_all = np.concatenate([p[2] for p in parts])
    vec_all = np.concatenate([p[3] for p in parts])
    if strategy == "keyword":
        relevance = normalise_max(np.maximum(kw_all, 0.0))
    elif strategy == "vector":
        relevance = np.clip(np.nan_to_num(vec_all, nan=0.0), 0.0, 1.0)
    elif settings.fusion == "rrf":
        kr = np.concatenate([[p[4].get(int(s), 0) for s in p[1]] for p in parts]).astype(np.float64)
        vr = np.concatenate([[p[5].get(int(s), 0) for s in p[1]] for p in parts]).astype(np.float64)
        relevance = rrf_fusion(kr, vr, settings.rrf_k)
    else:
        relevance = score_fusion(kw_all, vec_all, settings.keyword_weight)

    hits: list[Hit] = []
    offset = 0
    for view, slots, kw, vec, _kr, _vr in parts:
        n = slots.size
        rel = relevance[offset : offset + n]
        half, last, access, importance = view.index.decay_inputs(slots)
        recency = np.ones(n) if view.frozen else decay_factors(half, now - last, access)
        final = composite(rel, importance, recency, view.weight)
        consolidated = view.index.cols.status_code[slots] == STATUS_CODE["consolidated"]
        final = np.where(consolidated, final * CONSOLIDATED_RANK_FACTOR, final)
        for i, slot in enumerate(slots):
            key = view.index.key_of(int(slot))
            if key is None:
                continue
            hits.append(
                Hit(view.scope, key, int(slot), float(rel[i]), float(final[i]), float(kw[i]), float(np.nan_to_num(vec[i])))
            )
        offset += n
    matched = sum(1 for h in hits if h.relevance > 0)
    hits = [h for h in hits if h.relevance > 0] or hits
    hits = _dedup_by_id(hits)
    _apply_supersedes(hits, views)
    hits.sort(key=lambda h: h.score, reverse=True)
    hits = _dedup_by_similarity(hits, views, settings.cross_scope_dedup_similarity, limit)
    return hits[:limit], matched


def _dedup_by_id(hits: list[Hit]) -> list[Hit]:
    """One hit per memory id; the best-scoring copy wins and records where else it lives."""
    best: dict[str, Hit] = {}
    for h in hits:
        cur = best.get(h.key)
        if cur is None:
            best[h.key] = h
        elif h.score > cur.score:
            h.also_in = sorted(set(cur.also_in + [cur.scope]))
            best[h.key] = h
        else:
            cur.also_in = sorted(set(cur.also_in + [h.scope]))
    return list(best.values())


def _apply_supersedes(hits: list[Hit], views: Sequence[ScopeView]) -> None:
    """A superseded memory always ranks below the memory that supersedes it."""
    by_key = {h.key: h for h in hits}
    newer_of: dict[str, str] = {}
    for view in views:
        newer_of.update(view.index.superseded_by)
    for _ in range(3):  # chains of supersession settle within a few passes
        changed = False
        for h in hits:
            newer = newer_of.get(h.key)
            while newer is not None and newer not in by_key:
                newer = newer_of.get(newer)
            if newer is None:
                continue
            top = by_key[newer].score
            if h.score >= top:
                h.score = top - SUPERSEDED_MARGIN
                changed = True
        if not changed:
            break


def _dedup_by_similarity(hits: list[Hit], views: Sequence[ScopeView], threshold: float, limit: int) -> list[Hit]:
    """Drop a hit from another scope whose vector is >= threshold similar to a kept one."""
    index_of = {v.scope: v.index for v in views}
    kept: list[Hit] = []
    kept_vecs: list[np.ndarray] = []
    kept_scopes: list[str] = []
    for h in hits:
        vec = index_of[h.scope].vectors.get(h.slot)
        dup = False
        if vec is not None and kept_vecs:
            sims = np.vstack(kept_vecs) @ vec
            for j in np.flatnonzero(sims >= threshold):
                if kept_scopes[j] != h.scope:
                    kept[j].also_in = sorted(set(kept[j].also_in + [h.scope]))
                    dup = True
                    break
        if dup:
            continue
        kept.append(h)
        kept_vecs.append(vec if vec is not None else np.zeros(index_of[h.scope].dim, dtype=np.float32))
        kept_scopes.append(h.scope)
        if len(kept) >= limit * 2 + 10:
            break
    return kept
