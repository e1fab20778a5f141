"""The memory record: building it, validating inputs, and rendering it for callers.

One place decides what a memory looks like on the way in (defaults, limits, redaction
of secrets) and on the way out (`memory:<ULID>` ids, ISO timestamps, strength computed
at read time), so the MCP server, the CLI and the hooks all agree.
"""

from __future__ import annotations

import base64
import time
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Iterable, Literal, overload

import numpy as np

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.redaction import Finding, label_for, redact_obj, sanitize, tag_secret_kind
from engram_mcp.core.vocabulary import FOREIGN_ORIGINS, LINK_TYPES, MEMORY_TYPES, ORIGIN_KINDS, SCOPES, STATUSES
from engram_mcp.index.scope_index import record_key
from engram_mcp.index.scoring import decay_factor, to_epoch
from engram_mcp.storage.rows import RECALL_SESSIONS_KEPT

MAX_CONTENT_CHARS = 20_000
MAX_SUMMARY_CHARS = 500
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_ENTITIES = 32
MAX_NAME_CHARS = 200
CATEGORIES_HINT = (
    "decision",
    "convention",
    "error_fix",
    "preference",
    "architecture",
    "pattern",
    "fact",
    "procedure",
    "observation",
)
INTERNAL_METADATA = ("recall_sessions",)


def check_enum(value: Any, allowed: Iterable[str], field: str) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise InvalidInput(f"{field} must be one of {', '.join(allowed)}; got {str(value)[:60]!r}", field=field)
    return value


def check_unit(value: Any, field: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0.0 <= float(value) <= 1.0):
        raise InvalidInput(f"{field} must be a number from 0 to 1; got {str(value)[:40]!r}", field=field)
    return float(value)


