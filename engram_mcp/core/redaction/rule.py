"""The rule: a regular expression, where it may start, and what decides that a match is a secret.

Every rule family (`private_keys`, `providers`, `urls`, `codes`, `assignments`, `commands`,
`files`, `logins`) is a list of `_Rule` objects; `engine._apply` runs one on a text. The type
and the small checks most rules share live here, apart from the families, so that no family
imports another.

Performance (a 20 KB tool output must cost a few milliseconds, and crafted
input must not go quadratic).  Python's ``re`` only skips ahead quickly when a
pattern starts with a case-sensitive literal, so:

* most rules start with such a literal (``AKIA``, ``ghp_``, ``://``, ``--``)
  and are run with ``Pattern.search``;
* case-insensitive rules have *anchors*: lowercase literals located with
  ``bytes.find`` on an ASCII-lowercased copy of the text, where the regex is
  then tried with ``Pattern.match``.

Boundaries that a leading look-behind would express are checked in Python
(``lb`` = characters that must not precede the match), and every open-ended
repetition that could be retried from many positions is bounded.
"""

from __future__ import annotations

import re

from .values import _is_placeholder

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Any, Callable, Iterable, Optional

    Decision = Optional[tuple[str, int, int]]  # (kind, start, end) in the current text

# Characters that must not precede a match (`lb`): letters and digits, a token's, a key's.
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


def _line_before(text: str, pos: int, limit: int = 1024) -> str:
    """The current line up to ``pos`` (at most ``limit`` characters of it)."""
    lo = max(0, pos - limit)
    start = text.rfind("\n", lo, pos) + 1 or lo
    return text[start:pos]


def _cmd_check(_m: re.Match, value: str) -> bool:
    """`_not_placeholder`, and an empty value (`-p ''`) is none either."""
    return bool(value) and not _is_placeholder(value)


def _ascii_lower(text: str) -> bytes:
    # same length as `text` (one byte per code point), ASCII letters lowered
    return text.encode("ascii", "replace").lower()
