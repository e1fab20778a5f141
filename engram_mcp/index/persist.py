"""One file of named numpy arrays plus a JSON header: how a scope's derived index is kept on disk.

Layout: 8-byte magic, 8-byte little-endian header length, the header (JSON: format version,
the caller's metadata, and per array its dtype, shape, offset, size, CRC-32 and `sum64`), then
each array's bytes at a 64-byte aligned offset. Reading maps the file once (`mmap`) and returns
read-only or copy-on-write views, so opening costs a header parse plus whatever pages the
caller touches.

Writing is atomic: a temporary file in the same directory, fsync, rename over the old file,
fsync of the directory. A crash leaves the old file or the new one, never a mix. Reading
checks the magic, the header, every array's bounds against the file size, and every byte an
answer can come from: the CRC-32 of each array, or for those named in ``unchecked`` (the
large vector rows) the `sum64` digest, which reads them ~8x faster than CRC-32 here (154 MB:
~30 ms against ~230 ms). Only arrays named in ``lazy`` are left to the caller, which checks
each piece before it uses it (the per-record CRCs of the record blob). Any failure raises
`IndexFileError`; the caller then rebuilds from the store. A flipped bit in the float32 rows
was never noticed before format 2 (an exponent bit gave a similarity of 1.2e35).

Files are opened without following links and must be regular files owned by this user: the
directory can sit inside a repository, which could ship a link or someone else's file.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from engram_mcp.core.paths import fsync_dir

MAGIC = b"ENGRIDX1"
#: 2: every array carries a `sum64` digest (format 1 files are refused, so rebuilt once).
#: 3: the vectors are kept once, as int8 rows with a scale each (no float32 block), as the store
#: keeps them (issue 36: 1,573 of the 2,993 bytes a memory took in the file); format 2 files
#: are refused, so rebuilt once.
FORMAT_VERSION = 3
ALIGN_BYTES = 64
_HEADER_LEN = struct.Struct("<Q")
#: A header larger than this is refused (it only names arrays and small metadata).
HEADER_MAX_BYTES = 1 << 20
_ALLOWED_DTYPES = frozenset({"|b1", "|i1", "<i4", "<i8", "<f4", "<f8", "|u1"})
_CRC_CHUNK_BYTES = 1 << 22


class IndexFileError(Exception):
    """The index file is missing, torn, corrupt, foreign or of another format."""


def _aligned(n: int) -> int:
    return -(-n // ALIGN_BYTES) * ALIGN_BYTES


def _crc(buf: Any, crc: int = 0) -> int:
    view = memoryview(buf).cast("B")
    for start in range(0, len(view), _CRC_CHUNK_BYTES):
        crc = zlib.crc32(view[start : start + _CRC_CHUNK_BYTES], crc)
    return crc


#: 64-bit words per chunk of `sum64` (64 KB): the chunk sums are weighted by position.
_SUM_CHUNK_WORDS = 8192
_SUM_CHUNK_BYTES = _SUM_CHUNK_WORDS * 8
_U64 = np.uint64
_MOD64 = 1 << 64


class _Sum64:
    """`sum64` over a sequence of byte buffers (the parts of one array), without joining them.

    Per 64 KB chunk c (numbered from 1) the sum S_c of its 64-bit words counts (1 + 2c) times;
    a last partial chunk counts its words 3 times and its tail bytes 5 times, all mod 2^64. A
    flipped bit moves one word by 2^k (k < 64) and so the digest by 2^k times an odd number,
    never 0 mod 2^64: every single-bit error is caught, and chunks moved or swapped change the
    weights. Summing is memory speed in numpy (~30 ms for 154 MB here, CRC-32 ~230 ms). It is
    a check against damage, not forgery (the file's owner check is that)."""

    def __init__(self) -> None:
        self.total = 0
        self.chunks = 0
        self._carry = b""

    def feed(self, buf: Any) -> None:
        raw = np.frombuffer(memoryview(buf).cast("B"), dtype=np.uint8)
        if self._carry:
            need = _SUM_CHUNK_BYTES - len(self._carry)
            head, raw = raw[:need], raw[need:]
            self._carry += head.tobytes()
            if len(self._carry) < _SUM_CHUNK_BYTES:
                return
            self._chunks(np.frombuffer(self._carry, dtype=_U64).reshape(1, -1))
            self._carry = b""
        whole = raw.size // _SUM_CHUNK_BYTES * _SUM_CHUNK_BYTES
        if whole:
            self._chunks(raw[:whole].view(_U64).reshape(-1, _SUM_CHUNK_WORDS))
        self._carry = raw[whole:].tobytes()

    def _chunks(self, words: np.ndarray) -> None:
        sums = words.sum(axis=1, dtype=_U64)
        weights = np.arange(self.chunks + 1, self.chunks + 1 + sums.size, dtype=_U64) * _U64(2) + _U64(1)
        with np.errstate(over="ignore"):
            self.total = (self.total + int((sums * weights).sum(dtype=_U64))) % _MOD64
        self.chunks += sums.size

    def digest(self) -> int:
        tail = self._carry
        n = len(tail) // 8 * 8
        words = int(np.frombuffer(tail[:n], dtype=_U64).sum(dtype=_U64)) if n else 0
        rest = int.from_bytes(tail[n:], "little") if len(tail) > n else 0
        return (self.total + 3 * words + 5 * rest) % _MOD64


def sum64(arr: np.ndarray | list[np.ndarray]) -> int:
    """The `sum64` digest of an array's bytes, or of the parts of one (`_Sum64`)."""
    acc = _Sum64()
    for part in arr if isinstance(arr, list) else [arr]:
        if part.nbytes:
            acc.feed(np.ascontiguousarray(part))
    return acc.digest()


def write_index_file(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray | list[np.ndarray]]) -> int:
    """Write `arrays` and `meta` to `path` atomically; returns the bytes written.

    An array may be given as a list of parts of one dtype and trailing shape (the vector
    blocks): they are written one after the other as one array, never copied together."""
    path = Path(path)
    specs: dict[str, dict[str, Any]] = {}
    prepared: list[tuple[list[np.ndarray], int]] = []
    offset = 0
    for name, given in arrays.items():
        parts = [np.ascontiguousarray(p) for p in (given if isinstance(given, list) else [given])]
        if not parts:
            raise ValueError(f"array {name}: no parts")
        first = parts[0]
        if first.dtype.str not in _ALLOWED_DTYPES:
            raise ValueError(f"array {name}: dtype {first.dtype.str} not storable")
        if any(p.dtype != first.dtype or p.shape[1:] != first.shape[1:] for p in parts):
            raise ValueError(f"array {name}: parts differ in dtype or shape")
        shape = [sum(p.shape[0] for p in parts), *first.shape[1:]] if first.ndim else []
        nbytes = sum(int(p.nbytes) for p in parts)
        crc = 0
        for p in parts:
            crc = _crc(p, crc) if p.nbytes else crc
        digest = sum64(parts)
        offset = _aligned(offset)
        specs[name] = {
            "dtype": first.dtype.str,
            "shape": shape,
            "offset": offset,
            "nbytes": nbytes,
            "crc": crc,
            "sum64": digest,
        }
        prepared.append((parts, offset))
        offset += nbytes
    header = json.dumps({"format": FORMAT_VERSION, "meta": meta, "arrays": specs}, separators=(",", ":")).encode()
    data_start = _aligned(len(MAGIC) + _HEADER_LEN.size + len(header))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(MAGIC)
            f.write(_HEADER_LEN.pack(len(header)))
            f.write(header)
            pos = len(MAGIC) + _HEADER_LEN.size + len(header)
            for parts, off in prepared:
                f.write(b"\0" * (data_start + off - pos))
                pos = data_start + off
                for p in parts:
                    if p.nbytes:
                        f.write(p.tobytes() if p.nbytes < _CRC_CHUNK_BYTES else p.data.cast("B"))
                        pos += p.nbytes
            f.flush()
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return data_start + offset


