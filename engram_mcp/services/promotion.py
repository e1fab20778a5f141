"""Promotion (session -> project -> user) and the session lifecycle around it.

A promoted memory keeps its ULID in the higher scope, or merges into a near-duplicate
there (cosine >= 0.85: strengthen, union tags, keep the higher importance), and the
step is appended to `promotion_chain`. Crash safety comes from ordering and
idempotency: the target write and its `promotion_log` entry commit in one transaction
*before* the source is marked, and a promotion whose log entry exists is never applied
twice; the session database is dropped only after every promotion committed. So after a
crash a memory is in the session, the project, or both with the link recorded, never in
neither.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.ids import CROCKFORD, format_memory_id, parse_memory_id, session_db_name
from engram_mcp.index.scope_index import content_hash
from engram_mcp.index.scoring import to_epoch
from engram_mcp.services.records import (
    MAX_REASON_CHARS,
    MAX_TAGS,
    check_enum,
    clean_free_text,
    clean_object,
    clip_words,
    count_phrase,
    findings_summary,
    iso,
    now_dt,
)

if TYPE_CHECKING:
    from engram_mcp.services.handles import ScopeHandle
    from engram_mcp.services.service import MemoryService, RequestContext

log = logging.getLogger("engram.promotion")
SCOPE_RANK = {"session": 0, "project": 1, "user": 2}
SUMMARY_ITEMS = 8
USER_PROMOTION_TYPES = ("semantic", "procedural")


def promote(
    svc: "MemoryService", ctx: "RequestContext", memory_id: str, target_scope: str, reason: str | None = None
) -> dict[str, Any]:
    """Explicit promotion of a memory to a broader scope (always allowed for the user)."""
    check_enum(target_scope, ("project", "user"), "target_scope")
    findings: list = []
    reason = clean_free_text(
        reason, findings, "reason", limit=MAX_REASON_CHARS
    )  # kept in the chain and the log: redacted
    with svc.lock:
        copies = svc.locate(ctx, memory_id)
        if not copies:
            raise InvalidInput(f"No memory {memory_id}; use recall_memories to find one.", field="memory_id")
        narrower = [c for c in copies if SCOPE_RANK[c.handle.scope] < SCOPE_RANK[target_scope]]
        if not narrower:
            have = ", ".join(c.handle.scope for c in copies)
            raise InvalidInput(
                f"{memory_id} is already in scope {have}; target_scope must be broader than its current scope",
                field="target_scope",
            )
        src = _broadest_source(svc, ctx, narrower)
        if src.row.get("memory_type") == "working":
            raise InvalidInput("working memories are scratch space and are never promoted", field="memory_id")
        dst = svc.handle(ctx, target_scope)
        result = promote_row(svc, src.handle, src.key, src.row, dst, reason=reason or "explicit")
    return {
        "memory_id": format_memory_id(src.key),
        "previous_scope": src.handle.scope,
        "new_scope": target_scope,
        "reason": reason,
        **result,
        "redactions": findings_summary(findings),
    }


def _broadest_source(svc: "MemoryService", ctx: "RequestContext", narrower: list) -> Any:
    """The copy to promote from: the broadest one below the target.

    Promotion goes one step at a time (session -> project -> user) so the user copy keeps
    the whole promotion_chain and what the project copy gained (merges, tags,
    importance). A session memory that merged into a project twin with another id is
    promoted through that twin.
    """
    src = max(narrower, key=lambda c: SCOPE_RANK[c.handle.scope])
    if src.handle.scope != "session":
        return src
    for step in (src.row.get("metadata") or {}).get("promoted_to") or []:
        if isinstance(step, dict) and step.get("scope") == "project" and step.get("memory_id"):
            twin = svc.locate(ctx, step["memory_id"], scopes=("project",))
            if twin:
                return twin[0]
    return src


def promote_row(
    svc: "MemoryService", src: "ScopeHandle", key: str, row: dict[str, Any], dst: "ScopeHandle", *, reason: str
) -> dict[str, Any]:
    """Copy or merge one memory into `dst`; idempotent (see module docstring)."""
    mid = format_memory_id(key)
    done = dst.repo.promotions_of(mid)
    if done:
        target = done[0].target_id or mid
        _carry_links(svc, src, key, dst, parse_memory_id(target))  # a crash may have come between
        _mark_source(svc, src, key, row, dst.scope, target)
        return {"action": "already_promoted", "target_id": target}
    entry = {
        "scope": src.scope,
        "memory_id": mid,
        "session_id": row.get("session_id"),
        "project": src.db if src.scope == "project" else None,
        "promoted_at": iso(now_dt()),
        "reason": reason,
    }
    entry = {k: v for k, v in entry.items() if v is not None}
    vec = src.index.vector_of_key(key)
    twin = svc._find_twin(
        dst, row.get("content", ""), vec, svc.config(dst.project_root or src.project_root).store_dedup_similarity
    )
    log_entry = {
        "memory_id": mid,
        "from_scope": src.scope,
        "to_scope": dst.scope,
        "reason": reason,
        "source_session": row.get("session_id"),
    }
    if dst.index.slot_of(key) is not None:
        twin = (key, 1.0)
    if twin is not None:
        tkey, similarity = twin
        trow = dst.repo.get(tkey)
        if trow is None:
            twin = None
        else:
            new = svc._editable(trow)
            new["access_count"] = int(trow.get("access_count", 0)) + max(1, int(row.get("access_count", 0)))
            new["importance"] = max(float(trow.get("importance", 0.5)), float(row.get("importance", 0.5)))
            new["tags"] = list(dict.fromkeys(list(trow.get("tags") or []) + list(row.get("tags") or [])))[:MAX_TAGS]
            new["last_accessed_at"] = now_dt()
            new["confidence"] = min(1.0, float(trow.get("confidence", 0.7)) + 0.05)
            new["promotion_chain"] = list(trow.get("promotion_chain") or []) + [
                {**entry, "action": "merged", "similarity": round(similarity, 4)}
            ]
            if new.get("status") in ("consolidated", "archived"):
                new["status"] = "active"
            _replace_with_log(
                svc, dst, tkey, trow, new, {**log_entry, "action": "merged", "target_id": format_memory_id(tkey)}
            )
            target = format_memory_id(tkey)
            action = "merged"
    if twin is None:
        record = {k: v for k, v in svc._editable(row).items() if v is not None}
        record["scope"] = dst.scope
        record["promotion_chain"] = list(row.get("promotion_chain") or []) + [{**entry, "action": "created"}]
        if record.get("status") in ("created", "consolidated", "archived"):
            record["status"] = "active"
        record["updated_at"] = now_dt()
        meta = dict(record.get("metadata") or {})
        meta.pop("promoted_to", None)
        record["metadata"] = meta
        history = src.repo.history_of(key)
        # the memory, its history (edits made during the session) and the log: all or nothing
        with dst.repo.atomic() as tx:
            tx.insert(key, record)
            for e in history:
                tx.add_history(
                    e.memory, version=e.version, change=e.change, snapshot=e.snapshot, changed_at=e.changed_at
                )
            tx.log_promotion({**log_entry, "action": "created", "target_id": mid})
        dst.index.upsert({**record, "id": key}, vec)
        _copy_mentions(src, dst, key, key)
        target, action = mid, "created"
    _carry_links(svc, src, key, dst, parse_memory_id(target))
    if dst.scope == "project":
        note_project_sighting(svc, dst, parse_memory_id(target))
    _mark_source(svc, src, key, row, dst.scope, target)
    return {"action": action, "target_id": target}


def _carry_links(svc: "MemoryService", src: "ScopeHandle", key: str, dst: "ScopeHandle", target: str) -> None:
    """Recreate `key`'s memory -> memory links in `dst` where the other end is there too.

    Whichever of two linked memories is promoted second brings the link along, so a
    `supersedes` between two session memories still ranks the old below the new.
    """
    for link in src.repo.links_of(key):
        a, b = link.src, link.dst
        other = _promoted_key(dst, b if a == key else a)
        if other is None or other == target:
            continue
        frm, to = (target, other) if a == key else (other, target)
        svc._link(dst, frm, to, link.relation_type, float(link.strength or 0.5))


def _promoted_key(dst: "ScopeHandle", key: str) -> str | None:
    """Where memory `key` lives in `dst`: same id, or the twin it merged into; None if absent."""
    if dst.index.slot_of(key) is not None:
        return key
    done = dst.repo.promotions_of(format_memory_id(key))
    return parse_memory_id(done[0].target_id) if done and done[0].target_id else None


def _replace_with_log(svc: "MemoryService", h: "ScopeHandle", key: str, old: dict, new: dict, log_entry: dict) -> None:
    """Merge update + history + promotion_log in one transaction."""
    new["version"] = int(old.get("version", 1)) + 1
    new["updated_at"] = now_dt()
    snapshot = {k: v for k, v in svc._editable(old).items() if k != "embedding"}
    record = {k: v for k, v in new.items() if v is not None}
    with h.repo.atomic() as tx:
        tx.add_history(key, version=int(old.get("version", 1)), change="promotion_merge", snapshot=snapshot)
        tx.replace(key, record)
        tx.log_promotion(log_entry)
    h.index.upsert({**record, "id": key})


def _mark_source(svc: "MemoryService", src: "ScopeHandle", key: str, row: dict, scope: str, target: str) -> None:
    meta = dict(row.get("metadata") or {})
    promoted = list(meta.get("promoted_to") or [])
    if any(p.get("scope") == scope for p in promoted):
        return
    promoted.append({"scope": scope, "memory_id": target, "at": iso(now_dt())})
    meta["promoted_to"] = promoted
    new = svc._editable(row)
    new["metadata"] = meta
    svc._write_update(src, key, row, new, change="promote")


def _copy_mentions(src: "ScopeHandle", dst: "ScopeHandle", src_key: str, dst_key: str) -> None:
    from engram_mcp.services import graph as graph_ops

    ents = [
        {"name": name, "type": r.entity_type, "relationship": r.relationship or "mentions"}
        for r in src.repo.mentions_of(src_key)
        if (name := r.name)
    ]
    if ents:
        graph_ops.link_entities(dst, dst_key, ents)


# ------------------------------------------------------------------ seen in >= 2 projects
@dataclass
class Sightings:
    """The user's project sightings for one embedding model, ready for matching."""

    projects: list[str]
    fingerprints: list[str]
    vectors: np.ndarray | None  # unit rows, aligned with `projects`; None when no vector matches the model


