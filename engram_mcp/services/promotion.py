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

import hashlib
import logging
import re
import time
from datetime import datetime
from typing import Any

from engram_mcp.core.capture_shapes import ENDED_BY, ENDED_KEY, ENDED_SAID, SWAPS_KEY
from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.ids import CROCKFORD, format_memory_id, parse_memory_id, session_db_name
from engram_mcp.core.scope_words import THIS_PROJECT
from engram_mcp.core.vocabulary import PERSISTENT_SCOPES, SCOPES
from engram_mcp.index.scoring import to_epoch
from engram_mcp.services import context, fact_diff, graph, lifecycle
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.fact_diff import (
    about_same,
    displacements,
    fact_tokens,
    formed_apart,
    outdates,
    qualified_apart,
    reassigned,
    retires,
)
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.links import link_memories, supersede
from engram_mcp.services.recall import recall
from engram_mcp.services.records import (
    MAX_REASON_CHARS,
    MAX_TAGS,
    check_enum,
    clean_free_text,
    clean_object,
    clip_words,
    count_phrase,
    findings_summary,
    is_foreign,
    iso,
    now_dt,
    origin_of,
)
from engram_mcp.services.sightings import note_project_sighting
from engram_mcp.services.store import store as store_memory

log = logging.getLogger("engram.promotion")
SCOPE_RANK = {scope: rank for rank, scope in enumerate(SCOPES)}  # broader scopes rank higher
SUMMARY_ITEMS = 8
#: Hook captures that stay scratch of their session (see context.SCRATCH_CATEGORIES).
SCRATCH_CATEGORIES = frozenset({"file_change", "error"})


def promote(
    access: ScopeAccess, ctx: RequestContext, memory_id: str, target_scope: str, reason: str | None = None
) -> dict[str, Any]:
    """Explicit promotion of a memory to a broader scope (the MCP tool's): a teammate's file or
    an import never goes to the user scope this way (`check_user_scope`)."""
    return _promote(access, ctx, memory_id, target_scope, reason, by_user=False)


def promote_by_user(
    access: ScopeAccess, ctx: RequestContext, memory_id: str, target_scope: str, reason: str | None = None
) -> dict[str, Any]:
    """The user's own promotion (`engram promote`), the one way a teammate's file or an import
    reaches the user scope."""
    return _promote(access, ctx, memory_id, target_scope, reason, by_user=True)


def _promote(
    access: ScopeAccess, ctx: RequestContext, memory_id: str, target_scope: str, reason: str | None, *, by_user: bool
) -> dict[str, Any]:
    check_enum(target_scope, PERSISTENT_SCOPES, "target_scope")
    findings: list = []
    reason = clean_free_text(
        reason, findings, "reason", limit=MAX_REASON_CHARS
    )  # kept in the chain and the log: redacted
    with access.lock:
        copies = access.locate(ctx, memory_id)
        if not copies:
            raise InvalidInput(f"No memory {memory_id}; use recall_memories to find one.", field="memory_id")
        narrower = [c for c in copies if SCOPE_RANK[c.handle.scope] < SCOPE_RANK[target_scope]]
        if not narrower:
            have = ", ".join(c.handle.scope for c in copies)
            raise InvalidInput(
                f"{memory_id} is already in scope {have}; target_scope must be broader than its current scope",
                field="target_scope",
            )
        src = _broadest_source(access, ctx, narrower)
        if src.row.get("memory_type") == "working":
            raise InvalidInput("working memories are scratch space and are never promoted", field="memory_id")
        dst = access.handle(ctx, target_scope)
        result = promote_row(access, src.handle, src.key, src.row, dst, reason=reason or "explicit", by_user=by_user)
    return {
        "memory_id": format_memory_id(src.key),
        "previous_scope": src.handle.scope,
        "new_scope": target_scope,
        "reason": reason,
        **result,
        "redactions": findings_summary(findings),
    }


def _broadest_source(access: ScopeAccess, ctx: RequestContext, narrower: list) -> Any:
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
            twin = access.locate(ctx, step["memory_id"], scopes=("project",))
            if twin:
                return twin[0]
    return src


#: Origins whose text reaches the user scope (every project) only by the user's own hand: a
#: repository's file is the repository's text (a clone is untrusted, and the file may ask Claude
#: to promote it), an import is another tool's. The user's sync folder is already theirs.
USER_ONLY_ORIGINS = ("team-file", "import")


def check_user_scope(row: dict[str, Any], dst_scope: str, *, by_user: bool) -> None:
    """Refuse to carry a teammate's or an import's memory into the user scope unless the user
    asked (`engram promote ID user`): not Claude's tool call, not an automatic promotion."""
    if dst_scope != "user" or by_user:
        return
    origin = origin_of(row.get("source"))
    if origin.get("kind") not in USER_ONLY_ORIGINS:
        return
    mid = format_memory_id(str(row.get("id") or "")) if row.get("id") else "this memory"
    what = "a team file" if origin["kind"] == "team-file" else "an import"
    raise InvalidInput(
        f"{mid} came from {what}, not from the user: only the user can carry it into every project, "
        f"by running `engram promote {mid} user` themselves",
        field="target_scope",
    )


