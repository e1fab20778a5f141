"""What a redaction writes and reports: the kinds of secret, their labels, the findings.

Every other module of the package writes ``[REDACTED:<kind>]`` through `label_for` and never
inside a label already written (`_LABEL_RE`, `_overlaps`): that is what keeps `sanitize`
idempotent and a secret from being wrapped twice. Findings are reported in the order of
`SECRET_KINDS`, most specific kind first.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

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


#: A label already in the text (its closing bracket optional: a label cut at the end of a text).
_LABEL_RE = re.compile(r"\[REDACTED:[a-z0-9\-]*\]?")


def _overlaps(spans: list, start: int, end: int) -> bool:
    """Whether [start, end) meets one of `spans` (sorted, disjoint (start, end) pairs)."""
    i = bisect_right(spans, (start, float("inf"))) - 1
    if i >= 0 and spans[i][1] > start:
        return True
    return i + 1 < len(spans) and spans[i + 1][0] < end


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
