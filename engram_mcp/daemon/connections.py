"""The daemon's socket loop: many connections, few threads, no request left unanswered.

One thread per connection let 1,000 idle connections make 960 threads, and the accept
backlog filled so hook nudges got EAGAIN. Here one selector thread owns every connection:

- An idle connection costs a file descriptor, never a thread. Requests run on a bounded
  pool of `MAX_WORKERS` threads, one request per connection at a time (in order).
- Nudges (`drain`), `ping` and `shutdown` never wait for a worker: they are answered on
  the selector thread at once (they only set an event or read a flag), so a hook's nudge
  gets through however busy the workers are.
- At most `max_connections` connections. When full, the connection idle the longest
  (no request in flight, nothing half-sent, idle > `EVICT_IDLE_S`) is closed to make
  room: clients reconnect transparently (`DaemonClient` retries once on a closed
  connection, and a closed idle connection never had a request in flight). Only when every
  connection is active does a newcomer get a "busy" error line and get closed: code
  `daemon_unavailable`, so callers treat it as the daemon being out of reach (retry later;
  writes are queued in the spool, as the daemon never read them).
- Timeouts: a connection that sends nothing within `UNUSED_TIMEOUT_S`, or stops half way
  through a request for `PARTIAL_TIMEOUT_S`, or stays idle `IDLE_TIMEOUT_S`, is closed; a
  reply the client does not read within `WRITE_TIMEOUT_S` closes its connection (the
  worker is freed, never blocked forever).
- A request line longer than `MAX_REQUEST_BYTES` is answered `invalid_input` and its
  connection closed (the rest of the line is never buffered).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import resource
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from engram_mcp.core.operations import QUICK_OPS  # answered without waiting for anything

log = logging.getLogger("engram.daemon")

MAX_WORKERS = 16
LISTEN_BACKLOG = 1024
MAX_CONNECTIONS = 1024
FD_RESERVE = 256  # descriptors kept for stores, logs, the spool and the model
MAX_REQUEST_BYTES = 16 * 1024 * 1024
RECV_BYTES = 256 * 1024
UNUSED_TIMEOUT_S = 60.0
PARTIAL_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 1800.0
EVICT_IDLE_S = 1.0
WRITE_TIMEOUT_S = 30.0
QUICK_WRITE_TIMEOUT_S = 0.2  # replies written on the selector thread (nudges, pings, refusals)
TICK_S = 1.0
ACCEPT_PAUSE_S = 0.2  # after accept() fails (out of descriptors)
QUICK_REQUEST_BYTES = 512

Handler = Callable[[bytes, Any], dict[str, Any]]


def busy_line(limit: int) -> bytes:
    """The error a connection over the cap receives before it is closed."""
    err = {
        "error": "daemon_unavailable",
        "message": f"engram daemon is busy: all {limit} connections are in use; try again shortly",
        "degraded": True,
        "retry_possible": True,
    }
    return (json.dumps({"id": None, "ok": False, "error": err}) + "\n").encode()


def too_large_line() -> bytes:
    err = {
        "error": "invalid_input",
        "message": f"request line is longer than {MAX_REQUEST_BYTES} bytes",
        "degraded": False,
        "retry_possible": False,
    }
    return (json.dumps({"id": None, "ok": False, "error": err}) + "\n").encode()


def connection_limit() -> int:
    """`MAX_CONNECTIONS`, or fewer when the descriptor limit cannot hold them plus a reserve."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = MAX_CONNECTIONS + FD_RESERVE
        if soft != resource.RLIM_INFINITY and soft < wanted:
            new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
    except (OSError, ValueError):
        return 64
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft - FD_RESERVE))


def _is_quick(line: bytes) -> bool:
    """A short request for a quick op (parsed: a quoted `"op":"ping"` inside arguments is not one)."""
    if len(line) > QUICK_REQUEST_BYTES or b"op" not in line:
        return False
    try:
        req = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(req, dict) and req.get("op") in QUICK_OPS


