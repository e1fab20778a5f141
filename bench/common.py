"""Shared helpers for engram's benchmarks: paths, timing, result directories, plain BM25.

Datasets with non-commercial licences (LoCoMo) are read from the shared checkout next to the
repository (`../shared/bench/...`) and never copied into it; result files hold ids and metrics only.
"""

from __future__ import annotations

import json
import platform
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"
RESULTS_DIR = REPO_ROOT / "bench" / "results"

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def utc_stamp() -> str:
    """Directory-safe UTC timestamp, e.g. 20261105T142233Z."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def percentile_ms(seconds: Sequence[float], q: float) -> float | None:
    if not seconds:
        return None
    return round(float(np.percentile(np.asarray(seconds) * 1000.0, q)), 3)


def latency_summary(seconds: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(seconds),
        "p50_ms": percentile_ms(seconds, 50),
        "p95_ms": percentile_ms(seconds, 95),
        "mean_ms": round(float(np.mean(seconds)) * 1000.0, 3) if seconds else None,
    }


def machine_info() -> dict[str, Any]:
    import os

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
    }


def pyplot() -> Any | None:
    """matplotlib's pyplot on the file-only Agg backend, or None when matplotlib (the `bench`
    extra) is not installed: a benchmark still writes its JSON and markdown without it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file, blank lines skipped."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------------------- plain BM25

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def plain_tokens(text: str) -> list[str]:
    """Lowercase, split on non-alphanumerics; no stop words, no stemming (the README's floor)."""
    return [t for t in _NON_ALNUM.split(text.lower()) if t]


class PlainBM25:
    """Okapi BM25 over a fixed corpus in numpy: k1 1.5, b 0.75, Lucene idf (never negative).

    Dense doc x term tf matrix: a LoCoMo conversation is ~600 docs x ~3k terms, so one query is a
    column gather and a sum. Deliberately independent of engram's own BM25Index so the floor it
    measures does not move when engram's tokenizer changes.
    """

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75,
                 tokenizer=plain_tokens) -> None:
        self.tokenizer = tokenizer
        toks = [tokenizer(d) for d in docs]
        vocab: dict[str, int] = {}
        for ts in toks:
            for t in ts:
                vocab.setdefault(t, len(vocab))
        self.vocab = vocab
        n = len(docs)
        tf = np.zeros((n, max(len(vocab), 1)), dtype=np.float64)
        for i, ts in enumerate(toks):
            for t in ts:
                tf[i, vocab[t]] += 1.0
        dl = tf.sum(axis=1)
        avgdl = float(dl.mean()) if n else 1.0
        df = (tf > 0).sum(axis=0)
        self.idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        denom = tf + k1 * (1.0 - b + b * dl[:, None] / max(avgdl, 1e-9))
        self.weights = tf * (k1 + 1.0) / np.where(denom > 0, denom, 1.0)  # per (doc, term), sans idf
        self.n = n

    def scores(self, query: str) -> np.ndarray:
        ids = sorted({self.vocab[t] for t in self.tokenizer(query) if t in self.vocab})
        if not ids:
            return np.zeros(self.n)
        return self.weights[:, ids] @ self.idf[ids]

    def rank(self, query: str, k: int) -> list[int]:
        """Top-k doc indices, best first; ties by document order; only positive scores."""
        s = self.scores(query)
        order = np.lexsort((np.arange(self.n), -s))
        return [int(i) for i in order[:k] if s[i] > 0]


def rank_desc(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first, ties by index (deterministic)."""
    order = np.lexsort((np.arange(scores.size), -scores))
    return order[:k]