def _sighting_key(project: "ScopeHandle", key: str) -> str:
    return f"{project.db}_{key}"


def note_project_sighting(svc: "MemoryService", project: "ScopeHandle", key: str, *, drop: bool = False) -> None:
    """Record in the user store that project `project.db` holds memory `key` (DECISIONS.md:
    project -> user promotion when a memory is "seen in >= 2 projects").

    Only memories that could be promoted to the user scope are kept (semantic or
    procedural, importance >= promote_user_min_importance, not forgotten), which keeps the
    table small: it is read whole at each session end. With `drop`, a memory that no
    longer qualifies (forgotten, demoted) leaves the table. Best effort: the signal must
    never fail the write that produced it.
    """
    try:
        user = svc.registry.user()
        row = project.repo.get(key)
        cfg = svc.config(project.project_root)
        if row is None or not _sighting_worthy(row, cfg.promote_user_min_importance):
            if drop:
                user.repo.delete_sighting(_sighting_key(project, key))
            return
        record = {
            "project": project.db,
            "memory_id": format_memory_id(key),
            "fingerprint": content_hash(row.get("content") or ""),
            "embedding": row.get("embedding"),
            "embedding_model": row.get("embedding_model"),
            "seen_at": now_dt(),
        }
        user.repo.upsert_sighting(_sighting_key(project, key), {k: v for k, v in record.items() if v is not None})
    except (StoreUnavailable, InvalidInput) as exc:
        log.warning("project sighting of %s not recorded: %s", key, exc)


