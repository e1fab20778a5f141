"""An old value and its replacement, stored as two live memories that nothing links, are not
both injected (issue 33's stale exposure): the start block and the prompt hook show the newer
one only, recall still returns both. `fact_diff.outdates` decides; it must not hide a distinct
item that merely reads alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram_mcp.core.ids import short_id
from engram_mcp.services import context, fact_diff, hook_ops
from engram_mcp.services.access import RequestContext

REPO = Path(__file__).resolve().parents[1]

OLD_TOOL = (
    "Local containers for the billing service run in Podman on this laptop, socket at "
    "/run/user/1000/podman/podman.sock; set DOCKER_HOST before the integration tests."
)
NEW_TOOL = (
    "I removed the old setup this week: local containers for the billing service use Rancher "
    "Desktop instead of Podman, and its socket is linked to /var/run/docker.sock."
)

SIGN_OFF = (
    "Changes to the billing ledger (services/ledger-core) need a sign-off from Ingrid Solberg in finance before merge."
)
SIGN_OFF_HANDED_OVER = "Finance sign-offs for ledger-core go to Tomasz Zielinski from Monday; he has taken over the ledger from the finance side."

OLD_CI_BOX = "Nightly builds run on the Jenkins box jenkins-2.corp; its logs are under /var/log/jenkins."
NEW_CI_BOX = (
    "We handed the Jenkins box back to infra last week. Nightly builds run on the Buildkite agent "
    "bk-agent-4.corp, logs in the Buildkite UI."
)


# ------------------------------------------------------------------ the rule
@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        # a value of one kind written over another, close pair, change word
        ("The SDK is pinned to 4.2.0 for every service.", "The SDK is now pinned to 4.6.0 for every service.", 0.8),
        (
            "Alice reviews every change to the billing schema.",
            "Bob now reviews every change to the billing schema.",
            0.7,
        ),
        # a related pair far below the dedup threshold: the newer text displaces the older value
        (OLD_TOOL, NEW_TOOL, 0.45),
        ("Secrets come from Vault for the api repo.", "Secrets: we use Bitwarden instead of Vault from today.", 0.4),
        # a thing retired in one sentence, its replacement (of the same kind) in another: the
        # older memory's own values are never named again
        (OLD_CI_BOX, NEW_CI_BOX, 0.5),
        (
            "Staging runs on the Hetzner box stg-1.corp; deploy with `make stage`.",
            "We sold the Hetzner box. Staging is on fly.io as acme-stg.fly.dev, deploy with `make stage`.",
            0.6,
        ),
        # the old way taken away ("took the GPG keys off the build boxes"), the new one beside it
        (
            "Releases are signed with the GPG key on the build box ci-7.corp; see keys/README.",
            "The release pipeline signs with Sigstore now, through the cosign step in release.yml. Ops took "
            "the GPG keys off the build boxes last week, so the old way will not work any more.",
            0.5,
        ),
        # the subject changed how it does something, the old way never named again
        (
            "The nightly export comes from Acme over SFTP, sftp.acme.io:/out, with the key ~/.ssh/acme.",
            "Acme have switched to uploading the export into our Wasabi bucket instead, under exports/acme/.",
            0.45,
        ),
        # a role handed on, the old holder never named again: the handover sentence (or the one
        # before it, for "he") brings the new holder and shares the role's words and its thing
        (SIGN_OFF, SIGN_OFF_HANDED_OVER, 0.45),
        # a new value beside "now", though the older text says "now" of something else
        (
            "Now send a test event: POST to /v1/events with the key in X-Api-Key. Ingest now keeps the body.",
            "The client SDK 3.0 posts to /v2/batch now, same X-Api-Key header, plus a `meta` JSON part.",
            0.6,
        ),
        # a thing going away ("the vault goes away on Friday"), its replacement a value of its kind
        (
            "Deploy credentials come from the KeyPass vault kp-prod-2; unlock it with kp unlock first.",
            "We moved deploy credentials to the Vaultwarden org vw-deploy; the kp-prod-2 vault goes away on Friday.",
            0.4,
        ),
        # a change that also says when it starts to hold
        ("The API listens on port 8080.", "From now on the API listens on port 9090 instead.", 0.8),
    ],
)
def test_a_changed_value_outdates_the_older_memory(old, new, similarity):
    assert fact_diff.outdates(old, new, similarity)


@pytest.mark.parametrize(
    ("old", "new", "similarity"),
    [
        # two items that read alike, no change: both stay
        (
            "Tomasz owns the gateway protocol; changes need his review.",
            "Run buf generate after a change in proto/.",
            0.5,
        ),
        ("Runbook 12: restart the gateway with make gw.", "Runbook 21: restart the gateway with make gw.", 0.9),
        # "X now uses Y": the subject is no displaced value
        (
            "The router lives in src/routes.ts and serves /api.",
            "src/routes.ts now uses createRouter, and /health is served too.",
            0.45,
        ),
        # unrelated: below the floor, whatever the words
        ("Secrets come from Vault for the api repo.", "Secrets: we use Bitwarden instead of Vault from today.", 0.2),
        # a paraphrase adds no value of a kind the older lacks
        ("Always run the linter before pushing.", "Before you push, always run the linter now.", 0.9),
        # something retired that the older memory never named
        (OLD_CI_BOX, "The old Mac mini went back to IT. Nightly iOS builds run on gannet.local.", 0.4),
        # "decommissioned" naming a thing, not a change, in a sentence that names someone of the older
        (
            "Hanna signs off the wording of every release; write to hanna@acme.io.",
            "Push to staging so Hanna sees the badge, then check the decommissioned demo site at demo.acme.dev.",
            0.5,
        ),
        # the subject changed something, but no name of the older memory's kind went out
        (
            "Acme sends the nightly export at 02:00 UTC; Dana there is the contact.",
            "Acme have switched to uploading the export at 03:00 instead.",
            0.45,
        ),
        # a retirement sentence about something else than the name the two share
        (
            "Staging runs on the Hetzner box stg-1.corp; deploy with `make stage`.",
            "Hetzner invoices go to finance@acme.io. The old office printer was sold.",
            0.45,
        ),
        # someone took over another role: it shares no thing the older sentence's role is about
        (SIGN_OFF, "Tomasz Zielinski has taken over the office move; ask him about desks in finance.", 0.45),
        (SIGN_OFF, "Tomasz Zielinski has taken over the ledger-core on-call rota; page him for outages.", 0.45),
        # a value added beside "now also" changes nothing that stood
        (
            "Now send a test event: POST to /v1/events with the key in X-Api-Key. Ingest now keeps the body.",
            "Now the ingest also accepts /v2/batch, same X-Api-Key header.",
            0.6,
        ),
        # a date is nobody who held a role, and nothing retired ("gets wiped on Friday")
        (
            "Release notes go out on Friday; Ingrid Solberg proofreads them.",
            "The staging box gets wiped on Friday. Tomasz has taken over the release notes from finance.",
            0.45,
        ),
        # a rule's start ("from now on") is no change word: another ticket and PR in a report of
        # the same kind of work change nothing the older memory stated
        (
            "Security changes need Priya Raman's review before they merge; she owns the auth module. Outcome: "
            "Committed as `fix(auth): expire refresh tokens` with the `Refs: ACME-412` trailer and opened PR #77.",
            "A house rule for all my branches: the PR description lists the manual checks that were done. Outcome: "
            "I'll write every PR description that way from now on. Committed with the `Refs: ACME-430` trailer "
            "and opened PR #81.",
            0.6,
        ),
        # "FYI" opens notes of every kind: a box wiped beside it retired no "FYI" the older note shares
        (
            "FYI the compose file publishes Postgres on host port 55433, not 5432; my Homebrew Postgres sits on 5432.",
            "FYI, orca is being wiped tomorrow. My new build box is narwhal (10.1.2.3); use it for heavy builds "
            "from now on.",
            0.37,
        ),
        # a retirement retires what its own clause names, not the project named before a colon
        (
            "It's the Ansible playbook — `ansible-playbook ansible/ferry.yml --limit ferry-stg` — and afterwards you "
            "watch journalctl -u quaywatch until the agents have reconnected.",
            "Org change: Dana moved over to live-ops this week. Outcome: One scope item from quaywatch: nas-07 is "
            "being retired, so artifact uploads had to move to Ceph (s3://ferry-artifacts) this week.",
            0.38,
        ),
    ],
)
def test_a_distinct_item_or_a_paraphrase_outdates_nothing(old, new, similarity):
    assert not fact_diff.outdates(old, new, similarity)


# ------------------------------------------------------------------ injection, with the real model
def _later(ctx: RequestContext) -> RequestContext:
    """A later session of the same project: the prompt hook never shows a session what it wrote."""
    return RequestContext(ctx.project_root, "sess-later")


def _stored_in_a_session(svc, project, session_id: str, content: str, type: str = "semantic") -> str:
    """A project memory stored in a session of its own, ended (and so promoted) before the next."""
    ctx = RequestContext(project, session_id)
    svc.session_start(ctx)
    memory_id = svc.store(ctx, content=content, type=type, scope="project")["memory_id"]
    svc.session_end(ctx)
    return memory_id


def test_the_start_block_and_the_prompt_hook_show_the_newer_memory_only(real_service, ctx):
    svc = real_service
    old = svc.store(ctx, content=OLD_TOOL, type="semantic", scope="project")
    new = svc.store(ctx, content=NEW_TOOL, type="semantic", scope="project")
    assert old["action"] == new["action"] == "created"
    assert new.get("supersedes") is None  # below the dedup threshold: nothing links the two
    old_id, new_id = old["memory_id"], new["memory_id"]

    block = svc.context(ctx, task_description="run the billing integration tests", strengthen=False)
    assert "Rancher" in block["context_block"] and "podman.sock" not in block["context_block"]

    prompt = hook_ops.prompt_context(svc.access, _later(ctx), prompt="how do local containers run for the billing service?")
    assert prompt.get("memory_ids") and old_id not in prompt["memory_ids"]

    found = svc.recall(ctx, query="local containers billing service socket", limit=5, strengthen=False)
    ids = [m["id"] for m in found["memories"]]
    assert old_id in ids and new_id in ids  # recall still returns both: only injection chooses


def test_a_retired_machine_leaves_the_start_block(real_service, project):
    """'The Jenkins box was decommissioned', with the new agent in the next sentence: from then on the
    block shows the new box only, in the next session too."""
    svc = real_service
    old_id = _stored_in_a_session(svc, project, "sess-ci-1", OLD_CI_BOX)
    second = RequestContext(project, "sess-ci-2")
    svc.session_start(second)
    new_id = svc.store(second, content=NEW_CI_BOX, type="semantic", scope="project")["memory_id"]
    block = svc.context(second, task_description="why did the nightly build fail", strengthen=False)["context_block"]
    assert short_id(new_id) in block and short_id(old_id) not in block and "jenkins-2.corp" not in block
    svc.session_end(second)
    third = RequestContext(project, "sess-ci-3")
    svc.session_start(third)
    block = svc.context(third, task_description="set up the nightly build", strengthen=False)["context_block"]
    assert "bk-agent-4.corp" in block and "jenkins-2.corp" not in block


RELEASE_SIGNED_ON_OLD_BOX = (
    "Release builds: `make release`, then `make publish` uploads dist/ to the package index. The signing step "
    "runs on the Jenkins box (jenkins-2.corp), which holds the key."
)
BOX_HANDED_BACK = (
    "We handed the Jenkins box back to infra last week. The new nightly agent is bk-agent-4.corp; its logs are in "
    "the Buildkite UI."
)


def test_a_line_that_names_a_retired_machine_names_the_one_that_came(real_service, project):
    """A sentence that ends a thing ("We handed the Jenkins box back") names nothing in its place;
    the next one says what came ("The new nightly agent is ..."). A line that names the box after
    its point stays, and its change note quotes both: "handed back" alone left the reader with a
    box that is gone and no word of where the work runs now (the month replay's held-out world:
    "mistral is being wiped tomorrow. My new build box is sirocco")."""
    svc = real_service
    release_id = _stored_in_a_session(svc, project, "sess-box-1", RELEASE_SIGNED_ON_OLD_BOX, type="procedural")
    _stored_in_a_session(svc, project, "sess-box-2", BOX_HANDED_BACK)
    assert "jenkins" in fact_diff.displacements(RELEASE_SIGNED_ON_OLD_BOX, BOX_HANDED_BACK)

    third = RequestContext(project, "sess-box-3")
    out = hook_ops.prompt_context(svc.access, third, prompt="Cut the release and publish it to the package index.")
    lines = [x for x in (out["additional_context"] or "").splitlines() if short_id(release_id) in x]
    assert lines, out
    assert "changed since" in lines[0] and "handed the Jenkins box back" in lines[0], lines[0]
    assert "bk-agent-4.corp" in lines[0], lines[0]


def test_a_newer_user_memory_outdates_a_project_memory(real_service, ctx):
    """ "I moved to another tool" is said once, for every repo: it outdates what a project memory
    said about the old one."""
    svc = real_service
    old_id = svc.store(ctx, content=OLD_TOOL, type="semantic", scope="project")["memory_id"]
    svc.store(ctx, content=NEW_TOOL, type="semantic", scope="user")
    block = svc.context(ctx, task_description="run the billing integration tests", strengthen=False)
    assert "Rancher" in block["context_block"] and short_id(old_id) not in block["context_block"]


def test_a_user_memory_promoted_from_a_project_is_outdated_there_by_its_newer_memory(real_service, tmp_path):
    """A turn that taught a personal rule beside a project fact carried the project fact on to the
    user scope; when this project's value changes, that user copy is stale here, and only here. What
    the user stated for every project stands whatever one project's memories say."""
    from engram_mcp.services import promotion

    svc = real_service
    project = tmp_path / "billing"
    (project / ".git").mkdir(parents=True)
    first = RequestContext(project, "sess-1")
    svc.session_start(first)
    carried = hook_ops.capture(
        svc.access,
        first,
        content=OLD_TOOL,
        type="semantic",
        importance=0.6,
        category=promotion.TURN_KNOWLEDGE_CATEGORY,
        tags=["hook"],
        source={"hook": "Stop"},
        metadata={"promote_to": "user"},
    )["memory_id"]
    svc.session_end(first)
    stated = svc.store(
        first,
        content="On my machines Podman runs rootless for local containers, through `podman machine` with 4 CPUs.",
        type="semantic",
        scope="user",
    )["memory_id"]
    user_ids = {m["id"] for m in svc.recall(first, query=OLD_TOOL, scope="user", strengthen=False)["memories"]}
    assert user_ids == {carried, stated}  # carried on to the user scope, under its own id
    second = RequestContext(project, "sess-2")
    svc.session_start(second)
    svc.store(second, content=NEW_TOOL, type="semantic", scope="project")
    task = "run the billing integration tests with local containers"
    block = svc.context(second, task_description=task, strengthen=False)["context_block"]
    key = short_id(carried)  # the project and user copies keep the session memory's id
    assert "Rancher" in block and key not in block
    assert short_id(stated) in block  # stated for every project: no project memory outdates it
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    there = svc.context(RequestContext(other, "sess-other"), task_description=task, strengthen=False)
    assert key in there["context_block"]  # another project has no newer word on it


