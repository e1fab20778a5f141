"""Importers (services/importers): each brings its fixture in completely, twice without duplicates.

The fixtures in tests/data/importers/ have the real shape of each tool's data (claude-mem's
schema, the MCP memory server's JSONL lines, Claude Code's auto memory folder, basic-memory
and Obsidian notes), written for these tests.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from engram_mcp.services import sharing
from engram_mcp.services.importers import run_import
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.services.sharing.sync import read_local
from engram_mcp.storage import queries as q

DATA = Path(__file__).parent / "data" / "importers"
SECRETS = ("AKIAIOSFODNN7EXAMPLQ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Hd2kLp9")


@pytest.fixture
def claude_mem_db(tmp_path: Path, home: Path, ctx: RequestContext) -> Path:
    db = tmp_path / "claude-mem.db"
    con = sqlite3.connect(db)
    con.executescript((DATA / "claude-mem.sql").read_text())
    con.commit()
    con.close()
    claude_code_was_here(home, ctx.project_root)
    return db


def claude_code_was_here(home: Path, project_root: Path) -> Path:
    """Claude Code's folder for the project (where claude-mem's sessions ran): what shows that
    claude-mem's "proj" is this directory, as it names projects by folder name only."""
    folder = home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project_root.resolve()))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def contents(svc: MemoryService, ctx: RequestContext, scope: str) -> list[str]:
    return sorted(r["content"] for r in read_local(svc.access, ctx, scope, None).values())


def graph_counts(svc: MemoryService, ctx: RequestContext, scope: str) -> tuple[int, int, int]:
    with svc.lock:
        h = svc.handle(ctx, scope)
        return (len(h.q(q.ALL_ENTITIES) or []), len(h.q(q.ALL_RELATIONS) or []), len(h.q(q.ALL_MENTIONS) or []))


def twice(svc: MemoryService, ctx: RequestContext, **kw) -> tuple[dict, dict]:
    first = run_import(svc.access, ctx, **kw)
    second = run_import(svc.access, ctx, **kw)
    assert second["new_memories"] == 0 and second["imported"]["counts"]["memory"] == 0
    assert second["already_present"] == first["new_memories"]
    assert (second["added"], second["updated"], second["unchanged"]) == (0, 0, first["added"])  # no churn
    return first, second


def test_mcp_memory_graph_comes_in_whole_once(real_service, ctx):
    dry = run_import(real_service.access, ctx, source="mcp-memory", path=str(DATA / "mcp-memory.jsonl"), dry_run=True)
    assert dry["new_memories"] == 7 and "imported" not in dry and contents(real_service, ctx, "user") == []
    first, _ = twice(real_service, ctx, source="mcp-memory", path=str(DATA / "mcp-memory.jsonl"))
    assert first["imported"]["counts"]["memory"] == 7  # 4 observations, and each of the 3 relations as text
    assert contents(real_service, ctx, "user") == [
        "BillingService publishes to LedgerQueue",
        "BillingService stores data in Postgres",
        "BillingService: Deploys through the blue-green pipeline",
        "BillingService: Written in Go 1.22",
        "Dana_Okafor maintains BillingService",
        "Dana_Okafor: Maintains the billing service",
        "Dana_Okafor: Prefers reviews within one working day",
    ]
    # 4 entities (LedgerQueue only named by a relation), 3 relations, one mention per observation
    # and two per relation (its subject and its object)
    assert graph_counts(real_service, ctx, "user") == (4, 3, 4 + 2 * 3)
    hits = real_service.graph_search(ctx, entity="BillingService", depth=1)
    assert "Dana_Okafor" in str(hits) and "Postgres" in str(hits)


def test_claude_mem_observations_and_summaries_of_this_project(real_service, ctx, claude_mem_db):
    first, _ = twice(real_service, ctx, source="claude-mem", path=str(claude_mem_db))
    # 3 observations + 1 summary of project 'proj', 1 observation + 1 summary merged into it
    assert first["imported"]["counts"]["memory"] == 6
    assert any("other-app" in s["where"] for s in first["skipped"])
    got = contents(real_service, ctx, "project")
    assert len(got) == 6
    assert any(
        c.startswith("Upload test raced the temp-dir cleanup") and "Joining the worker first fixes it" in c for c in got
    )
    assert any(c.startswith("Session summary (claude-mem)") and "Next steps: Audit other fixtures" in c for c in got)
    assert not any("dark mode" in c for c in got)
    assert not any(s in c for c in got for s in SECRETS)
    rows = read_local(real_service.access, ctx, "project", None).values()
    types = {r["content"].split("\n")[0]: r["memory_type"] for r in rows}
    assert types["Upload test raced the temp-dir cleanup"] == "procedural"
    assert types["Uploads go to object storage, not the database"] == "semantic"
    assert min(str(r["created_at"]) for r in rows).startswith("2026-03-02")


