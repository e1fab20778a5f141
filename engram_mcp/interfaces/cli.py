"""`engram`: the command line over the same service layer (through the owner process).

Run inside a project directory (or pass --project). Output is for people by default
and JSON with --json. The CLI only translates: arguments -> one daemon operation ->
rendering; a typed error becomes exit code 1 with its message on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from engram_mcp.core import operations
from engram_mcp.core.config_keys import DEFAULT_CONFIG
from engram_mcp.core.display import printable
from engram_mcp.core.errors import EngramError, InvalidInput
from engram_mcp.core.ids import short_id
from engram_mcp.core.paths import resolve_project_root
from engram_mcp.core.vocabulary import (
    CONSOLIDATE_STRATEGIES,
    MEMORY_TYPES,
    PERSISTENT_SCOPES,
    RECALL_STRATEGIES,
    SCOPES,
)
from engram_mcp.daemon.client import DaemonClient, stop_daemon, user_dir_from_env
from engram_mcp.interfaces import cli_travel

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
DEFAULT_STORE_TYPE = "semantic"
DEFAULT_STORE_SCOPE = "project"


# ------------------------------------------------------------------ rendering
PROGRESS_MIN_INTERVAL_S = 0.2  # redraw a bar at most 5 times a second
PROGRESS_FALLBACK_SIZE = (100, 24)  # columns, lines of a terminal that does not say its size


def progress_wanted(json_output: bool) -> bool:
    """Bars only for a person at a terminal: never with --json, never into a pipe or file
    (stdout carries the result, stderr carries the bar; both must be terminals)."""
    return not json_output and sys.stdout.isatty() and sys.stderr.isatty()


class ProgressBars:
    """Progress of a long daemon operation (import, export, reindex, maintain) on stderr:
    count, rate and ETA, one tqdm bar per phase (the daemon labels each update with its
    phase, e.g. "import", "embed", "export user"). Does nothing when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._label: str | None = None

    def __call__(self, done: int, total: int | None, label: str) -> None:
        if not self.enabled:
            return
        if label == "done":
            self.close()
            return
        if label != self._label or self._bar is None:
            self.close()
            from tqdm import tqdm

            # $COLUMNS/$LINES, else the terminal's size, else the fallback: tqdm would take a terminal
            # that reports 0 x 0 (a bare pseudo-terminal) at its word and draw nothing at all.
            size = shutil.get_terminal_size(PROGRESS_FALLBACK_SIZE)
            self._bar = tqdm(
                total=total,
                desc=label,
                unit=" memories",
                file=sys.stderr,
                ncols=size.columns or PROGRESS_FALLBACK_SIZE[0],
                nrows=size.lines or PROGRESS_FALLBACK_SIZE[1],
                mininterval=PROGRESS_MIN_INTERVAL_S,
                leave=True,
            )
            self._label = label
        if total is not None and self._bar.total != total:
            self._bar.total = total
        self._bar.update(max(0, done - self._bar.n))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._label = None, None


# Tool names in messages written for the MCP interface (the service's errors and hints name
# the tools Claude calls), and what a person at the command line types instead. Every tool
# has an entry (tests/test_cli.py checks), so no MCP name reaches a CLI user.
CLI_FOR_TOOL_PHRASE = (
    ("forget_memory with undo=true", "`engram forget <id> --undo`"),
    ("undo=true", "--undo"),
    ("recall_memories", "`engram recall`"),
    ("store_memory", "`engram store`"),
    ("update_memory", "`engram update`"),
    ("forget_memory", "`engram forget`"),
    ("promote_memory", "`engram promote`"),
    ("get_memory_status", "`engram status`"),
    ("get_memory_context", "`engram context`"),
    ("reflect_and_consolidate", "`engram consolidate`"),
    ("search_knowledge_graph", "`engram recall --strategy graph`"),
    ("include_forgotten", "`engram list --status all`"),
)


def for_cli(text: str) -> str:
    """A message written for the MCP interface, with each tool name replaced by its CLI command."""
    if not isinstance(text, str):
        return text
    for phrase, command in CLI_FOR_TOOL_PHRASE:
        text = text.replace(phrase, command)
    return text


def _short(text: str, n: int = 100) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def origin_marker(origin: dict[str, Any]) -> str:
    """An origin (services/records.origin_of) in a word for one-line listings: `user`, `claude`,
    `hook`, `team:<author>`, `sync`, `import:<tool>`; a teammate's name is their text, cut short."""
    kind = str(origin.get("kind") or "claude")
    if kind == "team-file":
        author = _short(printable(str(origin.get("author") or "")).split("<")[0], 20).replace(" ", "_")
        return f"team:{author}" if author else "team"
    if kind == "user-sync":
        return "sync"
    if kind == "import":
        return f"import:{_short(printable(str(origin.get('tool') or '')), 20)}".rstrip(":")
    return printable(kind)


def origin_words(origin: dict[str, Any]) -> str:
    """An origin for `engram show`: its kind, then each detail it carries (`via cli`, `path ...`,
    `author ...`)."""
    details = ", ".join(f"{k} {_short(printable(str(v)), 120)}" for k, v in origin.items() if k != "kind")
    return printable(f"{origin.get('kind')}") + (f" ({details})" if details else "")