@pytest.mark.parametrize("new_scope", ["project", "user"])
def test_a_block_built_before_the_change_does_not_keep_the_old_answer(real_service, ctx, new_scope):
    """`outdated` answers are kept per index until a memory changes (`ScopeIndex.derived`): the
    newer memory stored after a block was built (in the same scope or the user's) must count at
    the next block, and a memory forgotten since must stop hiding the old one."""
    svc = real_service
    old_id = svc.store(ctx, content=OLD_TOOL, type="semantic", scope="project")["memory_id"]
    task = "run the billing integration tests"
    before = svc.context(ctx, task_description=task, strengthen=False)["context_block"]
    assert short_id(old_id) in before  # nothing newer yet: the old memory is shown (and its answer kept)
    new_id = svc.store(ctx, content=NEW_TOOL, type="semantic", scope=new_scope)["memory_id"]
    after = svc.context(ctx, task_description=task, strengthen=False)["context_block"]
    assert "Rancher" in after and short_id(old_id) not in after
    svc.forget(ctx, memory_id=new_id)
    again = svc.context(ctx, task_description=task, strengthen=False)["context_block"]
    assert short_id(old_id) in again


#: A memory whose point is another fact, naming the replaced tool after it (a turn written down).
MIXED = (
    "The billing integration suite runs with `go test -tags integration ./...` and starts the gwsim "
    "simulator image through testcontainers, so local containers must be up first. Local containers "
    "for the billing service run in Podman on this laptop, so DOCKER_HOST points at the Podman socket."
)


