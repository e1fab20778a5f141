"""Where a name's value stands when no link leads to it: its sentence, and (outbound) its line.

A password's value need not follow its name and a link: "the new one is X", "X is the root
password", "log in with admin / X". `_in_sentence` takes what is built like a password in the
name's sentence (a random token under a key's name); the outbound pass also takes any random
token on the name's line (`_random_tokens`, `_near_tokens`). Both are bounded per name, so a
text made of names costs linear time.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right

from .key_names import _ABOUT_WORDS, _ARN_HEAD, _NEXT_WORD
from .labels import _overlaps
from .passwords import (
    _CODE_CHARS,
    _CONSTANT_NAME,
    _DOTTED_NAME,
    _NAMED_IN_TOKEN,
    _SCHEME_LIKE,
    _built_like_password,
    _named_parts,
)
from .prose_values import _FINGERPRINT, _VERSION, _pin_or_password
from .values import (
    _DIGIT,
    _HEX,
    _LOWER,
    _PATH,
    _TOKEN_TRIM,
    _UPPER,
    _UUID,
    _WORD_SPLIT,
    _is_placeholder,
    _looks_random,
    _password_like,
    _shannon,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Optional


# A token near a key name, for the outbound pass: base64 / hex / url-safe, 16+ characters.
_NEAR_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-~][A-Za-z0-9+/_\-.~]{14,510}[A-Za-z0-9+/_\-~]={0,2}")
#: How far from a key name the outbound pass looks for a random token (same line), before and after.
NEAR_BEFORE_CHARS = 80
NEAR_AFTER_CHARS = 160


def _outbound_random(token: str) -> bool:
    """A token random enough to be a secret when it sits near a key name in text that leaves
    the machine: mixed letters and digits of high entropy; never hex (commits, digests), a UUID,
    a path, a version or a name."""
    if _is_placeholder(token) or _PATH.match(token) or _UUID.match(token) or _VERSION.fullmatch(token):
        return False
    if _HEX.match(token) or (token[:2] in ("0x", "0X") and _HEX.match(token[2:])):
        return (
            False  # a commit, a digest, an address named in a sentence; hex right after a key name is `_prose_decide`'s
        )
    if _CONSTANT_NAME.fullmatch(token) or _DOTTED_NAME.fullmatch(token) or _named_parts(token):
        return False  # `secrets.GITHUB_TOKEN`, `WRENLY_API_KEY_B64`: names of secrets, not secrets
    words = sum(len(w) for w in _WORD_SPLIT.findall(token) if len(w) >= 4 and not w.isdigit() and not w.isupper())
    if words >= 0.5 * len(token):
        return False  # a camelCase name: `Draft202012Validator`
    if _looks_random(token):
        return True
    return (
        len(token) >= 20
        and _DIGIT.search(token) is not None
        and (_LOWER.search(token) is not None or _UPPER.search(token) is not None)
        and _shannon(token) >= 3.5
        and not _named_parts(token)
    )


def _random_tokens(text: str) -> list[tuple[int, int]]:
    """Spans of every random-looking token of `text` (`_outbound_random`), found once per text:
    looking again around each key name would cost the square of the text's length."""
    out = []
    sealed = [m.span() for m in _SOPS_VALUE.finditer(text)] if "ENC[" in text else []
    for t in _NEAR_TOKEN.finditer(text):
        token = t.group(0).rstrip(".")
        if not _outbound_random(token) or _published_at(text, t.start()):
            continue
        if sealed and _overlaps(sealed, t.start(), t.end()):
            continue  # SOPS ciphertext: `ENC[AES256_GCM,data:…,iv:…,tag:…]` is safe to commit, by design
        out.append((t.start(), t.start() + len(token)))
    return out


#: A SOPS-encrypted value: ciphertext, its IV and its tag, made to be committed.
_SOPS_VALUE = re.compile(r"ENC\[[A-Z0-9_]{2,32},[^\]\r\n]{0,8192}\]")


def _published_at(text: str, start: int) -> bool:
    """Whether the token at `start` is a published identifier by what precedes it: a key's
    fingerprint (`SHA256:xhrL…`), a resource inside an ARN (`arn:aws:kms:…:key/1234…`)."""
    before = text[max(0, start - 160) : start]
    return _FINGERPRINT.search(before[-8:]) is not None or _ARN_HEAD.search(before) is not None


def _near_tokens(
    text: str, tokens: list[tuple[int, int]], name_start: int, name_end: int
) -> list[tuple[str, int, int]]:
    """The random tokens starting on the key name's line within reach of it (taken whole)."""
    lo = name_start - NEAR_BEFORE_CHARS
    lo = max(lo, text.rfind("\n", max(0, lo), name_start) + 1)
    hi = name_end + NEAR_AFTER_CHARS
    nl = text.find("\n", name_end, hi)
    hi = nl if nl != -1 else hi
    out = []
    i = bisect_right(tokens, (lo, -1))
    while i < len(tokens) and tokens[i][0] < hi:
        out.append(("generic-high-entropy", *tokens[i]))
        i += 1
    return out