def test_auto_memory_is_read_not_touched(real_service, ctx, tmp_path, home):
    folder = (
        home
        / ".claude"
        / "projects"
        / str(ctx.project_root).replace("/", "-").replace("_", "-").replace(".", "-")
        / "memory"
    )
    shutil.copytree(DATA / "auto-memory", folder)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    first, _ = twice(real_service, ctx, source="auto-memory")  # default path: Claude Code's folder for this project
    assert first["path"] == str(folder)
    assert first["imported"]["counts"]["memory"] == 5
    project, user = contents(real_service, ctx, "project"), contents(real_service, ctx, "user")
    assert len(project) == 4 and len(user) == 1
    assert "backend engineer" in user[0]
    assert any("Node 22 breaks the image optimiser" in c for c in project)
    assert any("never mocks" in c for c in project)
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before
    kinds = {
        r["content"].split("\n")[0]: r["memory_type"]
        for r in read_local(real_service.access, ctx, "project", None).values()
    }
    assert kinds["Testing preferences"] == "procedural"


def test_markdown_notes_with_links_and_a_broken_file(real_service, ctx):
    first, _ = twice(real_service, ctx, source="markdown", path=str(DATA / "notes"))
    assert first["imported"]["counts"]["memory"] == 3
    assert [s["where"].endswith("broken.md") for s in first["skipped"]] == [True]
    got = contents(real_service, ctx, "project")
    assert any(c.startswith("# Payment Retries") and "hard decline" in c for c in got)
    assert any(c.startswith("Ledger Service\n\nThe ledger service is append-only") for c in got)
    assert not any("hidden" == c for c in got)
    rows = {r["content"].split("\n")[0]: r for r in read_local(real_service.access, ctx, "project", None).values()}
    assert {"payments", "reliability", "backoff"} <= set(rows["# Payment Retries"]["tags"])
    assert {"ledger", "accounting"} <= set(rows["Ledger Service"]["tags"])
    entities, relations, _mentions = graph_counts(real_service, ctx, "project")
    assert relations == 2 and entities >= 4  # the notes, Retry Policy, Ledger Service


def test_no_secret_of_a_fixture_reaches_a_shared_file(real_service, ctx, claude_mem_db):
    run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    for key in read_local(real_service.access, ctx, "project", None):
        sharing.share(real_service.access, ctx, key)
    files = list((ctx.project_root / sharing.TEAM_MEMORY_DIR).glob("*.md"))
    assert len(files) == 6
    text = "".join(f.read_text() for f in files)
    assert "object storage" in text and not any(s in text for s in SECRETS)


def test_a_dry_run_flag_that_is_not_a_boolean_is_refused_before_anything_is_read(real_service, ctx):
    """The daemon calls run_import straight from the registry: "false" as a string must not
    read as a dry run (a truthy string) nor as a real import."""
    from engram_mcp.core.errors import InvalidInput

    with pytest.raises(InvalidInput) as err:
        run_import(real_service.access, ctx, source="mcp-memory", path=str(DATA / "mcp-memory.jsonl"), dry_run="false")
    assert err.value.field == "dry_run"
    assert contents(real_service, ctx, "project") == []


# -- issue 35: importers that lose nothing ------------------------------------------------


def recall_texts(svc: MemoryService, ctx: RequestContext, query: str, k: int = 5) -> list[str]:
    return [m["content"] for m in svc.recall(ctx, query=query, limit=k, strengthen=False)["memories"]]


def history_of(svc: MemoryService, ctx: RequestContext, memory_id: str) -> list[dict]:
    return svc.get(ctx, memory_id, history=True)["history"]


def test_an_import_then_maintain_keeps_every_imported_memory_recallable(real_service, ctx, claude_mem_db):
    """claude-mem rows are nine months old; decaying them from their source dates archived
    7 of 10 on the first maintenance pass. The source date stays the creation date."""
    first = run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    real_service.maintain(ctx)
    rows = list(read_local(real_service.access, ctx, "project", None).values())
    assert len(rows) == 6 and {r["status"] for r in rows} <= {"created", "active"}, [r["status"] for r in rows]
    assert first["added"] == 6
    assert min(str(r["created_at"]) for r in rows).startswith("2026-03-02")  # history keeps the source's time
    for question, expected in (
        ("orders table partitioning", "Orders table partitioned by month"),
        ("why did the upload test fail in CI", "Upload test raced the temp-dir cleanup"),
        ("what is the API rate limit", "100 requests per minute"),
    ):
        assert any(expected in c for c in recall_texts(real_service, ctx, question)), question


