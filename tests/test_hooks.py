"""Hooks: what each one records or injects, that it fails open, and that it is fast enough to stay out of the way.

Pure functions are tested in-process; the event handlers run as real processes
(`bin/engram-hook <Event>`) against a real daemon in a throwaway HOME.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram_mcp.core import spool
from engram_mcp.interfaces import hooks
from tests.daemon_env import REPO, Env, make_env

HOOK = REPO / "bin" / "engram-hook"
INPUTS = REPO / "tests" / "data" / "claude_hook_inputs"
SESSION = "11111111-2222-4333-8444-555555555555"


def sample(event: str, **over) -> dict:
    data = json.loads((INPUTS / f"{event}.json").read_text())
    data.update(over)
    return data


def run_hook(env, event: str, payload, *, timeout: float = 60) -> subprocess.CompletedProcess:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([str(HOOK), event], input=text, env=env.env, cwd=str(env.project), capture_output=True,
                          text=True, timeout=timeout)


def hook_env(tmp: Path, *, boot: str | None = "boot", project: Path | None = None) -> Env:
    """A throwaway HOME whose hook processes run this interpreter (ENGRAM_PYTHON). With `boot`, a
    first SessionStart hook process (that session id, in `project`) starts the daemon, so the
    daemon runs with this HOME and reads its config files; the caller shuts it down."""
    e = make_env(tmp)
    e.env["ENGRAM_PYTHON"] = os.environ.get("ENGRAM_PYTHON") or sys.executable
    if boot:
        start_block(e, boot, project or e.project)
    return e


def start_block(env, session: str, project: Path | None = None) -> str:
    """The session start block of `project` (default: the env's), from a real SessionStart hook process."""
    out = run_hook(env, "SessionStart", sample("SessionStart", session_id=session, cwd=str(project or env.project)))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] if out.stdout.strip() else ""


def store_all(env, contents, project: Path | None = None, **fields) -> dict[str, str]:
    """Store each text through the daemon (`fields`: type, scope, importance...): {content: memory id}."""
    ids = {}
    with env.client() as c:
        for content in contents:
            got = c.call("store", {"content": content, **fields}, project_root=str(project or env.project))
            ids[content] = got["memory_id"]
    return ids


def run_stop(env, transcript_path: Path, session: str, answer: str) -> None:
    """The Stop hook as a process on one turn's transcript: it never blocks and never prints."""
    stop = {
        "transcript_path": str(transcript_path),
        "stop_hook_active": False,
        "session_id": session,
        "hook_event_name": "Stop",
        "cwd": str(env.project),
        "last_assistant_message": answer,
    }
    proc = run_hook(env, "Stop", stop)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr


def transcript(path: Path, entries: list[tuple[str, object]]) -> Path:
    """Write a Claude Code style transcript: (role, content) pairs."""
    with path.open("w") as fh:
        fh.write(json.dumps({"type": "queue-operation"}) + "\n")
        for role, content in entries:
            fh.write(json.dumps({"type": role, "message": {"role": role, "content": content}}) + "\n")
    return path


# -- what gets recorded ------------------------------------------------------------------------

def test_edit_becomes_a_short_redacted_file_change_memory():
    payload = sample("PostToolUse.Edit", cwd="/work/proj")
    payload["tool_input"].update(file_path="/work/proj/src/settings.py", old_string="API_KEY = ''",
                                 new_string="API_KEY = 'AKIAIOSFODNN7EXAMPLF' <private>my note</private>")
    mem = hooks.file_change_memory(payload)
    assert mem["type"] == "episodic" and mem["category"] == "file_change"
    assert mem["content"].startswith("Edited src/settings.py:")
    assert "AKIAIOSFODNN7EXAMPLF" not in mem["content"] and "[REDACTED:" in mem["content"]
    assert "my note" not in mem["content"] and "[private]" in mem["content"]
    assert mem["tags"] == ["file-change", "py"]


def test_write_reports_creation_and_line_count():
    payload = sample("PostToolUse.Write", cwd="/w")
    payload["tool_input"] = {"file_path": "/w/a.md", "content": "one\ntwo\nthree\n"}
    payload["tool_response"]["type"] = "create"
    assert hooks.file_change_memory(payload)["content"] == "Created a.md (3 lines)."


def test_failed_command_keeps_exit_code_command_and_error_without_secrets():
    payload = sample("PostToolUseFailure")
    payload["tool_input"]["command"] = "curl https://admin:hunter2secret@db.example.com/x"
    payload["error"] = "Exit code 7\ncurl: (7) Failed to connect; token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
    mem = hooks.command_memory(payload, failed=True)
    assert mem["content"].startswith("Command failed (exit 7): `curl https://")
    assert "hunter2secret" not in mem["content"] and "ghp_0123456789" not in mem["content"]
    assert "Failed to connect" in mem["content"] and mem["tags"] == ["failed-command"]


def test_successful_command_is_recorded_only_when_it_printed_an_error():
    ok = sample("PostToolUse.Bash")
    assert hooks.command_memory(ok, failed=False) is None
    ok["tool_response"]["stderr"] = "Traceback (most recent call last):\n  File 'x.py'\nValueError: boom"
    assert "ValueError: boom" in hooks.command_memory(ok, failed=False)["content"]


def test_a_step_is_described_by_its_command_or_its_file_and_new_text_redacted():
    """What `hook_step` matches memories against: the command (with its error's end when it failed),
    or the path and new text of an edit; a secret in either is redacted before it leaves the hook."""
    secret = "sk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    bash = sample("PostToolUse.Bash", cwd="/w", tool_input={"command": f"curl -H 'Authorization: Bearer {secret}' https://api"})
    text = hooks.step_text(bash, failed=False)
    assert text.startswith("$ curl") and secret not in text and "[REDACTED:" in text
    failed = sample("PostToolUseFailure", cwd="/w", tool_input={"command": "psql -p 5432 app"},
                    error="Exit code 2\npsql: error: connection to server on port 5432 failed: Connection refused")
    assert hooks.step_text(failed, failed=True) == (
        "$ psql -p 5432 app\npsql: error: connection to server on port 5432 failed: Connection refused"
    )
    edit = sample("PostToolUse.Edit", cwd="/work/proj",
                  tool_input={"file_path": "/work/proj/sql/report.sql", "old_string": "x", "new_string": "select 1\nfrom t"})
    assert hooks.step_text(edit, failed=False) == "Edit sql/report.sql\nselect 1 from t"
    assert hooks.step_text(sample("PostToolUse.Edit", tool_name="Read"), failed=False) == ""


