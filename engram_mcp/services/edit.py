"""Reading and editing one memory: get, update, tag, forget (and its undo, and purge), link.

Every edit finds all copies of the memory the caller can see (access.locate_one) and
writes each through the versioned write (access.write_update: the new record and the old
version in memory_history, in one transaction), under the write lock.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

from engram_mcp.core import spool
from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.ids import format_memory_id, parse_memory_id
from engram_mcp.core.vocabulary import LINK_TYPES, MEMORY_TYPES
from engram_mcp.services import graph, records
from engram_mcp.services.access import Located, RequestContext, ScopeAccess
from engram_mcp.services.links import link_memories, supersede
from engram_mcp.services.records import (
    MAX_CONTENT_CHARS,
    MAX_SUMMARY_CHARS,
    check_entities,
    check_enum,
    check_object,
    check_tags,
    check_text,
    check_unit,
    clean_tags,
    findings_summary,
    jsonable,
    now_dt,
    public_memory,
    sanitize_obj,
    sanitize_text,
    vector_bytes,
)
from engram_mcp.services.sightings import note_sighting

#: A purged text shorter than this is not searched for in the write queue (it would match unrelated entries).
MIN_SCRUB_CHARS = 12


def get(
    access: ScopeAccess, ctx: RequestContext, memory_id: str, *, history: bool = False, include_embedding: bool = False
) -> dict[str, Any]:
    """A memory with its copies in other scopes, links, entities and (optionally) history."""
    with access.lock:
        found = access.locate_one(ctx, memory_id)
        first = found[0]
        mem = public_memory(first.row, frozen=first.handle.scope == "session", include_embedding=include_embedding)
        mem["also_in"] = [f.handle.scope for f in found[1:]]
        repo = first.handle.repo
        mem["entities"] = [
            {"entity_type": m.entity_type, "name": m.name, "relationship": m.relationship}
            for m in repo.mentions_of(first.key)
        ]
        mem["links"] = [
            {"from": format_memory_id(link.src), "to": format_memory_id(link.dst), "relation": link.relation_type}
            for link in repo.links_of(first.key)
        ]
        if history:
            mem["history"] = [
                {
                    "version": e.version,
                    "change": e.change,
                    "changed_at": jsonable(e.changed_at),
                    "snapshot": jsonable(e.snapshot),
                }
                for e in repo.history_of(first.key)
            ]
        return mem


def update(
    access: ScopeAccess,
    ctx: RequestContext,
    memory_id: str,
    *,
    content: str | None = None,
    summary: str | None = None,
    importance: float | None = None,
    confidence: float | None = None,
    category: str | None = None,
    tags: dict[str, list[str]] | None = None,
    metadata: dict[str, Any] | None = None,
    related_entities: dict[str, Any] | None = None,
    memory_type: str | None = None,
    supersedes: str | None = None,
) -> dict[str, Any]:
    """Update every copy of a memory; re-embed when the content changes; keep history.

    `supersedes` names an older memory this one replaces: in every scope holding both,
    a `supersedes` link is written and recall hides the older one from then on.
    """
    return apply_update(
        access,
        ctx,
        memory_id,
        content=content,
        summary=summary,
        importance=importance,
        confidence=confidence,
        category=category,
        tags=tags,
        metadata=metadata,
        related_entities=related_entities,
        memory_type=memory_type,
        supersedes=supersedes,
    )


def apply_update(
    access: ScopeAccess,
    ctx: RequestContext,
    memory_id: str,
    *,
    content: str | None = None,
    summary: str | None = None,
    importance: float | None = None,
    confidence: float | None = None,
    category: str | None = None,
    tags: dict[str, list[str]] | None = None,
    metadata: dict[str, Any] | None = None,
    related_entities: dict[str, Any] | None = None,
    memory_type: str | None = None,
    supersedes: str | None = None,
    source: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`update`, and for engram's own callers (never an operation's argument) `source`: where the
    memory's text now comes from, written in the same version (a shared file's edit makes it that
    file's text: services/sharing/sync.py)."""
    findings: list = []
    superseded_key = parse_memory_id(supersedes, field="supersedes") if supersedes else None
    if content is not None:
        content = sanitize_text(check_text(content, "content", limit=MAX_CONTENT_CHARS), findings)
    if summary is not None:
        summary = sanitize_text(check_text(summary, "summary", limit=MAX_SUMMARY_CHARS), findings)
    if importance is not None:
        importance = check_unit(importance, "importance", 0.5)
    if confidence is not None:
        confidence = check_unit(confidence, "confidence", 0.7)
    if memory_type is not None:
        check_enum(memory_type, MEMORY_TYPES, "memory_type")
    if category is not None:  # as store does; "" clears the category
        category = (
            # not None: category is not None here ("" is allowed: it clears the category)
            sanitize_text(cast(str, check_text(category, "category", limit=64, required=False)), findings)
            .strip()
            .lower()
            .replace(" ", "_")
        )
    tag_ops = check_object(tags, "tags")
    # clean_tags counts every tag it replaces (a secret inside one, or a whole tag that is one)
    add_tags = clean_tags(tag_ops.get("add"), findings, "tags.add")
    remove_tags = check_tags(tag_ops.get("remove"), "tags.remove")
    meta_patch = sanitize_obj(check_object(metadata, "metadata"), findings)
    ent_ops = check_object(related_entities, "related_entities")
    add_entities = sanitize_obj(check_entities(ent_ops.get("add"), "related_entities.add"), findings)
    remove_entities = ent_ops.get("remove") or []
    if not isinstance(remove_entities, list) or not all(isinstance(n, str) for n in remove_entities):
        raise InvalidInput("related_entities.remove must be a list of entity names", field="related_entities")
    vec, warning = (None, None)
    if content is not None:
        vec, warning = access.embed_query(content)
    updated_fields: list[str] = []
    version = None
    with access.lock:
        found = access.locate_one(ctx, memory_id)
        if superseded_key:  # checked before anything is written: a refused update changes nothing
            if superseded_key == found[0].key:
                raise InvalidInput("a memory cannot supersede itself", field="supersedes")
            if not any(f.handle.index.slot_of(superseded_key) is not None for f in found):
                raise InvalidInput(
                    f"supersedes: memory:{superseded_key} is not in a scope holding {memory_id}; "
                    "promote one of them first",
                    field="supersedes",
                )
        for loc in found:
            row = loc.row
            if row.get("status") == "forgotten" and content is None and row.get("content") == "[forgotten]":
                raise InvalidInput(
                    f"memory {memory_id} was forgotten and purged; store a new memory instead", field="memory_id"
                )
            new = access.editable(row)
            changes = []
            for name, value in (
                ("content", content),
                ("summary", summary),
                ("importance", importance),
                ("confidence", confidence),
                ("memory_type", memory_type),
            ):
                if value is not None and value != row.get(name):
                    new[name] = value
                    changes.append(name)
            if source is not None and source != row.get("source"):
                new["source"] = source
                changes.append("source")
            if memory_type == "working" and loc.handle.scope != "session":
                raise InvalidInput("working memories live only in scope 'session'", field="memory_type")
            if category is not None and (category or None) != row.get("category"):
                new["category"] = category or None
                changes.append("category")
            if add_tags or remove_tags:
                cur = [t for t in (row.get("tags") or []) if t not in remove_tags]
                new["tags"] = list(dict.fromkeys(cur + add_tags))
                if len(new["tags"]) > records.MAX_TAGS:  # the limit store and import apply, on the result
                    raise InvalidInput(
                        f"tags: a memory has at most {records.MAX_TAGS} tags; this would make {len(new['tags'])}. "
                        "Remove some first.",
                        field="tags",
                    )
                if new["tags"] != list(row.get("tags") or []):
                    changes.append("tags")
            if meta_patch:
                merged = dict(row.get("metadata") or {})
                for k, v in meta_patch.items():
                    if v is None:
                        merged.pop(k, None)
                    else:
                        merged[k] = v
                new["metadata"] = merged
                if merged != (row.get("metadata") or {}):
                    changes.append("metadata")
            if content is not None:
                new["embedding"] = vector_bytes(vec)
                new["embedding_model"] = access.model_name if vec is not None else None
                new["embedding_dim"] = int(vec.shape[0]) if vec is not None else None
            if changes:  # an edit that changes nothing writes no version and no history
                access.write_update(
                    loc.handle,
                    loc.key,
                    row,
                    new,
                    change="update",
                    vector=vec if content is not None else loc.handle.index.vector_of_key(loc.key),
                )
                if {"content", "importance", "memory_type"} & set(changes):
                    note_sighting(access, loc.handle, loc.key, drop=True)
            if version is None:
                version = int(row.get("version", 1)) + (1 if changes else 0)
            if add_entities and graph.link_entities(loc.handle, loc.key, add_entities):
                changes.append("related_entities")
            if remove_entities and graph.unlink_entities(loc.handle, loc.key, remove_entities):
                changes.append("related_entities")
            if superseded_key and supersede(loc.handle, loc.key, superseded_key):
                changes.append("supersedes")
            updated_fields = sorted(set(updated_fields) | set(changes))

    return {
        "memory_id": format_memory_id(found[0].key),
        "updated_fields": updated_fields,
        "re_embedded": "content" in updated_fields and vec is not None,
        "version": version,
        "scopes": [f.handle.scope for f in found],
        "warnings": [{"code": "embedding_failed", "message": warning}] if warning else [],
        "redactions": findings_summary(findings),
    }


