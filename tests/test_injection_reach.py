"""Issue 33, injection: the start block's short lines, the prompt hook showing a cut memory whole,
the user's knowledge of every kind at a session start, and the prompt block's token ceiling."""

from __future__ import annotations

from engram_mcp.core.ids import short_id
from engram_mcp.services import context, fact_diff, hook_ops
from engram_mcp.services.service import RequestContext

# A memory written the way a turn is written down: its point first, the values that make it
# later (the port and host come after ~300 characters).
LONG_FACT = (
    "Heads up for the billing service: the staging database is the shared one that the data team "
    "also uses, so migrations there need a heads-up in their channel before they run, and nothing "
    "destructive goes in without a backup taken the same day. Context: it listens on port 6544 "
    "on host pg-stage-2."
)


def test_a_memory_cut_in_the_start_block_is_shown_whole_when_a_prompt_needs_it(real_service, project):
    first = RequestContext(project, "sess-a")
    real_service.store(first, content=LONG_FACT, type="semantic", scope="project", importance=0.7)
    second = RequestContext(project, "sess-b")
    start = hook_ops.session_start(real_service.access, second)
    block = start["additional_context"] or ""
    assert "staging database" in block and "6544" not in block  # shown, cut before its values
    out = hook_ops.prompt_context(
        real_service.access, second, prompt="connect to the billing staging database and run the migration"
    )
    shown = out["additional_context"] or ""
    assert "6544" in shown and "pg-stage-2" in shown, shown
    # once shown whole it is not repeated
    again = hook_ops.prompt_context(
        real_service.access, second, prompt="run the billing staging database migration again"
    )
    assert "6544" not in (again["additional_context"] or "")


def test_a_prompt_shows_an_unseen_memory_before_one_the_start_block_showed_cut(real_service, project):
    """With room for one line, the memory Claude has not seen wins over the start block's cut one
    (which recall ranks first here: it matches the prompt's words more)."""
    real_service.store(RequestContext(project, "sess-a"), content=LONG_FACT, type="semantic", scope="project")
    second = RequestContext(project, "sess-b")
    assert "6544" not in (hook_ops.session_start(real_service.access, second)["additional_context"] or "")
    real_service.store(  # learnt in another session while this one runs: not in its start block
        RequestContext(project, "sess-c"),
        content="Billing staging migrations: run `make migrate-stage` from the ops checkout, never by hand.",
        type="procedural",
        scope="project",
    )
    prompt = "heads up: run the billing staging database migrations, the shared staging database"
    found = hook_ops.recall(real_service.access, second, query=prompt, limit=5, strengthen=False)
    assert "6544" in found["memories"][0]["content"]  # recall alone would show the cut one first
    out = hook_ops.prompt_context(real_service.access, second, prompt=prompt, max_tokens=160)
    shown = out["additional_context"] or ""
    assert "make migrate-stage" in shown and "6544" not in shown, shown


def test_a_memory_shown_whole_at_the_start_is_not_repeated_by_the_prompt_hook(real_service, project):
    first = RequestContext(project, "sess-a")
    real_service.store(
        first,
        content="The billing staging database listens on port 6544.",
        type="semantic",
        scope="project",
        importance=0.7,
    )
    second = RequestContext(project, "sess-b")
    assert "6544" in (hook_ops.session_start(real_service.access, second)["additional_context"] or "")
    out = hook_ops.prompt_context(
        real_service.access, second, prompt="which port does the billing staging database use"
    )
    assert "6544" not in (out["additional_context"] or "")


def test_the_users_episodic_knowledge_reaches_a_session_start(real_service, project):
    """A root cause the user keeps for every repository is episodic (found after a failing
    command); the user's section used to take semantic and procedural memories only."""
    ctx = RequestContext(project, "sess-a")
    real_service.store(
        ctx,
        content="Secrets are never in .env files on my machine: wrap commands in `vault-run --`, "
        "the ingest failed without it.",
        type="episodic",
        scope="user",
        importance=0.7,
    )
    block = hook_ops.session_start(real_service.access, RequestContext(project, "sess-b"))["additional_context"] or ""
    assert "vault-run" in block, block


def test_the_prompt_block_stays_under_its_token_ceiling(real_service, project):
    ctx = RequestContext(project, "sess-a")
    for i in range(3):
        real_service.store(
            ctx, content=f"Billing export {i}: " + LONG_FACT, type="semantic", scope="project", importance=0.7
        )
    out = hook_ops.prompt_context(
        real_service.access, RequestContext(project, "sess-b"), prompt="billing staging database migration heads-up"
    )
    assert out["additional_context"], out
    assert out["tokens"] <= hook_ops.PROMPT_MAX_TOKENS
    assert context.estimate_tokens(out["additional_context"]) <= hook_ops.PROMPT_MAX_TOKENS


