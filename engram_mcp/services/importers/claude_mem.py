"""claude-mem's SQLite database (`~/.claude-mem/claude-mem.db`).

Read-only (opened with `mode=ro`, never written). The tables used, as claude-mem's
SessionStore creates and migrates them (thedotmack/claude-mem, `src/services/sqlite/`):
`sdk_sessions(memory_session_id, project, platform_source, user_prompt, ...)`,
`observations(id, memory_session_id, project, text, type, title, subtitle, facts, narrative,
concepts, files_read, files_modified, prompt_number, merged_into_project, generated_by_model,
created_at, created_at_epoch)` with `facts`/`concepts`/`files_*` as JSON arrays in text, and
`session_summaries(id, memory_session_id, project, request, investigated, learned, completed,
next_steps, notes, files_read, files_edited, merged_into_project, ...)`. `created_at_epoch`
is milliseconds. Older databases lack the later columns; every column is optional here.

claude-mem names a project by its directory name (a worktree as `parent/worktree`), and its
`adopt` merges a worktree's rows into the parent by setting `merged_into_project`, which its
own reads honour (`project = ? OR merged_into_project = ?`); so do we. Other projects' rows
are counted, to be imported from their own directory.

Observation types map to memory types: a decision or discovery is knowledge (semantic), a
bugfix is how to fix something (procedural), a feature, change or refactor is what happened
(episodic); a session summary is episodic. Rows claude-mem marks `sensitive` or
`security_alert` are left out (counted) unless `include_sensitive`: they must never be
injected into a context or shared, and engram's default is that imported memories may be.

A database that cannot be read (truncated, corrupt, not SQLite) raises: the caller names it
as invalid input. A row that cannot be read (a wrong column type, JSON nested past any real
use) is skipped with its reason; the others are imported.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from . import files
from .batch import ImportBatch, from_epoch_ms, from_iso

SOURCE = "claude-mem"
DEFAULT_SCOPE = "project"
TYPE_MAP = {"decision": "semantic", "discovery": "semantic", "bugfix": "procedural"}
SENSITIVE_TYPES = frozenset({"sensitive", "security_alert"})
SUMMARY_PARTS = (
    ("request", "Request"),
    ("investigated", "Investigated"),
    ("learned", "Learned"),
    ("completed", "Completed"),
    ("next_steps", "Next steps"),
    ("notes", "Notes"),
)
MAX_JSON_CHARS = 200_000  # a facts/concepts/files column longer than this is not claude-mem's
MAX_JSON_DEPTH = 8  # its arrays are flat lists of strings; deeper nesting is refused, not recursed
MAX_FILES_LISTED = 30
MAX_CONCEPTS = 12
MAX_DATABASE_BYTES = 1 << 40  # no size bound of its own: SQLite reads pages, not the whole file
# Legacy concept tags were `kind:-value` or `kind: value` ("pattern:-repository-pattern"): keep the value.
CONCEPT_PREFIX_RE = re.compile(r"^[a-z_ -]{1,30}:[\s-]*")


class RowError(ValueError):
    """One row cannot be read; it is skipped with this reason."""


def read(
    path: Path,
    *,
    scope: str = DEFAULT_SCOPE,
    project_name: str | None = None,
    include_sensitive: bool = False,
    **_: Any,
) -> ImportBatch:
    batch = ImportBatch(SOURCE)
    _check_header(path)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "observations" not in tables:
            raise ValueError("not a claude-mem database (it has no observations table)")
        sessions = _sessions(db) if "sdk_sessions" in tables else {}
        others: Counter[str] = Counter()
        sensitive = 0
        for row in db.execute("SELECT * FROM observations ORDER BY id"):
            rec = dict(row)
            if not _ours(rec, project_name, others):
                continue
            if str(rec.get("type") or "") in SENSITIVE_TYPES and not include_sensitive:
                sensitive += 1
                continue
            _guarded(batch, f"observations #{rec.get('id')}", _observation, rec, scope, sessions)
        if "session_summaries" in tables:
            for row in db.execute("SELECT * FROM session_summaries ORDER BY id"):
                rec = dict(row)
                if _ours(rec, project_name, others):
                    _guarded(batch, f"session_summaries #{rec.get('id')}", _summary, rec, scope, sessions)
    finally:
        db.close()
    if sensitive:
        batch.skip(
            f"{sensitive} rows marked sensitive or security_alert",
            "sensitive: left out so they never reach a context or a team file (--include-sensitive imports them)",
            count=sensitive,
        )
    for name, n in sorted(others.items()):
        batch.skip(f"project {name!r} ({n} rows)", "another project: import them from its directory", count=n)
    return batch


def _check_header(path: Path) -> None:
    """A file that is not SQLite at all is named as such before sqlite3 says "file is not a database"."""
    with files.open_regular_binary(path, max_bytes=MAX_DATABASE_BYTES) as f:  # never a FIFO, device or link
        head = f.read(16)
    if head and head != b"SQLite format 3\x00":
        raise ValueError("not an SQLite database")


def _ours(row: dict[str, Any], project_name: str | None, others: Counter[str]) -> bool:
    """Whether a row belongs to the project imported: its own or merged into it."""
    if not project_name:
        return True
    if project_name in (row.get("project"), row.get("merged_into_project")):
        return True
    others[str(row.get("project"))[:100]] += 1
    return False


def _guarded(batch: ImportBatch, where: str, fn: Any, *args: Any) -> None:
    try:
        fn(batch, *args)
    except (RowError, RecursionError, TypeError, ValueError) as exc:
        batch.skip(where, f"unreadable row: {str(exc)[:200]}")


def _sessions(db: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """memory_session_id -> the session's prompt and platform (what the user asked for)."""
    cols = {r[1] for r in db.execute("PRAGMA table_info(sdk_sessions)")}
    want = [c for c in ("memory_session_id", "user_prompt", "platform_source", "custom_title") if c in cols]
    if "memory_session_id" not in want:
        return {}
    out = {}
    for row in db.execute(f"SELECT {', '.join(want)} FROM sdk_sessions"):  # names from the list above
        rec = dict(row)
        if isinstance(rec.get("memory_session_id"), str):
            out[rec["memory_session_id"]] = rec
    return out


