"""Quick mode: every session of a world through engram's real hooks, run as processes, on simulated time.

The hooks are the commands of the plugin's `hooks/hooks.json` (with their matchers), given the
JSON payloads Claude Code sends and a transcript in Claude Code's format; the stand-in's
store_memory and recall_memories go to the daemon over its socket, as the MCP server sends
them (client "mcp"). One isolated HOME, one git repository per project. Per turn one line of
the run file that the world's score.py reads (see README.md for each field).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.month import standin
from bench.month.clock import SimClock
from bench.month.transcript import Transcript
from bench.month.world import SESSION_END_AFTER_LAST_TURN_MIN, World, turn_time

REPO = Path(__file__).resolve().parents[2]
HOOKS_JSON = REPO / "hooks" / "hooks.json"
TOOL_PREFIX = "mcp__plugin_engram_engram__"
CHARS_PER_TOKEN = 4  # one tokenizer for the whole run: characters / 4, rounded up (the world's oracle uses it too)
HOOK_TIMEOUT_S = 120.0
DRAIN_WAIT_S = 20.0
DRAIN_POLL_S = 0.02
LIST_LIMIT = 200
EXIT_CODE_OF_FAILED_EVENT = 1  # the world marks a failure without its exit code


def tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.timezone.utc).isoformat()


@dataclass
class HookSpec:
    """One event's commands from hooks/hooks.json: (matcher, command) pairs."""

    entries: list[tuple[str | None, str]] = field(default_factory=list)

    def commands(self, tool: str | None) -> list[str]:
        import re

        return [cmd for matcher, cmd in self.entries if matcher is None or tool is None or re.fullmatch(matcher, tool)]