SUITE_WITH_ASIDE = (
    "The billing integration suite runs with `go test -tags integration ./...` against the gwsim simulator. "
    "Context: containers run in Podman on this laptop, so DOCKER_HOST points at the Podman socket and Ryuk is off."
)
MOVE_RESTATING_THE_ASIDE = NEW_TOOL + " The gwsim container starts through it with no DOCKER_HOST, and Ryuk is back on."


def test_a_change_that_restates_a_memorys_aside_does_not_hide_its_point(real_service, ctx):
    """The newer text names most of the older one's values (gwsim, DOCKER_HOST, Ryuk, Podman),
    but all of them from its aside: the point (the suite's command) is nowhere in it. Hidden for
    that overlap, the command was lost (the month replay: the integration suite after the move
    from Colima); it stays, and its line carries the change."""
    svc = real_service
    mixed_id = svc.store(ctx, content=SUITE_WITH_ASIDE, type="procedural", scope="project")["memory_id"]
    svc.store(ctx, content=MOVE_RESTATING_THE_ASIDE, type="semantic", scope="project")
    assert fact_diff.outdates(SUITE_WITH_ASIDE, MOVE_RESTATING_THE_ASIDE, 0.6)
    assert fact_diff.about_same(SUITE_WITH_ASIDE, MOVE_RESTATING_THE_ASIDE)  # most of its values are named
    out = hook_ops.prompt_context(svc.access, _later(ctx), prompt="Run the billing integration suite with the gwsim image.")
    lines = [x for x in (out["additional_context"] or "").splitlines() if short_id(mixed_id) in x and x.startswith("- [")]
    assert lines, out
    assert "-tags integration" in lines[0] and "changed since" in lines[0] and "Rancher" in lines[0], lines[0]


