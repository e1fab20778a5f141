"""Does a finished turn hold durable knowledge that engram did not store? (the Stop hook's decision)

The Stop hook (`hooks.on_stop`) reads the turn from the transcript (`hooks.turn_facts`) and
asks `stop_signals` here. Standard library only: hooks run with ``python -S``.

Durable knowledge means one of these (the labelling rules of
`tests/data/stop_corpus.md`, which this is measured against by `bench/stop_bench.py`):

  * ``rule``: the user states a rule, convention or preference *for future work*: a marker of
    time or generality ("from now on", "next time", "whenever", "in all my projects"), a
    declarative "remember that ..." or "remember how ... works", a convention framed as how the
    project works ("in this repo we always ...", "our convention is ..."), a habit in the negative
    ("we don't do workspaces"), or a step tied to a kind of event ("after a dependency bump you
    have to ..."). An imperative alone ("never push to main", "you must handle the empty list",
    "remember to run the linter") is an instruction for this turn: people phrase task
    constraints that way, and they are by far the commoner case.
  * ``fix``: a command failed (its exit status, or what it printed: an HTTP error status, a
    refused connection, a traceback) and a working variant was found: the same program succeeded
    later with an added environment variable or flag, or after a setup command or an edit of a
    file that configures the machine's environment (`.env`, a compose file). A failure cured by
    editing the code and re-running the same command is a code fix that lives in the diff. A
    wrapped command (`timeout 120 pytest`, `sudo -u pg psql`) is the command it wraps; a routine
    one (ls, cat ...) never counts, and git only when a setup command cured it (its hooks may need
    a service).
  * ``decision``: the user announces a choice ("we decided", "let's go with", "we're not going
    to", "we'll stay on"), or the answer makes one ("I went with X rather than Y", or after the
    user asked it to pick one).
  * ``lesson``: the answer states what the turn found out as holding beyond it: a norm about a
    class of things ("Every X needs Y", "Tests for server code need ...", "Anything older than
    90 days can't be ...") or Claude taking a standing rule on ("I'll always ..."). Read from
    the sentence's shape (a modal of norm with a generic subject), not from cue words. A root
    cause found without a failing command (a flaky test, an OOM kill, a hydration mismatch)
    shows up here: the answer says what to do from now on.

Also ``fact`` (the user states a lasting state: where something lives or runs, with an
identifier; who owns what; how a kind of thing is done, "Charts go through assets/js/chart.js").
Measured on the month worlds' labelled turns as well (`bench/stop_bench.py --world`).

It never fires on a turn where engram already stored something (Claude was curating memory
this turn and made its own call) or on an engram slash command (the command is the memory work).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from engram_mcp.core.scope_words import ACROSS_PROJECTS, PREFERENCE, WIDER_SCOPE, holds_everywhere

ENGRAM_TOOL_PREFIX = "mcp__plugin_engram_engram__"
STORE_TOOLS = ("store_memory", "update_memory", "reflect_and_consolidate", "promote_memory")
ENGRAM_COMMAND_PREFIX = "/engram:"

# -- rule / convention / preference (in the user's prompt) -------------------------------------
#: The words that put a rule's time from now on: in the user's words anywhere (FUTURE_MARKERS), in
#: the answer at a clause's start (FUTURE_LEAD).
FROM_NOW_ON = r"from now on|from here on|going forward|in (?:the )?future"
FUTURE_MARKERS = re.compile(
    r"\b(?:" + FROM_NOW_ON + r"|moving forward|for (?:the )?future|next time|"
    r"whenever|every time|each time|for later|from today|for all (?:future|new)|in general|generally|as a rule|"
    r"in all (?:my|our) (?:projects|repos|repositories|code)|(?:for|in) (?:all|every) (?:my|our) (?:projects|repos)|"
    r"(?:don't|do not|never)\b[^.!?\n]{0,60}\bever\b|\bever again)\b",
    re.IGNORECASE,
)
REMEMBER_THAT = re.compile(
    r"\b(?:remember|keep in mind|bear in mind|note|know|be aware) that\b|\bkeep in mind\b|"
    r"\bnote for (?:next time|later|the future)\b|\bjust so you know\b|\bfor future tasks\b|\bfor the record\b|"
    # a reminder of how things stand, its statement right after it ("Remember we still support
    # Android 8"); "Remember to ..." is an order
    r"(?:^|(?<=[.!?]\s))remember,? (?:we|I|you|our|my|it's|that's|there's)\s|"
    # a reminder handed over as such, starting its sentence ("Reminder that every string goes in
    # both files"), not a reminder the code sends ("queueing a reminder that can't go anywhere")
    # (a bounded run of blanks after the sentence's end: an unbounded one made each of a long run of
    # blank lines rescan the rest of the run, quadratic in its length)
    r"(?:^|(?<=[.!?\n])[ \t]{0,4}|\b(?:just|quick|friendly|gentle) (?:a )?)reminder(?: that\b|:)",
    re.IGNORECASE,
)
CONVENTION = re.compile(
    r"\b(?:in|for) this (?:repo|repository|project|codebase|team|monorepo)\b[^.!?\n]{0,30}\bwe\b|"
    r"\bfor this (?:repo|repository|project|codebase):|"
    r"\bour (?:\w+ )?(?:convention|policy|rule|standard|style guide|practice)s? (?:is|are|says)\b|"
    r"\b(?:the|a) (?:rule|convention|policy) here\b|\bteam (?:policy|convention|rule)\b|"
    r"\bhow we do (?:\w+ )?(?:here|things)\b|\bthe team agreed\b|"
    # a way of working named as the user's or the team's ("How I like commit messages: ...",
    # "That's how we work day to day here")
    r"(?:^|(?<=[.!?]\s))(?:\w+,?\s+)?how (?:I|we) (?:like|want|write|name|do|handle|prefer) [\w' -]{1,40}:|"
    r"\b(?:that's|this is|that is) how (?:we|I) (?:work|do it|do things|roll|like it|want it)\b|"
    r"\b(?:that's|this is|that is) (?:the|our) (?:usual )?(?:drill|routine|process|procedure|workflow|norm)\b|"
    r"\b(?:the|our) (?:usual )?(?:drill|routine|process|procedure|workflow) (?:here|in this (?:repo|project))\s*(?::|is\b|goes\b)|"
    r"\b(?:all )?our (?:\w+ )?(?:services|repos|projects|apps) (?:always |all )?(?:use|log|run|must|should)\b|"
    r"\bwe (?:always|never|prefer)\b[^.!?\n]{0,60}\b(?:here|in this|across|in our)\b|"
    r"\b(?:doesn't|does not|don't|do not) count as \w+ until\b|\b(?:isn't|is not|aren't|are not) (?:done|finished|deployed|released|merged) until\b",
    re.IGNORECASE,
)


# One way over another, with the reason after it ("With --force-with-lease, not a bare --force:
# the handheld devs push fixups onto my branches"; "one sentence per line please, no hard wrapping;
# it keeps the diffs small"): a reason is given for what holds beyond this one order.
REASONED_CONTRAST = re.compile(
    r"(?:,|\bplease,?)\s+(?:not|no|never)\s+(?:a |an |the )?[^.;:!?\n]{1,40}?[:;]\s+"
    r"(?:it|that|the|a|an|they|we|our|my|i|i've|i'm|there|[a-z]+s)(?![\w'])[^.!?\n]{10,}",
    re.IGNORECASE,
)
# What the user does not want done ("I don't want real logic inside @task functions"): a rule, about
# this code as often as about the user's ways, so no sign of a scope (unlike PREFERENCE).
UNWANTED = re.compile(r"\bI (?:don't|do not|never) want\b", re.IGNORECASE)
# ... or what is not done at all, a habit said in the negative ("We don't do workspaces", "I don't
# do separate changelog PRs", "we never merge on a Friday").
NOT_DONE = re.compile(r"\b(?:I|we) (?:don't|do not|never) (?:do|allow|accept|ship|merge)\b", re.IGNORECASE)
# How something works, handed over to be kept ("Remember how login works here: ORCID through ...").
REMEMBER_HOW = re.compile(r"^(?:\w+,?\s+)?(?:remember|note|know) (?:how|where|who|which)\b", re.IGNORECASE)
# A step tied to a kind of event, said to anyone ("After a dependency bump you have to wipe
# priv/plts"): a procedure; "you have to" alone is this task's order.
EVENT_PROCEDURE = re.compile(
    r"^(?:after|before|when|whenever|once|each time) (?:a|an|any|every|each) [^,.;:]{1,50}?,? "
    r"you (?:have to|need to|must|should|'ve got to)\b",
    re.IGNORECASE,
)


# -- statements of lasting state, read from the sentence's shape (not from cue phrases) --------------
# A declarative sentence starts with its subject (a pronoun, a determiner, a name and its verb);
# an imperative starts with its verb ("Use", "Leave", "Don't"), and one-off orders are imperatives.
DECLARATIVE_START = re.compile(
    r"^(?:we|we've|we're|we'll|you|our|the|my|i|i'm|i've|it|its|it's|this|that|that's|these|those|there|there's|"
    r"he|she|they|he's|she's|they're|everything|nothing|anything|nobody|everyone|everybody|every|all|any|no|"
    r"[A-Z][a-z]+(?:\s[A-Z][a-z]+)?\s(?:is|are|owns|runs|reviews|signs|approves|wants|handles|does|has|lives|sits|needs|was))\b",
    re.IGNORECASE,
)
# An adverb or a short prepositional phrase may come before the subject ("Locally we only ever ...",
# "From 4.6 the API listens on ..."): it is skipped before the subject is looked for.
LEADING_PHRASE = re.compile(
    r"^(?:(?:in|on|for|at|from|with|since|until|after|before) (?:the |this |that |our |my |a |an )?[\w.-]+(?: [\w.-]+)??,?\s+|"
    r"\w+ly,?\s+)",
    re.IGNORECASE,
)
CONJUNCTION = re.compile(r"^(?:(?:and|but|so|also|oh|ok|okay|right|well),?\s+)+", re.IGNORECASE)  # "Oh right, I ..."
# A sentence labelled as a standing rule or decision ("Team rule: ...", "Policy for releases: ...").
RULE_LABEL = re.compile(
    # a label's colon ends a word ("Team rule: ..."), never one inside a name ("Loam::Jobs"), and an
    # order to make one ("Add a rule that drops ...") is a task
    r"^(?!(?:fix|change|add|update|write|make|remove|drop|apply|check|adjust|create)\b)"
    r"[\w' -]{0,40}\b(?:rule|convention|policy|decision)\b[^:.!?]{0,40}:(?=\s|$)|"
    # ... or as the house's style or way of doing a kind of thing ("House style: ...", "Release
    # flow: ...", "The drill: ..."), the label ending at the colon; an order to change one
    # ("Fix the button style: ...") is a task
    r"^(?!(?:fix|change|add|update|use|make|set|remove|apply|check|tweak|adjust|match|copy)\b)"
    r"(?:[\w'-]+ ){0,3}(?:style|flow|process|procedure|drill|routine|checklist):(?=\s|$)",
    re.IGNORECASE,
)
# A subject that stands for any one of a kind ("A plain --force is never OK", "A fresh build is only
# for native changes"): a rule when the sentence generalises, never a fact of its own.
INDEFINITE_START = re.compile(r"^(?:a|an)\s", re.IGNORECASE)
# ... that generalises beyond this task: a rule or convention stated as how things are.
GENERALISING = re.compile(
    # ("all over the place" says how far a thing spread, not that it must)
    r"\b(?:every|always|never|only ever|(?:is|are) only (?:for|ever)|any(?:one|thing|where)?|all(?! over\b)|"
    r"whatever|each)\b|"
    # nobody, nothing: a rule only with what is allowed or required ("Nothing on the scan screen is
    # allowed to ..."); "Nothing works after the pull" reports a bug
    r"\b(?:nothing|nobody|no one|everything|everyone)\b[^.!?\n]{0,60}\b(?:is|are) (?:allowed|supposed|required)\b",
    re.IGNORECASE,
)
# "never" or "always" between a subject and a past tense reports what happened ("We never saw that
# locally"), not a rule; "never copied into files" after a verb is a passive rule.
PAST_OBSERVATION = re.compile(
    r"\b(?:we|i|it|they|he|she|you|that|this)\s+(?:never|always)\s+"
    r"(?:\w+ed|saw|had|got|came|went|did|was|were|knew|thought|found|heard|made|ran|broke|took)\b",
    re.IGNORECASE,
)
# ... or that places something durable: a present-tense state with a concrete identifier (a command,
# a URL, an IP, host:port, a path): where a service lives, how a thing is run.
STATE_VERB = re.compile(
    r"\b(?:is|are|lives|live|runs|run|listens|sits|goes|go|come|comes|moved|moves|uses|use)\b", re.IGNORECASE
)
IDENTIFIER = re.compile(
    r"`[^`]+`|https?://\S+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[\w.-]+:\d{2,5}\b|(?:~|\.)?/[\w.-]+/[\w./-]+|\bport \d{2,5}\b|"
    r"\bv?\d+\.\d+\.\d+\b|\bon \d{4,5}\b|"  # a full version ("4.6.0"), a port ("listens on 9443")
    r"\b[\w-]+(?:\.[\w-]+)*\.(?:local|lan|internal|intern|corp)\b|~/[\w.-]+|"  # a private host name, a home path
    # a setting given its value ("BUOY_HIL=1"), a file of a kind code and config come in ("chart.js",
    # "tidewatch.service", "Cargo.toml")
    r"\b[A-Z][A-Z0-9_]{2,}=\S+|\b[\w-]+\.(?:service|timer|js|ts|py|rs|ex|exs|toml|ya?ml|json|sh|conf|tf|kt|kts|go|sql|md|csv|properties|gradle|xml|lock|rb|ini|cfg|env|swift|java|php|proto|dart)\b|"
    # a relative path ("envs/prod", "skerry/orcid-sandbox"; not "and/or"), a name built to a pattern
    # ("skr-prod-mqtt-2", "skr-<env>-<role>-<n>": parts joined by hyphens, a number or a placeholder)
    r"\b(?!and/or\b)[a-z][\w.-]*/[\w.-]*\w|\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:\d+|<\w+>)(?:-[\w<>]+)*"
)
# "he asks whether 4.5.2 is OK", "check if it listens on 5432": a question; "Staging is hazel-stg-01 if
# you need the logs" states where staging is, with a condition for using it
INDIRECT_QUESTION = re.compile(
    r"\bwhether\b|\b(?:ask|asks|asked|asking|know|knows|check|checks|see|wonder|wondering|tell me|sure|unsure|"
    r"find out|confirm|test|verify|decide)\s+if\b",
    re.IGNORECASE,
)
# Who does what: a person (a name or he/she/they) with a lasting role.
ROLE = re.compile(
    r"\b(?:owns|reviews|approves|signs off|is responsible for|"
    r"(?:waits?|needs?|goes?) (?:for |through )?(?:his|her|their|\w+'s) (?:review|sign-off|approval|OK)|"
    r"(?:is|'s) (?:the|our) (?:\w+ )?(?:owner|lead|PM|manager|designer|reviewer|contact|maintainer))\b",
    re.IGNORECASE,
)
# A day or a month is capitalised and no one ("broken since Friday").
_CALENDAR = (
    r"(?!(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|June|July|"
    r"August|September|October|November|December)\b)"
)
PERSON = re.compile(
    r"\b(?:he|she|they)\b|\b"
    + _CALENDAR
    + r"[A-Z][a-z]+ "
    + _CALENDAR
    + r"[A-Z][a-z]+\b|(?<!^)\b"
    + _CALENDAR
    + r"[A-Z][a-z]{2,}\b"
)
SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")
#: Whole sentences, a colon or a semicolon kept inside ("Team rule: ...", a failure's explanation after its colon).
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The statements of a prompt (split at sentence ends, semicolons, colons and newlines, never
    inside a `code span`: "`Refs: HV-231`" is one identifier); questions left out."""
    out: list[str] = []
    held = ""
    for piece in SENTENCE_END.split(text):
        held = f"{held} {piece}" if held else piece
        if held.count("`") % 2 == 0:
            out.append(held)
            held = ""
    out.append(held)
    return [s.strip() for s in out if s.strip() and not s.rstrip().endswith("?")]