OLD_PROCEDURE = (
    "We always backfill the energy marts with the orchestrator's CLI (as usual under `keyvex run`), one daily partition per call, "
    "never from the web UI because a UI run cannot be scripted or reviewed; check the row counts "
    "against the raw tables after each run."
)
NEW_SECRETS = (
    "Secrets now come from Sealbox, `sealbox run --env=dev -- <command>`, in every repo. "
    "I'll use sealbox run instead of Keyvex everywhere."
)


def test_a_line_quoting_a_replaced_value_carries_its_replacement(real_service, project):
    """The backfill procedure is still true; only the wrapper it mentions in passing changed. It is
    no near neighbour of the newer memory, so nothing hides it: its line carries the change."""
    ctx = RequestContext(project, "sess-a")
    real_service.store(ctx, content=OLD_PROCEDURE, type="procedural", scope="project", importance=0.7)
    real_service.store(ctx, content=NEW_SECRETS, type="semantic", scope="user", importance=0.7)
    block = hook_ops.session_start(real_service.access, RequestContext(project, "sess-b"))["additional_context"] or ""
    [line] = [x for x in block.splitlines() if "keyvex run" in x.lower() and "backfill" in x]
    assert "changed since" in line and "sealbox run instead of keyvex" in line.lower(), line
    out = hook_ops.prompt_context(
        real_service.access, RequestContext(project, "sess-c"), prompt="backfill the pipeline partitions for last week"
    )
    for shown in (out["additional_context"] or "").splitlines():
        if "keyvex run" in shown.lower():
            assert "sealbox run" in shown.lower(), shown


#: Memories of other subjects, each stronger than the change below: the pool of the strongest misses it.
FILLERS = [
    f"Subject {i}: the {noun} review happens on {day}s and its notes live in docs/{noun}.md."
    for i, (noun, day) in enumerate(
        (n, d)
        for n in ("billing", "search", "onboarding", "alerts", "exports", "pricing", "mobile")
        for d in ("Monday", "Tuesday", "Wednesday", "Thursday")
    )
]


def test_a_change_ranked_below_the_strongest_still_reaches_the_line_it_corrects(real_service, project):
    """The change is weak (low importance, many stronger memories): the pool of the strongest does
    not hold it, yet the line that mentions the replaced value carries it, at the start and on a
    prompt; and the start block's note does not keep the prompt hook from showing the change itself."""
    ctx = RequestContext(project, "sess-a")
    real_service.store(ctx, content=OLD_PROCEDURE, type="procedural", scope="project", importance=1.0)
    for text in FILLERS:
        real_service.store(ctx, content=text, type="semantic", scope="project", importance=1.0, dedup=False)
    new_id = real_service.store(ctx, content=NEW_SECRETS, type="semantic", scope="project", importance=0.05)[
        "memory_id"
    ]
    strongest = {
        m["id"]
        for m in context.top_by_strength(real_service.access, ctx, ["project", "user"], None, context.CORRECTION_POOL)
    }
    assert new_id not in strongest  # the case: only the change pool finds it
    second = RequestContext(project, "sess-b")
    start = hook_ops.session_start(real_service.access, second)
    block = start["additional_context"] or ""
    [line] = [x for x in block.splitlines() if "keyvex run" in x.lower() and "backfill" in x]
    assert "sealbox run instead of keyvex" in line.lower(), line
    assert not [x for x in block.splitlines() if x.startswith(f"- [semantic, project, {new_id}]")]  # crowded out
    assert new_id not in hook_ops.INJECTED.shown("sess-b")[0]  # named by a note, not shown: not yet seen
    out = hook_ops.prompt_context(
        real_service.access, second, prompt="Start the dev server with its secrets from sealbox run --env=dev."
    )
    assert new_id in (out.get("memory_ids") or []), out


def test_a_newer_memory_that_replaces_nothing_the_line_states_adds_no_note(real_service, project):
    ctx = RequestContext(project, "sess-a")
    real_service.store(ctx, content=OLD_PROCEDURE, type="procedural", scope="project", importance=0.7)
    real_service.store(
        ctx,
        content="The dashboard now uses uPlot instead of Chart.js for the energy graphs.",
        type="semantic",
        scope="project",
        importance=0.7,
    )
    block = hook_ops.session_start(real_service.access, RequestContext(project, "sess-b"))["additional_context"] or ""
    assert "changed since" not in block, block


