"""Store-time dedup never swallows a changed fact and never crosses a boundary (issues 32, 33).

With the real model: the pairs below sit above the dedup threshold (checked in each test, so a
pair that drifts below it fails instead of passing for the wrong reason), and the outcome is
read back through recall and get, as a user would see it.
"""

from __future__ import annotations

import pytest

STG2 = "The staging cluster is nomad-stg-2; deploy previews there."
STG3 = "The staging cluster is nomad-stg-3 (was stg-2); deploy previews there."
PORT_OLD = "The payments API gateway listens on port 8443."
PORT_NEW = "The payments API gateway now listens on port 9443 (moved from 8443)."
FACT_7 = "Fact 7: the Redis cache is monitored by the on-call rota; see OPS-1007 for details."
FACT_97 = "Fact 97: the Redis cache is monitored by the on-call rota; see OPS-1097 for details."


def _threshold(svc, ctx) -> float:
    return svc.access.config(ctx.project_root).store_dedup_similarity


def _cosine(svc, a: str, b: str) -> float:
    va, _ = svc.access.embed_query(a)
    vb, _ = svc.access.embed_query(b)
    return float(va @ vb)


def _near_duplicates(svc, ctx, a: str, b: str) -> None:
    """The pair is above the dedup threshold: without the fact test it would be merged."""
    assert _cosine(svc, a, b) >= _threshold(svc, ctx), (a, b)


def _ids(recall: dict) -> list[str]:
    return [m["id"] for m in recall["memories"]]


# ------------------------------------------------------------------ the token-level rule
@pytest.mark.parametrize(
    ("old", "new", "relation"),
    [
        (STG2, STG3, "replaces"),
        (PORT_OLD, PORT_NEW, "replaces"),
        (FACT_7, FACT_97, "differs"),
        ("Local containers run on colima.", "Local containers run on orbstack.", "replaces"),
        ("Priya owns the billing rota.", "Marcus owns the billing rota.", "replaces"),
        ("The SDK is pinned to 4.2.0.", "The SDK is pinned to 4.6.0 now.", "replaces"),
        ("Always run the linter before pushing.", "Before you push, always run the linter.", "same"),
        ("Use pnpm, never npm, in this repo.", "In this repo use pnpm and never npm.", "same"),
        ("Alice reviews DB migrations.", "Bob reviews DB migrations.", "replaces"),
        ("We run containers with podman.", "We run containers with lima.", "replaces"),
        ("Session tokens expire after 6 hours.", "After 6 hours a session token expires.", "same"),
        ("Cut branches from main.", "Cut branches from develop (was main).", "replaces"),
        ("Runbook 12: restart the gateway with make gw.", "Runbook 21: restart the gateway with make gw.", "differs"),
    ],
)
def test_compare_reads_the_fact_tokens_that_changed(old, new, relation):
    from engram_mcp.services import fact_diff

    assert fact_diff.compare(old, new).relation == relation


def test_a_detail_the_older_text_never_stated_is_no_swap():
    """Adding a value of a kind the older text has none of is elaboration, not a correction."""
    from engram_mcp.services import fact_diff

    verdict = fact_diff.compare("Register every Room migration.", "Register every Room migration, as 3.6.1 did.")
    assert verdict.relation == "same"


# ------------------------------------------------------------------ through the store, real model
def test_a_corrected_value_supersedes_and_recall_returns_the_new_text(real_service, ctx):
    svc = real_service
    _near_duplicates(svc, ctx, STG2, STG3)
    old = svc.store(ctx, content=STG2, type="semantic", scope="project")["memory_id"]
    new = svc.store(ctx, content=STG3, type="semantic", scope="project")
    assert new["action"] == "created" and new["memory_id"] != old
    assert new["supersedes"] == old
    assert svc.get(ctx, new["memory_id"])["content"] == STG3
    for query in ("nomad-stg-3", "which staging cluster", "which staging cluster do previews deploy to"):
        found = svc.recall(ctx, query=query, limit=5, strengthen=False)
        assert _ids(found)[0] == new["memory_id"], query
        assert old not in _ids(found), query  # superseded: hidden by default