def declarative(sentence: str) -> bool:
    """Whether a sentence starts with its subject (after an adverb or a short prepositional phrase)."""
    bare = CONJUNCTION.sub("", sentence, count=1)
    return bool(DECLARATIVE_START.match(bare) or DECLARATIVE_START.match(LEADING_PHRASE.sub("", bare, count=1)))


#: The words an order not to do something opens with (after an optional "please").
_NEGATIVE_OPENING = r"^(?:please,?\s+)?(?:don't|do not|never"
#: An order not to do something ...
NEGATIVE_ORDER = re.compile(_NEGATIVE_OPENING + r")\b", re.IGNORECASE)
#: ... backed by what happened when someone did it, or what would happen ("Last time someone skipped
#: the hooks we shipped a broken migration"): a rule learned from experience, not this task's order.
FROM_EXPERIENCE = re.compile(
    r"^(?:the )?last time\b|^every time (?:someone|anyone|we|I|you)\b|^otherwise\b", re.IGNORECASE
)


def warned_from_experience(prompt: str) -> bool:
    """Whether an order not to do something is followed (within two statements: "Don't skip them;
    fix the thing. Last time ...") by what happened the last time it was done."""
    said = sentences(prompt)
    return any(
        NEGATIVE_ORDER.match(CONJUNCTION.sub("", s, count=1))
        and any(FROM_EXPERIENCE.match(x) for x in said[i + 1 : i + 3])
        for i, s in enumerate(said)
    )


