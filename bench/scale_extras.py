#!/usr/bin/env python3
"""What speed_bench.py does not measure, at 1k / 10k / 100k memories.

For each size N a fresh HOME and git project are filled (in process, through
`MemoryService.import_` of a generated JSONL carrying vectors, plus the knowledge graph
written in batched transactions), then:

in process (the real engine and the real model, as the daemon runs them)
  * graph traversal: `search_knowledge_graph` from a named entity, depth 1 and depth 3;
  * maintenance: `MemoryService.maintain` (the lifecycle pass over project + user scopes);
    pass 1 moves what decayed, pass 2 purges what pass 1 archived below the forget
    threshold, later passes are the steady state;
  * promotion of a 200-memory session: `session_end` of a session holding 200 memories
    (about 2/3 qualify, 10% are near-copies of project memories and merge);
as Claude Code runs them (separate processes, the real daemon)
  * MCP server spawn -> `initialize` reply, and spawn -> first `recall_memories` result,
    cold (no daemon running: it is started, loads the model, opens the N-memory store and
    builds its index) and warm (daemon already up, as for a second window);
  * hook wall time, process start to exit: PostToolUse (Edit) and SessionStart (a new
    session each time), against the warm daemon;
  * the daemon's resident memory (VmHWM / VmRSS from /proc) and the store's bytes on disk.

Memory texts are synthetic sentences; vectors are real model embeddings of a few hundred
distinct sentences, each perturbed with Gaussian noise (so no two are identical). The
graph has N/20 entities, N/4 memory->entity mentions and 2 relations per entity.

    python bench/scale_extras.py --sizes 1000 10000 100000 [--quick] [--out DIR]

Writes scale.json and scale.md to --out (default bench/results/<UTC>/scale/).
The function API is `run_scale(sizes, out_dir, quick=False) -> dict`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HOOK = ROOT / "bin" / "engram-hook"
HOOK_INPUTS = ROOT / "tests" / "data" / "claude_hook_inputs"
SESSION_ID = "bench-scale-session"
DISTINCT_SENTENCES = 256
NOISE = 0.35  # Gaussian noise added to a pooled vector (per dimension, relative to 1/sqrt(dim))
SESSION_MEMORIES = 200
WORDS = ("deploy test build cache database migration index query auth token session user project config "
         "docker kubernetes python rust typescript react api endpoint latency error retry timeout queue worker "
         "schema field record backup restore logging metrics alert pipeline branch merge release version "
         "parser lexer compiler linter formatter fixture mock stub flaky ci runner artifact registry secret "
         "vault proxy gateway router handler middleware cookie header payload webhook cron scheduler").split()
ENTITY_TYPES = ("service", "module", "tool", "library", "person", "concept", "file")
RELATIONS = ("depends_on", "uses", "calls", "owns", "replaces", "configures")
SPEC_TARGETS_MS = {  # docs/decisions.md, "Latency targets" (< 10k memories)
    "graph_depth1": 50, "graph_depth3": 200,
}


def summary_ms(seconds: list[float]) -> dict[str, Any]:
    """n, p50/p95/p99/max/mean in milliseconds (numpy linear percentiles, as hooks_bench)."""
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {"n": int(ms.size), "p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "p99_ms": round(float(np.percentile(ms, 99)), 2), "max_ms": round(float(ms.max()), 2), "mean_ms": round(float(ms.mean()), 2)}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def say(msg: str) -> None:
    print(f"  {msg}", flush=True)


def peak_rss_mb_self() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def proc_memory_mb(pid: int) -> dict[str, float]:
    """VmHWM (peak) and VmRSS of a live process, in MB."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, val = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[{"VmHWM": "peak_rss_mb", "VmRSS": "rss_mb"}[key]] = round(int(val.split()[0]) / 1024.0, 1)
    except OSError:
        pass
    return out




def sentence(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 18)))


def iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------------ the world
class World:
    """One HOME + git project, its settings, and the environment the daemon/hooks/server get."""

    def __init__(self, base: Path, models: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.project = base / "project"
        self.user_dir = self.home / ".claude" / "engram"
        (self.project / ".git").mkdir(parents=True)
        self.user_dir.mkdir(parents=True)
        # One model cache for every HOME: the daemon finds the model assembled already.
        (self.home / ".claude" / "engram.local.md").write_text(
            f"---\nembedding_cache_dir: {json.dumps(str(models))}\n---\nscale bench\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "CLAUDE"))}
        env.update(HOME=str(self.home), ENGRAM_HOME=str(self.user_dir), ENGRAM_PYTHON=sys.executable,
                   PYTHONPATH=str(ROOT), CLAUDE_PROJECT_DIR=str(self.project), CLAUDE_CODE_SESSION_ID=SESSION_ID)
        self.env = env

    def project_store_dir(self) -> Path:
        return self.project / ".claude" / "engram"

    def daemon_pid(self) -> int | None:
        from engram_mcp.daemon.client import DaemonClient

        try:
            with DaemonClient(self.user_dir, autostart=False, timeout=30) as c:
                return int(c.call("ping")["pid"])
        except Exception:
            return None

    def shutdown_daemon(self) -> None:
        from engram_mcp.daemon.client import DaemonClient, socket_path

        try:
            DaemonClient(self.user_dir, autostart=False, timeout=30).call("shutdown")
        except Exception:
            pass
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and socket_path(self.user_dir).exists():
            time.sleep(0.1)

    def hook(self, event: str, payload: dict[str, Any]) -> tuple[float, subprocess.CompletedProcess]:
        data = json.dumps(payload)
        started = time.perf_counter()
        proc = subprocess.run([str(HOOK), event], input=data, env=self.env, cwd=str(self.project),
                              capture_output=True, text=True, timeout=120)
        return time.perf_counter() - started, proc

    def hook_payload(self, name: str, session: str, **over: Any) -> dict[str, Any]:
        data = json.loads((HOOK_INPUTS / f"{name}.json").read_text())
        data.update(cwd=str(self.project), session_id=session, **over)
        return data


def pooled_vectors(pool: np.ndarray, n: int, rng: np.random.Generator, noise: float = NOISE) -> np.ndarray:
    """n unit vectors: pool rows round-robin plus Gaussian noise, renormalised."""
    dim = pool.shape[1]
    base = pool[np.arange(n) % len(pool)]
    v = base + rng.standard_normal((n, dim)).astype(np.float32) * (noise / np.sqrt(dim))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def memory_line(key: str, scope: str, rec: dict[str, Any], vec: np.ndarray) -> str:
    from engram_mcp.services.records import vector_bytes

    return json.dumps({"kind": "memory", "scope": scope, "id": key, "record": rec,
                       "vector_b64": base64.b64encode(vector_bytes(vec)).decode()})


def fill(svc, ctx, n: int, pool: np.ndarray, model: str, tmp: Path, rnd: random.Random, rng: np.random.Generator) -> dict[str, Any]:
    """N project memories (+100 user ones) with vectors, then the graph; returns keys and timings."""
    from engram_mcp.core.ids import new_ulid

    now = datetime.now(timezone.utc)
    path = tmp / "fill.jsonl"
    vecs = pooled_vectors(pool, n + 100, rng)
    keys: list[str] = []
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n")
        for i in range(n + 100):
            scope = "project" if i < n else "user"
            # 97% touched in the last day, 3% 1-30 days ago: a store maintained about daily, with some work left.
            days = rnd.uniform(0, 1) if rnd.random() < 0.97 else rnd.uniform(1, 30)
            last = now - timedelta(days=days)
            created = last - timedelta(days=rnd.uniform(0, 30))
            rec = {"memory_type": rnd.choice(["episodic", "semantic", "procedural"]), "scope": scope, "content": sentence(rnd),
                   "tags": [rnd.choice(WORDS)], "importance": round(rnd.uniform(0.2, 0.95), 2), "confidence": 0.7,
                   "access_count": rnd.choice([0, 0, 0, 1, 1, 2, 3]), "status": "active", "source": {},
                   "embedding_model": model, "embedding_dim": int(vecs.shape[1]), "version": 1, "promotion_chain": [], "metadata": {},
                   "created_at": iso(created), "updated_at": iso(last), "last_accessed_at": iso(last), "status_changed_at": iso(created)}
            key = new_ulid()
            if scope == "project":
                keys.append(key)
            f.write(memory_line(key, scope, rec, vecs[i]) + "\n")
    t_import, res = timed(lambda: svc.import_(ctx, path))
    path.unlink()
    if res["counts"]["memory"] != n + 100 or res["counts"]["embedded"]:
        raise RuntimeError(f"fill imported {res['counts']} for {n + 100} memories (vectors must be reused)")
    t_graph, graph = timed(lambda: build_graph(svc, ctx, keys, rnd))
    return {"keys": keys, "sample_vectors": vecs[:200].copy(), "import_s": round(t_import, 2), "import_per_s": round((n + 100) / t_import, 1),
            "graph_s": round(t_graph, 2), "graph": graph["counts"], "entity_names": graph["names"]}


def build_graph(svc, ctx, keys: list[str], rnd: random.Random, batch: int = 500) -> dict[str, Any]:
    """N/20 entities, N/4 mentions, 2 relations per entity, in batched transactions.

    Written with the same statements `import_` uses for graph lines (storage/queries.py), but
    many per transaction: the importer writes them one at a time, which at 100k memories
    would take longer than the rest of this benchmark.
    """
    from surrealdb import RecordID

    from engram_mcp.services.graph import name_key
    from engram_mcp.services.records import now_dt
    from engram_mcp.storage import queries as q

    h = svc.handle(ctx, "project")
    n_ent = max(50, len(keys) // 20)
    names = [f"{rnd.choice(WORDS).title()}{rnd.choice(WORDS).title()}{i}" for i in range(n_ent)]
    ts = now_dt()
    mentions = [0] * n_ent
    stmts: list[tuple[str, dict[str, Any]]] = []
    mention_stmts, relation_stmts = [], []
    for k in rnd.sample(keys, len(keys) // 4):
        e = rnd.randrange(n_ent)
        mentions[e] += 1
        mention_stmts.append((q.IMPORT_MENTION, {"memory": RecordID("memory", k), "entity": RecordID("entity", f"e{e}"),
                                                 "relationship": "mentions", "created_at": ts}))
    for i, name in enumerate(names):
        stmts.append((q.IMPORT_ENTITY, {"key": f"e{i}", "record": {
            "name": name, "name_key": name_key(name), "entity_type": rnd.choice(ENTITY_TYPES), "description": "",
            "mention_count": mentions[i], "created_at": ts, "updated_at": ts}}))
        for _ in range(2):
            j = rnd.randrange(n_ent)
            if j != i:
                relation_stmts.append((q.IMPORT_RELATION, {"a": RecordID("entity", f"e{i}"), "b": RecordID("entity", f"e{j}"),
                                                           "relation_type": rnd.choice(RELATIONS), "weight": 0.5, "evidence": [],
                                                           "created_at": ts}))
    stmts += mention_stmts + relation_stmts
    with svc.lock:
        for i in range(0, len(stmts), batch):
            h.tx(stmts[i:i + batch])
    return {"counts": {"entities": n_ent, "mentions": len(mention_stmts), "relations": len(relation_stmts)}, "names": names}


# ------------------------------------------------------------------------------------ in-process
def measure_graph(svc, ctx, names: list[str], rnd: random.Random, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for depth in (1, 3):
        times, found = [], []
        for _ in range(repeats):
            name = rnd.choice(names)
            dt, res = timed(lambda: svc.graph_search(ctx, entity=name, depth=depth, limit=20, include_memories=True))
            times.append(dt)
            found.append(len(res["entities"]))
        out[f"depth{depth}"] = summary_ms(times) | {"mean_entities_returned": round(float(np.mean(found)), 1),
                                                    "spec_target_ms": SPEC_TARGETS_MS[f"graph_depth{depth}"]}
    return out


def measure_maintenance(svc, ctx, passes: int) -> dict[str, Any]:
    runs = []
    for i in range(passes):
        dt, report = timed(lambda: svc.maintain(ctx))
        runs.append({"pass": i + 1, "ms": round(dt * 1000, 1), "moves": report.get("project", {})})
    steady = [r["ms"] / 1000.0 for r in runs[2:]] or [r["ms"] / 1000.0 for r in runs[-1:]]
    return {"passes": runs, "steady_state": summary_ms(steady),
            "note": "pass 1 moves what decayed (active -> archived/consolidated), pass 2 purges what pass 1 archived "
                    "below the forget threshold, later passes are the steady state"}


def measure_promotion(svc, ctx_project, pool: np.ndarray, project_vecs_sample: np.ndarray, model: str, tmp: Path, repeats: int,
                      rnd: random.Random, rng: np.random.Generator) -> dict[str, Any]:
    """session_end of sessions holding SESSION_MEMORIES memories each."""
    from engram_mcp.core.ids import new_ulid
    from engram_mcp.services.service import RequestContext

    runs = []
    times = []
    for r in range(repeats):
        sctx = RequestContext(ctx_project.project_root, f"bench-promote-{r}-{rnd.randrange(10**9)}")
        svc.session_start(sctx, {"source": "startup"})
        now = datetime.now(timezone.utc)
        fresh = pooled_vectors(pool, SESSION_MEMORIES, rng, noise=1.3)  # cosine ~0.6 to the pool: new knowledge
        n_copies = SESSION_MEMORIES // 10
        fresh[:n_copies] = project_vecs_sample[rng.integers(0, len(project_vecs_sample), n_copies)]  # re-learnt: merges
        path = tmp / f"session{r}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for i in range(SESSION_MEMORIES):
                rec = {"memory_type": rnd.choice(["episodic", "semantic", "procedural", "working"]) if i >= n_copies else "semantic",
                       "scope": "session", "content": sentence(rnd), "tags": [rnd.choice(WORDS)],
                       "importance": round(rnd.uniform(0.3, 0.9) if i >= n_copies else 0.8, 2), "confidence": 0.7,
                       "access_count": rnd.choice([0, 0, 1, 2]), "status": "created", "source": {}, "embedding_model": model,
                       "embedding_dim": int(fresh.shape[1]), "version": 1, "promotion_chain": [], "metadata": {},
                       "created_at": iso(now), "updated_at": iso(now), "last_accessed_at": iso(now), "status_changed_at": iso(now)}
                f.write(memory_line(new_ulid(), "session", rec, fresh[i]) + "\n")
        res = svc.import_(sctx, path)
        path.unlink()
        if res["counts"]["memory"] != SESSION_MEMORIES:
            raise RuntimeError(f"session fill imported {res['counts']}")
        dt, end = timed(lambda: svc.session_end(sctx))
        times.append(dt)
        runs.append({"ms": round(dt * 1000, 1), "promoted": end.get("promoted"), "merged": end.get("merged"),
                     "not_promoted": end.get("not_promoted")})
    return {"session_memories": SESSION_MEMORIES, "runs": runs, "latency": summary_ms(times)}


# ------------------------------------------------------------------------------------ processes
async def _mcp_first_recall(world: World, query: str) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "engram_mcp.interfaces.server"], env=world.env, cwd=str(world.project))
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=600) as session:
                init = await session.initialize()
                t_init = time.perf_counter() - started
                if init.server_info.name != "engram":
                    raise RuntimeError(f"unexpected server {init.server_info.name}")
                res = await session.call_tool("recall_memories", {"query": query, "limit": 10})
                t_recall = time.perf_counter() - started
                body = json.loads(res.content[0].text)
    if res.is_error or body.get("degraded"):
        raise RuntimeError(f"first recall failed or degraded: {json.dumps(body)[:400]}")
    return {"initialize_s": t_init, "first_recall_s": t_recall, "memories": len(body.get("memories", []))}


def measure_mcp(world: World, cold: int, warm: int, rnd: random.Random) -> dict[str, Any]:
    cold_runs, warm_runs = [], []
    for i in range(cold):
        world.shutdown_daemon()
        cold_runs.append(asyncio.run(_mcp_first_recall(world, sentence(rnd))))
        say(f"MCP cold {i + 1}/{cold}: initialize {cold_runs[-1]['initialize_s'] * 1000:.0f} ms, "
            f"first recall {cold_runs[-1]['first_recall_s']:.1f} s")
    for _ in range(warm):
        warm_runs.append(asyncio.run(_mcp_first_recall(world, sentence(rnd))))
    init = [r["initialize_s"] for r in cold_runs + warm_runs]
    return {
        "spawn_to_initialize": summary_ms(init),
        "spawn_to_first_recall_cold": summary_ms([r["first_recall_s"] for r in cold_runs]),
        "spawn_to_first_recall_warm": summary_ms([r["first_recall_s"] for r in warm_runs]),
        "note": "cold: no daemon running (the first recall starts it, loads the model, opens the store and builds its index); "
                "warm: the daemon is already up (a second Claude Code window)",
    }


def measure_hooks(world: World, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    dt, proc = world.hook("SessionStart", world.hook_payload("SessionStart", "scale-first"))
    if proc.returncode != 0:
        raise RuntimeError(f"SessionStart exit {proc.returncode}: {proc.stderr[-400:]}")
    out["first_session_start_ms"] = round(dt * 1000, 1)  # first hook process of the run (maintenance already done)
    cases = {
        "PostToolUse (Edit)": lambda i: ("PostToolUse", world.hook_payload("PostToolUse.Edit", "scale-hooks", tool_input={
            "file_path": str(world.project / "a.py"), "old_string": f"x = {i}", "new_string": f"x = {i + 1}"})),
        "SessionStart (warm)": lambda i: ("SessionStart", world.hook_payload("SessionStart", f"scale-start-{i}")),
    }
    from hooks_bench import time_hooks

    for name, times in time_hooks(world, cases, repeats).items():
        out[name] = summary_ms(times)
    return out


# ------------------------------------------------------------------------------------ driver
def run_size(n: int, embedder, pool: np.ndarray, models: Path, tmp: Path, quick: bool, seed: int) -> dict[str, Any]:
    from engram_mcp.services.service import MemoryService, RequestContext

    rnd, rng = random.Random(seed + n), np.random.default_rng(seed + n)
    world = World(tmp / f"n{n}", models)
    big = n >= 100_000
    reps = {"graph": 10 if quick else (30 if big else 50), "maint": 3 if quick else 6, "promote": 1 if quick else (2 if big else 3),
            "cold": 1 if quick else 2, "warm": 3 if quick else 5, "hooks": 8 if quick else 30}
    result: dict[str, Any] = {"memories": n, "repeats": reps}
    svc = MemoryService(home=world.home, user_dir=world.user_dir, embedder=embedder)
    ctx = RequestContext(world.project)
    try:
        say(f"[{n}] filling {n} project memories + graph")
        filled = fill(svc, ctx, n, pool, embedder.model_name, tmp, rnd, rng)
        result["fill"] = {k: v for k, v in filled.items() if k not in ("keys", "entity_names", "sample_vectors")}
        say(f"[{n}] filled: import {filled['import_s']} s ({filled['import_per_s']}/s), graph {filled['graph_s']} s {filled['graph']}")
        sample_vecs = filled["sample_vectors"]
        result["graph_traversal"] = measure_graph(svc, ctx, filled["entity_names"], rnd, reps["graph"])
        g = result["graph_traversal"]
        say(f"[{n}] graph depth 1 p95 {g['depth1']['p95_ms']} ms, depth 3 p95 {g['depth3']['p95_ms']} ms")
        result["maintenance"] = measure_maintenance(svc, ctx, reps["maint"])
        say(f"[{n}] maintenance passes (ms): {[r['ms'] for r in result['maintenance']['passes']]}")
        result["promotion"] = measure_promotion(svc, ctx, pool, sample_vecs, embedder.model_name, tmp, reps["promote"], rnd, rng)
        say(f"[{n}] session_end of {SESSION_MEMORIES} memories (ms): {[r['ms'] for r in result['promotion']['runs']]}")
    finally:
        svc.close()
    from engram_mcp.core.paths import dir_bytes

    store_bytes = dir_bytes(world.project_store_dir())
    result["disk"] = {"project_store_bytes": store_bytes, "bytes_per_memory": round(store_bytes / max(n, 1), 1),
                      "note": "project store directory (memories, vectors, graph, history, sessions) after the run, / N"}
    result["bench_process_peak_rss_mb"] = peak_rss_mb_self()
    try:
        result["mcp"] = measure_mcp(world, reps["cold"], reps["warm"], rnd)
        m = result["mcp"]
        say(f"[{n}] MCP spawn->initialize p50 {m['spawn_to_initialize']['p50_ms']} ms; first recall warm p50 "
            f"{m['spawn_to_first_recall_warm']['p50_ms']} ms, cold p50 {m['spawn_to_first_recall_cold']['p50_ms']} ms")
        result["hooks"] = measure_hooks(world, reps["hooks"])
        say(f"[{n}] hooks p95: PostToolUse {result['hooks']['PostToolUse (Edit)']['p95_ms']} ms, "
            f"SessionStart {result['hooks']['SessionStart (warm)']['p95_ms']} ms")
        pid = world.daemon_pid()
        if pid:
            result["daemon_memory"] = proc_memory_mb(pid) | {"note": "the owner process after serving this size (model + index + engine)"}
    finally:
        world.shutdown_daemon()
        shutil.rmtree(world.base, ignore_errors=True)
    return result


def run_scale(sizes: list[int], out_dir: Path | None = None, quick: bool = False, seed: int = 11) -> dict[str, Any]:
    from engram_mcp.index.embeddings import DEFAULT_MODEL, FastEmbedEmbedder

    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="engram-scale-"))
    models = tmp / "models"
    results: dict[str, Any] = {"sizes": sizes, "quick": quick, "started_utc": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
                               "loadavg_start": [round(x, 2) for x in os.getloadavg()], "runs": []}
    try:
        embedder = FastEmbedEmbedder(DEFAULT_MODEL, cache_dir=str(models))
        rnd = random.Random(seed)
        texts = [sentence(rnd) for _ in range(DISTINCT_SENTENCES)]
        t_embed, pool = timed(lambda: np.asarray(embedder.embed_documents(texts), dtype=np.float32))
        results["model"] = embedder.model_name
        results["vector_pool"] = {"distinct_sentences": DISTINCT_SENTENCES, "embed_s": round(t_embed, 2), "noise": NOISE}
        for n in sizes:
            print(f"scale extras at {n} memories", flush=True)
            results["runs"].append(run_size(n, embedder, pool, models, tmp, quick, seed))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    results["wall_s"] = round(time.perf_counter() - started, 1)
    results["bench_process_peak_rss_mb"] = peak_rss_mb_self()
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "scale.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        (out_dir / "scale.md").write_text(markdown(results), encoding="utf-8")
    return results


def _cell(d: dict[str, Any] | None) -> str:
    if not d or not d.get("n"):
        return "-"
    return f"{d['p50_ms']:g} / {d['p95_ms']:g} / {d['p99_ms']:g} (n={d['n']})"


def markdown(results: dict[str, Any]) -> str:
    rows = ["| memories | graph depth 1 | graph depth 3 | session_end (200) | maintenance (steady) | MCP spawn->initialize | "
            "first recall warm | first recall cold | PostToolUse hook | SessionStart hook |", "|---" * 10 + "|"]
    extra = ["| memories | maintenance passes ms | disk bytes/memory | daemon peak RSS MB | fill (import/s, graph s) |",
             "|---|---|---|---|---|"]
    for r in results["runs"]:
        mcp, hooks = r.get("mcp", {}), r.get("hooks", {})
        rows.append(f"| {r['memories']} | {_cell(r['graph_traversal']['depth1'])} | {_cell(r['graph_traversal']['depth3'])} | "
                    f"{_cell(r['promotion']['latency'])} | {_cell(r['maintenance']['steady_state'])} | {_cell(mcp.get('spawn_to_initialize'))} | "
                    f"{_cell(mcp.get('spawn_to_first_recall_warm'))} | {_cell(mcp.get('spawn_to_first_recall_cold'))} | "
                    f"{_cell(hooks.get('PostToolUse (Edit)'))} | {_cell(hooks.get('SessionStart (warm)'))} |")
        extra.append(f"| {r['memories']} | {', '.join(str(p['ms']) for p in r['maintenance']['passes'])} | "
                     f"{r['disk']['bytes_per_memory']} | "
                     f"{r.get('daemon_memory', {}).get('peak_rss_mb', '-')} | {r['fill']['import_per_s']}, {r['fill']['graph_s']} |")
    return ("# engram scale extras\n\np50 / p95 / p99 ms.\n\n" + "\n".join(rows) + "\n\n" + "\n".join(extra) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (structure check)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    out = a.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) / "scale"
    results = run_scale(a.sizes, out, quick=a.quick)
    print(markdown(results))
    print(f"wrote {out / 'scale.json'} ({results['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
