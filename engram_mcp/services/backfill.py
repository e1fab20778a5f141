"""Deferred vectors: a large import is written at once, its vectors come afterwards.

Why: the model embeds ~220 short texts per CPU-second on a 2-core machine, so an import of
20,000 memories that waited for its vectors took minutes (issue 35). An import with at least
`import_defer_vectors_min` memories to embed, run where a worker will finish the job (the
daemon attaches one, `attach`), writes its memories without vectors: BM25 finds them at once
(the index marks them `without_vector`, as a store made while the model was missing), and the
worker computes the vectors afterwards in small batches (`step`), each written back like
`engram reindex` writes (`write_vectors`: the record re-read under the lock, skipped
when an edit changed it meanwhile), so a memory is never dropped or written twice.

What survives a crash: the scopes awaiting vectors are listed in `<user_dir>/vector_backfill.json`
(written and synced before the first memory without a vector is), and the records are the truth:
a memory lacks its vector in the store until the batch holding it is written. A daemon killed
mid-backfill finds the list at start (`pending`) and finishes from what the store holds.

Meanwhile a recall ranks those memories by their keyword score alone and says so
(`partial_results`, `awaiting_warnings`), and `status` counts them (`awaiting_counts`).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable
from weakref import WeakKeyDictionary

from engram_mcp.core.errors import StoreUnavailable
from engram_mcp.core.paths import make_private_dirs
from engram_mcp.core.vocabulary import PERSISTENT_SCOPES
from engram_mcp.services.records import vector_bytes

if TYPE_CHECKING:
    import numpy as np

    from engram_mcp.index.retrieval import ScopeView
    from engram_mcp.services.access import RequestContext, ScopeAccess
    from engram_mcp.services.handles import ScopeHandle

log = logging.getLogger("engram.backfill")
LIST_NAME = "vector_backfill.json"
#: Texts embedded per step: ~0.1-0.2 s of one core for short texts, and a write of that many
#: records under the lock of a few tens of ms, so a recall never waits long behind a step.
STEP_TEXTS = 32


@dataclass(frozen=True)
class Entry:
    """A scope awaiting vectors: where its store is (the key) and how to reach it again."""

    project_root: str
    scope: str
    store: str
    db: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.store, self.db)


@dataclass
class _State:
    """Per service: the worker's wake-up (None: no worker, imports embed as before), the list."""

    wake: Callable[[], None] | None = None
    entries: dict[tuple[str, str], Entry] = field(default_factory=dict)
    loaded: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: keys a step found gone or unreadable, never offered again in this process
    stuck: dict[tuple[str, str], set[str]] = field(default_factory=dict)


_STATES: "WeakKeyDictionary[ScopeAccess, _State]" = WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _state(access: "ScopeAccess") -> _State:
    with _STATES_LOCK:
        st = _STATES.get(access)
        if st is None:
            st = _STATES[access] = _State()
        return st


def attach(access: "ScopeAccess", wake: Callable[[], None]) -> None:
    """A worker runs for this service (the daemon's): large imports may now defer their vectors,
    and `wake` is called when there is work."""
    _state(access).wake = wake


def deferring(access: "ScopeAccess") -> bool:
    """Whether a worker will finish what an import defers."""
    return _state(access).wake is not None


def _list_path(access: "ScopeAccess") -> Path:
    return Path(access.user_dir) / LIST_NAME


def pending(access: "ScopeAccess") -> list[Entry]:
    """The scopes awaiting vectors, read from the list on first use (after a restart)."""
    st = _state(access)
    with st.lock:
        if not st.loaded:
            st.entries = {e.key: e for e in _read_list(_list_path(access))}
            st.loaded = True
        return list(st.entries.values())


def _read_list(path: Path) -> list[Entry]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("%s unreadable (%s): memories without vectors are found by `engram reindex`", path, exc)
        return []
    out = []
    for item in raw.get("scopes", []) if isinstance(raw, dict) else []:
        try:
            entry = Entry(str(item["project_root"]), str(item["scope"]), str(item["store"]), str(item["db"]))
        except (KeyError, TypeError):
            continue
        if entry.scope in PERSISTENT_SCOPES:
            out.append(entry)
    return out


