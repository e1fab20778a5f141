"""Importers (services/importers): each brings its fixture in completely, twice without duplicates.

The fixtures in tests/data/importers/ have the real shape of each tool's data (claude-mem's
schema, the MCP memory server's JSONL lines, Claude Code's auto memory folder, basic-memory
and Obsidian notes), written for these tests.
"""

from __future__ import annotations

import shutil
import sqlite3
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
def claude_mem_db(tmp_path: Path) -> Path:
    db = tmp_path / "claude-mem.db"
    con = sqlite3.connect(db)
    con.executescript((DATA / "claude-mem.sql").read_text())
    con.commit()
    con.close()
    return db


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
    assert first["imported"]["counts"]["memory"] == 4  # 3 observations + 1 summary of project 'proj'
    assert any("other-app" in s["where"] for s in first["skipped"])
    got = contents(real_service, ctx, "project")
    assert len(got) == 4
    assert any(c.startswith("Upload test raced the temp-dir cleanup") and "Joining the worker first fixes it" in c for c in got)
    assert any(c.startswith("Session summary (claude-mem)") and "Next steps: Audit other fixtures" in c for c in got)
    assert not any("dark mode" in c for c in got)
    assert not any(s in c for c in got for s in SECRETS)
    rows = read_local(real_service.access, ctx, "project", None).values()
    types = {r["content"].split("\n")[0]: r["memory_type"] for r in rows}
    assert types["Upload test raced the temp-dir cleanup"] == "procedural"
    assert types["Uploads go to object storage, not the database"] == "semantic"
    assert min(str(r["created_at"]) for r in rows).startswith("2026-03-02")


def test_auto_memory_is_read_not_touched(real_service, ctx, tmp_path, home):
    folder = home / ".claude" / "projects" / str(ctx.project_root).replace("/", "-").replace("_", "-").replace(".", "-") / "memory"
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
    kinds = {r["content"].split("\n")[0]: r["memory_type"] for r in read_local(real_service.access, ctx, "project", None).values()}
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
    assert len(files) == 4
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
