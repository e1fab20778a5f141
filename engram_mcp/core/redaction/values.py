"""Judgements about a value on its own, shared by every family of rules.

A rule finds where a secret may stand; whether what stands there is one is mostly decided
here, the same way for every rule: a placeholder or a documentation example is never a
secret (`_is_placeholder`, `_is_doc_example`), nor a value that names a secret instead of
being one (`_is_label_like`); a random token (`_looks_random`) or a value built like a
password (`_password_like`) is. Kept in one module so that a rule family never imports
another to reuse its judgement.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from .labels import _LABEL_MARK, PRIVATE_PLACEHOLDER

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_PATH = re.compile(r"^(?:~|\.{1,2})?/[^\s:]*$|^[A-Za-z]:\\[^\s]*$")
_SAME_CHAR = re.compile(r"^(.)\1*$", re.S)
_MASK = re.compile(r"^[xX*•.#_\-:/]+$")
_PLACEHOLDER_SHAPES = re.compile(
    r"""^(?:
        \$(?=[A-Za-z_{(]) | [{<]   # $VAR ${VAR} $(cmd) {x} {{x}} <your-token> (`$4SiG…` is a password)
      | %[A-Za-z_][A-Za-z0-9_]*%$  # %APPDATA% (%s and %(x)s: _PLACEHOLDER_ANYWHERE)
      | \[.*\]$                # [hidden] [private]
      | your[_\-\s.]           # your_token_here
      | (?:insert|enter|replace|put|add)[_\-\s](?:your|the|a|here)
    )""",
    re.X | re.I | re.S,
)
_PLACEHOLDER_ANYWHERE = re.compile(
    r"\$\{|\{\{|\}\}|<[^<>]*>|\$\("  # ${X} {{x}} <token> $(cmd)
    r"|%\([A-Za-z_]\w*\)[sdr]|%[-#0 +]?[0-9]*(?:\.[0-9]*)?[sdfr](?![A-Za-z0-9])"  # %(name)s %s %0.f
    r"|\{[A-Za-z_]?[\w.]*(?:![rsa])?(?::[^{}]*)?\}"  # {} {0} {name} {x!r}
)
#: A reference to a secret kept in a manager (`op://vault/item/field`, `vault://…`), not the secret.
_SECRET_REFERENCE = re.compile(r"(?i)(?:op|vault|secret|secrets|sm|gsm|azkv|awssm|bws|doppler|infisical|keyring)://")
_COLOR = re.compile(r"^(?:[a-z]+ )*#[0-9a-fA-F]{3,8}(?: [a-z:#0-9]+)*$")  # `bold #f00` (styles)
_PLACEHOLDER_WORDS = frozenset(
    """
    null none nil true false yes no on off undefined empty blank required optional
    str string bytes int integer bool boolean number float any object secretstr
    secret_str redacted hidden masked removed omitted filtered placeholder example
    sample todo tbd fixme replace_me replaceme replace-me n/a na unset notset
    not_set default env environment prompt ask stdin keyring inherit auto
    """.split()
)
#: A value that starts as code does (`os.environ[...]`, `args.token`, `self.secret`): no literal.
_CODE_PREFIX = re.compile(
    r"^(?:self|cls|this|os|sys|args|opts|options|config|cfg|conf|settings|env|"
    r"process|request|req|ctx|context|params|kwargs|secrets|vars|app|props|state|"
    r"data|creds|credentials|getpass|keyring|environ|st|window|document|import)\.",
)
_WORDY_SEGMENT = re.compile(r"^[A-Za-z][a-z]{2,}$")
_LOWER_RUN = re.compile(r"[a-z]{10}")
_TOKEN_CHARSET = re.compile(r"^[A-Za-z0-9+/=_\-.~]+$")
_DIGIT = re.compile(r"[0-9]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    if len(v) < 1:
        return True
    if _LABEL_MARK in v or v == PRIVATE_PLACEHOLDER:
        return True
    if _PLACEHOLDER_SHAPES.match(v) or _PLACEHOLDER_ANYWHERE.search(v):
        return True
    if _SAME_CHAR.match(v) or _MASK.match(v):
        return True
    if v.lower() in _PLACEHOLDER_WORDS or _COLOR.match(v) or _SECRET_REFERENCE.match(v):
        return True
    if v.endswith(("...", "\u2026")) and len(v.rstrip(".\u2026")) <= 8:
        return True  # elided example: `hf_...`, `sk-...`
    return False


_WORD_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_LABEL_WORDS = frozenset(
    "password passwords passwd pass pwd secret secrets token tokens key keys apikey "
    "auth credential credentials creds".split()
)


def _is_label_like(value: str) -> bool:
    """A digit-free value naming a secret rather than being one.

    ``ExpiredToken``, ``X-Xet-Access-Token``, ``my-secret``, ``db_password``,
    ``mysecretpassword``, ``Missing user or pass``: these are identifiers, header
    names, messages or documentation placeholders.  ``hunter2``, ``monkey`` or
    ``changeme`` are not label-like and get redacted.
    """
    if len(value) > 64 or _DIGIT.search(value):
        return False
    for w in _WORD_SPLIT.findall(value):
        lw = w.lower()
        if lw in _LABEL_WORDS or "password" in lw or "secret" in lw or "token" in lw:
            return True
    return False


def _shannon(value: str) -> float:
    n = len(value)
    if not n:
        return 0.0
    counts = Counter(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(value: str, weak_key: bool = False) -> bool:
    """Conservative test used by the ``generic-high-entropy`` fallback."""
    v = value
    if len(v) < 16 or len(v) > 4096 or len(set(v)) < 8:
        return False  # fewer than 8 distinct characters cannot reach the entropy threshold
    if not _TOKEN_CHARSET.match(v) or "://" in v:
        return False  # generic secrets are base64 / hex / url-safe tokens
    if _UUID.match(v) or _PATH.match(v):
        return False
    has_digit = _DIGIT.search(v) is not None
    has_lower = _LOWER.search(v) is not None
    has_upper = _UPPER.search(v) is not None
    if not (has_digit and (has_lower or has_upper)) and not (has_lower and has_upper and len(v) >= 20):
        return False
    if _LOWER_RUN.search(v):
        return False  # a run of 10+ lowercase letters is a word, e.g. a namespaced name
    segments = re.split(r"[-_.:/]", v)
    if sum(1 for s in segments if _WORDY_SEGMENT.match(s)) >= 2:
        return False  # e.g. Linux-node-modules-<sha>: a composed name, not a secret
    words = sum(len(w) for w in _WORD_SPLIT.findall(v) if len(w) >= 4 and not w.isdigit() and not w.isupper())
    if words >= 0.6 * len(v):
        return False  # camelCase identifiers: subjectKeyIdentifier
    is_hex = bool(_HEX.match(v))
    if weak_key and is_hex:
        return False  # `key: <sha>` is usually a cache key / digest
    threshold = 3.0 if is_hex else 3.4
    return _shannon(v) >= threshold


def _mixed_letters(value: str) -> bool:
    """Ten or more letters of mixed case that no one would write as a word or a type name
    (`YoTSKHIGaYDdG`), in a password's place by position."""
    return len(value) >= 10 and value.isalpha() and not _type_name(value) and sum(c.isupper() for c in value) >= 3


_CAMEL_TYPE_RE = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*$")


def _camel_type(value: str) -> bool:
    # bounded: the pattern backtracks quadratically on long inputs
    return len(value) <= 64 and _CAMEL_TYPE_RE.match(value) is not None


def _type_name(token: str) -> bool:
    """A camel-case name made of words (`MyClass2Name`, `AccessToken2`), not a random mix of
    cases (`UK9ge9IYsnlVX`): its lower-case runs are words' tails, four letters or more."""
    return _camel_type(token) and re.search(r"[a-z]{4}", token) is not None


_PW_SYMBOLS = frozenset("!@#$%^&*_-+=?~.,;:")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def _password_like(value: str, *, strict: bool = False) -> bool:
    """A value built like a password or key, whatever follows it: 8-128 characters with a
    digit, a letter, and mixed case or a symbol (``neDAwlHVBbe0``, ``Yr5FU2Gc1co@``), not a
    path, URL, version or dotted name."""
    v = value
    if not 8 <= len(v) <= 128 or _PATH.match(v) or "://" in v or _is_placeholder(v):
        return False
    if not (_DIGIT.search(v) and (_LOWER.search(v) or _UPPER.search(v))):
        return False
    if re.fullmatch(r"v?[0-9]+(?:[._-][0-9A-Za-z]+)+", v) or re.fullmatch(
        r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+", v
    ):
        return False  # 1.2.3-rc1, module.attr2
    mixed = _LOWER.search(v) is not None and _UPPER.search(v) is not None
    if strict:  # under a name that only contains a secret word (`tokenizer: cl100k_base`)
        return mixed
    return mixed or any(c in _PW_SYMBOLS for c in v)


def _value_check(_m: re.Match, value: str) -> bool:
    """A rule's check: 4+ characters that are no placeholder, path or name of a secret."""
    v = value.strip()
    return len(v) >= 4 and not _is_placeholder(v) and not _PATH.match(v) and not _is_label_like(v)


# --- documentation examples -------------------------------------------------------------------
# Published example credentials (AWS, Stripe, ... documentation) are not secrets. AWS marks its
# examples with EXAMPLE in capitals; a random key never spells that out.
_DOC_EXAMPLES = frozenset(
    """
    AKIAIOSFODNN7EXAMPLE AKIAI44QH8DHBEXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
    je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY sk_test_4eC39HqLyjWDarjtT1zdp7dc
    pk_test_TYooMQauvdEDq54NiTphI7jx sk_test_BQokikJOvBiI2HlWgH4olfQ2 rk_test_4eC39HqLyjWDarjtT1zdp7dc
    xoxb-not-a-real-token-this-will-not-work ghp_16C7e42F292c6912E7710c838347Ae178B4a
    eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c
    """.split()
)
_EXAMPLE_MARK = re.compile(r"EXAMPLE|(?i:example|sample|dummy|fake|placeholder)(?:[_\-]?(?:key|token|secret))")


_MASKED_BODY = re.compile(r"^[A-Za-z]{0,8}[_\-.]?([xX*•])\1{7,}$")


def _is_doc_example(value: str) -> bool:
    """A value published as a documentation example (``AKIAIOSFODNN7EXAMPLE``), or a token's prefix
    with a masked body (``ghp_xxxxxxxx…``, ``sk-********``)."""
    return value in _DOC_EXAMPLES or _EXAMPLE_MARK.search(value) is not None or _MASKED_BODY.match(value) is not None


#: Punctuation that ends a sentence around a token, not the token (`… is Xk9#pL2m.`).
_TOKEN_TRIM = ".:!?,;)»”’】』」،؛。、！？，"

# Letters a word has: a run of lower-case letters with a vowel and no three consonants in a
# row reads as a word (an app password's groups, a tag's parts, a described value do not).
_VOWELS = frozenset("aeiou")
_ALPHA_RUN = re.compile(r"[a-z]+")
_CONSONANT_RUN_3 = re.compile(r"[bcdfghjklmnpqrstvwxz]{3,}")
