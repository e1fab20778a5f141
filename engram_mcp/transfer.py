"""Export, import and reindex: lossless JSONL, fast when vectors travel along.

An export line is one of: header, memory (the whole record; vector as base64 float32
with its model name), history, entity, mention, relation (entity -> entity), link
(memory -> memory). Import is idempotent (an id already present is skipped), keeps
ids, timestamps, history and relations, and reuses vectors whose model matches the
current one; the rest are embedded in length-sorted batches. Records are written in
transactions of IMPORT_BATCH, which is what makes >= 500 memories/s possible.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from .errors import InvalidInput
from .records import check_enum, jsonable, vector_bytes
from .scope_index import record_key
from .storage import queries as q
from .storage.schema import CURRENT_SCHEMA_VERSION, SCOPES

if TYPE_CHECKING:
    from .handles import ScopeHandle
    from .service import MemoryService, RequestContext

EXPORT_FORMAT = "engram-export"
EXPORT_VERSION = 1
IMPORT_BATCH = 250
EMBED_BATCH = 64
DATETIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "status_changed_at", "forgotten_at")
Progress = Callable[[int, int | None, str], None]


def _rid(table: str, key: str):
    from surrealdb import RecordID

    return RecordID(table, key)


def export(svc: "MemoryService", ctx: "RequestContext", path: Path, *, scopes: tuple[str, ...] = ("project", "user"),
           include_vectors: bool = True, progress: Progress | None = None) -> dict[str, Any]:
    """Write the chosen scopes to `path` (JSONL, 0600)."""
    for s in scopes:
        check_enum(s, SCOPES, "scopes")
    counts = {"memory": 0, "history": 0, "entity": 0, "mention": 0, "relation": 0, "link": 0}
    path = Path(path)
    fd = _open_private(path)
    with svc.lock, open(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps({"kind": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                              "schema_version": CURRENT_SCHEMA_VERSION, "model": svc.model_name, "scopes": list(scopes)}) + "\n")
        for scope in scopes:
            if scope == "session" and not ctx.session_id:
                continue
            h = svc.handle(ctx, scope)
            rows = h.q(q.ALL_MEMORIES) or []
            total = len(rows)
            for i, row in enumerate(rows):
                rec = {k: v for k, v in row.items() if k not in ("id", "embedding")}
                line = {"kind": "memory", "scope": scope, "id": record_key(row), "record": jsonable(rec)}
                if include_vectors and row.get("embedding"):
                    line["vector_b64"] = base64.b64encode(bytes(row["embedding"])).decode()
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                counts["memory"] += 1
                if progress and (i % 500 == 0 or i == total - 1):
                    progress(i + 1, total, f"export {scope}")
            for e in h.q(q.ALL_HISTORY) or []:
                out.write(json.dumps({"kind": "history", "scope": scope, "memory_id": record_key({"id": e["memory"]}),
                                      "entry": jsonable({k: v for k, v in e.items() if k not in ("id", "memory")})}, ensure_ascii=False) + "\n")
                counts["history"] += 1
            for e in h.q(q.ALL_ENTITIES) or []:
                out.write(json.dumps({"kind": "entity", "scope": scope, "key": record_key(e),
                                      "record": jsonable({k: v for k, v in e.items() if k != "id"})}, ensure_ascii=False) + "\n")
                counts["entity"] += 1
            for m in h.q(q.ALL_MENTIONS) or []:
                out.write(json.dumps({"kind": "mention", "scope": scope, "memory_id": record_key({"id": m["in"]}),
                                      "entity_key": record_key({"id": m["out"]}), "relationship": m.get("relationship"),
                                      "created_at": jsonable(m.get("created_at"))}) + "\n")
                counts["mention"] += 1
            for r in h.q(q.ALL_RELATIONS) or []:
                out.write(json.dumps({"kind": "relation", "scope": scope, "from": record_key({"id": r["in"]}), "to": record_key({"id": r["out"]}),
                                      "relation_type": r.get("relation_type"), "weight": r.get("weight"), "evidence": r.get("evidence") or [],
                                      "created_at": jsonable(r.get("created_at"))}) + "\n")
                counts["relation"] += 1
            for l in h.q(q.ALL_LINKS) or []:
                out.write(json.dumps({"kind": "link", "scope": scope, "from": record_key({"id": l["in"]}), "to": record_key({"id": l["out"]}),
                                      "relation_type": l.get("relation_type"), "strength": l.get("strength"),
                                      "created_at": jsonable(l.get("created_at"))}) + "\n")
                counts["link"] += 1
    return {"path": str(path), "counts": counts}


def _open_private(path: Path) -> int:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)


def _read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{n}: not valid JSON ({exc.msg}); nothing after line {n - 1} was imported") from None
            if not isinstance(obj, dict) or "kind" not in obj:
                raise InvalidInput(f"{path}:{n}: each line must be an object with a 'kind'")
            yield n, obj


def _restore_times(rec: dict[str, Any]) -> dict[str, Any]:
    for f in DATETIME_FIELDS:
        v = rec.get(f)
        if isinstance(v, str):
            rec[f] = datetime.fromisoformat(v.replace("Z", "+00:00"))
    return rec


def import_(svc: "MemoryService", ctx: "RequestContext", path: Path, *, progress: Progress | None = None,
            target_scope: str | None = None) -> dict[str, Any]:
    """Import an export file (or any JSONL of memory lines); idempotent by id."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    total = sum(1 for _ in open(path, encoding="utf-8"))
    counts = {"memory": 0, "skipped": 0, "embedded": 0, "history": 0, "entity": 0, "mention": 0, "relation": 0, "link": 0}
    pending: dict[str, list[tuple[str, dict, np.ndarray | None]]] = {}
    to_embed: list[tuple[str, str, dict]] = []
    deferred: list[tuple[int, dict]] = []
    handles: dict[str, "ScopeHandle"] = {}
    model = svc.model_name

    def handle(scope: str) -> "ScopeHandle":
        check_enum(scope, SCOPES, "scope")
        if scope not in handles:
            handles[scope] = svc.handle(ctx, scope)
        return handles[scope]

    def flush(scope: str) -> None:
        batch = pending.pop(scope, [])
        if not batch:
            return
        h = handle(scope)
        h.tx([(q.CREATE_MEMORY, {"id": key, "record": rec}) for key, rec, _ in batch])
        for key, rec, vec in batch:
            h.index.upsert({**rec, "id": key}, vec)
        counts["memory"] += len(batch)

    with svc.lock:
        for n, obj in _read_lines(path):
            kind = obj["kind"]
            if kind == "header":
                if obj.get("format") != EXPORT_FORMAT or int(obj.get("version", 0)) > EXPORT_VERSION:
                    raise InvalidInput(f"{path}: not an engram export of a version this engram reads")
                continue
            if kind != "memory":
                deferred.append((n, obj))
                continue
            scope = target_scope or obj.get("scope")
            h = handle(scope)
            key = str(obj.get("id", ""))
            from .ids import parse_memory_id

            key = parse_memory_id(key, field=f"line {n} id")
            if h.index.slot_of(key) is not None:
                counts["skipped"] += 1
                continue
            rec = _restore_times(dict(obj.get("record") or {}))
            rec["scope"] = scope
            vec = None
            blob = obj.get("vector_b64")
            if blob and rec.get("embedding_model") == model:
                raw = base64.b64decode(blob)
                vec = np.frombuffer(raw, dtype="<f4")
                rec["embedding"] = raw
            else:
                rec.pop("embedding", None)
                rec["embedding_model"] = None
                rec["embedding_dim"] = None
            rec = {k: v for k, v in rec.items() if v is not None}
            if vec is None and rec.get("status") != "forgotten":
                to_embed.append((scope, key, rec))
            else:
                pending.setdefault(scope, []).append((key, rec, vec))
                if len(pending[scope]) >= IMPORT_BATCH:
                    flush(scope)
            if progress and n % 500 == 0:
                progress(n, total, "import")
        for scope in list(pending):
            flush(scope)
        for i in range(0, len(to_embed), EMBED_BATCH):
            chunk = to_embed[i : i + EMBED_BATCH]
            vecs, _warning = svc.embed_documents([r["content"] for _, _, r in chunk])
            for j, (scope, key, rec) in enumerate(chunk):
                v = None if vecs is None else vecs[j]
                if v is not None:
                    rec.update(embedding=vector_bytes(v), embedding_model=model, embedding_dim=int(v.shape[0]))
                    counts["embedded"] += 1
                pending.setdefault(scope, []).append((key, rec, v))
            for scope in list(pending):
                flush(scope)
            if progress:
                progress(min(i + EMBED_BATCH, len(to_embed)), len(to_embed), "embed")
        _import_deferred(handle, deferred, counts, target_scope)
    if progress:
        progress(total, total, "done")
    return {"path": str(path), "counts": counts}


