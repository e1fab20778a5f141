"""LoCoMo turn-level retrieval benchmark of engram's public service layer ("locomo-ret v1").

What it measures: for each of the 10 LoCoMo conversations, a fresh engram home + project is
filled with one `episodic` project memory per dialog turn (content "[<session date-time>]
<speaker>: <text> [image: <caption>]", metadata {"dia_id": ...}), then every QA question is
asked through `MemoryService.recall(limit=50, strengthen=False)` with each strategy / fusion
setting, and the ranked dia_ids are scored by the shared `locomo_eval.py` (headline:
categories 1-4, Recall_any@1/5/10 and MRR; category 5 apart). A plain-token numpy BM25 over
undated "speaker: text [image: caption]" docs is computed in the same run as the floor.

Ingestion: all turns of a conversation are embedded in one `embed_documents` call (length-
sorted batches) and inserted with `MemoryService.import_` from a generated JSONL carrying the
vectors (the `store` path, one embed + one write per turn, is timed on the first conversation
for comparison and its rankings checked against the import path).

Investigation (`--investigate`, on by default): engram's hybrid ranking is re-implemented here
from the same vectors and the same BM25 (engram's tokenizer) so that single changes to fusion
(where cosine is normalised, candidate pool, dates, tokenizer) can be measured in isolation.
The re-implementation is validated against the real hybrid run before any variant is trusted.
Variants are global settings, never tuned per question.

Data: read from ../shared/bench/locomo/ (CC BY-NC 4.0; never copied into the repository).
Temporary stores, the import JSONL and the --quick subset of the data live in a temp dir that
is deleted at exit. Outputs hold ids and metrics only.

Run:  .venv/bin/python bench/locomo_bench.py [--quick] [--out DIR] [--data DIR] [--no-investigate]
Out:  bench/results/<UTC>/locomo/{<run>.jsonl + .eval.{json,txt}, locomo.json, locomo.md, locomo.png,
      variants/<variant>.eval.{json,txt}}
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    REPO_ROOT,
    RESULTS_DIR,
    SHARED_BENCH,
    PlainBM25,
    latency_summary,
    machine_info,
    pyplot,
    rank_desc,
    utc_stamp,
    write_json,
    write_jsonl,
)

try:
    from engram_mcp.core.ids import new_ulid
    from engram_mcp.services.records import iso, now_dt, sanitize_text, vector_bytes
    from engram_mcp.index.scoring import rrf_fusion, score_fusion
    from engram_mcp.index.bm25 import BM25Index
    from engram_mcp.services.service import MemoryService, RequestContext
except ImportError as exc:  # e.g. a module another engineer is still writing
    sys.exit(f"cannot import engram_mcp ({exc}); retry when the package imports cleanly")

DEFAULT_DATA = SHARED_BENCH / "locomo"
LIMIT = 50  # MemoryService.MAX_RECALL_LIMIT
CATS = (1, 2, 3, 4)
CAT_KEYS = {1: "multi-hop (1)", 2: "temporal (2)", 3: "open-domain (3)", 4: "single-hop (4)", 5: "adversarial (5)"}
PUBLISHED_BM25 = {"R@1": 0.264, "R@5": 0.480, "R@10": 0.566, "MRR": 0.367}
# A plain baseline script, not engram: bm25s (k1 1.5, b 0.75, stop words, stemming) and MiniLM cosine,
# each min-max normalised over the conversation's pool, fused 0.5/0.5, every turn prefixed with its date.
CALIBRATION_FUSION = {"R@1": 0.344, "R@5": 0.632, "R@10": 0.720, "MRR": 0.475}

# name, strategy, project config frontmatter (None = computed in the bench, not by engram)
RUNS: list[tuple[str, str | None, dict[str, Any]]] = [
    ("bm25-plain", None, {}),
    ("keyword", "keyword", {}),
    ("vector", "vector", {}),
    ("hybrid", "hybrid", {}),
    ("hybrid-rrf", "hybrid", {"fusion": "rrf"}),
    ("hybrid-kw0.3", "hybrid", {"keyword_weight": 0.3}),
    ("hybrid-kw0.7", "hybrid", {"keyword_weight": 0.7}),
]
SETTING_KEYS = ("fusion", "keyword_weight", "rrf_k", "candidate_pool", "scope_weight_profile")

log = logging.getLogger("locomo_bench")


# ------------------------------------------------------------------------------------ data
def load_conversations(data_file: Path) -> list[dict[str, Any]]:
    """Turns (with dated and undated text) and questions of every conversation."""
    raw = json.loads(data_file.read_text(encoding="utf-8"))
    out = []
    for sample in raw:
        conv = sample["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k, v in conv.items()
                          if k.startswith("session_") and isinstance(v, list))
        turns = []
        for n in sessions:
            when = conv.get(f"session_{n}_date_time", "")
            for t in conv[f"session_{n}"]:
                body = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    body += f" [image: {t['blip_caption']}]"
                turns.append({"dia_id": t["dia_id"], "dated": f"[{when}] {body}", "plain": body,
                              "session": f"{sample['sample_id']}-s{n}", "at": session_time(when, len(turns))})
        questions = [{"qid": f"{sample['sample_id']}#{i}", "question": qa["question"], "category": int(qa["category"])}
                     for i, qa in enumerate(sample["qa"])]
        out.append({"sample_id": sample["sample_id"], "turns": turns, "questions": questions})
    return out


def session_time(when: str, index: int) -> str:
    """When a turn was said: its session's date-time ("1:56 pm on 8 May, 2023") plus `index`
    seconds, so the turns of a session are stored in order, as a live capture would store them.
    A date that does not parse falls back to a fixed day (the order is what matters)."""
    from datetime import datetime, timedelta, timezone

    try:
        base = datetime.strptime(when.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        base = datetime(2023, 1, 1, tzinfo=timezone.utc)
    return iso(base + timedelta(seconds=index))


# ------------------------------------------------------------------------------------ engram
def new_project(base: Path, name: str, config: dict[str, Any] | None = None) -> Path:
    root = base / name
    (root / ".git").mkdir(parents=True)
    if config is not None:
        write_project_config(root, config)
    return root


def write_project_config(root: Path, config: dict[str, Any]) -> None:
    """`<root>/.claude/engram.local.md` frontmatter; an empty config means built-in defaults."""
    d = root / ".claude"
    d.mkdir(exist_ok=True)
    lines = ["---"] + [f"{k}: {json.dumps(v)}" for k, v in config.items()] + ["---", "locomo bench run settings", ""]
    (d / "engram.local.md").write_text("\n".join(lines), encoding="utf-8")


def use_config(svc: MemoryService, root: Path, config: dict[str, Any]) -> dict[str, Any]:
    """Write the project's config and make the service re-read it; return the effective settings."""
    write_project_config(root, config)
    svc.access.forget_config(root)  # the service caches config until its files change; a bench cannot wait
    cfg = svc.config(root)
    eff = {k: getattr(cfg, k) for k in SETTING_KEYS}
    for k, v in config.items():
        if eff.get(k) != v:
            raise RuntimeError(f"config {k}={v} did not take effect (got {eff.get(k)})")
    return eff


