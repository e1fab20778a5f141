"""Which rules cannot match a text, found in one pass over it: the literals each rule needs.

About a hundred rules run on every stored text; most need a literal the text lacks (a hint,
an anchor, the literal every match begins with). `_Lookup` finds every such literal in one
pass (an Aho-Corasick automaton, or a regex without pyahocorasick) so that `engine._run_rules`
visits only the rules that could match. Skipping changes nothing but the time
(tests/test_redaction.py runs every rule on the same texts to check it).

The process's lookup (`_LOOKUP`) and the count of passes that decides when the rules' leading
literals are worth deriving (`_PASSES_SEEN`) are this module's state, read by `_lookup`.
"""

from __future__ import annotations

import re

from .rules import _RULES

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Any, Optional


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