def _sighting_worthy(row: dict[str, Any], min_importance: float) -> bool:
    return (
        row.get("memory_type") in USER_PROMOTION_TYPES
        and row.get("status") != "forgotten"
        and float(row.get("importance", 0)) >= min_importance
    )


def load_sightings(svc: "MemoryService") -> Sightings:
    """Every sighting of the user (one query); vectors of another model are left out."""
    try:
        rows = svc.registry.user().repo.all_sightings()
    except StoreUnavailable:
        rows = []
    model = svc.model_name
    vecs = [
        np.frombuffer(bytes(r.embedding), dtype="<f4") if r.embedding and r.embedding_model == model else None
        for r in rows
    ]
    dim = next((v.shape[0] for v in vecs if v is not None), 0)
    matrix = None
    if dim:
        matrix = np.zeros((len(rows), dim), dtype=np.float32)
        for i, v in enumerate(vecs):
            if v is not None and v.shape[0] == dim:
                matrix[i] = v / (np.linalg.norm(v) or 1.0)
    return Sightings([r.project for r in rows], [r.fingerprint for r in rows], matrix)


def projects_seen(
    sightings: Sightings, project_db: str, content: str, vec: np.ndarray | None, threshold: float
) -> set[str]:
    """The projects holding this memory or a near-duplicate (same fingerprint or cosine >= threshold)."""
    fp = content_hash(content)
    seen = {project_db} | {p for p, f in zip(sightings.projects, sightings.fingerprints, strict=False) if f == fp}
    if vec is not None and sightings.vectors is not None and vec.shape[0] == sightings.vectors.shape[1]:
        sims = sightings.vectors @ (vec / (np.linalg.norm(vec) or 1.0))
        seen |= {sightings.projects[i] for i in np.flatnonzero(sims >= threshold)}
    return seen


