"""Importers: memories people already have in other tools, brought into engram.

One module per source, each a pure reader that turns the source into engram's own import
records (`batch.ImportBatch`); `run_import` then feeds them to the import every export
goes through (`transfer.import_`: the store's checks and redaction, embedding outside the
lock, progress, idempotence by id). Ids are derived from the source records, so running an
importer twice adds nothing. `dry_run` reads and counts without writing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.vocabulary import PERSISTENT_SCOPES, SCOPES

from . import auto_memory, claude_mem, markdown_notes, mcp_memory
from .batch import ImportBatch

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
    progress: Callable[[int, int | None, str], None] | None = None,
) -> dict[str, Any]:
    """Import `source` from `path` (or its default place); a summary of what was (or would be) added."""
    if source not in READERS:
        raise InvalidInput(f"source must be one of {', '.join(SOURCES)}", field="source")
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false", field="dry_run")
    if scope is not None and scope not in PERSISTENT_SCOPES:
        raise InvalidInput("scope must be project or user (session memories are not imported)", field="scope")
    home = Path(access.home) if access.home else Path.home()
    where = Path(os.path.expanduser(path)) if path else default_path(source, ctx, home)
    if where is None:
        raise InvalidInput(f"give the path of the {source} data to import", field="path")
    if not where.exists():
        raise InvalidInput(f"{where}: no such file or directory", field="path")
    options: dict[str, Any] = {"scope": scope} if scope else {}
    if source == claude_mem.SOURCE:
        options["project_name"] = project or Path(ctx.project_root).name
    try:
        batch = READERS[source](where, **options)
    except (ValueError, OSError) as exc:
        raise InvalidInput(f"{where}: {exc}", field="path") from None
    summary: dict[str, Any] = {
        "source": source,
        "path": str(where),
        "dry_run": bool(dry_run),
        "read": batch.counts(),
        "skipped": batch.skipped[:MAX_SKIPPED_LISTED],
        "skipped_count": len(batch.skipped),
    }
    summary.update(_presence(access, ctx, batch))
    if dry_run or not batch.lines:
        return summary
    summary["imported"] = _import_lines(access, ctx, batch, progress)
    return summary


def _presence(access: "ScopeAccess", ctx: "RequestContext", batch: ImportBatch) -> dict[str, int]:
    """How many of the batch's memories are new, and how many an earlier run already brought."""
    present = new = 0
    handles = {}
    for line in batch.lines:
        if line["kind"] != "memory":
            continue
        scope = line["scope"]
        if scope not in SCOPES:
            continue
        if scope not in handles:
            with access.lock:
                handles[scope] = access.handle(ctx, scope)
        if handles[scope].index.slot_of(line["id"]) is None:
            new += 1
        else:
            present += 1
    return {"new_memories": new, "already_present": present}


def _import_lines(
    access: "ScopeAccess",
    ctx: "RequestContext",
    batch: ImportBatch,
    progress: Callable[[int, int | None, str], None] | None,
) -> dict[str, Any]:
    """Write the records to a private temporary JSONL file and import it (then remove it)."""
    from engram_mcp.services import transfer

    tmp = Path(tempfile.mkdtemp(prefix="engram-import-"))
    try:
        file = tmp / f"{batch.source}.jsonl"
        with open(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
            for line in batch.lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        result = transfer.import_(access, ctx, file, progress=progress)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result.pop("path", None)
    for item in result.get("rejected", []):  # the temporary file's line numbers mean nothing to the user
        item["error"] = item["error"].split(": ", 1)[-1]
    return result
