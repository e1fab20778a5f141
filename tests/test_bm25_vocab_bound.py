"""The BM25 index is bounded: a flood of unique words (a hostile repository's team-memory folder)
cannot grow one index's vocabulary, memory or file without limit, and normal words stay found."""

from __future__ import annotations

import numpy as np
import pytest

from engram_mcp.index import bm25 as bm25_module
from engram_mcp.index.bm25 import BM25Index
from engram_mcp.index.tokenizer import tokenize

LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def random_words(rng: np.random.Generator, n: int) -> list[str]:
    """`n` random lowercase words of 8-12 letters (unique in practice)."""
    lengths = rng.integers(8, 13, size=n)
    chars = LETTERS[rng.integers(0, 26, size=int(lengths.sum()))].tobytes().decode()
    ends = np.cumsum(lengths).tolist()
    return [chars[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def top_slot(index: BM25Index, query: str) -> int | None:
    slots, _ = index.search(query, 1)
    return int(slots[0]) if slots.size else None


def test_flood_of_unique_words_keeps_vocabulary_and_memory_bounded() -> None:
    # 2,000 memories at the content limit (20,000 characters: ~1,800 random words each), the
    # first 100 through the tokenizer as text, the rest as already-tokenized terms (the same
    # path, minus the stemming time). Unbounded, this held 3.6 million terms (~1.3 GB).
    rng = np.random.default_rng(7)
    index = BM25Index()
    index.set(0, "The deploy command of the billing service is make ship-billing")
    n_docs = 2_000
    for slot in range(1, 101):
        text = " ".join(random_words(rng, 1_800))[:20_000]
        index.set(slot, text)
    assert index.doc_count == 101
    for start in range(101, n_docs + 1, 200):
        slots = np.arange(start, min(start + 200, n_docs + 1))
        index.set_many_terms(slots, [random_words(rng, 1_800) for _ in slots])
    assert index.doc_count == n_docs + 1

    assert index.vocab_size < 150_000, index.vocab_size  # unbounded: 3.6 million
    assert index.nbytes < 80_000_000, index.nbytes  # ~370 bytes a term; unbounded ~1.3 GB
    bound = bm25_module.VOCAB_FLOOR + bm25_module.VOCAB_PER_DOC * (n_docs + 1)
    assert index.vocab_size <= bound
    # what one memory holds: at most MAX_TERMS_PER_DOC distinct terms
    assert max(d.shape[1] for d in index._doc_terms if d is not None) <= bm25_module.MAX_TERMS_PER_DOC

    # The memory stored before the flood is found; so is one stored after it, by its new words.
    assert top_slot(index, "deploy billing") == 0
    index.set(n_docs + 1, "Rotate the kubernetes ingress certificate with certbot renew")
    assert top_slot(index, "kubernetes certificate") == n_docs + 1
    assert top_slot(index, "certbot ingress") == n_docs + 1
    assert index.vocab_size <= bound + bm25_module.VOCAB_PER_DOC

    # The index file holds no more than the index.
    meta, arrays = index.export_state()
    assert len(meta["vocab"]) == index.vocab_size
    assert sum(a.nbytes for a in arrays.values()) < 30_000_000


def test_bulk_and_sequential_floods_hold_the_same_bounded_vocabulary() -> None:
    rng = np.random.default_rng(3)
    docs = [random_words(rng, 60) for _ in range(50)]
    bulk = BM25Index(vocab_floor=500, vocab_per_doc=10)
    single = BM25Index(vocab_floor=500, vocab_per_doc=10)
    bulk.set_many_terms(np.arange(50), docs)
    for slot, terms in enumerate(docs):
        single.set_terms(slot, terms)
    assert bulk.vocab_size == single.vocab_size == 500 + 10 * 50
    assert bulk.export_state()[0]["vocab"] == single.export_state()[0]["vocab"]
    for slot in (0, 7, 49):  # each document keeps at least its own allowance of new words
        query = " ".join(docs[slot][:3])
        assert top_slot(bulk, query) == top_slot(single, query) == slot


def test_one_document_keeps_its_most_frequent_terms() -> None:
    rng = np.random.default_rng(1)
    noise = random_words(rng, 3_000)
    text = " ".join(["kubernetes cluster", *noise[:1_500], "kubernetes", *noise[1_500:], "kubernetes cluster"])
    index = BM25Index()
    index.set(0, text)
    (held,) = [d for d in index._doc_terms if d is not None]
    assert held.shape[1] == bm25_module.MAX_TERMS_PER_DOC
    assert top_slot(index, "kubernetes") == 0  # three times: kept
    assert top_slot(index, "cluster") == 0  # twice: kept
    assert top_slot(index, noise[0]) == 0  # once, but among the first used
    assert top_slot(index, noise[-1]) is None  # once, late: left out
    # the bulk path keeps the same terms
    bulk = BM25Index()
    bulk.set_many([0], [text])
    assert bulk.export_state()[0]["vocab"] == index.export_state()[0]["vocab"]


def test_blobs_longer_than_any_query_word_are_not_indexed() -> None:
    sha1 = "9f3ac21e0b5d4c7a8e6f1a2b3c4d5e6f7a8b9c0d"
    blob = "q" * 200
    index = BM25Index()
    index.set(0, f"pinned to {sha1} payload {blob}")
    assert top_slot(index, sha1) == 0
    assert top_slot(index, "payload") == 0
    assert index.doc_freq(blob) == 0 and blob not in index.export_state()[0]["vocab"]
    assert all(len(t) <= bm25_module.MAX_TERM_CHARS for t in tokenize(sha1))


def test_unused_terms_are_dropped_at_the_bound_and_answers_stay_exact() -> None:
    rng = np.random.default_rng(5)
    index = BM25Index(vocab_floor=1_000, vocab_per_doc=5)
    live: dict[int, list[str]] = {}
    common = ["deploy", "cache", "index", "token"]
    for step in range(400):  # churn: memories replaced and removed, each with new words
        slot = int(rng.integers(0, 20))
        if rng.random() < 0.2:
            index.clear(slot)
            live.pop(slot, None)
            continue
        terms = [*random_words(rng, 30), common[step % 4]]
        index.set_terms(slot, terms)
        live[slot] = terms
        assert index.vocab_size <= 1_000 + 5 * 21
    # every live memory kept all of its words: the room came from words no memory holds
    reference = BM25Index()
    for slot, terms in live.items():
        reference.set_terms(slot, terms)
    for query in ["deploy", "cache token", *(" ".join(t[:2]) for t in live.values())]:
        got, ref = index.search(query, 10), reference.search(query, 10)
        assert got[0].tolist() == ref[0].tolist()
        np.testing.assert_allclose(got[1], ref[1], rtol=1e-6)
    # the saved state holds only the live terms and loads to the same answers
    meta, arrays = index.export_state()
    assert set(meta["vocab"]) == {t for terms in live.values() for t in terms}
    loaded = BM25Index.from_state(meta, arrays)
    for query in ["deploy", "cache token", *(" ".join(t[:2]) for t in live.values())]:
        assert loaded.search(query, 10)[0].tolist() == index.search(query, 10)[0].tolist()


def test_a_saved_index_over_the_bound_is_refused() -> None:
    """A file written before the bound (or crafted) is rebuilt from the store instead."""
    rng = np.random.default_rng(9)
    big = BM25Index(vocab_floor=10**9)
    big.set_many_terms(np.arange(10), [random_words(rng, 500) for _ in range(10)])
    meta, arrays = big.export_state()
    BM25Index.from_state({**meta}, arrays)  # within the default bound: fine
    small = BM25Index(vocab_floor=10**9, max_doc_terms=10**6)
    small.set_terms(0, random_words(rng, 80_000))
    meta, arrays = small.export_state()
    with pytest.raises(ValueError, match="bound"):
        BM25Index.from_state(meta, arrays)
