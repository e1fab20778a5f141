"""What the user's projects tell each other, kept in the user store.

- Sightings, the "seen in >= 2 projects" promotion signal: a project memory that could go to the
  user scope (semantic or procedural, important enough, not forgotten) is recorded with its
  fingerprint and vector; at a session end, the lifecycle counts in how many projects a memory
  (or a near-duplicate) is seen.
- Changes: a project memory Claude or the user stored that says something changed ("the company
  changed password managers: ... bws run") is recorded with its text, so a line of another project
  that still states the old way carries the change (`changes_elsewhere`, read by the blocks'
  correction pools). The user's ways are often written down in the project where they came up,
  and a change of them in another: without this, the old way stood in the first project's
  session starts for the rest of the month. Only a line's note quotes it; nothing is hidden on it.

Written by every project write (store, update, forget, purge, promotion, maintenance) and read
by lifecycle.queue_user_candidates and the context blocks: its own module, so none depends on another.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from engram_mcp.core import capture_shapes
from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.vocabulary import DURABLE_TYPES
from engram_mcp.index.scope_index import content_hash
from engram_mcp.services.access import ScopeAccess
from engram_mcp.services.fact_diff import states_a_change
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.records import iso, now_dt, origin_of

log = logging.getLogger("engram.promotion")
USER_PROMOTION_TYPES = DURABLE_TYPES


@dataclass
class Sightings:
    """The user's project sightings for one embedding model, ready for matching."""

    projects: list[str]
    fingerprints: list[str]
    vectors: np.ndarray | None  # unit rows, aligned with `projects`; None when no vector matches the model


def _sighting_key(project: ScopeHandle, key: str) -> str:
    return f"{project.db}_{key}"


def note_project_sighting(access: ScopeAccess, project: ScopeHandle, key: str, *, drop: bool = False) -> None:
    """Record in the user store that project `project.db` holds memory `key` (project -> user
    promotion when a memory is "seen in >= 2 projects", docs/decisions.md).

    Only memories that could be promoted to the user scope are kept (semantic or
    procedural, importance >= promote_user_min_importance, not forgotten), which keeps the
    table small: it is read whole at each session end. With `drop`, a memory that no
    longer qualifies (forgotten, demoted) leaves the table. The same write keeps the memory's
    record as a change for the user's other projects (`_note_change`). Best effort: neither
    signal may fail the write that produced it.
    """
    try:
        user = access.registry.user()
        row = project.repo.get(key)
        _note_change(user, project, key, row, drop=drop)
        cfg = access.config(project.project_root)
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


#: Origins whose changes reach the user's other projects: what Claude or the user stored. A
#: repository's team file, a synced folder or an import is someone else's text, and a hook's
#: capture quotes Claude's answer, which a repository's files can steer: of a capture, only the
#: user's own words go (`_change_text`).
CHANGE_ORIGINS = ("claude", "user")
#: Characters of a change's text kept: a line quotes its sentences.
CHANGE_TEXT_MAX_CHARS = 2_000
#: How far back a change stated in another project reaches this project's lines.
CHANGE_ELSEWHERE_MAX_AGE_DAYS = 90
#: Changes of the user's other projects a block reads, newest first: each is weighed against
#: every line of the block, like a memory of its correction pool.
CHANGES_ELSEWHERE = 24


def _note_change(user: ScopeHandle, project: ScopeHandle, key: str, row: dict[str, Any] | None, *, drop: bool) -> None:
    """Keep (or, when it no longer says a change or is gone, drop) the record of a project memory
    that states a change, for the user's other projects (`changes_elsewhere`)."""
    record_key = _sighting_key(project, key)
    text = _change_text(row) if row is not None else None
    if row is None or text is None:
        if drop:  # forgotten, purged, or rewritten (an update passes `drop`)
            user.repo.delete_project_change(record_key)
        return
    user.repo.upsert_project_change(
        record_key,
        {
            "project": project.db,
            "project_name": project.project_root.name if project.project_root else project.db,
            "memory_id": format_memory_id(key),
            "content": text[:CHANGE_TEXT_MAX_CHARS],
            "created_at": row.get("created_at") or now_dt(),
        },
    )


def _change_text(row: dict[str, Any]) -> str | None:
    """What of a live project memory may tell the user's other projects of a change, when it states
    one: the whole text of what Claude or the user stored; of the Stop hook's capture, the user's
    own words only (`capture_shapes.users_words`). A change said in a session's last turn is often
    kept by that capture alone ("the company changed password managers: you run things as bws
    run"), and the `op run` another project's memory states stayed uncorrected there (the month
    replay's eighth world, nudged: 15 of 37 turns). None for anything else."""
    if row.get("status") == "forgotten" or row.get("memory_type") not in (*DURABLE_TYPES, "episodic"):
        return None
    content = str(row.get("content") or "")
    kind = origin_of(row.get("source")).get("kind")
    text = content if kind in CHANGE_ORIGINS else capture_shapes.users_words(content) if kind == "hook" else None
    return text if text and states_a_change(text) else None


def changes_elsewhere(access: ScopeAccess, project: ScopeHandle) -> list[dict[str, Any]]:
    """The changes stated lately in the user's other projects, as memories a line's note may quote
    (`context.corrections`): id, content, created_at, and `elsewhere`, the project's name, which
    the note shows. Never shown as lines, never strengthened. Empty when the user store is not
    at hand (the blocks do without)."""
    since = now_dt() - timedelta(days=CHANGE_ELSEWHERE_MAX_AGE_DAYS)
    try:
        rows = access.registry.user().repo.recent_project_changes(
            other_than=project.db, since=since, limit=CHANGES_ELSEWHERE
        )
    except (StoreUnavailable, InvalidInput) as exc:
        log.warning("changes of other projects not read: %s", exc)
        return []
    return [
        {
            "id": r.memory_id,
            "content": r.content,
            "created_at": iso(r.created_at),
            "scope": "project",
            ELSEWHERE: r.project_name,
        }
        for r in rows
    ]


#: The key of a memory dict from another project (`changes_elsewhere`): that project's name.
ELSEWHERE = "elsewhere"


def _sighting_worthy(row: dict[str, Any], min_importance: float) -> bool:
    return (
        row.get("memory_type") in USER_PROMOTION_TYPES
        and row.get("status") != "forgotten"
        and float(row.get("importance", 0)) >= min_importance
    )


def load_sightings(access: ScopeAccess) -> Sightings:
    """Every sighting of the user (one query); vectors of another model are left out."""
    try:
        rows = access.registry.user().repo.all_sightings()
    except StoreUnavailable:
        rows = []
    model = access.model_name
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


def note_sighting(access: ScopeAccess, h: ScopeHandle, key: str, *, drop: bool = False) -> None:
    """A memory of any scope was written: when it is a project memory, it joins (or, with
    `drop`, may leave) the user's cross-project sightings."""
    if h.scope != "project":
        return
    note_project_sighting(access, h, key, drop=drop)