#: An order not to do something, "not" included ("Not on this laptop, ..."), its reason after a comma,
#: a semicolon or a colon ...
REFUSAL = re.compile(_NEGATIVE_OPENING + r"|not)\b", re.IGNORECASE)
REASON_BREAK = re.compile(r"[,;:]\s+")
#: ... unless the order or its reason is about now: a time that passes ("Don't merge anything
#: today"), the speaker's plan ("I'll do it Monday"), what the work item may do ("it can ride along
#: with the next one", not what nobody can) or a verdict on the work at hand ("the streaming change
#: is enough"). Such an order steers this task only.
FOR_NOW = re.compile(
    r"\b(?:today|tonight|tomorrow|yet|for now|right now|this (?:one|time|week|sprint)|for this|until|still|"
    r"enough|fine|plenty)\b|\b(?:I'll|I will|we'll|won't|will)\b|\b(?:it|this|that|they) (?:can|could)\b",
    re.IGNORECASE,
)
#: A reason starts with a pronoun as its subject ("it's generated ...", "I run ...", "that's
#: Joon-ho's chart"), a quantifier ("every error goes ...", "nobody is around ...") or a noun
#: phrase and its state ("the on-call rota is thin ..."), not with a noun phrase that only points
#: elsewhere ("Not that file, the other one").
REASON_START = re.compile(
    r"^(?:(?:it|that|this|they|we|i|he|she|there|those|these)(?:'s|'re|'ve|'d|\s)|"
    r"(?:nobody|no one|nothing|everyone|everybody|everything)\b|"
    r"the [\w' -]{1,30}? (?:is|are)\b)",  # "the on-call rota is thin at weekends"
    re.IGNORECASE,
)
#: Words a statement needs to say why (not "Not that one, no").
MIN_REASON_WORDS = 3


def reasoned_refusal(prompt: str) -> bool:
    """Whether an order not to do something comes with why, as a standing state ("Don't hand-edit
    branches.csv, it's generated from the branches API"; "Not on this laptop, it takes forever";
    "Don't put it in .env, I run anything that needs secrets through 1Password"), or is followed by
    the way things are done instead ("Don't add LiveData. New code exposes StateFlow ..."): the
    reason outlives the task. Not when the order or its reason is about now (FOR_NOW)."""
    said = sentences(prompt)
    for i, s in enumerate(said):
        bare = CONJUNCTION.sub("", s, count=1)
        if not REFUSAL.match(bare) or FOR_NOW.search(bare):
            continue
        reasons = REASON_BREAK.split(bare)[1:]
        after = said[i + 1] if i + 1 < len(said) else ""
        if (GENERIC_START.match(after) or bare[-1:] in ":;") and not FOR_NOW.search(after):
            # the next statement: how it is done instead ("New code exposes ..."), or the reason
            # after a colon or a semicolon, which `sentences` cut off
            reasons.append(after)
        if any(
            (REASON_START.match(r) or GENERIC_START.match(r)) and len(r.split()) >= MIN_REASON_WORDS for r in reasons
        ):
            return True
    return False


