"""Coding-agent memory across scopes: engram's recall on the coding-memory development set.

What it measures: the set in ../shared/bench/coding-memory/ (454 memories in four projects, the
user scope and one live session; 200 questions of 8 kinds) is loaded the way a user's data
lives: one store per project, the user store, and the session memories in a live session of
`search-service`, all through `MemoryService.import_` (the path `engram import` takes), with
`supersedes` as memory links. Each question is asked through `MemoryService.recall` from its
project (and the live session when the project is `search-service`), limit 10, without
strengthening, with the built-in defaults. The run is scored by the set's own `score.py`
(R@5, hit@1, MRR@10, forbidden-in-top-5, per kind); its plain BM25 baseline
(`baseline_bm25.py`) is run and scored in the same run.

It also measures store-time dedup precision: every memory of a scope is stored one by one
through `MemoryService.store` (dedup on, default threshold) into fresh stores; a near-duplicate
group of the set's README that ends in fewer memories than it has members counts as merged,
and a merge of two memories that are not in one group counts as a wrong merge.

Data: read from ../shared/bench/coding-memory/ (never copied). Temporary stores live in a temp
dir deleted at exit. Outputs hold ids and metrics only.

Run:  .venv/bin/python bench/coding_memory_bench.py [--out DIR] [--data DIR] [--no-dedup]
Out:  <out or bench/results/<UTC>/coding_memory>/{engram.run.jsonl, bm25.run.jsonl, coding_memory.json, coding_memory.md,
      coding_memory.png}
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS_DIR, SHARED_BENCH, latency_summary, machine_info, pyplot, read_jsonl, utc_stamp, write_json, write_jsonl  # noqa: E402

try:
    from engram_mcp.core.ids import new_ulid
    from engram_mcp.services.service import MemoryService, RequestContext
except ImportError as exc:  # e.g. a module another engineer is still writing
    sys.exit(f"cannot import engram_mcp ({exc}); retry when the package imports cleanly")

DEFAULT_DATA = SHARED_BENCH / "coding-memory"
LIMIT = 10
SESSION_PROJECT = "search-service"
SESSION_ID = "coding-memory-bench-session"
KINDS = ("paraphrase", "keyword", "identifier", "cross_scope", "isolation", "supersede", "procedural", "session")
log = logging.getLogger("coding_memory_bench")


# ------------------------------------------------------------------------------------ data
def load_scorer(data_dir: Path):
    """The set's own score.py, imported from the data folder (stdlib only, never copied)."""
    spec = importlib.util.spec_from_file_location("coding_memory_score", data_dir / "score.py")
    mod = importlib.util.module_from_spec(spec)
    sys.dont_write_bytecode = True
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def near_duplicate_groups(readme: Path) -> list[list[str]]:
    """The near-duplicate groups the set's README lists (rows of its 'Near-duplicate groups' table)."""
    text = readme.read_text(encoding="utf-8")
    start = text.find("**Near-duplicate groups")
    if start < 0:
        return []
    section = text[start:].split("\n\n**", 1)[0]
    groups = []
    for line in section.splitlines():
        ids = re.findall(r"\bd\d{4}\b", line)
        if line.startswith("|") and len(ids) >= 2:
            groups.append(ids)
    return groups


# ------------------------------------------------------------------------------------ world
@dataclass
class World:
    """The loaded stores: a service, one context per project, and engram id -> set id."""

    svc: MemoryService
    contexts: dict[str, RequestContext]
    to_set_id: dict[str, str] = field(default_factory=dict)
    load_s: float = 0.0
    counts: dict[str, Any] = field(default_factory=dict)


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _record(mem: dict[str, Any], scope: str, now: datetime) -> dict[str, Any]:
    """An import record for one memory of the set: its age becomes its creation and last access."""
    created = _iso(now - timedelta(days=float(mem["age_days"])))
    return {
        "memory_type": mem["type"], "scope": scope, "content": mem["content"], "tags": list(mem.get("tags") or []),
        "importance": float(mem["importance"]), "confidence": 0.7, "access_count": 0, "status": "created",
        "source": {}, "version": 1, "promotion_chain": [], "metadata": {"set_id": mem["id"]},
        "created_at": created, "updated_at": created, "last_accessed_at": created, "status_changed_at": created,
        **({"session_id": SESSION_ID} if scope == "session" else {}),
    }


