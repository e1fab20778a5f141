"""Full mode: every session of a world through the pinned Claude Code CLI with engram installed.

One `claude -p --input-format stream-json` process per session (so SessionStart and SessionEnd
fire once, as in an interactive session), fed the world's prompts one at a time; the model is
the scripted stand-in (`tests/claude_harness.FakeAnthropic`), which answers each turn with the
world's events as real tool calls and then the answer. What the hooks see is what they see in
real work:

* Bash: Claude Code runs a command through `$SHELL`; the replay's SHELL is a small bash wrapper
  that, for the command the stand-in just issued, prints the world's output and exits with its
  status (1 for a failed event), and runs anything else (Claude Code's own shell snapshot)
  with /bin/bash. So the transcript, PostToolUse and PostToolUseFailure carry the world's own
  command text and output.
* Edit, Write, Read act on real files in the project's repository (created from the event when
  missing; a Read comes first where Claude Code requires a file to be read before it is changed).
* engram's processes (hooks, MCP server, daemon) run on the simulated clock: ENGRAM_PYTHON is a
  wrapper that starts engram's Python under libfaketime; Claude Code itself keeps the real clock.

Per turn the stand-in records what engram put in front of it from the requests Claude Code sends
(the SessionStart and UserPromptSubmit hook context, and what PostToolUse and PostToolUseFailure
showed after each step), and the harness calls recall (no
strengthening) and lists what engram created, as in quick mode.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.month import standin
from bench.month.quick import REPO, TOOL_PREFIX, QuickReplay, TurnRecord, _iso, tokens
from bench.month.world import SESSION_END_AFTER_LAST_TURN_MIN, World, turn_time

MARKETPLACE = "engram-dev"
START_LABEL = "SessionStart hook additional context: "
PROMPT_LABEL = "UserPromptSubmit hook additional context: "
FENCE_END = "</engram-memory>"
#: How Claude Code labels a PostToolUse (or PostToolUseFailure) hook's context after a tool result.
STEP_LABEL_RE = re.compile(r"PostToolUse(?:Failure)?:\S+ hook additional context: ")
TURN_TIMEOUT_S = 300.0
#: What Claude Code answers a call to an MCP tool whose server has not connected yet.
NO_TOOL_YET = "No such tool available"
MCP_WAIT_TRIES = 10
MCP_WAIT_S = 1.0
SESSION_END_TIMEOUT_S = 120.0
ALLOWED_TOOLS = f"{TOOL_PREFIX[:-2]},Bash,Edit,Write,Read"

SHELL_WRAPPER = r"""#!/bin/bash
# The month replay's SHELL (bench/month/full.py): the command the stand-in just issued prints the
# world's output and exits with its status; everything else runs in bash.
dir="$(dirname "$0")"
if [ -f "$dir/pending.cmd" ]; then
  # Claude Code quotes the command inside its own script: compare without quotes and backslashes.
  want="$(tr -d "\"'\\\\" < "$dir/pending.cmd")"
  got="$(printf '%s' "$*" | tr -d "\"'\\\\")"
  if [ -n "$want" ] && [[ "$got" == *"$want"* ]]; then
    mv "$dir/pending.cmd" "$dir/taken.cmd"
    cat "$dir/pending.out"
    exit "$(cat "$dir/pending.status")"
  fi
  case "$*" in
    *SNAPSHOT_FILE=*|"-c env") ;;  # Claude Code's own shell snapshot and environment probe
    *eval*)  # a tool command that is not the scripted one: never run a world command for real
      printf '%s\n' "$*" >> "$dir/unmatched.log"
      echo "month replay: the command did not match the scripted one" >&2
      exit 127 ;;
  esac