def stated_rule(prompt: str) -> bool:
    """A statement that generalises: declarative and quantified ("every string lives in ..."; a
    lead-in that ends in a colon states nothing yet), naming a scope wider than the task ("in any
    repo"), or labelled as a rule ("Team rule: ...")."""
    whole = [p.strip() for p in SENTENCE_SPLIT.split(prompt) if p.strip() and not p.rstrip().endswith("?")]
    if any(RULE_LABEL.match(p) for p in whole):
        return True
    return any(
        WIDER_SCOPE.search(s)
        or (
            (_declares(s) or INDEFINITE_START.match(s))
            and not OBSERVED.match(s)
            and GENERALISING.search(PAST_OBSERVATION.sub("", s))
        )
        or NOT_DONE.search(s)
        or REMEMBER_HOW.match(s)
        or EVENT_PROCEDURE.match(s)
        for s in sentences(prompt)
    )


#: What a log, a page or a command shows is a report of what happened, not a rule ("The bench
#: unit's log shows the CTD task restarting on every wake").
OBSERVED = re.compile(
    r"^(?:[\w'-]+ ){1,5}(?:shows?|prints?|says|reports?|displays?|outputs?|lists?)\b(?! (?:that|how)\b)",
    re.IGNORECASE,
)


def _declares(sentence: str) -> bool:
    """Declarative; a lead-in ending in a colon only when it starts with its subject itself ("We
    always do X this way:"), as a phrase before it ("Before anyone builds that:") introduces a task."""
    if sentence.endswith(":"):
        return bool(DECLARATIVE_START.match(CONJUNCTION.sub("", sentence, count=1)))
    return declarative(sentence)


def _teaches(sentence: str) -> bool:
    return bool(
        (DECLARATIVE_START.match(sentence) and (GENERALISING.search(sentence) or STATE_VERB.search(sentence)))
        or WIDER_SCOPE.search(sentence)
        or ROLE.search(sentence)
        or any(p.search(sentence) for p in (FUTURE_MARKERS, REMEMBER_THAT, CONVENTION, PREFERENCE, USER_DECISION))
    )


def teaching_part(prompt: str) -> str:
    """The sentences of a prompt that state something lasting, without the task's orders around them
    ("Commit it."): the memory says what was taught, and a short line leaves room in the context for
    others. The whole prompt when no one sentence carries it (a decision spread over several)."""
    parts = [p.strip() for p in SENTENCE_SPLIT.split(prompt) if p.strip()]
    taught = [p for p in parts if _teaches(p)]
    return " ".join(taught or parts)


def for_every_project(prompt: str, answer: str = "") -> bool:
    """Whether the user stated it for all their work, not this repository (`scope_words.holds_everywhere`:
    "in any repo", "my commit messages", "on my machines", "I prefer"), or the answer takes the lesson
    on that widely ("I'll drop the old settings in every repo")."""
    taken_on = " ".join(lesson_sentences(answer)) if answer else ""
    return holds_everywhere(prompt) or bool(ACROSS_PROJECTS.search(taken_on))


def user_says_every_project(prompt: str) -> bool:
    """Whether the user's own words say it holds for all their work (`holds_everywhere`): what
    carries a memory on to the user scope without asking. Not the answer, which repeats whatever a
    repository's files or a tool's output led it to say ("I'll turn off TLS checks in every repo")."""
    return holds_everywhere(prompt)


def stated_fact(prompt: str) -> bool:
    """A statement of lasting state: where something is or how it runs (declarative, present tense,
    a concrete identifier), or who owns or reviews what."""
    said = sentences(PRONOUN_IS.sub(r"\1 is", IS_CONTRACTED.sub(r"\1 is \2", prompt)))
    for i, s in enumerate(said):
        # "X has the flaw, so the minimum goes up to 4.6.0"; "Use bramble, my Linux box, it's ..."
        clauses = [*CLAUSE_BREAK.split(s), *(s[m.end() :] for m in SPLICED_CLAUSE.finditer(s))]
        if any(
            declarative(c)
            and STATE_VERB.search(c)
            and IDENTIFIER.search(c)
            and not INDIRECT_QUESTION.search(c)
            and not UNDER_WAY.search(c)
            for c in clauses
        ):
            return True
        if ROLE.search(s) and PERSON.search(s):
            return True
        if INDIRECT_QUESTION.search(s):
            continue
        # a state introduced by a colon, its particulars after it ("Staging runs on Nomad: build with
        # ./gradlew :api:jib, then ..."; "you go through the bastion: ssh -L 15432:db:5432 gate")
        lead_in = s.endswith(":") and i + 1 < len(said) and IDENTIFIER.search(said[i + 1])
        if lead_in and declarative(s) and STATE_VERB.search(s):
            return True
        bare = CONJUNCTION.sub("", s, count=1)  # "Oh right, I moved ..." starts with its subject
        # where something lives or runs, as changed ("Deploys go through Woodpecker now", "Pennant
        # have moved to pushing results into our MinIO")
        if CHANGED_STATE.match(bare):
            return True
        # ... or as no longer so, beside where it is now or was ("the config isn't under /etc/cvt
        # any more", "builds no longer run on the old runner at ci-2.lan")
        if NO_LONGER.search(s) and IDENTIFIER.search(s) and not INDIRECT_QUESTION.search(s):
            return True
        if any(
            KIND_STATE.match(CONJUNCTION.sub("", c, count=1)) and IDENTIFIER.search(c) for c in CLAUSE_SPLIT.split(s)
        ):
            return True
        # ... or drawn against what is not done, in its sentence or the next ("Library crates use
        # thiserror; anyhow only in the binary", "Repeatable commands go in the justfile, not a Makefile")
        after = said[i + 1] if i + 1 < len(said) else ""
        if KIND_STATE.match(bare) and (RESTRICTION.search(s) or RESTRICTION.search(after)):
            return True
        # what the team works with, named ("We use the QARTOD flag scheme: ..."), or what a step
        # consists of ("Enrolling one means adding it to inventory/buoys.yml and running ...")
        if USE_HABIT.match(bare) or (DEFINES.match(s) and IDENTIFIER.search(s)):
            return True
    return False


#: What is under way is an event, not a state: "it's going out as a 1.8.1 hotfix".
UNDER_WAY = re.compile(r"\b(?:is|are)\s+(?:going|getting|being|doing|happening|about to)\b", re.IGNORECASE)
#: "it's the Pixel on my desk": a pronoun's "is", which STATE_VERB reads as a word.
PRONOUN_IS = re.compile(r"\b(it|that|there|he|she)'s\b", re.IGNORECASE)
#: "State's in the bucket", "The controller's back on my desk": a noun's "is" before where it is.
IS_CONTRACTED = re.compile(r"\b([A-Za-z]\w*)'s (in|on|at|under|behind|back|now)\b")
#: How a kind of thing is done here, its bare plural first, then a verb of habit and a concrete
#: identifier in the clause ("Charts go through assets/js/hooks/chart.js", "Library crates use
#: `thiserror`", "Hardware tests run with BUOY_HIL=1"): a convention stated as how things are. A
#: determiner makes it a particular ("The tests use ..." of this change), and so does a verb of
#: events ("Tests fail on main").
KIND_STATE = re.compile(
    # (an adverb or a pronoun ending in s is no plural: "Always use uv for this task")
    r"^(?:[A-Za-z][\w-]* ){0,3}(?!(?i:always|sometimes|perhaps|thanks|yes|this|his|its|was|is|has|does|as|us)\s)"
    r"[A-Za-z][\w-]*[^s\W']s (?:only ever |always |only |never )?"
    r"(?:use|go|live|follow|belong|come|run|sit|stay|need)\b"
)
CLAUSE_SPLIT = re.compile(r";\s+|,\s+(?:and|so|but)\s+")
#: What the speaker or the team works with ("We use ...", "I run ..."), named by an acronym, a
#: CamelCase name or an identifier.
USE_HABIT = re.compile(
    r"^(?:[Ww]e|I)(?:'ve)? (?:always |only |mostly |usually )?(?:use|run|build with|deploy with)\s+(?:the |a |an |our )?"
    r"(?:[A-Z]\w+'s )?"  # a maker's name before it ("We use Intel's ispc_texcomp")
    r"(?:[A-Z]{2,}\b|[A-Z][a-z]+[A-Z]\w*|`|\S*[/.:_]\w)"
)
#: How a step is done, said as what it means ("Enrolling one means adding it to ...").
DEFINES = re.compile(r"^[A-Za-z]\w*ing\b(?: [\w-]+){0,3} means\b")
#: The other side of a convention: what is not done, or done only somewhere.
RESTRICTION = re.compile(r"\b(?:not|never|only|instead of|rather than)\b", re.IGNORECASE)