def read_index_file(
    path: Path,
    *,
    unchecked: frozenset[str] = frozenset(),
    lazy: frozenset[str] = frozenset(),
    writable: frozenset[str] = frozenset(),
    random_access: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of an index file, every byte checked (module docstring): by CRC-32, by
    `sum64` for those named in `unchecked`, by the caller for those named in `lazy`. Arrays
    are views of one private mapping of the file:
    those named in `writable` may be written (copy-on-write: the file never changes), the
    others are read-only. Arrays named in `random_access` are read a few rows at a time: the
    kernel is told not to read ahead there (a 1.5 KB row would otherwise pull in 128 KB).
    Raises `IndexFileError` on anything unexpected."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise IndexFileError("missing") from None
    except OSError as exc:
        raise IndexFileError(f"unreadable: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise IndexFileError("not a regular file of this user")
        size = st.st_size
        if size < len(MAGIC) + _HEADER_LEN.size:
            raise IndexFileError("truncated")
        mm = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    if mm[: len(MAGIC)] != MAGIC:
        raise IndexFileError("not an engram index file")
    (hlen,) = _HEADER_LEN.unpack_from(mm, len(MAGIC))
    hstart = len(MAGIC) + _HEADER_LEN.size
    if hlen > HEADER_MAX_BYTES or hstart + hlen > size:
        raise IndexFileError("truncated header")
    try:
        header = json.loads(bytes(mm[hstart : hstart + hlen]))
        if header.get("format") != FORMAT_VERSION:
            raise IndexFileError(f"format {header.get('format')!r}, expected {FORMAT_VERSION}")
        meta, specs = header["meta"], header["arrays"]
        if not isinstance(meta, dict) or not isinstance(specs, dict):
            raise IndexFileError("bad header")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise IndexFileError(f"bad header: {exc}") from None
    data_start = _aligned(hstart + hlen)
    arrays: dict[str, np.ndarray] = {}
    for name, spec in specs.items():
        try:
            dtype = np.dtype(spec["dtype"]) if spec["dtype"] in _ALLOWED_DTYPES else None
            shape = tuple(int(d) for d in spec["shape"])
            off, nbytes, crc = int(spec["offset"]), int(spec["nbytes"]), int(spec["crc"])
        except (KeyError, TypeError, ValueError):
            raise IndexFileError(f"array {name}: bad description") from None
        if dtype is None or any(d < 0 for d in shape) or off < 0:
            raise IndexFileError(f"array {name}: bad description")
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != nbytes or data_start + off + nbytes > size:
            raise IndexFileError(f"array {name}: truncated")
        arr = np.frombuffer(mm, dtype=dtype, count=nbytes // dtype.itemsize, offset=data_start + off).reshape(shape)
        if nbytes and name not in lazy:
            if name not in unchecked:
                if _crc(arr) != crc:
                    raise IndexFileError(f"array {name}: checksum mismatch")
            elif spec.get("sum64") != sum64(arr):
                raise IndexFileError(f"array {name}: checksum mismatch")
        if name not in writable:
            arr.flags.writeable = False
        if name in random_access and nbytes:
            start = (data_start + off) // mmap.PAGESIZE * mmap.PAGESIZE
            mm.madvise(mmap.MADV_RANDOM, start, data_start + off + nbytes - start)
        arrays[name] = arr
    return meta, arrays
