"""A re-import against what an earlier import brought: added, updated, unchanged, removed.

Every imported memory remembers its source record (`source.key`, a hash of the record's
identity) and what the source said (`source.fingerprint`), see batch.py. Reading the same
source again therefore sorts each record into one of four cases:

- its key is new: added (through `transfer.import_`, like any import line);
- its key is here with the same fingerprint: unchanged, nothing written (no churn, no
  re-embedding, no new version);
- its key is here with another fingerprint: the source was edited, so the memory is updated
  in place, its id kept and its previous version kept in history (`access.write_update`);
- a key here that the source no longer has: removed at the source. It is reported, never
  deleted: the source may have been pruned by its own tool, and what engram learned stays
  until the user forgets it.

Sources whose records have no stable identity of their own (the memory server's observations
are plain strings in a list: an edit is a delete plus an add) give their records a `group`
(the entity). A new record and a removed one of the same group are an edit: the new text
updates the old memory instead of being added beside a stale one that would outrank it.
A memory the user forgot in engram is left forgotten, whatever the source says.

Every case holds only within one source file or folder (`source.file_key`, batch.py): a
record's key (an observation's text, a note's relative path) says nothing about whose file
it came from, so a repository's `memory.jsonl` or `docs/` must never update, pair with or
report as removed the memories an import of the user's own file brought. Memories imported
before the file was recorded (no `file_key`) belong to no known file: a record with the same
key and the same text is theirs (unchanged, no duplicate), but none is ever updated, paired
or reported as removed by a re-import, since it may have come from any file; a record with
the same key and other text is a new memory beside it (`legacy_kept`, reported).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.vocabulary import SCOPES
from engram_mcp.services.records import clean_memory_record

from .batch import ImportBatch, source_hash

if TYPE_CHECKING:
    from engram_mcp.services.access import RequestContext, ScopeAccess

UPDATE_BATCH = 64  # memories embedded (outside the lock) and then written (under it) at a time
MAX_REMOVED_LISTED = 50
#: Fields a re-import takes from the source; importance, access, status and links stay engram's.
SOURCE_FIELDS = ("content", "summary", "tags", "category", "memory_type", "source")


@dataclass
class Plan:
    """What a (re-)import will do with each memory line of a batch."""

    new: list[dict[str, Any]] = field(default_factory=list)
    updates: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (scope, stored id, line)
    unchanged: int = 0
    forgotten: int = 0  # forgotten here by the user: left alone
    duplicates: int = 0  # the same source record twice in the source
    removed: list[dict[str, Any]] = field(default_factory=list)
    legacy_kept: list[str] = field(default_factory=list)  # ids of unknown-file memories left as they are

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "added": len(self.new),
            "updated": len(self.updates),
            "unchanged": self.unchanged + self.forgotten,
            "removed_at_source": len(self.removed),
            "removed": self.removed[:MAX_REMOVED_LISTED],
        }
        if self.legacy_kept:
            out["legacy_kept"] = len(self.legacy_kept)
            out["legacy_kept_ids"] = self.legacy_kept[:MAX_REMOVED_LISTED]
        return out


def plan(access: "ScopeAccess", ctx: "RequestContext", batch: ImportBatch) -> Plan:
    """Sort the batch's memory lines against the store (reads only); remaps the graph lines of
    updated and unchanged memories onto the ids they have here."""
    out = Plan()
    stored = _stored(access, ctx, batch)
    remap: dict[str, str] = {}
    seen_ids: set[tuple[str, str]] = set()
    pending: list[dict[str, Any]] = []
    for line in batch.lines:
        if line["kind"] != "memory":
            continue
        scope = line["scope"]
        if (scope, line["id"]) in seen_ids:
            out.duplicates += 1
            continue
        seen_ids.add((scope, line["id"]))
        here = stored.get(scope, {})
        src = line["record"]["source"]
        row = here.get((src.get("file_key"), src["key"])) or here.get(("id", line["id"]))
        if row is None:
            legacy = here.get((None, src["key"]))
            if legacy is not None and _same_text(legacy, line):
                legacy["seen"] = True  # the same record, imported before files were recorded
                remap[line["id"]] = legacy["key"]
                if legacy["status"] == "forgotten":
                    out.forgotten += 1
                else:
                    out.unchanged += 1
                continue
            if legacy is not None and legacy["status"] != "forgotten":
                out.legacy_kept.append(legacy["key"])  # may be another file's: never overwritten
            pending.append(line)
            continue
        row["seen"] = True
        remap[line["id"]] = row["key"]
        _sort_existing(out, scope, row, line)
    _pair_edits(out, stored, pending, remap, batch_file_key(batch))
    mine = batch_file_key(batch)
    out.removed = [
        {"scope": scope, "memory_id": row["key"], "where": _where(row["source"])}
        for scope, rows in stored.items()
        for k, row in rows.items()
        if not batch.partial
        and _is_source_key(k)
        and k[0] is not None
        and k[0] == mine
        and not row.get("seen")
        and row["status"] != "forgotten"
    ]
    _remap_graph(batch, remap)
    return out


def batch_file_key(batch: ImportBatch) -> str | None:
    return source_hash(batch.file) if batch.file else None


def _is_source_key(k: Any) -> bool:
    return isinstance(k, tuple) and len(k) == 2 and k[0] != "id"


def _same_text(row: dict[str, Any], line: dict[str, Any]) -> bool:
    return row["source"].get("fingerprint") == line["record"]["source"]["fingerprint"]


def _stored(access: "ScopeAccess", ctx: "RequestContext", batch: ImportBatch) -> dict[str, dict[Any, dict]]:
    """Per scope the batch writes to: (file key, source key) -> row (file key None: imported
    before files were recorded), and ("id", memory id) -> row."""
    scopes = sorted({line["scope"] for line in batch.lines if line["kind"] == "memory" and line["scope"] in SCOPES})
    out: dict[str, dict[Any, dict]] = {}
    for scope in scopes:
        with access.lock:
            rows = access.handle(ctx, scope).repo.imported_from(batch.source)
        by: dict[Any, dict] = {}
        for row in rows:
            key, file_key = row["source"].get("key"), row["source"].get("file_key")
            if isinstance(key, str):
                by[(file_key if isinstance(file_key, str) else None, key)] = row
            by[("id", row["key"])] = row
        out[scope] = by
    return out


def _sort_existing(out: Plan, scope: str, row: dict[str, Any], line: dict[str, Any]) -> None:
    if row["status"] == "forgotten":
        out.forgotten += 1
    elif row["source"].get("fingerprint") == line["record"]["source"]["fingerprint"]:
        out.unchanged += 1
    else:
        out.updates.append((scope, row["key"], line))


def _pair_edits(
    out: Plan, stored: dict[str, dict[Any, dict]], pending: list[dict], remap: dict[str, str], file_key: str | None
) -> None:
    """New records of a group take the place of removed records of the same group and the
    same source file, in order (never a record of another file, nor of an unknown one)."""
    free: dict[tuple[str, str], list[dict]] = {}
    for scope, rows in stored.items():
        for k, row in rows.items():
            group = row["source"].get("group")
            if (
                _is_source_key(k)
                and file_key is not None
                and k[0] == file_key
                and not row.get("seen")
                and isinstance(group, str)
                and row["status"] != "forgotten"
            ):
                free.setdefault((scope, group), []).append(row)
    for line in pending:
        group = line["record"]["source"].get("group")
        spare = free.get((line["scope"], group)) if group else None
        if spare:
            row = spare.pop(0)
            row["seen"] = True
            remap[line["id"]] = row["key"]
            out.updates.append((line["scope"], row["key"], line))
        else:
            out.new.append(line)


def _remap_graph(batch: ImportBatch, remap: dict[str, str]) -> None:
    """Keep only the new memory lines; point mentions of the others at their stored ids."""
    new_ids = set()
    lines = []
    for line in batch.lines:
        if line["kind"] == "memory":
            if line["id"] in remap or line["id"] in new_ids:
                continue
            new_ids.add(line["id"])
        elif line["kind"] == "mention" and line["memory_id"] in remap:
            line = {**line, "memory_id": remap[line["memory_id"]]}
        lines.append(line)
    batch.lines = lines


def _where(source: dict[str, Any]) -> str:
    for name in ("path", "entity", "table"):
        if source.get(name):
            extra = source.get("id") if name == "table" else source.get("observation")
            return f"{source[name]}" + (f" #{extra}" if extra is not None else "")
    return str(source.get("kind") or "?")


def apply_updates(
    access: "ScopeAccess",
    ctx: "RequestContext",
    updates: list[tuple[str, str, dict[str, Any]]],
    findings: list,
    progress: Callable[[int, int | None, str], None] | None = None,
) -> dict[str, Any]:
    """Write the source's edits: each record checked and redacted as an import line is,
    embedded outside the lock, then written with its previous version in history."""
    done = 0
    rejected: list[dict[str, str]] = []
    for start in range(0, len(updates), UPDATE_BATCH):
        part = []
        for scope, key, line in updates[start : start + UPDATE_BATCH]:
            try:
                part.append((scope, key, clean_memory_record(line["record"], findings, scope=scope)))
            except InvalidInput as exc:
                rejected.append({"memory_id": key, "error": exc.message})
        vecs, _warning = access.embed_documents([rec["content"] for _s, _k, rec in part])
        with access.lock:
            for i, (scope, key, rec) in enumerate(part):
                h = access.handle(ctx, scope)
                row = h.repo.get(key)
                if row is None:
                    continue
                new = access.editable(row)
                for name in SOURCE_FIELDS:
                    new[name] = rec.get(name)
                vec = None if vecs is None else np.asarray(vecs[i])
                if vec is not None:
                    new.update(embedding=vec.astype("<f4").tobytes(), embedding_model=access.model_name)
                    new["embedding_dim"] = int(vec.shape[0])
                access.write_update(h, key, row, new, change="import", vector=vec)
                done += 1
        if progress is not None:
            progress(done, len(updates), "update")
    out: dict[str, Any] = {"updated": done}
    if rejected:
        out["rejected"] = rejected
    return out
