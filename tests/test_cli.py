"""The `engram` CLI, end to end through the real owner process and the real model."""

from __future__ import annotations

import json
import subprocess
import sys
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
        # another home holds another key: the file is not this engram's, so its memories are imports
        assert imported["origins"]["kept"] is False and "--keep-origins" in imported["origins"]["why"]
        assert _json(other.cli("--json", "show", mid))["origin"]["tool"] == "engram-export"
        mixed = other.cli("import", str(out), "--keep-origins", "--from", "claude-mem", check=False)
        assert mixed.returncode != 0 and "--keep-origins goes with an engram export file" in mixed.stderr
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


# ---------------------------------------------------------------------------- issue 13: browsing
def _store(env, text: str, *args: str) -> str:
    return _json(env.cli("--json", "store", text, *args))["memory_id"]


@pytest.mark.slow
def test_list_browses_newest_first_with_filters_and_pages(tmp_path: Path) -> None:
    e = make_env(tmp_path)
    try:
        facts = ["Invoices are generated by the billing cron at midnight", "The frontend is built with Vite and React",
                 "Refunds over 500 EUR need a manager's approval", "Logs are shipped to Loki through promtail",
                 "Postgres 16 runs the orders database"]
        ids = [_store(e, fact, "--tags", "billing" if i % 2 else "misc") for i, fact in enumerate(facts)]
        proc_id = _store(e, "Deploy with make deploy after the tests pass", "--type", "procedural", "--scope", "user")
        listed = _json(e.cli("--json", "list"))
        assert [m["id"] for m in listed["memories"]] == [proc_id, *reversed(ids)]
        assert listed["total_matched"] == 6 and listed["next_page"] is None
        assert [m["id"] for m in _json(e.cli("--json", "list", "--type", "procedural"))["memories"]] == [proc_id]
        assert [m["id"] for m in _json(e.cli("--json", "list", "--scope", "project", "--tag", "billing"))["memories"]] == [ids[3], ids[1]]
        page1 = _json(e.cli("--json", "list", "--limit", "2"))
        page2 = _json(e.cli("--json", "list", "--limit", "2", "--page", "2"))
        assert page1["next_page"] == 2 and page1["pages"] == 3
        assert [m["id"] for m in page2["memories"]] == [ids[3], ids[2]]
        assert _json(e.cli("--json", "list", "--older-than", "1h"))["total_matched"] == 0
        assert _json(e.cli("--json", "list", "--since", "1h"))["total_matched"] == 6
        e.cli("forget", ids[0])
        assert ids[0] not in {m["id"] for m in _json(e.cli("--json", "list"))["memories"]}
        assert ids[0] in {m["id"] for m in _json(e.cli("--json", "list", "--status", "forgotten"))["memories"]}
        # browsing is not recalling: nothing is strengthened
        assert all(m["access_count"] == 0 for m in _json(e.cli("--json", "list", "--status", "all"))["memories"])
        human = e.cli("list", "--limit", "2").stdout
        first = human.splitlines()[0]
        short = first.split()[0]
        assert len(short) == 8 and proc_id.endswith(short)  # a short id
        assert "procedural" in first and "Deploy with make deploy" in first
        assert "page 1 of 3" in human and "engram list --page 2" in human
        shown = _json(e.cli("--json", "show", short))  # the id printed is one `show` accepts
        assert shown["id"] == proc_id
        assert _json(e.cli("--json", "update", short.lower(), "--importance", "0.9"))["memory_id"] == proc_id
        missing = e.cli("show", "ZZZZZZZZ", check=False)
        assert missing.returncode != 0 and "engram list" in missing.stderr
        bad = e.cli("list", "--since", "yesterdayish", check=False)
        assert bad.returncode == 1 and "--since" in bad.stderr
    finally:
        e.shutdown()


def test_recall_with_an_empty_query_names_engram_list(env) -> None:
    for query in ("", "   "):
        proc = env.cli("recall", query, check=False)
        assert proc.returncode == 2 and "engram list" in proc.stderr and not proc.stdout


def test_recall_list_mode_goes_through_the_daemon_op_table(tmp_path: Path) -> None:
    """The MCP surface: recall_memories without a query browses (same service call as `engram list`)."""
    from engram_mcp.daemon.process import Daemon
    from tests.fakes import FakeEmbedder
    from engram_mcp.services.service import MemoryService, RequestContext
    from tests.daemon_env import daemon_request

    (tmp_path / "p" / ".git").mkdir(parents=True)
    d = Daemon(tmp_path / "u")
    d.service = MemoryService(home=tmp_path, user_dir=tmp_path / "u", embedder=FakeEmbedder())
    d.ready.set()
    ctx = RequestContext(tmp_path / "p")
    try:
        a = daemon_request(d, "store", {"content": "alpha fact", "type": "semantic", "scope": "project"}, ctx)["result"]["memory_id"]
        b = daemon_request(d, "store", {"content": "beta fact", "type": "semantic", "scope": "user"}, ctx)["result"]["memory_id"]
        listed = daemon_request(d, "recall", {"limit": 1, "page": 2}, ctx)
        assert listed["ok"] and [m["id"] for m in listed["result"]["memories"]] == [a]
        assert listed["result"]["total_matched"] == 2
        paged_search = daemon_request(d, "recall", {"query": "fact", "page": 2}, ctx)
        assert paged_search["error"]["error"] == "invalid_input" and paged_search["error"]["field"] == "page"
        wrong = daemon_request(d, "recall", {"nonsense": 1}, ctx)
        assert wrong["error"]["error"] == "invalid_input" and "nonsense" in wrong["error"]["message"]
        assert b
    finally:
        d.service.close()