#: A state said to hold no more: "isn't ... any more", "no longer lives/runs/is ..." (a state, not a
#: wish: "we don't want moment in the bundle any more" goes with this task's order).
NO_LONGER = re.compile(
    r"\b(?:isn't|aren't|is not|are not)\b(?:(?![.!?](?:\s|$))[^;\n]){1,60}\bany ?more\b|"  # a dot in a name stays
    r"\bno longer (?:is|are|lives?|runs?|sits?|goes|go|comes?|uses?|points?)\b",
    re.IGNORECASE,
)
#: Where something lives or how it runs, said as changed, its subject first (one to three words:
#: "Deploys go through Woodpecker now", "Secrets are in Bitwarden now", "The co-op moved off
#: 1Password"); an order starts with its verb ("Go through the list now").
CHANGED_STATE = re.compile(
    # what may happen is no change ("Bulk decommission can go to everyone now")
    r"^(?!(?:[\w'-]+ ){0,2}(?:can|could|should|will|would|may|might|must)\b)(?:[\w'-]+ ){1,3}(?:"
    r"(?:go|goes|run|runs|live|lives|come|comes|sit|sits|land|lands|is|are) (?:out |up |back )?(?:through|on|in|from|via|under|at|to)\b"
    # a reading is no place ("Prod disk is at 91% now", "the queue is at 1.2k now")
    r"(?!\s+\d[\d.,]*\s*(?:%|percent\b|[kKMGT]i?B\b|[kKmM]\b|ms\b|s\b|min\b|x\b))"
    r"[^.!?;:\n]{1,60}\bnow\b|"
    r"(?:have |has )?(?:moved|switched|migrated) (?:over )?(?:to|off|from)\b|"
    # ... what the speaker moved ("I moved the laptop to mise last week")
    r"(?:'ve |have )?(?:moved|switched|migrated) (?:the |my |our |all )?(?:[\w-]+ ){0,2}(?:over )?(?:to|off|onto)\b|"
    # ... any verb of where it sends or reads, with "now" and the place ("It posts to /api/v2 now")
    r"[a-z]{3,}s (?:to|at|into|from) (?=(?:\S+\s+){1,6}now\b)(?:the |a |an )?[\w./:-]*[/.:_\d][\w./:-]*|"
    # ... "now" before the verb ("EMQX now lives on skua")
    r"now (?:lives?|runs?|sits?|goes|go|comes?|is|are) (?:on|in|at|through|from|under|via)\b)",
    re.IGNORECASE,
)


# -- a lesson the answer states: what the turn found out, said as holding beyond this task --------------
# A norm about a class of things ("Every @playwright/test bump needs ...", "Tests for server code need
# the .server.test.ts suffix", "Anything older than 90 days can't be reprocessed") or Claude taking a
# standing rule on ("I'll always pass --addr on that network"). Read from the sentence's shape: a
# modal of norm or habit whose subject is generic (a quantifier first, or a bare plural noun phrase),
# never a specific one (the, this, it, a name: "Hanna needs to sign it off" is about this change).
NORM = re.compile(
    r"\b(?:should(?:n't)?|must(?:n't)?|needs?|has to|have to|only ever|always|never|can't|cannot)\b", re.IGNORECASE
)
INABILITY = ("can't", "cannot")  # a norm only with a quantified subject ("Anything older ... can't")
GENERIC_START = re.compile(r"^(?:every|any|all|each|other|new|future|anything|everything|no)\b", re.IGNORECASE)
# ... a subject that names one thing or a counted few ("the", "a", "two workers", "someone with admin
# rights needs to re-activate him": one unknown person, this once), or a clause that does
# not start with its subject (a preposition or a subordinator first: "until then the months ...").
SPECIFIC_START = re.compile(
    r"^(?:the|this|that|these|those|it|its|i|we|you|he|she|they|my|your|our|his|her|their|there|here|a|an|"
    r"someone|somebody|something|"
    r"one|two|three|four|five|both|\d|until|unless|when|after|before|if|since|once|while|as|for|in|on|at|from|"
    r"with|to|then|by)\b",
    re.IGNORECASE,
)
#: Claude taking a standing way on: "I'll always ...", "I'll run everything as `fvm flutter`" (a
#: manner for all of it; "I'll fix everything it reports" is this task's work).
COMMITMENT = re.compile(
    r"^(?:I'll|I will)\b[^.!?\n]*\b(?:always|never|any|every|everything (?:as|through|via|with)|from now on|going forward|whenever)\b",
    re.IGNORECASE,
)
#: A clause of the answer that opens on a standing rule's time ("From now on any time a dispatcher
#: types in goes through local_to_utc()"): what Claude takes on for later work, like COMMITMENT.
FUTURE_LEAD = re.compile(r"^(?:" + FROM_NOW_ON + r")\b", re.IGNORECASE)
CLAUSE_BREAK = re.compile(r",\s+(?:and|so|but)\s+")
#: A statement spliced onto an order with a comma, as people talk ("Put a build on my test phone,
#: it's the Pixel at 192.168.40.23:5555"; "Don't put it in .env, I run anything secret through op"):
#: the clause after it starts with its own subject.
SPLICED_CLAUSE = re.compile(
    r",\s+(?=(?:it's|it is|that's|that is|they're|they are|I|we|we're|my|our|everything|anything)\s)",
    re.IGNORECASE,
)
MAX_SUBJECT_WORDS = 7  # a longer run before the modal is not one noun phrase
PLURAL_WORD = re.compile(r"(?:[a-z]|[A-Z]{2})s$")  # "tests", "CSVs"
# A word that points at one place: a number ("line 90") or a file ("src/decode/reefer.rs", whose
# ".rs" is no plural). "Line 90 of reefer.rs always divides by 10" describes code, not a norm; a
# folder stays a class of things ("Migrations in db/migrations should never be hand-written").
PLACE_WORD = re.compile(r"\d|\w\.\w{1,5}$")


