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




def process_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


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

    def project_store_dir(self, project: Path | None = None) -> Path:
        return (project or self.project) / ".claude" / "engram"

    def add_project(self, name: str) -> Path:
        """Another git project under the same HOME (the daemon holding several project stores)."""
        project = self.base / name
        (project / ".git").mkdir(parents=True)
        return project

    def env_for(self, design_env: dict[str, str], project: Path | None = None) -> dict[str, str]:
        """The processes' environment under one design (bench/scale_extras.py DESIGNS), in `project`."""
        env = {**self.env, **design_env}
        if project is not None:
            env["CLAUDE_PROJECT_DIR"] = str(project)
        return env

    def daemon_pid(self) -> int | None:
        from engram_mcp.daemon.client import DaemonClient

        try:
            with DaemonClient(self.user_dir, autostart=False, timeout=30) as c:
                return int(c.call("ping")["pid"])
        except Exception:
            return None

    def shutdown_daemon(self) -> None:
        """Stop the daemon and wait for its process to end: it removes its socket first, then
        closes the stores (writing what it keeps in memory), which the next cold start must see."""
        from engram_mcp.daemon.client import DaemonClient, socket_path

        pid = self.daemon_pid()
        try:
            DaemonClient(self.user_dir, autostart=False, timeout=30).call("shutdown")
        except Exception:
            pass
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (socket_path(self.user_dir).exists() or (pid and process_alive(pid))):
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


def fill(svc, ctx, n: int, pool: np.ndarray, model: str, tmp: Path, rnd: random.Random, rng: np.random.Generator,
         n_user: int = 100, graph: bool = True) -> dict[str, Any]:
    """N project memories (+ n_user user ones) with vectors, then the graph; returns keys and timings."""
    from engram_mcp.core.ids import new_ulid

    now = datetime.now(timezone.utc)
    path = tmp / "fill.jsonl"
    total = n + n_user
    vecs = pooled_vectors(pool, total, rng)
    keys: list[str] = []
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n")
        for i in range(total):
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
    if res["counts"]["memory"] != total or res["counts"]["embedded"]:
        raise RuntimeError(f"fill imported {res['counts']} for {total} memories (vectors must be reused)")
    out = {"keys": keys, "sample_vectors": vecs[:200].copy(), "import_s": round(t_import, 2), "import_per_s": round(total / t_import, 1)}
    if graph:
        t_graph, g = timed(lambda: build_graph(svc, ctx, keys, rnd))
        out.update(graph_s=round(t_graph, 2), graph=g["counts"], entity_names=g["names"])
    return out


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
async def _mcp_first_recall(world: World, query: str, env: dict[str, str] | None = None, project: Path | None = None,
                            allow_partial: bool = False) -> dict[str, Any]:
    """MCP server spawn -> `initialize` -> first `recall_memories` answer, as Claude Code runs it.

    `allow_partial`: a recall that says it answered from a partial index (the index being
    rebuilt in the background) is recorded rather than refused."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    project = project or world.project
    params = StdioServerParameters(command=sys.executable, args=["-m", "engram_mcp.interfaces.server"], env=env or world.env,
                                   cwd=str(project))
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
    if res.is_error or (body.get("degraded") and not allow_partial):
        raise RuntimeError(f"first recall failed or degraded: {json.dumps(body)[:400]}")
    return {"initialize_s": t_init, "first_recall_s": t_recall, "memories": len(body.get("memories", [])),
            "degraded": bool(body.get("degraded")), "warnings": body.get("warnings") or body.get("scope_warnings")}


def start_daemon(world: World, env: dict[str, str]) -> tuple[subprocess.Popen, Any]:
    """Spawn the daemon (none running) and connect to it once it answers a ping: the process and
    a `DaemonClient`. Raises if the daemon exits before answering."""
    from engram_mcp.daemon.client import DaemonClient

    proc = subprocess.Popen([sys.executable, "-m", "engram_mcp.daemon.process", "--user-dir", str(world.user_dir)],
                            env=env, cwd=str(world.project), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    while True:
        try:
            client = DaemonClient(world.user_dir, autostart=False, timeout=600)
            client.call("ping")
            return proc, client
        except Exception:
            if proc.poll() is not None:
                raise RuntimeError(f"the daemon exited with {proc.returncode} before answering") from None
            time.sleep(0.005)


def daemon_first_recall(world: World, query: str, env: dict[str, str], session_id: str) -> dict[str, Any]:
    """Daemon spawn -> first `recall` answer with no daemon running (the cold first recall the targets judge:
    the daemon starts, loads the model, opens the stores and answers), through its socket as
    every client talks to it. The MCP server's own start is left out (`_mcp_first_recall` has it)."""
    started = time.perf_counter()
    _proc, client = start_daemon(world, env)
    with client:
        body = client.call("recall", {"query": query, "limit": 10}, project_root=str(world.project), session_id=session_id)
        took = time.perf_counter() - started
        # a listing waits for a background rebuild to finish, so the shutdown that follows writes
        # the whole index file, as the MCP-started daemon's does after its idle moment
        client.call("list", {"limit": 1}, project_root=str(world.project))
    return {"first_recall_s": took, "memories": len(body.get("memories", [])), "degraded": bool(body.get("degraded"))}


