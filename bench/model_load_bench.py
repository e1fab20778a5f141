"""Cold model load: the built-in model through fastembed vs directly on onnxruntime + tokenizers.

    .venv/bin/python bench/model_load_bench.py [--rounds 10] [--docs 500] [--queries 100] [--out DIR]

Each round starts one fresh Python process per path, in alternating order (A B, then B A, ...),
so both paths see the same machine load. Per process:

* ``first_vector_s``: wall time from spawning the process to its first query vector (interpreter
  start, imports, model load and one ``embed_query``), measured by the parent when the child
  reports the vector; the assembled model directory exists already (built once, before the rounds).
* ``rss_first_vector_mb``: the child's peak RSS right after that first vector; ``rss_peak_mb`` at
  the end, after the query and document loops (the 2-thread bulk session is never loaded: every
  call runs on the 1-thread query session, so the two paths run the same session shape).
* ``query_p50_ms`` / ``query_p95_ms``: ``embed_query`` over LoCoMo questions, one at a time.
* ``docs_per_s``: ``embed_documents`` over LoCoMo dialog turns (sorted, batches of 16).
* ``fastembed_imported``: whether the child had imported fastembed (False is the point of the
  direct path).

The vectors of both paths are also compared (max abs difference over the queries; 0.0 means
bit-for-bit equal). Writes ``model_load.json`` and ``model_load.md`` into ``--out`` (default
bench/results/<UTC>/). Timings are noisy on a shared 2-core machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, RESULTS_DIR, SHARED_BENCH, machine_info, utc_stamp, write_json

PATHS = ("fastembed", "direct-source", "direct")
FALLBACK_QUERIES = [f"what did we decide about the retry budget of service {i}?" for i in range(100)]
FALLBACK_DOCS = [f"note {i}: " + "we kept the daemon and moved the index " * (1 + i % 12) for i in range(500)]


def corpus(n_queries: int, n_docs: int) -> tuple[list[str], list[str]]:
    """LoCoMo questions and dialog turns (read from ../shared, never copied), or synthetic text."""
    path = SHARED_BENCH / "locomo" / "locomo10.json"
    if not path.exists():
        return FALLBACK_QUERIES[:n_queries], FALLBACK_DOCS[:n_docs]
    data = json.loads(path.read_text())
    queries = [q["question"] for s in data for q in s["qa"]][:n_queries]
    docs = [t["text"] for s in data for k, v in s["conversation"].items() if k.startswith("session_") and isinstance(v, list) for t in v]
    return queries, docs[:n_docs]


# ------------------------------------------------------------------------------------ child side


def peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM (ru_maxrss would also count the parent's memory, which a
    child carries across fork and exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(path: str, cache_dir: str, n_queries: int, n_docs: int, vectors_out: str) -> int:
    """One measured process: report the first vector at once, then the loops, as JSON lines."""
    from engram_mcp.index import embeddings as emb

    emb._idle_core = lambda: False  # every path on the 1-thread query session (see the docstring)
    if path == "direct-source":  # as before the saved optimised graph: the optimisation pass at each load
        emb._optimized_session = lambda *_args: None  # type: ignore[assignment]
        emb._start_optimized_copy = lambda *_args: None  # type: ignore[assignment]
    e = emb.FastEmbedEmbedder(cache_dir=cache_dir, direct=path.startswith("direct"))
    first = e.embed_query("when did Caroline go to the support group?")
    rss_first = peak_rss_mb()
    print(json.dumps({"first_vector": True, "dim": int(first.shape[0])}), flush=True)

    import numpy as np

    queries, docs = corpus(n_queries, n_docs)
    times, vecs = [], []
    for q in queries:
        t = time.perf_counter()
        vecs.append(e.embed_query(q))
        times.append(time.perf_counter() - t)
    np.save(vectors_out, np.stack(vecs))
    t = time.perf_counter()
    e.embed_documents(docs)
    docs_s = time.perf_counter() - t
    times_ms = np.asarray(times) * 1000.0
    print(json.dumps({
        "rss_first_vector_mb": round(rss_first, 1),
        "rss_peak_mb": round(peak_rss_mb(), 1),
        "query_p50_ms": round(float(np.percentile(times_ms, 50)), 3),
        "query_p95_ms": round(float(np.percentile(times_ms, 95)), 3),
        "docs_per_s": round(len(docs) / docs_s, 1),
        "n_queries": len(queries),
        "n_docs": len(docs),
        "fastembed_imported": "fastembed" in sys.modules,
    }), flush=True)
    return 0


# ----------------------------------------------------------------------------------- parent side


def run_one(path: str, cache_dir: str, n_queries: int, n_docs: int, vectors_out: Path) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", path, "--cache", cache_dir,
            "--queries", str(n_queries), "--docs", str(n_docs), "--vectors", str(vectors_out)]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    first_vector_s = time.perf_counter() - start
    rest, err = proc.communicate(timeout=600)
    if proc.returncode != 0 or not line.strip():
        raise RuntimeError(f"{path} child failed ({proc.returncode}): {err[-2000:]}")
    return {"path": path, "first_vector_s": round(first_vector_s, 4), **json.loads(rest.strip().splitlines()[-1])}


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    keys = ("first_vector_s", "rss_first_vector_mb", "rss_peak_mb", "query_p50_ms", "query_p95_ms", "docs_per_s")
    out: dict[str, dict[str, Any]] = {}
    for path in PATHS:
        mine = [r for r in rows if r["path"] == path]
        out[path] = {k: {"median": round(statistics.median(r[k] for r in mine), 4),
                         "min": min(r[k] for r in mine), "max": max(r[k] for r in mine)} for k in keys}
        out[path]["fastembed_imported"] = sorted({r["fastembed_imported"] for r in mine})
    return out


def markdown(result: dict[str, Any]) -> str:
    s = result["summary"]
    lines = [
        "# Cold model load: fastembed vs direct onnxruntime",
        "",
        f"{result['rounds']} rounds, one fresh process per path per round, order alternating; "
        f"{result['n_queries']} queries, {result['n_docs']} documents; median (min-max).",
        "",
        "`direct-source` loads the model file itself (onnxruntime optimises its graph at each load); `direct` loads "
        "the optimised graph saved beside it once (no optimisation pass).",
        "",
        "| metric | fastembed | direct-source | direct | direct / fastembed | direct / direct-source |",
        "|---|---|---|---|---|---|",
    ]
    labels = {"first_vector_s": "process start -> first query vector (s)", "rss_first_vector_mb": "peak RSS at first vector (MB)",
              "rss_peak_mb": "peak RSS after the loops (MB)", "query_p50_ms": "embed_query p50 (ms)",
              "query_p95_ms": "embed_query p95 (ms)", "docs_per_s": "embed_documents (docs/s)"}
    for k, label in labels.items():
        a, m, b = s["fastembed"][k], s["direct-source"][k], s["direct"][k]
        ratio = b["median"] / a["median"] if a["median"] else float("nan")
        ratio_m = b["median"] / m["median"] if m["median"] else float("nan")
        cells = " | ".join(f"{x['median']} ({x['min']}-{x['max']})" for x in (a, m, b))
        lines.append(f"| {label} | {cells} | {ratio:.2f} | {ratio_m:.2f} |")
    lines += [
        "",
        "fastembed imported: " + ", ".join(f"{p} {s[p]['fastembed_imported']}" for p in PATHS) + ".",
        f"Query vectors, max abs difference from fastembed's: {result['max_abs_diff']} (0.0 = bit-for-bit equal).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--vectors", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.cache, a.queries, a.docs, a.vectors)

    import numpy as np

    from engram_mcp.index.embeddings import assemble_builtin_model

    out = a.out or RESULTS_DIR / utc_stamp()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="engram-model-load-") as tmp:
        assemble_builtin_model(tmp)  # built once: the rounds time loading, not assembling
        subprocess.run(  # the optimised graph saved once, as a first start does (in a child: the parent stays small)
            [sys.executable, "-c", "import sys; from engram_mcp.index.embeddings import FastEmbedEmbedder as E; "
             "E(cache_dir=sys.argv[1]).embed_query('save the optimised graph')", tmp],
            cwd=REPO_ROOT, check=True, timeout=300)
        vec = {p: Path(tmp) / f"{p}.npy" for p in PATHS}
        for i in range(a.rounds):
            for path in PATHS if i % 2 == 0 else PATHS[::-1]:
                row = run_one(path, tmp, a.queries, a.docs, vec[path])
                rows.append({"round": i, **row})
                print(f"round {i} {path:13s} first vector {row['first_vector_s']:.3f} s, peak RSS {row['rss_first_vector_mb']:.0f}"
                      f" / {row['rss_peak_mb']:.0f} MB, query p50 {row['query_p50_ms']:.2f} ms, {row['docs_per_s']:.0f} docs/s", flush=True)
        ref = np.load(vec["fastembed"])
        max_abs_diff = max(float(np.abs(np.load(vec[p]) - ref).max()) for p in PATHS)
    result = {"machine": machine_info(), "rounds": a.rounds, "n_queries": rows[0]["n_queries"], "n_docs": rows[0]["n_docs"],
              "max_abs_diff": max_abs_diff, "summary": summarise(rows), "rows": rows}
    write_json(out / "model_load.json", result)
    (out / "model_load.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    print(f"wrote {out / 'model_load.json'} and model_load.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
