"""In-memory derived retrieval indexes: tokenizer, slot allocator, exact vector index, incremental BM25.

Why this exists: SurrealDB is the system of record, but its own search indexes are far too slow and
too large here (environment.md, "Cost of the engine's own search indexes": a common BM25 word takes
~100-400 ms at 10k rows, HNSW grows by ~1.9 MB per insert, building either over 100k rows does not
finish). So retrieval runs on indexes held in process memory, rebuilt from the DB at open
(`set_many`) and updated incrementally on every write (`set` / `clear`).

Everything here is keyed by dense integer *slots*, not memory ids. The caller maps ids to slots with
`SlotAllocator` and filters with boolean masks indexed by slot, so filters (project, scope, kind,
live) apply *before* top-k and a filtered query never loses results to an unfiltered cut-off.

Mask convention (all searches): ``mask[i]`` says whether slot ``i`` may be returned. A mask may be
shorter or longer than the index: slots at or beyond ``len(mask)`` are excluded, extra entries are
ignored. So ``SlotAllocator.live_mask`` (or any combination of it) can be passed as is.

Thread-safety: none. Writes must be serialised by the caller (the engine has a single writer), and
a search must not run concurrently with a write on the same index.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import overload

import numpy as np
import Stemmer

__all__ = [
    "ENGLISH_STOP_WORDS",
    "BM25Index",
    "SlotAllocator",
    "VectorIndex",
    "tokenize",
]

# --------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------

# Close to NLTK's English list (which bm25s-style baselines in retrieval-calibration.md use), plus
# the fragments left by splitting contractions on the apostrophe ("don't" -> "don", "t").
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against ain all am an and any are aren arent as at
    be because been before being below between both but by
    can cannot could couldn couldnt d did didn didnt do does doesn doesnt doing don dont down during
    each few for from further
    had hadn hadnt has hasn hasnt have haven havent having he her here hers herself him himself his how
    i if in into is isn isnt it its itself
    just ll m ma me mightn more most mustn my myself
    needn no nor not now o of off on once only or other our ours ourselves out over own
    re s same shan she should shouldn so some such
    t than that thats the their theirs them themselves then there these they this those through to too
    under until up ve very
    was wasn we were weren what when where which while who whom why will with won wouldn wouldnt
    y you your yours yourself yourselves
    """.split()
)

_WORD_RE = re.compile(r"\w+")  # str patterns are Unicode-aware: letters and digits of any script
_STEMMER = Stemmer.Stemmer("english")
_TOKEN_CACHE_MAX_ENTRIES = 200_000  # raw token -> terms; ~30 MB when full, then cleared wholesale
_token_cache: dict[str, tuple[str, ...]] = {}


def tokenize(text: str) -> list[str]:
    """Split text into BM25 terms: lowercase, stop words dropped, Snowball-stemmed.

    Identifiers are indexed both whole and by part ("getUserName" -> get, user, name, getusername;
    "user_name" -> user, name, username) so a memory about `parseConfigFile` is found by
    "parse config" and by the identifier itself. Underscores are dropped from the whole form so the
    snake_case and camelCase spellings of one name meet.

    Speed: terms are cached per raw token (the same words recur), so a 20-word sentence takes a few
    microseconds once its words have been seen.
    """
    out: list[str] = []
    cache = _token_cache
    for raw in _WORD_RE.findall(text):
        terms = cache.get(raw)
        if terms is None:
            terms = _terms_of_token(raw)
            if len(cache) >= _TOKEN_CACHE_MAX_ENTRIES:
                cache.clear()
            cache[raw] = terms
        out.extend(terms)
    return out


def _terms_of_token(raw: str) -> tuple[str, ...]:
    """Terms produced by one `\\w+` token (uncached path)."""
    low = raw.lower()
    if "_" not in raw and (raw == low or raw[1:] == low[1:]):  # plain or Capitalised word
        return () if low in ENGLISH_STOP_WORDS else (_STEMMER.stemWord(low),)
    parts = [p.lower() for p in _identifier_parts(raw)]
    words = [p for p in parts if p not in ENGLISH_STOP_WORDS]
    whole = low.replace("_", "")
    if whole and len(parts) > 1:
        words.append(whole)
    elif whole and not words and whole not in ENGLISH_STOP_WORDS:
        words.append(whole)
    return tuple(dict.fromkeys(_STEMMER.stemWords(words)))


def _identifier_parts(raw: str) -> list[str]:
    """Parts of a snake_case / camelCase / PascalCase / HTTPServer-style identifier."""
    parts: list[str] = []
    for chunk in raw.split("_"):
        if chunk:
            parts.extend(_camel_parts(chunk))
    return parts