def promote_row(
    access: ScopeAccess,
    src: ScopeHandle,
    key: str,
    row: dict[str, Any],
    dst: ScopeHandle,
    *,
    reason: str,
    by_user: bool = False,
) -> dict[str, Any]:
    """Copy or merge one memory into `dst`; idempotent (see module docstring). A team file's or
    an import's memory reaches the user scope only `by_user` (`check_user_scope`)."""
    check_user_scope({**row, "id": key}, dst.scope, by_user=by_user)
    mid = format_memory_id(key)
    done = dst.repo.promotions_of(mid)
    if done:
        target = done[0].target_id or mid
        _carry_links(access, src, key, dst, parse_memory_id(target))  # a crash may have come between
        _mark_source(access, src, key, row, dst.scope, target)
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
    twin = access.find_twin(
        dst, row.get("content", ""), vec, access.config(dst.project_root or src.project_root).store_dedup_similarity
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
            new = access.editable(trow)
            new["access_count"] = int(trow.get("access_count", 0)) + max(1, int(row.get("access_count", 0)))
            new["importance"] = max(float(trow.get("importance", 0.5)), float(row.get("importance", 0.5)))
            new["tags"] = list(dict.fromkeys(list(trow.get("tags") or []) + list(row.get("tags") or [])))[:MAX_TAGS]
            new["last_accessed_at"] = now_dt()
            new["confidence"] = min(1.0, float(trow.get("confidence", 0.7)) + 0.05)
            new["promotion_chain"] = list(trow.get("promotion_chain") or []) + [
                {
                    **entry,
                    "action": "merged",
                    "similarity": round(similarity, 4),
                    "origin": origin_of(row.get("source")),
                }
            ]
            if new.get("status") in ("consolidated", "archived"):
                new["status"] = "active"
            _replace_with_log(
                access, dst, tkey, trow, new, {**log_entry, "action": "merged", "target_id": format_memory_id(tkey)}
            )
            target = format_memory_id(tkey)
            action = "merged"
    if twin is None:
        record = {k: v for k, v in access.editable(row).items() if v is not None}
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
    _carry_links(access, src, key, dst, parse_memory_id(target))
    if dst.scope == "project":
        note_project_sighting(access, dst, parse_memory_id(target))
    _mark_source(access, src, key, row, dst.scope, target)
    return {"action": action, "target_id": target}


def _carry_links(access: ScopeAccess, src: ScopeHandle, key: str, dst: ScopeHandle, target: str) -> None:
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
        link_memories(dst, frm, to, link.relation_type, float(link.strength or 0.5))


def _promoted_key(dst: ScopeHandle, key: str) -> str | None:
    """Where memory `key` lives in `dst`: same id, or the twin it merged into; None if absent."""
    if dst.index.slot_of(key) is not None:
        return key
    done = dst.repo.promotions_of(format_memory_id(key))
    return parse_memory_id(done[0].target_id) if done and done[0].target_id else None


def _replace_with_log(access: ScopeAccess, h: ScopeHandle, key: str, old: dict, new: dict, log_entry: dict) -> None:
    """Merge update + history + promotion_log in one transaction."""
    new["version"] = int(old.get("version", 1)) + 1
    new["updated_at"] = now_dt()
    snapshot = {k: v for k, v in access.editable(old).items() if k != "embedding"}
    record = {k: v for k, v in new.items() if v is not None}
    with h.repo.atomic() as tx:
        tx.add_history(key, version=int(old.get("version", 1)), change="promotion_merge", snapshot=snapshot)
        tx.replace(key, record)
        tx.log_promotion(log_entry)
    h.index.upsert({**record, "id": key})


def _mark_source(access: ScopeAccess, src: ScopeHandle, key: str, row: dict, scope: str, target: str) -> None:
    meta = dict(row.get("metadata") or {})
    promoted = list(meta.get("promoted_to") or [])
    if any(p.get("scope") == scope for p in promoted):
        return
    promoted.append({"scope": scope, "memory_id": target, "at": iso(now_dt())})
    meta["promoted_to"] = promoted
    new = access.editable(row)
    new["metadata"] = meta
    access.write_update(src, key, row, new, change="promote")


def _copy_mentions(src: ScopeHandle, dst: ScopeHandle, src_key: str, dst_key: str) -> None:
    ents = [
        {"name": name, "type": r.entity_type, "relationship": r.relationship or "mentions"}
        for r in src.repo.mentions_of(src_key)
        if (name := r.name)
    ]
    if ents:
        graph.link_entities(dst, dst_key, ents)


# ------------------------------------------------------------------ session lifecycle
def session_key(session_id: str) -> str:
    return session_db_name(session_id)


def session_start(access: ScopeAccess, ctx: RequestContext, info: dict[str, Any] | None = None) -> dict[str, Any]:
    """Open or resume the session scope; recover abandoned sessions; maintain when due."""
    if not ctx.session_id:
        raise InvalidInput("session_start needs a session_id", field="session_id")
    info = _session_info(info)
    with access.lock:
        project = access.handle(ctx, "project")
        skey = session_key(ctx.session_id)
        existing = project.repo.session(skey)
        fields = {"session_id": ctx.session_id, "status": "active", "last_seen_at": now_dt(), "info": info}
        if existing is None or existing.status != "active":  # a new run (a resumed session too): its own summary
            fields["started_at"] = now_dt()
        project.repo.upsert_session(skey, fields)
        access.handle(ctx, "session")
        recovered = recover_abandoned(access, ctx)
        maintenance = lifecycle.maintain_if_due(access, ctx)
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


def recover_abandoned(access: ScopeAccess, ctx: RequestContext) -> list[dict[str, Any]]:
    """End sessions a crash left behind: registry says active but silent for too long,
    or a session database with no registry entry at all."""
    cfg = access.config(ctx.project_root)
    project = access.handle(ctx, "project")
    cutoff = time.time() - cfg.abandoned_session_hours * 3600.0
    out = []
    active = project.repo.sessions_with_status("active")
    known = {r.session_id for r in active}
    stale = [r.session_id for r in active if r.session_id != ctx.session_id and to_epoch(r.last_seen_at) < cutoff]
    for db in access.registry.session_databases(ctx.project_root):
        sid_guess = db[2:]
        if sid_guess.replace("_", "-") == ctx.session_id or sid_guess == ctx.session_id:
            continue
        if not any(session_key(s) == db for s in known if s):
            stale.append(_session_id_from_db(project, db))
    for sid in dict.fromkeys(s for s in stale if s):
        try:
            res = session_end(access, RequestContext(ctx.project_root, sid), reason="recovered")
            out.append({"session_id": sid, "promoted": res.get("promoted", 0)})
        except Exception as exc:  # one broken session must not block the others
            log.exception("recovering session %s", sid)
            out.append({"session_id": sid, "error": str(exc)[:200]})
    return out


def _session_id_from_db(project: ScopeHandle, db: str) -> str:
    return db[2:]


def session_end(
    access: ScopeAccess, ctx: RequestContext, *, summary: str | None = None, reason: str = "session_end"
) -> dict[str, Any]:
    """Promote session -> project, record project -> user candidates, keep a summary, drop the session."""
    if not ctx.session_id:
        raise InvalidInput("session_end needs a session_id", field="session_id")
    summary = clean_free_text(summary, [], "summary", limit=4000)  # also kept in session_registry: redacted first
    with access.lock:
        project = access.handle(ctx, "project")
        skey = session_key(ctx.session_id)
        reg = project.repo.session(skey)
        dbs = access.registry.session_databases(ctx.project_root)
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
        session = access.handle(ctx, "session")
        cfg = access.config(ctx.project_root)
        rows = session.repo.all_memories()
        promoted, merged, skipped = [], 0, 0
        target_of: dict[str, str] = {}
        written = _written_by_claude_since(access, ctx, started_at)
        for row in rows:
            key = row["id"]
            if not _qualifies(row, cfg) or _drafted_and_written(session, row, written):
                skipped += 1
                continue
            res = promote_row(access, session, key, row, project, reason=reason)
            promoted.append(res["target_id"])
            target_of[key] = res["target_id"]
            merged += res["action"] == "merged"
            meta = row.get("metadata") or {}
            user_target = (
                _promote_to_user(access, ctx, project, res["target_id"]) if meta.get("promote_to") == "user" else None
            )
            _link_replaced(access, ctx, meta.get("replaces"), {"project": res["target_id"], "user": user_target})
        _review_replacements(access, ctx, written, started_at)
        _note_ended_values(
            access,
            ctx,
            _session_swaps(rows),
            [(w[0], w[1]) for w in written] + [("project", t) for t in target_of.values()],
            started_at,
        )
        _carry_changes_of_user_values(access, ctx, written, started_at)
        quoted = _summary_rows(rows, target_of)
        text = summary or _auto_summary(quoted)
        derived_from = [] if summary else [target_of[r["id"]] for r in quoted[:SUMMARY_ITEMS]]
        summary_id = None
        if text:
            # One summary per session, whatever happens: its id is derived from the session, so
            # a resent SessionEnd, a replay from the write queue or a second run after a crash
            # (summary committed, session not yet dropped) finds it and stores nothing.
            stored = store_memory(
                access,
                ctx,
                content=text,
                type="episodic",
                scope="project",
                importance=0.4,
                category="session_summary",
                tags=["session-summary"],
                source={"hook": "SessionEnd", "session_id": ctx.session_id},
                metadata={"derived_from": derived_from} if derived_from else None,
                dedup=False,
                request_id=summary_memory_key(project.db, ctx.session_id, iso(started_at)),
            )
            summary_id = stored["memory_id"]
        candidates = lifecycle.queue_user_candidates(access, project, cfg)
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
        access.registry.drop_session(ctx.project_root, ctx.session_id)
    return {
        "session_id": ctx.session_id,
        "promoted": len(promoted),
        "merged": merged,
        "not_promoted": skipped,
        "summary_memory_id": summary_id,
        "user_promotion_candidates": candidates,
    }


#: A hook's draft of a turn's knowledge this close (cosine) to a memory Claude or the user stored
#: during the same session is that memory written better: the draft is not promoted beside it.
DRAFT_TWIN_SIMILARITY = 0.6
TURN_KNOWLEDGE_CATEGORY = "turn_knowledge"


def _written_by_claude_since(access: ScopeAccess, ctx: RequestContext, since: Any) -> list[tuple[str, str, str, Any]]:
    """(scope, memory id, content, vector) of the memories Claude or the user stored in the project
    and user scopes since the session began (a store the Stop hook's note asked for lands there)."""
    start = to_epoch(since)
    out = []
    for scope in PERSISTENT_SCOPES:
        h = access.handle(ctx, scope)
        for r in h.repo.all_memories():
            if to_epoch(r.get("created_at")) >= start and origin_of(r.get("source")).get("kind") in ("claude", "user"):
                vec = h.index.vector_of_key(r["id"])
                if vec is not None and r.get("status") != "forgotten":
                    out.append((scope, format_memory_id(r["id"]), str(r.get("content") or ""), vec))
    return out


def _drafted_and_written(session: ScopeHandle, row: dict[str, Any], written: list[tuple[str, str, str, Any]]) -> bool:
    """Whether `row` is the Stop hook's draft of knowledge that Claude then stored itself."""
    if row.get("category") != TURN_KNOWLEDGE_CATEGORY or not written:
        return False
    vec = session.index.vector_of_key(row["id"])
    return vec is not None and any(float(vec @ w[3]) >= DRAFT_TWIN_SIMILARITY for w in written)


#: Values a memory records as ended (by its session's edits or by name).
MAX_ENDED_VALUES = 8


def _session_swaps(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The values this session's edits wrote over, each with the value that took its place."""
    out: dict[str, str] = {}
    for row in rows:
        swaps = (row.get("metadata") or {}).get(SWAPS_KEY)
        for old, new in swaps.items() if isinstance(swaps, dict) else ():
            if isinstance(old, str) and isinstance(new, str):
                out.setdefault(old, new)
    return out


def _note_ended_values(
    access: ScopeAccess,
    ctx: RequestContext,
    swaps: dict[str, str],
    ids: list[tuple[str, str]],
    since: Any,
) -> None:
    """Record on each memory this session kept (`ids`: scope, memory id) the values it ended, each
    with its sentence saying what came instead (ENDED_KEY), so that a line of any older memory
    still stating one carries that sentence (`context.corrections`):

    - a value its session's edits wrote over, when it states the new one
      (`fact_diff.values_ended_by_edits`): a change made in a file is seldom said in words. "The
      public feed goes to grt-open-data now" names no old bucket, the edit of the build script
      does, and an older note treating the old bucket as production read as current all month
      (the month replay's sixth world: 15 of 22 turns);
    - a tool or a thing it ends by name in an older memory (`fact_diff.ended_by_name`: "`mise
      install` in each repo" where that one ran `asdf install`): other memories name the tool in
      passing ("installed it with asdf") and share no words with the change. Names only: a
      number or an identifier one memory ended may be another's own value (a port of another
      service)."""
    start = to_epoch(since)
    for scope, mid in dict.fromkeys(ids):
        h = access.handle(ctx, scope)
        key = parse_memory_id(mid)
        row = h.repo.get(key)
        if row is None:
            continue
        content = str(row.get("content") or "")
        ended = {
            value: {ENDED_BY: by, ENDED_SAID: said}
            for value, (by, said) in {
                **_ended_by_name_before(access, ctx, mid, content, start),
                **fact_diff.values_ended_by_edits(content, swaps),
            }.items()
        }
        meta = dict(row.get("metadata") or {})
        given = meta.get(ENDED_KEY)
        known: dict[str, Any] = given if isinstance(given, dict) else {}
        merged = dict(list({**known, **ended}.items())[:MAX_ENDED_VALUES])
        if not ended or merged == known:
            continue
        meta[ENDED_KEY] = merged
        new = access.editable(row)
        new["metadata"] = meta
        access.write_update(h, key, row, new, change="update")


def _ended_by_name_before(
    access: ScopeAccess, ctx: RequestContext, mid: str, content: str, start: float
) -> dict[str, tuple[str, str]]:
    """{name: ("", the sentence of `content` ending it)} over the older stored memories near
    `content` (what came instead is in the sentence, not one value); none without a search when
    `content` states no change (most memories)."""
    found: dict[str, tuple[str, str]] = {}
    if not fact_diff.states_a_change(content):
        return found
    for m in _stored_neighbours(access, ctx, content):
        if m["id"] == mid or _iso_epoch(m.get("created_at")) >= start:
            continue
        old = str(m.get("content") or "")
        names = {t for t, kind in fact_tokens(old).items() if kind == fact_diff.NAME}
        for value, sentence in fact_diff.ended_by_name(old, content).items():
            if value in names:
                found.setdefault(value, ("", sentence))
    return found


def _review_replacements(
    access: ScopeAccess, ctx: RequestContext, written: list[tuple[str, str, str, Any]], since: Any
) -> int:
    """What Claude stored this session that says an older value changed supersedes the older memory
    (as the hook's own captures do): a correction stored without `supersedes` would otherwise leave
    the stale fact beside it in every later context. Returns the links written."""
    start = to_epoch(since)
    mine = frozenset(w[1] for w in written)
    linked = 0
    for scope, new_id, content, _vec in written:
        for old_id in replaced_memories(access, ctx, content, exclude=mine, before=start):
            if scope == "project":
                linked += _replace_in_user_scope(access, ctx, new_id, old_id)
            for where in {scope, *PERSISTENT_SCOPES}:
                h = access.handle(ctx, where)
                if h.index.slot_of(parse_memory_id(new_id)) is not None:
                    olds = [old_id, *_summaries_quoting(h, [old_id])]
                    linked += sum(supersede(h, parse_memory_id(new_id), parse_memory_id(o)) for o in olds)
    return linked


def _replace_in_user_scope(access: ScopeAccess, ctx: RequestContext, new_id: str, old_id: str) -> int:
    """A project memory that replaces a user memory ("we've moved off pass for secrets" after "my
    secrets are in pass") has proved general: what it replaces held in every project, so it goes on
    to the user scope and supersedes the old memory there. Left in the project, the user memory
    went on stating the retired value in every other project, and in this one. Returns the links
    written (0 when the old memory is not the user's).

    Not when the new memory names this repository as its scope ("This repository uses npm instead
    of pnpm"): that is this project's exception, and the user's own way ("I use pnpm for all my
    JS projects") still holds everywhere else (red-team finding: an honest repository's fact
    replaced the user's preference in every project)."""
    user = access.handle(ctx, "user")
    if user.index.slot_of(parse_memory_id(old_id)) is None:
        return 0
    row = access.handle(ctx, "project").repo.get(parse_memory_id(new_id))
    if row is None or THIS_PROJECT.search(str(row.get("content") or "")):
        return 0
    target = _promote_to_user(access, ctx, access.handle(ctx, "project"), new_id)
    if target is None or target == old_id:
        return 0
    olds = [old_id, *_summaries_quoting(user, [old_id])]
    return sum(supersede(user, parse_memory_id(target), parse_memory_id(o)) for o in olds)


#: Cosine from a memory of the user's to a project memory that changes one of its values, at
#: least: the change is about the same thing, not a word in passing. On the month worlds, the
#: user's own ways changed in a project ("I moved the laptop to mise" beside "all my runtimes are
#: on asdf", "secrets come from SOPS now" beside "I run anything through `op run`") sit at
#: 0.30-0.42 from the memory they change.
CARRY_MIN_SIMILARITY = 0.25
CARRY_REASON = "changes a value of the user's memory"


def _carry_changes_of_user_values(
    access: ScopeAccess, ctx: RequestContext, written: list[tuple[str, str, str, Any]], since: Any
) -> int:
    """A project memory Claude wrote this session that changes a value one of the user's memories
    states (the evidence a line's change note is written on, `fact_diff.displacements`: "I moved
    the laptop to mise" for "all my runtimes are on asdf") goes on to the user scope too. The
    user's memory is shown in every project; its change, left in this one, was noted on its line
    here only, and every other project went on showing the retired tool as current. Unlike a full
    replacement (`_review_replacements`) nothing is superseded on this evidence: the older memory
    may hold more than the changed value, and its lines carry the change wherever they are shown.
    Not a memory that names this repository as its scope, which is this project's exception
    (`_replace_in_user_scope`). Returns how many memories were carried."""
    start = to_epoch(since)
    project = access.handle(ctx, "project")
    carried = 0
    for scope, new_id, content, _vec in written:
        if scope != "project" or THIS_PROJECT.search(content):
            continue
        if any(
            float(m.get("similarity") or 0.0) >= CARRY_MIN_SIMILARITY
            and _iso_epoch(m.get("created_at")) < start
            and displacements(str(m.get("content") or ""), content)
            for m in _stored_neighbours(access, ctx, content, scope="user")
        ):
            carried += _promote_to_user(access, ctx, project, new_id, reason=CARRY_REASON) is not None
    return carried


def _link_replaced(access: ScopeAccess, ctx: RequestContext, replaced: Any, new_ids: dict[str, str | None]) -> None:
    """A promoted memory that replaces older ones (`metadata.replaces`, set when a hook captured
    the user saying a value changed) supersedes each of them in every scope both now live in."""
    if not isinstance(replaced, list):
        return
    for scope, new_id in new_ids.items():
        if not new_id:
            continue
        h = access.handle(ctx, scope)
        olds = [o for o in replaced if isinstance(o, str) and o.startswith("memory:")]
        for old_id in olds + _summaries_quoting(h, olds):
            supersede(h, parse_memory_id(new_id), parse_memory_id(old_id))


def _summaries_quoting(h: ScopeHandle, memory_ids: list[str]) -> list[str]:
    """The session summaries of a scope that quote one of `memory_ids`: replaced with them, so no
    recall finds the old value through a summary."""
    if not memory_ids:
        return []
    wanted = set(memory_ids)
    return [
        format_memory_id(r["id"])
        for r in h.repo.all_memories()
        if r.get("category") == "session_summary" and wanted & set((r.get("metadata") or {}).get("derived_from") or [])
    ]


def _promote_to_user(
    access: ScopeAccess,
    ctx: RequestContext,
    project: ScopeHandle,
    memory_id: str,
    *,
    reason: str = "stated for every project",
) -> str | None:
    """A session memory the user stated for every project (a hook saw "in any repo", "I prefer"),
    or one that changes what the user's memory says (`reason` tells which): on to the user scope
    too, so the next session in another project has it. Failing here must
    not fail the session's end: the project copy is kept either way. A hook's capture holds only
    the user's words when it is to go there (`hooks.turn_knowledge_memory`): an answer can repeat
    a repository's text."""
    key = parse_memory_id(memory_id)
    row = project.repo.get(key)
    if row is None:
        return None
    try:
        done = promote_row(access, project, key, row, access.handle(ctx, "user"), reason=reason)
        return str(done["target_id"])
    except Exception:
        log.exception("promoting %s to the user scope", memory_id)
        return None


#: Origins of a memory that the user's own words may carry on to the user scope: what Claude or the
#: user stored in the turn. A hook's capture goes there at session end by its own metadata, and a
#: repository's file or an import only by the user's hand (`USER_ONLY_ORIGINS`).
STATED_ORIGINS = ("claude", "user")


def promote_stated(access: ScopeAccess, ctx: RequestContext, memory_ids: list[str]) -> dict[str, Any]:
    """Carry the project memories Claude stored in a turn on to the user scope, because the user
    said in that turn that it holds in every project (the Stop hook read their words:
    `stop_trigger.for_every_project`). Claude chose the project scope; the user's "in all my repos"
    or "my commit messages" says the fact is needed in the other projects too, where the project
    copy is never seen. The project copy stays, and a memory carried on already is not copied
    again (`promote_row` is idempotent). Only memories of this project that Claude or the user
    stored; anything else is skipped, never an error (the ids come from a transcript)."""
    promoted, skipped = [], 0
    with access.lock:
        project = access.handle(ctx, "project")
    for memory_id in memory_ids:
        try:
            key = parse_memory_id(memory_id)
        except InvalidInput:
            skipped += 1
            continue
        with access.lock:
            row = project.repo.get(key)
        if (
            row is None
            or row.get("status") == "forgotten"
            or origin_of(row.get("source")).get("kind") not in STATED_ORIGINS
        ):
            skipped += 1
            continue
        try:
            done = _promote(access, ctx, format_memory_id(key), "user", "stated for every project", by_user=False)
        except InvalidInput:  # in the user scope already
            skipped += 1
            continue
        if done.get("action") == "already_promoted":
            skipped += 1
        else:
            promoted.append(done["memory_id"])
    return {"promoted": promoted, "skipped": skipped}


def summary_memory_key(project_db: str, session_id: str, run_started: str | None) -> str:
    """The ULID of a session run's summary memory: a function of the project, the session and
    when this run started (a resumed session is a new run) only; SHA-256 in Crockford base32."""
    seed = f"session-summary\x00{project_db}\x00{session_id}\x00{run_started or ''}"
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:16], "big")
    value &= (1 << 125) - 1  # 26 base32 characters hold 130 bits; a ULID's first character is 0-7
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def _qualifies(row: dict[str, Any], cfg) -> bool:
    """Session -> project (docs/decisions.md): not working; importance >= 0.5 OR access_count >= 2; explicit choice wins."""
    meta = row.get("metadata") or {}
    if row.get("memory_type") == "working" or row.get("status") == "forgotten":
        return False
    if row.get("category") in SCRATCH_CATEGORIES or meta.get("scratch") is True:
        return False  # an edit or a command's error: the running session's scratch, whatever its access count
    if meta.get("promote") is False:
        return False
    if meta.get("promote") is True:
        return True
    return (
        float(row.get("importance", 0)) >= cfg.promote_session_min_importance
        or int(row.get("access_count", 0)) >= cfg.promote_session_min_access
    )


