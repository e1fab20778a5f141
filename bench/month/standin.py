"""The scripted stand-in for Claude: when it stores a memory, and what it writes.

It never reads facts.jsonl (world README, rule 4). What it stores is derived from one turn of
the world as a model would write it after that turn: the user's own words (the prompt), what
came of them (the answer) and, when a command failed on the way, that command and the last
line it printed. Type and scope are chosen from the same words, as a model would: an
episode when a command failed and was dealt with, a procedure when the words describe a
standing way of doing things, a fact otherwise; the user scope when the user's words or the
answer say the rule holds beyond this repository ("in every repo", "for me", "my commits",
"on this Mac"), else the project.

Two policies decide *when*:

* ``diligent`` stores at every turn that teaches something (the world's `teaches` label: the
  issue's upper bound for capture, the one place a label is read);
* ``nudged`` stores only when engram asks: a memory-check note in the context engram gave
  it for this prompt (the Stop hook's note, about the previous turn of the session) or in the
  session-start block (about the last turn of the previous session in this project), or when
  the user runs ``/engram:remember`` (the given text, else the previous turn).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

POLICIES = ("diligent", "nudged")
MEMORY_STYLES = ("full", "concise")
MEMORY_STYLE_ENV = "ENGRAM_MONTH_MEMORY_STYLE"
#: How engram's context asks Claude to store something (the Stop hook's note, interfaces/hooks.py STOP_NOTE).
NOTE_MARKERS = ("engram memory check",)
#: The note's scope, when engram says what it flagged holds in every project (hooks.STOP_NOTE_EVERY_PROJECT).
NOTE_SCOPE = re.compile(r"engram memory check[^\n]*\buse scope (user|project)\b", re.IGNORECASE)
REMEMBER_COMMAND = "/engram:remember"
MAX_CONTENT_CHARS = 1800
FAILURE_LINE_CHARS = 200
IMPORTANCE = 0.7

_USER_SCOPE = re.compile(
    r"\b(?:in )?(?:every|any|all|each) (?:of my )?(?:repos?|repositories|projects?|codebases?)\b|\bfor me\b|"
    r"\bmy (?:\w+ ){0,2}(?:commits?|laptop|machines?|mac|box|setup|prs?|pull requests)\b|"
    r"\b(?:both|all|each|any|every) (?:of )?my (?:projects?|repos?|repositories|codebases?)\b|"
    r"\beverywhere\b|\banywhere\b|\bacross (?:repos|projects)\b|"
    r"\bwhatever the (?:repo|project)\b|\bhow i (?:want|like)\b|\bi prefer\b|\bi (?:moved|switched) to\b|"
    r"\bin either (?:repo|project|product|codebase)\b|\bon this (?:mac|laptop|machine)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")
_DURABLE = re.compile(
    r"\b(?:fyi|heads up|house rule|rules?|we agreed|agreed|decided|settled|always|never|every|whenever|from now on|"
    r"for the future|any more|anymore|no longer|owns?|lives?|moved|default|we use|prefer|i want|policy|must|only|"
    r"instead|because|root cause|so that|i'll|i will|from here on)\b",
    re.IGNORECASE,
)
_DETAIL = re.compile(r"`[^`]+`|\d|/[\w.-]+|--[\w-]+")
_PROCEDURE = re.compile(
    r"\b(?:the flow is|the drill|the steps?|workflow|procedure|always run|first run|run .{0,40} before|"
    r"to release|to deploy|how (?:we|to) )",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Memory:
    """One store_memory call's arguments."""

    content: str
    type: str
    scope: str

    def args(self) -> dict[str, Any]:
        return {"content": self.content, "type": self.type, "scope": self.scope, "importance": IMPORTANCE}


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _failure_note(turn: dict[str, Any]) -> str:
    """'after `cmd` failed (last line)' for the turn's failed commands, or ''."""
    notes = []
    for event in turn.get("events") or []:
        if event.get("error") and event.get("tool") == "Bash":
            lines = [ln for ln in str(event.get("output") or "").splitlines() if ln.strip()]
            last = _squeeze(lines[-1])[:FAILURE_LINE_CHARS] if lines else ""
            notes.append(f"`{_squeeze(str(event['input'].get('command') or ''))[:FAILURE_LINE_CHARS]}` failed ({last})")
    return "; ".join(notes)