def test_a_step_never_starts_the_daemon_nor_waits_for_one(tmp_path, monkeypatch):
    """PostToolUse runs after every step: with no daemon running it captures (spool) and shows nothing,
    at once; starting a daemon is the capture's nudge's job, never the step memory's."""
    monkeypatch.setattr(hooks, "nudge", lambda user_dir: None)
    import engram_mcp.daemon.client as client

    for module in (hooks, client):
        monkeypatch.setattr(module, "spawn_daemon", lambda *a, **k: pytest.fail("a step started the daemon"))
    payload = sample("PostToolUseFailure", session_id=SESSION, cwd=str(tmp_path))
    started = time.monotonic()
    assert hooks.on_post_tool_failure(tmp_path / "u", payload) is None
    assert time.monotonic() - started < hooks.STEP_WAIT_S
    assert len(spool.pending(tmp_path / "u")) == 1


def test_a_step_with_no_daemon_running_leaves_no_line_in_the_hooks_log(tmp_path, monkeypatch, capsys):
    """The daemon exits when idle, and a step never starts it: every step until something does
    found no daemon, and each wrote a line to hooks.log (and stderr) saying so, though nothing
    had failed. A failure to report still is."""
    monkeypatch.setattr(hooks, "nudge", lambda user_dir: None)
    user_dir = tmp_path / "u"
    for _ in range(3):
        assert hooks.on_post_tool_use(user_dir, sample("PostToolUse.Bash", session_id=SESSION, cwd=str(tmp_path))) is None
    assert not (user_dir / "logs" / "hooks.log").exists()
    assert capsys.readouterr().err == ""

    def broken(*args, **kwargs):
        raise OSError("socket read failed")

    monkeypatch.setattr(hooks, "ask", broken)
    hooks.on_post_tool_use(user_dir, sample("PostToolUse.Bash", session_id=SESSION, cwd=str(tmp_path)))
    assert "no step memory: OSError: socket read failed" in (user_dir / "logs" / "hooks.log").read_text()


def test_the_hooks_log_is_bounded_and_keeps_its_predecessor(tmp_path, monkeypatch):
    """Past HOOKS_LOG_MAX_BYTES the log moves to hooks.log.1 (replacing the one before) and starts
    again: before, nothing ever trimmed it."""
    monkeypatch.setattr(hooks, "HOOKS_LOG_MAX_BYTES", 2_000)
    user_dir = tmp_path / "u"
    for i in range(200):
        hooks._log(user_dir, "PostToolUse", f"line {i:03d} " + "x" * 40)
    logs = user_dir / "logs"
    current, previous = (logs / "hooks.log").read_text(), (logs / "hooks.log.1").read_text()
    assert 0 < len(current) < 2_100 and 0 < len(previous) < 2_100
    assert "line 199" in current and "line 000" not in current + previous  # the oldest went
    assert oct((logs / "hooks.log").stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in logs.iterdir()) == ["hooks.log", "hooks.log.1"]


def test_interrupted_command_is_not_recorded():
    assert hooks.command_memory(sample("PostToolUseFailure", is_interrupt=True), failed=True) is None


# -- the Stop decision -------------------------------------------------------------------------------

STOP_CORPUS = REPO / "tests" / "data" / "stop_corpus.jsonl"
NOTE_MARK = "engram memory check"
# Plain task prompts the previous trigger blocked (issue 13): none of them is knowledge for later.
ISSUE_13_TASK_PROMPTS = [
    "Fix the failing test but don't change the public API",
    "Make sure the build passes before you commit",
    "Add a --verbose flag; it should be off by default",
    "You must handle the empty list case",
    "Remember to run the linter",
    "Refactor utils.py, we use snake_case everywhere",
    "Please never push directly to main in this repo",
]


def corpus() -> list[dict]:
    return [json.loads(line) for line in STOP_CORPUS.read_text().splitlines() if line.strip()]


def _prompt_entries(prompt: str) -> list[tuple[str, object]]:
    """A typed prompt as Claude Code records it; an engram command becomes its command tags."""
    if not prompt.startswith("/"):
        return [("user", prompt)]
    name, _, args = prompt[1:].partition(" ")
    return [("user", f"<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n"
                     f"<command-args>{args}</command-args>")]


def turn_transcript(path: Path, prompt: str, events: list[dict], answer: str) -> Path:
    """A transcript whose last turn is `prompt`, the tool events (tool_use + tool_result each) and `answer`."""
    entries: list[tuple[str, object]] = [("user", "earlier prompt"), ("assistant", [{"type": "text", "text": "ok"}])]
    entries += _prompt_entries(prompt)
    for i, e in enumerate(events):
        entries.append(("assistant", [{"type": "tool_use", "id": f"t{i}", "name": e["name"], "input": e.get("input") or {}}]))
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": e.get("output") or ""}
        if e.get("failed"):
            result["is_error"] = True
        entries.append(("user", [result]))
    entries.append(("assistant", [{"type": "text", "text": answer}]))
    return transcript(path, entries)


def stop_leaves_note(tmp_path: Path, prompt: str, events: list[dict], answer: str = "Done.") -> bool:
    """Run the Stop handler on one turn; True if it left a note for the next prompt. It must never block."""
    user_dir = tmp_path / "user"
    path = turn_transcript(tmp_path / "t.jsonl", prompt, events, answer)
    payload = {"transcript_path": str(path), "stop_hook_active": False, "session_id": SESSION, "hook_event_name": "Stop"}
    assert hooks.on_stop(user_dir, payload) is None  # no decision JSON: never a block
    notes = list((user_dir / hooks.STOP_NOTES_DIR).glob("*.json")) if (user_dir / hooks.STOP_NOTES_DIR).exists() else []
    for note in notes:
        note.unlink()
    return bool(notes)


def bash(command: str, *, failed: bool = False, output: str = "") -> dict:
    return {"name": "Bash", "input": {"command": command}, "failed": failed, "output": output}


EDIT = {"name": "Edit", "input": {"file_path": "/p/src/app.py"}}
ENV_EDIT = {"name": "Edit", "input": {"file_path": "/p/.env"}}
STORE = {"name": hooks.TOOL_PREFIX + "store_memory", "input": {"content": "x"}}


@pytest.mark.parametrize("prompt", ISSUE_13_TASK_PROMPTS)
def test_stop_stays_quiet_on_plain_task_prompts(tmp_path, prompt):
    assert not stop_leaves_note(tmp_path, prompt, [EDIT, bash("make test")], "Done, tests pass.")


@pytest.mark.parametrize("prompt", ["/engram:remember from now on always run the linter first",
                                    "/engram:remember-all", "/engram:forget the old staging host"])
def test_stop_never_fires_on_an_engram_command_even_with_rule_words(tmp_path, prompt):
    assert not stop_leaves_note(tmp_path, prompt, [], "Noted.")


def test_stop_never_fires_on_corpus_turns_where_engram_stored_or_a_command_ran(tmp_path):
    checked = 0
    for turn in corpus():
        if turn["stored"] or turn["prompt"].startswith("/engram:"):
            assert not stop_leaves_note(tmp_path, turn["prompt"], turn["tools"], turn["answer"]), turn["id"]
            checked += 1
    assert checked >= 20


