"""A value redacted once, redacted wherever else the text repeats it.

A secret is often written twice, once where a rule knows it and once where none can (a
password in a URL and again as a command's argument). The values each label replaced are read
back by aligning the redacted text with the original, and their other occurrences replaced.
"""

from __future__ import annotations

import re
from collections import Counter

from .labels import _LABEL_MARK, label_for
from .values import _looks_random, _password_like

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
