"""Scores and the markdown report of the month replay: score.py's numbers per policy, beside the baseline.

score.py (the world's own scorer) runs as a process on the run file; this module only adds
what the scorer does not see: the store's composition after the month, the Stop hook's
figures on the world's teaching and quiet turns, the stand-in's store outcomes and hook times.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

BASELINE = Path(__file__).with_name("baseline") / "month-quick.json"
#: The public world, read where it lives (never copied): its score.py scores any world of the format.
PUBLIC_WORLD = Path(__file__).resolve().parents[3] / "shared" / "bench" / "coding-month"
LIST_PAGE = 200
SUMMARY_KEYS = (
    ("context recall", ("recall", "context")),
    ("tool recall@5", ("recall", "top5")),
    ("stale exposure", ("stale", "rate")),
    ("capture", ("capture", "rate")),
    ("quiet turns with a store", ("capture", "noise_turn_rate")),
    ("noise stores", ("capture", "noise_stores")),
    ("precision of injected lines", ("precision", "rate")),
    ("session start tokens (mean)", ("tokens", "session_start_mean")),
    ("prompt tokens after turn 1 (p95)", ("tokens", "later_turn_p95")),
    ("tokens per turn (mean)", ("tokens", "per_turn_mean")),
    ("injected tokens (total)", ("tokens", "total")),
    ("missing turns", ("run", "missing_turns")),
)


def scorer_for(world_dir: Path) -> Path:
    """The world's own score.py, else the public world's (a generated world carries none)."""
    own = Path(world_dir) / "score.py"
    return own if own.exists() else PUBLIC_WORLD / "score.py"


def score(run_file: Path, world_dir: Path, *, per_need: bool = False) -> dict[str, Any]:
    """score.py --json on `run_file` for the world in `world_dir`."""
    proc = subprocess.run(
        [sys.executable, str(scorer_for(world_dir)), str(run_file), "--world", str(world_dir), "--json"]
        + (["--per-need"] if per_need else []),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def composition(replay: Any) -> dict[str, Any]:
    """Every memory of the month's stores (user scope once, each project's), by type, scope, status and category."""
    seen: dict[str, dict[str, Any]] = {}
    for repo in replay.repos.values():
        page = 1
        while page:
            res = replay.call("list", {"status": "all", "limit": LIST_PAGE, "page": page}, repo, None) or {}
            for m in res.get("memories") or []:
                seen[str(m.get("id"))] = m
            page = res.get("next_page")
    rows = list(seen.values())
    superseded = sum(1 for m in rows if m.get("superseded_by"))
    return {
        "total": len(rows),
        "by_type": dict(Counter(str(m.get("type")) for m in rows).most_common()),
        "by_scope": dict(Counter(str(m.get("scope")) for m in rows).most_common()),
        "by_status": dict(Counter(str(m.get("status")) for m in rows).most_common()),
        "by_category": dict(Counter(str(m.get("category")) for m in rows).most_common(12)),
        "superseded": superseded,
    }


def stop_figures(run_file: Path, world: Any) -> dict[str, Any]:
    """On how many teaching turns and quiet turns the Stop hook left a note (labels of sessions.jsonl)."""
    fired: dict[tuple[str, int], bool] = {}
    for line in run_file.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        fired[(rec["session_id"], rec["turn"])] = bool(rec.get("stop_note"))
    out = {"teaching_turns": 0, "teaching_fired": 0, "quiet_turns": 0, "quiet_fired": 0, "teaching_last_turn": 0}
    for s in world.sessions:
        for t in s["turns"]:
            kind = "quiet" if t["quiet"] else "teaching"
            out[f"{kind}_turns"] += 1
            out[f"{kind}_fired"] += int(fired.get((s["session_id"], t["turn"]), False))
            if not t["quiet"] and t["turn"] == len(s["turns"]):
                out["teaching_last_turn"] += 1  # a note about a session's last turn has no next prompt to ride on
    return out


def stand_in_figures(run_file: Path) -> dict[str, Any]:
    """What became of the stand-in's store_memory calls (stored, merged, error ...)."""
    actions: Counter[str] = Counter()
    for line in run_file.read_text(encoding="utf-8").splitlines():
        for outcome in json.loads(line).get("stand_in_stores") or []:
            actions[str(outcome.get("action"))] += 1
    return {"calls": sum(actions.values()), "by_action": dict(actions.most_common())}


#: What the step hook logs when the daemon did not answer within its wait (`hooks.step_memory`).
STEP_TIMEOUT_MARKS = ("no step memory", "timed out")


def step_blocks_lost(user_dir: Path) -> int:
    """Tool steps whose memory the hook gave up waiting for (`hooks.log` and its rotated `.1`). In
    full mode the hooks run inside Claude Code, so this log is what shows a block lost to the wait."""
    lost = 0
    for name in ("hooks.log.1", "hooks.log"):
        try:
            text = (user_dir / "logs" / name).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        lost += sum(1 for line in text.splitlines() if all(m in line for m in STEP_TIMEOUT_MARKS))
    return lost