def test_stop_corpus_is_labelled_and_split_as_documented():
    turns = corpus()
    assert len(turns) >= 150 and len({t["id"] for t in turns}) == len(turns)
    assert {t["label"] for t in turns} == {"durable", "none"} and {t["split"] for t in turns} == {"dev", "heldout"}
    assert 0.3 <= sum(t["label"] == "durable" for t in turns) / len(turns) <= 0.5
    for t in turns:  # `stored` says what the tool events say
        assert t["stored"] == any(hooks.stop_trigger.is_store_tool(e["name"]) for e in t["tools"]), t["id"]
        assert not (t["stored"] and t["label"] == "durable"), t["id"]  # a turn where engram stored is handled
    assert not {p.lower() for p in ISSUE_13_TASK_PROMPTS} & {t["prompt"].lower() for t in turns}


@pytest.mark.parametrize(
    "prompt,events,answer,expected",
    [
        ("run the build", [bash("make")], "Build passed.", False),  # routine turn
        # an error cured by an environment variable: knowledge for next time
        ("build the frontend", [bash("npm run build", failed=True, output="error:0308010C"),
                                bash("NODE_OPTIONS=--openssl-legacy-provider npm run build")], "Works with the legacy provider.", True),
        # an error cured after a setup command
        ("run the tests", [bash("pytest -q", failed=True, output="ModuleNotFoundError"), bash("pip install -e '.[dev]'"),
                           bash("pytest -q")], "Installed the dev extra; tests pass.", True),
        # an error cured by editing the code and re-running the same command: the fix is in the diff
        ("fix the paginator", [bash("go test ./...", failed=True), EDIT, bash("go test ./...")], "The fix was the loop bound.", False),
        # a failure the command printed (exit 0), cured by editing the machine's environment: the port it runs on
        ("bring up the app", [bash("curl -s -o /dev/null -w '%{http_code}' localhost:5173/", output="500"), ENV_EDIT,
                              bash("curl -s -o /dev/null -w '%{http_code}' localhost:5173/", output="200")],
         "The database listens on 5433, not 5432; .env now says 5433.", True),
        ("start the worker", [bash("npm run worker", output="Error: connect ECONNREFUSED 127.0.0.1:6379"),
                              {"name": "Write", "input": {"file_path": "/p/docker-compose.override.yml"}}, bash("npm run worker")],
         "Redis was not published; the override file publishes 6379.", True),
        # the same printed failure cured by a code edit: the fix is in the diff
        ("bring up the app", [bash("curl -s -w '%{http_code}' localhost:5173/", output="500"), EDIT,
                              bash("curl -s -w '%{http_code}' localhost:5173/", output="200")], "Fixed the loader.", False),
        # a printed failure nothing cured, and a 500 in the middle of a table, are no fix
        ("check the API", [bash("curl -s -w '%{http_code}' localhost:5173/", output="503"), ENV_EDIT], "It is down.", False),
        ("count requests", [bash("awk '{print $9}' access.log | sort | uniq -c", output="  12 200\n   3 500"), ENV_EDIT,
                            bash("awk '{print $9}' access.log | sort | uniq -c")], "Three 500s.", False),
        # a command run under a wrapper (`timeout 300 ...`) is the command it wraps
        ("run the e2e suite", [bash("timeout 300 npx playwright test", failed=True, output="Terminated"),
                               bash("npx playwright install chromium"), bash("timeout 300 npx playwright test")],
         "The browsers were missing; after installing Chromium the suite passes.", True),
        # a routine command cured by a setup command: the push hook needs the database up
        ("push the branch", [bash("git push", failed=True, output="pre-push: connect ECONNREFUSED 127.0.0.1:5432"),
                             bash("docker compose up -d db && git push")], "The pre-push hook needs the db container.", True),
        # a file that a build made appear: "not there yet", not the environment
        ("check the bundle", [bash("ls dist/app.js", failed=True, output="No such file or directory"), bash("npm run build"),
                              bash("ls dist/app.js")], "Built; dist/app.js is there.", False),
        # a routine command retried with another flag is the day's friction
        ("commit it", [bash("git commit -m 'Fix totals'", failed=True), bash("git commit --no-verify -m 'Fix totals'")],
         "Committed.", False),
        # a routine git rejection
        ("push it", [bash("git push", failed=True), bash("git pull --rebase"), bash("git push")], "Pushed.", False),
        # the same fix, but engram stored during the turn
        ("run the tests", [bash("pytest -q", failed=True), bash("pip install -e '.[dev]'"), bash("pytest -q"), STORE], "Stored.", False),
        ("From now on always use uv, never pip.", [], "Noted.", True),  # a rule for the future
        ("Always use uv for this task, never pip.", [], "Done.", False),  # the same words for this task only
        ("In this repo we always squash-merge PRs.", [], "Noted.", True),  # a project convention
        ("Pick a date library and wire it in.", [EDIT], "I went with Luxon rather than Moment: time zones.", True),  # a decision
        ("Should this be a dataclass or a TypedDict?", [], "A dataclass, because you construct it in code.", False),  # advice
    ],
)
def test_stop_note_only_for_unstored_durable_knowledge(tmp_path, prompt, events, answer, expected):
    assert stop_leaves_note(tmp_path, prompt, events, answer) == expected


# Statements that teach, recognised by the sentence's shape rather than by cue phrases: a declarative
# sentence that generalises, a lasting state with a concrete identifier, a scope wider than the task,
# a person's role. The same words as an order for this turn, or as a question, teach nothing.
TEACHING_STATEMENTS = [
    "Add the retry. Our handlers always return a Result, nothing throws across modules.",
    "Wire up the exporter. The metrics collector is at http://collector.lab.example:4317 for everyone.",
    "Deploy it. The shared cache lives on cache-02:6380 and is flushed nightly.",
    "Open the PR. Rafael reviews anything that touches the billing tables.",
    "Bump the version, and keep changelog entries in past tense in every repo.",
    "Tidy the script. Every service here logs JSON to stdout, never to files.",
    "Cut the release. Locally we only ever build unsigned snapshots.",  # an adverb before the subject
    "Update the check. Since 3.2 the broker listens on `amqps://mq.internal:5671` only.",
    "Add the banner. Team rule: anything behind a flag ships with the flag off.",  # labelled as a rule
    "Write it up. Finance and I decided invoices stay in euros until the migration.",
]
ORDERS_AND_QUESTIONS = [
    "Don't touch any other file in this folder.",
    "Use all the defaults for now and leave every test as it is.",
    "Is the cache at localhost:6380 or somewhere else?",
    "Run `make build` and tell me what fails.",
    "Skip the slow tests for this run, we'll look at them tomorrow.",
    "The client wants a yearly export. Before writing anything: how far back does the data go?",
]