def _write_list(path: Path, entries: Iterable[Entry]) -> None:
    """Replace the list atomically, synced: it must be on disk before a vector-less memory is."""
    body = {"scopes": [e.__dict__ for e in entries]}
    make_private_dirs(path.parent)  # the user store may not be open yet (an import to a project)
    fd, tmp = tempfile.mkstemp(prefix=".vector_backfill-", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(body, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _entry(ctx: "RequestContext", scope: str, h: "ScopeHandle") -> Entry:
    return Entry(str(ctx.project_root), scope, str(h.store.directory), h.db)


def mark(access: "ScopeAccess", ctx: "RequestContext", scope: str, h: "ScopeHandle") -> None:
    """Record that `scope` will hold memories awaiting vectors (before any is written)."""
    pending(access)
    st = _state(access)
    entry = _entry(ctx, scope, h)
    with st.lock:
        if entry.key in st.entries:
            return
        st.entries[entry.key] = entry
        _write_list(_list_path(access), st.entries.values())


def unmark(access: "ScopeAccess", entry: Entry) -> None:
    st = _state(access)
    with st.lock:
        if st.entries.pop(entry.key, None) is not None:
            _write_list(_list_path(access), st.entries.values())
        st.stuck.pop(entry.key, None)


def wake(access: "ScopeAccess") -> None:
    waker = _state(access).wake
    if waker is not None:
        waker()


def _is_pending(access: "ScopeAccess", h: "ScopeHandle") -> bool:
    pending(access)  # the list is read once per process
    return (str(h.store.directory), h.db) in _state(access).entries


@dataclass
class StepResult:
    written: int  # vectors written by this step
    remaining: int  # memories of the scope still without a vector (0: done)
    failed: str | None = None  # why nothing could be embedded (the model is unavailable)


def step(access: "ScopeAccess", entry: Entry, texts: int = STEP_TEXTS) -> StepResult:
    """Embed and write the vectors of up to `texts` memories of `entry`'s scope that lack one.

    The keys are taken under the lock, the records read and embedded outside it (on the model's
    one-thread session, `embed_background`), and written back under it by `write_vectors`,
    which re-reads each record and skips one an edit changed meanwhile (the edit embedded it)."""
    from engram_mcp.services.access import RequestContext

    ctx = RequestContext(Path(entry.project_root))
    h = access.handle(ctx, entry.scope)
    stuck = _state(access).stuck.setdefault(entry.key, set())
    with access.lock:
        keys = []
        for slot in sorted(h.index.without_vector):
            key = h.index.key_of(slot)
            if key and key not in stuck:
                keys.append(key)
                if len(keys) >= texts:
                    break
        rows = h.repo.get_many(keys) if keys else []
    if not keys:
        return StepResult(0, 0)
    found = {r["id"] for r in rows}
    stuck.update(k for k in keys if k not in found)  # in the index, gone from the store: nothing to embed
    rows = [r for r in rows if r.get("content")]
    stuck.update(r["id"] for r in rows if not r.get("content"))
    vecs, warning = embed_background(access, [r["content"] for r in rows])
    if vecs is None:
        return StepResult(0, h.index.missing_vectors, warning or "embedding unavailable")
    written = write_vectors(access, h, rows, vecs, access.model_name) if rows else 0
    with access.lock:
        left = sum(1 for s in h.index.without_vector if h.index.key_of(s) not in stuck)
    return StepResult(written, left)


def embed_background(access: "ScopeAccess", texts: list[str]) -> tuple[Any, str | None]:
    """Embed for the backfill on the model's one-thread session where it has one, so a query
    embedding beside it keeps the other core (the two-thread bulk session would take both)."""
    if not texts:
        return access.embed_documents(texts)
    one_thread = getattr(access.embedder, "embed_documents_one_thread", None)
    if one_thread is None:
        return access.embed_documents(texts)
    try:
        return one_thread(texts), None
    except Exception as exc:
        access.state.embedding_error = str(exc)
        return None, f"embedding unavailable: {exc}"


def awaiting(access: "ScopeAccess", h: "ScopeHandle") -> int:
    """Memories of this scope still waiting for the backfill's vectors (0: none pending)."""
    n = h.index.missing_vectors
    return n if n and _is_pending(access, h) else 0


def awaiting_warnings(access: "ScopeAccess", ctx: "RequestContext", views: "list[ScopeView]") -> list[dict[str, Any]]:
    """A `partial_results` warning per recalled scope whose imported memories still await their
    vectors: those were ranked by their keyword score alone (a paraphrase may miss them)."""
    out = []
    for v in views:
        n = v.index.missing_vectors
        if not n or v.scope not in PERSISTENT_SCOPES:
            continue
        try:
            h = access.handle(ctx, v.scope, early_ok=True)
        except StoreUnavailable:
            continue
        if h.index is v.index and _is_pending(access, h):
            out.append(
                {
                    "code": "partial_results",
                    "scope": v.scope,
                    "message": f"{n} memories of the {v.scope} scope await their vectors (a large import's, "
                    "computed in the background): they were matched by keywords only; ask again once "
                    "`engram status` shows none awaiting",
                }
            )
    return out


def write_vectors(access: ScopeAccess, h: ScopeHandle, rows: list[dict[str, Any]], vecs: np.ndarray, model: str) -> int:
    """Store freshly computed vectors for rows whose content has not changed since they were read
    (reindex and the backfill): under the lock each record is re-read, and one an edit changed or
    removed meanwhile is skipped (the edit embedded it, or it is gone)."""
    with access.lock:
        current = {r["id"]: r for r in h.repo.get_many(r["id"] for r in rows)}
        updates = []
        for r, v in zip(rows, vecs, strict=False):
            key = r["id"]
            now = current.get(key)
            if now is None or now.get("content") != r.get("content"):
                continue  # edited or removed meanwhile: the edit re-embedded it or it is gone
            rec = {k: val for k, val in now.items() if k != "id"}
            rec.update(embedding=vector_bytes(v), embedding_model=model, embedding_dim=int(v.shape[0]))
            updates.append((key, rec, v))
        if updates:
            with h.repo.atomic() as tx:
                for key, rec, _v in updates:
                    tx.replace(key, rec)
        for key, rec, v in updates:
            h.index.upsert({**rec, "id": key}, v)
    return len(updates)