def test_a_moved_port_is_a_new_memory_and_update_supersedes_works(real_service, ctx):
    svc = real_service
    _near_duplicates(svc, ctx, PORT_OLD, PORT_NEW)
    old = svc.store(ctx, content=PORT_OLD, type="semantic", scope="project")["memory_id"]
    new = svc.store(ctx, content=PORT_NEW, type="semantic", scope="project")
    assert new["action"] == "created" and new["memory_id"] != old
    assert svc.get(ctx, old)["content"] == PORT_OLD and svc.get(ctx, new["memory_id"])["content"] == PORT_NEW
    svc.update(ctx, new["memory_id"], supersedes=old)  # no "a memory cannot supersede itself"
    found = svc.recall(ctx, query="payments gateway port", limit=5, strengthen=False)
    assert _ids(found)[0] == new["memory_id"] and old not in _ids(found)


def test_an_explicit_supersedes_never_merges_into_the_memory_it_replaces(real_service, ctx):
    svc = real_service
    old = svc.store(ctx, content=PORT_OLD, type="semantic", scope="project")["memory_id"]
    again = PORT_OLD.replace("listens", "only listens")
    _near_duplicates(svc, ctx, PORT_OLD, again)
    new = svc.store(ctx, content=again, type="semantic", scope="project", supersedes=old)
    assert new["action"] == "created" and new["memory_id"] != old


def test_two_items_that_read_alike_stay_two_without_supersession(real_service, ctx):
    svc = real_service
    _near_duplicates(svc, ctx, FACT_7, FACT_97)
    seven = svc.store(ctx, content=FACT_7, type="semantic", scope="project")["memory_id"]
    ninety_seven = svc.store(ctx, content=FACT_97, type="semantic", scope="project")
    assert ninety_seven["action"] == "created" and ninety_seven["memory_id"] != seven
    assert "supersedes" not in ninety_seven
    assert ninety_seven["possibly_supersedes"]["memory_id"] == seven  # only a hint
    assert _ids(svc.recall(ctx, query="OPS-1097", limit=3, strengthen=False))[0] == ninety_seven["memory_id"]
    assert _ids(svc.recall(ctx, query="OPS-1007", limit=3, strengthen=False))[0] == seven


def test_a_paraphrase_still_merges(real_service, ctx):
    svc = real_service
    a = "Always run the full test suite with pytest -q before pushing to main."
    b = "Before pushing to main, always run the full test suite with pytest -q."
    _near_duplicates(svc, ctx, a, b)
    first = svc.store(ctx, content=a, type="procedural", scope="project")["memory_id"]
    second = svc.store(ctx, content=b, type="procedural", scope="project")
    assert second["action"] == "merged" and second["memory_id"] == first


@pytest.mark.parametrize("kind", ["team-memory", "user-mirror", "markdown"])
def test_a_shared_or_imported_memory_and_a_private_one_are_never_merged(real_service, ctx, kind):
    svc = real_service
    shared = "Use pnpm, never npm or yarn, for installing JS dependencies in this repo."
    private = shared + " (Bob's private note: my npm token lives in ~/.npmrc.)"
    _near_duplicates(svc, ctx, shared, private)
    mine = svc.store(ctx, content=private, type="procedural", scope="project", source={"tool": "cli"})
    theirs = svc.store(ctx, content=shared, type="procedural", scope="project", source={"kind": kind, "path": "a.md"})
    assert theirs["action"] == "created" and theirs["memory_id"] != mine["memory_id"]
    assert svc.get(ctx, theirs["memory_id"])["content"] == shared  # exactly what was shared
    assert svc.get(ctx, mine["memory_id"])["content"] == private
    # and the other way round: a private store never merges into the shared memory
    again = svc.store(ctx, content=shared + " Really.", type="procedural", scope="project", source={"tool": "cli"})
    assert again["action"] == "created"
    assert svc.get(ctx, theirs["memory_id"])["content"] == shared