def _summary_rows(rows: list[dict[str, Any]], target_of: dict[str, str]) -> list[dict[str, Any]]:
    """What a session summary may quote: what the session learned or decided (its memories that
    were promoted: stored facts, the Stop hook's turn knowledge), never its scratch (edits, the
    commands that ran); most important first. Each is quoted with the project memory it became,
    so the summary is hidden once one of them is superseded (`context.summary_current`)."""
    live = [
        r
        for r in rows
        if r["id"] in target_of
        and r.get("status") != "forgotten"
        and r.get("memory_type") != "working"
        and r.get("category") not in SCRATCH_CATEGORIES
    ]
    live.sort(key=lambda r: (-float(r.get("importance", 0)), to_epoch(r.get("created_at"))))
    return live


def _auto_summary(live: list[dict[str, Any]]) -> str:
    """A plain, factual summary of what a session learned (Claude may pass a better one); empty
    when it learned nothing: a list of the commands that ran serves no later session."""
    if not live:
        return ""
    counts: dict[str, int] = {}
    for r in live:
        counts[r["memory_type"]] = counts.get(r["memory_type"], 0) + 1
    started = min(to_epoch(r.get("created_at")) for r in live)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started))
    lines = [
        f"Session of {when}, learned: "
        + ", ".join(count_phrase(n, f"{t} memory") for t, n in sorted(counts.items()))
        + "."
    ]
    for r in live[:SUMMARY_ITEMS]:
        lines.append(f"- {clip_words(r.get('summary') or r.get('content') or '', 160)}")
    return "\n".join(lines)


