"""engramd: the one process per user that owns the stores.

Why a daemon (docs/architecture.md, "Process model"): SurrealKV may be opened by one
process only (two corrupt it), Claude Code runs one MCP server per window plus a
process per hook, and the embedding model and the retrieval indexes cost seconds to
load. So one owner process per user store directory holds every store, the model and
the indexes; everyone else is a thin client on a 0600 Unix socket.

- Single instance: an exclusive flock on `<user_dir>/engramd.lock`; a second daemon exits.
- Fast availability: the socket is bound before the heavy imports; requests wait until
  the service is ready.
- Serialisation: MemoryService holds one lock around every engine access.
- Bounded: one selector thread holds every connection and a small worker pool runs
  requests (`connections.py`): idle connections cost no thread, nudges and pings never
  wait for a worker, and a connection over the cap is told "busy" and closed.
- No orphans: it exits after `daemon_idle_exit_seconds` with no client connected and no
  request, on SIGTERM/SIGINT, or when its user directory disappears.
- Degradation: a write whose store cannot be used (locked by another process, corrupt,
  disk full, not writable) is queued durably in the spool (`spool.py`) and answered
  `{"queued": true, "degraded": true}`; reads answer with a `degraded` envelope naming the
  cause, or with the scopes that work plus a warning. A drain thread applies the spool
  oldest first: once the service is loaded, on every `drain` nudge (hooks send one and
  hang up without reading), before each request while entries are pending, and on its
  own timer with backoff. Entries whose store is still unavailable stay for later (they
  never keep the daemon alive: idleness counts only clients); invalid ones move to
  `spool/rejected/` with their error.
"""

from __future__ import annotations

import argparse
import faulthandler
import fcntl
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engram_mcp.core import operations, spool
from engram_mcp.core.config_keys import DEFAULT_CONFIG
from engram_mcp.core.errors import DaemonUnavailable, EngramError, InvalidInput, MemoryNotFound, StoreUnavailable
from engram_mcp.core.operations import Operation
from engram_mcp.core.paths import make_private_dirs, rotate_log
from engram_mcp.daemon import dispatch
from engram_mcp.daemon.backfill import VectorBackfill
from engram_mcp.daemon.client import clear_stale_socket, remove_socket_dir, socket_path
from engram_mcp.daemon.connections import LISTEN_BACKLOG, ConnectionServer

if TYPE_CHECKING:  # imported when the service loads (`_load_service`), after the socket is up
    from engram_mcp.services.service import MemoryService

LOCK_NAME = "engramd.lock"
DRAIN_POLL_S = 10.0  # look for entries queued without a nudge
DRAIN_RETRY_MIN_S, DRAIN_RETRY_MAX_S = 2.0, 60.0  # backoff while a store stays unavailable
DRAIN_FIRST_WAIT_S = 10.0  # a request waits at most this long for the entries queued before it
DRAIN_FIRST_POLL_S = 0.05  # how often a waiting request looks whether a running pass applied them
READY_WAIT_S = 60.0  # a request waits this long for the service to load, then is answered (writes queued)
MAX_REPLAY_ATTEMPTS = 3  # unexpected (non-engram) errors before an entry is rejected
#: Size past which a starting daemon moves engramd.log to engramd.log.1 (replacing it): the daemon
#: starts again after every idle exit, so the log is trimmed often enough without a rotating handler
#: (which two processes, a daemon and one losing the start race, would both rotate).
DAEMON_LOG_MAX_BYTES = 4 * 1024 * 1024
# Changed indexes are written to their files after this long without a request (and at most
# this often): writing a 100k index takes ~0.5 s under the service lock, so never mid-burst.
CHECKPOINT_QUIET_SECONDS = 20.0
#: Delay between a reply and the start of the engine opens it answered ahead of (seconds).
OPEN_AFTER_REPLY_S = 0.05
log = logging.getLogger("engram.daemon")