def test_claude_mem_rows_arrive_whole(real_service, ctx, claude_mem_db):
    res = run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    rows = {r["content"].split("\n")[0]: r for r in read_local(real_service.access, ctx, "project", None).values()}
    orders = rows["Orders table partitioned by month"]  # merged_into_project = 'proj': ours, no "another project"
    assert not any("wt-orders" in s["where"] for s in res["skipped"])
    assert "Files modified: db/migrations/0042_partition_orders.sql" in orders["content"]
    assert "Files read: db/schema.sql" in orders["content"]  # both lists, not just files_modified
    assert "Asked: partition the orders table before black friday" in orders["content"]
    assert {"repository-pattern", "partition-pruning"} <= set(orders["tags"])
    assert not any(":" in t for r in rows.values() for t in r["tags"])
    assert orders["metadata"]["claude_mem_session"] == "m-3" and orders["metadata"]["prompt_number"] == 2
    # sensitive and security_alert rows: counted, never stored (so never injected nor shared)
    assert not any("password" in c or "personal email" in c for c in rows)
    assert res["skipped_reasons"].get("sensitive") == 2 and res["skipped_reasons"].get("another project") == 2


def test_claude_mem_sensitive_rows_come_in_only_when_asked_and_marked(real_service, ctx, claude_mem_db):
    res = run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db), include_sensitive=True)
    assert res["added"] == 8 and "sensitive" not in res["skipped_reasons"]
    marked = [r for r in read_local(real_service.access, ctx, "project", None).values() if "sensitive" in r["tags"]]
    assert len(marked) == 2 and all(r["metadata"]["sensitive"] is True for r in marked)


@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage", "wrong_types", "nested_json"],
)
def test_a_damaged_claude_mem_database_is_invalid_input_naming_it(real_service, ctx, claude_mem_db, damage):
    from engram_mcp.core.errors import InvalidInput

    if damage == "truncated":
        data = claude_mem_db.read_bytes()
        claude_mem_db.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        claude_mem_db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    else:
        con = sqlite3.connect(claude_mem_db)
        if damage == "wrong_types":
            con.execute("UPDATE observations SET facts = ?, title = ? WHERE id = 1", (b"\x00\x01", b"\xff"))
        else:
            con.execute("UPDATE observations SET facts = ? WHERE id = 1", ("[" * 50_000 + "]" * 50_000,))
        con.commit()
        con.close()
    if damage in ("truncated", "garbage"):
        with pytest.raises(InvalidInput) as err:
            run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
        assert str(claude_mem_db) in err.value.message and err.value.field == "path"
        return
    res = run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    assert [s["where"] for s in res["skipped"] if "unreadable" in s["why"]] == ["observations #1"]
    assert res["added"] == 5  # the other rows come in


def test_memory_server_relations_are_recallable_and_entities_counted(real_service, ctx):
    run_import(real_service.access, ctx, source="mcp-memory", path=str(DATA / "mcp-memory.jsonl"))
    top = recall_texts(real_service, ctx, "who maintains BillingService", k=3)
    assert "Dana_Okafor maintains BillingService" in top
    assert any("publishes to LedgerQueue" in c for c in recall_texts(real_service, ctx, "where does billing publish"))
    with real_service.lock:
        h = real_service.handle(ctx, "user")
        counts = {e["name"]: e["mention_count"] for e in h.q(q.ALL_ENTITIES)}
    # observations (2 each) and relation sentences naming them
    assert counts == {"Dana_Okafor": 3, "BillingService": 5, "Postgres": 1, "LedgerQueue": 1}


def test_edited_sources_update_their_memories_on_reimport(real_service, ctx, tmp_path, home):
    """Every format: an edit at the source updates the memory (same id, old text in history);
    a run with nothing changed writes nothing."""
    # memory server: an observation deleted and a new one added to the same entity
    graph = tmp_path / "memory.jsonl"
    graph.write_text((DATA / "mcp-memory.jsonl").read_text())
    # markdown
    notes = tmp_path / "notes"
    shutil.copytree(DATA / "notes", notes)
    # auto memory
    folder = tmp_path / "auto"
    shutil.copytree(DATA / "auto-memory", folder)
    runs = {
        "mcp-memory": graph,
        "markdown": notes,
        "auto-memory": folder,
    }
    before = {src: run_import(real_service.access, ctx, source=src, path=str(p)) for src, p in runs.items()}
    ids = {
        r["content"]: k
        for scope in ("project", "user")
        for k, r in read_local(real_service.access, ctx, scope, None).items()
    }
    graph.write_text(graph.read_text().replace("Written in Go 1.22", "Written in Go 1.23"))
    note = notes / "projects" / "Ledger Service.md"
    note.write_text(note.read_text().replace("append-only", "append-only and partitioned by year"))
    topic = folder / "feedback_testing.md"
    topic.write_text(topic.read_text().replace("never mocks", "never mocks, and runs migrations first"))
    after = {src: run_import(real_service.access, ctx, source=src, path=str(p)) for src, p in runs.items()}
    for src in runs:
        assert (after[src]["added"], after[src]["updated"]) == (0, 1), (src, after[src])
        assert after[src]["unchanged"] == before[src]["added"] - 1
    texts = {
        r["content"]: k
        for scope in ("project", "user")
        for k, r in read_local(real_service.access, ctx, scope, None).items()
    }
    assert "BillingService: Written in Go 1.23" in texts and "BillingService: Written in Go 1.22" not in texts
    assert texts["BillingService: Written in Go 1.23"] == ids["BillingService: Written in Go 1.22"]  # same memory
    old = history_of(real_service, ctx, texts["BillingService: Written in Go 1.23"])
    assert old and old[-1]["snapshot"]["content"] == "BillingService: Written in Go 1.22"
    assert any("partitioned by year" in c for c in texts) and any("runs migrations first" in c for c in texts)
    assert len(texts) == len(ids)
    again = {src: run_import(real_service.access, ctx, source=src, path=str(p)) for src, p in runs.items()}
    for src in runs:
        assert (again[src]["added"], again[src]["updated"]) == (0, 0), src


