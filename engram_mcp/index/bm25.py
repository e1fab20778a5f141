"""Incremental Okapi BM25 over slots, scored at query time from live statistics.

Thread-safety: none. Writes must be serialised by the caller (the engine has a single writer), and
a search must not run concurrently with a write on the same index.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from engram_mcp.index.arrays import EMPTY_SCORES, EMPTY_SLOTS, grown_capacity, mask_prefix, top_k
from engram_mcp.index.tokenizer import tokenize

_EMPTY_POSTING_SLOTS = np.zeros(0, dtype=np.int32)
_EMPTY_POSTING_TFS = np.zeros(0, dtype=np.float32)


# Memories are short (tens of words), so length says little about topicality: a weak length
# normalisation (b 0.3) and an early tf saturation (k1 0.9) measured best on coding memory and
# LoCoMo together (the usual 1.2-1.5 / 0.75 over-rewarded the shortest texts that shared a word).
BM25_K1 = 0.9
BM25_B = 0.3

# What one memory can add to the keyword index, and what an index holds. A term costs ~370 bytes
# (its vocabulary entry and posting arrays), and the vocabulary was never pruned: a repository's
# team folder of 3,000 files of unique random words (59 MB) put 6 million terms in one index,
# 3.3 GB of the shared daemon and a 278 MB index file. Real memories are far inside these bounds
# (the coding-memory and LoCoMo sets: at most 51 distinct terms a memory; a 20,000-character
# page of this project's docs: 450-830), so they change nothing there.
#: Distinct terms indexed per document: its most frequent ones, ties to the earlier first use.
MAX_TERMS_PER_DOC = 512
#: Longer terms are not indexed: no query types them (a sha256 in hex is 64); blobs and minified
#: text are cut into such runs.
MAX_TERM_CHARS = 64
#: Vocabulary bound: VOCAB_FLOOR terms, plus VOCAB_PER_DOC for each live document. A document
#: brings its own allowance, so past the floor every new memory still gets up to VOCAB_PER_DOC
#: new words indexed, while a flood of unique words stops at that many a memory (its known terms
#: are indexed as usual; vector recall still finds it). ~24 MB at the floor, +6 KB a memory.
VOCAB_FLOOR = 65_536
VOCAB_PER_DOC = 16


@dataclass(frozen=True)
class SharedStats:
    """Collection statistics of several indexes searched together (the scopes of one recall).

    Each index has its own N, df and avgdl; a small index (the user store next to a large
    project) gives a word common in the project a high idf, so a memory sharing one incidental
    word with the query outscored the project's answers. Scoring every index with the summed
    statistics (as a distributed search engine scores its shards with global statistics) puts
    all candidates of one recall on one scale. `doc_freq` holds the query's terms only.
    """

    doc_count: int
    avg_doc_len: float
    doc_freq: Mapping[str, int]

    @classmethod
    def of(cls, indexes: Sequence[BM25Index], terms: Sequence[str]) -> SharedStats:
        """The summed statistics of `indexes` for the (already tokenized) query `terms`."""
        n = sum(i.doc_count for i in indexes)
        total = sum(i.avg_doc_len * i.doc_count for i in indexes)
        df = {t: sum(i.doc_freq(t) for i in indexes) for t in dict.fromkeys(terms)}
        return cls(n, total / n if n else 0.0, df)

    def idf(self, term: str) -> float:
        df = self.doc_freq.get(term, 0)
        return math.log(1.0 + (self.doc_count - df + 0.5) / (df + 0.5))


class BM25Index:
    """Incremental Okapi BM25 with Lucene's idf, scored at query time from live statistics.

    Layout: per term, growable numpy arrays of posting slots (int32) and term frequencies
    (float32), appended in O(1) amortised. A posting is *dead* when its tf is 0.0: it then adds
    exactly 0 to any score, so queries need no liveness check. Clearing a slot uses the slot's own
    term list to find its postings (one vectorised scan per term of that document), decrements df
    and marks them dead; a term's postings are compacted when more than half are dead.

    Scoring: idf = log(1 + (N - df + 0.5) / (df + 0.5)) (never negative), tf part
    tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), N = live documents, df = live documents
    containing the term, dl = the document's term count after stop words.

    Repeated query terms are counted once (a query is a set of terms): "redis redis cache" scores
    like "redis cache". Short natural-language queries repeat words by accident, not for emphasis.

    A text with no terms (empty, or only stop words) is not a document: it cannot match, and it is
    not counted in N or avgdl (as Lucene counts only documents that have the field).

    Bounds (denial of service by a hostile repository's memories): a document indexes at most
    `max_doc_terms` distinct terms of at most MAX_TERM_CHARS characters, and the vocabulary holds
    at most `vocab_floor + vocab_per_doc * N` terms (N counting the document being added); a new
    term past that bound is left out of the document. Terms no live document holds are dropped
    (the others renumbered) when the bound is reached and they make up an eighth of the vocabulary.
    A document's terms (and so its length dl) are the ones kept.
    """

    _MIN_POSTINGS_CAPACITY = 4
    _COMPACT_MIN_POSTINGS = 8  # don't bother compacting tiny posting lists

    def __init__(
        self,
        k1: float = BM25_K1,
        b: float = BM25_B,
        initial_capacity: int = 1024,
        *,
        max_doc_terms: int = MAX_TERMS_PER_DOC,
        vocab_floor: int = VOCAB_FLOOR,
        vocab_per_doc: int = VOCAB_PER_DOC,
    ) -> None:
        if k1 <= 0 or not 0.0 <= b <= 1.0:
            raise ValueError("need k1 > 0 and 0 <= b <= 1")
        if max_doc_terms < 1 or vocab_floor < 0 or vocab_per_doc < 0:
            raise ValueError("need max_doc_terms >= 1, vocab_floor >= 0 and vocab_per_doc >= 0")
        self.k1 = float(k1)
        self.b = float(b)
        self.max_doc_terms = int(max_doc_terms)
        self.vocab_floor = int(vocab_floor)
        self.vocab_per_doc = int(vocab_per_doc)
        self._unused_terms = 0  # terms with df 0 (no live document holds them)
        self._vocab: dict[str, int] = {}
        self._post_slots: list[np.ndarray] = []
        self._post_tfs: list[np.ndarray] = []
        self._post_len: list[int] = []
        self._post_dead: list[int] = []
        self._df: list[int] = []
        # Per slot: (2, n) int32 array [term ids; tfs], or None when the slot has no document.
        self._doc_terms: list[np.ndarray | None] = []
        # Length used for the tf normalisation; 1.0 for empty slots keeps a dead posting's
        # denominator positive even with b = 1 (its tf of 0 then still yields exactly 0).
        self._doc_len = np.ones(0, dtype=np.float32)
        self._doc_count = 0
        self._total_len = 0
        self._reset(max(initial_capacity, 1))

    def _reset(self, capacity: int) -> None:
        """Empty every document and posting but keep the vocabulary (term ids stay valid)."""
        n_terms = len(self._vocab)
        self._post_slots = [_EMPTY_POSTING_SLOTS] * n_terms
        self._post_tfs = [_EMPTY_POSTING_TFS] * n_terms
        self._post_len = [0] * n_terms
        self._post_dead = [0] * n_terms
        self._df = [0] * n_terms
        self._unused_terms = n_terms
        self._doc_terms = [None] * capacity
        self._doc_len = np.ones(capacity, dtype=np.float32)
        self._doc_count = 0
        self._total_len = 0

    # ---- writes ----

    def set(self, slot: int, text: str) -> None:
        """(Re)index the slot's document, replacing any previous text."""
        self.set_terms(slot, tokenize(text))

    def set_terms(self, slot: int, terms: Sequence[str]) -> None:
        """Index already-tokenized terms (lets a caller tokenize once for several uses)."""
        if slot < 0:
            raise ValueError("slot must be non-negative")
        self._ensure_capacity(slot + 1)
        counts = Counter(self._kept_terms(terms))
        vocab = self._vocab
        new_terms = [t for t in counts if t not in vocab]
        if new_terms:
            room = self._room(len(new_terms), self._doc_count + (self._doc_terms[slot] is None))
            for t in new_terms[:room]:
                self._term_id(t)
            if room < len(new_terms):
                counts = Counter({t: c for t, c in counts.items() if t in self._vocab})
        ids = [self._vocab[t] for t in counts]
        doc = np.array([ids, list(counts.values())], dtype=np.int32).reshape(2, -1)
        old = self._doc_terms[slot]
        if old is not None:
            if old.shape == doc.shape and np.array_equal(old, doc):
                return  # unchanged text: nothing to do
            self._remove(slot, old)
        if len(ids) == 0:
            return
        for tid, tf in zip(ids, counts.values(), strict=False):
            self._append_posting(tid, slot, tf)
        self._add_doc(slot, doc)

    def set_many(self, slots: Sequence[int] | np.ndarray, texts: Sequence[str]) -> None:
        """Bulk (re)index: tokenize all, then build postings with one sort instead of per-token
        appends. Equivalent to calling `set` in order (a later duplicate slot wins) while the
        batch's new terms fit the vocabulary bound at its end; past it, new terms are admitted
        document by document, each under the bound at its turn, as `set` would."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        if len(slot_arr) != len(texts):
            raise ValueError("slots and texts differ in length")
        self.set_many_terms(slot_arr, [tokenize(t) for t in texts])

    def set_many_terms(self, slots: Sequence[int] | np.ndarray, term_lists: Sequence[Sequence[str]]) -> None:
        """`set_many` for already-tokenized documents."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        if len(slot_arr) != len(term_lists):
            raise ValueError("slots and term lists differ in length")
        if len(slot_arr) == 0:
            return
        if slot_arr.min() < 0:
            raise ValueError("slots must be non-negative")
        # Last occurrence of a repeated slot wins, as with sequential set().
        _, last_rev = np.unique(slot_arr[::-1], return_index=True)
        keep = np.sort(len(slot_arr) - 1 - last_rev)
        slot_arr = slot_arr[keep]
        term_lists = [self._kept_terms(term_lists[i]) for i in keep.tolist()]
        self._ensure_capacity(int(slot_arr.max()) + 1)
        for slot in slot_arr.tolist():
            if self._doc_terms[slot] is not None:
                self.clear(slot)
        flat = list(chain.from_iterable(term_lists))
        vocab = self._vocab
        new_terms = [t for t in dict.fromkeys(flat) if t not in vocab]  # C-speed dedupe
        n_docs = self._doc_count + sum(1 for t in term_lists if t)
        if len(new_terms) <= self._vocab_limit(n_docs) - len(vocab):
            for term in new_terms:  # the batch is within the bound: every new term gets an id
                self._term_id(term)
        else:
            term_lists = self._admit_in_order(term_lists)
            flat = list(chain.from_iterable(term_lists))
        lengths = np.fromiter((len(t) for t in term_lists), dtype=np.int64, count=len(term_lists))
        flat_ids = np.fromiter(map(self._vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        doc_of_token = np.repeat(np.arange(len(term_lists), dtype=np.int64), lengths)
        self._bulk_add(slot_arr, flat_ids, doc_of_token, None)

    def clear(self, slot: int) -> None:
        """Remove the slot's document (no-op if it has none)."""
        if 0 <= slot < len(self._doc_terms):
            old = self._doc_terms[slot]
            if old is not None:
                self._remove(slot, old)

    def compact(self) -> None:
        """Drop every dead posting now (normally done lazily per term)."""
        for tid in range(len(self._post_len)):
            if self._post_dead[tid]:
                self._compact_term(tid)

    def renumber(self, old_slots: np.ndarray) -> None:
        """Apply `SlotAllocator.compact()`: new slot i takes old slot ``old_slots[i]``'s document.
        Rebuilt from the stored per-document term counts, so nothing is re-tokenized."""
        old = np.asarray(old_slots, dtype=np.int64).reshape(-1)
        docs = [self._doc_terms[s] if 0 <= s < len(self._doc_terms) else None for s in old.tolist()]
        self._reset(capacity=max(len(old), 1))
        present = [i for i, d in enumerate(docs) if d is not None]
        if not present:
            return
        parts = [d for d in docs if d is not None]  # the documents of `present`, in order
        lengths = np.array([p.shape[1] for p in parts], dtype=np.int64)
        stacked = np.concatenate(parts, axis=1).astype(np.int64)
        doc_of = np.repeat(np.arange(len(parts), dtype=np.int64), lengths)
        self._bulk_add(np.asarray(present, dtype=np.int64), stacked[0], doc_of, stacked[1])

    # ---- persistence (index/persist.py) ----

    def export_state(self) -> tuple[dict[str, object], dict[str, np.ndarray]]:
        """(metadata, arrays) for `from_state`: the vocabulary in term-id order, the live
        postings as CSR (offsets per term, slots, tfs; dead postings dropped), and the
        per-document term lists as CSR (offsets per slot, [term ids; tfs]). Terms no live
        document holds are left out (the others renumbered in order)."""
        keep, new_id = self._live_terms()
        renumbered = len(keep) < len(self._post_len)
        n_terms = len(keep)
        post_counts = np.zeros(n_terms + 1, dtype=np.int64)
        slot_parts: list[np.ndarray] = []
        tf_parts: list[np.ndarray] = []
        for i, tid in enumerate(keep):
            n = self._post_len[tid]
            slots, tfs = self._post_slots[tid][:n], self._post_tfs[tid][:n]
            if self._post_dead[tid]:
                live = tfs > 0
                slots, tfs = slots[live], tfs[live]
            slot_parts.append(slots)
            tf_parts.append(tfs)
            post_counts[i + 1] = len(slots)
        cap = len(self._doc_terms)
        doc_counts = np.zeros(cap + 1, dtype=np.int64)
        doc_parts = []
        for slot, doc in enumerate(self._doc_terms):
            if doc is not None:
                doc_parts.append(doc)
                doc_counts[slot + 1] = doc.shape[1]
        doc_terms = np.concatenate(doc_parts, axis=1).astype(np.int32) if doc_parts else np.zeros((2, 0), np.int32)
        if renumbered:
            doc_terms[0] = new_id[doc_terms[0]]
        vocab = list(self._vocab)
        arrays: dict[str, np.ndarray] = {
            "bm25_post_offsets": np.cumsum(post_counts),
            "bm25_post_slots": np.concatenate(slot_parts).astype(np.int32) if slot_parts else _EMPTY_POSTING_SLOTS,
            "bm25_post_tfs": np.concatenate(tf_parts).astype(np.float32) if tf_parts else _EMPTY_POSTING_TFS,
            "bm25_doc_offsets": np.cumsum(doc_counts),
            "bm25_doc_terms": doc_terms,
            "bm25_doc_len": np.asarray(self._doc_len, dtype=np.float32),
        }
        meta = {
            "k1": self.k1,
            "b": self.b,
            "vocab": [vocab[tid] for tid in keep] if renumbered else vocab,
            "doc_count": self._doc_count,
            "total_len": self._total_len,
        }
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict, arrays: dict[str, np.ndarray]) -> "BM25Index":
        """The index `export_state` described, over views of its arrays (no copy)."""
        index = cls(k1=float(meta["k1"]), b=float(meta["b"]), initial_capacity=1)
        vocab = meta["vocab"]
        po, ps, pt = arrays["bm25_post_offsets"], arrays["bm25_post_slots"], arrays["bm25_post_tfs"]
        do, dt, dl = arrays["bm25_doc_offsets"], arrays["bm25_doc_terms"], arrays["bm25_doc_len"]
        n_terms, cap = len(vocab), len(dl)
        if (
            not isinstance(vocab, list)
            or po.shape != (n_terms + 1,)
            or do.shape != (cap + 1,)
            or ps.shape != pt.shape
            or dt.ndim != 2
            or dt.shape[0] != 2
            or (n_terms and (po[0] != 0 or po[-1] != len(ps) or np.any(np.diff(po) < 0)))
            or do[0] != 0
            or do[-1] != dt.shape[1]
            or np.any(np.diff(do) < 0)
            or (len(ps) and (int(ps.min()) < 0 or int(ps.max()) >= max(cap, 1)))
            or (dt.shape[1] and (int(dt[0].min()) < 0 or int(dt[0].max()) >= n_terms))
        ):
            raise ValueError("BM25 arrays do not fit together")
        # A file over the bounds (written before them, or crafted) is rebuilt from the store.
        if n_terms > index._vocab_limit(int(meta["doc_count"])) or (
            cap and int(np.diff(do).max()) > index.max_doc_terms
        ):
            raise ValueError("BM25 index over its vocabulary or per-document bound")
        index._vocab = {str(t): i for i, t in enumerate(vocab)}
        if len(index._vocab) != n_terms:
            raise ValueError("BM25 vocabulary repeats a term")
        bounds = po.tolist()
        index._post_slots = [ps[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        index._post_tfs = [pt[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        index._post_len = np.diff(po).tolist()
        index._post_dead = [0] * n_terms
        index._df = list(index._post_len)
        index._unused_terms = index._df.count(0)
        dbounds = do.tolist()
        index._doc_terms = [dt[:, a:b] if b > a else None for a, b in zip(dbounds, dbounds[1:], strict=False)]
        index._doc_len = dl
        index._doc_count = int(meta["doc_count"])
        index._total_len = int(meta["total_len"])
        return index

    # ---- reads ----

    def search(
        self, query: str, k: int, mask: np.ndarray | None = None, stats: SharedStats | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k documents by BM25, best first, only scores > 0 and slots passing the mask.
        `stats`: score with the statistics of all indexes searched together (SharedStats)."""
        if k <= 0:
            return EMPTY_SLOTS, EMPTY_SCORES
        slots, scores = self._scores(self._query_term_ids(query), stats)
        if len(scores) == 0:
            return EMPTY_SLOTS, EMPTY_SCORES
        if mask is not None:
            # Zeroing (not compressing) masked entries: branch-free, and top-k skips zeros anyway.
            if slots is None:
                scores *= mask_prefix(mask, len(scores))
            else:
                scores *= mask_prefix(mask, len(self._doc_len))[slots]
        return top_k(scores, k, slots=slots, positive_only=True)

    def search_scored(
        self, query: str, k: int, mask: np.ndarray | None = None, stats: SharedStats | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`search`, plus every document's unmasked score as a dense array indexed by slot (it may
        be shorter than the index: missing entries score 0). Pass it to `scores_for(..., dense=)`
        so fused candidates found elsewhere are looked up instead of scoring the query twice."""
        if k <= 0:
            return EMPTY_SLOTS, EMPTY_SCORES, EMPTY_SCORES
        slots, scores = self._scores(self._query_term_ids(query), stats)
        if len(scores) == 0:
            return EMPTY_SLOTS, EMPTY_SCORES, EMPTY_SCORES
        if slots is None:
            dense = scores.copy()
            if mask is not None:
                scores *= mask_prefix(mask, len(scores))
        else:
            dense = np.bincount(slots, weights=scores)
            if mask is not None:
                scores *= mask_prefix(mask, len(self._doc_len))[slots]
        top_slots, top_scores = top_k(scores, k, slots=slots, positive_only=True)
        return top_slots, top_scores, dense

    def scores_for(
        self,
        query: str,
        slots: Sequence[int] | np.ndarray,
        dense: np.ndarray | None = None,
        stats: SharedStats | None = None,
    ) -> np.ndarray:
        """BM25 score of each given slot (0 where it does not match or has no document); for
        fusing with vector candidates that BM25's own top-k did not reach."""
        slot_arr = np.asarray(slots, dtype=np.int64).reshape(-1)
        out = np.zeros(len(slot_arr), dtype=np.float32)
        if dense is None:
            hit_slots, scores = self._scores(self._query_term_ids(query), stats)
            if len(scores) == 0:
                return out
            dense = scores if hit_slots is None else np.bincount(hit_slots, weights=scores)
        if len(dense) == 0 or len(slot_arr) == 0:
            return out
        inside = (slot_arr >= 0) & (slot_arr < len(dense))
        out[inside] = dense[slot_arr[inside]]
        return out

    def has(self, slot: int) -> bool:
        return 0 <= slot < len(self._doc_terms) and self._doc_terms[slot] is not None

    def doc_freq(self, term: str) -> int:
        """Live documents containing an already-tokenized term (0 if unknown)."""
        tid = self._vocab.get(term)
        return 0 if tid is None else self._df[tid]

    @property
    def doc_count(self) -> int:
        return self._doc_count

    @property
    def avg_doc_len(self) -> float:
        return self._total_len / self._doc_count if self._doc_count else 0.0

    @property
    def vocab_size(self) -> int:
        """Terms held: a term whose df fell to 0 keeps its (empty) entry until the vocabulary
        reaches its bound (then such terms are dropped, see the class) or a rebuild."""
        return len(self._vocab)

    @property
    def vocab_limit(self) -> int:
        """The vocabulary bound at the current document count (see the class)."""
        return self._vocab_limit(self._doc_count)

    @property
    def capacity(self) -> int:
        return len(self._doc_len)

    @property
    def nbytes(self) -> int:
        """Approximate memory held (numpy buffers plus Python container overhead)."""
        array_overhead = sys.getsizeof(np.zeros(0))
        posting_bytes = sum(a.nbytes for a in self._post_slots) + sum(a.nbytes for a in self._post_tfs)
        posting_bytes += 2 * array_overhead * len(self._post_slots)
        doc_bytes = sum(
            array_overhead + (d.nbytes if d.base is None else d.size * d.itemsize)
            for d in self._doc_terms
            if d is not None
        )
        vocab_bytes = sys.getsizeof(self._vocab) + sum(sys.getsizeof(t) for t in self._vocab)
        list_bytes = sum(
            sys.getsizeof(x) for x in (self._post_slots, self._post_tfs, self._post_len, self._df, self._doc_terms)
        )
        return int(posting_bytes + doc_bytes + vocab_bytes + list_bytes + self._doc_len.nbytes)

    # ---- internals: scoring ----

    def _query_term_ids(self, query: str) -> list[tuple[int, str]]:
        """(id, term) of the distinct known query terms with at least one live document."""
        vocab, df = self._vocab, self._df
        ids: list[tuple[int, str]] = []
        for term in dict.fromkeys(tokenize(query)):
            tid = vocab.get(term)
            if tid is not None and df[tid] > 0:
                ids.append((tid, term))
        return ids

    def _term_scores(self, tid: int, idf: float, avgdl: float) -> tuple[np.ndarray, np.ndarray]:
        """(slots, contributions) of one term's postings; dead postings contribute 0."""
        n = self._post_len[tid]
        slots = self._post_slots[tid][:n]
        tfs = self._post_tfs[tid][:n]
        k1, b = self.k1, self.b
        denom = self._doc_len[slots] * np.float32(k1 * b / avgdl)
        denom += np.float32(k1 * (1.0 - b))
        denom += tfs
        contrib = tfs * np.float32(idf * (k1 + 1.0))
        contrib /= denom
        return slots, contrib

    def _scores(
        self, tids: list[tuple[int, str]], stats: SharedStats | None = None
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """Scores of every matching document, in one of two shapes (zero-score entries allowed):

        - one term: (posting slots, contributions), postings-sized, so a rare word costs almost
          nothing; a slot may repeat, but then all but one of its entries are dead (exactly 0);
        - several terms: (None, dense float64 array indexed by slot), summed by one bincount.
        """
        if not tids or self._doc_count == 0:
            return None, EMPTY_SCORES
        if stats is not None and stats.doc_count > 0:
            avgdl = stats.avg_doc_len
            weighted = [(tid, stats.idf(term)) for tid, term in tids]
        else:
            n_docs, avgdl, df = self._doc_count, self.avg_doc_len, self._df
            weighted = [(tid, math.log(1.0 + (n_docs - df[tid] + 0.5) / (df[tid] + 0.5))) for tid, _ in tids]
        if len(weighted) == 1:
            return self._term_scores(*weighted[0], avgdl)
        parts = [self._term_scores(tid, idf, avgdl) for tid, idf in weighted]
        all_slots = np.concatenate([p[0] for p in parts])
        all_contrib = np.concatenate([p[1] for p in parts])
        return None, np.bincount(all_slots, weights=all_contrib)

    # ---- internals: bounds ----

    def _kept_terms(self, terms: Sequence[str]) -> Sequence[str]:
        """The document's tokens that are indexed: none longer than MAX_TERM_CHARS, and only its
        `max_doc_terms` most frequent distinct terms (ties to the earlier first use)."""
        if not terms:
            return terms
        if max(map(len, terms)) > MAX_TERM_CHARS:
            terms = [t for t in terms if len(t) <= MAX_TERM_CHARS]
        if len(terms) > self.max_doc_terms:
            counts = Counter(terms)
            if len(counts) > self.max_doc_terms:
                # most_common sorts stably: equal counts stay in first-use order
                kept = {t for t, _ in counts.most_common(self.max_doc_terms)}
                terms = [t for t in terms if t in kept]
        return terms

    def _vocab_limit(self, n_docs: int) -> int:
        return self.vocab_floor + self.vocab_per_doc * max(n_docs, 0)

    def _room(self, wanted: int, n_docs: int, may_drop: bool = True) -> int:
        """How many of `wanted` new terms fit under the bound with `n_docs` live documents;
        drops the unused terms first when room is short and they are worth a renumbering (not
        while ids given out for postings still to come are unused)."""
        room = self._vocab_limit(n_docs) - len(self._vocab)
        if room < wanted and may_drop and self._unused_worth_dropping():
            self._drop_unused_terms()
            room = self._vocab_limit(n_docs) - len(self._vocab)
        return max(0, min(room, wanted))

    def _unused_worth_dropping(self) -> bool:
        return self._unused_terms > 0 and self._unused_terms * 8 >= len(self._vocab)

    def _admit_in_order(self, term_lists: Sequence[Sequence[str]]) -> list[Sequence[str]]:
        """Give ids to the batch's new terms as sequential `set` calls would (each document
        under the bound at its turn); returns the term lists without the terms left out."""
        if self._unused_worth_dropping():  # once, before this batch's new terms get ids
            self._drop_unused_terms()
        n_docs = self._doc_count
        vocab = self._vocab
        out: list[Sequence[str]] = []
        for terms in term_lists:
            new_terms = [t for t in dict.fromkeys(terms) if t not in vocab]
            if new_terms:
                room = self._room(len(new_terms), n_docs + 1, may_drop=False)
                for t in new_terms[:room]:
                    self._term_id(t)
                if room < len(new_terms):
                    terms = [t for t in terms if t in vocab]
            n_docs += bool(terms)
            out.append(terms)
        return out

    def _live_terms(self) -> tuple[list[int], np.ndarray]:
        """The ids of the terms some live document holds, in order, and each id's new id if only
        those were kept (-1 for the others)."""
        live = np.flatnonzero(np.asarray(self._df, dtype=np.int64) > 0)
        new_id = np.full(len(self._df), -1, dtype=np.int32)
        new_id[live] = np.arange(len(live), dtype=np.int32)
        return live.tolist(), new_id

    def _drop_unused_terms(self) -> None:
        """Forget the terms no live document holds and renumber the others (in their order)."""
        keep, new_id = self._live_terms()
        terms = list(self._vocab)
        self._vocab = {terms[t]: i for i, t in enumerate(keep)}
        self._post_slots = [self._post_slots[t] for t in keep]
        self._post_tfs = [self._post_tfs[t] for t in keep]
        self._post_len = [self._post_len[t] for t in keep]
        self._post_dead = [self._post_dead[t] for t in keep]
        self._df = [self._df[t] for t in keep]
        self._unused_terms = 0
        present = [s for s, d in enumerate(self._doc_terms) if d is not None]
        parts = [d for d in self._doc_terms if d is not None]  # the documents of `present`
        if parts:
            # One new buffer for every document's [term ids; tfs] (the old ones may be views of
            # a mapped file or of a bulk buffer), as `_bulk_add` lays them out.
            stacked = np.concatenate(parts, axis=1).astype(np.int32)
            stacked[0] = new_id[stacked[0]]
            offsets = np.concatenate([[0], np.cumsum([p.shape[1] for p in parts])]).tolist()
            for i, s in enumerate(present):
                self._doc_terms[s] = stacked[:, offsets[i] : offsets[i + 1]]

    # ---- internals: maintenance ----

    def _term_id(self, term: str) -> int:
        tid = self._vocab.get(term)
        if tid is None:
            tid = len(self._post_len)
            self._vocab[term] = tid
            # Shared zero-length placeholders: never written, replaced on the first append.
            self._post_slots.append(_EMPTY_POSTING_SLOTS)
            self._post_tfs.append(_EMPTY_POSTING_TFS)
            self._post_len.append(0)
            self._post_dead.append(0)
            self._df.append(0)
            self._unused_terms += 1
        return tid

    def _append_posting(self, tid: int, slot: int, tf: int) -> None:
        n = self._post_len[tid]
        slots = self._post_slots[tid]
        if n == len(slots):
            self._resize_postings(tid, max(self._MIN_POSTINGS_CAPACITY, grown_capacity(n, n + 1)))
            slots = self._post_slots[tid]
        slots[n] = slot
        self._post_tfs[tid][n] = tf
        self._post_len[tid] = n + 1
        if self._df[tid] == 0:
            self._unused_terms -= 1
        self._df[tid] += 1

    def _append_block(self, tid: int, slots: np.ndarray, tfs: np.ndarray) -> None:
        n = self._post_len[tid]
        end = n + len(slots)
        if n == 0:
            # A view into the bulk buffer: no per-term copy; the first later append reallocates.
            self._post_slots[tid] = slots
            self._post_tfs[tid] = tfs
        else:
            if end > len(self._post_slots[tid]):
                self._resize_postings(tid, grown_capacity(len(self._post_slots[tid]), end))
            self._post_slots[tid][n:end] = slots
            self._post_tfs[tid][n:end] = tfs
        self._post_len[tid] = end
        if self._df[tid] == 0 and len(slots):
            self._unused_terms -= 1
        self._df[tid] += len(slots)

    def _resize_postings(self, tid: int, capacity: int) -> None:
        n = self._post_len[tid]
        slots = np.zeros(capacity, dtype=np.int32)
        tfs = np.zeros(capacity, dtype=np.float32)
        slots[:n] = self._post_slots[tid][:n]
        tfs[:n] = self._post_tfs[tid][:n]
        self._post_slots[tid], self._post_tfs[tid] = slots, tfs

    def _bulk_add(
        self,
        slot_arr: np.ndarray,
        term_ids: np.ndarray,
        doc_of: np.ndarray,
        counts: np.ndarray | None,
    ) -> None:
        """Add documents given as flat (term id, document index) rows, one per token, or with a
        ``counts`` column of term frequencies; the documents' slots must currently be empty.
        One sort groups postings by term, in document order (the order sequential `set` calls
        would have produced)."""
        n_docs = len(slot_arr)
        key = term_ids * n_docs + doc_of
        if counts is None:
            uniq, tf = np.unique(key, return_counts=True)
        else:
            uniq, inverse = np.unique(key, return_inverse=True)
            tf = np.bincount(inverse, weights=counts, minlength=len(uniq))
        tf = tf.astype(np.int64)
        term_of, doc_idx = np.divmod(uniq, n_docs)
        # Postings, grouped by term (uniq is sorted by term, then document).
        bounds = np.flatnonzero(np.diff(term_of)) + 1
        starts = np.concatenate([[0], bounds]).tolist()
        ends = np.concatenate([bounds, [len(uniq)]]).tolist()
        post_slots = slot_arr[doc_idx].astype(np.int32)
        post_tfs = tf.astype(np.float32)
        for tid, s, e in zip(term_of[starts].tolist(), starts, ends, strict=False):
            self._append_block(tid, post_slots[s:e], post_tfs[s:e])
        # Per-document term arrays, as views into one buffer (one allocation for all documents).
        order = np.argsort(doc_idx, kind="stable")
        per_doc = np.stack([term_of[order], tf[order]]).astype(np.int32)
        doc_sizes = np.bincount(doc_idx, minlength=n_docs)
        offsets = np.concatenate([[0], np.cumsum(doc_sizes)]).tolist()
        doc_lens = np.bincount(doc_idx, weights=tf, minlength=n_docs).astype(np.int64).tolist()
        for i, slot in enumerate(slot_arr.tolist()):
            if doc_sizes[i] == 0:
                continue
            self._doc_terms[slot] = per_doc[:, offsets[i] : offsets[i + 1]]
            self._doc_len[slot] = doc_lens[i]
            self._doc_count += 1
            self._total_len += doc_lens[i]

    def _add_doc(self, slot: int, doc: np.ndarray) -> None:
        length = int(doc[1].sum())
        self._doc_terms[slot] = doc
        self._doc_len[slot] = length
        self._doc_count += 1
        self._total_len += length

    def _remove(self, slot: int, doc: np.ndarray) -> None:
        """Mark the document's postings dead and take it out of df, N and the total length."""
        for tid in doc[0].tolist():
            n = self._post_len[tid]
            hits = np.flatnonzero(self._post_slots[tid][:n] == slot)
            # At most one live posting per (term, slot) and it is the latest appended one.
            self._post_tfs[tid][hits[-1]] = 0.0
            self._post_dead[tid] += 1
            self._df[tid] -= 1
            if self._df[tid] == 0:
                self._unused_terms += 1
            if self._post_dead[tid] * 2 > n and n >= self._COMPACT_MIN_POSTINGS:
                self._compact_term(tid)
        self._doc_count -= 1
        self._total_len -= int(doc[1].sum())
        self._doc_terms[slot] = None
        self._doc_len[slot] = 1.0

    def _compact_term(self, tid: int) -> None:
        n = self._post_len[tid]
        tfs = self._post_tfs[tid][:n]
        live = tfs > 0
        kept = int(np.count_nonzero(live))
        capacity = grown_capacity(self._MIN_POSTINGS_CAPACITY, kept)
        slots = np.zeros(capacity, dtype=np.int32)
        new_tfs = np.zeros(capacity, dtype=np.float32)
        slots[:kept] = self._post_slots[tid][:n][live]
        new_tfs[:kept] = tfs[live]
        self._post_slots[tid], self._post_tfs[tid] = slots, new_tfs
        self._post_len[tid] = kept
        self._post_dead[tid] = 0

    def _ensure_capacity(self, needed: int) -> None:
        current = len(self._doc_len)
        if needed <= current:
            return
        capacity = grown_capacity(current, needed)
        doc_len = np.ones(capacity, dtype=np.float32)
        doc_len[:current] = self._doc_len
        self._doc_len = doc_len
        self._doc_terms.extend([None] * (capacity - current))
