"""Micro-benchmark of the in-memory indexes (engram_mcp/index/) at 1k / 10k / 100k synthetic memories.

Why: the recall budget (p95 <= 15 ms at 10k, <= 30 ms at 100k, including ~3 ms query embedding and a
DB fetch) and the store budget (<= 20 ms) leave the in-memory indexes a few milliseconds; this
measures what they actually take on this machine, and how long a startup rebuild takes.

Corpus: short sentences over a 50k pseudo-word vocabulary with Zipf(1.07) word frequencies, ~40%
English stop words mixed in, ~3% camelCase identifiers; vectors are random unit 384-d float32.

Run: .venv/bin/python bench/micro_search_index.py [--sizes 1000,10000,100000] [--queries 200]
Writes bench/results/micro_search_index.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engram_mcp.index import arrays  # noqa: E402
from engram_mcp.index import tokenizer as tok  # noqa: E402
from engram_mcp.index.bm25 import BM25Index  # noqa: E402
from engram_mcp.index.tokenizer import tokenize  # noqa: E402
from engram_mcp.index.vectors import VectorIndex  # noqa: E402

RESULTS_PATH = ROOT / "bench" / "results" / "micro_search_index.json"
DIM = 384
VOCAB_SIZE = 50_000
ZIPF_EXPONENT = 1.07
SENTENCE_WORDS_MIN, SENTENCE_WORDS_MAX = 8, 30
STOP_WORD_PROBABILITY = 0.4
IDENTIFIER_PROBABILITY = 0.03
TOP_K = 10
SINGLE_SET_OPS = 300
SEED = 20261122

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["qu", "th", "sh", "ch", "ing"]
_STOP = sorted(tok.ENGLISH_STOP_WORDS)


# ---------------------------------------------------------------------------------------------
# synthetic data
# ---------------------------------------------------------------------------------------------


def make_vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """Distinct pronounceable pseudo-words, 2-4 syllables (so stemming has real work to do)."""
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(2, 5))
        word = "".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), size=n))
        if word not in tok.ENGLISH_STOP_WORDS:
            words[word] = None
    return list(words)


def zipf_weights(size: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1) ** ZIPF_EXPONENT
    return weights / weights.sum()


def make_sentences(rng: np.random.Generator, vocab: list[str], n: int) -> list[str]:
    """n sentences; content words drawn by Zipf rank, stop words and identifiers sprinkled in."""
    lengths = rng.integers(SENTENCE_WORDS_MIN, SENTENCE_WORDS_MAX + 1, size=n)
    total = int(lengths.sum())
    ranks = rng.choice(len(vocab), size=total, p=zipf_weights(len(vocab)))
    kind = rng.random(total)
    stop_pick = rng.integers(0, len(_STOP), size=total)
    partner = rng.choice(len(vocab), size=total, p=zipf_weights(len(vocab)))
    words: list[str] = []
    for i in range(total):
        if kind[i] < STOP_WORD_PROBABILITY:
            words.append(_STOP[stop_pick[i]])
        elif kind[i] < STOP_WORD_PROBABILITY + IDENTIFIER_PROBABILITY:
            words.append(vocab[ranks[i]] + vocab[partner[i]].capitalize())
        else:
            words.append(vocab[ranks[i]])
    out, pos = [], 0
    for length in lengths.tolist():
        sentence = " ".join(words[pos : pos + length])
        out.append(sentence[0].upper() + sentence[1:] + ".")
        pos += length
    return out


def random_unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    mat = rng.standard_normal((n, DIM), dtype=np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    return mat


# ---------------------------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------------------------


def percentiles_ms(samples_ns: list[int]) -> dict[str, float]:
    arr = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return {
        "p50_ms": round(float(np.percentile(arr, 50)), 4),
        "p95_ms": round(float(np.percentile(arr, 95)), 4),
        "max_ms": round(float(arr.max()), 4),
        "n": len(samples_ns),
    }


def time_each(items: list[Any], fn: Callable[[Any], object], warmup: int = 3) -> dict[str, float]:
    for item in items[:warmup]:
        fn(item)
    samples: list[int] = []
    for item in items:
        start = time.perf_counter_ns()
        fn(item)
        samples.append(time.perf_counter_ns() - start)
    return percentiles_ms(samples)


# ---------------------------------------------------------------------------------------------
# one corpus size
# ---------------------------------------------------------------------------------------------


def pick_query_words(index: BM25Index, vocab: list[str], rng: np.random.Generator, n: int) -> dict[str, list[str]]:
    """Rare (df 1-5), common (the 30 most frequent words) and multi-word (4-6 Zipf words) queries."""
    dfs = np.array([index.doc_freq(tokenize(w)[0]) if tokenize(w) else 0 for w in vocab[:20_000]])
    rare_pool = [vocab[i] for i in np.flatnonzero((dfs >= 1) & (dfs <= 5))]
    common_pool = [vocab[i] for i in np.argsort(-dfs)[:30]]
    weights = zipf_weights(len(vocab))
    multi = [
        " ".join(vocab[r] for r in rng.choice(len(vocab), size=int(rng.integers(4, 7)), p=weights))
        for _ in range(n)
    ]
    return {
        "rare": [rare_pool[i] for i in rng.integers(0, len(rare_pool), size=n)] if rare_pool else [],
        "common": [common_pool[i] for i in rng.integers(0, len(common_pool), size=n)],
        "multi": multi,
    }


def mean_df(index: BM25Index, queries: list[str]) -> float:
    dfs = [index.doc_freq(t) for q in queries for t in dict.fromkeys(tokenize(q))]
    return round(float(np.mean(dfs)), 1) if dfs else 0.0


def bench_size(n: int, vocab: list[str], n_queries: int) -> dict[str, Any]:
    rng = np.random.default_rng(SEED + n)
    texts = make_sentences(rng, vocab, n + SINGLE_SET_OPS)
    vectors = random_unit_vectors(rng, n + SINGLE_SET_OPS)
    base_texts, extra_texts = texts[:n], texts[n:]
    slots = np.arange(n)
    result: dict[str, Any] = {"docs": n}

    # bulk build (cold token cache, as at process start)
    tok._token_cache.clear()
    start = time.perf_counter()
    bm25 = BM25Index()
    bm25.set_many(slots, base_texts)
    result["bm25_bulk_build_s"] = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    vec = VectorIndex(DIM)
    vec.set_many(slots, vectors[:n])
    result["vector_bulk_build_s"] = round(time.perf_counter() - start, 3)
    tok._token_cache.clear()
    start = time.perf_counter()
    for t in base_texts:
        tokenize(t)
    result["tokenize_all_cold_s"] = round(time.perf_counter() - start, 3)
    result["avg_doc_len_terms"] = round(bm25.avg_doc_len, 2)
    result["vocab_terms"] = bm25.vocab_size

    # one-by-one build for comparison (only where it is quick enough to bother)
    if n <= 10_000:
        start = time.perf_counter()
        single = BM25Index()
        for slot, text in zip(slots.tolist(), base_texts):
            single.set(slot, text)
        result["bm25_one_by_one_build_s"] = round(time.perf_counter() - start, 3)
        del single

    # memory
    result["vector_bytes"] = vec.nbytes
    result["bm25_bytes_estimate"] = bm25.nbytes
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    traced = BM25Index()
    traced.set_many(slots, base_texts)
    result["bm25_bytes_traced"] = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del traced

    # single writes on the built index: new documents, then replacements of existing ones
    new_slots = list(range(n, n + SINGLE_SET_OPS))
    result["bm25_set_new"] = time_each(
        list(zip(new_slots, extra_texts)), lambda item: bm25.set(item[0], item[1]), warmup=0
    )
    replace = rng.integers(0, n, size=SINGLE_SET_OPS).tolist()
    result["bm25_set_replace"] = time_each(
        list(zip(replace, extra_texts)), lambda item: bm25.set(item[0], item[1]), warmup=0
    )
    result["bm25_clear"] = time_each(
        rng.integers(0, n, size=SINGLE_SET_OPS).tolist(), lambda slot: bm25.clear(slot), warmup=0
    )
    result["vector_set"] = time_each(
        list(zip(new_slots, vectors[n:])), lambda item: vec.set(item[0], item[1]), warmup=0
    )

    # searches
    queries = random_unit_vectors(rng, n_queries)
    total = n + SINGLE_SET_OPS
    half_mask = rng.random(total) < 0.5
    sparse_mask = rng.random(total) < 0.05
    result["vector_search"] = time_each(list(queries), lambda q: vec.search(q, TOP_K))
    matrix = vectors[:total]  # reference: one (multi-threaded) BLAS call, what the index avoids
    result["vector_search_plain_blas"] = time_each(
        list(queries), lambda q: np.argpartition(-(matrix @ q), TOP_K)[:TOP_K]
    )
    result["vector_search_mask50"] = time_each(list(queries), lambda q: vec.search(q, TOP_K, half_mask))
    result["vector_search_mask5"] = time_each(list(queries), lambda q: vec.search(q, TOP_K, sparse_mask))
    result["vector_similarities_100"] = time_each(
        list(queries), lambda q: vec.similarities(q, rng.integers(0, n, size=100))
    )
    # What a hybrid recall does per scope: the vector top-100 and the cosine of 100 more
    # candidates (BM25's), looked up in the scan instead of a second gather.
    result["vector_top100_plus_lookup_100"] = time_each(
        list(queries),
        lambda q: vec.similarities(q, rng.integers(0, n, size=100), scanned=vec.search_scored(q, 100)[2]),
    )

    words = pick_query_words(bm25, vocab, rng, n_queries)
    for kind in ("rare", "common", "multi"):
        if not words[kind]:
            continue
        result[f"bm25_search_{kind}"] = time_each(words[kind], lambda q: bm25.search(q, TOP_K))
        result[f"bm25_search_{kind}"]["mean_df"] = mean_df(bm25, words[kind])
    result["bm25_search_multi_mask50"] = time_each(words["multi"], lambda q: bm25.search(q, TOP_K, half_mask))
    result["bm25_scores_for_100_multi"] = time_each(
        words["multi"], lambda q: bm25.scores_for(q, rng.integers(0, n, size=100))
    )
    result["bm25_top100_plus_lookup_100_multi"] = time_each(
        words["multi"],
        lambda q: bm25.scores_for(q, rng.integers(0, n, size=100), dense=bm25.search_scored(q, 100)[2]),
    )
    sentences = make_sentences(rng, vocab, n_queries)
    result["tokenize_sentence_warm"] = time_each(sentences, tokenize)
    result.update(bench_top_k(vec, rng, n_queries))
    return result


def bench_top_k(vec: VectorIndex, rng: np.random.Generator, n_queries: int) -> dict[str, Any]:
    """The int8 pass's candidate cut (top 200 of every row's cosine) by `arrays.top_k`, and the
    same with its sampled cut switched off (one partition of the whole array), query by query
    alternating so both see the same machine."""
    cosines = [vec.similarities(q, np.arange(len(vec))) for q in random_unit_vectors(rng, n_queries)]
    sampled: list[int] = []
    whole: list[int] = []
    plain_min = arrays.SAMPLED_CUT_MIN_ENTRIES
    for i, scores in enumerate(cosines):
        for run in ((sampled, whole) if i % 2 else (whole, sampled)):
            arrays.SAMPLED_CUT_MIN_ENTRIES = plain_min if run is sampled else 1 << 62
            start = time.perf_counter_ns()
            arrays.top_k(scores, 2 * 100)
            run.append(time.perf_counter_ns() - start)
    arrays.SAMPLED_CUT_MIN_ENTRIES = plain_min
    return {"top_k_200_sampled_cut": percentiles_ms(sampled), "top_k_200_whole_array": percentiles_ms(whole)}


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------

TABLE_ROWS = [
    ("bm25 bulk build (s)", "bm25_bulk_build_s", None),
    ("  of which tokenize, cold (s)", "tokenize_all_cold_s", None),
    ("bm25 one-by-one build (s)", "bm25_one_by_one_build_s", None),
    ("vector bulk build (s)", "vector_bulk_build_s", None),
    ("bm25 set new doc", "bm25_set_new", "ms"),
    ("bm25 set replace doc", "bm25_set_replace", "ms"),
    ("bm25 clear", "bm25_clear", "ms"),
    ("vector set", "vector_set", "ms"),
    ("vector top-10", "vector_search", "ms"),
    ("  reference: plain m @ q + argpartition", "vector_search_plain_blas", "ms"),
    ("vector top-10, mask 50%", "vector_search_mask50", "ms"),
    ("vector top-10, mask 5%", "vector_search_mask5", "ms"),
    ("vector similarities x100", "vector_similarities_100", "ms"),
    ("vector top-100 + 100 looked up (hybrid)", "vector_top100_plus_lookup_100", "ms"),
    ("bm25 top-10 rare word", "bm25_search_rare", "ms"),
    ("bm25 top-10 common word", "bm25_search_common", "ms"),
    ("bm25 top-10 4-6 words", "bm25_search_multi", "ms"),
    ("bm25 top-10 4-6 words, mask 50%", "bm25_search_multi_mask50", "ms"),
    ("bm25 scores_for x100", "bm25_scores_for_100_multi", "ms"),
    ("bm25 top-100 + 100 looked up (hybrid)", "bm25_top100_plus_lookup_100_multi", "ms"),
    ("tokenize sentence (warm)", "tokenize_sentence_warm", "ms"),
    ("top-200 of every row's score (sampled cut)", "top_k_200_sampled_cut", "ms"),
    ("  the same, one partition of the whole array", "top_k_200_whole_array", "ms"),
    ("vector memory (MB)", "vector_bytes", "mb"),
    ("bm25 memory, estimate (MB)", "bm25_bytes_estimate", "mb"),
    ("bm25 memory, traced (MB)", "bm25_bytes_traced", "mb"),
]


def format_cell(value: Any, unit: str | None) -> str:
    if value is None:
        return "-"
    if unit == "ms":
        return f"{value['p50_ms']:.3f} / {value['p95_ms']:.3f}"
    if unit == "mb":
        return f"{value / 1e6:.1f}"
    return f"{value}"


def print_table(results: list[dict[str, Any]]) -> None:
    header = ["metric (ms: p50 / p95)"] + [f"{r['docs']:,} docs" for r in results]
    rows = [header] + [
        [label] + [format_cell(r.get(key), unit) for r in results] for label, key, unit in TABLE_ROWS
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(widths[j]) if j == 0 else cell.rjust(widths[j]) for j, cell in enumerate(row)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for r in results:
        dfs = {k: r[f"bm25_search_{k}"]["mean_df"] for k in ("rare", "common", "multi") if f"bm25_search_{k}" in r}
        print(f"{r['docs']:,} docs: mean df of query terms {dfs}, avg doc len {r['avg_doc_len_terms']} terms, "
              f"{r['vocab_terms']:,} terms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS_PATH)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load_at_start = round(os.getloadavg()[0], 2)  # other processes share the 2 cores: record it
    vocab = make_vocabulary(np.random.default_rng(SEED), VOCAB_SIZE)
    results = []
    for n in sizes:
        print(f"benchmarking {n:,} docs ...", file=sys.stderr, flush=True)
        results.append(bench_size(n, vocab, args.queries))
    report = {
        "benchmark": "micro_search_index",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_start": load_at_start,
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "config": {
            "dim": DIM,
            "vocab_size": VOCAB_SIZE,
            "zipf_exponent": ZIPF_EXPONENT,
            "sentence_words": [SENTENCE_WORDS_MIN, SENTENCE_WORDS_MAX],
            "top_k": TOP_K,
            "queries": args.queries,
            "single_set_ops": SINGLE_SET_OPS,
        },
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print_table(results)
    print(f"\nwritten {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