def _sentences(text: str) -> list[str]:
    return [x for x in _SENTENCE_END.split(_squeeze(text)) if x]


#: A sentence that points back at the one before it for what it says ("That's how I want SQL
#: written", "This is the rule everywhere") or for whom ("She's the PM for both products"): a
#: model writing the memory keeps that one with it, so the memory names who it is about.
_POINTS_BACK = re.compile(
    r"^(?:that|this|those|these)(?:'s| is| are| was)\b|^same\b|^(?:she|he|they)(?:'s|'re| is| are| was| were)\b",
    re.IGNORECASE,
)
#: A sentence saying who someone is at work, the people a model keeps ("She's the PM for both
#: products", "Aiko Tanabe, our QA lead", "Priya signs off any schema change"): lasting though it
#: names no rule word. Said of someone (a verb of being, or an apposition), not a request that
#: names a role ("tell the pilot lead what changed").
_ROLE = re.compile(
    r"(?:\b(?:is|are|was|were|'s|'re|as)|[,\u2014\u2013])\s+(?:now\s+)?(?:the|our|their|my)\s+(?:[\w-]+\s+){0,2}"
    r"(?:PM|product manager|project manager|lead|maintainer|owner|SRE|manager|designer|reviewer|architect)\b|"
    r"\bsigns? off\b|\bon call\b",
    re.IGNORECASE,
)


#: The user saying a rule holds wherever they work ("for any Markdown you write for me", "in any
#: repo", "how I want SQL written anywhere"): lasting, whatever other words it uses.
_HOLDS_EVERYWHERE = re.compile(
    r"\b(?:in )?(?:every|any|all|each) (?:of my )?(?:repos?|repositories|projects?|codebases?)\b|"
    r"\beverywhere\b|\banywhere\b|\bwhatever the (?:repo|project)\b|\bfor me\b|\bhow i (?:want|like)\b",
    re.IGNORECASE,
)


def _lasting_for_user(sentence: str) -> bool:
    """A sentence of the user's that says something lasting: a rule, a reason, a decision, where or
    who (`_DURABLE`), that it holds wherever they work, or who someone is at work."""
    return bool(_DURABLE.search(sentence) or _HOLDS_EVERYWHERE.search(sentence) or _ROLE.search(sentence))


def _pick(sentences: list[str], *, fallback_all: bool, users: bool = False) -> list[str]:
    """The sentences that say something lasting (a rule, a reason, a decision, where or who, or,
    in the user's words (`users`), that it holds wherever they work); else those with a concrete
    detail (a code span, a number, a path, a flag); else all of them (`fallback_all`) or the
    first. Whole sentences, in their order, each with the one it points back to: a model keeps
    the user's words."""
    for is_point in (_lasting_for_user if users else _DURABLE.search, _DETAIL.search):
        chosen = {i for i, x in enumerate(sentences) if is_point(x)}
        if chosen:
            chosen |= {i - 1 for i in chosen if i > 0 and _POINTS_BACK.match(sentences[i])}
            return [x for i, x in enumerate(sentences) if i in chosen]
    return sentences if fallback_all else sentences[:1]


def memory_style() -> str:
    """`full` (default): the point first, then the rest of the turn (nothing dropped, capture's upper
    bound); `concise`: the point only, as a terse model writes it (shorter context lines, some
    facts lost). Set by run.py --memory-style through ENGRAM_MONTH_MEMORY_STYLE."""
    style = os.environ.get(MEMORY_STYLE_ENV, "full")
    return style if style in MEMORY_STYLES else "full"


