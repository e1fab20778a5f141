"""Import never blocks everything (issue 12, defect 7): a real daemon with the real embedding
model imports a few thousand memories that carry no vectors (so it embeds them all) while
another client keeps recalling; every recall answers quickly.

Before the fix the import held the service lock while it embedded (~33 s for 5,000
memories): a recall beside it waited 21 s and the UserPromptSubmit and SessionStart hooks
timed out. The numbers of each run go to bench/results/reliability.json (`import_lock`).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from engram_mcp.core.ids import new_ulid
from tests.reliability._support import PYTHON, make_sandbox, record, scaled

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MEMORIES = scaled(2_000, 5_000)
RECALL_BOUND_S = 2.0  # generous: a hook gives up after 10 s, a recall alone takes ~20 ms here


def test_recall_stays_fast_while_a_real_daemon_imports_and_embeds(tmp_path: Path) -> None:
    sb = make_sandbox(tmp_path / "sb", fake_embedder=False)
    try:
        # this test is about an import that embeds while recalls run: keep the vectors in the import
        # (a large import otherwise leaves them to the daemon's backfill, tests/test_import_deferred_vectors.py)
        sb.start_daemon({"ENGRAM_IMPORT_DEFER_VECTORS_MIN": "0"}, timeout=180)
        sb.call("store", {"content": "The deploy script lives in bin/deploy and needs VAULT_ADDR", "type": "procedural",
                          "scope": "project"})
        sb.call("recall", {"query": "how do I deploy", "limit": 3})  # the model is loaded before the clock starts
        path = tmp_path / "bulk.jsonl"
        with path.open("w") as f:
            f.write(json.dumps({"kind": "header", "format": "engram-export", "version": 1}) + "\n")
            for i in range(MEMORIES):
                rec = {"memory_type": "semantic", "content": f"service {i % 211} publishes event {i} to queue {i % 17} "
                                                             f"with at-least-once delivery and a {i % 9 + 1} s retry",
                       "tags": ["bulk"], "created_at": "2026-01-02T03:04:05Z"}
                f.write(json.dumps({"kind": "memory", "scope": "project", "id": new_ulid(), "record": rec}) + "\n")
        started = time.perf_counter()
        importer = subprocess.Popen([PYTHON, "-m", "engram_mcp.interfaces.cli", "--json", "import", str(path)], cwd=str(sb.project),
                                    env=sb.env_with(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        waits: list[float] = []
        with sb.client(timeout=60, name="recaller") as c:
            while importer.poll() is None:
                t0 = time.perf_counter()
                found = c.call("recall", {"query": "where is the deploy script", "limit": 3}, project_root=str(sb.project))
                waits.append(time.perf_counter() - t0)
                assert found["memories"], "the recall answered with nothing"
                time.sleep(0.05)
        out, err = importer.communicate(timeout=60)
        took = time.perf_counter() - started
        assert importer.returncode == 0, err
        result = json.loads(out)
        assert result["counts"]["memory"] == MEMORIES and result["counts"]["embedded"] == MEMORIES
        waits.sort()
        record("import_lock", memories=MEMORIES, import_seconds=round(took, 1), recalls_during_import=len(waits),
               recall_max_ms=round(waits[-1] * 1000, 1), recall_p50_ms=round(waits[len(waits) // 2] * 1000, 1))
        assert len(waits) >= 20, f"only {len(waits)} recalls ran during a {took:.1f} s import"
        assert waits[-1] < RECALL_BOUND_S, f"a recall waited {waits[-1]:.1f} s behind the import"
    finally:
        sb.cleanup()
