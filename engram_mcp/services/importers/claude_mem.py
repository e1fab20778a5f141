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

claude-mem names a project by its directory name only (its git root's basename; a worktree as
`parent/worktree`), and its `adopt` merges a worktree's rows into the parent by setting
`merged_into_project`, which its own reads honour (`project = ? OR merged_into_project = ?`);
so do we. Other projects' rows are counted, to be imported from their own directory.

A name is not a place: `~/src/api` (a clone) and `~/work/clientA/api` are both "api", and
importing in the first must not bring the second's private rows. The one full path claude-mem
records is the `cwd` of a session's queued tool events (`pending_messages.cwd`, joined by
`session_db_id` to `sdk_sessions.id`; claude-mem's own cwd remap reads it the same way). So:

- a row whose session has a recorded cwd is this project's when that cwd lies in this project
  (or one of its git worktrees); recorded elsewhere, it is another project's, named with its
  path (a row merged into this name from a worktree whose path is gone is judged by its name);
- a row known only by its name is imported only when the name is this project's beyond doubt:
  the paths known for it (the cwds claude-mem recorded for that name, and Claude Code's own
  project folders, `~/.claude/projects/<path with - for every other character>`, ending in
  the name) include this project and no other. When another path shares the name, or none
  shows this project was the one claude-mem saw, its rows are left out, counted with the
  paths, until the caller names the project explicitly (`project`, the CLI's
  `--source-project`); the dry run shows the paths (`details["claude_mem_projects"]`).

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
import os
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from engram_mcp.core.paths import main_worktree

from . import files
from .auto_memory import project_folder_name
from .batch import ImportBatch, from_epoch_ms, from_iso, source_file

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
MAX_RECORDED_PATHS_READ = 100_000  # (session, project, cwd) triples read from pending_messages
MAX_PATHS_SHOWN = 20  # paths listed per project name in the report
MAX_CLAUDE_PROJECT_DIRS_SCANNED = 20_000  # entries of ~/.claude/projects looked at
MAX_OTHER_PROJECTS_COUNTED = 1_000  # distinct other project names counted one by one; the rest together
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
    project_root: Path | None = None,
    home: Path | None = None,
    explicit_project: bool = False,
    **_: Any,
) -> ImportBatch:
    batch = ImportBatch(SOURCE, file=source_file(path))
    _check_header(path)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "observations" not in tables:
            raise ValueError("not a claude-mem database (it has no observations table)")
        sessions: _Sessions | dict[str, Any] = _Sessions(db) if "sdk_sessions" in tables else {}
        place = _Place(db, tables, project_name, project_root, home, explicit_project)
        others: Counter[str] = Counter()
        sensitive = 0
        for row in db.execute("SELECT * FROM observations ORDER BY id"):
            rec = dict(row)
            if not place.ours(rec, others):
                continue
            if str(rec.get("type") or "") in SENSITIVE_TYPES and not include_sensitive:
                sensitive += 1
                continue
            _guarded(batch, f"observations #{rec.get('id')}", _observation, rec, scope, sessions, place)
        if "session_summaries" in tables:
            for row in db.execute("SELECT * FROM session_summaries ORDER BY id"):
                rec = dict(row)
                if place.ours(rec, others):
                    _guarded(batch, f"session_summaries #{rec.get('id')}", _summary, rec, scope, sessions, place)
    finally:
        db.close()
    if sensitive:
        batch.skip(
            f"{sensitive} rows marked sensitive or security_alert",
            "sensitive: left out so they never reach a context or a team file (--include-sensitive imports them)",
            count=sensitive,
        )
    place.report(batch)
    for name, n in sorted(others.items()):
        batch.skip(f"project {name!r} ({n} rows)", "another project: import them from its directory", count=n)
    return batch


def _inside(path: str, roots: tuple[Path, ...]) -> bool:
    """Whether `path` (a recorded cwd, which may no longer exist) lies in one of `roots`."""
    p = Path(os.path.normpath(path))
    for cand in {p, _resolved(p)}:
        if any(cand == r or r in cand.parents for r in roots):
            return True
    return False


