"""The daemon's vector backfill: the vectors a large import deferred, computed in the background.

The logic is services/backfill.py (which scopes await vectors, one step of embedding and
writing); this thread owns the pacing. It starts with the service, finishes what the list names
(a daemon killed mid-backfill resumes from what the store holds), then sleeps until an import
wakes it. Low priority, so other projects' requests stay fast (issue 35: another project's
recall p95 under 200 ms meanwhile):

- the thread lowers its own scheduling priority (`NICE`; Linux schedules threads one by one, and
  the model's one-thread session runs on the calling thread), so a request's thread wins a core;
- each step embeds a few dozen texts and holds the service lock only to write them;
- it waits while requests are being answered (`busy`), at most `BUSY_WAIT_MAX_S` at a time, so a
  steady stream of requests slows it without stopping it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Callable

from engram_mcp.core.errors import EngramError

if TYPE_CHECKING:
    from engram_mcp.services.service import MemoryService

log = logging.getLogger("engram.daemon.backfill")
NICE = 10  # added to the thread's niceness (19 is the lowest priority)
BUSY_POLL_S = 0.01
BUSY_WAIT_MAX_S = 0.5  # a step waits at most this long for requests in flight to end
STEP_PAUSE_S = 0.005  # between steps: gives a waiting request the lock and the interpreter
RETRY_S = 30.0  # after a failure (model unavailable, store closed): try again this much later


class VectorBackfill:
    """One thread per daemon computing deferred vectors (services/backfill.py)."""

    #: Test hook, called after each step that wrote vectors with (written so far, remaining):
    #: a test makes the worker tell where it stands and hold there (kill -9 mid-backfill).
    after_step: Callable[[int, int], None] | None = None

    def __init__(self, service: "MemoryService", stopping: threading.Event, busy: Callable[[], bool]) -> None:
        self.service = service
        self.stopping = stopping
        self.busy = busy
        self.wanted = threading.Event()
        self.wanted.set()  # look at the list once at start: a backfill a restart interrupted
        self.written = 0
        self.running = False
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        from engram_mcp.services import backfill

        backfill.attach(self.service.access, self.wanted.set)
        self.thread = threading.Thread(target=self._loop, name="engram-vector-backfill", daemon=True)
        self.thread.start()

    def stop(self, timeout_s: float) -> None:
        """Stop the worker and wait up to `timeout_s` for it: a step in flight writes its vectors first."""
        self.stopping.set()
        self.wanted.set()  # wake it: it sees `stopping` and ends
        if self.thread is not None:
            self.thread.join(timeout=timeout_s)

    def _loop(self) -> None:
        """Once at start, then when woken (an import deferred vectors), or RETRY_S after a pass
        that could not finish (a store that would not open, the model unavailable)."""
        _lower_priority()
        retry = False
        while not self.stopping.is_set():
            self.wanted.wait(RETRY_S if retry else None)
            self.wanted.clear()
            if self.stopping.is_set():
                return
            self.running = True
            try:
                retry = not self.run_pending()
            except Exception:
                log.exception("vector backfill failed; retried in %.0f s", RETRY_S)
                retry = True
            finally:
                self.running = False

    def run_pending(self) -> bool:
        """Finish every scope the list names; False when one could not be finished now."""
        from engram_mcp.services import backfill

        access = self.service.access
        done_all = True
        for entry in backfill.pending(access):
            if not self._finish(entry):
                done_all = False
        return done_all

    def _finish(self, entry) -> bool:
        from engram_mcp.services import backfill

        access = self.service.access
        started, before = time.monotonic(), self.written
        while not self.stopping.is_set():
            self._wait_quiet()
            try:
                res = backfill.step(access, entry)
            except EngramError as exc:  # the store cannot open now: the entry stays for later
                log.warning("vector backfill of %s %s waits: %s", entry.scope, entry.store, exc.message)
                return False
            if res.failed:
                log.warning("vector backfill of %s %s waits: %s", entry.scope, entry.store, res.failed)
                return False
            self.written += res.written
            hook = self.after_step
            if hook is not None and res.written:
                hook(self.written, res.remaining)
            if res.remaining == 0:
                backfill.unmark(access, entry)
                log.info(
                    "vector backfill of %s %s done: %d vectors in %.1f s",
                    entry.scope,
                    entry.store,
                    self.written - before,
                    time.monotonic() - started,
                )
                return True
            time.sleep(STEP_PAUSE_S)
        return False

    def _wait_quiet(self) -> None:
        """Let the requests being answered finish first (at most BUSY_WAIT_MAX_S)."""
        deadline = time.monotonic() + BUSY_WAIT_MAX_S
        while self.busy() and time.monotonic() < deadline and not self.stopping.is_set():
            time.sleep(BUSY_POLL_S)


def _lower_priority() -> None:
    """Lower this thread's scheduling priority (Linux: per thread; elsewhere the call may touch
    the whole process, so it is only made where the thread id is a scheduling entity)."""
    if not hasattr(os, "setpriority") or not os.path.isdir("/proc/self/task"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + NICE))
    except OSError as exc:
        log.info("vector backfill runs at normal priority: %s", exc)
