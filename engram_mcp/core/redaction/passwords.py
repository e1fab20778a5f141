"""Values a person built: a password made of words, marks and numbers, or a name code writes.

The rules that find a value by its place (after a login, in a sentence, beside a user) have
no key name to go by, only the value's shape: `_built_like_password` says whether a token is
one nobody writes but as a password (`Thistle-glacier9884!`), `_dotted_reference` and
`_named_parts` what looks like one and is a name or a description (`settings.DB_PASSWORD`,
`sha256-hashed`).
"""

from __future__ import annotations

import re

from .labels import _LABEL_MARK
from .values import (
    _ALPHA_RUN,
    _CONSONANT_RUN_3,
    _DIGIT,
    _LOWER,
    _PATH,
    _UPPER,
    _VOWELS,
    _is_placeholder,
    _looks_random,
    _mixed_letters,
    _password_like,
    _type_name,
)

#: An email address: a login's name, never its password.
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
#: A dotted name as code writes one: `module.attr`, `settings.DB_PASSWORD`.
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
#: A part of a dotted value that code does not name things with: a word and a number run together
#: (`Hanok763`, `ember117`), as people build passwords; technical names of that shape excepted.
_WORD_AND_NUMBER = re.compile(r"[A-Za-z]{4,}[1-9][0-9]+")  # `server01`, `node02`: numbered names
_TECH_NUMBERED = re.compile(
    r"(?i)(?:base|utf|u?int|float|sha|crc|curve|secp|ed|x|win|amd|arm|aarch|http|oauth|python|node|java|ipv|tls|ssl|"
    r"blake|argon|pbkdf|scrypt|chacha|poly|aes|rsa|ecdsa|hmac|latin|iso|cp|ascii|v|version|level|round|step|item|"
    r"field|arg|param|var|col|row|page|port|test|case)[0-9]+"
)


def _dotted_reference(value: str) -> bool:
    """A dotted name as code writes one (`settings.DB_PASSWORD`, `o.default.string`,
    `config.server01`), not a password someone built with a dot (`Biscotto.Hanok763`,
    `nebula.ember117`) nor a token with a random part (`hvs.CAESIJ1kZ2x…`, Vault). A part of mixed
    case that reads as a type name (`SfddmRazwJG2.X`) counts as code."""
    if not _DOTTED_NAME.fullmatch(value):
        return False
    for part in value.split("."):
        if _looks_random(part):
            return False
        if _TECH_NUMBERED.fullmatch(part):
            continue
        if _WORD_AND_NUMBER.fullmatch(part) or (_password_like(part) and not _type_name(part)):
            return False
    return True


# endings of participles and abstract nouns (`expired`, `missing`, `encryption`); not `-ly`, which
# ends as many passwords (`dragonfly`) as adverbs
_WORDY_SUFFIX = re.compile(r"(?:ed|ing|ion|ions|able|ible|ous|ness|ment|é|ée|és|ées|ado|ada|ido|ida)$")


def _named_parts(value: str) -> bool:
    """`sha256-hashed`, `base64-encoded`, `utf-8`: words and numbers joined by separators, a
    description of the value rather than the value; not words a person strung together as a
    password (`_built_as_password`)."""
    parts = [p for p in re.split(r"[-_./]", value) if p]
    if len(parts) < 2 or _built_as_password(value, parts):
        return False
    for part in parts:
        for run in _ALPHA_RUN.findall(part.lower()):
            if len(run) >= 4 and _VOWELS.intersection(run) and not _CONSONANT_RUN_3.search(run):
                return True
    return False


#: Characters a password holds and a description of one (`sha256-hashed`, `utf-8`) does not.
_PASSWORD_MARKS = frozenset("!@#$%^&*+=?~")
#: Word parts (3+ letters) beside a number that make a joined value a passphrase: `maple-meadow-falcon-17`.
PASSPHRASE_MIN_WORDS = 3
#: A digest inside a joined name: `Linux-node-modules-82ff8e78…` is a cache key, not a passphrase.
_HEX_RUN = re.compile(r"[0-9a-fA-F]{12,}")


