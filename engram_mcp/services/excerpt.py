"""What a prompt's or a step's line shows of a long memory the session start showed cut.

The start block's lines are short (context.ITEM_CHARS), and the memories people and Claude write
run longer (a turn written down: the point, what was asked, the outcome, the context). When a
prompt or a step later brings such a memory back, its head is what Claude already saw; what the
work needs is often further in: "…draft PR #231 is open with Tomasz Wójcik as reviewer, since he
owns the gateway protocol" for a prompt about opening a PR. So the line leaves out the first
sentence and shows the memory's sentences that share the most words with the prompt or step, in
the memory's own order, "…" marking what was left out (a search engine's result snippet does the
same). Shorter than the whole text, the line also fits beside the prompt's other lines more often.

A memory Claude has not seen keeps its head on every line: excerpting those surfaced sentences
the head leaves out, such as a failed command with a tool replaced since, and cost the month
replay needs. So does a line here when no sentence shares enough words with the work.

An episode is the exception to showing the head (`with_lesson`): it tells what happened first
and what it taught after ("From now on keep openssl-sys out of the tree ..."), often past the
line's cut, so its line keeps a shorter start of the event and then the rule.
"""

from __future__ import annotations

import re

from engram_mcp.index.tokenizer import tokenize
from engram_mcp.services.fact_diff import lays_down_a_rule
from engram_mcp.services.records import clip_words

__all__ = ["SENTENCE_BREAK_RE", "excerpt", "query_terms", "with_lesson"]

#: Where one sentence ends and the next begins: the blanks after a full stop, "!" or "?".
SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?])\s+")
#: Terms a sentence must share with the work to be chosen: one shared word ("run", "use") is as
#: often chance as a match.
MIN_SHARED_TERMS = 2
#: Fewer characters than this left on a line are not worth a clipped sentence.
MIN_CLIP_CHARS = 60
GAP = "…"
#: Of an episode's line, the share its lesson may take: the event told first keeps the rest.
LESSON_SHARE = 0.6


def query_terms(text: str) -> frozenset[str]:
    """The BM25 terms of a prompt or a step (stemmed, stop words dropped), tokenised once per block."""
    return frozenset(tokenize(text or ""))


def excerpt(text: str, limit: int, terms: frozenset[str]) -> str:
    """`text` within `limit` characters for a reader who saw its head: whole when it fits; else
    its sentences after the first that share the most `terms` (at least MIN_SHARED_TERMS), in
    order, "…" marking each gap; its head (`clip_words`) when none shares enough."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    sentences = SENTENCE_BREAK_RE.split(flat)
    scores = [0, *(_shared(terms, s) for s in sentences[1:])]
    by_match = sorted((i for i, score in enumerate(scores) if score), key=lambda i: (-scores[i], i))
    chosen: dict[int, str] = {}
    for i in by_match:
        trial = {**chosen, i: sentences[i]}
        if len(_render(trial, len(sentences))) <= limit:
            chosen = trial
        elif not chosen:  # the best match alone is too long: its start, after the gap mark
            start = clip_words(sentences[i], limit - 2 * len(GAP + " "))
            if len(start) >= MIN_CLIP_CHARS:
                chosen = {i: start}
    return _render(chosen, len(sentences)) if chosen else clip_words(flat, limit)


def with_lesson(text: str, limit: int) -> str:
    """An episode within `limit` characters: its head, or, when the cut leaves out the whole of the
    rule it lays down, its first sentence cut shorter and then that rule ("The cross build on
    mistral failed in openssl-sys … From now on keep openssl-sys out of the tree: any HTTP or TLS
    crate gets … its rustls-tls feature."). An episode tells what happened first and what it
    taught after, past the cut of a line: the month replay's fixes were shown as their events."""
    flat = " ".join(str(text).split())
    head = clip_words(flat, limit)
    if head == flat:
        return flat
    sentences = SENTENCE_BREAK_RE.split(flat)
    shown = len(head) - len(GAP)
    at = 0
    for i, sentence in enumerate(sentences):
        at = flat.find(sentence, at)
        if not lays_down_a_rule(sentence):
            continue
        if i == 0 or at < shown:  # the line shows it, or shows it begin
            return head
        rule = clip_words(sentence, int(limit * LESSON_SHARE))
        first = clip_words(sentences[0], limit - len(rule) - 2 * len(f" {GAP}") - 1)
        return _render({0: first, i: rule}, len(sentences))
    return head


def _shared(terms: frozenset[str], sentence: str) -> int:
    """How many of `terms` a sentence has, 0 below MIN_SHARED_TERMS."""
    shared = len(terms & set(tokenize(sentence)))
    return shared if shared >= MIN_SHARED_TERMS else 0


def _render(chosen: dict[int, str], total: int) -> str:
    """The chosen sentences in the memory's order, "…" where sentences were left out between,
    before or after them (a clipped sentence ends in its own "…")."""
    parts: list[str] = []
    last = -1
    for i in sorted(chosen):
        if i != last + 1 and not (parts and parts[-1].endswith(GAP)):
            parts.append(GAP)
        parts.append(chosen[i])
        last = i
    if last != total - 1 and not parts[-1].endswith(GAP):
        parts.append(GAP)
    return " ".join(parts)
