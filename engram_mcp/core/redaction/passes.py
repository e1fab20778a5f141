"""One text through every pass: the view, the rules, the passes that are not rules.

A pass is: the normalised view first when the text needs one (look-alike characters, foreign
key names, split literals: `textview`), then the rules, the Kubernetes Secret and headless key
passes, login pairs, tables and SQL inserts, secrets in prose. `_redact_counts` repeats the
pass while it still changes the text (a label written for one secret can reveal another).
"""

from __future__ import annotations

from collections import Counter

from engram_mcp.core import textview

from .engine import _run_rules
from .files import _k8s_secrets
from .labels import _replace_regions, label_for
from .logins import _login_pairs
from .private_keys import _headless_pem
from .prose import _prose_pass
from .tables import _sql_inserts, _table_secrets

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