def _clause_starts(sentence: str) -> list[str]:
    """A clause as written, without a leading conjunction, and without an adverb or short phrase before
    its subject ("On the office network I'll ..."), both readings."""
    bare = CONJUNCTION.sub("", sentence.strip(), count=1)
    out = [bare]
    m = re.match(
        r"^(?:in|on|for|at|from|with|since|until|after|before|when)\b[^,]{0,40}?(?=\s(?:I'll|I will)\b)",
        bare,
        re.IGNORECASE,
    )
    if m:
        out.append(bare[m.end() :].strip())
    return out


def _lesson_clause(clause: str) -> bool:
    if COMMITMENT.match(clause) or FUTURE_LEAD.match(clause):
        return True
    norm = NORM.search(clause)
    if not norm:
        return False
    subject = clause[: norm.start()].strip()
    words = subject.split()
    if not words or len(words) > MAX_SUBJECT_WORDS or any(c in subject for c in ",\"'("):
        return False
    if GENERIC_START.match(subject):  # "Any new bulk `to_sql` needs ...": a quantifier makes code a class
        return True
    if "`" in subject:  # "`parse()` should return ...": code without a quantifier is this code
        return False
    if (
        norm.group(0).lower() in INABILITY
        or SPECIFIC_START.match(subject)
        or (len(words) < 2 and not PLURAL_WORD.search(words[0]))
        or any(PLACE_WORD.search(w) for w in words)
    ):
        return False
    return any(PLURAL_WORD.search(w) for w in words)


def lesson_sentences(answer: str) -> list[str]:
    """The answer's sentences that state a lesson holding beyond this task (see NORM); empty when none."""
    out = []
    for sentence in sentences(answer):
        clauses = CLAUSE_BREAK.split(sentence)
        if any(_lesson_clause(c) for part in clauses for c in _clause_starts(part)):
            out.append(sentence)
    return out


SAME_SENTENCE = r"(?:(?![.!?](?:\s|$))[^\n]){{0,{}}}"  # within one sentence (a dot inside `a.b` does not end it)

# -- decision with its reason ---------------------------------------------------------------------
USER_DECISION = re.compile(
    # "we agreed" announces an agreement, not "the frame count we agreed" (one referred to)
    r"\b(?:we(?:'ve| have)? decided|(?:\w+ and )?I(?:'ve| have)? decided (?!to\b)|"
    r"(?:(?<![\w,] )|(?<=\band )|(?<=\bso )|(?<=\bbut )|(?<=\bthen ))we agreed|we agreed (?=on|to|that|with)|"
    r"\w+ and I agreed|"
    # ... or passively ("Storage got settled in yesterday's design review: ...")
    r"(?:got|was|were|has been|have been) (?:settled|decided|agreed)(?: on)?\b|"
    r"(?:it|this|that) stays (?:on|with)|"
    # a meeting's outcome relayed ("Straight out of the ops meeting:"); not "the comments from the review"
    r"(?:straight out of|outcome of|(?:decision|takeaway)s? (?:from|of)) "
    r"(?:the |this morning's |today's |yesterday's |\w+'s )?(?:\w+ )?(?:meeting|sync|review|standup|retro|call|session with)|"
    r"let's (?:go with|keep|stick with|stay on|use)|we'll (?:stay|stick|keep|go)|"
    r"we're (?:not going to|going with|switching|moving|sticking|staying|dropping)|we are (?:not going to|switching|dropping)|"
    r"decided to|we're not going to|"
    # a choice the team made, reported ("At Thursday's review we settled on problem+json", "after the
    # clash we switched to timestamps")
    r"we(?:'ve| have)? (?:settled on|switched (?:over )?to|went with|standardi[sz]ed on|decided on|opted for))\b",
    re.IGNORECASE,
)
ASK_TO_CHOOSE = re.compile(
    r"\b(?:pick|choose|decide (?:on|between|which)|select) (?:one|a|an|the best|between|which)\b|"
    r"\bpick one\b",
    re.IGNORECASE,
)
ANSWER_DECISION = re.compile(
    # "picked up by the worker" is collected, not chosen
    r"\b(?:I (?:went with|chose|picked|opted for|decided)|(?:chose|picked(?! up\b| out\b)|went with|opted for) \w+)\b"
    + SAME_SENTENCE.format(160)
    + r"(?:\brather than\b|\binstead of\b|\bover\b|\bbecause\b|\bsince\b|:)|"
    r"\bI (?:\w+ )?\w+\b" + SAME_SENTENCE.format(120) + r"\brather than\b",
    re.IGNORECASE,
)

# -- a failed command and the variant that worked -------------------------------------------------
ROUTINE_PROGRAMS = frozenset(
    {
        "git",
        "cat",
        "ls",
        "cd",
        "echo",
        "grep",
        "rg",
        "find",
        "which",
        "head",
        "tail",
        "test",
        "true",
        "false",
        "sleep",
        "pwd",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "touch",
        "source",
        ".",
    }
)
#: Routine programs that run the project's own hooks (pre-commit, pre-push): their failure can be
#: the environment's (a service the hook's tests need), which a setup command then cures. The
#: others only look at or move files: a failure means "not there yet", and a build that makes
#: it appear teaches nothing.
HOOK_RUNNERS = frozenset({"git"})
WRAPPERS = frozenset({"sudo", "env", "exec", "nice", "time", "command", "npx", "timeout"})
#: A wrapper's options that take a value (`sudo -u postgres`, `nice -n 10`, `timeout -k 5 60`).
WRAPPER_VALUE_OPTIONS = frozenset(
    {"-u", "-g", "-n", "-k", "-s", "--user", "--group", "--adjustment", "--kill-after", "--signal"}
)
DURATION = re.compile(r"^[0-9]+(?:\.[0-9]+)?[smhd]?$")  # `timeout 120 pytest -q`
RUNNERS = {"bundle": "exec", "poetry": "run", "uv": "run", "pipenv": "run", "pnpm": "exec", "yarn": "exec"}
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SUBCOMMAND = re.compile(r"^[a-z][a-z0-9:_-]*$")