def test_a_claude_mem_row_edited_at_the_source_updates_and_a_removed_one_is_reported(real_service, ctx, claude_mem_db):
    run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    con = sqlite3.connect(claude_mem_db)
    con.execute("UPDATE observations SET narrative = 'Blobs go to the eu-west bucket.' WHERE id = 2")
    con.execute("DELETE FROM observations WHERE id = 3")
    con.commit()
    con.close()
    dry = run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db), dry_run=True)
    assert (dry["added"], dry["updated"], dry["removed_at_source"]) == (0, 1, 1)
    res = run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    assert (res["added"], res["updated"], res["unchanged"], res["removed_at_source"]) == (0, 1, 4, 1)
    assert res["removed"][0]["where"] == "observations #3"
    assert any("eu-west bucket" in c for c in contents(real_service, ctx, "project"))
    assert any("rate limit" in c for c in contents(real_service, ctx, "project"))  # reported, not deleted


def test_auto_memory_dangling_links_dates_and_worktrees(real_service, ctx, tmp_path, home):
    import os

    from engram_mcp.services.importers import auto_memory

    # a linked worktree (made by git): Claude Code keeps its auto memory in the main worktree's folder
    main = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    wt = tmp_path / "wt-feat"
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(wt)], check=True)
    assert (wt / ".git").is_file()
    assert auto_memory.default_dir(wt, home) == auto_memory.default_dir(main, home)
    assert auto_memory.default_dir(wt, home).parent.name == re.sub(r"[^A-Za-z0-9]", "-", str(main.resolve()))

    # an unpacked archive whose `.git` file names another repository's worktree entry, or a
    # made-up one under it: the named directory does not point back, so it is its own project
    gitdir = next((main / ".git" / "worktrees").iterdir())
    for named in (gitdir, main / ".git" / "worktrees" / "evil"):
        vendored = main / "vendor" / f"lib-{named.name}"
        vendored.mkdir(parents=True)
        (vendored / ".git").write_text(f"gitdir: {os.path.relpath(named, vendored)}\n")
        assert auto_memory.main_worktree(vendored) == vendored
    # nor one the archive made itself, pointing back and naming the other repository's .git
    vendored = main / "vendor" / "lib-made"
    made = vendored / "fake" / ".git" / "worktrees" / "x"
    made.mkdir(parents=True)
    (vendored / ".git").write_text("gitdir: fake/.git/worktrees/x\n")
    (made / "gitdir").write_text(str(vendored / ".git") + "\n")
    (made / "commondir").write_text(os.path.relpath(main / ".git", made) + "\n")
    assert auto_memory.main_worktree(vendored) == vendored

    folder = tmp_path / "auto"
    shutil.copytree(DATA / "auto-memory", folder)
    with open(folder / "MEMORY.md", "a") as f:
        f.write("\n- [Deploy checklist](deploy_checklist.md) — steps before a release\n")
    old = 1_700_000_000  # 2023-11-14
    os.utime(folder / "project_freeze.md", (old, old))
    res = run_import(real_service.access, ctx, source="auto-memory", path=str(folder))
    assert res["added"] == 5
    assert [s["why"].split(":")[0] for s in res["skipped"]] == ["dangling link"]
    assert not any("Deploy checklist" in c for c in contents(real_service, ctx, "project"))
    freeze = next(
        r for r in read_local(real_service.access, ctx, "project", None).values() if "freeze" in r["content"].lower()
    )
    assert str(freeze["created_at"]).startswith("2023-11-14")


