"""The operations `engram ui` added: quality rates, decay curve, sessions (with the hooks'
injections), and applying only the approved steps of a consolidation plan."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import pytest

from engram_mcp.services import browse, consolidate, curation, hook_ops
from engram_mcp.core.ids import short_id
from engram_mcp.services.service import MemoryService, RequestContext
from tests.daemon_env import daemon_request
from tests.fakes import FakeEmbedder


@pytest.fixture
def svc(home):
    s = MemoryService(home=home, embedder=FakeEmbedder())
    yield s
    s.close()


def _store(svc, ctx, content, **kw):
    args = {"type": "semantic", "scope": "project", "importance": 0.5, "dedup": False, **kw}
    return svc.store(ctx, content=content, **args)["memory_id"]


def _age(svc, ctx, mid, days):
    t = datetime.now(timezone.utc) - timedelta(days=days)
    h = svc.handle(ctx, "project")
    h.q("UPDATE type::thing('memory', $id) SET last_accessed_at = $t, created_at = $t", {"id": mid.split(":", 1)[1], "t": t})


def test_quality_counts_each_rate_per_scope(svc, home, project) -> None:
    ctx = RequestContext(project, "s1")
    a = _store(svc, ctx, "The build uses Bazel with remote caching")
    _store(svc, ctx, "The build uses Bazel with remote caching")  # an exact duplicate (dedup off)
    old = _store(svc, ctx, "Deploys happen on Tuesdays")
    newer = _store(svc, ctx, "Deploys happen on Thursdays now")
    stale = _store(svc, ctx, "The wiki moved to Confluence")
    svc.update(ctx, newer, supersedes=old)
    _age(svc, ctx, stale, 120)
    svc.close()  # the index is rebuilt from the aged records (`_age` wrote behind its back: drop its file)
    shutil.rmtree(project / ".claude" / "engram" / "index", ignore_errors=True)
    svc2 = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        svc2.recall(ctx, query="Bazel remote caching", limit=1)  # one memory recalled
        q = curation.quality(svc2.access, ctx)["scopes"]["project"]
        assert q["live"] == 5
        assert q["near_duplicates"] == 2 and q["duplicates_checked"] == 5
        assert q["superseded_but_active"] == 1
        assert q["never_recalled"] == 4
        assert q["not_recalled_90d"] == 1
        assert q["rates"]["never_recalled"] == 0.8
        assert q["total"] == 5 and q["by_type"] == {"semantic": 5}, "counted from the index, every status"
        assert sum(q["by_status"].values()) == 5
        svc2.forget(ctx, a)
        again = curation.quality(svc2.access, ctx)["scopes"]["project"]
        assert again["total"] == 5 and again["by_status"].get("forgotten") == 1, "a change is counted at once"
        assert again["live"] == 4 and again["duplicates_checked"] == 4, "the near-duplicate figure is not kept past a change"
    finally:
        svc2.close()


def test_decay_curve_starts_at_the_strength_and_falls(svc, project) -> None:
    ctx = RequestContext(project)
    mid = _store(svc, ctx, "Use ruff for linting", importance=0.8, type="episodic")
    curve = curation.decay_curve(svc.access, ctx, mid)
    strengths = [p["strength"] for p in curve["points"]]
    assert strengths[0] == pytest.approx(svc.get(ctx, mid)["strength"], abs=1e-3)
    assert all(x >= y for x, y in zip(strengths[:-1], strengths[1:], strict=True)) and strengths[-1] < strengths[0] / 10
    assert curve["points"][0]["days_from_now"] == 0 and curve["frozen"] is False


def test_sessions_show_the_hooks_injections(svc, project) -> None:
    ctx = RequestContext(project, "sess-ui-1")
    mid = _store(svc, ctx, "Run the API tests with make test", type="procedural", importance=0.9)
    started = hook_ops.session_start(svc.access, ctx, source="startup")
    assert short_id(mid) in (started["additional_context"] or "")
    hook_ops.INJECTION_LOG.record("sess-ui-1", "prompt", [mid], 12)
    out = curation.sessions(svc.access, ctx)
    entry = next(s for s in out["sessions"] if s["session_id"] == "sess-ui-1")
    kinds = [(e["kind"], e["memory_ids"]) for e in entry["injections"]]
    assert ("session_start", [mid]) in kinds and ("prompt", [mid]) in kinds
    assert entry["status"] == "active"
    brief = out["memories"][mid]
    assert brief["text"] == "Run the API tests with make test" and brief["type"] == "procedural" and brief["scope"] == "project"


def test_sessions_say_their_first_prompt_and_a_live_sessions_own_memories(svc, project) -> None:
    ctx = RequestContext(project, "sess-ui-2")
    hook_ops.session_start(svc.access, ctx, source="startup")
    _store(svc, ctx, "Use the staging database for the migration dry run")
    hook_ops.prompt_context(svc.access, ctx, prompt="why does the migration dry run fail on staging? token=sk-live-" + "a1B2" * 10)
    hook_ops.prompt_context(svc.access, ctx, prompt="zebra crossings in Lisbon")  # nothing injected: still recorded
    own = [_store(svc, ctx, f"scratch note {i} about the dry run", scope="session") for i in range(3)]
    entry = next(s for s in curation.sessions(svc.access, ctx)["sessions"] if s["session_id"] == "sess-ui-2")
    prompts = [e["prompt"] for e in entry["injections"] if e["kind"] == "prompt"]
    assert entry["first_prompt"].startswith("why does the migration dry run fail on staging?")
    assert "a1B2a1B2" not in entry["first_prompt"], "a secret in a prompt is not kept"
    assert prompts[-1] == "zebra crossings in Lisbon"
    assert entry["session_scope_total"] == 3 and set(entry["session_scope"]) == set(own)
    assert entry["in_project_total"] == 1 and len(entry["in_project"]) == 1
    out = curation.sessions(svc.access, ctx)
    assert all(m in out["memories"] and out["memories"][m]["scope"] == "session" for m in own)
    listed = browse.list_memories(svc.access, ctx, scope="session", limit=50)
    assert listed["total_matched"] == 3, "the session scope filter counts the same memories"


def test_only_approved_consolidation_steps_are_applied(svc, project) -> None:
    ctx = RequestContext(project)
    a = _store(svc, ctx, "Deployed payments to staging", type="episodic")
    b = _store(svc, ctx, "Deployed payments to staging", type="episodic")  # one cluster with a
    low = _store(svc, ctx, "a passing thought", importance=0.05)
    svc.handle(ctx, "project").repo.set_status([low.split(":", 1)[1]], "active")
    svc.handle(ctx, "project").index.set_status(low.split(":", 1)[1], "active")
    plan = consolidate.consolidate(svc.access, ctx, dry_run=True, scope="project")
    summary = next(c for c in plan["consolidated_memories"] if set(c["derived_from"]) == {a, b})
    assert consolidate.archive_step(low) in [consolidate.archive_step(m) for m in plan["archive_candidates"]]
    again = consolidate.consolidate(svc.access, ctx, dry_run=True, scope="project")
    assert summary["step"] in [c["step"] for c in again["consolidated_memories"]], "step names are stable"
    done = consolidate.apply_steps(svc.access, ctx, steps=[summary["step"], "archive:memory:gone"], scope="project")
    applied = done["applied"]
    assert applied["steps"] == [summary["step"]] and len(applied["created"]) == 1
    assert applied["not_found"] == ["archive:memory:gone"]
    assert svc.get(ctx, a)["status"] == "consolidated" and svc.get(ctx, b)["status"] == "consolidated"
    assert svc.get(ctx, low)["status"] == "active", "a step not approved is not applied"
    with pytest.raises(Exception, match="steps"):
        consolidate.apply_steps(svc.access, ctx, steps="all", scope="project")  # type: ignore[arg-type]


def test_a_ui_search_pages_to_its_last_match_and_filters_status_inside_recall(svc, project) -> None:
    """120 memories match: the pages reach every one with the right total (recall alone ranks at
    most 50, from 100 candidates per strategy), and an archived match that ranks below the first
    50 is found by the status filter, which is in recall's candidates, not applied to its best 50."""
    ctx = RequestContext(project)
    ids = [
        _store(svc, ctx, f"quokka migration note {i}: the island census counted {i * 7} animals", importance=0.9)
        for i in range(115)
    ]
    weak = [_store(svc, ctx, f"quokka rumour {i}, never checked", importance=0.01) for i in range(5)]
    for i in range(20):
        _store(svc, ctx, f"Unrelated: the build cache lives in bucket {i}")
    h = svc.handle(ctx, "project")
    keys = [m.split(":", 1)[1] for m in weak]
    h.repo.set_status(keys, "archived")
    for k in keys:
        h.index.set_status(k, "archived")
    seen: list[str] = []
    page, result = 1, None
    while True:
        result = browse.search(svc.access, ctx, query="quokka census animals", limit=20, page=page)
        seen += [m["id"] for m in result["memories"]]
        if result["next_page"] is None:
            break
        page += 1
    assert set(ids) <= set(seen) and len(seen) == len(set(seen)), "every match once, across the pages"
    assert result["total_matched"] == len(seen) and result["pages"] == page and page >= 6
    everything = browse.search(svc.access, ctx, query="quokka census animals", status="all", limit=50)
    assert not set(weak) & {m["id"] for m in everything["memories"]}, "the archived ones rank below the first 50"
    archived = browse.search(svc.access, ctx, query="quokka census animals", status="archived", limit=50)
    assert {m["id"] for m in archived["memories"]} == set(weak) and archived["total_matched"] == 5
    before = svc.get(ctx, ids[0])
    assert before["access_count"] == 0, "a UI search strengthens nothing"