def _clean_str(value: str, field: str) -> str:
    """Text the store can keep and give back: no NUL (the engine stores it but then fails to
    serialise every answer holding it) and valid Unicode (no lone surrogates)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} is not valid Unicode text (it holds a lone surrogate)", field=field) from None
    return value


@overload
def check_text(value: Any, field: str, *, limit: int, required: Literal[True] = True) -> str: ...
@overload
def check_text(value: Any, field: str, *, limit: int, required: bool) -> str | None: ...
def check_text(value: Any, field: str, *, limit: int, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field)
    value = _clean_str(value, field)
    if required and not value.strip():
        raise InvalidInput(f"{field} must not be empty", field=field)
    if len(value) > limit:
        raise InvalidInput(
            f"{field} is {len(value)} characters; the limit is {limit}. Store a summary instead.", field=field
        )
    return value


#: The longest tag list read at all, and its most characters: the limit is MAX_TAGS once blanks
#: and duplicates are gone, so a list may hold a few of those, never thousands. Checked before
#: any tag is redacted: an import line of 200,000 tags kept a daemon worker busy for minutes.
MAX_TAG_ITEMS = 4 * MAX_TAGS
MAX_TAG_LIST_CHARS = MAX_TAG_ITEMS * MAX_TAG_CHARS


def check_tags(value: Any, field: str = "tags") -> list[str]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise InvalidInput(f"{field} must be a list of strings", field=field)
    _check_tag_list_size(value, field)
    return _unique_tags((_check_tag(t, field) for t in value), field)


def _check_tag_list_size(value: list[str] | tuple[str, ...], field: str) -> None:
    """Refuse a tag list too long to be read (entries or characters), before any tag is redacted."""
    if len(value) > MAX_TAG_ITEMS:
        raise InvalidInput(
            f"{field} holds {len(value)} entries; at most {MAX_TAGS} tags are kept and a list of more "
            f"than {MAX_TAG_ITEMS} entries is not read",
            field=field,
        )
    chars = sum(map(len, value))
    if chars > MAX_TAG_LIST_CHARS:
        raise InvalidInput(
            f"{field} holds {chars} characters; a tag list of more than {MAX_TAG_LIST_CHARS} is not read "
            f"(at most {MAX_TAGS} tags of {MAX_TAG_CHARS} characters)",
            field=field,
        )


def _unique_tags(tags: Iterable[str | None], field: str) -> list[str]:
    """The tags without blanks and duplicates, in order (a set answers `seen`: a list made it quadratic)."""
    out: list[str] = []
    seen: set[str] = set()
    for t in tags:
        if t is not None and t not in seen:
            seen.add(t)
            out.append(t)
            if len(out) > MAX_TAGS:
                raise InvalidInput(f"{field}: at most {MAX_TAGS} tags", field=field)
    return out


def _check_tag(t: str, field: str, findings: list[Finding] | None = None) -> str | None:
    """One tag as stored (None: blank); a tag replaced as a secret is counted in `findings`."""
    t = " ".join(_clean_str(t, field).split()).strip()
    if not t:
        return None
    if len(t) > MAX_TAG_CHARS:
        raise InvalidInput(
            f"{field}: tag {_redacted(t)[:40]!r}... is longer than {MAX_TAG_CHARS} characters", field=field
        )
    t = _redacted(t).lower()  # redact before lower-casing: a lower-cased token no longer matches its pattern
    kind = tag_secret_kind(t)  # a whole tag that is a token or a password: no context to see it by
    if kind is not None and findings is not None:
        findings.append(Finding(kind, 1))
    return label_for(kind) if kind is not None else t


def check_object(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be an object", field=field)
    check_json_size(value, field)
    return clean_json(value, field)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_JSON_DEPTH = 32
#: The most values (keys, items, scalars) and characters (keys and strings) one JSON object of a
#: record holds (metadata, source, a history snapshot): every string in it is redacted, about
#: 1 s per million characters, and an import line may be 4 MB (500,000 metadata keys, or one
#: 4 MB string, took 4-5 s each). Checked before anything is redacted.
MAX_JSON_VALUES = 10_000
MAX_JSON_CHARS = 200_000


def check_json_size(value: Any, field: str) -> None:
    """Refuse a JSON value of more than MAX_JSON_VALUES values (a key and its value count two)
    or MAX_JSON_CHARS characters of keys and strings, reading no further than the limit
    (iterative: a deep nesting costs no recursion here; `clean_json` then bounds the depth)."""
    values, chars = 1, 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            values += 2 * len(item)
            if values <= MAX_JSON_VALUES:
                chars += sum(len(k) for k in item if isinstance(k, str))
                stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            values += len(item)
            if values <= MAX_JSON_VALUES:
                stack.extend(item)
        if values > MAX_JSON_VALUES or chars > MAX_JSON_CHARS:
            what = f"{MAX_JSON_VALUES} values" if values > MAX_JSON_VALUES else f"{MAX_JSON_CHARS} characters"
            raise InvalidInput(
                f"{field} is too large: more than {what} (the limits are {MAX_JSON_VALUES} values "
                f"and {MAX_JSON_CHARS} characters of keys and text)",
                field=field,
            )


def clean_json(value: Any, field: str, depth: int = 0) -> Any:
    """A copy of a JSON value the store can keep: strings (and keys) through `_clean_str`,
    64-bit integers and finite floats only. A 10**30 or a NaN would otherwise reach the
    engine and fail there as a "database error", which reads as a broken store, not bad input."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidInput(f"{field} is nested too deeply (limit {MAX_JSON_DEPTH} levels)", field=field)
    if isinstance(value, str):
        return _clean_str(value, field)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise InvalidInput(f"{field} holds an integer outside the 64-bit range", field=field)
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidInput(f"{field} holds a number that is not finite ({value})", field=field)
        return value
    if isinstance(value, dict):
        return {
            (_clean_str(k, field) if isinstance(k, str) else k): clean_json(v, field, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [clean_json(v, field, depth + 1) for v in value]
    return value


def check_entities(value: Any, field: str = "related_entities") -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ENTITIES:
        raise InvalidInput(f"{field} must be a list of at most {MAX_ENTITIES} objects", field=field)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InvalidInput(f"{field}[{i}] must be an object with name, type, relationship", field=field)
        ent = {}
        for key in ("name", "type", "relationship", "target"):
            v = item.get(key)
            if v is None and key in ("relationship", "target"):
                continue
            if isinstance(v, str):
                v = _clean_str(v, field)
            if not isinstance(v, str) or not v.strip() or len(v) > MAX_NAME_CHARS:
                raise InvalidInput(
                    f"{field}[{i}].{key} must be a non-empty string of at most {MAX_NAME_CHARS} characters", field=field
                )
            ent[key] = _redacted(v)
        ent.setdefault("relationship", "mentions")
        out.append(ent)
    return out


def _redacted(text: str) -> str:
    """Redact, then squeeze whitespace. In this order: squeezing first hides the structure that
    identifies a secret (a YAML `password:` line, the lines of a PEM block) and lower-casing
    breaks provider formats (`AKIA...`)."""
    return " ".join(sanitize(text).text.split())


# ---------------------------------------------------------------------- one validation for every write path
# `store`, `update`, `forget`, `promote` and `import` all call these, so a record that import
# accepts is exactly a record that `store` would have written (NUL removed, valid Unicode,
# lengths, enums, finite numbers, real dates, secrets redacted).
MAX_REASON_CHARS = 500
MAX_SESSION_ID_CHARS = 200
MAX_MODEL_CHARS = 200
MAX_CHAIN_ENTRIES = 64
MAX_EVIDENCE_ITEMS = 64
MAX_EVIDENCE_CHARS = 2_000
MAX_CATEGORY_CHARS = 64
MAX_HISTORY_CHANGE_CHARS = 64
MAX_DESCRIPTION_CHARS = 2_000


def clean_content(value: Any, findings: list[Finding], field: str = "content") -> str:
    """Required text up to MAX_CONTENT_CHARS, redacted; empty once <private> spans go is an error."""
    text = sanitize_text(check_text(value, field, limit=MAX_CONTENT_CHARS), findings)
    if not text or not text.strip() or text.strip() == "[private]":
        raise InvalidInput(f"{field} is empty once <private> spans are removed; nothing to store", field=field)
    return text


@overload
def clean_free_text(value: Any, findings: list[Finding], field: str, *, limit: int, required: Literal[True]) -> str: ...
@overload
def clean_free_text(
    value: Any, findings: list[Finding], field: str, *, limit: int, required: bool = False
) -> str | None: ...
def clean_free_text(
    value: Any, findings: list[Finding], field: str, *, limit: int, required: bool = False
) -> str | None:
    """Optional free text (summary, reasons, descriptions): checked, then redacted."""
    return sanitize_text(check_text(value, field, limit=limit, required=required), findings)


def clean_category(
    value: Any, findings: list[Finding], field: str = "category", *, required: bool = True
) -> str | None:
    """A category as `store` keeps it: redacted, lower-case, spaces as underscores."""
    text = clean_free_text(value, findings, field, limit=MAX_CATEGORY_CHARS, required=required)
    return None if text is None else text.strip().lower().replace(" ", "_")


def clean_tags(value: Any, findings: list[Finding], field: str = "tags") -> list[str]:
    """Tags as `store` keeps them: each redacted with its findings counted, then `check_tags`.

    Each short tag is checked once per process (`_clean_tag`): tags come from a small
    vocabulary, each costs four redaction passes, and an import checks thousands of records
    carrying the same few tags.
    """
    if not (isinstance(value, list) and all(isinstance(t, str) for t in value)):
        return check_tags(value, field)
    _check_tag_list_size(value, field)
    out = []
    for t in value:
        clean = _clean_tag if len(t) <= MAX_CACHED_TAG_CHARS else _clean_tag.__wrapped__
        tag, found = clean(t, field)
        findings.extend(found)
        out.append(tag)
    return _unique_tags(out, field)


#: Longest tag `_clean_tag` remembers: 16,384 of them bound its cache to a few MB whatever a file holds.
MAX_CACHED_TAG_CHARS = 128


@lru_cache(maxsize=16384)
def _clean_tag(t: str, field: str) -> tuple[str | None, tuple[Finding, ...]]:
    """One tag of `clean_tags` and its findings (a pure function of its input; a bad tag
    raises InvalidInput, which is not cached)."""
    found: list[Finding] = []
    tag = _check_tag(sanitize_text(_clean_str(t, field), found), field, found)
    return tag, tuple(found)


def clean_object(value: Any, findings: list[Finding], field: str) -> dict[str, Any]:
    """A JSON object (source, metadata): storable values only, every string redacted."""
    return sanitize_obj(check_object(value, field), findings)


def check_int(value: Any, field: str, *, low: int = 0, high: int = 2**63 - 1, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}; got {str(value)[:40]!r}", field=field)
    return value


def check_weight(value: Any, field: str, default: float) -> float:
    """A relation weight or link strength: a finite number from 0 to 1 (None: the default)."""
    return check_unit(value, field, default)


def clean_chain(value: Any, findings: list[Finding], field: str = "promotion_chain") -> list[dict[str, Any]]:
    """A promotion chain: at most MAX_CHAIN_ENTRIES objects, every string redacted."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_CHAIN_ENTRIES or not all(isinstance(e, dict) for e in value):
        raise InvalidInput(f"{field} must be a list of at most {MAX_CHAIN_ENTRIES} objects", field=field)
    return [clean_object(e, findings, field) for e in value]


def clean_evidence(value: Any, findings: list[Finding], field: str = "evidence") -> list[str]:
    """A relation's evidence: at most MAX_EVIDENCE_ITEMS strings, each redacted."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_EVIDENCE_ITEMS or not all(isinstance(e, str) for e in value):
        raise InvalidInput(f"{field} must be a list of at most {MAX_EVIDENCE_ITEMS} strings", field=field)
    return [clean_free_text(e, findings, field, limit=MAX_EVIDENCE_CHARS, required=True) for e in value]


#: The record fields a memory may carry (storage/schema.py); anything else in an imported record is dropped.
MEMORY_TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "status_changed_at", "forgotten_at")


#: The recalling sessions a record brings along at most: as many as the store keeps (an import
#: from an older engram may bring more).
MAX_RECALL_SESSIONS = RECALL_SESSIONS_KEPT


def trim_recall_sessions(metadata: Any) -> Any:
    """`metadata` with at most MAX_RECALL_SESSIONS of its `recall_sessions` (the last ones)."""
    if isinstance(metadata, dict):
        sessions = metadata.get("recall_sessions")
        if isinstance(sessions, list) and len(sessions) > MAX_RECALL_SESSIONS:
            return {**metadata, "recall_sessions": sessions[-MAX_RECALL_SESSIONS:]}
    return metadata


def clean_memory_record(raw: Any, findings: list[Finding], *, scope: str) -> dict[str, Any]:
    """A whole memory record (an import line, or anything else not built by `store`) checked
    field by field with the checks `store` applies, redacted, ready for CREATE.

    Raises InvalidInput naming the first bad field. The vector is not handled here (it
    travels beside the record); `embedding_model`/`embedding_dim` are dropped when absent.
    """
    if not isinstance(raw, dict):
        raise InvalidInput("record must be an object", field="record")
    check_enum(scope, SCOPES, "scope")
    mtype = check_enum(raw.get("memory_type"), MEMORY_TYPES, "memory_type")
    if mtype == "working" and scope != "session":
        raise InvalidInput("working memories are scratch space and live only in scope 'session'", field="memory_type")
    rec: dict[str, Any] = {
        "memory_type": mtype,
        "scope": scope,
        "content": clean_content(raw.get("content"), findings),
        "summary": clean_free_text(raw.get("summary"), findings, "summary", limit=MAX_SUMMARY_CHARS),
        "category": clean_category(raw.get("category"), findings, required=False) or None,
        "tags": clean_tags(raw.get("tags"), findings),
        "importance": check_unit(raw.get("importance"), "importance", 0.5),
        "confidence": check_unit(raw.get("confidence"), "confidence", 0.7),
        "access_count": check_int(raw.get("access_count"), "access_count", default=0),
        "status": check_enum(raw.get("status", "created"), STATUSES, "status"),
        "source": clean_object(raw.get("source"), findings, "source"),
        "session_id": clean_free_text(raw.get("session_id"), findings, "session_id", limit=MAX_SESSION_ID_CHARS),
        "version": check_int(raw.get("version"), "version", low=1, default=1),
        "promotion_chain": clean_chain(raw.get("promotion_chain"), findings),
        "metadata": clean_object(trim_recall_sessions(raw.get("metadata")), findings, "metadata"),
        "forget_reason": clean_free_text(raw.get("forget_reason"), findings, "forget_reason", limit=MAX_REASON_CHARS),
        "embedding_model": check_text(
            raw.get("embedding_model"), "embedding_model", limit=MAX_MODEL_CHARS, required=False
        ),
        "embedding_dim": check_int(raw.get("embedding_dim"), "embedding_dim", low=1, high=65_536)
        if raw.get("embedding_dim") is not None
        else None,
    }
    for name in MEMORY_TIME_FIELDS:
        rec[name] = parse_time(raw.get(name), name)
    # A record without its times gets now, the engine's default, here: the record indexed at
    # once must say what the engine stores. Left out, the index read the creation and the last
    # access as 1970, and the next maintenance archived, then forgot, every such memory.
    rec["created_at"] = rec["created_at"] or now_dt()
    for name in ("updated_at", "last_accessed_at", "status_changed_at"):
        rec[name] = rec[name] or rec["created_at"]
    return {k: v for k, v in rec.items() if v is not None}


def check_vector(raw: Any, field: str, *, dim: int) -> tuple[bytes, np.ndarray]:
    """An exported vector (base64 of little-endian float32): decodable, `dim` long, finite."""
    if not isinstance(raw, str):
        raise InvalidInput(f"{field} must be a base64 string", field=field)
    try:
        blob = base64.b64decode(raw, validate=True)
    except (ValueError, TypeError):
        raise InvalidInput(f"{field} is not valid base64", field=field) from None
    if len(blob) != 4 * dim:
        raise InvalidInput(f"{field} has {len(blob) / 4:g} dimensions; this model has {dim}", field=field)
    vec = np.frombuffer(blob, dtype="<f4")
    if not np.isfinite(vec).all():
        raise InvalidInput(f"{field} holds a number that is not finite (NaN or infinity)", field=field)
    return blob, vec


PURGED_CONTENT = "[forgotten]"
#: What a purged memory keeps: enough for ids, links and counts to stay consistent, no text.
PURGED_KEEPS = (
    "memory_type",
    "scope",
    "importance",
    "confidence",
    "access_count",
    "session_id",
    "created_at",
    "last_accessed_at",
)


def purged_skeleton(row: dict[str, Any], reason: str | None) -> dict[str, Any]:
    """The record of a memory purged at once (`forget --purge-now`): no content, summary,
    category, tags, source, metadata, promotion chain or vector: every field that could
    hold the text that had to go."""
    now = now_dt()
    rec = {k: row[k] for k in PURGED_KEEPS if row.get(k) is not None}
    rec.update(
        content=PURGED_CONTENT,
        tags=[],
        source={},
        metadata={"purged_at": iso(now)},
        promotion_chain=[],
        status="forgotten",
        forgotten_at=row.get("forgotten_at") or now,
        status_changed_at=now,
        updated_at=now,
        version=int(row.get("version", 1)) + 1,
    )
    if reason or row.get("forget_reason"):
        rec["forget_reason"] = reason or row.get("forget_reason")
    return rec


@overload
def sanitize_text(text: str, findings: list[Finding]) -> str: ...
@overload
def sanitize_text(text: str | None, findings: list[Finding]) -> str | None: ...
def sanitize_text(text: str | None, findings: list[Finding]) -> str | None:
    """Strip <private> spans and redact secrets; collect what was redacted."""
    if text is None:
        return None
    result = sanitize(text)
    findings.extend(result.findings)
    return result.text


def sanitize_obj(obj: Any, findings: list[Finding]) -> Any:
    new, found = redact_obj(obj)
    findings.extend(found)
    return new


def findings_summary(findings: list[Finding]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f.kind] = out.get(f.kind, 0) + f.count
    return out


def vector_bytes(vec: np.ndarray | None) -> bytes | None:
    return None if vec is None else np.asarray(vec, dtype="<f4").tobytes()


def now_dt() -> datetime:
    return datetime.now(timezone.utc)


def iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def parse_time(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be an ISO 8601 date-time string", field=field)
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{field} {value[:40]!r} is not an ISO 8601 date-time (e.g. 2026-01-31T12:00:00Z)", field=field
        ) from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def public_memory(
    row: dict[str, Any], *, frozen: bool = False, now: float | None = None, include_embedding: bool = False
) -> dict[str, Any]:
    """A record as callers see it: `memory:<ULID>`, ISO times, strength at read time."""
    now = time.time() if now is None else now
    key = record_key(row)
    importance = float(row.get("importance", 0.5))
    since = now - to_epoch(row.get("last_accessed_at") or row.get("created_at"))
    factor = decay_factor(row.get("memory_type", "semantic"), since, int(row.get("access_count", 0)), frozen=frozen)
    meta = {k: v for k, v in (row.get("metadata") or {}).items() if k not in INTERNAL_METADATA}
    out: dict[str, Any] = {
        "id": format_memory_id(key),
        "content": row.get("content", ""),
        "summary": row.get("summary"),
        "type": row.get("memory_type"),
        "scope": row.get("scope"),
        "category": row.get("category"),
        "tags": list(row.get("tags") or []),
        "importance": round(importance, 4),
        "confidence": round(float(row.get("confidence", 0.7)), 4),
        "strength": round(importance * factor, 4),
        "access_count": int(row.get("access_count", 0)),
        "status": row.get("status"),
        "created_at": iso(row.get("created_at")),
        "updated_at": iso(row.get("updated_at")),
        "last_accessed_at": iso(row.get("last_accessed_at")),
        "session_id": row.get("session_id"),
        "source": row.get("source") or {},
        "origin": origin_of(row.get("source")),
        "version": int(row.get("version", 1)),
        "promotion_chain": [_chain_entry(e) for e in (row.get("promotion_chain") or [])],
        "metadata": _jsonable(meta),
        "embedding_model": row.get("embedding_model"),
        "has_embedding": bool(row.get("embedding")),
    }
    if row.get("status") == "forgotten":
        out["forgotten_at"] = iso(row.get("forgotten_at"))
        out["forget_reason"] = row.get("forget_reason")
    if include_embedding and row.get("embedding"):
        out["embedding_b64"] = base64.b64encode(bytes(row["embedding"])).decode()
    return {k: v for k, v in out.items() if v is not None or k in ("summary", "category")}


# ---------------------------------------------------------------------- provenance
#: `source.kind` values written before origins were named, and the origin each stands for.
_LEGACY_KINDS = {
    "team-memory": "team-file",
    "team-file": "team-file",
    "user-mirror": "user-sync",
    "user-sync": "user-sync",
}
#: The details an origin carries over from `source`, when present (short strings or numbers).
ORIGIN_DETAILS = ("via", "hook", "tool", "path", "commit", "author", "file", "id", "table", "entity", "project")
MAX_ORIGIN_DETAIL_CHARS = 200


def origin_of(source: Any) -> dict[str, Any]:
    """Where a memory came from, as one shape whatever wrote its `source`.

    `{"kind": <ORIGIN_KINDS>, "via": ..., details...}`. The write paths stamp `source.origin`
    (the CLI and the UI: "user", the MCP server: "claude", the hooks: "hook"; team and sync
    files and importers write `source.kind`); records written before that are read by the
    marks they already carried: `{"tool": "cli"}` is the user at the command line, `{"hook": ...}`
    a hook, `{"kind": "team-memory"}` a team file, `{"kind": "user-mirror"}` the sync folder,
    any other `kind` an importer, and anything else (an empty source included: the MCP tool
    was the one path that left it empty) Claude. A stamped origin wins over a kind, except that
    a file's or an import's kind is never read as less foreign than it is.
    """
    src = source if isinstance(source, dict) else {}
    inherited = _inherited_origin(src)
    if inherited is not None:
        return inherited
    kind = _kind_of(src)
    out: dict[str, Any] = {"kind": kind}
    if kind == "import" and isinstance(src.get("kind"), str):
        out["tool"] = src["kind"]
    for name in ORIGIN_DETAILS:
        value = src.get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and name not in out:
            out[name] = value[:MAX_ORIGIN_DETAIL_CHARS] if isinstance(value, str) else value
    if "via" not in out:
        via = _via_of(kind, src)
        if via:
            out["via"] = via
    return out


#: Foreign origins a summary records of the memories it was derived from (`with_parent_origins`).
MAX_PARENT_ORIGINS = 8


def with_parent_origins(source: dict[str, Any], parents: list[Any]) -> dict[str, Any]:
    """`source` of a memory derived from others (`derived_from`: a consolidation's summary),
    with the foreign origins among theirs: a summary of a teammate's file is still the
    teammate's text, and `origin_of` says so, never Claude's or the user's."""
    foreign = [o for o in (origin_of(p) for p in parents) if o["kind"] in FOREIGN_ORIGINS]
    if not foreign:
        return source
    return {**source, "derived_from_origins": foreign[:MAX_PARENT_ORIGINS]}


def _inherited_origin(src: dict[str, Any]) -> dict[str, Any] | None:
    """The first foreign origin a derived memory recorded of its parents, marked `derived`."""
    parents = src.get("derived_from_origins")
    for parent in parents if isinstance(parents, list) else []:
        if isinstance(parent, dict) and parent.get("kind") in FOREIGN_ORIGINS:
            details = {k: v for k, v in parent.items() if k in ORIGIN_DETAILS and isinstance(v, (str, int))}
            return {"kind": parent["kind"], **details, "derived": True}
    return None


def _kind_of(src: dict[str, Any]) -> str:
    kind = src.get("kind")
    if isinstance(kind, str) and kind:
        return _LEGACY_KINDS.get(kind, "import")  # a file or an import stays what it is
    stamped = src.get("origin")
    if stamped in ORIGIN_KINDS and stamped not in FOREIGN_ORIGINS:
        return str(stamped)
    if src.get("hook"):
        return "hook"
    if src.get("tool") in ("cli", "ui"):
        return "user"
    return "claude"


def _via_of(kind: str, src: dict[str, Any]) -> str | None:
    if kind == "user":
        return str(src.get("tool") or "cli")
    if kind == "claude":
        return "mcp"
    return None


def origin_in(mem: dict[str, Any]) -> dict[str, Any]:
    """A rendered memory's origin (`public_memory` puts it there), else the one its source gives."""
    origin = mem.get("origin")
    return origin if isinstance(origin, dict) else origin_of(mem.get("source"))


def is_foreign(mem: dict[str, Any]) -> bool:
    """Whether a memory's text came from outside: a team file, the sync folder, an import."""
    return origin_in(mem).get("kind") in FOREIGN_ORIGINS


def _chain_entry(entry: dict[str, Any]) -> dict[str, Any]:
    return _jsonable(entry)


def _jsonable(value: Any) -> Any:
    """Make engine values (datetimes, record ids, bytes) JSON-friendly."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if hasattr(value, "table_name") and (hasattr(value, "id") or hasattr(value, "record_id")):
        return f"{value.table_name}:{getattr(value, 'id', None) or getattr(value, 'record_id', None)}"
    return value


def json_default(value: Any) -> Any:
    """`json.dumps`'s ``default=`` for engine values: what `jsonable` makes of them, for the
    values json cannot write itself. The encoder then walks dicts and lists in C, where
    `jsonable` copies every one in Python first (an export of 100k memories: ~3 s saved)."""
    if isinstance(value, (datetime, bytes, bytearray)) or (
        hasattr(value, "table_name") and (hasattr(value, "id") or hasattr(value, "record_id"))
    ):
        return _jsonable(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


jsonable = _jsonable
__all__ = [
    "MEMORY_TYPES",
    "SCOPES",
    "STATUSES",
    "LINK_TYPES",
    "check_enum",
    "check_unit",
    "check_text",
    "check_tags",
    "check_object",
    "check_entities",
    "public_memory",
    "jsonable",
    "json_default",
]


def clip_words(text: str, limit: int) -> str:
    """`text` with blanks folded, cut to at most `limit` characters at a word boundary ("…" marks
    a cut), so nothing shown to Claude or the user ends mid-word."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(1, limit - 1)]
    head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return head.rstrip(" ,;:") + "…"


def count_phrase(n: int, word: str, plural: str | None = None) -> str:
    """ "1 episodic memory", "2 episodic memories": a count with its noun in the right number."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {plural or (word[:-1] + 'ies' if word.endswith('y') else word + 's')}"