def ingest_import(svc: MemoryService, ctx: RequestContext, turns: list[dict], vecs: np.ndarray, tmp: Path) -> tuple[dict[str, str], dict[str, float]]:
    """Insert pre-embedded turns through MemoryService.import_ (a JSONL carrying the vectors).

    Each turn is an episodic memory of its LoCoMo session (session id and time), as if the
    conversation had been captured live: turns of one session are neighbours in time.
    """
    t0 = time.perf_counter()
    model = svc.model_name
    id2dia: dict[str, str] = {}
    path = tmp / "import.jsonl"
    redacted = 0
    with open(path, "w", encoding="utf-8") as f:
        for turn, vec in zip(turns, vecs):
            findings: list = []
            content = sanitize_text(turn["dated"], findings)  # store() redacts; import_ does not
            redacted += content != turn["dated"]
            key = new_ulid()
            id2dia[f"memory:{key}"] = turn["dia_id"]
            record = {
                "memory_type": "episodic", "scope": "project", "content": content, "tags": [],
                "importance": 0.5, "confidence": 0.7, "access_count": 0, "status": "created",
                "source": {}, "embedding_model": model, "embedding_dim": int(vec.shape[0]), "version": 1,
                "promotion_chain": [], "metadata": {"dia_id": turn["dia_id"]}, "session_id": turn["session"],
                "created_at": turn["at"], "updated_at": turn["at"], "last_accessed_at": turn["at"], "status_changed_at": turn["at"],
            }
            f.write(json.dumps({"kind": "memory", "scope": "project", "id": key, "record": record,
                                "vector_b64": base64.b64encode(vector_bytes(vec)).decode()}) + "\n")
    t1 = time.perf_counter()
    res = svc.import_(ctx, path)
    t2 = time.perf_counter()
    counts = res["counts"]
    if counts["memory"] != len(turns) or counts["embedded"]:
        raise RuntimeError(f"import stored {counts} for {len(turns)} turns (vectors must be reused)")
    path.unlink()
    return id2dia, {"jsonl_s": t1 - t0, "import_s": t2 - t1, "redacted_turns": redacted}


def ingest_store(svc: MemoryService, ctx: RequestContext, turns: list[dict]) -> dict[str, str]:
    id2dia = {}
    for turn in turns:
        r = svc.store(ctx, content=turn["dated"], type="episodic", scope="project", metadata={"dia_id": turn["dia_id"]},
                      dedup=False, session_id=turn["session"], created_at=turn["at"])
        if r["action"] != "created":
            raise RuntimeError(f"store merged {turn['dia_id']} despite dedup=False")
        id2dia[r["memory_id"]] = turn["dia_id"]
    return id2dia


def probe_latency(svc: MemoryService, ctx: RequestContext, questions: list[dict]) -> dict[str, Any]:
    """Split recall time: query embedding alone, keyword recall (no embedding) at limit 10 and 50,
    hybrid at limit 10 and 50. Interleaved per question so machine load hits every probe alike."""
    use_config(svc, ctx.project_root, {})
    t: dict[str, list[float]] = {k: [] for k in ("embed_query", "keyword_limit10", "keyword_limit50", "hybrid_limit10", "hybrid_limit50")}
    for q in questions:
        for key, fn in (
            ("embed_query", lambda: svc.embed_query(q["question"])),
            ("keyword_limit10", lambda: svc.recall(ctx, query=q["question"], limit=10, strategy="keyword", strengthen=False)),
            ("keyword_limit50", lambda: svc.recall(ctx, query=q["question"], limit=50, strategy="keyword", strengthen=False)),
            ("hybrid_limit10", lambda: svc.recall(ctx, query=q["question"], limit=10, strategy="hybrid", strengthen=False)),
            ("hybrid_limit50", lambda: svc.recall(ctx, query=q["question"], limit=50, strategy="hybrid", strengthen=False)),
        ):
            s = time.perf_counter()
            fn()
            t[key].append(time.perf_counter() - s)
    return {k: latency_summary(v) for k, v in t.items()}


