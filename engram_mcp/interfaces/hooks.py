"""Claude Code hook entry points: ``python -m engram_mcp.interfaces.hooks <EventName>`` (stdin: hook JSON).

Every hook fails open: whatever goes wrong (no daemon, broken store, garbled input), the
process exits 0 with nothing on stdout, so a broken engram never blocks or breaks a
Claude Code session. Problems go to stderr (visible in ``claude --debug``) and to
``~/.claude/engram/logs/hooks.log`` (1 MiB at most, then moved to ``hooks.log.1``). A daemon that
is simply not running when a step looks for its memory is no problem: nothing is logged.

Two speeds:
  * Capture hooks (PostToolUse, PostToolUseFailure, SubagentStop, PreCompact) run on the
    hot path of a session. They never wait for the stores: they redact, append one entry
    to the durable spool (`spool.py`, fsync'd) and nudge the daemon, which embeds and
    stores it a moment later. Standard library + `redaction` only; ~50 ms.
  * Context hooks (SessionStart, UserPromptSubmit, SessionEnd) need answers, so they ask
    the daemon (`client.py`), starting it when needed, within their timeout.

Stop is a command hook, not a prompt hook (see `docs/architecture.md#stop-hook`): a
cheap scan of this turn's transcript (`stop_trigger`) decides whether the turn produced
knowledge worth keeping that was not stored; if so it leaves a one-line note that the next
UserPromptSubmit hands to the main Claude, which has the whole context. It never blocks:
no extra model request, no transcript upload.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from engram_mcp.core import capture_shapes, spool
from engram_mcp.core.artifacts import STEP_COMMAND_PREFIX
from engram_mcp.core.budget import PROMPT_MAX_TOKENS, estimate_tokens
from engram_mcp.core.display import printable
from engram_mcp.core.errors import DaemonNotRunning, InvalidInput
from engram_mcp.core.ids import format_memory_id, parse_memory_id
from engram_mcp.core.paths import make_private_dirs, rotate_log
from engram_mcp.core.redaction import sanitize
from engram_mcp.daemon.client import ForeignListener, connect_to_daemon, socket_path, spawn_daemon, user_dir_from_env
from engram_mcp.interfaces import stop_trigger

TOOL_PREFIX = stop_trigger.ENGRAM_TOOL_PREFIX
STORE_TOOLS = stop_trigger.STORE_TOOLS
EDIT_TOOLS = stop_trigger.EDIT_TOOLS
SNIPPET_CHARS = 240
ERROR_CHARS = 600
CAPTURE_SCAN_CHARS = 64 * 1024  # end of a command's output that is redacted and searched for errors
CLEAN_SCAN_FACTOR = 8  # _clean redacts this many times its limit of a snippet's start ...
CLEAN_SCAN_MIN_CHARS = 8192  # ... and at least this many characters
SUBAGENT_REPORT_CHARS = 1500
SUBAGENT_MIN_CHARS = 200
TRANSCRIPT_TAIL_BYTES = 2 * 1024 * 1024  # a turn is at the end of the transcript; never read GBs
SNAPSHOT_PROMPTS = 3
NUDGE_TIMEOUT_S = 0.2
SESSION_START_WAIT_S = 25.0
PROMPT_WAIT_S = 6.0
#: PostToolUse's timeout is 5 s, and Claude waits for it after every step; an idle daemon answers
#: in ~20 ms (p95 0.14 s on a month's store). On two cores busy with Claude Code and the hooks' own
#: processes (the month replay in full mode), 1.5 s lost 16 of 152 turns' step blocks and 3 s lost 1.
STEP_WAIT_S = 3.0
STEP_TEXT_CHARS = 600  # of a command, an error's end, or a file's new text: what recall matches a step by
SESSION_END_WAIT_S = 50.0
STOP_CONFIG_WAIT_S = 1.0
STOP_CHANGES_WAIT_S = 1.5  # one recall of the turn's words; Stop has 5 s in all
TURN_CHANGE_CHARS = 4000  # of the prompt, and of the answer, compared with the stored memories
# Claude Code may run the Stop hook before the turn's last lines reach the transcript file; the hook
# then re-reads it until it holds the answer Claude Code reports (`last_assistant_message`), this long at most.
STOP_TRANSCRIPT_SETTLE_S = 1.5
STOP_TRANSCRIPT_POLL_S = 0.05
#: Words of a prompt that only acknowledge or wave on ("ok, thanks", "yes please", "go ahead"):
#: a prompt of these alone names no work to recall memories for. A short prompt that names its
#: work ("Commit it.", "PR please.", "Ship the fix.") does: a standing rule (the sign-off every
#: commit needs, what a PR description opens with) is needed exactly there. A 12-character floor
#: used to skip those too (the eight month worlds: 6 such prompts, 8 needs).
ACKNOWLEDGEMENT_WORDS = frozenset(
    "ok okay k kk yes yeah yep yup y no nope nah sure thanks thank you thx ty cheers cool great nice good "
    "fine perfect awesome lgtm right alright sounds go ahead on continue proceed carry keep going do it "
    "that this please pls done agreed got".split()
)
_PROMPT_WORD_RE = re.compile(r"[^\W_]+")

IMPORTANCE_FILE_CHANGE = 0.3
IMPORTANCE_FAILED_COMMAND = 0.45
IMPORTANCE_SUBAGENT_REPORT = 0.4
IMPORTANCE_COMPACT_SNAPSHOT = 0.6
# A turn the Stop hook flags is kept as knowledge: above the session -> project promotion bar (0.5).
IMPORTANCE_TURN_KNOWLEDGE = 0.7
TURN_KNOWLEDGE_CATEGORY = "turn_knowledge"
TURN_PROMPT_CHARS = 600  # the user's words of a flagged turn kept in its memory
TURN_ANSWER_CHARS = 500  # a fix's answer (its root cause is explained there)
TURN_OUTCOME_CHARS = 200  # the outcome of a turn whose knowledge is in the user's words

STOP_NOTES_DIR = "stop-notes"  # under the user dir: one pending note per session, for the next prompt
STOP_NOTE_MAX_AGE_S = 7 * 24 * 3600  # a note nobody picked up within a week is dropped
DELIVERED_SUFFIX = ".delivered"  # beside a session's note: its prompt carried the note (read by Stop)
TOOL_OUTPUT_CHARS = 400
#: How Claude Code's PostToolUseFailure `error` starts for a failed command: "Exit code 2\n...".
_EXIT_CODE_RE = re.compile(r"\s*Exit code (\d+)\s*\n?")
ERROR_MARKERS = re.compile(r"Traceback \(most recent call last\)|^(?:error|fatal|FAILED|E  )\b|\berror:", re.MULTILINE)


# -- small utilities ------------------------------------------------------------------------


def _line_cut(text: str, limit: int, *, tail: bool) -> str:
    """At most ``limit`` characters from the start (or the end) of ``text``, cut at a line
    boundary: the line the cut falls in is dropped whole, so no secret is left half-named
    (``SSWORD=hunter2``) for the redactor to miss."""
    if len(text) <= limit:
        return text
    if tail:
        part = text[-limit:]
        nl = part.find("\n")
        return part[nl + 1 :] if nl != -1 else part[part.find(" ") + 1 :] if " " in part else ""
    part = text[:limit]
    nl = part.rfind("\n")
    return part[:nl] if nl != -1 else part[: part.rfind(" ")] if " " in part else ""


def _clean(text: Any, limit: int) -> str:
    """Redact secrets and drop <private> spans in the whole text first, then squeeze
    whitespace and cap the length (a cut made before redacting can hide a secret's key
    name or a private key's BEGIN line from the redactor)."""
    if not isinstance(text, str):
        text = "" if text is None else json.dumps(text, ensure_ascii=False)
    # redaction is linear in the text: scan a bounded prefix, cut at a line boundary
    text = sanitize(_line_cut(text, max(CLEAN_SCAN_FACTOR * limit, CLEAN_SCAN_MIN_CHARS), tail=False)).text
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _redacted_tail(text: str) -> str:
    """The redacted end of a command's output: redact first, then let callers cut.

    Only the last ``CAPTURE_SCAN_CHARS`` are scanned (cut at a line boundary), so an output
    of megabytes costs what 64 KB costs; a private key body cut there is still redacted.
    """
    return sanitize(_line_cut(text, CAPTURE_SCAN_CHARS, tail=True)).text


def _project_root(payload: dict[str, Any]) -> str:
    cwd = payload.get("cwd")
    return str(os.environ.get("CLAUDE_PROJECT_DIR") or (cwd if isinstance(cwd, str) and cwd else os.getcwd()))


def _session_id(payload: dict[str, Any]) -> str | None:
    sid = payload.get("session_id") or os.environ.get("CLAUDE_CODE_SESSION_ID")
    return sid if isinstance(sid, str) and sid else None


def _ctx(payload: dict[str, Any]) -> dict[str, Any]:
    return {"project_root": _project_root(payload), "session_id": _session_id(payload), "client": "hook"}


def _rel(path: Any, root: str) -> str:
    if not isinstance(path, str) or not path:
        return "?"
    try:
        return os.path.relpath(path, root) if os.path.isabs(path) and path.startswith(root.rstrip("/") + "/") else path
    except ValueError:
        return path


#: Size at which hooks.log is moved to hooks.log.1 (replacing it) and begun again: a hook logs on
#: every failing call, and nothing else ever trims the file.
HOOKS_LOG_MAX_BYTES = 1024 * 1024


def _log(user_dir: Path, event: str, message: str) -> None:
    print(f"engram: {event}: {message}", file=sys.stderr)
    try:
        logs = make_private_dirs(user_dir / "logs")  # every level 0700, whatever the umask
        rotate_log(logs / "hooks.log", HOOKS_LOG_MAX_BYTES)
        fd = os.open(logs / "hooks.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {event} {message}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


# -- talking to the daemon --------------------------------------------------------------------


def nudge(user_dir: Path, *, spawn: bool = True) -> None:
    """Tell the daemon there is spool to drain; start it if it is not running (and `spawn`). Never waits."""
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(NUDGE_TIMEOUT_S)
    try:
        connect_to_daemon(s, socket_path(user_dir))
        s.sendall(b'{"id":0,"op":"drain","args":{},"ctx":{}}\n')
    except ForeignListener:
        pass  # another user's process holds the socket: never replaced from here
    except OSError:
        if spawn:
            spawn_daemon(user_dir)  # detached; None while engram's Python environment is not complete (no stamp)
    finally:
        s.close()


def capture(user_dir: Path, payload: dict[str, Any], memory: dict[str, Any], *, spawn: bool = True) -> str:
    """Queue one session memory durably and wake the daemon (start it only if `spawn`)."""
    ctx = _ctx(payload)
    if not ctx["session_id"]:
        raise ValueError("hook input has no session_id")
    entry = spool.enqueue(user_dir, "hook_capture", memory, ctx, reason="hook")
    if spawn:
        nudge(user_dir)
    else:
        nudge(user_dir, spawn=False)
    return entry


def ask(
    user_dir: Path, op: str, args: dict[str, Any], payload: dict[str, Any], *, wait_s: float, autostart: bool = True
) -> Any:
    """One synchronous daemon call, bounded by `wait_s`; starts the daemon if needed and allowed."""
    from engram_mcp.daemon.client import DaemonClient

    ctx = _ctx(payload)
    with DaemonClient(
        user_dir, autostart=autostart, timeout=wait_s, start_timeout=wait_s, client_name="hook"
    ) as client:
        return client.call(op, args, project_root=ctx["project_root"], session_id=ctx["session_id"], timeout=wait_s)


# -- what the capture hooks record --------------------------------------------------------------


def file_change_memory(payload: dict[str, Any]) -> dict[str, Any] | None:
    """Write/Edit/MultiEdit → 'Edited src/app.py: `old` → `new`' (episodic, session)."""
    tool = payload.get("tool_name")
    inp = v if isinstance(v := payload.get("tool_input"), dict) else {}
    resp = v if isinstance(v := payload.get("tool_response"), dict) else {}
    root = _project_root(payload)
    path = inp.get("file_path") or inp.get("notebook_path") or resp.get("filePath")
    rel = _rel(path, root)
    if tool == "Write":
        verb = "Created" if resp.get("type") == "create" else "Rewrote"
        lines = str(inp.get("content") or "").count("\n") + (0 if str(inp.get("content") or "").endswith("\n") else 1)
        content = f"{verb} {rel} ({lines} lines)."
    elif tool == "Edit":
        content = f"Edited {rel}: `{_clean(inp.get('old_string'), SNIPPET_CHARS)}` → `{_clean(inp.get('new_string'), SNIPPET_CHARS)}`."
    elif tool == "MultiEdit":
        edits = v if isinstance(v := inp.get("edits"), list) else []
        first = edits[0] if edits and isinstance(edits[0], dict) else {}
        content = (
            f"Edited {rel} ({len(edits)} edits), e.g. `{_clean(first.get('old_string'), SNIPPET_CHARS // 2)}` → "
            f"`{_clean(first.get('new_string'), SNIPPET_CHARS // 2)}`."
        )
    elif tool == "NotebookEdit":
        content = f"Edited notebook {rel}."
    else:
        return None
    ext = os.path.splitext(rel)[1].lstrip(".").lower()
    tags = ["file-change"] + ([ext] if ext and re.fullmatch(r"[a-z0-9]{1,10}", ext) else [])
    memory = {
        "content": _clean(content, 2 * SNIPPET_CHARS + 200),
        "type": "episodic",
        "importance": IMPORTANCE_FILE_CHANGE,
        "category": "file_change",
        "tags": tags,
        "source": {"hook": payload.get("hook_event_name") or "PostToolUse", "tool": tool, "file": _clean(rel, 300)},
    }
    edits = _edit_pairs(tool, inp)
    if edits:
        memory["metadata"] = {capture_shapes.EDITS_KEY: edits}
    return memory


#: Edits of one MultiEdit read for swapped values.
MAX_EDITS_READ = 4


def _edit_pairs(tool: Any, inp: dict[str, Any]) -> list[list[str]]:
    """The (old text, new text) pairs of an Edit or a MultiEdit, redacted, whole: an edit whose
    text is longer than `capture_shapes.EDIT_TEXT_MAX_CHARS` is left out, never cut."""
    raw = [inp] if tool == "Edit" else [e for e in inp.get("edits") or [] if isinstance(e, dict)][:MAX_EDITS_READ]
    limit = capture_shapes.EDIT_TEXT_MAX_CHARS
    pairs = [[_clean(e.get("old_string"), limit), _clean(e.get("new_string"), limit)] for e in raw]
    return [p for p in pairs if p[0] and p[1] and not p[0].endswith("…") and not p[1].endswith("…")]


def command_memory(payload: dict[str, Any], *, failed: bool) -> dict[str, Any] | None:
    """A failed Bash command (or one that printed an error) → episodic session memory."""
    inp = v if isinstance(v := payload.get("tool_input"), dict) else {}
    command = _clean(inp.get("command"), SNIPPET_CHARS)
    if failed:
        if payload.get("is_interrupt"):
            return None
        error = _redacted_tail(str(payload.get("error") or ""))
        m = _EXIT_CODE_RE.match(error)
        code = m.group(1) if m else "?"
        detail = error[m.end() :] if m else error
        head = f"Command failed (exit {code}): `{command}`"
    else:
        resp = v if isinstance(v := payload.get("tool_response"), dict) else {}
        stderr = _redacted_tail(str(resp.get("stderr") or ""))
        stdout = _redacted_tail(str(resp.get("stdout") or ""))
        found = ERROR_MARKERS.search(stderr) or ERROR_MARKERS.search(stdout[-4000:])
        if not found:
            return None
        source_text = stderr if ERROR_MARKERS.search(stderr) else stdout[-4000:]
        detail = source_text[max(0, found.start() - 200) :]
        head = f"Command reported errors: `{command}`"
    tail = _clean(detail, ERROR_CHARS)
    return {
        "content": f"{head}{' — ' + tail if tail else ''}",
        "type": "episodic",
        "importance": IMPORTANCE_FAILED_COMMAND,
        "category": "error",
        "tags": ["failed-command"],
        "source": {"hook": payload.get("hook_event_name") or "PostToolUse", "tool": "Bash"},
    }


# -- transcripts --------------------------------------------------------------------------------


def read_transcript_tail(path: Any) -> list[dict[str, Any]]:
    """The last ~2 MB of a Claude Code transcript (JSONL), as message entries. Only a regular file
    is read, opened without blocking and read to at most that size: a FIFO or a device at the path
    (`/dev/zero`) would otherwise hold the hook past its time limit."""
    if not isinstance(path, str) or not path:
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return []
        size = st.st_size
        os.lseek(fd, max(0, size - TRANSCRIPT_TAIL_BYTES), os.SEEK_SET)
        raw = _read_at_most(fd, TRANSCRIPT_TAIL_BYTES)
    except OSError:
        return []
    finally:
        os.close(fd)
    lines = raw.split(b"\n")
    if size > TRANSCRIPT_TAIL_BYTES:
        lines = lines[1:]  # the first line is probably cut
    out = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(entry, dict)
            and entry.get("type") in ("user", "assistant")
            and isinstance(entry.get("message"), dict)
        ):
            out.append(entry)
    return out


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    content = entry["message"].get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


#: Flags Claude Code sets on `user` entries it writes itself: a command's expansion or a caveat
#: (isMeta), the summary of a compaction (isCompactSummary, isVisibleInTranscriptOnly), which quotes
#: the files the session read word for word, and a subagent's task (isSidechain: the model's words).
_SYNTHETIC_USER_FLAGS = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isSidechain")
#: Text Claude Code writes as a `user` entry for what a local command printed (/cost, `!` shell mode).
_NOT_TYPED_RE = re.compile(r"\s*<(?:local-command-stdout|local-command-stderr|bash-stdout|bash-stderr)>")


def _is_prompt(entry: dict[str, Any]) -> bool:
    """A real user prompt: not a tool result, nor a hook's, command's or compaction's injection (a
    compaction summary read as the prompt made a repository's sentence the user's own words)."""
    if entry.get("type") != "user" or any(entry.get(flag) for flag in _SYNTHETIC_USER_FLAGS):
        return False
    blocks = _blocks(entry)
    if not blocks or not all(b.get("type") == "text" for b in blocks):
        return False
    return not _NOT_TYPED_RE.match(str(blocks[0].get("text") or ""))


def last_turn(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries from the last real user prompt to the end."""
    for i in range(len(entries) - 1, -1, -1):
        if _is_prompt(entries[i]):
            return entries[i:]
    return entries


def _result_text(content: Any) -> str:
    """The text of a tool_result's content (a string or a list of blocks), capped."""
    if isinstance(content, list):
        content = " ".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    return str(content or "")[:TOOL_OUTPUT_CHARS]


def turn_facts(turn: list[dict[str, Any]]) -> dict[str, Any]:
    """What happened in a turn: prompt, final answer, tool events (failed or not), engram stores.

    `events` pairs each tool_use with its tool_result (``failed`` = the result is an error);
    `stored` is true when any engram store-family tool was called in the turn, `stored_after_work`
    when one came after some other tool call (not first thing, as an answer to a memory check does).
    """
    facts: dict[str, Any] = {
        "prompt": "",
        "answer": "",
        "tools": [],
        "events": [],
        "stored": False,
        "stored_after_work": False,
    }
    by_id: dict[str, dict[str, Any]] = {}
    for entry in turn:
        for b in _blocks(entry):
            kind = b.get("type")
            if entry["type"] == "user" and kind == "text" and _is_prompt(entry):
                facts["prompt"] += str(b.get("text") or "") + "\n"
            elif entry["type"] == "assistant" and kind == "text":
                facts["answer"] = str(b.get("text") or "")
            elif kind == "tool_use":
                name = str(b.get("name") or "")
                event: dict[str, Any] = {
                    "name": name,
                    "input": v if isinstance(v := b.get("input"), dict) else {},
                    "failed": False,
                    "output": "",
                }
                facts["tools"].append(name)
                facts["events"].append(event)
                by_id[str(b.get("id") or "")] = event
                store = stop_trigger.is_store_tool(name)
                facts["stored"] = facts["stored"] or store
                worked = any(not t.startswith(TOOL_PREFIX) for t in facts["tools"][:-1])
                facts["stored_after_work"] = facts["stored_after_work"] or (store and worked)
            elif kind == "tool_result":
                used = by_id.get(str(b.get("tool_use_id") or ""))
                if used is not None:
                    used["failed"] = bool(b.get("is_error"))
                    used["output"] = _result_text(b.get("content"))
    return facts


def stop_signals(facts: dict[str, Any], *, note_delivered: bool = False) -> list[str]:
    """Why this turn may hold unstored durable knowledge (keys of `stop_trigger.SIGNAL_TEXT`); empty when not.

    When this turn's prompt carried a memory check (`note_delivered`), the stores Claude made first
    thing answered it: they are about the previous turn, so they do not say that this turn's own
    knowledge was curated (only a store after some of the turn's work does).
    """
    return stop_trigger.stop_signals(dict(facts, stored=curated_this_turn(facts, note_delivered=note_delivered)))


def curated_this_turn(facts: dict[str, Any], *, note_delivered: bool = False) -> bool:
    """Whether Claude stored something about this turn's own work (see `stop_signals`): a store first
    thing in a turn whose prompt carried the memory check answered the check, not this turn."""
    return bool(facts.get("stored")) and not (note_delivered and not facts.get("stored_after_work"))


# The note the next prompt carries (~50 tokens with one signal; measured in bench/stop_bench.py). It rides
# on a prompt whose memory block has its own budget, so every word of it counts against that prompt's tokens.
STOP_NOTE = (
    "engram memory check: the previous turn may hold durable knowledge not stored yet ({signals}). "
    "If it matters for later sessions, store it now with store_memory, then continue; else ignore this silently."
)
STOP_REASON = STOP_NOTE  # the name bench/hooks_bench.py reads


# Added when the user said it holds beyond this repository (`stop_trigger.for_every_project`).
STOP_NOTE_EVERY_PROJECT = " It holds in every project: use scope user."


# Added when the turn gave a stored memory a new value (`changed_memories`): the ids, so the store
# can say which memory the new one replaces (the text is not quoted: the id is enough to recall it).
STOP_NOTE_CHANGED = " It changed what {ids} says: pass supersedes=<that id> when you store the new value."
MAX_CHANGED_IDS = 2


def stop_note(signals: list[str], *, every_project: bool = False, changed: Iterable[str] = ()) -> str:
    """The one-line nudge for these signals (and the scope, when it is wider than the project; the
    memories whose values the turn changed, when that is why it was flagged)."""
    note = STOP_NOTE.format(signals="; ".join(stop_trigger.SIGNAL_TEXT.get(s, s) for s in signals))
    ids = [i for i in map(_memory_id, changed) if i][:MAX_CHANGED_IDS]
    if ids:
        note += STOP_NOTE_CHANGED.format(ids=" or ".join(ids))
    return note + STOP_NOTE_EVERY_PROJECT if every_project else note


def _note_path(user_dir: Path, payload: dict[str, Any]) -> Path | None:
    sid = _session_id(payload)
    if not sid:
        return None
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", sid)[:120]
    return user_dir / STOP_NOTES_DIR / f"{safe}.json"


def _memory_id(raw: Any) -> str | None:
    """`memory:ULID` when `raw` is a memory id, else None: the note file is on disk, and what it
    says goes into Claude's context."""
    try:
        return format_memory_id(parse_memory_id(raw))
    except InvalidInput:
        return None


def save_stop_note(
    user_dir: Path,
    payload: dict[str, Any],
    signals: list[str],
    *,
    every_project: bool = False,
    changed: Iterable[dict[str, Any]] = (),
) -> Path | None:
    """Leave the nudge for this session's next prompt (replacing an unread one) and drop stale notes."""
    path = _note_path(user_dir, payload)
    if path is None:
        return None
    folder = path.parent
    make_private_dirs(folder)  # every level 0700, whatever the umask
    now = time.time()
    for old in folder.iterdir():  # notes, and a crashed writer's or reader's leftovers (*.tmp, *.taken)
        try:
            if now - old.stat().st_mtime > STOP_NOTE_MAX_AGE_S:
                old.unlink()
        except OSError:
            pass
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        note = {"signals": signals, "created": now, "every_project": every_project}
        note["changed"] = [str(m.get("id")) for m in changed][:MAX_CHANGED_IDS]
        os.write(fd, json.dumps(note).encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def take_stop_note(user_dir: Path, payload: dict[str, Any]) -> str | None:
    """The pending nudge of this session, at most once (claimed by an atomic rename), or None.

    An engram slash command consumes it silently: the user is doing the memory work already.
    """
    path = _note_path(user_dir, payload)
    if path is None or not path.exists():
        return None
    claimed = path.with_suffix(f".{os.getpid()}.taken")
    try:
        os.rename(path, claimed)
    except OSError:
        return None  # another process took it, or it vanished
    try:
        data = json.loads(claimed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    finally:
        try:
            claimed.unlink()
        except OSError:
            pass
    prompt = v if isinstance(v := payload.get("prompt"), str) else ""
    signals = [s for s in data.get("signals") or [] if s in stop_trigger.SIGNAL_TEXT] if isinstance(data, dict) else []
    if not signals or stop_trigger.is_engram_command(prompt):
        return None
    if time.time() - float(data.get("created") or 0) > STOP_NOTE_MAX_AGE_S:
        return None
    _mark_delivered(path)
    changed = data.get("changed") if isinstance(data.get("changed"), list) else []
    return stop_note(signals, every_project=bool(data.get("every_project")), changed=changed)


def _mark_delivered(note: Path) -> None:
    """Record that this session's prompt carried a memory check, for the Stop hook of the same turn."""
    try:
        fd = os.open(note.with_suffix(DELIVERED_SUFFIX), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
    except OSError:
        pass


def note_was_delivered(user_dir: Path, payload: dict[str, Any]) -> bool:
    """Whether this turn's prompt carried the session's memory check (read once: the marker is removed)."""
    path = _note_path(user_dir, payload)
    if path is None:
        return False
    try:
        path.with_suffix(DELIVERED_SUFFIX).unlink()
        return True
    except OSError:
        return False


def compact_snapshot(entries: list[dict[str, Any]], root: str) -> str | None:
    """What Claude was doing before compaction: recent prompts, files touched, last answer."""
    prompts = [" ".join(str(b.get("text") or "") for b in _blocks(e)) for e in entries if _is_prompt(e)]
    files: list[str] = []
    for e in entries:
        for b in _blocks(e):
            if b.get("type") == "tool_use" and b.get("name") in EDIT_TOOLS and isinstance(b.get("input"), dict):
                rel = _rel(b["input"].get("file_path") or b["input"].get("notebook_path"), root)
                if rel not in files:
                    files.append(rel)
    answers = [
        b.get("text") for e in entries if e["type"] == "assistant" for b in _blocks(e) if b.get("type") == "text"
    ]
    if not prompts and not files:
        return None
    parts = ["Working context saved before compaction."]
    if prompts:
        parts.append("Recent requests: " + " | ".join(_clean(p, 300) for p in prompts[-SNAPSHOT_PROMPTS:]))
    if files:
        parts.append("Files touched: " + ", ".join(_clean(f, 120) for f in files[-15:]))
    if answers:
        parts.append("Last step: " + _clean(answers[-1], 400))
    return "\n".join(parts)


# -- handlers -------------------------------------------------------------------------------------


def on_session_start(user_dir: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    source = v if isinstance(v := payload.get("source"), str) else "startup"
    result = ask(user_dir, "hook_session_start", {"source": source}, payload, wait_s=SESSION_START_WAIT_S)
    opened = (result or {}).get("session")
    if isinstance(opened, dict) and opened.get("warning"):
        _log(user_dir, "SessionStart", f"degraded: {str(opened['warning'])[:600]}")
    block = (result or {}).get("additional_context")
    note = (result or {}).get("team_note")
    out: dict[str, Any] = {}
    if isinstance(note, str) and note:  # the user sees what a pull brought, not only Claude
        out["systemMessage"] = "engram: " + printable(note)[:600]
    if block:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": block}
    return out or None


def on_user_prompt(
    user_dir: Path, payload: dict[str, Any], max_tokens: int = PROMPT_MAX_TOKENS
) -> dict[str, Any] | None:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not names_work(prompt) or prompt.lstrip().startswith("/"):
        return None
    args = {"prompt": sanitize(prompt).text[:4000], "max_tokens": max(0, max_tokens)}
    result = ask(user_dir, "hook_prompt", args, payload, wait_s=PROMPT_WAIT_S)
    block = (result or {}).get("additional_context")
    if not block:
        return None
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": block}}


def names_work(prompt: str) -> bool:
    """Whether `prompt` has a word beyond acknowledgement (`ACKNOWLEDGEMENT_WORDS`), so that
    memories may be recalled for it."""
    return any(w not in ACKNOWLEDGEMENT_WORDS for w in _PROMPT_WORD_RE.findall(prompt.lower()))


def on_prompt_submit(user_dir: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    """UserPromptSubmit: the relevant memories (`on_user_prompt`) plus the Stop hook's pending note, if any."""
    note = take_stop_note(user_dir, payload)
    try:
        # the note is joined to the memories' block by a newline: the memories get what it leaves
        out = on_user_prompt(
            user_dir, payload, PROMPT_MAX_TOKENS - estimate_tokens("\n" + note) if note else PROMPT_MAX_TOKENS
        )
    except Exception as exc:
        if not note:
            raise
        _log(user_dir, "UserPromptSubmit", f"no memories: {type(exc).__name__}: {str(exc)[:300]}")
        out = None
    if not note:
        return out
    context = (out or {}).get("hookSpecificOutput", {}).get("additionalContext")
    joined = f"{context}\n{note}" if context else note
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": joined}}


def on_post_tool_use(user_dir: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Capture the step as scratch, then show the memory the step most likely needs (`step_memory`)."""
    tool = payload.get("tool_name")
    memory = command_memory(payload, failed=False) if tool == "Bash" else file_change_memory(payload)
    if memory:
        capture(user_dir, payload, memory)
    return step_memory(user_dir, payload, "PostToolUse", failed=False)


def on_post_tool_failure(user_dir: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    if payload.get("tool_name") != "Bash":
        return None
    memory = command_memory(payload, failed=True)
    if memory:
        capture(user_dir, payload, memory)
    return step_memory(user_dir, payload, "PostToolUseFailure", failed=True)


def step_text(payload: dict[str, Any], *, failed: bool) -> str:
    """What a tool step did, in words recall can match: the command (and the end of its error),
    or the file's path and the text written into it. Redacted like every capture."""
    tool = payload.get("tool_name")
    inp = v if isinstance(v := payload.get("tool_input"), dict) else {}
    if tool == "Bash":
        text = STEP_COMMAND_PREFIX + _clean(inp.get("command"), STEP_TEXT_CHARS)
        if failed and not payload.get("is_interrupt"):
            error = _redacted_tail(str(payload.get("error") or ""))
            code = _EXIT_CODE_RE.match(error)
            text += "\n" + _clean(error[code.end() if code else 0 :][-STEP_TEXT_CHARS:], STEP_TEXT_CHARS)
        return text
    path = _rel(inp.get("file_path") or inp.get("notebook_path"), _project_root(payload))
    if tool == "Write":
        body = inp.get("content")
    elif tool == "Edit":
        body = inp.get("new_string")
    elif tool == "MultiEdit":
        edits = v if isinstance(v := inp.get("edits"), list) else []
        body = "\n".join(str(e.get("new_string") or "") for e in edits[:4] if isinstance(e, dict))
    elif tool == "NotebookEdit":
        body = inp.get("new_source")
    else:
        return ""
    return f"{tool} {_clean(path, 300)}\n{_clean(body, STEP_TEXT_CHARS)}"


def step_memory(user_dir: Path, payload: dict[str, Any], event: str, *, failed: bool) -> dict[str, Any] | None:
    """The daemon's `hook_step` block for this tool step, if the daemon is running and has one.

    Never starts the daemon (the capture's nudge does) and waits at most STEP_WAIT_S: a step's
    memory is worth a short wait, not a slow tool call."""
    text = step_text(payload, failed=failed)
    if not text.strip():
        return None
    try:
        result = ask(user_dir, "hook_step", {"step": text[:4000]}, payload, wait_s=STEP_WAIT_S, autostart=False)
    except DaemonNotRunning:  # not started, or gone idle: the step goes without, and says nothing
        return None
    except Exception as exc:
        _log(user_dir, event, f"no step memory: {type(exc).__name__}: {_one_line(exc)}")
        return None
    block = (result or {}).get("additional_context")
    if not block:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}


def on_pre_compact(user_dir: Path, payload: dict[str, Any]) -> None:
    text = compact_snapshot(read_transcript_tail(payload.get("transcript_path")), _project_root(payload))
    if text:
        capture(
            user_dir,
            payload,
            {
                "content": text,
                "type": "working",
                "importance": IMPORTANCE_COMPACT_SNAPSHOT,
                "category": "compact_snapshot",
                "tags": ["pre-compact"],
                "source": {"hook": "PreCompact", "trigger": str(payload.get("trigger") or "")[:20]},
                "dedup": False,
            },
        )


def on_stop(user_dir: Path, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Leave a nudge for the next prompt when the turn holds unstored durable knowledge. Never blocks.

    Blocking would cost one more main-model request per flagged turn and, as a JSON
    ``decision: block``, Claude Code hands the reason to the model twice; the note costs ~55
    input tokens of the next request (see docs/architecture.md#stop-hook).
    """
    if payload.get("stop_hook_active") or os.environ.get("ENGRAM_STOP_HOOK", "").lower() in ("0", "false", "no", "off"):
        return None
    facts = settled_turn_facts(payload)
    if not facts["answer"] and isinstance(payload.get("last_assistant_message"), str):
        facts["answer"] = payload["last_assistant_message"]
    delivered = note_was_delivered(user_dir, payload)
    signals = stop_signals(facts, note_delivered=delivered)
    changed = [] if signals else changed_memories(user_dir, payload, facts, note_delivered=delivered)
    if changed:
        signals = ["changed"]
    if not signals:
        promote_stated(user_dir, payload, stated_project_stores(facts, note_delivered=delivered))
    elif _stop_enabled(user_dir, payload):
        memory = turn_knowledge_memory(facts, signals)
        # the note may say so on the answer's word too ("I'll use it in every repo"): Claude, who
        # saw the turn, decides; only the user's own words carry a memory on to the user scope
        # unasked (an answer repeats what a repository's files made it say)
        every_project = (
            bool(memory)
            and not {"fix", "cause"} & set(signals)
            and stop_trigger.for_every_project(str(facts.get("prompt") or ""), str(facts.get("answer") or ""))
        )
        save_stop_note(user_dir, payload, signals, every_project=every_project, changed=changed)
        if memory and _session_id(payload):
            # Stop runs once a turn within 5 s: it never starts a daemon; the next one applies the queue.
            capture(user_dir, payload, memory, spawn=False)
    return None


def promote_stated(user_dir: Path, payload: dict[str, Any], ids: list[str]) -> None:
    """Queue the project memories Claude stored this turn for the user scope (`hook_promote_stated`),
    durably: the daemon applies it when it next drains (Stop never starts one)."""
    if ids and _session_id(payload) and _stop_enabled(user_dir, payload):
        spool.enqueue(user_dir, "hook_promote_stated", {"ids": ids}, _ctx(payload), reason="hook")
        nudge(user_dir, spawn=False)


#: Store results of one turn carried on to the user scope (hook_ops.MAX_STATED_IDS).
MAX_STATED_STORES = 8
STORE_MEMORY_TOOL = TOOL_PREFIX + "store_memory"


def stated_project_stores(facts: dict[str, Any], *, note_delivered: bool = False) -> list[str]:
    """The ids of the project memories Claude stored in this turn, when the user's words in it say
    the knowledge holds in every project (`stop_trigger.user_says_every_project`: "in all my repos", "my
    commit messages"; never the answer's words alone, which a repository's text can put there): the model judged the scope, yet the user's own words say the fact is needed
    in the other projects, where a project memory is never seen. Stores made first thing in a turn
    whose prompt carried the memory check answered that check about the previous turn, so they are
    left out then (as for `curated_this_turn`). Ids come from engram's own store results only."""
    if not stop_trigger.user_says_every_project(str(facts.get("prompt") or "")):
        return []
    ids: list[str] = []
    worked = False
    for event in facts.get("events") or []:
        name = str(event.get("name") or "")
        if name != STORE_MEMORY_TOOL:
            worked = worked or not name.startswith(TOOL_PREFIX)
            continue
        if event.get("failed") or (note_delivered and not worked):
            continue
        found = _store_result(event)
        if found and found not in ids:
            ids.append(found)
    return ids[:MAX_STATED_STORES]


def _store_result(event: dict[str, Any]) -> str | None:
    """The memory id a store_memory call's result names, when it stored in the project scope."""
    try:
        result = json.loads(str(event.get("output") or ""))
    except ValueError:
        return None
    if not isinstance(result, dict):
        return None
    asked = (event.get("input") or {}).get("scope")
    if (result.get("scope") or asked) != "project":
        return None
    return _memory_id(result.get("memory_id") or result.get("id"))


def changed_memories(
    user_dir: Path, payload: dict[str, Any], facts: dict[str, Any], *, note_delivered: bool = False
) -> list[dict[str, Any]]:
    """The stored memories this turn gave a new value (`hook_turn_changes`), when no shape of the
    turn's words flagged it: "Move it to 03:40 UTC" is an order, yet the remembered 01:15 is now
    wrong. Only for a turn whose prompt orders a change (`stop_trigger.orders_a_change`); asked of
    a running daemon only (Stop never starts one) and bounded in time; nothing when it does not
    answer. A turn where Claude stored something made its own call."""
    prompt = str(facts.get("prompt") or "")
    if stop_trigger.is_engram_command(prompt) or not stop_trigger.orders_a_change(prompt):
        return []
    if curated_this_turn(facts, note_delivered=note_delivered):
        return []
    if not socket_path(user_dir).exists():  # no daemon: nothing to compare with, nothing to say
        return []
    answer = str(facts.get("answer") or "")
    try:
        found = ask(
            user_dir,
            "hook_turn_changes",
            {"prompt": sanitize(prompt).text[:TURN_CHANGE_CHARS], "answer": sanitize(answer).text[:TURN_CHANGE_CHARS]},
            payload,
            wait_s=STOP_CHANGES_WAIT_S,
            autostart=False,
        )
    except Exception as exc:
        _log(user_dir, "Stop", f"changed memories not checked: {type(exc).__name__}: {str(exc)[:200]}")
        return []
    return [m for m in (found or {}).get("changed") or [] if isinstance(m, dict) and m.get("id")]


def turn_knowledge_memory(facts: dict[str, Any], signals: list[str]) -> dict[str, Any] | None:
    """What a flagged turn taught, kept as a session memory at once (the note may never be acted on).

    The note asks Claude for a well-written memory, but it rides on the next prompt, which a
    session's last turn never gets, and Claude may not act on it. So the turn's own evidence is
    kept too: the user's words (a rule, a preference, a decision is stated there) and the
    outcome (a fix's root cause is explained in the answer), redacted and cut. It is knowledge,
    not scratch: session end promotes it, so the next session can see it.
    """
    prompt = _clean(stop_trigger.teaching_part(str(facts.get("prompt") or "")), TURN_PROMPT_CHARS)
    answer = _clean(
        _lesson_first(str(facts.get("answer") or ""), signals),
        TURN_ANSWER_CHARS if _answer_teaches(signals) else TURN_OUTCOME_CHARS,
    )
    if not prompt and not answer:
        return None
    if "fix" in signals:
        failed = stop_trigger.first_cured_failure(list(facts.get("events") or []))
        cmd = _clean(((failed or {}).get("input") or {}).get("command"), SNIPPET_CHARS // 2)
        head = f"Fix found after `{cmd}` failed" if cmd else "Fix found after a failed command"
        content = f"{head}: {answer}" + (f" (asked: {prompt})" if prompt else "")
        kind = "fix"
    elif "cause" in signals:  # the answer explains the failure and its cure
        kind = "cause"
        content = f"Root cause found: {answer}" + (f" (asked: {prompt})" if prompt else "")
    elif signals[0] == "lesson":  # only the answer teaches: what was found, then what was asked
        kind = "lesson"
        content = f"Learned: {answer}" + (f" (asked: {prompt})" if prompt else "")
    else:
        kind = signals[0]  # rule, fact or decision: the user's words carry it
        content = capture_shapes.compose(prompt, answer)
    every_project = kind not in ("fix", "cause") and stop_trigger.user_says_every_project(
        str(facts.get("prompt") or "")
    )
    if every_project:
        # it goes on to the user scope at session end: the user's own words only, never the answer,
        # which may repeat a repository's text (a red-team pass saw CONTRIBUTING's `curl | sudo sh`
        # shown under "User preferences" in every project)
        content = capture_shapes.compose(
            _clean(_with_referent(str(facts.get("prompt") or ""), prompt), TURN_PROMPT_CHARS), ""
        )
    # engram's types are decay paces: how to work (a rule, a fix's cure) lasts like a procedure
    # (30 days), a fact about the project or a decision like semantic memory (7 days); a root
    # cause is not an episode of the day, whatever the turn's failed command suggests.
    mem_type = "procedural" if kind in ("rule", "fix", "cause", "lesson") else "semantic"
    memory = {
        "content": _clean(content, TURN_PROMPT_CHARS + TURN_ANSWER_CHARS + 200),
        "type": mem_type,
        "importance": IMPORTANCE_TURN_KNOWLEDGE,
        "category": TURN_KNOWLEDGE_CATEGORY,
        "tags": ["stop-capture", kind],
        "source": {"hook": "Stop", "signals": list(signals)},
    }
    if every_project:
        memory["metadata"] = {"promote_to": "user"}  # session end carries it on to the user scope
    return memory


#: First words of a teaching sentence that point back at the sentence before it ("She's the PM for both").
_POINTS_BACK = re.compile(r"^(?:she|he|they|it|that|this|these|those|her|his|their)\b", re.IGNORECASE)


def _with_referent(prompt: str, teaching: str) -> str:
    """The teaching part of the user's words, led by the sentence before it when it starts by
    pointing back ("…send the wording to Hanna. She's the PM for both"): without it, the memory
    names no one. Otherwise the teaching part alone (not the task around it, "Commit it.")."""
    teaching = teaching.strip()
    if not teaching or not _POINTS_BACK.match(teaching):
        return teaching
    flat = " ".join(prompt.split())
    at = flat.find(" ".join(teaching.split())[:40])
    if at <= 0:
        return teaching
    before = [x for x in re.split(r"(?<=[.!?])\s+", flat[:at].strip()) if x]
    return f"{before[-1]} {teaching}" if before else teaching


def _answer_teaches(signals: list[str]) -> bool:
    """A fix's root cause and a lesson are explained in the answer: it is kept longer."""
    # a new value is often in the outcome
    return bool({"fix", "cause", "lesson", "changed"} & set(signals))


def _lesson_first(answer: str, signals: list[str]) -> str:
    """The answer with the lesson it states moved to the front (a cut keeps what lasts)."""
    lessons = stop_trigger.lesson_sentences(answer) if "lesson" in signals else []
    rest = answer
    for sentence in lessons:
        rest = rest.replace(sentence, " ", 1)
    return " ".join([*lessons, rest]) if lessons else answer


def _holds_answer(facts: dict[str, Any], expected: str) -> bool:
    """Whether the transcript's last answer is the one Claude Code reported (either may hold only part)."""
    got, want = " ".join(facts["answer"].split()), " ".join(expected.split())
    return bool(got) and (got in want or want in got)


def settled_turn_facts(payload: dict[str, Any], settle_s: float = STOP_TRANSCRIPT_SETTLE_S) -> dict[str, Any]:
    """The facts of the turn that just ended, waiting briefly for a transcript that lags behind.

    Without the wait, a transcript missing the turn's last lines is read as the turn before it
    (another prompt, maybe one that stored its memory), and the turn's own signal is lost.
    """
    expected = payload.get("last_assistant_message")
    deadline = time.monotonic() + settle_s
    while True:
        facts = turn_facts(last_turn(read_transcript_tail(payload.get("transcript_path"))))
        if not isinstance(expected, str) or not expected.strip() or _holds_answer(facts, expected):
            return facts
        if time.monotonic() >= deadline:
            return facts
        time.sleep(STOP_TRANSCRIPT_POLL_S)


def _stop_enabled(user_dir: Path, payload: dict[str, Any]) -> bool:
    """The `stop_hook` config key, asked of a running daemon (default on when none answers)."""
    try:
        cfg = ask(user_dir, "hook_config", {}, payload, wait_s=STOP_CONFIG_WAIT_S, autostart=False)
        return bool((cfg or {}).get("stop_hook", True))
    except Exception:
        return True


def on_subagent_stop(user_dir: Path, payload: dict[str, Any]) -> None:
    """Keep a subagent's final report as an episodic session memory when it has substance.

    Cheaper than blocking the subagent (which may not even have the engram tools): the
    report is one spool entry, and the main Claude, or SessionEnd, decides what lasts.
    """
    if payload.get("stop_hook_active"):
        return None
    report = payload.get("last_assistant_message")
    if not isinstance(report, str):
        entries = read_transcript_tail(payload.get("agent_transcript_path") or payload.get("transcript_path"))
        texts = [
            str(b.get("text") or "")
            for e in entries
            if e["type"] == "assistant"
            for b in _blocks(e)
            if b.get("type") == "text"
        ]
        report = texts[-1] if texts else ""
    if len(report.strip()) < SUBAGENT_MIN_CHARS:
        return None
    agent = str(payload.get("agent_type") or payload.get("subagent_type") or "subagent")[:40]
    capture(
        user_dir,
        payload,
        {
            "content": f"Subagent {agent} reported: {_clean(report, SUBAGENT_REPORT_CHARS)}",
            "type": "episodic",
            "importance": IMPORTANCE_SUBAGENT_REPORT,
            "category": "subagent_report",
            "tags": ["subagent"],
            "source": {"hook": "SubagentStop", "agent": agent},
        },
    )
    return None


def on_session_end(user_dir: Path, payload: dict[str, Any]) -> None:
    reason = str(payload.get("reason") or "session_end")[:40]
    try:
        ask(user_dir, "hook_session_end", {"reason": reason}, payload, wait_s=SESSION_END_WAIT_S)
    except Exception as exc:
        # The daemon could not do it now: queue it; the next daemon applies it after the
        # session's queued observations (the spool is applied oldest first).
        spool.enqueue(user_dir, "hook_session_end", {"reason": reason}, _ctx(payload), reason=f"deferred: {exc}"[:200])
        raise


HANDLERS: dict[str, Callable[[Path, dict[str, Any]], dict[str, Any] | None]] = {
    "SessionStart": on_session_start,
    "UserPromptSubmit": on_prompt_submit,
    "PostToolUse": on_post_tool_use,
    "PostToolUseFailure": on_post_tool_failure,
    "PreCompact": on_pre_compact,
    "Stop": on_stop,
    "SubagentStop": on_subagent_stop,
    "SessionEnd": on_session_end,
}


MAX_PAYLOAD_BYTES = 16 * 1024 * 1024  # hook JSON (a prompt, a tool's output) is far below; never read more
DISCARD_MAX_BYTES = 256 * 1024 * 1024  # the rest of an oversized input is read and dropped, up to this
DISCARD_CHUNK_BYTES = 1024 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")


def _scrub(value: Any) -> Any:
    """`value` with lone surrogates (`"\\ud83d"`: a JS client's emoji cut in half) as U+FFFD:
    they cannot be written as UTF-8 to the spool, a log or stdout."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _discard(source: Any, budget_bytes: int = DISCARD_MAX_BYTES) -> None:
    """Read the rest of an oversized input without keeping it, so Claude Code's write of it
    completes instead of failing on a closed pipe (bounded: a stream may be endless)."""
    if not hasattr(source, "read"):
        return
    try:
        while budget_bytes > 0 and source.read(min(DISCARD_CHUNK_BYTES, budget_bytes)):
            budget_bytes -= DISCARD_CHUNK_BYTES
    except (OSError, ValueError):
        pass


def read_payload(stream: Iterable[str] | Any, limit: int = MAX_PAYLOAD_BYTES) -> dict[str, Any]:
    """The hook's JSON object from `stream` (stdin), or ValueError saying why it is unusable.

    At most `limit` bytes are read; invalid UTF-8 becomes U+FFFD and lone surrogates too, so
    a stray byte does not lose a capture; nesting too deep for the parser, a non-object and
    anything over the limit are refused (ValueError, never RecursionError or MemoryError).
    """
    source = getattr(stream, "buffer", stream)
    if hasattr(source, "read"):
        raw = source.read(limit + 1)
    else:
        raw = "".join(source)
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > limit:
        _discard(source)
        raise ValueError(f"hook input is larger than {limit // (1024 * 1024)} MiB")
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        raise ValueError("stdin is empty")
    try:
        payload = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except MemoryError:
        raise ValueError("hook input too large to parse") from None
    if not isinstance(payload, dict):
        raise ValueError(f"expected a JSON object, got {type(payload).__name__}")
    try:
        return _scrub(payload)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _one_line(text: object, limit: int = 300) -> str:
    return " ".join(str(text).split())[:limit]


def _write_output(out: Any) -> None:
    """Print the hook's answer; if stdout is gone (Claude Code stopped reading), drop it quietly."""
    try:
        data = json.dumps(out, ensure_ascii=False)
        try:
            encoded = data.encode("utf-8")
        except UnicodeError:  # a lone surrogate from a stored memory: escaped, still valid JSON
            encoded = json.dumps(out, ensure_ascii=True).encode()
        sys.stdout.buffer.write(encoded)
        sys.stdout.flush()
    except (OSError, ValueError):
        try:  # nothing may fail again at exit, when Python flushes stdout
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    """Run one hook; always exit 0 (fail open) unless the event name itself is unknown.

    Whatever the input or the failure, the hook prints at most one line to stderr (and the
    hooks log) and never a traceback: a broken engram must never block a session.
    """
    argv = sys.argv[1:] if argv is None else argv
    event = argv[0] if argv else ""
    handler = HANDLERS.get(event)
    if handler is None:
        print(f"engram: unknown hook event {event!r}; expected one of {', '.join(HANDLERS)}", file=sys.stderr)
        return 2 if not argv else 0
    user_dir: Path | None = None
    try:
        user_dir = user_dir_from_env()
        try:
            payload = read_payload(sys.stdin)
        except (ValueError, OSError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            _log(user_dir, event, f"ignored: hook input is not valid hook JSON ({_one_line(exc)})")
            return 0
        out = handler(user_dir, payload)
        if out:
            _write_output(out)
    except BaseException as exc:  # fail open, but say why (RecursionError, MemoryError, KeyboardInterrupt...)
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return 0
        try:
            _log(user_dir or Path(os.devnull), event, f"skipped: {type(exc).__name__}: {_one_line(exc)}")
        except BaseException:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
