#!/usr/bin/env python3
"""Speed and size of the engine at N memories (in-process service, real engine, real model).

Fills a project store to N memories by importing a generated export that carries
vectors (texts are synthetic sentences; their vectors are real model embeddings of a
few thousand distinct sentences, reused round-robin above that, so the index holds N
realistic vectors without embedding N texts), then measures on top of it:
  store (embedding included) p50/p95, hybrid/vector/keyword recall across the three
  scopes p50/p95, import rate with vectors, embedding import rate, disk bytes/memory.
Writes bench/results/<timestamp>/speed.json and speed.md.

    python bench/speed_bench.py --sizes 1000 10000 [--out DIR]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = ("deploy test build cache database migration index query auth token session user project config "
         "docker kubernetes python rust typescript react api endpoint latency error retry timeout queue worker "
         "schema field record backup restore logging metrics alert pipeline branch merge release version").split()
DISTINCT_VECTORS = 4000


def sentence(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 18)))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run_size(n: int, embedder, base_vectors, tmp: Path, rnd: random.Random) -> dict:
    from engram_mcp.ids import new_ulid
    from engram_mcp.service import MemoryService, RequestContext

    home, project = tmp / f"home{n}", tmp / f"proj{n}"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    svc = MemoryService(home=home, embedder=embedder)
    ctx = RequestContext(project, "bench-session")
    export = tmp / f"fill{n}.jsonl"
    with open(export, "w") as f:
        f.write(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n")
        for i in range(n):
            rec = {"memory_type": rnd.choice(["episodic", "semantic", "procedural"]), "scope": "project", "content": sentence(rnd),
                   "tags": [rnd.choice(WORDS)], "importance": round(rnd.random(), 2), "status": "active", "embedding_model": embedder.model_name, "embedding_dim": 384}
            vec = base_vectors[i % len(base_vectors)]
            f.write(json.dumps({"kind": "memory", "scope": "project", "id": new_ulid(), "record": rec, "vector_b64": base64.b64encode(vec.tobytes()).decode()}) + "\n")
    t = time.perf_counter()
    svc.import_(ctx, export)
    import_rate = n / (time.perf_counter() - t)
    for scope in ("user", "session"):
        for _ in range(50):
            svc.store(ctx, content=sentence(rnd), type="semantic", scope=scope, dedup=False)
    store_ms = []
    for _ in range(200):
        text = sentence(rnd)
        t = time.perf_counter()
        svc.store(ctx, content=text, type="semantic", scope="project")
        store_ms.append((time.perf_counter() - t) * 1000)
    recall = {}
    for strategy in ("hybrid", "vector", "keyword"):
        times = []
        for _ in range(200):
            q = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 6)))
            t = time.perf_counter()
            svc.recall(ctx, query=q, strategy=strategy, limit=10)
            times.append((time.perf_counter() - t) * 1000)
        recall[strategy] = {"p50_ms": round(pct(times, 50), 2), "p95_ms": round(pct(times, 95), 2)}
    ctx_ms = []
    for _ in range(50):
        t = time.perf_counter()
        svc.context(ctx, task_description=sentence(rnd), max_tokens=1200)
        ctx_ms.append((time.perf_counter() - t) * 1000)
    h = svc.handle(ctx, "project")
    disk = h.store.size_bytes()
    svc.close()
    return {
        "memories": n,
        "import_with_vectors_per_s": round(import_rate, 1),
        "store_ms": {"p50": round(pct(store_ms, 50), 2), "p95": round(pct(store_ms, 95), 2)},
        "recall_ms": recall,
        "context_ms": {"p50": round(pct(ctx_ms, 50), 2), "p95": round(pct(ctx_ms, 95), 2)},
        "disk_bytes_per_memory": round(disk / (n + 200), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    from engram_mcp.embeddings import make_embedder, DEFAULT_MODEL

    rnd = random.Random(7)
    tmp = Path(tempfile.mkdtemp(prefix="engram-speed-"))
    embedder = make_embedder(DEFAULT_MODEL, cache_dir=str(tmp / "models"))
    texts = [sentence(rnd) for _ in range(DISTINCT_VECTORS)]
    t = time.perf_counter()
    vectors = embedder.embed_documents(texts)
    embed_rate = len(texts) / (time.perf_counter() - t)
    results = {"embedding_docs_per_s": round(embed_rate, 1), "model": embedder.model_name, "runs": []}
    try:
        for n in args.sizes:
            r = run_size(n, embedder, list(vectors), tmp, rnd)
            results["runs"].append(r)
            print(json.dumps(r), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = args.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed.json").write_text(json.dumps(results, indent=2))
    lines = ["| memories | store p50/p95 ms | hybrid p50/p95 | vector p50/p95 | keyword p50/p95 | context p50/p95 | import/s (vectors) | bytes/memory |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["runs"]:
        rc = r["recall_ms"]
        lines.append(f"| {r['memories']} | {r['store_ms']['p50']}/{r['store_ms']['p95']} | {rc['hybrid']['p50_ms']}/{rc['hybrid']['p95_ms']} | "
                     f"{rc['vector']['p50_ms']}/{rc['vector']['p95_ms']} | {rc['keyword']['p50_ms']}/{rc['keyword']['p95_ms']} | "
                     f"{r['context_ms']['p50']}/{r['context_ms']['p95']} | {r['import_with_vectors_per_s']} | {r['disk_bytes_per_memory']} |")
    lines.append(f"\nEmbedding new text: {results['embedding_docs_per_s']} docs/s (length-sorted batches of 64).")
    (out / "speed.md").write_text("# engram speed\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