@pytest.mark.parametrize("prompt", TEACHING_STATEMENTS)
def test_a_statement_that_teaches_is_flagged_by_its_shape(tmp_path, prompt):
    assert stop_leaves_note(tmp_path, prompt, [], "Done.")


@pytest.mark.parametrize("prompt", ORDERS_AND_QUESTIONS)
def test_orders_for_this_turn_and_questions_are_not_flagged(tmp_path, prompt):
    assert not stop_leaves_note(tmp_path, prompt, [], "Done.")


def _stop_captures(tmp_path: Path, monkeypatch, prompt: str, events: list[dict], answer: str) -> tuple[list[dict], list]:
    """Run the Stop handler on one turn; the spool entries it queued, and how it nudged the daemon."""
    nudges: list = []
    monkeypatch.setattr(hooks, "nudge", lambda user_dir, spawn=True: nudges.append(spawn))
    user_dir = tmp_path / "user"
    path = turn_transcript(tmp_path / "t.jsonl", prompt, events, answer)
    payload = {"transcript_path": str(path), "stop_hook_active": False, "session_id": SESSION,
               "hook_event_name": "Stop", "cwd": str(tmp_path)}
    assert hooks.on_stop(user_dir, payload) is None
    return [spool.read(p) for p in spool.pending(user_dir)], nudges


def test_a_flagged_turn_is_kept_as_session_knowledge_even_if_no_prompt_follows(tmp_path, monkeypatch):
    """A session's last turn never gets the note; what it taught is queued as knowledge at once."""
    entries, nudges = _stop_captures(
        tmp_path, monkeypatch, "Ship it. The staging API lives at https://api.staging.example:8443 for every client.",
        [], "Deployed to staging.")
    assert [e["op"] for e in entries] == ["hook_capture"] and nudges == [False]  # Stop never starts a daemon
    mem = entries[0]["args"]
    assert mem["category"] == hooks.TURN_KNOWLEDGE_CATEGORY and mem["type"] in ("semantic", "procedural")
    assert mem["importance"] >= 0.5  # above the session -> project promotion bar
    assert "https://api.staging.example:8443" in mem["content"] and "Deployed to staging." in mem["content"]


def test_a_fix_is_kept_with_the_failed_command_and_the_root_cause(tmp_path, monkeypatch):
    events = [bash("pytest -q", failed=True, output="ModuleNotFoundError: No module named 'psycopg'"),
              bash("pip install -e '.[pg]'"), bash("pytest -q")]
    answer = "The tests need the pg extra: psycopg is optional. Installed it; 48 pass."
    entries, _ = _stop_captures(tmp_path, monkeypatch, "run the tests", events, answer)
    mem = entries[0]["args"]
    assert mem["type"] == "procedural" and "fix" in mem["tags"]  # a cure lasts like a procedure, not an episode
    assert "`pytest -q` failed" in mem["content"] and "psycopg is optional" in mem["content"]


def test_a_rule_for_every_project_is_marked_for_the_user_scope_and_leads_its_memory(tmp_path, monkeypatch):
    entries, _ = _stop_captures(tmp_path, monkeypatch,
                                "Commit it. Release notes are written for end users, in every repo I own.", [], "Committed.")
    mem = entries[0]["args"]
    assert mem["metadata"] == {"promote_to": "user"}
    assert mem["content"].startswith("User: Release notes are written for end users") and "Commit it" not in mem["content"]
    (tmp_path / "p").mkdir()
    project_only, _ = _stop_captures(tmp_path / "p", monkeypatch,
                                     "Ship it. The staging API lives at https://api.staging.example:8443 here.", [], "Done.")
    assert "metadata" not in project_only[0]["args"]


def test_a_quiet_turn_queues_nothing(tmp_path, monkeypatch):
    entries, _ = _stop_captures(tmp_path, monkeypatch, "Rename the helper to parse_rows.", [EDIT], "Renamed.")
    assert entries == []


def test_stop_note_reaches_the_next_prompt_once_and_never_blocks(tmp_path):
    user_dir = tmp_path / "user"
    path = turn_transcript(tmp_path / "t.jsonl", "From now on, write commit subjects in the imperative.", [], "Noted.")
    stop = {"transcript_path": str(path), "stop_hook_active": False, "session_id": SESSION, "hook_event_name": "Stop"}
    assert hooks.on_stop(user_dir, stop) is None
    # the follow-up stop of the same turn changes nothing
    assert hooks.on_stop(user_dir, {**stop, "stop_hook_active": True}) is None
    prompt = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "thanks", "cwd": str(tmp_path)}
    other = hooks.on_prompt_submit(user_dir, {**prompt, "session_id": "another-session"})
    assert other is None  # a note belongs to its session
    out = hooks.on_prompt_submit(user_dir, prompt)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.count(NOTE_MARK) == 1 and "store_memory" in context and "rule or preference" in context
    assert len(context) // 4 <= 150  # at most 150 tokens (4 characters a token, as context.estimate_tokens counts)
    assert hooks.on_prompt_submit(user_dir, prompt) is None  # delivered once


def test_an_engram_command_consumes_the_pending_note_silently(tmp_path):
    user_dir = tmp_path / "user"
    hooks.save_stop_note(user_dir, {"session_id": SESSION}, ["fix"])
    prompt = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "/engram:remember-all"}
    assert hooks.on_prompt_submit(user_dir, prompt) is None
    assert hooks.on_prompt_submit(user_dir, {**prompt, "prompt": "ok"}) is None  # gone, not postponed


def test_last_turn_starts_at_the_last_real_prompt_not_at_a_tool_result(tmp_path):
    path = turn_transcript(tmp_path / "t.jsonl", "fix it", [bash("make", failed=True), EDIT], "Fixed.")
    turn = hooks.last_turn(hooks.read_transcript_tail(str(path)))
    assert hooks._blocks(turn[0])[0]["text"] == "fix it"


def test_compact_snapshot_names_recent_requests_and_files(tmp_path):
    path = transcript(tmp_path / "t.jsonl", [
        ("user", "refactor the parser"),
        ("assistant", [{"type": "tool_use", "id": "a", "name": "Edit", "input": {"file_path": "/p/src/parser.py"}}]),
        ("user", [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]),
        ("assistant", [{"type": "text", "text": "Parser now streams tokens."}]),
    ])
    text = hooks.compact_snapshot(hooks.read_transcript_tail(str(path)), "/p")
    assert "refactor the parser" in text and "src/parser.py" in text and "streams tokens" in text


# -- failing open ------------------------------------------------------------------------------------

