"""Embedding throughput by batch size and thread count (why DOCUMENT_BATCH_SIZE is 16).

    .venv/bin/python bench/embed_batch_bench.py [--n 600]

Texts: short synthetic notes (speed_bench sentences) and LoCoMo dialog turns (read from
../shared, never copied). Prints docs/s per (texts, batch size, session) and writes
bench/results/<UTC>/embed_batch.json. Run it on a quiet machine: onnxruntime's second
thread only helps when a core is idle.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time

from common import RESULTS_DIR, SHARED_BENCH, machine_info, utc_stamp, write_json

import speed_bench as sb
from engram_mcp.index.embeddings import DEFAULT_MODEL, make_embedder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=600)
    args = ap.parse_args()
    emb = make_embedder(DEFAULT_MODEL, cache_dir=tempfile.mkdtemp())
    rnd = random.Random(1)
    data = json.loads((SHARED_BENCH / "locomo" / "locomo10.json").read_text())
    turns = [t["text"] for s in data[:2] for k, v in s["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v][: args.n]
    corpora = {"short notes": sorted((sb.sentence(rnd) for _ in range(args.n)), key=len), "locomo turns": sorted(turns, key=len)}
    emb.embed_documents(turns[:32])
    sessions = {"1 thread": emb._model, f"{emb.bulk_threads} threads": emb._load_bulk()}
    rows = []
    for cname, texts in corpora.items():
        for bs in (8, 16, 32, 64, 128):
            for sname, sess in sessions.items():
                t = time.perf_counter()
                list(sess.embed(texts, batch_size=bs))
                rate = round(len(texts) / (time.perf_counter() - t), 1)
                rows.append({"texts": cname, "mean_chars": round(sum(map(len, texts)) / len(texts), 1), "batch": bs, "session": sname, "docs_per_s": rate})
                print(f"{cname:13s} batch {bs:4d} {sname:10s} {rate:7.1f} docs/s", flush=True)
    out = RESULTS_DIR / utc_stamp()
    write_json(out / "embed_batch.json", {"machine": machine_info(), "rows": rows})
    print(f"wrote {out / 'embed_batch.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
