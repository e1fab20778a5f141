"""Embeddings: the built-in offline model, the failure messages, the test fake (tests/fakes.py).

Tests marked ``slow`` load the real int8 all-MiniLM-L6-v2 (0.2 s) or spawn processes. The real
model is loaded once per module into a private cache directory.
"""

from __future__ import annotations

import json

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engram_mcp.index import embeddings as emb
from engram_mcp.index.embeddings import (
    DEFAULT_DIM,
    DEFAULT_MODEL,
    EmbeddingsUnavailable,
    Embedder,
    FastEmbedEmbedder,
    assemble_builtin_model,
    make_embedder,
)
from tests.fakes import FAKE_MODEL, FakeEmbedder, launcher_command

ASSEMBLY = "engram-all-MiniLM-L6-v2-int8"
FILES = {"model.onnx", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Make every DNS lookup and socket connect fail loudly; returns the list of attempts."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled by test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> FastEmbedEmbedder:
    e = FastEmbedEmbedder(cache_dir=str(tmp_path_factory.mktemp("models")))
    e.load()
    return e


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# --------------------------------------------------------------------------- real model


@pytest.mark.slow
def test_the_builtin_model_assembles_and_loads_with_the_network_unplugged(tmp_path: Path, no_network: list[object]) -> None:
    e = FastEmbedEmbedder(cache_dir=str(tmp_path))
    assert not e.loaded and not (tmp_path / ASSEMBLY).exists()  # constructing is free
    e.load()
    assert e.loaded
    assert no_network == []  # not even attempted
    names = {p.name for p in (tmp_path / ASSEMBLY).iterdir()}
    optimized = {n for n in names if n.startswith("model.ort-")}  # the saved optimised graph, its weights, its note
    assert names - optimized == FILES and len(optimized) == 3
    v = e.embed_query("offline works")
    assert v.shape == (DEFAULT_DIM,)


@pytest.mark.slow
def test_the_builtin_model_gives_384_dim_float32_unit_vectors(model: FastEmbedEmbedder) -> None:
    assert isinstance(model, Embedder)
    assert (model.model_name, model.dim) == (DEFAULT_MODEL, 384)
    q = model.embed_query("Caroline went to the LGBTQ support group yesterday")
    assert q.dtype == np.float32 and q.shape == (384,)
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5
    d = model.embed_documents(["one", "two words", "a third, longer sentence"])
    assert d.dtype == np.float32 and d.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-5)


# Measured with the int8 model: 0.866, 0.919, 0.822 for the similar pairs; -0.081, -0.048, 0.020
# for the unrelated ones.
SIMILAR = [
    ("I went hiking in the mountains last weekend", "Last Saturday I took a hike up a mountain trail"),
    ("Caroline is attending a LGBTQ support group on Tuesday", "Caroline goes to an LGBTQ support meeting every week"),
    ("What is the capital of France?", "Paris is the capital city of France"),
]
UNRELATED = [
    ("I went hiking in the mountains last weekend", "The quarterly tax report is due to the accountant"),
    ("My dog loves playing fetch in the park", "Compile the kernel with the new GCC flags"),
    ("She painted a sunset over the lake", "The database index needs rebuilding"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("a", "b"), SIMILAR)
def test_paraphrases_score_above_0_6(model: FastEmbedEmbedder, a: str, b: str) -> None:
    assert cos(model.embed_query(a), model.embed_query(b)) > 0.6


@pytest.mark.slow
@pytest.mark.parametrize(("a", "b"), UNRELATED)
def test_unrelated_sentences_score_below_0_3(model: FastEmbedEmbedder, a: str, b: str) -> None:
    assert cos(model.embed_query(a), model.embed_query(b)) < 0.3


@pytest.mark.slow
def test_embed_documents_keeps_input_order_for_mixed_lengths_and_matches_embed_query(model: FastEmbedEmbedder) -> None:
    texts = [
        "A much longer sentence about going camping with the kids near the lake, roasting marshmallows "
        "and telling stories until late at night while the stars came out one by one.",
        "ok",
        "Melanie signed up for a pottery class.",
        "",
        "Tuesday",
        "We talked about adoption agencies and what the interviews are like.",
    ] * 12  # 72 texts: more than one batch of 64, so sorting crosses batches
    docs = model.embed_documents(texts)
    unsorted = model.embed_documents(texts, sort_by_length=False)
    assert docs.shape == (len(texts), 384)
    for i, t in enumerate(texts[:6]):
        q = model.embed_query(t)
        np.testing.assert_allclose(docs[i], q, atol=1e-4)
        np.testing.assert_allclose(docs[i + 6 * 11], q, atol=1e-4)
    np.testing.assert_allclose(docs, unsorted, atol=1e-4)


@pytest.mark.slow
def test_an_empty_string_embeds_to_a_unit_vector_and_an_empty_list_to_zero_rows(model: FastEmbedEmbedder) -> None:
    v = model.embed_query("")
    assert v.shape == (384,) and abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert model.embed_documents([]).shape == (0, 384)
    assert model.embed_documents([""]).shape == (1, 384)


@pytest.mark.slow
def test_text_past_256_word_pieces_does_not_change_the_vector(model: FastEmbedEmbedder) -> None:
    # Truncated where sentence-transformers truncates this model; 512 cost twice the time.
    long = " ".join(["Caroline talked about the adoption agency interview and her painting class"] * 30)
    assert len(long.split()) > 256
    a = model.embed_query(long)
    b = model.embed_query(long + " and then something completely different about tax returns")
    np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.slow
def test_concurrent_first_use_from_four_threads_loads_the_model_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []
    real_open = emb._open_onnx_text_model

    def counting_open(**kwargs: object) -> object:
        calls.append(kwargs)
        time.sleep(0.2)  # widen the race window
        return real_open(**kwargs)

    monkeypatch.setattr(emb, "_open_onnx_text_model", counting_open)
    e = FastEmbedEmbedder(cache_dir=str(tmp_path))
    barrier = threading.Barrier(4)
    results: list[np.ndarray] = [np.empty(0)] * 4
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            barrier.wait()
            results[i] = e.embed_query("the same question from four threads")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    by_threads = [c["threads"] for c in calls]
    assert by_threads.count(1) == 1  # the query session, once
    assert by_threads.count(2) <= 1  # the 2-thread session, used for queries while a core is idle
    assert all(c["enable_cpu_mem_arena"] is (c["threads"] == 1) for c in calls)  # no arena for bulk
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-5)


