"""What every importer produces: engram's own import records (the lines of an export).

Importers only translate; `transfer.import_` does the rest (checks, redaction, embedding,
progress, idempotence by id). Each record's id is derived from the source record
(`derived_ulid`), and the record remembers where it came from in `source`: `key` (a hash of
the source record's identity: a file path, a row id, an entity's observation), `fingerprint`
(a hash of what the source says about it) and `group` (records that may replace one another,
e.g. the observations of one memory-server entity). `file` and `file_key` name the source
file or folder read (its resolved path, and a hash of it): a record's key is unique only
within its source, so a re-import finds each record by its file and its key, compares
fingerprints and so tells added, updated and unchanged apart (`resync.py`); a record of
another file is another memory (its id is derived from the file too).

Limits: a source is read into memory whole (the dry run too) and every record becomes a
memory line and graph lines held by the daemon, so a batch refuses to grow past
`MAX_MEMORIES_PER_IMPORT` memories, `MAX_GRAPH_LINES_PER_IMPORT` entity, mention and relation
lines, or `MAX_TEXT_CHARS_PER_IMPORT` characters of memory text, while the source is read:
`TooManyRecords`, an invalid input naming the limit (an 8.7 MB memory-server file of 800,000
observations took the daemon from 0.32 to 1.94 GB). The import is refused rather than cut:
a partial import would hold an arbitrary subset the user could not tell apart, and its next
re-import would report the records it never read as removed at the source.

Time: the source's own time is kept as `created_at`/`updated_at` (history and display), but
`last_accessed_at`, the clock decay runs on, starts at the import. A months-old record read
today has not been forgotten by its owner; decaying it from its source date archived most of a
claude-mem history on the first maintenance pass (issue 35, docs/team-memory.md "Importers").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from engram_mcp.core.errors import InvalidInput
from engram_mcp.services.records import MAX_CONTENT_CHARS
from engram_mcp.services.sharing.memory_file import derived_ulid

ENTITY_KEY_CHARS = 40
SOURCE_KEY_CHARS = 32  # hex digits of the source-record hash kept in `source.key`
DEFAULT_ENTITY_TYPE = "concept"
MAX_SKIPPED_KEPT = 1_000  # skipped records listed one by one; the rest only counted
SKIPPED_BEYOND_WHY = f"skipped, not listed: more than {MAX_SKIPPED_KEPT:,} records were skipped"
MAX_MEMORIES_PER_IMPORT = 50_000  # memory records one import reads (issue 35's large case: 20,000)
MAX_GRAPH_LINES_PER_IMPORT = 200_000  # entity, mention and relation lines together
MAX_TEXT_CHARS_PER_IMPORT = 64 * 1024 * 1024  # characters of memory text (content and summary) held at once


class TooManyRecords(InvalidInput):
    """The source holds more than an import reads; refused as it is read (the dry run too)."""


def source_file(path: str | os.PathLike[str]) -> str:
    """The source's identity: its resolved absolute path (a link or `..` names the same file)."""
    return str(Path(os.path.expanduser(os.fspath(path))).resolve())