def test_spare_budget_goes_to_the_sections_in_proportion_to_what_they_lack():
    """The spare of an empty section is split by what each fuller section still lacks, not handed
    to the preferences first (which left the project's knowledge at its own share)."""
    shares = {"preferences": 1200, "project_context": 1680, "relevant_procedures": 960, "session_history": 960}
    needs = {"preferences": 2900, "project_context": 4000, "relevant_procedures": 1150, "session_history": 0}
    given = context._allowances(needs, shares)
    assert sum(given.values()) <= sum(shares.values()) + len(shares)
    lack_pref, lack_proj = needs["preferences"] - 1200, needs["project_context"] - 1680
    gain_pref, gain_proj = given["preferences"] - 1200, given["project_context"] - 1680
    assert gain_proj > gain_pref > 0
    assert abs(gain_proj / gain_pref - lack_proj / lack_pref) < 0.05
    # a section that needs less than its share keeps only what it needs, the rest goes on
    assert context._allowances({"preferences": 2900, "project_context": 100}, shares) == {
        "preferences": 2900,
        "project_context": 100,
    }


def test_a_person_replaced_in_a_role_is_noted_on_older_lines_that_name_them():
    """'Bodil reviews ... instead' with 'Astrid starts her leave' elsewhere in the newer text: an
    older line naming Astrid carries the change; a line naming nobody of the newer text does not."""
    from engram_mcp.services import fact_diff

    newer = (
        "Until then Bodil Ekwueme reviews everything billing-related instead. Outcome: the PR has Bodil "
        "as reviewer. Context: Astrid starts her parental leave today."
    )
    older = "The invoice export was talked through with Astrid yesterday: totals are rounded per line."
    unrelated = "The invoice export rounds totals per line and writes them to the exports bucket."
    assert set(fact_diff.displacements(older, newer)) == {"astrid"}
    assert fact_diff.displacements(unrelated, newer) == {}
    # the injection-time hiding rule is unchanged by it
    assert not fact_diff.outdates(older, newer, 0.5)


def test_the_prompt_block_leaves_room_for_the_stop_hooks_note(real_service, project):
    """The hook passes what the memory-check note leaves of the 300 tokens: the block fits in it, or
    is left out when not even one memory fits."""
    ctx = RequestContext(project, "sess-a")
    for i in range(3):
        real_service.store(
            ctx, content=f"Billing export {i}: " + LONG_FACT, type="semantic", scope="project", importance=0.7
        )
    prompt = "billing staging database migration heads-up"
    out = hook_ops.prompt_context(real_service.access, RequestContext(project, "sess-b"), prompt=prompt, max_tokens=170)
    assert out["additional_context"] and out["tokens"] <= 170, out
    none = hook_ops.prompt_context(real_service.access, RequestContext(project, "sess-c"), prompt=prompt, max_tokens=20)
    assert none["additional_context"] is None


def test_a_teammates_file_that_states_a_change_never_notes_the_users_line(real_service, project):
    """The change pool finds memories by their change words, team files included: a cloned
    repository's file saying "instead of Keyvex" must not write a note onto the user's own line
    (nor hide it), whatever it claims."""
    from engram_mcp.services import sharing
    from tests.git_repos import write_team_file

    ctx = RequestContext(project, "sess-a")
    real_service.store(ctx, content=OLD_PROCEDURE, type="procedural", scope="project", importance=0.7)
    write_team_file(project, "secrets.md", f"---\ntype: semantic\nimportance: 1.0\n---\n{NEW_SECRETS}\n")
    assert sharing.sync_project(real_service.access, ctx)["added"]
    changes = context.change_pool(real_service.access, ctx)
    assert any("sealbox" in m["content"].lower() for m in changes)  # the pool does hold the file
    block = hook_ops.session_start(real_service.access, RequestContext(project, "sess-b"))["additional_context"] or ""
    [line] = [x for x in block.splitlines() if "keyvex run" in x.lower() and "backfill" in x]
    assert "changed since" not in line, line


OLD_PRINTER = "The Zebra label printer in the Packing Room is at 172.20.4.33 (raw port 9100); print test labels there."
NEW_PRINTER = (
    "The Zebra moved to the Harbour Street depot on Monday. Outcome: updated the docs. "
    "Context: It answers at 172.20.6.8 now, same port."
)