def measure_mcp(world: World, cold_runs: list[dict[str, Any]], warm: int, rnd: random.Random) -> dict[str, Any]:
    """Warm runs here; the cold ones are the default design's, measured by `measure_cold`."""
    warm_runs = []
    if world.daemon_pid() is None:  # the first run starts the daemon: not a warm one
        asyncio.run(_mcp_first_recall(world, sentence(rnd)))
    for _ in range(warm):
        warm_runs.append(asyncio.run(_mcp_first_recall(world, sentence(rnd))))
    init = [r["initialize_s"] for r in cold_runs + warm_runs]
    return {
        "spawn_to_initialize": summary_ms(init),
        "spawn_to_first_recall_cold": summary_ms([r["first_recall_s"] for r in cold_runs]),
        "spawn_to_first_recall_warm": summary_ms([r["first_recall_s"] for r in warm_runs]),
        "note": "cold: no daemon running (the first recall starts it, loads the model, opens the store and loads or builds its "
                "index), the default design's runs of `designs`; warm: the daemon is already up (a second Claude Code window)",
    }


# ------------------------------------------------------------------------------------ designs
# The previous design (the derived index rebuilt from the store by every process that opens it)
# against the new one (the index persisted next to the store), measured on the same stores in
# the same run. A design is the environment its processes get; the new design has two cold
# cases: its index files absent (the first open after the upgrade: built) and present (loaded).
INDEX_PERSIST_KEY = "index_persist"  # the config key that turns the persisted index off (the previous design)
PREVIOUS, NEW = "previous", "new"
REBUILT, INDEX_MISSING, INDEX_PERSISTED = "index rebuilt", "index missing", "index persisted"
STEADY_RECALLS = 5
STEADY_IDLE_S = 2.0
TARGETS = {  # issue 15, "Done means"
    "cold_first_recall_s": {10_000: 0.5, 100_000: 1.5},
    "peak_rss_mb": {100_000: 800.0},
    "hybrid_p95_ms": {10_000: 10.0, 100_000: 15.0},
}


def designs() -> dict[str, dict[str, str]]:
    """design -> the environment its processes get (previous first)."""
    from engram_mcp.core.config import ENV_PREFIX
    from engram_mcp.core.config_keys import Config

    if INDEX_PERSIST_KEY not in Config.__dataclass_fields__:  # this code has only the previous design
        return {PREVIOUS: {}}
    env = ENV_PREFIX + INDEX_PERSIST_KEY.upper()
    return {PREVIOUS: {env: "false"}, NEW: {env: "true"}}


def default_design() -> str:
    return NEW if NEW in designs() else PREVIOUS


def design_cases(design: str) -> list[str]:
    return [REBUILT] if design == PREVIOUS else [INDEX_MISSING, INDEX_PERSISTED]


def persisted_index_paths(store_dir: Path) -> list[Path]:
    """The persisted index files of a store directory (none in the previous design)."""
    from engram_mcp.services import handles

    dirname = getattr(handles, "INDEX_DIRNAME", None)
    return [Path(store_dir) / dirname] if dirname else []


def remove_persisted_index(store_dir: Path) -> int:
    """Delete the persisted index of a store (the first open after the upgrade); returns bytes removed."""
    removed = 0
    for path in persisted_index_paths(store_dir):
        if path.is_dir():
            from engram_mcp.core.paths import dir_bytes

            removed += dir_bytes(path)
            shutil.rmtree(path)
        elif path.exists():
            removed += path.stat().st_size
            path.unlink()
    return removed