# ---------------------------------------------------------------------------- issue 13: progress
PROGRESS_MEMORIES = 1200  # enough for several progress updates of the real model's embedding


def _memory_lines(n: int, tag: str) -> str:
    """An import file of `n` distinct memories without vectors (so the import embeds them)."""
    from engram_mcp.core.ids import new_ulid

    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    out = []
    for i in range(n):
        text = f"{tag} note {i}: " + " ".join(words[(i // 10 ** k) % 10] for k in range(4))
        out.append(json.dumps({"kind": "memory", "id": f"memory:{new_ulid()}", "scope": "project",
                               "record": {"content": text, "memory_type": "semantic", "scope": "project", "status": "active",
                                          "importance": 0.5, "tags": [tag]}}))
    return "\n".join(out) + "\n"


def _on_a_terminal(env, *args: str) -> str:
    """Run `engram ARGS` with stdin, stdout and stderr on a pseudo-terminal; everything it drew."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engram_mcp.interfaces.cli", *args], stdin=slave, stdout=slave, stderr=slave,
                            cwd=str(env.project), env={**env.env, "COLUMNS": "120"})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=300) == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_long_work_shows_progress_on_a_terminal_and_nothing_in_a_pipe(tmp_path: Path) -> None:
    import re

    e = make_env(tmp_path)
    e.env["ENGRAM_IMPORT_DEFER_VECTORS_MIN"] = "0"  # the embedding's progress bar: vectors in the import
    try:
        first, second, third = (tmp_path / f"{n}.jsonl" for n in ("first", "second", "third"))
        first.write_text(_memory_lines(PROGRESS_MEMORIES, "tty"))
        second.write_text(_memory_lines(PROGRESS_MEMORIES, "pipe"))
        third.write_text(_memory_lines(50, "json"))

        drawn = _on_a_terminal(e, "import", str(first))
        bars = [line for line in re.split(r"[\r\n]", drawn) if "embed" in line and "/s" in line]
        assert bars, drawn
        assert any(f"/{PROGRESS_MEMORIES}" in b for b in bars), bars  # count of total
        assert any(re.search(r"<\d+:\d\d", b) for b in bars), bars  # ETA
        assert any(re.search(r"\d+(\.\d+)? memories/s", b) for b in bars), bars  # rate
        assert f"{PROGRESS_MEMORIES} memory" in drawn  # then the result

        exported = _on_a_terminal(e, "export", str(tmp_path / "out.jsonl"))
        assert re.search(r"export project.*memories/s", exported), exported
        maintained = _on_a_terminal(e, "maintain")
        assert re.search(r"maintain.*memories/s", maintained), maintained

        piped = e.cli("import", str(second))  # stdout and stderr are pipes: the result only
        assert piped.stderr == "" and "\r" not in piped.stdout
        result = piped.stdout.splitlines()
        assert result[0].startswith("imported from") and len(result) == 2, result
        assert result[1].startswith("origins not kept: the file carries no signature of this engram"), result
        quiet = _on_a_terminal(e, "--json", "import", str(third))  # a terminal, but --json: no bar
        assert "memories/s" not in quiet and json.loads(quiet)["counts"]["memory"] == 50
    finally:
        e.shutdown()


# ---------------------------------------------------------------------------- issue 13: errors
def test_import_of_a_non_utf8_file_names_the_file_and_the_line(env, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    proc = env.cli("import", str(bad), check=False)
    assert proc.returncode == 1
    assert f"{bad}:1" in proc.stderr and "UTF-8" in proc.stderr and "UnicodeDecodeError" not in proc.stderr
    assert "0xe9" in proc.stderr and "save the file as UTF-8" in proc.stderr  # what is wrong and the fix
    mixed = tmp_path / "mixed.jsonl"
    good = _memory_lines(1, "utf8").encode()
    mixed.write_bytes(good + b"\xff\xfe broken\n")
    proc = env.cli("import", str(mixed), check=False)
    assert proc.returncode == 0, proc.stderr
    assert "1 memory" in proc.stdout and f"{mixed}:2" in proc.stdout and "UTF-8" in proc.stdout


def test_cli_errors_name_cli_commands_not_mcp_tools(env) -> None:
    from engram_mcp.core.operations import TOOL_NAMES

    for args in (("show", "memory:nope"), ("show", "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV"), ("forget", "01ARZ3NDEKTSV4RRFFQ69G5FAV")):
        proc = env.cli(*args, check=False)
        assert proc.returncode == 1 and proc.stderr, args
        assert not any(tool in proc.stderr for tool in TOOL_NAMES), proc.stderr
        assert "engram recall" in proc.stderr, proc.stderr
    as_json = env.cli("--json", "show", "memory:nope", check=False)
    assert "engram recall" in json.loads(as_json.stderr)["message"]
    from engram_mcp.interfaces.cli import CLI_FOR_TOOL_PHRASE, for_cli

    for tool in TOOL_NAMES:  # every MCP tool has a CLI rendering, so none reaches a CLI user
        assert tool not in for_cli(f"use {tool} to do it"), tool
    assert {p for p, _ in CLI_FOR_TOOL_PHRASE} >= set(TOOL_NAMES)


def test_status_reports_a_broken_config_file_at_once(tmp_path: Path) -> None:
    e = make_env(tmp_path)
    try:
        e.cli("status")  # the daemon runs (and has read the config) before the file breaks
        config = e.project / ".claude" / "engram.local.md"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("---\nfusion: [unclosed\n---\n")
        status = _json(e.cli("--json", "status"))
        assert status["config_problem"] and "engram.local.md" in status["config_problem"] and "line" in status["config_problem"]
        human = e.cli("status").stdout
        assert "config" in human and "engram.local.md" in human
        config.write_text("---\nfusion: rrf\n---\n")
        assert _json(e.cli("--json", "status"))["config_problem"] is None
    finally:
        e.shutdown()


def test_other_tools_engram_variables_are_not_engram_errors(tmp_path: Path) -> None:
    e = make_env(tmp_path)
    e.env["ENGRAM_DATA_DIR"] = str(tmp_path / "another-memory-tool")  # set for the daemon this CLI starts
    try:
        status = _json(e.cli("--json", "status"))
        assert status["config_problem"] is None
        doctor = {c["check"]: c for c in _json(e.cli("--json", "doctor", check=False))["checks"]}
        assert doctor["config"]["ok"] and "ENGRAM_DATA_DIR" not in doctor["config"]["detail"]
    finally:
        e.shutdown()


# ---------------------------------------------------------------------------- issue 13: habits
def test_store_dash_reads_standard_input_and_defaults_are_stated(env) -> None:
    text = "The release checklist:\n1. bump the version\n2. tag it"
    stored = _json(env.cli("--json", "store", "-", input=text))
    assert (stored["scope"], stored["type"]) == ("project", "semantic")  # the defaults
    assert _json(env.cli("--json", "show", stored["memory_id"]))["content"] == text
    helptext = " ".join(env.cli("store", "--help").stdout.split())
    assert "default: semantic" in helptext and "default: project" in helptext and "standard input" in helptext
    env.cli("update", stored["memory_id"], "--content", "-", input="The release checklist has three steps")
    assert _json(env.cli("--json", "show", stored["memory_id"]))["content"] == "The release checklist has three steps"
    bad = subprocess.run([sys.executable, "-m", "engram_mcp.interfaces.cli", "store", "-"], input=b"caf\xe9\n", capture_output=True,
                         cwd=str(env.project), env=env.env, timeout=120)
    assert bad.returncode == 1 and b"UTF-8" in bad.stderr and b"Traceback" not in bad.stderr


def test_consolidate_and_daemon_stop_speak_to_people_unless_json(tmp_path: Path) -> None:
    e = make_env(tmp_path)
    try:
        e.cli("store", "Use ruff for linting", "--type", "procedural")
        human = e.cli("consolidate").stdout
        assert human.startswith("consolidation of the project scope") and not human.lstrip().startswith("{")
        assert json.loads(e.cli("--json", "consolidate").stdout)["scope"] == "project"
        assert json.loads(e.cli("--json", "daemon", "status").stdout)["pong"] is True
        assert e.cli("daemon", "stop").stdout.strip().startswith("engram daemon stopped (pid ")
    finally:
        e.shutdown()


def test_export_into_a_missing_directory_is_an_error(env, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "out.jsonl"
    proc = env.cli("export", str(target), check=False)
    assert proc.returncode == 1 and "does not exist" in proc.stderr and str(target.parent) in proc.stderr
    assert not (tmp_path / "no").exists()


def test_an_empty_recall_query_over_mcp_says_how_to_browse(tmp_path: Path) -> None:
    from engram_mcp.daemon.process import Daemon
    from tests.fakes import FakeEmbedder
    from engram_mcp.services.service import MemoryService, RequestContext
    from tests.daemon_env import daemon_request

    (tmp_path / "p" / ".git").mkdir(parents=True)
    d = Daemon(tmp_path / "u")
    d.service = MemoryService(home=tmp_path, user_dir=tmp_path / "u", embedder=FakeEmbedder())
    d.ready.set()
    try:
        answer = daemon_request(d, "recall", {"query": "  "}, RequestContext(tmp_path / "p"))
        assert answer["error"]["error"] == "invalid_input" and "leave query out" in answer["error"]["message"]
    finally:
        d.service.close()