def ask(svc: MemoryService, ctx: RequestContext, questions: list[dict], strategy: str, id2dia: dict[str, str]) -> tuple[dict[str, list[str]], list[float], list[float]]:
    ranked, wall, reported = {}, [], []
    for q in questions:
        t = time.perf_counter()
        r = svc.recall(ctx, query=q["question"], limit=LIMIT, strategy=strategy, strengthen=False)
        wall.append(time.perf_counter() - t)
        reported.append(r["query_time_ms"] / 1000.0)
        if r["strategy_used"] != strategy:
            raise RuntimeError(f"recall degraded to {r['strategy_used']}: {r['warnings']}")
        ids = []
        for m in r["memories"]:
            dia = id2dia[m["id"]]
            if m["metadata"].get("dia_id") != dia:
                raise RuntimeError(f"metadata dia_id mismatch for {m['id']}")
            ids.append(dia)
        ranked[q["qid"]] = ids
    return ranked, wall, reported


# ------------------------------------------------------------------------------------ scoring
def evaluate(run_file: Path, data_file: Path, eval_script: Path) -> dict[str, Any]:
    """Score with the shared locomo_eval.py; keep its printed table next to the run."""
    py = shutil.which("python3") or sys.executable
    out_json = run_file.with_suffix(".eval.json")
    proc = subprocess.run([py, str(eval_script), str(run_file), "--data", str(data_file), "--json", str(out_json)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"locomo_eval failed on {run_file.name}: {proc.stderr.strip()}")
    run_file.with_suffix(".eval.txt").write_text(proc.stdout, encoding="utf-8")
    res = json.loads(out_json.read_text(encoding="utf-8"))
    header = proc.stdout.splitlines()[0]
    res["eval_header"] = header
    return res


def headline(ev: dict[str, Any]) -> dict[str, Any]:
    turn = ev["turn"]
    pick = lambda row: {k: round(row[k], 4) for k in ("R@1", "R@5", "R@10", "MRR")} | {"n": row["n"]}  # noqa: E731
    out = {"cat1-4": pick(turn["overall cat1-4"])}
    for c, key in CAT_KEYS.items():
        if key in turn:
            out[f"cat{c}"] = pick(turn[key])
    out["all"] = pick(turn["overall all"])
    s = ev["session"]["overall cat1-4"]
    out["session_cat1-4"] = {k: round(s[k], 4) for k in ("R@1", "R@3", "R@5", "MRR")}
    return out


def to_rows(ranked: dict[str, list[str]]) -> list[dict[str, Any]]:
    return [{"question_id": qid, "ranked_ids": ids} for qid, ids in ranked.items()]


# ------------------------------------------------------------------------------------ simulation
def fuse(kw_all: np.ndarray, cos_all: np.ndarray, *, w: float = 0.5, pool: int = 100, cos_norm: str = "engram",
         fusion: str = "score", rrf_k: int = 60) -> list[int]:
    """engram's hybrid ranking (retrieval.rank) over one scope, returned as doc indices.

    Candidates = union of the vector top-`pool` and the BM25 top-`pool` (positive scores), every
    candidate carrying both signals, as `retrieval._candidates` does. Fusion:
      cos_norm "engram": whatever `engram_mcp.index.scoring.score_fusion` does today (fusion "rrf":
                         `scoring.rrf_fusion`), so the simulation follows the code under test;
      "pool": BM25 / max over candidates + cosine min-max over the candidate pool;
      "all":  BM25 / max over candidates + cosine min-max over every memory of the scope;
      "raw":  BM25 / max over candidates + cosine clipped to [0, 1].
    The composite score is monotone in relevance here (same importance and recency for every
    turn), so ranking by relevance with ties by slot reproduces recall's order.
    """
    n = cos_all.size
    vec_top = rank_desc(cos_all, min(pool, n))
    kw_pos = np.flatnonzero(kw_all > 0)
    kw_top = kw_pos[rank_desc(kw_all[kw_pos], min(pool, kw_pos.size))] if kw_pos.size else kw_pos
    cand = np.unique(np.concatenate([vec_top, kw_top]))
    kw = np.maximum(kw_all[cand], 0.0)
    if fusion == "rrf":
        kr = {int(s): i + 1 for i, s in enumerate(kw_top)}
        vr = {int(s): i + 1 for i, s in enumerate(vec_top)}
        rel = rrf_fusion(np.array([kr.get(s, 0) for s in cand.tolist()], dtype=np.float64),
                         np.array([vr.get(s, 0) for s in cand.tolist()], dtype=np.float64), rrf_k)
    elif cos_norm == "engram":
        rel = score_fusion(kw, cos_all[cand].astype(np.float64), w)
    else:
        kwn = kw / kw.max() if kw.max() > 0 else np.zeros_like(kw)
        if cos_norm == "raw":
            cn = np.clip(cos_all[cand], 0.0, 1.0)
        else:
            src = cos_all[cand] if cos_norm == "pool" else cos_all
            lo, hi = float(src.min()), float(src.max())
            cn = (cos_all[cand] - lo) / (hi - lo) if hi > lo else np.zeros(cand.size)
        rel = w * kwn + (1 - w) * cn
    keep = rel > 0
    if keep.any():
        cand, rel = cand[keep], rel[keep]
    order = rank_desc(rel, min(LIMIT, cand.size))  # ties by slot, as engram's stable sort
    return [int(cand[i]) for i in order]


def variant_specs() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, text form, fuse kwargs). Text form: which docs/tokenizer feed BM25 and the vectors."""
    return [
        ("sim-hybrid (engram today)", "dated", {}),
        ("sim-rrf (engram today)", "dated", {"fusion": "rrf"}),
        ("raw cosine clipped [0,1]", "dated", {"cos_norm": "raw"}),
        ("cos min-max over candidate pool", "dated", {"cos_norm": "pool"}),
        ("cos min-max over all memories", "dated", {"cos_norm": "all"}),
        ("cos min-max over all, kw 0.3", "dated", {"cos_norm": "all", "w": 0.3}),
        ("cos min-max over all, kw 0.4", "dated", {"cos_norm": "all", "w": 0.4}),
        ("cos min-max over all, kw 0.6", "dated", {"cos_norm": "all", "w": 0.6}),
        ("cos min-max over all, kw 0.7", "dated", {"cos_norm": "all", "w": 0.7}),
        ("raw cosine, kw 0.3", "dated", {"cos_norm": "raw", "w": 0.3}),
        ("raw cosine, kw 0.4", "dated", {"cos_norm": "raw", "w": 0.4}),
        ("raw cosine, kw 0.6", "dated", {"cos_norm": "raw", "w": 0.6}),
        ("raw cosine, kw 0.7", "dated", {"cos_norm": "raw", "w": 0.7}),
        ("pool 50", "dated", {"pool": 50}),
        ("pool 200", "dated", {"pool": 200}),
        ("pool = all memories", "dated", {"pool": 100_000}),
        ("undated docs", "plain", {}),
        ("undated docs, cos over all", "plain", {"cos_norm": "all"}),
        ("plain-token BM25 in fusion", "dated-plaintok", {}),
        ("plain-token BM25, cos over all", "dated-plaintok", {"cos_norm": "all"}),
    ]


def single_signal_variants() -> list[tuple[str, str, str]]:
    return [
        ("BM25 engram tokenizer, dated", "dated", "kw"),
        ("BM25 engram tokenizer, undated", "plain", "kw"),
        ("BM25 plain tokens, dated", "dated-plaintok", "kw"),
        ("dense, dated", "dated", "vec"),
        ("dense, undated", "plain", "vec"),
    ]


class ConvSignals:
    """Per conversation: BM25 (engram tokenizer, or plain tokens) and cosine for every question x turn."""

    def __init__(self, turns: list[dict], questions: list[dict], dated_vecs: np.ndarray, plain_vecs: np.ndarray, qvecs: np.ndarray):
        self.dias = [t["dia_id"] for t in turns]
        self.kw: dict[str, np.ndarray] = {}
        self.cos = {"dated": qvecs @ dated_vecs.T, "plain": qvecs @ plain_vecs.T}
        self.cos["dated-plaintok"] = self.cos["dated"]
        for form in ("dated", "plain"):
            idx = BM25Index()
            idx.set_many(np.arange(len(turns)), [t[form] for t in turns])
            slots = np.arange(len(turns))
            self.kw[form] = np.vstack([idx.scores_for(q["question"], slots).astype(np.float64) for q in questions])
        plain = PlainBM25([t["dated"] for t in turns])
        self.kw["dated-plaintok"] = np.vstack([plain.scores(q["question"]) for q in questions])


SIM_CHECKS = {"sim-hybrid (engram today)": "hybrid", "sim-rrf (engram today)": "hybrid-rrf"}


def simulate(signals: list[tuple[dict, ConvSignals]], out_dir: Path, data_file: Path, eval_script: Path,
             real: dict[str, dict[str, list[str]]], keep_runs: bool = False) -> dict[str, Any]:
    """Score every variant; its JSONL (1 MB each) is deleted after scoring unless keep_runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for name, form, kwargs in variant_specs():
        ranked = {}
        for conv, sig in signals:
            for qi, q in enumerate(conv["questions"]):
                order = fuse(sig.kw[form][qi], sig.cos[form][qi], **kwargs)
                ranked[q["qid"]] = [sig.dias[i] for i in order]
        f = out_dir / (slug(name) + ".jsonl")
        write_jsonl(f, to_rows(ranked))
        results[name] = {"text": form, "settings": kwargs, "metrics": headline(evaluate(f, data_file, eval_script)), "_ranked": ranked}
        if not keep_runs:
            f.unlink()
        if name in SIM_CHECKS:
            results[name]["agreement_with_real_run"] = {"run": SIM_CHECKS[name], **agreement(ranked, real[SIM_CHECKS[name]])}
    for name, form, which in single_signal_variants():
        ranked = {}
        for conv, sig in signals:
            for qi, q in enumerate(conv["questions"]):
                s = sig.kw[form][qi] if which == "kw" else sig.cos[form][qi]
                order = [i for i in rank_desc(s, LIMIT) if which == "vec" or s[i] > 0]
                ranked[q["qid"]] = [sig.dias[i] for i in order]
        f = out_dir / (slug(name) + ".jsonl")
        write_jsonl(f, to_rows(ranked))
        results[name] = {"text": form, "settings": {"signal": which}, "metrics": headline(evaluate(f, data_file, eval_script)), "_ranked": ranked}
        if not keep_runs:
            f.unlink()
    return results


