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
- No orphans: it exits after `daemon_idle_exit_seconds` with no client connected and no
  request, on SIGTERM/SIGINT, or when its user directory disappears.
"""

from __future__ import annotations

import argparse
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
from typing import Any, Callable

from .client import socket_path
from .errors import EngramError, InvalidInput

LOCK_NAME = "engramd.lock"
PROGRESS_OPS = ("export", "import", "reindex")
IDLE_CHECK_S = 2.0
log = logging.getLogger("engram.daemon")


def operations() -> dict[str, Callable[..., Any]]:
    """op name -> fn(service, ctx, args). The daemon's whole API surface."""
    return {
        "ping": lambda s, c, a: {"pong": True, "pid": os.getpid()},
        "store": lambda s, c, a: s.store(c, **a),
        "recall": lambda s, c, a: s.recall(c, **a),
        "get": lambda s, c, a: s.get(c, **a),
        "update": lambda s, c, a: s.update(c, **a),
        "tag": lambda s, c, a: s.tag(c, **a),
        "forget": lambda s, c, a: s.forget(c, **a),
        "link": lambda s, c, a: s.link(c, **a),
        "promote": lambda s, c, a: s.promote(c, **a),
        "status": lambda s, c, a: s.status(c),
        "context": lambda s, c, a: s.context(c, **a),
        "graph": lambda s, c, a: s.graph_search(c, **a),
        "consolidate": lambda s, c, a: s.consolidate(c, **a),
        "session_start": lambda s, c, a: s.session_start(c, **a),
        "session_end": lambda s, c, a: s.session_end(c, **a),
        "maintain": lambda s, c, a: s.maintain(c),
        "export": lambda s, c, a: s.export(c, **a),
        "import": lambda s, c, a: s.import_(c, **a),
        "reindex": lambda s, c, a: s.reindex(c, **a),
        "shutdown": lambda s, c, a: {"stopping": True},
    }