def _camel_parts(chunk: str) -> list[str]:
    """Split on lower->Upper, digit->Upper and ACRONYMWord boundaries (any script with case)."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(chunk)):
        prev, cur = chunk[i - 1], chunk[i]
        if not cur.isupper():
            continue
        after_lower = prev.islower() or prev.isdigit()
        acronym_end = prev.isupper() and i + 1 < len(chunk) and chunk[i + 1].islower()
        if after_lower or acronym_end:
            parts.append(chunk[start:i])
            start = i
    parts.append(chunk[start:])
    return parts


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------

_EMPTY_SLOTS = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES = np.zeros(0, dtype=np.float32)
_EMPTY_POSTING_SLOTS = np.zeros(0, dtype=np.int32)
_EMPTY_POSTING_TFS = np.zeros(0, dtype=np.float32)
_NORM_TOLERANCE = 1e-3  # |norm - 1| above this: the vector is re-normalised defensively


_NUMKONG: list = []  # [module or None], filled on first use


def _numkong():
    """NumKong's SIMD kernels, imported on first use (~0.1 s, only stores past the int8
    threshold pay it); None if the package is missing, so the numpy path takes over."""
    if not _NUMKONG:
        try:
            import numkong

            _NUMKONG.append(numkong)
        except ImportError:
            _NUMKONG.append(None)
    return _NUMKONG[0]


#: From this many blocks on, a full scan is shared with a helper thread (`_for_each_block`).
SHARED_SCAN_MIN_BLOCKS = 16
_SCAN_HELPER: list = []  # [ThreadPoolExecutor], created on first use


def _for_each_block(scan: Callable[[int], None], n_blocks: int) -> None:
    """Call ``scan(b)`` for b in range(n_blocks), sharing the blocks with a helper thread.

    Both threads take the next block from one counter, so the work splits by itself: with the
    other core idle a 100k int8 scan takes ~2.6 ms instead of ~4.9, and when the helper gets no
    core this thread simply does every block (it then waits at most for the helper's block in
    flight). The kernels (BLAS, NumKong) release the GIL.
    """
    if n_blocks < SHARED_SCAN_MIN_BLOCKS:
        for block in range(n_blocks):
            scan(block)
        return
    if not _SCAN_HELPER:
        _SCAN_HELPER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-scan"))
    counter = itertools.count()

    def run() -> None:
        while (block := next(counter)) < n_blocks:  # next() on a count is atomic under the GIL
            scan(block)

    helper = _SCAN_HELPER[0].submit(run)
    run()
    helper.result()


def _grown_capacity(current: int, needed: int) -> int:
    """Doubling growth so n appends cost O(n) copies in total."""
    capacity = max(current, 1)
    while capacity < needed:
        capacity *= 2
    return capacity


@overload
def _mask_prefix(mask: np.ndarray, length: int) -> np.ndarray: ...
@overload
def _mask_prefix(mask: None, length: int) -> None: ...
def _mask_prefix(mask: np.ndarray | None, length: int) -> np.ndarray | None:
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


def _top_k(
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
        return _EMPTY_SLOTS, _EMPTY_SCORES
    if k >= n:
        pick = np.flatnonzero(scores > 0) if positive_only else np.arange(n)
    else:
        kth = np.partition(scores, n - k)[n - k]  # the k-th largest score
        if positive_only and kth <= 0:
            pick = np.flatnonzero(scores > 0)  # fewer than k positive entries
        else:
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


# --------------------------------------------------------------------------------------------
# Slots
# --------------------------------------------------------------------------------------------


class SlotAllocator:
    """Maps string keys (memory ids) to dense integer slots shared by all indexes.

    Released slots are tombstoned, never reused, until `compact()`: reusing a slot straight away
    would let a stale mask or an in-flight result point at a different memory.
    """

    def __init__(self, initial_capacity: int = 1024) -> None:
        self._slots: dict[str, int] = {}
        self._keys: list[str | None] = []
        self._live = np.zeros(max(initial_capacity, 1), dtype=bool)

    def slot_for(self, key: str) -> int:
        """The key's slot, allocating the next free one for a new key."""
        slot = self._slots.get(key)
        if slot is not None:
            return slot
        slot = len(self._keys)
        if slot >= len(self._live):
            self._grow(slot + 1)
        self._keys.append(key)
        self._slots[key] = slot
        self._live[slot] = True
        return slot

    def slots_for(self, keys: Iterable[str]) -> np.ndarray:
        """Slots for many keys (bulk load); allocates as needed."""
        return np.fromiter((self.slot_for(k) for k in keys), dtype=np.int64)

    def get(self, key: str) -> int | None:
        return self._slots.get(key)

    def keys(self) -> Iterable[str]:
        """The keys that hold a slot (a live view: do not write while iterating)."""
        return self._slots.keys()

    def key_at(self, slot: int) -> str | None:
        if 0 <= slot < len(self._keys):
            return self._keys[slot]
        return None

    def release(self, key: str) -> int | None:
        """Tombstone the key's slot; returns the slot (so the caller can clear its indexes)."""
        slot = self._slots.pop(key, None)
        if slot is not None:
            self._keys[slot] = None
            self._live[slot] = False
        return slot

    def compact(self) -> np.ndarray:
        """Renumber live keys densely, in slot order; returns ``old_slots`` (new slot i held
        ``old_slots[i]``). Pass it to every index's ``renumber`` before using new slots."""
        old_slots = np.flatnonzero(self._live[: len(self._keys)]).astype(np.int64)
        keys = [self._keys[s] for s in old_slots.tolist()]
        self._keys = list(keys)
        self._slots = {k: i for i, k in enumerate(keys) if k is not None}
        self._live = np.zeros(max(len(self._live), 1), dtype=bool)
        self._live[: len(keys)] = True
        return old_slots

    @property
    def live_mask(self) -> np.ndarray:
        """Read-only view, one bool per slot ever allocated (length == ``size``). Being a view,
        it follows later releases; copy it to keep a snapshot."""
        view = self._live[: len(self._keys)]
        view.flags.writeable = False
        return view

    @property
    def size(self) -> int:
        """Slots allocated so far, tombstones included."""
        return len(self._keys)

    @property
    def live_count(self) -> int:
        return len(self._slots)

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, key: object) -> bool:
        return key in self._slots

    def _grow(self, needed: int) -> None:
        live = np.zeros(_grown_capacity(len(self._live), needed), dtype=bool)
        live[: len(self._live)] = self._live
        self._live = live


# --------------------------------------------------------------------------------------------
# Vectors
# --------------------------------------------------------------------------------------------