# ------------------------------------------------------------------ session lifecycle
def session_key(session_id: str) -> str:
    return session_db_name(session_id)


def session_start(svc: "MemoryService", ctx: "RequestContext", info: dict[str, Any] | None = None) -> dict[str, Any]:
    """Open or resume the session scope; recover abandoned sessions; maintain when due."""
    from engram_mcp.services import lifecycle

    if not ctx.session_id:
        raise InvalidInput("session_start needs a session_id", field="session_id")
    info = _session_info(info)
    with svc.lock:
        project = svc.handle(ctx, "project")
        skey = session_key(ctx.session_id)
        existing = project.repo.session(skey)
        fields = {"session_id": ctx.session_id, "status": "active", "last_seen_at": now_dt(), "info": info}
        if existing is None or existing.status != "active":  # a new run (a resumed session too): its own summary
            fields["started_at"] = now_dt()
        project.repo.upsert_session(skey, fields)
        svc.handle(ctx, "session")
        recovered = recover_abandoned(svc, ctx)
        maintenance = lifecycle.maintain_if_due(svc, ctx)
    return {
        "session_id": ctx.session_id,
        "resumed": existing is not None,
        "recovered_sessions": recovered,
        "maintenance": maintenance,
    }


def _session_info(info: Any) -> dict[str, Any]:
    """What a hook knows about the session (source, model, ...), kept in session_registry:
    scalars only, each storable (no NUL, valid Unicode, finite) and redacted. A bad value is
    left out rather than failing the session start: the context must still come."""
    out: dict[str, Any] = {}
    for k, v in info.items() if isinstance(info, dict) else ():
        if not isinstance(k, str) or not isinstance(v, (str, int, float, bool)):
            continue
        try:
            out.update(clean_object({k: v}, [], "info"))
        except InvalidInput:
            continue
    return out


def recover_abandoned(svc: "MemoryService", ctx: "RequestContext") -> list[dict[str, Any]]:
    """End sessions a crash left behind: registry says active but silent for too long,
    or a session database with no registry entry at all."""
    from engram_mcp.services.service import RequestContext

    cfg = svc.config(ctx.project_root)
    project = svc.handle(ctx, "project")
    cutoff = time.time() - cfg.abandoned_session_hours * 3600.0
    out = []
    active = project.repo.sessions_with_status("active")
    known = {r.session_id for r in active}
    stale = [r.session_id for r in active if r.session_id != ctx.session_id and to_epoch(r.last_seen_at) < cutoff]
    for db in svc.registry.session_databases(ctx.project_root):
        sid_guess = db[2:]
        if sid_guess.replace("_", "-") == ctx.session_id or sid_guess == ctx.session_id:
            continue
        if not any(session_key(s) == db for s in known if s):
            stale.append(_session_id_from_db(project, db))
    for sid in dict.fromkeys(s for s in stale if s):
        try:
            res = session_end(svc, RequestContext(ctx.project_root, sid), reason="recovered")
            out.append({"session_id": sid, "promoted": res.get("promoted", 0)})
        except Exception as exc:  # one broken session must not block the others
            log.exception("recovering session %s", sid)
            out.append({"session_id": sid, "error": str(exc)[:200]})
    return out


def _session_id_from_db(project: "ScopeHandle", db: str) -> str:
    return db[2:]


