#!/usr/bin/env python3
"""Speed and size of engram at N memories: in-process service, real engine, real model.

How a store of N memories is built quickly: a few thousand distinct synthetic sentences are
embedded for real once (`distinct_vectors`, default 2,000), and every generated memory gets one
of those vectors plus Gaussian noise (sigma 0.02 per dimension, re-normalised: cosine ~0.93 to
its base vector, so no two memories share a vector). The memories (distinct synthetic texts
over a ~300-word technical vocabulary with Zipf-like frequencies, one or two tags, random type
and importance) are written as an engram export carrying those vectors and loaded with
`MemoryService.import_`, the real import path, so 100,000 memories take about a minute
instead of the ~20 minutes embedding them would. Texts and vectors do not match in meaning;
that does not matter for speed.

Then, per size, on top of that project store plus 50 user and 50 session memories:
  - store (project scope, dedup on, query embedding included): p50/p95/p99;
  - recall across the three scopes (hybrid, vector, keyword; limit 10; strengthening on,
    i.e. the write-behind of engram_mcp/services/strengthen.py runs as in production): p50/p95/p99;
  - the query embedding alone and `context` (session-start context) p50/p95/p99;
  - import rate with vectors, cold index load on reopen, disk bytes per memory, RSS.
Once per run: embedding throughput of new text on the query session (1 thread) and the bulk
session (2 threads, used while a core is idle), and the import rate of an export without vectors.

API (the umbrella `make bench` report imports these):
    run_speed(sizes, out_dir=None, **options) -> dict     # runs and (with out_dir) writes
    write_results(results, out_dir) -> (json path, md path)
    markdown(results) -> str
CLI:
    .venv/bin/python bench/speed_bench.py --sizes 1000 10000 100000 [--out DIR] [--queries 200]
writes bench/results/<UTC>/speed.json and speed.md.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DISTINCT_VECTORS = 2000
VECTOR_NOISE = 0.02
TECH = ("deploy test build cache database migration index query auth token session user project config docker "
        "kubernetes python rust typescript react api endpoint latency error retry timeout queue worker schema field "
        "record backup restore logging metrics alert pipeline branch merge release version postgres redis kafka "
        "nginx terraform ansible grafana prometheus sentry celery rabbitmq elasticsearch webpack vite eslint ruff "
        "mypy pytest jest fixture mock coverage lint format commit rebase tag hotfix rollback canary feature flag "
        "tenant billing invoice payment webhook cron scheduler batch stream consumer producer partition replica "
        "shard cluster node pod service ingress secret vault certificate tls dns cdn bucket blob upload download "
        "thumbnail image video search ranking embedding vector model prompt agent tool memory context window "
        "parser lexer compiler runtime allocator thread async await future promise callback closure iterator "
        "generator decorator middleware router controller handler view template component hook state reducer "
        "store action selector query mutation resolver graphql rest grpc protobuf json yaml toml csv parquet").split()
COMMON = ("the a we our team always never usually prefers uses runs needs fixed broke added removed changed moved "
          "because after before when during since until slow fast flaky stable large small new old default custom "
          "local remote staging production dev ci nightly weekly monday friday morning limit size count rate ratio "
          "first last every each main primary legacy internal external shared private public manual automatic "
          "retry fails passes works breaks hangs leaks spikes drops grows shrinks returns sends reads writes").split()
VOCAB = TECH + COMMON
_WEIGHTS = 1.0 / np.arange(1, len(VOCAB) + 1) ** 0.8
_WEIGHTS /= _WEIGHTS.sum()
_CUM = np.cumsum(_WEIGHTS).tolist()


def sentence(rnd: random.Random, lo: int = 6, hi: int = 18) -> str:
    """A synthetic memory text: lo-hi words, Zipf-like over VOCAB."""
    return " ".join(rnd.choices(VOCAB, cum_weights=_CUM, k=rnd.randint(lo, hi)))


def query_text(rnd: random.Random) -> str:
    return " ".join(rnd.choices(VOCAB, cum_weights=_CUM, k=rnd.randint(2, 6)))


def pct(values: Sequence[float], p: float) -> float:
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), p)), 2) if len(values) else float("nan")


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    ms = [s * 1000.0 for s in seconds]
    return {"p50": pct(ms, 50), "p95": pct(ms, 95), "p99": pct(ms, 99), "n": len(ms)}


def rss_mb() -> dict[str, float]:
    """Current and peak resident set size of this process, MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        current = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        current = float("nan")
    return {"current_mb": round(current, 1), "peak_mb": round(peak, 1)}


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def noisy_vectors(base: np.ndarray, n: int, rng: np.random.Generator, start: int = 0) -> np.ndarray:
    """n unit vectors: base[(start + i) % len(base)] plus N(0, VECTOR_NOISE) per dimension."""
    idx = (np.arange(start, start + n)) % len(base)
    out = base[idx] + rng.standard_normal((n, base.shape[1]), dtype=np.float32) * np.float32(VECTOR_NOISE)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype("<f4", copy=False)