fi
exec /bin/bash "$@"
"""


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text") or "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def hook_context(body: dict[str, Any], label: str, *, last_turn_only: bool) -> str:
    """The additionalContext a hook gave, as Claude Code put it in the request (see tests/test_claude_harness.py)."""
    messages = body.get("messages") or []
    if last_turn_only:
        last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        messages = messages[last_assistant + 1 :]
    found = ""
    for m in messages:
        for text in _texts(m):
            at = text.find(label)
            if at == -1:
                continue
            rest = text[at + len(label) :]
            end = rest.rfind(FENCE_END)
            cut = [i for i in (rest.find("\n\n# Environment"), rest.find("\n\nToday's date")) if i != -1]
            if end != -1 and (not cut or end < min(cut)):
                tail = rest[end + len(FENCE_END) : min(cut) if cut else None]
                found = rest[: end + len(FENCE_END)] + tail.rstrip()  # a note may follow the fence
            else:
                found = rest[: min(cut)] if cut else rest
    return found.strip()


def step_contexts(body: dict[str, Any]) -> list[str]:
    """The blocks engram's tool hooks showed since the last assistant message (after this turn's
    latest tool results), as Claude Code put them in the request."""
    messages = body.get("messages") or []
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    found: list[str] = []
    for m in messages[last_assistant + 1 :]:
        for text in _texts(m):
            for label in STEP_LABEL_RE.finditer(text):
                rest = text[label.end() :]
                end = rest.find(FENCE_END)
                found.append((rest[: end + len(FENCE_END)] if end != -1 else rest).strip())
    return found


class FullReplay(QuickReplay):
    """Quick mode's bookkeeping (clock, recall, what was stored) around real Claude Code sessions."""

    def __init__(self, world: World, policy: str, folder: Path, *, simulate_time: bool = True) -> None:
        super().__init__(world, policy, folder, simulate_time=simulate_time)
        from tests.claude_harness import ensure_claude_installed

        self.claude = ensure_claude_installed()
        self.shell_dir = folder / "shell"
        self.shell_dir.mkdir(parents=True, exist_ok=True)
        (self.shell_dir / "bash").write_text(SHELL_WRAPPER)
        os.chmod(self.shell_dir / "bash", 0o755)
        self.engram_python = self._engram_python()
        self._install_plugin()
        self._steps: collections.deque[Any] = collections.deque()
        self._turn: dict[str, Any] = {}
        # per store_memory call in flight: its outcome in the run file, the memory, the calls made
        self._stores: dict[str, tuple[dict[str, Any], standin.Memory, int]] = {}

    # -- set-up ---------------------------------------------------------------------------------

    def _engram_python(self) -> Path:
        """ENGRAM_PYTHON: engram's interpreter started on the simulated clock (hooks, MCP server, daemon)."""
        path = self.folder / "clock" / "engram-python"
        path.parent.mkdir(parents=True, exist_ok=True)
        exports = "".join(f"export {k}='{v}'\n" for k, v in self.clock.env().items())
        path.write_text(f'#!/bin/sh\n{exports}exec "{sys.executable}" "$@"\n')
        os.chmod(path, 0o755)
        return path

    def _claude_env(self, api: Any) -> dict[str, str]:
        from tests.claude_harness import isolated_env

        return isolated_env(
            self.home, **api.env(ENGRAM_PYTHON=str(self.engram_python), SHELL=str(self.shell_dir / "bash"))
        )

    def _install_plugin(self) -> None:
        """engram from a copy of this checkout, installed as a user would (marketplace add + install)."""
        from tests.claude_harness import FakeAnthropic, isolated_env

        source = self.folder / "engram-src"
        files = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        for raw in filter(None, files):
            rel = raw.decode()
            src, dst = REPO / rel, source / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                dst.symlink_to(os.readlink(src))
            elif src.is_file():
                shutil.copy2(src, dst)
        with FakeAnthropic() as api:
            env = isolated_env(self.home, **api.env(ENGRAM_PYTHON=str(self.engram_python)))
            for args in (["plugin", "marketplace", "add", str(source)], ["plugin", "install", f"engram@{MARKETPLACE}"]):
                proc = subprocess.run(
                    [str(self.claude), *args], env=env, cwd=self.folder, capture_output=True, text=True, timeout=300
                )
                if proc.returncode != 0:
                    raise RuntimeError(f"claude {' '.join(args)} failed: {proc.stdout[-1000:]} {proc.stderr[-1000:]}")

    def unmatched_commands(self) -> int:
        """Shell invocations the SHELL wrapper refused (a world command that did not match): 0 in a sound replay."""
        log = self.shell_dir / "unmatched.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    # -- one session ----------------------------------------------------------------------------

    def session(self, session: dict[str, Any], start: dt.datetime) -> list[TurnRecord]:
        from tests.claude_harness import FakeAnthropic

        project = session["project"]
        repo = self.repos[project]
        replay = self

        class StandIn(FakeAnthropic):
            def _next_turn(self) -> Any:
                return replay.reply

        self.clock.set(start)
        records: list[TurnRecord] = []
        with StandIn() as api:
            proc = subprocess.Popen(
                [
                    str(self.claude),
                    "-p",
                    "--input-format",
                    "stream-json",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--allowedTools",
                    ALLOWED_TOOLS,
                ],
                cwd=repo,
                env=self._claude_env(api),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
            try:
                previous: dict[str, Any] | None = None
                for turn in session["turns"]:
                    records.append(self.full_turn(proc, session, turn, repo, start, previous))
                    previous = turn
                self.clock.set(
                    turn_time(start, len(session["turns"])) + dt.timedelta(minutes=SESSION_END_AFTER_LAST_TURN_MIN)
                )
                self.wait_for_spool()
                assert proc.stdin is not None
                proc.stdin.close()  # the session ends: SessionEnd runs before claude exits
                proc.wait(timeout=SESSION_END_TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
        self._last_turn_of[project] = session["turns"][-1]
        return records

    def full_turn(
        self,
        proc: subprocess.Popen[str],
        session: dict[str, Any],
        turn: dict[str, Any],
        repo: Path,
        start: dt.datetime,
        previous: dict[str, Any] | None,
    ) -> TurnRecord:
        n = turn["turn"]
        when = self.clock.set(turn_time(start, n))
        record = TurnRecord(session["session_id"], n, sim_time=_iso(when))
        self._turn = {
            "session": session,
            "turn": turn,
            "repo": repo,
            "record": record,
            "fresh": True,
            "previous": previous,
            "read": set(),
        }
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": turn["prompt"]}}) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + TURN_TIMEOUT_S
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"claude exited during {session['session_id']} turn {n}")
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "result":
                break
        sid = self._turn.get("sid") or ""
        record.stop_note = self.note_pending(sid)
        self.wait_for_spool()
        for memory in self.created_since(when, repo, sid):
            (record.scratch if self.is_scratch(memory) else record.stored).append(str(memory.get("content") or ""))
            record.created.append({k: memory.get(k) for k in ("created_at", "scope", "type", "category", "origin")})
        return record

    # -- the stand-in model -----------------------------------------------------------------------

    def reply(self, body: dict[str, Any]) -> Any:
        """The next assistant message of the current turn, decided from the request Claude Code sent."""
        from tests.claude_harness import Text, tool_results

        state = self._turn
        self._note_store_results(tool_results(body))
        if state.get("fresh"):
            state["fresh"] = False
            self._begin_turn(body)
        else:  # after a tool result: what a tool hook showed is in front of Claude before it answers
            for block in step_contexts(body):
                state["record"].show(block)
        if not self._steps:
            return Text(state["turn"]["answer"])
        step = self._steps.popleft()
        return step() if callable(step) else step

    def _begin_turn(self, body: dict[str, Any]) -> None:
        from tests.claude_harness import ToolUse

        state, turn, record = self._turn, self._turn["turn"], self._turn["record"]
        first = turn["turn"] == 1
        start_block = hook_context(body, START_LABEL, last_turn_only=False) if first else ""
        prompt_block = hook_context(body, PROMPT_LABEL, last_turn_only=True)
        record.visible = "\n".join(x for x in (start_block, prompt_block) if x)
        record.injected_tokens = tokens(record.visible)
        if first:
            record.start_tokens = tokens(start_block)
        sid = str(self._session_id_of(body))
        state["sid"] = sid
        recall = self.call("recall", {"query": turn["prompt"], "limit": 5, "strengthen": False}, state["repo"], sid)
        record.recall_top5 = [str(m.get("content") or "") for m in (recall or {}).get("memories") or []][:5]
        before, after = standin.decide(
            self.policy,
            turn,
            prompt_context=prompt_block,
            start_context=start_block,
            previous_turn=state["previous"],
            previous_session_last_turn=self._last_turn_of.get(state["session"]["project"]) if first else None,
        )
        steps: collections.deque[Any] = collections.deque()
        for memory in before:
            steps.append(self._store_step(memory, ToolUse))
        for event in turn["events"]:
            steps.extend(self._event_steps(event, ToolUse))
        for memory in after:
            steps.append(self._store_step(memory, ToolUse))
        self._steps = steps

    @staticmethod
    def _session_id_of(body: dict[str, Any]) -> str | None:
        meta = body.get("metadata") or {}
        try:
            return json.loads(meta.get("user_id") or "{}").get("session_id")
        except (ValueError, AttributeError):
            return None

    def _store_step(self, memory: standin.Memory, tool_use: Any, tries: int = 0) -> Any:
        block = tool_use(TOOL_PREFIX + "store_memory", memory.args())
        outcome = {"action": "sent", "type": memory.type, "scope": memory.scope}
        self._stores[block.id] = (outcome, memory, tries)
        self._turn["record"].stand_in_stores.append(outcome)
        return block

    def _note_store_results(self, results: list[dict[str, Any]]) -> None:
        from tests.claude_harness import ToolUse

        for r in results:
            sent = self._stores.pop(str(r.get("tool_use_id")), None)
            if sent is None:
                continue
            outcome, memory, tries = sent
            content = r.get("content")
            text = " ".join(str(b.get("text") or "") for b in content) if isinstance(content, list) else str(content)
            if NO_TOOL_YET in text and tries < MCP_WAIT_TRIES:
                # Claude Code connects the plugin's MCP server in the background: under load the
                # first call of a session can come before its tools are there. Wait and call again,
                # as a model told "no such tool" would (a store lost here is a replay artefact).
                self._turn["record"].stand_in_stores.remove(outcome)
                time.sleep(MCP_WAIT_S)
                self._steps.appendleft(self._store_step(memory, ToolUse, tries + 1))
                continue
            try:
                data = json.loads(text)
                outcome.update(action=data.get("action"), id=data.get("memory_id"))
            except ValueError:
                outcome.update(action="error" if r.get("is_error") else "unparsed", error=text[:300])

    def _event_steps(self, event: dict[str, Any], tool_use: Any) -> list[Any]:
        """The tool calls for one world event (a Read first where Claude Code requires one)."""
        repo: Path = self._turn["repo"]
        tool, inp = event["tool"], dict(event["input"])
        if tool == "Bash":

            def issue() -> Any:
                (self.shell_dir / "pending.out").write_text(str(event.get("output") or "") + "\n")
                (self.shell_dir / "pending.status").write_text("1" if event.get("error") else "0")
                (self.shell_dir / "pending.cmd").write_text(inp["command"])
                return tool_use("Bash", {"command": inp["command"], "description": "replayed command"})

            return [issue]
        path = repo / inp["file_path"]
        inp["file_path"] = str(path)
        steps: list[Any] = []
        path.parent.mkdir(parents=True, exist_ok=True)
        if tool == "Edit":
            old = str(inp.get("old_string") or "")
            text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
            if old and old not in text:
                path.write_text(
                    text + ("\n" if text and not text.endswith("\n") else "") + old + "\n", encoding="utf-8"
                )
        elif tool == "Read" and not path.exists():
            lines = [ln.split("\t", 1)[1] if "\t" in ln else ln for ln in str(event.get("output") or "").splitlines()]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        if tool in ("Edit", "Write") and path.exists() and str(path) not in self._turn["read"]:
            steps.append(tool_use("Read", {"file_path": str(path)}))
        if tool == "Read" or steps:
            self._turn["read"].add(str(path))
        steps.append(tool_use(tool, inp))
        return steps[-1:] if tool == "Read" else steps