def render_memory_line(m: dict[str, Any]) -> str:
    score = f"{m['score']:.3f} " if "score" in m else ""
    cat = f"/{m['category']}" if m.get("category") else ""
    old = f"  (superseded by {m['superseded_by']})" if m.get("superseded_by") else ""
    return f"{score}{m['id']}  [{m['scope']} {m['type']}{cat} imp={m['importance']:.2f} str={m.get('strength', 0):.2f}]  {_short(m['content'])}{old}"


def render_stored(r: dict[str, Any]) -> str:
    """`created memory:... (project semantic)`, then warnings and a possible supersession to act on."""
    out = f"{r['action']} {r['memory_id']} ({r['scope']} {r['type']})" + "".join(
        f"\nwarning: {for_cli(w['message'])}" for w in r.get("warnings", [])
    )
    if r.get("supersedes"):
        out += f"\nreplaces {r['supersedes']} (a fact changed; the old one is hidden from recall)"
    near = r.get("near_duplicate")
    if near and not r.get("supersedes") and not r.get("possibly_supersedes"):
        out += f"\nkept apart from {near['memory_id']} ({near['similarity']}): {for_cli(near['not_merged_because'])}"
    hint = r.get("possibly_supersedes")
    if hint:
        out += (
            f"\nclose to an older memory {hint['memory_id']} ({hint['similarity']}): {_short(hint['content'])}"
            f"\nif the new one replaces it: engram update {r['memory_id']} --supersedes {hint['memory_id']}"
        )
    return out


def render_recall(res: dict[str, Any]) -> str:
    lines = [render_memory_line(m) for m in res["memories"]]
    lines.append(
        f"({len(res['memories'])} of {res['total_matched']} matched, {res['strategy_used']}, {res['query_time_ms']} ms)"
    )
    lines += [f"warning: {for_cli(w.get('message'))}" for w in res.get("warnings", [])]
    return "\n".join(lines)


def render_memory(m: dict[str, Any]) -> str:
    keys = [
        "id",
        "type",
        "scope",
        "category",
        "status",
        "importance",
        "confidence",
        "strength",
        "access_count",
        "tags",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "session_id",
        "version",
        "also_in",
        "source",
    ]
    out = [f"{k:>17}: {m.get(k)}" for k in keys if m.get(k) not in (None, [], {})]
    if isinstance(m.get("origin"), dict):
        out.insert(3, f"{'origin':>17}: {origin_words(m['origin'])}")
    # a body's later lines are indented under it: none can pass for a field (`origin: user`)
    out.append(f"{'content':>17}: " + str(m.get("content")).replace("\n", "\n" + " " * 19))
    for e in m.get("promotion_chain") or []:
        out.append(f"{'promoted':>17}: from {e.get('scope')} ({e.get('action')}) at {e.get('promoted_at')}")
    for e in m.get("entities") or []:
        out.append(f"{'entity':>17}: {e.get('name')} ({e.get('entity_type')}, {e.get('relationship')})")
    for link in m.get("links") or []:
        out.append(f"{'link':>17}: {link['from']} {link['relation']} {link['to']}")
    for h in m.get("history") or []:
        out.append(
            f"{'history v' + str(h['version']):>17}: {h['change']} at {h['changed_at']}: {_short((h.get('snapshot') or {}).get('content', ''), 80)}"
        )
    return "\n".join(out)


def render_status(s: dict[str, Any]) -> str:
    lines = [f"engram: {s['connection']['status']} ({s['connection']['mode']}), project {s['project_root']}"]
    for scope, info in s["scopes"].items():
        if info.get("status") != "connected":
            lines.append(f"  {scope:<8} UNAVAILABLE: {info.get('message')}")
            continue
        types = ", ".join(f"{k} {v}" for k, v in sorted(info["by_type"].items())) or "empty"
        size = f", {info['database_size_bytes'] / 1e6:.1f} MB" if info.get("database_size_bytes") else ""
        lines.append(f"  {scope:<8} {info['total']:>6} memories ({types}); {info['entities']} entities{size}")
        if info.get("superseded"):
            lines.append(f"           {info.get('live', 0)} live, {info['superseded']} superseded (hidden from recall)")
        awaiting = int(info.get("awaiting_vectors") or 0)
        if awaiting:  # a large import's vectors, being computed by the daemon (services/backfill.py)
            lines.append(f"           {awaiting} memories awaiting vectors (computed in the background)")
        if int(info.get("without_vectors") or 0) > awaiting:
            lines.append(f"           {info['without_vectors'] - awaiting} without vectors: run `engram reindex`")
    if s.get("config_problem"):
        detail = "\n           ".join(str(s["config_problem"]).splitlines())
        lines.append(f"  config   {detail}")
        lines.append("           engram runs on the defaults for what is broken; fix the file or variable named above")
    e = s["embedding"]
    lines.append(f"  model    {e['model']} ({e['dimensions']}-d){' ERROR: ' + e['error'] if e.get('error') else ''}")
    wq = s.get("write_queue") or {}
    if wq.get("pending") or wq.get("rejected"):
        waiting = f"; waiting for: {'; '.join(wq['blocked_by'])}" if wq.get("blocked_by") else ""
        lines.append(f"  queue    {wq.get('pending', 0)} queued writes, {wq.get('rejected', 0)} rejected{waiting}")
        if wq.get("rejected"):
            lines.append(f"           rejected writes (with their errors): {wq.get('spool_dir')}/rejected/")
    return "\n".join(lines)


