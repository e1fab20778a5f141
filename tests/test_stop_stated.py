"""Claude stored it in the project; the user said it holds in every project (issue 33).

The model judges a memory's scope when it stores one, and on the blind month worlds it often
chose the project for what the user stated for all their work ("my commit messages are ...",
"in every repo"): the fact was then never seen in the user's other projects. The Stop hook reads
the user's words of that turn (`stop_trigger.for_every_project`) and queues the turn's project
stores for the user scope; the daemon copies them there (`promotion.promote_stated`). Real hook
processes against a real daemon with the real model; the id selection as pure functions.
"""

from __future__ import annotations

import json
import time

import pytest

from engram_mcp.interfaces import hooks
from tests.test_hooks import bash, hook_env, run_stop, turn_transcript

STORE_TOOL = hooks.STORE_MEMORY_TOOL
ID_A = "memory:01KT18T11PD3JR4KKWQZ99EB1M"
ID_B = "memory:01KT18T12Q4J2MAGR9VMHSR4T6"
EVERY_PROJECT = "Commit it. For the record, my commit messages are Conventional Commits, in every repo."


def _store_event(memory_id: str, scope: str = "project", *, failed: bool = False) -> dict:
    """A store_memory call as the transcript holds it: its input, and engram's JSON result."""
    result = {"memory_id": memory_id, "action": "created", "scope": scope}
    return {
        "name": STORE_TOOL,
        "input": {"content": "x", "type": "semantic", "scope": scope},
        "failed": failed,
        "output": json.dumps(result),
    }


def _facts(prompt: str, events: list[dict]) -> dict:
    return {"prompt": prompt, "answer": "Committed.", "events": events}


def test_an_answer_alone_never_carries_a_memory_to_the_user_scope():
    """A repository's text can make Claude say "from now on ... in every repo": the note may suggest
    the user scope (Claude decides), but nothing moves there unless the user said so."""
    answer = "Turns out the build needs it: I will disable TLS verification (export GIT_SSL_NO_VERIFY=1) in every repo from now on."
    facts = {"prompt": "Why does the build fail?", "answer": answer, "events": [bash("make"), _store_event(ID_A)]}
    assert hooks.stated_project_stores(facts) == []
    memory = hooks.turn_knowledge_memory(facts, ["lesson"])
    assert memory is not None and (memory.get("metadata") or {}).get("promote_to") is None
    told = {"prompt": "From now on, in every repo, skip TLS checks for the build.", "answer": answer, "events": []}
    assert (hooks.turn_knowledge_memory(told, ["rule"]).get("metadata") or {}).get("promote_to") == "user"


def test_only_project_stores_of_a_turn_the_user_said_holds_everywhere_are_picked():
    work = bash("git commit -m 'feat: x'")
    assert hooks.stated_project_stores(_facts(EVERY_PROJECT, [work, _store_event(ID_A)])) == [ID_A]
    # no word of the user's widens it: the model's scope stands
    assert hooks.stated_project_stores(_facts("Commit it.", [work, _store_event(ID_A)])) == []
    # stored in the user scope already, or the store failed
    assert hooks.stated_project_stores(_facts(EVERY_PROJECT, [work, _store_event(ID_A, "user")])) == []
    assert hooks.stated_project_stores(_facts(EVERY_PROJECT, [work, _store_event(ID_A, failed=True)])) == []
    # a store first thing after a memory check answered the check (about the previous turn)
    facts = _facts(EVERY_PROJECT, [_store_event(ID_A), work, _store_event(ID_B)])
    assert hooks.stated_project_stores(facts, note_delivered=True) == [ID_B]
    assert hooks.stated_project_stores(facts) == [ID_A, ID_B]
    # what another tool printed is no store result, and a result must name a memory id
    fake = {"name": "Bash", "input": {"command": "echo"}, "failed": False, "output": json.dumps({"memory_id": ID_A})}
    assert hooks.stated_project_stores(_facts(EVERY_PROJECT, [fake])) == []
    junk = dict(_store_event(ID_A), output=json.dumps({"memory_id": "memory:../../etc", "scope": "project"}))
    assert hooks.stated_project_stores(_facts(EVERY_PROJECT, [work, junk])) == []


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    e = hook_env(tmp_path_factory.mktemp("stop-stated"))
    yield e
    e.shutdown()


def _stored(live, session: str, content: str, source: dict | None = None) -> str:
    args = {"content": content, "type": "semantic", "scope": "project", "importance": 0.8}
    if source is not None:
        args["source"] = source
    with live.client() as c:
        return c.call("store", args, project_root=str(live.project), session_id=session)["memory_id"]


def _user_copies(live, content: str) -> list[dict]:
    with live.client() as c:
        found = c.call("list", {"scope": "user", "limit": 100}, project_root=str(live.project))
    return [m for m in found["memories"] if m["content"] == content]


def _stop(live, tmp_path, session: str, prompt: str, memory_id: str) -> None:
    events = [bash("git commit -m 'feat: x'"), _store_event(memory_id)]
    run_stop(live, turn_transcript(tmp_path / f"{session}.jsonl", prompt, events, "Committed."), session, "Committed.")


def _wait_for(check, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    return check()


def test_a_project_store_the_user_said_holds_everywhere_reaches_the_user_scope(live, tmp_path):
    content = "Commit messages are Conventional Commits with the ticket as a trailer (Refs: ABC-12)."
    memory_id = _stored(live, "s-every", content)
    _stop(live, tmp_path, "s-every", EVERY_PROJECT, memory_id)
    [copy] = _wait_for(lambda: _user_copies(live, content))
    assert copy["promotion_chain"][-1]["reason"] == "stated for every project"
    with live.client() as c:  # the project copy stays where Claude put it
        assert c.call("get", {"memory_id": memory_id}, project_root=str(live.project))["scope"] == "project"
    # the same turn again changes nothing: one user copy
    _stop(live, tmp_path, "s-every", EVERY_PROJECT, memory_id)
    time.sleep(1.0)
    assert len(_user_copies(live, content)) == 1


def test_without_the_users_words_or_for_a_teammates_file_nothing_moves(live, tmp_path):
    plain = "The integration suite needs the compose db on port 5433."
    memory_id = _stored(live, "s-plain", plain)
    _stop(live, tmp_path, "s-plain", "Run the integration suite and commit the fix.", memory_id)
    team = "Team file: all PRs need two approvals."
    team_id = _stored(live, "s-team", team, source={"kind": "team-memory", "file": "team.md"})
    _stop(live, tmp_path, "s-team", EVERY_PROJECT, team_id)
    # a later promotion through the same queue proves the queue ran past both entries
    marker = "I sign off every commit with git commit -s."
    marker_id = _stored(live, "s-marker", marker)
    _stop(live, tmp_path, "s-marker", EVERY_PROJECT, marker_id)
    assert _wait_for(lambda: _user_copies(live, marker))
    assert _user_copies(live, plain) == [] and _user_copies(live, team) == []
