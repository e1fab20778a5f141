"""Behaviour of the in-memory retrieval primitives (engram_mcp/index/: tokenizer, slots, vectors, bm25)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from engram_mcp.core import vector_codec
from engram_mcp.index.arrays import SAMPLE_STRIDE, SAMPLED_CUT_MIN_ENTRIES, _sampled_cut, top_k
from engram_mcp.index.bm25 import BM25_B, BM25_K1, BM25Index
from engram_mcp.index.slots import SlotAllocator
from engram_mcp.index.tokenizer import ENGLISH_STOP_WORDS, tokenize
from engram_mcp.index.vectors import VectorIndex

# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

CORPUS = [
    "Redis is used as the session cache; eviction policy is allkeys-lru.",
    "The Postgres connection pool is configured with 20 connections.",
    "Deploys run through GitHub Actions; the deploy job needs the AWS role.",
    "Use getUserName instead of fetching the user record directly.",
    "The redis cluster failed over twice last week, redis sentinel was restarted.",
    "Alice prefers tabs over spaces in Python files.",
    "Caching the user_name in the session avoids a database round trip.",
    "Tests must not hit the network; mock the HTTP client.",
    "the and of to",  # only stop words: not a document
    "Pool sizes above 50 exhausted Postgres max_connections in staging.",
]

QUERIES = [
    "redis",
    "redis cache",
    "postgres pool connections",
    "user name",
    "getUserName",
    "deploy aws",
    "session",
    "nothing matches xyzzy",
    "the",
]


def reference_bm25(docs: dict[int, str], query: str, k1: float = BM25_K1, b: float = BM25_B) -> dict[int, float]:
    """Textbook BM25 with Lucene idf, in plain Python floats, distinct query terms."""
    tokenized = {slot: tokenize(text) for slot, text in docs.items()}
    tokenized = {slot: terms for slot, terms in tokenized.items() if terms}
    n_docs = len(tokenized)
    if n_docs == 0:
        return {}
    avgdl = sum(len(t) for t in tokenized.values()) / n_docs
    df: Counter[str] = Counter()
    for terms in tokenized.values():
        df.update(set(terms))
    scores: dict[int, float] = {}
    for slot, terms in tokenized.items():
        tf = Counter(terms)
        total = 0.0
        for term in dict.fromkeys(tokenize(query)):
            if tf[term] == 0:
                continue
            idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
            norm = k1 * (1 - b + b * len(terms) / avgdl)
            total += idf * tf[term] * (k1 + 1) / (tf[term] + norm)
        if total > 0:
            scores[slot] = total
    return scores


class _SmallBlockVectorIndex(VectorIndex):
    BLOCK_ELEMENTS_MAX = 32 * 7  # 7 rows per block at 32 dims: exercises block edges on small data


def random_unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    mat = rng.standard_normal((n, dim)).astype(np.float32)
    return mat / np.linalg.norm(mat, axis=1, keepdims=True)


def kept(mat: np.ndarray) -> np.ndarray:
    """The rows as the index (and the store) keep them: int8 with a scale each (vector_codec)."""
    return vector_codec.dequantize(*vector_codec.quantize(vector_codec.normalised_rows(mat)))


def brute_force_top_k(mat: np.ndarray, present: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    scores = mat @ q
    idx = np.flatnonzero(present)
    order = idx[np.argsort(-scores[idx], kind="stable")]
    return order[:k].tolist()


def zipf_corpus(rng: np.random.Generator, n_docs: int, vocab_size: int = 300) -> list[str]:
    vocab = [f"w{i}x" for i in range(vocab_size)]
    weights = 1.0 / np.arange(1, vocab_size + 1)
    weights /= weights.sum()
    docs = []
    for _ in range(n_docs):
        length = int(rng.integers(0, 12))
        docs.append(" ".join(vocab[i] for i in rng.choice(vocab_size, size=length, p=weights)))
    return docs


def assert_same_results(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> None:
    assert a[0].tolist() == b[0].tolist()
    np.testing.assert_allclose(a[1], b[1], rtol=1e-5)


# ------------------------------------------------------------------------------------------
# tokenize
# ------------------------------------------------------------------------------------------


def test_tokenize_lowercases_and_stems_inflections_to_one_term() -> None:
    assert tokenize("Running runs") == ["run", "run"]
    assert tokenize("Connections connected") == ["connect", "connect"]


def test_tokenize_drops_english_stop_words() -> None:
    assert tokenize("the cat is on the mat") == ["cat", "mat"]
    assert len(ENGLISH_STOP_WORDS) >= 150


def test_tokenize_splits_on_punctuation_and_keeps_digits() -> None:
    assert tokenize("v2.0.1 released 2024-05-01, port=8080") == [
        "v2", "0", "1", "releas", "2024", "05", "01", "port", "8080",
    ]


def test_tokenize_writes_a_hyphenated_compound_also_solid() -> None:
    # "to-do" is two stop words: only the solid form lets it meet "TODO"
    assert tokenize("my to-do list") == ["list", "todo"]
    assert set(tokenize("TODO")) <= set(tokenize("to-do"))
    assert {"pre", "commit", "precommit"} <= set(tokenize("the pre-commit hook"))
    assert set(tokenize("re-run")) >= set(tokenize("rerun"))
    # dates, versions and ranges are not words: nothing is joined
    assert tokenize("2024-05-01 v3.6-beta") == ["2024", "05", "01", "v3", "6", "beta"]


def test_tokenize_indexes_camel_case_identifier_by_parts_and_whole() -> None:
    terms = tokenize("getUserName")
    assert set(terms) == {"get", "user", "name", tokenize("getusername")[0]}


def test_tokenize_indexes_snake_case_identifier_like_its_camel_case_spelling() -> None:
    assert set(tokenize("get_user_name")) == set(tokenize("getUserName"))


def test_tokenize_splits_acronym_and_digit_boundaries_in_identifiers() -> None:
    assert {"http", "server", "httpserver"} <= set(tokenize("HTTPServer"))
    assert {"utf8", "decod"} <= set(tokenize("utf8Decoder"))


def test_tokenize_treats_capitalised_and_upper_case_words_as_plain_words() -> None:
    assert tokenize("Redis REDIS redis") == ["redi", "redi", "redi"]


def test_tokenize_handles_unicode_words_of_any_script() -> None:
    terms = tokenize("Übergröße café 東京タワー")
    assert terms[0].startswith("übergröß")
    assert "café" in terms
    assert "東京タワー" in terms
    assert set(tokenize("ÜberGröße")) >= {"über", tokenize("größe")[0]}


def test_tokenize_returns_nothing_for_empty_punctuation_and_stop_word_text() -> None:
    assert tokenize("") == []
    assert tokenize("  ...,;!? __ ") == []
    assert tokenize("The and OF to") == []


def test_tokenize_is_deterministic_across_cache_hits() -> None:
    text = "Alice configured the PostgreSQL connection_pool yesterday"
    assert tokenize(text) == tokenize(text)


# ------------------------------------------------------------------------------------------
# SlotAllocator
# ------------------------------------------------------------------------------------------


def test_slot_allocator_returns_same_slot_for_same_key() -> None:
    alloc = SlotAllocator()
    assert alloc.slot_for("a") == 0
    assert alloc.slot_for("b") == 1
    assert alloc.slot_for("a") == 0
    assert alloc.get("b") == 1 and alloc.get("zz") is None
    assert alloc.key_at(1) == "b" and alloc.key_at(5) is None


def test_slot_allocator_tombstones_released_slots_without_reuse() -> None:
    alloc = SlotAllocator()
    for key in "abc":
        alloc.slot_for(key)
    assert alloc.release("b") == 1
    assert alloc.release("b") is None
    assert alloc.slot_for("d") == 3
    assert alloc.live_mask.tolist() == [True, False, True, True]
    assert alloc.size == 4 and alloc.live_count == 3
    assert alloc.key_at(1) is None and "b" not in alloc


def test_slot_allocator_live_mask_is_read_only() -> None:
    alloc = SlotAllocator()
    alloc.slot_for("a")
    with pytest.raises(ValueError):
        alloc.live_mask[0] = False


def test_slot_allocator_grows_past_initial_capacity() -> None:
    alloc = SlotAllocator(initial_capacity=2)
    slots = alloc.slots_for(f"k{i}" for i in range(100))
    assert slots.tolist() == list(range(100))
    assert alloc.live_mask.shape == (100,) and alloc.live_mask.all()


def test_slot_allocator_compact_renumbers_live_keys_in_order() -> None:
    alloc = SlotAllocator()
    for key in "abcde":
        alloc.slot_for(key)
    alloc.release("a")
    alloc.release("d")
    old = alloc.compact()
    assert old.tolist() == [1, 2, 4]
    assert [alloc.get(k) for k in "bce"] == [0, 1, 2]
    assert alloc.size == 3 and alloc.live_mask.all()
    assert alloc.slot_for("f") == 3


# ------------------------------------------------------------------------------------------
# VectorIndex
# ------------------------------------------------------------------------------------------


@pytest.fixture
def vector_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return random_unit_vectors(rng, 3000, 32), random_unit_vectors(rng, 20, 32)


def test_vector_search_equals_brute_force_top_k(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    index = VectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    present = np.ones(len(mat), dtype=bool)
    for q in queries:
        slots, scores = index.search(q, 10)
        assert slots.tolist() == brute_force_top_k(kept(mat), present, q, 10)
        np.testing.assert_allclose(scores, kept(mat)[slots] @ q, rtol=1e-5, atol=1e-6)
        assert scores.dtype == np.float32 and slots.dtype == np.int64
        assert np.all(np.diff(scores) <= 0)


@pytest.mark.parametrize("fraction", [0.7, 0.05])  # full-product path and gather path
def test_vector_search_with_mask_equals_brute_force_over_masked_slots(
    vector_data: tuple[np.ndarray, np.ndarray], fraction: float
) -> None:
    mat, queries = vector_data
    rng = np.random.default_rng(1)
    mask = rng.random(len(mat)) < fraction
    index = VectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    for q in queries:
        slots, _ = index.search(q, 10, mask)
        assert slots.tolist() == brute_force_top_k(kept(mat), mask, q, 10)
        assert mask[slots].all()


def test_vector_search_excludes_slots_beyond_a_short_mask(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    index = VectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    short = np.ones(100, dtype=bool)
    slots, _ = index.search(queries[0], 10, short)
    assert slots.tolist() == brute_force_top_k(kept(mat[:100]), short, queries[0], 10)


def test_vector_search_returns_fewer_than_k_when_few_slots_qualify() -> None:
    index = VectorIndex(4)
    index.set(3, np.array([1, 0, 0, 0], dtype=np.float32))
    index.set(5, np.array([0, 1, 0, 0], dtype=np.float32))
    slots, scores = index.search(np.array([1, 0, 0, 0], dtype=np.float32), 10)
    assert slots.tolist() == [3, 5]
    np.testing.assert_allclose(scores, [1.0, 0.0], atol=1e-6)
    assert index.search(np.ones(4), 0)[0].size == 0
    assert index.search(np.ones(4), 5, np.zeros(10, dtype=bool))[0].size == 0


def test_vector_clear_removes_slot_from_results_and_replace_overwrites() -> None:
    index = VectorIndex(3)
    index.set(0, np.array([1, 0, 0], dtype=np.float32))
    index.set(1, np.array([0.9, 0.1, 0], dtype=np.float32))
    q = np.array([1, 0, 0], dtype=np.float32)
    assert index.search(q, 1)[0].tolist() == [0]
    index.clear(0)
    assert not index.has(0) and index.get(0) is None and len(index) == 1
    assert index.search(q, 5)[0].tolist() == [1]
    index.set(1, np.array([0, 0, 1], dtype=np.float32))
    index.set(2, np.array([1, 0, 0], dtype=np.float32))
    assert index.search(q, 5)[0].tolist() == [2, 1]
    index.clear(99)  # unknown slot: no-op


def test_vector_set_normalises_vectors_defensively() -> None:
    index = VectorIndex(2)
    index.set(0, np.array([3.0, 4.0]))
    np.testing.assert_allclose(index.get(0), [0.6, 0.8], atol=0.005)  # int8 with a scale
    _, scores = index.search(np.array([30.0, 40.0]), 1)
    np.testing.assert_allclose(scores, [1.0], atol=0.005)
    with pytest.raises(ValueError):
        index.set(1, np.zeros(2))
    with pytest.raises(ValueError):
        index.set(1, np.ones(3))


def test_vector_similarities_are_nan_where_slot_has_no_vector(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    index = VectorIndex(32)
    index.set_many(np.arange(10), mat[:10])
    index.clear(4)
    sims = index.similarities(queries[0], [0, 4, 9, 500, -1])
    np.testing.assert_allclose(sims[[0, 2]], kept(mat[[0, 9]]) @ queries[0], rtol=1e-5)
    assert np.isnan(sims[[1, 3, 4]]).all()


def test_vector_max_similarity_finds_best_match_within_mask(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, _ = vector_data
    index = VectorIndex(32)
    index.set_many(np.arange(100), mat[:100])
    slot, sim = index.max_similarity(mat[42])
    assert slot == 42 and sim == pytest.approx(1.0, abs=0.005)
    mask = np.ones(100, dtype=bool)
    mask[42] = False
    assert index.max_similarity(mat[42], mask)[0] != 42
    assert index.max_similarity(mat[42], np.zeros(100, dtype=bool)) is None
    assert VectorIndex(32).max_similarity(mat[0]) is None


def test_vector_capacity_grows_and_keeps_existing_rows(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    index = VectorIndex(32, initial_capacity=2)
    for slot in range(500):
        index.set(slot, mat[slot])
    assert index.capacity >= 500 and len(index) == 500
    np.testing.assert_array_equal(index.get(0), kept(mat[:1])[0])
    present = np.ones(500, dtype=bool)
    assert index.search(queries[0], 5)[0].tolist() == brute_force_top_k(kept(mat[:500]), present, queries[0], 5)


@pytest.mark.parametrize("index_class", [VectorIndex, _SmallBlockVectorIndex])
def test_vector_bulk_load_equals_one_by_one(
    vector_data: tuple[np.ndarray, np.ndarray], index_class: type[VectorIndex]
) -> None:
    mat, queries = vector_data
    rng = np.random.default_rng(3)
    slots = rng.permutation(len(mat))
    slots[::50] = slots[1::50]  # some duplicates: the later row wins, as with set()
    bulk, single = index_class(32), index_class(32)
    bulk.set_many(slots, mat)
    for slot, row in zip(slots.tolist(), mat):
        single.set(slot, row)
    assert len(bulk) == len(single) == len(set(slots.tolist()))
    for q in queries:
        assert_same_results(bulk.search(q, 10), single.search(q, 10))
    for slot in slots[:20].tolist():
        np.testing.assert_array_equal(bulk.get(slot), single.get(slot))


def test_vector_kept_as_the_store_keeps_it(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    """A row set from the model's float32 vector and one set from the store's packed bytes are
    the same row: a rebuild from the store equals the index kept beside it (issue 36)."""
    mat, queries = vector_data
    direct, from_store, bulk = VectorIndex(32), VectorIndex(32), VectorIndex(32)
    for slot, row in enumerate(mat[:200]):
        direct.set(slot, row)
        packed = vector_codec.pack_float_bytes(row.astype("<f4").tobytes(), 32)
        assert packed is not None and len(packed) == 36
        got = vector_codec.unpack(packed, 32)
        assert got is not None
        from_store.set_quantized(slot, *got)
    parts = [vector_codec.unpack(vector_codec.pack(row), 32) for row in mat[:200]]
    bulk.set_many_quantized(np.arange(200), np.vstack([p[0] for p in parts]), np.array([p[1] for p in parts]))
    for other in (from_store, bulk):
        np.testing.assert_array_equal(direct.rows(np.arange(200)), other.rows(np.arange(200)))
        for q in queries:
            assert_same_results(direct.search(q, 10), other.search(q, 10))
    wide = vector_codec.float_bytes(vector_codec.pack(mat[0]), 32)
    assert wide is not None and np.frombuffer(wide, dtype="<f4").tolist() == direct.get(0).tolist()
    assert vector_codec.pack_float_bytes(b"\0" * 36, 32) is None  # packed already: kept as given
    rng = np.random.default_rng(11)
    for dim in (32, 384):  # read back as float32 and packed again (export, import): the same bytes
        for row in random_unit_vectors(rng, 2000, dim):
            packed = vector_codec.pack(row)
            again = vector_codec.float_bytes(packed, dim)
            assert again is not None and vector_codec.pack_float_bytes(again, dim) == packed


def test_vector_renumber_follows_allocator_compaction(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    alloc, index = SlotAllocator(), VectorIndex(32)
    for i in range(50):
        index.set(alloc.slot_for(f"m{i}"), mat[i])
    for i in range(0, 50, 3):
        index.clear(alloc.release(f"m{i}"))
    before = [alloc.key_at(int(s)) for s in index.search(queries[0], 10, alloc.live_mask)[0]]
    index.renumber(alloc.compact())
    after = [alloc.key_at(int(s)) for s in index.search(queries[0], 10, alloc.live_mask)[0]]
    assert before == after and len(index) == alloc.live_count


# ------------------------------------------------------------------------------------------
# BM25Index
# ------------------------------------------------------------------------------------------


@pytest.fixture
def corpus_index() -> BM25Index:
    index = BM25Index()
    for slot, text in enumerate(CORPUS):
        index.set(slot, text)
    return index


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_scores_match_reference_implementation(corpus_index: BM25Index, query: str) -> None:
    expected = reference_bm25(dict(enumerate(CORPUS)), query)
    slots, scores = corpus_index.search(query, 100)
    assert dict(zip(slots.tolist(), scores.tolist())) == pytest.approx(expected, rel=1e-5)
    all_scores = corpus_index.scores_for(query, np.arange(len(CORPUS)))
    for slot in range(len(CORPUS)):
        assert all_scores[slot] == pytest.approx(expected.get(slot, 0.0), rel=1e-5)


def test_bm25_scores_match_reference_with_other_parameters() -> None:
    index = BM25Index(k1=0.9, b=1.0)
    index.set_many(np.arange(len(CORPUS)), CORPUS)
    index.clear(1)  # a dead posting with b=1 must still score exactly 0
    docs = {i: t for i, t in enumerate(CORPUS) if i != 1}
    for query in QUERIES:
        slots, scores = index.search(query, 100)
        expected = reference_bm25(docs, query, k1=0.9, b=1.0)
        assert dict(zip(slots.tolist(), scores.tolist())) == pytest.approx(expected, rel=1e-5)


def test_bm25_results_are_sorted_best_first_and_positive(corpus_index: BM25Index) -> None:
    slots, scores = corpus_index.search("redis postgres pool session user", 100)
    assert len(slots) > 3
    assert np.all(np.diff(scores) <= 0) and np.all(scores > 0)
    assert slots.dtype == np.int64 and scores.dtype == np.float32


def test_bm25_idf_is_never_negative_for_a_term_in_every_document() -> None:
    index = BM25Index()
    for slot in range(5):
        index.set(slot, f"common word number{slot}")
    slots, scores = index.search("common", 10)
    assert sorted(slots.tolist()) == list(range(5))
    assert np.all(scores > 0)


def test_bm25_counts_repeated_query_terms_once(corpus_index: BM25Index) -> None:
    assert_same_results(corpus_index.search("redis redis cache", 5), corpus_index.search("redis cache", 5))


def test_bm25_search_respects_mask(corpus_index: BM25Index) -> None:
    mask = np.ones(len(CORPUS), dtype=bool)
    mask[4] = False
    slots, _ = corpus_index.search("redis", 10, mask)
    assert slots.tolist() == [0]
    slots, _ = corpus_index.search("redis cache session", 10, mask)
    assert 4 not in slots.tolist() and len(slots) > 0
    assert corpus_index.search("redis", 10, np.zeros(3, dtype=bool))[0].size == 0
    short = np.ones(2, dtype=bool)  # slots >= 2 excluded
    assert corpus_index.search("postgres pool", 10, short)[0].tolist() == [1]


def test_bm25_top_k_cut_matches_full_ranking_and_breaks_ties_by_slot() -> None:
    index = BM25Index()
    for slot in range(20):
        index.set(slot, "same words here")  # all tied
    slots, _ = index.search("words", 5)
    assert slots.tolist() == [0, 1, 2, 3, 4]
    full_slots, full_scores = index.search("words", 100)
    assert full_slots.tolist() == list(range(20))


def test_bm25_text_without_terms_is_not_a_document() -> None:
    index = BM25Index()
    index.set(0, "the and of")
    index.set(1, "redis")
    assert index.doc_count == 1 and not index.has(0)
    assert index.avg_doc_len == 1.0


def test_bm25_clear_removes_document_and_updates_statistics(corpus_index: BM25Index) -> None:
    corpus_index.clear(4)
    corpus_index.clear(4)  # idempotent
    corpus_index.clear(12345)  # unknown slot
    docs = {i: t for i, t in enumerate(CORPUS) if i != 4}
    assert corpus_index.doc_count == len([t for t in docs.values() if tokenize(t)])
    for query in QUERIES:
        slots, scores = corpus_index.search(query, 100)
        assert dict(zip(slots.tolist(), scores.tolist())) == pytest.approx(reference_bm25(docs, query), rel=1e-5)


def test_bm25_set_replaces_previous_text_of_slot(corpus_index: BM25Index) -> None:
    corpus_index.set(0, "Memcached replaced the old cache layer")
    corpus_index.set(3, "Memcached replaced the old cache layer")  # replace, then same text again
    corpus_index.set(3, "Memcached replaced the old cache layer")
    docs = dict(enumerate(CORPUS))
    docs[0] = docs[3] = "Memcached replaced the old cache layer"
    for query in [*QUERIES, "memcached", "cache layer"]:
        slots, scores = corpus_index.search(query, 100)
        assert dict(zip(slots.tolist(), scores.tolist())) == pytest.approx(reference_bm25(docs, query), rel=1e-5)
    assert 0 not in corpus_index.search("eviction", 10)[0].tolist()


def test_bm25_scores_for_returns_zero_for_unmatched_and_unknown_slots(corpus_index: BM25Index) -> None:
    scores = corpus_index.scores_for("redis", [5, 0, 4000, -3])
    assert scores[0] == 0 and scores[1] > 0 and scores[2] == 0 and scores[3] == 0
    assert corpus_index.scores_for("xyzzy", [0, 1]).tolist() == [0.0, 0.0]


def test_bm25_bulk_build_equals_incremental_build() -> None:
    rng = np.random.default_rng(11)
    docs = zipf_corpus(rng, 600)
    slots = rng.permutation(2000)[: len(docs)]
    bulk, single = BM25Index(), BM25Index()
    bulk.set_many(slots, docs)
    for slot, text in zip(slots.tolist(), docs):
        single.set(slot, text)
    assert bulk.doc_count == single.doc_count and bulk.avg_doc_len == single.avg_doc_len
    mask = rng.random(2000) < 0.5
    for query in ["w0x", "w1x w2x", "w50x w3x w200x", "w299x", "w0x w1x w2x w3x w4x"]:
        assert_same_results(bulk.search(query, 10), single.search(query, 10))
        assert_same_results(bulk.search(query, 10, mask), single.search(query, 10, mask))


def test_bm25_bulk_build_over_existing_documents_replaces_them(corpus_index: BM25Index) -> None:
    corpus_index.set_many([0, 20, 20], ["postgres only", "first text", "redis again"])
    docs = dict(enumerate(CORPUS))
    docs[0], docs[20] = "postgres only", "redis again"
    for query in [*QUERIES, "first", "again"]:
        slots, scores = corpus_index.search(query, 100)
        assert dict(zip(slots.tolist(), scores.tolist())) == pytest.approx(reference_bm25(docs, query), rel=1e-5)


def test_bm25_lazy_compaction_after_many_replacements_keeps_results_identical() -> None:
    rng = np.random.default_rng(5)
    texts = zipf_corpus(rng, 200, vocab_size=40)
    churned = BM25Index()
    churned.set_many(np.arange(200), texts)
    final = list(texts)
    for _ in range(1500):  # heavy churn: common terms get compacted many times
        slot = int(rng.integers(0, 200))
        final[slot] = zipf_corpus(rng, 1, vocab_size=40)[0]
        churned.set(slot, final[slot])
    fresh = BM25Index()
    for slot, text in enumerate(final):
        fresh.set(slot, text)
    queries = ["w0x", "w1x w5x", "w30x", "w0x w1x w2x w39x"]
    for query in queries:
        assert_same_results(churned.search(query, 20), fresh.search(query, 20))
    churned.compact()
    for query in queries:
        assert_same_results(churned.search(query, 20), fresh.search(query, 20))


def test_bm25_capacity_grows_for_large_slots() -> None:
    index = BM25Index(initial_capacity=2)
    index.set(0, "alpha")
    index.set(10_000, "alpha beta")
    index.set_many([50_000], ["beta gamma"])
    assert index.capacity > 50_000
    assert sorted(index.search("alpha", 5)[0].tolist()) == [0, 10_000]
    assert sorted(index.search("beta", 5)[0].tolist()) == [10_000, 50_000]


def test_bm25_renumber_follows_allocator_compaction() -> None:
    alloc, index = SlotAllocator(), BM25Index()
    for i, text in enumerate(CORPUS):
        index.set(alloc.slot_for(f"m{i}"), text)
    for i in (0, 3):
        index.clear(alloc.release(f"m{i}"))
    before = {q: index.search(q, 10, alloc.live_mask) for q in QUERIES}
    keys_before = {q: [alloc.key_at(int(s)) for s in r[0]] for q, r in before.items()}
    index.renumber(alloc.compact())
    for query in QUERIES:
        slots, scores = index.search(query, 10, alloc.live_mask)
        assert [alloc.key_at(int(s)) for s in slots] == keys_before[query]
        np.testing.assert_allclose(scores, before[query][1], rtol=1e-6)
    index.set(alloc.slot_for("new"), "redis again")
    assert alloc.get("new") in index.search("redis", 10)[0].tolist()


def test_bm25_empty_index_and_non_positive_k_return_nothing() -> None:
    index = BM25Index()
    assert index.search("anything", 10)[0].size == 0
    index.set(0, "anything")
    assert index.search("anything", 0)[0].size == 0
    assert index.search("", 10)[0].size == 0


@pytest.mark.parametrize("fraction", [1.0, 0.7, 0.05])
def test_vector_search_in_many_blocks_equals_brute_force(
    vector_data: tuple[np.ndarray, np.ndarray], fraction: float
) -> None:
    mat, queries = vector_data
    mask = np.random.default_rng(2).random(len(mat)) < fraction
    index = _SmallBlockVectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    for q in queries[:5]:
        assert index.search(q, 10, mask)[0].tolist() == brute_force_top_k(kept(mat), mask, q, 10)
    sims = index.similarities(queries[0], np.arange(50))
    np.testing.assert_allclose(sims, kept(mat[:50]) @ queries[0], rtol=1e-5, atol=1e-6)


def test_vector_renumber_across_many_blocks(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    alloc, index = SlotAllocator(), _SmallBlockVectorIndex(32)
    for i in range(300):
        index.set(alloc.slot_for(f"m{i}"), mat[i])
    for i in range(0, 300, 4):
        index.clear(alloc.release(f"m{i}"))
    alloc.slot_for("no-vector-yet")
    before = [alloc.key_at(int(s)) for s in index.search(queries[1], 15, alloc.live_mask)[0]]
    index.renumber(alloc.compact())
    after = [alloc.key_at(int(s)) for s in index.search(queries[1], 15, alloc.live_mask)[0]]
    assert before == after
    assert len(index) == alloc.live_count - 1 and not index.has(alloc.get("no-vector-yet"))
    np.testing.assert_array_equal(index.get(alloc.get("m7")), kept(mat[7:8])[0])


class _QuantizedVectorIndex(_SmallBlockVectorIndex):
    QUANTIZED_SCAN_MIN_ROWS = 1  # every full scan takes the int8 path


@pytest.fixture(params=["numkong", "numpy"])
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The int8 scan with NumKong's kernels, and with the numpy fallback used when it is missing."""
    import engram_mcp.index.vectors as vectors

    if request.param == "numpy":
        monkeypatch.setattr(vectors, "_NUMKONG", [None])
    else:
        assert vectors._numkong() is not None, "numkong is a dependency (pyproject.toml)"
    return request.param