@pytest.fixture
def env(tmp_path):
    e = make_env(tmp_path)
    yield e
    e.shutdown()


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"session_id": 5}'])
@pytest.mark.parametrize("event", list(hooks.HANDLERS))
def test_every_hook_exits_zero_on_malformed_input(env, event, stdin):
    proc = run_hook(env, event, stdin)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_unknown_event_is_a_usage_error(env):
    proc = run_hook(env, "PostToolUsee", "{}")
    assert proc.returncode == 0 and "unknown hook event" in proc.stderr


def test_capture_is_durable_before_the_hook_returns(tmp_path, monkeypatch):
    """The observation is in the spool (fsync'd) before the hook exits; the daemon is only nudged."""
    nudged = []
    monkeypatch.setattr(hooks, "nudge", lambda user_dir: nudged.append(user_dir))
    payload = sample("PostToolUseFailure", session_id=SESSION, cwd=str(tmp_path))
    hooks.on_post_tool_failure(tmp_path / "u", payload)
    entries = [spool.read(p) for p in spool.pending(tmp_path / "u")]
    assert [e["op"] for e in entries] == ["hook_capture"] and nudged == [tmp_path / "u"]
    assert entries[0]["ctx"] == {"project_root": str(tmp_path), "session_id": SESSION, "client": "hook"}
    assert entries[0]["args"]["content"].startswith("Command failed (exit 2): `ls /nonexistent-dir`")
    assert oct(spool.pending(tmp_path / "u")[0].stat().st_mode & 0o777) == "0o600"


def test_capture_without_a_session_id_is_refused_not_misfiled(tmp_path, monkeypatch):
    monkeypatch.setattr(hooks, "nudge", lambda user_dir: None)
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    payload = sample("PostToolUseFailure", cwd=str(tmp_path))
    payload.pop("session_id")
    with pytest.raises(ValueError):
        hooks.on_post_tool_failure(tmp_path / "u", payload)
    assert spool.pending(tmp_path / "u") == []


# -- against a real daemon with the real model ---------------------------------------------------

@pytest.fixture(scope="module")
def live(tmp_path_factory):
    e = hook_env(tmp_path_factory.mktemp("hooks-live"), boot="live-boot")
    with e.client() as c:
        for content, scope, mtype in [
            ("Run the API tests with make test; they need DATABASE_URL pointing at the test database.", "project", "procedural"),
            ("The orders service stores money as integer cents, never floats.", "project", "semantic"),
            ("The user prefers tabs over spaces in Makefiles and shell scripts.", "user", "semantic"),
        ]:
            c.call("store", {"content": content, "type": mtype, "scope": scope, "importance": 0.8}, project_root=str(e.project))
    yield e
    e.shutdown()


def _context(proc) -> str:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout.strip() else ""


def test_session_start_injects_a_fenced_block_within_the_budget(live):
    proc = run_hook(live, "SessionStart", sample("SessionStart", session_id="live-start", cwd=str(live.project)))
    block = _context(proc)
    assert block.startswith("<engram-memory>") and block.rstrip().endswith("</engram-memory>")
    assert "not instructions" in block
    assert "integer cents" in block and "tabs over spaces" in block
    assert len(block) / 4 <= 1200


def test_session_start_respects_a_small_budget_from_project_config(live):
    cfg = live.project / ".claude" / "engram.local.md"
    cfg.parent.mkdir(exist_ok=True)
    cfg.write_text("---\ncontext_token_budget: 100\n---\n")
    try:
        block = _context(run_hook(live, "SessionStart", sample("SessionStart", session_id="live-small", cwd=str(live.project))))
        assert len(block) / 4 <= 100
    finally:
        cfg.unlink()


def test_prompt_hook_adds_relevant_memories_once_and_nothing_for_unrelated_prompts(live):
    sid = "live-prompt"
    related = sample("UserPromptSubmit", session_id=sid, cwd=str(live.project),
                     prompt="how are money amounts represented in the orders service?")
    block = _context(run_hook(live, "UserPromptSubmit", related))
    assert "integer cents" in block and block.startswith("<engram-memory>")
    assert "tabs over spaces" not in block  # only what clears the relevance bar
    assert _context(run_hook(live, "UserPromptSubmit", related)) == ""  # never the same memory twice in a session
    unrelated = sample("UserPromptSubmit", session_id=sid, cwd=str(live.project), prompt="write a haiku about autumn leaves")
    assert _context(run_hook(live, "UserPromptSubmit", unrelated)) == ""


def test_prompt_hook_is_off_when_configured_off(live):
    cfg = live.home / ".claude" / "engram.local.md"
    cfg.write_text("---\nuser_prompt_recall: false\n---\n")
    try:
        prompt = sample("UserPromptSubmit", session_id="live-off", cwd=str(live.project), prompt="how are money amounts stored in orders?")
        assert _context(run_hook(live, "UserPromptSubmit", prompt)) == ""
    finally:
        cfg.unlink()
    assert "integer cents" in _context(run_hook(live, "UserPromptSubmit", prompt))  # the edit applies at once, both ways


def test_a_short_prompt_that_names_its_work_gets_the_rule_it_needs(live, monkeypatch):
    """A prompt of a few words that names its work ("Ship it.") is recalled for: a standing rule is
    needed exactly there. Only an acknowledgement ("ok, thanks") is skipped, without asking the daemon."""
    with live.client() as c:
        c.call(
            "store",
            {
                "content": "Shipping any fix to production needs a changelog entry and a signed release tag.",
                "type": "procedural",
                "scope": "project",
                "importance": 0.8,
            },
            project_root=str(live.project),
        )
    short = sample("UserPromptSubmit", session_id="live-short", cwd=str(live.project), prompt="Ship it.")
    assert "signed release tag" in _context(run_hook(live, "UserPromptSubmit", short))
    monkeypatch.setattr(hooks, "ask", lambda *a, **k: pytest.fail("an acknowledgement reached the daemon"))
    for ack in ("ok, thanks!", "Sounds good, go ahead.", "Yes please, carry on"):
        assert hooks.on_user_prompt(live.home, sample("UserPromptSubmit", session_id="live-short", prompt=ack)) is None