def _resolved(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return p


class _Place:
    """Which rows are this project's: by recorded path first, by name only without doubt."""

    def __init__(
        self,
        db: sqlite3.Connection,
        tables: set[str],
        name: str | None,
        project_root: Path | None,
        home: Path | None,
        explicit: bool,
    ) -> None:
        self.name, self.explicit = name, explicit
        self.roots: tuple[Path, ...] = ()
        if project_root is not None:
            root = _resolved(Path(project_root))
            # as given too: Claude Code names its folder after the path it was started in
            self.roots = tuple(dict.fromkeys((root, _resolved(main_worktree(root)), Path(project_root).absolute())))
        self.cwds = _recorded_cwds(db, tables)  # memory_session_id -> cwds
        self.elsewhere: Counter[str] = Counter()  # rows left out, by the path recorded for them
        self.held = 0  # rows left out for an ambiguous or unconfirmed name
        self.imported = 0
        self.known, self.verdict = self._name_verdict(home)

    def _name_verdict(self, home: Path | None) -> tuple[list[str], str]:
        """(paths known for the name, "ok" | "ambiguous" | "unconfirmed") for rows known by name only."""
        if not self.name or not self.roots:
            return [], "ok"  # a caller that names no project (or no place) reads every row
        known = sorted({c for (project, _sid), cs in self.cwds.by_project.items() if project == self.name for c in cs})
        folders = _claude_code_folders(home, self.name)
        mine = {project_folder_name(str(r)) for r in self.roots}
        ours = any(self._here(c) for c in known) or any(f in mine for f in folders)
        others = [c for c in known if not self._here(c)]
        others += [f"~/.claude/projects/{f} (a Claude Code project)" for f in folders if f not in mine]
        if self.explicit:
            return others, "ok"
        if others:
            return others, "ambiguous"
        return others, "ok" if ours else "unconfirmed"

    def ours(self, row: dict[str, Any], others: Counter[str]) -> bool:
        """Whether a row belongs to the project imported: its own or merged into it, and here."""
        if self.name and self.name not in (row.get("project"), row.get("merged_into_project")):
            key = str(row.get("project"))[:100]
            others[key if key in others or len(others) < MAX_OTHER_PROJECTS_COUNTED else "(more names)"] += 1
            return False
        if not self.name or not self.roots:
            self.imported += 1
            return True
        sid = row.get("memory_session_id")
        cwds = self.cwds.get(sid) if isinstance(sid, str) else None
        if cwds:
            if any(self._here(c) for c in cwds):
                self.imported += 1
                return True
            merged = row.get("merged_into_project") == self.name and row.get("project") != self.name
            if not merged or any(Path(c).exists() for c in cwds):
                self.elsewhere[cwds[0][:500]] += 1
                return False
        if self.verdict == "ok":
            self.imported += 1
            return True
        self.held += 1
        return False

    def _here(self, cwd: str) -> bool:
        """A recorded cwd in this project, or in a git worktree of it that still exists."""
        if _inside(cwd, self.roots):
            return True
        try:
            return Path(cwd).is_dir() and _resolved(main_worktree(Path(cwd))) in self.roots
        except OSError:
            return False

    def report(self, batch: ImportBatch) -> None:
        name = self.name
        for cwd, n in sorted(self.elsewhere.items()):
            batch.skip(
                f"project {name!r} at {cwd} ({n} rows)",
                "another project: claude-mem recorded these rows at another path; import them from there",
                count=n,
            )
        if self.held:
            paths = ", ".join(self.known[:MAX_PATHS_SHOWN]) or "no path"
            if self.verdict == "ambiguous":
                why = (
                    f"ambiguous project name: claude-mem names projects by folder name only, and {name!r} is "
                    f"also the name of {paths}; pass the project name explicitly (--source-project {name}) to "
                    "import them here"
                )
            else:
                why = (
                    f"unconfirmed project: claude-mem names projects by folder name only, and nothing records "
                    f"that its {name!r} is this project; pass the project name explicitly (--source-project "
                    f"{name}) to import them here"
                )
            batch.skip(f"project {name!r} ({self.held} rows)", why, count=self.held)
        if name and self.roots:
            batch.details["claude_mem_projects"] = {
                "name": name,
                "this_project": str(self.roots[0]),
                "explicit": self.explicit,
                "name_only": self.verdict,
                "other_paths": self.known[:MAX_PATHS_SHOWN],
                "recorded_elsewhere": dict(sorted(self.elsewhere.items())[:MAX_PATHS_SHOWN]),
                "rows_imported": self.imported,
                "rows_held": self.held,
            }


class _RecordedCwds(dict):
    """memory_session_id -> recorded cwds (first recorded first); `by_project`: (project, sid) -> cwds."""

    by_project: dict[tuple[str, str], list[str]]


def _recorded_cwds(db: sqlite3.Connection, tables: set[str]) -> _RecordedCwds:
    out = _RecordedCwds()
    out.by_project = {}
    if not {"pending_messages", "sdk_sessions"} <= tables:
        return out
    pcols = {r[1] for r in db.execute("PRAGMA table_info(pending_messages)")}
    scols = {r[1] for r in db.execute("PRAGMA table_info(sdk_sessions)")}
    if "cwd" not in pcols or not {"memory_session_id", "project"} <= scols:
        return out
    if "session_db_id" in pcols and "id" in scols:
        join = "p.session_db_id = s.id"
    elif "content_session_id" in pcols and "content_session_id" in scols:
        join = "p.content_session_id = s.content_session_id"
    else:
        return out
    try:
        rows = db.execute(
            f"SELECT s.memory_session_id, s.project, p.cwd FROM pending_messages p JOIN sdk_sessions s ON {join} "
            "WHERE p.cwd IS NOT NULL AND p.cwd != '' GROUP BY s.memory_session_id, s.project, p.cwd "
            "ORDER BY MIN(p.id) LIMIT ?",
            (MAX_RECORDED_PATHS_READ,),
        ).fetchall()
    except sqlite3.Error:
        return out
    for sid, project, cwd in rows:
        if isinstance(sid, str) and isinstance(cwd, str) and cwd.startswith("/"):
            out.setdefault(sid, []).append(cwd)
            if isinstance(project, str):
                out.by_project.setdefault((project, sid), []).append(cwd)
    return out


def _claude_code_folders(home: Path | None, name: str) -> list[str]:
    """Claude Code's project folders (`~/.claude/projects/<encoded path>`) whose path may end in
    the directory `name` (the encoding is lossy: `a-api` may be `a/api` or `a-api`; both count)."""
    tail = "-" + project_folder_name(name.rsplit("/", 1)[-1])
    bases = [Path(home) / ".claude"] if home is not None else []
    if os.environ.get("CLAUDE_CONFIG_DIR"):  # Claude Code's own setting for where ~/.claude is
        bases.append(Path(os.path.expanduser(os.environ["CLAUDE_CONFIG_DIR"])))
    out: set[str] = set()
    for base in dict.fromkeys(bases):
        try:
            with os.scandir(base / "projects") as it:
                for n, entry in enumerate(it):
                    if n >= MAX_CLAUDE_PROJECT_DIRS_SCANNED:
                        break
                    if entry.name.endswith(tail) and entry.is_dir(follow_symlinks=False):
                        out.add(entry.name)
        except OSError:
            continue
    return sorted(out)


def _check_header(path: Path) -> None:
    """A file that is not SQLite at all is named as such before sqlite3 says "file is not a database"."""
    with files.open_regular_binary(path, max_bytes=MAX_DATABASE_BYTES) as f:  # never a FIFO, device or link
        head = f.read(16)
    if head and head != b"SQLite format 3\x00":
        raise ValueError("not an SQLite database")


def _guarded(batch: ImportBatch, where: str, fn: Any, *args: Any) -> None:
    try:
        fn(batch, *args)
    except (RowError, RecursionError, TypeError, ValueError) as exc:
        batch.skip(where, f"unreadable row: {str(exc)[:200]}")


class _Sessions:
    """memory_session_id -> the session's prompt and platform (what the user asked for),
    looked up for the rows imported only (a table of every session is never held)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        cols = {r[1] for r in db.execute("PRAGMA table_info(sdk_sessions)")}
        self.want = [c for c in ("memory_session_id", "user_prompt", "platform_source", "custom_title") if c in cols]
        self.cache: dict[str, dict[str, Any] | None] = {}

    def get(self, sid: str) -> dict[str, Any] | None:
        if "memory_session_id" not in self.want:
            return None
        if sid not in self.cache:
            row = self.db.execute(
                f"SELECT {', '.join(self.want)} FROM sdk_sessions WHERE memory_session_id = ? LIMIT 1",  # names above
                (sid,),
            ).fetchone()
            self.cache[sid] = dict(row) if row is not None else None
        return self.cache[sid]


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


def _origin(row: dict[str, Any], table: str, sessions: Any, place: _Place | None = None) -> tuple[dict, dict]:
    """(source origin, metadata): where the row came from, and the context that helps recall it."""
    sid = row.get("memory_session_id")
    origin = {"table": table, "id": row.get("id"), "project": row.get("project")}
    cwds = place.cwds.get(sid) if place is not None and isinstance(sid, str) else None
    if cwds:
        origin["cwd"] = cwds[0][:500]  # the path claude-mem recorded for the row's session
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


def _prompt_line(row: dict[str, Any], sessions: Any) -> str | None:
    sid = row.get("memory_session_id")
    session = sessions.get(sid) if isinstance(sid, str) else None
    prompt = session.get("user_prompt") if session else None
    return f"Asked: {str(prompt).strip()[:300]}" if isinstance(prompt, str) and prompt.strip() else None


def _observation(
    batch: ImportBatch, row: dict[str, Any], scope: str, sessions: Any, place: _Place | None = None
) -> None:
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
    origin, meta = _origin(row, "observations", sessions, place)
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


def _summary(batch: ImportBatch, row: dict[str, Any], scope: str, sessions: Any, place: _Place | None = None) -> None:
    lines = [f"{label}: {_text(row.get(name), name)}" for name, label in SUMMARY_PARTS if _text(row.get(name), name)]
    if not lines:
        batch.skip(f"session_summaries #{row.get('id')}", "empty: no request, findings or next steps")
        return
    for name, label in (("files_edited", "Files edited"), ("files_read", "Files read")):
        files = _json_list(row.get(name), name)
        if files:
            lines.append(f"{label}: " + ", ".join(files[:MAX_FILES_LISTED]))
    origin, meta = _origin(row, "session_summaries", sessions, place)
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