def agreement(a: dict[str, list[str]], b: dict[str, list[str]]) -> dict[str, float]:
    qids = list(b)
    top10 = sum(a.get(q, [])[:10] == b[q][:10] for q in qids) / len(qids)
    top50 = sum(a.get(q, []) == b[q] for q in qids) / len(qids)
    top1 = sum(a.get(q, [])[:1] == b[q][:1] for q in qids) / len(qids)
    return {"identical_top1": round(top1, 4), "identical_top10": round(top10, 4), "identical_top50": round(top50, 4)}


def load_gold(data_dir: Path, samples: set[str]) -> dict[str, tuple[int, set[str]]]:
    """Normalised gold (the shared locomo_gold_v1.jsonl): qid -> (category, gold turn ids)."""
    gold = {}
    with open(data_dir / "locomo_gold_v1.jsonl", encoding="utf-8") as f:
        for line in f:
            g = json.loads(line)
            if g["sample_id"] in samples:
                gold[g["question_id"]] = (int(g["category"]), set(g["gold_turns"]))
    return gold


def per_question(ranked: dict[str, list[str]], gold: dict[str, tuple[int, set[str]]], qids: list[str]) -> np.ndarray:
    """(n, 2) array of hit@5 and reciprocal rank for the given questions."""
    out = np.zeros((len(qids), 2))
    for i, q in enumerate(qids):
        ids, g = ranked.get(q, []), gold[q][1]
        out[i, 0] = float(any(x in g for x in ids[:5]))
        out[i, 1] = next((1.0 / r for r, x in enumerate(ids, 1) if x in g), 0.0)
    return out