#: How close (cosine) an older memory must be to a turn's knowledge to be the one it replaces.
REPLACE_MIN_SIMILARITY = 0.45
REPLACE_CANDIDATES = 8
#: The words English uses to say a value was replaced ("moved to 9443", "we've left X", "X is closed").
CHANGE_WORDS = frozenset(
    "moved moves moving now switched switching replaced replacing instead longer left dropped dropping "
    "retired deprecated closed changed changes migrated renamed upgraded goes rid".split()
)
_WORD = re.compile(r"[\w']+")
_SENTENCES = re.compile(r"(?<=[.!?;:])\s+|\n+")


def replaced_memories(
    access: ScopeAccess,
    ctx: RequestContext,
    content: str,
    *,
    exclude: frozenset[str] = frozenset(),
    before: float | None = None,
) -> list[str]:
    """The older memories a turn's knowledge replaces: close in meaning, and the new text names one
    of the old memory's values beside a change word and a new value of the same kind ("8443 is
    closed, the API listens on 9443"; "we've left Doppler, secrets come from Infisical").

    The user said so in their own words, so a stale fact is not left to compete with its
    replacement; a text that only reads alike (no value named, no change word) replaces nothing."""
    return [
        m["id"]
        for m in _stored_neighbours(access, ctx, content)
        if m["id"] not in exclude
        and (before is None or _iso_epoch(m.get("created_at")) < before)
        and float(m.get("similarity") or 0.0) >= REPLACE_MIN_SIMILARITY
        and supersedes_fact(str(m.get("content") or ""), content, float(m.get("similarity") or 0.0))
    ]