def test_a_memory_that_names_the_replaced_value_after_its_point_stays_with_the_change_on_its_line(real_service, ctx):
    """Hidden whole, its live point (how the suite runs) was lost with the passing mention; it
    stays, and its line carries the newer sentence, so the old value never stands alone."""
    svc = real_service
    mixed_id = svc.store(ctx, content=MIXED, type="procedural", scope="project")["memory_id"]
    svc.store(ctx, content=NEW_TOOL, type="semantic", scope="project")
    assert fact_diff.outdates(MIXED, NEW_TOOL, 0.6)  # the filter's reading: a value it states changed
    out = hook_ops.prompt_context(svc.access, _later(ctx), prompt="Run the billing integration suite with the gwsim image.")
    lines = [x for x in (out["additional_context"] or "").splitlines() if short_id(mixed_id) in x and x.startswith("- [")]
    assert lines, out
    assert "changed since" in lines[0] and "Rancher" in lines[0], lines[0]


def test_a_handed_over_role_names_its_old_holder_as_displaced_on_the_line():
    """The old holder's line carries the handover sentence (a memory that names the holder after
    its point stays, with the change beside the name)."""
    found = fact_diff.displacements(SIGN_OFF, SIGN_OFF_HANDED_OVER)
    assert set(found) == {"ingrid", "solberg"}
    assert "Tomasz Zielinski" in found["ingrid"] and "taken over" in found["ingrid"]
    assert not fact_diff.displacements(
        SIGN_OFF, "Ingrid Solberg has taken over the ledger-core sign-offs from finance."
    )


