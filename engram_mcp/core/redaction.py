"""Secret redaction for everything engram stores.

Every path that persists text (tool outputs, failed commands, notes, metadata)
must go through :func:`sanitize` (strings) or :func:`redact_obj` (JSON-like
objects).  The module needs the standard library and, for speed only,
pyahocorasick (without it a regular expression finds the same literals, ~10x
slower); it does no work at import time beyond compiling regular expressions,
because it runs inside hook processes whose whole budget is about 100 ms.

Behaviour summary
-----------------
* ``strip_private`` removes ``<private>...</private>`` spans (case-insensitive,
  multi-line, nesting-aware; an unclosed ``<private>`` hides everything up to
  the end of the text).  Each outermost span becomes ``[private]``.  A stray
  closing tag without an opening one is left as is.
* ``redact`` replaces each secret with ``[REDACTED:<kind>]``.  Rules run from the
  most specific (provider token formats, PEM blocks) to the most generic
  (``key=value`` assignments, then the entropy fallback), and no rule ever
  matches inside an earlier ``[REDACTED:...]`` label, so a secret is never
  wrapped twice and ``sanitize`` is idempotent.
* Where a secret sits inside a larger structure only the secret is replaced:
  the key of an assignment (``DB_PASSWORD=[REDACTED:password-assignment]``),
  the scheme/user/host of a URL
  (``postgres://admin:[REDACTED:url-credentials]@db:5432/x``), the
  ``Authorization: Bearer`` prefix, the ``https://hooks.slack.com/services/``
  prefix, the ``AccountKey=`` name, ...

Deliberate choices (documented so that tests and reviewers agree):
* Placeholders are left alone: ``<your-password>``, ``${TOKEN}``, ``$API_KEY``,
  ``$(cmd)``, ``{{ vault_pw }}``, ``%s``, ``{password}``, ``xxx``, ``****``,
  ``your_token_here``, elided examples (``hf_...``), ``None``/``null``/``true``,
  type names (``str``, ``SecretStr``), argparse metavars (``--token TOKEN``),
  values already masked by a tool (``[hidden]``) and colour codes.
* Digit-free values that *name* a secret instead of being one are kept:
  ``password``, ``my-secret``, ``db_password``, ``ExpiredToken``,
  ``X-Auth-Token``, ``mysecretpassword``; likewise ``https://user:password@host``.
  Weak but real passwords are redacted: ``changeme``, ``hunter2``, ``admin``,
  ``postgres``, ``letmein``.
* Assignment values shorter than 4 characters are not redacted (``token: 5``);
  all-digit values shorter than 8 are kept for token/key names (``token=2936``
  is a token id) but redacted for password names (PINs).  URL passwords of any
  length are redacted.
* Code is not a secret: attribute chains and calls (``args.token``,
  ``os.environ["X"]``, ``get_password()``), keyword arguments and dict entries
  passing a variable (``f(password=password, ...)``, ``{"token": token}``),
  indented ``name = variable`` assignments, expressions (``TOKEN = A ^ B``),
  type annotations (``token: AccessToken``).  A hard-coded *literal* in code
  (``password = "hunter2"``) is redacted.
* Unquoted multi-word values are only partly covered: in ``password: correct
  horse`` (YAML) the value is treated as prose and kept; in ``PASS=correct
  horse`` only the first word is redacted.  Quote such values.
* ``generic-high-entropy`` is a conservative fallback: base64/hex/url-safe
  values of 16+ characters with mixed character classes and high Shannon
  entropy, under a key naming a key/secret/token/password/credential.  Hex under
  a plain ``key`` (cache keys, digests), UUIDs, paths and camelCase names are
  kept.
* ``password`` in prose without an assigned value is never touched, and
  certificates / public keys (``-----BEGIN CERTIFICATE-----``, ``ssh-ed25519``,
  ``publicKeyToken``) are not secrets.
"""

from __future__ import annotations

import itertools
import math
import re
import urllib.parse
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

from engram_mcp.core import textview

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Any, Callable, Iterable, Optional

    Decision = Optional[tuple[str, int, int]]  # (kind, start, end) in the current text

__all__ = [
    "Finding",
    "RedactionResult",
    "SECRET_KINDS",
    "redact",
    "strip_private",
    "sanitize",
    "redact_obj",
    "redact_outbound",
    "redact_outbound_obj",
]

SECRET_KINDS: tuple[str, ...] = (
    "private-key",
    "gcp-service-account",
    "aws-access-key",
    "aws-secret-key",
    "github-token",
    "gitlab-token",
    "slack-token",
    "slack-webhook",
    "stripe-key",
    "anthropic-key",
    "openai-key",
    "google-api-key",
    "azure-key",
    "npm-token",
    "pypi-token",
    "twilio-key",
    "sendgrid-key",
    "jwt",
    "google-oauth",
    "vault-token",
    "docker-token",
    "digitalocean-token",
    "huggingface-token",
    "telegram-bot-token",
    "discord-webhook",
    "age-secret-key",
    "mailgun-key",
    "api-token",
    "k8s-secret",
    "url-credentials",
    "bearer-token",
    "password-assignment",
    "password",
    "generic-high-entropy",
)

_KIND_ORDER = {k: i for i, k in enumerate(SECRET_KINDS)}
_LABEL_MARK = "[REDACTED:"
PRIVATE_PLACEHOLDER = "[private]"


@dataclass(frozen=True)
class Finding:
    kind: str
    count: int


@dataclass(frozen=True)
class RedactionResult:
    text: str
    findings: tuple[Finding, ...] = ()

    @property
    def redacted(self) -> bool:
        return bool(self.findings)


def label_for(kind: str) -> str:
    """The visible placeholder of a redacted secret, ``[REDACTED:<kind>]``."""
    return f"{_LABEL_MARK}{kind}]"


def _findings(counts: Counter) -> tuple[Finding, ...]:
    return tuple(Finding(kind, n) for kind, n in sorted(counts.items(), key=lambda kv: _KIND_ORDER.get(kv[0], 99)) if n)


# ---------------------------------------------------------------------------
# <private> spans
# ---------------------------------------------------------------------------