def test_a_correction_quotes_the_new_value_when_the_sentence_of_change_does_not_name_it():
    """ "The Zebra moved to the Harbour Street depot" says that the address changed, not what it became: a line
    that quoted only that sentence still sent Claude to the old address."""
    [(value, sentence)] = fact_diff.displacements(OLD_PRINTER, NEW_PRINTER).items()
    quote = context._correction_quote(OLD_PRINTER, NEW_PRINTER, sentence)
    assert "moved to the Harbour Street depot" in quote and "172.20.6.8" in quote, quote
    # a sentence of change that names its new value is quoted alone
    named = "The label printer moved to 172.20.6.8 in the dispatch office."
    assert fact_diff.new_value_sentence(OLD_PRINTER, named + " It prints fine.", named) is None
    # a number of the newer memory's story is no new value of the change
    story = "Alice moved over to fares, so Bob owns the exports now. His first drop has 3104 overlapping trips."
    assert (
        fact_diff.new_value_sentence("Alice owns the exports; drop 2031 was clean.", story, story.split(". ")[0] + ".")
        is None
    )


SLIPS_PROCEDURE = (
    "Packing slips go out with the nightly batch: run `slips print --all`, which sends them to the Zebra in the Packing Room "
    "at 172.20.4.33 (raw port 9100), then check the count in its log against the day's orders."
)


def test_the_line_of_a_moved_thing_carries_its_new_address():
    """A procedure that names the printer's address in passing stays true and is shown; its line
    must say where the printer is now, not only that it moved."""
    old = {
        "id": "memory:01JAAAAAAAAAAAAAAAAAAAAAAA",
        "content": SLIPS_PROCEDURE,
        "category": "procedure",
        "scope": "project",
        "created_at": "2026-06-01T09:30:00Z",
    }
    new = {
        "id": "memory:01JBBBBBBBBBBBBBBBBBBBBBBB",
        "content": NEW_PRINTER,
        "category": "fact",
        "scope": "project",
        "created_at": "2026-06-08T09:30:00Z",
    }
    line = context.memory_line(old, newer=[new])
    assert "172.20.4.33" in line and f"changed since, {short_id('memory:01JBBBBBBBBBBBBBBBBBBBBBBB')}" in line, line
    assert "172.20.6.8" in line, line


def test_a_correction_quotes_the_new_name_or_person_and_a_number_set_anew_in_the_same_frame():
    """Three shapes of change the seventh month world showed stale: a build box retired in one sentence
    and its successor named in another ("My new build box is osprey"), a person's own move ("Dana
    moved over to platform") with the successor in a later sentence, and a number written anew in
    the same words ("the top 5 frames" -> "now the top 3 frames"). Each line carries the new value."""
    old_box = "Heavy builds and full test runs go to kestrel, my build box (ssh kestrel). Sync the tree over first."
    new_box = (
        "Hardware news: kestrel gets wiped on Friday. I'll send heavy builds and full test runs to osprey "
        "from now on. My new build box is osprey, 64 cores."
    )
    [(value, sentence)] = fact_diff.displacements(old_box, new_box).items()
    assert value == "kestrel"
    quote = context._correction_quote(old_box, new_box, sentence, value)
    assert "wiped" in quote and "heavy builds and full test runs to osprey" in quote, quote

    old_person = "This ticket grew. Our release manager is Dana Whitfield, who signs off on any slipped date."
    new_person = (
        "Org change: Dana moved over to platform this week. The storage move took two days, so nas-04 is retired. "
        "Priya Raman is our release manager from today, so dates go to her now. Draft for Priya: the release slips."
    )
    displaced = fact_diff.displacements(old_person, new_person)
    # displaced by her own move; quoted by the sentence that puts someone in her role, not the storage's
    assert displaced["dana"].startswith("Priya Raman is our release manager"), displaced
    # ... and a sentence that brings in the successor beside "instead" wins over one that names her again
    marta = "Opened PR #388 with Marta Kowalczyk as reviewer, because it touches billing/."
    moved = (
        "Heads up: Marta moved over to the data platform team this week. PR #391 was the only open PR "
        "waiting on Marta. It now has Sunil Rao as reviewer instead. Billing PRs will go to Sunil from now on."
    )
    [(value, sentence)] = fact_diff.displacements(marta, moved).items()
    quote = context._correction_quote(marta, moved, sentence, value)
    assert "Sunil Rao as reviewer" in quote and "#391" not in quote, quote

    old_rule = "What we agreed with QA: a signature is the top 5 frames of the crashing thread, normalised."
    new_rule = "QA asked for fewer splits, so we're changing the rule: a signature is now the top 3 frames."
    assert fact_diff.outdates(old_rule, new_rule, 0.6)
    assert "5" in fact_diff.displacements(old_rule, new_rule)
    # the same frame without a word of change is another statement, not a change
    other = "The triage page lists the top 3 frames of each crash next to its count."
    assert "5" not in fact_diff.displacements(old_rule, other)


