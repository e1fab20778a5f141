"""The in-memory retrieval index of one scope database.

SurrealDB is the system of record; this is a derived index, rebuilt from the records
when a store is opened and updated on every write, because the engine's own BM25 and
HNSW indexes are too slow and too large here (measured: 9 GB for 10k rows,
common-word BM25 queries of 400 ms; docs/decisions.md). It holds, per memory slot: the vector, the BM25
postings and the columns the filters and the composite score need, so a recall
touches the database only to fetch the few records it returns.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from engram_mcp.core import vector_codec
from engram_mcp.core.vocabulary import LIVE_STATUSES, MEMORY_TYPES, RECALLABLE_STATUSES, STATUSES
from engram_mcp.index.bm25 import BM25Index
from engram_mcp.index.scoring import CONTIGUITY_WINDOW_SECONDS, HALF_LIFE_DAYS, to_epoch
from engram_mcp.index.slots import SlotAllocator
from engram_mcp.index.tokenizer import TOKENIZER_VERSION
from engram_mcp.index.vectors import VectorIndex

TYPE_CODE = {t: i for i, t in enumerate(MEMORY_TYPES)}
STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}
HALF_LIFE_BY_CODE = np.array([HALF_LIFE_DAYS[t] for t in MEMORY_TYPES], dtype=np.float64)


def record_key(row: dict[str, Any]) -> str:
    """The bare ULID of a row coming from the engine (`id` is a RecordID)."""
    rid = row.get("id")
    key = getattr(rid, "id", None) or getattr(rid, "record_id", None)
    if key is None:
        text = str(rid)
        key = text.split(":", 1)[1] if ":" in text else text
    return str(key)


def index_text(row: dict[str, Any]) -> str:
    """What BM25 sees: content, summary, category and tags."""
    parts = [row.get("content") or "", row.get("summary") or "", row.get("category") or ""]
    parts.extend(row.get("tags") or [])
    return " ".join(p for p in parts if p)


def content_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()[:24]


#: Index versions, drawn process-wide (`ScopeIndex.version`).
_VERSIONS = itertools.count(1)


@dataclass
class Filters:
    """Recall filters, already validated by the service."""

    types: frozenset[str] | None = None
    tags: frozenset[str] | None = None
    category: frozenset[str] | None = None
    min_importance: float = 0.0
    after: float | None = None  # epoch seconds, on created_at
    before: float | None = None
    statuses: frozenset[str] = field(default_factory=lambda: frozenset(RECALLABLE_STATUSES))
    include_superseded: bool = False  # by default a memory replaced by a live one is hidden


class _Columns:
    """Growable numpy columns kept in step with the slot allocator."""

    def __init__(self, capacity: int = 1024) -> None:
        self.type_code = np.zeros(capacity, dtype=np.int8)
        self.status_code = np.full(capacity, -1, dtype=np.int8)
        self.importance = np.zeros(capacity, dtype=np.float32)
        self.access_count = np.zeros(capacity, dtype=np.int32)
        self.created_at = np.zeros(capacity, dtype=np.float64)
        self.last_accessed = np.zeros(capacity, dtype=np.float64)

    def ensure(self, size: int) -> None:
        cap = self.type_code.shape[0]
        if size <= cap:
            return
        new_cap = max(size, cap * 2)
        for name in ("type_code", "status_code", "importance", "access_count", "created_at", "last_accessed"):
            old = getattr(self, name)
            fill = -1 if name == "status_code" else 0
            grown = np.full(new_cap, fill, dtype=old.dtype)
            grown[:cap] = old
            setattr(self, name, grown)


class ScopeIndex:
    """Vector + BM25 + filter columns for one scope database."""

    def __init__(self, scope: str, dim: int, model_name: str) -> None:
        self.scope = scope
        self.dim = dim
        self.model_name = model_name
        self.slots = SlotAllocator()
        self.vectors = VectorIndex(dim)
        self.bm25 = BM25Index()
        self.cols = _Columns()
        self.tags: dict[int, frozenset[str]] = {}
        self.category: dict[int, str] = {}
        self.session_of: dict[int, str] = {}
        self.hash_to_slot: dict[str, int] = {}
        self.slot_hash: dict[int, str] = {}
        self.superseded_by: dict[str, str] = {}  # old ulid -> newer ulid (write via mark_superseded)
        # Per session id: (created_at, slot) in time order, for temporal contiguity at recall.
        self._session_times: dict[str, list[tuple[float, int]]] = {}
        self.without_vector: set[int] = set()  # live slots a reindex should embed
        # Filter support: slots by tag / category (a tag filter costs its slots, not a scan of
        # every memory), and masks cached per filter until a column changes (`_changed`).
        self._tag_slots: dict[str, set[int]] = {}
        self._category_slots: dict[str, set[int]] = {}
        self._version = next(_VERSIONS)
        #: Changes of any kind so far (a checkpoint compares it with the count it saved).
        self.edits = 0
        self._mask_cache: dict[tuple, tuple[int, np.ndarray]] = {}
        # Answers a service derived from what this index holds, by name (`derived`): dropped with
        # the masks whenever a memory, a status or a link changes.
        self._derived: dict[str, dict[Any, Any]] = {}
        # Strengthening applied here at recall time but not yet written to the engine
        # (write-behind, see `add_pending_strengthen`): key -> [count, last access, session ids].
        self.pending_strengthen: dict[str, list] = {}

    @property
    def missing_vectors(self) -> int:
        return len(self.without_vector)

    # -- writes -------------------------------------------------------------------
    def upsert(self, row: dict[str, Any], vector: np.ndarray | None = None) -> int:
        """Index one record (from the engine or about to be written)."""
        self._changed()
        slot = self._upsert_columns(row)
        self.bm25.set(slot, index_text(row))
        vec = vector if vector is not None else self._vector_of(row)
        if vec is not None:
            if isinstance(vec, tuple):
                self.vectors.set_quantized(slot, *vec)
            else:
                self.vectors.set(slot, vec)
            self.without_vector.discard(slot)
        else:
            self.vectors.clear(slot)
            if row.get("status") != "forgotten":
                self.without_vector.add(slot)
            else:
                self.without_vector.discard(slot)
        return slot

    def _vector_of(self, row: dict[str, Any]) -> np.ndarray | tuple[np.ndarray, np.float32] | None:
        """The record's vector: float32 components (a record written before vectors were
        packed, or one read whole), or the (int8 row, scale) the store keeps (`vector_codec`)."""
        blob = row.get("embedding")
        if not blob or row.get("embedding_model") not in (None, self.model_name):
            return None
        packed = vector_codec.unpack(blob, self.dim)
        if packed is not None:
            return packed
        vec = np.frombuffer(bytes(blob), dtype="<f4") if len(blob) % 4 == 0 else None
        return vec if vec is not None and vec.shape[0] == self.dim else None

    def bulk_load(self, rows: Iterable[dict[str, Any]]) -> int:
        """Index many rows at once (store open); returns how many lack a usable vector."""
        rows = list(rows)
        self._changed()
        vec_slots, vecs, text_slots, texts = [], [], [], []
        q_slots, q_rows, q_scales = [], [], []
        missing = 0
        for row in rows:
            vec = self._vector_of(row)
            slot = self._upsert_columns(row)
            text_slots.append(slot)
            texts.append(index_text(row))
            if isinstance(vec, tuple):
                q_slots.append(slot)
                q_rows.append(vec[0])
                q_scales.append(vec[1])
            elif vec is not None:
                vec_slots.append(slot)
                vecs.append(vec)
            elif row.get("status") != "forgotten":
                missing += 1
                self.without_vector.add(slot)
        if texts:
            self.bm25.set_many(np.array(text_slots, dtype=np.int64), texts)
        if vecs:
            self.vectors.set_many(np.array(vec_slots, dtype=np.int64), np.vstack(vecs).astype(np.float32))
        if q_rows:
            self.vectors.set_many_quantized(
                np.array(q_slots, dtype=np.int64), np.vstack(q_rows), np.array(q_scales, dtype=np.float32)
            )
        return missing

    def _upsert_columns(self, row: dict[str, Any]) -> int:
        """Slot, filter columns and exact-content hash of a record (shared by upsert and bulk_load)."""
        slot = self.slots.slot_for(record_key(row))
        self.cols.ensure(self.slots.size)
        c = self.cols
        c.type_code[slot] = TYPE_CODE.get(row.get("memory_type", "semantic"), 1)
        c.status_code[slot] = STATUS_CODE.get(row.get("status", "created"), 0)
        c.importance[slot] = float(row.get("importance", 0.5))
        c.access_count[slot] = int(row.get("access_count", 0))
        c.created_at[slot] = to_epoch(row.get("created_at"))
        c.last_accessed[slot] = to_epoch(row.get("last_accessed_at") or row.get("created_at"))
        self._index_labels(slot, frozenset(row.get("tags") or ()), row.get("category") or None)
        self._place_in_session(slot, row.get("session_id") or None, float(c.created_at[slot]))
        old_hash = self.slot_hash.pop(slot, None)
        if old_hash is not None and self.hash_to_slot.get(old_hash) == slot:
            del self.hash_to_slot[old_hash]
        if row.get("status") != "forgotten" and row.get("content"):
            h = content_hash(row["content"])
            self.hash_to_slot[h] = slot
            self.slot_hash[slot] = h
        return slot

    def remove(self, key: str) -> None:
        slot = self.slots.get(key)
        if slot is None:
            return
        self.vectors.clear(slot)
        self.bm25.clear(slot)
        self.cols.status_code[slot] = -1
        self.without_vector.discard(slot)
        h = self.slot_hash.pop(slot, None)
        if h is not None and self.hash_to_slot.get(h) == slot:
            del self.hash_to_slot[h]
        self._index_labels(slot, frozenset(), None)
        self.tags.pop(slot, None)
        self._place_in_session(slot, None, 0.0)
        self.pending_strengthen.pop(key, None)
        self.slots.release(key)
        self._changed()

    def _index_labels(self, slot: int, tags: frozenset[str], category: str | None) -> None:
        """Set a slot's tags and category, keeping the tag/category -> slots maps in step."""
        old_tags = self.tags.get(slot, frozenset())
        for t in old_tags - tags:
            members = self._tag_slots.get(t)
            if members is not None:
                members.discard(slot)
                if not members:
                    del self._tag_slots[t]
        for t in tags - old_tags:
            self._tag_slots.setdefault(t, set()).add(slot)
        self.tags[slot] = tags
        old_cat = self.category.get(slot)
        if old_cat != category:
            if old_cat is not None:
                members = self._category_slots.get(old_cat)
                if members is not None:
                    members.discard(slot)
                    if not members:
                        del self._category_slots[old_cat]
                del self.category[slot]
            if category is not None:
                self.category[slot] = category
                self._category_slots.setdefault(category, set()).add(slot)

    def _place_in_session(self, slot: int, session_id: str | None, created_at: float) -> None:
        """Keep a slot's place in its session's time line (moved or dropped as the record changes)."""
        old = self.session_of.get(slot)
        if old is not None:
            line = self._session_times.get(old, [])
            for i, (_t, s) in enumerate(line):
                if s == slot:
                    if old == session_id and _t == created_at:
                        return
                    del line[i]
                    break
            if not line:
                self._session_times.pop(old, None)
            del self.session_of[slot]
        if session_id is not None:
            self.session_of[slot] = session_id
            bisect.insort(self._session_times.setdefault(session_id, []), (created_at, slot))

    def mark_superseded(self, old_key: str, new_key: str) -> None:
        """Record that `new_key` replaces `old_key` (hidden from recall while the new one lives)."""
        if self.superseded_by.get(old_key) != new_key:
            self.superseded_by[old_key] = new_key
            self._changed()

    def replace_superseded(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Forget every supersede and record these (old key, new key) pairs in order, so a later
        pair for the same old key wins: the links as the store holds them now."""
        self.superseded_by = {}
        for old_key, new_key in pairs:
            self.superseded_by[old_key] = new_key
        self._changed()

    def neighbours(self, slots: np.ndarray, allowed: np.ndarray, lags: int = 1) -> np.ndarray:
        """The memories recorded before and after each slot in its session, up to `lags` steps
        away and within CONTIGUITY_WINDOW_SECONDS, skipping those `allowed` (the recall's mask)
        excludes. Returns an int64 array of shape (lags, 2, len(slots)): [lag - 1][0] before,
        [lag - 1][1] after; -1 where there is none. Memories without a session have none."""
        out = np.full((lags, 2, slots.size), -1, dtype=np.int64)
        if not self._session_times:
            return out
        n = allowed.size
        session_of = self.session_of
        for i, slot in enumerate(slots.tolist()):
            sid = session_of.get(slot)
            if sid is None:
                continue
            line = self._session_times[sid]
            t = float(self.cols.created_at[slot])
            at = bisect.bisect_left(line, (t, slot))
            for side, steps in ((0, range(at - 1, -1, -1)), (1, range(at + 1, len(line)))):
                found = 0
                for j in steps:
                    tj, sj = line[j]
                    if abs(tj - t) > CONTIGUITY_WINDOW_SECONDS:
                        break
                    if sj < n and allowed[sj]:
                        out[found, side, i] = sj
                        found += 1
                        if found == lags:
                            break
        return out

    def _changed(self) -> None:
        """A filter column changed: cached masks and derived answers are stale."""
        self.edits += 1
        self._version = next(_VERSIONS)
        if self._mask_cache:
            self._mask_cache.clear()
        if self._derived:
            self._derived.clear()

    def derived(self, name: str) -> dict[Any, Any]:
        """A memo for answers computed from this index's memories (their texts, statuses, times,
        links), emptied at every change of them; strengthening does not empty it. A key should
        name anything else the answer depends on (another index's `version`)."""
        return self._derived.setdefault(name, {})

    @property
    def version(self) -> int:
        """Moves whenever a memory, a status or a link changes (not at strengthening); unique in the
        process, so a rebuilt index never repeats an earlier one's."""
        return self._version

    def touch(self, keys: Iterable[str], now: float) -> None:
        """Mirror a recall's strengthening (access_count + 1, last access now)."""
        created, active = STATUS_CODE["created"], STATUS_CODE["active"]
        self.edits += 1
        for key in keys:
            slot = self.slots.get(key)
            if slot is None:
                continue
            self.cols.access_count[slot] += 1
            self.cols.last_accessed[slot] = now
            if self.cols.status_code[slot] == created:
                self.cols.status_code[slot] = active
                self._changed()

    def add_pending_strengthen(self, keys: Iterable[str], now: float, session_id: str | None) -> None:
        """Remember a recall's strengthening until it is written to the engine (`take_pending_strengthen`)."""
        pending = self.pending_strengthen
        for key in keys:
            entry = pending.get(key)
            if entry is None:
                pending[key] = [1, now, {session_id} if session_id else set()]
            else:
                entry[0] += 1
                entry[1] = max(entry[1], now)
                if session_id:
                    entry[2].add(session_id)

    def take_pending_strengthen(self) -> dict[str, list]:
        """Hand over (and forget) the strengthening not yet written."""
        pending, self.pending_strengthen = self.pending_strengthen, {}
        return pending

    def set_status(self, key: str, status: str) -> None:
        slot = self.slots.get(key)
        if slot is not None:
            self.cols.status_code[slot] = STATUS_CODE[status]
            self._changed()

    # -- persistence (index/persist.py; services/handles.py decides when) ---------------
    #: Arrays read a few rows at a time (the kernel is told not to read ahead there). None since
    #: format 3: the file keeps the vectors as int8 rows (`vector_codec`), which every scan reads.
    UNCHECKED_ARRAYS: frozenset[str] = frozenset()
    #: The large vector block, checked at open by `persist.sum64` (memory speed) instead of
    #: CRC-32: at 100k memories 38 MB.
    SUMMED_ARRAYS = frozenset({"vec_i8"})
    #: Arrays the index writes in place after loading (copy-on-write pages of the mapping).
    WRITABLE_ARRAYS = frozenset(
        {
            "vec_i8",
            "vec_scale",
            "vec_has",
            "bm25_post_tfs",
            "bm25_doc_len",
            "col_type_code",
            "col_status_code",
            "col_importance",
            "col_access_count",
            "col_created_at",
            "col_last_accessed",
        }
    )
    _COLUMNS = ("type_code", "status_code", "importance", "access_count", "created_at", "last_accessed")

    def export_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(metadata, arrays) describing the whole index, for `from_state`. Per-slot labels and
        keys travel as one JSON blob (an array of bytes, checksummed like the others)."""
        n = self.slots.size
        bm25_meta, bm25_arrays = self.bm25.export_state()
        arrays: dict[str, Any] = {**bm25_arrays, **self.vectors.export_arrays()}
        for name in self._COLUMNS:
            arrays[f"col_{name}"] = getattr(self.cols, name)[:n]
        objects = {
            "keys": self.slots.export_keys(),
            "tags": [sorted(self.tags[s]) if self.tags.get(s) else None for s in range(n)],
            "category": [self.category.get(s) for s in range(n)],
            "session": [self.session_of.get(s) for s in range(n)],
            "hash": [self.slot_hash.get(s) for s in range(n)],
            "superseded_by": self.superseded_by,
            "without_vector": sorted(self.without_vector),
            "bm25": bm25_meta,
        }
        blob = json.dumps(objects, separators=(",", ":")).encode()
        arrays["objects_json"] = np.frombuffer(blob, dtype=np.uint8)
        # which slot owns each content hash (with exact copies, the one written last)
        arrays["hash_owners"] = np.array(sorted(self.hash_to_slot.values()), dtype=np.int64)
        meta = {
            "scope": self.scope,
            "dim": self.dim,
            "model": self.model_name,
            "slots": n,
            "tokenizer": TOKENIZER_VERSION,
        }
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "ScopeIndex":
        """The index `export_state` described; raises ValueError/KeyError/TypeError when the
        parts do not fit together (the caller then rebuilds from the store)."""
        if meta.get("tokenizer") != TOKENIZER_VERSION:  # its BM25 terms were cut another way
            raise ValueError(f"made by tokenizer version {meta.get('tokenizer')}, now {TOKENIZER_VERSION}")
        index = cls(str(meta["scope"]), int(meta["dim"]), str(meta["model"]))
        objects = json.loads(arrays["objects_json"].tobytes())
        keys = objects["keys"]
        n = len(keys)
        if int(meta["slots"]) != n:
            raise ValueError("slot count does not match")
        index.slots = SlotAllocator.from_keys(keys)
        index.vectors = VectorIndex.from_arrays(index.dim, arrays)
        index.bm25 = BM25Index.from_state(objects["bm25"], arrays)
        cols = _Columns(capacity=max(n, 1))
        for name in cls._COLUMNS:
            col = arrays[f"col_{name}"]
            if col.shape != (n,) or col.dtype != getattr(cols, name).dtype:
                raise ValueError(f"column {name} does not fit")
            if n:
                setattr(cols, name, col)
        index.cols = cols
        tags, category, session, hashes = objects["tags"], objects["category"], objects["session"], objects["hash"]
        if not len(tags) == len(category) == len(session) == len(hashes) == n:
            raise ValueError("per-slot labels do not fit")
        live = [slot for slot, key in enumerate(keys) if key is not None]
        # One frozenset per distinct tag list (stores repeat a few tag sets many times).
        sets: dict[tuple[str, ...], frozenset[str]] = {}
        for slot in live:
            t = tuple(tags[slot] or ())
            fs = sets.get(t)
            if fs is None:
                fs = sets[t] = frozenset(t)
            index.tags[slot] = fs
        index._tag_slots = _group_slots((tag, slot) for slot in live for tag in (tags[slot] or ()))
        index.category = {slot: category[slot] for slot in live if category[slot] is not None}
        index._category_slots = _group_slots((c, slot) for slot, c in index.category.items())
        index.session_of = {slot: session[slot] for slot in live if session[slot] is not None}
        created = cols.created_at
        for slot, sid in index.session_of.items():
            index._session_times.setdefault(sid, []).append((float(created[slot]), slot))
        index.slot_hash = {slot: hashes[slot] for slot in live if hashes[slot] is not None}
        for line in index._session_times.values():
            line.sort()
        for slot in arrays["hash_owners"].tolist():
            index.hash_to_slot[index.slot_hash[slot]] = slot
        index.superseded_by = {str(k): str(v) for k, v in objects["superseded_by"].items()}
        index.without_vector = {int(s) for s in objects["without_vector"]}
        return index

    # -- reads --------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.slots.live_count)

    def keys(self) -> list[str]:
        return [k for k in (self.slots.key_at(s) for s in range(self.slots.size)) if k is not None]

    def mask(self, f: Filters) -> np.ndarray:
        """Boolean mask over slots that pass every filter (applied before top-k).

        Cached per filter until a column changes (every write goes through this class's methods,
        which call `_changed`); the caller gets its own copy and may modify it.
        """
        key = (f.statuses, f.types, f.tags, f.category, f.min_importance, f.after, f.before, f.include_superseded)
        hit = self._mask_cache.get(key)
        if hit is not None and hit[0] == self._version and hit[1].size == self.slots.size:
            return hit[1].copy()
        live = self._build_mask(f)
        if len(self._mask_cache) >= 32:
            self._mask_cache.clear()
        self._mask_cache[key] = (self._version, live)
        return live.copy()

    def _build_mask(self, f: Filters) -> np.ndarray:
        n = self.slots.size
        c = self.cols
        live = self.slots.live_mask[:n].copy()
        codes = [STATUS_CODE[s] for s in f.statuses]
        if len(codes) < len(STATUS_CODE):
            lut = np.zeros(256, dtype=bool)  # status code (int8, -1 = free slot) -> allowed
            lut[np.array(codes, dtype=np.int64) % 256] = True
            live &= lut[c.status_code[:n].astype(np.int64) % 256]
        else:
            live &= c.status_code[:n] >= 0
        if f.types is not None:
            live &= np.isin(c.type_code[:n], np.array([TYPE_CODE[t] for t in f.types], dtype=np.int8))
        if f.min_importance > 0:
            live &= c.importance[:n] >= f.min_importance
        if f.after is not None:
            live &= c.created_at[:n] >= f.after
        if f.before is not None:
            live &= c.created_at[:n] <= f.before
        if f.tags is not None:
            live &= self._label_mask(self._tag_slots, f.tags, n)
        if f.category is not None:
            live &= self._label_mask(self._category_slots, f.category, n)
        if not f.include_superseded and self.superseded_by:
            live &= ~self._superseded_mask(n)
        return live

    def _superseded_mask(self, n: int) -> np.ndarray:
        """Slots replaced by a memory that is still live (created, active or consolidated).

        A replacement that was forgotten or archived hands the place back to the old memory,
        so forgetting a wrong correction brings the fact it replaced back.
        """
        out = np.zeros(n, dtype=bool)
        alive = {STATUS_CODE[s] for s in RECALLABLE_STATUSES}
        for old_key, new_key in self.superseded_by.items():
            old, new = self.slots.get(old_key), self.slots.get(new_key)
            if old is None or new is None or old >= n or old == new:
                continue
            if int(self.cols.status_code[new]) in alive:
                out[old] = True
        return out

    @staticmethod
    def _label_mask(index: dict[str, set[int]], wanted: frozenset[str], n: int) -> np.ndarray:
        out = np.zeros(n, dtype=bool)
        members = [index[w] for w in wanted if w in index]
        if members:
            slots = np.fromiter(set().union(*members), dtype=np.int64)
            out[slots[slots < n]] = True
        return out

    def live_mask_for(self, statuses: tuple[str, ...] = LIVE_STATUSES) -> np.ndarray:
        return self.mask(Filters(statuses=frozenset(statuses)))

    def key_of(self, slot: int) -> str | None:
        return self.slots.key_at(int(slot))

    def live_key(self, slot: int) -> str:
        """The key of a slot taken from a live mask, which always holds one (`remove` marks the
        slot dead as it frees it); an empty slot here is a broken index, not a memory to name."""
        key = self.slots.key_at(int(slot))
        if key is None:
            raise LookupError(f"index slot {slot} holds no memory")
        return key

    def slot_of(self, key: str) -> int | None:
        return self.slots.get(key)

    def vector_of_key(self, key: str) -> np.ndarray | None:
        slot = self.slots.get(key)
        return None if slot is None else self.vectors.get(slot)

    def decay_inputs(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(half_life_days, last_accessed, access_count, importance) for slots."""
        c = self.cols
        return (
            HALF_LIFE_BY_CODE[c.type_code[slots]],
            c.last_accessed[slots],
            c.access_count[slots].astype(np.float64),
            c.importance[slots].astype(np.float64),
        )


def _group_slots(pairs: Iterable[tuple[str, int]]) -> dict[str, set[int]]:
    """label -> set of slots, from (label, slot) pairs."""
    out: dict[str, set[int]] = {}
    for label, slot in pairs:
        members = out.get(label)
        if members is None:
            out[label] = {slot}
        else:
            members.add(slot)
    return out
