#!/usr/bin/env python3
"""`make bench`: every engram benchmark in one run, one report.

    .venv/bin/python bench/run_all.py [--quick] [--out DIR] [--skip PART ...]

Parts, in order (each runs in its own process, so one crashing or hanging cannot take the
others down, and its peak RSS is its own):

  tokens  bench/token_costs.py    tools/list payload, always-on skills/agent/commands text,
                                  `claude plugin details`, the SessionStart block vs its budget
  locomo  bench/locomo_bench.py   LoCoMo turn-level retrieval (R@1/5/10, MRR, per category) for
                                  keyword, vector and hybrid recall, beside plain BM25 (same run)
  coding  bench/coding_memory_bench.py  coding-agent memory across project, user and session
                                  scopes (R@5, hit@1, MRR@10, forbidden per kind) beside its plain
                                  BM25 baseline (same run), and store-time dedup precision; ~1 min
  speed   bench/speed_bench.py    store, recall per strategy, query embedding, get_memory_context,
                                  disk and RSS at 1k / 10k / 100k memories
  scale   bench/scale_extras.py   graph traversal (1 and 3 hops), promotion of a 200-memory
                                  session, the maintenance pass, MCP spawn -> initialize and
                                  spawn -> first recall, PostToolUse / SessionStart hook wall time,
                                  at the same sizes; and, for the previous design (index rebuilt
                                  on every open) and the new one (index persisted: first open after
                                  the upgrade and normal open) on the same stores: cold open of a
                                  store, cold first recall (daemon spawn -> answer, model load
                                  included; and from MCP spawn beside it), daemon peak / steady
                                  RSS, disk bytes per memory, and a daemon holding 10 project
                                  stores + the user store (10k memories each; 200 in --quick),
                                  against the targets
  bulk    bench/bulk_bench.py     import with vectors (beside 16 memories per lock hold), embedding
                                  new text, export, and disk per memory over a simulated month of
                                  daily use (beside no compaction), same run
  hooks   bench/hooks_bench.py    wall time of every hook process; Stop-hook design token costs
  stop    bench/stop_bench.py     the Stop hook's trigger on the labelled corpus (precision, recall,
                                  nudge rate, dev and held-out halves); ~1 s, same in --quick
  dedup   bench/dedup_bench.py    store-time dedup: false merges of near-duplicates that change one
                                  fact (generated pairs), paraphrases still merged, the coding-memory
                                  dev set's near-duplicate groups; beside the figures before; ~2 min
  secrets bench/secrets_bench.py  secret redaction beside detect-secrets: recall on the secrets
                                  corpus, false positives on the hard negatives, ms per KB; the local
                                  and outbound passes on bench/data's prose corpus beside the rules
                                  before issue 32 (secrets in clear, false positives, µs/write); ~25 s
  ui      bench/ui_bench.py       `engram ui` over HTTP: page load and search (targets 300 / 100 ms
                                  at 10k memories), the other pages' API calls; 10k (quick: 1k)
  model   bench/model_load_bench.py  the built-in model through fastembed vs directly on
                                  onnxruntime: process start to first query vector, peak RSS, query
                                  p50/p95, docs/s, fresh processes A/B; 6 rounds (quick: 2), ~1 min
  month   bench/month/run.py      the month replay (issue 33): the coding-month world through the
                                  pinned Claude Code CLI with the plugin installed, on simulated
                                  time, both stand-in policies, scored by the world's score.py
                                  beside the committed baseline, then the other worlds
                                  (bench/month/heldout, third and fourth) in quick
                                  mode; quick: the hooks as
                                  processes on a small generated world (bench/month/tiny_world.py)

`--quick` (1k memories, 2 LoCoMo conversations, fewer repetitions) checks that everything still
runs; tests/test_bench_report.py runs it. Writes bench/results/<UTC>/ (or --out): report.md
(headline table first), report.json, the plots (*.png) and each part's own directory and log.
A part that fails is reported as failed with its error; the others still run; the exit code
is 1 if any part failed.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for p in (str(ROOT), str(BENCH)):
    if p not in sys.path:
        sys.path.insert(0, p)

PARTS = ("tokens", "locomo", "coding", "dedup", "speed", "scale", "bulk", "hooks", "stop", "secrets", "ui", "model", "month")
FULL_SIZES = [1000, 10000, 100000]
QUICK_SIZES = [1000]
# The LoCoMo runs the report needs (the strategies + the baseline); `--locomo-runs all`
# adds locomo_bench's fusion variants (hybrid-rrf, keyword weight 0.3 / 0.7), ~3 more minutes.
LOCOMO_CORE_RUNS = ("bm25-plain", "keyword", "vector", "hybrid")
TIMEOUTS_S = {  # per part; generous: they only stop a hung part
    False: {"tokens": 600, "locomo": 2400, "coding": 600, "dedup": 600, "speed": 1800, "scale": 5400, "bulk": 1800, "hooks": 1200, "stop": 300, "secrets": 300, "ui": 900, "model": 900, "month": 3600},
    True: {"tokens": 300, "locomo": 1200, "coding": 600, "dedup": 600, "speed": 900, "scale": 900, "bulk": 900, "hooks": 900, "stop": 300, "secrets": 300, "ui": 600, "model": 300, "month": 600},
}
FAIL_ENV = "ENGRAM_BENCH_FAIL_PART"  # tests: make the named part fail on purpose
BUDGET_S = 20 * 60  # the full suite must finish within 20 minutes on a 2-core machine


def utc_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def claude_available() -> bool:
    from tests.claude_harness import claude_bin

    return claude_bin() is not None


# ------------------------------------------------------------------------------------ child side
def part_settings(part: str, quick: bool, locomo_runs: str) -> dict[str, Any]:
    """What each part is asked to do; recorded in the report."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    if part == "tokens":
        return {"claude_plugin_details": claude_available()}
    if part == "locomo":
        argv = ["--no-investigate", "--no-store-compare"] + (["--quick"] if quick else [])
        return {"argv": argv, "runs": list(LOCOMO_CORE_RUNS) if locomo_runs == "core" else "all",
                "note": "investigation variants and the store()-path comparison are off (run locomo_bench.py alone for them)"}
    if part == "coding":
        return {"argv": [], "note": "the whole set in --quick too (454 memories, 200 questions)"}
    if part == "speed":
        opts: dict[str, Any] = {"sizes": sizes}
        if quick:
            opts.update(queries=100, stores=100, contexts=20, distinct_vectors=500, embed_import=100)
        return opts
    if part == "scale":
        return {"sizes": sizes, "quick": quick, "multi_store": {"projects": 10, "per_store": 200 if quick else 10_000}}
    if part == "bulk":
        import bulk_bench

        return {"quick": quick, **(bulk_bench.QUICK if quick else bulk_bench.FULL)}
    if part == "hooks":
        argv = (["--quick"] if quick else []) + ([] if claude_available() else ["--no-claude"])
        return {"argv": argv, "stop_design": claude_available()}
    if part == "stop":
        return {"corpus": "tests/data/stop_corpus.jsonl"}
    if part == "dedup":
        return {"seed": 3233, "devset": True, "note": "the same pairs in --quick (they are the measure)"}
    if part == "secrets":
        return {"corpora": ["tests/data/secrets_corpus.jsonl", "tests/data/not_secrets.jsonl",
                            "bench/data/secrets_prose.jsonl", "bench/data/not_secrets_identifiers.jsonl"]}
    if part == "ui":  # the targets are stated at 10k memories
        return {"sizes": [1000] if quick else [10000], "repeats": 10 if quick else 30}
    if part == "model":
        # fewer rounds and documents than the script's own defaults (10, 500): ~1 min of the budget
        return {"rounds": 2, "queries": 30, "docs": 50} if quick else {"rounds": 6, "queries": 100, "docs": 200}
    if part == "month":
        if quick:
            return {"world": "bench/month/tiny_world.py", "policies": "both", "mode": "quick (hooks as processes)"}
        from bench.month.run import OTHER_WORLDS

        others = ", ".join(f"bench/month/{w}" for w in OTHER_WORLDS)
        return {"world": "../shared/bench/coding-month", "other_worlds": f"{others} (quick)", "policies": "both",
                "mode": "full (the pinned Claude Code CLI with the plugin installed, the scripted stand-in model)"}
    raise ValueError(part)