def test_a_line_that_mentions_a_retired_machine_in_passing_carries_its_replacement(real_service, project):
    """A memory that names a build box in passing (a benchmark run on it) is no neighbour of the one
    that retired the box, and that one need not rank among the strongest: the change pool finds it by
    its retirement ("gets wiped on Friday"), so the line carries the successor."""
    a, b = RequestContext(project, "sess-a"), RequestContext(project, "sess-b")
    bench = (
        "Cook benchmarks: hyperfine with 3 warmups, report the median. Last release cook on kestrel: "
        "median 41.2 s over 10 runs."
    )
    real_service.store(a, content=bench, type="procedural", scope="project", importance=0.9)
    for i in range(30):  # stronger memories that fill the strongest-first pool
        real_service.store(
            a,
            content=f"Crash group {i} is owned by team {i} (ticket CR-{100 + i}).",
            type="semantic",
            scope="project",
            importance=1.0,
        )
    retired = (
        "Hardware news: kestrel gets wiped on Friday. I'll send heavy builds and benchmarks to osprey from now "
        "on. My new build box is osprey (ssh osprey), 64 cores."
    )
    real_service.store(b, content=retired, type="semantic", scope="project", importance=0.3)
    assert any("osprey" in m["content"] for m in context.change_pool(real_service.access, b))
    out = hook_ops.prompt_context(
        real_service.access, RequestContext(project, "sess-c"), prompt="run the cook benchmark again"
    )
    [line] = [x for x in (out["additional_context"] or "").splitlines() if "kestrel" in x and "hyperfine" in x]
    assert "changed since" in line and "osprey" in line, line


def test_a_cut_memory_by_far_the_closest_to_the_prompt_keeps_its_place_before_unseen_ones():
    """Unseen first, except a memory the start block showed cut that is CUT_LEAD_COSINE closer to the
    prompt than every unseen one: its values are what the prompt needs, past its cut."""
    cut = {"id": "memory:a", "similarity": 0.72}
    unseen = [{"id": "memory:b", "similarity": 0.40}, {"id": "memory:c", "similarity": 0.35}]
    assert [m["id"] for m in hook_ops._unseen_first([cut, *unseen], {"memory:a"})] == [
        "memory:a",
        "memory:b",
        "memory:c",
    ]
    near = dict(cut, similarity=0.55)
    assert [m["id"] for m in hook_ops._unseen_first([near, *unseen], {"memory:a"})] == [
        "memory:b",
        "memory:c",
        "memory:a",
    ]
    assert [m["id"] for m in hook_ops._unseen_first([near], {"memory:a"})] == ["memory:a"]  # nothing unseen


def test_a_change_that_names_the_new_tool_still_gets_the_sentence_with_its_command():
    """ "Toolchains are all on rtx now" names what replaced asdf, not how it is used: the quote adds
    the sentence with `rtx install`. Only a number or an identifier in the sentence of change is
    the new value itself."""
    old = "For the record, I manage JDKs with asdf, pinned per repo in .tool-versions. Gradle warned again."
    change = "Toolchains are all on rtx now, I moved everything over the weekend."
    new = f"{change} From now on: `rtx install` and rtx.toml for toolchains. Gradle finds Temurin 21 under rtx."
    for value in (None, "gradle"):
        assert "`rtx install`" in (fact_diff.new_value_sentence(old, new, change, value) or ""), value


def test_a_timing_in_another_memory_is_no_number_set_anew():
    """ "takes 4 s" and "now takes 42 s" share a verb and a unit, not a role: a build's timing does not
    change what a page's timing was (the seventh world: a keyset-paging memory carried a ccache
    build's sentence as its change)."""
    old = "The crash list takes 4 s on the prod snapshot because it pages with OFFSET; keyset paging fixed it."
    new = "A from-scratch build on tundra now takes 42 s with 203/214 remote hits."
    assert fact_diff.displacements(old, new) == {}


def _semantic(name: str, day: str, content: str) -> dict:
    """A project fact as a block line takes it: `memory:<name>`, created on `day` at 09:00 UTC."""
    return {
        "id": f"memory:{name}",
        "scope": "project",
        "type": "semantic",
        "created_at": f"{day}T09:00:00Z",
        "content": content,
    }