def test_markdown_in_every_basic_memory_and_obsidian_form(real_service, ctx, tmp_path):
    vault = tmp_path / "vault"
    shutil.copytree(DATA / "vault", vault)
    paragraphs = [
        f"Incident {i}: the {i}th outage of the payment gateway lasted {i % 50} minutes. " * 6 for i in range(150)
    ]
    (vault / "Incident Log.md").write_text("\n\n".join(paragraphs))  # ~75,000 characters: 4 parts
    res = run_import(real_service.access, ctx, source="markdown", path=str(vault))
    assert [s["where"] for s in res["skipped"]] == ["bad-date.md"] and "invalid date" in res["skipped"][0]["why"]
    rows = {r["content"].split("\n")[0]: r for r in read_local(real_service.access, ctx, "project", None).values()}
    coffee = rows["# Coffee Brewing Methods"]
    assert str(coffee["created_at"]).startswith("2024-03-14")  # a YAML date
    assert any("French press" in c for c in recall_texts(real_service, ctx, "cafetiere"))  # an alias, searchable
    long_parts = sorted(t for t in rows if t.startswith("Incident Log (part"))
    assert long_parts and long_parts[-1].endswith(f"/{len(long_parts) + 1})")
    with real_service.lock:
        h = real_service.handle(ctx, "project")
        entities = {e["name"]: e["entity_type"] for e in h.q(q.ALL_ENTITIES)}
        relations = {(r["relation_type"], tuple(r.get("evidence") or ())) for r in h.q(q.ALL_RELATIONS)}
    assert "diagram.png" not in entities and not any(n.endswith(".png") for n in entities)  # an embed is no entity
    assert entities["Pour Over"] == "method"  # its own note's type, though linked before it was read
    assert ("requires", ("grind size matters most",)) in relations
    assert ("pairs_well_with", ()) in relations
    assert "Kettle" in entities  # a link in a frontmatter value


def test_special_files_named_md_are_refused_not_opened(real_service, ctx, tmp_path):
    import os
    import threading

    folder = tmp_path / "auto"
    shutil.copytree(DATA / "auto-memory", folder)
    os.mkfifo(folder / "fifo_topic.md")
    notes = tmp_path / "notes"
    shutil.copytree(DATA / "notes", notes)
    os.mkfifo(notes / "pipe.md")
    os.mkfifo(tmp_path / "cm.db")
    out: dict = {}

    def go() -> None:
        out["auto"] = run_import(real_service.access, ctx, source="auto-memory", path=str(folder), dry_run=True)
        out["notes"] = run_import(real_service.access, ctx, source="markdown", path=str(notes), dry_run=True)
        try:
            run_import(real_service.access, ctx, source="claude-mem", path=str(tmp_path / "cm.db"), dry_run=True)
        except Exception as exc:  # noqa: BLE001 - the test asserts which one below
            out["claude-mem"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(180)  # generous for a loaded machine; a FIFO blocks forever
    assert not t.is_alive(), "an import blocked on a FIFO"
    assert any(s["where"] == "fifo_topic.md" and "FIFO" in s["why"] for s in out["auto"]["skipped"])
    assert any(s["where"] == "pipe.md" and "FIFO" in s["why"] for s in out["notes"]["skipped"])
    assert type(out["claude-mem"]).__name__ == "InvalidInput" and "FIFO" in out["claude-mem"].message


def test_an_import_writes_no_temporary_copy_of_the_source(real_service, ctx, claude_mem_db, monkeypatch, tmp_path):
    """A killed import left its raw copy in the temp folder: now there is none to leave."""
    import tempfile

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    seen: list[list[str]] = []
    from engram_mcp.services import transfer

    def spying(real):
        def spy(*a, **kw):
            seen.append([p.name for p in temp.rglob("*")])  # what is on disk while the records are imported
            return real(*a, **kw)

        return spy

    for name in ("import_", "import_records"):  # whichever the importers call
        if hasattr(transfer, name):
            monkeypatch.setattr(transfer, name, spying(getattr(transfer, name)))
    run_import(real_service.access, ctx, source="claude-mem", path=str(claude_mem_db))
    assert seen == [[]] and list(temp.iterdir()) == []


def test_round_trip_per_format_every_item_recallable_by_a_question_about_it(
    real_service, ctx, claude_mem_db, tmp_path, capsys
):
    """Per format: the source's items, the memories imported, and recall@5 of a question
    written from each item (all formats in one store, so each competes with the others)."""
    questions = {
        "mcp-memory": [
            ("who maintains the billing service", "Dana_Okafor: Maintains the billing service"),
            ("how fast does Dana want reviews", "Prefers reviews within one working day"),
            ("which Go version is billing written in", "Written in Go 1.22"),
            ("how is billing deployed", "blue-green pipeline"),
            ("who maintains BillingService", "Dana_Okafor maintains BillingService"),
            ("where does BillingService store its data", "BillingService stores data in Postgres"),
            ("what queue does billing publish to", "BillingService publishes to LedgerQueue"),
        ],
        "claude-mem": [
            ("why was the upload test flaky", "Upload test raced the temp-dir cleanup"),
            ("where do uploads go", "Uploads go to object storage"),
            ("what is the API rate limit", "100 requests per minute"),
            ("how is the orders table partitioned", "Orders table partitioned by month"),
            ("what did the flaky upload test session find", "Cleanup must wait for workers"),
            ("what did the orders partitioning session complete", "Migration 0042 written"),
        ],
        "auto-memory": [
            ("should integration tests use mocks", "never mocks"),
            ("when is the mobile release merge freeze", "Merge freeze for the mobile release"),
            ("what kind of answers does the user prefer", "backend engineer"),
            ("which Node version does the build need", "Node 22 breaks the image optimiser"),
            ("how do I start the API and the worker", "make dev"),
        ],
        "markdown": [
            ("how are payments retried", "exponential backoff"),
            ("can corrections edit ledger entries", "append-only"),
            ("when is standup", "Standup moved to 9:45"),
            ("how long does a French press steep", "French press steeps"),
            ("how does pour over work", "paper filter"),
        ],
    }
    folder = tmp_path / "auto"
    shutil.copytree(DATA / "auto-memory", folder)
    vault = tmp_path / "notes"
    shutil.copytree(DATA / "notes", vault)
    for name in ("Coffee Brewing Methods.md", "Pour Over.md"):
        shutil.copy(DATA / "vault" / name, vault / name)
    sources = {
        "mcp-memory": DATA / "mcp-memory.jsonl",
        "claude-mem": claude_mem_db,
        "auto-memory": folder,
        "markdown": vault,
    }
    report = {}
    for src, path in sources.items():
        res = run_import(real_service.access, ctx, source=src, path=str(path))
        report[src] = {"items": len(questions[src]), "imported": res["added"]}
    for src, qs in questions.items():
        hits = sum(any(want in c for c in recall_texts(real_service, ctx, q)) for q, want in qs)
        report[src]["recall@5"] = round(hits / len(qs), 2)
    with capsys.disabled():
        print("\nround trip per format:", report)
    for src, r in report.items():
        assert r["imported"] == r["items"], src  # every item of the source is one memory
        assert r["recall@5"] == 1.0, (src, r)


@pytest.mark.parametrize("damage", ["truncated", "not_sqlite"])
def test_through_the_daemon_a_damaged_database_is_invalid_input_and_no_index_is_dropped(
    daemon, fake_service, ctx, claude_mem_db, tmp_path, monkeypatch, damage
):
    from tests.daemon_env import daemon_request

    other = RequestContext(tmp_path / "other", "s2")
    (other.project_root / ".git").mkdir(parents=True)
    assert daemon_request(
        daemon, "store", {"content": "other project's fact", "type": "semantic", "scope": "project"}, other
    )["ok"]
    dropped: list = []
    monkeypatch.setattr(fake_service.access, "distrust_indexes", lambda *a, **k: dropped.append(a))
    data = claude_mem_db.read_bytes()
    claude_mem_db.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"PK\x03\x04 a zip file" * 100)
    reply = daemon_request(daemon, "import_from", {"source": "claude-mem", "path": str(claude_mem_db)}, ctx)
    assert reply["error"]["error"] == "invalid_input" and str(claude_mem_db) in reply["error"]["message"]
    assert not reply["error"].get("retryable")
    assert dropped == []
    hits = daemon_request(daemon, "recall", {"query": "other project's fact"}, other)["result"]["memories"]
    assert [m["content"] for m in hits] == ["other project's fact"]


