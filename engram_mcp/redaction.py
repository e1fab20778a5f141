"""Secret redaction for everything engram stores.

Every path that persists text (tool outputs, failed commands, notes, metadata)
must go through :func:`sanitize` (strings) or :func:`redact_obj` (JSON-like
objects).  The module is standard-library only and does no work at import time
beyond compiling regular expressions, because it runs inside hook processes
whose whole budget is about 100 ms.

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
  ``your_token_here``, ``None``/``null``/``true``, type names (``str``,
  ``string``, ``SecretStr``), argparse metavars (``--token TOKEN``), and values
  already redacted by a tool (``[hidden]``).
* Weak-but-real passwords are redacted: ``changeme``, ``password``, ``admin``,
  ``postgres`` etc. are *not* treated as placeholders when assigned.
* Assignment values shorter than 4 characters are not redacted (too many false
  positives such as ``token: 5``); URL passwords of any length are.
* An unquoted value assigned with surrounding spaces that is itself an
  identifier naming a secret (``self.password = password``,
  ``token = new_token``) is treated as code, not as a secret.  Values that are
  function calls, subscripts or attribute chains (``get_password()``,
  ``os.environ["X"]``, ``args.token``) are also code.
* Unquoted multi-word values are only partly covered: in ``password: correct
  horse`` (YAML) the value is treated as prose and kept; in ``PASS=correct
  horse`` only the first word is redacted.  Quote such values.
* ``password`` in prose without an assigned value is never touched, and
  certificates / public keys (``-----BEGIN CERTIFICATE-----``, ``ssh-ed25519``)
  are not secrets.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
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
    "url-credentials",
    "bearer-token",
    "password-assignment",
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


def _label(kind: str) -> str:
    return f"{_LABEL_MARK}{kind}]"


def _findings(counts: Counter) -> tuple[Finding, ...]:
    return tuple(
        Finding(kind, n)
        for kind, n in sorted(counts.items(), key=lambda kv: _KIND_ORDER.get(kv[0], 99))
        if n
    )


# ---------------------------------------------------------------------------
# <private> spans
# ---------------------------------------------------------------------------

_PRIVATE_TAG = re.compile(r"<\s*(/?)\s*private\b[^<>]*>", re.IGNORECASE)


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

_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_PATH = re.compile(r"^(?:~|\.{1,2})?/[^\s:]*$|^[A-Za-z]:\\[^\s]*$")
_SAME_CHAR = re.compile(r"^(.)\1*$", re.S)
_MASK = re.compile(r"^[xX*•.#_\-]+$")
_PLACEHOLDER_SHAPES = re.compile(
    r"""^(?:
        [$%{<]                 # $VAR ${VAR} $(cmd) %s %(x)s {x} {{x}} <your-token>
      | \[.*\]$                # [hidden] [private]
      | your[_\-\s.]           # your_token_here
      | (?:insert|enter|replace|put|add)[_\-\s](?:your|the|a|here)
    )""",
    re.X | re.I | re.S,
)
_PLACEHOLDER_ANYWHERE = re.compile(r"\$\{|\{\{|\}\}|<[^<>]*>|\$\(")
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
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|cred|auth", re.I)
_WORDY_SEGMENT = re.compile(r"^[A-Za-z][a-z]{2,}$")


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
    if v.lower() in _PLACEHOLDER_WORDS:
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
    if len(v) < 16 or len(v) > 4096:
        return False
    if any(ch.isspace() for ch in v) or "://" in v:
        return False
    if _UUID.match(v) or _PATH.match(v):
        return False
    has_digit = any(ch.isdigit() for ch in v)
    has_lower = any(ch.islower() for ch in v)
    has_upper = any(ch.isupper() for ch in v)
    if not (has_digit and (has_lower or has_upper)) and not (has_lower and has_upper and len(v) >= 20):
        return False
    segments = re.split(r"[-_.:/]", v)
    if sum(1 for s in segments if _WORDY_SEGMENT.match(s)) >= 2:
        return False  # e.g. Linux-node-modules-<sha>: a composed name, not a secret
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
    r"account|service|license|sas|session|webhook|admin|root)_?key|apikey)$"
)
_GENERIC_EXCLUDED_TAIL = frozenset(
    """
    id ids name names file files path paths dir url uri type types count len length
    size limit max min ttl expiry expires expiration timeout header field env var
    prefix suffix format version policy usage budget index idx column col table
    enabled enable disabled required ref refs arn location source store
    """.split()
)
_GENERIC_EXCLUDED_ANY = frozenset(
    "public pub cache sort primary foreign partition lookup hotkey idempotency "
    "shortcut keyboard keycode keymap".split()
)


def _normalize_key(key: str) -> str:
    return _NON_ALNUM.sub("_", _CAMEL.sub("_", key).lower()).strip("_")


def _key_strength(key: str) -> Optional[str]:
    """Return 'strong', 'generic', 'weak' or None for an assignment key."""
    norm = _normalize_key(key)
    if not norm:
        return None
    if _STRONG_KEY.search(norm):
        return "strong"
    comps = [c for c in norm.split("_") if c]
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

class _Rule:
    __slots__ = ("kind", "regex", "hints", "groups", "check", "decide")

    def __init__(
        self,
        kind: str,
        pattern: str,
        flags: int = 0,
        hints: Iterable[str] = (),
        groups: tuple[str, ...] = ("s",),
        check: Optional[Callable[[re.Match, str], bool]] = None,
        decide: Optional[Callable[[re.Match], Decision]] = None,
    ) -> None:
        self.kind = kind
        self.regex = re.compile(pattern, flags)
        self.hints = tuple(hints)
        self.groups = groups
        self.check = check
        self.decide = decide

    def span(self, m: re.Match) -> Decision:
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


def _no_label(m: re.Match, _value: str) -> bool:
    return _LABEL_MARK not in m.group(0)


# --- private keys -----------------------------------------------------------

_PEM_BODY = r"[A-Za-z0-9+/=\s\\:,.\-]"
_PEM_KIND = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
_PEM_FALLBACK = (
    r"(?:(?:[ \t]*(?:\r?\n|\\r\\n|\\n)[ \t]*)?"
    r"(?:[A-Z][A-Za-z\-]+:[^\r\n\\]*|[A-Za-z0-9+/]{16,}={0,2}|=[A-Za-z0-9+/]{4}))*"
)


def _pem_check(m: re.Match, value: str) -> bool:
    body = m.group("body") or ""
    return sum(ch.isalnum() for ch in body) >= 16


_RULE_GCP_KEY = _Rule(
    "gcp-service-account",
    r"""(?P<q>["'])private_key(?P=q)[ \t]*:[ \t]*(?P=q)(?P<s>-----BEGIN[^"'\r\n]*)""",
    hints=("private_key",),
)
_RULE_GCP_KEY_ID = _Rule(
    "gcp-service-account",
    r"""(?P<q>["'])private_key_id(?P=q)[ \t]*:[ \t]*(?P=q)(?P<s>[0-9a-fA-F]{16,64})(?P=q)""",
    hints=("private_key_id",),
)
_RULE_PEM = _Rule(
    "private-key",
    rf"(?P<s>-----BEGIN (?:{_PEM_KIND})-----"
    rf"(?P<body>{_PEM_BODY}*?-----END (?:{_PEM_KIND})-----|{_PEM_FALLBACK}))",
    hints=("-----begin",),
    check=_pem_check,
)

# --- provider token formats -------------------------------------------------

_B = r"(?<![A-Za-z0-9_\-])"  # left boundary for token-like secrets
_E = r"(?![A-Za-z0-9_\-])"  # right boundary

_RULE_AWS_ID = _Rule(
    "aws-access-key",
    r"(?<![A-Za-z0-9])(?P<s>(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16})(?![A-Za-z0-9])",
    hints=("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka", "asca"),
)
_RULE_AWS_SECRET = _Rule(
    "aws-secret-key",
    r"(?i:(?<![A-Za-z0-9])(?:aws[_\-]?)?secret[_\-]?access[_\-]?key[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"']?)"
    r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    hints=("secret",),
)
_RULE_ANTHROPIC = _Rule(
    "anthropic-key",
    _B + r"(?P<s>sk-ant-[A-Za-z0-9_\-]{20,})",
    hints=("sk-ant-",),
)


def _openai_check(_m: re.Match, value: str) -> bool:
    body = value[3:]
    return (
        any(ch.isdigit() for ch in body)
        and any(ch.isalpha() for ch in body)
        and _shannon(body) >= 3.0
    )


_RULE_OPENAI = _Rule(
    "openai-key",
    _B + r"(?P<s>sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,})",
    hints=("sk-",),
    check=_openai_check,
)
_RULE_STRIPE = _Rule(
    "stripe-key",
    _B + r"(?P<s>(?:(?:sk|rk)_(?:live|test)|pk_live)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,})" + _E,
    hints=("_live_", "_test_", "whsec_"),
)
_RULE_GITHUB = _Rule(
    "github-token",
    _B + r"(?P<s>gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})" + _E,
    hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
)
_RULE_GITLAB = _Rule(
    "gitlab-token",
    _B + r"(?P<s>gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]{2,})*)",
    hints=("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-"),
)
_RULE_SLACK_WEBHOOK = _Rule(
    "slack-webhook",
    r"(?i:https?://hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<s>[A-Za-z0-9_/\-]{16,})",
    hints=("hooks.slack.com",),
)
_RULE_SLACK = _Rule(
    "slack-token",
    _B + r"(?P<s>xox[abeoprs]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})",
    hints=("xox", "xapp-"),
)
_RULE_GOOGLE = _Rule(
    "google-api-key",
    _B + r"(?P<s>AIza[0-9A-Za-z_\-]{35})" + _E,
    hints=("aiza",),
)
_RULE_AZURE = _Rule(
    "azure-key",
    r"(?i:(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey|SharedSecret|PrimaryKey|SecondaryKey)[ \t]*=[ \t]*)"
    r"(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
    hints=("accountkey", "sharedaccesskey", "sharedsecret", "primarykey", "secondarykey"),
)
_RULE_AZURE_SAS = _Rule(
    "azure-key",
    r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{16,})",
    hints=("sig=",),
)
_RULE_NPM = _Rule(
    "npm-token",
    _B + r"(?P<s>npm_[A-Za-z0-9]{36})(?![A-Za-z0-9])",
    hints=("npm_",),
)
_RULE_NPM_AUTH = _Rule(
    "npm-token",
    r"(?<![A-Za-z0-9])(?i:_auth(?:Token)?[\"']?[ \t]*[=:][ \t]*[\"']?)(?P<s>[^\s\"'`<>(){}\[\];,&|]+)",
    hints=("_auth",),
    check=_not_placeholder,
)
_RULE_PYPI = _Rule(
    "pypi-token",
    _B + r"(?P<s>pypi-AgE[A-Za-z0-9_\-]{40,})",
    hints=("pypi-age",),
)
_RULE_TWILIO = _Rule(
    "twilio-key",
    r"(?<![A-Za-z0-9])(?P<s>SK[0-9a-fA-F]{32})(?![A-Za-z0-9])",
    hints=("sk",),
)
_RULE_SENDGRID = _Rule(
    "sendgrid-key",
    r"(?<![A-Za-z0-9])(?P<s>SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})" + _E,
    hints=("sg.",),
)
_RULE_JWT = _Rule(
    "jwt",
    _B + r"(?P<s>eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*)",
    hints=("eyj",),
)

# --- structural secrets -------------------------------------------------------


def _url_check(m: re.Match, value: str) -> bool:
    if _LABEL_MARK in m.group(0):
        return False
    return not _is_placeholder(value)


_RULE_URL = _Rule(
    "url-credentials",
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}://"
    r"(?P<user>[^\s:/?#@\[\]\"'<>]*):(?P<s>[^\s/?#\"'<>]+)@(?=[A-Za-z0-9\[_])",
    hints=("://",),
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
    r"(?i:(?<![A-Za-z0-9_\-])(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?P<scheme>bearer|basic|token|negotiate|ntlm|apikey|sso-key)[ \t]+)?)"
    rf"(?P<s>{_BEARER_VALUE})",
    hints=("authorization",),
    check=_bearer_check,
)
_RULE_BARE_BEARER = _Rule(
    "bearer-token",
    rf"(?i:(?<![A-Za-z0-9_\-])(?:bearer|basic)[ \t]+)(?P<s>{_BEARER_VALUE})",
    hints=("bearer", "basic"),
    check=_bare_bearer_check,
)

