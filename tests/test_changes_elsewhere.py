"""A change the user states in one project reaches the lines of their other projects (issue 33).

The user's ways are often written down in the project where they came up ("I run anything that
needs secrets through 1Password: op run ...", a project memory of the data repository) and their
change in another ("the company changed password managers: ... bws run", a project memory of
the API). The month replay's sixth and eighth worlds then showed the old way in the first
project's session starts for the rest of the month. Now a project memory that states a change is
kept in the user store, and a line of another project that still states the old way carries it,
naming the project. Real hook processes against a real daemon with the real model.
"""

from __future__ import annotations

import pytest

from engram_mcp.services import context, fact_diff, sightings
from tests.test_hooks import hook_env, run_hook, sample, start_block, store_all, turn_transcript

OP_RUN = "Secrets never go in .env: I run anything that needs them through 1Password, as `op run --env-file=.env.op -- <cmd>`."
STAGING_DB = "The staging database listens on port 5432, see compose.yaml."
STAGING_MOVED = "Heads-up: the staging database moved to 5433 instead of 5432 (docker/staging.env)."
BWS = (
    "Heads-up, the company changed password managers: secrets come from Bitwarden Secrets Manager now, "
    "you run things as `bws run -- <cmd>`."
)


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    e = hook_env(tmp_path_factory.mktemp("elsewhere"))
    e.other = e.project.parent / "circulation-api"
    (e.other / ".git").mkdir(parents=True)
    store_all(e, (OP_RUN, STAGING_DB), type="semantic", scope="project")
    yield e
    e.shutdown()


def _line(block: str, needle: str) -> str:
    lines = [x for x in block.splitlines() if needle in x]
    assert lines, block
    return lines[0]


def test_a_change_stated_in_another_project_is_noted_on_the_line_it_outdates(two):
    assert "changed since" not in _line(start_block(two, "a1", two.project), "op run")
    with two.client() as c:
        bws = c.call("store", {"content": BWS, "type": "semantic", "scope": "project"}, project_root=str(two.other))
    line = _line(start_block(two, "a2", two.project), "op run")
    assert f"[changed since, {bws['memory_id'][-8:]} in circulation-api: " in line, line
    assert "bws run" in line, line
    # the other project's block shows its own memory, and nothing of this project's
    other_block = start_block(two, "b1", two.other)
    assert "bws run" in other_block and "op run" not in other_block, other_block
    # forgotten there, the change no longer speaks here
    with two.client() as c:
        c.call("forget", {"memory_id": bws["memory_id"]}, project_root=str(two.other))
    assert "changed since" not in _line(start_block(two, "a3", two.project), "op run")


def test_a_value_each_project_has_its_own_of_is_not_changed_from_another(two):
    """A port, a host, a path: "staging moved to 5433 instead of 5432" in one repository says nothing of
    another's staging database, though the same change in this project would note the line."""
    with two.client() as c:
        c.call("store", {"content": STAGING_MOVED, "type": "semantic", "scope": "project"}, project_root=str(two.other))
    assert "changed since" not in _line(start_block(two, "p1", two.project), "compose.yaml")
    # the same change said here: the old port never stands alone (the evidence reads it; only where it was said differs)
    with two.client() as c:
        c.call(
            "store", {"content": STAGING_MOVED, "type": "semantic", "scope": "project"}, project_root=str(two.project)
        )
    block = start_block(two, "p2", two.project)
    assert all("5433" in x for x in block.splitlines() if "5432" in x), block


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (BWS, True),
        ("We moved the bench to the Northgate lab; it's 10.48.9.40.", True),
        ("The 1Password vault goes away on Friday.", True),
        ("Use mise instead of asdf for toolchains.", True),
        ("Secrets are never kept in .env files.", False),
        ("The migration was applied locally; no reply from Ines yet.", False),  # a report's words only
    ],
)
def test_what_states_a_change(text, says):
    assert fact_diff.states_a_change(text) is says


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        ({}, True),  # Claude, through the MCP tool
        ({"origin": "user", "tool": "cli"}, True),
        ({"kind": "team-memory", "file": ".claude/engram/team/ops.md"}, False),  # a repository's text
        ({"kind": "user-mirror"}, False),  # a synced folder
        ({"kind": "claude-mem"}, False),  # an import
        ({"hook": "Stop"}, False),  # a hook's capture quotes an answer a repository can steer
    ],
)
def test_only_what_claude_or_the_user_stored_reaches_other_projects(source, kept):
    row = {"content": BWS, "memory_type": "semantic", "status": "active", "source": source}
    assert (sightings._change_text(row) == BWS) is kept


CAPTURE = "User: " + BWS + " Outcome: Started it as `bws run -- bin/dev`; web on :3000."


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (CAPTURE, BWS),  # the user's words, never the outcome
        ("User: " + BWS, BWS),  # the user's words alone (said for every project)
        # the outcome states the change, the user's words do not: nothing goes
        ("User: Start the dev server. Outcome: Secrets now come from `bws run` instead of op run.", None),
        # a fix's capture leads with Claude's account
        ("Fix found after `op run -- bin/dev` failed: the vault moved, so it is bws run now.", None),
    ],
)
def test_of_a_hook_capture_only_the_users_words_reach_other_projects(content, text):
    row = {"content": content, "memory_type": "semantic", "status": "active", "source": {"hook": "Stop", "origin": "hook"}}
    assert sightings._change_text(row) == text