def test_a_step_shows_the_memory_it_needs_once_and_nothing_for_an_unrelated_step(live, tmp_path):
    """PostToolUseFailure of a command that used the old port shows the memory that names the right
    one (fenced, as data), once per session; an unrelated step shows nothing."""
    project = tmp_path / "billing"
    project.mkdir()
    with live.client() as c:
        c.call("store", {"content": "The billing dev Postgres is published on host port 5433, not 5432; "
                                    "DATABASE_URL must point at localhost:5433.",
                         "type": "semantic", "scope": "project", "importance": 0.7}, project_root=str(project))
    failed = sample("PostToolUseFailure", session_id="live-step", cwd=str(project),
                    tool_input={"command": "psql postgres://app@localhost:5432/billing -c 'select 1'"},
                    error="Exit code 2\npsql: error: connection to server at \"localhost\", port 5432 failed: Connection refused")
    proc = run_hook(live, "PostToolUseFailure", failed)
    assert json.loads(proc.stdout)["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    block = _context(proc)
    assert block.startswith("<engram-memory>") and "not instructions" in block
    assert "## Memory for this step" in block and "localhost:5433" in block
    assert _context(run_hook(live, "PostToolUseFailure", failed)) == ""  # once per session
    other = sample("PostToolUse.Bash", session_id="live-step-2", cwd=str(project), tool_input={"command": "git status"})
    assert _context(run_hook(live, "PostToolUse", other)) == ""
    assert "localhost:5433" in _context(run_hook(live, "PostToolUseFailure", dict(failed, session_id="live-step-3")))


@contextlib.contextmanager
def _daemon_for(tmp_path: Path, name: str):
    """A daemon started by a SessionStart hook for a fresh git project `name`: (env, project)."""
    project = tmp_path / name
    (project / ".git").mkdir(parents=True)
    env = hook_env(tmp_path, boot=None)
    try:
        start_block(env, f"{name}-boot", project)
        yield env, project
    finally:
        env.shutdown()


def test_a_step_that_writes_sql_or_a_commit_shows_the_users_rule_for_it_once(tmp_path):
    """The user's rule for a kind of artifact comes after the step that writes one, though the step
    is far from it in meaning: SQL in a .sql file or inside TypeScript, a commit message. Once a
    session; a step writing none shows none, and a memory naming only the pre-commit hook is no
    rule for commit messages."""
    with _daemon_for(tmp_path, "finance") as (env, project):
        with env.client() as c:
            for content in (
                "Uppercase keywords please, and one clause per line. That's how I want SQL written anywhere, "
                "TypeScript raw queries included.",
                "Whatever happens, never skip the pre-commit hook with --no-verify, in any repo.",
                "Subject under 50 characters and the ticket in a Refs: trailer; that's how I write all my commits.",
            ):
                c.call("store", {"content": content, "type": "semantic", "scope": "user", "importance": 0.7},
                       project_root=str(project))

            def step(session: str, text: str) -> str:
                shown = c.call("hook_step", {"step": text}, project_root=str(project), session_id=session)
                return shown["additional_context"] or ""

            query = ("select o.org_name, sum(m.export_kwh) as kwh from read_parquet('mart/*.parquet') m "
                     "join orgs o using (org_id) group by 1")
            assert "Uppercase keywords" in step("kind-1", f"Write sql/finance/q1_export.sql\n{query}")
            assert "Uppercase keywords" not in step("kind-1", "Edit src/orgs.ts\nconst q = sql`select count(*) from sites`")
            assert "Uppercase keywords" in step("kind-2", "Edit src/orgs.ts\nconst q = sql`select count(*) from sites`")
            assert "Uppercase keywords" not in step("kind-3", "Edit src/lib/money.ts\nexport const cents = (x) => x * 100")
            commit = step("kind-4", "$ git commit -qam 'Fix the Q1 totals' -m 'Refs: LK-4'")
            assert "all my commits" in commit and "--no-verify" not in commit, commit
            assert "all my commits" not in step("kind-5", "$ pre-commit run --all-files")
        # the same through the hook process, from Claude Code's own payload
        write = sample("PostToolUse.Write", session_id="kind-6", cwd=str(project),
                       tool_input={"file_path": str(project / "sql" / "q2.sql"), "content": query})
        assert "Uppercase keywords" in _context(run_hook(env, "PostToolUse", write))


def test_a_prompt_that_asks_for_markdown_or_a_commit_brings_the_users_rule_first(tmp_path):
    """A prompt that names the kind of artifact it asks for (a .md file, a commit) brings the user's
    rule for that kind into its own block, first, though the prompt is far from the rule in
    meaning and its own matches fill the turn: the step that writes the file would come too late.
    Once a session (the step does not repeat it); a prompt naming no kind brings no rule."""
    with _daemon_for(tmp_path, "gatectl") as (env, project):
        with env.client() as c:
            c.call("store", {"content": "Markdown written for me uses one sentence per line, with no hard wrapping, "
                                        "in every repo.", "type": "procedural", "scope": "user", "importance": 0.7},
                   project_root=str(project))
            c.call("store", {"content": "Subject under 50 characters and the ticket in a Refs: trailer; that's how "
                                        "I write all my commits.", "type": "procedural", "scope": "user",
                             "importance": 0.7}, project_root=str(project))
            for n in range(4):  # the installers' own notes, each close to the prompt and long
                c.call("store", {"content": f"Installer test builds for field kits, note {n}: goreleaser builds the "
                                            "installers from a signed tag, and field kits get test builds from the "
                                            "snapshot bucket, never from a release. " + "The kit's installer "
                                            f"checks the signature before it runs, variant {n}. " * 3,
                                 "type": "semantic", "scope": "project", "importance": 0.7},
                       project_root=str(project))

            def prompt(session: str, text: str) -> str:
                shown = c.call("hook_prompt", {"prompt": text}, project_root=str(project), session_id=session)
                return shown["additional_context"] or ""

            docs = prompt("pk-1", "Add a short 'Test builds for field kits' section to docs/installers.md "
                                  "explaining how installers get these.")
            assert "one sentence per line" in docs and "Installer test builds" in docs, docs
            assert docs.index("one sentence per line") < docs.index("Installer test builds")
            assert len(docs) // 4 <= 300  # within the turn's 300 tokens (4 characters a token)
            step = c.call("hook_step", {"step": "Edit docs/installers.md\n## Test builds for field kits"},
                          project_root=str(project), session_id="pk-1")
            assert "one sentence per line" not in (step["additional_context"] or "")  # seen this session
            commit = prompt("pk-2", "Commit it.")
            assert "all my commits" in commit and "one sentence per line" not in commit, commit
            plain = prompt("pk-3", "How do field kits get installer test builds?")
            assert "one sentence per line" not in plain and "all my commits" not in plain, plain


def test_a_step_line_whose_value_was_replaced_carries_the_change(live, tmp_path):
    """A memory of two facts, one replaced since by a memory that does not supersede it (the reviewer
    of auth changes): shown after a step, its line names the replacement, as a prompt's line does."""
    project = tmp_path / "exporter"
    project.mkdir()
    with live.client() as c:
        c.call("store", {"content": "One more thing: the billing exporter should call requireTenant from src/server/auth/tenant.ts "
                                    "instead of reading locals.user inline. Since this changes how the page uses the auth check, "
                                    "Ana Silva has to review it: she reviews every change under src/server/auth.",
                         "type": "semantic", "scope": "project", "importance": 0.7}, project_root=str(project))
        c.call("store", {"content": "Until then Ravi Menon reviews everything auth-related instead. Outcome: PR #88 now has "
                                    "Ravi Menon as reviewer. Context: Ana started leave today, back in May.",
                         "type": "semantic", "scope": "project", "importance": 0.7}, project_root=str(project))
        shown = c.call("hook_step", {"step": "Edit src/server/auth/tenant.ts\nexport function requireTenant(locals)"},
                       project_root=str(project), session_id="live-step-change")
    block = shown["additional_context"] or ""
    assert "requireTenant" in block, shown
    assert "[changed since" in block and "Ravi Menon" in block, block


def test_a_memory_the_start_showed_cut_comes_back_with_the_sentence_the_prompt_is_about(live, tmp_path):
    """The start block showed a long memory cut, its reviewer named in its last sentence; a prompt
    about opening the PR is shown that sentence ("…" for the head the session saw), not the head
    again; a prompt about nothing in it sees nothing of it."""
    project = tmp_path / "gateway"
    project.mkdir()
    long_note = (
        "Right, the gateway team never commits generated code. Whoever consumes a proto change runs buf generate "
        "from proto/ and commits internal/gen in their own PR, and nobody edits those files by hand. Outcome: "
        "Regenerated the golden files and read the diff: the only change is the new level column in "
        "logs_default.txt, which comes from the level field of LogsResponse; internal/gen goes into this PR. For "
        "any future proto change I'll run buf generate from proto/ and commit the result, never hand-edit "
        "generated code. Draft PR #231 is open with Tomasz Wójcik as reviewer, since he owns the gateway protocol."
    )
    assert "Tomasz" not in long_note[:400]
    session = "live-excerpt"
    with live.client() as c:
        c.call("store", {"content": long_note, "type": "semantic", "scope": "project", "importance": 0.7},
               project_root=str(project))
        start = c.call("hook_session_start", {}, project_root=str(project), session_id=session)
        about_pr = c.call("hook_prompt", {"prompt": "Open a PR for the gateway proto change and ask the right reviewer "
                                                     "from the protocol side."},
                          project_root=str(project), session_id=session)
    assert "never commits generated code" in str(start) and "Tomasz" not in str(start), start
    block = about_pr["additional_context"] or ""
    assert "Tomasz Wójcik as reviewer" in block, about_pr
    assert "never commits generated code" not in block and "… " in block, block

def test_a_step_whose_turn_has_little_room_left_shows_its_memory_shorter(live, tmp_path):
    """After a prompt that left the turn too little for a step's full line, the step's memory comes
    on a shorter line (its head, where the command is) instead of not at all."""
    project = tmp_path / "console"
    project.mkdir()
    note = ("Staging deploys are `fly deploy -c fly.staging.toml` from the branch; production only ever deploys "
            "from main through the deploy workflow, never by hand. Outcome: Production stays untouched. Context: "
            "Put the branch on staging so the PM can click through it; both machines updated and the staging "
            "site serves it, with the sign-in page and the org overview working as before.")
    step = {"step": "$ fly deploy -c fly.toml\nError: refusing to deploy the production app from a branch"}
    with live.client() as c:
        c.call("store", {"content": note, "type": "procedural", "scope": "project", "importance": 0.7},
               project_root=str(project))
        c.call("hook_prompt", {"prompt": "write a haiku about autumn leaves", "max_tokens": 130},
               project_root=str(project), session_id="live-short-step")
        shown = c.call("hook_step", step, project_root=str(project), session_id="live-short-step")
    block = shown["additional_context"] or ""
    assert "fly deploy -c fly.staging.toml" in block and shown["tokens"] <= 130, shown
    assert "sign-in page" not in block  # the line is the shorter one



def test_a_turns_steps_only_spend_what_its_prompt_left(live, tmp_path):
    """The prompt block and the steps' blocks of one turn share PROMPT_MAX_TOKENS (the month
    replay's per-prompt bar): a prompt that took nearly all of it leaves the steps nothing."""
    project = tmp_path / "ledger"
    project.mkdir()
    step = {"step": "$ psql -p 5432 ledger\npsql: error: connection to server on port 5432 failed"}
    with live.client() as c:
        c.call("store", {"content": "The ledger dev Postgres listens on port 5433, not 5432.", "type": "semantic",
                         "scope": "project", "importance": 0.7}, project_root=str(project))
        c.call("hook_prompt", {"prompt": "write a haiku about autumn leaves", "max_tokens": 10}, project_root=str(project),
               session_id="live-spent")
        spent = c.call("hook_step", step, project_root=str(project), session_id="live-spent")
        c.call("hook_prompt", {"prompt": "write a haiku about autumn leaves"}, project_root=str(project), session_id="live-spent")
        fresh = c.call("hook_step", step, project_root=str(project), session_id="live-spent")
    assert spent["additional_context"] is None and "budget" in spent["reason"]
    assert "5433" in fresh["additional_context"]  # the next turn's prompt left room


def test_compaction_keeps_the_working_context(live, tmp_path):
    sid = "live-compact"
    run_hook(live, "SessionStart", sample("SessionStart", session_id=sid, cwd=str(live.project)))
    path = transcript(tmp_path / "t.jsonl", [
        ("user", "migrate the invoices table to integer cents"),
        ("assistant", [{"type": "tool_use", "id": "a", "name": "Edit", "input": {"file_path": str(live.project / "db" / "invoices.sql")}}]),
        ("user", [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]),
        ("assistant", [{"type": "text", "text": "Migration written; next: backfill."}]),
    ])
    pre = {"session_id": sid, "cwd": str(live.project), "hook_event_name": "PreCompact", "trigger": "auto",
           "transcript_path": str(path)}
    assert run_hook(live, "PreCompact", pre).returncode == 0
    block = _context(run_hook(live, "SessionStart", sample("SessionStart", session_id=sid, cwd=str(live.project), source="compact")))
    assert "Before compaction" in block and "db/invoices.sql" in block and "next: backfill" in block


def test_session_end_applies_queued_captures_then_promotes(live, tmp_path):
    """The hooks as processes with the real daemon: what a turn taught (Stop) reaches the project and
    its summary; the failed command (scratch) reaches neither."""
    sid = "live-end"
    run_hook(live, "SessionStart", sample("SessionStart", session_id=sid, cwd=str(live.project)))
    failure = sample("PostToolUseFailure", session_id=sid, cwd=str(live.project))
    failure["error"] = "Exit code 3\nerror: the invoices backfill needs the ORDERS_DB_URL variable"
    assert run_hook(live, "PostToolUseFailure", failure).returncode == 0
    path = turn_transcript(tmp_path / "t.jsonl", "Run the backfill. The replica database is at db-replica-3:5432 for every job.",
                           [], "Backfill done against the replica.")
    stop = {**sample("Stop", session_id=sid, cwd=str(live.project)), "transcript_path": str(path), "stop_hook_active": False}
    assert run_hook(live, "Stop", stop).returncode == 0
    end = run_hook(live, "SessionEnd", sample("SessionEnd", session_id=sid, cwd=str(live.project)))
    assert end.returncode == 0, end.stderr
    with live.client() as c:
        found = c.call("recall", {"query": "replica database db-replica-3 backfill", "scope": "project", "limit": 10,
                                  "strengthen": False}, project_root=str(live.project))
        again = c.call("session_end", {}, project_root=str(live.project), session_id=sid)
    texts = {m.get("category"): m["content"] for m in found["memories"]}
    assert "db-replica-3:5432" in texts.get("turn_knowledge", ""), texts  # promoted: the next session can see it
    assert "db-replica-3:5432" in texts.get("session_summary", ""), texts
    assert not any("ORDERS_DB_URL" in m["content"] for m in found["memories"])  # scratch: never promoted nor quoted
    assert again.get("already_ended") or again.get("promoted") == 0  # idempotent


def test_subagent_report_with_substance_is_kept_as_a_session_episode(tmp_path, monkeypatch):
    monkeypatch.setattr(hooks, "nudge", lambda user_dir: None)
    report = ("Found the cause of the flaky checkout test: the payment mock is shared between workers, so "
              "parallel runs overwrite each other's responses. Giving each worker its own mock server fixed it; "
              "token sk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789 was in the logs.")
    base = {"session_id": SESSION, "cwd": str(tmp_path), "hook_event_name": "SubagentStop", "stop_hook_active": False,
            "agent_type": "Explore"}
    hooks.on_subagent_stop(tmp_path / "u", {**base, "last_assistant_message": report})
    hooks.on_subagent_stop(tmp_path / "u", {**base, "last_assistant_message": "Done."})  # nothing worth keeping
    hooks.on_subagent_stop(tmp_path / "u", {**base, "last_assistant_message": report, "stop_hook_active": True})
    entries = [spool.read(p) for p in spool.pending(tmp_path / "u")]
    assert len(entries) == 1
    content = entries[0]["args"]["content"]
    assert content.startswith("Subagent Explore reported: Found the cause") and entries[0]["args"]["tags"] == ["subagent"]
    assert "sk_live_51H8" not in content and "[REDACTED:" in content


def test_subagent_transcript_whose_last_text_block_has_no_text_keeps_nothing(tmp_path, monkeypatch):
    """A text block without its text is an empty report (it used to raise AttributeError on None)."""
    monkeypatch.setattr(hooks, "nudge", lambda user_dir: None)
    path = transcript(tmp_path / "agent.jsonl", [("assistant", [{"type": "text"}])])
    payload = {"session_id": SESSION, "cwd": str(tmp_path), "hook_event_name": "SubagentStop",
               "stop_hook_active": False, "agent_transcript_path": str(path)}
    assert hooks.on_subagent_stop(tmp_path / "u", payload) is None
    assert list(spool.pending(tmp_path / "u")) == []


def test_stop_waits_for_a_transcript_that_lags_behind_the_reported_answer(tmp_path):
    """Claude Code writes the transcript in batches: the Stop hook may run before the turn's lines land.

    Read at once, the stale file ends with the previous turn (which stored its memory), and the
    rule stated in this turn would go unnoticed; the hook re-reads until the reported answer is there.
    """
    import threading

    user_dir = tmp_path / "user"
    path = tmp_path / "t.jsonl"
    transcript(path, [("user", "remember the release tag rule"),
                      ("assistant", [{"type": "tool_use", "id": "s", "name": STORE["name"], "input": {"content": "x"}}]),
                      ("user", [{"type": "tool_result", "tool_use_id": "s", "content": "stored"}]),
                      ("assistant", [{"type": "text", "text": "Stored."}])])
    late = tmp_path / "late.jsonl"
    transcript(late, [*_prompt_entries("From now on, run the linter before you tell me a task is done."),
                      ("assistant", [{"type": "text", "text": "Understood."}])])

    def flush() -> None:
        time.sleep(0.3)
        with open(path, "a") as fh:
            fh.write(late.read_text())

    writer = threading.Thread(target=flush)
    writer.start()
    payload = {"transcript_path": str(path), "stop_hook_active": False, "session_id": SESSION,
               "hook_event_name": "Stop", "last_assistant_message": "Understood."}
    assert hooks.on_stop(user_dir, payload) is None
    writer.join()
    assert len(list((user_dir / hooks.STOP_NOTES_DIR).glob("*.json"))) == 1


def test_stop_gives_up_waiting_for_a_transcript_that_never_holds_the_answer(tmp_path):
    path = turn_transcript(tmp_path / "t.jsonl", "From now on, use tabs.", [], "Noted.")
    payload = {"transcript_path": str(path), "last_assistant_message": "Something else entirely."}
    started = time.monotonic()
    facts = hooks.settled_turn_facts(payload, settle_s=0.2)
    assert 0.2 <= time.monotonic() - started < 1.0
    assert facts["answer"] == "Noted."
    started = time.monotonic()
    hooks.settled_turn_facts({**payload, "last_assistant_message": "  Noted. "}, settle_s=5)
    assert time.monotonic() - started < 0.5  # whitespace aside, the same answer: no wait


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "directory"])
def test_a_transcript_path_that_is_no_regular_file_is_never_read(tmp_path, special):
    """Claude Code names the transcript; a FIFO or a device there held the Stop hook until killed."""
    if special == "fifo":
        path = tmp_path / "t.jsonl"
        os.mkfifo(path)
    elif special == "directory":
        path = tmp_path
    else:
        path = Path(special)
    started = time.monotonic()
    assert hooks.read_transcript_tail(str(path)) == []
    assert time.monotonic() - started < 1.0


# -- what a pull brought, at session start ------------------------------------------------------------

def test_the_session_start_line_says_what_a_pull_brought_in_every_report_shape():
    from engram_mcp.services.hook_ops import team_report_line

    new = {"added": [{"memory_id": f"m{i}", "author": "Alice"} for i in range(10)], "updated": [],
           "authors": {"Alice": 11, "Bob\u202e <b@x>": 1, "unknown": 1}, "conflicts": 1, "left_alone": 2, "pending": 0,
           "redactions": 0, "forgotten": 0, "counts": {"added": 12, "updated": 1}, "review": "engram sync"}
    line = team_report_line(new)
    assert line.startswith("A pull brought: 13 new or changed team memories of this repository (by Alice, Bob")
    assert "unknown" not in line and "1 conflict; 2 files left alone" in line and line.endswith("Review with `engram sync`.")
    assert team_report_line({"added": 1}) .startswith("A pull brought: 1 new or changed team memory")  # counts only
    assert "3 files left alone" in team_report_line({"errors": 3})
    assert "could not be applied: boom" in team_report_line({"error": "boom", "review": "engram sync"})
    assert team_report_line(None) is None and team_report_line({"counts": {"added": 0}}) is None