def _text(value: Any, name: str) -> str:
    """A text column: str, or a number written as text; a blob or anything else is refused."""
    if value is None:
        return ""
    if isinstance(value, bool) or isinstance(value, bytes):
        raise RowError(f"{name} holds {type(value).__name__}, not text")
    return str(value).strip()


def _json_list(value: Any, name: str) -> list[str]:
    text = _text(value, name)
    if not text:
        return []
    if len(text) > MAX_JSON_CHARS:
        raise RowError(f"{name} is {len(text)} characters long")
    if _depth(text) > MAX_JSON_DEPTH:
        raise RowError(f"{name} nests more than {MAX_JSON_DEPTH} levels deep")
    try:
        items = json.loads(text)
    except ValueError:
        return [text]
    if not isinstance(items, list):
        return [str(items)]
    return [str(x).strip() for x in items if isinstance(x, (str, int, float)) and str(x).strip()]


def _depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, counted before it is parsed (strings ignored)."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in text:
        if in_str:
            escaped = not escaped and ch == "\\"
            if ch == '"' and not escaped:
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def concept_tag(concept: str) -> str:
    """A concept as a tag: `pattern:-repository-pattern` -> `repository-pattern`."""
    tag = CONCEPT_PREFIX_RE.sub("", concept.strip().lower())
    return re.sub(r"[\s_]+", "-", tag).strip("-:")[:40]


def _when(row: dict[str, Any]):
    return from_epoch_ms(row.get("created_at_epoch")) or from_iso(row.get("created_at"))