def _import_deferred(handle, deferred, counts, target_scope) -> None:
    """History, graph and links, after the memories they point at exist."""
    for n, obj in deferred:
        scope = target_scope or obj.get("scope")
        h = handle(scope)
        kind = obj["kind"]
        if kind == "history":
            entry = dict(obj.get("entry") or {})
            if isinstance(entry.get("changed_at"), str):
                entry["changed_at"] = datetime.fromisoformat(entry["changed_at"].replace("Z", "+00:00"))
            entry["memory"] = _rid("memory", obj["memory_id"])
            h.q(q.CREATE_HISTORY, {"entry": entry})
            counts["history"] += 1
        elif kind == "entity":
            rec = dict(obj.get("record") or {})
            h.q(q.UPSERT_ENTITY, {"key": obj["key"], "name": rec.get("name", ""), "entity_type": rec.get("entity_type", "concept"),
                                  "mentions": int(rec.get("mention_count", 0)), "description": rec.get("description")})
            counts["entity"] += 1
        elif kind == "mention":
            m, e = _rid("memory", obj["memory_id"]), _rid("entity", obj["entity_key"])
            rel = obj.get("relationship") or "mentions"
            if not h.q(q.FIND_MENTION, {"memory": m, "entity": e, "relationship": rel}):
                h.q(q.RELATE_MENTION, {"memory": m, "entity": e, "relationship": rel})
                counts["mention"] += 1
        elif kind == "relation":
            a, b = _rid("entity", obj["from"]), _rid("entity", obj["to"])
            if not h.q(q.FIND_RELATION, {"a": a, "b": b, "relation_type": obj.get("relation_type")}):
                h.q(q.RELATE_ENTITIES, {"a": a, "b": b, "relation_type": obj.get("relation_type"), "weight": float(obj.get("weight") or 0.5), "evidence": obj.get("evidence") or []})
                counts["relation"] += 1
        elif kind == "link":
            a, b = _rid("memory", obj["from"]), _rid("memory", obj["to"])
            if not h.q(q.FIND_LINK, {"a": a, "b": b, "relation_type": obj.get("relation_type")}):
                h.q(q.CREATE_LINK, {"a": a, "b": b, "relation_type": obj.get("relation_type"), "strength": float(obj.get("strength") or 0.5)})
                if obj.get("relation_type") == "supersedes":
                    h.index.superseded_by[obj["to"]] = obj["from"]
                counts["link"] += 1


