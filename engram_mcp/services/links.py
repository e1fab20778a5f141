"""Memory -> memory links (supersedes, contradicts, derived_from, similar_to) inside one scope.

Written by store (supersedes, derived_from), update (supersedes), link_memory, promotion
(links carried along) and consolidation; a `supersedes` link also marks the older memory in
the derived index, so recall hides it from then on.
"""

from __future__ import annotations

from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.vocabulary import LIVE_STATUSES
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.handles import ScopeHandle


def link_memories(h: ScopeHandle, a: str, b: str, relation: str, strength: float = 0.5) -> bool:
    """Write the link a -[relation]-> b unless it exists (True if written)."""
    if h.repo.has_link(a, b, relation):
        return False
    h.repo.add_link(a, b, relation, strength)
    if relation == "supersedes":
        h.index.mark_superseded(b, a)
    return True


def supersede(h: ScopeHandle, new_key: str, old_key: str) -> bool:
    """Link `new_key` supersedes `old_key` in one scope when both live there (True if written)."""
    if new_key == old_key or h.index.slot_of(old_key) is None or h.index.superseded_by.get(old_key) == new_key:
        return False
    return link_memories(h, new_key, old_key, "supersedes")


def mark_consolidated(access: ScopeAccess, ctx: RequestContext, h: ScopeHandle, new_key: str, src_key: str) -> None:
    """A source summarised into `new_key`: link it (same scope) and mark it consolidated."""
    for loc in access.locate(ctx, format_memory_id(src_key)):
        if loc.handle is h:
            link_memories(h, new_key, src_key, "derived_from")
        if loc.row.get("status") in LIVE_STATUSES:
            loc.handle.repo.set_status([src_key], "consolidated")
            loc.handle.index.set_status(src_key, "consolidated")