def test_mentions_of_one_large_entity_are_resolved_in_bulk(fake_service, ctx, tmp_path, monkeypatch):
    """One entity with 3,000 observations: the old import looked each mention up with its own
    query (which scanned the entity's mentions: quadratic) and wrote each with its own request."""
    import json

    from engram_mcp.storage.repository import ScopeRepository, _Collecting

    n = 3000
    graph = tmp_path / "memory.jsonl"
    obs = [f"Observation {i}: shard {i % 97} holds customers {i * 13}" for i in range(n)]
    graph.write_text(
        json.dumps({"type": "entity", "name": "Billing", "entityType": "service", "observations": obs}) + "\n"
    )
    calls = {"has_mention": 0, "lookups": 0, "requests": 0}
    real_lookup, real_send = ScopeRepository.mentions_of_entities, ScopeRepository._q

    def lookup(self, keys):
        calls["lookups"] += 1
        return real_lookup(self, keys)

    def counting_q(self, sql, params=None):
        if not isinstance(self, _Collecting):  # a statement collected by atomic() is no request of its own
            calls["requests"] += 1
        if "FROM mentions WHERE in = $memory" in sql:
            calls["has_mention"] += 1
        return real_send(self, sql, params)

    monkeypatch.setattr(ScopeRepository, "mentions_of_entities", lookup)
    monkeypatch.setattr(ScopeRepository, "_q", counting_q)
    res = run_import(fake_service.access, ctx, source="mcp-memory", path=str(graph), scope="project")
    assert res["imported"]["counts"]["mention"] == n
    assert calls["has_mention"] == 0 and calls["lookups"] == 1  # one query for the entity's mentions
    assert calls["requests"] < n / 10, calls  # writes go in batches, not one request per mention
    with fake_service.lock:
        h = fake_service.handle(ctx, "project")
        assert [e["mention_count"] for e in h.q(q.ALL_ENTITIES)] == [n]
    again = run_import(fake_service.access, ctx, source="mcp-memory", path=str(graph), scope="project")
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, n)