def test_a_line_showing_only_the_parts_of_a_retired_way_carries_its_replacement():
    """The older memory names the retired tool in a later sentence; its line shows only the command
    that went with it. The command is part of that way of doing things, so the line notes the change,
    with the newer memory's sentence that says what is done instead."""
    old = _semantic(
        "old",
        "2026-03-01",
        (
            "Credentials never go in the shell: run anything that needs them as `vaultwrap exec --profile=dev "
            "-- <command>`. The wrapper reads the team vault. Context: Wrap it: vaultwrap exec --profile=dev -- "
            "<command>, and Keyring Cloud fills them in. Nightly exports go to the reports bucket."
        ),
    )
    new = _semantic(
        "new",
        "2026-04-01",
        (
            "Secrets: we've moved to encrypted env files, the Keyring Cloud account goes away on Friday. "
            "Anything that needs credentials runs as `cryptenv run secrets.env -- <cmd>`."
        ),
    )
    line = context.memory_line(old, newer=[new], limit=120)
    shown = line.split(" [changed since")[0]
    assert "vaultwrap exec" in shown and "keyring cloud" not in shown.lower()  # cut before the tool
    assert f"[changed since, {short_id('memory:new')}:" in line, line
    assert "cryptenv run" in line.split(" [changed since")[1], line  # and says what came instead
    # a line that shows nothing of that way stays as it was
    other = dict(old, content="Nightly exports go to the reports bucket. Context: Keyring Cloud fills the creds in.")
    assert "changed since" not in context.memory_line(other, newer=[new], limit=40)


#: An older memory of background work on Celery, and the opening of the newer one that moves it to
#: Dramatiq (its sentence of change continues differently in each test below).
CELERY_RECEIPT_TASK = (
    "Send the receipt email from a background task. Outcome: Added ReceiptMailTask (Celery, queue "
    "`mail`) and checkout now enqueues it. Context: Background work here runs on Celery, with "
    "RabbitMQ on 5673 locally."
)
DRAMATIQ_MOVE = (
    "The queue migration is done: from today all background work runs on Dramatiq in Postgres and "
    "RabbitMQ is out of the stack. Outcome: Removed the celery package and its config, changed the "
    "worker line to `bin/worker`, "
)


def test_a_note_quotes_what_came_instead_when_the_sentence_of_change_only_removed_the_old():
    """The sentence that displaces the old tool removes it ("Removed the celery package ...") with
    other new values beside it; what took its place is said elsewhere, by name ("all background
    work runs on Dramatiq"). The note quotes that sentence, which shares what the old one said."""
    old = _semantic("old", "2026-03-01", CELERY_RECEIPT_TASK)
    new = _semantic("new", "2026-04-01", DRAMATIQ_MOVE + "and dropped the rabbitmq service from compose.yml.")
    line = context.memory_line(old, newer=[new])
    note = line.split(" [changed since", 1)[1]
    assert "celery" in note.lower() and "Dramatiq" in note, line


def test_what_the_sentence_of_change_names_because_it_ends_it_does_not_outweigh_what_came_instead():
    """The sentence that removes the old tool also names its parts (the package, its broker, the
    queue it fed): those are shared with the older memory because they ended, not because that
    sentence says what took their place. The note still quotes the one that names Dramatiq."""
    old = _semantic("old", "2026-03-01", CELERY_RECEIPT_TASK)
    new = _semantic(
        "new",
        "2026-04-01",
        DRAMATIQ_MOVE + "dropped the rabbitmq service from compose.yml, and moved the mail queue to `queue_as :mail`.",
    )
    line = context.memory_line(old, newer=[new])
    assert "Dramatiq" in line.split(" [changed since", 1)[1], line


def test_a_reviewer_handed_over_notes_only_lines_that_name_the_reviewer():
    """A role handed to someone else displaces the old holder's name, not the things the older
    memory said beside it: a line that shows only the file they reviewed carries no note."""
    old = _semantic(
        "old",
        "2026-03-01",
        (
            "The ledger export lives in billing/ledger.py and runs nightly at 02:00 from the ops cron host. "
            "It writes one CSV per entity. Context: billing/ledger.py changes are reviewed by Priya Raman first."
        ),
    )
    new = _semantic("new", "2026-04-01", "Priya Raman is on leave. Sunil Rao reviews billing PRs instead.")
    assert "changed since" not in context.memory_line(old, newer=[new], limit=60)
    assert "Sunil Rao" in context.memory_line(old, newer=[new])  # the line that names her does


def _recalled_in_a_later_session(
    svc, project, memories: list[tuple[str, str, float]], prompt: str
) -> tuple[RequestContext, list[dict]]:
    """Semantic memories (content, scope, importance) stored in one session, and recall's top 5 for
    `prompt` in the next: the context the prompt hook would answer in, and what it weighs."""
    first = RequestContext(project, "sess-a")
    for content, scope, importance in memories:
        svc.store(first, content=content, type="semantic", scope=scope, importance=importance)
    second = RequestContext(project, "sess-b")
    return second, hook_ops.recall(svc.access, second, query=prompt, limit=5, strengthen=False)["memories"]


