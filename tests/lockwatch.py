"""A stand-in for the service lock that times every outermost hold (test helper).

A hold is measured net of the interpreter's garbage collections that ran during it. A
collection stops every Python thread, whether or not it holds the lock, so it says nothing
about how long engram's code keeps the lock; in a test process that has run hundreds of
tests before, one full collection takes 0.3-0.4 s (measured), which used to be counted as a
lock hold and failed these tests on a loaded machine.
"""

from __future__ import annotations

import gc
import time
from typing import Any


class HoldTimer:
    """Wraps `inner` (a reentrant lock); `holds` gets the seconds of each outermost hold."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.holds: list[float] = []
        self._gc_total_s = 0.0
        self._gc_started = 0.0
        self._depth = 0
        self._since = 0.0
        self._gc_at_start = 0.0

    def __enter__(self) -> HoldTimer:
        self.inner.acquire()
        self._depth += 1
        if self._depth == 1:
            self._since = time.perf_counter()
            self._gc_at_start = self._gc_total_s
        return self

    def __exit__(self, *exc: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            wall = time.perf_counter() - self._since
            self.holds.append(max(0.0, wall - (self._gc_total_s - self._gc_at_start)))
        self.inner.release()

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        self._gc_total_s += time.perf_counter() - self._gc_started

    def start(self) -> HoldTimer:
        """Begin counting collections (call `stop` when done: the callback holds this timer)."""
        gc.callbacks.append(self._on_gc)
        return self

    def stop(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