# ------------------------------------------------------------------ commands
class App:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.project = resolve_project_root(args.project)
        self.session = args.session or os.environ.get("CLAUDE_CODE_SESSION_ID") or os.environ.get("ENGRAM_SESSION_ID")
        self.client = DaemonClient(user_dir_from_env(), client_name="cli")

    def call(self, op: str, payload: dict[str, Any] | None = None, **kw: Any) -> Any:
        """One daemon operation; its name must be one of the registry's (`core/operations.py`)."""
        if operations.get(op) is None:
            raise ValueError(f"{op!r} is not an engram operation")  # a bug in this module, not the user's input
        return self.client.call(op, payload, project_root=self.project, session_id=self.session, **kw)

    def call_with_progress(self, op: str, payload: dict[str, Any]) -> Any:
        """A long operation: the daemon streams progress lines before its answer; they are drawn
        as bars on a terminal (never with --json or into a pipe, see `progress_wanted`)."""
        has_progress = operations.BY_NAME[op].progress
        bars = ProgressBars(has_progress and progress_wanted(bool(self.args.json)))
        # Progress is asked for even when no bar is drawn (--json, a pipe): each progress line
        # restarts the client's wait, so a long import answers instead of timing out at 120 s.
        listener = bars if bars.enabled else (_ignore_progress if has_progress else None)
        try:
            return self.call(op, payload, on_progress=listener)
        finally:
            bars.close()

    def out(self, result: Any, human: Callable[[Any], str] | None = None) -> None:
        """Print an answer: `--json` exactly (a program reads it); for a person, every report
        goes through `printable` at this one place, whatever the renderer: memory bodies, tags,
        file names and authors come from other people (a cloned repository, a synced folder,
        an import), and an escape sequence, C1 control or bidi override in them must never act
        on the terminal (hide text, plant a link, reorder a command)."""
        if self.args.json:
            print(json.dumps(result, ensure_ascii=False, indent=None, default=str))
        elif human is None:
            print(printable(json.dumps(result, ensure_ascii=False, indent=2, default=str)))
        else:
            print(printable(human(result)))


