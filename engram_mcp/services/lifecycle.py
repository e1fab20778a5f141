"""Decay-driven lifecycle: the maintenance pass and its schedule.

Strength is computed at read time (scoring.py); this pass turns it into states
(docs/decisions.md, "Lifecycle"):
  created -> active         after 1 hour (or at first recall, done by recall itself)
  active -> consolidated    strength < 0.3 and access_count >= 2: queued for the consolidator
  active -> archived        strength < 0.1 and access_count < 2
  consolidated -> archived  strength < 0.1
  archived -> forgotten     strength < 0.01: content and vector cleared (skeleton kept);
                            never in the user scope, which is only ever archived
Durable knowledge (semantic or procedural, importance >= DURABLE_MIN_IMPORTANCE; an episode kept
above the default importance, >= DURABLE_EPISODE_MIN_IMPORTANCE) fades only to
consolidated (at strength < 0.3, whatever its access count): it stays in recall and context, at
lower priority, and is archived or forgotten by decay only after DURABLE_ARCHIVE_AFTER_DAYS
without a recall. Noise (episodic captures, working scratch, unimportant notes) fades as above.
  forgotten (by the user)   purged (content cleared) FORGOTTEN_PURGE_DAYS after forget_memory
Status moves are bookkeeping, not edits, so they set `status_changed_at` and write no
history; a purge clears the content in history too, because forgetting must forget.
Session scopes are never decayed: their memories do not decay during the session.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

import numpy as np

from engram_mcp.core.errors import StoreUnavailable
from engram_mcp.core.vocabulary import DURABLE_TYPES, LIVE_STATUSES, MEMORY_TYPES, PERSISTENT_SCOPES
from engram_mcp.index.scope_index import STATUS_CODE
from engram_mcp.index.scoring import (
    ACTIVATE_AFTER_SECONDS,
    ARCHIVE_BELOW_STRENGTH,
    CONSOLIDATE_BELOW_STRENGTH,
    CONSOLIDATE_MIN_ACCESS,
    DURABLE_ARCHIVE_AFTER_DAYS,
    DURABLE_EPISODE_MIN_IMPORTANCE,
    DURABLE_MIN_IMPORTANCE,
    FORGET_BELOW_STRENGTH,
    SECONDS_PER_DAY,
    decay_factors,
    to_epoch,
)
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.records import now_dt, origin_of
from engram_mcp.services.sightings import Sightings, load_sightings, note_project_sighting, projects_seen

log = logging.getLogger("engram.lifecycle")
FORGOTTEN_PURGE_DAYS = 30
MAINTENANCE_META_KEY = "maintenance"
#: The store engine never frees an overwritten value (storage/compact.py), so reads that
#: strengthen memories and status moves grow the files while the data stays the same size.
#: Maintenance compacts a store once its files are this many times their size after its
#: last compaction (the first maintenance that sees a store compacts it and so sets that
#: size). Issue 15: a simulated month of daily use must stay within 1.5x the loaded size.
COMPACT_GROWTH_RATIO = 1.25
#: Smaller stores are never compacted by maintenance: a rewrite is not worth a few MB.
COMPACT_MIN_BYTES = 4 * 1024 * 1024
COMPACTION_META_KEY = "compaction"
PROJECT_PATH_HINTS = ("/", "\\", ".py", ".ts", ".js", "src/")
PROMOTE_USER_MIN_PROJECTS = 2  # project -> user: "seen in >= 2 projects" (docs/decisions.md)


def maintain_if_due(access: ScopeAccess, ctx: RequestContext) -> dict[str, Any] | None:
    cfg = access.config(ctx.project_root)
    project = access.handle(ctx, "project")
    last = project.repo.meta_get(MAINTENANCE_META_KEY)
    last_ts = to_epoch(last.get("at")) if isinstance(last, dict) else 0.0
    if time.time() - last_ts < cfg.maintenance_interval_hours * 3600.0:
        return None
    return maintain(access, ctx, compact_in_background=True)


def maintain(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    now: float | None = None,
    progress: Callable[[int, int | None, str], None] | None = None,
    compact_in_background: bool = False,
) -> dict[str, Any]:
    """Run the lifecycle pass over the project and user scopes (`progress`: memories done of all, per scope),
    then compact each store that grew past COMPACT_GROWTH_RATIO (`compact_if_grown`). The
    scheduled pass of session start (`maintain_if_due`) compacts in a background thread: a
    large store takes seconds to copy, and the hook that starts a session must not wait."""
    now = time.time() if now is None else now
    report: dict[str, Any] = {}
    with access.lock:
        handles: dict[str, ScopeHandle] = {}
        for scope, h in access.try_scopes(ctx, PERSISTENT_SCOPES):
            if isinstance(h, StoreUnavailable):
                report[scope] = {"error": str(h)[:200]}
            else:
                handles[scope] = h
        total = sum(len(h.index) for h in handles.values())
        done = 0
        for scope, h in handles.items():
            if progress:
                progress(done, total, "maintain")
            report[scope] = _maintain_scope(h, now, on_purge=_sighting_dropper(access, h))
            done += len(h.index)
        if progress:
            progress(total, total, "maintain")
        project = access.handle(ctx, "project")
        project.repo.meta_set(MAINTENANCE_META_KEY, {"at": now_dt(), "report": report})
    if compact_in_background:
        worker = threading.Thread(
            target=_compact_quietly, args=(list(handles.values()),), name="engram-compact", daemon=True
        )
        worker.start()
        return report
    for scope, h in handles.items():  # outside the service lock: a compaction copies while recalls go on
        compacted = compact_if_grown(h, on_start=_announcer(progress, f"compact {scope}"))
        if compacted is not None:
            report[scope]["compaction"] = compacted
    return report


def _announcer(progress: Callable[[int, int | None, str], None] | None, label: str) -> Callable[[], None] | None:
    if progress is None:
        return None
    return lambda: progress(0, None, label)


def _compact_quietly(handles: list[ScopeHandle]) -> None:
    for h in handles:
        try:
            compact_if_grown(h)
        except Exception:  # a background compaction must never kill the daemon; the store is unchanged
            log.exception("background compaction of %s failed", h.label)


def compact_if_grown(h: ScopeHandle, *, on_start: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """Compact the handle's store when its files outgrew COMPACT_GROWTH_RATIO times their size
    after the last compaction (kept in the database's meta); what was done, or None.

    A failed compaction leaves the store as it was (storage/compact.py) and is reported, not
    raised: maintenance goes on.
    """
    size = h.store.size_bytes()
    if size < COMPACT_MIN_BYTES:
        return None
    last = h.repo.meta_get(COMPACTION_META_KEY)
    base = last.get("bytes_after") if isinstance(last, dict) else None
    if isinstance(base, int) and base > 0 and size < base * COMPACT_GROWTH_RATIO:
        return None
    if on_start is not None:
        on_start()  # the copy takes seconds on a large store: say so before it starts
    try:
        done = h.store.compact()
    except StoreUnavailable as exc:
        return {"error": exc.message[:200]}
    h.repo.meta_set(COMPACTION_META_KEY, {"at": now_dt(), "bytes_after": int(done["bytes_after"])})
    return {k: done[k] for k in ("bytes_before", "bytes_after", "seconds")}


def _sighting_dropper(access: ScopeAccess, h: ScopeHandle) -> Callable[[str], None] | None:
    """After a project memory is purged, its cross-project sighting goes too."""
    if h.scope != "project":
        return None

    def drop(key: str) -> None:
        note_project_sighting(access, h, key, drop=True)

    return drop


ENQUEUE_BATCH = 500


def _maintain_scope(h: ScopeHandle, now: float, on_purge=None) -> dict[str, int]:
    idx = h.index
    n = idx.slots.size
    live = idx.slots.live_mask[:n]
    slots = np.flatnonzero(live)
    if slots.size == 0:
        return {}
    half, last, access, importance = idx.decay_inputs(slots)
    strength = importance * decay_factors(half, now - last, access)
    status = idx.cols.status_code[slots]
    created = idx.cols.created_at[slots]
    durable = durable_mask(idx.cols.type_code[slots], importance)
    # Durable knowledge leaves recall by decay only after months unused (module docstring).
    unused_long = (now - last) >= DURABLE_ARCHIVE_AFTER_DAYS * SECONDS_PER_DAY
    may_archive = ~durable | unused_long
    moves: dict[str, list[str]] = {"active": [], "consolidated": [], "archived": [], "forgotten": []}
    to_consolidator: list[str] = []
    for i, slot in enumerate(slots):
        key = idx.live_key(int(slot))
        st, s = int(status[i]), float(strength[i])
        archivable = s < ARCHIVE_BELOW_STRENGTH and bool(may_archive[i])
        if st == STATUS_CODE["created"] and now - created[i] >= ACTIVATE_AFTER_SECONDS:
            st_new = "active"
            if archivable and access[i] < CONSOLIDATE_MIN_ACCESS:
                st_new = "archived"
            moves[st_new].append(key)
        elif st == STATUS_CODE["active"]:
            if s < CONSOLIDATE_BELOW_STRENGTH and access[i] >= CONSOLIDATE_MIN_ACCESS:
                moves["consolidated"].append(key)
                to_consolidator.append(key)
            elif archivable and access[i] < CONSOLIDATE_MIN_ACCESS:
                moves["archived"].append(key)
            elif s < CONSOLIDATE_BELOW_STRENGTH and durable[i]:
                moves["consolidated"].append(key)  # fades, stays in reach; not a consolidator job
        elif st == STATUS_CODE["consolidated"] and archivable:
            moves["archived"].append(key)
        elif st == STATUS_CODE["archived"] and s < FORGET_BELOW_STRENGTH and bool(may_archive[i]) and h.scope != "user":
            moves["forgotten"].append(key)
    for status_name in ("active", "consolidated", "archived"):
        keys = moves[status_name]
        if keys:
            h.repo.set_status(keys, status_name)
            for k in keys:
                idx.set_status(k, status_name)
    _enqueue_many(h, to_consolidator, "decay", 0.5)
    purged = [k for k in moves["forgotten"]]
    purged += _expired_user_forgets(h, now)
    for k in purged:
        purge(h, k)
        if on_purge is not None:
            on_purge(k)
    return {
        "activated": len(moves["active"]),
        "consolidated": len(moves["consolidated"]),
        "archived": len(moves["archived"]),
        "forgotten": len(moves["forgotten"]),
        "purged": len(purged),
    }


def durable_mask(type_codes: np.ndarray, importance: np.ndarray) -> np.ndarray:
    """Which memories are durable knowledge: semantic or procedural, importance >=
    DURABLE_MIN_IMPORTANCE, or episodic, importance >= DURABLE_EPISODE_MIN_IMPORTANCE."""
    codes = np.array([MEMORY_TYPES.index(t) for t in DURABLE_TYPES], dtype=type_codes.dtype)
    episode = type_codes == MEMORY_TYPES.index("episodic")
    return (np.isin(type_codes, codes) & (importance >= DURABLE_MIN_IMPORTANCE)) | (
        episode & (importance >= DURABLE_EPISODE_MIN_IMPORTANCE)
    )


def _expired_user_forgets(h: ScopeHandle, now: float) -> list[str]:
    idx = h.index
    out: list[str] = []
    forgotten = np.flatnonzero(idx.cols.status_code[: idx.slots.size] == STATUS_CODE["forgotten"])
    if forgotten.size == 0:
        return out
    keys = [idx.key_of(int(s)) for s in forgotten]
    for r in h.repo.get_many(k for k in keys if k):
        at = to_epoch(r.get("forgotten_at")) if r.get("forgotten_at") else 0.0
        if r.get("content") != "[forgotten]" and at and now - at >= FORGOTTEN_PURGE_DAYS * 86400:
            out.append(r["id"])
    return out


def purge(h: ScopeHandle, key: str) -> None:
    """Clear a forgotten memory's text everywhere it is kept; keep the skeleton.

    The text lives in the record (content, summary, vector), in the paraphrases that were
    merged into it (metadata.merged[].content) and in every history snapshot; all of it
    goes, in one transaction, because forgetting must forget.
    """
    row = h.repo.get(key)
    if row is None:
        return
    rec = _forgotten_copy({k: v for k, v in row.items() if k != "id"})
    rec.update(status="forgotten", status_changed_at=now_dt())
    rec.setdefault("forgotten_at", now_dt())
    rec = {k: v for k, v in rec.items() if v is not None}
    history = h.repo.history_of(key)
    with h.repo.atomic() as tx:
        tx.replace(key, rec)
        for entry in history:
            snapshot = {k: v for k, v in _forgotten_copy(dict(entry.snapshot)).items() if v is not None}
            tx.set_history_snapshot(entry.id, snapshot)
    h.index.upsert({**rec, "id": key})


def _forgotten_copy(rec: dict[str, Any]) -> dict[str, Any]:
    """A record or history snapshot with its text fields cleared (None = drop the field)."""
    rec.update(content="[forgotten]", summary=None, embedding=None, embedding_model=None, embedding_dim=None)
    meta = dict(rec.get("metadata") or {})
    if "merged" in meta:
        meta["merged"] = [
            {k: v for k, v in m.items() if k != "content"} if isinstance(m, dict) else {} for m in meta["merged"] or []
        ]
    if rec.get("metadata") is not None:
        rec["metadata"] = meta
    return rec


def _enqueue(h: ScopeHandle, key: str, reason: str, priority: float) -> bool:
    if h.repo.is_queued(key, reason):
        return False
    h.repo.enqueue(key, reason, priority)
    return True


def _enqueue_many(h: ScopeHandle, keys: list[str], reason: str, priority: float) -> int:
    """Queue many memories at once; checking each one with its own query was quadratic
    (424 s for the first maintenance pass of a 100k-memory project)."""
    if not keys:
        return 0
    queued = h.repo.queued_keys(reason)
    fresh = [k for k in dict.fromkeys(keys) if k not in queued]
    for start in range(0, len(fresh), ENQUEUE_BATCH):
        h.repo.enqueue_many(fresh[start : start + ENQUEUE_BATCH], reason, priority)
    return len(fresh)


def queue_user_candidates(access: ScopeAccess, project: ScopeHandle, cfg) -> int:
    """Record project memories that look general enough for the user scope.

    Criteria (docs/decisions.md, "Promotion"): importance >= 0.7, recalled in >= N distinct sessions or
    seen in >= 2 projects (this one plus a near-duplicate, cosine >= the dedup threshold
    or the same content, in another project of the user: sightings.note_project_sighting),
    semantic or procedural, no project paths in the content, and not a repository's team file
    (its text is the repository's, never the user's for every project). The consolidator
    (Claude) makes the final call; nothing is promoted here.
    """
    idx = project.index
    n = idx.slots.size
    mask = idx.slots.live_mask[:n] & np.isin(idx.cols.status_code[:n], [STATUS_CODE[s] for s in LIVE_STATUSES])
    mask &= idx.cols.importance[:n] >= cfg.promote_user_min_importance
    mask &= np.isin(idx.cols.type_code[:n], [MEMORY_TYPES.index(t) for t in DURABLE_TYPES])
    slots = np.flatnonzero(mask)
    if slots.size == 0:
        return 0
    rows = project.repo.get_many(k for s in slots if (k := idx.key_of(int(s))))
    sightings = None
    queued = 0
    for r in rows:
        if any(hint in (r.get("content") or "") for hint in (str(project.project_root),)):
            continue
        if origin_of(r.get("source")).get("kind") == "team-file":
            continue  # a repository's text is never offered for every project (a clone is untrusted)
        sessions = (r.get("metadata") or {}).get("recall_sessions") or []
        if len(sessions) < cfg.promote_user_min_sessions:
            if sightings is None:  # loaded once, and only when the session signal falls short
                sightings = load_sightings(access)
            if _projects_seen(sightings, project, r, cfg) < PROMOTE_USER_MIN_PROJECTS:
                continue
        queued += _enqueue(project, r["id"], "promotion", float(r.get("importance", 0.7)))
    return queued


def _projects_seen(sightings: Sightings, project: ScopeHandle, row: dict[str, Any], cfg) -> int:
    """How many of the user's projects hold this memory or a near-duplicate of it."""
    key = row["id"]
    seen = projects_seen(
        sightings, project.db, row.get("content") or "", project.index.vector_of_key(key), cfg.store_dedup_similarity
    )
    return len(seen)
