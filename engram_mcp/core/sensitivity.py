"""Memories marked sensitive: kept, recallable when asked for, never volunteered or sent.

claude-mem marks rows `sensitive` or `security_alert`; `engram import --from claude-mem
--include-sensitive` imports them tagged `sensitive` with `metadata.sensitive: true`. Such a
memory answers an explicit recall, but it never reaches a context block (the SessionStart
block, the prompt hook's block), a team file (`share`, a sync's write-back, the auto-share
rule) or the `sync --user` mirror. An export keeps it (a backup loses nothing), through the
outbound redaction pass like every exported text, with its tag and metadata, so a restore keeps
it out again; the export's answer counts them.

One predicate, one home: every path above asks `is_sensitive`. Standard library only.
"""

from __future__ import annotations

from typing import Any

SENSITIVE_TAG = "sensitive"


def is_sensitive(mem: dict[str, Any] | None) -> bool:
    """Whether a memory (a stored row or a public one) is marked sensitive: its tag or its
    `metadata.sensitive`."""
    if not mem:
        return False
    meta = mem.get("metadata")
    if isinstance(meta, dict) and meta.get("sensitive") is True:
        return True
    tags = mem.get("tags") or ()
    return isinstance(tags, (list, tuple, set, frozenset)) and SENSITIVE_TAG in tags
