#!/usr/bin/env python3
"""The month replay: a coding-month world through engram, both stand-in policies, scored and reported.

    .venv/bin/python bench/month/run.py --world DIR [--policy diligent|nudged|both] [--quick] [--out DIR]

--quick drives engram's hooks as processes (the test suite's and make bench's mode); without it
the replay goes through the pinned Claude Code CLI with engram installed (full mode, slower).
Writes run-<policy>.jsonl (the run file score.py reads), score-<policy>.json, month.json and
month.md into --out, and prints the markdown report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.month import report, standin  # noqa: E402
from bench.month.clock import ClockUnavailable  # noqa: E402
from bench.month.world import load_world  # noqa: E402


#: The worlds `make bench` replays in quick mode after the public one (folders of bench/month/),
#: each written from the world README alone, without reading the public world or engram's code.
OTHER_WORLDS = ("heldout", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def start_budget_problem(tokens: int) -> str | None:
    """Why engram would refuse `tokens` as `context_token_budget` (its declared bounds), or None."""
    from engram_mcp.core.config_keys import SETTINGS

    spec = SETTINGS["context_token_budget"]
    low, high = int(spec.minimum or 0), int(spec.maximum or tokens)
    return None if low <= tokens <= high else f"must be from {low} to {high} tokens"


def setting_problem(assignment: str) -> str | None:
    """Why `--set KEY=VALUE` cannot be a line of engram's config (unknown key, no "="), or None."""
    from engram_mcp.core.config_keys import SETTINGS

    key, sep, value = assignment.partition("=")
    if not sep or not value.strip():
        return f"{assignment!r} is not KEY=VALUE"
    return None if key.strip() in SETTINGS else f"{key.strip()!r} is not an engram setting"


def write_user_config(home: Path, settings: dict[str, str]) -> None:
    """The replay user's engram config (~/.claude/engram.local.md) with `settings`, as a user
    would write them; engram checks each value when it reads the file."""
    from engram_mcp.core.config import user_config_path

    if not settings:
        return
    path = user_config_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{key}: {value}\n" for key, value in settings.items())
    path.write_text(f"---\n{lines}---\n", encoding="utf-8")


def replay_policy(
    world_dir: Path,
    policy: str,
    out: Path,
    *,
    quick: bool,
    keep: bool,
    real_time: bool = False,
    start_budget: int | None = None,
    settings: dict[str, str] | None = None,
) -> dict:
    """Replay `policy` in a fresh HOME under `out`; its run file, score and store composition."""
    from bench.month.full import FullReplay
    from bench.month.quick import QuickReplay

    world = load_world(world_dir)
    work = Path(tempfile.mkdtemp(prefix=f"month-{policy}-"))
    started = time.perf_counter()
    replay = (QuickReplay if quick else FullReplay)(world, policy, work, simulate_time=not real_time)
    config = dict(settings or {})
    if start_budget is not None:
        config["context_token_budget"] = str(int(start_budget))
    write_user_config(replay.home, config)
    try:
        run_file = replay.run()
        composition = report.composition(replay)
        lost = report.step_blocks_lost(replay.user_dir)
        unmatched = getattr(replay, "unmatched_commands", lambda: None)()
    finally:
        replay.close()
    seconds = time.perf_counter() - started
    target = out / f"run-{policy}.jsonl"
    shutil.copyfile(run_file, target)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    score = report.score(target, world_dir, per_need=True)
    (out / f"score-{policy}.json").write_text(json.dumps(score, indent=1) + "\n")
    return {
        "policy": policy,
        "mode": "quick" if quick else "full",
        "clock": "real time (--real-time)" if real_time else "simulated (libfaketime)",
        "seconds": round(seconds, 1),
        "run_file": str(target),
        "score": score,
        "composition": composition,
        "stop_hook": report.stop_figures(target, world),
        "hook_seconds": report.hook_timing(replay.hook_seconds),
        "step_blocks_lost": lost,
        "stand_in": report.stand_in_figures(target),
        "unmatched_commands": unmatched,
        "work_dir": str(work) if keep else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, default=report.PUBLIC_WORLD)
    ap.add_argument("--policy", choices=[*standin.POLICIES, "both"], default="both")
    ap.add_argument("--quick", action="store_true", help="drive the hooks directly (no Claude Code)")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default: a new temporary one)")
    ap.add_argument("--baseline", type=Path, default=report.BASELINE, help="JSON of an earlier run to show beside")
    ap.add_argument("--keep", action="store_true", help="keep the replay's HOME and repositories")
    ap.add_argument(
        "--real-time",
        action="store_true",
        help="no simulated clock: the month's gaps collapse to seconds (how the issue's first replay ran)",
    )
    ap.add_argument(
        "--memory-style", choices=standin.MEMORY_STYLES, default="full", help="how the stand-in writes a memory"
    )
    ap.add_argument(
        "--start-budget",
        type=int,
        default=None,
        metavar="TOKENS",
        help="the session start's token budget (context_token_budget; default: engram's own)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an engram setting for the replay's user config (repeatable), as in ~/.claude/engram.local.md",
    )
    a = ap.parse_args(argv)
    if a.start_budget is not None and (problem := start_budget_problem(a.start_budget)):
        ap.error(f"--start-budget {problem}")
    for assignment in a.set:
        if problem := setting_problem(assignment):
            ap.error(f"--set {problem}")
    settings = {k.strip(): v.strip() for k, _, v in (x.partition("=") for x in a.set)}
    os.environ[standin.MEMORY_STYLE_ENV] = a.memory_style
    out = a.out or Path(tempfile.mkdtemp(prefix="month-out-"))
    out.mkdir(parents=True, exist_ok=True)
    policies = list(standin.POLICIES) if a.policy == "both" else [a.policy]
    try:
        results = [
            replay_policy(
                a.world,
                p,
                out,
                quick=a.quick,
                keep=a.keep,
                real_time=a.real_time,
                start_budget=a.start_budget,
                settings=settings,
            )
            for p in policies
        ]
    except ClockUnavailable as exc:
        print(f"bench/month: skipped: {exc}", file=sys.stderr)
        (out / "month.json").write_text(json.dumps({"skipped": str(exc)}) + "\n")
        return 0
    data = {
        "world": str(a.world),
        "quick": a.quick,
        "real_time": a.real_time,
        "memory_style": a.memory_style,
        "start_budget": a.start_budget,
        "settings": settings,
        "policies": {r["policy"]: r for r in results},
    }
    (out / "month.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    baseline = report.load_baseline(a.baseline)
    if baseline is not None and Path(str(baseline.get("world") or "")).name != Path(a.world).name:
        # another world's figures beside this one's would read as a before and after
        print(f"baseline {a.baseline} is of world {baseline.get('world')!r}, not {str(a.world)!r}: not shown")
        baseline = None
    md = report.markdown(data, baseline)
    (out / "month.md").write_text(md)
    print(md)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
