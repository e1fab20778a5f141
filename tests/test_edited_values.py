"""A value changed in a file ends the old value on older memories' lines (issue 33's stale exposure).

A change is often said without the old value: "the public feed goes to the grt-open-data bucket
now", and Claude edits `bucket.set("grt-gtfs-public")` to `bucket.set("grt-open-data")` in the
build script. The memory kept of it names the new bucket only, so nothing tied it to an older
note that treats the old bucket as production (the month replay's sixth world showed that note
as current for the rest of the month). Now the PostToolUse hook sends the edit, the daemon keeps
the values it swapped, session end records them on the memory of that session that states the
new value, and a line of an older memory that still states the old one carries that sentence.
"""

from __future__ import annotations

import pytest

from engram_mcp.core.capture_shapes import ENDED_BY, ENDED_KEY, ENDED_SAID, SWAPS_KEY
from engram_mcp.interfaces import hooks
from engram_mcp.services import context, fact_diff
from tests.test_hooks import hook_env, run_hook, sample, start_block, store_all

OLD_NOTE = (
    "I never keep creds in the shell: wrap commands in `op run --env-file=.env.op -- <cmd>`. And yes, "
    "grt-gtfs-public is the real thing: Traveline and Google both pull from it, so treat it as production."
)
NEW_NOTE = (
    "Heads up: the open-data team moved us onto Cloudflare R2. The public feed now goes to the grt-open-data "
    "bucket; the S3 one goes read-only tomorrow."
)
EDIT_OLD = '    bucket.set("grt-gtfs-public")\n    region.set("eu-west-2")'
EDIT_NEW = '    bucket.set("grt-open-data")\n    region.set("auto")\n    endpoint.set("https://r2.example.com")'


@pytest.mark.parametrize(
    ("old", "new", "swaps"),
    [
        (EDIT_OLD, EDIT_NEW, {"grt-gtfs-public": "grt-open-data"}),  # "auto" is a word, three values for one: no swap
        ("const DefaultPort = 8443", "const DefaultPort = 9443", {"8443": "9443"}),
        ('image: "postgres:15.4"', 'image: "postgres:16.2"', {"postgres:15.4": "postgres:16.2"}),
        # code being written, not a value changed: names and words, or a value only moved
        ("def fetch(url):\n    return get(url)", "def fetch_all(urls):\n    return [get(u) for u in urls]", {}),
        ("PORTS = [8443, 9443]", "PORTS = [9443, 8443]", {}),
        # a lone digit is no value another memory is known by
        ("hour_of_day=2, minute_of_hour=0", "hour_of_day=4, minute_of_hour=30", {}),
    ],
)
def test_an_edit_swaps_a_value_for_one_of_its_kind(old, new, swaps):
    assert fact_diff.edit_swaps(old, new) == swaps


def test_a_memory_ends_the_values_its_sessions_edits_replaced_with_ones_it_states():
    swaps = {"grt-gtfs-public": "grt-open-data", "8443": "9443"}
    ended = fact_diff.values_ended_by_edits(NEW_NOTE, swaps)
    assert ended == {"grt-gtfs-public": ("grt-open-data", "The public feed now goes to the grt-open-data bucket;")}
    # a memory that still names the old value too says something else of it: nothing is ended
    assert fact_diff.values_ended_by_edits(NEW_NOTE + " grt-gtfs-public stays readable.", swaps) == {}


def test_a_line_carries_the_sentence_of_the_value_an_edit_wrote_over_it():
    old = {"id": "memory:01A", "content": OLD_NOTE, "created_at": "2026-05-01T00:00:00Z", "scope": "project"}
    new = {"id": "memory:01B", "content": NEW_NOTE, "created_at": "2026-06-01T00:00:00Z", "scope": "project"}
    assert context.corrections(old, [new], OLD_NOTE) == []  # the words alone name no old bucket
    said = "The public feed now goes to the grt-open-data bucket;"
    new["metadata"] = {ENDED_KEY: {"grt-gtfs-public": {ENDED_BY: "grt-open-data", ENDED_SAID: said}}}
    ((mid, quote),) = context.corrections(old, [new], OLD_NOTE)
    assert mid == "memory:01B" and "grt-open-data" in quote
    # a text that names what came instead knows of the change: the root cause written in the
    # edit's own turn ("raw.py called pl.read_csv ... I added read_gateway_csv()")
    knows = {**old, "content": OLD_NOTE + " The build script now says grt-open-data."}
    assert context.corrections(knows, [new], knows["content"]) == []
    # said in another project, a bucket is that project's own: no note there
    assert context.corrections(old, [{**new, "elsewhere": "other"}], OLD_NOTE) == []