def test_a_line_never_quotes_a_memory_that_is_itself_outdated(real_service, project):
    """A builds here in 12 minutes; B built on kestrel "in 2 minutes instead of 12"; then kestrel was
    wiped for osprey. A's line must not quote B: its sentence brings kestrel back into the block."""
    svc = real_service
    sessions = iter(f"sess-quote-{n}" for n in range(3))
    texts = [
        "Fresh clone setup: run `make deps` before anything else, it fetches the vendored SDKs. The "
        "release build then takes 12 minutes on this laptop.",
        "Synced the tree to the build box kestrel and built the release there: 2 minutes instead of 12.",
        "Hardware news: kestrel gets wiped on Friday. My new build box is osprey (`ssh osprey`, 64 cores), "
        "use it for anything heavy from now on.",
    ]
    laptop, kestrel, osprey = (_stored_in_a_session(svc, project, next(sessions), text) for text in texts)
    ctx = RequestContext(project, "sess-quote-last")
    svc.session_start(ctx)
    block = svc.context(ctx, task_description="do a release build", strengthen=False)["context_block"]
    assert short_id(laptop) in block and short_id(osprey) in block
    assert short_id(kestrel) not in block and "kestrel" not in block.replace("kestrel gets wiped", "")


def test_a_rule_learnt_on_a_retired_box_outlives_the_box(real_service, project):
    """An episode told first ("the cross build on kestrel failed in openssl-sys") and the rule it
    taught ("from now on keep openssl-sys out of the tree"): the rule is the memory's point, so
    the box being wiped leaves it in the block, its line carrying the change. A memory whose rule
    is the box itself ("from now on heavy builds go to kestrel") is still hidden."""
    svc = real_service
    sessions = iter(f"sess-rule-{n}" for n in range(3))
    lesson = _stored_in_a_session(
        svc,
        project,
        next(sessions),
        "The cross build on kestrel first failed in openssl-sys: reqwest's default features pull in native-tls, "
        "and the cross image has no aarch64 OpenSSL. I switched reqwest to rustls-tls. From now on keep "
        "openssl-sys out of the tree: any HTTP or TLS crate gets default features off and its rustls-tls feature. "
        "(On the way: `ssh kestrel 'cross build --release'` failed.)",
        type="episodic",
    )
    box = _stored_in_a_session(
        svc,
        project,
        next(sessions),
        "My laptop is fanless, so release and cross builds go to my Linux box: `ssh kestrel`. From now on I'll "
        "send heavy builds to kestrel.",
    )
    wiped = _stored_in_a_session(
        svc,
        project,
        next(sessions),
        "Hardware news: kestrel gets wiped on Friday. My new build box is osprey (`ssh osprey`, 64 cores), "
        "use it for anything heavy from now on.",
    )
    ctx = RequestContext(project, "sess-rule-last")
    svc.session_start(ctx)
    block = svc.context(ctx, strengthen=False)["context_block"]
    assert short_id(wiped) in block and short_id(box) not in block, block
    lines = [x for x in block.splitlines() if short_id(lesson) in x]
    assert lines and "changed since" in lines[0] and "osprey" in lines[0], block


