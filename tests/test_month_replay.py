"""The month replay's quick mode (bench/month, issue 33) on a small generated world.

Real parts throughout: engram's hooks as processes (the commands of hooks/hooks.json), the real
daemon and model, libfaketime's simulated clock, the world's own score.py. One replay per
policy (~20-30 s each on 2 cores) shared by the tests below.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.month import report, tiny_world
from bench.month.clock import find_libfaketime

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    find_libfaketime() is None or not (report.PUBLIC_WORLD / "score.py").exists(),
    reason="needs libfaketime (make setup installs it) and the coding-month scorer in ../shared",
)


@pytest.fixture(scope="module")
def replay(tmp_path_factory) -> dict:
    """Both policies replayed once on the tiny world: month.json's data plus the world folder."""
    base = tmp_path_factory.mktemp("month")
    world = tiny_world.write(base / "world")
    out = base / "out"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "month" / "run.py"),
            "--world",
            str(world),
            "--policy",
            "both",
            "--quick",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(REPO),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "month.json").read_text())
    data["world_dir"] = world
    data["out"] = out
    return data


def _lines(run_file: str) -> list[dict]:
    return [json.loads(x) for x in Path(run_file).read_text().splitlines() if x.strip()]


def test_every_turn_of_the_world_is_in_the_run_file_and_scores(replay):
    for policy in ("diligent", "nudged"):
        score = replay["policies"][policy]["score"]
        assert score["run"]["missing_turns"] == 0 and score["run"]["malformed"] == 0, score["run"]
        assert score["run"]["turns_scored"] == sum(len(s["turns"]) for s in tiny_world.SESSIONS)
        lines = _lines(replay["policies"][policy]["run_file"])
        assert all(isinstance(x["injected_tokens"], int) for x in lines)
        assert all("start_tokens" in x for x in lines if x["turn"] == 1)


def test_diligent_captures_every_taught_fact(replay):
    assert replay["policies"]["diligent"]["score"]["capture"]["rate"] == 1.0


def test_a_fact_stored_in_the_first_session_is_in_a_later_sessions_context(replay):
    needs = replay["policies"]["diligent"]["score"]["needs"]
    r1 = next(n for n in needs if n["fact"] == "R1")  # taught on day 1, needed on day 5 in a new session
    assert r1["session_id"] == "t03" and r1["context"], r1
    u1 = [n for n in needs if n["fact"] == "U1"]  # a user fact, needed in the other project too
    assert any(n["cross_project"] and n["context"] for n in u1), u1


def test_the_clock_is_simulated_for_the_daemon(replay):
    """Memories are stamped on the world's calendar (April 2026), not today's date."""
    lines = _lines(replay["policies"]["diligent"]["run_file"])
    assert lines[0]["sim_time"].startswith("2026-04-06T09:31")
    assert lines[-1]["sim_time"].startswith("2026-04-14T13:31")  # day 9, the day's second session
    stamps = [c["created_at"] for x in lines for c in x["created"]]
    assert stamps and all(str(t).startswith("2026-04-") for t in stamps), stamps


def test_the_report_shows_both_policies_and_the_stop_hook_figures(replay):
    md = (replay["out"] / "month.md").read_text()
    assert "| context recall |" in md and "diligent" in md and "nudged" in md
    stop = replay["policies"]["nudged"]["stop_hook"]
    assert stop["teaching_turns"] == 4 and stop["quiet_turns"] == 6
    # the committed baseline is the public world's: beside another world it would read as a before
    assert "(baseline)" not in md and "Baseline" not in md
    assert all(isinstance(p["step_blocks_lost"], int) for p in replay["policies"].values())
    assert "| tool steps whose memory timed out |" in md


def test_the_step_blocks_the_hook_gave_up_on_are_counted_from_its_log(tmp_path):
    """Full mode runs the hooks inside Claude Code; the hook's log is what shows a step's block
    lost to its wait (the rotated log included, and no other hook line counted)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    lost = "PostToolUse no step memory: DaemonUnavailable: engram daemon did not answer within 3s (timed out)"
    (logs / "hooks.log.1").write_text(f"2026-03-04T09:31:07 {lost}\n")
    (logs / "hooks.log").write_text(
        f"2026-03-05T09:43:02 {lost}\n"
        "2026-03-05T09:44:00 PostToolUse no step memory: InvalidInput: step must be text\n"
        "2026-03-05T09:45:00 Stop could not read the transcript (timed out)\n"
    )
    assert report.step_blocks_lost(tmp_path) == 2
    assert report.step_blocks_lost(tmp_path / "none") == 0


def test_the_budget_sweep_sets_the_start_budget_of_each_replay(tmp_path):
    """bench/month/budget_sweep.py: the budget reaches the daemon through the replay user's config
    file (each run's start block stays within it, and a smaller one is smaller), and the sweep
    writes its table, figures and plot."""
    world = tiny_world.write(tmp_path / "world")
    out = tmp_path / "sweep"
    budgets = (150, 1200)
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "month" / "budget_sweep.py"), "--world", str(world), "--policy",
         "diligent", "--budgets", *map(str, budgets), "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=str(REPO),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads((out / "sweep.json").read_text())["budgets"]
    assert list(rows) == [str(b) for b in budgets] and all(list(r) == ["diligent"] for r in rows.values())
    for budget in budgets:
        assert 0 < rows[str(budget)]["diligent"]["start_tokens_p95"] <= budget
    assert rows["150"]["diligent"]["start_tokens_mean"] < rows["1200"]["diligent"]["start_tokens_mean"]
    md = (out / "sweep.md").read_text()
    assert "| 150 | diligent |" in md and "| 1200 | diligent |" in md
    assert (out / "sweep.png").stat().st_size > 0


def test_the_budget_sweep_refuses_a_budget_engram_would_refuse(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "month" / "budget_sweep.py"), "--budgets", "50", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=str(REPO),
    )  # fmt: skip
    assert proc.returncode == 2 and "from 100 to 8000" in proc.stderr


def test_run_set_writes_settings_engram_reads_and_refuses_unknown_ones(tmp_path):
    """`bench/month/run.py --set KEY=VALUE`: the replay user's config file holds the settings as
    engram reads them; a key engram does not know, or no "=", is refused before any replay runs."""
    from bench.month import run as month_run
    from engram_mcp.core.config import load_config

    home = tmp_path / "home"
    month_run.write_user_config(home, {"prompt_recall_limit": "2", "context_token_budget": "900"})
    cfg = load_config(home=home, environ={})
    assert cfg.prompt_recall_limit == 2 and cfg.context_token_budget == 900
    assert month_run.setting_problem("prompt_recall_limit=2") is None
    assert "not an engram setting" in month_run.setting_problem("no_such_key=1")
    assert "not KEY=VALUE" in month_run.setting_problem("prompt_recall_limit")
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "month" / "run.py"), "--quick", "--set", "no_such_key=1",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=60, cwd=str(REPO),
    )  # fmt: skip
    assert proc.returncode == 2 and "not an engram setting" in proc.stderr
    assert not (tmp_path / "out" / "month.json").exists()
