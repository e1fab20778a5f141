"""The stored shape of a memory record: every field, its type, and what is left unwritten.

Since schema version 5 the `memory` table is schemaless and this module is its schema. The
engine checked each of the ~24 declared fields of every record it wrote, and stored each
field even at its default; both cost it per field, on the thread (and under the GIL) of the
process that writes, and a bulk import is bounded by that write. Measured here with ready
records of an import (`bench/bulk_bench.py`, engine alone): ~190 us a record as declared and
whole, against ~120 us schemaless and sparse.

So, on every write (`stored`):
- each field is checked as its definition did (type, vocabulary, range) and a bad one is
  refused with `InvalidInput` naming it, before anything reaches the engine;
- a field the table never declared is dropped, as a SCHEMAFULL table dropped it;
- a field at its default (`DEFAULTS`), None, or a time equal to `created_at`
  (`TIMES_OF_CREATION`) is not written;
- the vector (`embedding`, float32 bytes of `embedding_dim` components) is written packed,
  int8 with one scale (`core/vector_codec.py`: 388 bytes instead of 1,536 at 384 dimensions,
  the precision the index scores at);
and on every read (`restore`) the fields not written are put back, so a record reads the
same whichever way it was written (records written before version 5 hold every field), and a
whole record's packed vector is read as float32 bytes again. A selection (the index's rows)
keeps it packed: the index takes the int8 row and scale as they are.
"""

from __future__ import annotations

import copy
import math
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from engram_mcp.core import vector_codec
from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.vocabulary import MEMORY_TYPES, SCOPES, STATUSES

__all__ = ["DEFAULTS", "FIELDS", "TIMES_OF_CREATION", "restore", "stored", "stored_many"]


def _text(value: Any, name: str) -> Any:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", field=name)
    return value


def _one_of(words: tuple[str, ...]) -> Callable[[Any, str], Any]:
    def check(value: Any, name: str) -> Any:
        if value not in words:
            raise InvalidInput(f"{name} must be one of {', '.join(words)}", field=name)
        return value

    return check