def _ignore_progress(*_: Any) -> None:
    """A progress listener that draws nothing (the lines still keep the call alive)."""


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _text_argument(text: str) -> str:
    """The text to store: the argument, or standard input when it is `-` (as cat, git and
    most tools read it), so long or multi-line text needs no shell quoting."""
    if text != "-":
        return text
    if sys.stdin is None or sys.stdin.isatty():
        raise EngramError(
            "-: reads the text from standard input, but none was piped in "
            "(e.g. `git log -1 --format=%B | engram store - --type episodic`)"
        )
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EngramError(
            f"-: standard input is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def cmd_store(app: App) -> int:
    a = app.args
    res = app.call(
        "store",
        {
            "content": _text_argument(a.text),
            "type": a.type,
            "scope": a.scope,
            "importance": a.importance,
            "tags": _csv(a.tags),
            "category": a.category,
            "summary": a.summary,
            "source": {"tool": "cli", "origin": "user", "via": "cli"},
            **({"supersedes": a.supersedes} if a.supersedes else {}),
        },
    )
    app.out(res, render_stored)
    return EXIT_OK


def _recall_args(a: argparse.Namespace, query: str) -> dict[str, Any]:
    return {
        k: v
        for k, v in {
            "query": query,
            "scope": _csv(a.scope),
            "type": _csv(a.type),
            "limit": a.limit,
            "strategy": a.strategy,
            "category": _csv(a.category),
            "tags": _csv(a.tags),
            "include_superseded": a.include_superseded or None,
            "strengthen": False if a.no_strengthen else None,
        }.items()
        if v is not None
    }


def cmd_recall(app: App) -> int:
    a = app.args
    if a.batch:
        return _recall_batch(app)
    if a.query is None:
        print(
            "engram recall: give a QUERY or --batch FILE.jsonl (to browse without a query: engram list)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not a.query.strip():
        print(
            "engram recall: the query is empty. To see memories without a query, newest first, use "
            "`engram list` (filters: --scope, --type, --status, --tag, --since, --older-than).",
            file=sys.stderr,
        )
        return EXIT_USAGE
    app.out(app.call("recall", _recall_args(a, a.query)), render_recall)
    return EXIT_OK


def _recall_batch(app: App) -> int:
    """One query per input line (a JSON object with "query" and optional filters, or a
    JSON string), one JSON answer per output line, in order; one process, one connection."""
    path = app.args.batch
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8")
    failures = 0
    with stream:
        for n, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                payload = {"query": item} if isinstance(item, str) else dict(item)
                qid = payload.pop("id", None)
                base = _recall_args(app.args, payload.get("query", ""))
                base.update(payload)
                result = app.call("recall", base)
                answer = {"id": qid, "line": n, **result}
            except (EngramError, json.JSONDecodeError, TypeError, ValueError) as exc:
                failures += 1
                answer = {
                    "line": n,
                    "error": exc.envelope()
                    if isinstance(exc, EngramError)
                    else {"error": "invalid_input", "message": str(exc)},
                }
            print(json.dumps(answer, ensure_ascii=False, default=str), flush=True)
    return EXIT_OK if not failures else EXIT_ERROR


def cmd_list(app: App) -> int:
    """Browse memories newest first, a page at a time (no ranking, nothing strengthened)."""
    a = app.args
    payload = {
        k: v
        for k, v in {
            "scope": _csv(a.scope),
            "type": _csv(a.type),
            "status": _csv(a.status),
            "tags": _csv(a.tag),
            "category": _csv(a.category),
            "after": _age_bound(a.since, "--since"),
            "before": _age_bound(a.older_than, "--older-than"),
            "limit": a.limit,
            "page": a.page,
        }.items()
        if v is not None
    }
    app.out(app.call("list", payload), lambda r: render_list(r, a))
    return EXIT_OK


AGE_UNITS_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _age_bound(value: str | None, flag: str) -> str | None:
    """`7d`, `12h`, `30m`, `2w` (that long ago) or an ISO date/date-time -> ISO 8601 (UTC)."""
    if value is None:
        return None
    from datetime import datetime, timedelta, timezone

    text = value.strip().lower()
    if len(text) >= 2 and text[-1] in AGE_UNITS_S and text[:-1].isdigit():
        return (datetime.now(timezone.utc) - timedelta(seconds=int(text[:-1]) * AGE_UNITS_S[text[-1]])).isoformat()
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise EngramError(
            f"{flag} {value[:40]!r}: give an age such as 30m, 12h, 7d or 2w, or a date such as 2026-11-01"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).isoformat()


def render_list(r: dict[str, Any], a: argparse.Namespace) -> str:
    """One line per memory: short id (accepted by show/update/forget/promote), date, scope, type,
    status, origin (`origin_marker`), preview (`--json` keeps the full ids)."""
    lines = []
    for m in r["memories"]:
        bare = short_id(str(m["id"]).split(":", 1)[-1])
        when = str(m.get("created_at") or "")[:16].replace("T", " ")
        cat = f"/{m['category']}" if m.get("category") else ""
        origin = origin_marker(m.get("origin") or {})
        status = "superseded" if m.get("superseded_by") else m["status"]
        lines.append(
            f"{bare}  {when}  {m['scope']:<7} {m['type'] + cat:<12} {status:<9} {origin:<8} {_short(m.get('summary') or m['content'], 80)}"
        )
    if not r["memories"]:
        lines.append(
            "(no memories match)"
            if r["total_matched"] or r["page"] == 1
            else f"(page {r['page']} is past the last page, {r['pages']})"
        )
    else:
        first = (r["page"] - 1) * r["limit"] + 1
        lines.append(
            f"({first}-{first + len(r['memories']) - 1} of {r['total_matched']}, newest first; page {r['page']} of {r['pages']})"
        )
    if r.get("next_page"):
        lines.append(
            f"next page: engram list --page {r['next_page']}"
            + ("" if a.limit is None else f" --limit {a.limit}")
            + " (same filters)"
        )
    lines += [f"warning: {for_cli(w.get('message'))}" for w in r.get("warnings", [])]
    return "\n".join(lines)


def cmd_tags(app: App) -> int:
    """The tags in use, most used first, with their counts (what `list --tag` can filter by)."""
    payload = {"scope": _csv(app.args.scope), "limit": app.args.limit}
    app.out(app.call("tags", {k: v for k, v in payload.items() if v is not None}), render_tags)
    return EXIT_OK


def render_tags(r: dict[str, Any]) -> str:
    """One line per tag: count, tag, and the count per scope when it is in more than one."""
    lines = []
    for t in r["tags"]:
        where = ", ".join(f"{s} {n}" for s, n in t["by_scope"].items())
        lines.append(f"{t['count']:>6}  {for_cli(t['tag'])}" + (f"  ({where})" if len(t["by_scope"]) > 1 else ""))
    if not r["tags"]:
        lines.append("(no tags in use)")
    elif r["total_tags"] > len(r["tags"]):
        lines.append(f"({len(r['tags'])} of {r['total_tags']} tags; --limit shows more)")
    lines += [f"warning: {for_cli(w.get('message'))}" for w in r.get("warnings", [])]
    return "\n".join(lines)


def cmd_show(app: App) -> int:
    app.out(app.call("get", {"memory_id": app.args.id, "history": app.args.history}), render_memory)
    return EXIT_OK


def cmd_update(app: App) -> int:
    a = app.args
    payload: dict[str, Any] = {"memory_id": a.id}
    for key in ("content", "summary", "importance", "category", "supersedes"):
        if getattr(a, key) is not None:
            payload[key] = getattr(a, key)
    if payload.get("content") == "-":
        payload["content"] = _text_argument("-")
    if a.add_tags or a.remove_tags:
        payload["tags"] = {"add": _csv(a.add_tags) or [], "remove": _csv(a.remove_tags) or []}
    app.out(
        app.call("update", payload),
        lambda r: f"updated {r['memory_id']} (version {r['version']}): {', '.join(r['updated_fields']) or 'no change'}",
    )
    return EXIT_OK


def cmd_forget(app: App) -> int:
    a = app.args
    if a.purge_now:
        app.out(
            app.call("forget", {"memory_id": a.id, "reason": a.reason, "undo": a.undo, "purge_now": True}), _purged_line
        )
        return EXIT_OK
    app.out(
        app.call("forget", {"memory_id": a.id, "reason": a.reason, "undo": a.undo}),
        lambda r: (
            f"{r['memory_id']} is now {r['status']}"
            + ("" if a.undo else f"; `engram forget {r['memory_id']} --undo` restores it")
        ),
    )
    return EXIT_OK


def _purged_line(r: dict[str, Any]) -> str:
    """What --purge-now did: the copies purged and each store rewritten (or why not)."""
    stores = "; ".join(
        f"{c['directory']} rewritten ({c['bytes_before']} -> {c['bytes_after']} bytes, {c['seconds']} s)"
        for c in r.get("compacted", [])
    )
    problems = "; ".join(w["message"] for w in r.get("warnings", []))
    return (
        f"{r['memory_id']} purged in {', '.join(r['scopes'])}: text, history and vector removed (cannot be undone)"
        + (f"\n{stores}" if stores else "")
        + (f"\nnot compacted: {problems}" if problems else "")
    )


def cmd_promote(app: App) -> int:
    a = app.args
    app.out(
        app.call("promote_by_user", {"memory_id": a.id, "target_scope": a.scope, "reason": a.reason}),
        lambda r: f"{r['memory_id']}: {r['previous_scope']} -> {r['new_scope']} ({r['action']} as {r['target_id']})",
    )
    return EXIT_OK


def cmd_status(app: App) -> int:
    app.out(app.call("status"), render_status)
    return EXIT_OK


def _export_target(file: str) -> Path:
    """The export file, checked here: a directory that does not exist is a typo far more often
    than a wish, so it is an error (create it first), never a silent `mkdir -p`."""
    path = Path(file).expanduser().resolve()
    if path.is_dir():
        raise InvalidInput(
            f"export: {file} is a directory; give a file name, e.g. {Path(file) / 'memories.jsonl'}", field="file"
        )
    if not path.parent.is_dir():
        raise InvalidInput(
            f"export: the directory {path.parent} does not exist; create it first (mkdir -p {path.parent}) "
            "or choose another path",
            field="file",
        )
    return path


def cmd_export(app: App) -> int:
    a = app.args
    scopes = _csv(a.scope) or list(PERSISTENT_SCOPES)
    target = _export_target(a.file)
    res = app.call_with_progress("export", {"path": str(target), "scopes": scopes, "include_vectors": not a.no_vectors})
    app.out(res, lambda r: f"exported to {r['path']}: " + ", ".join(f"{v} {k}" for k, v in r["counts"].items()))
    return EXIT_OK


def cmd_import(app: App) -> int:
    a = app.args
    if a.source and a.keep_origins:
        raise InvalidInput("import: --keep-origins goes with an engram export file, not --from", field="keep_origins")
    if a.source:
        return cli_travel.cmd_import_from(app)
    if a.dry_run or a.source_project:
        raise InvalidInput("import: --dry-run and --source-project go with --from SOURCE", field="source")
    if not a.file:
        raise InvalidInput("import: give the export file, or --from SOURCE for another tool's memories", field="file")
    started = time.perf_counter()
    payload = {"path": str(Path(a.file).expanduser().resolve()), "target_scope": a.scope}
    if a.keep_origins:
        payload["keep_origins"] = True
    res = app.call_with_progress("import", payload)
    res["seconds"] = round(time.perf_counter() - started, 2)
    app.out(res, render_import)
    return EXIT_OK


def render_import(r: dict[str, Any]) -> str:
    """Counts, then each line that was not imported (file:line: why), so it can be fixed."""
    lines = [
        f"imported from {r['path']} in {r['seconds']} s: " + ", ".join(f"{v} {k}" for k, v in r["counts"].items() if v)
    ]
    origins = r.get("origins") or {}
    if origins:
        lines.append(("origins kept: " if origins.get("kept") else "origins not kept: ") + for_cli(origins["why"]))
    rejected = r.get("rejected") or []
    for entry in rejected:
        lines.append(f"not imported: {entry.get('error')}")
    missing = int(r["counts"].get("rejected", 0)) - len(rejected)
    if missing > 0:
        lines.append(f"... and {missing} more lines not imported (see --json)")
    return "\n".join(lines)


def cmd_reindex(app: App) -> int:
    app.out(
        app.call_with_progress("reindex", {}),
        lambda r: f"re-embedded {r['reindexed']} memories with {r['model']} ({r['failed']} failed)",
    )
    return EXIT_OK


def render_maintain(r: dict[str, Any]) -> str:
    lines = []
    for scope, info in r.items():
        if isinstance(info, dict) and info.get("error"):
            lines.append(f"{scope}: not maintained: {info['error']}")
        elif isinstance(info, dict):
            moved = ", ".join(f"{k} {v}" for k, v in info.items() if v and k != "compaction") or "nothing to change"
            lines.append(f"{scope}: {moved}")
            done = info.get("compaction")
            if isinstance(done, dict) and done.get("error"):
                lines.append(f"{scope}: not compacted: {done['error']}")
            elif isinstance(done, dict):
                lines.append(
                    f"{scope}: compacted {done.get('bytes_before', 0) / 2**20:.1f} MB -> "
                    f"{done.get('bytes_after', 0) / 2**20:.1f} MB in {done.get('seconds')} s"
                )
        else:
            lines.append(f"{scope}: {info}")
    return "\n".join(lines)


def cmd_maintain(app: App) -> int:
    app.out(app.call_with_progress("maintain", {}), render_maintain)
    return EXIT_OK


def cmd_context(app: App) -> int:
    res = app.call("context", {"task_description": app.args.task, "max_tokens": app.args.max_tokens})
    app.out(res, lambda r: r["context_block"] or "(no memories yet)")
    return EXIT_OK


def render_consolidation(r: dict[str, Any]) -> str:
    """The consolidation plan (or what was applied) for a person, one item per line."""
    applied = r.get("applied")
    head = f"consolidation of the {r.get('scope')} scope" + (
        " (applied)" if applied else " (plan only; --apply to carry it out)"
    )
    lines = [head]
    for item in r.get("consolidated_memories") or []:
        lines.append(
            f"  summarise {len(item.get('derived_from') or [])} episodes -> {_short(item.get('content', ''), 90)}"
        )
    for p in r.get("patterns_detected") or []:
        lines.append(
            f"  pattern x{p.get('frequency')} in {p.get('sessions')} sessions (for {p.get('suggested_scope')}): {_short(p.get('pattern', ''), 80)}"
        )
    for d in r.get("duplicates") or []:
        lines.append(f"  duplicates: {', '.join(d.get('memory_ids') or [])}")
    if r.get("archive_candidates"):
        lines.append(f"  archive (low importance, never used): {', '.join(r['archive_candidates'])}")
    for c in r.get("queued") or []:
        lines.append(f"  queued for review: {c.get('memory_id')} ({c.get('reason')})")
    if len(lines) == 1:
        lines.append("  nothing to consolidate")
    stats = r.get("session_stats") or {}
    lines.append(f"  {stats.get('memories_analyzed', 0)} memories analysed")
    if applied:
        lines.append(
            f"  applied: {len(applied.get('created') or [])} summaries created, {applied.get('merged', 0)} duplicates merged, "
            f"{applied.get('archived', 0)} archived"
        )
    return "\n".join(lines)


def cmd_consolidate(app: App) -> int:
    res = app.call("consolidate", {"strategy": app.args.strategy, "dry_run": not app.args.apply})
    app.out(res, render_consolidation)
    return EXIT_OK


def render_daemon(r: dict[str, Any]) -> str:
    if r.get("stopped"):
        return f"engram daemon stopped (pid {r.get('pid')}, exited after {r.get('waited_s', 0):.1f} s)"
    if r.get("stopped") is False:
        return str(r.get("message", "engram daemon did not exit"))
    if r.get("stopping"):
        return "engram daemon stopping"
    if r.get("pong"):
        return f"engram daemon running (pid {r.get('pid')}{', ready' if r.get('ready', True) else ', loading'})"
    return f"engram daemon not running: {r.get('message', '')}".rstrip(": ")


def cmd_daemon(app: App) -> int:
    action = app.args.action
    client = DaemonClient(user_dir_from_env(), autostart=action == "start")
    try:
        if action == "stop":  # returns once the process has exited: its last index writes are done
            res = stop_daemon(user_dir_from_env())
        else:
            res = client.call("ping")
    except EngramError as exc:
        res = {"running": False, "message": exc.message}
    app.out(res, render_daemon)
    return EXIT_ERROR if res.get("stopped") is False else EXIT_OK


def cmd_doctor(app: App) -> int:
    from engram_mcp.interfaces.doctor import run_doctor

    report = run_doctor(app.project, app.session)
    app.out(report, lambda r: "\n".join(f"{'✔' if c['ok'] else '✘'} {c['check']}: {c['detail']}" for c in r["checks"]))
    return EXIT_OK if report["ok"] else EXIT_ERROR


def cmd_adopt_store(app: App) -> int:
    """Take this project's store as the user's own (`core/store_owner.py`): one restored from a
    backup or carried from another machine, which engram refused as not made here for them."""
    from engram_mcp.core import store_owner
    from engram_mcp.core.paths import UnsafePath, user_dir

    try:
        path = store_owner.adopt(user_dir(), app.project)
    except UnsafePath as exc:
        app.out({"adopted": False, "error": exc.message}, lambda r: f"not adopted: {r['error']}")
        return EXIT_ERROR
    app.out(
        {"adopted": True, "store": str(path)},
        lambda r: f"{r['store']} is now your project store: its memories are shown as yours from the next request",
    )
    return EXIT_OK


def cmd_serve(app: App) -> int:
    from engram_mcp.interfaces.server import main as serve_main

    serve_main()
    return EXIT_OK


def cmd_ui(app: App) -> int:
    """Serve the web viewer on the loopback interface until Ctrl-C (interfaces/ui/server.py)."""
    from engram_mcp.interfaces.ui.server import PortUnavailable, serve

    as_json = bool(getattr(app.args, "json", False))
    try:
        return serve(app.project, app.session, port=app.args.port, open_browser=not app.args.no_open, as_json=as_json)
    except PortUnavailable as exc:  # a taken or forbidden port is the user's to fix: no traceback
        if as_json:
            print(json.dumps({"error": "port_unavailable", "message": str(exc)}), file=sys.stderr)
        else:
            print(f"engram ui: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _ui_port(text: str) -> int:
    """`--port`: 0 (any free port) to 65535, checked before anything starts."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is out of range: give 1 to 65535, or 0 for a free one")
    return port


# ------------------------------------------------------------------ parser
class _Subcommands:
    """The subcommand table, each subcommand taking the common options too (--json also after the command)."""

    def __init__(self, action: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
        self._action = action
        self._common = common

    def add_parser(self, *args: Any, **kwargs: Any) -> argparse.ArgumentParser:
        return self._action.add_parser(*args, parents=[self._common], **kwargs)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="engram", description="Lasting, hierarchical memory for Claude Code.")
    p.add_argument("--project", help="project directory (default: the current directory's project root)")
    p.add_argument("--session", help="Claude Code session id (default: $CLAUDE_CODE_SESSION_ID)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    sub = _Subcommands(p.add_subparsers(dest="command", required=True, metavar="COMMAND"), common)

    s = sub.add_parser(
        "store",
        help="store a memory",
        description="Store a memory. Example: engram store 'Run tests with make test' --type procedural --scope project --tags testing; "
        "or pipe the text in: git log -1 --format=%B | engram store - --type episodic",
    )
    s.add_argument("text", help="the text to remember; - reads it from standard input")
    s.add_argument(
        "--type",
        default=DEFAULT_STORE_TYPE,
        choices=MEMORY_TYPES,
        help=f"semantic: a fact; procedural: how to do something; episodic: an event; working: scratch (default: {DEFAULT_STORE_TYPE})",
    )
    s.add_argument(
        "--scope",
        default=DEFAULT_STORE_SCOPE,
        choices=SCOPES,
        help=f"project: this codebase; user: everywhere; session: this conversation (default: {DEFAULT_STORE_SCOPE})",
    )
    s.add_argument("--tags", help="comma-separated")
    s.add_argument("--importance", type=float)
    s.add_argument("--category", help="decision, convention, error_fix, preference, ...")
    s.add_argument("--summary")
    s.add_argument(
        "--supersedes", metavar="OLD_ID", help="this memory replaces OLD_ID: recall hides OLD_ID from then on"
    )
    s.set_defaults(fn=cmd_store)

    r = sub.add_parser(
        "recall",
        help="search memories across scopes",
        description="Recall memories. Example: engram recall 'how do I run the tests' --limit 5 "
        "(to browse without a query, newest first: engram list)",
    )
    r.add_argument("query", nargs="?")
    r.add_argument("--scope", help="session,project,user (comma-separated)")
    r.add_argument("--type", help="comma-separated types")
    r.add_argument("--category")
    r.add_argument("--tags")
    r.add_argument("--limit", type=int, default=10, help="memories to return, 1 to 50 (default: 10)")
    r.add_argument("--strategy", choices=RECALL_STRATEGIES, default="hybrid", help="(default: hybrid)")
    r.add_argument("--batch", help="JSONL file of queries ('-' for stdin): one answer per line")
    r.add_argument(
        "--include-superseded",
        action="store_true",
        help="also memories replaced by a newer one (hidden by default; each names its successor)",
    )
    r.add_argument(
        "--no-strengthen",
        action="store_true",
        help="look without touching: the memories found are not counted as accessed nor strengthened",
    )
    r.set_defaults(fn=cmd_recall)

    ls = sub.add_parser(
        "list",
        help="browse memories newest first, by scope, type, status, tag and age",
        description="Browse memories newest first, a page at a time; nothing is ranked or strengthened. "
        "Example: engram list --scope project --type procedural --since 7d",
    )
    ls.add_argument("--scope", help="session,project,user (comma-separated; default: all)")
    ls.add_argument("--type", help="episodic,semantic,procedural,working (comma-separated; default: all)")
    ls.add_argument(
        "--status", help="created,active,consolidated,archived,forgotten or all (default: created,active,consolidated)"
    )
    ls.add_argument("--tag", help="only memories with any of these tags (comma-separated)")
    ls.add_argument("--category", help="decision, convention, error_fix, preference, ... (comma-separated)")
    ls.add_argument("--since", help="created at most this long ago (30m, 12h, 7d, 2w) or since a date (2026-11-01)")
    ls.add_argument("--older-than", help="created at least this long ago (30m, 12h, 7d, 2w) or before a date")
    ls.add_argument("--limit", type=int, default=None, help="memories per page (default 20, at most 200)")
    ls.add_argument("--page", type=int, default=1, help="page number, 1 = newest (default 1)")
    ls.set_defaults(fn=cmd_list)

    tg = sub.add_parser(
        "tags",
        help="the tags in use, most used first, with counts",
        description="The tags of the memories recall can return, most used first. Example: engram tags --scope project",
    )
    tg.add_argument("--scope", help="session,project,user (comma-separated; default: all)")
    tg.add_argument("--limit", type=int, default=None, help="tags shown (default 50, at most 1000)")
    tg.set_defaults(fn=cmd_tags)

    sh = sub.add_parser("show", help="show one memory", description="Example: engram show memory:01J... --history")
    sh.add_argument("id")
    sh.add_argument("--history", action="store_true")
    sh.set_defaults(fn=cmd_show)

    u = sub.add_parser(
        "update",
        help="update a memory (keeps history)",
        description="Example: engram update memory:01J... --importance 0.9 --add-tags infra",
    )
    u.add_argument("id")
    u.add_argument("--content", help="the new text; - reads it from standard input")
    u.add_argument("--summary")
    u.add_argument("--importance", type=float)
    u.add_argument("--category")
    u.add_argument("--add-tags")
    u.add_argument("--remove-tags")
    u.add_argument(
        "--supersedes", metavar="OLD_ID", help="this memory replaces OLD_ID: recall hides OLD_ID from then on"
    )
    u.set_defaults(fn=cmd_update)

    f = sub.add_parser(
        "forget",
        help="soft-delete a memory (undo with --undo)",
        description="Example: engram forget memory:01J... --reason outdated",
    )
    f.add_argument("id")
    f.add_argument("--reason")
    f.add_argument("--undo", action="store_true")
    f.add_argument(
        "--purge-now",
        action="store_true",
        help="for a secret that slipped through: remove the text and its whole history now and rewrite the store "
        "files so the bytes are gone from disk (cannot be undone)",
    )
    f.set_defaults(fn=cmd_forget)

    pr = sub.add_parser(
        "promote", help="promote a memory to a broader scope", description="Example: engram promote memory:01J... user"
    )
    pr.add_argument("id")
    pr.add_argument("scope", choices=PERSISTENT_SCOPES)
    pr.add_argument("--reason")
    pr.set_defaults(fn=cmd_promote)

    sub.add_parser("status", help="health and counts across scopes").set_defaults(fn=cmd_status)

    e = sub.add_parser(
        "export",
        help="export memories to JSONL (lossless)",
        description="Example: engram export memories.jsonl --scope project,user",
    )
    e.add_argument("file")
    e.add_argument("--scope")
    e.add_argument("--no-vectors", action="store_true", help="omit vectors (smaller; import re-embeds)")
    e.set_defaults(fn=cmd_export)

    i = sub.add_parser(
        "import",
        help="import a JSONL export, or another tool's memories with --from (idempotent)",
        description="Examples: engram import memories.jsonl;  engram import --from claude-mem --dry-run",
    )
    i.add_argument("file", nargs="?", help="the export file (with --from: the source's file or folder)")
    i.add_argument("--scope", choices=PERSISTENT_SCOPES, help="import everything into this scope")
    i.add_argument(
        "--keep-origins",
        action="store_true",
        help="keep the origins an export file states even when this engram did not sign it (your own backup)",
    )
    cli_travel.add_import_options(i)
    i.set_defaults(fn=cmd_import)
    cli_travel.add_parsers(sub)

    sub.add_parser("reindex", help="embed memories stored without a vector").set_defaults(fn=cmd_reindex)
    sub.add_parser("maintain", help="run the decay/lifecycle pass now").set_defaults(fn=cmd_maintain)

    c = sub.add_parser("context", help="print the memory context block")
    c.add_argument("--task")
    c.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_CONFIG.context_token_budget,
        help=f"size of the block (default: {DEFAULT_CONFIG.context_token_budget})",
    )
    c.set_defaults(fn=cmd_context)

    co = sub.add_parser(
        "consolidate",
        help="show (or --apply) the consolidation plan",
        description="Plan a consolidation of the current scope; --apply carries it out.",
    )
    co.add_argument("--strategy", choices=CONSOLIDATE_STRATEGIES, default="full", help="(default: full)")
    co.add_argument("--apply", action="store_true")
    co.set_defaults(fn=cmd_consolidate)

    d = sub.add_parser("daemon", help="start, stop or ping the owner process")
    d.add_argument("action", choices=["start", "stop", "status"])
    d.set_defaults(fn=cmd_daemon)

    sub.add_parser("doctor", help="check model, stores, permissions and config").set_defaults(fn=cmd_doctor)
    sub.add_parser(
        "adopt-store",
        help="take this project's store as yours (one restored from a backup that engram refused)",
    ).set_defaults(fn=cmd_adopt_store)
    sub.add_parser("serve", help="run the MCP server on stdio").set_defaults(fn=cmd_serve)

    ui = sub.add_parser(
        "ui",
        help="see and curate memory in the browser (local page, Ctrl-C stops it)",
        description="Open a local web page to browse, search and curate memory. It listens on 127.0.0.1 only "
        "and needs the per-launch link it prints. Example: engram ui --no-open",
    )
    ui.add_argument("--port", type=_ui_port, default=0, help="port on 127.0.0.1 (default: a free one)")
    ui.add_argument("--no-open", action="store_true", help="print the link without opening a browser")
    ui.set_defaults(fn=cmd_ui)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        app = App(args)
        return args.fn(app)
    except EngramError as exc:
        if getattr(args, "json", False):
            print(json.dumps({**exc.envelope(), "message": for_cli(exc.message)}), file=sys.stderr)
        else:
            print(f"engram: {printable(for_cli(exc.message))}", file=sys.stderr)  # may quote a file's name
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `engram recall ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