class VectorIndex:
    """Exact cosine search over L2-normalised float32 rows, one row per slot.

    Exact rather than ANN: recall is perfect, masks cost nothing extra, updates are O(dim).
    A full float32 scan of 100k x 384 (154 MB) takes 12-18 ms single-threaded, so above
    QUANTIZED_SCAN_MIN_ROWS the scan reads an int8 copy of the rows instead (38 MB, one scale
    per row) and re-scores its best candidates from the float32 rows: the top k is the exact top
    k unless int8 rounding (|error| < 0.005 in cosine) swaps a row across the re-scored margin,
    and every returned score is exact (bench/micro_search_index.py measures both).

    Rows live in fixed-size blocks (1024 rows at 384 dims, 1.5 MB) rather than one matrix:
    growing never copies what is stored (a doubling copy of a 100k x 384 matrix takes ~40-80 ms,
    which would blow the 20 ms store budget on the unlucky write), memory overhead is at most one
    block, and the scan already works block by block (see BLOCK_ELEMENTS_MAX).
    """

    # Below this fraction of rows selected by the mask, gathering the selected rows beats scoring
    # all rows (a gather touches each row about twice, the full product once).
    GATHER_FRACTION_MAX = 0.3
    # Matrix-vector products are done in blocks of at most this many float32 elements. OpenBLAS
    # (NumPy's BLAS here) runs sgemv multi-threaded above ~460k elements, and on this 2-core
    # machine with any other load its thread hand-off costs 4-8 ms per call (measured: 10k x 384
    # took 8.0 ms multi-threaded vs 0.8 ms in single-threaded blocks while another process used
    # both cores). Blocks keep every call single-threaded, predictable, and cache-sized.
    BLOCK_ELEMENTS_MAX = 393_216  # 1024 rows x 384 dims
    # From this many rows on, full scans read the int8 copy (class docstring). Below it the
    # float32 scan is fast enough (~2 ms at 10k) and exact without a re-scoring pass.
    QUANTIZED_SCAN_MIN_ROWS = 32_768
    # Candidates of the int8 pass re-scored exactly: k plus this margin (at least 2k).
    RESCORE_MARGIN = 64
    # Up to this many rows, a gather fetches row by row instead of block by block (`_rows`).
    ROW_BY_ROW_MAX = 1024

    def __init__(self, dim: int, initial_capacity: int = 1024) -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = dim
        self._block_rows = max(1, self.BLOCK_ELEMENTS_MAX // dim)
        self._blocks: list[np.ndarray] = []
        # int8 copy of every block (row * 127 / max|row|, rounded) and the per-row factor back
        self._qblocks: list[np.ndarray] = []
        self._qscale = np.zeros(max(initial_capacity, 1), dtype=np.float32)
        self._scratch: np.ndarray | None = None  # one float32 block, reused by the int8 scan
        self._has = np.zeros(max(initial_capacity, 1), dtype=bool)
        self._end = 0  # 1 + highest slot ever set: rows beyond it are never scored
        self._count = 0

    # ---- writes ----

    def set(self, slot: int, vec: np.ndarray) -> None:
        """Store the slot's vector (normalised defensively if the caller did not)."""
        if slot < 0:
            raise ValueError("slot must be non-negative")
        row = self._normalised(np.asarray(vec, dtype=np.float32).reshape(-1))
        self._ensure_capacity(slot + 1)
        block, offset = divmod(slot, self._block_rows)
        self._blocks[block][offset] = row
        self._quantize(block, np.array([offset]), row[None, :], np.array([slot]))
        if not self._has[slot]:
            self._has[slot] = True
            self._count += 1
        self._end = max(self._end, slot + 1)

    def set_many(self, slots: Sequence[int] | np.ndarray, matrix: np.ndarray) -> None:
        """Bulk load (startup rebuild): one vectorised normalise, one scatter per block.
        Equivalent to calling `set` in order (a later duplicate slot wins)."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        mat = np.asarray(matrix, dtype=np.float32)
        if mat.ndim != 2 or mat.shape != (len(slot_arr), self.dim):
            raise ValueError(f"matrix must have shape ({len(slot_arr)}, {self.dim})")
        if len(slot_arr) == 0:
            return
        if slot_arr.min() < 0:
            raise ValueError("slots must be non-negative")
        norms = np.linalg.norm(mat, axis=1)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise ValueError("vectors must be finite and non-zero")
        if np.any(np.abs(norms - 1.0) > _NORM_TOLERANCE):
            mat = mat / norms[:, None]
        uniq, last_rev = np.unique(slot_arr[::-1], return_index=True)  # sorted, last wins
        rows = len(slot_arr) - 1 - last_rev
        self._ensure_capacity(int(uniq[-1]) + 1)
        for block, seg in self._by_block(uniq):
            offsets = uniq[seg] - block * self._block_rows
            self._blocks[block][offsets] = mat[rows[seg]]
            self._quantize(block, offsets, mat[rows[seg]], uniq[seg])
        self._count += int(np.count_nonzero(~self._has[uniq]))
        self._has[uniq] = True
        self._end = max(self._end, int(uniq[-1]) + 1)

    def clear(self, slot: int) -> None:
        """Forget the slot's vector (memory deleted, or its embedding is pending)."""
        if 0 <= slot < self._end and self._has[slot]:
            block, offset = divmod(slot, self._block_rows)
            self._blocks[block][offset] = 0.0
            self._qblocks[block][offset] = 0
            self._qscale[slot] = 0.0
            self._has[slot] = False
            self._count -= 1

    def renumber(self, old_slots: np.ndarray) -> None:
        """Apply `SlotAllocator.compact()`: new slot i takes old slot ``old_slots[i]``'s vector."""
        old = np.asarray(old_slots, dtype=np.int64).reshape(-1)
        keep = np.zeros(len(old), dtype=bool)
        inside = (old >= 0) & (old < self._end)
        keep[inside] = self._has[old[inside]]
        new_slots = np.flatnonzero(keep)
        matrix = self._rows(old[new_slots])
        self._blocks, self._has = [], np.zeros(max(len(old), 1), dtype=bool)
        self._qblocks, self._qscale = [], np.zeros(max(len(old), 1), dtype=np.float32)
        self._end = self._count = 0
        if len(new_slots):
            self.set_many(new_slots, matrix)

    # ---- reads ----

    def has(self, slot: int) -> bool:
        return 0 <= slot < self._end and bool(self._has[slot])

    def get(self, slot: int) -> np.ndarray | None:
        """A copy of the stored (normalised) vector."""
        if not self.has(slot):
            return None
        block, offset = divmod(slot, self._block_rows)
        return self._blocks[block][offset].copy()

    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k by cosine over slots that have a vector and pass the mask.

        Returns (slots int64, scores float32), best first; fewer than k when fewer qualify.
        """
        slots, scores, _ = self.search_scored(query, k, mask)
        return slots, scores

    def search_scored(
        self, query: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """`search`, plus the cosine of every row [0, end) when the search scanned them all (else
        None): pass it to `similarities(..., scanned=)` so candidates found elsewhere (BM25) get
        their cosine by lookup instead of a second gather. Rows without a vector hold junk there;
        `similarities` turns them into NaN."""
        q = self._normalised(np.asarray(query, dtype=np.float32).reshape(-1))
        end = self._end
        if k <= 0 or end == 0 or self._count == 0:
            return _EMPTY_SLOTS, _EMPTY_SCORES, None
        valid = self._has[:end]
        m = _mask_prefix(mask, end)
        if m is not None:
            valid = valid & m
        selected = int(np.count_nonzero(valid)) if m is not None else self._count
        if selected == 0:
            return _EMPTY_SLOTS, _EMPTY_SCORES, None
        k = min(k, selected)
        if selected < end * self.GATHER_FRACTION_MAX:
            cand = np.flatnonzero(valid)
            top_slots, top_scores = _top_k(self._dot_rows(q, cand), k, slots=cand)
            return top_slots, top_scores, None
        quantized = end >= self.QUANTIZED_SCAN_MIN_ROWS
        scanned = self._qdot_prefix(q, end) if quantized else self._dot_prefix(q, end)
        if selected < end:
            scores = np.where(valid, scanned, np.float32(-np.inf))
        else:
            scores = scanned
        if not quantized:
            top_slots, top_scores = _top_k(scores, k)
            return top_slots, top_scores, scanned
        cand, _ = _top_k(scores, min(selected, max(2 * k, k + self.RESCORE_MARGIN)))
        top_slots, top_scores = _top_k(self._dot_rows(q, cand), k, slots=cand)
        return top_slots, top_scores, None  # approximate scores must not be looked up as cosines

    def similarities(
        self, query: np.ndarray, slots: Sequence[int] | np.ndarray, scanned: np.ndarray | None = None
    ) -> np.ndarray:
        """Cosine of the query with each given slot; NaN where the slot has no vector.

        ``scanned``: the third value of `search_scored` for the same query (a lookup, no products)."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        out = np.full(len(slot_arr), np.nan, dtype=np.float32)
        inside = (slot_arr >= 0) & (slot_arr < self._end)
        present = np.zeros(len(slot_arr), dtype=bool)
        present[inside] = self._has[slot_arr[inside]]
        if present.any():
            if scanned is not None and len(scanned) >= self._end:
                out[present] = scanned[slot_arr[present]]
            else:
                q = self._normalised(np.asarray(query, dtype=np.float32).reshape(-1))
                out[present] = self._dot_rows(q, slot_arr[present])
        return out

    def rows(self, slots: Sequence[int] | np.ndarray) -> np.ndarray:
        """The (normalised) vectors of the given slots as one (n, dim) float32 matrix; a zero row
        where a slot has no vector (so it is similar to nothing)."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        out = np.zeros((len(slot_arr), self.dim), dtype=np.float32)
        present = (slot_arr >= 0) & (slot_arr < self._end)
        present[present] = self._has[slot_arr[present]]
        if present.any():
            out[present] = self._rows(slot_arr[present])
        return out

    def max_similarity(self, query: np.ndarray, mask: np.ndarray | None = None) -> tuple[int, float] | None:
        """The closest slot and its cosine (near-duplicate detection), or None if nothing qualifies."""
        slots, scores = self.search(query, 1, mask)
        if len(slots) == 0:
            return None
        return int(slots[0]), float(scores[0])

    @property
    def count(self) -> int:
        """Slots holding a vector."""
        return self._count

    def __len__(self) -> int:
        return self._count

    @property
    def capacity(self) -> int:
        return len(self._blocks) * self._block_rows

    @property
    def nbytes(self) -> int:
        return int(
            sum(b.nbytes for b in self._blocks)
            + sum(b.nbytes for b in self._qblocks)
            + self._has.nbytes
            + self._qscale.nbytes
        )

    # ---- internals ----

    def _normalised(self, vec: np.ndarray) -> np.ndarray:
        if vec.shape != (self.dim,):
            raise ValueError(f"vector must have {self.dim} dimensions, got {vec.shape[0]}")
        norm = float(np.linalg.norm(vec))
        if not math.isfinite(norm) or norm == 0.0:
            raise ValueError("vector must be finite and non-zero")
        if abs(norm - 1.0) > _NORM_TOLERANCE:
            return vec / np.float32(norm)
        return vec

    def _by_block(self, slots: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """(block, positions in ``slots``) groups; ``slots`` need not be sorted."""
        block_of = slots // self._block_rows
        if len(block_of) > 1 and np.any(block_of[1:] < block_of[:-1]):
            order = np.argsort(block_of, kind="stable")
        else:
            order = np.arange(len(slots))
        sorted_blocks = block_of[order]
        cuts = np.flatnonzero(sorted_blocks[1:] != sorted_blocks[:-1]) + 1
        starts = [0, *cuts.tolist()]
        return [(int(sorted_blocks[start]), seg) for start, seg in zip(starts, np.split(order, cuts), strict=False)]

    def _rows(self, slots: np.ndarray) -> np.ndarray:
        """The stored rows of the given slots, as one (n, dim) matrix.

        A few rows scattered over many blocks (re-scoring candidates, dedup) are fetched one by
        one: ~0.1 ms for 200 rows, where grouping them by block costs a numpy call per block."""
        if len(slots) <= self.ROW_BY_ROW_MAX:
            if len(slots) == 0:
                return np.empty((0, self.dim), dtype=np.float32)
            blocks, rows = self._blocks, self._block_rows
            return np.array([blocks[s // rows][s % rows] for s in slots.tolist()], dtype=np.float32)
        out = np.empty((len(slots), self.dim), dtype=np.float32)
        for block, seg in self._by_block(slots):
            out[seg] = self._blocks[block][slots[seg] - block * self._block_rows]
        return out

    def _scan_prefix(self, end: int, kernel: Callable[[int, int, int], object]) -> None:
        """``kernel(block, start, stop)`` for every block of rows [0, end), shared with the helper
        thread (`_for_each_block`)."""
        rows = self._block_rows

        def scan(block: int) -> None:
            start = block * rows
            kernel(block, start, min(start + rows, end))

        _for_each_block(scan, -(-end // rows))

    def _dot_prefix(self, q: np.ndarray, end: int) -> np.ndarray:
        """Cosine of q with rows [0, end), one single-threaded BLAS call per block."""
        out = np.empty(end, dtype=np.float32)
        blocks = self._blocks
        self._scan_prefix(end, lambda b, start, stop: np.dot(blocks[b][: stop - start], q, out=out[start:stop]))
        return out

    def _qdot_prefix(self, q: np.ndarray, end: int) -> np.ndarray:
        """Approximate cosine of q with rows [0, end) from the int8 copy, block by block.

        With NumKong (a dependency) the query is quantized too and each block is one int8 SIMD
        kernel call: 4-5 ms at 100k x 384 where the float32 BLAS scan takes 12-18 ms. Without
        it, each block is widened into one reused float32 buffer for a BLAS product (~11 ms).
        """
        rows = self._block_rows
        nk = _numkong()
        if nk is not None:
            q_peak = float(np.abs(q).max()) or 1.0
            q8 = np.rint(q * (127.0 / q_peak)).astype(np.int8)[None, :]
            out2d = np.empty((1, end), dtype=np.float32)
            qblocks = self._qblocks
            self._scan_prefix(
                end,
                lambda b, start, stop: nk.cdist(
                    q8, qblocks[b][: stop - start], metric="dot", out=out2d[:, start:stop], out_dtype="float32"
                ),
            )
            out = out2d[0]
            out *= self._qscale[:end] * np.float32(q_peak / 127.0)
            return out
        out = np.empty(end, dtype=np.float32)
        if self._scratch is None:
            self._scratch = np.empty((rows, self.dim), dtype=np.float32)
        buf = self._scratch
        for block, start in enumerate(range(0, end, rows)):
            stop = min(start + rows, end)
            np.copyto(buf[: stop - start], self._qblocks[block][: stop - start], casting="unsafe")
            np.dot(buf[: stop - start], q, out=out[start:stop])
        out *= self._qscale[:end]
        return out

    def _quantize(self, block: int, offsets: np.ndarray, rows: np.ndarray, slots: np.ndarray) -> None:
        """Write the int8 copy of `rows` (stored at `offsets` of `block`, i.e. at `slots`)."""
        peak = np.abs(rows).max(axis=1)
        peak[peak == 0] = 1.0
        self._qblocks[block][offsets] = np.rint(rows * (127.0 / peak)[:, None]).astype(np.int8)
        self._qscale[slots] = peak / 127.0

    def _dot_rows(self, q: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Cosine of q with the given rows, gathered block by block (cache-sized copies)."""
        if len(slots) <= self.ROW_BY_ROW_MAX:
            return self._rows(slots) @ q
        out = np.empty(len(slots), dtype=np.float32)
        for block, seg in self._by_block(slots):
            out[seg] = self._blocks[block][slots[seg] - block * self._block_rows] @ q
        return out

    def _ensure_capacity(self, needed: int) -> None:
        """Append zeroed blocks (never copying stored rows) and grow the cheap presence mask."""
        while len(self._blocks) * self._block_rows < needed:
            self._blocks.append(np.zeros((self._block_rows, self.dim), dtype=np.float32))
            self._qblocks.append(np.zeros((self._block_rows, self.dim), dtype=np.int8))
        if needed > len(self._has):
            capacity = _grown_capacity(len(self._has), needed)
            has = np.zeros(capacity, dtype=bool)
            has[: len(self._has)] = self._has
            self._has = has
            scale = np.zeros(capacity, dtype=np.float32)
            scale[: len(self._qscale)] = self._qscale
            self._qscale = scale


# --------------------------------------------------------------------------------------------
# BM25
# --------------------------------------------------------------------------------------------


# Memories are short (tens of words), so length says little about topicality: a weak length
# normalisation (b 0.3) and an early tf saturation (k1 0.9) measured best on coding memory and
# LoCoMo together (the usual 1.2-1.5 / 0.75 over-rewarded the shortest texts that shared a word).
BM25_K1 = 0.9
BM25_B = 0.3


class BM25Index:
    """Incremental Okapi BM25 with Lucene's idf, scored at query time from live statistics.

    Layout: per term, growable numpy arrays of posting slots (int32) and term frequencies
    (float32), appended in O(1) amortised. A posting is *dead* when its tf is 0.0: it then adds
    exactly 0 to any score, so queries need no liveness check. Clearing a slot uses the slot's own
    term list to find its postings (one vectorised scan per term of that document), decrements df
    and marks them dead; a term's postings are compacted when more than half are dead.

    Scoring: idf = log(1 + (N - df + 0.5) / (df + 0.5)) (never negative), tf part
    tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), N = live documents, df = live documents
    containing the term, dl = the document's term count after stop words.

    Repeated query terms are counted once (a query is a set of terms): "redis redis cache" scores
    like "redis cache". Short natural-language queries repeat words by accident, not for emphasis.

    A text with no terms (empty, or only stop words) is not a document: it cannot match, and it is
    not counted in N or avgdl (as Lucene counts only documents that have the field).
    """

    _MIN_POSTINGS_CAPACITY = 4
    _COMPACT_MIN_POSTINGS = 8  # don't bother compacting tiny posting lists

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B, initial_capacity: int = 1024) -> None:
        if k1 <= 0 or not 0.0 <= b <= 1.0:
            raise ValueError("need k1 > 0 and 0 <= b <= 1")
        self.k1 = float(k1)
        self.b = float(b)
        self._vocab: dict[str, int] = {}
        self._post_slots: list[np.ndarray] = []
        self._post_tfs: list[np.ndarray] = []
        self._post_len: list[int] = []
        self._post_dead: list[int] = []
        self._df: list[int] = []
        # Per slot: (2, n) int32 array [term ids; tfs], or None when the slot has no document.
        self._doc_terms: list[np.ndarray | None] = []
        # Length used for the tf normalisation; 1.0 for empty slots keeps a dead posting's
        # denominator positive even with b = 1 (its tf of 0 then still yields exactly 0).
        self._doc_len = np.ones(0, dtype=np.float32)
        self._doc_count = 0
        self._total_len = 0
        self._reset(max(initial_capacity, 1))

    def _reset(self, capacity: int) -> None:
        """Empty every document and posting but keep the vocabulary (term ids stay valid)."""
        n_terms = len(self._vocab)
        self._post_slots = [_EMPTY_POSTING_SLOTS] * n_terms
        self._post_tfs = [_EMPTY_POSTING_TFS] * n_terms
        self._post_len = [0] * n_terms
        self._post_dead = [0] * n_terms
        self._df = [0] * n_terms
        self._doc_terms = [None] * capacity
        self._doc_len = np.ones(capacity, dtype=np.float32)
        self._doc_count = 0
        self._total_len = 0

    # ---- writes ----

    def set(self, slot: int, text: str) -> None:
        """(Re)index the slot's document, replacing any previous text."""
        self.set_terms(slot, tokenize(text))

    def set_terms(self, slot: int, terms: Sequence[str]) -> None:
        """Index already-tokenized terms (lets a caller tokenize once for several uses)."""
        if slot < 0:
            raise ValueError("slot must be non-negative")
        self._ensure_capacity(slot + 1)
        counts = Counter(terms)
        ids = [self._term_id(t) for t in counts]
        doc = np.array([ids, list(counts.values())], dtype=np.int32).reshape(2, -1)
        old = self._doc_terms[slot]
        if old is not None:
            if old.shape == doc.shape and np.array_equal(old, doc):
                return  # unchanged text: nothing to do
            self._remove(slot, old)
        if len(ids) == 0:
            return
        for tid, tf in zip(ids, counts.values(), strict=False):
            self._append_posting(tid, slot, tf)
        self._add_doc(slot, doc)

    def set_many(self, slots: Sequence[int] | np.ndarray, texts: Sequence[str]) -> None:
        """Bulk (re)index: tokenize all, then build postings with one sort instead of per-token
        appends. Equivalent to calling `set` in order (a later duplicate slot wins)."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        if len(slot_arr) != len(texts):
            raise ValueError("slots and texts differ in length")
        self.set_many_terms(slot_arr, [tokenize(t) for t in texts])

    def set_many_terms(self, slots: Sequence[int] | np.ndarray, term_lists: Sequence[Sequence[str]]) -> None:
        """`set_many` for already-tokenized documents."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        if len(slot_arr) != len(term_lists):
            raise ValueError("slots and term lists differ in length")
        if len(slot_arr) == 0:
            return
        if slot_arr.min() < 0:
            raise ValueError("slots must be non-negative")
        # Last occurrence of a repeated slot wins, as with sequential set().
        _, last_rev = np.unique(slot_arr[::-1], return_index=True)
        keep = np.sort(len(slot_arr) - 1 - last_rev)
        slot_arr = slot_arr[keep]
        term_lists = [term_lists[i] for i in keep.tolist()]
        self._ensure_capacity(int(slot_arr.max()) + 1)
        for slot in slot_arr.tolist():
            if self._doc_terms[slot] is not None:
                self.clear(slot)
        lengths = np.fromiter((len(t) for t in term_lists), dtype=np.int64, count=len(term_lists))
        flat = list(chain.from_iterable(term_lists))
        for term in dict.fromkeys(flat):  # new terms get ids; C-speed dedupe of the token stream
            if term not in self._vocab:
                self._term_id(term)
        flat_ids = np.fromiter(map(self._vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        doc_of_token = np.repeat(np.arange(len(term_lists), dtype=np.int64), lengths)
        self._bulk_add(slot_arr, flat_ids, doc_of_token, None)

    def clear(self, slot: int) -> None:
        """Remove the slot's document (no-op if it has none)."""
        if 0 <= slot < len(self._doc_terms):
            old = self._doc_terms[slot]
            if old is not None:
                self._remove(slot, old)

    def compact(self) -> None:
        """Drop every dead posting now (normally done lazily per term)."""
        for tid in range(len(self._post_len)):
            if self._post_dead[tid]:
                self._compact_term(tid)

    def renumber(self, old_slots: np.ndarray) -> None:
        """Apply `SlotAllocator.compact()`: new slot i takes old slot ``old_slots[i]``'s document.
        Rebuilt from the stored per-document term counts, so nothing is re-tokenized."""
        old = np.asarray(old_slots, dtype=np.int64).reshape(-1)
        docs = [self._doc_terms[s] if 0 <= s < len(self._doc_terms) else None for s in old.tolist()]
        self._reset(capacity=max(len(old), 1))
        present = [i for i, d in enumerate(docs) if d is not None]
        if not present:
            return
        parts = [d for d in docs if d is not None]  # the documents of `present`, in order
        lengths = np.array([p.shape[1] for p in parts], dtype=np.int64)
        stacked = np.concatenate(parts, axis=1).astype(np.int64)
        doc_of = np.repeat(np.arange(len(parts), dtype=np.int64), lengths)
        self._bulk_add(np.asarray(present, dtype=np.int64), stacked[0], doc_of, stacked[1])

    # ---- reads ----

    def search(self, query: str, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k documents by BM25, best first, only scores > 0 and slots passing the mask."""
        if k <= 0:
            return _EMPTY_SLOTS, _EMPTY_SCORES
        slots, scores = self._scores(self._query_term_ids(query))
        if len(scores) == 0:
            return _EMPTY_SLOTS, _EMPTY_SCORES
        if mask is not None:
            # Zeroing (not compressing) masked entries: branch-free, and top-k skips zeros anyway.
            if slots is None:
                scores *= _mask_prefix(mask, len(scores))
            else:
                scores *= _mask_prefix(mask, len(self._doc_len))[slots]
        return _top_k(scores, k, slots=slots, positive_only=True)

    def search_scored(
        self, query: str, k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`search`, plus every document's unmasked score as a dense array indexed by slot (it may
        be shorter than the index: missing entries score 0). Pass it to `scores_for(..., dense=)`
        so fused candidates found elsewhere are looked up instead of scoring the query twice."""
        if k <= 0:
            return _EMPTY_SLOTS, _EMPTY_SCORES, _EMPTY_SCORES
        slots, scores = self._scores(self._query_term_ids(query))
        if len(scores) == 0:
            return _EMPTY_SLOTS, _EMPTY_SCORES, _EMPTY_SCORES
        if slots is None:
            dense = scores.copy()
            if mask is not None:
                scores *= _mask_prefix(mask, len(scores))
        else:
            dense = np.bincount(slots, weights=scores)
            if mask is not None:
                scores *= _mask_prefix(mask, len(self._doc_len))[slots]
        top_slots, top_scores = _top_k(scores, k, slots=slots, positive_only=True)
        return top_slots, top_scores, dense

    def scores_for(self, query: str, slots: Sequence[int] | np.ndarray, dense: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of each given slot (0 where it does not match or has no document); for
        fusing with vector candidates that BM25's own top-k did not reach."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        out = np.zeros(len(slot_arr), dtype=np.float32)
        if dense is None:
            hit_slots, scores = self._scores(self._query_term_ids(query))
            if len(scores) == 0:
                return out
            dense = scores if hit_slots is None else np.bincount(hit_slots, weights=scores)
        if len(dense) == 0 or len(slot_arr) == 0:
            return out
        inside = (slot_arr >= 0) & (slot_arr < len(dense))
        out[inside] = dense[slot_arr[inside]]
        return out

    def has(self, slot: int) -> bool:
        return 0 <= slot < len(self._doc_terms) and self._doc_terms[slot] is not None

    def doc_freq(self, term: str) -> int:
        """Live documents containing an already-tokenized term (0 if unknown)."""
        tid = self._vocab.get(term)
        return 0 if tid is None else self._df[tid]

    @property
    def doc_count(self) -> int:
        return self._doc_count

    @property
    def avg_doc_len(self) -> float:
        return self._total_len / self._doc_count if self._doc_count else 0.0

    @property
    def vocab_size(self) -> int:
        """Terms ever seen: ids are stable for the index's lifetime, so a term whose df fell to 0
        keeps its (empty) entry; a full rebuild at the next open drops it."""
        return len(self._vocab)

    @property
    def capacity(self) -> int:
        return len(self._doc_len)

    @property
    def nbytes(self) -> int:
        """Approximate memory held (numpy buffers plus Python container overhead)."""
        array_overhead = sys.getsizeof(np.zeros(0))
        posting_bytes = sum(a.nbytes for a in self._post_slots) + sum(a.nbytes for a in self._post_tfs)
        posting_bytes += 2 * array_overhead * len(self._post_slots)
        doc_bytes = sum(
            array_overhead + (d.nbytes if d.base is None else d.size * d.itemsize)
            for d in self._doc_terms
            if d is not None
        )
        vocab_bytes = sys.getsizeof(self._vocab) + sum(sys.getsizeof(t) for t in self._vocab)
        list_bytes = sum(
            sys.getsizeof(x) for x in (self._post_slots, self._post_tfs, self._post_len, self._df, self._doc_terms)
        )
        return int(posting_bytes + doc_bytes + vocab_bytes + list_bytes + self._doc_len.nbytes)

    # ---- internals: scoring ----

    def _query_term_ids(self, query: str) -> list[int]:
        """Distinct known query terms with at least one live document."""
        vocab, df = self._vocab, self._df
        ids: list[int] = []
        for term in dict.fromkeys(tokenize(query)):
            tid = vocab.get(term)
            if tid is not None and df[tid] > 0:
                ids.append(tid)
        return ids

    def _term_scores(self, tid: int, n_docs: int, avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """(slots, contributions) of one term's postings; dead postings contribute 0."""
        n = self._post_len[tid]
        slots = self._post_slots[tid][:n]
        tfs = self._post_tfs[tid][:n]
        df = self._df[tid]
        idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        k1, b = self.k1, self.b
        denom = self._doc_len[slots] * np.float32(k1 * b / avgdl)
        denom += np.float32(k1 * (1.0 - b))
        denom += tfs
        contrib = tfs * np.float32(idf * (k1 + 1.0))
        contrib /= denom
        return slots, contrib

    def _scores(self, tids: list[int]) -> tuple[np.ndarray | None, np.ndarray]:
        """Scores of every matching document, in one of two shapes (zero-score entries allowed):

        - one term: (posting slots, contributions), postings-sized, so a rare word costs almost
          nothing; a slot may repeat, but then all but one of its entries are dead (exactly 0);
        - several terms: (None, dense float64 array indexed by slot), summed by one bincount.
        """
        if not tids or self._doc_count == 0:
            return None, _EMPTY_SCORES
        n_docs, avgdl = self._doc_count, self.avg_doc_len
        if len(tids) == 1:
            return self._term_scores(tids[0], n_docs, avgdl)
        parts = [self._term_scores(tid, n_docs, avgdl) for tid in tids]
        all_slots = np.concatenate([p[0] for p in parts])
        all_contrib = np.concatenate([p[1] for p in parts])
        return None, np.bincount(all_slots, weights=all_contrib)

    # ---- internals: maintenance ----

    def _term_id(self, term: str) -> int:
        tid = self._vocab.get(term)
        if tid is None:
            tid = len(self._post_len)
            self._vocab[term] = tid
            # Shared zero-length placeholders: never written, replaced on the first append.
            self._post_slots.append(_EMPTY_POSTING_SLOTS)
            self._post_tfs.append(_EMPTY_POSTING_TFS)
            self._post_len.append(0)
            self._post_dead.append(0)
            self._df.append(0)
        return tid

    def _append_posting(self, tid: int, slot: int, tf: int) -> None:
        n = self._post_len[tid]
        slots = self._post_slots[tid]
        if n == len(slots):
            self._resize_postings(tid, max(self._MIN_POSTINGS_CAPACITY, _grown_capacity(n, n + 1)))
            slots = self._post_slots[tid]
        slots[n] = slot
        self._post_tfs[tid][n] = tf
        self._post_len[tid] = n + 1
        self._df[tid] += 1

    def _append_block(self, tid: int, slots: np.ndarray, tfs: np.ndarray) -> None:
        n = self._post_len[tid]
        end = n + len(slots)
        if n == 0:
            # A view into the bulk buffer: no per-term copy; the first later append reallocates.
            self._post_slots[tid] = slots
            self._post_tfs[tid] = tfs
        else:
            if end > len(self._post_slots[tid]):
                self._resize_postings(tid, _grown_capacity(len(self._post_slots[tid]), end))
            self._post_slots[tid][n:end] = slots
            self._post_tfs[tid][n:end] = tfs
        self._post_len[tid] = end
        self._df[tid] += len(slots)

    def _resize_postings(self, tid: int, capacity: int) -> None:
        n = self._post_len[tid]
        slots = np.zeros(capacity, dtype=np.int32)
        tfs = np.zeros(capacity, dtype=np.float32)
        slots[:n] = self._post_slots[tid][:n]
        tfs[:n] = self._post_tfs[tid][:n]
        self._post_slots[tid], self._post_tfs[tid] = slots, tfs

    def _bulk_add(
        self,
        slot_arr: np.ndarray,
        term_ids: np.ndarray,
        doc_of: np.ndarray,
        counts: np.ndarray | None,
    ) -> None:
        """Add documents given as flat (term id, document index) rows, one per token, or with a
        ``counts`` column of term frequencies; the documents' slots must currently be empty.
        One sort groups postings by term, in document order (the order sequential `set` calls
        would have produced)."""
        n_docs = len(slot_arr)
        key = term_ids * n_docs + doc_of
        if counts is None:
            uniq, tf = np.unique(key, return_counts=True)
        else:
            uniq, inverse = np.unique(key, return_inverse=True)
            tf = np.bincount(inverse, weights=counts, minlength=len(uniq))
        tf = tf.astype(np.int64)
        term_of, doc_idx = np.divmod(uniq, n_docs)
        # Postings, grouped by term (uniq is sorted by term, then document).
        bounds = np.flatnonzero(np.diff(term_of)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [len(uniq)]]).tolist()
        post_slots = slot_arr[doc_idx].astype(np.int32)
        post_tfs = tf.astype(np.float32)
        for tid, s, e in zip(term_of[starts].tolist(), starts, ends, strict=False):
            self._append_block(tid, post_slots[s:e], post_tfs[s:e])
        # Per-document term arrays, as views into one buffer (one allocation for all documents).
        order = np.argsort(doc_idx, kind="stable")
        per_doc = np.stack([term_of[order], tf[order]]).astype(np.int32)
        doc_sizes = np.bincount(doc_idx, minlength=n_docs)
        offsets = np.concatenate([[0], np.cumsum(doc_sizes)]).tolist()
        doc_lens = np.bincount(doc_idx, weights=tf, minlength=n_docs).astype(np.int64).tolist()
        for i, slot in enumerate(slot_arr.tolist()):
            if doc_sizes[i] == 0:
                continue
            self._doc_terms[slot] = per_doc[:, offsets[i] : offsets[i + 1]]
            self._doc_len[slot] = doc_lens[i]
            self._doc_count += 1
            self._total_len += doc_lens[i]

    def _add_doc(self, slot: int, doc: np.ndarray) -> None:
        length = int(doc[1].sum())
        self._doc_terms[slot] = doc
        self._doc_len[slot] = length
        self._doc_count += 1
        self._total_len += length

    def _remove(self, slot: int, doc: np.ndarray) -> None:
        """Mark the document's postings dead and take it out of df, N and the total length."""
        for tid in doc[0].tolist():
            n = self._post_len[tid]
            hits = np.flatnonzero(self._post_slots[tid][:n] == slot)
            # At most one live posting per (term, slot) and it is the latest appended one.
            self._post_tfs[tid][hits[-1]] = 0.0
            self._post_dead[tid] += 1
            self._df[tid] -= 1
            if self._post_dead[tid] * 2 > n and n >= self._COMPACT_MIN_POSTINGS:
                self._compact_term(tid)
        self._doc_count -= 1
        self._total_len -= int(doc[1].sum())
        self._doc_terms[slot] = None
        self._doc_len[slot] = 1.0

    def _compact_term(self, tid: int) -> None:
        n = self._post_len[tid]
        tfs = self._post_tfs[tid][:n]
        live = tfs > 0
        kept = int(np.count_nonzero(live))
        capacity = _grown_capacity(self._MIN_POSTINGS_CAPACITY, kept)
        slots = np.zeros(capacity, dtype=np.int32)
        new_tfs = np.zeros(capacity, dtype=np.float32)
        slots[:kept] = self._post_slots[tid][:n][live]
        new_tfs[:kept] = tfs[live]
        self._post_slots[tid], self._post_tfs[tid] = slots, new_tfs
        self._post_len[tid] = kept
        self._post_dead[tid] = 0

    def _ensure_capacity(self, needed: int) -> None:
        current = len(self._doc_len)
        if needed <= current:
            return
        capacity = _grown_capacity(current, needed)
        doc_len = np.ones(capacity, dtype=np.float32)
        doc_len[:current] = self._doc_len
        self._doc_len = doc_len
        self._doc_terms.extend([None] * (capacity - current))
