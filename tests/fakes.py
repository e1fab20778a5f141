"""Test doubles for engram's tests (never imported by the package).

`FakeEmbedder`: a deterministic, model-free embedder for fast unit tests. Pass it to
``MemoryService(embedder=FakeEmbedder())`` in process. A subprocess (a daemon, an MCP server)
that must run on it is started through `launcher_command`, which installs the fake with
`install()` before running the real entry point: production code has no switch for it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from functools import lru_cache
from hashlib import blake2b
from pathlib import Path

import numpy as np

from engram_mcp.index import embeddings
from engram_mcp.index.embeddings import DEFAULT_DIM, Embedder, _normalise

#: The fake's model name: records it embedded are tagged with it, so a real model re-embeds them.
FAKE_MODEL = "fake-hash-384"
REPO = Path(__file__).resolve().parents[1]


_SUFFIXES = (
    "ational",
    "ization",
    "fulness",
    "ousness",
    "iveness",
    "ingly",
    "ement",
    "ments",
    "ment",
    "ness",
    "ings",
    "edly",
    "ies",
    "ing",
    "ied",
    "ers",
    "est",
    "ly",
    "ed",
    "es",
    "er",
    "s",
)


def _stem(word: str) -> str:
    """A deliberately crude suffix stripper: enough for "meetings" ~ "meeting" in fake vectors."""
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            return word[: -len(suf)]
    return word


@lru_cache(maxsize=65536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """Stable (process-independent) bucket and sign of a feature: blake2b, not ``hash()``."""
    h = int.from_bytes(blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class FakeEmbedder:
    """Deterministic hashed bag of stemmed words + char trigrams; for fast unit tests only.

    Texts sharing words score high, identical texts identically, unrelated texts near 0 (signed
    hashing keeps collisions from adding a positive bias). No model, no I/O, microseconds per text.
    """

    _WORD_WEIGHT = 1.0
    _TRIGRAM_WEIGHT = 0.35

    def __init__(self, dim: int = DEFAULT_DIM, model_name: str = FAKE_MODEL) -> None:
        self.dim = dim
        self.model_name = model_name
        self.loaded = True

    def load(self) -> None:
        """Nothing to load; present so callers can treat every embedder alike."""

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        words = [_stem(w) for w in re.findall(r"[^\W_]+", text.lower())]
        if not words:
            idx, sign = _bucket("\x00empty", self.dim)
            v[idx] = sign
            return v
        for w in words:
            idx, sign = _bucket("w:" + w, self.dim)
            v[idx] += sign * self._WORD_WEIGHT
            padded = f"#{w}#"
            for i in range(len(padded) - 2):
                idx, sign = _bucket("t:" + padded[i : i + 3], self.dim)
                v[idx] += sign * self._TRIGRAM_WEIGHT
        return _normalise(v)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])


def _fake_make_embedder(model_name: str, *, model_path: str | None = None, cache_dir: str | None = None) -> Embedder:
    """`embeddings.make_embedder`'s signature, answering a `FakeEmbedder` whatever is asked."""
    return FakeEmbedder()


def install() -> None:
    """Make every embedder this process creates from now on a `FakeEmbedder`.

    Replaces `make_embedder` in the embeddings module and in every already-imported engram module
    that imported it by name, so it holds whichever module builds the service's embedder.
    """
    original = embeddings.make_embedder
    for name, module in list(sys.modules.items()):
        if (name == "engram_mcp" or name.startswith("engram_mcp.")) and getattr(
            module, "make_embedder", None
        ) is original:
            module.make_embedder = _fake_make_embedder  # type: ignore[attr-defined]


def launcher_command(module: str, *args: str) -> list[str]:
    """argv running ``python -m <module> <args>`` with the fake embedder installed first.

    The module runs as ``__main__`` (``runpy``), exactly as ``python -m`` would run it.
    """
    code = (
        "import sys, runpy; sys.path.insert(0, sys.argv.pop(1)); import tests.fakes as f; f.install(); "
        "mod = sys.argv.pop(1); sys.argv[0] = mod; runpy.run_module(mod, run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-c", code, str(REPO), module, *args]