def paired_delta(a: np.ndarray, b: np.ndarray, n_boot: int = 5000, seed: int = 0) -> dict[str, Any]:
    """Mean difference a - b of R@5 and MRR with a paired bootstrap 95% interval over questions."""
    rng = np.random.default_rng(seed)
    d = a - b
    idx = rng.integers(0, len(d), size=(n_boot, len(d)))
    boots = d[idx].mean(axis=1)  # (n_boot, 2)
    lo, hi = np.percentile(boots, [2.5, 97.5], axis=0)
    return {"dR@5": round(float(d[:, 0].mean()), 4), "dR@5_ci95": [round(float(lo[0]), 4), round(float(hi[0]), 4)],
            "dMRR": round(float(d[:, 1].mean()), 4), "dMRR_ci95": [round(float(lo[1]), 4), round(float(hi[1]), 4)],
            "questions_better_at5": int((d[:, 0] > 0).sum()), "questions_worse_at5": int((d[:, 0] < 0).sum())}


def fmt_delta(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    return f"{d['dR@5']:+.3f} [{d['dR@5_ci95'][0]:+.3f}, {d['dR@5_ci95'][1]:+.3f}]"


def slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in name).strip("_").lower()


# ------------------------------------------------------------------------------------ report
def write_markdown(path: Path, report: dict[str, Any]) -> None:
    L = []
    L.append(f"# LoCoMo retrieval through engram ({report['started_utc']})\n")
    L.append(f"Protocol locomo-ret v1 (`../shared/bench/locomo/README.md`), turn level, headline categories 1-4 "
             f"(n={report['n_questions_cat1_4']}), category 5 apart. {report['conversations']} conversation(s), "
             f"{report['turns']} turns, one `episodic` project memory per turn with its session date-time prefixed; "
             f"`recall(limit={LIMIT}, strengthen=False)`; scored by `locomo_eval.py`. Model: {report['model']}.\n")
    L.append("ΔR@5 = paired difference to the default `hybrid` run over the same cat 1-4 questions, with a bootstrap 95% interval.\n")
    L.append("| run | strategy / settings | R@1 | R@5 | R@10 | MRR | ΔR@5 vs hybrid [95% CI] | cat5 R@5 | cat5 MRR | recall p50 ms | p95 ms |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    L.append(f"| BM25 published (README, rank_bm25 plain tokens) | - | {PUBLISHED_BM25['R@1']:.3f} | {PUBLISHED_BM25['R@5']:.3f} | "
             f"{PUBLISHED_BM25['R@10']:.3f} | {PUBLISHED_BM25['MRR']:.3f} | | | | | |")
    L.append(f"| score fusion 0.5/0.5 dated (baseline: min-max BM25 + cosine per conversation) | - | {CALIBRATION_FUSION['R@1']:.3f} | "
             f"{CALIBRATION_FUSION['R@5']:.3f} | {CALIBRATION_FUSION['R@10']:.3f} | {CALIBRATION_FUSION['MRR']:.3f} | | | | | |")
    for name, run in report["runs"].items():
        m, c5 = run["metrics"]["cat1-4"], run["metrics"].get("cat5", {})
        lat = run.get("recall_latency") or {}
        st = run["strategy"] or "bench numpy"
        if run["strategy"] == "hybrid":
            st += f" {run['settings']['fusion']}" + (f" kw {run['settings']['keyword_weight']}" if run['settings']['fusion'] == "score" else f" k {run['settings']['rrf_k']}")
        L.append(f"| {name} | {st} | {m['R@1']:.3f} | {m['R@5']:.3f} | {m['R@10']:.3f} | {m['MRR']:.3f} | "
                 f"{fmt_delta(run.get('vs_hybrid_cat1-4'))} | {c5.get('R@5', float('nan')):.3f} | {c5.get('MRR', float('nan')):.3f} | "
                 f"{lat.get('p50_ms') or '-'} | {lat.get('p95_ms') or '-'} |")
    L.append("\nR@5 per category (cat 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):\n")
    L.append("| run | cat1 | cat2 | cat3 | cat4 | session R@5 (cat1-4) |")
    L.append("|---|---|---|---|---|---|")
    for name, run in report["runs"].items():
        m = run["metrics"]
        L.append(f"| {name} | " + " | ".join(f"{m[f'cat{c}']['R@5']:.3f}" if f"cat{c}" in m else "-" for c in CATS)
                 + f" | {m['session_cat1-4']['R@5']:.3f} |")
    ing = report["ingest"]
    L.append(f"\nengram_mcp sha256 prefixes: {report.get('code_sha256')}"
             + (f" (files edited on disk during the run, after this process had imported them, so the numbers are for the"
                f" versions above: {report['code_changed_during_run']})" if report.get("code_changed_during_run") else "") + ".")
    L.append("\n## Timings\n")
    L.append(f"- Wall time: {report['wall_s']:.0f} s. Indexing (embed + import) per conversation: "
             f"mean {ing['per_conversation_mean_s']:.2f} s, total {ing['total_s']:.1f} s for {report['turns']} turns "
             f"({ing['turns_per_s']:.0f} turns/s; embedding alone {ing['embed_turns_per_s']:.0f} turns/s).")
    if ing.get("store_path"):
        sp = ing["store_path"]
        L.append(f"- `store()` path on {sp['sample_id']} ({sp['turns']} turns): {sp['seconds']:.1f} s "
                 f"({sp['turns_per_s']:.0f} turns/s) vs {sp['import_path_seconds']:.1f} s ({sp['import_path_turns_per_s']:.0f} turns/s) "
                 f"via embed_documents + import_, timed right after it with the model warm. "
                 f"Hybrid rankings of its questions, store vs import: {sp['agreement']}.")
    L.append("- Recall latency is wall time of the in-process `recall` call (query embedding + ranking + record fetch).")
    lp = report.get("latency_breakdown")
    if lp:
        L.append(f"- Where it goes ({lp['sample_id']}, interleaved per question, p50 / p95 ms): "
                 + "; ".join(f"{k} {v['p50_ms']} / {v['p95_ms']}" for k, v in lp.items() if isinstance(v, dict)) + ".")
    mi = report["machine"]
    L.append(f"- Machine: {mi['cpus']} CPUs, load average {mi.get('loadavg_start')} at start, {mi.get('loadavg_end')} at end "
             "(other work shares this machine; timings are indicative).")
    if report.get("investigation"):
        L.append("\n## Investigation: engram's hybrid ranking re-implemented in the bench, one change at a time\n")
        inv = report["investigation"]
        for name in SIM_CHECKS:
            if inv.get(name, {}).get("agreement_with_real_run"):
                L.append(f"- `{name}` (calls engram's own fusion function) vs the real `recall` run: {inv[name]['agreement_with_real_run']}.")
        L.append("")
        L.append("| variant | R@1 | R@5 | R@10 | MRR | ΔR@5 vs hybrid [95% CI] | ΔMRR | cat5 R@5 |")
        L.append("|---|---|---|---|---|---|---|---|")
        for name, v in inv.items():
            m, d = v["metrics"]["cat1-4"], v.get("vs_hybrid_cat1-4")
            L.append(f"| {name} | {m['R@1']:.3f} | {m['R@5']:.3f} | {m['R@10']:.3f} | {m['MRR']:.3f} | {fmt_delta(d)} | "
                     f"{d['dMRR']:+.3f} | {v['metrics'].get('cat5', {}).get('R@5', float('nan')):.3f} |")
    path.write_text("\n".join(L) + "\n", encoding="utf-8")


