"""Decay, strength, fusion and the composite score: the numbers of DECISIONS.md.

strength = importance * exp(-ln2 * days_since_access / (half_life(type) * (1 + 0.2 * access_count)))
final    = (0.6 * relevance + 0.2 * importance + 0.2 * recency) * scope_weight

`recency` is the decay factor itself (strength / importance): how fresh the memory is
for its type, extended by every recall. Session memories do not decay during their
session. Everything here is pure and vectorised so the retrieval path stays in numpy.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np

LN2 = math.log(2.0)
SECONDS_PER_DAY = 86_400.0
HALF_LIFE_DAYS: dict[str, float] = {
    "working": 1.0 / 24.0,  # ~1 hour
    "episodic": 1.0,
    "semantic": 7.0,
    "procedural": 30.0,
}
ACCESS_HALF_LIFE_BONUS = 0.2  # each recall extends the effective half-life by 20%
RELEVANCE_WEIGHT = 0.6
IMPORTANCE_WEIGHT = 0.2
RECENCY_WEIGHT = 0.2

# Lifecycle thresholds (memory-model.md §4)
CONSOLIDATE_BELOW_STRENGTH = 0.3
CONSOLIDATE_MIN_ACCESS = 2
ARCHIVE_BELOW_STRENGTH = 0.1
FORGET_BELOW_STRENGTH = 0.01
ACTIVATE_AFTER_SECONDS = 3_600.0
REACTIVATE_AT_STRENGTH = 0.3
CONSOLIDATED_RANK_FACTOR = 0.85  # consolidated memories are queryable at lower priority


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def to_epoch(value: datetime | float | int | None) -> float:
    """Seconds since the epoch for datetimes from the engine (always tz-aware)."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def decay_factor(
    memory_type: str, seconds_since_access: float, access_count: int, *, frozen: bool = False
) -> float:
    """exp(-ln2 * days / effective_half_life); 1.0 while `frozen` (live session)."""
    if frozen:
        return 1.0
    half_life = HALF_LIFE_DAYS.get(memory_type, 3.0) * (1.0 + ACCESS_HALF_LIFE_BONUS * max(0, access_count))
    days = max(0.0, seconds_since_access) / SECONDS_PER_DAY
    return math.exp(-LN2 * days / half_life)


def strength(importance: float, memory_type: str, seconds_since_access: float, access_count: int, *, frozen: bool = False) -> float:
    return importance * decay_factor(memory_type, seconds_since_access, access_count, frozen=frozen)


def decay_factors(half_lives_days: np.ndarray, seconds_since_access: np.ndarray, access_counts: np.ndarray) -> np.ndarray:
    """Vectorised decay_factor for many memories at once."""
    effective = half_lives_days * (1.0 + ACCESS_HALF_LIFE_BONUS * np.maximum(access_counts, 0))
    days = np.maximum(seconds_since_access, 0.0) / SECONDS_PER_DAY
    return np.exp(-LN2 * days / effective)


def composite(relevance: np.ndarray, importance: np.ndarray, recency: np.ndarray, scope_weight: float | np.ndarray) -> np.ndarray:
    return (RELEVANCE_WEIGHT * relevance + IMPORTANCE_WEIGHT * importance + RECENCY_WEIGHT * recency) * scope_weight


def normalise_max(scores: np.ndarray) -> np.ndarray:
    """Scale non-negative scores into [0, 1] by their maximum (0 stays 0)."""
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


def score_fusion(keyword: np.ndarray, vector: np.ndarray, keyword_weight: float) -> np.ndarray:
    """Normalised weighted score fusion of BM25 and cosine.

    retrieval-calibration.md measured this above RRF on LoCoMo (R@5 .632 vs .583).
    BM25 is scaled by the best keyword score among the candidates (BM25 has no fixed
    scale); cosine is already on a fixed scale, so it is only clipped to [0, 1]:
    min-max over a small candidate pool would push the weakest candidate to zero
    and exaggerate tiny differences.
    """
    kw = normalise_max(np.maximum(keyword, 0.0))
    vec = np.clip(np.nan_to_num(vector, nan=0.0), 0.0, 1.0)
    return keyword_weight * kw + (1.0 - keyword_weight) * vec


def rrf_fusion(keyword_ranks: np.ndarray, vector_ranks: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal rank fusion; ranks are 1-based, 0 means 'not in that list'.

    Returned values are rescaled into [0, 1] by the best possible score so they can
    feed the composite; never threshold on them (they bunch together).
    """
    kw = np.where(keyword_ranks > 0, 1.0 / (k + keyword_ranks), 0.0)
    vec = np.where(vector_ranks > 0, 1.0 / (k + vector_ranks), 0.0)
    return (kw + vec) / (2.0 / (k + 1))