def test_the_cli_asks_for_progress_even_with_json_so_a_long_import_is_not_cut_at_120_s(tmp_path, monkeypatch):
    """The client's wait restarts at each progress line, but progress was only asked for when a
    bar was drawn: `engram --json import --from ...` of 10k memories gave up after 120 s."""
    import argparse

    from engram_mcp.interfaces import cli

    sent: list = []

    class Client:
        def call(self, op, payload, **kw):
            sent.append((op, kw.get("on_progress")))
            return {}

    (tmp_path / ".git").mkdir()
    app = cli.App(argparse.Namespace(project=str(tmp_path), session=None, json=True))
    app.client = Client()
    app.call_with_progress("import_from", {"source": "mcp-memory"})
    app.call("recall", {"query": "x"})
    assert sent[0][0] == "import_from" and callable(sent[0][1])
    assert sent[1] == ("recall", None)  # an operation without progress asks for none


def test_a_note_broken_by_an_edit_is_reported_as_skipped_not_as_removed(real_service, ctx, tmp_path):
    notes = tmp_path / "notes"
    shutil.copytree(DATA / "notes", notes)
    run_import(real_service.access, ctx, source="markdown", path=str(notes))
    note = notes / "Payment Retries.md"
    note.write_text(note.read_text().replace("title: Payment Retries", "title: [Payment Retries"))
    res = run_import(real_service.access, ctx, source="markdown", path=str(notes))
    assert "Payment Retries.md" in [s["where"] for s in res["skipped"]]
    assert res["removed_at_source"] == 0 and (res["added"], res["updated"]) == (0, 0)
    assert any("hard decline" in c for c in contents(real_service, ctx, "project"))  # kept as it was


# -- sensitive rows imported on request: recallable when asked, never volunteered or sent --------
SENSITIVE_TEXTS = ("Staging database password", "Customer export holds personal emails")


def _import_sensitive(svc: MemoryService, ctx: RequestContext, db: Path) -> list[str]:
    run_import(svc.access, ctx, source="claude-mem", path=str(db), include_sensitive=True)
    keys = [k for k, r in read_local(svc.access, ctx, "project", None).items() if "sensitive" in r["tags"]]
    assert len(keys) == 2
    return keys


def test_sensitive_memories_answer_a_recall_but_never_reach_a_context_block(real_service, ctx, claude_mem_db):
    from engram_mcp.services import hook_ops

    _import_sensitive(real_service, ctx, claude_mem_db)
    # asked for, they are found
    assert any("Staging database password" in t for t in recall_texts(real_service, ctx, "staging database password"))
    start = hook_ops.session_start(real_service.access, ctx)["additional_context"] or ""
    assert "object storage" in start or "<engram-memory>" in start  # the block is built from the import
    prompts = [
        "was the staging database password committed in .env.staging?",
        "does the customer export hold personal emails?",
    ]
    blocks = [hook_ops.prompt_context(real_service.access, ctx, prompt=p)["additional_context"] or "" for p in prompts]
    for text in SENSITIVE_TEXTS:
        assert text not in start and not any(text in b for b in blocks)


def test_sensitive_memories_never_reach_a_team_file_or_the_user_mirror(real_service, ctx, claude_mem_db, tmp_path):
    from engram_mcp.core.errors import InvalidInput
    from engram_mcp.services import promotion

    keys = _import_sensitive(real_service, ctx, claude_mem_db)
    for key in keys:  # share, by hand
        with pytest.raises(InvalidInput, match="sensitive"):
            sharing.share(real_service.access, ctx, key)
    # the auto-share rule, even for a sensitive memory that is durable and important
    cfg = ctx.project_root / ".claude" / "engram.local.md"
    cfg.parent.mkdir(exist_ok=True)
    cfg.write_text("---\nteam_memory_share_min_importance: 0.1\n---\n")
    from engram_mcp.services import edit

    for key in keys:
        edit.update(real_service.access, ctx, f"memory:{key}", memory_type="semantic", importance=0.9)
    sharing.sync_project(real_service.access, ctx)
    team = ctx.project_root / sharing.TEAM_MEMORY_DIR
    shared = "".join(f.read_text() for f in team.glob("*.md")) if team.is_dir() else ""
    assert "object storage" in shared  # the rule shared the others
    # the user mirror: promoted to the user scope, still never written to the mirror folder
    for key in keys:
        promotion.promote_by_user(real_service.access, ctx, f"memory:{key}", "user")
    mirror = tmp_path / "mirror"
    report = sharing.sync_user(real_service.access, ctx, mirror)
    mirrored = "".join(f.read_text() for f in mirror.glob("*.md")) if mirror.is_dir() else ""
    assert len(report.get("withheld_sensitive") or []) == 2
    for text in SENSITIVE_TEXTS:
        assert text not in shared and text not in mirrored


