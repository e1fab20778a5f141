"""`engram share`, `engram sync` and `engram import --from`: memory that travels, at the command line.

Thin like the rest of the CLI: parse, call the daemon, render. Kept beside cli.py so the
main parser gains two subcommands and one option group with a single call.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

SYNC_TIMEOUT_S = 900.0  # a first sync of a large shared folder embeds every file
IMPORT_SOURCES = ("auto-memory", "claude-mem", "mcp-memory", "markdown")
EXIT_OK, EXIT_CONFLICT = 0, 3


def add_parsers(sub: Any) -> None:
    """The `share` and `sync` subcommands."""
    sh = sub.add_parser(
        "share",
        help="share a project memory with the team (a file in .claude/team-memory/ to commit)",
        description="Example: engram share memory:01J...  then commit .claude/team-memory/",
    )
    sh.add_argument("memory_id")
    sh.set_defaults(fn=cmd_share)
    sy = sub.add_parser(
        "sync",
        help="apply teammates' shared memories and write local edits back; --user DIR mirrors your user scope",
        description="Examples: git pull && engram sync;  engram sync --user ~/Sync/engram",
    )
    sy.add_argument("--user", metavar="DIR", help="mirror the user scope to DIR (a folder you sync yourself)")
    sy.set_defaults(fn=cmd_sync)


def add_import_options(parser: argparse.ArgumentParser) -> None:
    """`engram import --from SOURCE [PATH]`: the other tools' memories (FILE becomes PATH)."""
    parser.add_argument(
        "--from",
        dest="source",
        choices=IMPORT_SOURCES,
        help="import another tool's memories from PATH (default place for auto-memory and claude-mem)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="with --from: count what would be imported, write nothing"
    )
    parser.add_argument(
        "--source-project", help="with --from claude-mem: its project name (default: this directory's name)"
    )


def cmd_share(app: Any) -> int:
    res = app.call("share", {"memory_id": app.args.memory_id})
    app.out(res, lambda r: f"shared {r['memory_id']} as {r['path']}\n{r['hint']}")
    return EXIT_OK


def cmd_sync(app: Any) -> int:
    args = {"user_dir": str(Path(app.args.user).expanduser().resolve())} if app.args.user else {}
    res = app.call("sync", args, timeout=SYNC_TIMEOUT_S)
    app.out(res, render_sync)
    return EXIT_CONFLICT if res.get("conflicts") else EXIT_OK


def render_sync(r: dict[str, Any]) -> str:
    counts = r["counts"]
    done = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v and k not in ("conflicts", "errors"))
    lines = [f"{r['folder']}: {done or 'nothing to do'}"]
    for c in r.get("conflicts") or []:
        lines.append(f"conflict: {c['path']} ({c['memory_id']}) changed here and in the file since the last sync")
        lines.append(f"  file:  {_preview(c.get('file'))}")
        lines.append(f"  local: {_preview(c.get('local'))}")
        lines.append(f"  {c['resolve']}")
    for e in r.get("errors") or []:
        lines.append(f"left alone: {e['error']}")
    for s in r.get("redactions") or []:
        lines.append(f"warning: {s['path']}: {s['message']}")
    return "\n".join(lines)


def _preview(text: str | None, limit: int = 100) -> str:
    if text is None:
        return "(deleted)"
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def cmd_import_from(app: Any) -> int:
    a = app.args
    payload: dict[str, Any] = {"source": a.source, "dry_run": bool(a.dry_run)}
    if a.file:
        payload["path"] = str(Path(a.file).expanduser().resolve())
    if a.scope:
        payload["scope"] = a.scope
    if a.source_project:
        payload["project"] = a.source_project
    started = time.perf_counter()
    res = app.call_with_progress("import_from", payload)
    res["seconds"] = round(time.perf_counter() - started, 2)
    app.out(res, render_import_from)
    return EXIT_OK


def render_import_from(r: dict[str, Any]) -> str:
    read = ", ".join(f"{v} {k}" for k, v in r["read"].items()) or "nothing"
    head = f"{r['source']} from {r['path']}: read {read}"
    if r["dry_run"]:
        lines = [
            f"{head} (dry run, nothing written)",
            f"would add {r['new_memories']} memories ({r['already_present']} already here)",
        ]
    else:
        got = (r.get("imported") or {}).get("counts", {})
        lines = [
            f"{head} in {r['seconds']} s",
            f"added {got.get('memory', 0)} memories ({r['already_present']} already here), "
            f"{got.get('entity', 0)} entities, {got.get('relation', 0)} relations",
        ]
        for entry in (r.get("imported") or {}).get("rejected") or []:
            lines.append(f"not imported: {entry.get('error')}")
    for s in r.get("skipped") or []:
        lines.append(f"skipped: {s['where']}: {s['why']}")
    if r.get("skipped_count", 0) > len(r.get("skipped") or []):
        lines.append(f"... and {r['skipped_count'] - len(r['skipped'])} more skipped (see --json)")
    return "\n".join(lines)