def test_the_ui_operations_go_through_the_daemon(daemon, ctx) -> None:
    for op, args in (("quality", {}), ("sessions", {}), ("consolidate_steps", {"steps": []}), ("search", {"query": "x"})):
        reply = daemon_request(daemon, op, args, ctx)
        assert reply["ok"], reply


def test_the_plan_clusters_as_comparing_every_pair_does() -> None:
    """The consolidation plan's clustering keeps only similar pairs (one block of rows at a
    time) instead of the whole matrix: the groups must be those of the pairwise greedy pass."""
    import types

    import numpy as np

    rng = np.random.default_rng(7)
    centres = rng.standard_normal((12, 16)).astype(np.float32)
    mat = centres[rng.integers(0, 12, 700)] + 0.45 * rng.standard_normal((700, 16)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    vectors = types.SimpleNamespace(has=lambda s: s % 50 != 3, get=lambda s: mat[s])  # a few without vectors
    idx = types.SimpleNamespace(vectors=vectors)

    def pairwise(threshold: float) -> list[list[int]]:
        slots = [s for s in range(700) if vectors.has(s)]
        sims = mat[slots] @ mat[slots].T
        free, out = set(range(len(slots))), []
        for i in range(len(slots)):
            if i in free:
                members = [j for j in sorted(free) if sims[i, j] >= threshold]
                free -= set(members)
                if len(members) >= consolidate.MIN_CLUSTER:
                    out.append([slots[j] for j in members])
        return out

    shared = consolidate._Similar(idx, np.arange(700), 0.6)
    for threshold in (0.6, 0.85):
        expected = pairwise(threshold)
        assert expected and any(len(c) > 2 for c in expected), "the data has clusters to find"
        assert consolidate._clusters(idx, np.arange(700), threshold) == expected
        assert shared.clusters(threshold) == expected
    monkey = consolidate.CLUSTER_BLOCK_ROWS
    try:
        consolidate.CLUSTER_BLOCK_ROWS = 37  # blocks that do not divide the rows
        assert consolidate._clusters(idx, np.arange(700), 0.6) == pairwise(0.6)
    finally:
        consolidate.CLUSTER_BLOCK_ROWS = monkey
