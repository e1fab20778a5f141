"""ScopeAccess: what every operation needs to reach the memories of a caller's scopes.

The operations (store.py, recall.py, edit.py, promotion.py, lifecycle.py, ...) are plain
functions `op(access, ctx, **args)`. They depend on this object and on each other, never on
`MemoryService` (service.py), which only composes them. It holds:

- who is asking (`RequestContext`) and a memory found in one scope (`Located`);
- the config of a project, re-read only when one of its files changed;
- the embedder (loaded on first use) and the two ways to embed;
- the open stores (`StoreRegistry`), one `ScopeHandle` per scope database, the ONE per-scope
  iteration (`open_scopes`) and the retrieval views built on it;
- locating a memory by id (or by the short id `engram list` shows);
- the write lock, the versioned write (`write_update`: record + history in one transaction)
  and the near-duplicate finder (`find_twin`);
- the recall strengthening written behind (`write_behind`, strengthen.py).

Writes are serialised by one lock (measured: concurrent writes to one engine lose updates,
docs/decisions.md); embedding runs outside it so two cores are used.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import numpy as np

from engram_mcp.core.config import (
    Config,
    ConfigError,
    load_config_lenient,
    project_config_path,
    user_config_path,
)
from engram_mcp.core.errors import InvalidInput, MemoryNotFound, StoreUnavailable
from engram_mcp.core.ids import as_short_id, parse_memory_id, session_db_name
from engram_mcp.core.paths import user_dir as default_user_dir
from engram_mcp.core.vocabulary import SCOPES
from engram_mcp.index.embeddings import DEFAULT_DIM, Embedder, EmbeddingsUnavailable
from engram_mcp.index.retrieval import ScopeView
from engram_mcp.index.scope_index import ScopeIndex, content_hash
from engram_mcp.services import fact_diff
from engram_mcp.services.handles import RECORD_READ_MAX, IndexMarks, ScopeHandle, StoreRegistry
from engram_mcp.services.model import configured_embedder
from engram_mcp.services.records import check_enum, now_dt
from engram_mcp.services.strengthen import StrengthenWriteBehind

log = logging.getLogger("engram.service")
SCOPE_ORDER = SCOPES  # most specific first: the order of reads and of copies
SESSION_TOUCH_SECONDS = 60.0  # last_seen_at is refreshed at most this often per session


@dataclass(frozen=True)
class RequestContext:
    """Who is asking: the project (by root) and the Claude Code session, if any."""

    project_root: Path
    session_id: str | None = None


@dataclass
class Located:
    """A memory found in one scope database."""

    handle: ScopeHandle
    key: str
    row: dict[str, Any]


@dataclass
class ServiceState:
    """Counters and the last problems seen, reported by `status`."""

    started_at: float = field(default_factory=time.time)
    embedding_error: str | None = None
    config_problem: str | None = None  # the last config problem seen (defaults used for it)
    recalls: int = 0
    stores: int = 0


#: Threads running a recall's Python half beside its query embedding (`ScopeAccess.beside`).
RECALL_WORKERS = 2
T = TypeVar("T")


class ScopeAccess:
    """The stores, embedder, config and write discipline the operations share (one per service)."""

    def __init__(
        self, *, home: Path | None = None, user_dir: Path | None = None, embedder: Embedder | None = None
    ) -> None:
        self.home = home
        self.user_dir = Path(user_dir) if user_dir else default_user_dir(home)
        self.lock = threading.RLock()
        self.state = ServiceState()
        self._config_cache: dict[Path | None, tuple[tuple, Config, str | None]] = {}  # stamp, config, its problem
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self.registry = StoreRegistry(self.user_dir, self._new_index, self._index_persist, self._index_early)
        self.write_behind = StrengthenWriteBehind(self.lock, self.registry)
        self._session_seen: dict[tuple[Path, str], float] = {}
        self._workers: ThreadPoolExecutor | None = None
        self._worker_lock = threading.Lock()

    # ------------------------------------------------------------------ config
    def config(self, project_root: Path | None = None) -> Config:
        """Config for a project, re-read only when one of its files changed.

        The hot path must not parse YAML on every request; two stat() calls decide
        whether the cached value still holds, so an edit applies on the next request.
        """
        stamp = _config_stamp(self.home, project_root)
        cached = self._config_cache.get(project_root)
        if cached and cached[0] == stamp:
            self.state.config_problem = cached[2]  # this project's problem, not the last one seen elsewhere
            return cached[1]
        cfg, problem = load_config_lenient(project_root, home=self.home)
        if problem is not None:
            log.warning("config: %s; running on defaults for the broken part", problem)
        self.state.config_problem = str(problem) if problem is not None else None
        self._config_cache[project_root] = (stamp, cfg, self.state.config_problem)
        return cfg

    def forget_config(self, project_root: Path | None) -> None:
        """Drop a project's cached config, so the next request reads its files again."""
        self._config_cache.pop(project_root, None)

    # ------------------------------------------------------------------ embeddings
    @property
    def embedder(self) -> Embedder:
        """The embedder, created on first use from the user config (the model loads lazily)."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    try:
                        cfg: Config | None = self.config(None)
                    except ConfigError:
                        cfg = None
                    self._embedder = configured_embedder(self.user_dir, cfg)
        return self._embedder

    @property
    def model_name(self) -> str:
        return self.embedder.model_name

    def dim(self) -> int:
        """The embedding dimension, or the default one when the model cannot say (not loadable)."""
        try:
            return int(self.embedder.dim)
        except Exception:
            return DEFAULT_DIM

    def _index_persist(self) -> bool:
        """Config `index_persist` (user level: the daemon's stores are shared by every project)."""
        try:
            return bool(self.config(None).index_persist)
        except ConfigError:
            return True

    def _index_early(self) -> bool:
        """Config `index_early_answers` (user level, like `index_persist`)."""
        try:
            return bool(self.config(None).index_early_answers)
        except ConfigError:
            return True

    def checkpoint(self, *, read_all_records: bool = False) -> int:
        """Write the changed indexes to their files (handles.py); the number written. At most
        `RECORD_READ_MAX` records are read from the engine (requests may be waiting), or every
        one the files miss with `read_all_records`."""
        with self.lock:
            self.write_behind.flush_all()
            return self.registry.checkpoint_all(None if read_all_records else RECORD_READ_MAX)

    def distrust_indexes(self, since: IndexMarks | None = None) -> None:
        """After an unexpected failure of a write, which may have committed to a store and not
        reached its index: write the held-back strengthening, then drop the indexes of the stores
        the write may have reached (all without `since`, `registry.write_marks` taken before it),
        so the next request loads a file whose stamp still matches its store or rebuilds."""
        with self.lock:
            stores = self.registry.moved_since(since) if since is not None else None
            try:
                self.write_behind.flush_all()
            except Exception:
                log.exception("writing held-back recall strengthening before dropping the indexes failed")
            self.registry.distrust_indexes(stores)

    def _new_index(self, scope: str) -> ScopeIndex:
        return ScopeIndex(scope, self.dim(), self.model_name)

    def embed_query(self, text: str) -> tuple[np.ndarray | None, str | None]:
        """Embed, or explain why not (the caller degrades to keyword search)."""
        try:
            vec = self.embedder.embed_query(text)
            self.state.embedding_error = None
            return vec, None
        except EmbeddingsUnavailable as exc:
            self.state.embedding_error = str(exc)
            return None, f"embedding unavailable: {exc}"
        except Exception as exc:  # a broken model must never break memory
            self.state.embedding_error = str(exc)
            log.exception("embedding failed")
            return None, f"embedding failed: {exc}"

    def holds_lock(self) -> bool:
        """Whether this thread holds the write lock: work it hands to another thread must then not
        take the lock (an operation calling recall under it would wait for itself)."""
        owned = getattr(self.lock, "_is_owned", None)  # RLock's, as threading.Condition uses it
        return True if owned is None else bool(owned())  # a lock that cannot say: the safe answer

    def beside(self, work: Callable[[], T]) -> Future[T]:
        """Run `work` on a worker thread. A recall embeds its query on its own thread, inside
        onnxruntime, which leaves the interpreter lock meanwhile; its Python half (opening the
        stores, the keyword search) runs here on the other core at that time. This way round, not
        the embedding on the worker: a worker waiting for the interpreter lock while the request
        thread runs Python would wait up to the switch interval (5 ms) to start. Two workers: two
        clients' recalls still run side by side."""
        with self._worker_lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(max_workers=RECALL_WORKERS, thread_name_prefix="engram-recall")
            return self._workers.submit(work)

    def embed_documents(self, texts: list[str]) -> tuple[np.ndarray | None, str | None]:
        """Embed a batch (import, reindex), or explain why not."""
        if not texts:
            return np.zeros((0, self.dim()), dtype=np.float32), None
        try:
            return self.embedder.embed_documents(texts), None
        except Exception as exc:
            self.state.embedding_error = str(exc)
            return None, f"embedding unavailable: {exc}"

    def close(self) -> None:
        """Write pending recall strengthening, then close every store."""
        with self.lock:
            self.registry.wait_for_openings()  # a store opening in the background finishes first
            self.write_behind.close()  # pending recall strengthening is written before the stores close
            self.registry.checkpoint_all()  # the next open maps the index instead of rebuilding it
            self.registry.close_all()
        with self._worker_lock:
            if self._workers is not None:
                self._workers.shutdown(wait=True)
                self._workers = None

    # ------------------------------------------------------------------ handles
    def handle(
        self, ctx: RequestContext, scope: str, *, session_id: str | None = None, early_ok: bool = False
    ) -> ScopeHandle:
        """The handle of one of the caller's scopes (opened on first use). A handle whose store is
        still opening in the background (handles.py, early answers) is returned as it is only to
        callers that say `early_ok` (recall); others wait for the open, and get its failure."""
        handle = self._handle(ctx, scope, session_id)
        if handle.engine_pending and not early_ok:
            handle.wait_engine()
        return handle

    def _handle(self, ctx: RequestContext, scope: str, session_id: str | None) -> ScopeHandle:
        check_enum(scope, SCOPES, "scope")
        if scope == "user":
            return self.registry.user()
        if scope == "project":
            return self.registry.project(ctx.project_root)
        sid = session_id or ctx.session_id
        if not sid:
            raise InvalidInput(
                "scope 'session' needs a session: none is active for this caller. Use scope 'project' instead.",
                field="scope",
            )
        return self.registry.session(ctx.project_root, sid)

    def open_scopes(
        self,
        ctx: RequestContext,
        scopes: Iterable[str],
        warnings: list[dict[str, Any]] | None = None,
        *,
        early_ok: bool = False,
    ) -> list[tuple[str, ScopeHandle]]:
        """(scope, handle) for each of `scopes` this caller can read: the session scope only when
        the caller has a session; a store that cannot open is left out, and named in `warnings`
        (code scope_unavailable) when a list is given."""
        opened = []
        for scope, result in self.try_scopes(ctx, scopes, early_ok=early_ok):
            if isinstance(result, StoreUnavailable):
                if warnings is not None:
                    warnings.append({"code": "scope_unavailable", "scope": scope, "message": result.message})
                continue
            opened.append((scope, result))
        return opened

    def try_scopes(
        self, ctx: RequestContext, scopes: Iterable[str], *, early_ok: bool = False
    ) -> Iterator[tuple[str, ScopeHandle | StoreUnavailable]]:
        """The one per-scope iteration: for each of `scopes` the caller can read (the session
        scope only with a session), its handle, or the StoreUnavailable that kept it closed.

        Lazy: each store is opened (under the write lock) when the loop reaches it, so a
        caller working scope by scope opens the next one only after the previous is done. A
        store still opening in the background is waited for outside the lock, so recalls answer
        meanwhile (an export that met a user store mid-open held the lock for that open).
        """
        for scope in scopes:
            if scope == "session" and not ctx.session_id:
                continue
            try:
                with self.lock:
                    handle = self.handle(ctx, scope, early_ok=True)
                if handle.engine_pending and not early_ok:
                    handle.wait_engine()
            except StoreUnavailable as exc:
                yield scope, exc
                continue
            yield scope, handle

    def views(
        self, ctx: RequestContext, scopes: tuple[str, ...], cfg: Config
    ) -> tuple[list[ScopeView], list[dict[str, Any]]]:
        """Open the scopes a read needs; a scope that cannot open becomes a warning."""
        self.touch_session(ctx.project_root, ctx.session_id)  # a recall is activity too
        weights = cfg.scope_weights_resolved()
        views: list[ScopeView] = []
        warnings: list[dict[str, Any]] = []
        for scope, h in self.open_scopes(ctx, scopes, warnings, early_ok=True):  # recall's: early answers
            refused = h.store.failure  # readable, but not writable: recall strengthening waits too
            if refused:
                warnings.append({"code": "scope_read_only", "scope": scope, "message": refused})
            if h.rebuilding is not None:
                warnings.append(
                    {
                        "code": "partial_results",
                        "scope": scope,
                        "message": f"the {scope} index is being rebuilt from its store, newest memories "
                        f"first: this answer searched {len(h.index)} of them; ask again shortly for a "
                        "complete one",
                    }
                )
            views.append(ScopeView(scope, h.index, float(weights[scope]), frozen=(scope == "session")))
        return views, warnings

    def touch_session(self, project_root: Path, session_id: str | None) -> None:
        """Refresh session_registry.last_seen_at on activity, at most once a minute per session.

        A session that keeps working must never look abandoned to another window's
        session_start (which recovers, promotes and drops sessions silent for
        `abandoned_session_hours`). The throttle keeps the hot path at one write a minute.
        """
        if not session_id:
            return
        now = time.monotonic()
        seen_key = (Path(project_root), session_id)
        if now - self._session_seen.get(seen_key, -SESSION_TOUCH_SECONDS) < SESSION_TOUCH_SECONDS:
            return
        try:
            project = self.registry.project(project_root)
            if project.engine_pending:  # never hold a recall for bookkeeping: done once the store is open
                return
            project.repo.touch_session(session_db_name(session_id), session_id)
        except (StoreUnavailable, InvalidInput):  # bookkeeping must never fail the caller's request
            return
        self._session_seen[seen_key] = now

    # ------------------------------------------------------------------ locating memories
    def locate(self, ctx: RequestContext, memory_id: str, *, scopes: tuple[str, ...] = SCOPE_ORDER) -> list[Located]:
        """Every copy of a memory id visible to the caller, most specific scope first.

        A short id (the end of a ULID, as `engram list` shows it) is accepted when exactly one
        memory of these scopes ends with it.
        """
        key = self.memory_key(ctx, memory_id, field="memory_id", scopes=scopes)
        found = []
        for _scope, h in self.open_scopes(ctx, scopes):
            if h.index.slot_of(key) is None:
                continue
            row = h.repo.get(key)
            if row is not None:
                found.append(Located(h, key, row))
        return found

    def resolve_short_id(self, ctx: RequestContext, short: str, scopes: tuple[str, ...]) -> str:
        """The one memory key of the caller's scopes that ends with `short` (a scan of the
        derived index's keys: milliseconds at 100k, and only when a short id is given)."""
        keys: set[str] = set()
        for _scope, h in self.open_scopes(ctx, scopes):
            keys.update(k for k in h.index.slots.keys() if k.endswith(short))
        if not keys:
            raise MemoryNotFound(
                f"No memory id ends with {short} in this project's session, project or user scopes; "
                "`engram list` shows the ids."
            )
        if len(keys) > 1:
            shown = ", ".join(sorted(f"memory:{k}" for k in keys)[:5])
            raise InvalidInput(
                f"{short} matches {len(keys)} memories ({shown}); give more characters of the id", field="memory_id"
            )
        return keys.pop()

    def memory_key(
        self, ctx: RequestContext, memory_id: str, *, field: str, scopes: tuple[str, ...] = SCOPE_ORDER
    ) -> str:
        """The bare key `memory_id` names: a whole id as it is, or a short id (the end of a ULID,
        as memory lines and `engram list` show it) when exactly one memory of `scopes` ends with
        it (else MemoryNotFound, or InvalidInput when several do)."""
        try:
            return parse_memory_id(memory_id, field=field)
        except InvalidInput:
            short = as_short_id(memory_id)
            if short is None:
                raise
            return self.resolve_short_id(ctx, short, scopes)

    def locate_one(self, ctx: RequestContext, memory_id: str) -> list[Located]:
        """As `locate`, but a memory the caller cannot see is an error (MemoryNotFound)."""
        found = self.locate(ctx, memory_id)
        if not found:
            raise MemoryNotFound(
                f"No memory {memory_id} in this project's session, project or user scopes; use recall_memories to find one."
            )
        return found

    # ------------------------------------------------------------------ writes
    @staticmethod
    def editable(row: dict[str, Any]) -> dict[str, Any]:
        """A stored row as a record to write back (without its id)."""
        return {k: v for k, v in row.items() if k != "id"}

    def write_update(
        self,
        h: ScopeHandle,
        key: str,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        change: str,
        vector: np.ndarray | None = None,
    ) -> None:
        """Replace a record and keep its previous version in memory_history, atomically."""
        new["version"] = int(old.get("version", 1)) + 1
        new["updated_at"] = now_dt()
        snapshot = {k: v for k, v in self.editable(old).items() if k not in ("embedding",)}
        record = {k: v for k, v in new.items() if v is not None}
        with h.repo.atomic() as tx:
            tx.add_history(key, version=int(old.get("version", 1)), change=change, snapshot=snapshot)
            tx.replace(key, record)
        h.index.upsert({**record, "id": key}, vector)

    @staticmethod
    def find_twin(
        h: ScopeHandle,
        content: str,
        vec: np.ndarray | None,
        threshold: float,
        *,
        source: dict[str, Any] | None = None,
        raw: bool = False,
    ) -> tuple[str, float] | None:
        """A live memory of the same scope that this content duplicates, if any: the nearest
        vector at cosine >= `threshold`, else the same text (for memories without a vector).

        Unless `raw`, only a twin it is safe to merge into (`fact_diff.merge_decision`: the same
        facts, no origin boundary between them), so no caller (store, promotion) merges a changed
        fact into the older text; store asks `raw` and decides itself what a refused twin becomes.
        """
        twin = ScopeAccess._nearest_twin(h, content, vec, threshold)
        if twin is None or raw:
            return twin
        row = h.repo.get(twin[0])
        if row is None:
            return None
        action, _, _ = fact_diff.merge_decision(str(row.get("content") or ""), row.get("source"), content, source)
        return twin if action == fact_diff.MERGE else None

    @staticmethod
    def _nearest_twin(
        h: ScopeHandle, content: str, vec: np.ndarray | None, threshold: float
    ) -> tuple[str, float] | None:
        live = h.index.live_mask_for()
        if vec is not None:
            best = h.index.vectors.max_similarity(vec, live)
            if best is not None and best[1] >= threshold:
                key = h.index.key_of(best[0])
                if key:
                    return key, float(best[1])
        slot = h.index.hash_to_slot.get(content_hash(content))
        if slot is not None and slot < live.size and live[slot]:
            key = h.index.key_of(slot)
            if key:
                return key, 1.0
        return None


def _config_stamp(home: Path | None, project_root: Path | None) -> tuple:
    """(mtime, size) of the user and project config files; changes when either is edited."""
    paths = [user_config_path(home)] + ([project_config_path(project_root)] if project_root else [])
    stamp: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = path.stat()
            stamp.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append(None)
    return tuple(stamp)