def test_an_episodes_start_line_shows_the_rule_it_taught(real_service, ctx):
    """A fix written down tells the failure first and the rule after the line's cut; the start
    block's line keeps the failure's start and then the rule (`excerpt.with_lesson`). A fact's
    line still shows its head."""
    svc = real_service
    event = (
        "Some driver reminders failed after Friday's deploy: last week's change added `channel` as a required "
        "positional parameter, but reminders are queued with an ETA hours or days ahead, and messages queued by "
        "the previous release carry only [load_id], so every one of them failed with a TypeError. "
        "From now on, new parameters on existing Celery tasks are keyword-only with a default."
    )
    fix = svc.store(ctx, content=event, type="episodic", scope="project")["memory_id"]
    fact = svc.store(
        ctx,
        content=(
            "The staging web app runs on dd-stg-web01 behind the office VPN, with its gunicorn workers under the "
            "dd-gunicorn unit and Celery under dd-celery; both log to journald, and the box is rebuilt from the "
            "ansible inventory. From now on, read its logs with journalctl, not the old /var/log files."
        ),
        type="semantic",
        scope="project",
    )
    block = svc.context(_later(ctx), strengthen=False)["context_block"]
    line = next(x for x in block.splitlines() if short_id(fix) in x)
    assert "keyword-only with a default" in line and line.split("] ", 1)[1].startswith("Some driver reminders"), line
    fact_line = next(x for x in block.splitlines() if short_id(fact["memory_id"]) in x)
    assert "journalctl" not in fact_line and fact_line.endswith("…"), fact_line


def test_a_cut_line_keeps_the_successor_of_someone_it_says_moved_on():
    """A memory that says who left a role and, past its line's cut, who took it: the line names the
    successor too, or it tells Claude only of the old holder. A name's own move only: a story's
    "the pins moved from Marker to SymbolOptions" brings in no one."""
    filler = "The release train slipped a day because the signing step timed out twice on the old runner. " * 2
    moved = {
        "id": "memory:01TEST",
        "type": "semantic",
        "scope": "project",
        "content": f"Team news: Ragnhild moved over to the payments squad this week. Outcome: {filler}"
        "Context: Dmitri Volkov is our release manager from Monday, so release sign-offs go to him now.",
    }
    line = context.memory_line(moved)
    assert "…" in line and "Ragnhild" in line and "Dmitri Volkov is our release manager" in line
    story = dict(moved, content=f"Asked Ragnhild about the map: {filler} The pins moved from Marker to SymbolOptions.")
    assert "SymbolOptions" not in context.memory_line(story)
    whole = dict(moved, content="Ragnhild moved over to payments. Dmitri Volkov is release manager now.")
    assert context.memory_line(whole).count("Dmitri") == 1  # nothing cut, nothing added


def test_a_report_of_using_a_fact_does_not_outdate_it():
    """A turn that used the coordinator and reports what happened ("timed out because the VPN was
    stopped") reads as a changed value to `compare` (was + new values), but states no change: the
    coordinator's address stays in the block. Said with a change word beyond a report's words
    ("any more"), it does outdate."""
    coordinator = "The live build coordinator is hive-9.corp: HTTP API on 7420, and agents use gRPC on 7421."
    report = (
        "How's the coordinator's queue? Outcome: curl to hive-9.corp timed out because the VPN was stopped; "
        "after `vpn up` the queue had 4 jobs and no agent was offline."
    )
    assert fact_diff.compare(coordinator, report).relation == fact_diff.REPLACES
    assert not fact_diff.outdates(coordinator, report, 0.6)
    podman = "Docker runs in Podman here; DOCKER_HOST points at the podman socket in /run/user/1000."
    moved = (
        "Its socket is ~/.rd/docker.sock and it links /var/run/docker.sock itself, so no DOCKER_HOST tricks any more."
    )
    assert fact_diff.outdates(podman, moved, 0.6)


