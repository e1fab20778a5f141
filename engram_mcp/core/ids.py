"""Identifiers: memory ULIDs and SurrealDB database names.

Memory ids are ULIDs (time-ordered, 26 Crockford base32 characters) and stay the
same through promotion, so a memory can be deduplicated across scopes by id.
Everything that becomes part of a SurrealDB identifier is validated here against a
strict alphabet: ids arrive from the model and from users, and must never be able to
smuggle SurrealQL (`memory:x; DELETE memory`).
"""

from __future__ import annotations

import hashlib
import os
import re
import time

from engram_mcp.core.errors import InvalidInput

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
MEMORY_TABLE = "memory"
# A short id is the end of a ULID (its random part): `engram list` shows 8 characters, and any
# 6 to 25 that match one memory of the caller's scopes are accepted where an id is.
SHORT_ID_CHARS = 8
SHORT_ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{6,25}$")


def short_id(key: str) -> str:
    """The short form of a bare ULID (its last SHORT_ID_CHARS characters)."""
    return key[-SHORT_ID_CHARS:]


def as_short_id(raw: object) -> str | None:
    """The upper-cased short id `raw` spells (with or without `memory:`), or None."""
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if text.startswith(f"{MEMORY_TABLE}:"):
        text = text[len(MEMORY_TABLE) + 1 :]
    text = text.strip("⟨⟩`").upper()
    return text if SHORT_ID_RE.match(text) else None


def ulid_floor(ms: int) -> str:
    """The smallest ULID of millisecond `ms` (clamped at 0): every memory created from then on
    sorts at or after it."""
    value = max(int(ms), 0) << 80
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def new_ulid(now_ms: int | None = None) -> str:
    """A new ULID: 48 bits of milliseconds + 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def parse_memory_id(raw: object, *, field: str = "memory_id") -> str:
    """Accept `memory:ULID` or `ULID` (any case); return the bare upper-case ULID."""
    if not isinstance(raw, str):
        raise InvalidInput(f"{field} must be a string like 'memory:01J...'", field=field)
    text = raw.strip()
    if text.startswith(f"{MEMORY_TABLE}:"):
        text = text[len(MEMORY_TABLE) + 1 :]
    text = text.strip("⟨⟩`").upper()
    if not ULID_RE.match(text):
        raise InvalidInput(
            f"{field} {raw[:80]!r} is not a memory id; ids look like 'memory:01JABCDEF...' (26 characters). "
            "Use recall_memories to find one.",
            field=field,
        )
    return text


def format_memory_id(ulid: str) -> str:
    return f"{MEMORY_TABLE}:{ulid}"


def session_db_name(session_id: str) -> str:
    """SurrealDB database name for a Claude Code session: `s_<id>` with dashes folded to `_`.

    Database names allow only letters, digits and `_`, so folding is not one-to-one: `a_b`
    would share `a-b`'s database, and so its session memories. Claude Code's ids (UUIDs)
    never contain `_` and keep the folded name; an id that does gets `s_u<sha256[:24]>`,
    which no dash-only id produces unless it is literally that string.
    """
    if not isinstance(session_id, str) or not SESSION_ID_RE.match(session_id):
        raise InvalidInput(
            f"session_id {str(session_id)[:80]!r} must be 1-128 letters, digits, '-' or '_'", field="session_id"
        )
    if "_" in session_id:
        return "s_u" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:24]
    return "s_" + session_id.replace("-", "_")


def project_db_name(project_root_realpath: str) -> str:
    """`p_<sha256(realpath(project root))[:12]>` (one database per project root; docs/decisions.md)."""
    return "p_" + hashlib.sha256(project_root_realpath.encode("utf-8")).hexdigest()[:12]


def entity_key(name: str, entity_type: str) -> str:
    """Stable record key for an entity: one node per (case-folded name, type)."""
    digest = hashlib.sha256(f"{name.strip().casefold()}\x00{entity_type.strip().casefold()}".encode()).hexdigest()
    return digest[:20]
