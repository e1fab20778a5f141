"""The embedder engram runs, from the user's config.

One definition for the service (`access.ScopeAccess.embedder`) and for the daemon, which
builds the embedder and starts loading its model before it imports the rest of the service:
the model load (mostly inside onnxruntime, which leaves the interpreter lock) then runs on
one core while the imports run on the other. This module imports only config and the
embeddings module, so that start stays early.
"""

from __future__ import annotations

from pathlib import Path

from engram_mcp.core.config import Config
from engram_mcp.index.embeddings import DEFAULT_MODEL, Embedder, make_embedder


def configured_embedder(user_dir: Path, cfg: Config | None) -> Embedder:
    """The embedder the config names (not loaded yet); the built-in model without a config.
    Models are cached under the user directory unless the config says where."""
    if cfg is None:
        return make_embedder(DEFAULT_MODEL, cache_dir=str(user_dir / "models"))
    return make_embedder(
        cfg.embedding_model,
        model_path=cfg.embedding_model_path,
        cache_dir=cfg.embedding_cache_dir or str(user_dir / "models"),
    )
