"""The words that say a rule holds beyond this repository, read by the Stop hook to flag a turn's
knowledge for the user scope: a scope named ("in every repo", "whichever project"), the user's own
things and work ("my commit messages", "every PR I open", "on my machines"), their git habits (how
commit messages are written, how they force-push) and a preference voiced for themself ("I'd
rather", not "I'd rather we ...", which is about this team's ways).

Read on the user's own words only: Claude's answers say "for any future proto change I'll ..." and
"committed with the Refs trailer" of one repository's work (measured: applied to whole memories at
session end, they carried project facts to the user scope and cost the public world 5 needs).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

PREFERENCE = re.compile(
    r"\bI(?:'d| would) (?:much |really |far )?(?:rather|prefer)\b|\bI prefer\b|\bmy preference\b|"
    r"\bI (?:generally |always |really )?(?:want|like|expect)\b[^.!?\n]{0,80}\b(?:in all my|all my|always|in general|everywhere)\b|"
    # "always" or "never" before the want is itself the habit ("I always want them that way")
    r"\bI (?:always|never) (?:want|like|expect)\b|"
    r"\b(?:stop|quit) (?:asking|adding|using|writing|putting)\b|"
    r"\bwhen(?:ever)? you (?:write|add|create|make|open|touch|change)\b[^.!?\n]{0,60}\b(?:always|never)\b|"
    r"\bthat's how I (?:want|like)\b",
    re.IGNORECASE,
)
# The user's own git habits, which go with them to every repository: how their commit messages are
# written, how they force-push ("the ticket goes in a trailer, never the subject line").
GIT_HABIT = re.compile(
    r"\b(?:subject lines?|commit messages?|trailers?|force[- ]push(?:es|ing)?)\b|(?<![\w-])--force\b", re.IGNORECASE
)
# A scope wider than this repository, named: "in every repo", "whatever the project", "in either product".
PROJECTS_SCOPE = (
    r"\b(?:in|for|across|to) (?:any|every|all|each|either|both) (?:of )?(?:my |our |the )?"
    r"(?:repos?|repositories|projects?|codebases?|services|products?|languages?)\b|"
    r"\b(?:whatever|whichever|regardless of|no matter) (?:the |which )?(?:repo|repository|project|codebase|product|language)\b"
)
ACROSS_PROJECTS = re.compile(PROJECTS_SCOPE, re.IGNORECASE)
# The user's own things, which go with them from repository to repository: their commits and pull
# requests (plural: a habit, not "my PR" of this task), their machines and their setup.
PERSONAL_SCOPE = re.compile(
    r"\bmy (?:\w+ ){0,2}(?:commits|commit messages|prs|pull requests|branches|todos|laptops?|machines?|macs?|"
    r"macbook|workstation|(?:build )?box(?:es)?|setup|dotfiles|shell|editor|password (?:store|manager)|keyring|"
    r"keychain)\b|"
    # ... said of the work they do: "on every commit I make", "every PR I open"
    r"\b(?:every|each|any|all(?: the)?) (?:\w+ )?(?:commits?|prs?|pull requests?|branch(?:es)?|todos?) "
    r"I (?:make|open|write|push|raise|send|create|author|tag|leave)\b|"
    # ... or qualified as theirs: "for me, secrets are never in .env files" (not "do this for me")
    r"\bfor me\b[,:]?\s+(?:\w+ ){1,3}(?:is|are|always|never|goes|go|lives?|comes?)\b",
    re.IGNORECASE,
)
# How the user wants Claude to reply to them, whichever repository the reply is about ("don't paste
# whole files back at me", "keep your summaries short").
TO_ME = re.compile(r"\bback (?:at|to) me\b|\byour (?:answers|replies|summaries|explanations)\b", re.IGNORECASE)
# How the user's prose is laid out: a habit of their writing, like their commit messages ("Markdown
# with one sentence per line please, no hard wrapping"), unless the sentence says it is this team's.
PROSE_LAYOUT = re.compile(
    r"\b(?:markdown|prose)\b[^.!?\n]{0,80}\b(?:per line|wrap(?:s|ped|ping)?|line breaks?)\b", re.IGNORECASE
)
# A preference about the team's or this repository's ways ("I'd much rather we stopped growing
# the Fixtures modules") belongs to the project, whoever voices it.
OUR_WAYS = re.compile(
    r"\b(?:we|us|our|here|this (?:repo|repository|codebase|code base|project|team|app|service|crate|package|"
    r"module|library|workspace|monorepo))\b",
    re.IGNORECASE,
)
# A statement that names this repository as its scope ("This repository uses npm instead of pnpm",
# "in this codebase we ..."): an exception of this project, never a change of what holds everywhere.
THIS_PROJECT = re.compile(
    r"\bthis (?:repo|repository|codebase|code base|project|app|service|crate|package|module|library|workspace|"
    r"monorepo)\b|\bin here\b",
    re.IGNORECASE,
)
# A scope wider than this task ("in every repo", "for anything you write"), whatever the sentence's form.
WIDER_SCOPE = re.compile(PROJECTS_SCOPE + r"|\bfor any(?:thing)?\b[^.!?\n]{0,40}\b(?:you|we|I)\b", re.IGNORECASE)
# Anywhere at all, said by the user of their own work ("I've got rg and fd everywhere", "timestamps
# anywhere I have a say") or as a ban ("no emoji anywhere: commits, changelogs"): a scope word for
# what a flagged turn teaches, never itself a sign that it teaches. Not of a thing ("the feed uses
# ATCO codes everywhere", "once a migration is applied anywhere") nor of this team's ways ("no
# Lombok anywhere in this codebase": `OUR_WAYS`).
ANYWHERE = re.compile(r"\b(?:everywhere|anywhere)\b", re.IGNORECASE)
FIRST_PERSON = re.compile(r"\b(?:I|I've|I'm|I'd|I'll|my|me|mine)\b")
BANNED_ANYWHERE = re.compile(r"\b(?:no|never)\b[^.!?\n]{0,40}\b(?:everywhere|anywhere)\b", re.IGNORECASE)
# A habit the user states of themself ("I don't do separate changelog PRs", "I always open drafts"),
# unless its sentence makes it this team's (`OUR_WAYS`).
OWN_HABIT = re.compile(r"\bI (?:don't|do not|never|always) (?:do|use|merge|ship|accept|write|open)\b", re.IGNORECASE)


def holds_everywhere(text: str) -> bool:
    """Whether `text` states something for all the user's work (see the module docstring)."""
    return bool(
        WIDER_SCOPE.search(text)
        or PERSONAL_SCOPE.search(text)
        or GIT_HABIT.search(text)
        or TO_ME.search(text)
        or anywhere_i_work(text)
        or personal_preference(text)
        or prose_habit(text)
        or own_habit(text)
    )