def persisted_index_bytes(store_dir: Path) -> int:
    from engram_mcp.core.paths import dir_bytes

    return sum(dir_bytes(p) if p.is_dir() else p.stat().st_size for p in persisted_index_paths(store_dir) if p.exists())


COLD_OPEN_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from pathlib import Path
sys.path.insert(0, {root!r})
from engram_mcp.services.service import MemoryService, RequestContext
t_import = time.perf_counter() - t0
def mem():
    out = {{}}
    for line in Path("/proc/self/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmHWM", "VmRSS"):
            out[k] = round(int(v.split()[0]) / 1024.0, 1)
    return out
before = mem()
svc = MemoryService(home=Path({home!r}), user_dir=Path({user_dir!r}))
t = time.perf_counter()
h = svc.handle(RequestContext(Path({project!r})), "project")
open_s = time.perf_counter() - t
after = mem()
n = len(h.index) if hasattr(h.index, "__len__") else None
status = getattr(h, "index_status", None)
svc.close()
print(json.dumps({{"open_s": open_s, "import_s": t_import, "rss_before_mb": before["VmRSS"], "rss_after_mb": after["VmRSS"],
                   "peak_rss_mb": after["VmHWM"], "indexed": n, "index_status": status}}))
"""


def cold_open(world: World, env: dict[str, str], project: Path | None = None) -> dict[str, Any]:
    """A fresh process opens the project store and makes its index ready (no model: opening only)."""
    project = project or world.project
    code = COLD_OPEN_CHILD.format(root=str(ROOT), home=str(world.home), user_dir=str(world.user_dir), project=str(project))
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(project), capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"cold open failed: {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def steady_recalls(world: World, rnd: random.Random, projects: list[Path], recalls: int = STEADY_RECALLS) -> None:
    from engram_mcp.daemon.client import DaemonClient

    with DaemonClient(world.user_dir, autostart=False, timeout=600) as c:
        for project in projects:
            for _ in range(recalls):
                c.call("recall", {"query": sentence(rnd), "limit": 10}, project_root=str(project))


def measure_cold(world: World, design: str, case: str, reps: int, rnd: random.Random) -> dict[str, Any]:
    """Cold open of the store, then cold first recall from MCP spawn (the server starts the daemon),
    the daemon's peak and steady RSS after a few more recalls and an idle moment, then cold first
    recall from the daemon's own spawn (`daemon_first_recall`, judged against the target)."""
    env = world.env_for(designs()[design])
    store_dir = world.project_store_dir()
    opens, recalls, mems, daemon_starts = [], [], [], []
    for i in range(reps):
        world.shutdown_daemon()
        if case == INDEX_MISSING:
            remove_persisted_index(store_dir)
            remove_persisted_index(world.user_dir)
        present = persisted_index_bytes(store_dir)
        if case == INDEX_PERSISTED and not present:
            raise RuntimeError("no persisted index to load: the store was closed without writing it")
        opens.append(cold_open(world, env) | {"index_bytes_before": present})
        if case == INDEX_MISSING:
            remove_persisted_index(store_dir)
            remove_persisted_index(world.user_dir)
        elif case == INDEX_PERSISTED and not persisted_index_bytes(store_dir):
            raise RuntimeError("no persisted index to load: the store was closed without writing it")
        log = world.user_dir / "logs" / "engramd.log"
        log_start = log.stat().st_size if log.exists() else 0
        # Claude Code starts each conversation with a new session id: a session database the store
        # has never held, as the first recall of a real session finds it.
        fresh_session = {**env, "CLAUDE_CODE_SESSION_ID": f"{SESSION_ID}-{design}-{case}-{i}-{rnd.randrange(10**9)}"}
        recalls.append(asyncio.run(_mcp_first_recall(world, sentence(rnd), env=fresh_session,
                                                     allow_partial=case == INDEX_MISSING)))
        text = log.read_text(errors="replace")[log_start:] if log.exists() else ""
        recalls[-1]["answered_early"] = "(answering before the store opens)" in text
        recalls[-1]["daemon_log"] = [ln[:200] for ln in text.splitlines() if " in " in ln and " s" in ln][:12]
        pid = world.daemon_pid()
        first = proc_memory_mb(pid) if pid else {}
        steady_recalls(world, rnd, [world.project])
        time.sleep(STEADY_IDLE_S)
        after = proc_memory_mb(pid) if pid else {}
        mems.append({"after_first_recall": first, "steady": after})
        # the same cold start from the daemon's spawn (no MCP server starting beside it)
        world.shutdown_daemon()
        if case == INDEX_MISSING:
            remove_persisted_index(store_dir)
            remove_persisted_index(world.user_dir)
        daemon_starts.append(daemon_first_recall(world, sentence(rnd), env, f"{SESSION_ID}-daemon-{rnd.randrange(10**9)}"))
        say(f"{design} / {case} {i + 1}/{reps}: cold open {opens[-1]['open_s']:.2f} s (+{opens[-1]['rss_after_mb'] - opens[-1]['rss_before_mb']:.0f} MB), "
            f"cold first recall {daemon_starts[-1]['first_recall_s']:.2f} s from the daemon's start, "
            f"{recalls[-1]['first_recall_s']:.2f} s from the MCP server's, daemon peak {after.get('peak_rss_mb')} MB, "
            f"steady {after.get('rss_mb')} MB")
    world.shutdown_daemon()
    return {
        "design": design, "case": case, "env": designs()[design], "repeats": reps,
        "cold_open": summary_ms([o["open_s"] for o in opens]) | {
            "store_rss_mb": max(round(o["rss_after_mb"] - o["rss_before_mb"], 1) for o in opens),
            "process_peak_rss_mb": max(o["peak_rss_mb"] for o in opens), "indexed": opens[-1].get("indexed"),
            "index_status": [o.get("index_status") for o in opens]},
        "cold_first_recall": summary_ms([r["first_recall_s"] for r in daemon_starts]) | {
            "partial_answers": sum(r["degraded"] for r in daemon_starts),
            "memories_returned": [r["memories"] for r in daemon_starts]},
        "mcp_first_recall": summary_ms([r["first_recall_s"] for r in recalls]) | {
            "partial_answers": sum(r["degraded"] for r in recalls), "memories_returned": [r["memories"] for r in recalls]},
        "daemon_rss": {"peak_mb": max(m["steady"].get("peak_rss_mb", 0.0) for m in mems),
                       "steady_mb": max(m["steady"].get("rss_mb", 0.0) for m in mems),
                       "after_first_recall_mb": max(m["after_first_recall"].get("rss_mb", 0.0) for m in mems)},
        "runs": {"cold_open": opens, "cold_first_recall": recalls, "daemon_start": daemon_starts, "daemon_memory": mems},
    }