def _write_import(path: Path, mems: list[dict[str, Any]], scope: str, keys: dict[str, str], now: datetime) -> None:
    """JSONL without vectors (engram embeds on import), then the supersedes links."""
    lines = [{"kind": "memory", "scope": scope, "id": keys[m["id"]], "record": _record(m, scope, now)} for m in mems]
    lines += [{"kind": "link", "scope": scope, "from": keys[m["id"]], "to": keys[m["supersedes"]],
               "relation_type": "supersedes", "strength": 1.0, "created_at": _iso(now)}
              for m in mems if m.get("supersedes")]
    write_jsonl(path, lines)


def load_world(base: Path, memories: list[dict[str, Any]], svc: MemoryService | None = None) -> World:
    """Import every memory into its store: user, one project store each, the live session."""
    t0 = time.perf_counter()
    svc = svc or MemoryService(home=base / "home")
    now = datetime.now(timezone.utc)
    keys = {m["id"]: new_ulid() for m in memories}
    projects = sorted({m["project"] for m in memories if m["scope"] == "project"})
    contexts: dict[str, RequestContext] = {}
    for name in projects:
        root = base / "projects" / name
        (root / ".git").mkdir(parents=True, exist_ok=True)
        contexts[name] = RequestContext(root, SESSION_ID if name == SESSION_PROJECT else None)
    counts: dict[str, Any] = {}
    groups = [("user", None), *[("project", p) for p in projects], ("session", SESSION_PROJECT)]
    for scope, project in groups:
        mems = [m for m in memories if m["scope"] == scope and (scope == "user" or m["project"] == project)]
        if not mems:
            continue
        ctx = contexts[project or projects[0]]
        path = base / f"import-{scope}-{project or 'user'}.jsonl"
        _write_import(path, mems, scope, keys, now)
        res = svc.import_(ctx, path)
        counts[f"{scope}:{project or '-'}"] = res["counts"]
        if res["counts"]["memory"] != len(mems):
            raise RuntimeError(f"import of {scope}/{project} stored {res['counts']} for {len(mems)} memories")
        path.unlink()
    world = World(svc, contexts, {f"memory:{v}": k for k, v in keys.items()}, time.perf_counter() - t0, counts)
    return world


# ------------------------------------------------------------------------------------ recall
def ask_all(world: World, queries: list[dict[str, Any]], *, limit: int = LIMIT,
            recall_kwargs: dict[str, Any] | None = None) -> tuple[dict[str, list[str]], list[float]]:
    """Rank every question from its project; returns (qid -> set ids best first, wall seconds)."""
    ranked: dict[str, list[str]] = {}
    wall: list[float] = []
    for q in queries:
        ctx = world.contexts[q["current_project"]]
        t = time.perf_counter()
        r = world.svc.recall(ctx, query=q["query"], limit=limit, strengthen=False, **(recall_kwargs or {}))
        wall.append(time.perf_counter() - t)
        if r["strategy_used"] != "hybrid":
            raise RuntimeError(f"recall degraded to {r['strategy_used']}: {r['warnings']}")
        ranked[q["qid"]] = [world.to_set_id[m["id"]] for m in r["memories"]]
    return ranked, wall