def test_a_line_cut_inside_a_sentence_carries_the_change_of_a_value_that_sentence_states():
    """The cut fell inside "Context: Wrap it: kp exec ..., and KeyPass fills them in": the line
    states that sentence, so the newer memory that retires KeyPass is quoted on it. A value only in
    a later sentence, past the cut, is not the line's."""
    from engram_mcp.services import context

    padding = "I never keep credentials in the shell or in dotfiles, whatever the repo or the task, ever. " * 2
    mem = {
        "id": "memory:01OLD",
        "type": "semantic",
        "scope": "project",
        "created_at": "2026-06-01T09:00:00Z",
        "content": f"{padding}Context: Wrap it: kp exec --profile=deploy -- <command>, and KeyPass fills them in. "
        "Staging keys are separate.",
    }
    newer = {
        "id": "memory:01NEW",
        "type": "semantic",
        "scope": "project",
        "created_at": "2026-06-20T09:00:00Z",
        "content": "Secrets: we moved to Vaultwarden with vw run, the KeyPass vault goes away on Friday.",
    }
    line = context.memory_line(mem, newer=[newer])
    head = line.split("[changed")[0]
    assert "…" in head and "KeyPass" not in head
    assert f"[changed since, {short_id('memory:01NEW')}: Secrets: we moved to Vaultwarden" in line
    later = dict(
        mem,
        content=f"{padding}Context: Wrap it with kp exec. "
        + "Filler words to pass the cut. " * 6
        + "KeyPass fills them in.",
    )
    assert "changed since" not in context.memory_line(later, newer=[newer])


#: Notes whose point is another fact, naming a tool in passing, and the user's later word that the
#: tool went away: 0.35 and 0.24 in cosine, below the bar at which a newer memory hides an older.
EXPORT_NOTE = (
    "Exports to the county portal are never re-run by hand on Fridays. Outcome: the weekly export runs as "
    "`op run --env-file=.env.op -- ./export.sh --county`, with the portal token from 1Password."
)
PASSWORD_MANAGER_GONE = (
    "Heads up: the team dropped 1Password last week, secrets live in Infisical now. Anything that needs "
    "credentials runs as `infisical run -- <cmd>`."
)
E2E_NOTE = (
    "The checkout e2e suite is flaky on Monday mornings because the staging seed job runs at 09:00; rerun it "
    "after 09:30. Context: run it locally with `nvm use 20 && npx playwright test checkout/`."
)
NODE_MANAGER_GONE = (
    "Oh, right: I replaced nvm with Volta on the laptop last week, nvm is uninstalled. `volta install node@20` "
    "picks the version up and the shims handle the rest."
)


@pytest.mark.parametrize(
    ("note", "change", "new_value", "task"),
    [
        (EXPORT_NOTE, PASSWORD_MANAGER_GONE, "Infisical", "Run the weekly county export."),
        (E2E_NOTE, NODE_MANAGER_GONE, "Volta", "The checkout e2e suite failed again, rerun it."),
    ],
)
def test_a_line_carries_the_change_of_its_value_though_no_pool_holds_the_memory_that_made_it(
    real_service, ctx, note, change, new_value, task
):
    """The note stays (its point is live) and its line quotes the change, found among the note's
    own newer neighbours. Before, a line found its change only among the strongest memories and
    those that rank for change words; the month replay's worlds had notes that named a replaced
    password manager or version manager in passing stand uncorrected in later start blocks. Here
    decay archived the change (unused for weeks) while the note kept being shown: no pool
    offers it, and the old value is no less replaced."""
    svc = real_service
    note_id = svc.store(ctx, content=note, type="semantic", scope="project")["memory_id"]
    change_id = svc.store(ctx, content=change, type="semantic", scope="user")["memory_id"]
    user = svc.handle(ctx, "user")
    key = change_id.split(":", 1)[1]
    user.repo.set_status([key], "archived")
    user.index.set_status(key, "archived")
    block = svc.context(ctx, task_description=task, strengthen=False)["context_block"]
    prompt = hook_ops.prompt_context(svc.access, _later(ctx), prompt=task)["additional_context"] or ""
    for text in (block, prompt):
        lines = [x for x in text.splitlines() if short_id(note_id) in x]
        assert lines, text
        assert f"[changed since, {short_id(change_id)}:" in lines[0] and new_value in lines[0], lines[0]