def measure_designs(world: World, n: int, reps: int, rnd: random.Random) -> dict[str, Any]:
    """Every design and cold case on the same store; the store's bytes per memory per design."""
    store_dir = world.project_store_dir()
    from engram_mcp.core.paths import dir_bytes

    out: dict[str, Any] = {}
    for design in designs():
        cases = {}
        for case in design_cases(design):
            rebuilds = case in (REBUILT, INDEX_MISSING)  # a minute or two each at 100k: one run there
            cases[case] = measure_cold(world, design, case, max(1, reps - 1) if rebuilds and n >= 100_000 else reps, rnd)
        total = dir_bytes(store_dir)
        index_bytes = persisted_index_bytes(store_dir)
        if design == PREVIOUS:  # index files left by the fill (the code's default) are not the previous design's
            total, index_bytes = total - index_bytes, 0
        out[design] = {"cases": cases, "disk": {"store_bytes": total, "persisted_index_bytes": index_bytes,
                                                "bytes_per_memory": round(total / max(n, 1), 1),
                                                "index_bytes_per_memory": round(index_bytes / max(n, 1), 1)}}
    return out


def measure_multi_store(base: Path, models: Path, embedder, pool: np.ndarray, per_store: int, n_projects: int, rnd: random.Random,
                        rng: np.random.Generator, tmp: Path) -> dict[str, Any]:
    """One daemon holding `n_projects` project stores plus the user store, `per_store` memories each.

    The daemon is started by an MCP first recall in project 1, then recalls in every other
    project (each recall reads the project and the user store); its VmHWM / VmRSS after
    that and after an idle moment, per design."""
    from engram_mcp.services.service import MemoryService, RequestContext

    world = World(base, models)
    projects = [world.project] + [world.add_project(f"project{i + 2}") for i in range(n_projects - 1)]
    svc = MemoryService(home=world.home, user_dir=world.user_dir, embedder=embedder)
    t = time.perf_counter()
    try:
        for i, project in enumerate(projects):
            fill(svc, RequestContext(project), per_store, pool, embedder.model_name, tmp, rnd, rng,
                 n_user=per_store if i == 0 else 0, graph=False)
    finally:
        svc.close()
    fill_s = time.perf_counter() - t
    say(f"[multi] filled {n_projects} project stores + the user store, {per_store} memories each, in {fill_s:.0f} s")
    out: dict[str, Any] = {"projects": n_projects, "per_store": per_store, "fill_s": round(fill_s, 1), "designs": {}}
    try:
        for design in designs():
            for case in design_cases(design):
                env = world.env_for(designs()[design])
                world.shutdown_daemon()
                if case == INDEX_MISSING:
                    for p in projects:
                        remove_persisted_index(world.project_store_dir(p))
                    remove_persisted_index(world.user_dir)
                t = time.perf_counter()
                first = asyncio.run(_mcp_first_recall(world, sentence(rnd), env=env, allow_partial=case == INDEX_MISSING))
                steady_recalls(world, rnd, projects[1:], recalls=1)
                all_open_s = time.perf_counter() - t
                pid = world.daemon_pid()
                opened = proc_memory_mb(pid) if pid else {}
                steady_recalls(world, rnd, projects, recalls=2)
                time.sleep(STEADY_IDLE_S)
                steady = proc_memory_mb(pid) if pid else {}
                out["designs"].setdefault(design, {})[case] = {
                    "first_recall_s": round(first["first_recall_s"], 3), "all_stores_open_s": round(all_open_s, 2),
                    "peak_rss_mb": steady.get("peak_rss_mb"), "steady_rss_mb": steady.get("rss_mb"),
                    "rss_after_opening_all_mb": opened.get("rss_mb")}
                say(f"[multi] {design} / {case}: first recall {first['first_recall_s']:.2f} s, all {n_projects} + user open "
                    f"{all_open_s:.1f} s, daemon peak {steady.get('peak_rss_mb')} MB, steady {steady.get('rss_mb')} MB")
                world.shutdown_daemon()
    finally:
        world.shutdown_daemon()
        shutil.rmtree(world.base, ignore_errors=True)
    return out


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
def run_size(n: int, embedder, pool: np.ndarray, models: Path, tmp: Path, quick: bool, seed: int, cold_only: bool = False) -> dict[str, Any]:
    """Every measurement at one size; `cold_only`: only the designs' cold start, memory and disk."""
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
        say(f"[{n}] filling {n} project memories" + ("" if cold_only else " + graph"))
        filled = fill(svc, ctx, n, pool, embedder.model_name, tmp, rnd, rng, graph=not cold_only)
        result["fill"] = {k: v for k, v in filled.items() if k not in ("keys", "entity_names", "sample_vectors")}
        say(f"[{n}] filled: import {filled['import_s']} s ({filled['import_per_s']}/s), graph {filled.get('graph_s')} s {filled.get('graph')}")
        if not cold_only:
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
    if cold_only:
        return run_cold_only(world, n, reps, result, rnd)
    from engram_mcp.core.paths import dir_bytes

    store_bytes = dir_bytes(world.project_store_dir())
    result["disk"] = {"project_store_bytes": store_bytes, "bytes_per_memory": round(store_bytes / max(n, 1), 1),
                      "note": "project store directory (memories, vectors, graph, history, sessions) after the run, / N"}
    result["bench_process_peak_rss_mb"] = peak_rss_mb_self()
    try:
        say(f"[{n}] cold open / cold first recall / daemon RSS per design: {', '.join(designs())}")
        result["designs"] = measure_designs(world, n, reps["cold"], rnd)
        default = result["designs"][default_design()]["cases"]
        cold_runs = list(default.values())[-1]["runs"]["cold_first_recall"]
        result["mcp"] = measure_mcp(world, cold_runs, reps["warm"], rnd)
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