def _unit(value: Any, name: str) -> Any:
    """A float in [0, 1]; an int is stored as a float, as `TYPE float` coerced it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"{name} must be a number from 0 to 1", field=name)
    return float(value)


def _int(value: Any, name: str) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer", field=name)
    return value


def _time(value: Any, name: str) -> Any:
    if not isinstance(value, datetime):
        raise InvalidInput(f"{name} must be a datetime", field=name)
    return value


def _object(value: Any, name: str) -> Any:
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be an object", field=name)
    return value


def _list_of(kind: type, what: str) -> Callable[[Any, str], Any]:
    def check(value: Any, name: str) -> Any:
        if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
            raise InvalidInput(f"{name} must be a list of {what}", field=name)
        return value

    return check


def _bytes(value: Any, name: str) -> Any:
    if not isinstance(value, (bytes, bytearray)):
        raise InvalidInput(f"{name} must be bytes", field=name)
    return value


#: Every field of a memory record and its check (the definitions of schema versions 1-4).
FIELDS: dict[str, Callable[[Any, str], Any]] = {
    "memory_type": _one_of(MEMORY_TYPES),
    "scope": _one_of(SCOPES),
    "content": _text,
    "summary": _text,
    "category": _text,
    "tags": _list_of(str, "strings"),
    "importance": _unit,
    "confidence": _unit,
    "access_count": _int,
    "status": _one_of(STATUSES),
    "source": _object,
    "session_id": _text,
    "embedding": _bytes,
    "embedding_model": _text,
    "embedding_dim": _int,
    "version": _int,
    "promotion_chain": _list_of(dict, "objects"),
    "metadata": _object,
    "created_at": _time,
    "updated_at": _time,
    "last_accessed_at": _time,
    "status_changed_at": _time,
    "forgotten_at": _time,
    "forget_reason": _text,
}
#: Fields every record holds (the table's non-optional fields without a default).
REQUIRED = ("memory_type", "scope", "content")
#: Defaults of the schema's fields, left unwritten when a record holds them. `status` has one
#: ('created') but is always written: the engine's own statements read it (strengthening,
#: counts by status).
DEFAULTS: dict[str, Any] = {
    "tags": [],
    "importance": 0.5,
    "confidence": 0.7,
    "access_count": 0,
    "source": {},
    "version": 1,
    "promotion_chain": [],
    "metadata": {},
}
_NO_DEFAULT = object()
#: Times that default to the record's creation, left unwritten when equal to `created_at`.
TIMES_OF_CREATION = ("updated_at", "last_accessed_at", "status_changed_at")


def stored(record: dict[str, Any]) -> dict[str, Any]:
    """What is written for `record`: checked, undeclared fields dropped, defaults left out.

    Raises InvalidInput naming the first bad field. A record without `status` or
    `created_at` gets 'created' and now, the schema's defaults (both are always written)."""
    out: dict[str, Any] = {}
    for name, value in record.items():  # the record's own fields: fewer than FIELDS when sparse
        check = FIELDS.get(name)
        if check is None or value is None:
            continue
        value = check(value, name)
        default = DEFAULTS.get(name, _NO_DEFAULT)
        if value == default and type(value) is type(default):
            continue
        out[name] = value
    for name in REQUIRED:
        if name not in out:
            raise InvalidInput(f"{name} is required", field=name)
    out.setdefault("status", "created")
    created = out.setdefault("created_at", datetime.now(timezone.utc))
    for name in TIMES_OF_CREATION:
        if name in out and out[name] == created:
            del out[name]
    blob = out.get("embedding")
    if blob is not None:
        packed = vector_codec.pack_float_bytes(blob, out.get("embedding_dim") or 0)
        if packed is not None:  # else kept as given: packed already, no dimension, not a vector
            out["embedding"] = packed
    return out


def stored_many(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`stored` of each record, their vectors packed in one pass (an import's batch: packing
    one at a time cost ~0.1 ms a record on the writing thread). The records are not changed."""
    at: dict[int, list[int]] = {}
    for i, record in enumerate(records):
        blob, dim = record.get("embedding"), record.get("embedding_dim")
        if isinstance(blob, (bytes, bytearray)) and isinstance(dim, int) and dim > 0 and len(blob) == 4 * dim:
            at.setdefault(dim, []).append(i)
    packed: dict[int, bytes] = {}
    for dim, rows in at.items():
        mat = np.frombuffer(b"".join(bytes(records[i]["embedding"]) for i in rows), dtype="<f4").reshape(len(rows), dim)
        if not np.all(np.isfinite(mat)) or not np.all(mat.any(axis=1)):
            continue  # one at a time below: what cannot be packed is kept as given
        packed.update(zip(rows, vector_codec.pack_many(mat), strict=True))
    return [stored({**r, "embedding": packed[i]} if i in packed else r) for i, r in enumerate(records)]


def restore(row: dict[str, Any], *, whole: bool = True) -> dict[str, Any]:
    """Put back, in place, the fields `stored` left out. `whole`: the row is a whole record
    (absent fields are restored); otherwise a selection, whose unwritten fields the engine
    answers as None (only those are restored)."""
    for name, default in DEFAULTS.items():
        if row.get(name) is None and (whole or name in row):
            row[name] = copy.copy(default) if isinstance(default, (list, dict)) else default
    created = row.get("created_at")
    if created is not None:
        for name in TIMES_OF_CREATION:
            if row.get(name) is None and (whole or name in row):
                row[name] = created
    blob, dim = row.get("embedding"), row.get("embedding_dim")
    if whole and blob and isinstance(dim, int):
        wide = vector_codec.float_bytes(blob, dim)
        if wide is not None:
            row["embedding"] = wide
    return row
