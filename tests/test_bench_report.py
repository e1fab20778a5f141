"""`make bench` cannot rot: the quick suite runs end to end and writes a complete report.

Checks the report's structure only (sections, JSON keys, plots), never the numbers: those
depend on the machine and its load. The quick run takes ~5-10 minutes on a 2-core machine.
The resilience test (a part that fails is reported, the others still run, exit code 1) is
fast: it runs only the token part and makes it fail on purpose.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_ALL = REPO_ROOT / "bench" / "run_all.py"
PARTS = ("tokens", "locomo", "coding", "dedup", "speed", "scale", "bulk", "hooks", "stop", "secrets", "ui", "model", "month")
SECTIONS = ("## Headline", "## 1. Retrieval quality (LoCoMo)", "## 1b. Retrieval quality (coding memory across scopes)",
            "## 2. Speed and scale", "## 3. Hooks",
            "## 4. Token cost per session", "## 5. The run")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_all(out: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 2700) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, str(RUN_ALL), "--out", str(out), *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def sections_in_order(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_quick_suite_writes_the_whole_report(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    proc = run_all(out, "--quick")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"
    for part in PARTS:
        assert f"=== {part}: ok" in proc.stdout, part  # progress is shown per part

    text = (out / "report.md").read_text()
    assert text.startswith("# engram benchmark report")
    assert sections_in_order(text) == list(SECTIONS)
    head = text[text.index("## Headline"): text.index("## 1.")]
    for row in ("LoCoMo turn R@5", "LoCoMo MRR", "coding memory across scopes", "hybrid recall p95", "store p95", "PostToolUse hook p95", "SessionStart hook p95",
                "tokens per session"):
        assert f"| {row}" in head, row
    assert "not measured" not in head.split("hybrid recall p95")[0]  # LoCoMo numbers are there

    report = json.loads((out / "report.json").read_text())
    assert {"schema", "started_utc", "quick", "machine", "git", "parts", "headline", "latency_ms", "plots", "results", "wall_s"} <= set(report)
    assert report["quick"] is True and report["sizes"] == [1000]
    assert set(report["parts"]) == set(PARTS)
    for part, info in report["parts"].items():
        assert info["status"] == "ok", (part, info.get("error"))
        assert {"wall_s", "peak_rss_mb", "settings", "log", "exit_code"} <= set(info)
        assert (out / info["log"]).is_file()
    assert {"locomo", "recall_hybrid_p95_ms", "store_p95_ms", "posttooluse_hook_p95_ms", "sessionstart_hook_p95_ms",
            "tokens_per_session"} <= set(report["headline"])
    assert {"hybrid_R@5", "hybrid_MRR", "bm25_R@5", "bm25_MRR"} <= set(report["headline"]["locomo"])
    assert {"tools_list", "always_on_markdown", "session_start_block", "total"} <= set(report["headline"]["tokens_per_session"])
    for op in ("store", "recall (hybrid)", "recall (vector)", "recall (keyword)", "get_memory_context", "graph traversal, 1 hop",
               "graph traversal, 3 hops", "session_end, 200-memory session", "maintenance pass (steady state)",
               "MCP spawn -> initialize", "MCP spawn -> first recall (cold daemon)", "PostToolUse hook", "SessionStart hook"):
        assert "1000" in report["latency_ms"].get(op, {}), op

    # each part's own results, as the report reads them
    for part, rel in report["results"].items():
        assert (out / rel).is_file(), rel
    locomo = json.loads((out / "locomo" / "locomo.json").read_text())
    assert {"bm25-plain", "keyword", "vector", "hybrid"} <= set(locomo["runs"]) and locomo["conversations"] == 2
    for run in locomo["runs"].values():
        assert {"cat1-4", "cat1", "cat2", "cat3", "cat4"} <= set(run["metrics"])
    coding = json.loads((out / "coding" / "coding_memory.json").read_text())
    assert coding["queries"] == 200 and {"paraphrase", "cross_scope", "supersede", "session", "ALL"} <= set(coding["engram"])
    assert set(coding["engram"]) == set(coding["bm25_baseline"])  # the baseline is measured in the same run
    assert {"groups", "groups_merged", "wrong_merges"} <= set(coding["dedup"])
    scale = json.loads((out / "scale" / "scale.json").read_text())
    assert {"graph_traversal", "maintenance", "promotion", "mcp", "hooks", "disk", "daemon_memory", "designs"} <= set(scale["runs"][0])
    assert "previous" in scale["runs"][0]["designs"] and scale["multi_store"]["projects"] == 10
    assert "### Cold start, memory and disk: previous design vs new" in text
    assert {"cold_first_recall_s", "daemon_peak_rss_mb"} <= set(report["headline"])
    bulk = json.loads((out / "bulk" / "bulk.json").read_text())
    assert {"import", "import_baseline", "embedding", "month", "month_baseline"} <= set(bulk)
    assert {"per_s", "per_cpu_s", "export"} <= set(bulk["import"]) and len(bulk["month"]["bytes_per_memory_by_day"]) == 30
    assert "### Bulk work and disk growth" in text and "](bulk/bulk.png)" in text
    tokens = json.loads((out / "tokens" / "tokens.json").read_text())
    assert {"tools_list", "markdown", "session_start", "per_session"} <= set(tokens)

    assert set(report["plots"]) >= {"latency", "scale", "locomo", "locomo_categories", "hooks", "tokens"}
    for name in report["plots"].values():
        png = out / name
        assert png.read_bytes()[:8] == PNG_MAGIC, name
        assert f"]({name})" in text, name  # every plot is shown in the report

    # the LoCoMo data is read from ../shared, never copied next to the results
    assert not list(out.rglob("locomo10*.json"))


def test_a_failing_part_is_reported_and_the_others_still_run(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    proc = run_all(out, "--quick", "--skip", "locomo", "speed", "scale", "bulk", "hooks", env={"ENGRAM_BENCH_FAIL_PART": "tokens"}, timeout=300)

    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["parts"]["tokens"]["status"] == "failed"
    assert "failed on purpose" in report["parts"]["tokens"]["error"]
    assert {report["parts"][p]["status"] for p in ("locomo", "speed", "scale", "bulk", "hooks")} == {"skipped"}
    text = (out / "report.md").read_text()
    assert sections_in_order(text) == list(SECTIONS)
    assert "**Failed: tokens**" in text and "### tokens failed" in text and "failed on purpose" in text


def write_scale_parts(tmp_path: Path) -> dict:
    """A scale and a speed part at 100k (two designs) under tmp_path; returns the run record."""

    def case(recall_s: float, peak_mb: float) -> dict:
        return {"repeats": 1, "cold_open": {"n": 1, "p50_ms": 300.0, "store_rss_mb": 40.0},
                "cold_first_recall": {"n": 1, "p50_ms": recall_s * 1000, "max_ms": recall_s * 1000, "partial_answers": 0},
                "daemon_rss": {"peak_mb": peak_mb, "steady_mb": peak_mb - 10}}

    disk = {"bytes_per_memory": 3000.0, "index_bytes_per_memory": 0.0}
    scale = {"designs": {"previous": {"X": "0"}, "new": {"X": "1"}},
             "targets": {"cold_first_recall_s": {"10000": 0.5, "100000": 1.5}, "peak_rss_mb": {"100000": 800.0},
                         "hybrid_p95_ms": {"10000": 10.0, "100000": 15.0}},
             "runs": [{"memories": 100000, "designs": {
                 "previous": {"cases": {"index rebuilt": case(51.0, 2700.0)}, "disk": disk},
                 "new": {"cases": {"index missing": case(9.0, 900.0), "index persisted": case(1.2, 600.0)}, "disk": disk}}}]}
    speed = {"runs": [{"memories": 100000, "recall_ms": {"hybrid": {"n": 200, "p50_ms": 8.0, "p95_ms": 14.0}}}]}
    for part, body in (("scale/scale.json", scale), ("speed/speed.json", speed)):
        (tmp_path / part).parent.mkdir(parents=True)
        (tmp_path / part).write_text(json.dumps(body))
    run = {"started_utc": "T", "quick": False, "sizes": [100000], "argv": [], "wall_s": 1.0, "budget_s": None,
           "loadavg_start": [0.0], "loadavg_end": [0.0], "machine": {"cpus": 2, "python": "3", "platform": "linux"}, "git": {},
           "parts": {"scale": {"status": "ok", "settings": {}}, "speed": {"status": "ok", "settings": {}}}}
    return run


def test_the_scale_report_judges_each_design_against_the_targets(tmp_path: Path) -> None:
    """Cold first recall, peak RSS and hybrid p95 per size and design, each against its target."""
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    import report

    summary = report.write_report(tmp_path, write_scale_parts(tmp_path))
    text = (tmp_path / "report.md").read_text()
    section = text[text.index("### Cold start"):]
    table = section[: section.index("\n\n", section.index("| memories | design"))]
    rows = {tuple(c.strip() for c in line.split("|")[2:4]): line for line in table.splitlines() if line.startswith("| 100k")}
    assert set(rows) == {("previous", "index rebuilt"), ("new", "index missing"), ("new", "index persisted")}
    assert rows[("previous", "index rebuilt")].count("**FAIL**") == 2  # 51 s > 1.5 s, 2.7 GB > 800 MB; hybrid passes
    assert rows[("new", "index persisted")].count("PASS") == 3 and "FAIL" not in rows[("new", "index persisted")]
    assert summary["headline"]["cold_first_recall_s"] == {"previous": {"100000": 51.0}, "new": {"100000": 1.2}}
    assert (tmp_path / summary["plots"]["scale"]).read_bytes()[:8] == PNG_MAGIC


def test_without_matplotlib_the_report_is_written_without_plots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib is the `bench` extra: without it every part's numbers still reach report.md."""
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    import common
    import report

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    assert common.pyplot() is None
    summary = report.write_report(tmp_path, write_scale_parts(tmp_path))
    assert "scale" not in summary["plots"] and not list(tmp_path.glob("*.png"))
    assert "| 100k" in (tmp_path / "report.md").read_text()
