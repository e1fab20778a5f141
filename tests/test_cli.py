"""The `engram` CLI, end to end through the real owner process and the real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.daemon_env import make_env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = make_env(tmp_path_factory.mktemp("cli"))
    yield e
    e.shutdown()


def _json(proc) -> dict:
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_store_recall_show_update_forget_round_trip(env) -> None:
    stored = _json(env.cli("--json", "store", "Run the API tests with make test", "--type", "procedural", "--scope", "project", "--tags", "testing,ci", "--importance", "0.7"))
    mid = stored["memory_id"]
    assert stored["action"] == "created" and mid.startswith("memory:")
    recalled = _json(env.cli("--json", "recall", "how do I run the tests", "--limit", "3"))
    assert recalled["memories"][0]["id"] == mid
    human = env.cli("recall", "how do I run the tests").stdout
    assert mid in human and "matched" in human
    env.cli("update", mid, "--importance", "0.9", "--add-tags", "make")
    shown = _json(env.cli("--json", "show", mid, "--history"))
    assert shown["importance"] == 0.9 and "make" in shown["tags"] and len(shown["history"]) >= 1
    env.cli("forget", mid, "--reason", "outdated")
    assert mid not in env.cli("--json", "recall", "how do I run the tests").stdout
    env.cli("forget", mid, "--undo")
    assert mid in env.cli("--json", "recall", "how do I run the tests").stdout


@pytest.mark.slow
def test_batch_recall_answers_one_line_per_query_in_order(env, tmp_path: Path) -> None:
    env.cli("store", "The payments service is written in Go", "--type", "semantic", "--scope", "project")
    batch = tmp_path / "q.jsonl"
    batch.write_text(json.dumps({"id": "a", "query": "payments language"}) + "\n" + json.dumps("tests") + "\n" + "{not json\n")
    proc = env.cli("recall", "--batch", str(batch), "--json", check=False)
    lines = [json.loads(l) for l in proc.stdout.splitlines()]
    assert [l.get("line") for l in lines] == [1, 2, 3]
    assert lines[0]["id"] == "a" and "Go" in lines[0]["memories"][0]["content"]
    assert lines[2]["error"]["error"] == "invalid_input"
    assert proc.returncode == 1  # one line failed, the others were answered


@pytest.mark.slow
def test_promote_status_export_import_reindex_maintain_doctor(env, tmp_path: Path) -> None:
    mid = _json(env.cli("--json", "store", "Prefer small pure functions", "--type", "semantic", "--scope", "project", "--importance", "0.8"))["memory_id"]
    promoted = _json(env.cli("--json", "promote", mid, "user"))
    assert promoted["new_scope"] == "user"
    status = _json(env.cli("--json", "status"))
    assert status["scopes"]["user"]["total"] >= 1 and status["scopes"]["project"]["total"] >= 1
    out = tmp_path / "export.jsonl"
    exported = _json(env.cli("--json", "export", str(out)))
    assert exported["counts"]["memory"] >= 2 and out.stat().st_mode & 0o077 == 0
    other = make_env(tmp_path / "other")
    try:
        imported = _json(other.cli("--json", "import", str(out)))
        assert imported["counts"]["memory"] == exported["counts"]["memory"]
        assert imported["counts"]["embedded"] == 0, "vectors travel with the export"
        again = _json(other.cli("--json", "import", str(out)))
        assert again["counts"]["skipped"] == exported["counts"]["memory"]
        assert mid in other.cli("--json", "recall", "small pure functions").stdout
    finally:
        other.shutdown()
    assert _json(env.cli("--json", "reindex"))["failed"] == 0
    assert "project" in _json(env.cli("--json", "maintain"))
    doctor = _json(env.cli("--json", "doctor"))
    assert doctor["ok"], doctor


def test_bad_input_exits_1_with_a_clear_message(env) -> None:
    proc = env.cli("store", "x", "--type", "working", "--scope", "project", check=False)
    assert proc.returncode == 1 and "working" in proc.stderr
    proc = env.cli("show", "memory:x; DELETE memory", check=False)
    assert proc.returncode == 1 and "not a memory id" in proc.stderr
    proc = env.cli("store", "x", "--type", "nonsense", "--scope", "project", check=False)
    assert proc.returncode == 2