# <private>, <PRIVATE reason="pii">, </private>; not <private-key> or <private_notes>
_PRIVATE_TAG = re.compile(r"<\s*+(/?)\s*+private(?:\s[^<>]*+)?>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """Replace every outermost ``<private>...</private>`` span with ``[private]``.

    Nesting-aware; an unclosed opening tag hides the rest of the text.
    """
    if not text or "<" not in text:
        return text
    lowered = text.lower()
    if "private" not in lowered:
        return text
    out: list[str] = []
    depth = 0
    pos = 0  # start of the not-yet-emitted visible text
    for m in _PRIVATE_TAG.finditer(text):
        closing = m.group(1) == "/"
        if not closing:
            if depth == 0:
                out.append(text[pos : m.start()])
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                out.append(PRIVATE_PLACEHOLDER)
                pos = m.end()
        # a stray closing tag at depth 0 is left in the visible text
    if depth > 0:
        out.append(PRIVATE_PLACEHOLDER)
    else:
        out.append(text[pos:])
    return "".join(out)


# ---------------------------------------------------------------------------
# helpers used by validators
# ---------------------------------------------------------------------------

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
_CODE_PREFIX = re.compile(
    r"^(?:self|cls|this|os|sys|args|opts|options|config|cfg|conf|settings|env|"
    r"process|request|req|ctx|context|params|kwargs|secrets|vars|app|props|state|"
    r"data|creds|credentials|getpass|keyring|environ|st|window|document|import)\.",
)
_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|cred|auth", re.I)
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


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_STRONG_KEY = re.compile(
    r"(?:passw(?:or)?d|passphrase|secret|token|"
    r"(?:^|_)(?:pwd|pass|pw)|"
    r"(?:^|_)(?:api|access|secret|private|auth|encryption|signing|master|client|app|"
    r"account|service|license|sas|session|webhook|subscription|functions|admin|deploy|install|integration|"
    r"ingest|write|master)_?key|apikey)$"
)
_KEY_SUFFIX = re.compile(r"(?:_?v?[0-9]++|_(?:old|new|prev|previous|next|current|bak|backup|prod|dev|test|staging))++$")
_GENERIC_EXCLUDED_TAIL = frozenset(
    """
    id ids name names file files path paths dir url uri type types count len length
    size limit max min ttl expiry expires expiration timeout header field env var
    prefix suffix format version policy usage budget index idx column col table
    enabled enable disabled required ref refs arn location source store hash hashed digest
    """.split()
)
_GENERIC_EXCLUDED_ANY = frozenset(
    "public pub cache sort primary foreign partition lookup hotkey idempotency shortcut keyboard keycode keymap".split()
)
#: Key names whose value is published or names another object, whatever words they hold: a
#: CAPTCHA's site key (in every page), `existingSecret` / `secretName` / `secretKeyRef` (a
#: Kubernetes Secret's name; the value lives in it).
_NAMES_NO_SECRET = re.compile(r"(?:^|_)(?:existing_secret|secret_name|secret_ref|secret_key_ref|site_?key)$")


def _normalize_key(key: str) -> str:
    return _NON_ALNUM.sub("_", _CAMEL.sub("_", key).lower()).strip("_")


_KEY_CACHE: dict = {}


def _key_strength(key: str) -> Optional[str]:
    """Return 'strong', 'generic', 'weak', 'about' (a name for text about a secret: `password_hint`)
    or None for an assignment key."""
    try:
        return _KEY_CACHE[key]
    except KeyError:
        pass
    result = _key_strength_uncached(key)
    if len(_KEY_CACHE) >= 4096:
        _KEY_CACHE.clear()
    _KEY_CACHE[key] = result
    return result


#: The last word of a key that names the interface's words about a secret (`password_hint = "At
#: least 12 characters"`, `token_label`): what follows is text for people.
_UI_TEXT_WORDS = frozenset(
    "label labels description message messages text title placeholder help tooltip caption".split()
)


#: A secret's name in English, as a value: the interface's word for it (`"label": "Password"`).
_SECRET_NAMES = frozenset(("password", "passwords", "passphrase", "secret", "token", "api key", "pin"))


def _key_strength_uncached(key: str) -> Optional[str]:
    norm = _normalize_key(key)
    if not norm:
        return None
    comps = [c for c in norm.split("_") if c]
    if "public" in comps or "pub" in comps or "publishable" in comps:
        return None  # publicKeyToken, public_key, pub_key: not secrets
    if len(comps) > 1 and (comps[-1] in _ABOUT_WORDS or comps[-1] in _UI_TEXT_WORDS):
        return "about"  # `password_hint`, `api_key_label`: text about the secret, unless built like one
    if _NAMES_NO_SECRET.search(norm):
        return None
    # `password2`, `API_KEY_V2`, `DB_PASSWORD_OLD` name the same kind of value
    if _STRONG_KEY.search(_KEY_SUFFIX.sub("", norm) or norm):
        return "strong"
    if not comps or comps[-1] in _GENERIC_EXCLUDED_TAIL:
        return None
    if any(c in _GENERIC_EXCLUDED_ANY for c in comps):
        return None
    strong_word = False
    weak_word = False
    for c in comps:
        if any(w in c for w in ("secret", "token", "passw", "credential", "apikey", "privkey")):
            strong_word = True
        elif c in ("creds", "auth", "pwd", "pass", "pw", "sk") or c.endswith("key") or c == "keys":
            weak_word = True
    if strong_word:
        return "generic"
    if weak_word:
        return "weak"
    return None


# ---------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------
#
# Performance (a 20 KB tool output must cost a few milliseconds, and crafted
# input must not go quadratic).  Python's ``re`` only skips ahead quickly when a
# pattern starts with a case-sensitive literal, so:
# * most rules start with such a literal (``AKIA``, ``ghp_``, ``://``, ``--``)
#   and are run with ``Pattern.search``;
# * case-insensitive rules have *anchors*: lowercase literals located with
#   ``bytes.find`` on an ASCII-lowercased copy of the text, where the regex is
#   then tried with ``Pattern.match``.
# Boundaries that a leading look-behind would express are checked in Python
# (``lb`` = characters that must not precede the match), and every open-ended
# repetition that could be retried from many positions is bounded.

_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_TOKCH = _ALNUM | frozenset("_-")
_KEYCH_SET = _TOKCH | frozenset(".")


class _Rule:
    __slots__ = (
        "kind",
        "_pattern",
        "_flags",
        "_regex",
        "anchors",
        "groups",
        "check",
        "decide",
        "lb",
        "bounded",
        "hints",
        "skip_long_rejects",
        "_pre",
        "_pre_regex",
    )

    def __init__(
        self,
        kind: str,
        pattern: str,
        anchors: Optional[Iterable[Any]] = None,
        *,
        flags: int = 0,
        groups: tuple[str, ...] = ("s",),
        check: Optional[Callable[[re.Match, str], bool]] = None,
        decide: Optional[Callable[[re.Match], Decision]] = None,
        lb: frozenset = frozenset(),
        bounded: bool = False,
        hints: Iterable[str] = (),
        skip_long_rejects: bool = False,
        pre: Optional[str] = None,
    ) -> None:
        self.kind = kind
        # Compiled on first use: a hook process imports this module on every call, and most
        # rules never run (their literals are not in the text); compiling all of them at
        # import cost more than the rest of the hook.
        self._pattern = pattern
        self._flags = flags
        self._regex: Optional[re.Pattern] = None
        # pre: a cheap regex (starting with a literal) that must match somewhere first
        self._pre = pre
        self._pre_regex: Optional[re.Pattern] = None
        # None: scan mode, the pattern starts with a case-sensitive literal and
        # ``Pattern.search`` is fast.  Otherwise (literal, offset) pairs: the
        # regex is tried at ``position_of_literal - offset``.
        self.anchors = (
            None
            if anchors is None
            else tuple((a.encode("ascii"), 0) if isinstance(a, str) else (a[0].encode("ascii"), a[1]) for a in anchors)
        )
        self.groups = groups
        self.check = check
        self.decide = decide
        self.lb = lb
        # bounded: a match may not extend past the next anchor (PEM blocks)
        self.bounded = bounded
        # hints: extra literals, at least one of which must occur in the text
        self.hints = tuple(h.encode("ascii") for h in hints)
        self.skip_long_rejects = skip_long_rejects

    @property
    def regex(self) -> re.Pattern:
        if self._regex is None:
            self._regex = re.compile(self._pattern, self._flags)
        return self._regex

    @property
    def pre(self) -> Optional[re.Pattern]:
        if self._pre is not None and self._pre_regex is None:
            self._pre_regex = re.compile(self._pre)
        return self._pre_regex

    def span(self, m: re.Match) -> Decision:
        if self.lb:
            start = m.start()
            if start and m.string[start - 1] in self.lb:
                return None
        if self.decide is not None:
            return self.decide(m)
        for g in self.groups:
            value = m.group(g)
            if value is not None:
                if self.check is not None and not self.check(m, value):
                    return None
                return self.kind, m.start(g), m.end(g)
        return None


def _not_placeholder(_m: re.Match, value: str) -> bool:
    return not _is_placeholder(value)


# --- private keys -----------------------------------------------------------

_PEM_BODY = r"[A-Za-z0-9+/=\s\\:,.\-]"
_PEM_KIND = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
# An unterminated block (output cut short) is redacted up to where its base64 ends. Lines may
# be separated by blank lines (PGP armour headers) or, once whitespace was squeezed (entity
# names, one-line snippets), by plain spaces.
_PEM_FALLBACK = (
    r"(?:(?:(?:[ \t]*(?:\r?\n|\\r\\n|\\n))++[ \t]*|[ \t]++)?"
    r"(?:[A-Z][A-Za-z\-]{1,40}:[^\r\n\\]{0,200}|[A-Za-z0-9+/]{16,}+={0,2}|=[A-Za-z0-9+/]{4}))*+"
)


def _pem_check(m: re.Match, value: str) -> bool:
    body = m.group("body") or ""
    return sum(ch.isalnum() for ch in body) >= 16


def _quoted_before(m: re.Match, _value: str) -> bool:
    start = m.start()
    return start > 0 and m.string[start - 1] == m.group("q")


_RULE_GCP_KEY = _Rule(
    "gcp-service-account",
    r"""private_key(?P<q>["'])[ \t]*:[ \t]*(?P=q)(?P<s>-----BEGIN[^"'\r\n]*)""",
    check=_quoted_before,
)
_RULE_GCP_KEY_ID = _Rule(
    "gcp-service-account",
    r"""private_key_id(?P<q>["'])[ \t]*:[ \t]*(?P=q)(?P<s>[0-9a-fA-F]{16,64})(?P=q)""",
    check=_quoted_before,
)
_RULE_PEM = _Rule(
    "private-key",
    rf"(?P<s>-----BEGIN (?:{_PEM_KIND})-----"
    rf"(?P<body>{_PEM_BODY}*?-----END (?:{_PEM_KIND})-----|{_PEM_FALLBACK}))",
    ("-----begin ",),
    check=_pem_check,
    bounded=True,
)

# --- provider token formats -------------------------------------------------

_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA")
_RULE_AWS_ID = _Rule(
    "aws-access-key",
    rf"(?P<s>(?:{'|'.join(_AWS_PREFIXES)})(?<![A-Za-z0-9]....)[A-Z0-9]{{16}})(?![A-Za-z0-9])",
)
_RULE_AWS_SECRET = _Rule(
    "aws-secret-key",
    r"(?i:secret[_\-]?access[_\-]?key[\"']?[ \t]*(?:=>|=|:)[ \t]*[\"']?)"
    r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ("secret",),
)


def _aws_pair_check(_m: re.Match, value: str) -> bool:
    return bool(_DIGIT.search(value) and _LOWER.search(value) and _UPPER.search(value)) and _shannon(value) >= 3.5


# The 40-character secret key written after its access key id, whatever is between them on the
# line: `AWS AKIA... secret 9xK2...`, `AKIA.../9xK2...`, `key id AKIA..., and the key is 9xK2...`.
# The id is already a label when this rule runs (rules run in order).
_RULE_AWS_PAIR = _Rule(
    "aws-secret-key",
    r"\[REDACTED:aws-access-key\][^\r\n]{0,160}?(?<![A-Za-z0-9/+])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    (("aws-access-key]", len(_LABEL_MARK)),),
    check=_aws_pair_check,
)
_RULE_ANTHROPIC = _Rule(
    "anthropic-key",
    r"(?P<s>sk-ant-(?<![A-Za-z0-9_\-]sk-ant-)[A-Za-z0-9_\-]{20,300})",
)


def _openai_check(_m: re.Match, value: str) -> bool:
    body = value[3:]
    return any(ch.isdigit() for ch in body) and any(ch.isalpha() for ch in body) and _shannon(body) >= 3.0


_RULE_OPENAI = _Rule(
    "openai-key",
    r"(?P<s>sk-(?<![A-Za-z0-9_\-]sk-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,300})",
    check=_openai_check,
)
_RULE_STRIPE = _Rule(
    "stripe-key",
    r"(?P<s>(?:(?:sk|rk)_(?:live|test)|pk_live)_[A-Za-z0-9]{10,255}|whsec_[A-Za-z0-9]{20,255})(?![A-Za-z0-9_\-])",
    (("k_live_", 1), ("k_test_", 1), "whsec_"),
    lb=_TOKCH,
)
_RULE_GITHUB = _Rule(
    "github-token",
    r"(?P<s>gh[pousr]_(?<![A-Za-z0-9_\-]....)[A-Za-z0-9]{30,255}"
    r"|github_pat_(?<![A-Za-z0-9_\-]github_pat_)[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_\-])",
)
_RULE_GITLAB = _Rule(
    "gitlab-token",
    r"(?P<s>gl(?<![A-Za-z0-9_\-]gl)(?:pat|dt|rt|ptt|ft|soat|cbt|imt)-[A-Za-z0-9_\-]{20,200}"
    r"(?:\.[A-Za-z0-9_\-]{2,64}){0,4})",
)
_RULE_SLACK_WEBHOOK = _Rule(
    "slack-webhook",
    r"(?i:hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<s>[A-Za-z0-9_/\-]{16,})",
    ("hooks.slack.com/",),
)
_RULE_SLACK = _Rule(
    "slack-token",
    r"(?P<s>x(?<![A-Za-z0-9_\-]x)(?:ox[abeoprs]-[A-Za-z0-9\-]{10,300}|app-[0-9]-[A-Za-z0-9\-]{10,300}))",
)
_RULE_GOOGLE = _Rule(
    "google-api-key",
    r"(?P<s>AIza(?<![A-Za-z0-9_\-]AIza)[0-9A-Za-z_\-]{35})(?![A-Za-z0-9_\-])",
)
_RULE_AZURE = _Rule(
    "azure-key",
    r"(?i:AccountKey|SharedAccessKey|SharedSecret|PrimaryKey|SecondaryKey)[ \t]*=[ \t]*"
    r"(?P<s>[A-Za-z0-9+/]{20,200}={0,2})",
    ("accountkey", "sharedaccesskey", "sharedsecret", "primarykey", "secondarykey"),
    lb=_ALNUM,
)


def _sas_check(m: re.Match, _value: str) -> bool:
    start = m.start()
    return start > 0 and m.string[start - 1] in "?&"


_RULE_AZURE_SAS = _Rule(
    "azure-key",
    r"sig=(?P<s>[A-Za-z0-9%+/=]{16,512})",
    check=_sas_check,
)
_RULE_NPM = _Rule(
    "npm-token",
    r"(?P<s>npm_(?<![A-Za-z0-9_\-]npm_)[A-Za-z0-9]{36})(?![A-Za-z0-9])",
)
_RULE_NPM_AUTH = _Rule(
    "npm-token",
    r"_auth(?:Token)?[\"']?=[\"']?(?P<s>[^\s\"'`<>(){}\[\];,&|]+)(?![(\[])",
    check=_not_placeholder,
    lb=_KEYCH_SET,
)
_RULE_PYPI = _Rule(
    "pypi-token",
    r"(?P<s>pypi-AgE(?<![A-Za-z0-9_\-]pypi-AgE)[A-Za-z0-9_\-]{40,1024})",
)
_RULE_TWILIO = _Rule(
    "twilio-key",
    r"(?P<s>SK(?<![A-Za-z0-9]SK)[0-9a-fA-F]{32})(?![A-Za-z0-9])",
)
_RULE_SENDGRID = _Rule(
    "sendgrid-key",
    r"(?P<s>SG\.(?<![A-Za-z0-9]SG\.)[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})(?![A-Za-z0-9_\-])",
)
_RULE_JWT = _Rule(
    "jwt",
    r"(?P<s>eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{8,16384}\.[A-Za-z0-9_\-]{0,4096})",
)

# --- structural secrets -------------------------------------------------------

_SCHEME_CH = _ALNUM | frozenset("+.-")


# documentation spelling of a URL with credentials: https://user:password@host
_URL_PLACEHOLDERS = frozenset("password pass passwd pwd pw secret pass123 token".split())


def _url_check(m: re.Match, value: str) -> bool:
    # the scheme lies before the anchor: walk back over scheme characters
    text = m.string
    i = start = m.start()
    while i > 0 and text[i - 1] in _SCHEME_CH and start - i <= 30:
        i -= 1
    if start - i < 2 or not text[i].isalpha():
        return False
    return not _is_placeholder(value) and value.lower() not in _URL_PLACEHOLDERS


_RULE_URL = _Rule(
    "url-credentials",
    # a `#` in the password: people paste passwords into URLs unencoded, and `user:pass#1@host` is no fragment
    r"://(?P<user>[^\s:/?#@\[\]\"'<>]{0,256}):(?P<s>[^\s/?\"'<>]{1,256})@(?=[A-Za-z0-9\[_])",
    check=_url_check,
)

_BEARER_VALUE = r"[A-Za-z0-9\-._~+/]+=*"


def _bearer_check(m: re.Match, value: str) -> bool:
    if _is_placeholder(value) or len(value) < 4:
        return False
    if m.group("scheme"):
        return True
    # no scheme: must look like an opaque credential
    return len(value) >= 16 and any(ch.isdigit() for ch in value) and _shannon(value) >= 3.0


def _bare_bearer_check(_m: re.Match, value: str) -> bool:
    return (
        len(value) >= 16
        and any(ch.isdigit() for ch in value)
        and any(ch.isalpha() for ch in value)
        and _shannon(value) >= 3.0
    )


_RULE_AUTH_HEADER = _Rule(
    "bearer-token",
    r"(?i:authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?P<scheme>bearer|basic|token|negotiate|ntlm|apikey|sso-key)[ \t]+)?)"
    rf"(?P<s>(?(scheme)[^\s\"'<>`]+|{_BEARER_VALUE}))",
    ("authorization",),
    check=_bearer_check,
    lb=_ALNUM | frozenset("_"),
)
_RULE_BARE_BEARER = _Rule(
    "bearer-token",
    rf"(?i:bearer|basic)[ \t]+(?P<s>{_BEARER_VALUE})",
    ("bearer", "basic"),
    check=_bare_bearer_check,
    lb=_TOKCH,
)

# `Authorization: SSWS 00eLAQw0…` (Okta), `Authorization: Key …`: a scheme the rule above does not
# name, followed by a value built like a credential
_RULE_AUTH_SCHEME = _Rule(
    "bearer-token",
    r"(?i:authorization[\"']?[ \t]*[:=][ \t]*[\"']?)[A-Za-z][A-Za-z0-9_\-]{1,30}[ \t]+"
    rf"(?P<s>{_BEARER_VALUE})",
    ("authorization",),
    check=_bare_bearer_check,
    lb=_ALNUM | frozenset("_"),
)
# Go's database/sql DSN: `user:password@tcp(host:3306)/db` (no scheme, so not `_RULE_URL`)
_RULE_GO_DSN = _Rule(
    "url-credentials",
    r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]{1,64}:(?P<s>[^\s@\"'`/:()]{1,128})@(?:tcp|unix|udp)\(",
    check=_not_placeholder,
    pre=r"@(?:tcp|unix|udp)\(",
)
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
# a wallet key in a Hardhat / Foundry network config: `accounts: ["0x<64 hex>"]`
_RULE_WALLET_KEY = _Rule(
    "private-key",
    r"accounts[\"']?[ \t]*[:=][ \t]*\[[ \t\r\n]*[\"'](?P<s>(?:0x)?[0-9a-fA-F]{64})[\"']",
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

# an SDK client built with its key as the first argument (`cohere.Client("…")`; `Anthropic("…")`
# is caught by its prefix). Not Algolia's `algoliasearch(appId, key)`: its key there is as often
# the search-only one, which is published in every front end.
_RULE_CLIENT_KEY = _Rule(
    "api-token",
    r"[Cc]lient\([ \t]*(?:api_?key[ \t]*=[ \t]*)?[\"'](?P<s>[A-Za-z0-9_\-]{24,128})[\"']",
    ("client(",),
    check=lambda _m, v: _looks_random(v),
)


def _key_value_decide(m: re.Match) -> Decision:
    """A rule's `key` and value `s` judged as that key's assignment would be (`_classify`)."""
    kind = _classify(m.group("key"), m.group("s"))
    return None if kind is None else (kind, m.start("s"), m.end("s"))


def _random_value(_m: re.Match, value: str) -> bool:
    """A value random enough for a key's place (`_looks_random` with a weak key's bar)."""
    return _looks_random(value, weak_key=True)


# JSON inside a JSON string, as a log prints a config: `\"password\":\"Esc-Json-Pelican9\"`
_RULE_ESCAPED_JSON = _Rule(
    "password-assignment",
    r'\\"(?P<key>[A-Za-z0-9_.\-]{1,64})\\"[ \t]*:[ \t]*\\"(?P<s>[^"\\\r\n]{1,512})\\"',
    ('\\"',),
    decide=_key_value_decide,
    hints=("pass", "pwd", "secret", "token", "key", "cred", "auth"),
)
# credentials handed to a call: `NetworkCredential("user", "pw")`, `basic_auth 'user', 'pw'`,
# `server.login("me@x", "pw")`, `new PDO(dsn, 'user', 'pw')`, `getConnection(url, "user", "pw")`,
# `.basic_auth("user", Some("pw"))`: the string after the user's, when it reads as a password
#: Where such a call is tried (the lowered text's literals; the regex is matched there only).
_CALL_CREDENTIAL_NAMES = ("credential", "basic_auth", "basicauth", "login", "getconnection", "pdo(", "connect(")
_RULE_CALL_CREDENTIALS = _Rule(
    "password-assignment",
    r"(?i:credentials?|basic_?auth|login|getconnection|pdo|connect)[ \t]*\(?[ \t\r\n]*"
    r"(?:[\"'][^\"'\r\n]{1,300}[\"'][ \t]*,[ \t\r\n]*)?[\"'][^\"'\r\n]{1,128}[\"'][ \t]*,[ \t\r\n]*"
    r"(?:Some\([ \t]*)?[\"'](?P<s>[^\"'\r\n]{4,128})[\"']",
    _CALL_CREDENTIAL_NAMES,
    check=lambda _m, v: (
        not _is_placeholder(v)
        and (_password_like(v) or _looks_random(v) or _app_password_shape(v) or _mixed_letters(v))
    ),
)
# a basic-auth pair encoded in code: `Buffer.from('user:pw').toString('base64')`, `b64encode(b"user:pw")`
_RULE_ENCODED_PAIR = _Rule(
    "password-assignment",
    r"(?:Buffer\.from|b64encode|btoa|encodeToString|base64_encode)\([ \t]*b?[\"'`][^\"'`:\s]{1,64}:(?P<s>[^\"'`\s]{4,128})[\"'`]",
    hints=("buffer.from", "b64encode", "btoa", "encodetostring", "base64_encode"),
    check=_not_placeholder,
)


# a value set by subscript: `app.config["SECRET_KEY"] = "…"`, `os.environ['API_TOKEN'] = '…'`
_RULE_SUBSCRIPT = _Rule(
    "password-assignment",
    r"\[[ \t]*[\"'](?P<key>[A-Za-z0-9_.\-]{1,64})[\"'][ \t]*\][ \t]*=[ \t]*[\"'](?P<s>[^\"'\r\n]{4,512})[\"']",
    hints=("pass", "pwd", "secret", "token", "key", "cred", "auth"),
    decide=_key_value_decide,
)
# Bundler's credentials for a gem server: `BUNDLE_GEMS__CONTRIBSYS__COM: "user:pass"`
_RULE_BUNDLER = _Rule(
    "password-assignment",
    r"BUNDLE_[A-Z0-9_]*__[A-Z0-9_]+[\"']?[ \t]*[:=][ \t]*[\"']?[^:\"'\s]{1,128}:(?P<s>[^\"'\s]{4,256})",
    ("bundle_",),
    check=_not_placeholder,
)
# a Google app password's shape (four groups of four letters) after a password's key or as a login's argument
_APP_PASSWORD_SHAPE = re.compile(r"[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4}")


def _mixed_letters(value: str) -> bool:
    """Ten or more letters of mixed case that no one would write as a word or a type name
    (`YoTSKHIGaYDdG`), in a password's place by position."""
    return len(value) >= 10 and value.isalpha() and not _type_name(value) and sum(c.isupper() for c in value) >= 3


def _app_password_shape(value: str) -> bool:
    return _APP_PASSWORD_SHAPE.fullmatch(value) is not None and _app_password_check(None, value)  # type: ignore[arg-type]


_RULE_APP_PASSWORD_VALUE = _Rule(
    "password",
    r"(?i:pass(?:word)?|pwd|app_?password)[\"']?[ \t]*[:=][ \t]*[\"']?(?P<s>[a-z]{4} [a-z]{4} [a-z]{4} [a-z]{4})(?![a-z])",
    ("pass", "pwd"),
    check=lambda _m, v: _app_password_shape(v),
)
# Oracle's `sqlplus user/password@db` (and sqlldr, expdp, impdp, rman: the same connect string)
_RULE_ORACLE_CONNECT = _Rule(
    "password-assignment",
    r"(?:(?i:sqlplus|sqlldr|expdp|impdp|rman|sqlcl)(?:[ \t]+-[A-Za-z]+)*[ \t]+[\"']?|jdbc:oracle:(?:thin|oci):)"
    r"[A-Za-z0-9_$#]{1,64}/(?P<s>[^\s@/\"']{1,128})@",
    check=_not_placeholder,
    hints=("sqlplus", "sqlldr", "expdp", "impdp", "rman", "sqlcl", "jdbc:oracle:"),
)
# SQL that sets a password: CREATE/ALTER USER ... IDENTIFIED BY 'x' (MySQL, Oracle), WITH PASSWORD
_RULE_SQL_IDENTIFIED = _Rule(
    "password-assignment",
    r"(?i:identified[ \t]+(?:with[ \t]+\w+[ \t]+)?by(?:[ \t]+password)?)[ \t]+(?:'(?P<sq>[^'\r\n]{1,256})'|\"(?P<dq>[^\"\r\n]{1,256})\"|(?P<uv>[^\s;'\"]{4,128}))",
    groups=("sq", "dq", "uv"),
    check=_not_placeholder,
    hints=("identified",),
)
# a pre-signed URL's signature (S3 and compatible stores, GCS V4): anyone holding the URL has the object
_RULE_URL_SIGNATURE = _Rule(
    "url-credentials",
    r"(?i:[?&](?:X-Amz-Signature|X-Goog-Signature|Signature|X-Amz-Security-Token|sig))=(?P<s>[A-Za-z0-9%+/=_\-]{16,2048})",
    hints=("signature=", "security-token=", "sig="),
)
# RPC providers' keys in the URL path (`https://eth-mainnet.g.alchemy.com/v2/<key>`, Infura, QuickNode)
_RPC_KEY_PATHS = ("alchemy.com/v2/", "alchemyapi.io/v2/", "infura.io/v3/", "infura.io/ws/v3/", "quiknode.pro/")
_RULE_RPC_URL_KEY = _Rule(
    "api-token",
    r"(?i:alchemy\.com/v2|alchemyapi\.io/v2|infura\.io/v3|infura\.io/ws/v3|quiknode\.pro)/(?P<s>[A-Za-z0-9_\-]{16,128})",
    _RPC_KEY_PATHS,
    check=_random_value,
)
# a network device's config: `username admin password 0 X`, `enable secret 0 X` (type 0: clear text)
_RULE_DEVICE_PASSWORD = _Rule(
    "password-assignment",
    r"(?im:^[ \t]*(?:username[ \t]+\S+[ \t]+(?:privilege[ \t]+\d+[ \t]+)?|enable[ \t]+|)(?:password|secret)[ \t]+0[ \t]+(?P<s>\S{1,128})$)",
    check=_not_placeholder,
    hints=("password 0 ", "secret 0 "),
)


def _random_cookie(value: str) -> bool:
    """A session cookie's value is random whole or in a part: Express signs its id as
    `s:<id>.<signature>` (URL-encoded in the header: `s%3A…`)."""
    return _looks_random(value, weak_key=True) or any(
        _looks_random(part, weak_key=True) for part in re.split(r"[:.]", value)
    )


# a session cookie in a Cookie header or a curl -b: `sessionid=…` (Django, and jsessionid,
# phpsessid), `_app_session=…` (Rails), `connect.sid=…` (Express)
_SESSION_COOKIE_NAMES = ("sessionid=", "session_id=", "sessid=", "session=", "connect.sid=")
_RULE_SESSION_COOKIE = _Rule(
    "bearer-token",
    r"(?i:sessionid|session_id|sessid|session|connect\.sid)=(?P<s>[A-Za-z0-9%._\-+/=:]{16,1024})",
    _SESSION_COOKIE_NAMES,
    check=lambda _m, v: _random_cookie(urllib.parse.unquote(v)),
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

# --- assignments ------------------------------------------------------------------

_KW_ANCHORS = ("pass", "pwd", "secret", "token", "key", "cred", "auth")
_KW = r"(?i:pass|pwd|secret|token|key|cred|auth)"
# An unquoted value: separators ; & , | belong to the value unless they look like
# a delimiter (followed by whitespace, end, another delimiter or a `key=`).
_UNQUOTED = (
    r"(?:[^\s\"'`<>(){}\[\];&,|]"
    r"|[;&,|](?![ \t\r\n]|$|[;&,|]|[A-Za-z_][A-Za-z0-9_.\-]{0,64}[=:])){1,4096}+"
)
_DQ = r'"(?P<dq>(?:[^"\\\r\n]|\\.){1,1024})"'
_SQ = r"'(?P<sq>(?:[^'\\\r\n]|\\.){1,1024})'"


def _line_before(text: str, pos: int, limit: int = 1024) -> str:
    """The current line up to ``pos`` (at most ``limit`` characters of it)."""
    lo = max(0, pos - limit)
    start = text.rfind("\n", lo, pos) + 1 or lo
    return text[start:pos]


_PASSWORDISH = re.compile(r"pass|pwd|pin|phrase")


#: A password hash in crypt(3) form: bcrypt, argon2, scrypt, sha-crypt, yescrypt.
_CRYPT_HASH = re.compile(r"\$(?:2[abxy]?|argon2(?:id|i|d)|scrypt|[156y]|pbkdf2[\w-]*)\$")
#: A value written only in CJK scripts and their punctuation: a phrase, not a password.
_CJK_PHRASE = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef\s]+")


def _classify(key: str, value: str, *, min_len: int = 4) -> Optional[str]:
    """Kind for ``key = value`` or None when it is not a secret."""
    strength = _key_strength(key)
    if strength is None:
        return None
    v = value.strip()
    if len(v) < min_len or _is_placeholder(v) or _PATH.match(v) or _is_label_like(v):
        return None
    if v.lower() in _SECRET_NAMES or textview.names_a_key(v):
        return None  # `"login.password": "Mot de passe"`: a translation of the key's name
    if _CJK_PHRASE.fullmatch(v):
        return None  # `パスワード：別途お送りします` ("sent separately"): a phrase in the value's place
    if _CRYPT_HASH.match(v):
        return None  # `$2b$12$…`, `$argon2id$…`: a password's hash, what a store keeps instead of it
    if strength == "about":  # `password_hint = "At least 12 characters"`; not `api_key_label = <random>`
        return "password-assignment" if " " not in v and (_password_like(v) or _looks_random(v)) else None
    if _is_placeholder(v.rstrip(":.,;")):
        return None  # `token: str:` in a docstring
    if v.isdigit() and len(v) < 8 and not _PASSWORDISH.search(_normalize_key(key)):
        return None  # `token=2936` is a token id, `max_key=100` a number; PINs stay secret
    if strength == "strong":
        return "password-assignment"
    if _looks_random(v, weak_key=(strength == "weak")):
        return "generic-high-entropy"
    if strength == "generic" and _password_like(v, strict=True) and not _is_label_like(v):
        return "password-assignment"
    return None


_NAME = re.compile(
    r"^[A-Za-z_][A-Za-z_]*$"  # a digit-free name
    r"|^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$"  # an attribute chain
)
_CAMEL_TYPE_RE = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*$")


def _camel_type(value: str) -> bool:
    # bounded: the pattern backtracks quadratically on long inputs
    return len(value) <= 64 and _CAMEL_TYPE_RE.match(value) is not None


_CODE_WORDS = frozenset("await yield lambda not new typeof function async self cls this".split())


def _is_code_value(m: re.Match, value: str, key_start: int, end: int) -> bool:
    """True when an unquoted assigned value is a program identifier, not a secret.

    Only digit-free names qualify (``value``, ``db_password``, ``args.token``):
    random-looking values such as ``a8Fk29dLq0`` or ``hunter2`` stay secrets.
    """
    text = m.string
    spaced_eq = m.group("sep") != ":" and bool(m.group("sp1")) and bool(m.group("sp2"))
    if spaced_eq and not _NAME.match(value) and not _camel_type(value):
        # `N = 16000 // 320`: anything followed by more code on the line
        nl = text.find("\n", end, end + 512)
        rest = text[end : nl if nl != -1 else end + 512].strip()
        return bool(rest) and rest[0] not in "#;"
    if not (_NAME.match(value) or _camel_type(value)):
        return False
    sep = m.group("sep")
    if value in _CODE_WORDS:
        return True
    if m.group("kq"):
        return True  # `"password": password` is a dict literal, not JSON
    follower = text[end : end + 2]
    if follower[:1] == ")" or (follower[:1] == "," and follower[1:2] in ("", " ", "\t", "\r", "\n")):
        return True  # `f(password=password, ...)`, `{"k": v, ...}`
    if sep == ":":
        # `token: AccessToken` (a type annotation)
        return bool(_camel_type(value) and _SECRET_WORD.search(value))
    spaced = bool(m.group("sp1")) and bool(m.group("sp2"))
    if spaced:
        nl = text.find("\n", end, end + 512)
        rest = text[end : nl if nl != -1 else end + 512].strip()
        if rest and rest[0] not in "#;":
            return True  # an expression: `TOKEN = CHAR ^ CTL`
        if "." in value or _SECRET_WORD.search(value):
            return True  # `password = args.password`, `token = new_token`
        if _line_before(text, key_start).strip(" \t") or text[key_start - 1 : key_start] in (" ", "\t"):
            return True  # indented or preceded by code: `    password = value`
    return False


_PW_SYMBOLS = frozenset("!@#$%^&*_-+=?~.,;:")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_CODE_REST = re.compile(r"[ \t]*(?:[-+*/%&|^<>=!.,(\[{?]|(?:if|else|and|or|is|in|for|not|then)\b)")


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


#: Inside an ARN (`arn:aws:secretsmanager:us-east-1:<account>:secret:prod/db`): names a resource.
_ARN_HEAD = re.compile(r"(?<![\w:/.\-])arn:[a-z\-]{2,20}:[^\s\"'`]*$")


def _under_encrypted_data(text: str, pos: int) -> bool:
    """Whether the YAML key at `pos` sits under an `encryptedData:` mapping (a Bitnami
    SealedSecret: its values are ciphertext only the cluster's controller can open)."""
    line_start = text.rfind("\n", 0, pos) + 1
    indent = len(text[line_start:pos]) - len(text[line_start:pos].lstrip(" "))
    end = line_start - 1
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        stripped = line.lstrip(" ")
        if stripped and len(line) - len(stripped) < indent:
            return stripped.rstrip() == "encryptedData:"
        end = start - 1
    return False


def _assignment_decide(m: re.Match) -> Decision:
    text = m.string
    # the key is the whole run of key characters around the keyword anchor
    key_start = m.start()
    limit = key_start - 128
    while key_start > 0 and key_start > limit and text[key_start - 1] in _KEYCH_SET:
        key_start -= 1
    key = text[key_start : m.end("krest")]
    if _ARN_HEAD.search(text[max(0, key_start - 160) : key_start]):
        return None  # `arn:aws:secretsmanager:us-east-1:…:secret:prod/db`: a resource's name, not a value
    if _PUBLIC_QUALIFIER.search(text[max(0, key_start - 13) : key_start].lower()):
        return None  # `public key: 6E3Oy…` (WireGuard), `host key:`: published to be compared
    if "encryptedData" in text and _under_encrypted_data(text, key_start):
        return None  # a SealedSecret's ciphertext: made to be committed
    if m.group("dq") is not None:
        g = "dq"
    elif m.group("sq") is not None:
        g = "sq"
    else:
        g = "uv"
        value = m.group("uv")
        sep = m.group("sep")
        end = m.end("uv")
        # a value built like a password under a secret's name is one, even with prose or
        # more settings after it on the line (`password: Yr5FU2Gc1co@ and the user ...`)
        strength = _key_strength(key)
        strong_value = strength is not None and (
            (strength != "weak" and _password_like(value, strict=strength == "generic"))
            or _looks_random(value, weak_key=strength == "weak")
        )
        if strong_value and sep != ":" and _IDENTIFIER.match(value) and _CODE_REST.match(text, end):
            strong_value = False  # `token = AccessToken2 if fresh else None`: code, not a value
        if _CODE_PREFIX.match(value) or (not strong_value and _is_code_value(m, value, key_start, end)):
            return None
        if key.startswith("-") and _METAVAR.match(value):
            return None  # usage text: `--private-key=FILE`
        if _dotted_reference(value):
            return None  # `{token:o.default.string}`: a reference in code, not `Biscotto.Hanok763`
        if sep == ":" and not strong_value:
            # YAML / header style: the unquoted value must be the whole rest of the
            # line (or end at a flow-mapping delimiter); otherwise it is prose.
            rest = text[end : end + 256]
            stripped = rest.lstrip(" \t")
            if stripped and stripped[0] not in "\r\n#,}]":
                return None
    kind = _classify(key, m.group(g))
    if kind is None:
        return None
    return kind, m.start(g), m.end(g)


_RULE_ASSIGN = _Rule(
    "password-assignment",
    rf"{_KW}(?P<krest>[A-Za-z0-9_.\-]{{0,64}}+)(?P<kq>[\"']?)"
    r"(?P<sp1>[ \t]*)(?P<sep>=>|:=|=(?!=)|:(?![:/]))(?P<sp2>[ \t]*)"
    rf"(?:{_DQ}|{_SQ}|(?P<uv>{_UNQUOTED})(?![(\[]))",
    _KW_ANCHORS,
    decide=_assignment_decide,
    skip_long_rejects=True,
)

_METAVAR = re.compile(r"^[A-Z][A-Z_\-]*$")


def _flag_decide(m: re.Match) -> Decision:
    for g in ("dq", "sq", "uv"):
        value = m.group(g)
        if value is not None:
            break
    else:  # pragma: no cover - the regex guarantees one group
        return None
    if g == "uv" and (_METAVAR.match(value) or value.isalpha() and value.islower()):
        return None  # argparse metavar `--token TOKEN`, prose `--password option`
    if g == "uv" and value.startswith("-") and not _password_like(value):
        return None  # the next flag (`--token -v`), not a value that starts with a dash
    kind = _classify(m.group("key"), value)
    if kind is None:
        return None
    return kind, m.start(g), m.end(g)


_RULE_FLAG = _Rule(
    "password-assignment",
    rf"--(?<![A-Za-z0-9_\-]--)(?P<key>(?=[A-Za-z0-9])[A-Za-z0-9_\-]{{0,64}}?{_KW}[A-Za-z0-9_\-]{{0,64}}+)[ \t]+"
    rf"(?:{_DQ}|{_SQ}|(?P<uv>(?!--)[^\s\"'`;&|<>()\[\]{{}}]++))",
    decide=_flag_decide,
)


def _xml_decide(m: re.Match) -> Decision:
    """`s` given under the name `name`: an element's text or a `value` attribute."""
    kind = _classify(m.group("name"), m.group("s"))
    if kind is None:
        return None
    return kind, m.start("s"), m.end("s")


_RULE_XML = _Rule(
    "password-assignment",
    rf"<(?P<name>[A-Za-z0-9_.:\-]{{0,64}}?{_KW}[A-Za-z0-9_.\-]{{0,64}}+)>(?P<s>[^<\r\n]{{1,1024}})</(?P=name)>",
    decide=_xml_decide,
    hints=("</",),
)


# `<add key="DbPassword" value="..."/>` (.NET appSettings), `<property name="db.password" value="..."/>`
# (Spring, Ant, Maven): the name and the value are two attributes of one element
_RULE_XML_ATTR = _Rule(
    "password-assignment",
    rf"""\b(?:key|name)[ \t]*=[ \t]*(?P<q>["'])(?P<name>[A-Za-z0-9_.:\-]{{0,64}}?{_KW}[A-Za-z0-9_.:\-]{{0,64}}+)(?P=q)"""
    r"""[ \t]+value[ \t]*=[ \t]*(?P<vq>["'])(?P<s>(?:(?!(?P=vq))[^\r\n]){1,1024})(?P=vq)""",
    decide=_xml_decide,
    hints=("value",),
)

_CMD_VALUE = r"""(?:'(?P<sq>[^'\r\n]*)'|"(?P<dq>[^"\r\n]*)"|(?P<uv>[^\s'"]+))"""
_CMD_SPAN = r"[^\r\n|;&]{0,512}?"


def _cmd_check(_m: re.Match, value: str) -> bool:
    return bool(value) and not _is_placeholder(value)


_RULE_MYSQL = _Rule(
    "password-assignment",
    rf"(?:mysql|mariadb)[a-z\-]{{0,8}}\b{_CMD_SPAN}[ \t]-p{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
)
_RULE_SSHPASS = _Rule(
    "password-assignment",
    rf"sshpass[ \t]+-p[ \t]*{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
)
_RULE_REDIS = _Rule(
    "password-assignment",
    rf"redis-cli\b{_CMD_SPAN}[ \t]-a[ \t]+{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
)
_LOGIN_CMDS = ("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras")
_RULE_LOGIN_P = _Rule(
    "password-assignment",
    rf"(?:{'|'.join(_LOGIN_CMDS)})(?:[ \t]+registry)?[ \t]+login\b{_CMD_SPAN}[ \t]-p[ \t]+{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
    hints=("login",),
)
_CURL_CMD = re.compile(r"(?<![A-Za-z0-9_\-])(?:curl|wget)\b")


def _curl_check(m: re.Match, value: str) -> bool:
    # anchored on the flag; the command must be curl/wget earlier on the same line
    line = _line_before(m.string, m.start())
    return _CURL_CMD.search(line) is not None and not _is_placeholder(value)


_RULE_CURL_USER = _Rule(
    "password-assignment",
    r"-(?<=[ \t]-)(?:u|-user|-http-user)[ \t=]*['\"]?(?P<user>[^\s:'\"]*):['\"]?(?P<s>[^\s'\"]+)",
    check=_curl_check,
)
_RULE_NETRC = _Rule(
    "password-assignment",
    r"login[ \t]+\S+\s+(?:account[ \t]+\S+\s+)?password[ \t]+(?P<s>[^\s\"'<>]+)",
    check=_cmd_check,
    lb=_TOKCH,
)

# --- provider token formats added for issue 12 ----------------------------------
# Each starts with a fixed prefix, found with bytes.find on the lowered text (cheap), and
# must not be preceded or followed by token characters.


def _token_rule(kind: str, pattern: str, *anchors: str, check: Optional[Callable] = None) -> _Rule:
    return _Rule(kind, rf"(?P<s>{pattern})(?![A-Za-z0-9_\-])", anchors, check=check, lb=_TOKCH)


def _mixed_check(_m: re.Match, value: str) -> bool:
    body = value.split("_", 1)[-1]
    return bool(_DIGIT.search(body) or (_LOWER.search(body) and _UPPER.search(body))) and _shannon(body) >= 3.0


_TOKEN_RULES: tuple[_Rule, ...] = (
    _token_rule("google-oauth", r"ya29\.[0-9A-Za-z_\-.]{20,2048}", "ya29."),
    _token_rule("google-oauth", r"GOCSPX-[0-9A-Za-z_\-]{24,40}", "gocspx-"),
    _token_rule("google-oauth", r"1//0[0-9A-Za-z_\-]{38,512}", "1//0"),
    _token_rule("vault-token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,512}", "hvs.", "hvb.", "hvr."),
    _token_rule("docker-token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,128}", "dckr_"),
    _token_rule("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", "dop_v1_", "doo_v1_", "dor_v1_"),
    _token_rule(
        "huggingface-token",
        r"(?:hf|api_org)_[A-Za-z0-9]{30,40}",
        "hf_",
        "api_org_",
        check=lambda m, v: _mixed_check(m, v) or (len(v.split("_")[-1]) == 34 and _shannon(v.split("_")[-1]) >= 3.5),
    ),
    _token_rule("age-secret-key", r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}", "age-secret-key-1"),
    _token_rule("mailgun-key", r"key-[0-9a-z]{32}", "key-", check=_mixed_check),
    _token_rule("api-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shpat_", "shpca_", "shppa_", "shpss_"),
    _token_rule("api-token", r"lin_(?:api|oauth)_[A-Za-z0-9]{32,64}", "lin_api_", "lin_oauth_"),
    _token_rule("api-token", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "pmak-"),
    _token_rule("api-token", r"gl(?:sa|c)_[A-Za-z0-9+/_=]{32,400}", "glsa_", "glc_", check=_mixed_check),
    _token_rule("api-token", r"sntr[ysu]_[A-Za-z0-9+/=_\-]{40,400}", "sntrys_", "sntryu_", "sntrs_"),
    _token_rule("api-token", r"dapi[a-f0-9]{32}(?:-[0-9])?", "dapi", check=_mixed_check),
    _token_rule("api-token", r"NRAK-[A-Z0-9]{27}", "nrak-"),
    _token_rule("api-token", r"pul-[a-f0-9]{40}", "pul-"),
    _token_rule(
        "api-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}", "dp.pt.", "dp.st.", "dp.sa.", "dp.ct."
    ),
    _token_rule("api-token", r"ATATT3[A-Za-z0-9_\-=]{100,300}", "atatt3"),
    _token_rule("api-token", r"figd_[A-Za-z0-9_\-]{40}", "figd_"),
    _token_rule("api-token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}", "pscale_"),
    _token_rule("api-token", r"HRKU-[A-Za-z0-9_\-]{30,80}", "hrku-"),
    _token_rule("api-token", r"sbp_[a-f0-9]{40}", "sbp_"),
    _token_rule("api-token", r"xai-[A-Za-z0-9]{60,100}", "xai-", check=_mixed_check),
    _token_rule("api-token", r"gsk_[A-Za-z0-9]{48,56}", "gsk_", check=_mixed_check),
    _token_rule("api-token", r"r8_[A-Za-z0-9]{37}", "r8_", check=_mixed_check),
    _token_rule("api-token", r"pplx-[a-zA-Z0-9]{48}", "pplx-"),
    _token_rule("api-token", r"ntn_[0-9]{11}[A-Za-z0-9]{35}", "ntn_"),
    _token_rule("api-token", r"LTAI[A-Za-z0-9]{12,20}", "ltai", check=_mixed_check),
    _token_rule("api-token", r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}", "sq0atp-", "sq0csp-"),
    _token_rule(
        "api-token", r"(?:FlyV1 )?fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,800}", "fm1_", "fm2_", "fm1a_", "fm1r_", "fm2_"
    ),
    _token_rule("api-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}", (".atlasv1.", 14)),  # type: ignore[arg-type]
    _token_rule("api-token", r"EAA[A-Za-z0-9]{90,400}", "eaa", check=_mixed_check),
    _token_rule("api-token", r"sk_[a-f0-9]{48}", "sk_"),  # ElevenLabs-style
    _token_rule("api-token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", "pat", check=_mixed_check),  # Airtable
    _token_rule("api-token", r"[0-9a-f]{32}-us[0-9]{1,2}", ("-us", 32), check=_mixed_check),  # type: ignore[arg-type]  # Mailchimp
    _token_rule(
        "api-token", r"access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}", "access_token$production$"
    ),  # Braintree
    _token_rule("api-token", r"secret_[A-Za-z0-9]{43}", "secret_", check=_mixed_check),  # Notion (before ntn_)
    _token_rule("api-token", r"sl\.[A-Za-z0-9_\-]{120,1400}", "sl.", check=_mixed_check),  # Dropbox
    _token_rule("api-token", r"APA91b[A-Za-z0-9_\-]{100,300}", "apa91b"),  # Firebase Cloud Messaging server key
)
_RULE_TELEGRAM = _Rule(
    "telegram-bot-token",
    r"(?P<s>[0-9]{8,10}:AA[0-9A-Za-z_\-]{32,34})(?![A-Za-z0-9_\-])",
    ((":aa", 8), (":aa", 9), (":aa", 10)),
    lb=frozenset("0123456789"),
)
_RULE_DISCORD_WEBHOOK = _Rule(
    "discord-webhook",
    r"(?i:discord(?:app)?\.com/api(?:/v[0-9]{1,2})?/webhooks/)(?P<s>[0-9]{17,20}/[A-Za-z0-9_\-]{60,80})",
    ("discord",),
)
_RULE_MAILGUN_NEW = _Rule(
    "mailgun-key",
    r"(?P<s>[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})(?![A-Za-z0-9_\-])",
    lb=_TOKCH,
    pre=r"-[0-9a-f]{8}-[0-9a-f]{8}(?![0-9a-f])",
)
# A Twilio account SID passed next to its auth token: Client("AC...", "<32 hex>"), -u AC...:<hex>
_RULE_TWILIO_PAIR = _Rule(
    "twilio-key",
    r"AC(?<![A-Za-z0-9]AC)[0-9a-f]{32}[\"']?[ \t]*[,:][ \t]*[\"']?(?P<s>[0-9a-f]{32})(?![A-Za-z0-9])",
)

# Twilio's auth token as a literal next to a client call: Client(account_sid, "<32 hex>")
_RULE_TWILIO_CLIENT = _Rule(
    "twilio-key",
    r"(?:Client|TwilioRestClient)\((?P<args>[^()\r\n]{0,160}?)[\"'](?P<s>[0-9a-f]{32})[\"']",
    hints=("twilio",),
)

# --- headers, command-line secrets, credential files --------------------------------------

_HDR_VALUE = r"""(?:(?P<q>["'])[ \t]*(?P<key>[A-Za-z0-9_.\-]{1,64})[ \t]*:[ \t]*(?P<s>[^"'\r\n]{1,2048}?)[ \t]*(?P=q)"""
_HDR_VALUE += r"""|(?P<key2>[A-Za-z0-9_.\-]{1,64}):[ \t]*(?P<s2>[^\s"']{1,2048}))"""


def _header_decide(m: re.Match) -> Decision:
    key = m.group("key") or m.group("key2")
    g = "s" if m.group("s") is not None else "s2"
    value = m.group(g)
    if _normalize_key(key) in ("authorization", "proxy_authorization"):
        return None  # the Authorization rule keeps the scheme word visible
    if _key_strength(key) is None:
        return None
    v = value.strip()
    if len(v) < 4 or _is_placeholder(v) or _is_label_like(v):
        return None
    return "password-assignment", m.start(g), m.start(g) + len(value.rstrip())


# curl/wget/http -H "X-API-Key: ...", --header 'X-Vault-Token: ...', --header=...
_RULE_HEADER_FLAG = _Rule(
    "password-assignment",
    r"-(?<=[\s\"'=]-)(?:H|-header)(?:[ \t]+|=|(?=[\"']))" + _HDR_VALUE,
    decide=_header_decide,
    hints=("-h",),
)

_VALUE_TAIL = r"""(?:'(?P<sq>[^'\r\n]{1,512})'|"(?P<dq>[^"\r\n]{1,512})"|(?P<uv>[^\s'"`;&|<>()]{1,1024}))"""


def _value_check(_m: re.Match, value: str) -> bool:
    v = value.strip()
    return len(v) >= 4 and not _is_placeholder(v) and not _PATH.match(v) and not _is_label_like(v)


def _cmd_rule(command: str, flag: str, *hints: str, kind: str = "password-assignment") -> _Rule:
    """``command ... flag VALUE`` on one command line (no | ; & between them).

    Anchored on the flag, so every flag of one command is found (``-storepass X -keypass Y``);
    the command is looked for earlier on the same command line.
    """
    cmd_pattern = rf"(?<![A-Za-z0-9_\-./])(?:{command})(?![A-Za-z0-9_\-])"  # compiled on first use (re caches it)

    def check(m: re.Match, value: str) -> bool:
        line = _line_before(m.string, m.start())
        segment = re.split(r"[|;&]", line)[-1]
        return re.search(cmd_pattern, segment) is not None and _value_check(m, value)

    return _Rule(kind, rf"[ \t](?:{flag}){_VALUE_TAIL}", groups=("sq", "dq", "uv"), check=check, hints=hints)


def _positional_rule(command: str, *hints: str) -> _Rule:
    """``command args VALUE``: the value is the next word after the command and its arguments."""
    return _Rule(
        "password-assignment",
        rf"(?:{command})[ \t]+{_VALUE_TAIL}",
        groups=("sq", "dq", "uv"),
        check=_value_check,
        lb=_TOKCH | frozenset("/."),
        hints=hints,
    )


_CLI_RULES: tuple[_Rule, ...] = (
    _positional_rule(r"snyk[ \t]+auth", "snyk auth"),
    _positional_rule(r"net[ \t]+use[ \t]+\S+(?:[ \t]+\S+)?[ \t]+/user:\S+", "/user:"),
    _positional_rule(r"ConvertTo-SecureString(?:[ \t]+-String)?", "convertto-securestring"),
    _cmd_rule(r"az[ \t]+login", r"-p[ \t]+|--password[ \t=]+", "az login"),
    _cmd_rule(r"ldap(?:search|modify|add|delete|passwd|whoami|compare|modrdn|exop)", r"-w[ \t]*", "ldap"),
    _cmd_rule(r"doctl", r"-t[ \t]+|--access-token[ \t=]+", "doctl"),
    _cmd_rule(
        r"keytool|jarsigner",
        r"-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|new)(?::plain)?[ \t]+",
        "keytool ",
        "jarsigner ",
    ),
    _cmd_rule(r"openssl", r"-k[ \t]+", "openssl "),
    _cmd_rule(r"sqlcmd|bcp|ipmitool|osql|isql", r"-P[ \t]*", "sqlcmd ", "bcp ", "ipmitool ", "osql ", "isql "),
    _cmd_rule(r"mongo(?:sh|dump|restore|export|import|stat|top|files)?", r"-p[ \t]+", "mongo"),
    _cmd_rule(r"twine|poetry[ \t]+publish|flit[ \t]+publish", r"-p[ \t]+", "twine ", "publish "),
    _cmd_rule(r"ssh-keygen", r"-[NP][ \t]+", "ssh-keygen "),
    _cmd_rule(r"zip|unzip|7z|7za|7zr|rar|unrar", r"-P[ \t]+|-p(?=[^\s-])", "zip ", "7z ", "7za ", "7zr ", "rar "),
    _cmd_rule(r"gh[ \t]+secret[ \t]+set", r"-b[ \t]*|--body[ \t=]+", "secret set"),
    _cmd_rule(r"kubectl[ \t]+create[ \t]+secret", r"--from-literal[ \t=]+[^=\s]+=", "create secret"),
    _cmd_rule(r"docker|podman|nerdctl|buildah|skopeo|helm|oras|regctl|crane", r"--password[ \t=]+|-p[ \t]+", "login "),
    _positional_rule(r"vault[ \t]+login(?:[ \t]+-[A-Za-z\-]+(?:=\S*)?)*(?![ \t]+(?:-|[A-Za-z_]+=))", "vault login"),
    _positional_rule(r"rabbitmqctl[ \t]+(?:add_user|change_password|authenticate_user)[ \t]+\S+", "rabbitmqctl "),
    _positional_rule(r"net[ \t]+user[ \t]+[^\s/]+(?=[ \t]+[^\s/*])", "net user"),
    _positional_rule(r"htpasswd(?:[ \t]+-[A-Za-z]*b[A-Za-z]*)(?:[ \t]+-\S+)*[ \t]+\S+[ \t]+\S+", "htpasswd "),
    _positional_rule(r"mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+", "mc "),
)
# openssl/pkcs12-style password arguments: -passin pass:VALUE, -passout pass:VALUE
_RULE_PASS_ARG = _Rule(
    "password-assignment",
    r"-(?<=[ \t\"']-)(?:passin|passout|pass|password|passphrase|srcpass|deststorepass|storepass)[ \t=]+pass:"
    + _VALUE_TAIL,
    groups=("sq", "dq", "uv"),
    check=_value_check,
    hints=("pass:",),
)
# smbclient -U user%password, rpcclient -U 'DOM\user%password', --user=user%password
_RULE_SMB_USER = _Rule(
    "password-assignment",
    r"-(?<=[ \t]-)(?:U|-user(?:name)?)(?:[ \t]+|=)?[\"']?[^\s%\"'/]{1,128}%(?P<s>[^\s\"']{1,512})",
    check=_not_placeholder,
    hints=("%",),
)
# `echo VALUE |` / `printf '%s' VALUE |`: a value piped into the next command
_ECHO_VALUE_PIPE = (
    r"(?:echo|printf)(?:[ \t]+-[neE]{1,3})*(?:[ \t]+(?:'%s(?:\\n)?'|\"%s(?:\\n)?\"))?[ \t]+" + _VALUE_TAIL + r"[ \t]*\|"
)
# echo VALUE | docker login --password-stdin (printf, here-strings, any login tool)
_RULE_STDIN_SECRET = _Rule(
    "password-assignment",
    _ECHO_VALUE_PIPE
    + r"[^\r\n|;&]{0,300}?(?:--password-stdin|--token-stdin|--with-token|-password-stdin|--secret-stdin|--stdin)",
    groups=("sq", "dq", "uv"),
    check=_value_check,
    lb=_TOKCH,
    hints=("stdin", "with-token"),
)
_STDIN_TOOLS = (
    r"(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|regctl|gh|glab|vault|kubectl|sshpass|chpasswd|passwd"
    r"|gpg|az|aws|gcloud|doctl|heroku|npm|twine|mysql|psql|ldappasswd)(?![A-Za-z0-9_\-])"
)
# echo VALUE | podman login ... with the --password-stdin flag cut away: a password-like value
_RULE_ECHO_LOGIN = _Rule(
    "password-assignment",
    _ECHO_VALUE_PIPE + r"[ \t]*(?:sudo[ \t]+)?(?:[^\r\n|;&]{0,120}?\blogin\b|" + _STDIN_TOOLS + r")",
    groups=("sq", "dq", "uv"),
    # piped into a login or a tool that reads credentials on stdin (even with its flags cut away)
    check=lambda m, v: _value_check(m, v) and _password_like(v),
    lb=_TOKCH,
    hints=("|",),
)
_RULE_HERESTRING_SECRET = _Rule(
    "password-assignment",
    r"(?:--password-stdin|--token-stdin|--with-token|--stdin)[^\r\n|;&]{0,200}?<<<[ \t]*" + _VALUE_TAIL,
    groups=("sq", "dq", "uv"),
    check=_value_check,
    hints=("<<<",),
)
# `set KEY VALUE` of a config tool: aws configure set aws_secret_access_key V, npm config
# set _authToken V, dotnet user-secrets set "Stripe:SecretKey" V, CONFIG SET requirepass V
_RULE_SET_KEY = _Rule(
    "password-assignment",
    r"set[ \t]+(?:--?[A-Za-z][A-Za-z\-]*[ \t]+)*(?P<kq>[\"']?)(?P<key>[A-Za-z0-9_.:/@\-]{1,128})(?P=kq)[ \t]+"
    + _VALUE_TAIL,
    ("set ", "set\t"),
    decide=lambda m: _set_decide(m),
    lb=_TOKCH,
)


def _set_decide(m: re.Match) -> Decision:
    for g in ("dq", "sq", "uv"):
        value = m.group(g)
        if value is not None:
            break
    else:  # pragma: no cover
        return None
    key = m.group("key")
    if key == "requirepass" or key == "masterauth":
        key = "password"
    if g == "uv" and value.isalpha() and value.islower():
        return None  # prose: `set token expiry ...`
    if _key_strength(key.replace(":", "_").replace("/", "_")) is None:
        return None
    if not _value_check(m, value):
        return None
    kind = _classify(key, value) or ("password-assignment" if _key_strength(key) == "strong" else None)
    return None if kind is None else (kind, m.start(g), m.end(g))


# requests/httpx auth=("user", "secret"), HTTPBasicAuth("user", "secret"), BasicAuth(...)
_RULE_AUTH_TUPLE = _Rule(
    "password-assignment",
    r"(?:auth|Auth)[ \t]*[=(][ \t]*\(?[ \t]*(?P<uq>[\"'])[^\"'\r\n]{0,128}(?P=uq)[ \t]*,[ \t]*(?P<q>[\"'])(?P<s>[^\"'\r\n]{4,512})(?P=q)",
    ("auth",),
    check=_value_check,
)
# define('DB_PASSWORD', 'x'), setenv("API_TOKEN", "x"), config.set("secret", "x")
_RULE_KEY_ARG = _Rule(
    "password-assignment",
    rf"{_KW}(?P<krest>[A-Za-z0-9_.\-]{{0,64}}+)(?P<kq>[\"'])[ \t]*,[ \t]*(?P<q>[\"'])(?P<s>[^\"'\r\n]{{1,1024}})(?P=q)",
    _KW_ANCHORS,
    decide=lambda m: _key_arg_decide(m),
    hints=(",",),
)


def _key_arg_decide(m: re.Match) -> Decision:
    text = m.string
    key_start = m.start()
    while key_start > 0 and m.start() - key_start < 64 and text[key_start - 1] in _KEYCH_SET:
        key_start -= 1
    if key_start == 0 or text[key_start - 1] != m.group("kq"):
        return None  # the key must be a quoted string: define('DB_PASSWORD', '...')
    value = m.group("s")
    if value.isalpha() and value.islower():
        return None  # a pair of words in code: ("password", "incorrect")
    kind = _classify(text[key_start : m.end("krest")], value)
    return None if kind is None else (kind, m.start("s"), m.end("s"))


# ~/.pgpass: hostname:port:database:username:password
_RULE_PGPASS = _Rule(
    "password-assignment",
    r"(?<![^\s])[A-Za-z0-9_.\-*]{1,253}:(?:[0-9]{1,5}|\*):[^:\s]{1,128}:[^:\s]{1,128}:(?P<s>(?:[^\s:\\]|\\.){1,512})(?![^\s])",
    check=_value_check,
    pre=r":(?:[0-9]{1,5}|\*):[^:\s]{1,128}:[^:\s]{1,128}:",
)
# PuTTY .ppk: the Private-Lines block and its MAC
_RULE_PPK = _Rule(
    "private-key",
    r"Private-Lines:[ \t]*[0-9]{1,3}(?P<s>(?:(?:\s|\\n)+(?!Private-)[A-Za-z0-9+/]{4,}={0,2})+(?:(?:\s|\\n)+Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]{16,128})?)",
    ("private-lines:",),
)
# ~/.docker/config.json: "auth": "<base64 of user:password>"
_RULE_DOCKER_AUTH = _Rule(
    "password-assignment",
    r"\"auth\"[ \t]*:[ \t]*\"(?P<s>[A-Za-z0-9+/]{8,1024}={0,2})\"",
    ('"auth"',),
    check=_value_check,
)

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


# --- private key bodies without their BEGIN line ------------------------------------------------
_PEM_END = re.compile(r"-----END (?:[A-Z0-9 ]{0,40})PRIVATE KEY(?: BLOCK)?-----")
_B64_TOKEN = re.compile(r"[A-Za-z0-9+/]{4,}={0,2}")
_PEM_HEADER_TOKEN = re.compile(r"(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):")
_PEM_SPLIT = re.compile(r"(?:\s|\\r|\\n)+")
# Lines of a key body whose BEGIN and END lines were cut away: 3+ lines of base64 (PEM
# wraps at 64, OpenSSH at 70, others at 60-76), the first and last possibly cut.
_B64_BLOCK = re.compile(
    r"(?m)^[ \t]*(?P<s>(?:[A-Za-z0-9+/]{8,76}={0,2}(?:\r?\n|\\n))?(?:[ \t]*[A-Za-z0-9+/]{60,76}(?:\r?\n|\\n)){2,}"
    r"(?:[ \t]*[A-Za-z0-9+/]{1,76}={0,2})?)"
    r"|(?P<sq>(?<![A-Za-z0-9+/])(?:[A-Za-z0-9+/]{60,76}[ \t]+){2,}[A-Za-z0-9+/]{1,76}={0,2})"
)
_B64_LINE = re.compile(r"[A-Za-z0-9+/]{60}")
_PUBLIC_PEM = re.compile(
    r"-----(?:BEGIN|END) (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC|X509 CRL|CERTIFICATE REQUEST|NEW CERTIFICATE|TRUSTED"
    r"|PGP SIGNATURE|PGP MESSAGE|SSH SIGNATURE|SIGNED MESSAGE|PKCS7|CMS)"
)


def _headless_pem(text: str, counts: Counter) -> str:
    """Redact key bodies whose BEGIN line is gone (output cut before it) or both ends are."""
    if "-----END " in text:
        text = _headless_with_end(text, counts)
    if len(text) >= 180 and _B64_LINE.search(text):
        text = _b64_blocks(text, counts)
    return text


def _headless_with_end(text: str, counts: Counter) -> str:
    out: list[str] = []
    copied = 0
    for m in _PEM_END.finditer(text):
        start = m.start()
        pos = start
        alnum = 0
        tokens = list(_PEM_SPLIT.finditer(text, max(copied, start - 16384), start))
        # walk back over whitespace-separated tokens that are key material
        cursor = start
        for sep in reversed(tokens):
            tok = text[sep.end() : cursor]
            if tok and not (
                _B64_TOKEN.fullmatch(tok)
                and (len(tok) >= 16 or re.search(r"[0-9+/]", tok))
                or _PEM_HEADER_TOKEN.fullmatch(tok)
                or re.fullmatch(r"[A-Z0-9,\-]{1,40}", tok)
            ):
                break
            alnum += len(tok)
            pos = sep.end() if tok else pos
            cursor = sep.start()
        else:
            tok = text[max(copied, cursor - 128) : cursor]
            tail = re.search(r"[A-Za-z0-9+/=]+$", tok)
            if tail:
                alnum += len(tail.group(0))
                pos = cursor - len(tail.group(0))
        if alnum < 16 or _LABEL_MARK in text[pos:start]:
            continue
        out.append(text[copied:pos])
        out.append(label_for("private-key"))
        copied = m.end()
        counts["private-key"] += 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


def _b64_blocks(text: str, counts: Counter) -> str:
    out: list[str] = []
    copied = 0
    for m in _B64_BLOCK.finditer(text):
        g = "s" if m.group("s") is not None else "sq"
        block = m.group(g)
        start, end = m.start(g), m.end(g)
        if start < copied or not (_DIGIT.search(block) and _LOWER.search(block) and _UPPER.search(block)):
            continue
        before = text[max(0, start - 16384) : start]
        last = before.rfind("-----BEGIN ")
        if last != -1 and _PUBLIC_PEM.match(before, last) and "-----END " not in before[last + 11 :]:
            continue  # inside a certificate or public key
        after = text[end : end + 200].lstrip()
        if _PUBLIC_PEM.match(after):
            continue
        out.append(text[copied:start])
        out.append(label_for("private-key"))
        copied = end
        counts["private-key"] += 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


# --- Kubernetes Secret manifests ------------------------------------------------------------------
_K8S_SECRET = re.compile(r"""kind["']?[ \t]*:[ \t]*["']?Secret\b""")
_K8S_DATA_YAML = re.compile(r"(?m)^(?P<ind>[ \t]*)(?:data|stringData):[ \t]*\r?$")
_K8S_ITEM_YAML = re.compile(
    r"(?P<ind>[ \t]+)(?P<key>[^\s:#][^:\r\n]{0,252}):[ \t]*(?P<s>[^\s#][^\r\n]{0,8192}?)[ \t]*\r?$", re.M
)
_K8S_DATA_FLAT = re.compile(
    r"(?<![\w.\-])(?:data|stringData):[ \t]+(?P<pairs>(?:[\w.\-]{1,253}:[ \t]+[^\s]{1,8192}[ \t]*){1,64})"
)
_K8S_ITEM_FLAT = re.compile(r"(?P<key>[\w.\-]{1,253}):[ \t]+(?P<s>[^\s]{1,8192})")
_K8S_TOP_KEYS = frozenset("apiVersion kind metadata type immutable name namespace labels annotations".split())
_K8S_DATA_JSON = re.compile(r"""["'](?:data|stringData)["'][ \t]*:[ \t]*\{(?P<body>[^{}]{0,65536})\}""")
_K8S_ITEM_JSON = re.compile(r"""["'][^"'\r\n]{1,253}["'][ \t]*:[ \t]*["'](?P<s>[^"'\r\n]{1,8192})["']""")


def _k8s_secrets(text: str, counts: Counter) -> str:
    """Redact every value under ``data:`` / ``stringData:`` of a Kubernetes Secret (YAML or JSON)."""
    if not _K8S_SECRET.search(text):
        return text
    spans: list[tuple[int, int]] = []
    for m in _K8S_DATA_YAML.finditer(text):
        indent = len(m.group("ind"))
        pos = m.end() + 1
        while pos < len(text):
            item = _K8S_ITEM_YAML.match(text, pos)
            if item is None or len(item.group("ind")) <= indent:
                break
            if not _is_placeholder(item.group("s")) and _LABEL_MARK not in item.group("s"):
                spans.append(item.span("s"))
            nl = text.find("\n", item.end())
            if nl == -1:
                break
            pos = nl + 1
    for m in _K8S_DATA_FLAT.finditer(text):  # a manifest squeezed onto one line
        for item in _K8S_ITEM_FLAT.finditer(m.group("pairs")):
            if item.group("key") in _K8S_TOP_KEYS:
                break
            if not _is_placeholder(item.group("s")) and _LABEL_MARK not in item.group("s"):
                spans.append((m.start("pairs") + item.start("s"), m.start("pairs") + item.end("s")))
    for m in _K8S_DATA_JSON.finditer(text):
        base = m.start("body")
        for item in _K8S_ITEM_JSON.finditer(m.group("body")):
            if not _is_placeholder(item.group("s")) and _LABEL_MARK not in item.group("s"):
                spans.append((base + item.start("s"), base + item.end("s")))
    if not spans:
        return text
    out: list[str] = []
    copied = 0
    for s, e in sorted(spans):
        if s < copied:
            continue
        out += [text[copied:s], label_for("k8s-secret")]
        copied = e
        counts["k8s-secret"] += 1
    out.append(text[copied:])
    return "".join(out)


# --- tool formats and commands (a fifth corpus written blind to these rules) ---------------------
# NATS nkey seeds (`nsc`, `nk -gen`): S + the key's kind (user, account, operator, server, cluster,
# curve) + base32, 58 characters
_RULE_NKEY_SEED = _Rule(
    "private-key",
    r"(?<![A-Z2-7])(?P<s>S[UAONCX][A-Z2-7]{56})(?![A-Z2-7])",
    hints=("nkey", "seed", "nats", "nsc"),
)


def _snowflake_b64(part: str) -> bool:
    """Whether `part` is base64 of a Discord id (a snowflake: 17-20 digits), as a bot token begins."""
    import base64
    import binascii

    try:
        raw = base64.b64decode(part + "=" * (-len(part) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return raw.isdigit() and 17 <= len(raw) <= 20


# a Discord bot token: the bot's id (base64 of a snowflake), a timestamp and an HMAC, dot-joined
_RULE_DISCORD_BOT = _Rule(
    "api-token",
    r"(?<![A-Za-z0-9_\-.])(?P<s>[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40})(?![A-Za-z0-9_\-])",
    hints=("discord", "token", "login(", "bot.run", "bot_"),
    check=lambda _m, v: _snowflake_b64(v.split(".", 1)[0]),
)
# Microsoft Teams incoming webhook URLs: `.../IncomingWebhook/<32 hex>/<guid>`, a bearer capability
_RULE_TEAMS_WEBHOOK = _Rule(
    "webhook-secret",
    r"incomingwebhook/(?P<s>[0-9a-fA-F]{32})(?=/)",
    ("incomingwebhook/",),
    flags=re.IGNORECASE,
)
# a Wi-Fi QR code's payload: `WIFI:T:WPA;S:<ssid>;P:<password>;;`
_RULE_WIFI_QR = _Rule(
    "password",
    r"WIFI:(?:[^;\n]{0,80};){0,4}?P:(?P<s>(?:\\.|[^;\\\n]){1,63});",
    ("wifi:",),
    check=_not_placeholder,
)
# a Wi-Fi network's pre-shared key in wpa_supplicant.conf / hostapd.conf / NetworkManager
_RULE_PSK = _Rule(
    "password",
    r"(?<![A-Za-z0-9_])(?:psk|sae_password|wpa_psk)[ \t]*=[ \t]*\"(?P<s>[^\"\n]{8,63})\"",
    ("psk", "sae_password"),
    check=_not_placeholder,
)
# mosquitto's clients take the password as `-P` (elsewhere a port): only after their name
_RULE_MOSQUITTO_P = _Rule(
    "password-assignment",
    r"mosquitto_(?:pub|sub|rr)\b[^\n]{0,400}?[ \t]-P[ \t]+(?P<q>['\"]?)(?P<s>[^\s'\"]{1,128})(?P=q)",
    ("mosquitto_",),
    check=_not_placeholder,
)
# OpenWeather-style `appid=<key>` in a URL's query
_RULE_APPID = _Rule(
    "api-token",
    r"[?&]appid=(?P<s>[A-Za-z0-9_\-]{16,128})",
    (("appid=", 1),),
    check=lambda _m, v: _looks_random(v),
)
# a link that signs its holder in: a token-named query value in a URL with a path segment about
# logging in (whole segments: `presets` is no reset, `deactivate-account` no activation)
_SIGN_IN_SEGMENT = (
    r"(?i:magic(?:[-_]link)?|login|log-in|signin|sign-in|sign_in|passwordless|reset|password-reset|verify|"
    r"confirm|invite|invitation|activate|activation|onboard|auth|sso|callback)"
)
#: A digest as a query value (a cache-busting `?v=<md5>`, a `?sha=<sha1>`): no sign-in token.
_HEX_DIGEST = re.compile(r"[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}")
_SIGN_IN_PARAM = r"(?i:t|tk|token|code|key|sig|signature|otp|auth|login_token|magic|ticket|nonce|secret)"
_RULE_SIGN_IN_LINK = _Rule(
    "bearer-token",
    r"https?://[^\s/?#\"'<>]{1,200}(?:/[^\s/?#\"'<>]{0,100}){0,12}?/"
    + _SIGN_IN_SEGMENT
    + r"(?=[/?])(?:/[^\s/?#\"'<>]{0,100}){0,6}\?(?:[^\s#\"'<>&]{0,200}&){0,8}"
    + _SIGN_IN_PARAM
    + r"=(?P<s>[A-Za-z0-9_\-.~%]{20,512})",
    hints=("://",),
    check=lambda _m, v: _looks_random(v) and not _HEX_DIGEST.fullmatch(v),
)
# a file named as a secret: its base name holds the word whole (`~/.vault_pass.txt`, `api_token`,
# `master.key`), not inside another word (`keyboard`, `monkey.txt`, `tokenizer_mode`)
_SECRET_FILE_NAME = (
    r"(?:[^\s;&|/]*/)*+(?=[^\s;&|/]*?(?<![A-Za-z])(?i:pass(?:word)?|secret|token|key|cred(?:ential)?s?|pwd)"
    r"(?:s?(?![A-Za-z])))[^\s;&|/]++"
)
# a secret written to a file named as one: `echo 'X' > ~/.vault_pass.txt`, `printf %s X > token`
_RULE_ECHO_TO_SECRET_FILE = _Rule(
    "password-assignment",
    r"(?:echo(?:[ \t]+-[neE]+)?|printf(?:[ \t]+'%s(?:\\n)?')?)[ \t]+(?P<q>['\"]?)(?P<s>[^\s'\"$`]{6,256})(?P=q)"
    r"[ \t]*>>?[ \t]*" + _SECRET_FILE_NAME,
    ("echo", "printf"),
    check=_not_placeholder,
)
# what printing a key file shows: `$ cat config/master.key` (a command at a line's start or after a
# prompt) and the value on the next line
_RULE_PRINTED_KEY_FILE = _Rule(
    "generic-high-entropy",
    r"(?m:^)[ \t]*(?:[$>#%][ \t]*)?(?:cat|head|less|more|type|Get-Content)[ \t]+"
    + _SECRET_FILE_NAME
    + r"[ \t]*\r?\n[ \t]*(?P<s>[A-Za-z0-9+/=_\-]{16,512})[ \t]*(?:\r?\n|$)",
    hints=("cat ", "head ", "less ", "more ", "type ", "get-content "),
    check=lambda _m, v: _looks_random(v) or bool(re.fullmatch(r"[0-9a-f]{32,128}", v)),
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


# a password alone on its line, in a block that gives a login just above it (an email, or a
# user / login / account line): a vendor portal's note, a credentials message with no key name
_LOGIN_LINE = re.compile(
    r"^[ \t]*[^@\s]+@[^@\s]+\.[A-Za-z]{2,}[ \t]*$|(?i:\b(?:user(?:name)?|login|e-?mail|usuario|utilisateur|"
    r"benutzer(?:name)?|utente|gebruiker|account|konto|uživatel|kullanıcı|логин|пользователь)\b[ \t]*[:=：])"
)
#: Lines that name a person by email and are no login: a commit's or a mail's headers.
_HEADER_LINE = re.compile(
    r"(?i)^[ \t]*(?:author|commit(?:ter)?|from|to|cc|date|reply-to|signed-off-by|co-authored-by):"
)
LOGIN_LOOKBACK_LINES = 3
LOGIN_LINE_MAX_CHARS = 40  # a password typed or pasted in a note; longer lines are keys and blocks


def _after_login_line(m: re.Match, value: str) -> bool:
    """Whether `value`, alone on its line, is built like a password and one of the few lines above
    it gives a login."""
    if len(value) > LOGIN_LINE_MAX_CHARS or not _built_like_password(value):
        return False
    before = m.string[max(0, m.start() - 4096) : m.start()]
    if before.rfind("-----BEGIN") > before.rfind("-----END"):
        return False  # a line of an armored block (a signature, a key) is no password
    above = before[-600:].splitlines()[-LOGIN_LOOKBACK_LINES:]
    return any(_LOGIN_LINE.search(line) and not _HEADER_LINE.match(line) for line in above)


_RULE_LOGIN_BLOCK_LINE = _Rule(
    "password",
    r"(?m)^[ \t]*(?P<s>[^\s]{6,64})[ \t]*$",
    hints=("@", "user:", "user =", "username", "login", "usuario", "utilisateur", "benutzer", "account:", "konto"),
    check=_after_login_line,
)


# `user:password` beside the login it is for, with no key name: `ssh ops@10.0.0.5  # ops:<pw>`
LOGIN_PAIR_WINDOW_CHARS = 256  # either side of the pair: the command it comments on is near


def _pair_of_the_login(m: re.Match, value: str) -> bool:
    if not _built_like_password(value):
        return False
    text, start, end = m.string, m.start(), m.end()
    lo = max(text.rfind("\n", 0, start) + 1, start - LOGIN_PAIR_WINDOW_CHARS)
    nl = text.find("\n", end, end + LOGIN_PAIR_WINDOW_CHARS)
    hi = nl if nl != -1 else min(len(text), end + LOGIN_PAIR_WINDOW_CHARS)
    return re.search(rf"\b{re.escape(m.group('user'))}@", text[lo:hi]) is not None


_RULE_LOGIN_PAIR = _Rule(
    "password",
    r"(?<![\w@/:.-])(?P<user>[a-z_][a-z0-9_.-]{0,31}):(?P<s>[^\s:@/'\"]{6,64})(?![\w@])",
    hints=("@",),
    check=_pair_of_the_login,
)

_RULES: tuple[_Rule, ...] = (
    # containers first so their content gets the container's kind
    _RULE_GCP_KEY,
    _RULE_GCP_KEY_ID,
    _RULE_PEM,
    # provider formats (specific before general: anthropic before openai)
    _RULE_AWS_ID,
    _RULE_AWS_SECRET,
    _RULE_AWS_PAIR,
    _RULE_ANTHROPIC,
    _RULE_STRIPE,
    _RULE_GITHUB,
    _RULE_GITLAB,
    _RULE_SLACK_WEBHOOK,
    _RULE_SLACK,
    _RULE_GOOGLE,
    _RULE_AZURE,
    _RULE_AZURE_SAS,
    _RULE_NPM,
    _RULE_NPM_AUTH,
    _RULE_PYPI,
    _RULE_TWILIO,
    _RULE_SENDGRID,
    *_TOKEN_RULES,
    _RULE_TELEGRAM,
    _RULE_DISCORD_WEBHOOK,
    _RULE_MAILGUN_NEW,
    _RULE_TWILIO_PAIR,
    _RULE_TWILIO_CLIENT,
    _RULE_OPENAI,
    _RULE_JWT,
    _RULE_PPK,
    # structure-based
    _RULE_URL,
    _RULE_AUTH_HEADER,
    _RULE_AUTH_SCHEME,
    _RULE_BARE_BEARER,
    _RULE_GO_DSN,
    _RULE_WALLET_KEY,
    _RULE_SEED_PHRASE,
    _RULE_APP_PASSWORD,
    _RULE_CLIENT_KEY,
    _RULE_ESCAPED_JSON,
    _RULE_CALL_CREDENTIALS,
    _RULE_ENCODED_PAIR,
    _RULE_SUBSCRIPT,
    _RULE_BUNDLER,
    _RULE_APP_PASSWORD_VALUE,
    _RULE_ORACLE_CONNECT,
    _RULE_SQL_IDENTIFIED,
    _RULE_URL_SIGNATURE,
    _RULE_RPC_URL_KEY,
    _RULE_DEVICE_PASSWORD,
    _RULE_SESSION_COOKIE,
    _RULE_BITLOCKER,
    _RULE_RECOVERY_CODES,
    _RULE_NKEY_SEED,
    _RULE_DISCORD_BOT,
    _RULE_TEAMS_WEBHOOK,
    _RULE_WIFI_QR,
    _RULE_PSK,
    _RULE_MOSQUITTO_P,
    _RULE_APPID,
    _RULE_SIGN_IN_LINK,
    _RULE_ECHO_TO_SECRET_FILE,
    _RULE_PRINTED_KEY_FILE,
    _RULE_WALLET_WORDS,
    _RULE_LOGIN_PAIR,
    _RULE_MYSQL,
    _RULE_SSHPASS,
    _RULE_REDIS,
    _RULE_LOGIN_P,
    _RULE_CURL_USER,
    _RULE_NETRC,
    _RULE_HEADER_FLAG,
    *_CLI_RULES,
    _RULE_PASS_ARG,
    _RULE_SMB_USER,
    _RULE_STDIN_SECRET,
    _RULE_ECHO_LOGIN,
    _RULE_HERESTRING_SECRET,
    _RULE_SET_KEY,
    _RULE_AUTH_TUPLE,
    _RULE_DOCKER_AUTH,
    _RULE_PGPASS,
    _RULE_KEY_ARG,
    _RULE_XML,
    _RULE_XML_ATTR,
    _RULE_FLAG,
    _RULE_LOGIN_BLOCK_LINE,
    # generic last: password-assignment / generic-high-entropy
    _RULE_ASSIGN,
)

_LABEL_RE = re.compile(r"\[REDACTED:[a-z0-9\-]*\]?")


def _overlaps(spans: list, start: int, end: int) -> bool:
    i = bisect_right(spans, (start, float("inf"))) - 1
    if i >= 0 and spans[i][1] > start:
        return True
    return i + 1 < len(spans) and spans[i + 1][0] < end


def _anchor_positions(low: bytes, anchors: tuple) -> list[int]:
    found: list[int] = []
    find = low.find
    for a, offset in anchors:
        i = find(a)
        while i != -1:
            if i >= offset:
                found.append(i - offset)
            i = find(a, i + 1)
    if len(anchors) > 1:
        found = sorted(set(found))
    return found


def _apply(rule: _Rule, text: str, low: bytes, counts: Counter, spans: Optional[list] = None) -> str:
    n = len(text)
    pieces: list[str] = []
    copied = 0  # end of the text already copied to `pieces`
    resume = 0  # no match may start before this (end of the last redaction)
    labels: Optional[list] = None
    if rule.pre is not None and rule.pre.search(text) is None:
        return text
    if rule.anchors is None:
        positions = None
        search = rule.regex.search
    else:
        positions = _anchor_positions(low, rule.anchors)
        if not positions:
            return text
        match = rule.regex.match
    idx = -1
    while True:
        if positions is None:
            m = search(text, resume)
            if m is None:
                break
            resume = m.start() + 1  # a rejected candidate must not hide a later one
        else:
            idx += 1
            if idx >= len(positions):
                break
            p = positions[idx]
            if p < resume or (rule.lb and p and text[p - 1] in rule.lb):
                continue
            endpos = positions[idx + 1] if rule.bounded and idx + 1 < len(positions) else n
            m = match(text, p, endpos)
            if m is None:
                continue
        decision = rule.span(m)
        if decision is None:
            if rule.skip_long_rejects and m.end() - m.start() > 256:
                # a long rejected value (a blob, minified code) is not re-scanned
                # from every anchor inside it: that would be quadratic
                resume = m.end()
            continue
        kind, start, end = decision
        if _is_doc_example(text[start:end]):
            continue
        if labels is None:
            # spans of labels written by earlier rules: nothing may be redacted in them
            labels = [x.span() for x in _LABEL_RE.finditer(text)] if _LABEL_MARK in text else []
        if start < copied or (labels and _overlaps(labels, start, end)):
            continue
        pieces.append(text[copied:start])
        pieces.append(label_for(kind))
        if spans is not None:
            spans.append((start, end, kind))
        copied = end
        resume = max(m.end(), end)
        counts[kind] += 1
    if not pieces:
        return text
    pieces.append(text[copied:])
    return "".join(pieces)


def _ascii_lower(text: str) -> bytes:
    # same length as `text` (one byte per code point), ASCII letters lowered
    return text.encode("ascii", "replace").lower()


#: Alternatives at most in a rule's derived leading literals (`_leading_literals`); past it the
#: prefix found so far stands.
LEADING_LITERALS_MAX = 64


def _leading_literals(pattern: str, flags: int) -> frozenset[bytes]:
    """ASCII literals, lowered, one of which begins every match of `pattern` (empty: none known).

    For the rules run with ``Pattern.search`` (no anchors): a rule whose every leading literal
    is absent from the text cannot match, so `_run_rules` skips it without a search. Derived
    from the parsed pattern, not declared, so it cannot drift from the rule. Only a
    case-sensitive prefix counts: a case-insensitive regex can match a non-ASCII character
    (``K`` the Kelvin sign) where the lowered text holds ``?``."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(pattern, flags)
    except re.error:
        return frozenset()
    if parsed.state.flags & re.IGNORECASE:
        return frozenset()
    prefixes, _whole = _sequence_prefixes(list(parsed), c)
    if "" in prefixes:
        return frozenset()
    return frozenset(p.lower().encode("ascii") for p in prefixes)


def _sequence_prefixes(items: list, c: Any) -> tuple[set[str], bool]:
    """(prefixes, whole) of a parsed sequence: one of `prefixes` begins every match, and when
    `whole` every match is exactly one of them (so what follows extends them)."""
    out = {""}
    for op, av in items:
        if op is c.LITERAL and av < 128:
            out = {p + chr(av) for p in out}
            continue
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):  # zero width: \b, look-ahead, look-behind
            continue
        if op is c.SUBPATTERN and not av[1] & re.IGNORECASE:
            inner, whole = _sequence_prefixes(list(av[3]), c)
        elif op is c.BRANCH:
            alternatives = [_sequence_prefixes(list(a), c) for a in av[1]]
            inner = set().union(*(a[0] for a in alternatives))
            whole = all(a[1] for a in alternatives)
        else:  # a class, a repeat, any character, a case-insensitive group: the prefix ends here
            return out, False
        if len(out) * len(inner) > LEADING_LITERALS_MAX:
            return out, False
        out = {p + q for p in out for q in inner}
        if not whole:
            return out, False
    return out, True


class _Lookup:
    """What `_run_rules` needs to skip rules: every literal some rule needs, found in one pass
    over the text, and per rule the sets of literals of which it needs one each (its hints, its
    anchors, its derived leading literals).

    Built on first use, not at import: a hook process that stores nothing never pays for it.
    The leading literals (`derive`) cost ~6 ms to derive and save ~1 µs a rule a text, so they
    are derived once a process has run LEADING_LITERALS_AFTER_PASSES passes (`_lookup`).
    """

    __slots__ = ("derived", "literals", "needs", "hints", "reach", "always", "by_literal", "automaton", "_fallback")

    def __init__(self, derive: bool = True) -> None:
        self.derived = derive
        needs: list[tuple[frozenset[bytes], ...]] = []
        every: set[bytes] = set()
        for rule in _RULES:
            candidates: tuple[frozenset[bytes], ...] = (
                frozenset(rule.hints),
                frozenset(a for a, _off in rule.anchors or ()),
                _leading_literals(rule._pattern, rule._flags) if derive and rule.anchors is None else frozenset(),
            )
            sets = tuple(x for x in candidates if x)
            needs.append(sets)
            for x in sets:
                every |= x
        self.literals = frozenset(every)
        self.needs = tuple(needs)
        # declared hints are part of what a rule means, so they are checked on the text itself
        # once `present` is only known to hold every literal (after a redaction)
        self.hints = tuple(frozenset(rule.hints) for rule in _RULES)
        # a literal overlapping a label written at [a, b) lies within [a - reach, b + reach)
        self.reach = max((len(x) for x in every), default=1) - 1
        # a rule is a candidate when a literal of its first set is present (or it has none)
        self.always = frozenset(i for i, sets in enumerate(needs) if not sets)
        by_literal: dict[bytes, list[int]] = {}
        for i, sets in enumerate(needs):
            for literal in sets[0] if sets else ():
                by_literal.setdefault(literal, []).append(i)
        self.by_literal = {literal: tuple(rules) for literal, rules in by_literal.items()}
        self.automaton = self._automaton()
        self._fallback: Optional[tuple[re.Pattern, dict[bytes, frozenset[bytes]]]] = None

    def _automaton(self) -> Any:
        """An Aho-Corasick automaton of the literals (one pass finds every literal at every
        position, overlapping ones included), or None without pyahocorasick.

        Measured on one-line memories: 2 us a text against 23 us for the regex fallback; on a
        20 KB tool output 0.36 ms against 5.3 ms."""
        try:
            import ahocorasick
        except ImportError:  # pragma: no cover - installed with engram; the regex finds the same set
            return None
        automaton = ahocorasick.Automaton()
        for literal in self.literals:
            automaton.add_word(literal.decode("latin-1"), literal)
        automaton.make_automaton()
        return automaton

    def present(self, low: bytes) -> set[bytes]:
        """The literals that occur in `low` (ASCII, from `_ascii_lower`)."""
        if self.automaton is not None:
            return {literal for _end, literal in self.automaton.iter(low.decode("latin-1"))}
        pattern, implied = self._fallback_pattern()
        found: set[bytes] = set()
        for m in pattern.finditer(low):
            found |= implied[m.group(1)]
        return found

    def present_near(self, low: bytes, regions: list[tuple[int, int]]) -> set[bytes]:
        """The literals occurring within `reach` of the regions of `low` (labels just written):
        with the literals present before, a superset of those present now, for the cost of
        the labels' surroundings instead of the whole text."""
        found: set[bytes] = set()
        for a, b in regions:
            found |= self.present(low[max(0, a - self.reach) : b + self.reach])
        return found

    def candidates(self, present: set[bytes], after: int = -1) -> list[int]:
        """Indexes of the rules after `after` whose first set of literals meets `present`, in
        rule order (the order of `_RULES` is the order of precedence)."""
        found = set(self.always)
        for literal in present:
            found.update(self.by_literal.get(literal, ()))
        return sorted(i for i in found if i > after)

    def _fallback_pattern(self) -> tuple[re.Pattern, dict[bytes, frozenset[bytes]]]:
        """Without pyahocorasick: one pattern finding every literal at every position (a
        look-ahead) and the literals each one implies. At one position the look-ahead reports
        the longest literal matching there; every other literal matching there is a prefix of
        it (`implied`)."""
        if self._fallback is None:
            ordered = sorted(self.literals, key=lambda n: (-len(n), n))
            pattern = re.compile(b"(?=(" + b"|".join(re.escape(n) for n in ordered) + b"))")
            implied = {n: frozenset(m for m in self.literals if n.startswith(m)) for n in self.literals}
            self._fallback = (pattern, implied)
        return self._fallback


#: Passes of the rules (`_run_rules`, one or more a text) a process runs before the rules'
#: leading literals are derived (`_Lookup`): a hook process redacts a handful of texts and
#: would not earn the ~6 ms back; the daemon and an import do.
LEADING_LITERALS_AFTER_PASSES = 64
_LOOKUP: Optional[_Lookup] = None
_PASSES_SEEN = 0


def _lookup() -> _Lookup:
    """The process's lookup; both kinds skip exactly the rules that cannot match, so which one
    a text meets changes nothing but the time."""
    global _LOOKUP, _PASSES_SEEN
    _PASSES_SEEN += 1
    if _LOOKUP is None or (not _LOOKUP.derived and _PASSES_SEEN > LEADING_LITERALS_AFTER_PASSES):
        _LOOKUP = _Lookup(derive=_PASSES_SEEN > LEADING_LITERALS_AFTER_PASSES)
    return _LOOKUP


def _run_rules(text: str, counts: Counter, on_redact: Optional[Callable[[list], None]] = None) -> str:
    """Every rule on `text`, in order; a rule lacking every literal of one of its sets is
    skipped: it could not match (`_apply` would find no anchor position, the hint test would
    fail, or its leading literal is nowhere). Only the candidates of the literals present are
    visited, not all ~100 rules; a redaction changes the text, so the candidates after the
    rule that changed it are found again. `on_redact` gets the spans each redacting rule
    replaced, in the text as that rule saw it (`_view_spans` maps them back)."""
    lookup = _lookup()
    low = _ascii_lower(text)
    present = lookup.present(low)  # exactly the literals in `low`; after a redaction a superset
    exact = True
    order = lookup.candidates(present)
    pos = 0
    while pos < len(order):
        i = order[pos]
        pos += 1
        for need in lookup.needs[i][1:]:
            if need.isdisjoint(present):
                break
        else:
            hints = lookup.hints[i]
            if not exact and hints and not any(h in low for h in hints):
                continue
            spans: list[tuple[int, int, str]] = []
            new = _apply(_RULES[i], text, low, counts, spans)
            if new is not text:
                if on_redact is not None:
                    on_redact(spans)
                text = new
                low = _ascii_lower(text)
                present |= lookup.present_near(low, _label_regions(spans))
                exact = False
                order, pos = lookup.candidates(present, i), 0
    return text


def _label_regions(spans: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Where the labels replacing `spans` (in order, as `_apply` reports them) lie in the new text."""
    regions, shift = [], 0
    for start, end, kind in spans:
        length = len(label_for(kind))
        regions.append((start + shift, start + shift + length))
        shift += length - (end - start)
    return regions


#: Passes of the rules at most (`_redact_counts`); one more than any input has needed.
REDACT_PASSES_MAX = 4


def _redact_counts(text: str, counts: Counter) -> str:
    """Every rule, again while a pass still changes the text: a label written for one secret
    changes the context another rule reads (in `-----END PRIVATE KEY-----mysql -p01` the
    MySQL rule, which wants no token character such as `-` right before `mysql`, sees the
    password only once the key is a label), so one pass can leave a secret the next finds."""
    for _ in range(REDACT_PASSES_MAX):
        redacted = _redact_pass(text, counts)
        if redacted == text:
            break
        text = redacted
    return text


_TABLE_HEADER = re.compile(r"(?m)^[ \t]*\|(?P<cells>[^\n]*\|)[ \t]*\r?\n[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$")
_TABLE_SECRET_COLUMN = re.compile(
    r"(?i)^(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|api[ _-]?key|pin|credentials?)$"
)


def _table_secrets(text: str) -> list[tuple[int, int, str]]:
    """The cells under a markdown table's column named like a secret (`| user | password |`)."""
    if "|" not in text or "---" not in text:
        return []
    out = []
    for m in _TABLE_HEADER.finditer(text):
        names = [c.strip() for c in m.group("cells").split("|")[:-1]]
        columns = [i for i, name in enumerate(names) if _TABLE_SECRET_COLUMN.match(name)]
        if not columns:
            continue
        pos = m.end() + 1
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end == -1 else end
            line = text[pos:end]
            if not line.lstrip().startswith("|"):
                break
            cells, start = [], pos + line.index("|") + 1
            for part in line[line.index("|") + 1 :].split("|")[: len(names)]:
                cells.append((start, start + len(part)))
                start += len(part) + 1
            for i in columns:
                if i < len(cells):
                    s, e = cells[i]
                    value = text[s:e].strip()
                    if value and " " not in value and not _is_placeholder(value) and _LABEL_MARK not in value:
                        s += text[s:e].index(value)
                        out.append((s, s + len(value), "password"))
            pos = end + 1
    return out


_SQL_INSERT = re.compile(
    r"(?is)insert\s+into\s+[\w.\"`\[\]]{1,128}\s*\((?P<cols>[^()]{1,1000})\)\s*values\s*\((?P<vals>[^;]{1,4000}?)\)\s*(?:[,;]|$)"
)
_SQL_VALUE = re.compile(r"\s*(?:'(?P<sq>(?:[^']|'')*)'|\"(?P<dq>[^\"]*)\"|(?P<other>[^,']*?))\s*(?:,|$)")


def _sql_inserts(text: str) -> list[tuple[int, int, str]]:
    """The values of an `INSERT INTO t (…, api_key, …) VALUES (…, '…', …)` under a column named
    like a secret, judged as that column's assignment would be."""
    if "insert" not in text.lower():
        return []
    out = []
    for m in _SQL_INSERT.finditer(text):
        columns = [c.strip(' \t\r\n"`[]') for c in m.group("cols").split(",")]
        pos, end = m.start("vals"), m.end("vals")
        for column in columns:
            v = _SQL_VALUE.match(text, pos, end)
            if v is None or v.end() == pos:
                break
            group = "sq" if v.group("sq") is not None else "dq" if v.group("dq") is not None else None
            if group is not None and _classify(column, v.group(group)) is not None:
                out.append((v.start(group), v.end(group), "password-assignment"))
            pos = v.end()
    return out


def _redact_pass(text: str, counts: Counter) -> str:
    if not text:
        return text
    foreign = textview.needs_view(text)
    if foreign:
        # first, so that a value split in two literals is found whole, not as its first half
        text = _redact_view(text, counts)
    text = _run_rules(text, counts)
    if "Secret" in text:
        text = _k8s_secrets(text, counts)
    text = _headless_pem(text, counts)
    text = _replace_regions(
        text, _login_pairs(text, outbound=False) + _table_secrets(text) + _sql_inserts(text), counts
    )
    return _prose_pass(text, counts, outbound=False, foreign=foreign)


def _view_spans(view: str, counts: Counter) -> list[tuple[int, int, str]]:
    """Run the rules on a normalised view; the redacted spans, in view coordinates.

    ``placed`` holds ``(cur_start, cur_end, view_start, view_end, kind)`` for each label
    written so far, so a span found in the partly redacted text maps back to the view.
    """
    placed: list[tuple[int, int, int, int, str]] = []

    def place(found: list[tuple[int, int, str]]) -> None:
        nonlocal placed
        entries = [(cs, ce, vs, ve, kind, False) for cs, ce, vs, ve, kind in placed]
        for s, e, kind in found:
            entries.append((s, e, _to_view(s, placed), _to_view(e, placed), kind, True))
        entries.sort()
        shift = 0
        placed = []
        for cs, ce, vs, ve, kind, fresh in entries:
            length = len(label_for(kind)) if fresh else ce - cs
            placed.append((cs + shift, cs + shift + length, vs, ve, kind))
            if fresh:
                shift += length - (ce - cs)

    _run_rules(view, counts, place)
    return [(vs, ve, kind) for _cs, _ce, vs, ve, kind in placed]


def _to_view(pos: int, placed: list[tuple[int, int, int, int, str]]) -> int:
    shift = 0
    for cs, ce, vs, ve, _kind in placed:
        if ce <= pos:
            shift += (ve - vs) - (ce - cs)
    return pos + shift


def _redact_view(text: str, counts: Counter) -> str:
    """Secrets hidden by look-alikes, format characters, foreign key names or split literals.

    The rules run again on :func:`textview.build_view`'s normalised text; each finding is
    mapped back to the original characters it came from, which are replaced.
    """
    found = textview.edits(text)
    if not found:
        return text
    regions: list[tuple[int, int, str]] = []
    for lo, hi in textview.windows(text, found):
        local = [(s - lo, e - lo, rep) for s, e, rep in found if s >= lo and e <= hi]
        view = textview.view_from_edits(text[lo:hi], local)
        if view is None:
            continue
        for vs, ve, kind in _view_spans(view.text, counts):
            s, e = view.span(vs, ve)
            regions.append((s + lo, e + lo, kind))
    if not regions:
        return text
    regions.sort()
    out: list[str] = []
    copied = 0
    for s, e, kind in regions:
        if s < copied:  # two findings on the same original characters: one label
            counts[kind] -= 1
            continue
        out += [text[copied:s], label_for(kind)]
        copied = e
    out.append(text[copied:])
    return "".join(out)


# ---------------------------------------------------------------------------
# secrets in prose: "the staging admin password is X until Friday", in any language
# ---------------------------------------------------------------------------
# Found on the normalised view (`textview` maps `Passwort`, `mot de passe`, `пароль`, `パスワード`,
# `密码`, `비밀번호` ... to `password`), so one English list of key names serves every language;
# what links the name to its value (a copula, a colon, a dash, a particle) is spelled per language.
# The local pass (every write) redacts a value built like a secret; the outbound pass (what leaves
# the machine: team files, the sync folder, exports) also redacts weaker values and any random
# token near a key name.

# Key names are found from their head word (one simple regex on the ASCII-lowered view: a
# regex of every spelling with a look-behind costs ~25 us a memory, this ~3), then read whole.
_PROSE_HEAD = re.compile(r"pass|pw|pin|secret|token|cred|key")
_PROSE_NAME = re.compile(
    r"(?:(?P<pw>pass(?:words?|phrases?|codes?|wd)|pwd?|pin[ _-]?(?:code|number)s?)"  # pw: "the admin pw: X"
    r"|(?P<sec>secrets?(?:[ _-]?(?:access[ _-]?)?keys?)?|tokens?|credentials?|creds)"
    r"|(?P<key>keys?))(?![a-z0-9_\-])"
)
# the word before `key` that makes it a secret's name: `api key`, `apikey`, `signing-key`
_KEY_QUALIFIER = re.compile(r"(?:api|access|private|secret|signing|master|encryption|license|deploy|client|app)[ _-]?$")
_PUBLIC_QUALIFIER = re.compile(r"(?<![a-z])(?:public|pub|publishable|host)[ _-]?$")
# the word before `key` that makes it a password: `the wifi key is ...`, `WPA2 key`, `network key`
_PASSWORD_QUALIFIER = re.compile(r"(?<![a-z])(?:wi-?fi|wlan|wpa2?|wpa3|psk|network|router|hotspot)[ _-]?$")
# cheap test before anything else, for a text without foreign key names (`textview.needs_view`)
_PROSE_HINTS = ("pass", "pw", "pin", "secret", "token", "cred", "key")


def _prose_names(low: str) -> Iterable[tuple[int, int, str]]:
    """``(start, end, group)`` of each key name in `low` (ASCII-lowered): pw, sec or key."""
    consumed = 0
    for h in _PROSE_HEAD.finditer(low):
        start = h.start()
        if start < consumed:
            continue
        m = _PROSE_NAME.match(low, start)
        if m is None:
            continue
        group = m.lastgroup or "key"
        qualifier = _KEY_QUALIFIER.search(low, max(0, start - 12), start)
        head = qualifier.start() if qualifier is not None else start
        if head and low[head - 1].isalnum() and low[head - 1] != "1":
            continue  # inside a word: `bypass`, `monkey`, `turnkey`, `X25519PrivateKey`
        if head and low[head - 1] == "1" and (head < 2 or not low[head - 2].isalnum()):
            continue  # 1Password, the product: "shared it in 1Password (vault: Search)"
        if group == "key" and _PUBLIC_QUALIFIER.search(low, max(0, start - 12), start):
            continue  # `public key: 6E3Oy…`, `pubkey`: published, not a secret
        if group == "key" and qualifier is None:
            password_qualifier = _PASSWORD_QUALIFIER.search(low, max(0, start - 12), start)
            if password_qualifier is not None:
                consumed = m.end()
                yield password_qualifier.start(), m.end(), "pwq"
                continue
        if qualifier is not None and group == "key":
            group = "sec"
        elif qualifier is None and start and low[start - 1].isalpha():
            continue
        consumed = m.end()
        yield head, m.end(), group


# Words linking a key name to its value: en, de, fr, es, it, pt, nl, pl, ru, cs, sv, ar, he, vi,
# id (whole words; none that also starts a clause of another language, like "je" or "la": the
# first link found is the one judged), then marks and the ja, zh, ko particles, which need no
# blank around them.
_PROSE_LINK_WORDS = (
    "is|was|are|were|will be|has been|have been|becomes|became|remains|set to|changed to|reset to|"
    "rotated to|updated to|now|currently|still|temporarily|"
    "ist|lautet|war|wird|heißt|bleibt|jetzt|nun|"
    "est|était|sera|reste|maintenant|désormais|"
    "es|era|será|sigue siendo|ahora|"
    "è|e'|sarà|resta|ora|adesso|"
    "é|continua|agora|"
    "wordt|luidt|blijft|nu|"
    "to|jest|brzmi|był|było|teraz|"
    "это|будет|был|было|теперь|сейчас|"
    "bylo|zní|"
    "är|blir|er|"
    "هي|هو|هى|"
    "היא|הוא|"
    "là|adalah|ialah|"
    "on|ovat|είναι|ni|ay|este|হলো|হল|je|је|е"
)
_PROSE_LINK = (
    rf"(?:[ \t]+(?:{_PROSE_LINK_WORDS})(?=[ \t:：]|$)"
    r"|[ \t]*(?:[:：→]|->|=>)|[ \t]+=(?!=)"
    r"|[ \t]+[-–—]+(?=[ \t])"
    r"|[ \t]*(?:は|が|も|是|为|為|는|은|이|가))"
)
_PROSE_VALUE = (
    r"[ \t]*(?:(?P<q>[\"'“‘«„「『‹`])(?P<qv>[^\"'”’»“‘「」『』‹›`\r\n]{1,128})[\"'”’»」』›`]"
    r"|(?P<v>(?:[A-Za-z0-9!#$%&*+\-./:;=?@^_|~\\\u0900-\u0dff\u0e00-\u0e7f]"
    r"|(?![\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef])[^\W_]){1,200}))"
)
# the key name, a few words about whose it is ("for the staging admin"), a link, the value
_PROSE_LINKED = re.compile(
    # whole words (possessive), up to eight ("la contraseña de la base de datos de producción es X"):
    # a link is tried after each word, not at each character
    # (a parenthesis first: "the password (staging admin) is X", "密码（到周五）是 X")
    r"(?P<fill>(?:['’]s)?(?:[ \t]*[（(][^()（）\r\n]{0,40}[)）])?"
    r"(?:[ \t]++(?:[^\s=:：.!?;。！？,]|\.(?=[^\s.])){1,40}+){0,8}?)"
    + rf"(?:{_PROSE_LINK}){{1,3}}"
    # ja, zh, ko put a few words between the link and the value: "パスワードは金曜日まで X です"
    + r"(?:[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{1,20}+[ \t:：]*)?"
    + _PROSE_VALUE
)
# the value right after the key name: "secret key 9xK2...", "login with password Xk9#pL2mQv"
_PROSE_DIRECT = re.compile(r"[ \t]+" + _PROSE_VALUE)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_VERSION = re.compile(r"v?[0-9]+(?:[._-][0-9A-Za-z]+)+")
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


# A word of prose a value slot often holds: "the password is required", "the token was rotated".
_PROSE_WORDS = frozenset(
    """
    a an the this that it its in on at of for to from by with via not no yes also only just same
    different new old another other one two both empty blank missing unset wrong invalid valid correct
    incorrect required optional needed necessary mandatory secure insecure safe unsafe weak strong long
    short too very still being kept stored saved shared hidden secret private public known unknown
    available unavailable expired rotated revoked changed reset set sent encrypted hashed managed
    generated random unique static dynamic temporary permanent correct stale fresh ok okay fine
    different present absent sufficient insufficient identical similar separate personal individual
    probably possibly usually always never often only simply actually really likely unlikely exactly
    already mostly rarely normally typically generally
    here there where what which who how when why please see check ask use used
    falsch richtig ungültig abgelaufen erforderlich geändert gespeichert geheim leer neu alt
    faux incorrect invalide requis obligatoire expiré changé vide nouveau
    incorrecta incorrecto inválida inválido obligatoria requerida caducada vacía nueva
    errata sbagliata obbligatoria scaduta cambiata vuota nuova
    incorreta errada obrigatória expirada alterada vazia nova
    onjuist verkeerd verplicht verlopen gewijzigd leeg nieuw
    nieprawidłowe błędne wymagane wygasło zmienione puste nowe
    greșit greșită gresit gresita incorect incorectă yanlış hatalı yanlis hatali sai salah mali
    istekla isteklo istekao istekla
    verkeerd fout forkert feil fel väärin virheellinen rossz hibás špatně chybné špatné
    """.split()
)
# endings of participles and abstract nouns (`expired`, `missing`, `encryption`); not `-ly`, which
# ends as many passwords (`dragonfly`) as adverbs
_WORDY_SUFFIX = re.compile(r"(?:ed|ing|ion|ions|able|ible|ous|ness|ment|é|ée|és|ées|ado|ada|ido|ida)$")


def _ordinary_word(value: str) -> bool:
    """A letters-only value that reads as a word of the sentence, not as a password
    (`case-sensitive`: every part of it one)."""
    low = value.lower()
    if low in _PROSE_WORDS or _WORDY_SUFFIX.search(low):
        return True
    parts = [p for p in re.split(r"[-_]", low) if p]
    return len(parts) > 1 and all(p in _PROSE_WORDS or p in _PROSE_VALUE_WORDS for p in parts)


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


#: Letters-only words that stand where a password's value would ("the password is plaintext"),
#: beyond `_PROSE_WORDS` and the participles: the local pass takes a letters-only value only
#: when it is none of these.
_PROSE_VALUE_WORDS = frozenset(
    """
    plaintext cleartext therefore whatever whichever wherever whenever however whoever nowhere
    somewhere anywhere everywhere elsewhere
    irrelevant meaningless worthless pointless useless harmless obvious trivial guessable visible
    readable writable printable reusable shareable hardcoded hardwired embedded nothing something
    anything everything nobody somebody anybody everybody whoever sensitive insensitive case
    lowercase uppercase alphanumeric numeric correct incorrect protected unprotected confidential
    """.split()
)
#: A letters-only value the local pass takes after a password's name and a link, at least this long.
LETTERS_PASSWORD_MIN_CHARS = 8
#: Words of a quoted passphrase ("velvet otter staircase lantern") the local pass takes, at least.
QUOTED_PASSPHRASE_MIN_WORDS = 3


#: What follows a letters-only password: the clause ends, or a word that starts another
#: ("pw is tacotuesday — same as last time", "the password is bluemoon until Friday"); a word
#: that goes on with the sentence ("is wherever my secrets live") makes the value a word of it.
_CLAUSE_END = re.compile(
    r"[ \t]*(?:$|[\r\n.,;:!?)(\]\[\"'`—–]|-(?:[ \t]|$)|(?:until|till|for|since|and|but|so|which|now|today|tomorrow|on)\b)",
    re.IGNORECASE,
)


def _letters_password(value: str, *, quoted: bool, closed: bool) -> bool:
    """A letters-only value in a password's place that is no word of the sentence: one long word
    that ends its clause (`closed`: `tacotuesday`, `purplemonkeydishwasher`), or a quoted one or
    a quoted passphrase of several words."""
    if not (quoted or closed):
        return False
    words = value.split()
    if len(words) > 1:
        return quoted and len(words) >= QUOTED_PASSPHRASE_MIN_WORDS and not any(_ordinary_word(w) for w in words)
    low = value.lower()
    if len(value) < (6 if quoted else LETTERS_PASSWORD_MIN_CHARS) or low in _PROSE_VALUE_WORDS:
        return False
    joined = [p for p in re.split(r"[-_.]", low) if p]
    if quoted and len(joined) >= QUOTED_PASSPHRASE_MIN_WORDS:  # "river-thimble-walrus-orbit-saffron"
        return not all(p in _PROSE_WORDS or p in _PROSE_VALUE_WORDS for p in joined)
    return not _ordinary_word(value) and not _named_parts(value)


#: `SHA256:RzVVeY1Jbu…`, `MD5:3f:9a:…`: a key's fingerprint, which is published to be compared.
_FINGERPRINT = re.compile(r"(?i)(?:sha(?:1|256|384|512)|md5):")


#: A YAML tag where a value would be (`!vault`, `!Ref`): the value follows, encrypted or looked up.
_YAML_TAG = re.compile(r"![A-Za-z][A-Za-z0-9_]*")
#: Settings in a value's place (`validate:"required,min=12"`, a Go struct tag): no secret.
_SETTINGS = re.compile(r"(?:^|,)[A-Za-z_][A-Za-z0-9_]*=[^,]*,|,[A-Za-z_][A-Za-z0-9_]*=")
#: A count stated as a setting (`prompt_tokens=1284`), named like a secret's key but no value of one.
_COUNTER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[0-9][0-9.,]*")
#: A PIN's digits: "the door PIN ... is 5093" (a bare number is taken after a PIN's name only).
PIN_DIGITS_MIN = 4
PIN_DIGITS_MAX = 12
#: `PIN` in capitals (a personal identification number); `pin` alone is also a verb ("pin the
#: version") and a hardware pin, so only `PIN`, `PIN code`, `pin code` and `pin number` name one.
_PIN_NAME = re.compile(
    r"(?<![A-Za-z0-9_+/=])(?:PINs?|(?i:alarm|door|gate|atm|card|sim|bank|debit|phone|safe|lock)[ _-]?(?i:pin))"
    r"(?![A-Za-z0-9_+/=])"
)


def _prose_value_kind(
    group: str,
    value: str,
    *,
    linked: bool,
    outbound: bool,
    quoted: bool = False,
    closed: bool = False,
    translated: bool = False,
) -> Optional[str]:
    """The kind of secret `value` is after a key name of `group` (pw, sec, key) in prose, or None."""
    v = value
    if len(v) < 4 or _is_placeholder(v) or _PATH.match(v) or "://" in v or _is_label_like(v):
        return None
    if _EMAIL.fullmatch(v) or _VERSION.fullmatch(v) or _FINGERPRINT.match(v):
        return None
    if _YAML_TAG.fullmatch(v) or _COUNTER.fullmatch(v) or _SETTINGS.search(v):
        return None  # `db_password: !vault |` (the ciphertext follows), `Token usage: prompt_tokens=1284`
    if group == "pin":  # "the door PIN for the server room is 5093": four digits are the whole secret
        return "password" if linked and _pin_or_password(v) else None
    kind = "password" if group == "pw" else "generic-high-entropy"
    if _DOTTED_NAME.fullmatch(v):  # `logging.getLogger` is a name; `hvs.CAESIJ1kZ2x...`, `nebula.ember117` are not
        return None if _dotted_reference(v) else kind
    if _looks_random(v, weak_key=group == "key"):  # `the cache key is <sha>`: a digest, in either pass
        return kind
    has_digit = any(c.isdigit() for c in v)  # `گلسرخ۱۴۰۲`: digits of any script
    has_alpha = any(c.isalpha() for c in v)  # `СеверныйВетер77`: a password in any alphabet
    if group == "key":
        # `the key is user_42` names a value; a value built like a password after a link is one
        # (`la clave del admin es Xk9#pL2m`: clave, chave, chiave, klucz, ключ are passwords too),
        # but an identifier (`MyClass2Name`) is not
        if (
            linked
            and _password_like(v)
            and not _named_parts(v)
            and (not _IDENTIFIER.match(v) or _capital_and_number(v))
        ):
            return kind
        return None
    if group == "sec":
        if _password_like(v, strict=not outbound) and not _named_parts(v):
            return kind
        return kind if outbound and has_digit and has_alpha and len(v) >= 12 and not _named_parts(v) else None
    # a password
    if not linked:
        if v.isdigit():  # "银行卡密码 620814": CJK puts no link between them
            return kind if len(v) >= 6 else None
        return kind if _password_like(v, strict=not outbound) and not _named_parts(v) else None
    if v.isdigit():
        return kind if len(v) >= (4 if outbound else 6) else None
    if has_digit and has_alpha:
        return kind if len(v) >= 6 and (not _named_parts(v) or _words_and_number(v)) else None
    if not has_alpha:
        return kind if outbound and len(v) >= 6 else None
    if not (v.isascii() or quoted):
        return None  # letters of another script and no digit: a word of the sentence ("اشتباه", wrong)
    if not outbound:
        # `the password is incorrect`: a word of the sentence; `pw is tacotuesday`: a password
        # (read so in English only: a long word of another language is as often an adjective)
        return kind if not translated and _letters_password(v, quoted=quoted, closed=closed) else None
    if translated and not (closed or quoted):
        return None  # "Salasanan on oltava …" (must be): another language's word that goes on with its sentence
    return kind if len(v) >= 6 and not _ordinary_word(v) and v.lower() not in _PROSE_VALUE_WORDS else None


# A word after a password's name that makes the phrase about something else than its value:
# "the password hint is bluefish", "password policy: ...", "the password manager is 1Password".
_ABOUT_WORDS = frozenset(
    """
    hint hints policy policies manager managers field fields prompt prompts rule rules requirement
    requirements length strength reset resets file files store hash hashes hashing format expiry
    change changes rotation complexity history dialog screen page form protected protection
    pad pads reader readers entry
    """.split()
)


#: A copula after the value, in languages that put it last ("पासवर्ड chai4life है", "비번 qwer1234!!
#: 입니다", "parolası Simit_2024'tür"): the value is linked to the name as by "is".
_COPULA_AFTER = re.compile(
    r"[ \t]*(?:है|हैं|था|थी|ہے|ஆகும்|です|でした|だ|입니다|이에요|예요|이다|است|['’]?(?:dir|dır|dur|dür|tir|tır|tur|tür))(?!\w)"
)


def _capital_and_number(value: str) -> bool:
    """`Merengue2020`, `Simit_2024`: a capitalised word and a number, a password's shape, where
    `MyClass2Name` (a camel-case type) and `user_42` are names."""
    return value[:1].isupper() and _DIGIT.search(value) is not None and not _camel_type(value)


#: Links tried after a key name when the first one's value is no secret ("das Passwort, das er mir
#: gab, ist X": `er` of another language is no link there; `ist` is).
PROSE_LINK_TRIES = 3


def _prose_decide(text: str, name_end: int, group: str, outbound: bool, translated: bool = False) -> Decision:
    """The secret after the key name ending at `name_end`, as (kind, start, end), or None.
    `translated`: the name was another language's (the view's English): no assignment rule
    knows it, so a value right after its colon is judged here. A `pwq` name (`wifi key`) is a
    password's, which no assignment rule knows either."""
    nxt = _NEXT_WORD.match(text, name_end)
    if nxt is not None and nxt.group(1).lower() in _ABOUT_WORDS:
        return None
    unassigned = translated or group == "pwq"  # no assignment rule reads this name
    if group == "pwq":
        group = "pw"
    plural = text[name_end - 1 : name_end] in ("s", "S")
    pos = name_end
    for _ in range(PROSE_LINK_TRIES):
        t = _PROSE_LINKED.match(text, pos)
        if t is None:
            break
        decision, pos = _prose_value_at(text, t, True, name_end, group, outbound, translated, plural, unassigned)
        if decision is not None:
            return decision
        if pos <= 0:
            break
    t = _PROSE_DIRECT.match(text, name_end)
    if t is None:
        return None
    return _prose_value_at(text, t, False, name_end, group, outbound, translated, plural, unassigned)[0]


def _one_word_before(text: str, name_end: int) -> bool:
    """Whether the name ending at `name_end` is one word, as an assignment's key is (`api_key:`,
    not `API Key：`, which no assignment rule reads)."""
    start = name_end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-."):
        start -= 1
    return start == 0 or text[start - 1] != " " or start < 2 or not text[start - 2].isalnum()


def _prose_value_at(
    text: str,
    t: re.Match,
    linked: bool,
    name_end: int,
    group: str,
    outbound: bool,
    translated: bool,
    plural: bool,
    unassigned: bool,
) -> tuple[Decision, int]:
    """The decision for the value `t` found after a name, and where to look for another link
    (0: nowhere; only a value judged and refused sends the search on). `translated`: the name
    was another language's; `unassigned`: no assignment rule reads it (that, or `wifi key`)."""
    if (
        not outbound
        and linked
        and not unassigned
        and not t.group("fill")
        and not text[name_end : t.start("q") if t.group("q") else t.start("v")].strip(" \t:")
        and _one_word_before(text, name_end)
    ):
        return None, 0  # `token: value` right after the name is an assignment: the assignment rules judge it
    if t.group("qv") is not None:
        start, end = t.span("qv")
    else:
        start, end = t.span("v")
        if not linked and _COPULA_AFTER.match(text, end):
            linked = True  # "비번 qwer1234!! 입니다": the value whole, its last mark included
        else:
            while end > start and text[end - 1] in ".,;:!?":
                end -= 1  # the sentence's punctuation, not the value's
    value = text[start:end]
    if plural and value.isalpha():
        return None, 0  # "passwords: provider tokens, headers": a list of what they are, not one
    quoted = t.group("qv") is not None
    closed = not quoted and _CLAUSE_END.match(text, end) is not None
    fill_end = t.end("fill") if "fill" in t.re.groupindex else name_end
    if linked and "=" in text[fill_end:start] and _IDENTIFIER.fullmatch(value):
        return None, t.end()  # `token = AccessToken2 if fresh else None`: code
    kind = _prose_value_kind(
        group, value, linked=linked, outbound=outbound, quoted=quoted, closed=closed, translated=translated
    )
    if kind is not None:
        return (kind, start, end), 0
    return None, t.end()


_NEXT_WORD = re.compile(r"[ \t_-]*([A-Za-z]+)")


# A token near a key name, for the outbound pass: base64 / hex / url-safe, 16+ characters.
_NEAR_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-~][A-Za-z0-9+/_\-.~]{14,510}[A-Za-z0-9+/_\-~]={0,2}")
# an environment variable or a constant: `WRENLY_UPLOAD_KEYSTORE_B64`, `AWS_PROFILE`
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
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
_TOKEN_TRIM = ".:!?,;)»”’】』」،؛。、！？，"


_SEMVER = re.compile(r"v?[0-9]+(?:\.[0-9]+)+(?:[-+][0-9A-Za-z.\-]+)?")
_NAMED_IN_TOKEN = re.compile(r"(?i:password|passwort|secret|token|1pass|api[_-]?key)|Key(?![a-z])")
_SCHEME_LIKE = re.compile(r"[A-Za-z]{2,10}:")
#: Characters of code around a token (a call, a template, a list): `(`, `)`, `{`, `[`, `,`, backticks.
_CODE_CHARS = re.compile(r"[(){}\[\],`\"']")


def _random_in_sentence(token: str) -> bool:
    """A token random enough to be a key's value in its sentence: random by both measures, and
    not named like one (`20240523214355_add_api_keys.rb`, `0x40cd…` an address), nor a flag or
    a setting (`-Pperiod=2026-07`)."""
    if _NAMED_IN_TOKEN.search(token) or _CODE_CHARS.search(token) or _SCHEME_LIKE.match(token):
        return False
    if token.startswith("-") or "=" in token:
        return False
    return _looks_random(token, weak_key=True) and _outbound_random(token)


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


def _type_name(token: str) -> bool:
    """A camel-case name made of words (`MyClass2Name`, `AccessToken2`), not a random mix of
    cases (`UK9ge9IYsnlVX`): its lower-case runs are words' tails, four letters or more."""
    return _camel_type(token) and re.search(r"[a-z]{4}", token) is not None


def _pin_or_password(token: str) -> bool:
    """After a PIN's or an access code's name: its digits, or a code built like a password."""
    digits = token.isdigit() and PIN_DIGITS_MIN <= len(token) <= PIN_DIGITS_MAX
    code = re.fullmatch(r"[A-Z0-9]{2,6}(?:-[A-Z0-9]{2,8}){1,3}|(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{4,8}", token)
    code_digits = sum(1 for c in token if c.isdigit()) >= PIN_DIGITS_MIN  # `GRA-014` is a crew id
    return digits or _built_like_password(token) or (code is not None and code_digits)


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


def _translated(text: str, view: "textview.View", start: int, end: int) -> bool:
    """Whether the view's key name at [start, end) stands for another language's word."""
    s, e = view.span(start, end)
    return text[s:e].lower() != view.text[start:end].lower()


def _has_prose_hint(low: str) -> bool:
    """Whether lowered text holds a head word of a key name (a loop: ~1.4 us a memory, `any` ~2.2)."""
    for hint in _PROSE_HINTS:
        if hint in low:
            return True
    return False


def _prose_pass(text: str, counts: Counter, *, outbound: bool, foreign: Optional[bool] = None) -> str:
    """Secrets written in sentences, in any language (see above); the view is searched and the
    original characters replaced. `foreign`: `textview.needs_view(text)` when the caller knows it."""
    if foreign is None:
        foreign = textview.needs_view(text)
    if not foreign and not _has_prose_hint(text.lower()):
        return text
    view = textview.build_view(text) if foreign else None
    seen = view.text if view is not None else text
    labels = [x.span() for x in _LABEL_RE.finditer(seen)] if _LABEL_MARK in seen else []
    found: list[tuple[int, int, str]] = []
    tokens: Optional[list[tuple[int, int]]] = None
    names = list(_prose_names(_ascii_lower(seen).decode("ascii")))
    judged: dict[tuple[int, str], bool] = {}  # words of sentences judged (`_in_sentence`)
    searched = 0
    sealed, arns = "encryptedData" in seen, "arn:" in seen  # once: a text of names must stay linear
    if "PIN" in seen or "pin" in seen or "Pin" in seen:
        named = {s for s, _e, _g in names}
        names += [(m.start(), m.end(), "pin") for m in _PIN_NAME.finditer(seen) if m.start() not in named]
    for start, end, group in names:
        if labels and _overlaps(labels, start, end):
            continue
        if sealed and _under_encrypted_data(seen, start):
            continue  # a SealedSecret's ciphertext
        if arns and _ARN_HEAD.search(seen[max(0, start - 160) : start]):
            continue  # `arn:aws:secretsmanager:…:secret:prod/stripe-I4Jah4`: a resource's name
        translated = view is not None and _translated(text, view, start, end)
        decision = _prose_decide(seen, end, group, outbound, translated)
        if decision is not None:
            kind, s, e = decision
            found.append((s, e, kind))
        else:
            searched += 1
            if searched <= SENTENCE_NAMES_MAX:
                found += [(s, e, kind) for kind, s, e in _in_sentence(seen, start, end, group, judged)]
        if outbound:
            if tokens is None:
                tokens = _random_tokens(seen)
            found += [(s, e, kind) for kind, s, e in _near_tokens(seen, tokens, start, end)]
    if not found:
        return text
    regions = []
    for s, e, kind in sorted(set(found)):
        if labels and _overlaps(labels, s, e):
            continue
        if view is not None:
            s, e = view.span(s, e)
        if _is_doc_example(text[s:e]) or _LABEL_MARK in text[s:e]:
            continue
        regions.append((s, e, kind))
    out: list[str] = []
    copied = 0
    for s, e, kind in sorted(regions):
        if s < copied:
            continue
        out += [text[copied:s], label_for(kind)]
        copied = e
        counts[kind] += 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def redact(text: str) -> RedactionResult:
    """Replace every detected secret with ``[REDACTED:<kind>]``."""
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    counts: Counter = Counter()
    out = _redact_echoes(text, _redact_counts(text, counts), counts)
    return RedactionResult(out, _findings(counts))


#: The shortest redacted value whose other occurrences are redacted too (`_redact_echoes`): a
#: shorter one (`1234`, a PIN) also stands for ports, ids and counts elsewhere in the text.
ECHO_MIN_CHARS = 8
_LABEL_SPLIT = re.compile(r"\[REDACTED:([a-z0-9\-]+)\]")


def _redact_echoes(original: str, out: str, counts: Counter) -> str:
    """`out` with every other occurrence of a value redacted in it redacted too: a secret is often
    written twice, once where a rule knows it (`REDIS_URL=redis://:<pw>@redis`) and once where
    none can (`command: ["redis-server", "--requirepass", "<pw>"]`). The values are read back by
    aligning `out`'s text between labels with `original`; when that fails (the text held a label
    already, or a pass changed more than the redacted values) `out` is returned as it is."""
    if _LABEL_MARK not in out or _LABEL_MARK in original:
        return out
    values = _redacted_values(original, out)
    for value, kind in sorted(values.items(), key=lambda item: -len(item[0])):
        found = out.count(value)
        if found:
            out = out.replace(value, label_for(kind))
            counts[kind] += found
    return out


def _echoes(value: str) -> bool:
    """Whether a redacted value is redacted wherever else it stands: one that reads as a secret on
    its own (random, or built like a password). A password that is a word of the text (`coldlink`
    in `postgres://coldlink:coldlink@localhost/coldlink`) is also the project's, the user's and the
    database's name, which must stay readable elsewhere."""
    if len(value) < ECHO_MIN_CHARS or any(c.isspace() for c in value):
        return False
    return _looks_random(value) or _password_like(value)


def _redacted_values(original: str, out: str) -> dict[str, str]:
    """{value: kind} of the values `out` replaced with one label each: ECHO_MIN_CHARS or more, no
    blank (a value with blanks reads as words elsewhere). Two labels side by side are one gap that
    cannot be split, and are skipped."""
    pieces = _LABEL_SPLIT.split(out)  # literal, kind, literal, kind, ..., literal
    if not original.startswith(pieces[0]) or not original.endswith(pieces[-1]):
        return {}
    values: dict[str, str] = {}
    pos, i = len(pieces[0]), 1
    while i < len(pieces):
        first = i
        while i + 2 < len(pieces) and not pieces[i + 1]:
            i += 2  # adjacent labels
        literal, last = pieces[i + 1], i + 2 >= len(pieces)
        end = len(original) - len(literal) if last else original.find(literal, pos)
        if end < pos:
            return values
        value = original[pos:end]
        if i == first and _echoes(value):
            values.setdefault(value, pieces[i])
        pos, i = end + len(literal), i + 2
    return values


def sanitize(text: str) -> RedactionResult:
    """``strip_private`` then ``redact``: the one call every storing path uses."""
    if not isinstance(text, str):
        raise TypeError(f"sanitize() expects str, got {type(text).__name__}")
    return redact(strip_private(text))


def _sanitize_pair(key: Any, value: str, counts: Counter, outbound: bool = False) -> str:
    """Sanitize a string value, using its dict key as context: the same passes as `sanitize`
    (or `redact_outbound`, which an export's and a shared file's every field must get whole:
    its login pairs, hex key values and echoes too), then the key's say."""
    counts_before = sum(counts.values())
    out = _text_passes(value, counts, outbound)
    if sum(counts.values()) != counts_before or not isinstance(key, str):
        return out
    # the value alone did not reveal a secret: `{"password": "hunter2"}`
    if _normalize_key(key) in ("authorization", "proxy_authorization"):
        v = out.strip()
        scheme, _, cred = v.partition(" ")
        if cred and scheme.lower() in ("bearer", "basic", "token", "negotiate", "ntlm"):
            if not _is_placeholder(cred) and len(cred) >= 4:
                counts["bearer-token"] += 1
                return f"{scheme} {label_for('bearer-token')}"
        elif v and not _is_placeholder(v) and len(v) >= 8:
            counts["bearer-token"] += 1
            return label_for("bearer-token")
        return out
    if _CODE_PREFIX.match(out.strip()):
        return out
    kind = _classify(key, out)
    if kind is None:
        return out
    counts[kind] += 1
    return label_for(kind)


#: Clean (key, value) pairs already seen, and how many at most: an import's records repeat the
#: same metadata values (a source's name, an entity, a project) thousands of times, ~13 fields a
#: record. Only a value that came out unchanged and found nothing is kept, so the memo holds no
#: secret and no <private> span: text the store keeps anyway.
_CLEAN_PAIRS: dict[tuple[str | None, str, bool | None], None] = {}
_CLEAN_PAIRS_MAX = 4096
_CLEAN_VALUE_CHARS = 300


def _sanitize_pair_memo(key: Any, value: str, counts: Counter, outbound: bool) -> str:
    memo = (key if isinstance(key, str) else None, value, outbound)
    if len(value) <= _CLEAN_VALUE_CHARS and memo in _CLEAN_PAIRS:
        return value
    found: Counter = Counter()
    out = _sanitize_pair(key, value, found, outbound)
    if found:
        counts.update(found)
    elif out == value and len(value) <= _CLEAN_VALUE_CHARS:
        if len(_CLEAN_PAIRS) >= _CLEAN_PAIRS_MAX:
            _CLEAN_PAIRS.clear()
        _CLEAN_PAIRS[memo] = None
    return out


def _clean_key(k: str, counts: Counter) -> str:
    """A dict key redacted (`_walk`); the keys of a record are the same few names every time."""
    memo = (None, k, None)
    if len(k) <= _CLEAN_VALUE_CHARS and memo in _CLEAN_PAIRS:
        return k
    found: Counter = Counter()
    nk = _redact_counts(strip_private(k), found)
    if found:
        counts.update(found)
    elif nk == k and len(k) <= _CLEAN_VALUE_CHARS:
        if len(_CLEAN_PAIRS) >= _CLEAN_PAIRS_MAX:
            _CLEAN_PAIRS.clear()
        _CLEAN_PAIRS[memo] = None
    return nk


def _walk(obj: Any, counts: Counter, key: Any = None, outbound: bool = False) -> Any:
    if isinstance(obj, str):
        return _sanitize_pair_memo(key, obj, counts, outbound)
    if isinstance(obj, dict):
        new: dict = {}
        for k, v in obj.items():
            nk = _clean_key(k, counts) if isinstance(k, str) else k
            if nk != k and nk in new:  # two secret keys redacted to the same label
                n = 2
                while f"{nk}#{n}" in new:
                    n += 1
                nk = f"{nk}#{n}"
            new[nk] = _walk(v, counts, k, outbound)
        return new
    if isinstance(obj, list):
        return [_walk(v, counts, key, outbound) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, counts, key, outbound) for v in obj)
    return obj


def redact_obj(obj: Any) -> tuple[Any, tuple[Finding, ...]]:
    """Recursively sanitize every string in dicts/lists/tuples.

    Dict keys are used as context: ``{"password": "hunter2"}`` is redacted even
    though ``hunter2`` alone is not recognisable.  Returns ``(new_obj,
    findings)``; the input is not modified.  Non-string scalars are kept.
    """
    counts: Counter = Counter()
    new = _walk(obj, counts)
    return new, _findings(counts)


def _text_passes(text: str, counts: Counter, outbound: bool) -> str:
    """`sanitize`'s passes, or `redact_outbound`'s, on `text`; what they found added to `counts`."""
    stripped = strip_private(text)
    out = _redact_counts(stripped, counts)
    if outbound:
        out = _outbound_forms(_prose_pass(out, counts, outbound=True), counts)
    return _redact_echoes(stripped, out, counts)


def redact_outbound(text: str) -> RedactionResult:
    """The stricter pass for text that leaves the machine (a team file in git, the user sync
    folder, an export): everything :func:`sanitize` removes, plus secrets in prose with weaker
    values (``the password is changeme``, a PIN) and any random-looking token within a line's
    reach of a key name in any language (``AWS key ... secret 9xK2...``). It accepts more false
    positives than the local pass (``bench/secrets_bench.py`` counts them): a commit hash beside
    the word ``token`` may be replaced in a shared file, never a secret left in one."""
    if not isinstance(text, str):
        raise TypeError(f"redact_outbound() expects str, got {type(text).__name__}")
    counts: Counter = Counter()
    return RedactionResult(_text_passes(text, counts, outbound=True), _findings(counts))


# Forms only the outbound pass takes (a shared file may lose a non-secret, never keep a secret):
# a user / password pair after a login word ("grafana login: admin / Gr4f4n4!Adm1n"); a hex secret
# stated as a key's value ("the vault unseal key is 3f9a..."), not a commit, hash or checksum; a
# passphrase of joined words stated as a key's or password's value ("the wifi key is sunshine-kitten-42").
_LOGIN_WORDS = (
    r"log[\s-]?in|logon|sign[\s-]?in|credentials?|creds|account|anmeldung|zugangsdaten|konto|identifiants|"
    r"connexion|credenciales|acceso|cuenta|credenziali|accesso|inloggning|логин|учётка|учетка|"
    r"ログイン|認証情報|登录|登入|账号|帐号|로그인"
)
#: Cheap substrings of the login words, checked before the pattern runs.
_LOGIN_HINTS = tuple(
    "login log-in logon signin sign-in cred account anmeld zugang konto identifiant connex acceso cuenta accesso "
    "inlogg логин учё учет ログイン 認証 登录 登入 账号 帐号 로그인".split()
) + ("log in", "log\tin", "sign in", "sign\tin", "log\nin", "sign\nin")
_LOGIN_PAIR_RE = re.compile(
    rf"(?i)(?:{_LOGIN_WORDS})\b[^\n:=]{{0,30}}?\s*(?:[:=]|\bis\b|\bwith\b|：)\s*"
    r"[\"'`]?([^\s/:\"'`]{1,64})[\"'`]?\s*(?:/|:|\s\|\s)\s*[\"'`]?([^\s\"'`]{4,128}?)[\"'`]?(?=[\s,;.)]*(?:\s|$))"
)
_LOGIN_WORD_RE = re.compile(rf"(?i)(?<![^\W_])(?:{_LOGIN_WORDS})\b")
_SECRET_KEY_WORDS = (
    r"unseal|secret|token|api[\s_-]?key|private[\s_-]?key|master[\s_-]?key|encryption[\s_-]?key|signing[\s_-]?key|"
    r"recovery[\s_-]?key|root[\s_-]?key|key|passphrase|password|schlüssel|clé|clave|chiave|ключ|секрет|鍵|キー|密钥|秘钥|키"
)
_HEX_VALUE_RE = re.compile(
    rf"(?i)\b({_SECRET_KEY_WORDS})\b(?:\s+(?:is|was|are|ist|est|es|è|=|:)|\s*[:=：])\s*[\"'`]?([0-9a-f]{{32,128}})\b"
)
#: Words that make a hex value a hash, not a secret (within the clause before it).
_HASH_WORDS = re.compile(
    r"(?i)\b(commit|sha\d*|hash|checksum|digest|revision|rev|integrity|fingerprint|md5|crc|etag|cache|build|"
    r"object|blob|tree|ref|uuid|guid|id)\b"
)
_PASSPHRASE_RE = re.compile(
    r"(?i)\b(?:(wi-?fi|wlan|wpa2?|network|ssid|router|door|safe|alarm|lock|vault|gpg|ssh|pgp|disk|luks|bitlocker)\s+)?"
    r"(key|password|passphrase|pass\s+phrase|passwort|kennwort|mot\s+de\s+passe|contraseña|пароль|pw|pin)\b"
    r"(?:\s+(?:is|was|ist|est|es|è|=|:)|\s*[:=：])\s*[\"'`]?([a-z]{3,}(?:[-_.][a-z0-9]{2,}){2,})[\"'`]?(?![\w/-])"
)


#: `admin / 4rW#rtetcP`, in any language's sentence ("Я зашёл под admin / …", "root / … 로 접속"):
#: a user name, a slash between blanks, and a value nobody writes but as a password.
_SLASH_PAIR = re.compile(r"(?<![\w/.:@-])[a-z][a-z0-9._-]{1,31}[ \t]+/[ \t]+(?P<s>[^\s/]{6,64})")
#: "log in with Mango!Tide-84": a login verb and the value it uses.
_LOGIN_WITH = re.compile(r"(?i)\b(?:log(?:ged)?[ -]?in|sign(?:ed)?[ -]?in)[ \t]+(?:with|using)[ \t]+(?P<s>\S{6,64})")


def _login_pairs(text: str, *, outbound: bool) -> list[tuple[int, int, str]]:
    """The password of each user / password pair after a login word ("creds: deploy/Gr4nite&Moss",
    "login with admin / Xyzzy-plugh-9"): built like one (`_password_like`) for the local pass,
    any value that reads as one (`_login_password`) for the outbound pass. And, with no login
    word, a user / value pair or a login's value built like a password (`_built_like_password`)."""
    out = []
    low = text.lower()
    logs_in = "in with" in low or "in using" in low  # cheap before the regex: "log in with X"
    for rx, present in ((_SLASH_PAIR, " / " in text), (_LOGIN_WITH, logs_in)):
        if present:
            for pair in rx.finditer(text):
                value = pair.group("s").rstrip(_TOKEN_TRIM)
                if _built_like_password(value) and _LABEL_MARK not in value:
                    out.append((pair.start("s"), pair.start("s") + len(value), "password"))
    if not any(w in low for w in _LOGIN_HINTS):
        return out
    for word in _LOGIN_WORD_RE.finditer(text):  # where a pair can start: cheaper than the pair's search
        if word.start() and text[word.start() - 1] == ".":
            continue  # `Rails.application.credentials.dig(:aws, …)`: an attribute in code
        m = _LOGIN_PAIR_RE.match(text, word.start())
        if m is None:
            continue
        value = m.group(2)
        if _is_placeholder(value) or _is_doc_example(value) or _LABEL_MARK in m.group(0) or "::" in m.group(0):
            continue  # (`Aws::Credentials.new(`: a scope, not a pair)
        if _login_password(value) if outbound else _password_like(value.strip(".,;)")):
            out.append((m.start(2), m.end(2), "password"))
    return out


def _replace_regions(text: str, regions: list[tuple[int, int, str]], counts: Counter) -> str:
    """`text` with each region replaced by its kind's label; none inside a label already written."""
    if not regions:
        return text
    labels = [x.span() for x in _LABEL_RE.finditer(text)] if _LABEL_MARK in text else []
    out: list[str] = []
    copied = 0
    for s, e, kind in sorted(regions):
        if s < copied or _LABEL_MARK in text[s:e] or (labels and _overlaps(labels, s, e)):
            continue
        out += [text[copied:s], label_for(kind)]
        copied = e
        counts[kind] += 1
    out.append(text[copied:])
    return "".join(out)


def _outbound_forms(text: str, counts: Counter) -> str:
    """Replace the outbound-only forms above (see their comment); the value alone is replaced."""
    regions = _login_pairs(text, outbound=True)
    for m in _HEX_VALUE_RE.finditer(text):
        clause = text[max(0, m.start() - 40) : m.start(2)]
        if _HASH_WORDS.search(clause):
            continue
        regions.append((m.start(2), m.end(2), "generic-high-entropy"))
    for m in _PASSPHRASE_RE.finditer(text):
        thing, word, value = m.group(1), m.group(2).lower(), m.group(3)
        if _is_placeholder(value) or _is_doc_example(value):
            continue
        if word == "key" and not thing:
            continue  # "the key is user-id-column", "Cache restored from key: Linux-node-...": a key of a named lock only
        if re.search(r"[0-9a-f]{12,}", value, re.I) or _HASH_WORDS.search(text[max(0, m.start() - 40) : m.start(3)]):
            continue  # a hash inside (a cache key) or beside a hash word
        if "." in value and not any(c.isdigit() for c in value) and "-" not in value:
            continue  # a dotted name (logging.getLogger.name)
        regions.append((m.start(3), m.end(3), "password"))
    return _replace_regions(text, regions, counts)


def _login_password(value: str) -> bool:
    """Whether the second half of a login pair reads as a password: 6+ characters with a digit or
    a symbol, or 10+ of mixed case; not a path, a URL or a plain word."""
    v = value.strip(".,;)")
    if len(v) < 6 or "://" in v or v.startswith(("/", "~", ".")):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_symbol = any(not c.isalnum() for c in v)
    mixed = any(c.isupper() for c in v) and any(c.islower() for c in v)
    if v.isalpha() and not mixed:
        return False
    return has_digit or has_symbol or (mixed and len(v) >= 10)


def redact_outbound_obj(obj: Any) -> tuple[Any, tuple[Finding, ...]]:
    """:func:`redact_obj` with the outbound pass (:func:`redact_outbound`) on every string."""
    counts: Counter = Counter()
    new = _walk(obj, counts, outbound=True)
    return new, _findings(counts)


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
_VOWELS = frozenset("aeiou")
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
_VERSIONED_NAME = re.compile(r"([a-z]{0,7})((?:[0-9]+[a-z]{0,2})+)")
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


_ALPHA_RUN = re.compile(r"[a-z]+")
_CONSONANT_RUN_3 = re.compile(r"[bcdfghjklmnpqrstvwxz]{3,}")
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