# ------------------------------------------------------------------ the CLI, through the real daemon
@pytest.mark.slow
def test_cli_store_supersedes_and_superseded_marks_in_list_and_status(tmp_path) -> None:
    import json

    from tests.daemon_env import make_env

    env = make_env(tmp_path)
    try:
        def j(*args: str) -> dict:
            return json.loads(env.cli("--json", *args).stdout)

        old = j("store", PORT_OLD, "--type", "semantic")["memory_id"]
        j("store", "Deploy previews go to the staging cluster.", "--type", "semantic")  # a live one beside
        # an explicit replacement of a different text
        new = j("store", "Internal payments traffic uses port 9443.", "--type", "semantic", "--supersedes", old)
        assert new["action"] == "created"
        found = j("recall", "payments gateway port", "--limit", "5")
        assert old not in [m["id"] for m in found["memories"]]
        # list marks the replaced memory; status counts live and superseded
        listed = env.cli("list").stdout
        line = next(ln for ln in listed.splitlines() if "8443" in ln)
        assert "superseded" in line
        project = j("status")["scopes"]["project"]
        assert project["superseded"] == 1 and project["live"] == 2
        assert "1 superseded" in env.cli("status").stdout
    finally:
        env.shutdown()


@pytest.mark.slow
def test_cli_recall_no_strengthen_leaves_access_counts_alone(tmp_path) -> None:
    import json

    from tests.daemon_env import make_env

    env = make_env(tmp_path)
    try:
        def j(*args: str) -> dict:
            return json.loads(env.cli("--json", *args).stdout)

        mid = j("store", "Deploy previews go to the staging cluster.", "--type", "semantic")["memory_id"]
        before = j("show", mid)["access_count"]
        assert j("recall", "deploy previews staging", "--no-strengthen")["memories"][0]["id"] == mid
        assert j("show", mid)["access_count"] == before
        j("recall", "deploy previews staging")  # a plain recall counts the access
        assert j("show", mid)["access_count"] > before
    finally:
        env.shutdown()


def test_promotion_never_merges_a_changed_fact_into_the_older_text(real_service, ctx):
    """The twin finder every merge goes through (store and promotion) refuses a changed fact."""
    svc = real_service
    old = svc.store(ctx, content=STG2, type="semantic", scope="project")["memory_id"]
    draft = svc.store(ctx, content=STG3, type="semantic", scope="session")["memory_id"]
    promoted = svc.promote(ctx, draft, "project")
    assert promoted["action"] == "created" and promoted["target_id"] != old
    assert svc.get(ctx, old)["content"] == STG2 and svc.get(ctx, promoted["target_id"])["content"] == STG3
    # the same fact reworded still merges on promotion
    same = svc.store(ctx, content="Deploy previews there: the staging cluster is nomad-stg-2.", type="semantic",
                     scope="session")["memory_id"]
    _near_duplicates(svc, ctx, STG2, "Deploy previews there: the staging cluster is nomad-stg-2.")
    assert svc.promote(ctx, same, "project")["action"] == "merged"


def test_two_team_files_are_never_merged_into_one_memory(real_service, ctx):
    """Fact 7 and Fact 97 arriving as two team files stay two memories, each its own text."""
    svc = real_service
    a = svc.store(ctx, content=FACT_7, type="semantic", scope="project", source={"kind": "team-memory", "path": "t/7.md"})
    same = svc.store(ctx, content=FACT_7, type="semantic", scope="project", source={"kind": "team-memory", "path": "t/7b.md"})
    b = svc.store(ctx, content=FACT_97, type="semantic", scope="project", source={"kind": "team-memory", "path": "t/97.md"})
    assert len({a["memory_id"], same["memory_id"], b["memory_id"]}) == 3
    assert "supersedes" not in b and "supersedes" not in same
    assert _ids(svc.recall(ctx, query="OPS-1097", limit=3, strengthen=False))[0] == b["memory_id"]


def test_engram_store_says_what_dedup_did():
    """The human answer of `engram store` names the replaced memory, or why a twin was kept apart."""
    from engram_mcp.interfaces.cli import render_stored

    base = {"action": "created", "memory_id": "memory:NEW", "scope": "project", "type": "semantic", "warnings": []}
    near = {"memory_id": "memory:OLD", "similarity": 0.93, "not_merged_because": "origin: a shared file ..."}
    assert "replaces memory:OLD" in render_stored({**base, "supersedes": "memory:OLD", "near_duplicate": near})
    assert "kept apart from memory:OLD (0.93): origin" in render_stored({**base, "near_duplicate": near})