def anywhere_i_work(text: str) -> bool:
    """ "Everywhere" or "anywhere" in a sentence where the user speaks of themself or bans something
    (`ANYWHERE`), not of this team's ways."""
    return any(FIRST_PERSON.search(s) or BANNED_ANYWHERE.search(s) for s in _own_sentences(ANYWHERE, text))


def own_habit(text: str) -> bool:
    """A habit of the user's, in a sentence that does not make it this team's (`OUR_WAYS`)."""
    return _said_as_own(OWN_HABIT, text)


def prose_habit(text: str) -> bool:
    """A layout rule for the user's prose, in a sentence that does not make it this team's (`OUR_WAYS`)."""
    return _said_as_own(PROSE_LAYOUT, text)


def _said_as_own(pattern: re.Pattern[str], text: str) -> bool:
    """Whether a sentence of `text` matches `pattern` without making it this team's (`OUR_WAYS`)."""
    return any(True for _ in _own_sentences(pattern, text))


def _own_sentences(pattern: re.Pattern[str], text: str) -> Iterator[str]:
    """The sentences of `text` that match `pattern` and do not make it this team's (`OUR_WAYS`)."""
    return (s for s in re.split(r"(?<=[.!?])\s+", text) if pattern.search(s) and not OUR_WAYS.search(s))


def personal_preference(prompt: str) -> bool:
    """A preference the user voices for themself, not one about what we do here (`OUR_WAYS` in the
    rest of its sentence)."""
    for m in PREFERENCE.finditer(prompt):
        rest = re.split(r"[.!?\n]", prompt[m.end() :], maxsplit=1)[0]
        if not OUR_WAYS.search(rest):
            return True
    return False
