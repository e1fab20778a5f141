"""One file of named numpy arrays plus a JSON header: how a scope's derived index is kept on disk.

Layout: 8-byte magic, 8-byte little-endian header length, the header (JSON: format version,
the caller's metadata, and per array its dtype, shape, offset, size and CRC-32), then each
array's bytes at a 64-byte aligned offset. Reading maps the file once (`mmap`) and returns
read-only or copy-on-write views, so opening costs a header parse plus whatever pages the
caller touches: a 100k x 384 float32 block that recall reads only for its few re-scored
candidates stays on disk.

Writing is atomic: a temporary file in the same directory, fsync, rename over the old file,
fsync of the directory. A crash leaves the old file or the new one, never a mix. Reading
checks everything it can cheaply: the magic, the header, every array's bounds against the
file size, and the CRC-32 of every array except those named in ``unchecked`` (the caller's
large float32 rows, whose pages would otherwise all be read at open). Any failure raises
`IndexFileError`; the caller then rebuilds from the store.

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
FORMAT_VERSION = 1
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
        offset = _aligned(offset)
        specs[name] = {"dtype": first.dtype.str, "shape": shape, "offset": offset, "nbytes": nbytes, "crc": crc}
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
    writable: frozenset[str] = frozenset(),
    random_access: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of an index file. Arrays are views of one private mapping of the file:
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
        if name not in unchecked and nbytes and _crc(arr) != crc:
            raise IndexFileError(f"array {name}: checksum mismatch")
        if name not in writable:
            arr.flags.writeable = False
        if name in random_access and nbytes:
            start = (data_start + off) // mmap.PAGESIZE * mmap.PAGESIZE
            mm.madvise(mmap.MADV_RANDOM, start, data_start + off + nbytes - start)
        arrays[name] = arr
    return meta, arrays