@pytest.mark.slow
def test_concurrent_processes_assemble_one_valid_model_directory(tmp_path: Path) -> None:
    code = (
        "import sys; from engram_mcp.index.embeddings import assemble_builtin_model as a; "
        "print(a(sys.argv[1]))"
    )
    root = Path(__file__).resolve().parents[1]
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=root, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4
    assert set(outs) == {str(tmp_path / ASSEMBLY)}
    assert [p.name for p in tmp_path.iterdir()] == [ASSEMBLY]  # no temp or stale dirs left
    assert {p.name for p in (tmp_path / ASSEMBLY).iterdir()} == FILES


def test_a_broken_assembly_is_rebuilt(tmp_path: Path) -> None:
    target = assemble_builtin_model(tmp_path)
    (target / "model.onnx").unlink()
    (target / "model.onnx").write_bytes(b"truncated")
    assert assemble_builtin_model(tmp_path) == target
    assert (target / "model.onnx").stat().st_size > 20_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == [ASSEMBLY]


# --------------------------------------------------------------------------- direct path = fastembed

#: Every kind of text a store holds, in several batches (16 per call, sorted by length or not) that
#: mix lengths, so padding is exercised as ``embed_documents`` pads.
VARIED_TEXTS = [
    "hello",
    "",
    "   \n\t  ",
    "def square(x: int) -> int:\n    return x ** 2  # the usual\n",
    "naïve café, Zürich, 日本語のテキスト, emoji 🚀🔥👩‍💻 and ∑ x² ≠ ∞",
    " ".join(["Caroline talked about the adoption agency interview and her painting class"] * 30),
    "SELECT * FROM memory WHERE scope = 'project' AND deleted = false ORDER BY created DESC LIMIT 10;",
    "the user prefers pnpm over npm in this repository",
    *(f"turn {i}: " + " ".join(["we decided to keep the daemon", "and the retry budget"][i % 2] for _ in range(i % 23)) for i in range(40)),
]


def _both_paths(cache_dir: Path, **kwargs: object) -> tuple[FastEmbedEmbedder, FastEmbedEmbedder]:
    direct = FastEmbedEmbedder(cache_dir=str(cache_dir), **kwargs)  # type: ignore[arg-type]
    via_fastembed = FastEmbedEmbedder(cache_dir=str(cache_dir), direct=False, **kwargs)  # type: ignore[arg-type]
    return direct, via_fastembed