def _stored_neighbours(
    access: ScopeAccess, ctx: RequestContext, text: str, scope: str | None = None
) -> list[dict[str, Any]]:
    """The memories recall finds for `text` (in `scope`, else every scope) that a turn can replace
    or change: the user's own project and user knowledge, not session memory, scratch, a session
    summary or foreign text."""
    try:
        found = recall(access, ctx, query=text, scope=scope, limit=REPLACE_CANDIDATES, strengthen=False)["memories"]
    except StoreUnavailable:
        return []
    return [
        m
        for m in found
        if m.get("scope") != "session"
        and not context.is_scratch(m)
        and m.get("category") != context.SUMMARY_CATEGORY
        and not is_foreign(m)
    ]


def changed_memories(access: ScopeAccess, ctx: RequestContext, prompt: str, answer: str = "") -> list[dict[str, Any]]:
    """The stored memories a finished turn gave a new value to: related to the turn's words and
    one of their values written over or displaced by one of its kind as a change
    (`_changes_a_value`). "Move it to 03:40 UTC" against "backups run at 01:15 UTC"; `uplink_interval = "10m"`
    against `uplink_interval = "20m"`.

    Looser than `replaced_memories` on purpose: nothing is hidden or linked on this evidence. It
    only tells Claude (the Stop hook's note) that a memory now says something the work changed,
    so the new value gets stored; a turn that changes a remembered value teaches, whatever its
    words (the month worlds' replacements are often an order with no rule or decision word)."""
    text = f"{prompt}\n{answer}".strip()
    return [
        {"id": m["id"]}
        for m in _stored_neighbours(access, ctx, text)
        if _changes_a_value(str(m.get("content") or ""), text, float(m.get("similarity") or 0.0), ordered=prompt)
    ]


