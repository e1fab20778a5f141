"""Export, import and reindex: lossless JSONL, fast when vectors travel along.

An export line is one of: header, memory (the whole record; vector as base64 float32
with its model name), history, entity, mention, relation (entity -> entity), link
(memory -> memory). Export is deterministic (rows sorted by stable keys). Import is
idempotent (a memory id, history entry, entity, mention, relation or link already
present is skipped), keeps ids, timestamps, history and relations, redacts secrets and
<private> spans as `store` does, and reuses vectors whose model matches the current one
(unless redaction changed the text); the rest are embedded in length-sorted batches.
Records are written in transactions of IMPORT_BATCH, which is what makes >= 500
memories/s possible.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from .errors import InvalidInput
from .redaction import redact_tags
from .records import check_enum, findings_summary, jsonable, now_dt, sanitize_obj, sanitize_text, vector_bytes
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
    """Write the chosen scopes to `path` (JSONL, 0600).

    Deterministic: every kind of row is written in the order of a stable key (never the
    engine's table-scan order of random record ids), so exporting the same data twice,
    or re-exporting an import, gives the same bytes apart from the header.
    """
    for s in scopes:
        check_enum(s, SCOPES, "scopes")
    counts = {"memory": 0, "history": 0, "entity": 0, "mention": 0, "relation": 0, "link": 0}
    path = Path(path)
    try:
        fd = _open_private(path)
    except OSError as exc:
        raise InvalidInput(f"cannot write the export to {path}: {exc.strerror or exc}", field="path") from None
    with svc.lock, open(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps({"kind": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                              "schema_version": CURRENT_SCHEMA_VERSION, "model": svc.model_name, "scopes": list(scopes)}) + "\n")
        for scope in scopes:
            if scope == "session" and not ctx.session_id:
                continue
            h = svc.handle(ctx, scope)
            _export_memories(h, scope, out, counts, include_vectors, progress)
            for kind, lines in _export_graph_lines(h, scope).items():
                for line in lines:
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                counts[kind] += len(lines)
    return {"path": str(path), "counts": counts}


def _export_memories(h: "ScopeHandle", scope: str, out, counts: dict[str, int], include_vectors: bool, progress: Progress | None) -> None:
    rows = sorted(h.q(q.ALL_MEMORIES) or [], key=record_key)
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


def _export_graph_lines(h: "ScopeHandle", scope: str) -> dict[str, list[dict[str, Any]]]:
    """History, entity, mention, relation and link lines of one scope, each kind sorted."""
    history = [{"kind": "history", "scope": scope, "memory_id": record_key({"id": e["memory"]}),
                "entry": jsonable({k: v for k, v in e.items() if k not in ("id", "memory")})} for e in h.q(q.ALL_HISTORY) or []]
    history.sort(key=lambda l: (l["memory_id"], l["entry"].get("version") or 0, str(l["entry"].get("changed_at")), str(l["entry"].get("change"))))
    entities = sorted(({"kind": "entity", "scope": scope, "key": record_key(e), "record": jsonable({k: v for k, v in e.items() if k != "id"})}
                       for e in h.q(q.ALL_ENTITIES) or []), key=lambda l: l["key"])
    mentions = sorted(({"kind": "mention", "scope": scope, "memory_id": record_key({"id": m["in"]}), "entity_key": record_key({"id": m["out"]}),
                        "relationship": m.get("relationship"), "created_at": jsonable(m.get("created_at"))} for m in h.q(q.ALL_MENTIONS) or []),
                      key=lambda l: (l["memory_id"], l["entity_key"], str(l["relationship"])))
    relations = sorted(({"kind": "relation", "scope": scope, "from": record_key({"id": r["in"]}), "to": record_key({"id": r["out"]}),
                         "relation_type": r.get("relation_type"), "weight": r.get("weight"), "evidence": r.get("evidence") or [],
                         "created_at": jsonable(r.get("created_at"))} for r in h.q(q.ALL_RELATIONS) or []),
                       key=lambda l: (l["from"], l["to"], str(l["relation_type"])))
    links = sorted(({"kind": "link", "scope": scope, "from": record_key({"id": l["in"]}), "to": record_key({"id": l["out"]}),
                     "relation_type": l.get("relation_type"), "strength": l.get("strength"), "created_at": jsonable(l.get("created_at"))}
                    for l in h.q(q.ALL_LINKS) or []), key=lambda l: (l["from"], l["to"], str(l["relation_type"])))
    return {"history": history, "entity": entities, "mention": mentions, "relation": relations, "link": links}


def _open_private(path: Path) -> int:
    import os

    path.parent.mkdir(parents=True, exist_ok=True)
    return _open_regular_for_write(path)


def _open_regular_for_write(path: Path) -> int:
    """Open `path` to write, only if it is (or becomes) a regular file, truncated.

    A FIFO would block the daemon's thread until a reader appears (forever), a device or a
    socket is no export file, and a symlink may point anywhere: O_NOFOLLOW | O_NONBLOCK make
    the open itself refuse or return at once, and fstat checks what was opened before anything
    is truncated or written.
    """
    import errno
    import os
    import stat

    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise OSError(errno.EINVAL, f"{path} is a FIFO, not a regular file") from None
        if exc.errno == errno.ELOOP:
            raise OSError(errno.EINVAL, f"{path} is a symbolic link; give the path of a regular file") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file (a FIFO, device or socket)")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


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
    findings: list = []
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
            rec, text_changed = _redact_record(_restore_times(dict(obj.get("record") or {})), findings, f"{path}:{n}")
            rec["scope"] = scope
            vec = None
            blob = obj.get("vector_b64")
            if blob and rec.get("embedding_model") == model and not text_changed:  # a redacted text is embedded anew
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
        _import_deferred(handle, deferred, counts, target_scope, findings)
    if progress:
        progress(total, total, "done")
    return {"path": str(path), "counts": counts, "redactions": findings_summary(findings)}


def _redact_record(rec: dict[str, Any], findings: list, where: str) -> tuple[dict[str, Any], bool]:
    """Redact secrets and <private> spans in a record's text, as `store` does.

    An export may come from anywhere (an older engram, another machine, a hand-edited
    file), so nothing reaches the store unredacted. Returns the record and whether its
    content or summary changed (its exported vector then no longer describes it).
    """
    if not isinstance(rec.get("content"), str):
        raise InvalidInput(f"{where}: a memory record needs a string 'content'")
    before = (rec.get("content"), rec.get("summary"))
    _redact_text_fields(rec, findings)
    return rec, (rec.get("content"), rec.get("summary")) != before


def _redact_text_fields(rec: dict[str, Any], findings: list) -> dict[str, Any]:
    """The fields of a record or history snapshot that carry user text, redacted in place."""
    for name in ("content", "summary", "category"):
        if isinstance(rec.get(name), str):
            rec[name] = sanitize_text(rec[name], findings)
    if isinstance(rec.get("tags"), list):
        rec["tags"], found = redact_tags(rec["tags"])
        findings.extend(found)
    for name in ("metadata", "source"):
        if rec.get(name) is not None:
            rec[name] = sanitize_obj(rec[name], findings)
    return rec


@dataclass
class _ScopeImport:
    """What one scope already holds, loaded once, so a re-import adds nothing twice."""

    history: set[tuple[str, int, str, str]] = field(default_factory=set)
    entity_keys: dict[str, str] = field(default_factory=dict)  # exported key -> key in this store
    created_entities: set[str] = field(default_factory=set)


def _history_sig(memory_key: str, entry: dict[str, Any]) -> tuple[str, int, str, str]:
    return (memory_key, int(entry.get("version") or 0), str(entry.get("change")), str(jsonable(entry.get("changed_at"))))


def _import_deferred(handle, deferred, counts, target_scope, findings: list) -> None:
    """History, graph and links, after the memories they point at exist.

    Idempotent: a history entry (memory, version, change, time), entity, mention,
    relation or link already present is not written again; rows keep their own
    timestamps, so a re-export of an import equals the export.
    """
    state: dict[str, _ScopeImport] = {}
    for n, obj in deferred:
        scope = target_scope or obj.get("scope")
        h = handle(scope)
        if scope not in state:
            state[scope] = _ScopeImport({_history_sig(record_key({"id": e["memory"]}), e) for e in h.q(q.ALL_HISTORY) or []})
        st = state[scope]
        kind = obj["kind"]
        if kind == "history":
            counts["history"] += _import_history(h, obj, st, findings)
        elif kind == "entity":
            counts["entity"] += _import_entity(h, obj, st, findings)
        elif kind == "mention":
            counts["mention"] += _import_mention(h, obj, st)
        elif kind == "relation":
            counts["relation"] += _import_relation(h, obj, st)
        elif kind == "link":
            counts["link"] += _import_link(h, obj)


def _when(value: Any) -> datetime:
    """An exported timestamp, or now for files that carry none."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else now_dt()


def _import_history(h: "ScopeHandle", obj: dict, st: _ScopeImport, findings: list) -> int:
    entry = dict(obj.get("entry") or {})
    sig = _history_sig(obj["memory_id"], entry)
    if sig in st.history:
        return 0
    st.history.add(sig)
    entry["changed_at"] = _when(entry.get("changed_at"))
    if isinstance(entry.get("snapshot"), dict):
        entry["snapshot"] = _redact_text_fields(dict(entry["snapshot"]), findings)
    entry["memory"] = _rid("memory", obj["memory_id"])
    h.q(q.CREATE_HISTORY, {"entry": entry})
    return 1


def _import_entity(h: "ScopeHandle", obj: dict, st: _ScopeImport, findings: list) -> int:
    """Create the entity with its own timestamps, or map it onto the node this store
    already has for the name (one node per case-folded name)."""
    from .graph import find_entity, name_key

    rec = dict(obj.get("record") or {})
    key = str(obj["key"])
    if h.q(q.GET_ENTITY, {"key": key}):
        st.entity_keys[key] = key
        return 0
    name = sanitize_text(str(rec.get("name") or key), findings)
    existing = find_entity(h, name)
    if existing is not None:
        st.entity_keys[key] = record_key(existing)
        return 0
    record = {"name": name, "name_key": name_key(name), "entity_type": str(rec.get("entity_type") or "concept"),
              "description": sanitize_text(str(rec.get("description") or ""), findings), "mention_count": int(rec.get("mention_count") or 0),
              "created_at": _when(rec.get("created_at")), "updated_at": _when(rec.get("updated_at"))}
    h.q(q.IMPORT_ENTITY, {"key": key, "record": record})
    st.entity_keys[key] = key
    st.created_entities.add(key)
    return 1


def _import_mention(h: "ScopeHandle", obj: dict, st: _ScopeImport) -> int:
    ekey = st.entity_keys.get(str(obj["entity_key"]), str(obj["entity_key"]))
    m, e = _rid("memory", obj["memory_id"]), _rid("entity", ekey)
    rel = obj.get("relationship") or "mentions"
    if h.q(q.FIND_MENTION, {"memory": m, "entity": e, "relationship": rel}):
        return 0
    h.q(q.IMPORT_MENTION, {"memory": m, "entity": e, "relationship": rel, "created_at": _when(obj.get("created_at"))})
    if ekey not in st.created_entities:  # a node this import did not bring: count the new mention
        h.q(q.BUMP_ENTITY_MENTIONS, {"key": ekey, "n": 1})
    return 1


def _import_relation(h: "ScopeHandle", obj: dict, st: _ScopeImport) -> int:
    a = _rid("entity", st.entity_keys.get(str(obj["from"]), str(obj["from"])))
    b = _rid("entity", st.entity_keys.get(str(obj["to"]), str(obj["to"])))
    if h.q(q.FIND_RELATION, {"a": a, "b": b, "relation_type": obj.get("relation_type")}):
        return 0
    h.q(q.IMPORT_RELATION, {"a": a, "b": b, "relation_type": obj.get("relation_type"), "weight": float(obj.get("weight") or 0.5),
                            "evidence": obj.get("evidence") or [], "created_at": _when(obj.get("created_at"))})
    return 1


def _import_link(h: "ScopeHandle", obj: dict) -> int:
    a, b = _rid("memory", obj["from"]), _rid("memory", obj["to"])
    if h.q(q.FIND_LINK, {"a": a, "b": b, "relation_type": obj.get("relation_type")}):
        return 0
    h.q(q.IMPORT_LINK, {"a": a, "b": b, "relation_type": obj.get("relation_type"), "strength": float(obj.get("strength") or 0.5),
                        "created_at": _when(obj.get("created_at"))})
    if obj.get("relation_type") == "supersedes":
        h.index.superseded_by[obj["to"]] = obj["from"]
    return 1


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