def _decode_problem(exc: BaseException) -> str:
    """Why a request line could not be decoded, in a few words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 ({exc.reason} at byte {exc.start})"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return str(exc)[:200]


def _route(op: Operation, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(operation, its arguments) that serve a request for `op`.

    `recall_memories` without a query browses newest first (no ranking, no strengthening):
    one tool for both keeps the MCP surface lean (every schema character is context), so the
    registry gives recall a `browse_op` and its arguments are translated here. Either way the
    arguments are then bound to the chosen handler's signature (`dispatch.bind`).
    """
    if op.browse_op is None:
        return op.name, args
    args = dict(args)
    if "query" in args:
        if "page" in args:
            raise InvalidInput("page is for browsing (no query) only", field="page")
        if isinstance(args["query"], str) and not args["query"].strip():
            raise InvalidInput("query is empty; to browse memories newest first, leave query out", field="query")
        return op.name, args
    time_range = args.pop("time_range", None) or {}
    include_forgotten = args.pop("include_forgotten", False)
    args.pop("include_superseded", None)  # browsing lists every memory, superseded ones too
    args.pop("strategy", None)
    if args.pop("min_importance", None):
        raise InvalidInput("min_importance is a filter of a search (with a query) only", field="min_importance")
    args.setdefault("status", "all" if include_forgotten else None)
    args.setdefault("limit", RECALL_DEFAULT_LIMIT)  # the tool's stated default; `engram list` passes its own
    return op.browse_op, {**args, "after": time_range.get("after"), "before": time_range.get("before")}


RECALL_DEFAULT_LIMIT = 10  # recall_memories' `limit` default, for a search and a browse alike


def _project_key(raw_ctx: dict[str, Any]) -> str:
    """The project an entry writes to, resolved like a request's (hooks may send a subdirectory)."""
    from engram_mcp.core.paths import resolve_project_root

    root = raw_ctx.get("project_root")
    if not isinstance(root, str) or not root:
        return ""
    try:
        return str(resolve_project_root(root))
    except (OSError, ValueError):
        return root