def hook_timing(seconds: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Wall time of each hook process (median and p95, ms), simulated clock and all."""
    out = {}
    for event, values in seconds.items():
        v = sorted(values)
        out[event] = {
            "n": len(v),
            "p50_ms": round(1000 * v[len(v) // 2], 1),
            "p95_ms": round(1000 * v[min(len(v) - 1, int(0.95 * len(v)))], 1),
        }
    return out


def load_baseline(path: Path | None) -> dict[str, Any] | None:
    if path is None or not Path(path).exists():
        return None
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _get(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)  # type: ignore[assignment]
    return d


def _fmt(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}" if v <= 1.0 else f"{v:.1f}"
    return str(v)


def _summary_table(data: dict[str, Any], baseline: dict[str, Any] | None) -> list[str]:
    cols: list[tuple[str, dict[str, Any]]] = []
    for name, res in data["policies"].items():
        if baseline and name in baseline.get("policies", {}):
            cols.append((f"{name} (baseline)", baseline["policies"][name]["score"]))
        cols.append((f"{name} (this run)" if baseline else name, res["score"]))
    lines = ["| | " + " | ".join(c for c, _ in cols) + " |", "|---|" + "---|" * len(cols)]
    for label, keys in SUMMARY_KEYS:
        lines.append(f"| {label} | " + " | ".join(_fmt(_get(s, keys)) for _, s in cols) + " |")
    return lines


def _breakdown(data: dict[str, Any], group: str, title: str) -> list[str]:
    names = list(data["policies"])
    first = data["policies"][names[0]]["score"]["recall"].get(group) or {}
    lines = [f"| {title} | n | " + " | ".join(f"{n} context | {n} top5" for n in names) + " |"]
    lines.append("|---|---|" + "---|---|" * len(names))
    for key, row in first.items():
        cells = []
        for n in names:
            r = data["policies"][n]["score"]["recall"].get(group, {}).get(key, {})
            cells += [_fmt(r.get("context")), _fmt(r.get("top5"))]
        lines.append(f"| {key} | {row.get('n')} | " + " | ".join(cells) + " |")
    return lines


def markdown(data: dict[str, Any], baseline: dict[str, Any] | None) -> str:
    out = ["## Month replay (issue 33)", ""]
    mode = "quick (hooks as processes)" if data.get("quick") else "full (Claude Code)"
    budget = data.get("start_budget")
    start = f"; session start budget {budget} tokens (--start-budget)" if budget else ""
    out.append(f"World `{data['world']}`, {mode}{start}; tokens are characters / 4, rounded up.")
    if baseline:
        out.append(f"Baseline: {baseline.get('label', 'the first run')} (`bench/month/baseline/`).")
    out += ["", *_summary_table(data, baseline), ""]
    out += ["### Context and tool recall by kind", "", *_breakdown(data, "by_kind", "kind"), ""]
    out += ["### By distance from the teaching", "", *_breakdown(data, "by_distance", "distance"), ""]
    out += ["### By scope, cross-project, after a change", ""]
    out += _breakdown(data, "by_scope", "scope") + [""] + _breakdown(data, "by_cross_project", "cross-project")
    out += [""] + _breakdown(data, "by_after_change", "need of a replacement fact") + [""]
    out += [
        "### Stale exposure per superseded fact",
        "",
        "| fact | replaced by | " + " | ".join(data["policies"]) + " |",
    ]
    out.append("|---|---|" + "---|" * len(data["policies"]))
    first = next(iter(data["policies"].values()))["score"]["stale"]["by_fact"]
    for fid, row in first.items():
        cells = [
            f"{r['exposed']}/{r['turns']}"
            for r in (
                p["score"]["stale"]["by_fact"].get(fid, {"exposed": 0, "turns": 0}) for p in data["policies"].values()
            )
        ]
        out.append(f"| {fid} | {row['replaced_by']} | " + " | ".join(cells) + " |")
    out += ["", "### The Stop hook on the world's turns, the stand-in's stores, the store after the month", ""]
    out.append("| | " + " | ".join(data["policies"]) + " |")
    out.append("|---|" + "---|" * len(data["policies"]))
    rows = {
        "Stop note on teaching turns": lambda r: (
            f"{r['stop_hook']['teaching_fired']}/{r['stop_hook']['teaching_turns']}"
        ),
        "Stop note on quiet turns": lambda r: f"{r['stop_hook']['quiet_fired']}/{r['stop_hook']['quiet_turns']}",
        "teaching turns that end a session": lambda r: str(r["stop_hook"]["teaching_last_turn"]),
        "stand-in store_memory calls": lambda r: f"{r['stand_in']['calls']} {r['stand_in']['by_action']}",
        "memories after the month": lambda r: str(r["composition"]["total"]),
        "by type": lambda r: str(r["composition"]["by_type"]),
        "by scope": lambda r: str(r["composition"]["by_scope"]),
        "by status": lambda r: str(r["composition"]["by_status"]),
        "superseded": lambda r: str(r["composition"]["superseded"]),
        "by category": lambda r: str(r["composition"]["by_category"]),
        "replay wall time (s)": lambda r: str(r["seconds"]),
        "hook p50/p95 ms": lambda r: "; ".join(
            f"{e} {t['p50_ms']:.0f}/{t['p95_ms']:.0f}" for e, t in r["hook_seconds"].items()
        )
        or "not timed (the hooks run inside Claude Code)",
        "tool steps whose memory timed out": lambda r: str(r.get("step_blocks_lost", "n/a")),
    }
    for label, fn in rows.items():
        out.append(f"| {label} | " + " | ".join(fn(r) for r in data["policies"].values()) + " |")
    return "\n".join(out) + "\n"
