"""store_memory: a new memory, or a merge into the near-duplicate its scope already holds.

The text is cleaned and redacted like an imported one (records.clean_*), embedded outside
the write lock, then under it: a replay of the same `request_id` changes nothing, a
near-duplicate (cosine >= store_dedup_similarity, or the same text) of the same facts and
the same side of an origin boundary is strengthened instead of stored twice (`merge_into`);
one that changes a fact is stored as a new memory that supersedes it or is hinted at
(`_dedup_plan`, services/fact_diff.py), and a new memory close to an older one without
duplicating it comes back with a hint that it may replace it (`supersede_hint`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from engram_mcp.core.errors import InvalidInput, MemoryNotFound
from engram_mcp.core.ids import format_memory_id, new_ulid, parse_memory_id
from engram_mcp.core.vocabulary import MEMORY_TYPES, SCOPES
from engram_mcp.services import fact_diff, graph, records
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.links import link_memories, mark_consolidated
from engram_mcp.services.records import (
    MAX_SUMMARY_CHARS,
    check_entities,
    check_enum,
    check_unit,
    findings_summary,
    iso,
    now_dt,
    parse_time,
    sanitize_obj,
    vector_bytes,
)
from engram_mcp.services.sightings import note_sighting

SUPERSEDE_HINT_MIN_COSINE = 0.65  # see supersede_hint
SUPERSEDE_HINT_PREVIEW_CHARS = 160


#: Vectors a caller embedded beforehand in one batch (`embedded_beforehand`), by cleaned content.
_EMBEDDED: ContextVar[dict[str, np.ndarray] | None] = ContextVar("engram_embedded_beforehand", default=None)


@contextmanager
def embedded_beforehand(vectors: dict[str, np.ndarray]) -> Iterator[None]:
    """Within it, `store` takes a text's vector from `vectors` (keyed by `records.clean_content`
    of the text) instead of embedding it alone: a sync embeds its arrivals in batches, outside
    the write lock, then stores them one by one with short holds. Per thread (a context variable)."""
    token = _EMBEDDED.set(vectors)
    try:
        yield
    finally:
        _EMBEDDED.reset(token)


def store(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    content: str,
    type: str,
    scope: str,
    importance: float | None = None,
    confidence: float | None = None,
    tags: list[str] | None = None,
    category: str | None = None,
    summary: str | None = None,
    source: dict[str, Any] | None = None,
    related_entities: list[dict[str, Any]] | None = None,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    supersedes: str | None = None,
    derived_from: list[str] | None = None,
    dedup: bool = True,
    created_at: str | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """Store a memory, or merge it into a near-duplicate (cosine >= 0.85) of its scope that
    states the same facts (a changed fact supersedes or is hinted at instead; see `_dedup_plan`).

    `request_id` (a ULID; the write queue passes its entry id) makes the call
    idempotent: the new memory gets that key, and a replay whose memory exists, or
    whose merge the twin already recorded, changes nothing (`action: "exists"`).
    """
    check_enum(type, MEMORY_TYPES, "type")
    check_enum(scope, SCOPES, "scope")
    if type == "working" and scope != "session":
        raise InvalidInput("working memories are scratch space and live only in scope 'session'", field="type")
    findings: list = []
    # the field checks import applies too (records.clean_memory_record): one rule per field
    content = records.clean_content(content, findings)
    summary = records.clean_free_text(summary, findings, "summary", limit=MAX_SUMMARY_CHARS)
    record_tags = records.clean_tags(tags, findings)
    entities = sanitize_obj(check_entities(related_entities), findings)
    source = records.clean_object(source, findings, "source")
    metadata = records.clean_object(metadata, findings, "metadata")
    if category is not None:
        category = records.clean_category(category, findings)
    if session_id is not None:
        session_id = records.clean_free_text(session_id, findings, "session_id", limit=records.MAX_SESSION_ID_CHARS)
    imp = check_unit(importance, "importance", 0.5)
    conf = check_unit(confidence, "confidence", 0.7)
    created = parse_time(created_at, "created_at")
    rid = parse_memory_id(request_id, field="request_id") if request_id is not None else None
    superseded_key = parse_memory_id(supersedes, field="supersedes") if supersedes else None
    if derived_from is not None and not isinstance(derived_from, list):
        raise InvalidInput("derived_from must be a list of memory ids", field="derived_from")
    sources = [parse_memory_id(d, field="derived_from") for d in (derived_from or [])]
    if sources:
        metadata = {**metadata, "derived_from": [format_memory_id(k) for k in sources]}
        dedup = False

    given = (_EMBEDDED.get() or {}).get(content)
    vec, warning = (given, None) if given is not None else access.embed_query(content)  # outside the lock
    dedup_threshold = access.config(ctx.project_root).store_dedup_similarity
    warnings = [{"code": "embedding_failed", "message": warning, "searchable_by": "keyword_only"}] if warning else []
    with access.lock:
        h = access.handle(ctx, scope, session_id=session_id)
        sid = session_id or ctx.session_id
        access.touch_session(ctx.project_root, sid)
        if superseded_key and h.index.slot_of(superseded_key) is None:
            raise InvalidInput(f"supersedes: memory:{superseded_key} is not in scope {scope}", field="supersedes")
        if rid is not None and h.repo.exists(rid):
            return {
                "memory_id": format_memory_id(rid),
                "action": "exists",
                "scope": scope,
                "type": type,
                "embedding_generated": vec is not None,
                "graph_edges_created": 0,
                "warnings": warnings,
                "redactions": findings_summary(findings),
            }
        plan = (
            _dedup_plan(
                h, access.find_twin(h, content, vec, dedup_threshold, raw=True), content, source, superseded_key
            )
            if dedup
            else None
        )
        if plan is not None and plan.action == "merge":
            result = merge_into(
                access, h, plan.key, imp, record_tags, content, plan.similarity, sid, request_id=rid, source=source
            )
            result.update(embedding_generated=vec is not None, warnings=warnings, redactions=findings_summary(findings))
            if result["action"] == "exists":
                return result
            access.state.stores += 1
            if entities:
                result["graph_edges_created"] = graph.link_entities(h, plan.key, entities)
            if superseded_key and superseded_key != plan.key:  # the twin now says what the new text said
                link_memories(h, plan.key, superseded_key, "supersedes")
            note_sighting(access, h, plan.key)
            return result
        if superseded_key or scope == "session":
            hint = None  # the caller already said what it replaces; session memory is scratch
        elif plan is not None and plan.action == "hint":
            hint = _hint_for(h, plan.key, plan.similarity)
        else:
            hint = supersede_hint(h, vec, dedup_threshold)
        if sources:  # a summary of foreign text stays foreign (records.origin_of)
            source = records.with_parent_origins(
                source, [loc.row.get("source") for k in sources for loc in access.locate(ctx, format_memory_id(k))]
            )
        key = rid or new_ulid()
        now = now_dt()
        record = {
            "memory_type": type,
            "scope": scope,
            "content": content,
            "summary": summary,
            "category": category,
            "tags": record_tags,
            "importance": imp,
            "confidence": conf,
            "access_count": 0,
            "status": "created",
            "source": source,
            "session_id": sid,
            "embedding": vector_bytes(vec),
            "embedding_model": access.model_name if vec is not None else None,
            "embedding_dim": int(vec.shape[0]) if vec is not None else None,
            "version": 1,
            "promotion_chain": [],
            "metadata": metadata,
            "created_at": created or now,
            "updated_at": now,
            "last_accessed_at": created or now,
            "status_changed_at": now,
        }
        record = {k: v for k, v in record.items() if v is not None}
        h.repo.insert(key, record)
        h.index.upsert({**record, "id": key}, vec)
        edges = graph.link_entities(h, key, entities) if entities else 0
        if superseded_key:
            link_memories(h, key, superseded_key, "supersedes")
        if plan is not None and plan.action == "supersede" and plan.key != superseded_key:
            link_memories(h, key, plan.key, "supersedes")
        note_sighting(access, h, key)
        for src in sources:
            mark_consolidated(access, ctx, h, key, src)
        access.state.stores += 1
    result = {
        "memory_id": format_memory_id(key),
        "action": "created",
        "scope": scope,
        "type": type,
        "embedding_generated": vec is not None,
        "graph_edges_created": edges,
        "warnings": warnings,
        "redactions": findings_summary(findings),
    }
    if plan is not None and plan.action in ("supersede", "hint"):
        result["near_duplicate"] = plan.report()
    if plan is not None and plan.action == "supersede":
        result["supersedes"] = format_memory_id(plan.key)
    if hint:
        hint["if_it_replaces_it"] = (
            f"update_memory(memory_id={format_memory_id(key)!r}, supersedes={hint['memory_id']!r})"
        )
        result["possibly_supersedes"] = hint
    return result


def supersede_hint(h: ScopeHandle, vec: np.ndarray | None, dedup_similarity: float) -> dict[str, Any] | None:
    """The live memory of this scope closest to a new one, when it is close enough that the
    new memory may replace it but not so close that it is a duplicate (merged instead).

    Only a hint: whether the new fact replaces the old one is Claude's call. Measured on
    coding memory: at cosine 0.65 it names the replaced memory for about half of real
    replacements and fires for about 7% of other stores.
    """
    if vec is None:
        return None
    best = h.index.vectors.max_similarity(vec, h.index.live_mask_for())
    if best is None or not SUPERSEDE_HINT_MIN_COSINE <= best[1] < dedup_similarity:
        return None
    key = h.index.key_of(best[0])
    return _hint_for(h, key, float(best[1])) if key else None


def _hint_for(h: ScopeHandle, key: str, similarity: float) -> dict[str, Any] | None:
    """The `possibly_supersedes` hint naming memory `key`: its id, similarity and a preview."""
    row = h.repo.get(key)
    if row is None:
        return None
    text = " ".join(str(row.get("content") or "").split())
    preview = (
        text
        if len(text) <= SUPERSEDE_HINT_PREVIEW_CHARS
        else text[:SUPERSEDE_HINT_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
    )
    return {"memory_id": format_memory_id(key), "similarity": round(similarity, 3), "content": preview}


@dataclass(frozen=True)
class DedupPlan:
    """What store does with the near-duplicate `key` it found: merge into it, store the new
    memory as superseding it, store it beside it with a hint, or store it beside it plainly."""

    action: str  # "merge" | "supersede" | "hint" | "separate"
    key: str
    similarity: float
    reason: str
    verdict: fact_diff.Verdict | None = None

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "memory_id": format_memory_id(self.key),
            "similarity": round(self.similarity, 4),
            "not_merged_because": self.reason,
        }
        if self.verdict is not None:
            out["fact_tokens"] = {"old": list(self.verdict.old_only), "new": list(self.verdict.new_only)}
        return out


def _dedup_plan(
    h: ScopeHandle,
    twin: tuple[str, float] | None,
    content: str,
    source: dict[str, Any] | None,
    superseded_key: str | None,
) -> DedupPlan | None:
    """What to do with the nearest near-duplicate: the memory the caller says this one
    supersedes is replaced, never merged into; otherwise `fact_diff.merge_decision` (origin
    boundary, changed fact) decides."""
    if twin is None:
        return None
    key, similarity = twin
    row = h.repo.get(key)
    if row is None:
        return None
    if superseded_key == key:
        return DedupPlan(fact_diff.SEPARATE, key, similarity, "it is the memory this one supersedes")
    action, reason, verdict = fact_diff.merge_decision(
        str(row.get("content") or ""), row.get("source"), content, source
    )
    return DedupPlan(action, key, similarity, reason, verdict)


def merge_into(
    access: ScopeAccess,
    h: ScopeHandle,
    key: str,
    importance: float,
    tags: list[str],
    content: str,
    similarity: float,
    session_id: str | None,
    *,
    request_id: str | None = None,
    source: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Strengthen an existing memory instead of storing a duplicate; record the merge.

    A merge made for a `request_id` is recorded with it, so replaying that request
    finds it here and changes nothing. The memory keeps its own `source` (where it came from
    first); where the merged-in text came from is recorded in its merge entry (`origin`).
    """
    row = h.repo.get(key)
    if row is None:
        raise MemoryNotFound(f"memory {key} vanished during merge")
    if request_id and any(
        isinstance(m, dict) and m.get("request_id") == request_id for m in (row.get("metadata") or {}).get("merged", [])
    ):
        return {
            "memory_id": format_memory_id(key),
            "action": "exists",
            "scope": h.scope,
            "type": row.get("memory_type"),
            "similarity": round(similarity, 4),
            "graph_edges_created": 0,
        }
    new = access.editable(row)
    new["access_count"] = int(row.get("access_count", 0)) + 1
    new["last_accessed_at"] = now_dt()
    new["importance"] = max(float(row.get("importance", 0.5)), importance)
    new["tags"] = list(dict.fromkeys(list(row.get("tags") or []) + tags))[
        : records.MAX_TAGS
    ]  # a merge never grows past the limit
    meta = dict(row.get("metadata") or {})
    merges = list(meta.get("merged", []))[-19:]
    merges.append(
        {
            "at": iso(now_dt()),
            "similarity": round(similarity, 4),
            "content": content[:500],
            "session_id": session_id,
            "origin": records.origin_of(source),
            **({"request_id": request_id} if request_id else {}),
        }
    )
    meta["merged"] = merges
    new["metadata"] = meta
    if new.get("status") in ("consolidated", "archived"):
        new["status"] = "active"
    access.write_update(h, key, row, new, change="merge")
    return {
        "memory_id": format_memory_id(key),
        "action": "merged",
        "scope": h.scope,
        "type": row.get("memory_type"),
        "similarity": round(similarity, 4),
        "graph_edges_created": 0,
    }
