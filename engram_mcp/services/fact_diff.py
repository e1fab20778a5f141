"""Does a near-duplicate change a fact? The token-level test dedup asks before any merge.

Two texts at cosine >= `store_dedup_similarity` read alike, but an embedding barely moves when
one value changes: "the API listens on port 8443" and "... on port 9443" sit at ~0.95, and so
do "Fact 7: ... OPS-1007" and "Fact 97: ... OPS-1097". A merge keeps the older text, so a
merge of those loses the newer fact. The values that make a fact are the tokens an embedding
weighs least: numbers, versions, identifiers, names and tools. This module compares those
"fact tokens" of the two texts and answers one of three things:

- ``same``: no value was swapped (a paraphrase, or one text only adds a value of a kind the
  other does not state at all): a merge loses nothing.
- ``replaces``: the newer text changes a value of the same subject: the same sentence with one
  value written over another, or something new beside a change word the older text lacks
  ("now", "moved", "(was X)", "instead of", "replaced", "switched", "no longer", "not X any
  more"): it supersedes the older memory.
- ``differs``: values swapped in several places or amid other rewording, with no change word,
  or a changed opening label (another item that reads alike: "Fact 7 ... OPS-1007" vs
  "Fact 97 ... OPS-1097"): two memories, the newer one only hinting it may replace the older.

A lowercase word counts as a name or tool when a general English lexicon does not hold it
(colima, orbstack, infisical, pnpm); the lexicon is the word list of the vendored
all-MiniLM-L6-v2 tokenizer (30k WordPiece entries, the common words of English text), used
here only as a word list whatever embedding model is configured.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engram_mcp.core.vocabulary import FOREIGN_ORIGINS
from engram_mcp.index.embeddings import _VENDORED_DIR
from engram_mcp.services.records import origin_of

SAME = "same"
REPLACES = "replaces"
DIFFERS = "differs"

NUMBER, IDENT, NAME = "number", "identifier", "name"
_VALUE_KINDS = frozenset({NUMBER, IDENT})

# A token: letters/digits joined by the punctuation identifiers use inside (OPS-1007, 4.2.0,
# nomad-stg-3, core/db/Migrations.kt, snake_case, user@host). Trailing dots and colons are
# sentence punctuation and stay outside.
_TOKEN_RE = re.compile(r"[\w][\w.\-/@:+#]*[\w]|[\w]", re.UNICODE)
_NUMBER_RE = re.compile(r"^v?\d+(?:[.,]\d+)*(?:[a-z%]{1,3})?$", re.IGNORECASE)
_LABEL_RE = re.compile(r"^\W*(\w[\w-]{0,30}\s+#?[\w.-]{1,20})\s*[:\-\u2013\u2014]\s")
# What may stand before a sentence's first word: its end, or an opening bracket or quote ("(On the
# way: ...)" capitalises an ordinary word as a sentence does).
_SENTENCE_END_RE = re.compile(r"[.!?:;(\[\"“‘>]\s*$|^\s*$")
# Change markers: the words English uses to say a value was replaced. Counted only when the
# newer text has one the older lacks, so a rule that always said "now" is no marker.
_CHANGE_WORDS = frozenset(
    {
        "was",
        "were",
        "previously",
        "formerly",
        "former",
        "now",
        "moved",
        "migrated",
        "switched",
        "changed",
        "replaced",
        "replaces",
        "instead",
        "longer",
        "renamed",
        "upgraded",
        "downgraded",
        "bumped",
        # a limit or rate moved ("raising the download cap to 92 days")
        "raised",
        "raising",
        "lowered",
        "lowering",
        "increased",
        "reduced",
        "updated",
        "retired",
        "deprecated",
        "superseded",
        "anymore",
        "not",
        "no",
    }
)
# The words that hold a sentence together, never a value ("from now on" adds no fact).
_GLUE_WORDS = frozenset(
    "the and for with from into onto are was were been this that these those our you your its their "
    "then than also all any only just still very not but use uses used they she his her".split()
)
_SUFFIXES = ("'s", "ing", "ed", "es", "s", "er", "ers", "ly", "ies", "d")
_FORMS = ("s", "d", "ed", "es", "ing", "r")
_MIN_RARE_WORD_CHARS = 3
_MIN_STEM_CHARS = 4  # sqs is not "sq" + s, nats not "nat" + s: short stems match too much
_MAX_DIFF_WORDS = 600  # bounds the word diff (quadratic at worst), which runs under the write lock
_MAX_DIFF_MIDDLE = 200  # words of the differing middle diffed (after the equal opening and close)
_MAX_SAME_SENTENCE_SWAPS = 1  # one value changed in an otherwise identical sentence: a correction


@dataclass(frozen=True)
class Verdict:
    """How a newer text relates to an older near-duplicate, with the fact tokens that decided it."""

    relation: str  # SAME | REPLACES | DIFFERS
    old_only: tuple[str, ...] = ()
    new_only: tuple[str, ...] = ()
    #: REPLACES said with more than a report's words (`_REPORT_WORDS`): injection hides the older
    #: memory only then (`outdates`).
    told_as_change: bool = False


@functools.cache
def _lexicon() -> frozenset[str]:
    """Whole words of the vendored tokenizer's vocabulary (no '##' pieces, no [special] tokens)."""
    try:
        vocab = json.loads((_VENDORED_DIR / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()
    return frozenset(w for w in vocab if w.isalpha() and not w.startswith("##"))


@functools.lru_cache(maxsize=4096)
def _is_common_word(word: str) -> bool:
    """In the lexicon as written, without one inflection suffix (listens -> listen), or with one
    (expire -> expired): the word list holds one form of many ordinary words."""
    lex = _lexicon()
    if not lex:  # no word list: treat every word as common, so only digits and case decide
        return True
    w = word.lower()
    stems = {w[: -len(s)] for s in _SUFFIXES if w.endswith(s) and len(w) - len(s) >= _MIN_STEM_CHARS}
    roots = {w, *stems, *(x + "e" for x in stems)}
    forms = roots | {r + s for r in roots for s in _FORMS}
    if w.endswith("ies"):
        forms.add(w[:-3] + "y")
    return not forms.isdisjoint(lex)


#: Endings that make a name into a word of manner ("pytest-style asserts", "Docker-based builds"):
#: the thing named is the same, so "pytest-style" is no other value than "pytest". A closed list:
#: any other part after a hyphen may name something else ("postgres-test" is a container).
_MANNER_SUFFIX_RE = re.compile(r"^(\w+)-(?:style|like|based|compatible|flavou?red|powered|driven|ish)$", re.IGNORECASE)


def _named(token: str) -> str:
    """The name a word of manner is made from ("pytest-style": "pytest"), else the word itself."""
    manner = _MANNER_SUFFIX_RE.match(token) if "-" in token else None
    return manner.group(1) if manner else token


def _stem(token: str) -> str:
    """One spelling for the forms of a word (expire, expires, expired), and for a name and its
    manner ("pytest-style": `_MANNER_SUFFIX_RE`), so neither is a changed value; identifiers and
    numbers are compared as written."""
    token = _named(token)
    if not token.isalpha():
        return token
    for suffix in ("ies", "es", "s", "ed", "ing", "d"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            break
    return token[:-1] if token.endswith("e") and len(token) > 3 else token


#: Acronyms of conversation, not of things: every note may open with one, so two notes sharing
#: "FYI" share no value (a retirement beside it retired no "FYI").
_CHAT_ACRONYMS = frozenset("fyi btw psa til imo imho asap afaik iirc tbh fwiw nb ps ok".split())


def _kind(token: str, sentence_start: bool) -> str | None:
    """The fact kind of one token, or None for an ordinary word."""
    if _NUMBER_RE.match(token):
        return NUMBER
    if any(c.isdigit() for c in token) or any(c in token for c in "_/@.:+#"):
        return IDENT
    if "-" in token:  # pre-push is two words; nomad-stg is a name when a part is no word
        return IDENT if any(p and not _is_common_word(p) for p in token.split("-")) else None
    if len(token) == 1:  # "I", or a list's "A": a letter alone names nothing
        return None
    if token.lower() in _CHAT_ACRONYMS:  # "FYI, the box is wiped tomorrow": how it is said, no value
        return None
    if token[1:] != token[1:].lower():  # camelCase or an acronym (AWS, OPS)
        return NAME
    if token[0].isupper() and not sentence_start:
        return NAME
    if len(token) >= _MIN_RARE_WORD_CHARS and token.isalpha() and not _is_common_word(token):
        return NAME
    return None


#: Texts up to this length have their fact tokens kept (`fact_tokens`); longer ones are rare and
#: would let a few bodies fill the memo.
MEMO_TEXT_MAX_CHARS = 4_000
#: Distinct texts / text pairs whose reading is kept. The session start and the prompt hook judge
#: the same few hundred memories against each other at every call: at 10k memories, reading them
#: again was ~80% of a session start (0.7 s of 0.73).
MEMO_ENTRIES = 4_096


def fact_tokens(text: str) -> dict[str, str]:
    """{lowercased token: kind} for every fact token of `text` (a fresh dict: callers may change it).

    Linear, and cheap per token: a word seen before at the same kind of position is not judged
    again (a 20,000-character body repeats most of its words; judging each one took ~0.1 s)."""
    if len(text) <= MEMO_TEXT_MAX_CHARS:
        return dict(_fact_tokens_memo(text))
    return _read_fact_tokens(text)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _fact_tokens_memo(text: str) -> dict[str, str]:
    return _read_fact_tokens(text)


def _read_fact_tokens(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    seen: set[tuple[str, bool]] = set()
    for m in _TOKEN_RE.finditer(text):
        token, at = _named(m.group(0)), m.start()
        start = at == 0 or bool(_SENTENCE_END_RE.search(text[max(0, at - 3) : at]))
        if (token, start) in seen:
            continue
        seen.add((token, start))
        kind = _kind(token, start)
        if kind:
            out.setdefault(token.lower(), kind)
    return out


def _words(text: str) -> set[str]:
    return {m.group(0).lower() for m in _TOKEN_RE.finditer(text)}


#: When a rule starts to hold ("I'll end every PR description that way from now on"), not a sign
#: that a value changed: its "now" is no change word.
_RULE_TIME_RE = re.compile(r"\b(?:from now on|from here on|going forward)\b", re.IGNORECASE)


def lays_down_a_rule(sentence: str) -> bool:
    """Whether a sentence says how things are done from now on ("From now on keep openssl-sys out
    of the tree"): a memory that does is about that rule, whatever event it tells first."""
    return bool(_RULE_TIME_RE.search(sentence))


def _change_words(text: str) -> set[str]:
    """The words of `text` that may say a value changed (`_CHANGE_WORDS`), a rule's start left out."""
    return _words(_RULE_TIME_RE.sub(" ", text)) & _CHANGE_WORDS


def _value_swaps(old: str, new: str, a: dict[str, str], b: dict[str, str]) -> tuple[int, bool, bool]:
    """(places where one value was written over another, whether those are the only changes,
    whether a replaced word is quoted again in the newer text).

    A place is a run of words the word-level diff replaces where one side holds a fact token
    the other text lacks (`a`, `b`: each side's own) and the other side a fact token or a
    capitalised word (a token both texts hold, only moved, is no swap): "Priya owns ..." -> "Marcus owns ..."
    is a swap even though "Marcus" is a common word at a sentence start, and so is one
    capitalised word written over another ("Alice reviews" -> "Bob reviews"), or one word
    over another where either is a fact token ("with podman" -> "with lima"): at worst a
    reworded word supersedes its twin, which hides nothing the newer text does not say.
    """
    old_all, new_all = ([_named(w) for w in _TOKEN_RE.findall(text)[:_MAX_DIFF_WORDS]] for text in (old, new))
    old_low, new_low = [w.lower() for w in old_all], [w.lower() for w in new_all]
    # the words both texts open and close with are equal runs; only the middle is diffed, and at
    # most _MAX_DIFF_MIDDLE words of it (the diff is quadratic in a repeated word: 600 words of a
    # repetitive body took ~0.6 s under the write lock). A middle cut short is not "only swaps".
    head = 0
    while head < min(len(old_low), len(new_low)) and old_low[head] == new_low[head]:
        head += 1
    tail = 0
    while tail < min(len(old_low), len(new_low)) - head and old_low[-1 - tail] == new_low[-1 - tail]:
        tail += 1
    old_words, new_words = old_all[head : len(old_all) - tail], new_all[head : len(new_all) - tail]
    cut = len(old_words) > _MAX_DIFF_MIDDLE or len(new_words) > _MAX_DIFF_MIDDLE
    old_words, new_words = old_words[:_MAX_DIFF_MIDDLE], new_words[:_MAX_DIFF_MIDDLE]
    ops = difflib.SequenceMatcher(None, [w.lower() for w in old_words], [w.lower() for w in new_words], autojunk=False)
    swaps, only_swaps, requoted = 0, not cut, False
    new_lower = set(new_low)
    for tag, i1, i2, j1, j2 in ops.get_opcodes():
        if tag == "equal":
            continue
        left, right = old_words[i1:i2], new_words[j1:j2]
        fact_l, fact_r = any(w.lower() in a for w in left), any(w.lower() in b for w in right)
        named_l = fact_l or any(w[:1].isupper() for w in left)
        named_r = fact_r or any(w[:1].isupper() for w in right)
        if tag == "replace" and left and all(w.lower() in new_lower for w in left):
            requoted = True  # the replaced words are quoted again elsewhere: "develop (was main)"
        one_word_each = len(left) == len(right) == 1
        one_name_each = one_word_each and all(w[:1].isupper() and not _is_glue(w) for w in (left[0], right[0]))
        if tag == "replace" and ((fact_l or fact_r) and (named_l and named_r or one_word_each) or one_name_each):
            swaps += 1
        else:
            only_swaps = False
    return swaps, only_swaps, requoted


def _new_content_words(old: str, new: str) -> set[str]:
    """Words of `new` that `old` lacks, other than change words and the glue of a sentence:
    beside a change word they are the new value, even when it is an ordinary word."""
    stems = {_stem(w) for w in _words(old)}
    return {
        w
        for w in _words(new)
        if len(w) >= 3 and w not in _CHANGE_WORDS and w not in _GLUE_WORDS and _stem(w) not in stems
    }


def _is_glue(word: str) -> bool:
    """A word that holds a sentence together ("The" -> "This" is no swapped name)."""
    w = word.lower()
    return len(w) <= 2 or w in _GLUE_WORDS


def _label(text: str) -> str:
    """The label a note opens with ("Fact 7:", "Runbook 12:", "Step 3 -"), lowercased, or "".

    Two notes under different labels are two items, however alike the rest reads: a changed
    label is never a corrected value.
    """
    m = _LABEL_RE.match(text)
    return m.group(1).lower() if m else ""


def _token_split(old: str, new: str) -> tuple[dict[str, str], dict[str, str], dict[str, str], dict[str, str]]:
    """(fact tokens of `old`, of `new`, those only `old` has, those only `new` has), an inflection
    being no difference (`_stem`)."""
    a, b = fact_tokens(old), fact_tokens(new)
    a_stems, b_stems = {_stem(t) for t in a}, {_stem(t) for t in b}
    old_only = {t: k for t, k in a.items() if _stem(t) not in b_stems}
    new_only = {t: k for t, k in b.items() if _stem(t) not in a_stems}
    return a, b, old_only, new_only


#: Words that add to what stands rather than change it ("now also sets log_level").
_ADDITIVE_WORDS = frozenset({"also", "too", "additionally", "another"})


def _change_beside_new_value(new: str, new_only: dict[str, str]) -> bool:
    """Whether a sentence of `new` states a value (a number or an identifier) its older text lacks
    beside a word of outcome, and adds nothing ("It posts to /api/v2/minidumps now"): a change,
    though the older text says "now" of something else ("Ingest now records the size")."""
    values = {t for t, k in new_only.items() if k in _VALUE_KINDS}
    if not values:  # most pairs
        return False
    return any(
        (words := _words(sentence)) & _OUTCOME_WORDS and not words.isdisjoint(values) and not words & _ADDITIVE_WORDS
        for sentence in _SENTENCE_SPLIT_RE.split(new)
    )


def compare(old: str, new: str) -> Verdict:
    """Whether `new` keeps, replaces or differs from the facts of its near-duplicate `old`."""
    a, b, old_only, new_only = _token_split(old, new)
    beside_value = _change_beside_new_value(new, new_only)
    marker = bool(_change_words(new) - _words(old)) or beside_value
    # a value written over another of its kind, or a second number/identifier where the older
    # text stated one (a name is not counted: rewording adds capitals and rare words freely)
    kind_swap = bool(set(old_only.values()) & set(new_only.values())) or bool(
        {k for k in new_only.values() if k in _VALUE_KINDS} & set(a.values())
    )
    swaps, only_swaps, requoted = _value_swaps(old, new, old_only, new_only)
    one_swap = only_swaps and swaps <= _MAX_SAME_SENTENCE_SWAPS and _label(old) == _label(new)
    verdict = lambda rel, told=False: Verdict(rel, tuple(sorted(old_only)), tuple(sorted(new_only)), told)  # noqa: E731
    if marker and (new_only or swaps or requoted or _new_content_words(old, new)):
        told = beside_value or one_swap or _said_beyond_report(old, new) or reassigned(old, new)
        return verdict(REPLACES, told)
    if reassigned(old, new):
        return verdict(REPLACES, True)
    if not kind_swap and not swaps:
        return verdict(SAME)
    if one_swap:
        return verdict(REPLACES, True)
    return verdict(DIFFERS)


MERGE, SUPERSEDE, HINT, SEPARATE = "merge", "supersede", "hint", "separate"


def merge_decision(
    old_content: str, old_source: Any, new_content: str, new_source: Any
) -> tuple[str, str, Verdict | None]:
    """(action, reason, verdict) for a new text whose nearest memory is `old_*`: merge only the
    same fact from the same side of a boundary.

    - A memory from a team file, the sync folder or an import and any other memory are never
      merged (nor two such memories): a merge would write one side's text and tags into what
      the other side shared, or lose what a file said. SEPARATE: stored beside it.
    - A text that swaps a fact token (`compare`) is a new memory: SUPERSEDE when it reads as a
      correction of the older one, else HINT (stored beside it, naming it as possibly replaced).
    """
    if _foreign(new_source) or _foreign(old_source):
        return SEPARATE, "origin: a shared file or an import is never merged with another memory", None
    verdict = compare(old_content, new_content)
    if verdict.relation == REPLACES:
        return SUPERSEDE, "a fact changed: it replaces the older memory", verdict
    if verdict.relation == DIFFERS:
        return HINT, "a fact differs: another item that reads alike", verdict
    return MERGE, "same facts", verdict


def _foreign(source: Any) -> bool:
    """Whether a `source` says the text came from across a boundary (team file, sync folder, import)."""
    return origin_of(source).get("kind") in FOREIGN_ORIGINS


# --- Staleness for injection ------------------------------------------------------------------
# Two live memories of one scope that are related but no near-duplicates (their texts are whole
# turns: cosine 0.37-0.77 on the month replay's replaced facts, below the dedup threshold) can
# still be an old value and its replacement: "minimum firmware 4.2.0" then "minimum goes up to
# 4.6.0", "Docker runs in Colima" then "got rid of Colima, moved to OrbStack". Nothing links
# them, so both were injected. `outdates` tells such a pair apart, for injection only (the start
# block and the prompt hook show the newer one; recall still returns both).

#: Close enough to be about one subject: a correction (`compare` says REPLACES) in this band
#: outdates the older memory (the month replay's pairs without a quoted old value: 0.65-0.77).
OUTDATE_BAND_COSINE = 0.57
#: Related at all: below this a newer text is about something else, whatever words it shares.
OUTDATE_MIN_COSINE = 0.35
#: ... except that a text naming a thing of the older one as retired ("we're dropping CBOR for
#: protobuf", 0.34 from "payloads are encoded as CBOR with ciborium") says outright what it ends.
RETIRED_MIN_COSINE = 0.30
# The change words that point back at the replaced value ("instead of X", "replaced X", "no
# longer X"); "now X" names the new value, and "not", "no" and "was" appear in most sentences.
DISPLACING_WORDS = frozenset(
    {
        "instead",
        "replaced",
        "replaces",
        "previously",
        "formerly",
        "former",
        "longer",
        "retired",
        "deprecated",
        "superseded",
        "anymore",
        "rid",
        "dropped",
        "removed",
        "switched",
        "migrated",
        "moved",
    }
)
#: The one-word retirements of `_RETIRED_RE` ("tundra gets wiped on Friday", "nas-02 is decommissioned"):
#: with DISPLACING_WORDS, the words the change pool searches for (`context.CHANGE_QUERY`).
RETIREMENT_WORDS = frozenset({"decommissioned", "retired", "scrapped", "sold", "wiped", "ditched", "dead"})
#: ... and the words of its longer phrases a keyword search finds them by ("the vault goes away on
#: Friday", "the old bucket gets deleted", "the wiki is archived", "being phased out").
RETIREMENT_SEARCH_WORDS = RETIREMENT_WORDS | {"away", "archived", "deleted", "phased"}
#: Change words that say the subject before them changed how it works ("X moved to Y", "X switched
#: to Y instead"); "now" only adds a fact ("src/routes.ts now uses createRouter").
SUBJECT_CHANGE_WORDS = frozenset({"moved", "switched", "migrated", "instead"})
_DISPLACE_WINDOW = 3  # words from a change word to the value it displaces
# A thing named as gone from use: handed back, decommissioned, sold, dead. What replaced it is
# usually stated in another sentence ("My Mac mini has gone back to IT. The Mac Studio is gannet
# now"), and the older memory's own values (the old host's name) are never named again.
_RETIRED_RE = re.compile(
    r"\b(?:gone|went|given|gave|handed|sent|taken|took) (?:[\w-]+ ){0,3}?back\b|\breturned (?:to|it|them)\b|\bdecommissioned\b|"
    r"\bretired\b|\bscrapped\b|\bsold\b|\bdied\b|\bshut down\b|\bwiped\b|"
    r"\bleft the (?:company|team|org|organi[sz]ation)\b|\bno longer (?:have|has|own|owns|works?)\b|"
    # taken away from where it was used, or dead: "took the Nomad tokens off our laptops", "the op
    # wrapper is dead", "the old way won't work any more"
    r"\b(?:took|taken|takes) (?:[\w-]+ ){0,3}?(?:off|away)\b|\b(?:is|are) dead\b|"
    # turned off, or given up for another ("puffin was switched off", "we're dropping CBOR for protobuf")
    r"\b(?:switched|turned|powered|shut) (?:off|down)\b|\b(?:dropp(?:ed|ing)|ditch(?:ed|ing)|phas(?:ed|ing) out)\b|"
    r"\b(?:won't|will not|doesn't|does not) work (?:any ?more|anyway)\b|"
    # going away, or kept only to read ("the 1Password vault goes away on Friday", "the S3 one goes
    # read-only tomorrow and gets deleted at the end of July", "the old vault is archived")
    r"\b(?:go|goes|gone|went|is going|are going) (?:away|read-only)\b|\b(?:gets?|got|getting|is|are|was|were|being) (?:deleted|archived)\b",
    re.IGNORECASE,
)
_ATTRIBUTIVE_WORDS = frozenset({"the", "a", "an", "our", "my", "your", "their", "this", "that", "its", "his", "her"})
_RETIRED_WINDOW_WORDS = 5  # words either side of a retirement that may name the retired thing
_CLAUSE_BREAK_RE = re.compile(r"[;:—–](?:\s|$)|\s-\s")  # the edge of a retirement's clause ("X: Y is retired")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?;])\s+")


#: The share of an older memory's fact tokens a newer text must name for the two to be about the
#: same fact: a memory that names a value in passing among its other values is no memory of it.
ABOUT_MIN_COVER = 0.5
_PLAIN_WORD_RE = re.compile(r"[\w']+")


def about_same(old: str, new: str) -> bool:
    """Whether `new` names at least ABOUT_MIN_COVER of `old`'s fact tokens (as tokens or words).
    Session end supersedes only then (`promotion.supersedes_fact`). Injection does not ask: it
    hides an outdated memory by where the value stands in it (`context._corrected_on_its_line`)."""
    a = fact_tokens(old)
    named = set(fact_tokens(new)) | {w.lower() for w in _PLAIN_WORD_RE.findall(new)}
    return bool(a) and sum(t in named for t in a) >= ABOUT_MIN_COVER * len(a)


def outdates(old: str, new: str, similarity: float) -> bool:
    """Whether the newer text `new` makes the older `old` stale: it states a value of the same
    kind in the same role as one of `old`'s, as a change. Either

    - close (cosine >= OUTDATE_BAND_COSINE): `compare` reads it as a correction (a value of a
      kind written over another beside a change word, or one value swapped in the same sentence)
      and a value of one kind left `old` while one of that kind came in; or
    - related (cosine >= OUTDATE_MIN_COSINE): one sentence of `new` displaces a value `old`
      stated: it names that value, a change word ("instead of Doppler", "moved from Colima to
      OrbStack", "now 9443 (10.40.2.17)") and a new value of the same kind, which `old` lacks,
      or hands the role of a person `old` names to someone else (`_roles_handed_over`).
    """
    if similarity < OUTDATE_MIN_COSINE:
        return similarity >= RETIRED_MIN_COSINE and _retires_a_name_of(old, new)
    a, b, old_only, new_only = _token_split(old, new)
    verdict = compare(old, new) if similarity >= OUTDATE_BAND_COSINE else None
    if verdict is not None and verdict.relation == REPLACES and verdict.told_as_change:
        return True  # compare found the swap ("Alice reviews" -> "Bob now reviews") or a new value by a change word
    return bool(_displacing(old, new, a, b, old_only, new_only) or _roles_handed_over(old, new))


#: Change words that every report has ("the migration was applied locally", "no reply yet"): as
#: a newer text's only sign of change, not enough for injection to hide the older memory.
_REPORT_WORDS = frozenset({"was", "were", "not", "no"})
_ANY_MORE_RE = re.compile(r"\bany more\b", re.IGNORECASE)


def _said_beyond_report(old: str, new: str) -> bool:
    """Whether `new` has a change word `old` lacks besides a report's (was, were, not, no): "now",
    "moved", "any more". "How's the live coordinator's queue? ... timed out because Tailscale was
    stopped" reads as replacing "The live coordinator is hive-01: HTTP API on 7420" with "was" alone;
    hidden, the coordinator's address was gone from the block. Over the seven month worlds' stored
    pairs, asking for more keeps 29 such memories visible and no replaced fact (the two real changes
    read by a report's word alone also say "no DOCKER_HOST tricks any more")."""
    return bool((_change_words(_ANY_MORE_RE.sub("anymore", new)) - _words(old)) - _REPORT_WORDS)


def states_a_change(text: str) -> bool:
    """Whether `text` says that something changed: a change word beyond a report's ("moved",
    "now", "instead", "no longer"; not "was" or "not") or a thing gone out of use (`retires`).
    The cheap first test of a memory another project's lines may be outdated by."""
    return bool(_change_words(_ANY_MORE_RE.sub("anymore", text)) - _REPORT_WORDS) or retires(text)


def displacements(old: str, new: str) -> dict[str, str]:
    """{value of `old`: the sentence of `new` that displaces it}, whatever the two texts'
    similarity (a memory that only mentions a value in passing, "wrapped in doppler run for the
    credentials", is no near neighbour of the one that replaced it, yet its line shows the value):

    - a sentence naming the value right after a displacing word ("instead of Doppler", "moved
      from Colima", "replaced Lucia") beside a new value of its kind that `old` lacks; or
    - a sentence with a displacing word that brings in a proper name `old` lacks, in a text that
      also names a proper name of `old` elsewhere: "Marcus Oyelaran reviews everything auth-related
      instead. ... Priya started parental leave today" displaces Priya (a proper name: capitalised
      and no word of the lexicon; a note that merely quotes the newer sentence costs a line's
      tail, never hides anything); or
    - a tool `new` runs as code in the place of the one `old` runs, never naming it, with a change
      said beside the new tool ("the old Node version manager is uninstalled", `_tools_swapped`).
    """
    if len(old) + len(new) <= MEMO_TEXT_MAX_CHARS:
        return dict(_displacements_memo(old, new))
    return _read_displacements(old, new)


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _displacements_memo(old: str, new: str) -> dict[str, str]:
    return _read_displacements(old, new)


def ended_by_name(old: str, new: str) -> dict[str, str]:
    """{value of `old`: the sentence of `new` that ends it by name}: the value right after a
    displacing word ("instead of Doppler", "moved from Colima", never "moved the Windows root to
    D:"), named beside a retirement ("the
    1Password vault goes away"), or a tool run as code in its place (`_tools_swapped`). The
    strictest readings of `displacements`, for a change said in another project
    (`context.corrections`): there a subject that "moved to" somewhere ("the bench validator
    moved to the Northgate lab") or a name a change brings in beside another ("Aoife and Yuki
    decided ... the pins moved from Marker") is most often another thing of the same name."""
    found = _displacing(old, new, *_token_split(old, new), by_name=True)
    for value, sentence in _tools_swapped(old, new).items():
        found.setdefault(value, sentence)
    return found


def displaced_outright(old: str, new: str) -> frozenset[str]:
    """The values of `old` that `new` displaces by name (a displacing word or a retirement beside
    the value: "dropping CBOR", "the 1Password vault goes away"), not by the looser readings of a
    role handed over or a proper name brought in (`displacements` has those too). Only these carry
    their `value_mates` onto a line: a name merely brought in beside an old one is no way ended."""
    if len(old) + len(new) <= MEMO_TEXT_MAX_CHARS:
        return _outright_memo(old, new)
    return frozenset(_displacing(old, new, *_token_split(old, new)))


@functools.lru_cache(maxsize=MEMO_ENTRIES)
def _outright_memo(old: str, new: str) -> frozenset[str]:
    return frozenset(_displacing(old, new, *_token_split(old, new)))


def value_mates(old: str, value: str) -> set[str]:
    """The fact tokens `old` states in its sentences that name `value`: the parts of one way of doing
    a thing ("Wrap it: op run --env-file=.env.op -- <command>, and 1Password fills them in" puts
    env-file and env.op beside 1password). When `value` is displaced, a line that shows only its
    mates still states the way that ended (`context.corrections` notes the change on it)."""
    mates: set[str] = set()
    for sentence in _SENTENCE_SPLIT_RE.split(old):
        tokens = fact_tokens(sentence)
        if value in tokens:  # the token, not a substring ("8443" is no part of "18443")
            mates.update(tokens)
    mates.discard(value)
    return mates


#: Content words a newer sentence must share with what the older memory said beside a displaced
#: value to be its counterpart ("run anything that needs credentials through op run" / "anything
#: that needs credentials runs as sops exec-env").
PARALLEL_MIN_WORDS = 2


def parallel_sentence(old: str, new: str, displacing: str, stated: set[str]) -> str | None:
    """The sentence of `new` that says, with a fact token `old` lacks, what `old` said beside the
    tokens a line `stated` (a displaced value, its `value_mates`): the way of doing the thing that
    came instead ("I'll wrap anything that needs credentials with sops exec-env"), when the
    sentence that displaced the value ("the 1Password vault goes away on Friday") is not it. None
    when no sentence shares PARALLEL_MIN_WORDS content words with it, and more than the sentence
    of change does beside the ended things it names."""
    _, _, _, new_only = _token_split(old, new)
    said: set[str] = set().union(*(_said_of(old, token) for token in stated)) if stated else set()
    candidates = [
        " ".join(x.split())
        for x in _SENTENCE_SPLIT_RE.split(new)
        if x.strip() != displacing.strip() and any(t in new_only for t in fact_tokens(x))
    ]
    shared, best = max(((len(_content_words(x) & said), x) for x in candidates), key=lambda p: p[0], default=(0, None))
    # and more of it than the sentence of change itself, which may say the replacement already
    # ("nas-02 is being retired, so artifact uploads had to move to Ceph (s3://hive-artifacts)"),
    # counting what it said beside the ended things, not their names: it names them because it ends
    # them ("Removed the sidekiq gem" shares "sidekiq" with "Jobs here are Sidekiq")
    return best if shared >= PARALLEL_MIN_WORDS and shared > len(_content_words(displacing) & (said - stated)) else None


def new_value_sentence(old: str, new: str, sentence: str, value: str | None = None) -> str | None:
    """The sentence of `new` that states a value (a number or an identifier, or a name of the kind of
    the displaced `value` that `new` is about) `old` lacks, when the displacing `sentence` states
    none: "The bench validator moved to the Northgate lab over the weekend." says that something
    changed, "It's 10.48.9.40 now" what it changed to; "tundra gets wiped on Friday" that the build
    box goes, "My new build box is moraine" which one comes. Of several such sentences, the one
    that shares most words with what `old` said of the value ("Heavy builds go to tundra" finds
    "I'll send heavy builds to moraine", not a sentence about another change). None when
    `sentence` has such a value already, or no sentence of `new` has one."""
    a, _, _, new_only = _token_split(old, new)
    values = {t for t, k in new_only.items() if k in _VALUE_KINDS}
    fresh = values | _names_about(new, new_only) if value is not None and a.get(value) == NAME else values
    if not fresh:
        return None

    def has_fresh(text: str, among: set[str] = fresh) -> bool:
        return any(t in among for t in fact_tokens(text))

    # a number or an identifier in the sentence of change is the new value itself ("moved to
    # 172.20.6.8"); a name there may be only what the change is called ("all on mise now")
    if has_fresh(sentence, values):
        return None
    # the value said as the change's outcome ("now", "from now on", "instead", "my new build box"),
    # not any number of the newer memory's story ("this week's drop has overlapping trips in block 3104")
    flat = (" ".join(x.split()) for x in _SENTENCE_SPLIT_RE.split(new))
    candidates = [x for x in flat if x not in sentence and has_fresh(x) and _words(x) & _SUCCESSOR_WORDS]
    if not candidates:
        return None
    said = _said_of(old, value) if value else set()
    return max(candidates, key=lambda x: len(_content_words(x) & said))  # the first of equals


#: The words that state a change's outcome: the change words, less the ones every story has ("the
#: only PR waiting on Marta was #391" reports, it does not change).
_OUTCOME_WORDS = (_CHANGE_WORDS | DISPLACING_WORDS) - {"was", "were", "not", "no"}
#: The words of a sentence that says what came in place of a thing another sentence ends: an
#: outcome's, and "new" ("mistral is being wiped tomorrow. My new build box is sirocco"). Only
#: where the sentence of change names no new value: "new" alone is no sign of change.
_SUCCESSOR_WORDS = _OUTCOME_WORDS | {"new"}
#: Times a name must occur in a newer memory to be a value it is about ("moraine" four times), not
#: one its story mentions ("Friday").
_NAME_VALUE_MIN_COUNT = 2


def _names_about(new: str, new_only: dict[str, str]) -> set[str]:
    """The names `new` is about among those its older memory lacks (`new_only`): named at least
    _NAME_VALUE_MIN_COUNT times, a value a displaced name may have become ("moraine")."""
    low = new.lower()
    return {
        t
        for t, k in new_only.items()
        if k == NAME and len(re.findall(rf"\b{re.escape(t)}\b", low)) >= _NAME_VALUE_MIN_COUNT
    }


def _said_of(old: str, value: str) -> set[str]:
    """The content words of `old`'s sentences that name `value`: what it said of the value, which a
    newer sentence stating its replacement shares ("heavy builds go to tundra" / "to moraine")."""
    return _content_words(" ".join(x for x in _SENTENCE_SPLIT_RE.split(old) if value in x.lower()))


def _content_words(text: str) -> set[str]:
    """The words of `text` that carry content (no glue, at least three letters)."""
    return {w for w in _words(text) if len(w) >= _MIN_RARE_WORD_CHARS and w not in _GLUE_WORDS}


def _read_displacements(old: str, new: str) -> dict[str, str]:
    a, b, old_only, new_only = _token_split(old, new)
    found = _displacing(old, new, a, b, old_only, new_only)
    for value, sentence in (
        _roles_handed_over(old, new)
        | _names_displaced(old, new)
        | _tools_swapped(old, new)
        | _amounts_restated(old, new)
    ).items():
        found.setdefault(value, sentence)
    return found


#: Units of time, size and share, as a regex alternation: what an amount counts (`_AMOUNT_RE`) and
#: what a value is measured in, never what it is of (`qualified_apart`).
_TIME_UNITS = r"ms|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?"
_SIZE_UNITS = r"[kmgt]i?b"
_SHARE_UNITS = r"percent"
_MEASURE_UNITS = f"{_TIME_UNITS}|{_SIZE_UNITS}|{_SHARE_UNITS}"
#: An amount: a number and its unit, a word apart ("15 minutes", "512 MiB", "3 retries"). The
#: units are words, so a timing a run reports ("in 19.03s") is none.
_AMOUNT_RE = re.compile(
    rf"(?<![\w.])(\d+(?:\.\d+)?)\s+({_MEASURE_UNITS}|retries|attempts|workers|replicas|characters|chars|lines)\b",
    re.IGNORECASE,
)


def _amounts(text: str) -> set[tuple[str, str]]:
    """The (number, unit) amounts `text` states, a unit in one form ("minute" and "minutes")."""
    return set(_amounts_in_order(text))


def states_new_amount(old: str, sentence: str) -> bool:
    """Whether `sentence` states an amount `old` lacks ("seats are only held for 7 minutes"): it
    names the new value itself, so a quote of it must not be cut to make room for another sentence
    (a one-digit number is no value token of `new_value_sentence`)."""
    return bool(_amounts(sentence) - _amounts(old))


def _amounts_in_order(text: str) -> list[tuple[str, str]]:
    """`_amounts` in the order `text` states them, each once: what is read from them must not
    depend on the process's string hashing (a line's note quoted one amount's sentence in one
    process and another's in the next)."""
    return list(dict.fromkeys((n, u.lower().rstrip("s") or u.lower()) for n, u in _AMOUNT_RE.findall(text)))


def _amounts_restated(old: str, new: str) -> dict[str, str]:
    """{number of `old`: the sentence of `new` that states another amount of its unit in the same
    role}: a sentence of `old` with an amount `new` lacks ("checkout holds seats for 15 minutes"),
    a sentence of `new` with an amount of that unit `old` lacks that shares PARALLEL_MIN_WORDS
    content words with it ("seats in checkout are only held for 7 minutes"), in a newer text that
    says something changed with more than a report's words. Neither names the other's value, and
    a memory of two facts ("... 15 minutes. And put a TODO(mf) on each ...") is far enough from the
    newer one that `compare` may not read it: its line carries the new amount instead. Over the
    month replay's eight worlds (every pair of memories the stand-in writes, and of the user's
    words alone, as the Stop hook keeps them) it reads three real changes, one of them found by
    no other reading, and one report of another file's size."""
    before = _amounts(old)
    if not before or not _said_beyond_report(old, new):
        return {}
    after = _amounts(new)
    found: dict[str, str] = {}
    for old_sentence in _SENTENCE_SPLIT_RE.split(old):
        for number, unit in (a for a in _amounts_in_order(old_sentence) if a not in after):
            said = _content_words(old_sentence) - {unit, unit + "s"}
            for sentence in _SENTENCE_SPLIT_RE.split(new):
                fresh = {u for _, u in _amounts(sentence) - before}
                if unit in fresh and len(said & _content_words(sentence)) >= PARALLEL_MIN_WORDS:
                    found.setdefault(number, " ".join(sentence.split()))
                    break
    return found


#: Words that link a value to the name of what it measures before it ("the upload timeout to 20 s",
#: "the pool size is 10"): skipped on the way back to the name.
_LINK_WORDS = frozenset("to is are was be at of from on by as".split())
#: The name of what a value measures: at most this many words written right beside it.
_VALUE_NAME_WORDS = 2
#: A unit a value is measured in: `_MEASURE_UNITS`, and the one-letter "s" and "h" ("5 s busy timeout").
_UNIT_RE = re.compile(rf"(?:{_MEASURE_UNITS}|s|h)", re.IGNORECASE)


def qualified_apart(old: str, old_value: str, new: str, new_value: str) -> bool:
    """Whether two values of one kind belong to two things named alike: written right beside each
    value, the name of what it measures ends in one noun ("timeout") that another word qualifies
    in each ("the 5 s busy timeout", "the upload timeout to 20 seconds"), neither qualifier said
    anywhere in the other text. "Bump the default upload timeout to 20 seconds" changes nothing
    "the 5 s busy timeout" states, and "set the staging port to 9443" nothing of "the prod port
    is 8443"; "raise the pool size to 20" does change "the DB pool size is 10", and "move it to
    03:40 UTC" names nothing beside its value. Each place the values stand is read: apart when
    one pair of places clashes and no pair names one noun alike ("Staging now listens on 9443"
    names nothing beside the value, and decides nothing)."""
    old_words, new_words = _words(old), _words(new)
    seen_apart = False
    for a in _value_places(old, old_value):
        for b in _value_places(new, new_value):
            shared = a.keys() & b.keys()
            clash = [
                noun
                for noun in shared
                if (qa := a[noun]) and (qb := b[noun]) and qa != qb and qa not in new_words and qb not in old_words
            ]
            if shared and not clash:
                return False  # one thing, said alike in both places
            seen_apart = seen_apart or bool(clash)
    return seen_apart


#: `_MEASURE_UNITS` by family (time with the one-letter "s" and "h"): what an amount is an amount of.
_UNIT_FAMILIES = (
    ("time", re.compile(rf"{_TIME_UNITS}|s|h", re.IGNORECASE)),
    ("size", re.compile(_SIZE_UNITS, re.IGNORECASE)),
    ("share", re.compile(_SHARE_UNITS, re.IGNORECASE)),
)
#: The form of a value written as a date's number ("1 Jan 1970", "March 3"): a calendar word beside it.
DATE_FORM = "date"
#: ... as a count of things ("200 taps"): a plural noun right after it, whichever noun (a retry
#: limit may be written "3 retries" and then "5 attempts").
COUNT_FORM = "count"
_NOT_PLURAL_ENDINGS = ("ss", "us", "is", "ous")
_NOT_PLURALS = frozenset("always sometimes perhaps besides towards afterwards nowadays whereas".split())


@dataclass(frozen=True)
class _Walk:
    """A text's tokens, for reading what is written right beside a value: the words a value's
    form and its name are read from must touch it, with nothing but blanks between."""

    text: str
    tokens: list[re.Match[str]]
    words: list[str]

    @classmethod
    def of(cls, text: str) -> _Walk:
        tokens = list(_TOKEN_RE.finditer(text))
        return cls(text, tokens, [t.group(0).lower() for t in tokens])

    def places(self, value: str) -> Iterator[int]:
        """The index of each token that is `value` (lower case)."""
        return (i for i, word in enumerate(self.words) if word == value)

    def joined(self, i: int, j: int) -> bool:
        """Nothing but blanks between tokens i < j (both inside the text)."""
        return 0 <= i < j < len(self.tokens) and not self.text[self.tokens[i].end() : self.tokens[j].start()].strip()


def formed_apart(old: str, old_value: str, new: str, new_value: str) -> bool:
    """Whether two numbers are written in forms no one value takes twice: a date's ("the clock
    starts at 1 Jan 1970"), an amount's ("the upload timeout to 20 seconds"), a count's ("it
    uploaded 200 taps"), or amounts of two families (seconds, MiB). A bare number ("the port is
    8443") takes any form: it may be written later with its unit ("timeout is 30", then "45
    seconds"), so it decides nothing. Over the eight month worlds' facts and the memories their
    replays stored, against every later turn, this parts 156 of the 14,676 pairs read as a value
    swapped ("Friday 29 May" and "10 seconds", "32 cores" and "9 minutes"), and none of the 19
    labelled replacements."""
    a, b = _value_forms(old, old_value), _value_forms(new, new_value)
    return bool(a) and bool(b) and None not in a and None not in b and not a & b


def _value_forms(text: str, value: str) -> set[str | None]:
    """The forms `value` is written in, one per place `text` states it: the family of the unit right
    after it, DATE_FORM beside a calendar word, COUNT_FORM before a plural noun, else None (a bare
    number)."""
    walk = _Walk.of(text)
    forms: set[str | None] = set()
    for i in walk.places(value):
        after = walk.words[i + 1] if walk.joined(i, i + 1) else ""
        family = next((name for name, unit in _UNIT_FAMILIES if unit.fullmatch(after)), None) if after else None
        if family:
            forms.add(family)
        elif _DATE_WORDS.intersection(walk.words[max(0, i - 2) : i + 2]):
            forms.add(DATE_FORM)
        else:
            forms.add(COUNT_FORM if _counts(after) else None)
    return forms


def _counts(word: str) -> bool:
    """A plural noun a number counts ("200 taps", "221 tests", "3 retries"), not an adverb ("always")."""
    return (
        len(word) >= _MIN_STEM_CHARS
        and word.isalpha()
        and word.endswith("s")
        and not word.endswith(_NOT_PLURAL_ENDINGS)
        and word not in _GLUE_WORDS
        and word not in _NOT_PLURALS
    )


def _value_places(text: str, value: str) -> list[dict[str, str | None]]:
    """For each place `text` states `value`: {noun that ends a name written right beside it (no
    punctuation between): the word before the noun in that name, or None}. After the value, past
    its unit ("5 s busy timeout"); before it, past a linking word ("upload timeout to 20")."""
    walk = _Walk.of(text)
    words, joined = walk.words, walk.joined
    places = []
    for i in walk.places(value):
        names: dict[str, str | None] = {}
        j = i + 1 if joined(i, i + 1) and _UNIT_RE.fullmatch(words[i + 1]) else i
        after: list[str] = []
        while len(after) < _VALUE_NAME_WORDS and joined(j, j + 1) and _describes(words[j + 1]):
            j += 1
            after.append(words[j])
        j = i - 1 if joined(i - 1, i) and words[i - 1] in _LINK_WORDS else i
        before: list[str] = []
        while len(before) < _VALUE_NAME_WORDS and joined(j - 1, j) and _describes(words[j - 1]):
            j -= 1
            before.insert(0, words[j])
        for name in (after, before):  # in the text's order: the noun ends the name either side
            if name:
                names[name[-1]] = name[-2] if len(name) > 1 else None
        places.append(names)
    return places


def _describes(word: str) -> bool:
    """A word that can name or qualify a thing: letters, no glue, no unit."""
    return (
        word.isalpha()
        and len(word) >= _MIN_RARE_WORD_CHARS
        and word not in _GLUE_WORDS
        and not _UNIT_RE.fullmatch(word)
    )


#: A command written as code: its tool, its subcommand and the rest of the span ("`fnm install`",
#: "`doppler run -- bin/dev`").
_CODE_COMMAND_RE = re.compile(r"`([a-z][\w.+-]{0,30}) ([a-z][\w-]{1,30})\b([^`]*)`")
#: A wrapper's "--": what follows it is the command the tool runs ("doppler run -- psql").
_WRAPPED_RE = re.compile(r"(?:^|\s)--(?:\s|$)")


#: A wrapper written plainly, outside code marks, as users type it: a tool and its subcommand, flags,
#: then "--" and the command it runs, a placeholder or flags making plain that it is one ("you run
#: things as bws run -- <cmd>", "op run --env-file=.env.op -- astro dev restart"); an aside set
#: off by a double hyphen ("we run -- honestly -- fine") has neither.
_PLAIN_WRAPPER_RE = re.compile(
    r"(?<![\w`.-])([a-z][\w.+-]{0,30}) ([a-z][\w-]{1,30})((?: --?[\w.=/-]+)*) --(?= <[\w -]{1,20}>| \S)"
)


def _code_commands(text: str) -> set[tuple[str, str, bool]]:
    """(tool, subcommand, wraps another command) of each command `text` writes as code, or writes
    plainly as a wrapper (`_PLAIN_WRAPPER_RE`): a user who says the new way in passing seldom puts
    it in code marks, and their words were all a change kept by the Stop hook carries to other
    projects (`sightings._change_text`)."""
    found = {(t.lower(), c.lower(), bool(_WRAPPED_RE.search(rest))) for t, c, rest in _CODE_COMMAND_RE.findall(text)}
    for m in _PLAIN_WRAPPER_RE.finditer(text):
        placeholder = text[m.end() + 1 : m.end() + 2] == "<"
        if placeholder or m.group(3):
            found.add((m.group(1).lower(), m.group(2).lower(), True))
    return found


def _tools_swapped(old: str, new: str) -> dict[str, str]:
    """{tool of `old`: the sentence of `new` that says the tool changed}: `new` runs, as code, a
    subcommand `old` runs with another tool, in the same role (both wrap a command after "--",
    or neither: "`nvm install`", then "`fnm install`"; "`doppler run -- <cmd>`", then
    "`infisical run -- <cmd>`", never "`uv run pytest`"), never names the old tool, and says a
    change in a sentence that names the new one and something the old text also spoke of ("I
    switched the laptop to fnm this week, the old Node version manager is uninstalled"). A tool
    replaced by its kind ("the old version manager", "we changed secret stores") names no value of
    the old text, so no other reading here finds it. Over the stored pairs of the eight month
    worlds' replays this reads 21 changes and no pair that is none. Notes only: nothing is hidden
    on this reading (`outdates` does not use it)."""
    old_commands = _code_commands(old)
    if not old_commands:  # most texts: no command written as code
        return {}
    old_words, new_words = _words(old), _words(new)
    found: dict[str, str] = {}
    for tool, sub, wraps in _code_commands(new):
        if tool in old_words:
            continue
        gone = [t for t, c, w in old_commands if c == sub and w == wraps and t != tool and t not in new_words]
        sentence = _change_naming(new, tool) if gone else None
        for t in gone:
            if sentence and _shares_a_subject(sentence, old, {tool, sub, t}):
                found.setdefault(t, _with_command(new, sentence, f"{tool} {sub}"))
    return found


def _with_command(text: str, sentence: str, command: str) -> str:
    """`sentence`, followed by the sentence of `text` that writes `command` as code when it does not
    ("I switched the laptop to fnm this week, ..." then "`fnm install` read the same .nvmrc"): what
    Claude runs now, not only that something changed."""
    if command in sentence.lower():
        return sentence
    for other in _SENTENCE_SPLIT_RE.split(text):
        if f"`{command}" in other.lower():
            return f"{sentence} {' '.join(other.split())}"
    return sentence


def _shares_a_subject(sentence: str, old: str, leave_out: set[str]) -> bool:
    """Whether `sentence` speaks of something `old` speaks of, beyond `leave_out` and words of
    change ("laptop", "secrets", "toolchain", compared by stem): a change of tool elsewhere in the
    same store ("the backend moved to Python: `pip install ...`" beside "`npm install` before the
    web build") is not this one's."""
    skip = {_stem(w) for w in leave_out | _CHANGE_WORDS | DISPLACING_WORDS}
    return bool(({_stem(w) for w in _content_words(sentence)} - skip) & {_stem(w) for w in _content_words(old)})


def _change_naming(text: str, word: str) -> str | None:
    """The first sentence of `text` that names `word` beside a word of change other than a
    report's (`_REPORT_WORDS`: "was", "not", which most sentences have)."""
    for sentence in _SENTENCE_SPLIT_RE.split(text):
        if word in _words(sentence) and _change_words(sentence) - _REPORT_WORDS:
            return " ".join(sentence.split())
    return None


def _proper_names(text: str) -> set[str]:
    """Capitalised words that name someone or something (Priya, Marcus, Infisical), lowercased: a
    capitalised word inside a sentence, or one no lexicon holds wherever it stands."""
    out: set[str] = set()
    for m in _TOKEN_RE.finditer(text):
        t = m.group(0)
        if not (t.isalpha() and len(t) >= _MIN_RARE_WORD_CHARS and t[0].isupper() and t[1:].islower()):
            continue
        at = m.start()
        start = at == 0 or bool(_SENTENCE_END_RE.search(text[max(0, at - 3) : at]))
        if not _is_common_word(t) or not (start or _is_glue(t)):
            out.add(t.lower())
    return out


def _names_displaced(old: str, new: str) -> dict[str, str]:
    """The proper names of `old` that `new` names beside a displacing sentence bringing in a new one
    (`displacements`, second case), or names as the subject of its own move ("Leilani moved over
    to live-ops this week", where the sentence that brings the new name may name none of the
    old's). Each with the sentence that brings a new name into the old one's role: of the
    sentences bringing a new name with a word of change ("instead", "moved", "now"), the one that
    shares most words with what `old` said of the displaced name ("Oskar Brandt is our producer
    from today" for "Leilani is our producer", not "nas-02 is retired, so uploads moved to Ceph")."""
    old_names, new_names = _proper_names(old), _proper_names(new)
    shared = old_names & _words(new)
    brought = new_names - old_names
    if not shared or not brought:
        return {}
    displaced: set[str] = set()
    sentences = [" ".join(x.split()) for x in _SENTENCE_SPLIT_RE.split(new) if x.strip()]
    for sentence in sentences:
        tokens = [w.lower() for w in _TOKEN_RE.findall(sentence)]
        displaced |= _movers(tokens) & shared
        words = set(tokens)
        if words & DISPLACING_WORDS and words & brought:
            displaced |= shared - words
    found: dict[str, str] = {}
    for name in sorted(displaced):
        candidates = [
            x
            for x in sentences
            if (words := {w.lower() for w in _TOKEN_RE.findall(x)}) & brought
            and words & (DISPLACING_WORDS | {"now"})
            and name not in words
        ]
        if not candidates:
            continue
        said = _said_of(old, name) - {name}
        found[name] = max(candidates, key=lambda x: len(_content_words(x) & said))  # the first of equals
    return found


#: Words that hand a role to someone: "she's taken over ticketing crypto", "Bram picks up auth
#: reviews from today", "Mirela steps in while he's out".
_HANDOVER_RE = re.compile(
    r"\b(?:tak(?:en|es|ing)|took|hand(?:ed|s|ing))(?: [\w'-]+){0,3}? over\b|"
    r"\bpick(?:s|ed|ing)? up\b|\bstep(?:s|ped|ping)? in\b",
    re.IGNORECASE,
)
#: Content words a handover sentence shares with the older sentence naming the role's holder
#: ("security", "review", "grt-verify"), one of them a thing's name: the same role, not any
#: sentence with a new name ("ask", "ticket"; "token", "user").
_HANDOVER_MIN_SHARED_WORDS = 2
#: Capitalised words of a date ("from 29 May", "on Friday"): no one who holds a role.
_CALENDAR_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
#: The calendar words a date's number is written beside ("1 Jan 1970", "Fri 29 May"): the names
#: and their short forms ("may" only as the month's whole name, which is also the verb).
_DATE_WORDS = _CALENDAR_WORDS | frozenset(
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun".split()
)
_LEAD_LABEL_RE = re.compile(r"^\W*\w+:\s+")  # "Asked: ", "Outcome: " before a sentence's words


def _roles_handed_over(old: str, new: str) -> dict[str, str]:
    """{name of `old`: the sentence of `new` handing its role to someone else}, when `new` never
    names the old holder: "Security reviews for grt-verify go to Leila Haddad from this week, she's
    taken over ticketing crypto" for "anything under crates/grt-verify needs a review from Kofi
    Mensah in security". The handover sentence brings in a name `old` lacks and shares
    _HANDOVER_MIN_SHARED_WORDS content words, one a thing's name (grt-verify), with the older
    sentence whose names `new` lacks."""
    if not _HANDOVER_RE.search(new):  # most texts: no handover
        return {}
    old_names, new_names = _proper_names(old) - _CALENDAR_WORDS, _proper_names(new)
    brought, gone = new_names - old_names, old_names - _words(new)
    if not brought or not gone:
        return {}
    found: dict[str, str] = {}
    sentences = [" ".join(x.split()) for x in _SENTENCE_SPLIT_RE.split(new)]
    for at, said_new in enumerate(sentences):
        # the new holder is named in the handover sentence or the one before ("... go to Tomasz
        # from Monday; he has taken over the ledger")
        sentence = " ".join(sentences[max(0, at - 1) : at + 1]) if at else said_new
        if not (_HANDOVER_RE.search(said_new) and _words(sentence) & brought):
            continue
        words, things = _role_words(sentence)
        for said in _SENTENCE_SPLIT_RE.split(old):
            holders = gone & _words(said)
            if not holders:
                continue
            said_words, said_things = _role_words(said)
            if len(said_words & words) >= _HANDOVER_MIN_SHARED_WORDS and said_things & things:
                for name in sorted(holders):
                    found.setdefault(name, sentence)
    return found


def _role_words(sentence: str) -> tuple[set[str], set[str]]:
    """(the stems of a sentence's content words, the names of things among them): what a role is
    about. A path's parts count ("crates/grt-verify" names grt-verify); a lead label, the handover's
    own words and proper names (the holders) do not."""
    body = _HANDOVER_RE.sub(" ", _LEAD_LABEL_RE.sub("", sentence))
    names = _proper_names(body)
    parts = {p for w in _content_words(body) - names for p in w.split("/") if len(p) >= _MIN_RARE_WORD_CHARS}
    things = {p for p in parts if _kind(p, False) in (IDENT, NAME) or "-" in p or "_" in p}  # ledger-core too
    return {_stem(p) for p in parts if p not in _GLUE_WORDS}, things


def successor_sentence(head: str, text: str) -> str | None:
    """The sentence of `text` after its `head` that brings in the successor of a name `head` says
    moved on ("Leilani moved over to live-ops" ... "Oskar Brandt is our producer from today"), or
    None. Only the name's own move counts: within one text, a sentence with a change word and a
    new name elsewhere ("the pins moved from Marker to SymbolOptions") says nothing of a person."""
    moving = set()
    for sentence in _SENTENCE_SPLIT_RE.split(head):
        moving |= _movers([w.lower() for w in _TOKEN_RE.findall(sentence)])
    moving &= _proper_names(head)
    if not moving:  # most lines
        return None
    for name, sentence in sorted(_names_displaced(head, text).items()):
        if name in moving and sentence not in head:
            return sentence
    return None


def _movers(tokens: list[str]) -> set[str]:
    """Of a sentence's lowercased tokens, the ones right before a word of move: the subject of its
    own move ("leilani" of "Leilani moved over to live-ops")."""
    return {w for at, w in enumerate(tokens[:-1]) if tokens[at + 1] in SUBJECT_CHANGE_WORDS}


def retires(text: str) -> bool:
    """Whether `text` says something went out of use (handed back, decommissioned, sold): a change
    even with no change word, whose replacement is often named in the next sentence."""
    return next(_retirements(text), None) is not None


def _retirements(text: str) -> Iterator[tuple[int, int]]:
    """The spans of `text` saying something went out of use, as a predicate ("the box was sold",
    "we handed it back"); an attribute names a thing, not a change ("the decommissioned site")."""
    for m in _RETIRED_RE.finditer(text):
        before = text[: m.start()].split()
        if not (before and before[-1].lower() in _ATTRIBUTIVE_WORDS):
            yield m.span()


def _retires_a_name_of(old: str, new: str) -> bool:
    """Whether a sentence of `new` names, beside a retirement, a fact token of `old` while a value of
    a kind `old` loses comes in (the retirement rule of `_displacing`, on its own)."""
    if not retires(new):
        return False
    a, b, old_only, new_only = _token_split(old, new)
    if not set(old_only.values()) & set(new_only.values()):
        return False
    return any(w in a and w in b for sentence in _SENTENCE_SPLIT_RE.split(new) for w in _retired_names(sentence))


def _retired_names(sentence: str) -> list[str]:
    """The words (lowercased tokens) within _RETIRED_WINDOW_WORDS of a retirement in `sentence`."""
    spans = list(_retirements(sentence))
    if not spans:  # most sentences: no tokenising
        return []
    tokens = list(_TOKEN_RE.finditer(sentence))
    out: list[str] = []
    for start, end in spans:
        # within the retirement's clause: "One item from buildhive: nas-02 is being retired"
        # retires nas-02, not the project named before the colon
        opens = max((m.end() for m in _CLAUSE_BREAK_RE.finditer(sentence, 0, start)), default=0)
        closes = next((m.start() for m in _CLAUSE_BREAK_RE.finditer(sentence, end) if m.start() > end), len(sentence))
        before = [t for t in tokens if opens <= t.start() and t.end() <= start][-_RETIRED_WINDOW_WORDS:]
        inside = [t for t in tokens if start <= t.start() < end]
        after = [t for t in tokens if t.start() >= end and t.end() <= closes][:_RETIRED_WINDOW_WORDS]
        out.extend(t.group(0).lower() for t in before + inside + after)
    return [w for w in out if w not in _CALENDAR_WORDS]  # "gets wiped on Friday" retires no Friday


def _subject_changed(words: list[str], at: int) -> bool:
    """Whether the change word at `at` says its subject changed how it works: "instead", or a move
    ("moved to", "switched over to", "migrated off"); "switched on" turns a setting on."""
    word = words[at]
    if word == "instead":
        return True
    return word in SUBJECT_CHANGE_WORDS and at + 1 < len(words) and words[at + 1] in _MOVE_PREPOSITIONS


_MOVE_PREPOSITIONS = frozenset({"to", "from", "off", "away", "onto", "over"})
#: Words of a move, and what follows one when the subject left something ("moved off Colima",
#: "switched away from nvm"), not when it went somewhere ("moved the root to D:").
_MOVES = SUBJECT_CHANGE_WORDS - {"instead"}
_AWAY = (["from"], ["off"], ["away"])


#: Verbs that set a quantity anew: "raising the download cap to 92 days", "bumped the timeout to 30".
SETTING_WORDS = frozenset(
    "raise raised raising lower lowered lowering increase increased increasing reduce reduced reducing "
    "bump bumped bumping set setting extend extended extending shorten shortened shortening cut cutting".split()
)
_SETTING_WINDOW_WORDS = 5  # words from the verb to its "to" ("raising the public download cap to")
#: A setting written with its value ("uplink_interval = "20m"", "DOCKER_HOST=unix://..."): a name
#: of at least three characters, "=", then the value, quoted or not.
_ASSIGNMENT_RE = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]{2,})\s*=\s*[\"'`]?([^\s\"'`,;)]+)")


def _assignments(text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in _ASSIGNMENT_RE.finditer(text):
        out.setdefault(m.group(1).lower(), set()).add(m.group(2).lower().rstrip("."))
    return out


def reassigned(old: str, new: str) -> bool:
    """Whether `new` gives a setting of `old` a value `old` never gave it (`uplink_interval = "20m"`
    then `uplink_interval = "10m"`): the setting changed, whatever words say so."""
    before = _assignments(old)
    if not before:  # most texts: no setting written out
        return False
    after = _assignments(new)
    return any(key in before and not values & before[key] for key, values in after.items())


def _quantities_set_anew(old: str, new: str, a: dict[str, str], new_only: dict[str, str]) -> dict[str, str]:
    """{word of `old`: the sentence of `new` that sets that quantity anew}: a verb of setting, a word
    `old` uses before "to", then a number `old` lacks, where `old` stated a number ("Fiona signed
    off on raising the download cap to 92 days" outdates "downloads are capped at 31 days"), though
    the old value may still be named as a threshold."""
    if NUMBER not in a.values() or NUMBER not in new_only.values():
        return {}
    old_words = _words(old)
    known = old_words | {_stem(w) for w in old_words}  # "download" of "downloads": one stem misses it
    found: dict[str, str] = {}
    for sentence in _SENTENCE_SPLIT_RE.split(new):
        words = [w.lower() for w in _TOKEN_RE.findall(sentence)]
        for at, word in enumerate(words):
            tail = words[at + 1 : at + 1 + _SETTING_WINDOW_WORDS]
            if word not in SETTING_WORDS or "to" not in tail:
                continue
            to = at + 1 + tail.index("to")
            subject = [
                w
                for w in words[at + 1 : to]
                if len(w) >= _MIN_RARE_WORD_CHARS
                and w not in _GLUE_WORDS
                and not known.isdisjoint({w, w + "s", _stem(w)})
            ]
            if subject and to + 1 < len(words) and new_only.get(words[to + 1]) == NUMBER:
                found.setdefault(subject[-1], " ".join(sentence.split()))
    return found


#: Words that say a quantity was set anew in a sentence that states it in the old one's frame.
_REFRAME_WORDS = frozenset(
    "now changed changing change instead moved switched raised lowered increased reduced bumped updated".split()
)


def _frames_a_number(word: str) -> bool:
    """A word that gives a number its role: a content word, no unit or glue ("top", "frames", "retries")."""
    return word.isalpha() and len(word) >= _MIN_RARE_WORD_CHARS and word not in _GLUE_WORDS


def _numbers_reframed(old: str, new: str, a: dict[str, str], new_only: dict[str, str]) -> dict[str, str]:
    """{number of `old`: the sentence of `new` that states another number in the same frame}: the
    words either side of it in `old` ("the top 5 frames") around a number `old` lacks in a sentence
    of `new` that says so as a change ("a signature is now the top 3 frames"). Both sides must be
    content words: "at 5" or "takes 4 s" (a timing, which every run states anew) frames nothing."""
    if NUMBER not in a.values() or NUMBER not in new_only.values():
        return {}
    frames: dict[tuple[str, str], str] = {}
    old_tokens = [t.lower() for t in _TOKEN_RE.findall(old)]
    for at in range(1, len(old_tokens) - 1):
        if a.get(old_tokens[at]) == NUMBER:
            frames.setdefault((old_tokens[at - 1], old_tokens[at + 1]), old_tokens[at])
    found: dict[str, str] = {}
    for sentence in _SENTENCE_SPLIT_RE.split(new):
        words = [w.lower() for w in _TOKEN_RE.findall(sentence)]
        if not set(words) & _REFRAME_WORDS:
            continue
        for at in range(1, len(words) - 1):
            frame = (words[at - 1], words[at + 1])
            was = frames.get(frame)
            if was is not None and new_only.get(words[at]) == NUMBER and all(map(_frames_a_number, frame)):
                found.setdefault(was, " ".join(sentence.split()))
    return found


def _displacing(
    old: str,
    new: str,
    a: dict[str, str],
    b: dict[str, str],
    old_only: dict[str, str],
    new_only: dict[str, str],
    *,
    by_name: bool = False,
) -> dict[str, str]:
    """The values of `old` that a sentence of `new` displaces, with that sentence (see `outdates`).
    `by_name`: only where the sentence names the value as ended (`ended_by_name`)."""
    found = {} if by_name else _quantities_set_anew(old, new, a, new_only)
    for value, sentence in ({} if by_name else _numbers_reframed(old, new, a, new_only)).items():
        found.setdefault(value, sentence)
    if not set(old_only.values()) & set(new_only.values()):
        return found  # nothing of one kind went out while one of that kind came in
    shared = {t: k for t, k in b.items() if t in a}
    for sentence in _SENTENCE_SPLIT_RE.split(new):
        words = [w.lower() for w in _TOKEN_RE.findall(sentence)]
        # the retired thing is named beside its retirement; what replaced it (a value of a kind
        # that left `old`, checked above) may come in anywhere, and be of another kind than its name
        for w in _retired_names(sentence):
            if w in shared:
                found.setdefault(w, " ".join(sentence.split()))
        changes = [i for i, w in enumerate(words) if w in DISPLACING_WORDS]
        if by_name:  # "moved the Windows workspace root to D:" moves a thing; "moved off Colima" ends one
            changes = [i for i in changes if words[i] not in _MOVES or words[i + 1 : i + 2] in _AWAY]
        if not changes:
            continue
        # the subject changed how it does something ("Pennant have moved to pushing results into
        # our MinIO instead"): a name of `old` before a strong change word, a new name after it
        # while `old` loses one; what `old` said of the subject is outdated, not the subject
        if not by_name and _subject_changed(words, changes[0]):
            after = {new_only[w] for w in words[changes[0] + 1 :] if w in new_only}
            for w in words[: changes[0]]:
                if (
                    a.get(w) == NAME
                    and len(w) >= _MIN_RARE_WORD_CHARS
                    and NAME in after
                    and NAME in set(old_only.values())
                ):
                    found.setdefault(w, " ".join(sentence.split()))
        # the old value right after the change word ("instead of Doppler", "replaced Lucia",
        # "moved from Colima"): the subject of "X now uses Y" is no displaced value
        out = [w for i, w in enumerate(words) if w in shared and any(0 < i - c <= _DISPLACE_WINDOW for c in changes)]
        came_in = {new_only[w] for w in words if w in new_only}
        for w in out:
            if shared[w] in came_in:
                found.setdefault(w, " ".join(sentence.split()))
    return found


#: Values one edit may swap and still read as a change of values, not a rewrite of the code.
MAX_EDIT_SWAPS = 4


def edit_swaps(old_code: str, new_code: str) -> dict[str, str]:
    """{value: the value written over it} of an edit: each place where the word-level diff of the
    code replaces one value (a number or an identifier) with one other of the same kind, the old
    one gone from the new code (`bucket.set("grt-gtfs-public")` -> `bucket.set("grt-open-data")`),
    neither a lone digit (`hour_of_day=2` -> `4` is no value another memory could be known by).
    A change that is made only in a file is said in no text: the user says "the feed goes to the
    R2 bucket now", Claude edits the build script, and the memory of it names the new bucket only.
    An edit that rewrites more than MAX_EDIT_SWAPS values is code being written, not values
    changed: none."""
    a, b = fact_tokens(old_code), fact_tokens(new_code)
    old_words = [_named(w).lower() for w in _TOKEN_RE.findall(old_code)[:_MAX_DIFF_WORDS]]
    new_words = [_named(w).lower() for w in _TOKEN_RE.findall(new_code)[:_MAX_DIFF_WORDS]]
    ops = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False).get_opcodes()
    found: dict[str, str] = {}
    for tag, i1, i2, j1, j2 in ops:
        if tag != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        old, new = old_words[i1], new_words[j1]
        kind = a.get(old)
        if (
            kind in _VALUE_KINDS
            and b.get(new) == kind
            and old not in b
            and new not in a
            and min(len(old), len(new)) > 1
        ):
            found.setdefault(old, new)
    return found if len(found) <= MAX_EDIT_SWAPS else {}


def values_ended_by_edits(content: str, swaps: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{value: (the value written over it, the sentence of `content` that states that one)} for
    each of a session's edit swaps (`edit_swaps`) whose new value `content` states and whose old
    one it does not: a memory of that session says what the edit made the value ("the public
    feed now goes to the grt-open-data bucket"), and so ends the old one wherever an older memory
    still states it alone."""
    tokens = fact_tokens(content)
    sentences = [" ".join(x.split()) for x in _SENTENCE_SPLIT_RE.split(content) if x.strip()]
    found: dict[str, tuple[str, str]] = {}
    for old, new in swaps.items():
        if new not in tokens or old in tokens:
            continue
        sentence = next((x for x in sentences if new in fact_tokens(x)), None)
        if sentence:
            found[old] = (new, sentence)
    return found