class Daemon:
    def __init__(self, user_dir: Path) -> None:
        self.user_dir = user_dir
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.service: MemoryService | None = None
        self.connections = 0
        self.last_activity = time.monotonic()
        self.idle_exit_s = float(DEFAULT_CONFIG.daemon_idle_exit_seconds)  # until the config is read
        self._conn_lock = threading.Lock()
        self.startup_error: str | None = None
        self._drain_lock = threading.Lock()
        self._drain_wanted = threading.Event()
        self._drain_wanted.set()  # drain once as soon as the service is loaded
        self._drain_retry_at = 0.0
        self._checkpointing = threading.Event()
        self._checkpoint_thread: threading.Thread | None = None
        self._inflight = 0  # requests being answered (a checkpoint waits for none)
        self._last_checkpoint = 0.0
        self._attempts: dict[str, int] = {}
        self._entry_keys: dict[str, str] = {}  # spool file name -> project root (entries are immutable)
        self.queue_state: dict[str, Any] = {"blocked": {}, "last_drain_at": None, "applied": 0, "rejected": 0}
        self.backfill: VectorBackfill | None = None

    # -- lifecycle ------------------------------------------------------------------
    def run(self) -> int:
        make_private_dirs(self.user_dir)
        lock_fd = os.open(self.user_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another daemon owns this user directory
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, str(os.getpid()).encode(), 0)
        path = socket_path(self.user_dir, create=True)  # under the lock: the only writer of its record
        try:
            clear_stale_socket(path)  # a dead daemon's socket, never any other file
        except DaemonUnavailable as exc:
            log.error("%s", exc.message)
            return 1
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            server.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        server.listen(LISTEN_BACKLOG)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.set())
        threading.Thread(target=self._load_service, daemon=True).start()
        threading.Thread(target=self._drain_loop, name="engram-drain", daemon=True).start()
        log.info("engramd %d listening on %s", os.getpid(), path)
        try:
            ConnectionServer(
                server,
                self._request,
                self.stopping,
                on_tick=self._check_idle,
                on_count=self._set_connections,
                on_stop=self.stopping.set,
            ).serve()
        finally:
            server.close()
            try:
                path.unlink()
            except OSError:
                pass
            remove_socket_dir(self.user_dir, path)
            self._drain_wanted.set()  # wake the drain thread: it sees `stopping` and ends
            checkpoint = self._checkpoint_thread
            if checkpoint is not None:  # an idle checkpoint writing files finishes before the exit
                checkpoint.join()
            if self.backfill is not None:
                self.backfill.stop(timeout_s=30)
            if self.service is not None:
                with self._drain_lock, self.service.lock:  # a replay in flight finishes first
                    self.service.close()
            fcntl.flock(lock_fd, fcntl.LOCK_UN)
            os.close(lock_fd)
            log.info("engramd %d stopped", os.getpid())
        return 0

    def _load_service(self) -> None:
        try:
            from engram_mcp.core.config import load_config_lenient
            from engram_mcp.services.model import configured_embedder

            cfg, problem = load_config_lenient(None)
            if problem is not None:  # a broken config file must not stop memory
                log.warning("config: %s", problem)
            self.idle_exit_s = float(cfg.daemon_idle_exit_seconds)
            # The model loads (~0.3 s) on the other core while the rest of the service is
            # imported (~0.3 s) and the first request opens its store and index.
            embedder = configured_embedder(self.user_dir, cfg)
            threading.Thread(target=self._preload_model, args=(embedder,), name="engram-model", daemon=True).start()
            from engram_mcp.services.service import MemoryService

            self.service = MemoryService(user_dir=self.user_dir, embedder=embedder)
            # vectors a large import deferred (a restart resumes them): daemon/backfill.py
            self.backfill = VectorBackfill(self.service, self.stopping, self._answering)
            self.backfill.start()
        except Exception as exc:
            self.startup_error = f"engram daemon failed to start: {exc}"
            log.exception("startup failed")
        finally:
            self.ready.set()

    def _answering(self) -> bool:
        """Whether a request is being answered (the backfill waits for it)."""
        return self._inflight > 0

    @staticmethod
    def _preload_model(embedder: Any) -> None:
        load = getattr(embedder, "load", None)  # embedders that load lazily have it
        if load is None:
            return
        try:
            load()
        except Exception as exc:  # the first request that needs it reports the problem
            log.info("embedding model not preloaded: %s", exc)

    def _checkpoint_when_quiet(self) -> None:
        """Write changed indexes to their files once requests have paused (services/handles.py);
        in a thread of its own, so the socket loop never waits for it."""
        if self.service is None or self._checkpointing.is_set():
            return
        with self._conn_lock:
            if self._inflight or time.monotonic() - self.last_activity < CHECKPOINT_QUIET_SECONDS:
                return
        if time.monotonic() - self._last_checkpoint < CHECKPOINT_QUIET_SECONDS:
            return
        self._checkpointing.set()
        self._last_checkpoint = time.monotonic()
        service = self.service

        def run() -> None:
            try:
                written = service.checkpoint()
                if written:
                    log.info("wrote %d index file(s)", written)
            except Exception:
                log.exception("index checkpoint failed")
            finally:
                self._checkpointing.clear()

        self._checkpoint_thread = threading.Thread(target=run, name="engram-checkpoint", daemon=True)
        self._checkpoint_thread.start()

    def _check_idle(self) -> None:
        self._checkpoint_when_quiet()
        if not self.user_dir.exists():
            log.info("user directory vanished; exiting")
            self.stopping.set()
            return
        with self._conn_lock:
            idle = self.connections == 0 and time.monotonic() - self.last_activity > self.idle_exit_s
            idle = idle and not (self.backfill is not None and self.backfill.running)  # finishes its vectors first
        if idle:
            log.info("idle for %.0fs; exiting", self.idle_exit_s)
            self.stopping.set()

    # -- requests ---------------------------------------------------------------------
    def _set_connections(self, count: int) -> None:
        """The socket loop's connection count (idle exit waits for none)."""
        with self._conn_lock:
            self.connections = count
            self.last_activity = time.monotonic()

    def _request(self, line: bytes, stream: Any) -> dict[str, Any]:
        """One request line from the socket loop (`connections.py`): its response."""
        with self._conn_lock:
            self.last_activity = time.monotonic()
            self._inflight += 1
        try:
            return self._handle_line(line, stream)
        finally:
            with self._conn_lock:
                self.last_activity = time.monotonic()
                self._inflight -= 1

    def _handle_line(self, line: bytes, stream: Any = None) -> dict[str, Any]:
        rid = None
        try:
            try:
                req = json.loads(line)
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deeply
                raise InvalidInput(f"request is not JSON: {_decode_problem(exc)}") from None
            if not isinstance(req, dict):
                raise InvalidInput("request must be a JSON object")
            rid = req.get("id")
            op: Any = req.get("op")  # unchecked JSON: anything but a known name is refused below
            if op == "drain":  # a nudge: never blocks (hooks hang up without reading the answer)
                self._drain_wanted.set()
                return {"id": rid, "ok": True, "result": {"draining": True}}
            spec = operations.get(op)
            if spec is None:
                raise InvalidInput(f"unknown operation {str(op)[:40]!r}")
            args = req.get("args") or {}
            if not isinstance(args, dict):
                raise InvalidInput("args must be an object")
            if op == "shutdown":
                return {"id": rid, "ok": True, "result": {"stopping": True}, "_stop": True}
            if op == "ping":
                return {
                    "id": rid,
                    "ok": True,
                    "result": {"pong": True, "pid": os.getpid(), "ready": self.ready.is_set()},
                }
            ready = self.ready.wait(READY_WAIT_S)  # bounded: a worker is never held by a start that hangs
            raw_ctx = req.get("ctx") or {}
            if self.service is None:
                starting = (
                    f"engram daemon is still starting after {READY_WAIT_S:.0f}s (loading its stores and "
                    "embedding model); try again shortly"
                )
                down = StoreUnavailable(self.startup_error or (starting if not ready else "engram daemon is not ready"))
                if spec.queueable and isinstance(raw_ctx, dict):
                    return {"id": rid, "ok": True, "result": self._queue(spec.name, args, raw_ctx, down)}
                raise down
            if not isinstance(raw_ctx, dict):
                raise InvalidInput("ctx must be an object")
            ctx = self._context(raw_ctx)
            self._drain_first()
            if req.get("progress") and stream is not None and spec.progress:
                args = {**args, "progress": self._progress_writer(rid, stream)}
            try:
                result = self._run(spec, ctx, args)
                self._start_opens_after_reply()
            except (StoreUnavailable, MemoryNotFound) as exc:
                cause = exc if isinstance(exc, StoreUnavailable) else self._unavailable(ctx, exc)
                if cause is None:
                    raise
                if not spec.queueable:
                    raise cause from None
                result = self._queue(
                    spec.name, args, {"project_root": str(ctx.project_root), "session_id": ctx.session_id}, cause
                )
            if op == "status" and isinstance(result, dict):
                result = self._with_queue_status(result)
            return {"id": rid, "ok": True, "result": result}
        except EngramError as exc:
            return {"id": rid, "ok": False, "error": exc.envelope()}
        except json.JSONDecodeError as exc:
            return {"id": rid, "ok": False, "error": InvalidInput(f"request is not JSON: {exc.msg}").envelope()}
        except UnicodeEncodeError:  # a lone surrogate (\ud800) in a path or any text the checks did not see first
            return {
                "id": rid,
                "ok": False,
                "error": InvalidInput(
                    "a text argument is not valid Unicode (it holds a lone surrogate such as "
                    "\\ud800); send valid UTF-8 text"
                ).envelope(),
            }
        except Exception as exc:  # never let one request take the daemon down
            log.error("request failed: %s\n%s", exc, traceback.format_exc())
            return {
                "id": rid,
                "ok": False,
                "error": {
                    "error": "internal_error",
                    "message": f"{type(exc).__name__}: {exc}"[:500],
                    "degraded": False,
                    "retry_possible": True,
                },
            }

    def _start_opens_after_reply(self) -> None:
        """Start the engine opens a recall answered ahead of (services/handles.py) just after this
        reply is sent: the open holds the interpreter lock while it runs, which would hold the reply."""
        service = self.service
        if service is None or not service.registry.opens_waiting():
            return
        timer = threading.Timer(OPEN_AFTER_REPLY_S, service.registry.start_opens)
        timer.daemon = True
        timer.name = "engram-start-opens"
        timer.start()

    # -- the write queue --------------------------------------------------------------
    def _unavailable(self, ctx: Any, exc: EngramError) -> StoreUnavailable | None:
        """A not-found that may only mean the memory is in a store that cannot be opened now."""
        cause = self._unavailable_cause(ctx)
        if cause is None:
            return None
        return StoreUnavailable(f"{exc.message} It may be in a store that is unavailable: {cause}")

    def _unavailable_cause(self, ctx: Any) -> str | None:
        from engram_mcp.core.paths import project_dir

        failures = self.service.registry.failures() if self.service is not None else {}
        dirs = [str(self.service.registry.user_dir)] if self.service is not None else []
        if ctx is not None:
            dirs.append(str(project_dir(ctx.project_root)))
        causes = [failures[d] for d in dirs if d in failures]
        return "; ".join(causes) or None

    def _queue(self, op: str, args: dict[str, Any], ctx: dict[str, Any], cause: EngramError) -> dict[str, Any]:
        """Queue a write whose store is unavailable; the answer says so (accepted, not applied)."""
        clean = {k: v for k, v in args.items() if k != "progress"}
        ctx = {"project_root": ctx.get("project_root"), "session_id": ctx.get("session_id")}
        try:
            eid = spool.enqueue(self.user_dir, op, clean, ctx, reason=f"{cause.code}: {cause.message}"[:500])
        except (OSError, ValueError) as exc:
            err = StoreUnavailable(f"{cause.message} The write could not be queued either ({exc}); it was not saved.")
            err.code = cause.code
            raise err from None
        log.warning("queued %s %s: %s", op, eid, cause.message)
        message = f"{cause.message} The {op} was saved to the write queue and will be applied when the store is available again."
        return spool.queued_answer(eid, cause.code, message, keyed=operations.BY_NAME[op].keyed)

    def _with_queue_status(self, status: dict[str, Any]) -> dict[str, Any]:
        counts = spool.count(self.user_dir)
        blocked = sorted(set(self.queue_state["blocked"].values()))
        status["write_queue"] = {
            **counts,
            "blocked_by": blocked[:3],
            "last_drain_at": self.queue_state["last_drain_at"],
            "spool_dir": str(spool.spool_dir(self.user_dir)),
        }
        conn = status.get("connection")
        if counts["pending"] and blocked and isinstance(conn, dict):
            conn["status"] = "degraded"
        return status

    def _drain_first(self) -> None:
        """Apply the entries pending when a request arrives before serving it, so it sees them
        and they keep their order.

        A pass already running (the drain thread's first one, on a daemon that just started,
        also opens the stores and warms the model) is waited for only until the entries this
        request could depend on are gone, never for entries queued after it, and at most
        DRAIN_FIRST_WAIT_S: a huge queue delays a request, never holds it.
        """
        try:
            if time.monotonic() < self._drain_retry_at:
                return
            waiting = {p.name for p in spool.pending(self.user_dir)}
            deadline = time.monotonic() + DRAIN_FIRST_WAIT_S
            while waiting and time.monotonic() < deadline:
                if not self._drain_lock.locked():
                    if time.monotonic() < self._drain_retry_at:
                        return  # the pass just ended on a store that is unavailable: kept, not retried yet
                    self.drain_spool(wait=max(0.0, deadline - time.monotonic()))
                    return
                time.sleep(DRAIN_FIRST_POLL_S)
                waiting &= {p.name for p in spool.pending(self.user_dir)}
        except Exception:  # the request itself must still be served
            log.exception("draining the write queue before a request failed")

    def _drain_loop(self) -> None:
        self.ready.wait()
        if self.service is None:
            return  # nothing can be applied; the entries wait for a daemon that starts
        retry = DRAIN_RETRY_MIN_S
        delay = DRAIN_POLL_S
        while not self.stopping.is_set():
            self._drain_wanted.wait(delay)
            self._drain_wanted.clear()
            if self.stopping.is_set():
                return
            try:
                report = self.drain_spool()
            except Exception:
                log.exception("draining the write queue failed")
                report = {"kept": 1}
            if report.get("kept"):
                delay, retry = retry, min(retry * 2, DRAIN_RETRY_MAX_S)
                self.stopping.wait(1.0)  # nudges must not turn a broken store into a busy loop
            else:
                delay, retry = DRAIN_POLL_S, DRAIN_RETRY_MIN_S

    def drain_spool(self, *, wait: float | None = None) -> dict[str, Any]:
        """Apply queued writes oldest first. Applied entries are deleted, invalid ones rejected
        (moved to `spool/rejected/` with the error), and entries whose store is unavailable kept,
        with every later entry of the same project, so each project keeps its order."""
        report: dict[str, Any] = {"applied": 0, "rejected": 0, "kept": 0, "blocked": {}}
        if not self._drain_lock.acquire(timeout=-1 if wait is None else wait):
            return report
        try:
            if self.service is None:
                return report
            blocked: dict[str, str] = report["blocked"]
            for path in spool.pending(self.user_dir):
                if self.stopping.is_set():
                    break
                key = self._entry_keys.get(path.name)
                if key is not None and key in blocked:
                    report["kept"] += 1
                    continue
                try:
                    entry = spool.read(path)
                except (OSError, ValueError) as exc:
                    spool.reject(path, f"unreadable spool entry: {exc}")
                    report["rejected"] += 1
                    continue
                if entry is None:
                    continue
                raw_ctx = v if isinstance(v := entry.get("ctx"), dict) else {}
                key = _project_key(raw_ctx)
                self._entry_keys[path.name] = key
                if key in blocked:
                    report["kept"] += 1
                    continue
                outcome, detail = self._replay(entry, raw_ctx)
                if outcome == "applied":
                    spool.done(path)
                    report["applied"] += 1
                elif outcome == "rejected":
                    spool.reject(path, detail)
                    report["rejected"] += 1
                    log.warning("rejected queued %s %s: %s", entry.get("op"), entry.get("id"), detail)
                else:
                    blocked[key] = detail
                    report["kept"] += 1
            names = {p.name for p in spool.pending(self.user_dir)}
            self._entry_keys = {k: v for k, v in self._entry_keys.items() if k in names}
            self._attempts = {k: v for k, v in self._attempts.items() if f"{k}{spool.ENTRY_SUFFIX}" in names}
            self.queue_state.update(blocked=dict(blocked), last_drain_at=time.time())
            self.queue_state["applied"] += report["applied"]
            self.queue_state["rejected"] += report["rejected"]
            self._drain_retry_at = time.monotonic() + 1.0 if report["kept"] else 0.0
        finally:
            self._drain_lock.release()
        if report["applied"] or report["rejected"]:
            log.info(
                "write queue: applied %d, rejected %d, kept %d", report["applied"], report["rejected"], report["kept"]
            )
        return report

    def _replay(self, entry: dict[str, Any], raw_ctx: dict[str, Any]) -> tuple[str, str]:
        """Apply one spool entry: ("applied" | "rejected" | "kept", why)."""
        op: Any = entry.get("op")  # a str: spool.read refuses an entry without one
        eid = str(entry.get("id") or "")
        spec = operations.get(op)
        if spec is None or not spec.replayable:
            return "rejected", f"invalid_input: operation {str(op)[:40]!r} cannot be replayed"
        args = entry.get("args")
        if not isinstance(args, dict):
            return "rejected", "invalid_input: args must be an object"
        args = dict(args)
        if spec.keyed:
            args.setdefault("request_id", eid)
            queued_at = entry.get("queued_at")
            if "created_at" not in args and isinstance(queued_at, (int, float)):
                from datetime import datetime, timezone

                args["created_at"] = datetime.fromtimestamp(queued_at, timezone.utc).isoformat()
        ctx = None
        try:
            root = raw_ctx.get("project_root")
            if isinstance(root, str) and root and not Path(root).is_dir():
                return "rejected", f"invalid_input: the project directory {root} no longer exists"
            ctx = self._context(raw_ctx)
            self._run(spec, ctx, args)
            return "applied", ""
        except MemoryNotFound as exc:
            cause = self._unavailable_cause(ctx)
            return ("kept", cause) if cause else ("rejected", f"{exc.code}: {exc.message}")
        except StoreUnavailable as exc:
            return "kept", exc.message
        except EngramError as exc:
            return "rejected", f"{exc.code}: {exc.message}"
        except Exception as exc:
            return self._unexpected(eid, exc)

    def _run(self, spec: Operation, ctx: Any, args: dict[str, Any]) -> Any:
        """Call the operation's handler on the service, its arguments bound first (`dispatch`)."""
        name, args = _route(spec, args)
        return dispatch.call(self.service, name, ctx, args)

    def _unexpected(self, eid: str, exc: Exception) -> tuple[str, str]:
        """An unexpected error may be transient: retry a few times, then set the entry aside."""
        log.error("replaying %s failed: %s\n%s", eid, exc, traceback.format_exc())
        self._attempts[eid] = self._attempts.get(eid, 0) + 1
        message = f"internal_error: {type(exc).__name__}: {exc}"[:500]
        if self._attempts[eid] >= MAX_REPLAY_ATTEMPTS:
            return "rejected", f"{message} (after {MAX_REPLAY_ATTEMPTS} attempts)"
        return "kept", message

    @staticmethod
    def _progress_writer(rid: Any, stream: Any) -> Callable[[int, int | None, str], None]:
        """Stream `{"id", "progress"}` lines ahead of the final answer (long imports/exports)."""
        last = [0.0]

        def emit(done: int, total: int | None, label: str) -> None:
            now = time.monotonic()
            if now - last[0] < 0.1 and (total is None or done < total):
                return
            last[0] = now
            try:
                stream.write(
                    (
                        json.dumps({"id": rid, "progress": {"done": done, "total": total, "label": label}}) + "\n"
                    ).encode()
                )
                stream.flush()
            except OSError:
                pass

        return emit

    @staticmethod
    def _context(raw: dict[str, Any]):
        from engram_mcp.core.ids import session_db_name
        from engram_mcp.core.paths import resolve_project_root
        from engram_mcp.services.service import RequestContext

        root = raw.get("project_root")
        if root is not None and not isinstance(root, str):
            raise InvalidInput("ctx.project_root must be a path string")
        sid = raw.get("session_id")
        if sid is not None:
            session_db_name(sid)  # validates
        return RequestContext(resolve_project_root(root) if root else resolve_project_root(os.getcwd()), sid)


