"""Write-behind for recall strengthening (the testing effect), so a recall does not pay a commit.

Every recall bumps `access_count` and `last_accessed_at` of what it returns (and moves
`created` to `active`). Written synchronously that is one fsync'd UPDATE per scope per
recall: 3-5 ms at p50 and 12-17 ms at p95 on this machine, the largest part of a recall
after the query embedding. So:

1. At recall time the bump goes into the scope's in-memory index at once (`ScopeIndex.touch`,
   which the composite score and the lifecycle read) and into the index's pending set
   (`ScopeIndex.add_pending_strengthen`).
2. The pending set is written as one statement (`ScopeRepository.strengthen`) per scope database:
   - before any other statement runs on that database (`ScopeHandle.before_io`), so every
     read and write of memory rows (get, update, promotion, export, lifecycle...) sees the
     bumps: nothing but recall itself ever observes the engine without them;
   - on a short timer (`FLUSH_DELAY_SECONDS`) after the first pending bump;
   - at `MemoryService.close()` (`ScopeAccess.close`).

Durability trade-off (docs/architecture.md): a `kill -9` or power loss loses the bumps of the
last `FLUSH_DELAY_SECONDS` at most: a few access counts, never a memory or an edit. A failed
flush (store closed after an I/O error) is logged and dropped for the same reason.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone
from typing import Any

from engram_mcp.services.handles import ScopeHandle, StoreRegistry
from engram_mcp.storage.rows import StrengthenBump

log = logging.getLogger("engram.strengthen")
FLUSH_DELAY_SECONDS = 1.0


class StrengthenWriteBehind:
    """Pending strengthening per scope database, flushed before other I/O, on a timer, at close."""

    def __init__(self, lock: Any, registry: StoreRegistry, delay: float = FLUSH_DELAY_SECONDS) -> None:
        self._lock = lock  # the service lock: bumps are recorded and flushed under it
        self._registry = registry
        self.delay = delay
        self._dirty: dict[int, ScopeHandle] = {}
        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._closed = False
        self.flushed_batches = 0
        self.dropped_batches = 0

    def record(self, handle: ScopeHandle, keys: list[str], now: float, session_id: str | None) -> None:
        """Bump `keys` in the index now and remember to write it (caller holds the service lock).

        `now` is taken at the microsecond, as the engine stores it: the index must hold the
        time an index rebuilt from the engine reads (a float finer than that differed from it)."""
        now = datetime.fromtimestamp(now, timezone.utc).timestamp()
        handle.index.touch(keys, now)
        handle.index.add_pending_strengthen(keys, now, session_id)
        handle.before_io = self.flush_handle
        self._dirty[id(handle)] = handle
        self._schedule()

    def flush_handle(self, handle: ScopeHandle) -> None:
        """Write the handle's pending strengthening (a no-op when there is none). While the
        handle's store still opens in the background (services/handles.py), it stays held back."""
        if not handle.index.pending_strengthen or handle.engine_pending:
            return
        with self._lock:
            pending = handle.index.take_pending_strengthen()
            self._dirty.pop(id(handle), None)
            if not pending or not self._still_open(handle):
                return
            batch = [
                StrengthenBump(key, n, datetime.fromtimestamp(at, timezone.utc), tuple(sorted(sessions)))
                for key, (n, at, sessions) in pending.items()
            ]
            try:
                handle.direct_repo().strengthen(batch)
                handle.note_flushed(pending, written=True)
                self.flushed_batches += 1
            except Exception as exc:  # losing access bumps is acceptable; failing the caller is not
                handle.note_flushed(pending, written=False)
                self.dropped_batches += 1
                log.warning("could not write %d recall bumps to %s: %s", len(batch), handle.label, exc)

    def flush_all(self) -> None:
        with self._lock:
            waiting = {}
            for hid, handle in list(self._dirty.items()):
                if handle.engine_pending:  # written once its store has opened
                    waiting[hid] = handle
                    continue
                self.flush_handle(handle)
            self._dirty.clear()
            self._dirty.update(waiting)
        if waiting:
            self._schedule()

    def close(self) -> None:
        """Cancel the timer and write everything pending (call before the stores close)."""
        with self._timer_lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.flush_all()

    def _still_open(self, handle: ScopeHandle) -> bool:
        """False for a handle whose store closed or whose session database was dropped (an
        UPDATE there would fail, or implicitly recreate the database)."""
        if not handle.store.is_open:
            return False
        if handle.scope == "session" and handle.project_root is not None and handle.session_id:
            return self._registry.cached_session(handle.project_root, handle.session_id) is handle
        return True

    def _schedule(self) -> None:
        with self._timer_lock:
            if self._timer is None and not self._closed:
                timer = threading.Timer(self.delay, self._on_timer)
                timer.daemon = True
                timer.name = "engram-strengthen-flush"
                self._timer = timer
                timer.start()

    def _on_timer(self) -> None:
        with self._timer_lock:
            self._timer = None
        try:
            self.flush_all()
        except Exception:  # a background flush must never kill the process
            log.exception("background flush of recall strengthening failed")