def test_recalls_first_memory_for_a_plain_prompt_clears_a_lower_bar(real_service, project):
    """A plain prompt ("Open the pull request for the billing work.") is far in meaning from the rule
    it needs (cosine ~0.25, under the 0.30 bar); first in recall's fused ranking, it goes in. A
    memory that is not first still needs the configured bar."""
    rule = "Pull request descriptions in this repo always open with a Risk section: what could break in production."
    prompt = "Open the pull request for the billing work."
    second, found = _recalled_in_a_later_session(
        real_service,
        project,
        [
            (rule, "project", 0.7),
            ("The billing service stores money as integer cents, never floats.", "project", 0.7),
            ("The nightly export job writes CSV files to the reports bucket.", "project", 0.7),
        ],
        prompt,
    )
    bar = 0.30  # the default prompt_recall_min_relevance
    assert found[0]["content"] == rule and bar - hook_ops.FIRST_HIT_COSINE_DISCOUNT <= found[0]["similarity"] < bar
    shown = hook_ops.prompt_context(real_service.access, second, prompt=prompt)["additional_context"] or ""
    assert "Risk section" in shown, shown
    assert all(m["content"] not in shown for m in found[1:] if m["similarity"] < bar)
    # offered on the fused rank's word, not known to serve the work: not counted as used (what
    # clears the bar is, test_context), so it does not reorder later session starts
    assert real_service.get(second, found[0]["id"])["access_count"] == 0


def test_a_stricter_bar_stays_stricter_for_recalls_first_memory():
    """The first memory's allowance is relative to the configured bar, not a floor of its own."""
    assert hook_ops._clears_bar({"similarity": 0.25}, True, 0.30)
    assert not hook_ops._clears_bar({"similarity": 0.25}, False, 0.30)
    assert not hook_ops._clears_bar({"similarity": 0.25}, True, 0.50)
    assert hook_ops._clears_bar({"similarity": 0.45}, True, 0.50)


NVM_SETUP = (
    "Node for the web app comes from nvm: `nvm install` reads .nvmrc, and the build fails on any "
    "other major version."
)
FNM_MOVE = (
    "I switched the laptop to fnm this week, the old Node version manager is uninstalled. "
    "Outcome: `fnm install` read the same .nvmrc and the web build passes again."
)


def test_a_tool_replaced_by_its_kind_is_noted_with_the_command_that_came_instead():
    """The newer memory never names nvm ("the old Node version manager"), so no value of the older
    one is named beside a change; it runs the same subcommand with another tool, says a change
    beside that tool's name and speaks of the same things (the laptop's Node). The line carries
    the change and the command now run."""
    assert fact_diff.displacements(NVM_SETUP, FNM_MOVE).keys() == {"nvm"}
    old = {"id": "memory:old", "content": NVM_SETUP, "created_at": "2026-06-01T00:00:00Z", "scope": "project"}
    new = {"id": "memory:new", "content": FNM_MOVE, "created_at": "2026-06-20T00:00:00Z", "scope": "project"}
    line = context.memory_line(old, newer=[new])
    assert f"[changed since, {short_id('memory:new')}: I switched the laptop to fnm" in line, line
    assert "`fnm install`" in line
    # a note only: this reading hides nothing (the older memory's other facts stay live)
    assert not fact_diff.outdates(NVM_SETUP, FNM_MOVE, 0.40)


def test_another_tool_with_the_same_subcommand_is_no_replacement_unless_it_plays_the_same_part():
    # a wrapper ("-- <command>") is not a project's runner
    assert not fact_diff.displacements(
        "Tests run with `uv run pytest -q` from the repo root; the secrets come from the shell.",
        "Secrets now come from Doppler: `doppler run -- <command>` in every repo.",
    )
    # no word of change: one more tool, not another one
    assert not fact_diff.displacements(NVM_SETUP, "Outcome: `fnm install` is also handy for the docs site's Node.")
    # a change that speaks of nothing the older text does
    assert not fact_diff.displacements(
        "Run `npm install` before the first build of the web app.",
        "The backend moved to Python this week: `pip install -r requirements.txt` for it.",
    )


