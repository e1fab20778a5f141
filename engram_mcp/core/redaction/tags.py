"""Tags that are themselves a secret: `redact_tags`, `tag_secret_kind`.

A tag is a short label with no context around it, stored lower-cased: the provider formats
are tried on its upper-cased form, and a lower-cased password or key fragment is told from a
name with a version (`postgres16`, `win10x64`) by how its letters and digits alternate.
"""

from __future__ import annotations

import re
from collections import Counter

from .api import redact, redact_obj
from .labels import _LABEL_MARK, Finding, _findings, label_for
from .values import _ALPHA_RUN, _CONSONANT_RUN_3, _DIGIT, _LOWER, _VOWELS, _looks_random

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Any


def redact_tags(tags: Any) -> tuple[Any, tuple[Finding, ...]]:
    """``redact_obj`` for a tag list, plus tags that are themselves a secret (:func:`tag_secret_kind`)."""
    new, findings = redact_obj(tags)
    if not isinstance(new, list):
        return new, findings
    counts: Counter = Counter({f.kind: f.count for f in findings})
    out = []
    for tag in new:
        kind = tag_secret_kind(tag) if isinstance(tag, str) else None
        if kind is not None:
            counts[kind] += 1
            tag = label_for(kind)
        out.append(tag)
    return out, _findings(counts)


def tag_secret_kind(tag: str) -> str | None:
    """The kind of secret a whole tag is, or None.

    A tag is a short label with no context around it, and tags are stored lower-cased, so
    the case-sensitive provider patterns (``AKIA...``, ``sk_live_...``) are tried on the
    upper-cased tag, then the entropy test, then :func:`_looks_like_password` for what is
    left: a lower-cased password or key fragment pasted as a tag.
    """
    if _LABEL_MARK in tag:
        return None
    upper = redact(tag.upper()).findings or redact(tag).findings  # a lower-cased AKIA.../sk_live_.../hf_... token
    if upper:
        return upper[0].kind
    if _looks_random(tag):
        return "generic-high-entropy"
    if _looks_like_password(tag):
        return "password"
    return None


_TAG_PARTS = re.compile(r"[\s\-_./:+]+")
_CHAR_CLASS_RUNS = re.compile(r"[a-z]+|[0-9]+|[^a-z0-9]+")
_CONSONANT_RUN_5 = re.compile(r"[bcdfghjklmnpqrstvwxz]{5,}")
#: Shortest tag part judged by :func:`_looks_like_password`: 8 is the usual minimum password length,
#: and shorter parts are mostly names with a version (``py311``, ``log4j``, ``i18next``).
PASSWORD_MIN_CHARS = 8
#: Shortest letters-only tag part judged as a random fragment (fewer than a quarter vowels and
#: six consonants in a row): shorter ones are abbreviations.
GIBBERISH_MIN_CHARS = 12


# A name followed by numbers joined by one- or two-letter markers: `win10x64`, `h264x1080`,
# `python3x11`, `arm64v8a`, `i18n2l10n`, `gpt4o2024`, `llama3b8`, `qwen2vl7b`. Letters and
# digits switch often in such names, but the leading word is a short abbreviation or a word a
# person can say, and after it every letter run is a unit or separator (x, v, b, o, n, l, vl),
# never the letters a random string has (`akiao2l2e207`, `xleq1o4v6rc`, `eicakvoxoa7f9a`, all
# lower-cased cuts of real keys). Measured on 19,494 random lower-cased strings of 12-40
# characters: 2.9% are not judged passwords, as before the exception; with the first, looser
# form of it (any leading word of up to 12 letters, any marker) 3.6%.
# Digit runs with up to two letters after each; a letter run separates two digit runs, so a run of
# digits splits one way only. Written `(?:[0-9]+[a-z]{0,2})+`, the empty letter run let a digit
# run split every way: a 29-character tag of digits took 1.5 s, doubling with each digit more.
_VERSIONED_NAME = re.compile(r"([a-z]{0,7})((?:[0-9]+[a-z]{1,2})*[0-9]+[a-z]{0,2})")
#: Letter runs that stand between the numbers of a versioned name: units, separators, variants.
VERSION_MARKERS = frozenset(
    {"a", "b", "g", "h", "i", "k", "l", "m", "n", "o", "p", "s", "t", "u", "v", "w", "x", "bv", "mb", "vl"}
)
#: Two consonants can begin a word when the second is a liquid or glide (bl, cr, qw, th, ll) or
#: the first is s (sk, st), and in a few pairs more; a leading word of 4 or more letters that
#: begins otherwise (`lsuv`, `xqeb`) is not a word. Shorter leads are abbreviations (gpt, mp4).
WORD_ONSET_SECONDS = frozenset("lrwh")
WORD_ONSET_PAIRS = frozenset({"kn", "gn", "ps", "dw", "qu", "pf", "ts"})