@pytest.mark.slow
@pytest.mark.parametrize("idle", [False, True], ids=["query-session", "bulk-session"])
def test_the_direct_path_gives_the_vectors_fastembed_gives_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle: bool
) -> None:
    # Stores hold vectors written through fastembed: the direct path must reproduce them.
    monkeypatch.setattr(emb, "_idle_core", lambda: idle)
    direct, via_fastembed = _both_paths(tmp_path)
    assert len(direct.embed_documents([VARIED_TEXTS[5]])) == 1
    assert len(VARIED_TEXTS) > 2 * direct.batch_size  # several batches of mixed lengths
    assert len(direct._model.tokenizer.encode(VARIED_TEXTS[5]).ids) == emb.MAX_TOKENS  # truncated
    queries_direct = np.stack([direct.embed_query(t) for t in VARIED_TEXTS])
    queries_fastembed = np.stack([via_fastembed.embed_query(t) for t in VARIED_TEXTS])
    np.testing.assert_array_equal(queries_direct, queries_fastembed)
    for sort in (True, False):
        docs_direct = direct.embed_documents(VARIED_TEXTS, sort_by_length=sort)
        docs_fastembed = via_fastembed.embed_documents(VARIED_TEXTS, sort_by_length=sort)
        np.testing.assert_array_equal(docs_direct, docs_fastembed)
    session = direct._bulk_model if idle else direct._model
    assert isinstance(session, emb.OnnxTextModel)
    assert type(via_fastembed._model).__name__ == "TextEmbedding"


