"""Applying the rules: one rule over a text (`_apply`), every rule in order (`_run_rules`).

`_apply` finds a rule's candidate positions (a search from a leading literal, or its anchors
found with `bytes.find`), asks the rule whether each match is a secret, and writes the labels;
nothing is redacted inside a label an earlier rule wrote, nor a published documentation
example. `_run_rules` runs the candidates of the literals present (`literals._lookup`) in the
order of `rules._RULES`, finding the candidates again after each redaction.
"""

from __future__ import annotations

from collections import Counter

from .labels import _LABEL_MARK, _LABEL_RE, _overlaps, label_for
from .literals import _lookup
from .rule import _ascii_lower, _Rule
from .rules import _RULES
from .values import _is_doc_example

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Callable, Optional


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
