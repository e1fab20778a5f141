"""Cross-scope hybrid retrieval: candidates, fusion, contiguity, priors, dedup.

Per scope: vector top-k and BM25 top-k over the filter mask (which hides superseded
memories unless asked); every candidate gets both signals (a BM25-only hit still gets
its cosine, and the reverse) so fusion is never lopsided. Fusion is normalised weighted
score fusion by default (scoring.score_fusion; measured above RRF), RRF on request.
Candidates with neither a keyword hit nor a cosine above the relevance floor are dropped
(`relevant_mask`): they are not returned, not counted in total_matched and not
strengthened. A memory recorded next to a relevant one in the same session then gets a
share of its neighbour's relevance (temporal contiguity), and the final score adds the
scope, importance, recency and how-to priors (scoring.final_score). BM25 scores every
scope with the statistics of all the recall's scopes (bm25.SharedStats): one scale. Last
come the supersedes rule (with `include_superseded`) and dedup across scopes (same id,
then cosine >= 0.90).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from engram_mcp.core.config_keys import DEFAULT_CONFIG, Config
from engram_mcp.core.vocabulary import RECALL_STRATEGIES
from engram_mcp.index.bm25 import BM25Index, SharedStats
from engram_mcp.index.scope_index import STATUS_CODE, TYPE_CODE, Filters, ScopeIndex
from engram_mcp.index.scoring import (
    CONSOLIDATED_RANK_FACTOR,
    CONTIGUITY_LAGS,
    CONTIGUITY_WEIGHT,
    COSINE_FLOOR,
    adaptive_keyword_weight,
    asks_how_to,
    decay_factors,
    final_score,
    rrf_fusion,
    score_fusion,
)
from engram_mcp.index.tokenizer import tokenize

STRATEGIES = RECALL_STRATEGIES
SUPERSEDED_MARGIN = 1e-3
# Hit objects are built for this many best candidates (plus related ones), not for all ~200 per
# scope: `rank` checks the result is the one all candidates give and falls back otherwise.
HIT_BUDGET_PER_RESULT = 3
HIT_BUDGET_EXTRA = 30


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
    """The config keys ranking reads, with their defaults taken from the declaration
    (core/config_keys.py): a test or benchmark that builds one by hand ranks like engram."""

    fusion: str = DEFAULT_CONFIG.fusion
    keyword_weight: float = DEFAULT_CONFIG.keyword_weight
    rrf_k: int = DEFAULT_CONFIG.rrf_k
    candidate_pool: int = DEFAULT_CONFIG.candidate_pool
    cross_scope_dedup_similarity: float = DEFAULT_CONFIG.cross_scope_dedup_similarity
    #: Relevance floor (see `relevant_mask` and the calibration note at the config key).
    min_cosine: float = DEFAULT_CONFIG.relevance_min_cosine
    min_cosine_ratio: float = DEFAULT_CONFIG.relevance_min_cosine_ratio
    contiguity_weight: float = CONTIGUITY_WEIGHT

    @classmethod
    def from_config(cls, cfg: Config) -> RetrievalSettings:
        """The settings of one recall, from the caller's effective configuration."""
        return cls(
            fusion=cfg.fusion,
            keyword_weight=cfg.keyword_weight,
            rrf_k=cfg.rrf_k,
            candidate_pool=cfg.candidate_pool,
            cross_scope_dedup_similarity=cfg.cross_scope_dedup_similarity,
            min_cosine=cfg.relevance_min_cosine,
            min_cosine_ratio=cfg.relevance_min_cosine_ratio,
        )


_NO_SLOTS = np.empty(0, dtype=np.int64)


@dataclass
class KeywordFirst:
    """What a recall computes before its query vector exists (`keyword_first`): the shared BM25
    statistics and, per view, its filter mask and BM25 search. The recall does this while the
    query embeds on the other core; `rank` then starts from it."""

    stats: SharedStats | None
    masks: list[np.ndarray]
    searches: list[tuple[np.ndarray, Any]]  # (BM25 top slots best first, the dense scores)


def keyword_first(views: Sequence[ScopeView], text: str, filters: Filters, pool: int) -> KeywordFirst:
    """The keyword half of a hybrid recall, which does not need the query vector."""
    stats = shared_stats(views, text)
    masks = [view.index.mask(filters) for view in views]
    searches: list[tuple[np.ndarray, Any]] = []
    for view, mask in zip(views, masks, strict=True):
        if text.strip() and mask.any():
            slots, _, dense = view.index.bm25.search_scored(text, pool, mask, stats)
            searches.append((slots, dense))
        else:
            searches.append((_NO_SLOTS, None))
    return KeywordFirst(stats, masks, searches)