def tag(
    access: ScopeAccess,
    ctx: RequestContext,
    memory_id: str,
    add: list[str] | None = None,
    remove: list[str] | None = None,
) -> dict[str, Any]:
    update(access, ctx, memory_id, tags={"add": add or [], "remove": remove or []})
    return {"memory_id": format_memory_id(parse_memory_id(memory_id)), "tags": get(access, ctx, memory_id)["tags"]}


def forget(
    access: ScopeAccess,
    ctx: RequestContext,
    memory_id: str,
    *,
    reason: str | None = None,
    undo: bool = False,
    purge_now: bool = False,
) -> dict[str, Any]:
    """Soft delete (excluded from recall, content kept until purge) or its undo.

    `purge_now` is for a secret that slipped through: the text, its history and its
    paraphrases go at once in every scope, and the stores are compacted so the bytes
    leave the disk too (`_purge_now`). It cannot be undone.
    """
    findings: list = []
    reason = records.clean_free_text(reason, findings, "reason", limit=records.MAX_REASON_CHARS)
    if not isinstance(undo, bool) or not isinstance(purge_now, bool):
        raise InvalidInput(
            "undo and purge_now must be true or false",
            field="purge_now" if not isinstance(purge_now, bool) else "undo",
        )
    if purge_now and undo:
        raise InvalidInput("purge_now cannot be undone, so it cannot be combined with undo", field="purge_now")
    if purge_now:
        return _purge_now(access, ctx, memory_id, reason, findings)
    with access.lock:
        found = access.locate_one(ctx, memory_id)
        for loc in found:
            row = loc.row
            new = access.editable(row)
            meta = dict(row.get("metadata") or {})
            if undo:
                if row.get("status") != "forgotten":
                    continue
                if row.get("content") == "[forgotten]":
                    raise InvalidInput(f"memory {memory_id} was purged; it cannot be restored", field="memory_id")
                new["status"] = meta.pop("prior_status", "active")
                new["forgotten_at"] = None
                new["forget_reason"] = None
            else:
                if row.get("status") == "forgotten":
                    continue
                meta["prior_status"] = row.get("status", "active")
                new["status"] = "forgotten"
                new["forgotten_at"] = now_dt()
                new["forget_reason"] = reason
            new["metadata"] = meta
            new["status_changed_at"] = now_dt()
            access.write_update(
                loc.handle,
                loc.key,
                row,
                new,
                change="restore" if undo else "forget",
                vector=loc.handle.index.vector_of_key(loc.key),
            )
            note_sighting(access, loc.handle, loc.key, drop=True)  # a forgotten memory is no longer seen in its project
    return {
        "memory_id": format_memory_id(found[0].key),
        "status": "active" if undo else "forgotten",
        "reason": reason,
        "scopes": [f.handle.scope for f in found],
        "undo_hint": None if undo else "forget_memory with undo=true restores it",
        "redactions": findings_summary(findings),
    }