# -- a root cause found and cured: the answer explains a failure and what now prevents it ----------
#: The user reports a failure as an event ("the release build failed", "CI went red", "it crashes
#: when you open a ticket", "the realtime feed's been empty since 06:12").
REPORTED_FAILURE = re.compile(
    r"\b(?:failed|fails|failing|crash(?:es|ed)?|died|dies|(?:went|gone|is|turned) red|broke|broken|stopped|hangs|"
    r"refuses|rejected|OOM\w*|empty since|(?:isn't|is not|aren't|stopped) working|doesn't work|not working|"
    r"won't (?:start|build|load|run|boot|compile|deploy))\b",
    re.IGNORECASE,
)
#: The answer names the cause outright: the failure is implied.
NAMED_CAUSE = re.compile(r"\b(?:root cause|the cause|cause:|caused by|the culprit)\b", re.IGNORECASE)
#: ... or explains it with a causal word. (In the clauses below a dot followed by a character is
#: no sentence end: a version, a file name.)
CAUSAL = re.compile(r"\b(?:because|which is why|hence|turned out|due to)\b", re.IGNORECASE)
#: ... or as a consequence: "Debian 12 marks the Python as managed, so pip install failed with ...".
SO_IT_FAILED = re.compile(
    r"[,;] so\b(?:[^.;\n]|\.(?=\S)){0,80}?\b(?:fail(?:s|ed)?|got|rejected|refused|crashe[sd]|panick?e?d|threw|throws|errored|"
    r"exited|died|timed out|missed|skipped|dropped|lost|differ(?:s|ed)?)\b",
    re.IGNORECASE,
)
#: ... or after a colon that ends the failure's own clause, with a verb in what follows: "cargo deny
#: failed on licences: ring 0.17.8 publishes no licence expression" (not "Only Credo failed: one
#: warning in fares.ex", which lists what failed).
FAILURE_COLON = re.compile(
    r"\b(?:fail(?:s|ed)?|refused|rejected|crashe[sd]|ran out of \w+|died|exited|errors?|(?:OOM-)?killed)\b(?:[^.:;\n]|\.(?=\S)){0,60}:\s+((?:\S+\s+){0,8})",
    re.IGNORECASE,
)
CLAUSE_VERB = re.compile(
    r"^(?:is|are|was|were|has|had|have|can't|cannot|doesn't|didn't|isn't|wasn't|won't|never|only|\w+ed|\w{3,}s)$",
    re.IGNORECASE,
)
#: A clause that starts with a count lists what failed ("one unused import in views.py").
COUNT_START = re.compile(r"^(?:\d+|one|two|three|four|five|several|some|many)\b", re.IGNORECASE)
#: Quoted text (an error message, a command): its colons and words are the failure's, not the explanation's.
QUOTED = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|'[^'\n]{3,}'")
#: The answer says what it changed so the failure stops: "I switched the cache to ...", "The task now
#: drops the port and reopens it", "Fix: ...". "now fails" is a symptom, not a cure.
CURED = re.compile(
    r"\bnow (?!(?:\w+ )?(?:fails|errors|crashes|breaks|reads|says|shows)\b)(?:\w+ ){0,2}?\w+s\b|"
    r"(?:^|[.;:]\s+|\bI )(?:\w+ )?(?:changed|switched|moved|added|replaced|pinned|enabled|pointed|put|set|released|"
    r"gated|wrapped|installed|lowered|raised|capped|bumped|increased|reduced|made)\b|\bfix(?:ed)?:|\bfixed (?:it|by)\b",
    re.IGNORECASE | re.MULTILINE,
)
#: The fix came with a test that pins it: the knowledge lives in the diff (the stop corpus's rule for
#: "a test that fails because of the bug being fixed").
PINNED_BY_TEST = re.compile(
    r"\bregression test|\b(?:added|wrote|new) (?:a |an )?(?:unit |regression |integration )?tests?\b|"
    r"\btests? (?:covers?|pins?|reproduces?)\b",
    re.IGNORECASE,
)


def root_cause_found(prompt: str, answer: str, events: list[dict[str, Any]]) -> bool:
    """Whether the turn found why something failed and cured it: a failure (a failed tool event, the
    user reporting one, or a cause the answer names outright), a sentence of the answer explaining
    it (`explains_a_cause`) and one saying what changed (`CURED`), and no test that pins the fix
    (`PINNED_BY_TEST`: the knowledge is in the diff). "The boards have no RTC, so the clock starts
    in 1970 ...; the unit now waits for time-sync.target" is what the next failure of its kind needs;
    a cure found by re-running a command another way is `fix_found`'s."""
    if PINNED_BY_TEST.search(answer) or answer.rstrip().endswith("?"):
        return False  # a question back: nothing settled yet
    failed = any(e.get("failed") for e in events) or REPORTED_FAILURE.search(prompt) or NAMED_CAUSE.search(answer)
    if not failed:
        return False
    parts = [s for s in SENTENCE_SPLIT.split(answer) if s.strip()]
    return any(explains_a_cause(s) for s in parts) and any(CURED.search(s) for s in parts)


def explains_a_cause(sentence: str) -> bool:
    """Whether a sentence says why something failed (`NAMED_CAUSE`, `CAUSAL`, `SO_IT_FAILED`, or an
    explanation after the failure's colon, `FAILURE_COLON`); quoted text is the failure's own words."""
    if SO_IT_FAILED.search(sentence):
        return True
    bare = QUOTED.sub(" X ", sentence)
    if NAMED_CAUSE.search(bare) or CAUSAL.search(bare):
        return True
    return any(_a_clause(m.group(1)) for m in FAILURE_COLON.finditer(bare))


def _a_clause(words: str) -> bool:
    """Whether the words after a failure's colon read as a clause (a subject, then a verb: "the
    parser keeps every row"), not a list of what failed ("one unused import in X")."""
    split = words.split()
    if not split or COUNT_START.match(split[0]):
        return False
    return any(CLAUSE_VERB.match(word.strip(",()")) for word in split[1:])


# -- a remembered value changed: the user orders the change ---------------------------------------------
#: A sentence that orders a value changed ("Move it to 03:40 UTC", "Change the shipped config and
#: the default", "Raise the cap", "we can finally move: bump to dbt-core==1.8.7"): the Stop hook
#: then asks the daemon whether a stored memory states the value the turn wrote over
#: (`hooks.changed_memories`). The order is the gate: an answer says "now" of whatever it did,
#: and most turns change nothing anyone remembered. A version is changed by the verbs of
#: dependencies (bump, upgrade, pin), which a gate of settings' verbs alone let pass.
ORDERED_CHANGE = re.compile(
    r"^(?:(?:also|now|ok|okay|so|and|then|please|right|just),?\s+)*"
    r"(?:move|change|switch|set|raise|lower|increase|decrease|reduce|shorten|extend|shift|reschedule|repoint|"
    r"bump|upgrade|downgrade|update|pin|migrate)\b"
    r"(?!\s+(?:out|up|on|over|to the \S+ branch)\b)",
    re.IGNORECASE,
)


def orders_a_change(prompt: str) -> bool:
    """Whether the user's words order a value changed (a sentence that starts with a verb of change)."""
    return any(ORDERED_CHANGE.match(s) for s in sentences(prompt))


SIGNAL_TEXT = {
    "rule": "a rule or preference for future work",
    "fact": "a lasting fact: where, how or who",
    "fix": "a fix found after a failed command",
    "cause": "a failure's root cause and its cure",
    "decision": "a decision and its reason",
    "lesson": "a lesson the answer states",
    "changed": "a new value for something a stored memory states",
}


def is_engram_command(prompt: str) -> bool:
    """An engram slash command, typed (`/engram:remember ...`) or as the transcript records it."""
    text = prompt.lstrip()
    return text.startswith(ENGRAM_COMMAND_PREFIX) or f"<command-name>{ENGRAM_COMMAND_PREFIX}" in prompt


def is_store_tool(name: str) -> bool:
    return name.startswith(ENGRAM_TOOL_PREFIX) and name[len(ENGRAM_TOOL_PREFIX) :] in STORE_TOOLS


