"""The shapes of what the hooks capture that the daemon reads back: what a turn taught in the
user's words, and the edits of a file change.

A turn whose teaching is the user's (a rule, a fact, a decision) is kept as
``"User: <their words> Outcome: <Claude's answer>"`` (`interfaces/hooks.turn_knowledge_memory`).
The two parts are trusted differently: the user typed the first, while the answer may repeat a
repository's text. What reaches the user's other projects (`services/sightings`) is the first
part only, so the shape has one home here, for the hook that writes it and the service that
reads it.

A file change carries its edits, (old text, new text) pairs, under EDITS_KEY of its metadata; the
daemon reads the values they swapped from them and keeps only those (`services/hook_ops.capture`).
"""

from __future__ import annotations

#: Metadata key of a file change's edits, as the hook sends them.
EDITS_KEY = "edits"
#: Characters of an edit's old or new text read for the values it swapped. A longer edit is code
#: being written, and is left out whole: cut, every value past the cut would read as gone.
EDIT_TEXT_MAX_CHARS = 1_000
#: Metadata key of a file change as stored: {value: the value an edit wrote over it}.
SWAPS_KEY = "swaps"
#: Metadata key of a memory: {value: {ENDED_BY: the value that took its place, or "" when that is
#: no one value, ENDED_SAID: its own sentence stating what came instead}}, the values it ended:
#: written over by an edit of its session, or ended by name in an older memory (session end
#: records them).
ENDED_KEY = "ended_values"
ENDED_BY = "by"
ENDED_SAID = "said"
#: How a capture of the user's words begins.
USER_LEAD = "User: "
#: What separates the user's words from the outcome Claude reported.
OUTCOME_LEAD = " Outcome: "


def compose(prompt: str, answer: str) -> str:
    """The capture's text: the user's words, then the outcome when there is one."""
    return f"{USER_LEAD}{prompt}" + (f"{OUTCOME_LEAD}{answer}" if answer else "")


def users_words(content: str) -> str | None:
    """The user's words of a capture written by `compose`, without the outcome; None for any other
    text (a fix's or a lesson's capture leads with Claude's account). A user's prompt that itself
    holds the outcome's lead is cut there: less of their text, never any of the answer."""
    if not content.startswith(USER_LEAD):
        return None
    words = content[len(USER_LEAD) :].split(OUTCOME_LEAD, 1)[0].strip()
    return words or None