@pytest.mark.slow
def test_the_saved_optimised_graph_loads_without_the_optimisation_pass_and_gives_the_same_vectors(
    tmp_path: Path,
) -> None:
    first, via_fastembed = _both_paths(tmp_path, bulk_threads=None)
    want_q = np.stack([via_fastembed.embed_query(t) for t in VARIED_TEXTS])
    want_d = via_fastembed.embed_documents(VARIED_TEXTS)
    np.testing.assert_array_equal(np.stack([first.embed_query(t) for t in VARIED_TEXTS]), want_q)
    assert first._model.graph == "optimized now"
    model_dir = tmp_path / ASSEMBLY
    saved = sorted(p.name for p in model_dir.glob("model.ort-*"))
    assert sorted(n.rsplit(".", 1)[1] for n in saved) == ["data", "json", "onnx"] and not list(model_dir.glob(".*.tmp"))
    graph = next(model_dir.glob("model.ort-*.onnx"))
    assert graph.stat().st_size < 1_000_000, "the weights are in their own file, not in the graph"
    again = FastEmbedEmbedder(cache_dir=str(tmp_path), bulk_threads=None)
    np.testing.assert_array_equal(np.stack([again.embed_query(t) for t in VARIED_TEXTS]), want_q)
    np.testing.assert_array_equal(again.embed_documents(VARIED_TEXTS), want_d)
    assert again._model.graph == "optimized copy"


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage", "other-source", "weights-truncated", "weights-garbage", "weights-missing", "weights-elsewhere",
     "probe-missing"],
)
def test_a_damaged_or_stale_optimised_graph_is_not_used(tmp_path: Path, damage: str) -> None:
    FastEmbedEmbedder(cache_dir=str(tmp_path), bulk_threads=None).embed_query("build the copy")
    model_dir = tmp_path / ASSEMBLY
    graph = next(model_dir.glob("model.ort-*.onnx"))
    weights = next(model_dir.glob("model.ort-*.data"))
    note = graph.with_suffix(".json")
    if damage == "truncated":
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    elif damage == "garbage":
        graph.write_bytes(b"\x00not a model" * (graph.stat().st_size // 13) + b"\x00" * (graph.stat().st_size % 13))
    elif damage == "other-source":
        note.write_text(json.dumps({**json.loads(note.read_text()), "source": [1, 2]}))
    elif damage == "weights-truncated":
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    elif damage == "weights-garbage":  # same size, so only the load can tell
        weights.write_bytes(b"\xff" * weights.stat().st_size)
    elif damage == "weights-missing":
        weights.unlink()
    elif damage == "weights-elsewhere":  # the note names a file outside the model's directory
        note.write_text(json.dumps({**json.loads(note.read_text()), "data": "../" + weights.name}))
    else:  # a note without the probe vector (as an earlier engram wrote it)
        note.write_text(json.dumps({k: v for k, v in json.loads(note.read_text()).items() if k != "probe"}))
    e = FastEmbedEmbedder(cache_dir=str(tmp_path), bulk_threads=None)
    v = e.embed_query("a question")
    ref = FastEmbedEmbedder(cache_dir=str(tmp_path / "ref"), direct=False, bulk_threads=None)
    np.testing.assert_array_equal(v, ref.embed_query("a question"))
    # the bad copy served nothing: the source was loaded, saving a good copy again
    assert e._model.graph == "optimized now"
    after = FastEmbedEmbedder(cache_dir=str(tmp_path), bulk_threads=None)
    np.testing.assert_array_equal(after.embed_query("a question"), v)
    assert after._model.graph == "optimized copy"


@pytest.mark.slow
def test_a_copy_that_cannot_be_saved_still_leaves_the_model_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime raises when it cannot write the optimised copy (a full disk): the model loads
    without saving one, with the same vectors, and the next load tries to save again."""
    start = emb._start_optimized_copy

    def unwritable(model_dir: Path, options: object) -> object:
        pending = start(model_dir, options)
        assert pending is not None
        pending.tmp = tmp_path / "no-such-dir" / pending.tmp.name
        options.optimized_model_filepath = str(pending.tmp)  # type: ignore[attr-defined]
        return pending

    monkeypatch.setattr(emb, "_start_optimized_copy", unwritable)
    e = FastEmbedEmbedder(cache_dir=str(tmp_path), bulk_threads=None)
    v = e.embed_query("a question")
    assert e._model.graph == "source"
    assert not list((tmp_path / ASSEMBLY).glob("model.ort-*"))  # nothing half-saved is left
    monkeypatch.undo()
    again = FastEmbedEmbedder(cache_dir=str(tmp_path), bulk_threads=None)
    np.testing.assert_array_equal(again.embed_query("a question"), v)
    assert again._model.graph == "optimized now"


@pytest.mark.slow
def test_the_direct_path_reads_a_model_path_directory_like_fastembed(tmp_path: Path) -> None:
    d = tmp_path / "copy"
    d.mkdir()
    for f in FILES:
        (d / f).write_bytes((assemble_builtin_model(tmp_path / "cache") / f).read_bytes())
    direct, via_fastembed = _both_paths(tmp_path / "cache", model_path=str(d), bulk_threads=None)
    np.testing.assert_array_equal(direct.embed_documents(VARIED_TEXTS), via_fastembed.embed_documents(VARIED_TEXTS))
    np.testing.assert_array_equal(direct.embed_query("a question"), via_fastembed.embed_query("a question"))


@pytest.mark.slow
def test_loading_the_builtin_model_and_embedding_a_query_does_not_import_fastembed(tmp_path: Path) -> None:
    code = (
        "import sys; from engram_mcp.index.embeddings import FastEmbedEmbedder as E; "
        "v = E(cache_dir=sys.argv[1]).embed_query('a question'); "
        "print(v.shape[0], 'fastembed' in sys.modules, 'onnxruntime' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(DEFAULT_DIM), "False", "True"]


# --------------------------------------------------------------------------- failures


def test_a_missing_model_path_raises_embeddings_unavailable_naming_the_path_and_next_step(tmp_path: Path) -> None:
    bad = tmp_path / "nope"
    e = FastEmbedEmbedder(model_path=str(bad), cache_dir=str(tmp_path))
    with pytest.raises(EmbeddingsUnavailable) as info:
        e.embed_query("x")
    msg = str(info.value)
    assert str(bad) in msg and "does not exist" in msg and "engram doctor" in msg
    assert not e.loaded


def test_a_model_path_with_a_corrupt_onnx_file_raises_embeddings_unavailable(tmp_path: Path) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    for f in FILES - {"model.onnx"}:
        (d / f).write_bytes((emb._VENDORED_DIR / f).read_bytes())
    (d / "model.onnx").write_bytes(b"not an onnx model")
    with pytest.raises(EmbeddingsUnavailable, match="engram doctor"):
        FastEmbedEmbedder(model_path=str(d), cache_dir=str(tmp_path)).load()


def _model_dir_copy(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    for f in FILES:
        (d / f).write_bytes((assemble_builtin_model(tmp_path / "cache") / f).read_bytes())
    return d


def test_a_corrupt_tokenizer_json_raises_embeddings_unavailable(tmp_path: Path) -> None:
    d = _model_dir_copy(tmp_path)
    (d / "tokenizer.json").write_text('{"version": "1.0", "model": ')
    e = FastEmbedEmbedder(model_path=str(d), cache_dir=str(tmp_path / "cache"))
    with pytest.raises(EmbeddingsUnavailable, match="engram doctor") as info:
        e.embed_query("x")
    assert "Exception" in str(info.value) and not e.loaded


def test_a_tokenizer_config_without_a_length_limit_raises_embeddings_unavailable_naming_it(tmp_path: Path) -> None:
    d = _model_dir_copy(tmp_path)
    (d / "tokenizer_config.json").write_text('{"model_max_length": 1e30, "max_length": null}')
    with pytest.raises(EmbeddingsUnavailable, match="model_max_length") as info:
        FastEmbedEmbedder(model_path=str(d), cache_dir=str(tmp_path / "cache")).load()
    assert "tokenizer_config.json" in str(info.value)


@pytest.mark.parametrize("package", ["onnxruntime", "tokenizers"])
def test_a_missing_onnxruntime_or_tokenizers_raises_embeddings_unavailable_naming_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # find_spec() and import both fail on None
    e = FastEmbedEmbedder(cache_dir=str(tmp_path))
    with pytest.raises(EmbeddingsUnavailable, match=f"`{package}` is not installed") as info:
        e.embed_query("x")
    assert f"pip install {package}" in str(info.value) and not e.loaded


def test_a_model_path_without_tokenizer_files_says_which_are_missing(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"x")
    with pytest.raises(EmbeddingsUnavailable, match="tokenizer.json"):
        FastEmbedEmbedder(model_path=str(tmp_path), cache_dir=str(tmp_path)).load()


@pytest.mark.timeout(60)
def test_a_model_name_fastembed_does_not_know_fails_at_once(tmp_path: Path, no_network: list[object]) -> None:
    e = make_embedder("no-such-org/no-such-model", cache_dir=str(tmp_path))
    t = time.monotonic()
    with pytest.raises(EmbeddingsUnavailable, match="Unknown embedding model") as info:
        e.embed_query("x")
    assert time.monotonic() - t < 5
    assert DEFAULT_MODEL in str(info.value)


@pytest.mark.timeout(60)
def test_a_registry_model_not_in_the_cache_fails_quickly_when_offline(
    tmp_path: Path, no_network: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unbounded, fastembed retries with 3/9/27 s sleeps (~40 s measured) before giving up.
    for var in ("HF_HUB_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    e = make_embedder("BAAI/bge-small-en-v1.5", cache_dir=str(tmp_path))
    assert e.dim == 384  # known from fastembed's registry without loading
    t = time.monotonic()
    with pytest.raises(EmbeddingsUnavailable, match="unreachable") as info:
        e.load()
    assert time.monotonic() - t < 10
    assert DEFAULT_MODEL in str(info.value) and not e.loaded


def test_the_hub_probe_gives_up_on_a_hanging_dns_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: time.sleep(30))
    t = time.monotonic()
    assert emb._hub_reachable(timeout=0.3) is False
    assert time.monotonic() - t < 2


# --------------------------------------------------------------------------- factory


def test_make_embedder_is_lazy_and_defaults_the_cache_under_the_claude_dir() -> None:
    e = make_embedder(DEFAULT_MODEL)
    assert isinstance(e, FastEmbedEmbedder) and not e.loaded
    assert (e.model_name, e.dim) == (DEFAULT_MODEL, 384)
    assert e.cache_dir == os.path.expanduser("~/.claude/engram/models")


def test_make_embedder_has_no_test_switch_by_name_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake lives in tests/fakes.py: production always builds the real embedder."""
    monkeypatch.setenv("ENGRAM_TEST_FAKE_EMBEDDER", "1")  # the variable of the former switch
    for name in (FAKE_MODEL, DEFAULT_MODEL):
        assert isinstance(make_embedder(name), FastEmbedEmbedder)
    assert not hasattr(emb, "FakeEmbedder")


def test_installing_the_fake_makes_the_service_build_it(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tests.fakes.install` reaches the name the service builds its embedder with."""
    import tests.fakes as fakes
    from engram_mcp.services.service import MemoryService

    for name, module in list(sys.modules.items()):
        if name.startswith("engram_mcp") and getattr(module, "make_embedder", None) is emb.make_embedder:
            monkeypatch.setattr(module, "make_embedder", emb.make_embedder)  # undone after the test
    fakes.install()
    svc = MemoryService(home=home)
    try:
        assert isinstance(svc.embedder, FakeEmbedder) and svc.model_name == FAKE_MODEL
    finally:
        svc.close()


@pytest.mark.slow
def test_the_test_launcher_runs_the_real_daemon_on_the_fake(tmp_path: Path) -> None:
    """A daemon started through `launcher_command` serves with the fake installed."""
    from engram_mcp.daemon.client import DaemonClient
    from tests.daemon_env import stop_daemon

    user_dir = tmp_path / "home" / ".claude" / "engram"
    user_dir.mkdir(parents=True, mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "CLAUDE"))}
    env.update(HOME=str(tmp_path / "home"), ENGRAM_HOME=str(user_dir))
    proc = subprocess.Popen(launcher_command("engram_mcp.daemon.process", "--user-dir", str(user_dir)), env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with DaemonClient(user_dir, autostart=False, timeout=5) as c:
                    if c.call("ping").get("ready"):
                        status = c.call("status", {}, project_root=str(tmp_path))
                        break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
            time.sleep(0.05)
        assert status["embedding"]["model"] == FAKE_MODEL, status["embedding"]
    finally:
        stop_daemon(user_dir)
        proc.wait(timeout=20)


# --------------------------------------------------------------------------- fake


def test_the_fake_embedder_is_deterministic_across_instances() -> None:
    a, b = FakeEmbedder(), FakeEmbedder()
    t = "Melanie ran a charity race for mental health"
    np.testing.assert_array_equal(a.embed_query(t), b.embed_query(t))
    np.testing.assert_array_equal(a.embed_documents([t, "x"])[0], a.embed_query(t))


def test_the_fake_embedder_gives_the_same_vector_in_another_process() -> None:
    code = "from tests.fakes import FakeEmbedder; print(FakeEmbedder().embed_query('hello world').tobytes().hex())"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == FakeEmbedder().embed_query("hello world").tobytes().hex()


def test_the_fake_embedder_makes_texts_sharing_words_similar_and_others_not() -> None:
    f = FakeEmbedder()
    base = f.embed_query("Caroline went to the support group meeting")
    near = f.embed_query("caroline attends support group meetings")
    far = f.embed_query("compile the kernel with new flags")
    assert cos(base, base) == pytest.approx(1.0, abs=1e-6)
    assert cos(base, near) > 0.5
    assert cos(base, far) < 0.3
    assert cos(base, near) > cos(base, far) + 0.3


def test_the_fake_embedder_returns_unit_float32_vectors_of_its_dim() -> None:
    f = FakeEmbedder(dim=64, model_name="fake-64")
    d = f.embed_documents(["a b c", "", "!!!"])
    assert d.dtype == np.float32 and d.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-6)
    assert f.embed_documents([]).shape == (0, 64)
    assert isinstance(f, Embedder)


def test_a_core_counts_as_idle_when_only_this_process_keeps_it_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The load average includes this process: a bench loop or an import alone must not switch
    the 2-thread session off (embeddings._idle_core)."""
    monkeypatch.setattr(emb.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(emb.os, "getloadavg", lambda: (1.6, 1.5, 1.0))
    now, cpu = time.monotonic(), time.process_time()
    monkeypatch.setattr(emb, "_own_load", {"wall": now - 1.0, "cpu": cpu - 1.0, "cores": 1.0})  # busy for a minute
    assert emb._idle_core()  # 1.6 - ~1.0 of our own: the other core is free
    monkeypatch.setattr(emb, "_own_load", {"wall": time.monotonic() - 1.0, "cpu": time.process_time(), "cores": 0.0})
    assert not emb._idle_core()  # 1.6 from other processes: no idle core


@pytest.mark.slow
def test_only_bulk_work_loads_the_second_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon that only recalls keeps one session: queries and small stores never load the
    2-thread one (its load and memory sat on a cold daemon's first recall); a bulk call does,
    and queries use it from then on while a core is idle."""
    opened: list[object] = []
    real_open = emb._open_onnx_text_model

    def counting_open(**kwargs: object) -> object:
        opened.append(kwargs["threads"])
        return real_open(**kwargs)

    monkeypatch.setattr(emb, "_open_onnx_text_model", counting_open)
    monkeypatch.setattr(emb, "_idle_core", lambda: True)
    e = FastEmbedEmbedder(cache_dir=str(tmp_path))
    first = e.embed_query("where does the deploy script live")
    e.embed_documents(["one new memory", "and another"])
    assert opened == [1] and e._bulk_model is None
    e.embed_documents([f"memory number {i} of an import" for i in range(emb.BULK_SESSION_MIN_TEXTS)])
    assert opened == [1, 2]
    assert e._session() is e._bulk_model
    np.testing.assert_array_equal(e.embed_query("where does the deploy script live"), first)