def write_chart(path: Path, report: dict[str, Any]) -> None:
    plt = pyplot()
    if plt is None:
        return
    names = list(report["runs"])
    r5 = [report["runs"][n]["metrics"]["cat1-4"]["R@5"] for n in names]
    mrr = [report["runs"][n]["metrics"]["cat1-4"]["MRR"] for n in names]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(10, 4.8))
    b1 = ax.bar(x - 0.2, r5, 0.4, label="R@5")
    b2 = ax.bar(x + 0.2, mrr, 0.4, label="MRR")
    ax.bar_label(b1, fmt="%.3f", fontsize=7)
    ax.bar_label(b2, fmt="%.3f", fontsize=7)
    ax.axhline(PUBLISHED_BM25["R@5"], ls="--", lw=1, color="C0", alpha=0.6, label="published BM25 R@5 .480")
    ax.axhline(PUBLISHED_BM25["MRR"], ls=":", lw=1, color="C1", alpha=0.8, label="published BM25 MRR .367")
    ax.set_xticks(x, names, rotation=20, ha="right")
    ax.set_ylim(0, 1)
    ax.set_title(f"LoCoMo turn-level retrieval, categories 1-4 (n={report['n_questions_cat1_4']}), engram recall")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------ main
def code_fingerprint() -> dict[str, str]:
    """sha256 prefixes of the modules whose behaviour these numbers measure (files change under us)."""
    import hashlib

    files = sorted((REPO_ROOT / "engram_mcp" / "index").glob("*.py")) + sorted((REPO_ROOT / "engram_mcp" / "services").glob("*.py"))
    return {str(f.relative_to(REPO_ROOT / "engram_mcp")): hashlib.sha256(f.read_bytes()).hexdigest()[:12] for f in files}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory with locomo10.json and locomo_eval.py")
    ap.add_argument("--out", type=Path, help="output directory (default bench/results/<UTC>/locomo)")
    ap.add_argument("--quick", action="store_true", help="only the first 2 conversations")
    ap.add_argument("--no-investigate", dest="investigate", action="store_false", help="skip the fusion variants")
    ap.add_argument("--keep-variant-runs", action="store_true", help="keep each variant's ranked JSONL (1 MB each)")
    ap.add_argument("--no-store-compare", dest="store_compare", action="store_false", help="skip timing the store() path")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    for noisy in ("engram", "surrealdb", "fastembed"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    started, stamp = time.perf_counter(), utc_stamp()
    code_before, load_before = code_fingerprint(), os.getloadavg()
    data_dir = a.data.resolve()
    data_file, eval_script = data_dir / "locomo10.json", data_dir / "locomo_eval.py"
    out = (a.out or RESULTS_DIR / stamp / "locomo").resolve()
    out.mkdir(parents=True, exist_ok=True)
    convs = load_conversations(data_file)
    tmp = Path(tempfile.mkdtemp(prefix="engram-locomo-"))
    try:
        if a.quick:
            convs = convs[:2]
            keep = {c["sample_id"] for c in convs}
            subset = [s for s in json.loads(data_file.read_text(encoding="utf-8")) if s["sample_id"] in keep]
            data_file = tmp / "locomo10-quick.json"  # temp only, deleted below: never in the repository
            data_file.write_text(json.dumps(subset), encoding="utf-8")
        report = run(a, convs, data_file, eval_script, out, tmp, stamp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    code_after = code_fingerprint()
    report["code_sha256"] = code_before
    if code_after != code_before:
        report["code_changed_during_run"] = {k: [code_before[k], v] for k, v in code_after.items() if v != code_before[k]}
        log.warning("engram_mcp files changed on disk during the run (this process kept the versions it imported): %s", report["code_changed_during_run"])
    report["machine"]["loadavg_start"] = [round(x, 2) for x in load_before]
    report["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    write_json(out / "locomo.json", report)
    write_markdown(out / "locomo.md", report)
    write_chart(out / "locomo.png", report)
    print((out / "locomo.md").read_text(encoding="utf-8"))
    print(f"results in {out} ({report['wall_s']:.0f} s)")
    return 0


def run(a, convs, data_file: Path, eval_script: Path, out: Path, tmp: Path, stamp: str) -> dict[str, Any]:
    ranked: dict[str, dict[str, list[str]]] = {name: {} for name, _, _ in RUNS}
    wall: dict[str, list[float]] = {name: [] for name, _, _ in RUNS}
    reported: dict[str, list[float]] = {name: [] for name, _, _ in RUNS}
    settings: dict[str, dict[str, Any]] = {}
    ingest_rows, signals = [], []
    embedder = None
    store_cmp = None
    latency_probe: dict[str, Any] = {}
    for ci, conv in enumerate(convs):
        home = tmp / f"home-{ci}"
        home.mkdir()
        svc = MemoryService(home=home, embedder=embedder)
        embedder = svc.embedder
        root = new_project(tmp, f"proj-{ci}", {})
        ctx = RequestContext(project_root=root)
        turns, questions = conv["turns"], conv["questions"]
        # -- ingest: one batched embedding, one import
        t0 = time.perf_counter()
        svc.handle(ctx, "project")  # open the fresh store (counted in indexing time)
        t1 = time.perf_counter()
        vecs = svc.embedder.embed_documents([t["dated"] for t in turns])
        t2 = time.perf_counter()
        id2dia, parts = ingest_import(svc, ctx, turns, vecs, tmp)
        t3 = time.perf_counter()
        row = {"sample_id": conv["sample_id"], "turns": len(turns), "questions": len(questions),
               "open_s": round(t1 - t0, 3), "embed_s": round(t2 - t1, 3), "jsonl_s": round(parts["jsonl_s"], 3),
               "import_s": round(parts["import_s"], 3), "total_s": round(t3 - t0, 3), "redacted_turns": parts["redacted_turns"]}
        ingest_rows.append(row)
        log.info("%s: %d turns indexed in %.1f s (embed %.1f, import %.2f)", conv["sample_id"], len(turns), t3 - t0, t2 - t1, parts["import_s"])
        # -- runs
        for name, strategy, config in RUNS:
            if strategy is None:
                continue
            eff = use_config(svc, root, config)
            settings.setdefault(name, eff)
            r, w, rep = ask(svc, ctx, questions, strategy, id2dia)
            ranked[name].update(r)
            wall[name] += w
            reported[name] += rep
            log.info("  %-13s %d questions, p50 %.1f ms", name, len(questions), float(np.median(w)) * 1000)
        # -- where recall time goes (first conversation only)
        if ci == 0:
            latency_probe = probe_latency(svc, ctx, questions)
            latency_probe["sample_id"] = conv["sample_id"]
        # -- in-run floor: plain-token BM25 over undated docs
        t = time.perf_counter()
        bm = PlainBM25([tt["plain"] for tt in turns])
        build = time.perf_counter() - t
        for q in questions:
            t = time.perf_counter()
            order = bm.rank(q["question"], LIMIT)
            wall["bm25-plain"].append(time.perf_counter() - t)
            ranked["bm25-plain"][q["qid"]] = [turns[i]["dia_id"] for i in order]
        row["plain_bm25_build_s"] = round(build, 3)
        # -- store() path, timed once
        if a.store_compare and ci == 0:
            sroot = new_project(tmp, f"proj-store-{ci}", {})
            sctx = RequestContext(project_root=sroot)
            svc.handle(sctx, "project")
            t = time.perf_counter()
            sid2dia = ingest_store(svc, sctx, turns)
            secs = time.perf_counter() - t
            use_config(svc, sroot, {})
            sr, _, _ = ask(svc, sctx, questions, "hybrid", sid2dia)
            iroot = new_project(tmp, f"proj-import-again-{ci}", {})  # import path again, same load, model warm
            ictx = RequestContext(project_root=iroot)
            svc.handle(ictx, "project")
            t = time.perf_counter()
            ivecs = svc.embedder.embed_documents([tt["dated"] for tt in turns])
            ingest_import(svc, ictx, turns, ivecs, tmp)
            isecs = time.perf_counter() - t
            store_cmp = {"sample_id": conv["sample_id"], "turns": len(turns), "seconds": round(secs, 2),
                         "turns_per_s": round(len(turns) / secs, 1), "import_path_seconds": round(isecs, 2),
                         "import_path_turns_per_s": round(len(turns) / isecs, 1),
                         "agreement": agreement(sr, {q["qid"]: ranked["hybrid"][q["qid"]] for q in questions})}
            log.info("  store() path: %.1f s (%.0f turns/s); import path again: %.1f s; agreement %s", secs, len(turns) / secs, isecs, store_cmp["agreement"])
        # -- signals for the investigation
        if a.investigate:
            plain_vecs = svc.embedder.embed_documents([tt["plain"] for tt in turns])
            qvecs = np.vstack([svc.embedder.embed_query(q["question"]) for q in questions])
            signals.append((conv, ConvSignals(turns, questions, vecs, plain_vecs, qvecs)))
        svc.close()

    settings["bm25-plain"] = {"tokens": "lowercase, split on non-alphanumerics", "k1": 1.5, "b": 0.75, "idf": "lucene log(1+(N-df+.5)/(df+.5))",
                              "docs": "speaker: text [image: caption] (undated)", "library": "bench/common.py PlainBM25 (numpy)"}
    runs: dict[str, Any] = {}
    for name, strategy, config in RUNS:
        f = out / f"{name}.jsonl"
        write_jsonl(f, to_rows(ranked[name]))
        ev = evaluate(f, data_file, eval_script)
        runs[name] = {
            "strategy": strategy,
            "config_frontmatter": config,
            "settings": settings[name],
            "metrics": headline(ev),
            "eval_header": ev["eval_header"],
            "recall_latency": latency_summary(wall[name]),
            "recall_reported_query_time": latency_summary(reported[name]) if reported[name] else None,
            "file": f.name,
        }
    n_turns = sum(r["turns"] for r in ingest_rows)
    total = sum(r["total_s"] for r in ingest_rows)
    embed = sum(r["embed_s"] for r in ingest_rows)
    report: dict[str, Any] = {
        "benchmark": "locomo-ret v1 (turn level) through engram MemoryService",
        "started_utc": stamp,
        "data": os.path.relpath(a.data.resolve() / "locomo10.json", REPO_ROOT),
        "quick": a.quick,
        "conversations": len(convs),
        "turns": n_turns,
        "questions": sum(len(c["questions"]) for c in convs),
        "n_questions_cat1_4": runs["hybrid"]["metrics"]["cat1-4"]["n"],
        "model": embedder.model_name,
        "limit": LIMIT,
        "memory": {"type": "episodic", "scope": "project", "content": "[<session date-time>] <speaker>: <text>[ [image: <blip_caption>]]",
                   "metadata": {"dia_id": "..."}, "dedup": False, "created_at": "unset (import: one 'now' for all turns)"},
        "ingest": {"method": "embed_documents (length-sorted batches) + MemoryService.import_ of a JSONL carrying vectors",
                   "per_conversation": ingest_rows, "total_s": round(total, 2),
                   "per_conversation_mean_s": round(total / len(ingest_rows), 3),
                   "turns_per_s": round(n_turns / total, 1), "embed_turns_per_s": round(n_turns / embed, 1),
                   "store_path": store_cmp},
        "runs": runs,
        "published": {"bm25_rank_bm25_plain": PUBLISHED_BM25, "calibration_score_fusion_0.5_dated": CALIBRATION_FUSION},
        "machine": machine_info(),
    }
    # paired comparisons against the default hybrid, cat 1-4 (the headline set)
    gold = load_gold(a.data.resolve(), {c["sample_id"] for c in convs})
    qids = [q for q, (cat, _) in gold.items() if cat in CATS]
    base = per_question(ranked["hybrid"], gold, qids)
    if abs(base[:, 0].mean() - runs["hybrid"]["metrics"]["cat1-4"]["R@5"]) > 1e-3:
        raise RuntimeError("bench's per-question scoring disagrees with locomo_eval.py")
    for name in runs:
        if name != "hybrid":
            runs[name]["vs_hybrid_cat1-4"] = paired_delta(per_question(ranked[name], gold, qids), base)
    if a.investigate:
        log.info("investigation: %d variants", len(variant_specs()) + len(single_signal_variants()))
        inv = simulate(signals, out / "variants", data_file, eval_script, ranked, a.keep_variant_runs)
        for name, v in inv.items():
            v["vs_hybrid_cat1-4"] = paired_delta(per_question(v.pop("_ranked"), gold, qids), base)
        report["investigation"] = inv
    if latency_probe:
        report["latency_breakdown"] = latency_probe
    return report


if __name__ == "__main__":
    sys.exit(main())
