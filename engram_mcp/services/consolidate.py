"""reflect_and_consolidate: a reviewable plan the consolidator (Claude) acts on.

The runtime does the mechanics Claude should not do by hand: clustering by embedding,
finding duplicates, recurring themes across sessions, promotion candidates and noise.
With `dry_run` it returns the plan and writes nothing. Without it, it applies the
mechanical part: each episodic cluster becomes a semantic memory linked `derived_from`
its sources (which move to `consolidated`), duplicates are merged into the stronger copy
(`similar_to` recorded, the weaker archived), and noise is archived. Claude writes better
summaries by storing its own memory with `derived_from` and archiving the sources.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import format_memory_id, parse_memory_id
from engram_mcp.core.vocabulary import CONSOLIDATE_STRATEGIES, DURABLE_TYPES, LIVE_STATUSES
from engram_mcp.index.scope_index import STATUS_CODE, Filters
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.edit import link
from engram_mcp.services.records import check_enum, clip_words
from engram_mcp.services.store import store as store_memory

CLUSTER_SIMILARITY = 0.6
DUPLICATE_SIMILARITY = 0.85
# A newer fact this close to an older one of the same type (but not a duplicate) may say that
# the older one changed: the same subject with a newer statement (same cut-off as store's hint).
CONTRADICTION_SIMILARITY = 0.65
CONTRADICTION_RECENT = 200  # newest memories checked against all older ones
PREVIEW_CHARS = 200
MIN_CLUSTER = 2
MAX_ITEMS = 25
STRATEGIES = CONSOLIDATE_STRATEGIES


def _live_slots(idx, types: tuple[str, ...] | None = None) -> np.ndarray:
    return np.flatnonzero(
        idx.mask(Filters(types=frozenset(types) if types else None, statuses=frozenset(LIVE_STATUSES)))
    )


CLUSTER_BLOCK_ROWS = 512  # rows of the similarity matrix made at once (512 x 10k float32: 20 MB)


class _Similar:
    """Which memories of `slots` are at least `floor` similar to which, kept sparse.

    The clustering used to hold the whole N x N similarity matrix (400 MB at 10k) and walk it
    in Python, pair by pair (seconds at 10k, three times per plan). The matrix is made a block
    of rows at a time here and only the pairs above `floor` are kept, so a plan's clusterings
    at several thresholds share one product and each walks only the similar pairs."""

    def __init__(self, idx: Any, slots: np.ndarray, floor: float) -> None:
        self.slots = [int(s) for s in slots if idx.vectors.has(int(s))]
        self.neighbours: list[np.ndarray] = []
        self.sims: list[np.ndarray] = []
        if not self.slots:
            return
        mat = np.vstack([idx.vectors.get(s) for s in self.slots])
        for start in range(0, len(self.slots), CLUSTER_BLOCK_ROWS):
            block = mat[start : start + CLUSTER_BLOCK_ROWS] @ mat.T
            rows, cols = np.nonzero(block >= floor)  # row-major: each row's columns ascending
            cuts = np.cumsum(np.bincount(rows, minlength=block.shape[0]))[:-1]
            self.neighbours.extend(np.split(cols, cuts))
            self.sims.extend(np.split(block[rows, cols], cuts))

    def clusters(self, threshold: float) -> list[list[int]]:
        """Greedy single pass, in slot order: each memory not yet taken takes every memory not
        yet taken at `threshold` or more (itself included); groups of MIN_CLUSTER or more are
        clusters. The same grouping as comparing every pair, without the pairs below the floor."""
        free = np.ones(len(self.slots), dtype=bool)
        out = []
        for i in range(len(self.slots)):
            if not free[i]:
                continue
            near = self.neighbours[i][self.sims[i] >= threshold]
            members = near[free[near]]
            free[members] = False
            if len(members) >= MIN_CLUSTER:
                out.append([self.slots[int(j)] for j in members])
        return out


def _clusters(idx, slots: np.ndarray, threshold: float) -> list[list[int]]:
    """Greedy single-pass clustering on cosine (see `_Similar`)."""
    return _Similar(idx, slots, threshold).clusters(threshold)


def plan(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    strategy: str = "full",
    session_id: str | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    check_enum(strategy, STRATEGIES, "strategy")
    target_scope = scope or ("session" if (session_id or ctx.session_id) else "project")
    with access.lock:
        h = access.handle(ctx, target_scope, session_id=session_id)
        idx = h.index
        keys_rows = {}

        def content(slot: int) -> str:
            key = idx.key_of(slot)
            if key not in keys_rows:
                keys_rows[key] = (h.repo.get(key) if key else None) or {}
            return keys_rows[key].get("content", "")

        def prefetch(slots: list[int]) -> None:
            """One read for the texts of many memories (a cluster's), instead of one read each."""
            keys = [k for k in (idx.key_of(s) for s in slots) if k and k not in keys_rows]
            for row in h.repo.get_many_for_recall(keys) if keys else []:
                keys_rows[str(row["id"]).split(":", 1)[-1]] = row

        consolidated: list[dict[str, Any]] = []
        patterns: list[dict[str, Any]] = []
        duplicates: list[dict[str, Any]] = []
        if strategy in ("summarize", "full"):
            episodes = _clusters(idx, _live_slots(idx, ("episodic",)), CLUSTER_SIMILARITY)[:MAX_ITEMS]
            prefetch([s for cluster in episodes for s in cluster])
            for cluster in episodes:
                texts = [" ".join(content(s).split())[:200] for s in cluster]
                consolidated.append(
                    {
                        "content": "Summary of related events: " + " | ".join(texts),
                        "type": "semantic",
                        "scope": "project" if target_scope == "session" else target_scope,
                        "derived_from": [format_memory_id(idx.live_key(s)) for s in cluster],
                    }
                )
        if strategy in ("extract_patterns", "full"):
            live = _live_slots(idx)
            similar = _Similar(idx, live, min(CLUSTER_SIMILARITY, DUPLICATE_SIMILARITY))  # one product for both
            for cluster in similar.clusters(CLUSTER_SIMILARITY)[:MAX_ITEMS]:
                sessions = {idx.session_of.get(s) for s in cluster} - {None}
                if len(cluster) >= 3 or len(sessions) >= 2:
                    patterns.append(
                        {
                            "pattern": " ".join(content(cluster[0]).split())[:200],
                            "frequency": len(cluster),
                            "sessions": len(sessions),
                            "memory_ids": [format_memory_id(idx.live_key(s)) for s in cluster],
                            "suggested_scope": "user" if len(sessions) >= 3 else "project",
                        }
                    )
            for cluster in similar.clusters(DUPLICATE_SIMILARITY)[:MAX_ITEMS]:
                duplicates.append({"memory_ids": [format_memory_id(idx.live_key(s)) for s in cluster]})
        contradictions = _contradictions(idx, content) if strategy in ("extract_patterns", "full") else []
        noise = [
            format_memory_id(idx.live_key(int(s)))
            for s in np.flatnonzero(
                (idx.cols.status_code[: idx.slots.size] == STATUS_CODE["active"])
                & (idx.cols.importance[: idx.slots.size] < 0.15)
                & (idx.cols.access_count[: idx.slots.size] == 0)
            )
        ][:MAX_ITEMS]
        candidates = [
            {
                "memory_id": format_memory_id(e.memory),
                "reason": e.reason,
                "priority": e.priority,
            }
            for e in access.handle(ctx, "project").repo.pending_queue(MAX_ITEMS)
        ]
        analysed = int(len(_live_slots(idx)))
    for item in consolidated:
        item["step"] = step_id("summarize", item["derived_from"])
    for dup in duplicates:
        dup["step"] = step_id("merge", dup["memory_ids"])
    return {
        "scope": target_scope,
        "consolidated_memories": consolidated,
        "patterns_detected": patterns,
        "duplicates": duplicates,
        "possible_contradictions": contradictions,
        "archive_candidates": noise,
        "queued": candidates,
        "session_stats": {
            "memories_analyzed": analysed,
            "consolidated_into": len(consolidated),
            "patterns_found": len(patterns),
        },
    }


def _contradictions(idx, content) -> list[dict[str, Any]]:
    """Pairs (older, newer) of live semantic or procedural memories about the same subject that
    say different things: the newer may supersede the older.

    Only candidates: whether the newer fact replaces the older one (same subject, changed fact)
    or both hold (two facts about one tool) is for Claude to judge, then `update_memory` with
    `supersedes` records it. Pairs already linked, and duplicates (merged instead), are left out.
    """
    live = idx.mask(Filters(types=frozenset(DURABLE_TYPES), statuses=frozenset(LIVE_STATUSES)))
    slots = [int(s) for s in np.flatnonzero(live) if idx.vectors.has(int(s))]
    if len(slots) < 2:
        return []
    created = idx.cols.created_at
    recent = sorted(slots, key=lambda s: -created[s])[:CONTRADICTION_RECENT]
    linked = {(new, old) for old, new in idx.superseded_by.items()}
    out = []
    for new in recent:
        older = live & (created[: live.size] < created[new])
        if not older.any():
            continue
        found, sims = idx.vectors.search(idx.vectors.get(new), 1, older)
        if not found.size or not CONTRADICTION_SIMILARITY <= float(sims[0]) < DUPLICATE_SIMILARITY:
            continue
        old = int(found[0])
        if int(idx.cols.type_code[old]) != int(idx.cols.type_code[new]):
            continue
        new_key, old_key = idx.key_of(new), idx.key_of(old)
        if (new_key, old_key) in linked:
            continue
        out.append(
            {
                "older": {"memory_id": format_memory_id(old_key), "content": clip_words(content(old), PREVIEW_CHARS)},
                "newer": {"memory_id": format_memory_id(new_key), "content": clip_words(content(new), PREVIEW_CHARS)},
                "similarity": round(float(sims[0]), 3),
                "if_newer_replaces_older": f"update_memory(memory_id={format_memory_id(new_key)!r}, supersedes={format_memory_id(old_key)!r})",
            }
        )
        if len(out) >= MAX_ITEMS:
            break
    return out


def step_id(kind: str, memory_ids: list[str]) -> str:
    """A plan step's name, stable across plans of the same memories: a person approves steps of a
    dry run and `apply_steps` finds them again in a fresh plan (a step whose memories changed
    in between gets another name, so it is not applied blind)."""
    digest = hashlib.sha256("\n".join([kind, *sorted(memory_ids)]).encode()).hexdigest()[:16]
    return f"{kind}:{digest}"


def archive_step(memory_id: str) -> str:
    return f"archive:{memory_id}"


def consolidate(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    strategy: str = "full",
    dry_run: bool = False,
    session_id: str | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    """Plan, and unless dry_run, apply the mechanical part of the plan."""
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false", field="dry_run")
    p = plan(access, ctx, strategy=strategy, session_id=session_id, scope=scope)
    p["dry_run"] = dry_run
    if dry_run:
        return p
    p["applied"] = _apply(access, ctx, p, None)
    return p


def apply_steps(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    steps: list[str],
    strategy: str = "full",
    session_id: str | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    """Apply only the approved steps of the plan (their `step` names from a dry run); the others
    are left as they are. Steps no longer in a fresh plan are reported, not guessed at."""
    if not isinstance(steps, list) or not all(isinstance(x, str) and len(x) <= 100 for x in steps):
        raise InvalidInput("steps must be a list of step names from a dry run", field="steps")
    p = plan(access, ctx, strategy=strategy, session_id=session_id, scope=scope)
    approved = set(steps)
    p["dry_run"] = False
    p["applied"] = _apply(access, ctx, p, approved)
    return p


def _apply(access: ScopeAccess, ctx: RequestContext, p: dict[str, Any], approved: set[str] | None) -> dict[str, Any]:
    """Carry out the plan's mechanical steps: all of them (`approved` None) or the named ones."""

    def wanted(step: str) -> bool:
        return approved is None or step in approved

    applied: dict[str, Any] = {"created": [], "merged": 0, "archived": 0, "steps": []}
    with access.lock:
        for item in p["consolidated_memories"]:
            if not wanted(item["step"]):
                continue
            res = store_memory(
                access,
                ctx,
                content=item["content"][:4000],
                type="semantic",
                scope=item["scope"],
                importance=0.6,
                tags=["consolidated"],
                source={"tool": "reflect_and_consolidate"},
                derived_from=item["derived_from"],
            )
            item["id"] = res["memory_id"]
            applied["created"].append(res["memory_id"])
            applied["steps"].append(item["step"])
        for dup in p["duplicates"]:
            if not wanted(dup["step"]):
                continue
            applied["steps"].append(dup["step"])
            ids = dup["memory_ids"]
            for other in ids[1:]:
                try:
                    link(access, ctx, ids[0], other, "similar_to")
                    _archive(access, ctx, other)
                    applied["merged"] += 1
                except Exception:
                    continue
        for mid in p["archive_candidates"]:
            if not wanted(archive_step(mid)):
                continue
            _archive(access, ctx, mid)
            applied["archived"] += 1
            applied["steps"].append(archive_step(mid))
    if approved is not None:
        applied["not_found"] = sorted(approved - set(applied["steps"]))
    return applied


def _archive(access: ScopeAccess, ctx: RequestContext, memory_id: str) -> None:
    for loc in access.locate(ctx, memory_id):
        loc.handle.repo.set_status([loc.key], "archived")
        loc.handle.index.set_status(loc.key, "archived")
        loc.handle.repo.complete_queued([parse_memory_id(memory_id)])