def load_hooks(plugin_root: Path = REPO) -> dict[str, HookSpec]:
    data = json.loads(HOOKS_JSON.read_text(encoding="utf-8"))
    specs: dict[str, HookSpec] = {}
    for event, groups in data["hooks"].items():
        spec = specs.setdefault(event, HookSpec())
        for group in groups:
            for hook in group.get("hooks") or []:
                if hook.get("type") == "command":
                    cmd = hook["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(plugin_root))
                    spec.entries.append((group.get("matcher"), cmd))
    return specs


@dataclass
class TurnRecord:
    """What the run file gets for one turn, plus the harness's own figures."""

    session_id: str
    turn: int
    visible: str = ""
    recall_top5: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    scratch: list[str] = field(default_factory=list)
    injected_tokens: int = 0
    start_tokens: int | None = None
    stop_note: bool = False
    stand_in_stores: list[dict[str, Any]] = field(default_factory=list)
    created: list[dict[str, Any]] = field(default_factory=list)  # what engram says of each stored memory
    sim_time: str = ""

    def show(self, block: str) -> None:
        """A block engram put in front of Claude later in the turn (after a tool step): seen, and
        counted in the turn's injected tokens."""
        self.visible = "\n".join(x for x in (self.visible, block) if x)
        self.injected_tokens += tokens(block)

    def line(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        return out


class QuickReplay:
    """Drives one world under one policy; `run()` writes the run file and returns its path."""

    def __init__(self, world: World, policy: str, folder: Path, *, simulate_time: bool = True) -> None:
        if policy not in standin.POLICIES:
            raise ValueError(f"policy must be one of {standin.POLICIES}")
        self.world, self.policy, self.folder = world, policy, folder
        folder.mkdir(parents=True, exist_ok=True)
        self.home = folder / "home"
        self.user_dir = self.home / ".claude" / "engram"
        self.clock = SimClock(folder / "clock", simulate=simulate_time)
        self.hooks = load_hooks()
        self.env = self._environment()
        self.repos = {key: self._git_repo(folder / "repos" / key) for key in world.projects}
        self.hook_seconds: dict[str, list[float]] = {}
        self._client: Any = None
        self._saved_environ: dict[str, str] | None = None
        self._last_turn_of: dict[str, dict[str, Any]] = {}  # project -> last turn of its previous session

    # -- set-up ---------------------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        self.home.mkdir(parents=True, exist_ok=True)
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", standin.MEMORY_STYLE_ENV)
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(self.clock.env())
        env.update(HOME=str(self.home), CLAUDE_PLUGIN_ROOT=str(REPO), PYTHONDONTWRITEBYTECODE="1")
        return env

    def _git_repo(self, path: Path) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        if not (path / ".git").exists():
            subprocess.run(["git", "init", "-q", str(path)], check=True, env=self.env)
        return path

    def client(self) -> Any:
        """The stand-in's connection to the daemon (what the MCP server would use); started under the clock."""
        if self._client is None:
            from engram_mcp.daemon.client import DaemonClient

            # A daemon this client starts inherits os.environ: put it on the clock too, until close().
            self._saved_environ = dict(os.environ)
            os.environ.clear()
            os.environ.update(self.env)
            self._client = DaemonClient(self.user_dir, client_name="mcp", timeout=HOOK_TIMEOUT_S)
        return self._client

    def call(self, op: str, args: dict[str, Any], repo: Path, sid: str) -> Any:
        return self.client().call(op, args, project_root=str(repo), session_id=sid)

    # -- hooks ----------------------------------------------------------------------------------

    def hook(self, event: str, payload: dict[str, Any], repo: Path, tool: str | None = None) -> dict[str, Any] | None:
        """Run every command hooks.json registers for `event` (and `tool`); the last JSON answer, if any."""
        answer = None
        env = dict(self.env, CLAUDE_PROJECT_DIR=str(repo))
        for cmd in self.hooks.get(event, HookSpec()).commands(tool):
            started = time.perf_counter()
            proc = subprocess.run(
                shlex.split(cmd),
                input=json.dumps(dict(payload, hook_event_name=event)),
                env=env,
                cwd=str(repo),
                capture_output=True,
                text=True,
                timeout=HOOK_TIMEOUT_S,
            )
            self.hook_seconds.setdefault(event, []).append(time.perf_counter() - started)
            if proc.stdout.strip():
                try:
                    answer = json.loads(proc.stdout)
                except ValueError:
                    pass
        return answer

    @staticmethod
    def context_of(answer: dict[str, Any] | None) -> str:
        if not isinstance(answer, dict):
            return ""
        out = answer.get("hookSpecificOutput") or {}
        text = out.get("additionalContext")
        return text if isinstance(text, str) else ""

    def wait_for_spool(self) -> None:
        """Until the daemon has applied every queued capture (the hooks only spool and nudge)."""
        from engram_mcp.core import spool

        deadline = time.monotonic() + DRAIN_WAIT_S
        while spool.pending(self.user_dir) and time.monotonic() < deadline:
            time.sleep(DRAIN_POLL_S)

    def created_since(self, since: dt.datetime, repo: Path, sid: str) -> list[dict[str, Any]]:
        res = self.call("list", {"after": _iso(since), "limit": LIST_LIMIT}, repo, sid)
        return list(reversed((res or {}).get("memories") or []))  # oldest first

    # -- one session ----------------------------------------------------------------------------

    def run(self) -> Path:
        run_file = self.folder / f"run-{self.policy}.jsonl"
        starts = self.world.session_starts()
        with run_file.open("w", encoding="utf-8") as out:
            for session in self.world.sessions:
                for record in self.session(session, starts[session["session_id"]]):
                    out.write(json.dumps(record.line(), ensure_ascii=False) + "\n")
                out.flush()
        return run_file

    def session(self, session: dict[str, Any], start: dt.datetime) -> list[TurnRecord]:
        project = session["project"]
        repo = self.repos[project]
        sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"engram-month/{self.policy}/{session['session_id']}"))
        slug = str(repo).replace("/", "-")
        transcript = Transcript(self.home / ".claude" / "projects" / slug / f"{sid}.jsonl", sid, str(repo))
        base = {"session_id": sid, "transcript_path": str(transcript.path), "cwd": str(repo)}
        self.clock.set(start)
        start_block = self.context_of(self.hook("SessionStart", dict(base, source="startup"), repo))
        records: list[TurnRecord] = []
        previous: dict[str, Any] | None = None
        for turn in session["turns"]:
            records.append(self.turn(session, turn, repo, sid, base, transcript, start_block, previous))
            previous = turn
        self.clock.set(turn_time(start, len(session["turns"])) + dt.timedelta(minutes=SESSION_END_AFTER_LAST_TURN_MIN))
        self.wait_for_spool()
        self.hook("SessionEnd", dict(base, reason="prompt_input_exit"), repo)
        self._last_turn_of[project] = session["turns"][-1]
        return records

    def turn(
        self,
        session: dict[str, Any],
        turn: dict[str, Any],
        repo: Path,
        sid: str,
        base: dict[str, Any],
        transcript: Transcript,
        start_block: str,
        previous: dict[str, Any] | None,
    ) -> TurnRecord:
        n = turn["turn"]
        when = self.clock.set(turn_time(self.world.session_starts()[session["session_id"]], n))
        record = TurnRecord(session["session_id"], n, sim_time=_iso(when))
        prompt = turn["prompt"]
        transcript.prompt(prompt, when)
        prompt_block = self.context_of(self.hook("UserPromptSubmit", dict(base, prompt=prompt), repo))
        first = n == 1
        record.visible = "\n".join(x for x in ((start_block if first else ""), prompt_block) if x)
        record.injected_tokens = tokens(record.visible)
        if first:
            record.start_tokens = tokens(start_block)
        recall = self.call("recall", {"query": prompt, "limit": 5, "strengthen": False}, repo, sid)
        record.recall_top5 = [str(m.get("content") or "") for m in (recall or {}).get("memories") or []][:5]
        before, after = standin.decide(
            self.policy,
            turn,
            prompt_context=prompt_block,
            start_context=start_block if first else "",
            previous_turn=previous,
            previous_session_last_turn=self._last_turn_of.get(session["project"]) if first else None,
        )
        tool_no = 0
        for memory in before:
            tool_no += 1
            record.stand_in_stores.append(self.store(memory, repo, sid, transcript, f"{sid[:8]}-{n}-{tool_no}"))
        for event in turn["events"]:
            tool_no += 1
            # shown after the step, before the answer: part of what this turn put in front of Claude
            record.show(self.tool_event(event, repo, base, transcript, f"toolu_{sid[:8]}_{n}_{tool_no}"))
        for memory in after:
            tool_no += 1
            record.stand_in_stores.append(self.store(memory, repo, sid, transcript, f"{sid[:8]}-{n}-{tool_no}"))
        transcript.answer(turn["answer"], self.clock.now())
        self.hook("Stop", dict(base, stop_hook_active=False, last_assistant_message=turn["answer"]), repo)
        record.stop_note = self.note_pending(sid)
        self.wait_for_spool()
        for memory in self.created_since(when, repo, sid):
            text = str(memory.get("content") or "")
            (record.scratch if self.is_scratch(memory) else record.stored).append(text)
            record.created.append({k: memory.get(k) for k in ("created_at", "scope", "type", "category", "origin")})
        return record

    @staticmethod
    def is_scratch(memory: dict[str, Any]) -> bool:
        """A capture engram keeps only as scratch of the running session (never shown, promoted or summarised).

        engram marks them `metadata.scratch` (edit and command captures: hook_ops.SCRATCH_CATEGORIES).
        """
        meta = memory.get("metadata")
        return bool(memory.get("scratch") or (isinstance(meta, dict) and meta.get("scratch")))

    def note_pending(self, sid: str) -> bool:
        """Whether the Stop hook left a memory-check note for this session's next prompt."""
        import re

        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", sid)[:120]
        return (self.user_dir / "stop-notes" / f"{safe}.json").exists()

    def tool_event(
        self, event: dict[str, Any], repo: Path, base: dict[str, Any], transcript: Transcript, tool_id: str
    ) -> str:
        """One scripted tool call: in the transcript, then through PostToolUse or PostToolUseFailure;
        returns the block the hook showed after it (`""` if none)."""
        tool, tool_input = event["tool"], dict(event["input"])
        if "file_path" in tool_input:
            tool_input["file_path"] = str(repo / tool_input["file_path"])
        output, failed = str(event.get("output") or ""), bool(event.get("error"))
        transcript.tool_use(tool_id, tool, tool_input, self.clock.now())
        payload = dict(base, tool_name=tool, tool_input=tool_input, tool_use_id=tool_id, permission_mode="default")
        if failed:
            error = f"Exit code {EXIT_CODE_OF_FAILED_EVENT}\n{output}"
            transcript.tool_result(tool_id, error, True, self.clock.now())
            answer = self.hook("PostToolUseFailure", dict(payload, error=error, is_interrupt=False), repo, tool)
        else:
            transcript.tool_result(tool_id, output, False, self.clock.now())
            response = self.tool_response(tool, tool_input, output)
            answer = self.hook("PostToolUse", dict(payload, tool_response=response), repo, tool)
        return self.context_of(answer)

    @staticmethod
    def tool_response(tool: str, tool_input: dict[str, Any], output: str) -> dict[str, Any]:
        """The `tool_response` Claude Code sends with PostToolUse for this tool."""
        if tool == "Bash":
            return {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        if tool == "Write":
            return {"type": "create", "filePath": tool_input["file_path"], "content": tool_input.get("content", "")}
        if tool == "Edit":
            return {
                "filePath": tool_input["file_path"],
                "oldString": tool_input.get("old_string", ""),
                "newString": tool_input.get("new_string", ""),
            }
        return {"file": {"filePath": tool_input.get("file_path", ""), "content": output}}

    def store(
        self, memory: standin.Memory, repo: Path, sid: str, transcript: Transcript, tool_id: str
    ) -> dict[str, Any]:
        """The stand-in's store_memory: a tool call in the transcript (so the Stop hook sees it) and the daemon call."""
        transcript.tool_use(tool_id, TOOL_PREFIX + "store_memory", memory.args(), self.clock.now())
        try:
            result = self.call("store", memory.args(), repo, sid) or {}
            outcome = {
                "action": result.get("action"),
                "id": result.get("memory_id"),
                "type": memory.type,
                "scope": memory.scope,
            }
        except Exception as exc:  # a refused store is a result of the replay, not a crash of it
            outcome = {"action": "error", "error": f"{type(exc).__name__}: {exc}"[:300]}
        transcript.tool_result(tool_id, json.dumps(outcome), outcome.get("action") == "error", self.clock.now())
        return outcome

    def close(self) -> None:
        """Stop the daemon of this replay's HOME and wait for it."""
        from engram_mcp.daemon.client import stop_daemon

        try:
            stop_daemon(self.user_dir)
        except Exception:
            pass
        if self._saved_environ is not None:  # later processes (score.py, the next replay) run on real time
            os.environ.clear()
            os.environ.update(self._saved_environ)
            self._saved_environ = None