def test_an_export_keeps_sensitive_memories_marked_and_counted(real_service, ctx, claude_mem_db, tmp_path):
    import json

    from engram_mcp.services import transfer

    _import_sensitive(real_service, ctx, claude_mem_db)
    out = transfer.export(real_service.access, ctx, tmp_path / "all.jsonl", scopes=("project",))
    assert out["counts"]["sensitive"] == 2
    lines = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    marked = [x for x in lines if x.get("kind") == "memory" and "sensitive" in x["record"]["tags"]]
    assert len(marked) == 2 and all(x["record"]["metadata"]["sensitive"] is True for x in marked)


def test_through_the_hooks_as_processes_sensitive_memories_are_never_injected(tmp_path, claude_mem_db):
    import json

    from tests.test_hooks import hook_env, run_hook, sample, start_block

    e = hook_env(tmp_path / "hooks", boot=None)
    claude_code_was_here(e.home, e.project)
    try:
        start_block(e, "boot")
        with e.client() as c:
            got = c.call(
                "import_from",
                {"source": "claude-mem", "path": str(claude_mem_db), "include_sensitive": True},
                project_root=str(e.project),
            )
            assert got["added"] == 8

        def block(proc) -> str:
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout.strip() else ""

        start = start_block(e, "s1")
        assert "<engram-memory>" in start
        said = [
            block(
                run_hook(
                    e, "UserPromptSubmit", sample("UserPromptSubmit", session_id="s1", cwd=str(e.project), prompt=p)
                )
            )
            for p in (
                "was the staging database password committed in .env.staging?",
                "does the customer export hold personal emails?",
            )
        ]
        for text in SENSITIVE_TEXTS:
            assert text not in start and not any(text in s for s in said)
    finally:
        e.shutdown()


# -- large imports: per-record costs (issue 35: 20,000 observations of one entity) ---------------
def test_write_batches_follow_the_lock_budget_not_the_embedding_chunks(fake_service, ctx, tmp_path, monkeypatch):
    """Memories embedded by the import were written at the end of each 64-text chunk, so a
    batch never held more than 64 (on a loaded machine ~26 on average: one transaction, and its
    fixed cost, per 26 records). Now a batch is as large as the lock budget allows."""
    import json

    from engram_mcp.services import transfer

    sizes: list[int] = []
    real = transfer._write_batch

    def counting(run, batch):
        sizes.append(len(batch))
        return real(run, batch)

    monkeypatch.setattr(transfer, "_write_batch", counting)
    monkeypatch.setattr(transfer, "next_batch", lambda *a: 100)  # the budget allows 100, whatever the load
    graph = tmp_path / "memory.jsonl"
    obs = [f"Observation {i}: shard {i % 97} holds customers {i * 13}" for i in range(300)]
    graph.write_text(json.dumps({"type": "entity", "name": "Billing", "entityType": "service", "observations": obs}))
    res = run_import(fake_service.access, ctx, source="mcp-memory", path=str(graph), scope="project")
    assert res["added"] == 300 and sum(sizes) == 300
    assert max(sizes) == 100 and len(sizes) == 4, sizes  # 16 (the first), 100, 100, 84


def test_clean_metadata_values_are_redacted_once_and_secrets_never_memoised():
    """Each record's ~13 text fields went through every redaction rule, though most repeat
    (a source's name, an entity, the same keys): a clean value is now remembered (bounded),
    a value with a finding never is, and every call still reports its own findings."""
    from engram_mcp.core import redaction
    from engram_mcp.core.redaction import api

    secret = "AKIAIOSFODNN7EXAMPLQ"
    obj = {"kind": "mcp-memory", "entity": "Billing", "note": f"key {secret}", "password": "hunter2hunter2"}
    first, f1 = redaction.redact_obj(obj)
    second, f2 = redaction.redact_obj(obj)
    assert first == second and f1 == f2 and f1  # the findings are reported by every call
    assert secret not in str(first) and "hunter2hunter2" not in str(first)
    memo = str(list(redaction._CLEAN_PAIRS))
    assert "Billing" in memo and secret not in memo and "hunter2" not in memo
    calls = []
    real = api._redact_counts
    try:
        api._redact_counts = lambda text, counts: calls.append(text) or real(text, counts)
        redaction.redact_obj({"kind": "mcp-memory", "entity": "Billing"})
    finally:
        api._redact_counts = real
    assert calls == []  # keys and values seen clean before: no rule runs again
