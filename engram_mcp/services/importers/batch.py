"""What every importer produces: engram's own import records (the lines of an export).

Importers only translate; `transfer.import_` does the rest (checks, redaction, embedding,
progress, idempotence by id). Each record's id is derived from the source record
(`derived_ulid`), so importing the same source twice finds every id present and adds nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from engram_mcp.services.records import MAX_CONTENT_CHARS
from engram_mcp.services.sharing.memory_file import derived_ulid

ENTITY_KEY_CHARS = 40


@dataclass
class ImportBatch:
    """The records read from one source, and what was left out with why."""

    source: str
    lines: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    entity_keys: set[tuple[str, str]] = field(default_factory=set)  # (scope, key) already added

    def memory(
        self,
        *,
        source_key: str,
        scope: str,
        content: str,
        memory_type: str = "semantic",
        tags: list[str] | None = None,
        summary: str | None = None,
        category: str | None = None,
        importance: float = 0.5,
        when: datetime | None = None,
        origin: dict[str, Any] | None = None,
    ) -> str:
        """Add one memory line (content cut to the store's limit); returns its id."""
        when_ms = int(when.timestamp() * 1000) if when else None
        key = derived_ulid(self.source, source_key, when_ms=when_ms)
        record: dict[str, Any] = {
            "memory_type": memory_type,
            "content": content.strip()[:MAX_CONTENT_CHARS],
            "tags": list(dict.fromkeys(t for t in (tags or []) if t))[:32],
            "importance": importance,
            "source": {"kind": self.source, **(origin or {})},
        }
        if summary:
            record["summary"] = summary.strip()[:500]
        if category:
            record["category"] = category
        if when:
            stamp = when.astimezone(timezone.utc).isoformat()
            record.update(created_at=stamp, updated_at=stamp, last_accessed_at=stamp, status_changed_at=stamp)
        self.lines.append({"kind": "memory", "scope": scope, "id": key, "record": record})
        return key

    def entity(self, *, scope: str, name: str, entity_type: str = "concept", description: str = "") -> str:
        """Add an entity node once per name; returns its key (derived from the name)."""
        key = entity_key(self.source, name)
        if (scope, key) not in self.entity_keys:
            self.entity_keys.add((scope, key))
            record = {
                "name": name.strip()[:200],
                "entity_type": entity_type[:200] or "concept",
                "description": description[:2000],
            }
            self.lines.append({"kind": "entity", "scope": scope, "key": key, "record": record})
        return key

    def mention(self, *, scope: str, memory_id: str, entity: str, relationship: str = "mentions") -> None:
        self.lines.append(
            {
                "kind": "mention",
                "scope": scope,
                "memory_id": memory_id,
                "entity_key": entity,
                "relationship": relationship,
            }
        )

    def relation(self, *, scope: str, source: str, target: str, relation_type: str) -> None:
        self.lines.append(
            {"kind": "relation", "scope": scope, "from": source, "to": target, "relation_type": relation_type}
        )

    def skip(self, where: str, why: str) -> None:
        self.skipped.append({"where": where, "why": why})

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in self.lines:
            out[line["kind"]] = out.get(line["kind"], 0) + 1
        return out


def entity_key(namespace: str, name: str) -> str:
    """An entity key from its case-folded name: the same node for the same name, every run."""
    digest = hashlib.sha256(f"{namespace}\x00{' '.join(name.split()).casefold()}".encode()).hexdigest()
    return f"imp_{digest[: ENTITY_KEY_CHARS - 4]}"


def from_epoch_ms(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def from_iso(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
