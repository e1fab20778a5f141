"""`engram`: the command line over the same service layer (through the owner process).

Run inside a project directory (or pass --project). Output is for people by default
and JSON with --json. The CLI only translates: arguments -> one daemon operation ->
rendering; a typed error becomes exit code 1 with its message on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .client import DaemonClient, user_dir_from_env
from .errors import EngramError
from .paths import resolve_project_root

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


# ------------------------------------------------------------------ rendering
def _progress(done: int, total: int | None, label: str) -> None:
    """A one-line progress bar on stderr (only when stderr is a terminal or forced)."""
    if not (sys.stderr.isatty() or os.environ.get("ENGRAM_PROGRESS")):
        return
    width = 30
    if total:
        filled = int(width * min(done, total) / total)
        bar = "#" * filled + "." * (width - filled)
        sys.stderr.write(f"\r{label:<16} [{bar}] {done}/{total}")
    else:
        sys.stderr.write(f"\r{label:<16} {done}")
    if total and done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _short(text: str, n: int = 100) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def render_memory_line(m: dict[str, Any]) -> str:
    score = f"{m['score']:.3f} " if "score" in m else ""
    cat = f"/{m['category']}" if m.get("category") else ""
    return f"{score}{m['id']}  [{m['scope']} {m['type']}{cat} imp={m['importance']:.2f} str={m.get('strength', 0):.2f}]  {_short(m['content'])}"


def render_recall(res: dict[str, Any]) -> str:
    lines = [render_memory_line(m) for m in res["memories"]]
    lines.append(f"({len(res['memories'])} of {res['total_matched']} matched, {res['strategy_used']}, {res['query_time_ms']} ms)")
    lines += [f"warning: {w.get('message')}" for w in res.get("warnings", [])]
    return "\n".join(lines)


def render_memory(m: dict[str, Any]) -> str:
    keys = ["id", "type", "scope", "category", "status", "importance", "confidence", "strength", "access_count", "tags",
            "created_at", "updated_at", "last_accessed_at", "session_id", "version", "also_in", "source"]
    out = [f"{k:>17}: {m.get(k)}" for k in keys if m.get(k) not in (None, [], {})]
    out.append(f"{'content':>17}: {m.get('content')}")
    for e in m.get("promotion_chain") or []:
        out.append(f"{'promoted':>17}: from {e.get('scope')} ({e.get('action')}) at {e.get('promoted_at')}")
    for e in m.get("entities") or []:
        out.append(f"{'entity':>17}: {e.get('name')} ({e.get('entity_type')}, {e.get('relationship')})")
    for l in m.get("links") or []:
        out.append(f"{'link':>17}: {l['from']} {l['relation']} {l['to']}")
    for h in m.get("history") or []:
        out.append(f"{'history v' + str(h['version']):>17}: {h['change']} at {h['changed_at']}: {_short((h.get('snapshot') or {}).get('content', ''), 80)}")
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
        if info.get("without_vectors"):
            lines.append(f"           {info['without_vectors']} without vectors: run `engram reindex`")
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
        return self.client.call(op, payload, project_root=self.project, session_id=self.session, **kw)

    def out(self, result: Any, human: Callable[[Any], str] | None = None) -> None:
        if self.args.json or human is None:
            print(json.dumps(result, ensure_ascii=False, indent=None if self.args.json else 2, default=str))
        else:
            print(human(result))


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def cmd_store(app: App) -> int:
    a = app.args
    res = app.call("store", {"content": a.text, "type": a.type, "scope": a.scope, "importance": a.importance,
                             "tags": _csv(a.tags), "category": a.category, "summary": a.summary, "source": {"tool": "cli"}})
    app.out(res, lambda r: f"{r['action']} {r['memory_id']} ({r['scope']} {r['type']})" + "".join(f"\nwarning: {w['message']}" for w in r.get("warnings", [])))
    return EXIT_OK


def _recall_args(a: argparse.Namespace, query: str) -> dict[str, Any]:
    return {k: v for k, v in {"query": query, "scope": _csv(a.scope), "type": _csv(a.type), "limit": a.limit,
                               "strategy": a.strategy, "category": _csv(a.category), "tags": _csv(a.tags)}.items() if v is not None}


def cmd_recall(app: App) -> int:
    a = app.args
    if a.batch:
        return _recall_batch(app)
    if not a.query:
        print("engram recall: give a QUERY or --batch FILE.jsonl", file=sys.stderr)
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
                answer = {"line": n, "error": getattr(exc, "envelope", lambda: {"error": "invalid_input", "message": str(exc)})()}
            print(json.dumps(answer, ensure_ascii=False, default=str), flush=True)
    return EXIT_OK if not failures else EXIT_ERROR


def cmd_show(app: App) -> int:
    app.out(app.call("get", {"memory_id": app.args.id, "history": app.args.history}), render_memory)
    return EXIT_OK


def cmd_update(app: App) -> int:
    a = app.args
    payload: dict[str, Any] = {"memory_id": a.id}
    for key in ("content", "summary", "importance", "category"):
        if getattr(a, key) is not None:
            payload[key] = getattr(a, key)
    if a.add_tags or a.remove_tags:
        payload["tags"] = {"add": _csv(a.add_tags) or [], "remove": _csv(a.remove_tags) or []}
    app.out(app.call("update", payload), lambda r: f"updated {r['memory_id']} (version {r['version']}): {', '.join(r['updated_fields']) or 'no change'}")
    return EXIT_OK


def cmd_forget(app: App) -> int:
    a = app.args
    if a.purge_now:
        app.out(app.call("forget", {"memory_id": a.id, "reason": a.reason, "undo": a.undo, "purge_now": True}), _purged_line)
        return EXIT_OK
    app.out(app.call("forget", {"memory_id": a.id, "reason": a.reason, "undo": a.undo}), lambda r: f"{r['memory_id']} is now {r['status']}")
    return EXIT_OK


def _purged_line(r: dict[str, Any]) -> str:
    """What --purge-now did: the copies purged and each store rewritten (or why not)."""
    stores = "; ".join(f"{c['directory']} rewritten ({c['bytes_before']} -> {c['bytes_after']} bytes, {c['seconds']} s)" for c in r.get("compacted", []))
    problems = "; ".join(w["message"] for w in r.get("warnings", []))
    return (f"{r['memory_id']} purged in {', '.join(r['scopes'])}: text, history and vector removed (cannot be undone)"
            + (f"\n{stores}" if stores else "") + (f"\nnot compacted: {problems}" if problems else ""))


def cmd_promote(app: App) -> int:
    a = app.args
    app.out(app.call("promote", {"memory_id": a.id, "target_scope": a.scope, "reason": a.reason}),
            lambda r: f"{r['memory_id']}: {r['previous_scope']} -> {r['new_scope']} ({r['action']} as {r['target_id']})")
    return EXIT_OK


def cmd_status(app: App) -> int:
    app.out(app.call("status"), render_status)
    return EXIT_OK


def cmd_export(app: App) -> int:
    a = app.args
    scopes = _csv(a.scope) or ["project", "user"]
    res = app.call("export", {"path": str(Path(a.file).resolve()), "scopes": scopes, "include_vectors": not a.no_vectors}, on_progress=_progress)
    app.out(res, lambda r: f"exported to {r['path']}: " + ", ".join(f"{v} {k}" for k, v in r["counts"].items()))
    return EXIT_OK


def cmd_import(app: App) -> int:
    a = app.args
    started = time.perf_counter()
    res = app.call("import", {"path": str(Path(a.file).resolve()), "target_scope": a.scope}, on_progress=_progress)
    res["seconds"] = round(time.perf_counter() - started, 2)
    app.out(res, lambda r: f"imported from {r['path']} in {r['seconds']} s: " + ", ".join(f"{v} {k}" for k, v in r["counts"].items()))
    return EXIT_OK


def cmd_reindex(app: App) -> int:
    app.out(app.call("reindex", {}, on_progress=_progress), lambda r: f"re-embedded {r['reindexed']} memories with {r['model']} ({r['failed']} failed)")
    return EXIT_OK


def cmd_maintain(app: App) -> int:
    app.out(app.call("maintain"), lambda r: "\n".join(f"{scope}: {info}" for scope, info in r.items()))
    return EXIT_OK


def cmd_context(app: App) -> int:
    res = app.call("context", {"task_description": app.args.task, "max_tokens": app.args.max_tokens})
    app.out(res, lambda r: r["context_block"] or "(no memories yet)")
    return EXIT_OK


def cmd_consolidate(app: App) -> int:
    res = app.call("consolidate", {"strategy": app.args.strategy, "dry_run": not app.args.apply})
    app.out(res, None)
    return EXIT_OK


def cmd_daemon(app: App) -> int:
    action = app.args.action
    client = DaemonClient(user_dir_from_env(), autostart=action == "start")
    try:
        if action == "stop":
            res = client.call("shutdown")
        else:
            res = client.call("ping")
    except EngramError as exc:
        res = {"running": False, "message": exc.message}
    app.out(res, None)
    return EXIT_OK


def cmd_doctor(app: App) -> int:
    from .doctor import run_doctor

    report = run_doctor(app.project, app.session)
    app.out(report, lambda r: "\n".join(f"{'✔' if c['ok'] else '✘'} {c['check']}: {c['detail']}" for c in r["checks"]))
    return EXIT_OK if report["ok"] else EXIT_ERROR


def cmd_serve(app: App) -> int:
    from .server import main as serve_main

    serve_main()
    return EXIT_OK


# ------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="engram", description="Lasting, hierarchical memory for Claude Code.")
    p.add_argument("--project", help="project directory (default: the current directory's project root)")
    p.add_argument("--session", help="Claude Code session id (default: $CLAUDE_CODE_SESSION_ID)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    add = sub.add_parser
    sub.add_parser = lambda *a, **kw: add(*a, parents=[common], **kw)  # --json also after the command

    s = sub.add_parser("store", help="store a memory", description="Store a memory. Example: engram store 'Run tests with make test' --type procedural --scope project --tags testing")
    s.add_argument("text")
    s.add_argument("--type", required=True, choices=["episodic", "semantic", "procedural", "working"])
    s.add_argument("--scope", required=True, choices=["session", "project", "user"])
    s.add_argument("--tags", help="comma-separated")
    s.add_argument("--importance", type=float)
    s.add_argument("--category", help="decision, convention, error_fix, preference, ...")
    s.add_argument("--summary")
    s.set_defaults(fn=cmd_store)

    r = sub.add_parser("recall", help="search memories across scopes", description="Recall memories. Example: engram recall 'how do I run the tests' --limit 5")
    r.add_argument("query", nargs="?")
    r.add_argument("--scope", help="session,project,user (comma-separated)")
    r.add_argument("--type", help="comma-separated types")
    r.add_argument("--category")
    r.add_argument("--tags")
    r.add_argument("--limit", type=int, default=10)
    r.add_argument("--strategy", choices=["hybrid", "vector", "keyword", "graph"], default="hybrid")
    r.add_argument("--batch", help="JSONL file of queries ('-' for stdin): one answer per line")
    r.set_defaults(fn=cmd_recall)

    sh = sub.add_parser("show", help="show one memory", description="Example: engram show memory:01J... --history")
    sh.add_argument("id")
    sh.add_argument("--history", action="store_true")
    sh.set_defaults(fn=cmd_show)

    u = sub.add_parser("update", help="update a memory (keeps history)", description="Example: engram update memory:01J... --importance 0.9 --add-tags infra")
    u.add_argument("id")
    u.add_argument("--content")
    u.add_argument("--summary")
    u.add_argument("--importance", type=float)
    u.add_argument("--category")
    u.add_argument("--add-tags")
    u.add_argument("--remove-tags")
    u.set_defaults(fn=cmd_update)

    f = sub.add_parser("forget", help="soft-delete a memory (undo with --undo)", description="Example: engram forget memory:01J... --reason outdated")
    f.add_argument("id")
    f.add_argument("--reason")
    f.add_argument("--undo", action="store_true")
    f.add_argument("--purge-now", action="store_true",
                   help="for a secret that slipped through: remove the text and its whole history now and rewrite the store "
                        "files so the bytes are gone from disk (cannot be undone)")
    f.set_defaults(fn=cmd_forget)

    pr = sub.add_parser("promote", help="promote a memory to a broader scope", description="Example: engram promote memory:01J... user")
    pr.add_argument("id")
    pr.add_argument("scope", choices=["project", "user"])
    pr.add_argument("--reason")
    pr.set_defaults(fn=cmd_promote)

    sub.add_parser("status", help="health and counts across scopes").set_defaults(fn=cmd_status)

    e = sub.add_parser("export", help="export memories to JSONL (lossless)", description="Example: engram export memories.jsonl --scope project,user")
    e.add_argument("file")
    e.add_argument("--scope")
    e.add_argument("--no-vectors", action="store_true", help="omit vectors (smaller; import re-embeds)")
    e.set_defaults(fn=cmd_export)

    i = sub.add_parser("import", help="import a JSONL export (idempotent)", description="Example: engram import memories.jsonl")
    i.add_argument("file")
    i.add_argument("--scope", choices=["project", "user"], help="import everything into this scope")
    i.set_defaults(fn=cmd_import)

    sub.add_parser("reindex", help="embed memories stored without a vector").set_defaults(fn=cmd_reindex)
    sub.add_parser("maintain", help="run the decay/lifecycle pass now").set_defaults(fn=cmd_maintain)

    c = sub.add_parser("context", help="print the memory context block")
    c.add_argument("--task")
    c.add_argument("--max-tokens", type=int, default=1200)
    c.set_defaults(fn=cmd_context)

    co = sub.add_parser("consolidate", help="show (or --apply) the consolidation plan")
    co.add_argument("--strategy", choices=["summarize", "extract_patterns", "full"], default="full")
    co.add_argument("--apply", action="store_true")
    co.set_defaults(fn=cmd_consolidate)

    d = sub.add_parser("daemon", help="start, stop or ping the owner process")
    d.add_argument("action", choices=["start", "stop", "status"])
    d.set_defaults(fn=cmd_daemon)

    sub.add_parser("doctor", help="check model, stores, permissions and config").set_defaults(fn=cmd_doctor)
    sub.add_parser("serve", help="run the MCP server on stdio").set_defaults(fn=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        app = App(args)
        return args.fn(app)
    except EngramError as exc:
        if getattr(args, "json", False):
            print(json.dumps(exc.envelope()), file=sys.stderr)
        else:
            print(f"engram: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `engram recall ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