class Daemon:
    def __init__(self, user_dir: Path) -> None:
        self.user_dir = user_dir
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.service = None
        self.ops = operations()
        self.connections = 0
        self.last_activity = time.monotonic()
        self.idle_exit_s = 900.0
        self._conn_lock = threading.Lock()
        self.startup_error: str | None = None

    # -- lifecycle ------------------------------------------------------------------
    def run(self) -> int:
        self.user_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock_fd = os.open(self.user_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another daemon owns this user directory
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, str(os.getpid()).encode(), 0)
        path = socket_path(self.user_dir)
        if path.exists() or path.is_symlink():
            path.unlink()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            server.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        server.listen(64)
        server.settimeout(IDLE_CHECK_S)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.set())
        threading.Thread(target=self._load_service, daemon=True).start()
        log.info("engramd %d listening on %s", os.getpid(), path)
        try:
            while not self.stopping.is_set():
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    self._check_idle()
                    continue
                except OSError:
                    break
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()
        finally:
            server.close()
            try:
                path.unlink()
            except OSError:
                pass
            if self.service is not None:
                with self.service.lock:
                    self.service.close()
            fcntl.flock(lock_fd, fcntl.LOCK_UN)
            os.close(lock_fd)
            log.info("engramd %d stopped", os.getpid())
        return 0

    def _load_service(self) -> None:
        try:
            from .config import load_config
            from .service import MemoryService

            try:
                self.idle_exit_s = float(load_config(None).daemon_idle_exit_seconds)
            except Exception as exc:  # a broken config file must not stop memory
                log.warning("config: %s", exc)
            self.service = MemoryService(user_dir=self.user_dir)
        except Exception as exc:
            self.startup_error = f"engram daemon failed to start: {exc}"
            log.exception("startup failed")
        finally:
            self.ready.set()

    def _check_idle(self) -> None:
        if not self.user_dir.exists():
            log.info("user directory vanished; exiting")
            self.stopping.set()
            return
        with self._conn_lock:
            idle = self.connections == 0 and time.monotonic() - self.last_activity > self.idle_exit_s
        if idle:
            log.info("idle for %.0fs; exiting", self.idle_exit_s)
            self.stopping.set()

    # -- requests ---------------------------------------------------------------------
    def _serve(self, conn: socket.socket) -> None:
        with self._conn_lock:
            self.connections += 1
        f = conn.makefile("rwb")
        try:
            for line in f:
                self.last_activity = time.monotonic()
                response = self._handle_line(line, f)
                f.write((json.dumps(response, ensure_ascii=False, default=str) + "\n").encode())
                f.flush()
                if response.get("_stop"):
                    self.stopping.set()
        except (OSError, ValueError):
            pass
        finally:
            with self._conn_lock:
                self.connections -= 1
                self.last_activity = time.monotonic()
            try:
                f.close()
                conn.close()
            except OSError:
                pass

    def _handle_line(self, line: bytes, stream: Any = None) -> dict[str, Any]:
        rid = None
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise InvalidInput("request must be a JSON object")
            rid = req.get("id")
            op = req.get("op")
            fn = self.ops.get(op)
            if fn is None:
                raise InvalidInput(f"unknown operation {str(op)[:40]!r}")
            args = req.get("args") or {}
            if not isinstance(args, dict):
                raise InvalidInput("args must be an object")
            if op == "shutdown":
                return {"id": rid, "ok": True, "result": {"stopping": True}, "_stop": True}
            if op == "ping":
                return {"id": rid, "ok": True, "result": {"pong": True, "pid": os.getpid(), "ready": self.ready.is_set()}}
            self.ready.wait()
            if self.service is None:
                from .errors import StoreUnavailable

                raise StoreUnavailable(self.startup_error or "engram daemon is not ready")
            ctx = self._context(req.get("ctx") or {})
            if req.get("progress") and stream is not None and op in PROGRESS_OPS:
                args = {**args, "progress": self._progress_writer(rid, stream)}
            return {"id": rid, "ok": True, "result": fn(self.service, ctx, args)}
        except EngramError as exc:
            return {"id": rid, "ok": False, "error": exc.envelope()}
        except TypeError as exc:
            return {"id": rid, "ok": False, "error": InvalidInput(f"bad arguments: {exc}").envelope()}
        except json.JSONDecodeError as exc:
            return {"id": rid, "ok": False, "error": InvalidInput(f"request is not JSON: {exc.msg}").envelope()}
        except Exception as exc:  # never let one request take the daemon down
            log.error("request failed: %s\n%s", exc, traceback.format_exc())
            return {"id": rid, "ok": False, "error": {"error": "internal_error", "message": f"{type(exc).__name__}: {exc}"[:500], "degraded": False, "retry_possible": True}}

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
                stream.write((json.dumps({"id": rid, "progress": {"done": done, "total": total, "label": label}}) + "\n").encode())
                stream.flush()
            except OSError:
                pass

        return emit

    @staticmethod
    def _context(raw: dict[str, Any]):
        from .ids import session_db_name
        from .paths import resolve_project_root
        from .service import RequestContext

        root = raw.get("project_root")
        if root is not None and not isinstance(root, str):
            raise InvalidInput("ctx.project_root must be a path string")
        sid = raw.get("session_id")
        if sid is not None:
            session_db_name(sid)  # validates
        return RequestContext(resolve_project_root(root) if root else resolve_project_root(os.getcwd()), sid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="engramd", description="engram owner process (started on demand by clients)")
    parser.add_argument("--user-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logs = args.user_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True, mode=0o700)
    handler = logging.FileHandler(logs / "engramd.log")
    os.chmod(logs / "engramd.log", 0o600)
    logging.basicConfig(level=logging.INFO, handlers=[handler], format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return Daemon(args.user_dir).run()


if __name__ == "__main__":
    sys.exit(main())