@pytest.mark.parametrize("fraction", [1.0, 0.7])
def test_int8_scan_returns_the_exact_top_k_and_exact_scores(
    vector_data: tuple[np.ndarray, np.ndarray], fraction: float, kernels: str
) -> None:
    mat, queries = vector_data
    mask = np.random.default_rng(3).random(len(mat)) < fraction
    index = _QuantizedVectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    for i in range(0, 300, 3):  # cleared and re-set rows keep their int8 copies in step
        index.clear(i)
    index.set(0, mat[0])
    present = mask.copy()
    present[3:300:3] = False
    for q in queries:
        slots, scores, scanned = index.search_scored(q, 10, mask)
        assert scanned is None  # approximate scan scores are never handed out as cosines
        assert slots.tolist() == brute_force_top_k(kept(mat), present, q, 10)
        np.testing.assert_allclose(scores, kept(mat)[slots] @ q, rtol=1e-5, atol=1e-6)


def test_int8_scan_approximates_every_cosine_closely(vector_data: tuple[np.ndarray, np.ndarray], kernels: str) -> None:
    """The first pass itself: int8 rounding moves a cosine by well under 0.02 (32 dims; less at 384)."""
    mat, queries = vector_data
    index = _QuantizedVectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    for q in queries[:5]:
        approx = index._qdot_prefix(q, len(mat))
        assert np.max(np.abs(approx - mat @ q)) < 0.02