def run_child(part: str, out: Path, quick: bool, locomo_runs: str) -> int:
    """Runs inside the part's own process."""
    # Stopped by the parent (Ctrl-C): unwind, so the parts' `finally` blocks stop their daemons and remove temp dirs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if os.environ.get(FAIL_ENV) == part:
        raise RuntimeError(f"{part} failed on purpose ({FAIL_ENV})")
    settings = part_settings(part, quick, locomo_runs)
    out.mkdir(parents=True, exist_ok=True)
    if part == "tokens":
        import token_costs

        token_costs.run_tokens(out, use_claude=settings["claude_plugin_details"])
        return 0
    if part == "locomo":
        import locomo_bench

        if locomo_runs == "core":
            wanted = [r for r in locomo_bench.RUNS if r[0] in LOCOMO_CORE_RUNS]
            if {r[0] for r in wanted} != set(LOCOMO_CORE_RUNS):
                raise RuntimeError(f"locomo_bench.RUNS lacks some of {LOCOMO_CORE_RUNS}")
            locomo_bench.RUNS[:] = wanted
        return int(locomo_bench.main(settings["argv"] + ["--out", str(out)]) or 0)
    if part == "coding":
        import coding_memory_bench

        return int(coding_memory_bench.main(settings["argv"] + ["--out", str(out)]) or 0)
    if part == "speed":
        import speed_bench

        sizes = settings.pop("sizes")
        if hasattr(speed_bench, "run_speed"):
            params = inspect.signature(speed_bench.run_speed).parameters
            kwargs = {k: v for k, v in settings.items() if k in params}
            results = speed_bench.run_speed(sizes, out, **kwargs)
            if not (out / "speed.json").exists() and isinstance(results, dict):
                (out / "speed.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            return 0
        sys.argv = ["speed_bench.py", "--sizes", *map(str, sizes), "--out", str(out)]
        return int(speed_bench.main() or 0)
    if part == "scale":
        import scale_extras

        multi = settings["multi_store"]
        scale_extras.run_scale(settings["sizes"], out, quick=quick, multi_per_store=multi["per_store"], multi_projects=multi["projects"])
        return 0
    if part == "bulk":
        import bulk_bench

        bulk_bench.run_bulk(out, quick=quick)
        return 0
    if part == "hooks":
        import hooks_bench

        sys.argv = ["hooks_bench.py", *settings["argv"], "--out", str(out)]
        return int(hooks_bench.main() or 0)
    if part == "dedup":
        import dedup_bench

        return int(dedup_bench.main(["--out", str(out)]) or 0)
    if part == "stop":
        import stop_bench

        return int(stop_bench.main(["--out", str(out)]) or 0)
    if part == "secrets":
        import secrets_bench

        return int(secrets_bench.main(["--out", str(out)]) or 0)
    if part == "ui":
        import ui_bench

        ui_bench.run_ui(settings["sizes"], out, repeats=settings["repeats"])
        return 0
    if part == "model":
        import model_load_bench

        return int(model_load_bench.main([f"--{k}={v}" for k, v in settings.items()] + ["--out", str(out)]) or 0)
    if part == "month":
        from bench.month import run as month_run
        from bench.month import tiny_world

        # quick: the hooks as processes on a small generated world; the whole bench: the public world
        # through real Claude Code (~5 min a policy on a quiet 2-core machine)
        mode = ["--world", str(tiny_world.write(out / "world")), "--quick"] if quick else []
        rc = int(month_run.main([*mode, "--policy", "both", "--out", str(out)]) or 0)
        if not quick:  # the other worlds, each written without reading the public one: does it carry over?
            for world in month_run.OTHER_WORLDS:
                other = [sys.executable, str(BENCH / "month" / "run.py"), "--quick", "--world", str(BENCH / "month" / world)]
                done = subprocess.run([*other, "--policy", "both", "--out", str(out / world)], check=False)
                rc = max(rc, done.returncode)
        return rc
    raise ValueError(part)


# ------------------------------------------------------------------------------------ parent side
def _peak_rss_mb(rusage) -> float | None:
    return round(rusage.ru_maxrss / 1024.0, 1) if rusage is not None else None


def run_part(part: str, out_dir: Path, quick: bool, locomo_runs: str, timeout: float) -> dict[str, Any]:
    """Run one part in a child process, streaming its output; never raises."""
    part_dir = out_dir / part
    log_path = out_dir / "logs" / f"{part}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-u", str(Path(__file__).resolve()), "--child", part, "--out", str(part_dir)] + \
          (["--quick"] if quick else []) + ["--locomo-runs", locomo_runs]
    started = time.perf_counter()
    info: dict[str, Any] = {"status": "failed", "dir": part, "log": str(log_path.relative_to(out_dir)),
                            "settings": part_settings(part, quick, locomo_runs), "started_utc": utc_stamp()}
    tail: list[str] = []
    timed_out = threading.Event()
    try:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True)

        def kill_on_timeout() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the part's own process group, started above
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill_on_timeout)
        timer.start()
        try:
            with open(log_path, "w", encoding="utf-8") as log:
                assert proc.stdout is not None
                for line in proc.stdout:
                    log.write(line)
                    log.flush()
                    print(f"[{part}] {line}", end="", flush=True)
                    tail.append(line.rstrip("\n"))
                    del tail[:-40]
        except KeyboardInterrupt:  # the child is in its own session: Ctrl-C does not reach it
            timer.cancel()
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        _pid, status, rusage = os.wait4(proc.pid, 0)
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        info["exit_code"] = proc.returncode
        info["peak_rss_mb"] = _peak_rss_mb(rusage)
        if timed_out.is_set():
            info["error"] = f"timed out after {timeout:.0f} s (killed)"
        elif proc.returncode != 0:
            info["error"] = error_summary(tail, proc.returncode)
        else:
            info["status"] = "ok"
    except Exception as exc:  # the harness itself must not stop the run
        info["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
    info["wall_s"] = round(time.perf_counter() - started, 1)
    return info


def error_summary(tail: list[str], code: int) -> str:
    """The traceback's last lines, or the output's last lines."""
    start = max((i for i, line in enumerate(tail) if line.startswith("Traceback")), default=None)
    lines = tail[start:] if start is not None else tail[-12:]
    return f"exit code {code}\n" + "\n".join(lines[-25:])


def git_info() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
            return p.stdout.strip() if p.returncode == 0 else None
        except Exception:
            return None

    status = git("status", "--porcelain")
    return {"commit": git("rev-parse", "--short=12", "HEAD"),
            "modified_or_new_files": None if status is None else len([line for line in status.splitlines() if line.strip()])}


def machine_info() -> dict[str, Any]:
    import platform

    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()
        info["mem_total_gb"] = round(int(mem[1]) / 2**20, 1)
    except (OSError, IndexError, ValueError):
        pass
    try:
        info["cpu_model"] = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                                 if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1k memories, 2 LoCoMo conversations, fewer repetitions")
    ap.add_argument("--out", type=Path, help="result directory (default bench/results/<UTC timestamp>)")
    ap.add_argument("--skip", nargs="+", action="extend", default=[], choices=PARTS, metavar="PART",
                    help=f"parts to leave out: {', '.join(PARTS)}")
    ap.add_argument("--locomo-runs", choices=("core", "all"), default="core",
                    help="core: plain BM25, keyword, vector, hybrid (default); all: also locomo_bench's fusion variants")
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.child:
        return run_child(a.child, a.out, a.quick, a.locomo_runs)

    stamp = utc_stamp()
    out_dir = (a.out or ROOT / "bench" / "results" / stamp).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    run: dict[str, Any] = {
        "schema": "engram-bench-report/1",
        "started_utc": stamp,
        "quick": a.quick,
        "argv": sys.argv[1:] if argv is None else argv,
        "sizes": QUICK_SIZES if a.quick else FULL_SIZES,
        "locomo_runs": a.locomo_runs,
        "machine": machine_info(),
        "git": git_info(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "parts": {},
    }
    todo = [p for p in PARTS if p not in a.skip]
    print(f"engram benchmarks ({'quick' if a.quick else 'full'}): {', '.join(todo)} -> {out_dir}", flush=True)
    for i, part in enumerate(PARTS):
        if part in a.skip:
            run["parts"][part] = {"status": "skipped", "settings": part_settings(part, a.quick, a.locomo_runs)}
            continue
        print(f"\n=== [{i + 1}/{len(PARTS)}] {part} (elapsed {time.perf_counter() - started:.0f} s) ===", flush=True)
        info = run_part(part, out_dir, a.quick, a.locomo_runs, TIMEOUTS_S[a.quick][part])
        run["parts"][part] = info
        print(f"=== {part}: {info['status']} in {info['wall_s']:.0f} s"
              + (f" ({info['error'].splitlines()[0]})" if info.get("error") else "") + " ===", flush=True)
    run["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    run["wall_s"] = round(time.perf_counter() - started, 1)
    run["budget_s"] = None if a.quick else BUDGET_S

    import report

    try:
        report.write_report(out_dir, run)
    except Exception:  # a broken report still leaves the parts' own results and a report.json
        run["report_error"] = traceback.format_exc()
        (out_dir / "report.json").write_text(json.dumps(run, indent=2, default=str) + "\n", encoding="utf-8")
        print(run["report_error"], file=sys.stderr)
        return 1
    failed = [p for p, v in run["parts"].items() if v["status"] == "failed"]
    print(f"\nreport: {out_dir / 'report.md'} ({run['wall_s']:.0f} s"
          + (f"; FAILED: {', '.join(failed)}" if failed else "") + ")", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
