#!/usr/bin/env python3
"""What the session start's token budget buys: the month replay (quick mode, both policies) at
several `context_token_budget` values, scored by the world's score.py.

    .venv/bin/python bench/month/budget_sweep.py [--world DIR] [--budgets 800 1200 1600 2400]
        [--policy diligent|nudged|both] [--out DIR]

The start block is the one place that puts a fact in front of Claude when no prompt resembles
it (a standing rule needed weeks later), so context recall rises with its budget, and the
precision of its lines falls. Writes, into --out: one folder per budget (run.py's files),
sweep.json (every figure), sweep.md (the table) and sweep.png (recall and precision against the
tokens a session start cost). ~4 minutes per budget on a 2-core machine; not part of `make
bench` (whose month part replays the default budget in full mode).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.common import pyplot  # noqa: E402
from bench.month import report, run, standin  # noqa: E402

DEFAULT_BUDGETS_TOKENS = (800, 1200, 1600, 2400)


def figures(score: dict[str, Any]) -> dict[str, Any]:
    """The figures of one policy's score that the sweep compares."""
    tokens = score["tokens"]
    return {
        "context_recall": score["recall"]["context"],
        "tool_recall_at_5": score["recall"]["top5"],
        "stale": score["stale"]["rate"],
        "precision": score["precision"]["rate"],
        "start_tokens_mean": tokens["session_start_mean"],
        "start_tokens_p95": tokens["session_start_p95"],
        "later_turn_tokens_p95": tokens["later_turn_p95"],
    }


def sweep(world: Path, budgets: list[int], out: Path, policy: str) -> dict[str, Any]:
    """Replay `policy` (or "both") at each budget; {budget: {policy: figures}}."""
    policies = list(standin.POLICIES) if policy == "both" else [policy]
    rows: dict[str, Any] = {}
    for i, budget in enumerate(budgets, 1):
        print(f"[{i}/{len(budgets)}] start budget {budget} tokens", file=sys.stderr, flush=True)
        folder = out / f"budget-{budget}"
        argv = ["--quick", "--world", str(world), "--policy", policy, "--start-budget", str(budget)]
        if run.main([*argv, "--out", str(folder)]) != 0:
            raise SystemExit(f"the replay at budget {budget} failed")
        month = json.loads((folder / "month.json").read_text())
        if "skipped" in month:
            raise SystemExit(f"the replay was skipped: {month['skipped']}")
        rows[str(budget)] = {p: figures(json.loads((folder / f"score-{p}.json").read_text())) for p in policies}
    return rows


def markdown(world: Path, rows: dict[str, Any]) -> str:
    out = [
        "## What the session start's budget buys (month replay, quick mode)",
        "",
        f"World `{world}`; tokens are characters / 4, rounded up; `context_token_budget` set per run.",
        "",
        "| budget | policy | context recall | tool recall@5 | stale | precision | start tokens mean / p95 | prompt p95 after turn 1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for budget, by_policy in rows.items():
        for policy, f in by_policy.items():
            out.append(
                f"| {budget} | {policy} | {f['context_recall']:.3f} | {f['tool_recall_at_5']:.3f} | {f['stale']:.3f} "
                f"| {f['precision']:.3f} | {f['start_tokens_mean']:.0f} / {f['start_tokens_p95']:.0f} "
                f"| {f['later_turn_tokens_p95']:.0f} |"
            )
    return "\n".join(out) + "\n"


def plot(rows: dict[str, Any], path: Path) -> bool:
    """Recall and precision against the mean start tokens, one line per policy; False without matplotlib."""
    plt = pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    policies = list(next(iter(rows.values())))
    for policy, style in zip(policies, ("-o", "--s"), strict=False):
        xs = [rows[b][policy]["start_tokens_mean"] for b in rows]
        ax.plot(xs, [rows[b][policy]["context_recall"] for b in rows], style, label=f"{policy}: context recall")
        ax.plot(xs, [rows[b][policy]["precision"] for b in rows], style, alpha=0.5, label=f"{policy}: precision")
        for b, x in zip(rows, xs, strict=True):
            ax.annotate(
                b, (x, rows[b][policy]["context_recall"]), textcoords="offset points", xytext=(4, -10), fontsize=7
            )
    ax.set_xlabel("session start tokens (mean); labels: the budget")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=report.PUBLIC_WORLD)
    ap.add_argument("--budgets", type=int, nargs="+", default=list(DEFAULT_BUDGETS_TOKENS), metavar="TOKENS")
    ap.add_argument("--policy", choices=[*standin.POLICIES, "both"], default="both")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: a new temporary one)")
    a = ap.parse_args(argv)
    for budget in a.budgets:
        if problem := run.start_budget_problem(budget):
            ap.error(f"budget {budget}: {problem}")
    out = a.out or Path(tempfile.mkdtemp(prefix="month-sweep-"))
    out.mkdir(parents=True, exist_ok=True)
    rows = sweep(a.world, sorted(set(a.budgets)), out, a.policy)
    (out / "sweep.json").write_text(json.dumps({"world": str(a.world), "budgets": rows}, indent=1) + "\n")
    md = markdown(a.world, rows)
    if plot(rows, out / "sweep.png"):
        md += "\n![recall and precision against session start tokens](sweep.png)\n"
    (out / "sweep.md").write_text(md)
    print(md)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