VALIDATOR = "Publishing: run the feed validator first; the validator reports errors and warnings, and any ERROR stops the release."
BENCH_MOVED = "The bench validator moved to the Northgate depot lab over the weekend. It's 10.48.9.40 now."


def _mem(mid: str, content: str, created: str, **more) -> dict:
    return {"id": mid, "content": content, "created_at": created, "scope": "project", "category": "semantic", **more}


def test_a_change_from_another_project_must_end_the_value_by_name():
    """Said in this project, "the bench validator moved" may well be about this line's validator;
    said in another, it is most often another thing of the same name: only a value ended by name
    (`fact_diff.ended_by_name`: "instead of", a retirement beside it, a tool run in its place) is
    read across projects, and a thing moved somewhere ("moved the Windows workspace root to D:")
    is not one ended."""
    line = _mem("memory:01A", VALIDATOR, "2026-05-01T00:00:00Z")
    here = _mem("memory:01B", BENCH_MOVED, "2026-06-01T00:00:00Z")
    assert context.corrections(line, [here], VALIDATOR)
    assert context.corrections(line, [{**here, sightings.ELSEWHERE: "validator-agent"}], VALIDATOR) == []
    presets = "Configure through the presets only: linux-clang-rel on Linux, win-msvc-rel on the Windows agents."
    moved = _mem(
        "memory:01E",
        "I moved the Windows workspace root to D:\\hw, so the same file is now at 187 characters.",
        "2026-06-01T00:00:00Z",
        **{sightings.ELSEWHERE: "buildhive"},
    )
    assert context.corrections(_mem("memory:01F", presets, "2026-05-01T00:00:00Z"), [moved], presets) == []
    op = _mem("memory:01C", OP_RUN, "2026-05-01T00:00:00Z")
    bws = _mem("memory:01D", BWS, "2026-06-01T00:00:00Z", **{sightings.ELSEWHERE: "circulation-api"})
    ((mid, quote),) = context.corrections(op, [bws], OP_RUN)
    assert mid == "memory:01D" and "bws run" in quote


def test_a_tool_named_with_digits_is_a_name_everywhere():
    """The sixth world's case: "the 1Password vault goes away" said in one project ends the
    1Password a line of another states (a name with a digit, not a project's identifier such as
    a bucket or a host), and the note says what came."""
    creds = (
        "I never keep creds in the shell. Outcome: I'll run anything that needs credentials through "
        "`op run --env-file=.env.op -- ...`. Context: Wrap it: op run --env-file=.env.op -- <command>, "
        "and 1Password fills them in."
    )
    sops = (
        "Secrets: we've moved to SOPS-encrypted env files with age keys, the 1Password vault goes away on Friday. "
        "Outcome: I'll wrap anything that needs credentials with sops exec-env from now on."
    )
    line = _mem("memory:01A", creds, "2026-05-01T00:00:00Z")
    change = _mem("memory:01B", sops, "2026-06-01T00:00:00Z", **{sightings.ELSEWHERE: "validator-agent"})
    ((_, quote),) = context.corrections(line, [change], creds)
    assert "1Password" in quote and "sops exec-env" in quote, quote


def test_a_change_a_hook_kept_from_a_last_turn_reaches_the_other_projects_lines(tmp_path):
    """A change said in a session's last turn is often kept by the Stop hook alone (no prompt follows
    to carry its note). Its capture's user words reach the user's other projects as a change; its
    outcome, which a repository's text may steer, does not. Real hook processes, real daemon."""
    e = hook_env(tmp_path)
    try:
        other = e.project.parent / "circulation-api"
        (other / ".git").mkdir(parents=True)
        store_all(e, (OP_RUN,), type="semantic", scope="project")
        sid = "last-turn"
        run_hook(e, "SessionStart", sample("SessionStart", session_id=sid, cwd=str(other)))
        prompt = (
            "Start the dev server with the secrets. Heads-up, the company changed password managers: secrets "
            "come from Bitwarden Secrets Manager now, you run things as bws run -- <cmd>."
        )
        path = turn_transcript(tmp_path / "t.jsonl", prompt, [], "Started it as `bws run -- bin/dev`; web on :3000.")
        stop = {**sample("Stop", session_id=sid, cwd=str(other)), "transcript_path": str(path), "stop_hook_active": False}
        assert run_hook(e, "Stop", stop).returncode == 0
        end = run_hook(e, "SessionEnd", sample("SessionEnd", session_id=sid, cwd=str(other)))
        assert end.returncode == 0, end.stderr
        line = _line(start_block(e, "next", e.project), "op run")
        assert "[changed since, " in line and " in circulation-api: " in line, line
        assert "bws run" in line and "web on :3000" not in line, line
    finally:
        e.shutdown()


@pytest.mark.parametrize(
    ("new", "ended"),
    [
        # the new way typed plainly, a placeholder or flags after the tool marking it a command
        ("Heads-up, we changed password managers: you run things as bws run -- <cmd> now.", {"op"}),
        ("We switched secret stores, it's infisical run --env=dev -- bin/dev from now on.", {"op"}),
        # an aside set off by a double hyphen is no command
        ("We changed how we run -- honestly it's simpler now.", set()),
    ],
)
def test_a_wrapper_typed_without_code_marks_is_a_tool_run_in_the_old_ones_place(new, ended):
    assert set(fact_diff.ended_by_name(OP_RUN, new)) == ended