@dataclass
class ImportBatch:
    """The records read from one source, and what was left out with why."""

    source: str
    file: str | None = None  # source_file() of what was read; None only for batches built by hand
    # only part of `file` was read (one note of a folder): what was not read is not "removed"
    partial: bool = False
    lines: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    entity_lines: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (scope, key) -> line
    details: dict[str, Any] = field(default_factory=dict)  # reader's notes for the report (claude-mem's projects)
    memory_count: int = 0
    graph_count: int = 0
    text_chars: int = 0

    def _grow(self, *, memories: int = 0, graph: int = 0, chars: int = 0) -> None:
        """Count what is added; past a limit the whole import is refused (module docstring)."""
        self.memory_count += memories
        self.graph_count += graph
        self.text_chars += chars
        for n, limit, what in (
            (self.memory_count, MAX_MEMORIES_PER_IMPORT, "memory records"),
            (self.graph_count, MAX_GRAPH_LINES_PER_IMPORT, "entity, mention and relation lines"),
            (self.text_chars, MAX_TEXT_CHARS_PER_IMPORT, "characters of text"),
        ):
            if n > limit:
                raise TooManyRecords(
                    f"more than {limit:,} {what}: an import reads at most that many, so this one was "
                    "refused and nothing was imported (split the source, or import its parts)",
                    field="path",
                )

    def check_count(self, n: int, limit: int, what: str, where: str) -> None:
        """Refuse a list in the source longer than `limit` before any record of it is made."""
        if n > limit:
            raise TooManyRecords(
                f"{where}: {n:,} {what}, more than the {limit:,} an import reads; refused, nothing was imported",
                field="path",
            )

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
        updated: datetime | None = None,
        origin: dict[str, Any] | None = None,
        group: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Add one memory line (content cut to the store's limit); returns its id.

        `when` is the source's creation time, `updated` its last edit (a file's mtime);
        neither starts the decay clock (module docstring)."""
        self._grow(memories=1, chars=min(len(content), MAX_CONTENT_CHARS) + min(len(summary or ""), 500))
        when_ms = int(when.timestamp() * 1000) if when else None
        # the file is part of the id: the same record key in another file is another memory
        key = derived_ulid(self.source, f"{self.file}\x00{source_key}" if self.file else source_key, when_ms=when_ms)
        record: dict[str, Any] = {
            "memory_type": memory_type,
            "content": content.strip()[:MAX_CONTENT_CHARS],
            "tags": list(dict.fromkeys(t for t in (tags or []) if t))[:32],
            "importance": importance,
        }
        if summary and summary.strip():
            record["summary"] = summary.strip()[:500]
        if category:
            record["category"] = category
        if metadata:
            record["metadata"] = metadata
        record["source"] = {
            "kind": self.source,
            **(origin or {}),
            **({"file": self.file, "file_key": source_hash(self.file)} if self.file else {}),
            "key": source_hash(source_key),
            "fingerprint": fingerprint(record),
            **({"group": group} if group else {}),
        }
        now = datetime.now(timezone.utc)
        created = when or updated or now
        record.update(
            created_at=iso(created),
            updated_at=iso(max(updated or created, created)),
            last_accessed_at=iso(now),
            status_changed_at=iso(now),
        )
        self.lines.append({"kind": "memory", "scope": scope, "id": key, "record": record})
        return key

    def entity(self, *, scope: str, name: str, entity_type: str | None = None, description: str = "") -> str:
        """Add an entity node once per name; returns its key (derived from the name).

        A type given later replaces the default one given earlier (a link to a note seen
        before the note itself), so the node's type does not depend on reading order."""
        key = entity_key(self.source, name)
        line = self.entity_lines.get((scope, key))
        if line is None:
            self._grow(graph=1)
            record = {
                "name": " ".join(name.split())[:200],
                "entity_type": (entity_type or DEFAULT_ENTITY_TYPE)[:200],
                "description": description[:2000],
            }
            line = {"kind": "entity", "scope": scope, "key": key, "record": record}
            self.entity_lines[(scope, key)] = line
            self.lines.append(line)
        elif entity_type and line["record"]["entity_type"] == DEFAULT_ENTITY_TYPE:
            line["record"]["entity_type"] = entity_type[:200]
        if description and not line["record"]["description"]:
            line["record"]["description"] = description[:2000]
        return key

    def mention(self, *, scope: str, memory_id: str, entity: str, relationship: str = "mentions") -> None:
        self._grow(graph=1)
        self.lines.append(
            {
                "kind": "mention",
                "scope": scope,
                "memory_id": memory_id,
                "entity_key": entity,
                "relationship": relationship,
            }
        )

    def relation(
        self, *, scope: str, source: str, target: str, relation_type: str, evidence: list[str] | None = None
    ) -> None:
        self._grow(graph=1)
        line: dict[str, Any] = {
            "kind": "relation",
            "scope": scope,
            "from": source,
            "to": target,
            "relation_type": relation_type,
        }
        if evidence:
            line["evidence"] = [e[:500] for e in evidence[:10]]
        self.lines.append(line)

    def skip(self, where: str, why: str, *, count: int = 1) -> None:
        """Leave a record out, saying why (`count`: records this one entry stands for). Past
        MAX_SKIPPED_KEPT entries only their number is kept, under one summing entry."""
        if len(self.skipped) >= MAX_SKIPPED_KEPT:
            last = self.skipped[-1]
            if last.get("why") != SKIPPED_BEYOND_WHY:
                last = {"where": "more records", "why": SKIPPED_BEYOND_WHY, "count": 0}
                self.skipped.append(last)
            last["count"] += count
            return
        entry: dict[str, Any] = {"where": where, "why": why}
        if count != 1:
            entry["count"] = count
        self.skipped.append(entry)

    def finish(self) -> "ImportBatch":
        """Give each entity the number of memories that mention it (an entity line of an
        export carries its count; the import does not recount what the file brings)."""
        counts: Counter[tuple[str, str]] = Counter(
            (line["scope"], line["entity_key"]) for line in self.lines if line["kind"] == "mention"
        )
        for (scope, key), line in self.entity_lines.items():
            line["record"]["mention_count"] = counts.get((scope, key), 0)
        return self

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in self.lines:
            out[line["kind"]] = out.get(line["kind"], 0) + 1
        return out


def source_hash(source_key: str) -> str:
    return hashlib.sha256(source_key.encode("utf-8", "surrogatepass")).hexdigest()[:SOURCE_KEY_CHARS]


def fingerprint(record: dict[str, Any]) -> str:
    """A hash of what the source says about a record: a re-import with the same fingerprint
    changes nothing (no new version, no re-embedding)."""
    fields = {k: record.get(k) for k in ("memory_type", "content", "tags", "summary", "category", "metadata")}
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:SOURCE_KEY_CHARS]


def entity_key(namespace: str, name: str) -> str:
    """An entity key from its case-folded name: the same node for the same name, every run."""
    digest = hashlib.sha256(f"{namespace}\x00{' '.join(name.split()).casefold()}".encode()).hexdigest()
    return f"imp_{digest[: ENTITY_KEY_CHARS - 4]}"


def iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).isoformat()


def from_epoch_ms(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def from_epoch_s(value: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(value, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None


def from_iso(value: Any) -> datetime | None:
    """A datetime from an ISO string, a datetime or a date (YAML reads `2024-03-14` as a date)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
