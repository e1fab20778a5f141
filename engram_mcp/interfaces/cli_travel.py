"""`engram share`, `engram sync` and `engram import --from`: memory that travels, at the command line.

Thin like the rest of the CLI: parse, call the daemon, render. Kept beside cli.py so the
main parser gains two subcommands and one option group with a single call.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from engram_mcp.core.display import one_line, printable

SYNC_TIMEOUT_S = 900.0  # a first sync of a large shared folder embeds every file
IMPORT_SOURCES = ("auto-memory", "claude-mem", "mcp-memory", "markdown")
#: `engram sync` exits 3 when a file was conflicted or left alone: a script (or a person
#: chaining `git pull && engram sync && ...`) must not take a partial sync for a clean one.
EXIT_OK, EXIT_CONFLICT = 0, 3
#: Memories added or updated from files listed one per line (a first sync may bring thousands).
ARRIVALS_SHOWN = 20


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
    parser.add_argument(
        "--include-sensitive",
        action="store_true",
        help="with --from claude-mem: also import the rows it marked sensitive or security_alert (left out by default)",
    )


def cmd_share(app: Any) -> int:
    res = app.call("share", {"memory_id": app.args.memory_id})
    app.out(res, lambda r: f"shared {r['memory_id']} as {r['path']}\n{r['hint']}")
    return EXIT_OK


def cmd_sync(app: Any) -> int:
    args = {"user_dir": str(Path(app.args.user).expanduser().resolve())} if app.args.user else {}
    res = app.call("sync", args, timeout=SYNC_TIMEOUT_S)
    app.out(res, render_sync)
    return EXIT_CONFLICT if res.get("conflicts") or res.get("errors") else EXIT_OK


def render_sync(r: dict[str, Any]) -> str:
    """The sync report for a terminal. Paths, texts and authors come from other people's
    files and commits: every one goes through `one_line`, so no escape sequence acts and no
    newline in a file's name starts a line that passes for the report's own."""
    counts = r["counts"]
    done = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v and k not in ("conflicts", "errors"))
    lines = [f"{one_line(str(r['folder']))}: {done or 'nothing to do'}"]
    arrivals = r.get("arrivals") or []
    for a in arrivals[:ARRIVALS_SHOWN]:
        by = f" by {one_line(str(a['author']))}" if a.get("author") else ""
        lines.append(f"{a.get('change', 'updated')}: {one_line(str(a['path']))} ({a['memory_id']}){by}")
    if len(arrivals) > ARRIVALS_SHOWN:
        lines.append(f"... and {len(arrivals) - ARRIVALS_SHOWN} more added or updated (see --json)")
    for c in r.get("conflicts") or []:
        lines.extend(_conflict_lines(c))
    for e in r.get("errors") or []:
        lines.append(f"left alone: {one_line(str(e['error']))}")
    for s in r.get("redactions") or []:
        lines.append(f"warning: {one_line(str(s['path']))}: {one_line(str(s['message']))}")
    trouble = len(r.get("conflicts") or []) + len(r.get("errors") or [])
    if trouble:
        lines.append(f"{trouble} file(s) need a person (conflicts or left alone): fix them and run engram sync again")
    return "\n".join(lines)


def _conflict_lines(c: dict[str, Any]) -> list[str]:
    path = one_line(str(c["path"]))
    if c.get("reason"):  # a file to fix by hand: merge markers, a conflicted copy, a shared id
        return [f"conflict: {path} {one_line(str(c['reason']))}", f"  {one_line(str(c['resolve']))}"]
    return [
        f"conflict: {path} ({c['memory_id']}) changed here and in the file since the last sync",
        f"  file:  {_preview(c.get('file'))}",
        f"  local: {_preview(c.get('local'))}",
        f"  {one_line(str(c['resolve']))}",
    ]


def _preview(text: str | None, limit: int = 100) -> str:
    if text is None:
        return "(deleted)"
    one = " ".join(printable(text).split())
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
    if getattr(a, "include_sensitive", False):
        payload["include_sensitive"] = True
    started = time.perf_counter()
    res = app.call_with_progress("import_from", payload)
    res["seconds"] = round(time.perf_counter() - started, 2)
    app.out(res, render_import_from)
    return EXIT_OK


def render_import_from(r: dict[str, Any]) -> str:
    """The per-source report: read, added, updated, unchanged, removed at the source, skipped
    (counted by reason, then listed), and what the store refused. A source's file names and
    reasons quoting them are one line each (`one_line`): a name cannot print report lines."""
    read = ", ".join(_count(v, _KIND_NOUNS.get(k, k)) for k, v in r["read"].items()) or "nothing"
    head = f"{r['source']} from {r['path']}: read {read}"
    verb = ("would add", "would update") if r["dry_run"] else ("added", "updated")
    lines = [f"{head} (dry run, nothing written)" if r["dry_run"] else f"{head} in {r.get('seconds', 0)} s"]
    lines.append(
        f"{verb[0]} {_count(r.get('added', r.get('new_memories', 0)), 'memory')}, "
        f"{verb[1]} {r.get('updated', 0)}, {r.get('unchanged', r.get('already_present', 0))} unchanged"
    )
    if not r["dry_run"]:
        got = (r.get("imported") or {}).get("counts", {})
        lines.append(
            f"graph: {_count(got.get('entity', 0), 'new entity')}, {_count(got.get('relation', 0), 'new relation')}, "
            f"{_count(got.get('mention', 0), 'new mention')}"
        )
        if got.get("vectors_deferred"):  # services/backfill.py
            lines.append(
                f"{_count(got['vectors_deferred'], 'memory')} found by keywords now, by meaning once the daemon has "
                "computed their vectors in the background (`engram status` counts those awaiting)"
            )
        for entry in (r.get("imported") or {}).get("rejected") or []:
            lines.append(f"not imported: {one_line(str(entry.get('error')))}")
        for entry in r.get("rejected_updates") or []:
            lines.append(f"not updated: {entry.get('memory_id')}: {one_line(str(entry.get('error')))}")
    if r.get("removed_at_source"):
        lines.append(
            f"{_count(r['removed_at_source'], 'memory')} no longer in the source (kept here; "
            "`engram forget ID` to drop one):"
        )
        lines += [f"  {e['memory_id']}  {one_line(str(e['where']))}" for e in r.get("removed") or []]
    if r.get("legacy_kept"):
        lines.append(
            f"{_count(r['legacy_kept'], 'memory')} imported before sources were recorded kept as they are, "
            "the new text beside each (`engram forget ID` drops the old one):"
        )
        lines += [f"  {mid}" for mid in r.get("legacy_kept_ids") or []]
    for reason, n in (r.get("skipped_reasons") or {}).items():
        lines.append(f"skipped {n}: {one_line(str(reason))}")
    for s in r.get("skipped") or []:
        lines.append(f"  {one_line(str(s['where']))}: {one_line(str(s['why']))}")
    if r.get("skipped_count", 0) > len(r.get("skipped") or []):
        lines.append(f"  ... and {r['skipped_count'] - len(r['skipped'])} more (see --json)")
    return "\n".join(lines)


_KIND_NOUNS = {"memory": "memory", "entity": "entity", "mention": "mention", "relation": "relation"}
_PLURALS = {"memory": "memories", "entity": "entities", "new memory": "new memories", "new entity": "new entities"}


def _count(n: int, noun: str) -> str:
    """`1 memory`, `10 memories`: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else _PLURALS.get(noun, noun + 's')}"
