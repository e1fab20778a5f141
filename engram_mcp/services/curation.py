"""What a person curating memory needs to see and no other operation gives (`engram ui`).

Three read-only views, each computed from the derived in-memory index (scope_index.py), so
they cost one vectorised pass per scope and never decode records that are not shown:
- `quality`: the memory-quality rates (near-duplicates, never recalled, superseded but still
  live, not recalled in 90 days), counted per scope;
- `decay_curve`: a memory's strength now and over the coming days, from the same decay
  formula recall and maintenance use (so the curve cannot disagree with them);
- `sessions`: each session of the project (its registry entry), the memories captured in it
  and promoted from it, and what the hooks injected into it (hook_ops.INJECTION_LOG).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from engram_mcp.core.errors import EngramError, InvalidInput, MemoryNotFound
from engram_mcp.core.ids import format_memory_id, session_db_name
from engram_mcp.core.vocabulary import LIVE_STATUSES, MEMORY_TYPES, SESSION_STATUSES, STATUSES
from engram_mcp.index.scope_index import STATUS_CODE, TYPE_CODE, Filters
from engram_mcp.index.scoring import SECONDS_PER_DAY, decay_factor, to_epoch
from engram_mcp.services.access import SCOPE_ORDER, RequestContext, ScopeAccess
from engram_mcp.services.consolidate import DUPLICATE_SIMILARITY
from engram_mcp.services.handles import SESSION_NS
from engram_mcp.services.hook_ops import INJECTION_LOG

STALE_AFTER_DAYS = 90
#: Near-duplicates are looked for among this many newest live memories per scope (each against all
#: live ones: measured ~280 ms for 500 rows at 10k memories on a busy 2-core machine), so the health
#: page stays usable at 100k; the answer says how many were checked.
DUPLICATE_SAMPLE_ROWS = 500
DUPLICATE_BLOCK_ROWS = 256
CURVE_DAYS = (0, 1, 2, 3, 5, 7, 10, 14, 21, 30, 45, 60, 90, 120, 180, 270, 365)
SESSIONS_SHOWN = 50
SESSION_SCOPE_SHOWN = 30  # newest memories of a live session's own scope shown with it
BRIEF_CHARS = 200  # of each memory a session names (summary, else the start of its text)
BRIEFS_MAX = 600  # memories described per answer; the rest stay ids
ULID_CHARS = 26
SHORT_ID_MIN_CHARS = 6  # fewer could name too many memories to be worth a lookup


def _rate(n: int, of: int) -> float:
    return round(n / of, 4) if of else 0.0


#: (id of the index, its edit count) -> near-duplicates found and checked: the health page asks
#: again on every visit, and the answer changes only when the index does.
_DUPLICATES_SEEN: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}


def _near_duplicates_cached(name: str, idx: Any, live_slots: np.ndarray) -> tuple[int, int]:
    key = (id(idx), int(idx.edits))
    seen = _DUPLICATES_SEEN.get(name)
    if seen is not None and seen[0] == key:
        return seen[1]
    found = _near_duplicates(idx, live_slots)
    _DUPLICATES_SEEN[name] = (key, found)
    return found


def _counts(idx: Any) -> dict[str, Any]:
    """Every memory of the scope by type and by status, from the index columns: the store's own
    GROUP BY reads every record (300 ms at 3k memories, most of the health page's time)."""
    n = idx.slots.size
    used = idx.slots.live_mask[:n] & (idx.cols.status_code[:n] >= 0)
    types = np.bincount(idx.cols.type_code[:n][used].astype(np.int64), minlength=len(TYPE_CODE))
    statuses = np.bincount(idx.cols.status_code[:n][used].astype(np.int64), minlength=len(STATUS_CODE))
    return {
        "total": int(used.sum()),
        "by_type": {t: int(types[TYPE_CODE[t]]) for t in MEMORY_TYPES if types[TYPE_CODE[t]]},
        "by_status": {st: int(statuses[STATUS_CODE[st]]) for st in STATUSES if statuses[STATUS_CODE[st]]},
    }


def _near_duplicates(idx: Any, live_slots: np.ndarray) -> tuple[int, int]:
    """(memories among the newest DUPLICATE_SAMPLE_ROWS live ones with another live memory at
    cosine >= DUPLICATE_SIMILARITY, how many were checked)."""
    with_vec = np.array([s for s in live_slots if idx.vectors.has(int(s))], dtype=np.int64)
    if with_vec.size < 2:
        return 0, int(with_vec.size)
    created = idx.cols.created_at[with_vec]
    sample = with_vec[np.argsort(-created, kind="stable")[:DUPLICATE_SAMPLE_ROWS]]
    everything = idx.vectors.rows(with_vec)
    found = 0
    for start in range(0, sample.size, DUPLICATE_BLOCK_ROWS):
        block = sample[start : start + DUPLICATE_BLOCK_ROWS]
        sims = idx.vectors.rows(block) @ everything.T
        sims[block[:, None] == with_vec[None, :]] = -1.0  # a memory is not its own duplicate
        found += int((sims.max(axis=1) >= DUPLICATE_SIMILARITY).sum())
    return found, int(sample.size)


def quality(access: ScopeAccess, ctx: RequestContext) -> dict[str, Any]:
    """Per scope: live memories, and how many are near-duplicates, never recalled, superseded but
    still live, or not recalled (nor created) in the last 90 days; each also as a rate."""
    started = time.perf_counter()
    now = time.time()
    stale_before = now - STALE_AFTER_DAYS * SECONDS_PER_DAY
    warnings: list[dict[str, Any]] = []
    scopes: dict[str, Any] = {}
    with access.lock:
        for name, h in access.open_scopes(ctx, SCOPE_ORDER, warnings):
            idx = h.index
            # superseded ones included: recall hides them, but they are still live records
            live_mask = idx.mask(Filters(statuses=frozenset(LIVE_STATUSES), include_superseded=True))
            live = np.flatnonzero(live_mask)
            n = int(live.size)
            access_count = idx.cols.access_count[live]
            last = np.maximum(idx.cols.last_accessed[live], idx.cols.created_at[live])
            superseded = 0
            for old_key in idx.superseded_by:
                slot = idx.slot_of(old_key)
                if slot is not None and slot < live_mask.size and live_mask[slot]:
                    superseded += 1
            dups, checked = _near_duplicates_cached(name, idx, live)
            counts = {
                "near_duplicates": dups,
                "never_recalled": int((access_count == 0).sum()),
                "superseded_but_active": superseded,
                "not_recalled_90d": int((last < stale_before).sum()),
            }
            scopes[name] = {
                "live": n,
                **_counts(idx),
                "database_size_bytes": h.store.size_bytes() if name != "session" else None,
                "read_only": bool(h.store.failure),
                **counts,
                "rates": {k: _rate(v, checked if k == "near_duplicates" else n) for k, v in counts.items()},
                "duplicates_checked": checked,
            }
    return {
        "scopes": scopes,
        "duplicate_similarity": DUPLICATE_SIMILARITY,
        "stale_after_days": STALE_AFTER_DAYS,
        "warnings": warnings,
        "query_time_ms": round((time.perf_counter() - started) * 1000, 2),
    }


def decay_curve(access: ScopeAccess, ctx: RequestContext, memory_id: str) -> dict[str, Any]:
    """The memory's strength (importance x decay) now and after each of CURVE_DAYS more days
    without a recall; a recall resets the clock and lengthens the half-life."""
    with access.lock:
        first = access.locate_one(ctx, memory_id)[0]
        row = first.row
        frozen = first.handle.scope == "session"
    memory_type = row.get("memory_type") or "semantic"
    if memory_type not in MEMORY_TYPES:
        raise InvalidInput(f"memory {memory_id} has an unknown type {memory_type!r}", field="memory_id")
    importance = float(row.get("importance", 0.5))
    count = int(row.get("access_count", 0))
    since = time.time() - to_epoch(row.get("last_accessed_at") or row.get("created_at"))
    points = [
        {
            "days_from_now": d,
            "strength": round(
                importance * decay_factor(memory_type, since + d * SECONDS_PER_DAY, count, frozen=frozen), 4
            ),
        }
        for d in CURVE_DAYS
    ]
    return {
        "memory_id": format_memory_id(first.key),
        "type": memory_type,
        "importance": importance,
        "access_count": count,
        "days_since_access": round(since / SECONDS_PER_DAY, 2),
        "frozen": frozen,
        "points": points,
    }


def sessions(access: ScopeAccess, ctx: RequestContext) -> dict[str, Any]:
    """The project's sessions, newest first: registry entry, the prompt it began with (or its
    summary), memories captured in the session and now in the project (stored there during it,
    or promoted at its end), a live session's own memories (its session scope), and the hooks'
    injections recorded since the daemon started (with each prompt's first characters)."""
    events = INJECTION_LOG.events()
    by_session: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_session.setdefault(e["session_id"], []).append(e)
    out: dict[str, dict[str, Any]] = {}
    with access.lock:
        project = access.handle(ctx, "project")
        rows = [r for status in SESSION_STATUSES for r in project.repo.sessions_with_status(status)]
        idx = project.index
        from_session: dict[str, list[str]] = {}
        for slot, sid in idx.session_of.items():
            key = idx.key_of(slot)
            if key is not None and int(idx.cols.status_code[slot]) != STATUS_CODE["forgotten"]:
                from_session.setdefault(sid, []).append(format_memory_id(key))
        try:
            session_dbs = set(project.store.databases(SESSION_NS))
        except Exception:  # the list is a nicety: without it no session scope is shown
            session_dbs = set()
    for r in rows:
        if r.session_id:
            out[r.session_id] = {
                "session_id": r.session_id,
                "status": r.status,
                "started_at": r.started_at.isoformat() if r.started_at else None,
                "ended_at": r.ended_at.isoformat() if r.ended_at else None,
                "memories_promoted": r.memories_promoted or 0,
                "summary": r.summary,
            }
    for sid in set(by_session) | set(from_session):
        out.setdefault(sid, {"session_id": sid, "status": None, "started_at": None, "memories_promoted": 0})
    for sid, entry in out.items():
        entry["in_project"] = from_session.get(sid, [])[:200]
        entry["in_project_total"] = len(from_session.get(sid, []))
        entry["injections"] = [
            {
                "kind": e["kind"],
                "at": e["at"],
                "tokens": e["tokens"],
                "memory_ids": e["memory_ids"],
                "prompt": e.get("prompt") or "",
            }
            for e in by_session.get(sid, [])
        ]
        entry["first_prompt"] = next(
            (i["prompt"] for i in entry["injections"] if i["prompt"] and i["kind"] == "prompt"), None
        )
    ordered = sorted(out.values(), key=lambda e: str(e.get("started_at") or ""), reverse=True)[:SESSIONS_SHOWN]
    session_briefs: dict[str, dict[str, Any]] = {}
    for entry in ordered:
        live = entry.get("status") == "active" and session_db_name(entry["session_id"]) in session_dbs
        total, newest = _session_scope(access, ctx, entry["session_id"], session_briefs) if live else (0, [])
        entry["session_scope_total"] = total
        entry["session_scope"] = newest
    named = [mid for e in ordered for mid in [*e["in_project"], *(i for j in e["injections"] for i in j["memory_ids"])]]
    briefs = _briefs(access, ctx, [m for m in dict.fromkeys(named) if m not in session_briefs][:BRIEFS_MAX])
    return {
        "sessions": ordered,
        "memories": {**briefs, **session_briefs},
        "total": len(ordered),
        "current_session": ctx.session_id,
        "injections_since": "daemon start",
    }


def _session_scope(
    access: ScopeAccess, ctx: RequestContext, session_id: str, briefs: dict[str, dict[str, Any]]
) -> tuple[int, list[str]]:
    """(how many live memories a live session's own scope holds, the newest SESSION_SCOPE_SHOWN
    of them); their briefs go into `briefs`. Only a session whose database exists is opened, so
    looking creates nothing."""
    try:
        with access.lock:
            h = access.handle(ctx, "session", session_id=session_id)
            idx = h.index
            slots = np.flatnonzero(idx.mask(Filters(statuses=frozenset(LIVE_STATUSES), include_superseded=True)))
            newest = slots[np.argsort(-idx.cols.created_at[slots], kind="stable")[:SESSION_SCOPE_SHOWN]]
            keys = [k for k in (idx.key_of(int(s)) for s in newest) if k is not None]
            rows = h.repo.get_many_for_recall(keys) if keys else []
    except EngramError:
        return 0, []
    for row in rows:
        briefs[format_memory_id(str(row["id"]).split(":", 1)[-1])] = _brief(row, "session")
    return int(slots.size), [format_memory_id(k) for k in keys]


def _brief(row: dict[str, Any], scope: str) -> dict[str, Any]:
    text = str(row.get("summary") or row.get("content") or "")
    cut = text if len(text) <= BRIEF_CHARS else text[:BRIEF_CHARS].rsplit(" ", 1)[0] + "…"
    return {"text": cut, "type": row.get("memory_type") or row.get("type"), "scope": scope, "status": row.get("status")}


def _briefs(access: ScopeAccess, ctx: RequestContext, ids: list[str]) -> dict[str, dict[str, Any]]:
    """What each named memory says, briefly (summary, else the start of its text), with its type,
    scope and status: a session page of bare 26-character ids tells nobody what was injected.
    One read per scope of the memories its index holds; ids no scope has are left out."""
    keys = {mid.split(":", 1)[-1]: mid for mid in ids}
    out: dict[str, dict[str, Any]] = {}
    with access.lock:
        for name, h in access.open_scopes(ctx, SCOPE_ORDER, []):
            mine = [k for k in keys if keys[k] not in out and h.index.slot_of(k) is not None]
            for row in h.repo.get_many_for_recall(mine) if mine else []:
                out[format_memory_id(str(row["id"]).split(":", 1)[-1])] = _brief(row, name)
    return out


def resolve_id(access: ScopeAccess, ctx: RequestContext, short_id: str) -> dict[str, Any]:
    """The full id of a memory named by the end (or start) of its id, as the page shows ids
    (`…9WEBHKJ7`): a person copies what they see, and "mark superseded by" must take it.
    Looked up in the index keys of every scope the caller can read; more than one match is an
    error naming how many, so a short id never picks a memory by chance."""
    raw = str(short_id).strip().lstrip("…").strip(".").split(":", 1)[-1].upper()
    if len(raw) == ULID_CHARS:
        return {"memory_id": format_memory_id(raw)}
    if not SHORT_ID_MIN_CHARS <= len(raw) < ULID_CHARS or not raw.isalnum():
        raise InvalidInput(f"give a memory id, or at least its last {SHORT_ID_MIN_CHARS} characters", field="memory_id")
    found: set[str] = set()
    with access.lock:
        for _name, h in access.open_scopes(ctx, SCOPE_ORDER, []):
            idx = h.index
            for slot in range(idx.slots.size):
                key = idx.key_of(slot)
                if key and (key.upper().endswith(raw) or key.upper().startswith(raw)):
                    found.add(key)
    if not found:
        raise MemoryNotFound(f"no memory id ends or starts with {raw!r}")
    if len(found) > 1:
        raise InvalidInput(
            f"{len(found)} memories have ids ending or starting with {raw!r}: give more of it", field="memory_id"
        )
    return {"memory_id": format_memory_id(found.pop())}
