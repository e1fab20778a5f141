"""Importers: memories people already have in other tools, brought into engram.

One module per source, each a pure reader that turns the source into engram's own import
records (`batch.ImportBatch`). `run_import` sorts them against what an earlier import of the
same source brought (`resync.plan`: added, updated, unchanged, removed at the source), writes
the source's edits with history (`resync.apply_updates`), and hands the new records, in
memory, to the import every export goes through (`transfer.import_records`: the store's checks
and redaction, embedding outside the lock, progress). `dry_run` reads and sorts without
writing. Whatever is wrong with a source as a whole is `InvalidInput` naming it; a bad record
is skipped with its reason.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.vocabulary import PERSISTENT_SCOPES
from engram_mcp.services.records import findings_summary

from . import auto_memory, claude_mem, markdown_notes, mcp_memory, resync
from .batch import SKIPPED_BEYOND_WHY, ImportBatch

if TYPE_CHECKING:
    from engram_mcp.services.access import RequestContext, ScopeAccess

READERS: dict[str, Callable[..., ImportBatch]] = {
    auto_memory.SOURCE: auto_memory.read,
    claude_mem.SOURCE: claude_mem.read,
    mcp_memory.SOURCE: mcp_memory.read,
    markdown_notes.SOURCE: markdown_notes.read,
}
SOURCES = tuple(READERS)
MAX_SKIPPED_LISTED = 50
TEMP_PREFIX = "engram-import-"
STALE_TEMP_AGE_S = 3600.0  # an import never ran this long without touching its folder


def default_path(source: str, ctx: "RequestContext", home: Path) -> Path | None:
    """Where the source keeps its data by default (None: the user must say)."""
    if source == auto_memory.SOURCE:
        return auto_memory.default_dir(Path(ctx.project_root), home)
    if source == claude_mem.SOURCE:
        return home / ".claude-mem" / "claude-mem.db"
    return None


def run_import(
    access: "ScopeAccess",
    ctx: "RequestContext",
    *,
    source: str,
    path: str | None = None,
    dry_run: bool = False,
    scope: str | None = None,
    project: str | None = None,
    include_sensitive: bool = False,
    progress: Callable[[int, int | None, str], None] | None = None,
) -> dict[str, Any]:
    """Import `source` from `path` (or its default place); a report of what was (or would be)
    added, updated, left unchanged and skipped, and why."""
    if source not in READERS:
        raise InvalidInput(f"source must be one of {', '.join(SOURCES)}", field="source")
    for name, flag in (("dry_run", dry_run), ("include_sensitive", include_sensitive)):
        if not isinstance(flag, bool):
            raise InvalidInput(f"{name} must be true or false", field=name)
    if scope is not None and scope not in PERSISTENT_SCOPES:
        raise InvalidInput("scope must be project or user (session memories are not imported)", field="scope")
    home = Path(access.home) if access.home else Path.home()
    where = Path(os.path.expanduser(path)) if path else default_path(source, ctx, home)
    if where is None:
        raise InvalidInput(f"give the path of the {source} data to import", field="path")
    if not where.exists():
        raise InvalidInput(f"{where}: no such file or directory", field="path")
    batch = _read(
        source,
        where,
        scope=scope,
        project=project or Path(ctx.project_root).name,
        explicit_project=project is not None,
        project_root=Path(ctx.project_root),
        home=home,
        sensitive=include_sensitive,
    )
    summary: dict[str, Any] = {
        "source": source,
        "path": str(where),
        "dry_run": bool(dry_run),
        "read": batch.counts(),
        "skipped": batch.skipped[:MAX_SKIPPED_LISTED],
        "skipped_count": sum(int(s.get("count", 1)) if s["why"] == SKIPPED_BEYOND_WHY else 1 for s in batch.skipped),
        "skipped_reasons": _reasons(batch),
        **batch.details,
    }
    todo = resync.plan(access, ctx, batch)
    unreadable = {s["where"] for s in batch.skipped}  # skipped now (e.g. broken by an edit) is not removed
    todo.removed = [r for r in todo.removed if r["where"] not in unreadable]
    summary.update(todo.summary())
    summary["new_memories"] = len(todo.new)  # the names of the first version of this report
    summary["already_present"] = len(todo.updates) + todo.unchanged + todo.forgotten
    if dry_run:
        return summary
    findings: list = []
    if todo.updates:
        done = resync.apply_updates(access, ctx, todo.updates, findings, progress)
        summary["updated"] = done["updated"]
        if done.get("rejected"):
            summary["rejected_updates"] = done["rejected"]
    if batch.lines:  # the new memories and the graph (resync.plan left out the others)
        summary["imported"] = _import_lines(access, ctx, batch, progress)
    else:
        summary["imported"] = {"counts": {"memory": 0}, "redactions": {}}
    if findings:  # redactions in updated records
        redactions = summary["imported"].setdefault("redactions", {})
        for kind, n in findings_summary(findings).items():
            redactions[kind] = redactions.get(kind, 0) + n
    return summary


def _read(
    source: str,
    where: Path,
    *,
    scope: str | None,
    project: str,
    sensitive: bool,
    explicit_project: bool = False,
    project_root: Path | None = None,
    home: Path | None = None,
) -> ImportBatch:
    """The source read by its reader; whatever is wrong with it is the caller's invalid input,
    named, and never an internal error (a corrupt database is not a fault of engram's)."""
    options: dict[str, Any] = {"scope": scope} if scope else {}
    if source == claude_mem.SOURCE:
        options.update(
            project_name=project,
            include_sensitive=sensitive,
            explicit_project=explicit_project,
            project_root=project_root,
            home=home,
        )
    try:
        return READERS[source](where, **options).finish()
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.message}", field="path") from None
    except (ValueError, OSError, sqlite3.Error, RecursionError, MemoryError, UnicodeError) as exc:
        raise InvalidInput(f"{where}: cannot read this {source} source: {exc}", field="path") from None


def _reasons(batch: ImportBatch) -> dict[str, int]:
    """How many records were skipped for each reason (the reason without its details)."""
    out: Counter[str] = Counter()
    for s in batch.skipped:
        out[s["why"].split(" (", 1)[0].split(": ", 1)[0][:80]] += int(s.get("count", 1))
    return dict(out.most_common())


def _import_lines(
    access: "ScopeAccess",
    ctx: "RequestContext",
    batch: ImportBatch,
    progress: Callable[[int, int | None, str], None] | None,
) -> dict[str, Any]:
    """Import the records straight from memory (`transfer.import_records`): no temporary
    copy of the source's unredacted text is ever written (an import killed before removing
    its copy left it on disk). Leftovers of earlier versions that did write one are removed."""
    from engram_mcp.services import transfer

    sweep_stale_temp_dirs()
    result = transfer.import_records(access, ctx, batch.lines, label=batch.source, progress=progress)
    result.pop("path", None)
    return result


def sweep_stale_temp_dirs(*, older_than_s: float = STALE_TEMP_AGE_S) -> int:
    """Remove the `engram-import-*` folders earlier versions left when killed mid-import."""
    removed = 0
    now = time.time()
    for entry in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        try:
            st = entry.lstat()
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and now - st.st_mtime > older_than_s:
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
        except OSError:
            continue
    return removed