class _Replies:
    """What a handler writes to (replies and progress lines): bounded by the socket's timeout."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def write(self, data: bytes) -> None:
        self._sock.sendall(data)

    def flush(self) -> None:
        pass


class _Workers:
    """At most `size` daemon threads taking jobs from one queue (daemon threads: a request
    still running never keeps the process from exiting, unlike ThreadPoolExecutor's).

    A job is given its worker when it is submitted, under the lock: an idle worker is claimed
    (`idle` drops at once), else a thread is started, else it waits in `backlog` for the next
    worker to finish. Counting a worker idle until it had taken its job let two jobs submitted
    back to back both claim one idle worker: the second waited behind the first however long
    it ran (another project's recall behind a 3 s session start)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.threads: list[threading.Thread] = []
        self.idle = 0  # workers waiting for a job that no submitted job has claimed
        self.backlog = 0  # jobs submitted with every worker busy, taken as workers finish
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self.idle > 0:
                self.idle -= 1
            elif len(self.threads) < self.size:
                t = threading.Thread(target=self._run, name=f"engram-request-{len(self.threads) + 1}", daemon=True)
                self.threads.append(t)
                t.start()
            else:
                self.backlog += 1
            self.jobs.put(job)

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception:  # a job answers its own errors; this worker must live on, counted idle
                log.exception("request worker job failed")
            finally:
                with self._lock:
                    if self.backlog > 0:
                        self.backlog -= 1  # a waiting job is this worker's next
                    else:
                        self.idle += 1

    def stop(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)


@dataclass
class _Conn:
    sock: socket.socket
    fd: int
    opened: float
    last: float
    buffer: bytearray = field(default_factory=bytearray)
    requests: int = 0
    busy: bool = False  # a request of this connection is with a worker
    registered: bool = False  # in the selector
    broken: bool = False  # its reply could not be written
    closed: bool = False


class ConnectionServer:
    """Serve newline-delimited JSON requests on `listener` until `stopping` is set."""

    def __init__(
        self,
        listener: socket.socket,
        handle: Handler,
        stopping: threading.Event,
        *,
        on_tick: Callable[[], None],
        on_count: Callable[[int], None],
        on_stop: Callable[[], None],
        max_connections: int | None = None,
        workers: int = MAX_WORKERS,
    ) -> None:
        self.listener = listener
        self.handle = handle
        self.stopping = stopping
        self.on_tick, self.on_count, self.on_stop = on_tick, on_count, on_stop
        self.max_connections = max_connections or connection_limit()
        self.workers = _Workers(workers)
        self.sel = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}
        self._done: list[_Conn] = []  # connections whose request finished (from workers)
        self._done_lock = threading.Lock()
        self._refused = 0
        self._accept_paused_until = 0.0
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    # -- the loop -------------------------------------------------------------------------
    def serve(self) -> None:
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, "listen")
        self.sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        last_tick = time.monotonic()
        try:
            while not self.stopping.is_set():
                for key, _ in self.sel.select(TICK_S):
                    if key.data == "listen":
                        self._accept()
                    elif key.data == "wake":
                        self._drain_wakeups()
                    elif not key.data.closed:
                        self._read(key.data)
                self._resume_finished()
                now = time.monotonic()
                self._resume_accepting(now)
                if now - last_tick >= TICK_S:
                    last_tick = now
                    self._expire(now)
                    if self._refused:
                        log.warning("refused %d connections: %d open (the limit)", self._refused, len(self.conns))
                        self._refused = 0
                    self.on_tick()
        finally:
            self.close()

    def close(self) -> None:
        for conn in list(self.conns.values()):
            self._close(conn)
        self.workers.stop()
        self.sel.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- connections ------------------------------------------------------------------------
    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: make room or pause accepting, never spin
                if not self._evict_idlest(time.monotonic()):
                    self._pause_accepting(exc)
                return
            now = time.monotonic()
            if len(self.conns) >= self.max_connections and not self._evict_idlest(now):
                self._refuse(sock)
                continue
            conn = _Conn(sock, sock.fileno(), now, now)
            self.conns[conn.fd] = conn
            self._register(conn)
            self.on_count(len(self.conns))

    def _register(self, conn: _Conn) -> None:
        self.sel.register(conn.sock, selectors.EVENT_READ, conn)
        conn.registered = True

    def _unregister(self, conn: _Conn) -> None:
        if conn.registered:
            conn.registered = False
            try:
                self.sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass

    def _pause_accepting(self, exc: OSError) -> None:
        """Stop watching the listener for `ACCEPT_PAUSE_S` (it stays readable: the loop would spin)."""
        log.warning("accept failed (%s); pausing new connections for %.1fs", exc, ACCEPT_PAUSE_S)
        self._accept_paused_until = time.monotonic() + ACCEPT_PAUSE_S
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass

    def _resume_accepting(self, now: float) -> None:
        if self._accept_paused_until and now >= self._accept_paused_until:
            self._accept_paused_until = 0.0
            self.sel.register(self.listener, selectors.EVENT_READ, "listen")

    def _refuse(self, sock: socket.socket) -> None:
        self._refused += 1  # logged once per tick: a flood must not flood the log too
        try:
            sock.settimeout(QUICK_WRITE_TIMEOUT_S)
            sock.sendall(busy_line(self.max_connections))
        except OSError:
            pass
        finally:
            sock.close()

    def _evict_idlest(self, now: float) -> bool:
        idle = [c for c in self.conns.values() if not c.busy and not c.buffer and now - c.last > EVICT_IDLE_S]
        if not idle:
            return False
        victim = min(idle, key=lambda c: c.last)
        log.info("closing a connection idle for %.0fs to make room", now - victim.last)
        self._close(victim)
        return True

    def _close(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._unregister(conn)
        if self.conns.get(conn.fd) is conn:
            del self.conns[conn.fd]
        try:
            conn.sock.close()
        except OSError:
            pass
        self.on_count(len(self.conns))

    def _expire(self, now: float) -> None:
        for conn in list(self.conns.values()):
            if conn.busy:
                continue
            if conn.buffer:
                limit = PARTIAL_TIMEOUT_S
            elif conn.requests == 0:
                limit = UNUSED_TIMEOUT_S
            else:
                limit = IDLE_TIMEOUT_S
            if now - conn.last > limit:
                self._close(conn)

    # -- requests ---------------------------------------------------------------------------
    def _read(self, conn: _Conn) -> None:
        try:
            conn.sock.settimeout(0)
            data = conn.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
            return
        conn.last = time.monotonic()
        conn.buffer += data
        self._next_request(conn)

    def _next_request(self, conn: _Conn) -> None:
        """Start the next complete request of `conn`, if any (quick ones inline, in order)."""
        while not conn.busy and not conn.closed:
            end = conn.buffer.find(b"\n")
            if end < 0:
                if len(conn.buffer) > MAX_REQUEST_BYTES:
                    self._send_and_close(conn, too_large_line())
                return
            line = bytes(conn.buffer[: end + 1])
            del conn.buffer[: end + 1]
            conn.requests += 1  # (a blank line too: it is answered, as the client may wait for it)
            if _is_quick(line):
                self._answer(conn, line, QUICK_WRITE_TIMEOUT_S)  # never blocks the selector for long
                if conn.broken:
                    self._close(conn)
                continue
            conn.busy = True
            self._unregister(conn)
            self.workers.submit(partial(self._work, conn, line))

    def _answer(self, conn: _Conn, line: bytes, write_timeout_s: float) -> None:
        """Handle one request and write its reply (on a worker, or on the selector for quick ones)."""
        conn.sock.settimeout(write_timeout_s)
        response = self.handle(line, _Replies(conn.sock))
        try:
            data = (json.dumps(response, ensure_ascii=False, default=str) + "\n").encode()
        except (ValueError, UnicodeError):  # a lone surrogate in a result: escape it rather than fail
            data = (json.dumps(response, ensure_ascii=True, default=str) + "\n").encode()
        if response.get("_stop"):
            self.on_stop()
        try:
            conn.sock.sendall(data)
        except OSError:  # gone, or not reading its replies within the timeout: drop it
            conn.broken = True

    def _work(self, conn: _Conn, line: bytes) -> None:
        try:
            self._answer(conn, line, WRITE_TIMEOUT_S)
        except Exception:  # the handler answers every error itself; this is a last guard
            log.exception("request failed")
            conn.broken = True
        finally:
            conn.last = time.monotonic()
            with self._done_lock:
                self._done.append(conn)
            try:
                os.write(self._wake_w, b"x")
            except OSError:  # the pipe is full: the selector wakes up anyway
                pass

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except OSError:
            pass

    def _resume_finished(self) -> None:
        with self._done_lock:
            done, self._done = self._done, []
        for conn in done:
            conn.busy = False
            if conn.closed:
                continue
            if conn.broken:
                self._close(conn)
                continue
            self._register(conn)
            self._next_request(conn)

    def _send_and_close(self, conn: _Conn, data: bytes) -> None:
        try:
            conn.sock.settimeout(QUICK_WRITE_TIMEOUT_S)
            conn.sock.sendall(data)
        except OSError:
            pass
        self._close(conn)
