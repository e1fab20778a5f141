"""At session end a memory Claude stored supersedes an older one only when it changes a value the
older memory states as its fact (`fact_diff.outdates`, and the newer text covers the older
memory's facts): a memory that shares one value kind, a rule about a unit, or a procedure that
names a tool in passing stays live beside the newer memory (real model, real SurrealDB)."""

from __future__ import annotations

import pytest

from engram_mcp.services.service import RequestContext

pytestmark = pytest.mark.slow

# (older memory, newer memory stored in a later session): the older one must stay live
KEPT = {
    "unrelated memory sharing a version": (
        "The staging load balancer for the ledger service sits at 10.22.7.41 and runs agent 3.1.0; "
        "point smoke tests at it.",
        "The minimum agent version goes up from 3.1.0 to 3.5.0 next week: hosts with older agents are refused.",
    ),
    "a rule about a unit vs a schedule in that unit": (
        "Rule: every timestamp the jobs write is tz-aware and in UTC, never local time.",
        "The nightly Grafana export job moves to 05:45 UTC, away from the backup window.",
    ),
    "a procedure naming a tool in passing": (
        "To run the payments integration tests: start Podman, export DOCKER_HOST, run make itest, then "
        "read the report in build/itest.html. Flaky tests go in the quarantine list.",
        "We moved from Podman to Rancher Desktop for local containers on every laptop; Podman is uninstalled.",
    ),
}
# (older memory, newer memory): the newer one supersedes the older
REPLACED = {
    "a port change": (
        "The billing API listens on port 7080 on every host.",
        "The billing API moved to port 7443; 7080 is closed now.",
    ),
    "a version bump": (
        "The minimum agent version is 3.1.0: older agents are refused.",
        "The minimum agent version is now 3.5.0 (up from 3.1.0): older agents are refused.",
    ),
    "a tool swap": (
        "Local containers on the laptops run in Podman.",
        "We moved from Podman to Rancher Desktop for local containers on every laptop; Podman is uninstalled.",
    ),
}


CLAUDE = {"origin": "claude"}


def _two_sessions(
    svc,
    project,
    old: str,
    new: str,
    *,
    old_scope: str = "project",
    old_type: str = "semantic",
    old_source=CLAUDE,
    new_source=CLAUDE,
    importance: float | None = 0.7,
) -> tuple[str, str]:
    """`old` stored in one session (in `old_scope`), `new` in the project scope in the next; each
    session ended (promotion runs). `importance` None stores both at the default."""
    weight = {} if importance is None else {"importance": importance}
    ids = []
    for session, content, scope, type_, source in (
        ("sess-old", old, old_scope, old_type, old_source),
        ("sess-new", new, "project", "semantic", new_source),
    ):
        ctx = RequestContext(project, session)
        svc.session_start(ctx)
        stored = svc.store(ctx, content=content, type=type_, scope=scope, source=source, **weight)
        ids.append(stored["memory_id"])
        svc.session_end(ctx)
    return ids[0], ids[1]


def _other_project(tmp_path):
    """A second repository of the same user."""
    other = tmp_path / "other-project"
    (other / ".git").mkdir(parents=True)
    return other


#: A user memory that holds two things, and a project memory that changes one of them.
OP_RUN_AND_BUCKET = (
    "I never keep creds in the shell: anything that needs credentials runs through 1Password, "
    "`op run --env-file=.env.op -- <cmd>`, and the orbit-feeds bucket is production, treat it so."
)
SOPS_CHANGE = (
    "Secrets: we've moved to SOPS-encrypted env files with age keys, the 1Password vault goes away "
    "on Friday. Anything that needs credentials runs as `sops exec-env secrets.enc.env '<cmd>'`."
)


def _credentials_seen_from_another_project(svc, tmp_path) -> tuple[str, list[dict]]:
    """What a session in another project of the user's is shown at its start, and what recall
    finds there for a command that needs credentials."""
    other = _other_project(tmp_path)
    ctx = RequestContext(other, "sess-other")
    svc.session_start(ctx)
    block = svc.context(ctx, strengthen=False)["context_block"]
    found = svc.recall(RequestContext(other), query="run a command that needs credentials", strengthen=False)
    return block, found["memories"]


def _live(svc, project, memory_id: str, query: str) -> bool:
    found = svc.recall(RequestContext(project), query=query, strengthen=False)["memories"]
    return memory_id in [m["id"] for m in found]


@pytest.mark.parametrize("case", sorted(KEPT))
def test_an_older_memory_that_is_not_about_the_changed_value_stays_live(real_service, project, case):
    old, new = KEPT[case]
    old_id, new_id = _two_sessions(real_service, project, old, new)
    assert _live(real_service, project, new_id, new)
    assert _live(real_service, project, old_id, old), case


@pytest.mark.parametrize("case", sorted(REPLACED))
def test_a_stated_change_of_the_older_memorys_value_supersedes_it(real_service, project, case):
    old, new = REPLACED[case]
    old_id, new_id = _two_sessions(real_service, project, old, new)
    assert _live(real_service, project, new_id, new)
    assert not _live(real_service, project, old_id, old), case