class Invocation:
    """One simple command: program, its subcommand (`npm install` -> install), env names set, flags."""

    def __init__(self, tokens: list[str]) -> None:
        self.env: set[str] = set()
        rest = tokens[_command_start(tokens, self.env) :]
        if len(rest) > 1 and RUNNERS.get(rest[0].rsplit("/", 1)[-1]) == rest[1]:
            rest = rest[2:]  # `bundle exec rspec` runs rspec
        self.program = rest[0].rsplit("/", 1)[-1] if rest else ""
        args = rest[1:]
        self.subcommand = args[0] if args and SUBCOMMAND.match(args[0]) else ""
        self.flags = {a.split("=", 1)[0] for a in args if a.startswith("-") and a not in ("-", "--")}

    @property
    def routine(self) -> bool:
        return not self.program or self.program in ROUTINE_PROGRAMS

    def same_command(self, other: "Invocation") -> bool:
        return self.program == other.program and (
            not self.subcommand or not other.subcommand or self.subcommand == other.subcommand
        )


def _command_start(tokens: list[str], env: set[str]) -> int:
    """Where the command itself starts, past `NAME=value` assignments (collected into `env`) and
    wrappers with their options: `timeout 120 pytest -q` runs pytest, `sudo -u pg psql` psql."""
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if ENV_ASSIGNMENT.match(tok):
            env.add(tok.split("=", 1)[0])
            i += 1
        elif tok in WRAPPERS:
            i += 1
            while i < len(tokens) and tokens[i].startswith("-"):
                i += 2 if tokens[i] in WRAPPER_VALUE_OPTIONS else 1
            if tok == "timeout" and i < len(tokens) and DURATION.match(tokens[i]):
                i += 1  # its duration: what follows is the command
        else:
            break
    return i


def invocations(command: str) -> list[Invocation]:
    """A shell line as its simple commands (split on && || ; | and newlines)."""
    out = []
    for part in re.split(r"&&|\|\||;|\||\n", command):
        try:
            tokens = shlex.split(part, posix=True)
        except ValueError:
            tokens = part.split()
        if tokens:
            out.append(Invocation(tokens))
    return out


def _rerun_changed(failed: Invocation, line: list[Invocation], *, setup_only: bool = False) -> bool | None:
    """For a later successful line: True if it re-ran the failed command in a changed way (an added env
    variable or flag, or a setup command before it on the same line; only the latter when
    `setup_only`), False if it re-ran it unchanged, None if it did not re-run it at all."""
    for k, inv in enumerate(line):
        if inv.same_command(failed):
            setup_first = any(not prev.routine and not prev.same_command(failed) for prev in line[:k])
            varied = bool(inv.env - failed.env) or bool(inv.flags - failed.flags)
            return setup_first or (varied and not setup_only)
    return None


#: What a command prints when it failed though it exited 0: an HTTP error status alone on a line
#: (`curl -w '%{http_code}'`), a refused connection, an uncaught exception.
SOFT_FAILURE = re.compile(
    r"^\s*[45]\d\d\s*$|\bECONNREFUSED\b|\bConnection refused\b|^Traceback \(most recent call last\):|^panic: ",
    re.MULTILINE,
)
#: Files that say how the project runs on this machine rather than what its code does: a failure
#: cured by editing one taught something about the environment ("the database listens on 5433").
ENVIRONMENT_FILE = re.compile(
    r"(?:^|/)(?:\.env(?:\.[\w.-]+)?|\.envrc|(?:docker-)?compose(?:\.[\w-]+)?\.ya?ml|\.tool-versions|\.nvmrc|"
    r"\.python-version|\.npmrc)$"
)
#: Claude Code's tools that change a file (the PostToolUse capture's matcher names the same).
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")


def _failed(event: dict[str, Any]) -> bool:
    """A Bash event that failed: its exit status, or what it printed (`SOFT_FAILURE`)."""
    return bool(event.get("failed")) or bool(SOFT_FAILURE.search(str(event.get("output") or "")))


def _edits_environment(event: dict[str, Any]) -> bool:
    return event.get("name") in EDIT_TOOLS and bool(
        ENVIRONMENT_FILE.search(str((event.get("input") or {}).get("file_path") or ""))
    )


def fix_found(events: list[dict[str, Any]]) -> bool:
    """A failed command that later succeeded changed, or after a setup command (not just after code edits)."""
    return first_cured_failure(events) is not None


def first_cured_failure(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first failed command event that a later, changed run (or a setup command, or an edit of an
    environment file) cured; None if none.

    A routine command never counts, except one that runs the project's hooks (`HOOK_RUNNERS`) cured
    by a setup command (`docker compose up -d redis && git push` after the push hook needed
    Redis): retried with other flags ("git pull --rebase", then "git push") it is the day's
    friction, not knowledge.

    The memory a fix leaves names the command that failed: the root cause is explained in the answer.
    """
    for pos, event in enumerate(events):
        if event.get("name") != "Bash" or not _failed(event):
            continue
        line = invocations(str((event.get("input") or {}).get("command") or ""))
        if not line or not line[-1].program or (line[-1].routine and line[-1].program not in HOOK_RUNNERS):
            continue
        failed = line[-1]  # the exit status of a line is its last command's
        setup_between = False
        for later in events[pos + 1 :]:
            if later.get("name") != "Bash":
                setup_between = setup_between or _edits_environment(later)
                continue
            if _failed(later):
                continue
            later_line = invocations(str((later.get("input") or {}).get("command") or ""))
            changed = _rerun_changed(failed, later_line, setup_only=failed.routine)
            if changed is None:
                setup_between = setup_between or any(not inv.routine for inv in later_line)
                continue
            if changed or setup_between:
                return event
            break  # the same command succeeded unchanged after code edits: the fix is in the diff
    return None


def stop_signals(facts: dict[str, Any]) -> list[str]:
    """Signal keys (`SIGNAL_TEXT`) for durable knowledge left unstored in this turn; empty when none.

    `facts`: ``prompt``, ``answer`` (final text), ``events`` (tool events in order: ``name``,
    ``input``, ``failed``, ``output``), ``stored`` (engram stored during the turn).
    """
    prompt = str(facts.get("prompt") or "")
    answer = str(facts.get("answer") or "")
    if facts.get("stored") or is_engram_command(prompt):
        return []
    signals = []
    if (
        FUTURE_MARKERS.search(prompt)
        or REMEMBER_THAT.search(prompt)
        or CONVENTION.search(prompt)
        or PREFERENCE.search(prompt)
        or UNWANTED.search(prompt)
        or REASONED_CONTRAST.search(prompt)
        or stated_rule(prompt)
        or warned_from_experience(prompt)
        or reasoned_refusal(prompt)
    ):
        signals.append("rule")
    elif stated_fact(prompt):
        signals.append("fact")
    events = list(facts.get("events") or [])
    if fix_found(events):
        signals.append("fix")
    elif root_cause_found(prompt, answer, events):
        signals.append("cause")
    if (
        USER_DECISION.search(prompt)
        or ANSWER_DECISION.search(answer)
        or (ASK_TO_CHOOSE.search(prompt) and answer.strip())
    ):
        signals.append("decision")
    if lesson_sentences(answer):
        signals.append("lesson")
    return signals
