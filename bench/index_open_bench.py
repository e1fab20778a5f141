#!/usr/bin/env python3
"""Cold start with and without the persisted retrieval index, at N memories.

For each size a fresh HOME and git project are filled like bench/scale_extras.py (an import
of N project memories carrying vectors, plus 100 user memories). Then, alternating the
config switch `index_persist` (ENGRAM_INDEX_PERSIST) in one run, each repeat:

  * spawns the real daemon and times spawn -> answer of the first `recall` (model load,
    engine open and index load or rebuild included), then reads the daemon's VmHWM/VmRSS;
  * times 40 warm recalls (p50/p95), then shuts the daemon down (a checkpoint writes the
    index file when persistence is on).

A run with persistence off moves the store's change counter (its recalls strengthen), so the
next run with it on rebuilds once and writes the file: the first "on" repeat after an "off"
one is reported apart as `on_after_off`. Then `early` finds a current file under its `clean`
marker and answers from it while the engine opens in the background (config
`index_early_answers`), and `late` (early answers off) loads the same file only once the
engine has opened and its counter matched. With early answers on, `on_after_off` rebuilds in
the background: it answers from the newest memories first (`first_answer_partial`) and
`background_load_s` is the time the rest took (its `index/` is deleted first, so it is always a
full rebuild). `writes_then_kill9` stores 20 memories after its recalls and is killed, so the
file is 20 changes behind the store; `repair` then opens it: the engine, the file, and the 20
records the change log names, re-read. `checkpoint_s` is the index write at exit (with
early answers on it copies every record recall returns into the file). The
daemon log's "opened in" / "index loaded|rebuilt in" lines give the engine open and index
load of each run.

    python bench/index_open_bench.py --sizes 1000 10000 [--repeats 2] [--out DIR]
    python bench/index_open_bench.py --sizes 10000 100000 --verification-only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CRASH_WRITES = 20
QUERIES = ("deploy cache", "database migration index", "auth token session", "kubernetes docker", "retry timeout queue")


def _mem(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, val = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = round(int(val.split()[0]) / 1024.0, 1)
    return out


def cold_run(world: Any, persist: bool, early: bool = True, writes_then_kill: int = 0) -> dict[str, Any]:
    """One daemon from spawn to shutdown. `writes_then_kill`: after the recalls, store this many
    memories and `kill -9` the daemon, so its index file is left behind the store."""
    import scale_extras as se

    env = dict(
        world.env,
        ENGRAM_INDEX_PERSIST="true" if persist else "false",
        ENGRAM_INDEX_EARLY_ANSWERS="true" if early else "false",
    )
    log = world.user_dir / "logs" / "engramd.log"
    log_start = log.stat().st_size if log.exists() else 0
    started = time.perf_counter()
    proc, client = se.start_daemon(world, env)
    try:
        first = client.call(
            "recall", {"query": "deploy cache database migration", "limit": 10}, project_root=str(world.project)
        )
        cold_s = time.perf_counter() - started
        mem_first = _mem(proc.pid)
        lat = []
        for q in QUERIES * 8:
            t = time.perf_counter()
            client.call("recall", {"query": q, "limit": 10}, project_root=str(world.project))
            lat.append(time.perf_counter() - t)
        mem_after = _mem(proc.pid)
        # a listing waits for a background rebuild to finish (recall does not), so the
        # shutdown below writes a whole index file for the next run
        client.call("list", {"limit": 1}, project_root=str(world.project))
        for i in range(writes_then_kill):
            client.call(
                "store",
                {"content": f"written before a crash {i}: deploy cache note", "type": "semantic", "scope": "project"},
                project_root=str(world.project),
            )
        if writes_then_kill:
            proc.kill()
        else:
            client.call("shutdown")
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text(errors="replace")[log_start:] if log.exists() else ""
    opened = [float(x) for x in re.findall(r"project store .* opened in ([\d.]+) s", text)]
    index = re.findall(r"project:\S+ index (loaded|rebuilt|repaired) (?:\(\d+ re-read\) )?in ([\d.]+) s", text)
    answered_early = bool(re.search(r"project:\S+ index loaded in [\d.]+ s \(answering before the store opens\)", text))
    checkpoints = [float(x) for x in re.findall(r"project:\S+ index file written in ([\d.]+) s", text)]
    background = [float(x) for x in re.findall(r"project:\S+ index loaded in the background in ([\d.]+) s", text)]
    partial = [
        w for w in first.get("warnings", []) if w.get("code") == "partial_results" and w.get("scope") == "project"
    ]
    ms = np.asarray(lat) * 1000.0
    return {
        "persist": persist,
        "early": early,
        "answered_early": answered_early,
        # a rebuild answers from the newest memories while the rest load (services/handles.py)
        "first_answer_partial": bool(partial),
        "background_load_s": background[0] if background else None,
        "cold_first_recall_s": round(cold_s, 3),
        "hits": len(first.get("memories", [])),
        "checkpoint_s": max(checkpoints) if checkpoints else None,
        "engine_open_s": opened[0] if opened else None,
        "index": index[0][0] if index else None,
        "index_s": float(index[0][1]) if index else None,
        "rss_after_first_mb": mem_first,
        "rss_after_40_mb": mem_after,
        "warm_p50_ms": round(float(np.percentile(ms, 50)), 2),
        "warm_p95_ms": round(float(np.percentile(ms, 95)), 2),
    }


def run_size(n: int, repeats: int, tmp: Path, models: Path, embedder: Any, pool: np.ndarray) -> dict[str, Any]:
    import scale_extras as se

    from engram_mcp.services.service import MemoryService, RequestContext

    world = se.World(tmp / f"n{n}", models)
    svc = MemoryService(home=world.home, user_dir=world.user_dir, embedder=embedder)
    try:
        rnd, rng = random.Random(n), np.random.default_rng(n)
        filled = se.fill(svc, RequestContext(world.project), n, pool, embedder.model_name, tmp, rnd, rng)
    finally:
        svc.close()
    runs: dict[str, list[dict[str, Any]]] = {
        "off": [],
        "on_after_off": [],
        "early": [],
        "writes_then_kill9": [],
        "repair": [],
        "late": [],
    }
    index_dir = world.project / ".claude" / "engram" / "index"
    for _ in range(repeats):
        runs["off"].append(cold_run(world, False))
        shutil.rmtree(index_dir, ignore_errors=True)  # no file: a full rebuild, whatever the log holds
        runs["on_after_off"].append(cold_run(world, True))  # rebuilds, writes the file and its marker
        runs["early"].append(cold_run(world, True, early=True))  # answers from the file as the engine opens
        # 20 stores, then kill -9: the file is 20 changes behind; the next open repairs it from the log
        runs["writes_then_kill9"].append(cold_run(world, True, writes_then_kill=CRASH_WRITES))
        runs["repair"].append(cold_run(world, True))
        runs["late"].append(cold_run(world, True, early=False))  # loads the file once the engine is open
        print(f"  [{n}] " + "; ".join(f"{k} {v[-1]['cold_first_recall_s']} s" for k, v in runs.items()), flush=True)
    shutil.rmtree(world.base, ignore_errors=True)
    return {"memories": n, "import_s": filled["import_s"], "runs": runs}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| memories | mode | cold first recall s | answered early | partial answer | engine open s | index | index s "
        "| loaded in background s | peak RSS MB | warm p95 ms | checkpoint at exit s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in result["sizes"]:
        for mode, runs in size["runs"].items():
            for r in runs:
                lines.append(
                    f"| {size['memories']} | {mode} | {r['cold_first_recall_s']} | {r['answered_early']} | "
                    f"{r.get('first_answer_partial')} | {r['engine_open_s']} | {r['index']} | {r['index_s']} | "
                    f"{r.get('background_load_s')} | {r['rss_after_40_mb'].get('VmHWM')} | "
                    f"{r['warm_p95_ms']} | {r['checkpoint_s']} |"
                )
    return "\n".join(lines) + "\n"


def verification_cost(n: int, tmp: Path, dim: int = 384, repeats: int = 3) -> dict[str, Any]:
    """What checking every byte at open costs (engram_mcp/index/persist.py), for the vector
    block of n memories opened as services/handles.py opens it: format 3 (the int8 rows only,
    checked by `sum64`), against format 2 (float32 rows and the int8 copy, both by `sum64`) and
    the open before format 2 (the float32 rows unchecked), the file's pages in the page cache
    (warm: a daemon restarted soon after the last) and evicted first (cold)."""
    from engram_mcp.core import vector_codec
    from engram_mcp.index.persist import read_index_file, write_index_file

    rng = np.random.default_rng(n)
    vec = rng.standard_normal((n, dim), dtype=np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    q8, scale = vector_codec.quantize(vec)
    paths = {"f2": tmp / f"verify-{n}-f2.eidx", "f3": tmp / f"verify-{n}-f3.eidx"}
    write_index_file(paths["f2"], {}, {"vec_f32": vec, "vec_i8": q8})
    write_index_file(paths["f3"], {}, {"vec_i8": q8, "vec_scale": scale})
    del vec

    def open_once(layout: str, cold: bool) -> float:
        path = paths["f3" if layout == "format3" else "f2"]
        if cold:  # evict the file's pages: the next read comes from the disk
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        rows = frozenset({"vec_f32"})
        started = time.perf_counter()
        if layout == "format3":  # as services/handles.py opens a file now: the int8 rows by sum64
            read_index_file(path, unchecked=frozenset({"vec_i8"}))
        elif layout == "format2":  # both blocks by sum64
            read_index_file(path, unchecked=rows | {"vec_i8"}, random_access=rows)
        else:  # as it did before format 2: the int8 copy by CRC-32, the float32 rows not at all
            read_index_file(path, unchecked=rows, lazy=rows, random_access=rows)
        return time.perf_counter() - started

    out: dict[str, Any] = {"memories": n, "file_mb": round(paths["f3"].stat().st_size / 1e6, 1),
                           "format2_file_mb": round(paths["f2"].stat().st_size / 1e6, 1)}
    names = {"unchecked": "unchecked", "format2": "format2", "format3": "verified"}
    for cold in (False, True):
        for layout, name in names.items():
            open_once(layout, False)  # one untimed open: the same start for each
            best = min(open_once(layout, cold) for _ in range(repeats))
            out[f"{'cold' if cold else 'warm'}_{name}_ms"] = round(best * 1000, 1)
    for path in paths.values():
        path.unlink()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--verification-only", action="store_true", help="only time the checks of every byte at open (no daemons)"
    )
    args = parser.parse_args(argv)
    if args.verification_only:
        with tempfile.TemporaryDirectory(prefix="engram-verify-") as tmp:
            for n in args.sizes:
                print(json.dumps(verification_cost(n, Path(tmp))), flush=True)
        return 0
    import scale_extras as se

    from engram_mcp.index.embeddings import DEFAULT_MODEL, FastEmbedEmbedder

    tmp = Path(tempfile.mkdtemp(prefix="engram-idxopen-"))
    try:
        models = tmp / "models"
        embedder = FastEmbedEmbedder(DEFAULT_MODEL, cache_dir=str(models))
        rnd = random.Random(11)
        pool = np.asarray(
            embedder.embed_documents([se.sentence(rnd) for _ in range(se.DISTINCT_SENTENCES)]), dtype=np.float32
        )
        result = {
            "loadavg_start": list(os.getloadavg()),
            "sizes": [run_size(n, args.repeats, tmp, models, embedder, pool) for n in args.sizes],
        }
        result["loadavg_end"] = list(os.getloadavg())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = args.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) / "index_open"
    out.mkdir(parents=True, exist_ok=True)
    (out / "index_open.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "index_open.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
