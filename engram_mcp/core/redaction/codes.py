"""Secrets made of words or groups: wallet recovery phrases, app passwords, recovery codes.

A wallet's twelve words or a Google app password's four groups of letters hold no digit, no
mark, no key name a token rule could know them by: each is found by the name written near it
(`seed phrase`, `app password`, `recovery codes`) and the shape of what follows.
"""

from __future__ import annotations

import re

from .rule import _Rule
from .values import _CONSONANT_RUN_3, _VOWELS

#: Words of a wallet's recovery phrase (BIP-39: 12, 15, 18, 21 or 24 words of 3-8 letters).
SEED_PHRASE_MIN_WORDS = 12


def _seed_check(_m: re.Match, value: str) -> bool:
    return len(value.split()) >= SEED_PHRASE_MIN_WORDS


_RULE_SEED_PHRASE = _Rule(
    "password",
    r"(?i:(?:seed|recovery|mnemonic|backup|secret)[ \t_-]*(?:phrase|words)|mnemonic)"
    r"[^\n]{0,60}?(?P<s>(?<![A-Za-z])(?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})(?![A-Za-z])",
    check=_seed_check,
    pre=r"(?i)phrase|mnemonic|words",
)


def _app_password_check(_m: re.Match, value: str) -> bool:
    """Four groups a generator made (`fxdk ykxk cbjs kosz`), not four words of a sentence."""
    return sum(1 for g in value.split() if not _VOWELS.intersection(g) or _CONSONANT_RUN_3.search(g)) >= 2


# Google's app passwords: four groups of four letters after the name
_RULE_APP_PASSWORD = _Rule(
    "password",
    r"(?i:app[ \t_-]?passwords?)\b[^\n]{0,80}?(?<![A-Za-z])(?P<s>[a-z]{4}[ \t][a-z]{4}[ \t][a-z]{4}[ \t][a-z]{4})(?![A-Za-z])",
    check=_app_password_check,
    pre=r"(?i)app[ \t_-]?password",
)
# a Google app password's shape (four groups of four letters) after a password's key or as a login's argument
_APP_PASSWORD_SHAPE = re.compile(r"[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4}")


def _app_password_shape(value: str) -> bool:
    return _APP_PASSWORD_SHAPE.fullmatch(value) is not None and _app_password_check(None, value)  # type: ignore[arg-type]


_RULE_APP_PASSWORD_VALUE = _Rule(
    "password",
    r"(?i:pass(?:word)?|pwd|app_?password)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<s>[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})(?![a-z])",
    ("pass", "pwd"),
    check=lambda _m, v: _app_password_shape(v),
)
# BitLocker's 48-digit recovery password: eight groups of six digits
_RULE_BITLOCKER = _Rule(
    "password",
    r"(?<![0-9\-])(?P<s>[0-9]{6}(?:-[0-9]{6}){7})(?![0-9\-])",
    hints=("recovery", "bitlocker"),
)
# a list of recovery / backup codes under their name: `8qheg-k928b`, `1234-5678`, `a1b2c3d4`
_RECOVERY_CODE_WORDS = ("recovery", "backup", "2fa", "mfa", "one-time", "one time", "otp", "emergency", "scratch")
_RULE_RECOVERY_CODES = _Rule(
    "password",
    r"(?i:recovery|backup|2fa|mfa|one[ \t-]time|otp|emergency|scratch)[ \t_-]*(?i:codes?)\b[^\n]{0,80}?"
    # possessive blanks: `\s*` and `[ \t]*` would otherwise split a run of spaces every way (quadratic)
    r"(?P<s>(?:\s*+(?:[-*•]|\d+[.)])?[ \t]*+(?<![A-Za-z0-9])(?=[a-z]{0,9}[0-9]|[a-z0-9]{4,10}[ \t-][a-z]{0,9}[0-9])"
    r"[a-z0-9]{4,10}(?:[ \t-][a-z0-9]{4,10})?(?![A-Za-z0-9]),?){3,32})",
    _RECOVERY_CODE_WORDS,
    check=lambda _m, v: sum(1 for c in v if c.isdigit()) >= 3,
)
# a wallet's recovery words alone on a line, a wallet named in the lines just above: 12-24 short
# words, none of them the little words a sentence of prose has
WALLET_WORD_COUNTS = frozenset((12, 15, 18, 21, 24))
_WALLET_NAMED = re.compile(r"(?i)wallet|metamask|seed|mnemonic|ledger|trezor|recovery phrase")
_PROSE_LITTLE_WORDS = frozenset("the and for with from into that this are was were have has new fix".split())


def _wallet_words(m: re.Match, value: str) -> bool:
    words = value.split()
    if len(words) not in WALLET_WORD_COUNTS or _PROSE_LITTLE_WORDS.intersection(words):
        return False
    above = m.string[max(0, m.start() - 400) : m.start()].splitlines()[-2:]
    return any(_WALLET_NAMED.search(line) for line in above)


_RULE_WALLET_WORDS = _Rule(
    "password",
    r"(?m)^[ \t]*(?P<s>(?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})[ \t]*$",
    hints=("wallet", "metamask", "seed", "mnemonic", "ledger", "trezor", "recovery phrase"),
    check=_wallet_words,
)