def test_a_project_memory_that_replaces_a_user_memory_goes_on_to_the_user_scope_and_supersedes_it(
    real_service, project, tmp_path
):
    """The user's secrets came from Doppler (stated for every project); in one project's session
    Claude stores that they left Doppler for Infisical. That replacement held wherever the old memory did: it reaches
    the user scope, the old one is superseded there, and another project no longer sees it."""
    svc = real_service
    old_id, _ = _two_sessions(
        svc,
        project,
        "Local secrets come from Doppler: run commands as `doppler run -- <cmd>`, never from .env files.",
        "We've left Doppler: secrets now come from Infisical, run commands as `infisical run --env=dev -- <cmd>`.",
        old_scope="user",
        importance=None,
    )
    other = _other_project(tmp_path)
    found = svc.recall(RequestContext(other), query="how do I get secrets for a command", strengthen=False)["memories"]
    contents = [m["content"] for m in found]
    assert any("Infisical" in c for c in contents), contents
    assert old_id not in [m["id"] for m in found], contents


def test_a_project_memory_scoped_to_this_repository_leaves_the_users_own_way_alone(real_service, project, tmp_path):
    """Red-team finding: Claude stored the plain project fact "This repository uses npm instead of
    pnpm"; at session end it went to the user scope and superseded the user's "I use pnpm for all
    my JS projects" in every project. A statement scoped to this repository is its exception."""
    svc = real_service
    old_id, _ = _two_sessions(
        svc,
        project,
        "I use pnpm, never npm or yarn, to install dependencies in all my JS projects.",
        "This repository uses npm instead of pnpm: install with `npm ci`, the lockfile is package-lock.json.",
        old_scope="user",
        old_type="procedural",
        old_source={"origin": "user", "tool": "cli"},
        importance=None,
    )
    other = _other_project(tmp_path)
    found = svc.recall(RequestContext(other), query="how do I install JS dependencies", strengthen=False)["memories"]
    assert old_id in [m["id"] for m in found], [m["content"] for m in found]
    assert not any("package-lock.json" in m["content"] for m in found if m["scope"] == "user")


def test_a_project_memory_that_changes_part_of_a_user_memory_goes_on_to_the_user_scope_beside_it(
    real_service, project, tmp_path
):
    """The user's memory holds two things (secrets through `op run`, and the feed bucket is
    production); in one project Claude stores that the 1Password vault goes away for SOPS, as a
    project fact. It changes a value the user's memory states, so it goes on to the user scope:
    another project's block shows the change, and never the old tool without it. The older memory
    is not superseded (its other half still holds: recall finds it)."""
    svc = real_service
    old_id, new_id = _two_sessions(
        svc,
        project,
        OP_RUN_AND_BUCKET,
        SOPS_CHANGE,
        old_scope="user",
        importance=None,
    )
    block, found = _credentials_seen_from_another_project(svc, tmp_path)
    assert old_id in [m["id"] for m in found], "the older memory is not superseded"
    assert "SOPS" in block, block
    assert "op run" not in block or "[changed since" in block, block
    assert new_id in [m["id"] for m in svc.recall(RequestContext(project), query="sops", strengthen=False)["memories"]]


def test_a_project_change_that_shares_no_value_with_the_users_memory_stays_in_the_project(
    real_service, project, tmp_path
):
    """A project's own move ("the staging database moved to db-stg-02") changes nothing the user
    said of themself: it stays in the project, and another project never sees it."""
    svc = real_service
    _two_sessions(
        svc,
        project,
        "I never keep creds in the shell: anything that needs credentials runs through `op run -- <cmd>`.",
        "The staging database moved from db-stg-01 to db-stg-02; credentials are unchanged.",
        old_scope="user",
        importance=None,
    )
    other = _other_project(tmp_path)
    found = svc.recall(RequestContext(other), query="staging database host", strengthen=False)["memories"]
    assert not any("db-stg-02" in m["content"] for m in found), [m["content"] for m in found]


def test_a_teammates_change_of_a_users_value_stays_in_the_project(real_service, project, tmp_path):
    """Trust boundary: the change of the test above, but written by a teammate (a team file read
    into the project during the session). Someone else's text never reaches the user's own scope
    by promotion, whatever it displaces: another project still shows the user's own way, and no
    line of the teammate's. (Two guards hold this: the carry rule reads only what Claude or the
    user wrote, and `check_user_scope` refuses a team file's memory; the test fails only when
    both are gone.)"""
    svc = real_service
    old_id, _ = _two_sessions(
        svc,
        project,
        OP_RUN_AND_BUCKET,
        SOPS_CHANGE,
        old_scope="user",
        new_source={"kind": "team-file", "path": ".claude/engram/team/secrets.md", "author": "mallory"},
        importance=None,
    )
    block, found = _credentials_seen_from_another_project(svc, tmp_path)
    assert old_id in [m["id"] for m in found]
    assert "SOPS" not in block and "sops exec-env" not in block, block
    assert not any("SOPS" in m["content"] for m in found), [m["content"] for m in found]