def _purge_now(
    access: ScopeAccess, ctx: RequestContext, memory_id: str, reason: str | None, findings: list
) -> dict[str, Any]:
    """Forget and purge every copy now: the record keeps only a skeleton (no text, tags,
    metadata, vector), its history and entity mentions are deleted, in one transaction
    per copy; then each store that held a copy is compacted (storage/compact.py), so
    the old values are gone from the files, not only from the answers. The compaction
    runs after the service lock is released: it copies while recalls go on."""
    with access.lock:
        found = access.locate_one(ctx, memory_id)
        texts = _purged_texts(found)
        stores = {}
        for loc in found:
            skeleton = records.purged_skeleton(loc.row, reason)
            entities = loc.handle.repo.entities_mentioned_by(loc.key)
            with loc.handle.repo.atomic() as tx:
                tx.purge(loc.key, skeleton, entities)
            loc.handle.index.upsert({**skeleton, "id": loc.key}, None)
            note_sighting(access, loc.handle, loc.key, drop=True)
            stores[loc.handle.store.directory] = loc.handle.store
        if found and found[0].handle.scope != "user":
            user = access.registry.user()  # the sighting (fingerprint and vector) lives in the user store
            stores.setdefault(user.store.directory, user.store)
    spool_removed = _scrub_spool(access.user_dir, found[0].key, texts)
    compacted, warnings = [], []
    for store in stores.values():
        try:
            compacted.append(store.compact())
        except StoreUnavailable as exc:
            warnings.append({"code": "compaction_failed", "message": exc.message})
    return {
        "memory_id": format_memory_id(found[0].key),
        "status": "forgotten",
        "purged": True,
        "reason": reason,
        "scopes": [f.handle.scope for f in found],
        "compacted": compacted,
        "queued_entries_removed": spool_removed,
        "warnings": warnings,
        "undo_hint": None,
        "redactions": findings_summary(findings),
    }