def reindex(svc: "MemoryService", ctx: "RequestContext", *, scopes: tuple[str, ...] = ("project", "user"), progress: Progress | None = None) -> dict[str, Any]:
    """Embed memories stored without a vector (model was missing) or with another model."""
    model = svc.model_name
    done, failed = 0, 0
    with svc.lock:
        for scope in scopes:
            if scope == "session" and not ctx.session_id:
                continue
            h = svc.handle(ctx, scope)
            rows = [r for r in h.q(q.ALL_MEMORIES) or [] if r.get("status") != "forgotten" and (not r.get("embedding") or r.get("embedding_model") != model)]
            for i in range(0, len(rows), EMBED_BATCH):
                chunk = rows[i : i + EMBED_BATCH]
                vecs, warning = svc.embed_documents([r["content"] for r in chunk])
                if vecs is None:
                    failed += len(chunk)
                    break
                stmts = []
                for r, v in zip(chunk, vecs):
                    rec = {k: val for k, val in r.items() if k != "id"}
                    rec.update(embedding=vector_bytes(v), embedding_model=model, embedding_dim=int(v.shape[0]))
                    stmts.append((q.REPLACE_MEMORY, {"id": record_key(r), "record": rec}))
                    h.index.upsert({**rec, "id": record_key(r)}, v)
                h.tx(stmts)
                done += len(chunk)
                if progress:
                    progress(min(i + EMBED_BATCH, len(rows)), len(rows), f"reindex {scope}")
    return {"reindexed": done, "failed": failed, "model": model}