def score_run(scorer, queries: list[dict[str, Any]], ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Per kind and overall metrics from the set's scorer (its own evaluate/aggregate)."""
    return scorer.evaluate(queries, ranked)


def run_baseline(data_dir: Path, out_dir: Path, scorer, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """The set's plain BM25 baseline, run now and scored by the same scorer."""
    run_file = out_dir / "bm25.run.jsonl"
    proc = subprocess.run([sys.executable, str(data_dir / "baseline_bm25.py"), "--out", str(run_file)],
                          capture_output=True, text=True, check=False, cwd=data_dir)
    if proc.returncode != 0:
        raise RuntimeError(f"baseline_bm25.py failed: {proc.stderr.strip()}")
    ranked = {r["qid"]: r["ranked_ids"] for r in read_jsonl(run_file)}
    return score_run(scorer, queries, ranked)


# ------------------------------------------------------------------------------------ dedup
def measure_dedup(base: Path, memories: list[dict[str, Any]], groups: list[list[str]]) -> dict[str, Any]:
    """Store every memory through `store` (dedup on) into fresh stores; count merges.

    Each scope group (user, each project, the session) goes into its own store in the order
    of the set's ids (a seeded shuffle, so no order is favoured). A merge joins the new memory
    to an existing one: within a README group it is a wanted merge; otherwise a wrong one.
    """
    svc = MemoryService(home=base / "dedup-home")
    group_of = {mid: i for i, g in enumerate(groups) for mid in g}
    merged_into: dict[str, str] = {}  # set id -> set id of the memory it merged into
    kept_apart = superseded = 0  # near-duplicates store kept as new memories (a changed fact, an origin)
    by_key: dict[str, str] = {}
    wall = []
    try:
        for mem in sorted(memories, key=lambda m: m["id"]):
            root = base / "dedup-projects" / (mem["project"] or "user-only")
            (root / ".git").mkdir(parents=True, exist_ok=True)
            ctx = RequestContext(root, SESSION_ID if mem["scope"] == "session" else None)
            t = time.perf_counter()
            r = svc.store(ctx, content=mem["content"], type=mem["type"], scope=mem["scope"],
                          importance=mem["importance"], tags=mem.get("tags") or [])
            wall.append(time.perf_counter() - t)
            if r["action"] == "merged":
                merged_into[mem["id"]] = by_key[r["memory_id"]]
            else:
                by_key[r["memory_id"]] = mem["id"]
                kept_apart += bool(r.get("near_duplicate"))
                superseded += bool(r.get("supersedes"))
    finally:
        svc.close()
    right = [(a, b) for a, b in merged_into.items() if a in group_of and group_of.get(b) == group_of[a]]
    wrong = [(a, b) for a, b in merged_into.items() if (a, b) not in right]
    groups_merged = {group_of[a] for a, _ in right}
    return {
        "groups": len(groups), "groups_merged": len(groups_merged), "members_merged": len(right),
        "wrong_merges": len(wrong), "wrong_pairs": wrong, "stores": len(memories),
        "near_duplicates_kept_apart": kept_apart, "near_duplicates_superseded": superseded,
        "store_ms": latency_summary(wall),
    }


# ------------------------------------------------------------------------------------ report
def table(rows: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> str:
    head = "| kind | n | R@5 | hit@1 | MRR@10 | forbidden | BM25 R@5 | BM25 hit@1 | BM25 MRR@10 | BM25 forbidden |\n|---|---|---|---|---|---|---|---|---|---|\n"
    out = []
    for kind in (*KINDS, "ALL"):
        r, b = rows.get(kind), baseline.get(kind)
        if not r:
            continue
        f = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
        out.append(f"| {kind} | {r['n']} | {f(r['R@5'])} | {f(r['hit@1'])} | {f(r['MRR@10'])} | {f(r.get('forbidden'))} | "
                   f"{f(b['R@5'])} | {f(b['hit@1'])} | {f(b['MRR@10'])} | {f(b.get('forbidden'))} |")
    return head + "\n".join(out) + "\n"


def project_halves(scorer, queries: list[dict[str, Any]], ranked: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Overall metrics on each half of the questions split by project, for the three pairings of
    the four projects (sorted by name: 1+2 vs 3+4, 1+3 vs 2+4, 1+4 vs 2+3). A ranking change that generalises
    moves both halves of each pairing the same way; one that helps one half and hurts the other
    is fitted to those projects."""
    projects = sorted({q["current_project"] for q in queries})
    if len(projects) != 4:
        return {}
    a, b, c, d = projects
    out = {}
    for half in ((a, b), (c, d), (a, c), (b, d), (a, d), (b, c)):
        sub = [q for q in queries if q["current_project"] in half]
        res = scorer.evaluate(sub, {q["qid"]: ranked.get(q["qid"], []) for q in sub})["overall"]
        out[" + ".join(half)] = {"n": res["n"], "R@5": res["recall"], "hit@1": res["hit1"], "MRR@10": res["mrr"]}
    return out


def rows_of(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{kind: {n, R@5, hit@1, MRR@10, forbidden}} from the scorer's result (by_kind + overall)."""
    pick = lambda a: {"n": a["n"], "R@5": a["recall"], "hit@1": a["hit1"], "MRR@10": a["mrr"],  # noqa: E731
                      "forbidden": a["forbidden"], "n_forbidden": a["n_forbidden"]}
    out = {kind: pick(a) for kind, a in res["by_kind"].items()}
    out["ALL"] = pick(res["overall"])
    return out


def plot(path: Path, rows: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> None:
    plt = pyplot()
    if plt is None:
        return
    kinds = [k for k in (*KINDS, "ALL") if k in rows]
    x = range(len(kinds))
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.bar([i - 0.2 for i in x], [rows[k]["R@5"] for k in kinds], 0.4, label="engram (defaults)")
    ax.bar([i + 0.2 for i in x], [baseline[k]["R@5"] for k in kinds], 0.4, label="plain BM25 (baseline_bm25.py)")
    ax.set_xticks(list(x), kinds, rotation=20)
    ax.set_ylabel("R@5")
    ax.set_ylim(0, 1)
    ax.set_title("coding-memory development set: R@5 by kind")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=lambda p: Path(p).resolve(), default=DEFAULT_DATA)  # the baseline runs from the data dir
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-dedup", action="store_true", help="skip the store-time dedup measurement")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if not (args.data / "memories.jsonl").is_file():
        print(f"coding-memory data not found in {args.data}", file=sys.stderr)
        return 2
    out = args.out or RESULTS_DIR / utc_stamp() / "coding_memory"
    out.mkdir(parents=True, exist_ok=True)
    memories = read_jsonl(args.data / "memories.jsonl")
    queries = read_jsonl(args.data / "queries.jsonl")
    scorer = load_scorer(args.data)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engram-codemem-") as tmp:
        world = load_world(Path(tmp), memories)
        try:
            log.info("loaded %d memories in %.1f s", len(memories), world.load_s)
            ask_all(world, queries[:5])  # warm-up: model and index pages
            ranked, wall = ask_all(world, queries)
            cfg = world.svc.config(world.contexts[SESSION_PROJECT].project_root)
        finally:
            world.svc.close()
        dedup = None if args.no_dedup else measure_dedup(Path(tmp), memories, near_duplicate_groups(args.data / "README.md"))
    write_jsonl(out / "engram.run.jsonl", [{"qid": k, "ranked_ids": v} for k, v in ranked.items()])
    engram_res = score_run(scorer, queries, ranked)
    base_res = run_baseline(args.data, out, scorer, queries)
    rows, brow = rows_of(engram_res), rows_of(base_res)
    halves = project_halves(scorer, queries, ranked)
    settings = {k: getattr(cfg, k) for k in ("fusion", "keyword_weight", "candidate_pool", "scope_weight_profile",
                                             "relevance_min_cosine", "relevance_min_cosine_ratio", "store_dedup_similarity",
                                             "cross_scope_dedup_similarity") if hasattr(cfg, k)}
    result = {
        "machine": machine_info(), "data": str(args.data), "memories": len(memories), "queries": len(queries),
        "limit": LIMIT, "strengthen": False, "settings": settings, "load": {"seconds": round(world.load_s, 2), "counts": world.counts},
        "engram": rows, "bm25_baseline": brow, "project_halves": halves, "recall_ms": latency_summary(wall), "dedup": dedup,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    write_json(out / "coding_memory.json", result)
    plot(out / "coding_memory.png", rows, brow)
    md = [
        "# coding-memory development set (engram defaults vs plain BM25, same run)", "",
        f"{len(memories)} memories (4 project stores, the user store, a live session), {len(queries)} questions; "
        f"recall limit {LIMIT}, no strengthening; scored by the set's `score.py`.", "",
        table(rows, brow),
        f"Settings: `{json.dumps(settings)}`", "",
        "By project half (engram; a change that generalises moves both halves of a pairing alike):", "",
        "| half | n | R@5 | hit@1 | MRR@10 |", "|---|---|---|---|---|",
        *[f"| {k} | {v['n']} | {v['R@5']:.3f} | {v['hit@1']:.3f} | {v['MRR@10']:.3f} |" for k, v in halves.items()], "",
        f"Recall latency (ms): p50 {result['recall_ms'].get('p50_ms')}, p95 {result['recall_ms'].get('p95_ms')}.", "",
    ]
    if dedup:
        md += [f"Store-time dedup (threshold {settings.get('store_dedup_similarity')}): {dedup['groups_merged']} of "
               f"{dedup['groups']} near-duplicate groups merged ({dedup['members_merged']} members), "
               f"{dedup['wrong_merges']} wrong merges of distinct facts; "
               f"{dedup.get('near_duplicates_kept_apart', 0)} near-duplicates kept apart as a changed fact or another origin "
               f"({dedup.get('near_duplicates_superseded', 0)} of them superseding the older one).", ""]
    md.append("![R@5 by kind](coding_memory.png)")
    (out / "coding_memory.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