def link(
    access: ScopeAccess, ctx: RequestContext, from_id: str, to_id: str, relation: str, *, strength: float = 0.5
) -> dict[str, Any]:
    """Record a memory -> memory relation (supersedes, contradicts, derived_from, similar_to)."""
    check_enum(relation, LINK_TYPES, "relation")
    strength = records.check_weight(strength, "strength", 0.5)  # as import checks it: a finite number from 0 to 1
    with access.lock:
        src = access.locate_one(ctx, from_id)[0]
        dst_key = parse_memory_id(to_id, field="to_id")
        if src.handle.index.slot_of(dst_key) is None:
            raise InvalidInput(
                f"{to_id} is not in the same scope as {from_id}; link memories within one scope", field="to_id"
            )
        created = link_memories(src.handle, src.key, dst_key, relation, strength)
    return {
        "from": format_memory_id(src.key),
        "to": format_memory_id(dst_key),
        "relation": relation,
        "created": created,
    }


MIN_SCRUB_CHARS = 12


def _purged_texts(found: list[Located]) -> set[str]:
    """The texts a purge erases, to find them in the write queue too: every copy's content
    and summary, and every earlier version's."""
    texts: set[str] = set()
    for loc in found:
        rows = [loc.row] + [e.snapshot for e in loc.handle.repo.history_of(loc.key)]
        for row in rows:
            for name in ("content", "summary"):
                value = row.get(name)
                if isinstance(value, str) and len(value.strip()) >= MIN_SCRUB_CHARS and value != records.PURGED_CONTENT:
                    texts.add(value)
    return texts


def _scrub_spool(user_dir: Path, key: str, texts: set[str]) -> int:
    """Remove write-queue entries (pending or rejected) that would bring a purged text back or
    keep it on disk: any entry for the purged memory id, any entry holding one of its texts."""
    mid = format_memory_id(key)
    removed = 0
    folders = [spool.spool_dir(user_dir), spool.spool_dir(user_dir) / spool.REJECTED_DIR_NAME]
    for folder in folders:
        try:
            names = [n for n in os.listdir(folder) if n.endswith(spool.ENTRY_SUFFIX)]
        except OSError:
            continue
        for name in names:
            path = folder / name
            try:
                raw = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                entry = {}
            args = v if isinstance(entry, dict) and isinstance(v := entry.get("args"), dict) else {}
            decoded = json.dumps(entry, ensure_ascii=False) if entry else raw
            if (
                name[: -len(spool.ENTRY_SUFFIX)] == key
                or args.get("memory_id") in (mid, key)
                or any(t in decoded for t in texts)
            ):
                path.unlink(missing_ok=True)
                removed += 1
    return removed