def session_end(
    svc: "MemoryService", ctx: "RequestContext", *, summary: str | None = None, reason: str = "session_end"
) -> dict[str, Any]:
    """Promote session -> project, record project -> user candidates, keep a summary, drop the session."""
    from engram_mcp.services import lifecycle

    if not ctx.session_id:
        raise InvalidInput("session_end needs a session_id", field="session_id")
    summary = clean_free_text(summary, [], "summary", limit=4000)  # also kept in session_registry: redacted first
    with svc.lock:
        project = svc.handle(ctx, "project")
        skey = session_key(ctx.session_id)
        reg = project.repo.session(skey)
        dbs = svc.registry.session_databases(ctx.project_root)
        if skey not in dbs:
            if reg and reg.status != "active":
                return {"session_id": ctx.session_id, "already_ended": True, "promoted": 0}
            project.repo.upsert_session(
                skey,
                {
                    "session_id": ctx.session_id,
                    "status": "abandoned" if reason == "recovered" else "completed",
                    "ended_at": now_dt(),
                },
            )
            return {"session_id": ctx.session_id, "promoted": 0, "note": "no session data"}
        started_at = reg.started_at if reg is not None else None
        if started_at is None:  # the summary's id needs a run start that a retry sees too
            started_at = now_dt()
            project.repo.upsert_session(skey, {"session_id": ctx.session_id, "started_at": started_at})
        session = svc.handle(ctx, "session")
        cfg = svc.config(ctx.project_root)
        rows = session.repo.all_memories()
        promoted, merged, skipped = [], 0, 0
        for row in rows:
            key = row["id"]
            if not _qualifies(row, cfg):
                skipped += 1
                continue
            res = promote_row(svc, session, key, row, project, reason=reason)
            promoted.append(res["target_id"])
            merged += res["action"] == "merged"
        text = summary or _auto_summary(rows)
        summary_id = None
        if text:
            # One summary per session, whatever happens: its id is derived from the session, so
            # a resent SessionEnd, a replay from the write queue or a second run after a crash
            # (summary committed, session not yet dropped) finds it and stores nothing.
            stored = svc.store(
                ctx,
                content=text,
                type="episodic",
                scope="project",
                importance=0.4,
                category="session_summary",
                tags=["session-summary"],
                source={"hook": "SessionEnd", "session_id": ctx.session_id},
                dedup=False,
                request_id=summary_memory_key(project.db, ctx.session_id, iso(started_at)),
            )
            summary_id = stored["memory_id"]
        candidates = lifecycle.queue_user_candidates(svc, project, cfg)
        project.repo.upsert_session(
            skey,
            {
                "session_id": ctx.session_id,
                "status": "abandoned" if reason == "recovered" else "completed",
                "ended_at": now_dt(),
                "memories_promoted": len(promoted),
                "summary": text or None,
            },
        )
        svc.registry.drop_session(ctx.project_root, ctx.session_id)
    return {
        "session_id": ctx.session_id,
        "promoted": len(promoted),
        "merged": merged,
        "not_promoted": skipped,
        "summary_memory_id": summary_id,
        "user_promotion_candidates": candidates,
    }


def summary_memory_key(project_db: str, session_id: str, run_started: str | None) -> str:
    """The ULID of a session run's summary memory: a function of the project, the session and
    when this run started (a resumed session is a new run) only; SHA-256 in Crockford base32."""
    import hashlib

    seed = f"session-summary\x00{project_db}\x00{session_id}\x00{run_started or ''}"
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:16], "big")
    value &= (1 << 125) - 1  # 26 base32 characters hold 130 bits; a ULID's first character is 0-7
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def _qualifies(row: dict[str, Any], cfg) -> bool:
    """DECISIONS.md: not working; importance >= 0.5 OR access_count >= 2; explicit choice wins."""
    meta = row.get("metadata") or {}
    if row.get("memory_type") == "working" or row.get("status") == "forgotten":
        return False
    if meta.get("promote") is False:
        return False
    if meta.get("promote") is True:
        return True
    return (
        float(row.get("importance", 0)) >= cfg.promote_session_min_importance
        or int(row.get("access_count", 0)) >= cfg.promote_session_min_access
    )


def _auto_summary(rows: list[dict[str, Any]]) -> str:
    """A plain, factual summary of what a session stored (Claude may pass a better one)."""
    live = [r for r in rows if r.get("status") != "forgotten" and r.get("memory_type") != "working"]
    if not live:
        return ""
    counts: dict[str, int] = {}
    for r in live:
        counts[r["memory_type"]] = counts.get(r["memory_type"], 0) + 1
    live.sort(key=lambda r: (-float(r.get("importance", 0)), to_epoch(r.get("created_at"))))
    started = min(to_epoch(r.get("created_at")) for r in live)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    lines = [
        f"Session of {when}: " + ", ".join(count_phrase(n, f"{t} memory") for t, n in sorted(counts.items())) + "."
    ]
    for r in live[:SUMMARY_ITEMS]:
        lines.append(f"- {clip_words(r.get('summary') or r.get('content') or '', 160)}")
    return "\n".join(lines)
