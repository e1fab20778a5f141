#!/usr/bin/env python3
"""Bulk work and disk growth (issue 15, items 4 and 5): in-process service, real engine, real model.

Measured, each beside its baseline in the same run:
  - import of an export carrying its vectors (memories/s), with the import's batches sized by
    lock time (`transfer.WRITE_LOCK_BUDGET_MS`) and the lines checked in a child process
    (`import_check`); as baselines, the same import with every line checked in the importing
    process, and one held to 16 memories per lock hold (the batch size before issue 15);
  - embedding new text: import of an export without vectors (every memory embedded, memories/s)
    and the embedder alone (documents/s);
  - export of the loaded store (s, and the seconds that rate gives for 100,000 memories);
  - disk per memory (the store directory, its index file included) after a simulated month of
    daily use over the loaded store: every day `recalls_per_day` recalls (strengthening on, as
    in production) and `stores_per_day` stores, then maintenance and a checkpoint (the daemon's
    at idle); with the maintenance compaction (`lifecycle.compact_if_grown`) and, as the
    baseline, without it. The ratio to the size after loading (checkpointed too) is the issue's
    figure (<= 1.5); the engine's files alone are reported beside it.

Stores are filled as in speed_bench (distinct texts embedded for real once, each memory gets one
of their vectors plus noise) through the real import path. Maintenance runs at real time, so
no memory decays during the simulated month: the growth measured is that of strengthening,
stores and maintenance's own writes.

    .venv/bin/python bench/bulk_bench.py [--quick] [--out DIR] [--before ../main]

`--before CHECKOUT` also runs the import and export with another checkout's engram (in a child
process, beside this checkout's in the same kind of child), for the figures before a change.

writes bulk.json, bulk.md and bulk.png in DIR (default bench/results/<UTC>/bulk/).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(ROOT / "bench")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import speed_bench as sb  # noqa: E402
from common import pyplot  # noqa: E402

FULL = {"source_observations": 20_000, "source_small_observations": 500, "import_n": 10_000, "baseline_import_n": 5_000, "embed_n": 500, "month_n": 10_000, "days": 30,
        "recalls_per_day": 50, "stores_per_day": 20, "distinct_vectors": 1000}
QUICK = {"source_observations": 2_000, "source_small_observations": 200, "import_n": 2_000, "baseline_import_n": 1_000, "embed_n": 100, "month_n": 2_000, "days": 30,
         "recalls_per_day": 10, "stores_per_day": 4, "distinct_vectors": 300}
TARGETS = {"source_import_s": 30, "source_recall_p95_ms": 200, "import_per_s": 5000, "embed_per_s": 200, "export_100k_s": 20, "month_disk_ratio": 1.5}


@contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    """Set module attributes for the duration (the baselines' switches)."""
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def _service(tmp: Path, name: str, embedder) -> tuple[Any, Any, Path]:
    from engram_mcp.services.service import MemoryService, RequestContext

    home, project = tmp / f"home-{name}", tmp / f"proj-{name}"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    svc = MemoryService(home=home, embedder=embedder)
    ctx = RequestContext(project, "bulk-bench")
    svc.handle(ctx, "project")
    return svc, ctx, project / ".claude" / "engram"


def _cleanup(tmp: Path, name: str) -> None:
    shutil.rmtree(tmp / f"home-{name}", ignore_errors=True)
    shutil.rmtree(tmp / f"proj-{name}", ignore_errors=True)


def measure_import(embedder, base: np.ndarray, tmp: Path, n: int, rnd, rng, *, name: str, batch_of_16: bool,
                   export: bool, log: Callable[[str], None], checks_here: bool = False) -> dict[str, Any]:
    """Import n memories that carry their vectors; with `export`, then export them. `checks_here`:
    every line checked in the importing process (no child process, whatever the file's size)."""
    from engram_mcp.services import import_check, transfer

    path = tmp / f"{name}.jsonl"
    sb.write_fill_export(path, n, base, embedder.model_name, rnd, rng)
    svc, ctx, store_dir = _service(tmp, name, embedder)
    out: dict[str, Any] = {"memories": n, "batches": "16 per lock hold" if batch_of_16 else
                           f"sized to ~{transfer.WRITE_LOCK_BUDGET_MS:.0f} ms per lock hold"}
    try:
        switch = {"WRITE_BATCH": 16, "MAX_WRITE_BATCH": 16} if batch_of_16 else {}
        if checks_here:
            out["checks"] = "in the importing process"
        load = os.getloadavg()[0]
        with patched(transfer, **switch), patched(import_check, **({"CHILD_MIN_BYTES": 1 << 62} if checks_here else {})):
            t, cpu = time.perf_counter(), time.process_time()
            res = svc.import_(ctx, path)
            secs, cpu = time.perf_counter() - t, time.process_time() - cpu
        out.update(seconds=round(secs, 2), per_s=round(n / secs, 1), per_cpu_s=round(n / cpu, 1),
                   imported=res["counts"]["memory"],
                   load_avg_1m=round(load, 2), disk_bytes_per_memory=round(sb.dir_bytes(store_dir) / n, 1))
        log(f"  import {name}: {n} in {secs:.1f} s ({n / secs:.0f}/s, load {load:.1f})")
        if export:
            target = tmp / f"{name}-out.jsonl"
            t, cpu = time.perf_counter(), time.process_time()
            ex = svc.export(ctx, target, scopes=("project",))
            secs, cpu = time.perf_counter() - t, time.process_time() - cpu
            out["export"] = {"memories": ex["counts"]["memory"], "seconds": round(secs, 2),
                             "per_s": round(ex["counts"]["memory"] / secs, 1),
                             "per_cpu_s": round(ex["counts"]["memory"] / cpu, 1),
                             "cpu_seconds_for_100k": round(100_000 * cpu / max(1, ex["counts"]["memory"]), 1),
                             "seconds_for_100k": round(100_000 * secs / max(1, ex["counts"]["memory"]), 1),
                             "file_bytes_per_memory": round(target.stat().st_size / max(1, ex["counts"]["memory"]), 1)}
            log(f"  export {name}: {ex['counts']['memory']} in {secs:.1f} s")
    finally:
        svc.close()
        path.unlink(missing_ok=True)
        _cleanup(tmp, name)
    return out


def _percentiles(lat: list[float]) -> dict[str, Any]:
    """p50 / p95 / max of latencies in seconds, as ms, and how many."""
    ms = sorted(x * 1000 for x in lat) or [float("nan")]
    return {"recalls": len(lat), "p50_ms": round(ms[len(ms) // 2], 1), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1),
            "max_ms": round(ms[-1], 1)}


def measure_source_import(embedder, tmp: Path, n: int, log: Callable[[str], None], *, name: str = "source",
                          again: bool = True) -> dict[str, Any]:
    """Issue 35: `import --from mcp-memory` of one entity with `n` observations, with the daemon's
    vector backfill running beside it as in the daemon (daemon/backfill.py: an import of at least
    `import_defer_vectors_min` memories returns before their vectors exist), and another project's
    recall meanwhile (a thread recalling every 50 ms), in two phases: during the import, and after
    it until every vector is in. Then the same import again (nothing changed: no churn)."""
    import threading

    from engram_mcp.daemon.backfill import VectorBackfill
    from engram_mcp.services.importers import run_import
    from engram_mcp.services.service import RequestContext

    svc, ctx, _ = _service(tmp, name, embedder)
    other = RequestContext(tmp / f"proj-{name}-other", "bulk-bench-other")
    (other.project_root / ".git").mkdir(parents=True)
    stopping = threading.Event()
    in_flight = threading.Event()  # a recall being answered: the worker waits for it, as for a daemon request
    worker = VectorBackfill(svc, stopping, in_flight.is_set)
    worker.start()
    try:
        for i in range(200):
            svc.store(other, content=f"Project B fact {i}: the cache for service {i} expires after {i} minutes",
                      scope="project", type="semantic")
        src = tmp / f"{name}-memory.jsonl"
        obs = [f"Observation {i} about the billing service: shard {i % 97} holds customers {i * 13}" for i in range(n)]
        src.write_text(json.dumps({"type": "entity", "name": "Billing", "entityType": "service", "observations": obs}))
        phases: dict[str, list[float]] = {"import": [], "backfill": []}
        phase = ["import"]
        stop = threading.Event()

        def recaller() -> None:
            while not stop.is_set():
                t = time.perf_counter()
                in_flight.set()
                try:
                    svc.recall(other, query="when does the cache of service 42 expire", limit=5)
                finally:
                    in_flight.clear()
                phases[phase[0]].append(time.perf_counter() - t)
                time.sleep(0.05)

        def awaiting() -> int:  # what `engram status` counts, without its table counts
            from engram_mcp.services import backfill

            with svc.lock:
                return backfill.awaiting(svc.access, svc.handle(ctx, "project"))

        th = threading.Thread(target=recaller)
        th.start()
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            res = run_import(svc.access, ctx, source="mcp-memory", path=str(src), scope="project")
            took, cpu = time.perf_counter() - t0, time.process_time() - c0
            phase[0] = "backfill"
            deferred = int(res["imported"]["counts"].get("vectors_deferred", 0))
            left_at_return = awaiting()
            while awaiting() and time.perf_counter() - t0 < 3600:
                time.sleep(0.25)
            all_in = time.perf_counter() - t0
        finally:
            stop.set()
            th.join()
        h = svc.handle(ctx, "project")
        out = {"observations": n, "added": res["added"], "seconds": round(took, 1), "cpu_seconds": round(cpu, 1),
               "vectors_deferred": deferred, "awaiting_at_return": left_at_return,
               "vectors_all_in_seconds": round(all_in, 1), "without_vectors_after": h.index.missing_vectors,
               "recall_import": _percentiles(phases["import"]), "recall_backfill": _percentiles(phases["backfill"])}
        every = phases["import"] + phases["backfill"]
        whole = _percentiles(every)  # the figures of the first version of this measurement, both phases
        out.update(recalls=whole["recalls"], recall_p50_ms=whole["p50_ms"], recall_p95_ms=whole["p95_ms"],
                   recall_max_ms=whole["max_ms"])
        if again:
            t1 = time.perf_counter()
            res2 = run_import(svc.access, ctx, source="mcp-memory", path=str(src), scope="project")
            out.update(again_seconds=round(time.perf_counter() - t1, 1), again_unchanged=res2["unchanged"],
                       again_added=res2["added"])
        log(f"  {n:,} observations of one entity: import {out['seconds']} s ({out['cpu_seconds']} CPU-s, "
            f"{deferred:,} vectors deferred), every vector in at {out['vectors_all_in_seconds']} s; another project's "
            f"recall p50/p95 {out['recall_import']['p50_ms']}/{out['recall_import']['p95_ms']} ms during the import, "
            f"{out['recall_backfill']['p50_ms']}/{out['recall_backfill']['p95_ms']} ms during the backfill"
            + (f"; again {out['again_seconds']} s" if again else ""))
        return out
    finally:
        worker.stop(timeout_s=60)
        svc.close()
        _cleanup(tmp, name)
        shutil.rmtree(tmp / f"proj-{name}-other", ignore_errors=True)


def measure_source_imports(embedder, tmp: Path, n: int, small_n: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The large import (its vectors deferred) and, in the same run, a small one below the
    threshold (embedded during the import, as before): the small one must not regress."""
    out = measure_source_import(embedder, tmp, n, log)
    out["small"] = measure_source_import(embedder, tmp, small_n, log, name="source-small", again=False)
    return out


def measure_checkout(checkout: Path, n: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Import and export of n memories with vectors by another checkout of engram (e.g. the
    main branch, for the before-figures), in a child process importing that checkout's package."""
    import subprocess

    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child-checkout", str(checkout),
                           "--import-n", str(n)], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"the run of {checkout} failed: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    log(f"  {checkout}: import {out['import_per_s']}/s ({out['import_per_cpu_s']}/CPU-s), "
        f"export {out['export_per_s']}/s ({out['export_per_cpu_s']}/CPU-s)")
    return out


def _child_checkout(checkout: Path, n: int) -> None:
    """`measure_checkout`'s child: this module's data, `checkout`'s engram."""
    sys.path[:] = [str(checkout)] + [p for p in sys.path if Path(p).resolve() != ROOT]
    for name in [m for m in sys.modules if m == "engram_mcp" or m.startswith("engram_mcp.")]:
        del sys.modules[name]
    from engram_mcp.index.embeddings import DEFAULT_MODEL, make_embedder
    from engram_mcp.services.service import MemoryService, RequestContext

    import engram_mcp

    assert Path(engram_mcp.__file__).resolve().is_relative_to(checkout.resolve()), engram_mcp.__file__
    tmp = Path(tempfile.mkdtemp(prefix="engram-bulk-checkout-"))
    try:
        rnd, rng = random.Random(3), np.random.default_rng(3)
        base = rng.standard_normal((500, 384)).astype(np.float32)
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        path = tmp / "fill.jsonl"
        sb.write_fill_export(path, n, base, DEFAULT_MODEL, rnd, rng)
        home, project = tmp / "home", tmp / "proj"
        home.mkdir()
        (project / ".git").mkdir(parents=True)
        svc = MemoryService(home=home, embedder=make_embedder(DEFAULT_MODEL, cache_dir=str(tmp / "models")))
        ctx = RequestContext(project, None)
        svc.handle(ctx, "project")
        try:
            t, cpu = time.perf_counter(), time.process_time()
            svc.import_(ctx, path)
            imp, imp_cpu = time.perf_counter() - t, time.process_time() - cpu
            t, cpu = time.perf_counter(), time.process_time()
            svc.export(ctx, tmp / "out.jsonl", scopes=("project",))
            exp, exp_cpu = time.perf_counter() - t, time.process_time() - cpu
        finally:
            svc.close()
        print(json.dumps({"checkout": str(checkout), "memories": n, "import_per_s": round(n / imp, 1),
                          "import_per_cpu_s": round(n / imp_cpu, 1), "export_per_s": round(n / exp, 1),
                          "export_per_cpu_s": round(n / exp_cpu, 1), "load_avg_1m": round(os.getloadavg()[0], 2)}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure_engine_insert(tmp: Path, n: int, batch: int = 500) -> dict[str, Any]:
    """The floor under import: the engine alone INSERTing ready memory records as the import
    writes them (`memory_shape.stored`, done before the clock starts; no checks, no index),
    `batch` per statement; records per CPU-second (the engine's threads included)."""
    from datetime import datetime, timezone

    from engram_mcp.core.ids import new_ulid
    from engram_mcp.storage.memory_shape import stored
    from engram_mcp.storage.repository import record_id
    from engram_mcp.storage.store import SurrealStore

    now = datetime.now(timezone.utc)
    rng = np.random.default_rng(5)
    store = SurrealStore(tmp / "engine-floor", label="bench").open()
    try:
        store.define_database("bench", "floor")
        store.ensure_schema("bench", "floor")
        batches = [[{"id": record_id("memory", new_ulid()), "memory_type": "semantic", "scope": "project",
                     "content": sb.sentence(random.Random(i)), "tags": ["deploy", "cache"], "importance": 0.5,
                     "status": "active", "embedding": rng.standard_normal(384).astype("<f4").tobytes(),
                     "embedding_model": "m", "embedding_dim": 384, "created_at": now, "updated_at": now,
                     "last_accessed_at": now, "status_changed_at": now} for i in range(batch)]
                   for _ in range(max(1, n // batch))]
        batches = [[{**stored(r), "id": r["id"]} for r in rows] for rows in batches]
        t, cpu = time.perf_counter(), time.process_time()
        for rows in batches:
            store.query("bench", "floor", "INSERT INTO memory $rows RETURN NONE", {"rows": rows})
        secs, cpu = time.perf_counter() - t, time.process_time() - cpu
    finally:
        store.close()
        shutil.rmtree(tmp / "engine-floor", ignore_errors=True)
    done = batch * len(batches)
    return {"records": done, "batch": batch, "per_s": round(done / secs, 1), "per_cpu_s": round(done / cpu, 1)}


def measure_embedding(embedder, tmp: Path, n: int, rnd, rng, log: Callable[[str], None]) -> dict[str, Any]:
    """New text: the embedder alone (documents/s) and an import without vectors (memories/s)."""
    texts = [sb.sentence(rnd) for _ in range(n)]
    embedder.embed_documents(texts[:16])
    load = os.getloadavg()[0]
    t = time.perf_counter()
    embedder.embed_documents(texts)
    docs_s = n / (time.perf_counter() - t)
    imp = sb.measure_import_embedding(embedder, tmp, n, rnd, rng)
    log(f"  embedding: {docs_s:.0f} docs/s alone, import without vectors {imp['per_s']}/s")
    return {"texts": n, "docs_per_s": round(docs_s, 1), "import_without_vectors_per_s": imp["per_s"],
            "embedded": imp["embedded"], "load_avg_1m": round(load, 2)}


def simulate_month(embedder, base: np.ndarray, tmp: Path, n: int, *, days: int, recalls_per_day: int,
                   stores_per_day: int, compact: bool, seed: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Load n memories, then `days` of daily use; disk per memory after loading and each day."""
    from engram_mcp.services import lifecycle

    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    name = f"month-{'compact' if compact else 'none'}"
    path = tmp / f"{name}.jsonl"
    sb.write_fill_export(path, n, base, embedder.model_name, rnd, rng)
    svc, ctx, store_dir = _service(tmp, name, embedder)
    out: dict[str, Any] = {"memories": n, "compaction": compact, "days": days}
    try:
        svc.import_(ctx, path)
        path.unlink()
        live = n
        # the index file is part of the disk a store takes: written here as the daemon writes it
        # at idle, so the loaded size and every later one count it alike
        svc.checkpoint()
        loaded = sb.dir_bytes(store_dir)
        loaded_data = sb.dir_bytes(store_dir / "data")
        out["loaded_bytes_per_memory"] = round(loaded / live, 1)
        out["loaded_data_bytes_per_memory"] = round(loaded_data / live, 1)
        per_day, compactions = [], []
        started = time.perf_counter()
        switch = {} if compact else {"COMPACT_MIN_BYTES": 1 << 62}
        with patched(lifecycle, **switch):
            for day in range(days):
                for _ in range(recalls_per_day):
                    svc.recall(ctx, query=sb.query_text(rnd), limit=10)
                for _ in range(stores_per_day):
                    res = svc.store(ctx, content=sb.sentence(rnd), type="semantic", scope="project")
                    live += res.get("action") == "created"
                report = svc.maintain(ctx)
                svc.checkpoint()  # the daemon's checkpoint at idle (it also prunes the change log)
                done = (report.get("project") or {}).get("compaction")
                if done:
                    compactions.append({"day": day + 1, **done})
                per_day.append(round(sb.dir_bytes(store_dir) / live, 1))
        out["simulation_s"] = round(time.perf_counter() - started, 1)
    finally:
        svc.close()
        final = sb.dir_bytes(store_dir)
        final_data = sb.dir_bytes(store_dir / "data")
        _cleanup(tmp, name)
    out.update(bytes_per_memory_by_day=per_day, compactions=compactions, live_memories=live,
               final_bytes_per_memory=round(final / live, 1),
               ratio_to_loaded=round((final / live) / (loaded / n), 3),
               final_data_bytes_per_memory=round(final_data / live, 1),
               data_ratio_to_loaded=round((final_data / live) / (loaded_data / n), 3))
    log(f"  month ({'with' if compact else 'without'} compaction): {out['loaded_bytes_per_memory']:.0f} -> "
        f"{out['final_bytes_per_memory']:.0f} bytes/memory (x{out['ratio_to_loaded']}), "
        f"{len(compactions)} compactions, {out['simulation_s']} s")
    return out


def run_bulk(out_dir: Path | None = None, *, quick: bool = False, seed: int = 11, embedder=None, before: Path | None = None,
             log: Callable[[str], None] = print, **overrides: Any) -> dict[str, Any]:
    """Every measurement of this module; with `out_dir`, bulk.json / bulk.md / bulk.png too."""
    from engram_mcp.index.embeddings import DEFAULT_MODEL, make_embedder

    cfg = {**(QUICK if quick else FULL), **overrides}
    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    tmp = Path(tempfile.mkdtemp(prefix="engram-bulk-"))
    try:
        embedder = embedder or make_embedder(DEFAULT_MODEL, cache_dir=str(tmp / "models"))
        base = embedder.embed_documents([sb.sentence(rnd) for _ in range(cfg["distinct_vectors"])]).astype(np.float32)
        results: dict[str, Any] = {
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": quick, "model": embedder.model_name,
            "settings": cfg, "targets": TARGETS,
            "machine": {"cpus": os.cpu_count(), "load_avg_start": [round(x, 2) for x in os.getloadavg()]},
        }
        log("import from another tool (mcp-memory, one entity):")
        results["source_import"] = measure_source_imports(embedder, tmp, cfg["source_observations"],
                                                          cfg["source_small_observations"], log)
        log("import with vectors (and export):")
        results["import"] = measure_import(embedder, base, tmp, cfg["import_n"], rnd, rng, name="import",
                                           batch_of_16=False, export=True, log=log)
        results["import_checks_here"] = measure_import(embedder, base, tmp, cfg["import_n"], rnd, rng,
                                                       name="import-here", batch_of_16=False, export=False, log=log,
                                                       checks_here=True)
        results["import_baseline"] = measure_import(embedder, base, tmp, cfg["baseline_import_n"], rnd, rng,
                                                    name="import16", batch_of_16=True, export=False, log=log)
        if before is not None:  # the same import and export by another checkout (the code before this one)
            results["before"] = {"this": measure_checkout(ROOT, cfg["import_n"], log),
                                 "before": measure_checkout(Path(before), cfg["import_n"], log)}
        results["engine_insert"] = measure_engine_insert(tmp, cfg["baseline_import_n"])
        log(f"  engine alone: {results['engine_insert']['per_cpu_s']:,.0f} records/CPU-s")
        log("embedding new text:")
        results["embedding"] = measure_embedding(embedder, tmp, cfg["embed_n"], rnd, rng, log)
        log("a simulated month of daily use:")
        month = {k: cfg[k] for k in ("days", "recalls_per_day", "stores_per_day")}
        results["month"] = simulate_month(embedder, base, tmp, cfg["month_n"], compact=True, seed=seed, log=log, **month)
        results["month_baseline"] = simulate_month(embedder, base, tmp, cfg["month_n"], compact=False, seed=seed,
                                                   log=log, **month)
        results["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if out_dir is not None:
        write_results(results, out_dir)
    return results


def _mark(ok: bool) -> str:
    return "yes" if ok else "**no**"


def markdown(r: dict[str, Any]) -> str:
    imp, base, emb = r["import"], r["import_baseline"], r["embedding"]
    ex, mo, mb, t = imp.get("export") or {}, r["month"], r["month_baseline"], r["targets"]
    lines = [
        f"# Bulk work and disk growth ({r['started_utc']}{', quick' if r['quick'] else ''}; load average "
        f"{r['machine']['load_avg_start']} at start, {r['machine'].get('load_avg_end')} at end, {r['machine']['cpus']} CPUs)",
        "",
        "| figure | measured | baseline (same run) | target | met |",
        "|---|---|---|---|---|",
        f"| import with vectors, memories/s (per CPU-second) | {imp['per_s']:,.0f} ({imp['per_cpu_s']:,.0f}) "
        f"({imp['memories']:,}; {imp['batches']}) | "
        f"{base['per_s']:,.0f} ({base['per_cpu_s']:,.0f}) ({base['memories']:,}; {base['batches']}) | >= {t['import_per_s']:,} | "
        f"{_mark(imp['per_s'] >= t['import_per_s'])} |",
        *([f"| the same import with every line checked in the importing process (no child process), memories/s "
           f"(per CPU-second) | {r['import_checks_here']['per_s']:,.0f} ({r['import_checks_here']['per_cpu_s']:,.0f}) "
           f"({r['import_checks_here']['memories']:,}) | | | |"] if "import_checks_here" in r else []),
        f"| the engine alone: INSERT of ready records, records/s (per CPU-second) | "
        f"{r['engine_insert']['per_s']:,.0f} ({r['engine_insert']['per_cpu_s']:,.0f}) "
        f"({r['engine_insert']['records']:,}; {r['engine_insert']['batch']} per statement) | | the floor under import | |",
        f"| embedding new text: import without vectors, memories/s | {emb['import_without_vectors_per_s']:,.0f} "
        f"({emb['texts']}) | embedder alone {emb['docs_per_s']:,.0f} docs/s | >= {t['embed_per_s']} | "
        f"{_mark(emb['import_without_vectors_per_s'] >= t['embed_per_s'])} |",
        f"| export, s for 100,000 (from {ex.get('memories', 0):,} in {ex.get('seconds')} s; CPU-s) | "
        f"{ex.get('seconds_for_100k')} ({ex.get('cpu_seconds_for_100k')}) | "
        f"| <= {t['export_100k_s']} | {_mark((ex.get('seconds_for_100k') or 1e9) <= t['export_100k_s'])} |",
        f"| disk after a simulated month / after loading ({mo['memories']:,} memories, {mo['days']} days) | "
        f"x{mo['ratio_to_loaded']} ({mo['loaded_bytes_per_memory']:,.0f} -> {mo['final_bytes_per_memory']:,.0f} B/memory, "
        f"{len(mo['compactions'])} compactions; the engine's files alone x{mo['data_ratio_to_loaded']}) | "
        f"x{mb['ratio_to_loaded']} without compaction "
        f"({mb['final_bytes_per_memory']:,.0f} B/memory) | <= {t['month_disk_ratio']} | "
        f"{_mark(mo['ratio_to_loaded'] <= t['month_disk_ratio'])} |",
    ]
    si = r.get("source_import")
    if si:
        lines += source_rows(si, t)
    bf = r.get("before")
    if bf:
        this, old = bf["this"], bf["before"]
        lines += [f"| import and export by `{old['checkout']}` (the code before), memories/s (per CPU-second), "
                  f"{old['memories']:,} memories | import {old['import_per_s']:,.0f} ({old['import_per_cpu_s']:,.0f}), "
                  f"export {old['export_per_s']:,.0f} ({old['export_per_cpu_s']:,.0f}) | this checkout, same child run: "
                  f"import {this['import_per_s']:,.0f} ({this['import_per_cpu_s']:,.0f}), export {this['export_per_s']:,.0f} "
                  f"({this['export_per_cpu_s']:,.0f}) | | |"]
    lines += [
        "",
        f"Month: every day {r['settings']['recalls_per_day']} recalls (limit 10, strengthening written as in production) and "
        f"{r['settings']['stores_per_day']} stores, then maintenance and a checkpoint (the daemon's at idle: it "
        "writes the index file and prunes the change log); maintenance compacts a store whose engine files grew "
        "past 1.25x their size after its last compaction. Disk is the store's directory, its index file included, "
        "after loading (checkpointed too) and at the end. Maintenance runs at real time, so nothing decays: the growth "
        "is that of strengthening, stores and maintenance's own writes. Timings are wall time on a shared machine; "
        "compare a figure with its baseline of the same run. Per CPU-second: memories over the CPU time of this "
        "process (every thread, the engine's too), which other load on the machine changes far less than wall time; "
        "the import and export paths run on one thread, so it approximates their rate on an idle machine.",
        "",
        "![disk per memory over the simulated month](bulk.png)",
    ]
    return "\n".join(lines) + "\n"


def source_rows(si: dict[str, Any], t: dict[str, Any]) -> list[str]:
    """The table rows of the mcp-memory imports (issue 35): the large one, its backfill, the small one."""
    rows = []
    for run, what in ((si, "large"), (si.get("small"), "small (below the threshold)")):
        if not run:
            continue
        ri, rb = run.get("recall_import") or {}, run.get("recall_backfill") or {}
        again = f"; again, nothing changed: {run['again_seconds']} s" if "again_seconds" in run else ""
        rows.append(
            f"| `import --from mcp-memory`, {what}: {run['observations']:,} observations of one entity, s (CPU-s); "
            f"vectors deferred | {run['seconds']} ({run['cpu_seconds']}); {run.get('vectors_deferred', 0):,} deferred{again} | "
            f"| <= {t['source_import_s']} s | {_mark(run['seconds'] <= t['source_import_s'])} |")
        rows.append(
            f"| {what}: every vector in, s from the import's start (memories still without one after) | "
            f"{run.get('vectors_all_in_seconds')} ({run.get('without_vectors_after')}) | | | |")
        rows.append(
            f"| {what}: another project's recall p50 / p95 / max ms, during the import; during the backfill | "
            f"{ri.get('p50_ms')} / {ri.get('p95_ms')} / {ri.get('max_ms')} ({ri.get('recalls')} recalls); "
            f"{rb.get('p50_ms')} / {rb.get('p95_ms')} / {rb.get('max_ms')} ({rb.get('recalls')} recalls) | | "
            f"p95 <= {t['source_recall_p95_ms']} ms | "
            f"{_mark(max(ri.get('p95_ms') or 0, rb.get('p95_ms') or 0) <= t['source_recall_p95_ms'])} |")
    return rows


def source_markdown(r: dict[str, Any]) -> str:
    """bulk.md of a `--source-only` run: the mcp-memory imports alone."""
    lines = [
        f"# Import from another tool ({r['started_utc']}; load average {r['machine']['load_avg_start']} at start, "
        f"{r['machine'].get('load_avg_end')} at end, {r['machine']['cpus']} CPUs)",
        "",
        "| figure | measured | baseline (same run) | target | met |",
        "|---|---|---|---|---|",
        *source_rows(r["source_import"], r["targets"]),
        "",
        "An import of at least `import_defer_vectors_min` memories to embed writes them without vectors (found by "
        "keywords at once) and the daemon's backfill (daemon/backfill.py, run here in process as the daemon runs it) "
        "computes them afterwards at low priority. Recall latencies are another project's, one recall every 50 ms.",
    ]
    return "\n".join(lines) + "\n"


def plot(r: dict[str, Any], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for run, label in ((r["month"], "compaction at maintenance"), (r["month_baseline"], "no compaction")):
        days = list(range(0, len(run["bytes_per_memory_by_day"]) + 1))
        a.plot(days, [run["loaded_bytes_per_memory"], *run["bytes_per_memory_by_day"]], marker=".", label=label)
    a.axhline(r["month"]["loaded_bytes_per_memory"] * r["targets"]["month_disk_ratio"], color="grey", ls="--",
              label="1.5x loaded")
    a.set_xlabel("day")
    a.set_ylabel("disk bytes per memory")
    a.set_title("disk over a simulated month")
    a.legend()
    names = ["import (batch by time)", "import (16 per batch)", "import + embed", "export"]
    ex = r["import"].get("export") or {}
    vals = [r["import"]["per_s"], r["import_baseline"]["per_s"], r["embedding"]["import_without_vectors_per_s"],
            ex.get("per_s", 0)]
    b.barh(names, vals)
    b.set_xlabel("memories/s")
    b.set_title("bulk rates")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_results(results: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    js, md = out_dir / "bulk.json", out_dir / "bulk.md"
    js.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown(results), encoding="utf-8")
    plot(results, out_dir / "bulk.png")
    return js, md


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="2k memories, fewer recalls and stores a day")
    ap.add_argument("--out", type=Path, help="result directory (default bench/results/<UTC>/bulk/)")
    ap.add_argument("--month-n", type=int, help="memories in the simulated month")
    ap.add_argument("--import-n", type=int, help="memories in the import/export measurement")
    ap.add_argument("--source-n", type=int, help="observations of the one entity of the mcp-memory import (issue 35)")
    ap.add_argument("--source-small-n", type=int, help="observations of the small mcp-memory import (below the deferral threshold)")
    ap.add_argument("--source-only", action="store_true", help="only the mcp-memory import and the recall beside it")
    ap.add_argument("--before", type=Path, help="another checkout of engram (e.g. main): its import and export too")
    ap.add_argument("--child-checkout", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child_checkout:
        _child_checkout(a.child_checkout, a.import_n or FULL["import_n"])
        return 0
    out = a.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) / "bulk"
    if a.source_only:
        from engram_mcp.index.embeddings import DEFAULT_MODEL, make_embedder

        tmp = Path(tempfile.mkdtemp(prefix="engram-bulk-"))
        try:
            emb = make_embedder(DEFAULT_MODEL, cache_dir=str(tmp / "models"))
            cfg = QUICK if a.quick else FULL
            n = a.source_n or cfg["source_observations"]
            results = {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": a.quick,
                       "model": emb.model_name, "targets": TARGETS,
                       "machine": {"cpus": os.cpu_count(), "load_avg_start": [round(x, 2) for x in os.getloadavg()]},
                       "source_import": measure_source_imports(emb, tmp, n, a.source_small_n or cfg["source_small_observations"],
                                                               print)}
            results["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
            out.mkdir(parents=True, exist_ok=True)
            (out / "bulk.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            (out / "bulk.md").write_text(source_markdown(results), encoding="utf-8")
            print(source_markdown(results))
            print(f"results in {out}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
    overrides = {k: v for k, v in (("month_n", a.month_n), ("import_n", a.import_n),
                                   ("source_observations", a.source_n)) if v}
    results = run_bulk(out, quick=a.quick, before=a.before, **overrides)
    print(markdown(results))
    print(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