def write_fill_export(path: Path, n: int, base: np.ndarray, model: str, rnd: random.Random, rng: np.random.Generator,
                      *, with_vectors: bool = True, chunk: int = 10_000) -> None:
    """An engram export of n synthetic project memories (with noisy copies of `base` vectors)."""
    from engram_mcp.core.ids import new_ulid

    types = ("episodic", "semantic", "procedural")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n")
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            vecs = noisy_vectors(base, m, rng, start) if with_vectors else None
            lines = []
            for i in range(m):
                rec = {"memory_type": rnd.choice(types), "scope": "project", "content": f"{sentence(rnd)} #{start + i}",
                       "tags": rnd.sample(TECH[:40], rnd.randint(1, 2)), "importance": round(rnd.random(), 2),
                       "status": "active"}
                line = {"kind": "memory", "scope": "project", "id": new_ulid(), "record": rec}
                if vecs is not None:
                    rec.update(embedding_model=model, embedding_dim=int(base.shape[1]))
                    line["vector_b64"] = base64.b64encode(vecs[i].tobytes()).decode()
                lines.append(json.dumps(line))
            f.write("\n".join(lines) + "\n")


def measure_embedding(embedder, texts: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    """Docs/s of new text on the 1-thread query session and on the bulk session; query latency."""
    from engram_mcp.index import embeddings as emb

    out: dict[str, Any] = {"load_avg_1m": round(os.getloadavg()[0], 2), "texts": len(texts),
                           "batch_size": getattr(embedder, "batch_size", None)}
    embedder.embed_documents(list(texts[:32]))  # warm the default path
    model = getattr(embedder, "_model", None)
    if model is not None:  # FastEmbedEmbedder: time each session explicitly
        order = sorted(texts, key=len)

        def rate(session) -> float:
            t = time.perf_counter()
            list(session.embed(order, batch_size=embedder.batch_size))
            return round(len(order) / (time.perf_counter() - t), 1)

        out["docs_per_s_1_thread"] = rate(embedder._model)
        if getattr(embedder, "bulk_threads", None):
            bulk = embedder._load_bulk()
            list(bulk.embed(order[:32], batch_size=embedder.batch_size))
            out[f"docs_per_s_{embedder.bulk_threads}_threads"] = rate(bulk)
        out["bulk_session_used_now"] = bool(getattr(embedder, "bulk_threads", None)) and emb._idle_core()
    t = time.perf_counter()
    embedder.embed_documents(list(texts))
    out["docs_per_s_embed_documents"] = round(len(texts) / (time.perf_counter() - t), 1)
    lat = []
    for qq in queries:
        t = time.perf_counter()
        embedder.embed_query(qq)
        lat.append(time.perf_counter() - t)
    out["query_ms"] = summary_ms(lat)
    return out


def measure_import_embedding(embedder, tmp: Path, n: int, rnd: random.Random, rng: np.random.Generator) -> dict[str, Any]:
    """Import of n memories whose export carries no vectors (each is embedded)."""
    from engram_mcp.services.service import MemoryService, RequestContext

    home, project = tmp / "home-embed-import", tmp / "proj-embed-import"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    path = tmp / "embed-import.jsonl"
    write_fill_export(path, n, np.zeros((1, 384), dtype=np.float32), embedder.model_name, rnd, rng, with_vectors=False)
    svc = MemoryService(home=home, embedder=embedder)
    try:
        ctx = RequestContext(project, None)
        svc.handle(ctx, "project")
        load = os.getloadavg()[0]
        t = time.perf_counter()
        res = svc.import_(ctx, path)
        secs = time.perf_counter() - t
    finally:
        svc.close()
    return {"memories": n, "embedded": res["counts"]["embedded"], "per_s": round(n / secs, 1), "load_avg_1m": round(load, 2)}


def run_size(n: int, embedder, base: np.ndarray, tmp: Path, rnd: random.Random, rng: np.random.Generator, *,
             queries: int = 200, stores: int = 200, contexts: int = 50, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Fill a project store with n memories and measure store / recall / context on it."""
    from engram_mcp.services.service import MemoryService, RequestContext

    home, project = tmp / f"home{n}", tmp / f"proj{n}"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    ctx = RequestContext(project, "bench-session")
    export = tmp / f"fill{n}.jsonl"
    t = time.perf_counter()
    write_fill_export(export, n, base, embedder.model_name, rnd, rng)
    gen_s = time.perf_counter() - t
    svc = MemoryService(home=home, embedder=embedder)
    result: dict[str, Any] = {"memories": n, "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
    try:
        svc.handle(ctx, "project")
        t = time.perf_counter()
        svc.import_(ctx, export)
        import_s = time.perf_counter() - t
        export.unlink()
        log(f"  {n}: generated in {gen_s:.1f} s, imported in {import_s:.1f} s ({n / import_s:.0f}/s)")
        for scope in ("user", "session"):
            for _ in range(50):
                svc.store(ctx, content=sentence(rnd), type="semantic", scope=scope, dedup=False)
        store_s, actions = [], {}
        for _ in range(stores):
            text = sentence(rnd)
            t = time.perf_counter()
            res = svc.store(ctx, content=text, type="semantic", scope="project")
            store_s.append(time.perf_counter() - t)
            actions[res["action"]] = actions.get(res["action"], 0) + 1
        qs = [query_text(rnd) for _ in range(queries)]
        for qq in qs[:10]:  # warm-up
            svc.recall(ctx, query=qq, limit=10)
        # Baseline, same run: hybrid recall before the index file holds the records, so every hit
        # is read from the engine (the first minutes after a bulk import). Then one checkpoint, as
        # the daemon writes when requests pause (at exit it reads every record: so here).
        secs = []
        for qq in qs:
            t = time.perf_counter()
            svc.recall(ctx, query=qq, strategy="hybrid", limit=10)
            secs.append(time.perf_counter() - t)
        result["hybrid_before_checkpoint_ms"] = summary_ms(secs)
        t = time.perf_counter()
        svc.checkpoint(read_all_records=True)
        result["checkpoint_all_records_s"] = round(time.perf_counter() - t, 2)
        recall: dict[str, Any] = {}
        for strategy in ("hybrid", "vector", "keyword"):
            secs, returned = [], []
            for qq in qs:
                t = time.perf_counter()
                res = svc.recall(ctx, query=qq, strategy=strategy, limit=10)
                secs.append(time.perf_counter() - t)
                returned.append(len(res["memories"]))
            recall[strategy] = {**summary_ms(secs), "mean_returned": round(float(np.mean(returned)), 1)}
        emb_s = []
        for qq in qs:
            t = time.perf_counter()
            svc.embed_query(qq)
            emb_s.append(time.perf_counter() - t)
        ctx_s = []
        for _ in range(contexts):
            t = time.perf_counter()
            svc.context(ctx, task_description=sentence(rnd), max_tokens=1200)
            ctx_s.append(time.perf_counter() - t)
        result.update({
            "fill_generate_s": round(gen_s, 1),
            "import_with_vectors_per_s": round(n / import_s, 1),
            "store_ms": summary_ms(store_s),
            "store_actions": actions,
            "recall_ms": recall,
            "embed_query_ms": summary_ms(emb_s),
            "context_ms": summary_ms(ctx_s),
        })
    finally:
        svc.close()
    disk = dir_bytes(project / ".claude" / "engram")
    result["disk_bytes_per_memory"] = round(disk / (n + stores + 50), 1)
    svc = MemoryService(home=home, embedder=embedder)
    try:
        t = time.perf_counter()
        svc.handle(ctx, "project")
        result["reopen_index_load_s"] = round(time.perf_counter() - t, 2)
    finally:
        svc.close()
    result["rss"] = rss_mb()
    result["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(project, ignore_errors=True)
    return result


def run_speed(sizes: Sequence[int] = (1000, 10000), out_dir: Path | None = None, *, queries: int = 200, stores: int = 200,
              contexts: int = 50, distinct_vectors: int = DISTINCT_VECTORS, embed_import: int = 500, seed: int = 7,
              embedder=None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the speed benchmark at each size; with `out_dir`, also write speed.json / speed.md there."""
    from engram_mcp.index.embeddings import DEFAULT_MODEL, make_embedder

    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    tmp = Path(tempfile.mkdtemp(prefix="engram-speed-"))
    try:
        embedder = embedder or make_embedder(DEFAULT_MODEL, cache_dir=str(tmp / "models"))
        texts = [sentence(rnd) for _ in range(distinct_vectors)]
        t = time.perf_counter()
        base = embedder.embed_documents(texts).astype(np.float32)
        base_s = time.perf_counter() - t
        log(f"embedded {len(texts)} base texts in {base_s:.1f} s")
        results: dict[str, Any] = {
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "model": embedder.model_name,
            "machine": {"cpus": os.cpu_count(), "load_avg_start": [round(x, 2) for x in os.getloadavg()]},
            "method": {"distinct_vectors": distinct_vectors, "vector_noise_sigma": VECTOR_NOISE, "vocabulary": len(VOCAB),
                       "queries": queries, "stores": stores, "limit": 10, "extra_scopes": "50 user + 50 session memories"},
            "embedding": measure_embedding(embedder, texts[:600], [query_text(rnd) for _ in range(100)]),
            "import_embedding": measure_import_embedding(embedder, tmp, embed_import, rnd, rng) if embed_import else None,
            "runs": [],
        }
        for n in sizes:
            r = run_size(int(n), embedder, base, tmp, rnd, rng, queries=queries, stores=stores, contexts=contexts, log=log)
            results["runs"].append(r)
            log(json.dumps({k: r[k] for k in ("memories", "store_ms", "recall_ms", "disk_bytes_per_memory", "rss")}))
        results["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out_dir is not None:
        write_results(results, out_dir)
    return results


def markdown(results: dict[str, Any]) -> str:
    def trio(d: dict[str, float]) -> str:
        return f"{d['p50']} / {d['p95']} / {d['p99']}"

    lines = [f"# engram speed ({results['started_utc']}, {results['machine']['cpus']} CPUs, load average "
             f"{results['machine']['load_avg_start']} at start, {results['machine'].get('load_avg_end')} at end)", "",
             "Latencies in ms as p50 / p95 / p99; recall is across session + project + user, limit 10.", "",
             "| memories | store | hybrid recall | vector recall | keyword recall | query embedding | context | import/s (vectors) | bytes/memory | reopen s | RSS MB (peak) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["runs"]:
        rc = r["recall_ms"]
        lines.append(f"| {r['memories']:,} | {trio(r['store_ms'])} | {trio(rc['hybrid'])} | {trio(rc['vector'])} | "
                     f"{trio(rc['keyword'])} | {trio(r['embed_query_ms'])} | {trio(r['context_ms'])} | "
                     f"{r['import_with_vectors_per_s']:,.0f} | {r['disk_bytes_per_memory']:,.0f} | {r['reopen_index_load_s']} | "
                     f"{r['rss']['current_mb']:,.0f} ({r['rss']['peak_mb']:,.0f}) |")
    e = results["embedding"]
    lines += ["", f"Embedding new text (length-sorted batches of {e.get('batch_size')}, load average "
              f"{e['load_avg_1m']}): " + ", ".join(f"{k.replace('docs_per_s_', '').replace('_', ' ')} {v} docs/s"
                                                  for k, v in e.items() if k.startswith("docs_per_s")) +
              f"; query embedding {trio(e['query_ms'])} ms."]
    ie = results.get("import_embedding")
    if ie:
        lines.append(f"Import without vectors (every memory embedded): {ie['per_s']} memories/s over {ie['memories']} "
                     f"(load average {ie['load_avg_1m']}).")
    before = [r for r in results["runs"] if r.get("hybrid_before_checkpoint_ms")]
    if before:
        lines.append("Hybrid recall before the first checkpoint (every hit read from the engine; the table's figures "
                     "come after one, which put each record in the index file): " +
                     ", ".join(f"{r['memories']:,}: {trio(r['hybrid_before_checkpoint_ms'])} ms "
                               f"(checkpoint {r['checkpoint_all_records_s']} s)" for r in before) + ".")
    m = results["method"]
    lines += ["", f"Method: {m['distinct_vectors']} distinct texts embedded for real; each memory gets one of their "
              f"vectors plus N(0, {m['vector_noise_sigma']}) noise, and is loaded through the import path. "
              f"Texts: synthetic over a {m['vocabulary']}-word vocabulary. {m['extra_scopes']}. "
              "Strengthening runs as in production (written behind the recall)."]
    return "\n".join(lines) + "\n"


def write_results(results: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    js, md = out_dir / "speed.json", out_dir / "speed.md"
    js.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown(results), encoding="utf-8")
    return js, md


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--out", type=Path, help="result directory (default bench/results/<UTC>/)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--distinct-vectors", type=int, default=DISTINCT_VECTORS)
    ap.add_argument("--embed-import", type=int, default=500, help="memories in the import-without-vectors test (0: skip)")
    args = ap.parse_args()
    out = args.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    results = run_speed(args.sizes, out, queries=args.queries, stores=args.stores, distinct_vectors=args.distinct_vectors,
                        embed_import=args.embed_import)
    print(markdown(results))
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