def test_a_scratch_capture_ranked_first_does_not_take_the_first_memorys_discount(real_service, project):
    """Recall's first memory needs less cosine (`FIRST_HIT_COSINE_DISCOUNT`): its words and its
    meaning agree it is the prompt's best. An edit capture of the running session, ranked above
    it and never injected, must not take that place: the best memory of knowledge keeps it."""
    rule = "SQL style everywhere: uppercase keywords and one clause per line."
    real_service.store(RequestContext(project, "sess-a"), content=rule, type="semantic", scope="user", importance=0.7)
    second = RequestContext(project, "sess-b")
    real_service.session_start(second)
    hook_ops.capture(
        real_service.access,
        second,
        content="Edited reports/hours.sql: the query of the monthly hours totals now sums per month",
        type="episodic",
        importance=0.3,
        category="file_change",
        tags=["file-change"],
    )
    prompt = "Write a query for the monthly hours totals in SQL."
    found = hook_ops.recall(real_service.access, second, query=prompt, limit=5, strengthen=False)["memories"]
    assert found[0]["category"] == "file_change"  # the capture is recall's first memory
    [mine] = [m for m in found if m["content"] == rule]
    bar = real_service.access.config(project).prompt_recall_min_relevance
    # between the discounted bar and the bar: only the first memory's discount lets it in
    assert bar - hook_ops.FIRST_HIT_COSINE_DISCOUNT <= mine["similarity"] < bar, mine["similarity"]
    out = hook_ops.prompt_context(real_service.access, second, prompt=prompt)
    block = out["additional_context"] or ""
    assert "uppercase keywords" in block and "Edited reports" not in block, block


def test_the_first_memorys_discount_goes_to_the_prompts_best_match_not_to_what_priors_lift(real_service, project):
    """Recall's final score adds priors to relevance (scope, importance, recency): they order near
    ties, but they say nothing of the prompt. A project memory stored as important ranks first for
    a prompt it hardly matches; the lower bar of the prompt's best match belongs to the memory that
    matches it best in words and meaning (the month replay's eighth world: the user's commit rule,
    kept recent by every commit, took it from a staging-model prompt's hashing decision)."""
    rule = "PR descriptions always open with a Risk section: what could break in production."
    prompt = "Open the PR for the timesheet changes."
    second, found = _recalled_in_a_later_session(
        real_service,
        project,
        [
            (rule, "user", 0.1),
            ("The nightly export job writes CSV files to the reports bucket.", "project", 1.0),
            ("The billing service stores money as integer cents, never floats.", "project", 1.0),
        ],
        prompt,
    )
    bar = real_service.access.config(project).prompt_recall_min_relevance
    lifted, [mine] = found[0], [m for m in found if m["content"] == rule]
    assert "nightly export" in lifted["content"] and mine["relevance_score"] > lifted["relevance_score"]
    # both between the discounted bar and the bar: the discount decides which one goes in
    for m in (lifted, mine):
        assert bar - hook_ops.FIRST_HIT_COSINE_DISCOUNT <= m["similarity"] < bar, (m["content"], m["similarity"])
    block = hook_ops.prompt_context(real_service.access, second, prompt=prompt)["additional_context"] or ""
    assert "Risk section" in block and "nightly export" not in block, block


def test_the_best_match_is_recalls_first_when_no_memory_carries_a_relevance():
    """A keyword-only or degraded recall gives no relevance: its own order stands."""
    a, b = {"id": "a", "similarity": 0.2}, {"id": "b", "similarity": 0.3}
    assert hook_ops._best_match([a, b]) is a
    assert hook_ops._best_match([]) is None
    tied = [{"id": "x", "relevance_score": 0.5}, {"id": "y", "relevance_score": 0.5}]
    assert hook_ops._best_match(tied)["id"] == "x"  # the first of equals, in recall's order
    assert hook_ops._best_match([a, {"id": "c", "relevance_score": 0.1}])["id"] == "c"


def test_a_memory_written_in_this_session_is_not_shown_back_to_it(real_service, project):
    """Claude stored it from this conversation, which still holds it: a prompt line of it tells
    Claude nothing and takes the place of one that might. Another session gets it, and a memory
    of this session does not take the lower bar of the prompt's best match from one it could show."""
    here = RequestContext(project, "sess-a")
    fact = "The bench gateway in the lab is at 10.40.2.17; ssh in as the ops user."
    memory_id = real_service.store(here, content=fact, type="semantic", scope="project", importance=0.7)["memory_id"]
    prompt = "Deploy the new build to the bench gateway in the lab."
    shown_here = hook_ops.prompt_context(real_service.access, here, prompt=prompt)
    assert shown_here["additional_context"] is None, shown_here
    # matched by the session's own prompt, it is in use: counted once a session, as a shown line is
    hook_ops.prompt_context(real_service.access, here, prompt="And check the bench gateway's disk space.")
    assert real_service.get(here, memory_id)["access_count"] == 1
    shown_later = hook_ops.prompt_context(real_service.access, RequestContext(project, "sess-b"), prompt=prompt)
    assert "10.40.2.17" in (shown_later["additional_context"] or "")