def run_cold_only(world: World, n: int, reps: dict[str, int], result: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    try:
        say(f"[{n}] cold open / cold first recall / daemon RSS per design: {', '.join(designs())}")
        result["designs"] = measure_designs(world, n, reps["cold"], rnd)
    finally:
        world.shutdown_daemon()
        shutil.rmtree(world.base, ignore_errors=True)
    return result


def run_scale(sizes: list[int], out_dir: Path | None = None, quick: bool = False, seed: int = 11,
              multi_per_store: int | None = None, multi_projects: int = 10, cold_only: bool = False) -> dict[str, Any]:
    """`multi_per_store`: memories per store of the daemon holding `multi_projects` project stores
    plus the user store (default 10k, 200 with `quick`; 0 leaves that measurement out).
    `cold_only`: only the designs' cold start, memory and disk (no graph, batch, hook runs)."""
    from engram_mcp.index.embeddings import DEFAULT_MODEL, FastEmbedEmbedder

    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="engram-scale-"))
    models = tmp / "models"
    results: dict[str, Any] = {"sizes": sizes, "quick": quick, "designs": designs(), "default_design": default_design(),
                               "targets": {k: {str(n): v for n, v in t.items()} for k, t in TARGETS.items()}, "started_utc": datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
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
            results["runs"].append(run_size(n, embedder, pool, models, tmp, quick, seed, cold_only))
        results["index_verification"] = index_verification(sizes, tmp)
        results["disk_growth"] = [disk_growth(n, embedder, pool, models, tmp, seed) for n in sizes if n <= DISK_GROWTH_MAX]
        per_store = multi_per_store if multi_per_store is not None else (200 if quick else 10_000)
        if per_store and multi_projects:
            print(f"a daemon holding {multi_projects} project stores + the user store, {per_store} memories each", flush=True)
            rnd, rng = random.Random(seed), np.random.default_rng(seed)
            results["multi_store"] = measure_multi_store(tmp / "multi", models, embedder, pool, per_store, multi_projects, rnd, rng, tmp)
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
        if "graph_traversal" not in r:  # a cold-only run
            continue
        mcp, hooks = r.get("mcp", {}), r.get("hooks", {})
        rows.append(f"| {r['memories']} | {_cell(r['graph_traversal']['depth1'])} | {_cell(r['graph_traversal']['depth3'])} | "
                    f"{_cell(r['promotion']['latency'])} | {_cell(r['maintenance']['steady_state'])} | {_cell(mcp.get('spawn_to_initialize'))} | "
                    f"{_cell(mcp.get('spawn_to_first_recall_warm'))} | {_cell(mcp.get('spawn_to_first_recall_cold'))} | "
                    f"{_cell(hooks.get('PostToolUse (Edit)'))} | {_cell(hooks.get('SessionStart (warm)'))} |")
        extra.append(f"| {r['memories']} | {', '.join(str(p['ms']) for p in r['maintenance']['passes'])} | "
                     f"{r['disk']['bytes_per_memory']} | "
                     f"{r.get('daemon_memory', {}).get('peak_rss_mb', '-')} | {r['fill']['import_per_s']}, {r['fill']['graph_s']} |")
    head = "# engram scale extras\n\n"
    if len(rows) > 2:  # not a cold-only run
        head += "p50 / p95 / p99 ms.\n\n" + "\n".join(rows) + "\n\n" + "\n".join(extra) + "\n\n"
    return head + "\n".join(design_markdown(results)) + "\n" + verification_markdown(results)


#: Recalls that strengthen what they return, between the two disk measurements of `disk_growth`.
DISK_GROWTH_RECALLS = 1000
#: Sizes above this are left out of `disk_growth` (a second fill of 100k takes minutes).
DISK_GROWTH_MAX = 10_000


def disk_growth(n: int, embedder, pool: np.ndarray, models: Path, tmp: Path, seed: int) -> dict[str, Any]:
    """The project store's bytes per memory (engine data and index files) after loading n
    memories, and again after 1,000 recalls that strengthen their hits, before any maintenance
    (issue 36: at most 2.6 KB, and at most 1.5x that after the recalls)."""
    from engram_mcp.services.service import MemoryService, RequestContext

    rnd, rng = random.Random(seed + n + 1), np.random.default_rng(seed + n + 1)
    world = World(tmp / f"disk{n}", models)
    ctx = RequestContext(world.project)
    store = world.project / ".claude" / "engram"

    def per_memory() -> dict[str, float]:
        parts = {part: sum(f.stat().st_size for f in (store / part).rglob("*") if f.is_file()) for part in ("data", "index")}
        return {**{f"{k}_bytes_per_memory": round(v / n) for k, v in parts.items()},
                "bytes_per_memory": round(sum(parts.values()) / n)}

    svc = MemoryService(home=world.home, user_dir=world.user_dir, embedder=embedder)
    try:
        fill(svc, ctx, n, pool, embedder.model_name, tmp, rnd, rng, graph=False)
    finally:
        svc.close()  # the index files are written at close
    loaded = per_memory()
    svc = MemoryService(home=world.home, user_dir=world.user_dir, embedder=embedder)
    try:
        for _ in range(DISK_GROWTH_RECALLS):
            svc.recall(ctx, query=sentence(rnd), limit=10)
    finally:
        svc.close()
    recalled = per_memory()
    shutil.rmtree(world.base, ignore_errors=True)
    return {"memories": n, "after_load": loaded, "after_recalls": recalled, "recalls": DISK_GROWTH_RECALLS,
            "growth": round(recalled["bytes_per_memory"] / max(loaded["bytes_per_memory"], 1), 2)}


def index_verification(sizes: list[int], tmp: Path) -> list[dict[str, Any]]:
    """The cost at open of checking every byte of an index file's vector block (format 3, int8
    rows), per size, beside format 2 (float32 and int8 rows) and the open before format 2 (the
    float32 rows unchecked) (bench/index_open_bench.py)."""
    from index_open_bench import verification_cost

    return [verification_cost(n, tmp) for n in sizes]


def disk_markdown(results: dict[str, Any]) -> str:
    rows = results.get("disk_growth") or []
    if not rows:
        return ""
    lines = ["", f"Project store bytes per memory (data + index files) after the load and after "
             f"{DISK_GROWTH_RECALLS} strengthening recalls, before any maintenance (target: 2,600 and 1.5x):", "",
             "| memories | after load (data / index) | after recalls (data / index) | growth |", "|---|---|---|---|"]
    for r in rows:
        a, b = r["after_load"], r["after_recalls"]
        lines.append(f"| {r['memories']} | {a['bytes_per_memory']} ({a['data_bytes_per_memory']} / {a['index_bytes_per_memory']}) | "
                     f"{b['bytes_per_memory']} ({b['data_bytes_per_memory']} / {b['index_bytes_per_memory']}) | {r['growth']}x |")
    return "\n".join(lines) + "\n"


def verification_markdown(results: dict[str, Any]) -> str:
    rows = results.get("index_verification") or []
    if not rows:
        return disk_markdown(results)
    lines = ["", "Index file vector block checked at open, best of 3 ms: now (format 3, int8 rows by sum64), format 2 "
             "(float32 and int8 rows by sum64), before format 2 (float32 rows unchecked):",
             "", "| memories | file MB (format 2) | warm before / format 2 / now | cold before / format 2 / now |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['memories']} | {r['file_mb']} ({r.get('format2_file_mb', '-')}) | "
                     f"{r['warm_unchecked_ms']} / {r.get('warm_format2_ms', '-')} / {r['warm_verified_ms']} | "
                     f"{r['cold_unchecked_ms']} / {r.get('cold_format2_ms', '-')} / {r['cold_verified_ms']} |")
    return "\n".join(lines) + "\n" + disk_markdown(results)


def verdict(value: float | None, target: float | None) -> str:
    if target is None:
        return ""
    if value is None:
        return "not measured"
    return "PASS" if value <= target else "FAIL"


def design_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per size, design and cold case (what the tables and plots show)."""
    rows = []
    for r in results.get("runs", []):
        n = r["memories"]
        for design, d in (r.get("designs") or {}).items():
            for case, c in d["cases"].items():
                recall_s = c["cold_first_recall"].get("p50_ms", 0.0) / 1000.0 if c["cold_first_recall"].get("n") else None
                rows.append({"memories": n, "design": design, "case": case,
                             "cold_open_ms": c["cold_open"].get("p50_ms"), "store_rss_mb": c["cold_open"].get("store_rss_mb"),
                             "cold_first_recall_s": None if recall_s is None else round(recall_s, 3),
                             "cold_first_recall_max_s": round(c["cold_first_recall"].get("max_ms", 0.0) / 1000.0, 3),
                             "partial_answers": c["cold_first_recall"].get("partial_answers", 0),
                             # older results hold only the MCP measure (then under cold_first_recall)
                             "mcp_first_recall_s": round(c.get("mcp_first_recall", c["cold_first_recall"]).get("p50_ms", 0.0) / 1000.0, 3),
                             "daemon_peak_rss_mb": c["daemon_rss"]["peak_mb"], "daemon_steady_rss_mb": c["daemon_rss"]["steady_mb"],
                             "disk_bytes_per_memory": d["disk"]["bytes_per_memory"],
                             "index_bytes_per_memory": d["disk"]["index_bytes_per_memory"], "repeats": c["repeats"]})
    return rows


def design_markdown(results: dict[str, Any]) -> list[str]:
    """Cold open, cold first recall, daemon RSS and disk per memory, previous design vs new, with the targets."""
    rows = design_rows(results)
    if not rows:
        return []
    targets = TARGETS
    L = ["## Cold start, memory and disk: previous design vs new (same run, same stores)", "",
         "Cold open: a fresh process opens the project store and makes its index ready (no model). Cold first recall: daemon "
         "spawn -> first `recall` answer on its socket with no daemon running (it starts, loads the model, opens the stores "
         "and answers), p50 of the repeats judged against the target, max beside it. From MCP spawn: the same cold start "
         "begun by spawning the MCP server as Claude Code does (the server starts the daemon and its own start shares the "
         "2 cores), p50, not judged. Daemon RSS: VmHWM (peak) and VmRSS (steady: after "
         f"{STEADY_RECALLS} more recalls and {STEADY_IDLE_S:g} s idle) from /proc. The page cache is warm in every case (the "
         "store was just written): cold means no process holds the store. Designs: "
         + "; ".join(f"`{d}` {json.dumps(env) if env else '(no switch)'}" for d, env in results.get("designs", designs()).items())
         + (". Only the previous design exists in this code: the new design's columns are left out." if NEW not in
            results.get("designs", designs()) else "."), "",
         "| memories | design | cold case | cold open ms | RSS of the opened store MB | cold first recall s (max) | target s | "
         "verdict | from MCP spawn s | daemon peak RSS MB | target MB | verdict | daemon steady RSS MB | disk bytes/memory (of it index) | repeats |",
         "|---" * 15 + "|"]
    for row in rows:
        n = row["memories"]
        t_recall = targets["cold_first_recall_s"].get(n)
        t_rss = targets["peak_rss_mb"].get(n)
        L.append(f"| {n} | {row['design']} | {row['case']} | {row['cold_open_ms']:,.0f} | {row['store_rss_mb']:,.0f} | "
                 f"{row['cold_first_recall_s']:.2f} ({row['cold_first_recall_max_s']:.2f})"
                 + (f", {row['partial_answers']} partial" if row["partial_answers"] else "")
                 + f" | {t_recall if t_recall is not None else ''} | {verdict(row['cold_first_recall_s'], t_recall)} | "
                 f"{row['mcp_first_recall_s']:.2f} | {row['daemon_peak_rss_mb']:,.0f} | {t_rss if t_rss is not None else ''} | {verdict(row['daemon_peak_rss_mb'], t_rss)} | "
                 f"{row['daemon_steady_rss_mb']:,.0f} | {row['disk_bytes_per_memory']:,.0f} ({row['index_bytes_per_memory']:,.0f}) | "
                 f"{row['repeats']} |")
    L += ["", "Hybrid recall p95 (targets ≤ 10 ms at 10k, ≤ 15 ms at 100k) is measured by the speed part (`speed/speed.md`); "
              "`make bench`'s report puts it beside these."]
    m = results.get("multi_store")
    if m:
        L += ["", f"A daemon holding {m['projects']} project stores plus the user store, {m['per_store']:,} memories each "
                  f"(filled in {m['fill_s']:.0f} s): started by an MCP first recall in the first project, then one recall in each "
                  "other project (each reads its project store and the user store); RSS after that, then steady after 2 more recalls "
                  f"per project and {STEADY_IDLE_S:g} s idle.", "",
              "| design | cold case | first recall s | all stores open s | daemon peak RSS MB | daemon steady RSS MB |", "|---" * 6 + "|"]
        for design, cases in m["designs"].items():
            for case, c in cases.items():
                L.append(f"| {design} | {case} | {c['first_recall_s']:.2f} | {c['all_stores_open_s']:.1f} | "
                         f"{c['peak_rss_mb'] or 0:,.0f} | {c['steady_rss_mb'] or 0:,.0f} |")
    return L


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (structure check)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--multi-per-store", type=int, default=None,
                    help="memories per store of the daemon holding 10 project stores + the user store (default 10000, 200 "
                         "with --quick; 0: leave it out)")
    ap.add_argument("--cold-only", action="store_true",
                    help="only cold open, cold first recall, daemon RSS and disk per design (no graph, batch or hook runs)")
    a = ap.parse_args(argv)
    out = a.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) / "scale"
    results = run_scale(a.sizes, out, quick=a.quick, multi_per_store=a.multi_per_store, cold_only=a.cold_only)
    print(markdown(results))
    print(f"wrote {out / 'scale.json'} ({results['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
