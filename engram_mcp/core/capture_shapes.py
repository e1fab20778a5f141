"""The shape of what the Stop hook captures that the daemon reads back: what a turn taught in
the user's words.

A turn whose teaching is the user's (a rule, a fact, a decision) is kept as
``"User: <their words> Outcome: <Claude's answer>"`` (`interfaces/hooks.turn_knowledge_memory`).
The two parts are trusted differently: the user typed the first, while the answer may repeat a
repository's text. What reaches the user's other projects (`services/sightings`) is the first
part only, so the shape has one home here, for the hook that writes it and the service that
reads it.
"""

from __future__ import annotations

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