# A password's value need not follow its name and a link: "the new one is X", "changed it to X",
# "X is the root password", "use X as the password", "改成了 X", "log in with admin / X". What is
# built like a password (a password mark, or mixed case, beside letters and a digit) in the name's
# sentence is taken as its value; under a key's or token's name, what looks random.
#: How far from a name its sentence is searched, in characters, after it and before it.
SENTENCE_AFTER_CHARS = 140
SENTENCE_BEFORE_CHARS = 60
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)|\n")
_WORD_TOKEN = re.compile(r"[^\s\"'`“”‘’«»「」『』()（）\[\]<>,，、;；]+")


def _random_in_sentence(token: str) -> bool:
    """A token random enough to be a key's value in its sentence: random by both measures, and
    not named like one (`20240523214355_add_api_keys.rb`, `0x40cd…` an address), nor a flag or
    a setting (`-Pperiod=2026-07`)."""
    if _NAMED_IN_TOKEN.search(token) or _CODE_CHARS.search(token) or _SCHEME_LIKE.match(token):
        return False
    if token.startswith("-") or "=" in token:
        return False
    return _looks_random(token, weak_key=True) and _outbound_random(token)


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the sentence around [start, end), at most SENTENCE_*_CHARS either side."""
    lo = max(0, start - SENTENCE_BEFORE_CHARS)
    for m in _SENTENCE_END.finditer(text, lo, start):
        lo = m.end()
    hi = min(len(text), end + SENTENCE_AFTER_CHARS)
    stop = _SENTENCE_END.search(text, end, hi)
    while (
        stop is not None
        and stop.group(0) != "\n"
        and stop.end() < hi
        and not text[stop.end() : stop.end() + 1].isspace()
    ):
        stop = _SENTENCE_END.search(text, stop.end(), hi)
    return lo, (stop.start() if stop is not None else hi)


#: Words of the sentence looked at, after a name and before it: a value is near its name, and a
#: text made of names (an attack) must cost a bounded amount per name.
SENTENCE_WORDS_AFTER = 16
SENTENCE_WORDS_BEFORE = 8
#: Names of one text whose sentences are searched: past this many a text is made of names (an
#: attack, or a password policy's listing) and only the links after each are followed.
SENTENCE_NAMES_MAX = 200


def _in_sentence(
    text: str, start: int, end: int, group: str, memo: Optional[dict[tuple[int, str], bool]] = None
) -> list[tuple[str, int, int]]:
    """The values of the name at [start, end) found anywhere in its sentence (see above): for
    `pw` names every token built like a password ("was X, now Y": both), for the others a random
    one, after the name or, failing that, before it. A value alone on the next line, after a name
    that ends its line, counts too."""
    nxt = _NEXT_WORD.match(text, end)
    if nxt is not None and nxt.group(1).lower() in _ABOUT_WORDS:
        return []
    lo, hi = _sentence_bounds(text, start, end)
    if group == "pin":
        fits = _pin_or_password
    else:
        fits = _built_like_password if group in ("pw", "pwq") else _random_in_sentence
    kind = "password" if group in ("pw", "pwq", "pin") else "generic-high-entropy"
    fit_name = "pin" if group == "pin" else "pw" if group in ("pw", "pwq") else "key"
    memo = {} if memo is None else memo  # the same words are judged for each name near them
    after = list(itertools.islice(_WORD_TOKEN.finditer(text, end, hi), SENTENCE_WORDS_AFTER))
    before = list(_WORD_TOKEN.finditer(text, lo, start))[-SENTENCE_WORDS_BEFORE:][::-1]
    for side in (after, before):
        found = []
        for m in side:
            token = m.group(0).rstrip(_TOKEN_TRIM)
            judged = memo.get((m.start(), fit_name))
            if judged is None:
                judged = memo[(m.start(), fit_name)] = fits(token) and not _published_at(text, m.start())
            if judged:
                found.append((kind, m.start(), m.start() + len(token)))
        if found:
            return found
    line_end = text.find("\n", end)
    rest = text[end:line_end].rstrip() if line_end != -1 else ""
    if line_end != -1 and len(rest) <= SENTENCE_AFTER_CHARS:  # "password on the next line:\n X"
        nl = text.find("\n", line_end + 1)
        line = text[line_end + 1 : nl if nl != -1 else len(text)]
        token = line.strip()
        asked = rest.endswith((":", "：")) or not rest.strip(" \t-—")
        if token and " " not in token and (fits(token) or (asked and _password_like(token))):
            s = line_end + 1 + line.index(token)
            return [(kind, s, s + len(token))]
    return []