def _word_onset(lead: str) -> bool:
    """Whether a leading word could begin like a word a person says."""
    a, b = lead[0], lead[1]
    vowels = "aeiouy"
    return a in vowels or b in vowels or b in WORD_ONSET_SECONDS or a == "s" or a + b in WORD_ONSET_PAIRS


def _is_versioned_name(part: str) -> bool:
    """`part` (lower case) reads as a name with a version, not as a cut of a random key."""
    m = _VERSIONED_NAME.fullmatch(part)
    if m is None:
        return False
    lead = m.group(1)
    if len(lead) >= 4 and not _word_onset(lead):
        return False
    return all(run in VERSION_MARKERS for run in _ALPHA_RUN.findall(m.group(2)))


_CONSONANT_RUN_6 = re.compile(r"[bcdfghjklmnpqrstvwxz]{6,}")


def _split_password(tag: str) -> bool:
    """A lower-cased password that separators cut into short parts (``uim00d_crzu9``,
    ``6x10-lgmavje``): 10-40 characters once joined, letters and digits switching at least
    twice, and no letter run that reads like a word (``utf8mb4_unicode``, ``p95-latency``,
    ``claude-3-5-sonnet`` stay names)."""
    if " " in tag or not re.search(r"[-_.]", tag):
        return False
    joined = re.sub(r"[-_.]", "", tag)
    if not 10 <= len(joined) <= 40 or not joined.isalnum() or not _DIGIT.search(joined):
        return False
    runs = [r for r in _ALPHA_RUN.findall(tag) if len(r) >= 4]
    if not runs:
        return False  # sha256-abc123: too little text to tell a name from a password
    for r in runs:
        if not _CONSONANT_RUN_3.search(r) and _VOWELS.intersection(r):
            return False  # a pronounceable word: part of a name
    return len(_CHAR_CLASS_RUNS.findall(joined)) - 1 >= 2


def _looks_like_password(tag: str) -> bool:
    """A lower-cased tag part that mixes letters and digits like a password, not like a name.

    Names with digits switch between letters and digits at most twice (``postgres16``,
    ``log4shell``, ``oauth2proxy``) and their letters are pronounceable. A password part
    switches three or more times (``tr0ub4dor&3``), or carries letters no word has: five
    consonants in a row (``nedawlhvbbe0``) or five or more letters without a vowel
    (``v919bdjysh``). Parts without a digit are left alone: a label of letters is a word
    or a name, however odd it looks.
    """
    if _split_password(tag.lower()):
        return True
    for part in _TAG_PARTS.split(tag.lower()):
        if (
            len(part) >= GIBBERISH_MIN_CHARS
            and part.isalpha()
            and _CONSONANT_RUN_6.search(part)
            and (sum(c in _VOWELS for c in part) < 0.25 * len(part))
        ):
            return True  # letters no word has: a random key fragment (`jmdnwbatccqcfocl`)
        if len(part) < PASSWORD_MIN_CHARS or not _DIGIT.search(part) or not _LOWER.search(part):
            continue
        runs = _CHAR_CLASS_RUNS.findall(part)
        if len(runs) - 1 >= 3 and not _is_versioned_name(part):
            return True
        for run in runs:
            if len(run) >= 5 and run.isalpha():
                if _CONSONANT_RUN_5.search(run) or not _VOWELS.intersection(run):
                    return True
    return False