def test_the_edit_hook_sends_its_edits_whole_or_not_at_all():
    payload = sample("PostToolUse.Edit", cwd="/work/proj")
    payload["tool_input"].update(file_path="/work/proj/build.gradle.kts", old_string=EDIT_OLD, new_string=EDIT_NEW)
    mem = hooks.file_change_memory(payload)
    assert mem["metadata"]["edits"] == [[" ".join(EDIT_OLD.split()), " ".join(EDIT_NEW.split())]]
    # cut, a long edit would read every value past the cut as gone: it is not sent
    long_new = EDIT_NEW + "\n" + "\n".join(f'    tag("t{i}")' for i in range(200))
    payload["tool_input"].update(new_string=long_new)
    assert "metadata" not in hooks.file_change_memory(payload)


def test_a_value_changed_in_a_file_is_noted_on_the_older_line_after_session_end(tmp_path):
    """Real hook processes (SessionStart, PostToolUse, SessionEnd) against the real daemon and model."""
    e = hook_env(tmp_path)
    try:
        store_all(e, (OLD_NOTE,), type="semantic", scope="project")
        assert "changed since" not in start_block(e, "before")
        sid = "r2-move"
        start_block(e, sid)
        edit = sample("PostToolUse.Edit", session_id=sid, cwd=str(e.project))
        edit["tool_input"].update(file_path=str(e.project / "build.gradle.kts"), old_string=EDIT_OLD, new_string=EDIT_NEW)
        assert run_hook(e, "PostToolUse", edit).returncode == 0
        with e.client() as c:
            new = c.call("store", {"content": NEW_NOTE, "type": "semantic", "scope": "project"},
                         project_root=str(e.project), session_id=sid)
            captured = c.call("list", {"scope": "session", "limit": 10}, project_root=str(e.project), session_id=sid)
        changes = [m for m in captured["memories"] if m.get("category") == "file_change"]
        assert changes and changes[0]["metadata"][SWAPS_KEY] == {"grt-gtfs-public": "grt-open-data"}
        assert "edits" not in changes[0]["metadata"]  # the edit's text is read, not kept
        assert run_hook(e, "SessionEnd", sample("SessionEnd", session_id=sid, cwd=str(e.project))).returncode == 0
        lines = [x for x in start_block(e, "after").splitlines() if "grt-gtfs-public" in x]
        assert lines and all("grt-open-data" in x for x in lines), lines
        assert f"[changed since, {new['memory_id'][-8:]}: " in lines[0], lines
        assert "op run" in lines[0]  # the note's other fact stays on its line
    finally:
        e.shutdown()


ASDF = (
    "For the record, I manage every toolchain with asdf, pinned per repo in .tool-versions. "
    "`asdf install` fixed the missing JDK."
)
RECIPE = (
    "Use `just deploy-bench` for the bench: it does the cross build, the copy and the restart. "
    "`just` was missing, so I pinned `just 1.28.0` in the repo's .tool-versions and installed it with asdf."
)
MISE = (
    "Toolchains are all on mise now, I moved everything over the weekend. "
    "`mise install` in each repo, new pins go in mise.toml."
)


def test_a_tool_ended_by_name_in_one_memory_is_noted_where_another_names_it_in_passing(tmp_path):
    """The change ends asdf in the memory about toolchains (`mise install` where that one ran
    `asdf install`); a recipe that installed something "with asdf" shares no words with it. At
    session end the change records the tool it ended, and the recipe's line carries its sentence."""
    e = hook_env(tmp_path)
    try:
        store_all(e, (ASDF, RECIPE), type="semantic", scope="user")
        sid = "mise-move"
        start_block(e, sid)
        with e.client() as c:
            new = c.call("store", {"content": MISE, "type": "semantic", "scope": "user"},
                         project_root=str(e.project), session_id=sid)
        before = [x for x in start_block(e, "mid").splitlines() if "just deploy-bench" in x]
        assert before and "changed since" not in before[0], before
        assert run_hook(e, "SessionEnd", sample("SessionEnd", session_id=sid, cwd=str(e.project))).returncode == 0
        lines = [x for x in start_block(e, "after").splitlines() if "just deploy-bench" in x]
        assert lines and f"[changed since, {new['memory_id'][-8:]}: " in lines[0], lines
        assert "mise install" in lines[0], lines
    finally:
        e.shutdown()
