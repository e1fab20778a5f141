"""claude-mem's SQLite database (`~/.claude-mem/claude-mem.db`).

Read-only (opened with `mode=ro`, never written). The tables used, as its schema defines them:
`sdk_sessions(memory_session_id, project, ...)`, `observations(id, memory_session_id, project,
text, type, title, subtitle, facts, narrative, concepts, files_read, files_modified,
created_at, created_at_epoch)` with `facts`/`concepts`/`files_*` as JSON arrays in text, and
`session_summaries(id, memory_session_id, project, request, investigated, learned, completed,
next_steps, notes, created_at, created_at_epoch)`. `created_at_epoch` is milliseconds.

claude-mem names a project by its directory name, not its path, so the rows of the project
whose name is this project's directory name (or `project=` given) are imported into the
project scope; other projects' rows are counted in the summary, to be imported from there.
Observation types map to memory types: a decision or discovery is knowledge (semantic), a
bugfix is how to fix something (procedural), a feature, change or refactor is what happened
(episodic); a session summary is episodic.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from .batch import ImportBatch, from_epoch_ms, from_iso

SOURCE = "claude-mem"
DEFAULT_SCOPE = "project"
TYPE_MAP = {"decision": "semantic", "discovery": "semantic", "bugfix": "procedural"}
SUMMARY_PARTS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)


def read(path: Path, *, scope: str = DEFAULT_SCOPE, project_name: str | None = None, **_: Any) -> ImportBatch:
    batch = ImportBatch(SOURCE)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "observations" not in tables:
            raise ValueError(f"{path} is not a claude-mem database (it has no observations table)")
        others: Counter[str] = Counter()
        for row in db.execute("SELECT * FROM observations ORDER BY id"):
            if project_name and row["project"] != project_name:
                others[row["project"]] += 1
                continue
            _observation(batch, dict(row), scope)
        if "session_summaries" in tables:
            for row in db.execute("SELECT * FROM session_summaries ORDER BY id"):
                if project_name and row["project"] != project_name:
                    others[row["project"]] += 1
                    continue
                _summary(batch, dict(row), scope)
    finally:
        db.close()
    for name, n in sorted(others.items()):
        batch.skip(
            f"project {name!r}", f"{n} rows belong to another project; import them from that project's directory"
        )
    return batch


def _json_list(value: Any) -> list[str]:
    if not value:
        return []
    try:
        items = json.loads(value)
    except (TypeError, ValueError):
        return [str(value)]
    return [str(x) for x in items if x] if isinstance(items, list) else [str(items)]


def _when(row: dict[str, Any]):
    return from_epoch_ms(row.get("created_at_epoch")) or from_iso(row.get("created_at"))


def _observation(batch: ImportBatch, row: dict[str, Any], scope: str) -> None:
    title = (row.get("title") or "").strip()
    parts = [title] if title else []
    if row.get("narrative"):
        parts.append(str(row["narrative"]).strip())
    elif row.get("text"):
        parts.append(str(row["text"]).strip())
    parts += [f"- {fact}" for fact in _json_list(row.get("facts"))]
    files = _json_list(row.get("files_modified")) or _json_list(row.get("files_read"))
    if files:
        parts.append("Files: " + ", ".join(files[:20]))
    content = "\n".join(p for p in parts if p)
    where = f"observation {row.get('id')}"
    if not content:
        batch.skip(where, "no title, narrative, text or facts")
        return
    otype = str(row.get("type") or "discovery")
    batch.memory(
        source_key=f"observation\x00{row.get('memory_session_id')}\x00{row.get('id')}",
        scope=scope,
        content=content,
        memory_type=TYPE_MAP.get(otype, "episodic"),
        tags=["claude-mem", otype, *[c.lower().replace(" ", "-")[:40] for c in _json_list(row.get("concepts"))[:10]]],
        summary=row.get("subtitle"),
        category="decision" if otype == "decision" else None,
        importance=0.7 if otype in ("decision", "bugfix") else 0.5,
        when=_when(row),
        origin={"table": "observations", "id": row.get("id"), "project": row.get("project")},
    )


def _summary(batch: ImportBatch, row: dict[str, Any], scope: str) -> None:
    lines = [f"{label}: {str(row[name]).strip()}" for name, label in SUMMARY_PARTS if row.get(name)]
    if not lines:
        batch.skip(f"session summary {row.get('id')}", "empty")
        return
    batch.memory(
        source_key=f"summary\x00{row.get('memory_session_id')}\x00{row.get('id')}",
        scope=scope,
        content="Session summary (claude-mem)\n" + "\n".join(lines),
        memory_type="episodic",
        tags=["claude-mem", "session-summary"],
        when=_when(row),
        origin={"table": "session_summaries", "id": row.get("id"), "project": row.get("project")},
    )