# --- assignments ------------------------------------------------------------------

_KW = r"(?i:pass|pwd|secret|token|key|cred|auth)"
_KEYCH = r"A-Za-z0-9_.\-"
# An unquoted value: separators ; & , | belong to the value unless they look like
# a delimiter (followed by whitespace, end, another delimiter or a `key=`).
_UNQUOTED = (
    r"(?:[^\s\"'`<>(){}\[\];&,|]"
    r"|[;&,|](?![ \t\r\n]|$|[;&,|]|[A-Za-z_][A-Za-z0-9_.\-]*=))++"
)
_DQ = r'"(?P<dq>(?:[^"\\\r\n]|\\.){1,1024})"'
_SQ = r"'(?P<sq>(?:[^'\\\r\n]|\\.){1,1024})'"


def _line_before(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    return text[start:pos]


def _classify(key: str, value: str, *, min_len: int = 4) -> Optional[str]:
    """Kind for ``key = value`` or None when it is not a secret."""
    strength = _key_strength(key)
    if strength is None:
        return None
    v = value.strip()
    if len(v) < min_len or _is_placeholder(v) or _PATH.match(v):
        return None
    if strength == "strong":
        return "password-assignment"
    if _looks_random(v, weak_key=(strength == "weak")):
        return "generic-high-entropy"
    return None


def _assignment_decide(m: re.Match) -> Decision:
    key = m.group("key")
    text = m.string
    if m.group("dq") is not None:
        g = "dq"
    elif m.group("sq") is not None:
        g = "sq"
    else:
        g = "uv"
        value = m.group("uv")
        sep = m.group("sep")
        end = m.end("uv")
        if _CODE_PREFIX.match(value):
            return None
        if sep == ":":
            # YAML / header style: the unquoted value must be the whole rest of the
            # line (or end at a flow-mapping delimiter); otherwise it is prose.
            rest = text[end : end + 256]
            stripped = rest.lstrip(" \t")
            if stripped and stripped[0] not in "\r\n#,}]":
                return None
        else:
            spaced = bool(m.group("sp1")) and bool(m.group("sp2"))
            follower = text[end : end + 1]
            if _IDENT.match(value):
                if spaced and _SECRET_WORD.search(value):
                    return None  # `self.token = token`, `password = DEFAULT_PASSWORD`
                if follower in (",", ")") and "(" in _line_before(text, m.start()):
                    return None  # keyword argument passing a variable
    kind = _classify(key, m.group(g))
    if kind is None:
        return None
    return kind, m.start(g), m.end(g)


_RULE_ASSIGN = _Rule(
    "password-assignment",
    rf"(?<![{_KEYCH}])(?P<key>[{_KEYCH}]*?{_KW}[{_KEYCH}]*+)(?P<kq>[\"']?)"
    r"(?P<sp1>[ \t]*)(?P<sep>=>|:=|=(?!=)|:(?![:/]))(?P<sp2>[ \t]*)"
    rf"(?:{_DQ}|{_SQ}|(?P<uv>{_UNQUOTED})(?![(\[]))",
    hints=("pass", "pwd", "secret", "token", "key", "cred", "auth"),
    decide=_assignment_decide,
)


def _flag_decide(m: re.Match) -> Decision:
    for g in ("dq", "sq", "uv"):
        value = m.group(g)
        if value is not None:
            break
    else:  # pragma: no cover - regex guarantees one group
        return None
    if g == "uv" and re.match(r"^[A-Z][A-Z_\-]*$", value):
        return None  # argparse metavar: --token TOKEN
    kind = _classify(m.group("key"), value)
    if kind is None:
        return None
    return kind, m.start(g), m.end(g)


_RULE_FLAG = _Rule(
    "password-assignment",
    rf"(?<![A-Za-z0-9_\-])(?P<key>--(?=[A-Za-z0-9])[A-Za-z0-9_\-]*?{_KW}[A-Za-z0-9_\-]*+)[ \t]+"
    rf"(?:{_DQ}|{_SQ}|(?P<uv>(?!-)[^\s\"'`;&|<>()\[\]{{}}]++))",
    hints=("--",),
    decide=_flag_decide,
)


def _xml_decide(m: re.Match) -> Decision:
    kind = _classify(m.group("tag"), m.group("s"))
    if kind is None:
        return None
    return kind, m.start("s"), m.end("s")


_RULE_XML = _Rule(
    "password-assignment",
    rf"<(?P<tag>[A-Za-z0-9_.:\-]*?{_KW}[A-Za-z0-9_.\-]*+)>(?P<s>[^<\r\n]{{1,1024}})</(?P=tag)>",
    hints=("</",),
    decide=_xml_decide,
)

_CMD_VALUE = r"""(?:'(?P<sq>[^'\r\n]*)'|"(?P<dq>[^"\r\n]*)"|(?P<uv>[^\s'"]+))"""
_CMD_SPAN = r"[^\r\n|;&]*?"


def _cmd_check(_m: re.Match, value: str) -> bool:
    return bool(value) and not _is_placeholder(value)


_RULE_MYSQL = _Rule(
    "password-assignment",
    rf"(?<![A-Za-z0-9_\-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb(?:-dump|-admin)?)\b"
    rf"{_CMD_SPAN}[ \t]-p{_CMD_VALUE}",
    hints=("mysql", "mariadb"),
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
)
_RULE_SSHPASS = _Rule(
    "password-assignment",
    rf"(?<![A-Za-z0-9_\-])sshpass[ \t]+-p[ \t]*{_CMD_VALUE}",
    hints=("sshpass",),
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
)
_RULE_REDIS = _Rule(
    "password-assignment",
    rf"(?<![A-Za-z0-9_\-])redis-cli\b{_CMD_SPAN}[ \t]-a[ \t]+{_CMD_VALUE}",
    hints=("redis-cli",),
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
)
_RULE_LOGIN_P = _Rule(
    "password-assignment",
    rf"(?<![A-Za-z0-9_\-])(?:docker|podman|nerdctl|buildah|skopeo|helm[ \t]+registry|oras)[ \t]+login\b"
    rf"{_CMD_SPAN}[ \t]-p[ \t]+{_CMD_VALUE}",
    hints=("login",),
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
)
_RULE_CURL_USER = _Rule(
    "password-assignment",
    rf"(?<![A-Za-z0-9_\-])(?:curl|wget|http|httpie)\b{_CMD_SPAN}[ \t](?:-u|--user|--http-user)[ \t=]*['\"]?"
    r"(?P<user>[^\s:'\"]+):(?P<s>[^\s'\"]+)",
    hints=("-u", "--user"),
    check=_cmd_check,
)
_RULE_NETRC = _Rule(
    "password-assignment",
    r"(?<![A-Za-z0-9_\-])login[ \t]+\S+\s+(?:account[ \t]+\S+\s+)?password[ \t]+(?P<s>[^\s\"'<>]+)",
    hints=("login",),
    check=_cmd_check,
)

_RULES: tuple[_Rule, ...] = (
    # structured containers first so their content gets the container's kind
    _RULE_GCP_KEY,
    _RULE_GCP_KEY_ID,
    _RULE_PEM,
    # provider formats (specific before general: anthropic before openai)
    _RULE_AWS_ID,
    _RULE_AWS_SECRET,
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
    _RULE_OPENAI,
    _RULE_JWT,
    # structure-based
    _RULE_URL,
    _RULE_AUTH_HEADER,
    _RULE_BARE_BEARER,
    _RULE_MYSQL,
    _RULE_SSHPASS,
    _RULE_REDIS,
    _RULE_LOGIN_P,
    _RULE_CURL_USER,
    _RULE_NETRC,
    _RULE_XML,
    _RULE_FLAG,
    _RULE_ASSIGN,
)


_LABEL_RE = re.compile(r"\[REDACTED:[a-z0-9\-]*\]?")


def _overlaps(spans: list, start: int, end: int) -> bool:
    i = bisect_right(spans, (start, float("inf"))) - 1
    if i >= 0 and spans[i][1] > start:
        return True
    return i + 1 < len(spans) and spans[i + 1][0] < end


def _apply(rule: _Rule, text: str, counts: Counter) -> str:
    pieces: list[str] = []
    pos = 0  # end of the text already copied to `pieces`
    # spans of labels written by earlier rules: nothing may be redacted inside them
    labels = [m.span() for m in _LABEL_RE.finditer(text)] if _LABEL_MARK in text else []
    search_at = 0
    search = rule.regex.search
    n = len(text)
    while search_at <= n:
        m = search(text, search_at)
        if m is None:
            break
        decision = rule.span(m)
        if decision is None:
            # a rejected candidate must not hide a real secret that starts inside it
            search_at = m.start() + 1
            continue
        kind, start, end = decision
        if labels and _overlaps(labels, start, end):
            search_at = m.start() + 1
            continue
        pieces.append(text[pos:start])
        pieces.append(_label(kind))
        pos = end
        search_at = max(m.end(), end, m.start() + 1)
        counts[kind] += 1
    if not pieces:
        return text
    pieces.append(text[pos:])
    return "".join(pieces)


def _redact_counts(text: str, counts: Counter) -> str:
    if not text:
        return text
    lowered = text.lower()
    for rule in _RULES:
        if rule.hints and not any(h in lowered for h in rule.hints):
            continue
        text = _apply(rule, text, counts)
    return text


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def redact(text: str) -> RedactionResult:
    """Replace every detected secret with ``[REDACTED:<kind>]``."""
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    counts: Counter = Counter()
    out = _redact_counts(text, counts)
    return RedactionResult(out, _findings(counts))


def sanitize(text: str) -> RedactionResult:
    """``strip_private`` then ``redact``: the one call every storing path uses."""
    if not isinstance(text, str):
        raise TypeError(f"sanitize() expects str, got {type(text).__name__}")
    return redact(strip_private(text))


def _sanitize_pair(key: Any, value: str, counts: Counter) -> str:
    """Sanitize a string value, using its dict key as context."""
    counts_before = sum(counts.values())
    out = _redact_counts(strip_private(value), counts)
    if sum(counts.values()) != counts_before or not isinstance(key, str):
        return out
    # the value alone did not reveal a secret: `{"password": "hunter2"}`
    if _normalize_key(key) in ("authorization", "proxy_authorization"):
        v = out.strip()
        scheme, _, cred = v.partition(" ")
        if cred and scheme.lower() in ("bearer", "basic", "token", "negotiate", "ntlm"):
            if not _is_placeholder(cred) and len(cred) >= 4:
                counts["bearer-token"] += 1
                return f"{scheme} {_label('bearer-token')}"
        elif v and not _is_placeholder(v) and len(v) >= 8:
            counts["bearer-token"] += 1
            return _label("bearer-token")
        return out
    if "\n" in out:
        return out
    if _CODE_PREFIX.match(out.strip()):
        return out
    kind = _classify(key, out)
    if kind is None:
        return out
    counts[kind] += 1
    return _label(kind)


def _walk(obj: Any, counts: Counter, key: Any = None) -> Any:
    if isinstance(obj, str):
        return _sanitize_pair(key, obj, counts)
    if isinstance(obj, dict):
        new: dict = {}
        for k, v in obj.items():
            nk = _redact_counts(strip_private(k), counts) if isinstance(k, str) else k
            new[nk] = _walk(v, counts, k)
        return new
    if isinstance(obj, list):
        return [_walk(v, counts, key) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, counts, key) for v in obj)
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