def _origin(row: dict[str, Any], table: str, sessions: dict[str, dict[str, Any]]) -> tuple[dict, dict]:
    """(source origin, metadata): where the row came from, and the context that helps recall it."""
    sid = row.get("memory_session_id")
    origin = {"table": table, "id": row.get("id"), "project": row.get("project")}
    meta: dict[str, Any] = {}
    if isinstance(sid, str):
        meta["claude_mem_session"] = sid[:100]
    for name in ("prompt_number", "generated_by_model", "merged_into_project"):
        if row.get(name) is not None and not isinstance(row.get(name), bytes):
            meta[name] = row[name] if isinstance(row[name], int) else str(row[name])[:200]
    session = sessions.get(sid) if isinstance(sid, str) else None
    if session and session.get("platform_source"):
        meta["platform"] = str(session["platform_source"])[:40]
    return origin, meta


def _prompt_line(row: dict[str, Any], sessions: dict[str, dict[str, Any]]) -> str | None:
    sid = row.get("memory_session_id")
    session = sessions.get(sid) if isinstance(sid, str) else None
    prompt = session.get("user_prompt") if session else None
    return f"Asked: {str(prompt).strip()[:300]}" if isinstance(prompt, str) and prompt.strip() else None


def _observation(batch: ImportBatch, row: dict[str, Any], scope: str, sessions: dict[str, dict[str, Any]]) -> None:
    title = _text(row.get("title"), "title")
    parts = [title] if title else []
    body = _text(row.get("narrative"), "narrative") or _text(row.get("text"), "text")
    if body:
        parts.append(body)
    parts += [f"- {fact}" for fact in _json_list(row.get("facts"), "facts")]
    read_files = _json_list(row.get("files_read"), "files_read")
    modified = _json_list(row.get("files_modified"), "files_modified")
    if modified:
        parts.append("Files modified: " + ", ".join(modified[:MAX_FILES_LISTED]))
    if read_files:
        parts.append("Files read: " + ", ".join(read_files[:MAX_FILES_LISTED]))
    if not parts:
        batch.skip(f"observations #{row.get('id')}", "empty: no title, narrative, text or facts")
        return
    prompt = _prompt_line(row, sessions)
    if prompt:
        parts.append(prompt)
    otype = _text(row.get("type"), "type") or "discovery"
    origin, meta = _origin(row, "observations", sessions)
    concepts = [concept_tag(c) for c in _json_list(row.get("concepts"), "concepts")[:MAX_CONCEPTS]]
    sensitive = otype in SENSITIVE_TYPES
    if sensitive:
        meta["sensitive"] = True
    batch.memory(
        source_key=f"observation\x00{row.get('memory_session_id')}\x00{row.get('id')}",
        scope=scope,
        content="\n".join(parts),
        memory_type=TYPE_MAP.get(otype, "episodic"),
        tags=["claude-mem", otype, *concepts, *(["sensitive"] if sensitive else [])],
        summary=_text(row.get("subtitle"), "subtitle") or None,
        category="decision" if otype == "decision" else None,
        importance=0.7 if otype in ("decision", "bugfix") else 0.5,  # sensitive rows stay episodic: never auto-shared
        when=_when(row),
        origin=origin,
        metadata=meta,
    )


def _summary(batch: ImportBatch, row: dict[str, Any], scope: str, sessions: dict[str, dict[str, Any]]) -> None:
    lines = [f"{label}: {_text(row.get(name), name)}" for name, label in SUMMARY_PARTS if _text(row.get(name), name)]
    if not lines:
        batch.skip(f"session_summaries #{row.get('id')}", "empty: no request, findings or next steps")
        return
    for name, label in (("files_edited", "Files edited"), ("files_read", "Files read")):
        files = _json_list(row.get(name), name)
        if files:
            lines.append(f"{label}: " + ", ".join(files[:MAX_FILES_LISTED]))
    origin, meta = _origin(row, "session_summaries", sessions)
    batch.memory(
        source_key=f"summary\x00{row.get('memory_session_id')}\x00{row.get('id')}",
        scope=scope,
        content="Session summary (claude-mem)\n" + "\n".join(lines),
        memory_type="episodic",
        tags=["claude-mem", "session-summary"],
        when=_when(row),
        origin=origin,
        metadata=meta,
    )
