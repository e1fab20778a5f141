"""MemoryService: the composition root of the service layer.

The MCP server, the hooks, the slash commands and the CLI never touch SurrealDB: they
send requests to the owner process (`engram_mcp.daemon.process`), which calls the
operations through this class. It is also used in-process by tests and benchmarks.

It builds the one `ScopeAccess` (access.py: stores, embedder, config, write lock) and
exposes each operation as a method with the operation's own signature, delegating to the
module that owns it (store.py, recall.py, edit.py, status.py, promotion.py, lifecycle.py,
consolidate.py, context.py, graph.py, transfer.py, browse.py). Every operation is also a
module-level function `op(access, ctx, **args)`: the operations depend on `ScopeAccess` and
on each other, never on this module. Every method takes the caller's `RequestContext`
(project root + Claude Code session id) and returns plain JSON-ready dicts.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from engram_mcp.core.config import Config
from engram_mcp.index.embeddings import Embedder
from engram_mcp.services import (
    browse,
    consolidate,
    context,
    edit,
    graph,
    lifecycle,
    promotion,
    recall,
    status,
    store,
    transfer,
)
from engram_mcp.services.access import SCOPE_ORDER, Located, RequestContext, ScopeAccess, ServiceState
from engram_mcp.services.handles import IndexMarks, ScopeHandle, StoreRegistry
from engram_mcp.services.transfer import Progress

__all__ = ["MemoryService", "RequestContext", "Located", "ServiceState"]


class MemoryService:
    """Storage, embeddings, retrieval, decay, promotion and graph behind one API."""

    def __init__(
        self, *, home: Path | None = None, user_dir: Path | None = None, embedder: Embedder | None = None
    ) -> None:
        self.access = ScopeAccess(home=home, user_dir=user_dir, embedder=embedder)

    # ------------------------------------------------------------------ what the access layer holds
    @property
    def home(self) -> Path | None:
        return self.access.home

    @property
    def user_dir(self) -> Path:
        return self.access.user_dir

    @property
    def lock(self) -> threading.RLock:
        """The write lock: every engine access runs under it (the daemon holds it to close)."""
        return self.access.lock

    @property
    def state(self) -> ServiceState:
        return self.access.state

    @property
    def registry(self) -> StoreRegistry:
        return self.access.registry

    @property
    def embedder(self) -> Embedder:
        return self.access.embedder

    @property
    def model_name(self) -> str:
        return self.access.model_name

    def config(self, project_root: Path | None = None) -> Config:
        return self.access.config(project_root)

    def embed_query(self, text: str) -> tuple[np.ndarray | None, str | None]:
        return self.access.embed_query(text)

    def embed_documents(self, texts: list[str]) -> tuple[np.ndarray | None, str | None]:
        return self.access.embed_documents(texts)

    def handle(
        self, ctx: RequestContext, scope: str, *, session_id: str | None = None, early_ok: bool = False
    ) -> ScopeHandle:
        return self.access.handle(ctx, scope, session_id=session_id, early_ok=early_ok)

    def locate(self, ctx: RequestContext, memory_id: str, *, scopes: tuple[str, ...] = SCOPE_ORDER) -> list[Located]:
        return self.access.locate(ctx, memory_id, scopes=scopes)

    def close(self) -> None:
        self.access.close()

    def index_marks(self) -> IndexMarks:
        """Where the indexes in memory stand, taken before a request (`distrust_indexes`)."""
        return self.access.registry.write_marks()

    def distrust_indexes(self, since: IndexMarks | None = None) -> None:
        """Drop the in-memory indexes of the stores a write that failed unexpectedly may have
        reached (every one without `since`, `index_marks` taken before it; handles.py)."""
        self.access.distrust_indexes(since)

    def checkpoint(self, *, read_all_records: bool = False) -> int:
        """Write the indexes that changed to their files (services/handles.py); how many. An idle
        checkpoint reads at most `RECORD_READ_MAX` records from the engine; `read_all_records`
        reads every one missing from the file, as the daemon's exit does."""
        return self.access.checkpoint(read_all_records=read_all_records)

    # ------------------------------------------------------------------ operations
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
        return store.store(
            self.access,
            ctx,
            content=content,
            type=type,
            scope=scope,
            importance=importance,
            confidence=confidence,
            tags=tags,
            category=category,
            summary=summary,
            source=source,
            related_entities=related_entities,
            session_id=session_id,
            metadata=metadata,
            supersedes=supersedes,
            derived_from=derived_from,
            dedup=dedup,
            created_at=created_at,
            request_id=request_id,
        )

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
        statuses: str | list[str] | None = None,
        offset: int = 0,
        pool: int | None = None,
    ) -> dict[str, Any]:
        return recall.recall(
            self.access,
            ctx,
            query=query,
            scope=scope,
            type=type,
            strategy=strategy,
            limit=limit,
            min_importance=min_importance,
            tags=tags,
            category=category,
            time_range=time_range,
            include_forgotten=include_forgotten,
            include_superseded=include_superseded,
            strengthen=strengthen,
            profile=profile,
            statuses=statuses,
            offset=offset,
            pool=pool,
        )

    def list_memories(
        self,
        ctx: RequestContext,
        *,
        scope: str | list[str] | None = None,
        type: str | list[str] | None = None,
        status: str | list[str] | None = None,
        tags: list[str] | None = None,
        category: str | list[str] | None = None,
        after: str | None = None,
        before: str | None = None,
        limit: int = browse.DEFAULT_LIST_LIMIT,
        page: int = 1,
    ) -> dict[str, Any]:
        return browse.list_memories(
            self.access,
            ctx,
            scope=scope,
            type=type,
            status=status,
            tags=tags,
            category=category,
            after=after,
            before=before,
            limit=limit,
            page=page,
        )

    def get(
        self, ctx: RequestContext, memory_id: str, *, history: bool = False, include_embedding: bool = False
    ) -> dict[str, Any]:
        return edit.get(self.access, ctx, memory_id, history=history, include_embedding=include_embedding)

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
        return edit.update(
            self.access,
            ctx,
            memory_id,
            content=content,
            summary=summary,
            importance=importance,
            confidence=confidence,
            category=category,
            tags=tags,
            metadata=metadata,
            related_entities=related_entities,
            memory_type=memory_type,
            supersedes=supersedes,
        )

    def tag(
        self, ctx: RequestContext, memory_id: str, add: list[str] | None = None, remove: list[str] | None = None
    ) -> dict[str, Any]:
        return edit.tag(self.access, ctx, memory_id, add, remove)

    def forget(
        self,
        ctx: RequestContext,
        memory_id: str,
        *,
        reason: str | None = None,
        undo: bool = False,
        purge_now: bool = False,
    ) -> dict[str, Any]:
        return edit.forget(self.access, ctx, memory_id, reason=reason, undo=undo, purge_now=purge_now)

    def link(
        self, ctx: RequestContext, from_id: str, to_id: str, relation: str, *, strength: float = 0.5
    ) -> dict[str, Any]:
        return edit.link(self.access, ctx, from_id, to_id, relation, strength=strength)

    def status(self, ctx: RequestContext) -> dict[str, Any]:
        return status.status(self.access, ctx)

    def graph_search(
        self,
        ctx: RequestContext,
        *,
        entity: str | None = None,
        relationship_type: str | None = None,
        direction: str = "both",
        depth: int = 1,
        include_memories: bool = True,
        limit: int = 20,
        scopes: tuple[str, ...] = graph.SEARCH_SCOPES,
    ) -> dict[str, Any]:
        return graph.search(
            self.access,
            ctx,
            entity=entity,
            relationship_type=relationship_type,
            direction=direction,
            depth=depth,
            include_memories=include_memories,
            limit=limit,
            scopes=scopes,
        )

    def promote(
        self, ctx: RequestContext, memory_id: str, target_scope: str, reason: str | None = None
    ) -> dict[str, Any]:
        return promotion.promote(self.access, ctx, memory_id, target_scope, reason)

    def session_start(self, ctx: RequestContext, info: dict[str, Any] | None = None) -> dict[str, Any]:
        return promotion.session_start(self.access, ctx, info)

    def session_end(self, ctx: RequestContext, summary: str | None = None) -> dict[str, Any]:
        return promotion.session_end(self.access, ctx, summary=summary)

    def context(
        self,
        ctx: RequestContext,
        *,
        task_description: str | None = None,
        files_in_context: list[str] | None = None,
        max_tokens: int = context.DEFAULT_MAX_TOKENS,
        sections: list[str] | None = None,
        strengthen: bool = True,
    ) -> dict[str, Any]:
        return context.build_context(
            self.access,
            ctx,
            task_description=task_description,
            files_in_context=files_in_context,
            max_tokens=max_tokens,
            sections=sections,
            strengthen=strengthen,
        )

    def maintain(self, ctx: RequestContext, progress: Progress | None = None) -> dict[str, Any]:
        return lifecycle.maintain(self.access, ctx, progress=progress)

    def consolidate(
        self,
        ctx: RequestContext,
        *,
        strategy: str = "full",
        dry_run: bool = False,
        session_id: str | None = None,
        scope: str | None = None,
    ) -> dict[str, Any]:
        return consolidate.consolidate(
            self.access, ctx, strategy=strategy, dry_run=dry_run, session_id=session_id, scope=scope
        )

    def export(
        self,
        ctx: RequestContext,
        path: str | Path,
        *,
        scopes: tuple[str, ...] = transfer.DEFAULT_SCOPES,
        include_vectors: bool = True,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        return transfer.export(
            self.access, ctx, path, scopes=scopes, include_vectors=include_vectors, progress=progress
        )

    def import_(
        self,
        ctx: RequestContext,
        path: str | Path,
        *,
        progress: Progress | None = None,
        target_scope: str | None = None,
        keep_origins: bool = False,
    ) -> dict[str, Any]:
        return transfer.import_(
            self.access, ctx, path, progress=progress, target_scope=target_scope, keep_origins=keep_origins
        )

    def reindex(
        self,
        ctx: RequestContext,
        *,
        scopes: tuple[str, ...] = transfer.DEFAULT_SCOPES,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        return transfer.reindex(self.access, ctx, scopes=scopes, progress=progress)
