"""The "seen in >= 2 projects" promotion signal: the user's cross-project sightings.

A project memory that could go to the user scope (semantic or procedural, important enough,
not forgotten) is recorded in the user store with its fingerprint and vector; at a session
end, the lifecycle counts in how many projects a memory (or a near-duplicate) is seen.
Written by every project write (store, update, forget, purge, promotion, maintenance) and
read by lifecycle.queue_user_candidates: its own module, so neither depends on the other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.vocabulary import DURABLE_TYPES
from engram_mcp.index.scope_index import content_hash
from engram_mcp.services.access import ScopeAccess
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.records import now_dt

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
    longer qualifies (forgotten, demoted) leaves the table. Best effort: the signal must
    never fail the write that produced it.
    """
    try:
        user = access.registry.user()
        row = project.repo.get(key)
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