def memory_from_turn(turn: dict[str, Any]) -> Memory:
    """The memory a model would write about this turn, from its prompt, events and answer only:
    the user's sentences that state something lasting, then the outcome's; or, when the user
    only asked, the lesson the outcome states first and the request after it."""
    said, done = _sentences(turn["prompt"]), _sentences(turn["answer"])
    key_said, key_done = _pick(said, fallback_all=True, users=True), _pick(done, fallback_all=False)
    rest = [x for x in said if x not in key_said] + [x for x in done if x not in key_done]
    failure = _failure_note(turn)
    content = f"{' '.join(key_said)} Outcome: {' '.join(key_done)}"
    if not any(_lasting_for_user(x) or _PROCEDURE.search(x) for x in said) and any(
        _DURABLE.search(x) for x in done
    ):
        # the user only asked; what was learned is in the outcome ("Root cause: ... From now on ..."),
        # and a model writes that first, the request after it
        lesson = [x for x in done if _DURABLE.search(x)]
        content = f"{' '.join(lesson)} Asked: {' '.join(said)}"
        rest = [x for x in done if x not in lesson]
    if (
        rest and memory_style() == "full"
    ):  # the rest of the turn after the point, as a model's memory adds its context last
        content += f" Context: {' '.join(rest)}"
    if failure:
        content += f" (On the way: {failure}.)"
    words = f"{turn['prompt']} {turn['answer']}"
    kind = "episodic" if failure else "procedural" if _PROCEDURE.search(words) else "semantic"
    # the scope from the whole turn, as a model reads it: the user's words, or the rule as it
    # took it on ("I'll use British spelling ... in every repo"; "Docker on this Mac runs in ...")
    scope = "user" if _USER_SCOPE.search(_squeeze(words)) else "project"
    return Memory(content[:MAX_CONTENT_CHARS], kind, scope)


def memory_from_text(text: str) -> Memory:
    """`/engram:remember <text>`: the user's own words, as given."""
    text = _squeeze(text)
    return Memory(text[:MAX_CONTENT_CHARS], "semantic", "user" if _USER_SCOPE.search(text) else "project")


def asks_to_store(context: str) -> bool:
    """Whether engram's context for this prompt (or session start) asks Claude to store something."""
    low = context.lower()
    return any(marker in low for marker in NOTE_MARKERS)


def decide(
    policy: str,
    turn: dict[str, Any],
    *,
    prompt_context: str,
    start_context: str,
    previous_turn: dict[str, Any] | None,
    previous_session_last_turn: dict[str, Any] | None,
) -> tuple[list[Memory], list[Memory]]:
    """(memories stored before the turn's work, memories stored after it) under `policy`.

    A nudge is acted on first thing in the turn (it is about an earlier turn); a diligent
    store comes once the turn's work is done (it needs the outcome).
    """
    before: list[Memory] = []
    after: list[Memory] = []
    prompt = turn["prompt"].strip()
    if prompt.startswith(REMEMBER_COMMAND):
        given = prompt[len(REMEMBER_COMMAND) :].strip()
        if given:
            before.append(memory_from_text(given))
        elif previous_turn is not None:
            before.append(memory_from_turn(previous_turn))
    if policy == "diligent":
        if turn.get("teaches"):
            after.append(memory_from_turn(turn))
    elif policy == "nudged":
        if start_context and asks_to_store(start_context) and previous_session_last_turn is not None:
            before.append(memory_from_turn(previous_session_last_turn))
        if prompt_context and asks_to_store(prompt_context) and previous_turn is not None:
            memory = memory_from_turn(previous_turn)
            scope = NOTE_SCOPE.search(prompt_context)  # a model follows the scope the note names
            before.append(Memory(memory.content, memory.type, scope.group(1).lower()) if scope else memory)
    else:
        raise ValueError(f"unknown policy {policy!r}; expected one of {POLICIES}")
    return before, after
