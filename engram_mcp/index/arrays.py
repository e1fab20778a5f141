"""Array helpers shared by the slot allocator, the vector index and the BM25 index.

Mask convention (all searches): ``mask[i]`` says whether slot ``i`` may be returned. A mask may be
shorter or longer than the index: slots at or beyond ``len(mask)`` are excluded, extra entries are
ignored. So ``SlotAllocator.live_mask`` (or any combination of it) can be passed as is.
"""

from __future__ import annotations

from typing import overload

import numpy as np

EMPTY_SLOTS = np.zeros(0, dtype=np.int64)
EMPTY_SCORES = np.zeros(0, dtype=np.float32)


def grown_capacity(current: int, needed: int) -> int:
    """Doubling growth so n appends cost O(n) copies in total."""
    capacity = max(current, 1)
    while capacity < needed:
        capacity *= 2
    return capacity


@overload
def mask_prefix(mask: np.ndarray, length: int) -> np.ndarray: ...
@overload
def mask_prefix(mask: None, length: int) -> None: ...
def mask_prefix(mask: np.ndarray | None, length: int) -> np.ndarray | None:
    """The mask resized to ``length`` (missing entries False), or None for no mask."""
    if mask is None:
        return None
    m = np.asarray(mask, dtype=bool)
    if m.ndim != 1:
        raise ValueError("mask must be one-dimensional")
    if len(m) >= length:
        return m[:length]
    padded = np.zeros(length, dtype=bool)
    padded[: len(m)] = m
    return padded


#: From this many entries on, `top_k` first cuts the array at a threshold read off a strided
#: sample of one entry in SAMPLE_STRIDE (`_sampled_cut`): a partition of the whole array costs
#: ~0.6 ms at 100k entries, the sample's partition and one comparison pass ~0.1 ms
#: (bench/micro_search_index.py).
SAMPLED_CUT_MIN_ENTRIES = 16_384
SAMPLE_STRIDE = 16
#: Sample ranks taken beyond k / SAMPLE_STRIDE: about this many times SAMPLE_STRIDE entries more
#: than k pass the cut of an array in no particular order.
SAMPLE_SPARE_RANKS = 8
#: How much deeper into the sample the second cut goes when the first keeps fewer than k: scores
#: in clusters (near-copies of a memory score alike) pass or fail a cut a cluster at a time.
SAMPLE_DEEPER_FACTOR = 4


def _sampled_cut(scores: np.ndarray, k: int) -> np.ndarray | None:
    """The indices of the entries at or above a threshold read off a strided sample, when at
    least k and at most half of them pass; else None. The top k lies among them: the k-th
    largest score is at or above the threshold whenever k entries are. A cut that keeps fewer
    than k is retried once, deeper in the sample (one partition of the sample finds both)."""
    sample = scores[::SAMPLE_STRIDE]
    first = -(-k // SAMPLE_STRIDE) + SAMPLE_SPARE_RANKS
    ranks = [r for r in (first, SAMPLE_DEEPER_FACTOR * first) if r <= len(sample)]
    if not ranks:
        return None
    ordered = np.partition(sample, [len(sample) - r for r in ranks])
    for rank in ranks:
        passed = np.flatnonzero(scores >= ordered[len(sample) - rank])
        if len(passed) > len(scores) // 2:
            return None
        if len(passed) >= k:
            return passed
    return None


def top_k(
    scores: np.ndarray,
    k: int,
    slots: np.ndarray | None = None,
    positive_only: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` entries of ``scores``, best first, as (slots int64, scores float32).

    ``slots[i]`` names entry i (identity when None, i.e. ``scores`` is dense by slot). With
    ``positive_only`` entries scoring <= 0 are never returned. Ties are broken by lower slot, so
    results are deterministic: argpartition alone picks arbitrarily among entries tied at the k-th
    score (common in BM25, where equal tf and length give equal scores), which would make a
    bulk-built and an incrementally built index disagree. Everything stays O(n).
    """
    n = len(scores)
    if k <= 0 or n == 0:
        return EMPTY_SLOTS, EMPTY_SCORES
    if positive_only:
        # Select among the positive entries alone, named through `slots`. A BM25 score array is
        # mostly zeros, and numpy's introselect degrades on a mass of equal values below the k-th:
        # measured at 100k entries with 97% zeros, 15 ms for the whole array against 0.1 ms here.
        keep = np.flatnonzero(scores > 0)
        return top_k(scores[keep], k, slots=keep if slots is None else slots[keep])
    if n >= SAMPLED_CUT_MIN_ENTRIES:
        passed = _sampled_cut(scores, k)
        if passed is not None:
            return top_k(scores[passed], k, slots=passed if slots is None else slots[passed])
    if k >= n:
        pick = np.arange(n)
    else:
        kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)
        need = k - len(above)  # >= 1, since fewer than k entries exceed the k-th largest
        if need < len(tied):
            tied_slots = tied if slots is None else slots[tied]
            tied = tied[np.argpartition(tied_slots, need - 1)[:need]]
        pick = np.concatenate([above, tied])
    pick_slots = pick if slots is None else slots[pick]
    pick_scores = scores[pick]
    order = np.lexsort((pick_slots, -pick_scores))
    return (
        pick_slots[order].astype(np.int64, copy=False),
        pick_scores[order].astype(np.float32, copy=False),
    )
