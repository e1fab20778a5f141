"""The one precision a memory's vector is kept at: int8 per component with one float32 scale.

Both the store (`storage/memory_shape.py`, the system of record) and the derived index
(`index/vectors.py`, and its file) keep a vector as `quantize` gives it, and score with
`dequantize`, so a vector is the same bytes wherever it is read from and a rebuild from the
store equals the index kept beside it. Before this, the store kept 384 float32 (1,536 bytes a
memory) and the index file kept them again plus an int8 copy: 3.5 KB of the 5 KB a memory
took on disk (issue 36). The rounding moves a cosine by less than 0.005 (a component moves
by at most half a step of ``max|x| / 127``; measured on the coding bench's vectors: ~4e-4
rms), below the distance between the scores recall ranks on.

Stored layout (`pack`): the scale as little-endian float32, then the ``dim`` int8 components:
``dim + 4`` bytes where float32 took ``4 * dim`` (the two lengths never coincide, so a record
written before, holding float32, is read as it was).
"""

from __future__ import annotations

import math

import numpy as np

#: |norm - 1| above this: a vector is normalised before it is quantized (the model's are
#: unit vectors to within float rounding, and are kept as they come). Wider than the rounding
#: moves a norm (a packed vector read back as float32 is 1 +- 0.002 at 384 dimensions; at
#: 1e-3, 144 of 20,000 were normalised again), so packing what `float_bytes` gave (an export
#: imported again, a record read whole and rewritten) gives the same bytes.
NORM_TOLERANCE = 1e-2


def normalised_rows(mat: np.ndarray) -> np.ndarray:
    """Rows of float32 scaled to unit length where they are not within `NORM_TOLERANCE` of it.
    Raises ValueError for a row that is not finite or is zero."""
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise ValueError("vectors must be finite and non-zero")
    off = np.abs(norms - 1.0) > NORM_TOLERANCE
    if np.any(off):
        mat = mat.copy()
        mat[off] = mat[off] / norms[off][:, None]
    return mat


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scale per row) of (n, dim) float32 rows: ``rint(x * 127 / max|x|)``
    and ``max|x| / 127``."""
    rows = np.asarray(rows, dtype=np.float32)
    peak = np.abs(rows).max(axis=1)
    peak[peak == 0] = 1.0
    q = np.rint(rows * (np.float32(127.0) / peak)[:, None]).astype(np.int8)
    return q, (peak / np.float32(127.0)).astype(np.float32)


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The float32 rows int8 rows stand for (the one formula every reader uses)."""
    return np.asarray(q, dtype=np.float32) * np.asarray(scale, dtype=np.float32)[:, None]


def pack(vec: np.ndarray) -> bytes:
    """A vector as stored: normalised (`normalised_rows`), quantized, scale first."""
    q, scale = quantize(normalised_rows(np.asarray(vec, dtype=np.float32).reshape(1, -1)))
    return scale.astype("<f4").tobytes() + q.tobytes()


def pack_many(mat: np.ndarray) -> list[bytes]:
    """`pack` of each row, in one pass (the same bytes: every step works row by row)."""
    q, scale = quantize(normalised_rows(mat))
    le = scale.astype("<f4")
    return [le[i].tobytes() + q[i].tobytes() for i in range(len(q))]


def packed_len(dim: int) -> int:
    return dim + 4


def unpack(blob: bytes | bytearray | memoryview, dim: int) -> tuple[np.ndarray, np.float32] | None:
    """(int8 row, scale) of a packed vector of `dim` components, or None when `blob` is not one."""
    if dim <= 0 or len(blob) != dim + 4:
        return None
    raw = bytes(blob)
    scale = np.frombuffer(raw[:4], dtype="<f4")[0]
    if not math.isfinite(float(scale)) or scale <= 0:
        return None
    return np.frombuffer(raw[4:], dtype=np.int8), np.float32(scale)


def pack_float_bytes(blob: bytes | bytearray, dim: int) -> bytes | None:
    """The packed form of `dim` float32 components given as bytes (a record about to be
    written), or None when they are not such a vector (then the bytes are kept as given)."""
    if dim <= 0 or len(blob) != 4 * dim:
        return None
    vec = np.frombuffer(bytes(blob), dtype="<f4")
    try:
        return pack(vec)
    except ValueError:
        return None


def float_bytes(blob: bytes | bytearray, dim: int) -> bytes | None:
    """A packed vector of `dim` components as float32 bytes (what readers of a record's
    `embedding` have always got), or None when `blob` is not a packed vector."""
    got = unpack(blob, dim)
    if got is None:
        return None
    q, scale = got
    return dequantize(q[None, :], np.array([scale], dtype=np.float32))[0].astype("<f4").tobytes()