def _candidates(
    view: ScopeView,
    qvec,
    text: str,
    mask: np.ndarray,
    strategy: str,
    pool: int,
    stats: SharedStats | None = None,
    keyword: tuple[np.ndarray, Any] | None = None,
):
    """Union of vector and BM25 top-k for one scope, with both signals for every slot.

    Returns (slots sorted, keyword scores, cosines, BM25 top slots best first, vector top slots
    best first). Each index scores the query once: the other list's candidates are looked up in
    the scores the search already computed. `stats`: the recall's shared BM25 statistics;
    `keyword`: the BM25 search already made (`keyword_first`).
    """
    idx = view.index
    has_text = bool(text.strip())
    vec_slots = kw_slots = _NO_SLOTS
    scanned = kw_dense = None
    if strategy in ("vector", "hybrid", "graph") and qvec is not None:
        vec_slots, _, scanned = idx.vectors.search_scored(qvec, pool, mask)
    if strategy in ("keyword", "hybrid") and has_text:
        if keyword is not None:
            kw_slots, kw_dense = keyword
        else:
            kw_slots, _, kw_dense = idx.bm25.search_scored(text, pool, mask, stats)
    slots = np.union1d(vec_slots, kw_slots).astype(np.int64, copy=False)

    def signals(which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(BM25, cosine) of any slots, from what the searches already computed."""
        kw = idx.bm25.scores_for(text, which, dense=kw_dense, stats=stats) if has_text else np.zeros(which.size)
        vec = (
            idx.vectors.similarities(qvec, which, scanned=scanned) if qvec is not None else np.full(which.size, np.nan)
        )
        return np.asarray(kw, dtype=np.float64), np.asarray(vec, dtype=np.float64)

    if slots.size == 0:
        return slots, np.empty(0), np.empty(0), kw_slots, vec_slots, signals
    kw, vec = signals(slots)
    return slots, kw, vec, kw_slots, vec_slots, signals


def _ranks(top: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """1-based position of each slot in `top` (a best-first list), 0 when absent."""
    out = np.zeros(slots.size, dtype=np.float64)
    if top.size == 0 or slots.size == 0:
        return out
    order = np.argsort(top, kind="stable")
    sorted_top = top[order]
    pos = np.minimum(np.searchsorted(sorted_top, slots), top.size - 1)
    found = sorted_top[pos] == slots
    out[found] = order[pos[found]] + 1
    return out


def relevant_mask(keyword: np.ndarray, cosine: np.ndarray, min_cosine: float, min_cosine_ratio: float) -> np.ndarray:
    """Which candidates are relevant at all (only they are returned, counted and strengthened).

    A keyword hit (BM25 > 0) is relevant. Without one, a candidate needs a cosine of at least
    `max(min_cosine, min_cosine_ratio * best cosine among all candidates)`: cosine has a fixed
    scale, and MiniLM gives unrelated text 0.0-0.3, so every memory of a small store would
    otherwise come back (and be strengthened, and so promoted) for any query. The relative part
    drops the 0.27 noise next to a 0.80 answer while a store whose best answer is a 0.30
    paraphrase still returns it. NaN cosine (no vector) counts as no evidence.
    """
    cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=-1.0)
    best = float(cos.max()) if cos.size else -1.0
    floor = max(min_cosine, min_cosine_ratio * best)
    return (np.asarray(keyword) > 0) | (cos >= floor)


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
    first: KeywordFirst | None = None,
) -> tuple[list[Hit], int]:
    """Rank memories across scopes; returns (hits best first, total candidates matched).

    `restrict` limits a scope to given keys (the graph strategy's reachable memories). `first`:
    the keyword half already computed on these views with these filters (`keyword_first`).
    """
    now = time.time() if now is None else now
    stats = first.stats if first is not None else shared_stats(views, text)
    parts = []
    for vi, view in enumerate(views):
        mask = first.masks[vi] if first is not None else view.index.mask(filters)
        keyword = first.searches[vi] if first is not None and restrict is None else None
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
        slots, kw, vec, kw_top, vec_top, signals = _candidates(
            view, qvec, text, mask, eff, settings.candidate_pool, stats, keyword
        )
        if restrict is not None and slots.size == 0:
            slots = np.flatnonzero(mask)[: settings.candidate_pool]
            kw = view.index.bm25.scores_for(text, slots, stats=stats) if text.strip() else np.zeros(slots.size)
            vec = view.index.vectors.similarities(qvec, slots) if qvec is not None else np.full(slots.size, np.nan)
            kw, vec = np.asarray(kw, dtype=np.float64), np.asarray(vec, dtype=np.float64)
            kw_top = vec_top = _NO_SLOTS
        if slots.size:
            parts.append((view, slots, kw, vec, kw_top, vec_top, mask, signals))
    if not parts:
        return [], 0

    kw_all = np.concatenate([p[2] for p in parts])
    vec_all = np.concatenate([p[3] for p in parts])
    fuse = _fusion(strategy, settings, kw_all, vec_all, text, keyword_coverage(parts, text, stats))
    if fuse is None:  # rrf: ranks only exist for candidates
        kr = np.concatenate([_ranks(p[4], p[1]) for p in parts])
        vr = np.concatenate([_ranks(p[5], p[1]) for p in parts])
        relevance = rrf_fusion(kr, vr, settings.rrf_k)
    else:
        relevance = fuse(kw_all, vec_all)
    if restrict is None:
        keep = relevant_mask(kw_all, vec_all, settings.min_cosine, settings.min_cosine_ratio) & (relevance > 0)
        if settings.contiguity_weight > 0:
            relevance = _with_contiguity(parts, relevance, fuse, settings.contiguity_weight)
    else:  # graph: reachability through the query's entities is the relevance evidence
        keep = np.ones(relevance.size, dtype=bool)

    # Composite score of every relevant candidate, vectorised per scope; then flat arrays over
    # all scopes (one entry per kept candidate, in scope then slot order).
    cols: list[tuple[np.ndarray, ...]] = []
    offset = 0
    how_to = asks_how_to(text)
    for pi, (view, slots, kw, vec, *_rest) in enumerate(parts):
        n = slots.size
        sel = np.flatnonzero(keep[offset : offset + n])
        rel = relevance[offset : offset + n][sel]
        offset += n
        if sel.size == 0:
            continue
        slots = slots[sel]
        half, last, access, importance = view.index.decay_inputs(slots)
        recency = np.ones(sel.size) if view.frozen else decay_factors(half, now - last, access)
        procedure = view.index.cols.type_code[slots] == TYPE_CODE["procedural"] if how_to else 0.0
        final = final_score(rel, importance, recency, view.weight, procedure)
        consolidated = view.index.cols.status_code[slots] == STATUS_CODE["consolidated"]
        final = np.where(consolidated, final * CONSOLIDATED_RANK_FACTOR, final)
        cols.append((np.full(sel.size, pi), slots, rel, final, kw[sel], np.nan_to_num(vec[sel])))
    if not cols:
        return [], 0
    flat = _Flat(*(np.concatenate(c) for c in zip(*cols, strict=False)))
    matched = int(flat.final.size)

    # Hit objects (and the dedup / supersedes passes) only for the best candidates, plus what can
    # change their fate: copies of the same memory in other scopes and their superseders. The
    # result is the one all candidates would give (checked below; otherwise all are processed),
    # except that `also_in` from near-duplicates only looks among those candidates.
    budget = HIT_BUDGET_PER_RESULT * limit + HIT_BUDGET_EXTRA
    if matched <= budget:
        return _finish(views, parts, flat, None, settings, limit), matched
    order = np.argsort(-flat.final, kind="stable")
    threshold = float(flat.final[order[budget]])  # best score left out
    chosen = _with_related(views, parts, flat, order[:budget])
    hits = _finish(views, parts, flat, chosen, settings, limit)
    if len(hits) == limit and hits[-1].score > threshold:
        return hits, matched
    return _finish(views, parts, flat, None, settings, limit), matched


def shared_stats(views: Sequence[ScopeView], text: str) -> SharedStats | None:
    """BM25 statistics summed over the recall's scopes (None for a single scope, which keeps its
    own): every scope's keyword scores are then on one scale (see SharedStats)."""
    if len(views) < 2:
        return None
    terms = tokenize(text)
    return SharedStats.of([v.index.bm25 for v in views], terms) if terms else None


def query_idf_mass(bm25: BM25Index, terms: Sequence[str]) -> float:
    """Sum of the IDF (BM25's own formula and statistics) of the distinct query terms in one
    scope's index; a term no memory holds counts with document frequency 0. About the BM25
    score of a memory of average length holding every query term once."""
    n = bm25.doc_count
    if n <= 0:
        return 0.0
    return sum(math.log(1.0 + (n - df + 0.5) / (df + 0.5)) for df in map(bm25.doc_freq, terms))


def keyword_coverage(parts, text: str, stats: SharedStats | None = None) -> float | None:
    """How much of the query its best keyword match covers: the best candidate's BM25 over the
    IDF mass of the query, the highest over the scopes (None without query terms or documents).
    With shared statistics every scope is measured on their scale, else each on its own."""
    terms = list(dict.fromkeys(tokenize(text)))
    if not terms:
        return None
    best: float | None = None
    shared = sum(stats.idf(t) for t in terms) if stats is not None else None
    for view, _slots, kw, *_rest in parts:
        mass = query_idf_mass(view.index.bm25, terms) if shared is None else shared
        if mass > 0 and kw.size:
            best = max(best or 0.0, float(np.max(kw)) / mass)
    return best


def _fusion(
    strategy: str,
    settings: RetrievalSettings,
    kw_all: np.ndarray,
    vec_all: np.ndarray,
    text: str,
    coverage: float | None = None,
):
    """fn(bm25, cosine) -> relevance, normalised by this recall's candidates (None for RRF).

    The same scale serves the candidates and their session neighbours, so a neighbour's
    relevance means what a candidate's does. The BM25 weight follows the keyword `coverage`
    (scoring.coverage_keyword_weight) and the query's share of codes.
    """
    kw_top = float(np.max(kw_all)) if kw_all.size else 0.0
    cos = np.nan_to_num(vec_all, nan=-1.0)
    cos_top = float(cos.max()) if cos.size else 0.0
    weight = {"keyword": 1.0, "vector": 0.0}.get(
        strategy, adaptive_keyword_weight(settings.keyword_weight, text, coverage)
    )
    if strategy not in ("keyword", "vector") and settings.fusion == "rrf":
        return None
    floor = min(COSINE_FLOOR, settings.min_cosine)
    cos_top = max(cos_top, floor + 1e-6)

    def fuse(kw: np.ndarray, vec: np.ndarray) -> np.ndarray:
        return score_fusion(kw, vec, weight, floor, keyword_top=kw_top, cosine_top=cos_top)

    return fuse


def _with_contiguity(parts, relevance: np.ndarray, fuse, weight: float) -> np.ndarray:
    """Add, for each lag L = 1..CONTIGUITY_LAGS, `weight / L` x the relevance of the best
    memory L steps before or after a candidate in its session.

    Episodes recorded one after the other share their context (the contiguity effect of
    human episodic memory, which fades with the lag): the turn that answers a question often
    sits next to, or two turns from, the one that names its subject. Neighbours outside the
    candidate pool are scored on the spot, on the candidates' scale.
    """
    out = relevance.copy()
    offset = 0
    for view, slots, _kw, _vec, _kt, _vt, mask, signals in parts:
        n = slots.size
        near = view.index.neighbours(slots, mask, CONTIGUITY_LAGS)
        linked = np.unique(near[near >= 0])
        if linked.size:
            # relevance of every linked slot: from the candidates (slots are sorted), else scored now
            rel = relevance[offset : offset + n]
            at = np.minimum(np.searchsorted(slots, linked), n - 1)
            known = slots[at] == linked
            linked_rel = np.where(known, rel[at], 0.0)
            if fuse is not None and not known.all():
                linked_rel[~known] = fuse(*signals(linked[~known]))
            where = np.searchsorted(linked, np.maximum(near, 0))
            near_rel = np.where(near >= 0, linked_rel[np.minimum(where, linked.size - 1)], 0.0)
            for lag in range(CONTIGUITY_LAGS):
                out[offset : offset + n] += weight / (lag + 1) * np.maximum(near_rel[lag, 0], near_rel[lag, 1])
        offset += n
    return out


@dataclass
class _Flat:
    """Kept candidates of every scope as parallel arrays."""

    part: np.ndarray
    slot: np.ndarray
    relevance: np.ndarray
    final: np.ndarray
    keyword: np.ndarray
    vector: np.ndarray


def _with_related(views, parts, flat: _Flat, top: np.ndarray) -> np.ndarray:
    """Flat indices of `top` plus the candidates that hold the same memory id in another scope,
    and the candidates superseding them (whole chains), in flat order."""
    newer_of: dict[str, str] = {}
    for view in views:
        newer_of.update(view.index.superseded_by)
    part_ids = np.unique(flat.part).tolist()
    if len(part_ids) < 2 and not newer_of:
        return np.sort(top)
    where: dict[int, dict[int, int]] = {}  # part -> slot -> flat index
    for pi in part_ids:
        idx = np.flatnonzero(flat.part == pi)
        where[pi] = dict(zip(flat.slot[idx].tolist(), idx.tolist(), strict=False))
    indexes = [(pi, parts[pi][0].index) for pi in part_ids]
    chosen = set(top.tolist())

    def add(key: str) -> None:
        for pi, index in indexes:
            slot = index.slots.get(key)
            if slot is not None:
                i = where[pi].get(slot)
                if i is not None:
                    chosen.add(i)

    for _i, pi, slot in zip(top.tolist(), flat.part[top].tolist(), flat.slot[top].tolist(), strict=False):
        key = parts[pi][0].index.key_of(slot)
        if key is None:
            continue
        if len(part_ids) > 1:
            add(key)
        seen = {key}
        newer = newer_of.get(key)
        while newer is not None and newer not in seen:
            seen.add(newer)
            add(newer)
            newer = newer_of.get(newer)
    return np.array(sorted(chosen), dtype=np.int64)


def _finish(views, parts, flat: _Flat, chosen: np.ndarray | None, settings: RetrievalSettings, limit: int) -> list[Hit]:
    """Hits for the chosen flat indices (None: all), in flat order; then dedup by id, the
    supersedes rule, sorting and dedup by similarity."""
    if chosen is None:
        chosen = np.arange(flat.final.size)
    hits: list[Hit] = []
    for pi, s, r, f, k, v in zip(
        flat.part[chosen].tolist(),
        flat.slot[chosen].tolist(),
        flat.relevance[chosen].tolist(),
        flat.final[chosen].tolist(),
        flat.keyword[chosen].tolist(),
        flat.vector[chosen].tolist(),
        strict=False,
    ):
        view = parts[pi][0]
        key = view.index.slots.key_at(s)
        if key is not None:
            hits.append(Hit(view.scope, key, s, r, f, k, v))
    hits = _dedup_by_id(hits)
    _apply_supersedes(hits, views)
    hits.sort(key=lambda h: h.score, reverse=True)
    hits = _dedup_by_similarity(hits, views, settings.cross_scope_dedup_similarity, limit)
    return hits[:limit]


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
    """Drop a hit from another scope whose vector is >= threshold similar to a kept one (the
    first such kept hit records the scope in `also_in`); at most `2 * limit + 10` are kept.

    Vectors are gathered once per scope; each hit then costs one small matrix-vector product
    against the hits before it (single-threaded BLAS: a Gram matrix here would be a sgemm that
    OpenBLAS splits over both cores, milliseconds of hand-off on a busy machine).
    """
    cap = limit * 2 + 10
    scopes = [h.scope for h in hits]
    if len(set(scopes)) < 2:  # only cross-scope copies are dropped
        return hits[:cap]
    index_of = {v.scope: v.index for v in views}
    n = len(hits)
    m = min(n, 4 * cap)  # rows gathered up front; more only if the loop gets that far
    dim = next(iter(index_of.values())).dim

    def gather(lo: int, hi: int) -> np.ndarray:
        part = np.zeros((hi - lo, dim), dtype=np.float32)
        for scope in set(scopes[lo:hi]):
            pos = [i for i in range(lo, hi) if scopes[i] == scope]
            part[[i - lo for i in pos]] = index_of[scope].vectors.rows([hits[i].slot for i in pos])
        return part

    mat = gather(0, m)
    scope_id = np.array([hash(s) for s in scopes])
    kept: list[Hit] = []
    kept_idx: list[int] = []
    is_kept = np.zeros(n, dtype=bool)
    for i, h in enumerate(hits):
        if i >= m:
            m2 = min(n, 2 * m)
            mat = np.vstack([mat, gather(m, m2)])
            m = m2
        if i and np.any(is_kept[:i] & (scope_id[:i] != scope_id[i])):
            sims = mat[:i] @ mat[i]
            close = np.flatnonzero((sims >= threshold) & is_kept[:i] & (scope_id[:i] != scope_id[i]))
            if close.size:
                first = kept[kept_idx.index(int(close[0]))]
                first.also_in = sorted(set(first.also_in + [h.scope]))
                continue
        kept.append(h)
        kept_idx.append(i)
        is_kept[i] = True
        if len(kept) >= cap:
            break
    return kept
