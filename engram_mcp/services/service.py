"""MemoryService: the one service layer every interface calls.

The MCP server, the hooks, the slash commands and the CLI never touch SurrealDB: they
send requests to the owner process (`engram_mcp.daemon.process`), which calls this class. It
is also used in-process by tests and benchmarks. Every public method takes the caller's
`RequestContext` (project root + Claude Code session id) and returns plain JSON-ready
dicts. Writes are serialised by one lock (environment.md: concurrent writes to one
engine lose updates); embedding runs outside the lock so two cores are used.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, cast

import numpy as np

from engram_mcp.core.config import Config, ConfigError, load_config_lenient
from engram_mcp.core.errors import InvalidInput, MemoryNotFound, StoreUnavailable
from engram_mcp.core.ids import as_short_id, format_memory_id, new_ulid, parse_memory_id
from engram_mcp.core.paths import user_dir as default_user_dir
from engram_mcp.index.embeddings import DEFAULT_DIM, Embedder, EmbeddingsUnavailable, make_embedder
from engram_mcp.index.retrieval import STRATEGIES, RetrievalSettings, ScopeView, rank
from engram_mcp.index.scope_index import RECALLABLE_STATUSES, STATUS_CODE, Filters, ScopeIndex, content_hash, record_key
from engram_mcp.index.scoring import REACTIVATE_AT_STRENGTH, decay_factor, to_epoch
from engram_mcp.services import graph as graph_ops
from engram_mcp.services import records
from engram_mcp.services.handles import ScopeHandle, StoreRegistry
from engram_mcp.services.records import (
    MAX_CONTENT_CHARS,
    MAX_SUMMARY_CHARS,
    check_entities,
    check_enum,
    check_object,
    check_tags,
    check_text,
    check_unit,
    findings_summary,
    iso,
    jsonable,
    now_dt,
    parse_time,
    public_memory,
    sanitize_obj,
    sanitize_text,
    vector_bytes,
)
from engram_mcp.services.strengthen import StrengthenWriteBehind
from engram_mcp.storage import queries as q
from engram_mcp.storage.schema import LINK_TYPES, MEMORY_TYPES, SCOPES, STATUSES

log = logging.getLogger("engram.service")
SCOPE_ORDER = ("session", "project", "user")
MAX_RECALL_LIMIT = 50
SESSION_TOUCH_SECONDS = 60.0  # last_seen_at is refreshed at most this often per session
SUPERSEDE_HINT_MIN_COSINE = 0.65  # see MemoryService._supersede_hint
SUPERSEDE_HINT_PREVIEW_CHARS = 160


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
    started_at: float = field(default_factory=time.time)
    embedding_error: str | None = None
    config_problem: str | None = None  # the last config problem seen (defaults used for it)
    recalls: int = 0
    stores: int = 0


class MemoryService:
    """Storage, embeddings, retrieval, decay, promotion and graph behind one API."""

    # Attached by _bind_operations() at the end of this module; declared so their callers type-check.
    graph_search: Callable[..., Any]
    promote: Callable[..., Any]
    session_start: Callable[..., Any]
    session_end: Callable[..., Any]
    context: Callable[..., Any]
    maintain: Callable[..., Any]
    consolidate: Callable[..., Any]
    export: Callable[..., Any]
    import_: Callable[..., Any]
    reindex: Callable[..., Any]
    list_memories: Callable[..., Any]

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
        self.registry = StoreRegistry(self.user_dir, self._new_index)
        self._session_seen: dict[tuple[Path, str], float] = {}

    # ------------------------------------------------------------------ plumbing
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

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    try:
                        cfg = self.config(None)
                        name, path, cache = cfg.embedding_model, cfg.embedding_model_path, cfg.embedding_cache_dir
                    except ConfigError:
                        from engram_mcp.index.embeddings import DEFAULT_MODEL

                        name, path, cache = DEFAULT_MODEL, None, None
                    self._embedder = make_embedder(
                        name, model_path=path, cache_dir=cache or str(self.user_dir / "models")
                    )
        return self._embedder

    @property
    def model_name(self) -> str:
        return self.embedder.model_name

    def _dim(self) -> int:
        try:
            return int(self.embedder.dim)
        except Exception:
            return DEFAULT_DIM

    def _new_index(self, scope: str) -> ScopeIndex:
        return ScopeIndex(scope, self._dim(), self.model_name)

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

    def embed_documents(self, texts: list[str]) -> tuple[np.ndarray | None, str | None]:
        if not texts:
            return np.zeros((0, self._dim()), dtype=np.float32), None
        try:
            return self.embedder.embed_documents(texts), None
        except Exception as exc:
            self.state.embedding_error = str(exc)
            return None, f"embedding unavailable: {exc}"

    def close(self) -> None:
        with self.lock:
            wb = self.__dict__.get("_write_behind")
            if wb is not None:
                wb.close()  # pending recall strengthening is written before the stores close
            self.registry.close_all()

    # ------------------------------------------------------------------ handles
    def handle(self, ctx: RequestContext, scope: str, *, session_id: str | None = None) -> ScopeHandle:
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

    def _views(
        self, ctx: RequestContext, scopes: tuple[str, ...], cfg: Config
    ) -> tuple[list[ScopeView], list[dict[str, Any]]]:
        """Open the scopes a read needs; a scope that cannot open becomes a warning."""
        self._touch_session(ctx.project_root, ctx.session_id)  # a recall is activity too
        weights = cfg.scope_weights_resolved()
        views: list[ScopeView] = []
        warnings: list[dict[str, Any]] = []
        for scope, h in self.open_scopes(ctx, scopes, warnings):
            refused = h.store.failure  # readable, but not writable: recall strengthening waits too
            if refused:
                warnings.append({"code": "scope_read_only", "scope": scope, "message": refused})
            views.append(ScopeView(scope, h.index, float(weights[scope]), frozen=(scope == "session")))
        return views, warnings

    def open_scopes(
        self, ctx: RequestContext, scopes: Iterable[str], warnings: list[dict[str, Any]] | None = None
    ) -> list[tuple[str, ScopeHandle]]:
        """(scope, handle) for each of `scopes` this caller can read: the session scope only when
        the caller has a session; a store that cannot open is left out, and named in `warnings`
        (code scope_unavailable) when a list is given."""
        opened = []
        for scope in scopes:
            if scope == "session" and not ctx.session_id:
                continue
            try:
                opened.append((scope, self.handle(ctx, scope)))
            except StoreUnavailable as exc:
                if warnings is not None:
                    warnings.append({"code": "scope_unavailable", "scope": scope, "message": exc.message})
        return opened

    def _touch_session(self, project_root: Path, session_id: str | None) -> None:
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
        from engram_mcp.services.promotion import session_key

        try:
            self.registry.project(project_root).q(
                q.TOUCH_SESSION, {"key": session_key(session_id), "session_id": session_id}
            )
        except (StoreUnavailable, InvalidInput):  # bookkeeping must never fail the caller's request
            return
        self._session_seen[seen_key] = now

    def _note_sighting(self, h: ScopeHandle, key: str, *, drop: bool = False) -> None:
        """A project memory joins (or, with `drop`, may leave) the user's cross-project
        sightings, the "seen in >= 2 projects" promotion signal."""
        if h.scope != "project":
            return
        from engram_mcp.services.promotion import note_project_sighting

        note_project_sighting(self, h, key, drop=drop)

    def locate(self, ctx: RequestContext, memory_id: str, *, scopes: tuple[str, ...] = SCOPE_ORDER) -> list[Located]:
        """Every copy of a memory id visible to the caller, most specific scope first.

        A short id (the end of a ULID, as `engram list` shows it) is accepted when exactly one
        memory of these scopes ends with it.
        """
        try:
            key = parse_memory_id(memory_id)
        except InvalidInput:
            short = as_short_id(memory_id)
            if short is None:
                raise
            key = self._resolve_short_id(ctx, short, scopes)
        found = []
        for _scope, h in self.open_scopes(ctx, scopes):
            if h.index.slot_of(key) is None:
                continue
            rows = h.q(q.GET_MEMORY, {"id": key}) or []
            if rows:
                found.append(Located(h, key, rows[0]))
        return found

    def _resolve_short_id(self, ctx: RequestContext, short: str, scopes: tuple[str, ...]) -> str:
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

    def _locate_one(self, ctx: RequestContext, memory_id: str) -> list[Located]:
        found = self.locate(ctx, memory_id)
        if not found:
            raise MemoryNotFound(
                f"No memory {memory_id} in this project's session, project or user scopes; use recall_memories to find one."
            )
        return found

    # ------------------------------------------------------------------ store
    def store(
        self,
        ctx: RequestContext,
        *,
        content: str,
        type: str,
        scope: str,
        importance: float | None = None,
        confidence: float | None = None,
        tags: list[str] | None = None,
        category: str | None = None,
        summary: str | None = None,
        source: dict[str, Any] | None = None,
        related_entities: list[dict[str, Any]] | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        supersedes: str | None = None,
        derived_from: list[str] | None = None,
        dedup: bool = True,
        created_at: str | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Store a memory, or merge it into a near-duplicate (cosine >= 0.85) of its scope.

        `request_id` (a ULID; the write queue passes its entry id) makes the call
        idempotent: the new memory gets that key, and a replay whose memory exists, or
        whose merge the twin already recorded, changes nothing (`action: "exists"`).
        """
        check_enum(type, MEMORY_TYPES, "type")
        check_enum(scope, SCOPES, "scope")
        if type == "working" and scope != "session":
            raise InvalidInput("working memories are scratch space and live only in scope 'session'", field="type")
        findings: list = []
        # the field checks import applies too (records.clean_memory_record): one rule per field
        content = records.clean_content(content, findings)
        summary = records.clean_free_text(summary, findings, "summary", limit=MAX_SUMMARY_CHARS)
        record_tags = records.clean_tags(tags, findings)
        entities = sanitize_obj(check_entities(related_entities), findings)
        source = records.clean_object(source, findings, "source")
        metadata = records.clean_object(metadata, findings, "metadata")
        if category is not None:
            category = records.clean_category(category, findings)
        if session_id is not None:
            session_id = records.clean_free_text(session_id, findings, "session_id", limit=records.MAX_SESSION_ID_CHARS)
        imp = check_unit(importance, "importance", 0.5)
        conf = check_unit(confidence, "confidence", 0.7)
        created = parse_time(created_at, "created_at")
        rid = parse_memory_id(request_id, field="request_id") if request_id is not None else None
        superseded_key = parse_memory_id(supersedes, field="supersedes") if supersedes else None
        if derived_from is not None and not isinstance(derived_from, list):
            raise InvalidInput("derived_from must be a list of memory ids", field="derived_from")
        sources = [parse_memory_id(d, field="derived_from") for d in (derived_from or [])]
        if sources:
            metadata = {**metadata, "derived_from": [format_memory_id(k) for k in sources]}
            dedup = False

        vec, warning = self.embed_query(content)  # outside the lock: uses the other core
        warnings = (
            [{"code": "embedding_failed", "message": warning, "searchable_by": "keyword_only"}] if warning else []
        )
        with self.lock:
            h = self.handle(ctx, scope, session_id=session_id)
            sid = session_id or ctx.session_id
            self._touch_session(ctx.project_root, sid)
            if superseded_key and h.index.slot_of(superseded_key) is None:
                raise InvalidInput(f"supersedes: memory:{superseded_key} is not in scope {scope}", field="supersedes")
            if rid is not None and h.q(q.EXISTS_MEMORY, {"id": rid}):
                return {
                    "memory_id": format_memory_id(rid),
                    "action": "exists",
                    "scope": scope,
                    "type": type,
                    "embedding_generated": vec is not None,
                    "graph_edges_created": 0,
                    "warnings": warnings,
                    "redactions": findings_summary(findings),
                }
            if dedup:
                twin = self._find_twin(h, content, vec, self.config(ctx.project_root).store_dedup_similarity)
                if twin is not None:
                    key, similarity = twin
                    result = self._merge_into(h, key, imp, record_tags, content, similarity, sid, request_id=rid)
                    result.update(
                        embedding_generated=vec is not None, warnings=warnings, redactions=findings_summary(findings)
                    )
                    if result["action"] == "exists":
                        return result
                    self.state.stores += 1
                    if entities:
                        result["graph_edges_created"] = graph_ops.link_entities(h, key, entities)
                    if superseded_key and superseded_key != key:  # the twin now says what the new text said
                        self._link(h, key, superseded_key, "supersedes")
                    self._note_sighting(h, key)
                    return result
            hint = (
                None
                if superseded_key or scope == "session"
                else self._supersede_hint(h, vec, self.config(ctx.project_root).store_dedup_similarity)
            )
            key = rid or new_ulid()
            now = now_dt()
            record = {
                "memory_type": type,
                "scope": scope,
                "content": content,
                "summary": summary,
                "category": category,
                "tags": record_tags,
                "importance": imp,
                "confidence": conf,
                "access_count": 0,
                "status": "created",
                "source": source,
                "session_id": sid,
                "embedding": vector_bytes(vec),
                "embedding_model": self.model_name if vec is not None else None,
                "embedding_dim": int(vec.shape[0]) if vec is not None else None,
                "version": 1,
                "promotion_chain": [],
                "metadata": metadata,
                "created_at": created or now,
                "updated_at": now,
                "last_accessed_at": created or now,
                "status_changed_at": now,
            }
            record = {k: v for k, v in record.items() if v is not None}
            h.q(q.CREATE_MEMORY, {"id": key, "record": record})
            h.index.upsert({**record, "id": key}, vec)
            edges = graph_ops.link_entities(h, key, entities) if entities else 0
            if superseded_key:
                self._link(h, key, superseded_key, "supersedes")
            self._note_sighting(h, key)
            for src in sources:
                self._mark_consolidated(ctx, h, key, src)
            self.state.stores += 1
        result = {
            "memory_id": format_memory_id(key),
            "action": "created",
            "scope": scope,
            "type": type,
            "embedding_generated": vec is not None,
            "graph_edges_created": edges,
            "warnings": warnings,
            "redactions": findings_summary(findings),
        }
        if hint:
            hint["if_it_replaces_it"] = (
                f"update_memory(memory_id={format_memory_id(key)!r}, supersedes={hint['memory_id']!r})"
            )
            result["possibly_supersedes"] = hint
        return result

    def _supersede_hint(self, h: ScopeHandle, vec: np.ndarray | None, dedup_similarity: float) -> dict[str, Any] | None:
        """The live memory of this scope closest to a new one, when it is close enough that the
        new memory may replace it but not so close that it is a duplicate (merged instead).

        Only a hint: whether the new fact replaces the old one is Claude's call. Measured on
        coding memory: at cosine 0.65 it names the replaced memory for about half of real
        replacements and fires for about 7% of other stores.
        """
        if vec is None:
            return None
        best = h.index.vectors.max_similarity(vec, h.index.live_mask_for())
        if best is None or not SUPERSEDE_HINT_MIN_COSINE <= best[1] < dedup_similarity:
            return None
        key = h.index.key_of(best[0])
        rows = h.q(q.GET_MEMORY, {"id": key}) if key else None
        if not rows or not key:
            return None
        text = " ".join(str(rows[0].get("content") or "").split())
        preview = (
            text
            if len(text) <= SUPERSEDE_HINT_PREVIEW_CHARS
            else text[:SUPERSEDE_HINT_PREVIEW_CHARS].rsplit(" ", 1)[0] + " …"
        )
        return {"memory_id": format_memory_id(key), "similarity": round(float(best[1]), 3), "content": preview}

    def _find_twin(
        self, h: ScopeHandle, content: str, vec: np.ndarray | None, threshold: float
    ) -> tuple[str, float] | None:
        """A live memory of the same scope that this content duplicates, if any."""
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

    def _merge_into(
        self,
        h: ScopeHandle,
        key: str,
        importance: float,
        tags: list[str],
        content: str,
        similarity: float,
        session_id: str | None,
        *,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Strengthen an existing memory instead of storing a duplicate; record the merge.

        A merge made for a `request_id` is recorded with it, so replaying that request
        finds it here and changes nothing.
        """
        rows = h.q(q.GET_MEMORY, {"id": key}) or []
        if not rows:
            raise MemoryNotFound(f"memory {key} vanished during merge")
        row = rows[0]
        if request_id and any(
            isinstance(m, dict) and m.get("request_id") == request_id
            for m in (row.get("metadata") or {}).get("merged", [])
        ):
            return {
                "memory_id": format_memory_id(key),
                "action": "exists",
                "scope": h.scope,
                "type": row.get("memory_type"),
                "similarity": round(similarity, 4),
                "graph_edges_created": 0,
            }
        new = self._editable(row)
        new["access_count"] = int(row.get("access_count", 0)) + 1
        new["last_accessed_at"] = now_dt()
        new["importance"] = max(float(row.get("importance", 0.5)), importance)
        new["tags"] = list(dict.fromkeys(list(row.get("tags") or []) + tags))[
            : records.MAX_TAGS
        ]  # a merge never grows past the limit
        meta = dict(row.get("metadata") or {})
        merges = list(meta.get("merged", []))[-19:]
        merges.append(
            {
                "at": iso(now_dt()),
                "similarity": round(similarity, 4),
                "content": content[:500],
                "session_id": session_id,
                **({"request_id": request_id} if request_id else {}),
            }
        )
        meta["merged"] = merges
        new["metadata"] = meta
        if new.get("status") in ("consolidated", "archived"):
            new["status"] = "active"
        self._write_update(h, key, row, new, change="merge")
        return {
            "memory_id": format_memory_id(key),
            "action": "merged",
            "scope": h.scope,
            "type": row.get("memory_type"),
            "similarity": round(similarity, 4),
            "graph_edges_created": 0,
        }

    @staticmethod
    def _editable(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k != "id"}

    def _write_update(
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
        from surrealdb import RecordID

        new["version"] = int(old.get("version", 1)) + 1
        new["updated_at"] = now_dt()
        snapshot = {k: v for k, v in self._editable(old).items() if k not in ("embedding",)}
        entry = {
            "memory": RecordID("memory", key),
            "version": int(old.get("version", 1)),
            "change": change,
            "snapshot": snapshot,
        }
        record = {k: v for k, v in new.items() if v is not None}
        h.tx([(q.CREATE_HISTORY, {"entry": entry}), (q.REPLACE_MEMORY, {"id": key, "record": record})])
        h.index.upsert({**record, "id": key}, vector)

    # ------------------------------------------------------------------ recall
    def recall(
        self,
        ctx: RequestContext,
        *,
        query: str,
        scope: str | list[str] | None = None,
        type: str | list[str] | None = None,
        strategy: str = "hybrid",
        limit: int = 10,
        min_importance: float = 0.0,
        tags: list[str] | None = None,
        category: str | list[str] | None = None,
        time_range: dict[str, str] | None = None,
        include_forgotten: bool = False,
        include_superseded: bool = False,
        strengthen: bool = True,
        profile: str | None = None,
    ) -> dict[str, Any]:
        """Hybrid recall across scopes; every returned memory is strengthened.

        A memory superseded by a live one is left out unless `include_superseded` (then it
        ranks right below its successor and says `superseded_by`).
        """
        started = time.perf_counter()
        query = check_text(query, "query", limit=4_000)
        check_enum(strategy, STRATEGIES, "strategy")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_RECALL_LIMIT}", field="limit")
        scopes = self._as_tuple(scope, SCOPES, "scope") or SCOPE_ORDER
        types = self._as_tuple(type, MEMORY_TYPES, "type")
        categories = self._as_tuple(category, None, "category")
        tr = check_object(time_range, "time_range")
        after, before = (
            parse_time(tr.get("after"), "time_range.after"),
            parse_time(tr.get("before"), "time_range.before"),
        )
        filters = Filters(
            types=frozenset(types) if types else None,
            tags=frozenset(check_tags(tags)) or None if tags else None,
            category=frozenset(c.lower() for c in categories) if categories else None,
            min_importance=check_unit(min_importance, "min_importance", 0.0),
            after=to_epoch(after) if after else None,
            before=to_epoch(before) if before else None,
            statuses=frozenset(STATUSES) if include_forgotten else frozenset(RECALLABLE_STATUSES),
            include_superseded=bool(include_superseded),
        )
        cfg = self.config(ctx.project_root)
        if profile:
            from engram_mcp.core.config import SCOPE_WEIGHT_PROFILES

            check_enum(profile, tuple(SCOPE_WEIGHT_PROFILES), "profile")
        qvec, warning = (None, None)
        if strategy != "keyword":
            qvec, warning = self.embed_query(query)
        warnings = []
        if warning:
            warnings.append({"code": "partial_results", "message": f"{warning}; fell back to keyword search"})
        effective = strategy if (qvec is not None or strategy == "keyword") else "keyword"
        settings = RetrievalSettings(
            cfg.fusion,
            cfg.keyword_weight,
            cfg.rrf_k,
            cfg.candidate_pool,
            cfg.cross_scope_dedup_similarity,
            cfg.relevance_min_cosine,
            cfg.relevance_min_cosine_ratio,
        )
        with self.lock:
            views, scope_warnings = self._views(ctx, scopes, cfg)
            warnings.extend(scope_warnings)
            if profile:
                from engram_mcp.core.config import SCOPE_WEIGHT_PROFILES, scale_scope_weights

                weights = scale_scope_weights(SCOPE_WEIGHT_PROFILES[profile])
                for v in views:
                    v.weight = weights[v.scope]
            restrict = None
            if effective == "graph":
                restrict = graph_ops.reachable_memories(self, ctx, [v.scope for v in views], query)
            hits, matched = rank(views, qvec, query, filters, effective, settings, limit, restrict=restrict)
            memories = self._materialise(ctx, hits, views)
            if strengthen and memories:
                self._strengthen(ctx, hits, ctx.session_id)
            self.state.recalls += 1
        return {
            "memories": memories,
            "total_matched": matched,
            "strategy_used": effective,
            "query_time_ms": round((time.perf_counter() - started) * 1000, 2),
            "warnings": warnings,
            "degraded": bool(scope_warnings),
        }

    @staticmethod
    def _as_tuple(value: Any, allowed: tuple[str, ...] | None, field: str) -> tuple[str, ...]:
        if value is None:
            return ()
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise InvalidInput(f"{field} must be a string or a list of strings", field=field)
        if allowed is not None:
            for i in items:
                check_enum(i, allowed, field)
        return tuple(dict.fromkeys(items))

    def _materialise(self, ctx: RequestContext, hits, views) -> list[dict[str, Any]]:
        """Fetch the records of the ranked hits (one query per scope, without their vectors).

        The query bypasses `ScopeHandle.before_io`, so strengthening held back from earlier
        recalls is not written here (that is the point of the write-behind); it is overlaid
        on the fetched rows instead, so callers see the same numbers as after a write.
        """
        from datetime import datetime, timezone

        from surrealdb import RecordID

        by_scope: dict[str, list] = {}
        for h in hits:
            by_scope.setdefault(h.scope, []).append(h)
        rows: dict[tuple[str, str], dict] = {}
        now = time.time()
        for scope, scope_hits in by_scope.items():
            handle = self.handle(ctx, scope)
            ids = [RecordID("memory", h.key) for h in scope_hits]
            pending = handle.index.pending_strengthen
            for row in handle.store.query(handle.ns, handle.db, q.GET_MEMORIES_FOR_RECALL, {"ids": ids}) or []:
                key = record_key(row)
                row["embedding"] = bool(row.pop("has_embedding", False))  # all public_memory reads of it
                bump = pending.get(key)
                if bump is not None:
                    row["access_count"] = int(row.get("access_count", 0)) + bump[0]
                    row["last_accessed_at"] = datetime.fromtimestamp(bump[1], timezone.utc)
                    if row.get("status") == "created":
                        row["status"] = "active"
                rows[(scope, key)] = row
        out = []
        for h in hits:
            row = rows.get((h.scope, h.key))
            if row is None:
                continue
            mem = public_memory(row, frozen=(h.scope == "session"), now=now)
            mem["relevance_score"] = round(h.relevance, 4)
            mem["similarity"] = round(h.vector, 4)
            mem["score"] = round(h.score, 4)
            if h.also_in:
                mem["also_in"] = h.also_in
            newer = next(
                (v.index.superseded_by[h.key] for v in reversed(views) if h.key in v.index.superseded_by), None
            )
            if newer:
                mem["superseded_by"] = format_memory_id(newer)
            out.append(mem)
        return out

    def _strengthen_write_behind(self) -> StrengthenWriteBehind:
        """The service's strengthening write-behind (created on first use, under self.lock)."""
        wb = self.__dict__.get("_write_behind")
        if wb is None:
            wb = self.__dict__["_write_behind"] = StrengthenWriteBehind(self.lock, self.registry)
        return wb

    def _strengthen(self, ctx: RequestContext, hits, session_id: str | None) -> None:
        """Testing effect: access_count + 1 and last access now for every returned memory.

        Applied to the in-memory index at once and written to the engine behind the recall
        (engram_mcp/services/strengthen.py): before the next statement on that database, within a
        second, or at close.
        """
        from surrealdb import RecordID

        now = time.time()
        by_scope: dict[str, list[str]] = {}
        for h in hits:
            by_scope.setdefault(h.scope, []).append(h.key)
        write_behind = self._strengthen_write_behind()
        for scope, keys in by_scope.items():
            handle = self.handle(ctx, scope)
            write_behind.record(handle, keys, now, session_id)  # index now, engine shortly (strengthen.py)
            reactivate = []
            for k in keys:
                slot = handle.index.slot_of(k)
                if slot is None:
                    continue
                status = int(handle.index.cols.status_code[slot])
                if status in (STATUS_CODE["consolidated"], STATUS_CODE["archived"]):
                    f = decay_factor(
                        MEMORY_TYPES[handle.index.cols.type_code[slot]], 0.0, int(handle.index.cols.access_count[slot])
                    )
                    if float(handle.index.cols.importance[slot]) * f >= REACTIVATE_AT_STRENGTH:
                        reactivate.append(k)
            if reactivate:
                handle.q(q.SET_STATUS, {"ids": [RecordID("memory", k) for k in reactivate], "status": "active"})
                for k in reactivate:
                    handle.index.set_status(k, "active")

    # ------------------------------------------------------------------ read one
    def get(
        self, ctx: RequestContext, memory_id: str, *, history: bool = False, include_embedding: bool = False
    ) -> dict[str, Any]:
        """A memory with its copies in other scopes, links, entities and (optionally) history."""
        from surrealdb import RecordID

        with self.lock:
            found = self._locate_one(ctx, memory_id)
            first = found[0]
            mem = public_memory(first.row, frozen=first.handle.scope == "session", include_embedding=include_embedding)
            mem["also_in"] = [f.handle.scope for f in found[1:]]
            rid = RecordID("memory", first.key)
            mem["entities"] = jsonable(first.handle.q(q.MENTIONS_OF_MEMORY, {"memory": rid}) or [])
            links = first.handle.q(q.LINKS_OF_MEMORY, {"memory": rid}) or []
            mem["links"] = [
                {"from": jsonable(link["in"]), "to": jsonable(link["out"]), "relation": link["relation_type"]}
                for link in links
            ]
            if history:
                mem["history"] = [
                    {
                        "version": e.get("version"),
                        "change": e.get("change"),
                        "changed_at": jsonable(e.get("changed_at")),
                        "snapshot": jsonable(e.get("snapshot")),
                    }
                    for e in first.handle.q(q.HISTORY_OF, {"memory": rid}) or []
                ]
            return mem

    # ------------------------------------------------------------------ update
    def update(
        self,
        ctx: RequestContext,
        memory_id: str,
        *,
        content: str | None = None,
        summary: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        category: str | None = None,
        tags: dict[str, list[str]] | None = None,
        metadata: dict[str, Any] | None = None,
        related_entities: dict[str, Any] | None = None,
        memory_type: str | None = None,
        supersedes: str | None = None,
    ) -> dict[str, Any]:
        """Update every copy of a memory; re-embed when the content changes; keep history.

        `supersedes` names an older memory this one replaces: in every scope holding both,
        a `supersedes` link is written and recall hides the older one from then on.
        """
        findings: list = []
        superseded_key = parse_memory_id(supersedes, field="supersedes") if supersedes else None
        if content is not None:
            content = sanitize_text(check_text(content, "content", limit=MAX_CONTENT_CHARS), findings)
        if summary is not None:
            summary = sanitize_text(check_text(summary, "summary", limit=MAX_SUMMARY_CHARS), findings)
        if importance is not None:
            importance = check_unit(importance, "importance", 0.5)
        if confidence is not None:
            confidence = check_unit(confidence, "confidence", 0.7)
        if memory_type is not None:
            check_enum(memory_type, MEMORY_TYPES, "memory_type")
        if category is not None:  # as store does; "" clears the category
            category = (
                # not None: category is not None here ("" is allowed: it clears the category)
                sanitize_text(cast(str, check_text(category, "category", limit=64, required=False)), findings)
                .strip()
                .lower()
                .replace(" ", "_")
            )
        tag_ops = check_object(tags, "tags")
        add_tags, remove_tags = (
            check_tags(tag_ops.get("add"), "tags.add"),
            check_tags(tag_ops.get("remove"), "tags.remove"),
        )
        add_tags = [sanitize_text(t, findings) for t in add_tags]
        meta_patch = sanitize_obj(check_object(metadata, "metadata"), findings)
        ent_ops = check_object(related_entities, "related_entities")
        add_entities = sanitize_obj(check_entities(ent_ops.get("add"), "related_entities.add"), findings)
        remove_entities = ent_ops.get("remove") or []
        if not isinstance(remove_entities, list) or not all(isinstance(n, str) for n in remove_entities):
            raise InvalidInput("related_entities.remove must be a list of entity names", field="related_entities")
        vec, warning = (None, None)
        if content is not None:
            vec, warning = self.embed_query(content)
        updated_fields: list[str] = []
        version = None
        with self.lock:
            found = self._locate_one(ctx, memory_id)
            if superseded_key:  # checked before anything is written: a refused update changes nothing
                if superseded_key == found[0].key:
                    raise InvalidInput("a memory cannot supersede itself", field="supersedes")
                if not any(f.handle.index.slot_of(superseded_key) is not None for f in found):
                    raise InvalidInput(
                        f"supersedes: memory:{superseded_key} is not in a scope holding {memory_id}; "
                        "promote one of them first",
                        field="supersedes",
                    )
            for loc in found:
                row = loc.row
                if row.get("status") == "forgotten" and content is None and row.get("content") == "[forgotten]":
                    raise InvalidInput(
                        f"memory {memory_id} was forgotten and purged; store a new memory instead", field="memory_id"
                    )
                new = self._editable(row)
                changes = []
                for name, value in (
                    ("content", content),
                    ("summary", summary),
                    ("importance", importance),
                    ("confidence", confidence),
                    ("memory_type", memory_type),
                ):
                    if value is not None and value != row.get(name):
                        new[name] = value
                        changes.append(name)
                if memory_type == "working" and loc.handle.scope != "session":
                    raise InvalidInput("working memories live only in scope 'session'", field="memory_type")
                if category is not None and (category or None) != row.get("category"):
                    new["category"] = category or None
                    changes.append("category")
                if add_tags or remove_tags:
                    cur = [t for t in (row.get("tags") or []) if t not in remove_tags]
                    new["tags"] = list(dict.fromkeys(cur + add_tags))
                    if len(new["tags"]) > records.MAX_TAGS:  # the limit store and import apply, on the result
                        raise InvalidInput(
                            f"tags: a memory has at most {records.MAX_TAGS} tags; this would make {len(new['tags'])}. "
                            "Remove some first.",
                            field="tags",
                        )
                    if new["tags"] != list(row.get("tags") or []):
                        changes.append("tags")
                if meta_patch:
                    merged = dict(row.get("metadata") or {})
                    for k, v in meta_patch.items():
                        if v is None:
                            merged.pop(k, None)
                        else:
                            merged[k] = v
                    new["metadata"] = merged
                    if merged != (row.get("metadata") or {}):
                        changes.append("metadata")
                if content is not None:
                    new["embedding"] = vector_bytes(vec)
                    new["embedding_model"] = self.model_name if vec is not None else None
                    new["embedding_dim"] = int(vec.shape[0]) if vec is not None else None
                if changes:  # an edit that changes nothing writes no version and no history
                    self._write_update(
                        loc.handle,
                        loc.key,
                        row,
                        new,
                        change="update",
                        vector=vec if content is not None else loc.handle.index.vector_of_key(loc.key),
                    )
                    if {"content", "importance", "memory_type"} & set(changes):
                        self._note_sighting(loc.handle, loc.key, drop=True)
                if version is None:
                    version = int(row.get("version", 1)) + (1 if changes else 0)
                if add_entities and graph_ops.link_entities(loc.handle, loc.key, add_entities):
                    changes.append("related_entities")
                if remove_entities and graph_ops.unlink_entities(loc.handle, loc.key, remove_entities):
                    changes.append("related_entities")
                if superseded_key and self._supersede(loc.handle, loc.key, superseded_key):
                    changes.append("supersedes")
                updated_fields = sorted(set(updated_fields) | set(changes))

        return {
            "memory_id": format_memory_id(found[0].key),
            "updated_fields": updated_fields,
            "re_embedded": "content" in updated_fields and vec is not None,
            "version": version,
            "scopes": [f.handle.scope for f in found],
            "warnings": [{"code": "embedding_failed", "message": warning}] if warning else [],
            "redactions": findings_summary(findings),
        }

    def tag(
        self, ctx: RequestContext, memory_id: str, add: list[str] | None = None, remove: list[str] | None = None
    ) -> dict[str, Any]:
        self.update(ctx, memory_id, tags={"add": add or [], "remove": remove or []})
        return {"memory_id": format_memory_id(parse_memory_id(memory_id)), "tags": self.get(ctx, memory_id)["tags"]}

    # ------------------------------------------------------------------ forget
    def forget(
        self,
        ctx: RequestContext,
        memory_id: str,
        *,
        reason: str | None = None,
        undo: bool = False,
        purge_now: bool = False,
    ) -> dict[str, Any]:
        """Soft delete (excluded from recall, content kept until purge) or its undo.

        `purge_now` is for a secret that slipped through: the text, its history and its
        paraphrases go at once in every scope, and the stores are compacted so the bytes
        leave the disk too (`_purge_now`). It cannot be undone.
        """
        findings: list = []
        reason = records.clean_free_text(reason, findings, "reason", limit=records.MAX_REASON_CHARS)
        if not isinstance(undo, bool) or not isinstance(purge_now, bool):
            raise InvalidInput(
                "undo and purge_now must be true or false",
                field="purge_now" if not isinstance(purge_now, bool) else "undo",
            )
        if purge_now and undo:
            raise InvalidInput("purge_now cannot be undone, so it cannot be combined with undo", field="purge_now")
        if purge_now:
            return self._purge_now(ctx, memory_id, reason, findings)
        with self.lock:
            found = self._locate_one(ctx, memory_id)
            for loc in found:
                row = loc.row
                new = self._editable(row)
                meta = dict(row.get("metadata") or {})
                if undo:
                    if row.get("status") != "forgotten":
                        continue
                    if row.get("content") == "[forgotten]":
                        raise InvalidInput(f"memory {memory_id} was purged; it cannot be restored", field="memory_id")
                    new["status"] = meta.pop("prior_status", "active")
                    new["forgotten_at"] = None
                    new["forget_reason"] = None
                else:
                    if row.get("status") == "forgotten":
                        continue
                    meta["prior_status"] = row.get("status", "active")
                    new["status"] = "forgotten"
                    new["forgotten_at"] = now_dt()
                    new["forget_reason"] = reason
                new["metadata"] = meta
                new["status_changed_at"] = now_dt()
                self._write_update(
                    loc.handle,
                    loc.key,
                    row,
                    new,
                    change="restore" if undo else "forget",
                    vector=loc.handle.index.vector_of_key(loc.key),
                )
                self._note_sighting(
                    loc.handle, loc.key, drop=True
                )  # a forgotten memory is no longer seen in its project
        return {
            "memory_id": format_memory_id(found[0].key),
            "status": "active" if undo else "forgotten",
            "reason": reason,
            "scopes": [f.handle.scope for f in found],
            "undo_hint": None if undo else "forget_memory with undo=true restores it",
            "redactions": findings_summary(findings),
        }

    def _purge_now(self, ctx: RequestContext, memory_id: str, reason: str | None, findings: list) -> dict[str, Any]:
        """Forget and purge every copy now: the record keeps only a skeleton (no text, tags,
        metadata, vector), its history and entity mentions are deleted, in one transaction
        per copy; then each store that held a copy is compacted (storage/compact.py), so
        the old values are gone from the files, not only from the answers. The compaction
        runs after the service lock is released: it copies while recalls go on."""
        with self.lock:
            found = self._locate_one(ctx, memory_id)
            texts = _purged_texts(found)
            stores = {}
            for loc in found:
                rid = _record_id(loc.key)
                skeleton = records.purged_skeleton(loc.row, reason)
                entities = loc.handle.q(q.ENTITIES_MENTIONED_BY, {"memory": rid}) or []
                loc.handle.tx(
                    [
                        (q.DELETE_HISTORY_OF, {"memory": rid}),
                        (q.DELETE_MENTIONS_OF, {"memory": rid}),
                        (q.DELETE_ORPHAN_ENTITIES, {"entities": entities}),
                        (q.REPLACE_MEMORY, {"id": loc.key, "record": skeleton}),
                    ]
                )
                loc.handle.index.upsert({**skeleton, "id": loc.key}, None)
                self._note_sighting(loc.handle, loc.key, drop=True)
                stores[loc.handle.store.directory] = loc.handle.store
            if found and found[0].handle.scope != "user":
                user = self.registry.user()  # the sighting (fingerprint and vector) lives in the user store
                stores.setdefault(user.store.directory, user.store)
        spool_removed = _scrub_spool(self.user_dir, found[0].key, texts)
        compacted, warnings = [], []
        for store in stores.values():
            try:
                compacted.append(store.compact())
            except StoreUnavailable as exc:
                warnings.append({"code": "compaction_failed", "message": exc.message})
        return {
            "memory_id": format_memory_id(found[0].key),
            "status": "forgotten",
            "purged": True,
            "reason": reason,
            "scopes": [f.handle.scope for f in found],
            "compacted": compacted,
            "queued_entries_removed": spool_removed,
            "warnings": warnings,
            "undo_hint": None,
            "redactions": findings_summary(findings),
        }

    # ------------------------------------------------------------------ links
    def link(
        self, ctx: RequestContext, from_id: str, to_id: str, relation: str, *, strength: float = 0.5
    ) -> dict[str, Any]:
        """Record a memory -> memory relation (supersedes, contradicts, derived_from, similar_to)."""
        check_enum(relation, LINK_TYPES, "relation")
        strength = records.check_weight(strength, "strength", 0.5)  # as import checks it: a finite number from 0 to 1
        with self.lock:
            src = self._locate_one(ctx, from_id)[0]
            dst_key = parse_memory_id(to_id, field="to_id")
            if src.handle.index.slot_of(dst_key) is None:
                raise InvalidInput(
                    f"{to_id} is not in the same scope as {from_id}; link memories within one scope", field="to_id"
                )
            created = self._link(src.handle, src.key, dst_key, relation, strength)
        return {
            "from": format_memory_id(src.key),
            "to": format_memory_id(dst_key),
            "relation": relation,
            "created": created,
        }

    def _mark_consolidated(self, ctx: RequestContext, h: ScopeHandle, new_key: str, src_key: str) -> None:
        """A source summarised into `new_key`: link it (same scope) and mark it consolidated."""
        from surrealdb import RecordID

        for loc in self.locate(ctx, format_memory_id(src_key)):
            if loc.handle is h:
                self._link(h, new_key, src_key, "derived_from")
            if loc.row.get("status") in ("created", "active"):
                loc.handle.q(q.SET_STATUS, {"ids": [RecordID("memory", src_key)], "status": "consolidated"})
                loc.handle.index.set_status(src_key, "consolidated")

    def _supersede(self, h: ScopeHandle, new_key: str, old_key: str) -> bool:
        """Link `new_key` supersedes `old_key` in one scope when both live there (True if written)."""
        if new_key == old_key or h.index.slot_of(old_key) is None or h.index.superseded_by.get(old_key) == new_key:
            return False
        return self._link(h, new_key, old_key, "supersedes")

    def _link(self, h: ScopeHandle, a: str, b: str, relation: str, strength: float = 0.5) -> bool:
        from surrealdb import RecordID

        ra, rb = RecordID("memory", a), RecordID("memory", b)
        if h.q(q.FIND_LINK, {"a": ra, "b": rb, "relation_type": relation}):
            return False
        h.q(q.CREATE_LINK, {"a": ra, "b": rb, "relation_type": relation, "strength": float(strength)})
        if relation == "supersedes":
            h.index.mark_superseded(b, a)
        return True

    # ------------------------------------------------------------------ status
    def status(self, ctx: RequestContext) -> dict[str, Any]:
        """Health and counts across the caller's scopes; never raises for a broken store."""
        self.config(
            ctx.project_root
        )  # reads and validates the config files now: status reports their state, not a stale one
        config_problem = self.state.config_problem
        with self.lock:
            scopes: dict[str, Any] = {}
            degraded = []
            for scope in SCOPE_ORDER:
                if scope == "session" and not ctx.session_id:
                    continue
                try:
                    h = self.handle(ctx, scope)
                except StoreUnavailable as exc:
                    scopes[scope] = {"status": "unavailable", "message": exc.message}
                    degraded.append(scope)
                    continue
                by_type: dict[str, int] = {}
                by_status: dict[str, int] = {}
                for r in h.q(q.COUNT_BY_TYPE_STATUS) or []:
                    by_type[r["memory_type"]] = by_type.get(r["memory_type"], 0) + r["n"]
                    by_status[r["status"]] = by_status.get(r["status"], 0) + r["n"]
                refused = h.store.failure  # open and readable, but writes are refused (disk full)
                if refused:
                    degraded.append(scope)
                scopes[scope] = {
                    "status": "read_only" if refused else "connected",
                    **({"message": refused} if refused else {}),
                    "database": f"{h.ns}/{h.db}",
                    "path": str(h.store.directory),
                    "total": sum(by_type.values()),
                    "by_type": by_type,
                    "by_status": by_status,
                    "entities": _count(h, q.COUNT_ENTITIES),
                    "relationships": _count(h, q.COUNT_RELATIONS),
                    "without_vectors": h.index.missing_vectors,
                    "repaired_records": h.store.nul_repairs.get(
                        (h.ns, h.db), 0
                    ),  # NULs removed from old records (storage/store.py)
                    "database_size_bytes": h.store.size_bytes() if scope != "session" else None,
                }
            emb = self.embedder
            return {
                "connection": {
                    "status": "degraded" if degraded else "connected",
                    "mode": "embedded-surrealkv",
                    "uptime_seconds": round(time.time() - self.state.started_at, 1),
                    "degraded_scopes": degraded,
                },
                "project_root": str(ctx.project_root),
                "scopes": scopes,
                "embedding": {
                    "model": emb.model_name,
                    "dimensions": self._dim(),
                    "loaded": bool(getattr(emb, "loaded", True)),
                    "error": self.state.embedding_error,
                },
                "current_session": {"session_id": ctx.session_id} if ctx.session_id else None,
                "config_problem": config_problem,
            }


def _config_stamp(home: Path | None, project_root: Path | None) -> tuple:
    """(mtime, size) of the user and project config files; changes when either is edited."""
    from engram_mcp.core.config import project_config_path, user_config_path

    paths = [user_config_path(home)] + ([project_config_path(project_root)] if project_root else [])
    stamp: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = path.stat()
            stamp.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append(None)
    return tuple(stamp)


#: A purged text shorter than this is not searched for in the write queue (it would match unrelated entries).
MIN_SCRUB_CHARS = 12


def _purged_texts(found: list[Located]) -> set[str]:
    """The texts a purge erases, to find them in the write queue too: every copy's content
    and summary, and every earlier version's."""
    texts: set[str] = set()
    for loc in found:
        rows = [loc.row] + [
            e.get("snapshot") or {} for e in loc.handle.q(q.HISTORY_OF, {"memory": _record_id(loc.key)}) or []
        ]
        for row in rows:
            for name in ("content", "summary"):
                value = row.get(name)
                if isinstance(value, str) and len(value.strip()) >= MIN_SCRUB_CHARS and value != records.PURGED_CONTENT:
                    texts.add(value)
    return texts


def _scrub_spool(user_dir: Path, key: str, texts: set[str]) -> int:
    """Remove write-queue entries (pending or rejected) that would bring a purged text back or
    keep it on disk: any entry for the purged memory id, any entry holding one of its texts."""
    import json as _json

    from engram_mcp.core import spool

    mid = format_memory_id(key)
    removed = 0
    folders = [spool.spool_dir(user_dir), spool.spool_dir(user_dir) / spool.REJECTED_DIR_NAME]
    for folder in folders:
        try:
            names = [n for n in os.listdir(folder) if n.endswith(spool.ENTRY_SUFFIX)]
        except OSError:
            continue
        for name in names:
            path = folder / name
            try:
                raw = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            try:
                entry = _json.loads(raw)
            except ValueError:
                entry = {}
            args = v if isinstance(entry, dict) and isinstance(v := entry.get("args"), dict) else {}
            decoded = _json.dumps(entry, ensure_ascii=False) if entry else raw
            if (
                name[: -len(spool.ENTRY_SUFFIX)] == key
                or args.get("memory_id") in (mid, key)
                or any(t in decoded for t in texts)
            ):
                path.unlink(missing_ok=True)
                removed += 1
    return removed


def _record_id(key: str) -> Any:
    from surrealdb import RecordID

    return RecordID("memory", key)


def _count(h: ScopeHandle, sql: str) -> int:
    rows = h.q(sql) or []
    return int(rows[0]["n"]) if rows else 0


# ---------------------------------------------------------------------- facade
def _bind_operations() -> None:
    """Attach the operations that live in their own modules to MemoryService.

    Each concept keeps its home (graph.py, promotion.py, ...); the service exposes them
    under one name so the daemon's dispatch table and in-process callers see one API.
    """
    from engram_mcp.services import browse, consolidate, context, lifecycle, promotion, transfer

    # Functions whose signature is the operation's are attached as they are (the daemon binds
    # a request's arguments to that signature); lambdas only narrow or adapt one.
    MemoryService.graph_search = graph_ops.search
    MemoryService.promote = lambda self, ctx, memory_id, target_scope, reason=None: promotion.promote(
        self, ctx, memory_id, target_scope, reason
    )
    MemoryService.session_start = lambda self, ctx, info=None: promotion.session_start(self, ctx, info)
    MemoryService.session_end = lambda self, ctx, summary=None: promotion.session_end(self, ctx, summary=summary)
    MemoryService.context = context.build_context
    MemoryService.maintain = lambda self, ctx, progress=None: lifecycle.maintain(self, ctx, progress=progress)
    MemoryService.consolidate = consolidate.consolidate
    MemoryService.export = transfer.export
    MemoryService.import_ = transfer.import_
    MemoryService.reindex = transfer.reindex
    MemoryService.list_memories = browse.list_memories


_bind_operations()