def test_gathers_row_by_row_and_block_by_block_agree(vector_data: tuple[np.ndarray, np.ndarray]) -> None:
    mat, queries = vector_data
    index = _SmallBlockVectorIndex(32)
    index.set_many(np.arange(len(mat)), mat)
    slots = np.random.default_rng(4).permutation(len(mat))[:500]  # unsorted, many blocks
    by_row = index._rows(slots), index._dot_rows(queries[0], slots)
    index.ROW_BY_ROW_MAX = 0
    by_block = index._rows(slots), index._dot_rows(queries[0], slots)
    np.testing.assert_array_equal(by_row[0], kept(mat)[slots])
    np.testing.assert_array_equal(by_block[0], kept(mat)[slots])
    np.testing.assert_allclose(by_row[1], by_block[1], rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------------------
# top_k itself: against a full sort, on the score shapes recall produces
# ------------------------------------------------------------------------------------------


def sorted_top_k(scores: np.ndarray, k: int, slots: np.ndarray | None, positive_only: bool) -> list[int]:
    """The reference: every entry sorted by (score desc, slot asc), cut at k."""
    names = np.arange(len(scores)) if slots is None else slots
    entries = [(-float(s), int(n)) for s, n in zip(scores, names, strict=True) if not positive_only or s > 0]
    return [n for _, n in sorted(entries)[:k]]


@pytest.mark.parametrize("zero_fraction", [0.0, 0.5, 0.97, 1.0])
@pytest.mark.parametrize("distinct", [3, 40, 10_000])
def test_top_k_equals_a_full_sort_with_zeros_and_ties(zero_fraction: float, distinct: int) -> None:
    """BM25's dense scores: mostly zeros (documents without a query term) and few distinct
    values (equal tf and length), where ties at the k-th score go to the lower slot."""
    rng = np.random.default_rng(distinct + int(zero_fraction * 100))
    n = 5_000
    values = rng.integers(1, distinct + 1, n).astype(np.float64) / distinct
    scores = np.where(rng.random(n) < zero_fraction, 0.0, values)
    for k in (1, 10, 100, n + 1):
        for positive_only in (True, False):
            slots, got = top_k(scores, k, positive_only=positive_only)
            assert slots.tolist() == sorted_top_k(scores, k, None, positive_only)
            np.testing.assert_allclose(got, scores[slots], rtol=1e-6)


def _large_score_arrays() -> dict[str, np.ndarray]:
    """Arrays past SAMPLED_CUT_MIN_ENTRIES: shapes a strided sample reads well and badly."""
    rng = np.random.default_rng(11)
    n = 3 * SAMPLED_CUT_MIN_ENTRIES
    cosines = rng.normal(0.2, 0.1, n).astype(np.float32)
    masked = cosines.copy()
    masked[rng.random(n) < 0.6] = -np.inf  # filtered rows, as the vector search marks them
    return {
        "cosines": cosines,
        "few distinct values": (rng.integers(0, 4, n) / 4.0).astype(np.float32),
        "ascending": np.sort(cosines),
        "descending": np.sort(cosines)[::-1].copy(),
        "best in one stride": np.where(np.arange(n) % SAMPLE_STRIDE == 3, 0.9, 0.1).astype(np.float32),
        "mostly masked": masked,
        "all masked but a few": np.where(np.arange(n) < 50, 0.5, -np.inf).astype(np.float32),
        "all equal": np.full(n, 0.25, dtype=np.float32),
        "clusters of near-copies": rng.permutation(
            np.repeat(rng.normal(0.2, 0.1, n // 96), 96) + rng.normal(0, 1e-4, n)
        ).astype(np.float32),
    }


@pytest.mark.parametrize("shape", list(_large_score_arrays()))
def test_top_k_of_a_large_array_equals_a_full_sort(shape: str) -> None:
    """From SAMPLED_CUT_MIN_ENTRIES on, top_k first cuts at a threshold read off a strided
    sample: the answer is the full sort's (ties to the lower slot), whatever the order of the
    scores, and with slots naming the entries."""
    scores = _large_score_arrays()[shape]
    names = np.random.default_rng(3).permutation(len(scores) * 2)[: len(scores)].astype(np.int64)
    for slots in (None, names):
        reference = sorted_top_k(scores, len(scores), slots, False)
        for k in (1, 10, 200, 5_000, len(scores) // 2 + 1):
            got, values = top_k(scores, k, slots=slots)
            assert got.tolist() == reference[:k], (shape, k)
            by_name = dict(zip((np.arange(len(scores)) if slots is None else slots).tolist(), scores.tolist(), strict=True))
            np.testing.assert_array_equal(values, np.array([by_name[s] for s in got.tolist()], dtype=np.float32))


def test_sampled_cut_keeps_the_top_k_and_cuts_most_of_the_array() -> None:
    """The cut is taken (it is what makes a 100k top-k cheap) and loses none of the top k."""
    scores = _large_score_arrays()["cosines"]
    for k in (10, 200):
        passed = _sampled_cut(scores, k)
        assert passed is not None
        assert k <= len(passed) <= k + 40 * SAMPLE_STRIDE
        assert set(sorted_top_k(scores, k, None, False)) <= set(passed.tolist())
    assert _sampled_cut(_large_score_arrays()["all equal"], 10) is None  # nothing to cut: the plain path
    # The best 30 scores all on sampled positions: the first cut (sample rank 1 + 8 for k = 10)
    # keeps only 9 entries; the deeper one keeps them all and some more.
    lopsided = np.random.default_rng(2).random(3 * SAMPLED_CUT_MIN_ENTRIES).astype(np.float32) * 0.5
    lopsided[np.arange(30) * SAMPLE_STRIDE] = np.linspace(0.9, 0.99, 30)
    assert np.count_nonzero(lopsided >= np.sort(lopsided[::SAMPLE_STRIDE])[-9]) < 10
    passed = _sampled_cut(lopsided, 10)
    assert passed is not None and set(sorted_top_k(lopsided, 10, None, False)) <= set(passed.tolist())


def test_top_k_over_postings_names_entries_by_their_slots() -> None:
    """One-term BM25 scores come postings-shaped: entry i is slot `slots[i]`, and a dead posting
    scores exactly 0 (never returned when positive_only)."""
    rng = np.random.default_rng(5)
    slots = rng.permutation(20_000)[:3_000].astype(np.int64)
    scores = np.where(rng.random(3_000) < 0.3, 0.0, rng.integers(1, 6, 3_000) / 5.0)
    for k in (1, 7, 50, 3_000):
        got, _ = top_k(scores, k, slots=slots, positive_only=True)
        assert got.tolist() == sorted_top_k(scores, k, slots, True)