def _changes_a_value(old: str, new: str, similarity: float, *, ordered: str = "") -> bool:
    """Whether the turn's words `new` (cosine `similarity` to `old`, at least
    REPLACE_MIN_SIMILARITY) give a value `old` states a new one: a setting of `old` written out
    with another value (`fact_diff.reassigned`), or a value with digits of `old` gone and one of
    its kind that the user named (`ordered`) come in, said as a change (`states_replacement` or
    the injection's own evidence, `fact_diff.outdates`): "Move it to 03:40 UTC" against "backups
    run at 01:15 UTC". Too weak to hide `old`, enough to ask for the new value to be kept; the
    user's words are the gate because an answer says "changed" and "now" of whatever it did."""
    if similarity < REPLACE_MIN_SIMILARITY:
        return False
    if reassigned(old, new):
        return True
    return _a_value_swapped(old, new, ordered) and (states_replacement(old, new) or outdates(old, new, similarity))


def _a_value_swapped(old: str, new: str, ordered: str) -> bool:
    """Whether a value with digits (a time, an address, a port, a size) of `old` is missing from
    `new` while one of its kind that `old` lacks is there, and the user named it (`ordered`):
    "Move it to 03:40 UTC". The answer's own artefacts are no ordered value: "Changed the column,
    generated drizzle/0016_x.sql" names a file a procedure names and a new file, yet changes
    nothing the procedure states. Nor is a value of another thing named alike
    (`fact_diff.qualified_apart`): "Bump the default upload timeout to 20 seconds" against "the
    5 s busy timeout". Nor a number written in another form (`fact_diff.formed_apart`): the same
    order against "the clock starts at 1 Jan 1970"."""
    old_tokens, new_tokens, asked = fact_tokens(old), fact_tokens(new), fact_tokens(ordered)
    gone = [(t, kind) for t, kind in old_tokens.items() if t not in new_tokens and any(c.isdigit() for c in t)]
    came = [
        (t, kind)
        for t, kind in new_tokens.items()
        if t not in old_tokens and t in asked and any(c.isdigit() for c in t)
    ]
    return any(
        kind == was_kind and not qualified_apart(old, was, new, value) and not formed_apart(old, was, new, value)
        for was, was_kind in gone
        for value, kind in came
    )