def dump_stacks_on(signum: int, log_fd: int) -> None:
    """`kill -USR1 <pid>` writes every thread's stack to the log: what a slow request waits on.

    The dump runs as a Python signal handler, so under the interpreter lock, on the main thread
    (its serving loop wakes for the signal, or at its next tick, within a second).
    `faulthandler.register` dumps from the C handler instead, while other threads run: walking a
    frame chain that another thread is changing (an import, a thread starting) crashed the daemon
    with SIGSEGV in 11 of 15 starts signalled 200 times as it loaded its service. The diagnosis
    must never kill what it looks at. It writes to the descriptor, never through the log's
    buffered stream: the main thread may be inside a write to that stream when the handler runs,
    and a buffer entered twice raises.
    """

    def dump(_signum: int, _frame: object) -> None:
        os.write(log_fd, f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} SIGUSR1: every thread's stack\n".encode())
        faulthandler.dump_traceback(file=log_fd, all_threads=True)

    signal.signal(signum, dump)
    signal.siginterrupt(signum, False)  # a worker's system call the signal lands in is restarted, not failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="engramd", description="engram owner process (started on demand by clients)")
    parser.add_argument("--user-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    os.umask(0o077)  # what the owner process and its engine create is private, whatever umask it inherited
    logs = make_private_dirs(args.user_dir / "logs")
    rotate_log(logs / "engramd.log", DAEMON_LOG_MAX_BYTES)
    log_fd = os.open(logs / "engramd.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    handler = logging.StreamHandler(os.fdopen(log_fd, "a", encoding="utf-8"))  # never through a link
    logging.basicConfig(
        level=logging.INFO, handlers=[handler], format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    dump_stacks_on(signal.SIGUSR1, log_fd)
    return Daemon(args.user_dir).run()


if __name__ == "__main__":
    sys.exit(main())
