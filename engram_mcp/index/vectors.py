"""Exact cosine search over L2-normalised rows kept as int8 with a scale per row
(`core/vector_codec.py`, the precision the store keeps them at), scanned as float32 below
32k rows and by an int8 kernel above.

Thread-safety: none. Writes must be serialised by the caller (the engine has a single writer), and
a search must not run concurrently with a write on the same index.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engram_mcp.core import vector_codec
from engram_mcp.index.arrays import EMPTY_SCORES, EMPTY_SLOTS, grown_capacity, mask_prefix, top_k

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


class VectorIndex:
    """Exact cosine search over L2-normalised rows, one row per slot.

    A row is kept as the store keeps it (issue 36): int8 components and one float32 scale
    (`vector_codec.quantize`), 388 bytes at 384 dimensions; its float32 value is
    `vector_codec.dequantize` of those, wherever it is read. Exact rather than ANN: recall is
    perfect, masks cost nothing extra, updates are O(dim). Below QUANTIZED_SCAN_MIN_ROWS a full
    scan is a float32 product over the rows widened block by block (the widened blocks are kept:
    at 10k rows 15 MB); above it, the scan runs the int8 kernel on the rows with the query
    quantized too, and re-scores its best candidates against the float32 value of their rows:
    the top k is the exact top k unless the query's rounding (|error| < 0.005 in cosine) swaps
    a row across the re-scored margin, and every returned score is exact
    (bench/micro_search_index.py measures both).

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
        # the float32 value of a block, widened when a full float32 scan first needs it
        self._blocks: list[np.ndarray | None] = []
        # every block's rows (row * 127 / max|row|, rounded) and the per-row factor back
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
        vec = np.asarray(vec, dtype=np.float32).reshape(-1)
        if vec.shape != (self.dim,):
            raise ValueError(f"vector must have {self.dim} dimensions, got {vec.shape[0]}")
        q, scale = vector_codec.quantize(vector_codec.normalised_rows(vec[None, :]))
        self._set_quantized_row(slot, q[0], scale[0])

    def set_quantized(self, slot: int, q: np.ndarray, scale: float | np.floating) -> None:
        """Store the slot's vector as the store keeps it (`vector_codec.unpack`)."""
        if slot < 0:
            raise ValueError("slot must be non-negative")
        q = np.asarray(q, dtype=np.int8).reshape(-1)
        if q.shape != (self.dim,) or not math.isfinite(float(scale)) or float(scale) <= 0 or not q.any():
            raise ValueError("not a quantized vector of this dimension")
        self._set_quantized_row(slot, q, np.float32(scale))

    def _set_quantized_row(self, slot: int, q: np.ndarray, scale: np.float32) -> None:
        self._ensure_capacity(slot + 1)
        block, offset = divmod(slot, self._block_rows)
        self._qblocks[block][offset] = q
        self._qscale[slot] = scale
        wide = self._blocks[block]
        if wide is not None:
            wide[offset] = vector_codec.dequantize(q[None, :], np.array([scale], dtype=np.float32))[0]
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
        q, scale = vector_codec.quantize(vector_codec.normalised_rows(mat))
        self._set_many_quantized(slot_arr, q, scale)

    def set_many_quantized(self, slots: Sequence[int] | np.ndarray, q: np.ndarray, scale: np.ndarray) -> None:
        """`set_quantized` of many rows at once (a rebuild reading the store's packed vectors)."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        q = np.asarray(q, dtype=np.int8)
        scale = np.asarray(scale, dtype=np.float32).reshape(-1)
        if q.shape != (len(slot_arr), self.dim) or scale.shape != (len(slot_arr),):
            raise ValueError(f"rows must have shape ({len(slot_arr)}, {self.dim})")
        if len(slot_arr) == 0:
            return
        if slot_arr.min() < 0:
            raise ValueError("slots must be non-negative")
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0) or not np.all(q.any(axis=1)):
            raise ValueError("vectors must be finite and non-zero")
        self._set_many_quantized(slot_arr, q, scale)

    def _set_many_quantized(self, slot_arr: np.ndarray, q: np.ndarray, scale: np.ndarray) -> None:
        uniq, last_rev = np.unique(slot_arr[::-1], return_index=True)  # sorted, last wins
        rows = len(slot_arr) - 1 - last_rev
        self._ensure_capacity(int(uniq[-1]) + 1)
        for block, seg in self._by_block(uniq):
            offsets = uniq[seg] - block * self._block_rows
            self._qblocks[block][offsets] = q[rows[seg]]
            self._qscale[uniq[seg]] = scale[rows[seg]]
            wide = self._blocks[block]
            if wide is not None:
                wide[offsets] = vector_codec.dequantize(q[rows[seg]], scale[rows[seg]])
        self._count += int(np.count_nonzero(~self._has[uniq]))
        self._has[uniq] = True
        self._end = max(self._end, int(uniq[-1]) + 1)

    def clear(self, slot: int) -> None:
        """Forget the slot's vector (memory deleted, or its embedding is pending)."""
        if 0 <= slot < self._end and self._has[slot]:
            block, offset = divmod(slot, self._block_rows)
            wide = self._blocks[block]
            if wide is not None:
                wide[offset] = 0.0
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
        taken = old[new_slots]
        q = self._qrows(taken)
        scale = self._qscale[taken].copy()
        self._blocks, self._has = [], np.zeros(max(len(old), 1), dtype=bool)
        self._qblocks, self._qscale = [], np.zeros(max(len(old), 1), dtype=np.float32)
        self._end = self._count = 0
        if len(new_slots):
            self._set_many_quantized(new_slots, q, scale)

    # ---- persistence (index/persist.py) ----

    def export_arrays(self) -> dict[str, np.ndarray | list[np.ndarray]]:
        """What `from_arrays` needs: the int8 blocks (as parts, never copied together), the
        per-row factors and the presence mask, up to the last block. No float32 rows: they are
        the int8 rows times their factor (`vector_codec.dequantize`), widened when scanned."""
        rows = len(self._blocks) * self._block_rows
        has = np.zeros(rows, dtype=bool)
        scale = np.zeros(rows, dtype=np.float32)
        n = min(rows, len(self._has))
        has[:n] = self._has[:n]
        scale[:n] = self._qscale[:n]
        empty_q = np.zeros((0, self.dim), dtype=np.int8)
        return {
            "vec_i8": list(self._qblocks) or [empty_q],
            "vec_scale": scale,
            "vec_has": has,
        }

    @classmethod
    def from_arrays(cls, dim: int, arrays: dict[str, np.ndarray]) -> "VectorIndex":
        """An index over arrays written by `export_arrays` (views, typically of a private file
        mapping: the rows are read from the file as recall touches them, and a write copies
        only the page it changes)."""
        qvec, scale, has = arrays["vec_i8"], arrays["vec_scale"], arrays["vec_has"]
        index = cls(dim)
        rows = index._block_rows
        n = qvec.shape[0]
        if qvec.shape != (n, dim) or scale.shape != (n,) or has.shape != (n,) or n % rows:
            raise ValueError("vector arrays do not fit together")
        index._qblocks = [qvec[i : i + rows] for i in range(0, n, rows)]
        index._blocks = [None] * len(index._qblocks)
        if n:
            index._has, index._qscale = has, scale
        present = np.flatnonzero(has)
        index._end = int(present[-1]) + 1 if len(present) else 0
        index._count = len(present)
        return index

    # ---- reads ----

    def has(self, slot: int) -> bool:
        return 0 <= slot < self._end and bool(self._has[slot])

    def get(self, slot: int) -> np.ndarray | None:
        """A copy of the stored (normalised) vector."""
        if not self.has(slot):
            return None
        return self._rows(np.array([slot], dtype=np.int64))[0]

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
            return EMPTY_SLOTS, EMPTY_SCORES, None
        valid = self._has[:end]
        m = mask_prefix(mask, end)
        if m is not None:
            valid = valid & m
        selected = int(np.count_nonzero(valid)) if m is not None else self._count
        if selected == 0:
            return EMPTY_SLOTS, EMPTY_SCORES, None
        k = min(k, selected)
        if selected < end * self.GATHER_FRACTION_MAX:
            cand = np.flatnonzero(valid)
            top_slots, top_scores = top_k(self._dot_rows(q, cand), k, slots=cand)
            return top_slots, top_scores, None
        quantized = end >= self.QUANTIZED_SCAN_MIN_ROWS
        scanned = self._qdot_prefix(q, end) if quantized else self._dot_prefix(q, end)
        if selected < end:
            scores = np.where(valid, scanned, np.float32(-np.inf))
        else:
            scores = scanned
        if not quantized:
            top_slots, top_scores = top_k(scores, k)
            return top_slots, top_scores, scanned
        cand, _ = top_k(scores, min(selected, max(2 * k, k + self.RESCORE_MARGIN)))
        top_slots, top_scores = top_k(self._dot_rows(q, cand), k, slots=cand)
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
            sum(b.nbytes for b in self._blocks if b is not None)
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

    def _qrows(self, slots: np.ndarray) -> np.ndarray:
        """The int8 rows of the given slots, as one (n, dim) matrix.

        A few rows scattered over many blocks (re-scoring candidates, dedup) are fetched one by
        one: ~0.1 ms for 200 rows, where grouping them by block costs a numpy call per block."""
        if len(slots) <= self.ROW_BY_ROW_MAX:
            if len(slots) == 0:
                return np.empty((0, self.dim), dtype=np.int8)
            blocks, rows = self._qblocks, self._block_rows
            return np.array([blocks[s // rows][s % rows] for s in slots.tolist()], dtype=np.int8)
        out = np.empty((len(slots), self.dim), dtype=np.int8)
        for block, seg in self._by_block(slots):
            out[seg] = self._qblocks[block][slots[seg] - block * self._block_rows]
        return out

    def _rows(self, slots: np.ndarray) -> np.ndarray:
        """The float32 value of the given slots' rows, as one (n, dim) matrix."""
        return vector_codec.dequantize(self._qrows(slots), self._qscale[slots])

    def _wide(self, block: int) -> np.ndarray:
        """Block `block` as float32, widened on first use and kept (a full float32 scan)."""
        wide = self._blocks[block]
        if wide is None:
            start = block * self._block_rows
            scale = np.zeros(self._block_rows, dtype=np.float32)
            part = self._qscale[start : start + self._block_rows]
            scale[: len(part)] = part
            wide = vector_codec.dequantize(self._qblocks[block], scale)
            self._blocks[block] = wide
        return wide

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
        wide = self._wide
        self._scan_prefix(end, lambda b, start, stop: np.dot(wide(b)[: stop - start], q, out=out[start:stop]))
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

    def _dot_rows(self, q: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Cosine of q with the given rows, gathered block by block (cache-sized copies)."""
        if len(slots) <= self.ROW_BY_ROW_MAX:
            return self._rows(slots) @ q
        out = np.empty(len(slots), dtype=np.float32)
        for block, seg in self._by_block(slots):
            at = slots[seg]
            out[seg] = (
                vector_codec.dequantize(self._qblocks[block][at - block * self._block_rows], self._qscale[at]) @ q
            )
        return out

    def _ensure_capacity(self, needed: int) -> None:
        """Append zeroed blocks (never copying stored rows) and grow the cheap presence mask."""
        while len(self._blocks) * self._block_rows < needed:
            self._blocks.append(None)
            self._qblocks.append(np.zeros((self._block_rows, self.dim), dtype=np.int8))
        if needed > len(self._has):
            capacity = grown_capacity(len(self._has), needed)
            has = np.zeros(capacity, dtype=bool)
            has[: len(self._has)] = self._has
            self._has = has
            scale = np.zeros(capacity, dtype=np.float32)
            scale[: len(self._qscale)] = self._qscale
            self._qscale = scale