def _iso_epoch(value: Any) -> float:
    """Seconds since the epoch of a recalled memory's ISO time (its record's datetime as `to_epoch`)."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return float("inf")
    return to_epoch(value)


def supersedes_fact(old: str, new: str, similarity: float) -> bool:
    """Whether `new` (at cosine `similarity` to `old`) supersedes the whole of `old`. All of:

    - `new` names a value of `old` beside a change word and a new value of its kind
      (`states_replacement`: a value of `old` itself changed, not only a value `new` adds);
    - the evidence the injection uses (`fact_diff.outdates`: related by cosine, and a value
      written over or displaced by one of its kind as a change);
    - `old` is about that value (`fact_diff.about_same`: `new` names at least half of `old`'s fact tokens).
      A memory that mentions the value in passing keeps its other facts live (injection appends
      the newer sentence to its line instead)."""
    return states_replacement(old, new) and outdates(old, new, similarity) and about_same(old, new)


def states_replacement(old: str, new: str) -> bool:
    """Whether `new` says that a value of `old` changed: near a change word `old` lacks or a thing
    named as retired (`fact_diff.retires`: "has gone back to IT"), in its sentence or the next or
    previous one, `new` names one of old's fact tokens and a fact token of the same kind that `old`
    lacks. A long text that shares a name with an older one and says "now"
    somewhere else replaces nothing."""
    old_words = {w.lower() for w in _WORD.findall(old)}
    a = fact_tokens(old)
    old_retires = retires(old)
    sentences = [x for x in _SENTENCES.split(new) if x.strip()]
    for i, sentence in enumerate(sentences):
        words = {w.lower() for w in _WORD.findall(sentence)}
        if not ((words - old_words) & CHANGE_WORDS or (not old_retires and retires(sentence))):
            continue
        window = fact_tokens(" ".join(sentences[max(0, i - 1) : i + 2]))
        fresh_kinds = {kind for token, kind in window.items() if token not in a}
        if any(kind in fresh_kinds for token, kind in a.items() if token in window):
            return True
    return False