# ------------------------------------------------------------------ an amount restated in its role
TWO_RULES = (
    "One more for the box office: make the refund export stream rows instead of building one big CSV, and keep "
    "the rule that a cart holds reserved tickets for 20 minutes. And put a TODO(ak) on each of the leftover "
    "moment.js calls; that's how I tag all my TODOs, so I can grep for mine."
)
CART_SHORTER = (
    "From the box office meeting: tickets in a cart are only reserved for 8 minutes now, because abandoned "
    "carts blocked the Friday shows. CART_TTL in config/cart.ts reads it."
)


@pytest.mark.parametrize(
    ("old", "new", "displaced"),
    [
        (TWO_RULES, CART_SHORTER, {"20"}),
        ("Uploads over 25 MB are refused by the gateway.", "The gateway now refuses uploads over 100 MB.", {"25"}),
        # a run's timing has no unit word; another thing's amount; no word of change; the same amount
        ("The suite passed in 19.03s on CI.", "The suite now passes in 12.40s on CI.", set()),
        ("Nightly backups are kept for 30 days.", "Deploy logs are now kept for 14 days.", set()),
        ("Sessions expire after 30 days.", "I checked staging: sessions expire after 14 days there.", set()),
        ("Sessions expire after 30 days.", "Sessions now expire after 30 days for admins too.", set()),
    ],
)
def test_an_amount_restated_in_its_role_is_displaced(old, new, displaced):
    """A sentence of the newer memory that gives the older one's amount another number of its unit,
    in the same role (content words shared) and said as a change: the older value is displaced,
    though neither text names the other's value and the two are too far apart for `compare`."""
    assert set(fact_diff.displacements(old, new)) == displaced
    for value in displaced:
        assert any(amount in fact_diff.displacements(old, new)[value] for amount in ("8 minutes", "100 MB"))


def test_a_memory_of_two_facts_shows_the_new_amount_on_its_line_and_keeps_the_other_fact(real_service, ctx):
    """A memory that states an amount beside another rule is not hidden by the newer memory that
    changes the amount (the rule still holds), and no line shows the old amount alone: the line
    carries the sentence with the new one."""
    svc = real_service
    mixed_id = svc.store(ctx, content=TWO_RULES, type="semantic", scope="project")["memory_id"]
    svc.store(ctx, content=CART_SHORTER, type="semantic", scope="project")
    block = svc.context(ctx, task_description="how long does a cart keep reserved tickets", strengthen=False)["context_block"]
    lines = [x for x in block.splitlines() if short_id(mixed_id) in x and x.startswith("- [")]
    assert lines, block
    assert "20 minutes" in lines[0] and "changed since" in lines[0] and "8 minutes" in lines[0], lines[0]


TTL_RULE = (
    "One more. test/auth/session_test.exs hard-codes 30 minutes, but the rule is that a session token expires "
    "after 60 minutes. Outcome: Sessions now read `config :auth, :session_ttl` (`:timer.minutes(60)` in "
    "`config/config.exs`); the attribute with 30 minutes is gone and the test asserts against the config value."
)
TTL_SHORTER = (
    "Straight from this morning's security review with the compliance team, for the new audit period: a session "
    "token now expires after 5 minutes of idle time. Outcome: Sessions now read `:timer.minutes(5)` from "
    "`config :auth, :session_ttl` in `config/config.exs`, and the test asserts against the same config value."
)


def test_a_change_that_states_the_new_amount_is_quoted_whole():
    """The sentence of change says the new amount ("expires after 5 minutes"): a one-digit number is
    no value token, so the quote was cut short to make room for a sentence of the same config,
    and the cut took the new amount with it."""
    found = fact_diff.displacements(TTL_RULE, TTL_SHORTER)
    assert found
    for value, sentence in found.items():
        assert "after 5 minutes of idle time" in context._correction_quote(
            TTL_RULE, TTL_SHORTER, sentence, value, shown={value}
        )


def test_what_an_amount_displaces_does_not_depend_on_the_process():
    """The readings' order decides which sentence a line quotes; read from a set of amounts, it
    followed the process's string hashing, and one replay's line quoted another sentence than the
    next one's. The order is the older text's."""
    code = (
        "import json, sys; from engram_mcp.services import fact_diff; "
        "print(json.dumps(list(fact_diff._amounts_restated(sys.argv[1], sys.argv[2]))))"
    )
    old = "The cart test hard-codes 10 minutes, but the rule is that checkout holds seats for 15 minutes."
    new = "Straight out of the ops meeting: seats in checkout are only held for 7 minutes now."
    orders = {
        subprocess.run(
            [sys.executable, "-c", code, old, new],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.strip()
        for seed in range(8)
    }
    assert orders == {json.dumps(["10", "15"])}