def _built_as_password(value: str, parts: list[str], min_words: int = PASSPHRASE_MIN_WORDS) -> bool:
    """Words and a number a person joined into a password (`Thistle-glacier9884!`, `Walnut-pickle9758*`,
    `maple-meadow-falcon-sparrow-17`): a password mark, or a digit with mixed case, or a digit
    beside `min_words` or more words; never a participle or an abstract noun (`SHA256-hashed`),
    which describes the value."""
    runs = [r for p in parts for r in _ALPHA_RUN.findall(p.lower())]
    if any(_WORDY_SUFFIX.search(r) for r in runs) or _HEX_RUN.search(value):
        return False  # described (`SHA256-hashed`), or a name around a digest (`Linux-node-modules-82ff8e78…`)
    if any(c in _PASSWORD_MARKS for c in value):
        return True
    if not _DIGIT.search(value):
        return False
    mixed = _LOWER.search(value) is not None and _UPPER.search(value) is not None
    return mixed or sum(1 for r in runs if len(r) >= 3) >= min_words


def _words_and_number(value: str) -> bool:
    """Two words and a number joined (`framboise-ete-77`, `kotlet_schabowy9`, `sakura-mochi-2024`):
    a password once a name and a link put it in a password's place (`utf-8` and `sha256-hashed`
    are still descriptions)."""
    parts = [p for p in re.split(r"[-_./]", value) if p]
    return len(parts) >= 2 and _built_as_password(value, parts, min_words=2)


# an environment variable or a constant: `WRENLY_UPLOAD_KEYSTORE_B64`, `AWS_PROFILE`
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_SEMVER = re.compile(r"v?[0-9]+(?:\.[0-9]+)+(?:[-+][0-9A-Za-z.\-]+)?")
_NAMED_IN_TOKEN = re.compile(r"(?i:password|passwort|secret|token|1pass|api[_-]?key)|Key(?![a-z])")
_SCHEME_LIKE = re.compile(r"[A-Za-z]{2,10}:")
#: Characters of code around a token (a call, a template, a list): `(`, `)`, `{`, `[`, `,`, backticks.
_CODE_CHARS = re.compile(r"[(){}\[\],`\"']")


def _built_like_password(token: str) -> bool:
    """A token nobody writes but as a password: 6-64 characters with a letter and a digit, and a
    password mark or mixed case; not a path, URL, email, version, dotted or constant name, an
    assignment, a camel-case type or a ticket (`PR#1234`)."""
    t = token
    if not 6 <= len(t) <= 64 or "://" in t or "=" in t or "/" in t or _PATH.match(t) or _EMAIL.fullmatch(t):
        return False
    if _NAMED_IN_TOKEN.search(t) or _CODE_CHARS.search(t) or _SCHEME_LIKE.match(t):
        return False  # `1Password`, `secrets.GITHUB_TOKEN`, `${{ … }}`, `env:P12_PASS`, `100).quantize(`: not values
    if _SEMVER.fullmatch(t) or _dotted_reference(t) or _CONSTANT_NAME.fullmatch(t) or _is_placeholder(t):
        return False
    if _LABEL_MARK in t:
        return False
    if not any(c.isdigit() for c in t):
        return t.isascii() and _mixed_letters(t)  # `tfCbPpZUOdCK`: letters, but no word's
    if not any(c.isalpha() for c in t):
        return False
    marks = sum(1 for c in t if c in _PASSWORD_MARKS)
    if marks and re.fullmatch(r"[A-Za-z]{1,6}#[0-9]+", t):
        return False  # PR#1234, issue#88
    mixed = any(c.isupper() for c in t) and any(c.islower() for c in t)
    return marks > 0 or (mixed and not _type_name(t.strip("_-.")))
