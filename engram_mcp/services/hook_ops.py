"""The daemon side of the Claude Code hooks (`hooks.py` is the client side).

Hooks are short-lived processes without SurrealDB or the embedding model; they send
these operations to the daemon, which owns both. Each function takes the scope access and
the request context like every other daemon operation, so the policy (config keys,
thresholds, what goes into a context block) lives here and not in the hook processes.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engram_mcp.core import artifacts, capture_shapes
from engram_mcp.core.budget import PROMPT_MAX_TOKENS
from engram_mcp.core.display import context_safe
from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.redaction import sanitize
from engram_mcp.services import context as context_ops
from engram_mcp.services import fact_diff, promotion
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.excerpt import query_terms
from engram_mcp.services.recall import recall
from engram_mcp.services.records import check_text
from engram_mcp.services.store import store
from engram_mcp.services.travel_ops import apply_team_memory

PROMPT_BLOCK_TITLE = "Possibly relevant memories for this prompt"
STEP_BLOCK_TITLE = "Memory for this step"
COMPACT_TITLE = "Before compaction"
TEAM_TITLE = "Team memory applied at this session's start"
MAX_TRACKED_SESSIONS = 256
#: The prompt hook considers this many times its limit of recall's best (it filters after recall).
PROMPT_POOL_FACTOR = 5
#: Characters of a memory's text on a prompt block's line: a memory this prompt needs is shown
#: (nearly) whole, the start block's lines being short (context.ITEM_CHARS). With the limit of 3
#: the block stays under ~400 tokens.
PROMPT_ITEM_CHARS = 400
#: Injections kept for `engram ui`'s sessions page (in the daemon's memory: since it started).
MAX_INJECTION_EVENTS = 2000
CAPTURE_CATEGORIES = {"file_change": "capture_file_changes", "error": "capture_failed_commands"}
#: Captures that are scratch of the running session: an edit or a command's error tells what
#: was done, not what was learned. Never injected, never promoted, never quoted in a summary
#: (the Stop hook's `turn_knowledge` captures are what a turn taught, and do all three).
SCRATCH_CATEGORIES = context_ops.SCRATCH_CATEGORIES
CAPTURE_ALLOWED_KEYS = (
    "content",
    "type",
    "importance",
    "category",
    "tags",
    "source",
    "dedup",
    "metadata",
    "created_at",
)


@dataclass
class _SessionShown:
    """One session's injections: ids shown whole, ids the start block showed cut, and the tokens
    injected in its current turn."""

    whole: set[str] = field(default_factory=set)
    cut: set[str] = field(default_factory=set)
    turn_tokens: int = 0


class InjectedMemories:
    """Ids already put in front of Claude per session, so a prompt hook never repeats them.

    A memory the start block showed cut short (`context.is_shortened`) is not counted as seen:
    the prompt hook may show it whole when a prompt needs it (the start block's short lines are
    what lets it hold many memories; the values of a long memory may be past its cut). It is kept
    apart (`shown` returns both) so a prompt shows memories Claude has not seen at all first.

    Also the tokens injected in the session's current turn (the prompt's block and its note, then
    each step's), so a turn's steps only spend what its prompt left of PROMPT_MAX_TOKENS: a turn's
    injections together stay within the per-prompt ceiling. Each prompt starts the count."""

    def __init__(self) -> None:
        self._by_session: OrderedDict[str, _SessionShown] = OrderedDict()
        self._lock = threading.Lock()

    def _entry(self, session_id: str) -> _SessionShown:
        """A session's entry, made the most recent; the oldest beyond MAX_TRACKED_SESSIONS are
        dropped. Called with the lock held."""
        entry = self._by_session.setdefault(session_id, _SessionShown())
        self._by_session.move_to_end(session_id)
        while len(self._by_session) > MAX_TRACKED_SESSIONS:
            self._by_session.popitem(last=False)
        return entry

    def shown(self, session_id: str | None) -> tuple[set[str], set[str]]:
        """(ids a block showed whole, ids the start block showed cut) in a session, as copies."""
        if not session_id:
            return set(), set()
        with self._lock:
            entry = self._entry(session_id)
            return set(entry.whole), set(entry.cut)

    def add(self, session_id: str | None, ids: Iterable[str], *, cut: Iterable[str] = (), tokens: int = 0) -> None:
        """Record what a block showed: `ids` whole, `cut` cut short, `tokens` spent in this turn."""
        if session_id:
            with self._lock:
                entry = self._entry(session_id)
                entry.whole.update(ids)
                entry.cut.update(cut)
                entry.turn_tokens += max(0, int(tokens))

    def start_turn(self, session_id: str | None, tokens: int = 0) -> None:
        """A prompt begins a turn: its count starts at `tokens` (the Stop hook's note, if any)."""
        if session_id:
            with self._lock:
                self._entry(session_id).turn_tokens = max(0, int(tokens))

    def turn_tokens(self, session_id: str | None) -> int:
        """Tokens injected so far in the session's current turn."""
        if not session_id:
            return 0
        with self._lock:
            return self._entry(session_id).turn_tokens

    def forget(self, session_id: str | None) -> None:
        with self._lock:
            self._by_session.pop(session_id or "", None)


PROMPT_SHOWN_CHARS = 160  # of each prompt, kept beside its injection (engram ui's Sessions)


class InjectionLog:
    """What the hooks put in front of Claude, per session: the memory ids of the context block at
    session start and of each prompt's block, with when and how many tokens.

    So a person can see why Claude knew something (`engram ui`, Sessions). Kept in the daemon's
    memory only, newest `MAX_INJECTION_EVENTS`: it answers "what was injected recently", not an
    audit trail across restarts, and it holds ids, never memory text (of a prompt, its first
    PROMPT_SHOWN_CHARS characters, so the page can say which prompt it was).
    """

    def __init__(self, limit: int = MAX_INJECTION_EVENTS) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=limit)
        self._lock = threading.Lock()

    def record(self, session_id: str | None, kind: str, ids: list[str], tokens: int, prompt: str = "") -> None:
        """One injection; `prompt` is the prompt's text (or, for a step, the step's): its start is kept."""
        if not session_id or not (ids or prompt):
            return
        event = {"session_id": session_id, "kind": kind, "memory_ids": list(dict.fromkeys(ids)), "tokens": tokens}
        event["prompt"] = sanitize(prompt).text[:PROMPT_SHOWN_CHARS] if prompt else ""  # no secret, no <private>
        event["at"] = time.time()
        with self._lock:
            self._events.append(event)

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(e) for e in self._events]


INJECTION_LOG = InjectionLog()


INJECTED = InjectedMemories()


def _fence(title: str, lines: list[str]) -> str:
    return context_ops.fenced("".join(f"{line}\n" for line in [f"## {title}", *lines]))


def session_start(access: ScopeAccess, ctx: RequestContext, *, source: str = "startup") -> dict[str, Any]:
    """Open/resume the session, recover abandoned ones, maintain when due, build the context block."""
    if not isinstance(source, str) or len(source) > 40:
        raise InvalidInput("source must be a short string", field="source")
    try:
        opened = promotion.session_start(access, ctx, {"source": source})
    except (
        StoreUnavailable
    ) as exc:  # the project store is unusable (refused, locked, corrupt): the other scopes still help
        opened = {"degraded": True, "warning": exc.message}
    else:  # teammates' shared memories arrive before the context is built, so it can carry them
        if (team := apply_team_memory(access, ctx)) is not None:
            opened["team_memory"] = team
    full_budget = budget = int(access.config(ctx.project_root).context_token_budget)
    snapshot = _compact_snapshot(access, ctx) if source == "compact" else None
    block_parts: list[str] = []
    team_note = team_report_line(opened.get("team_memory"))
    if team_note:
        block_parts.append(_fence(TEAM_TITLE, [context_ops.safe(team_note)]))
        budget -= context_ops.estimate_tokens(block_parts[-1])
    if snapshot:
        block_parts.append(_fence(COMPACT_TITLE, [context_ops.safe(" ".join(snapshot.split("\n")))]))
        budget -= context_ops.estimate_tokens(block_parts[-1])
    built: dict[str, Any] = {}
    if budget >= 100:
        built = context_ops.build_context(access, ctx, max_tokens=min(budget, 8000), strengthen=False)
        if built.get("context_block"):
            block_parts.append(built["context_block"])
            ids = list(built.get("memory_ids") or ())  # not every id in the text: a change note names the newer one
            shortened = set(built.get("shortened") or ())
            INJECTED.add(ctx.session_id, [i for i in ids if i not in shortened], cut=shortened)
            INJECTION_LOG.record(
                ctx.session_id, "session_start", ids, context_ops.estimate_tokens(built["context_block"])
            )
    return {
        "additional_context": "\n".join(block_parts) or None,
        "tokens": sum(context_ops.estimate_tokens(p) for p in block_parts),
        "budget": full_budget,
        "session": opened,
        **({"team_note": context_safe(team_note)} if team_note else {}),
    }


def team_report_line(report: Any) -> str | None:
    """One sentence of what applying the team folder brought at session start, or None when it
    brought nothing: N new or changed memories and by whom, conflicts, files left alone or
    waiting, and the command to review them. Reads the report of `apply_team_memory` whether it
    holds lists (`added`, `arrivals` with authors, `conflicts`, ...) or only their counts."""
    if not isinstance(report, dict):
        return None
    if report.get("error"):
        return f"Team memory of this repository could not be applied: {str(report['error'])[:200]}. Run `engram sync` to see why."
    changed = _count(report, "added") + _count(report, "updated")
    conflicts, left_alone = _count(report, "conflicts"), _count(report, "left_alone") or _count(report, "errors")
    pending, forgotten, redacted = _count(report, "pending"), _count(report, "forgotten"), _count(report, "redactions")
    if not (changed or conflicts or left_alone or pending or forgotten or redacted):
        return None
    parts = []
    if changed:
        authors = _authors(report)
        by = (
            f" (by {', '.join(authors[:MAX_AUTHORS_NAMED])}{', ...' if len(authors) > MAX_AUTHORS_NAMED else ''})"
            if authors
            else ""
        )
        parts.append(
            f"{changed} new or changed team {'memory' if changed == 1 else 'memories'} of this repository{by}, written by teammates, not by the user"
        )
    if conflicts:
        parts.append(f"{conflicts} {'conflict' if conflicts == 1 else 'conflicts'}")
    if left_alone:
        parts.append(f"{left_alone} {'file' if left_alone == 1 else 'files'} left alone")
    if forgotten:
        parts.append(f"{forgotten} forgotten (their files were deleted)")
    if redacted:
        parts.append(f"{redacted} {'file' if redacted == 1 else 'files'} holding secrets, applied redacted")
    if pending:
        parts.append(f"{pending} {'file waits' if pending == 1 else 'files wait'} for the next sync")
    review = report.get("review") or report.get("review_command") or "engram sync"
    return f"A pull brought: {'; '.join(parts)}. Review with `{str(review)[:100]}`."


#: Authors a session start's team line names before "...".
MAX_AUTHORS_NAMED = 3
#: What the report calls the author of a file git does not track (not a name to show).
UNKNOWN_AUTHOR = "unknown"


def _count(report: dict[str, Any], name: str) -> int:
    """How many of `name` a report holds: its `counts` entry first (a list may be cut short),
    else the number itself, else the list's length."""
    counts = report.get("counts")
    for value in (counts.get(name) if isinstance(counts, dict) else None, report.get(name)):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    value = report.get(name)
    return len(value) if isinstance(value, list) else 0


def _authors(report: dict[str, Any]) -> list[str]:
    """The distinct authors a report names (its `arrivals`, `added`/`updated` entries or `authors`)."""
    found: list[str] = []
    entries = [e for k in ("arrivals", "added", "updated") if isinstance(report.get(k), list) for e in report[k]]
    names = [e.get("author") for e in entries if isinstance(e, dict)]
    if isinstance(report.get("authors"), (list, dict)):
        names.extend(report["authors"])
    for name in names:
        if isinstance(name, str) and name.strip() and name != UNKNOWN_AUTHOR:
            short = " ".join(name.split("<")[0].split()) or name.strip()
            if short not in found:
                found.append(short[:60])
    return found


def _compact_snapshot(access: ScopeAccess, ctx: RequestContext) -> str | None:
    """The latest working context PreCompact saved in this session."""
    try:
        found = recall(
            access,
            ctx,
            query="working context saved before compaction",
            scope="session",
            type="working",
            category="compact_snapshot",
            limit=5,
            strengthen=False,
            strategy="keyword",
        )
    except StoreUnavailable:
        return None
    mems = sorted(found.get("memories") or [], key=lambda m: str(m.get("created_at") or ""), reverse=True)
    return mems[0]["content"] if mems else None


def _nothing_injected(ctx: RequestContext, prompt: str, found: dict[str, Any]) -> dict[str, Any]:
    """The prompt hook's answer when no memory goes in: the log still records the prompt (for
    `engram ui`), and the answer says how many memories were weighed."""
    INJECTION_LOG.record(ctx.session_id, "prompt", [], 0, prompt=prompt)
    return {"additional_context": None, "considered": len(found.get("memories") or [])}


def prompt_context(
    access: ScopeAccess, ctx: RequestContext, *, prompt: str, max_tokens: int | None = None
) -> dict[str, Any]:
    """The few memories most relevant to a prompt, only when they clear the relevance bar (the
    prompt's best match a lower one, `_best_match`, `_clears_bar`), within `max_tokens` (at most
    PROMPT_MAX_TOKENS: the hook passes what the Stop hook's note leaves)."""
    prompt = check_text(prompt, "prompt", limit=4000)
    budget = PROMPT_MAX_TOKENS if max_tokens is None else min(PROMPT_MAX_TOKENS, int(max_tokens))
    INJECTED.start_turn(ctx.session_id, PROMPT_MAX_TOKENS - budget)  # the Stop hook's note, if any
    cfg = access.config(ctx.project_root)
    if not cfg.user_prompt_recall:
        return {"additional_context": None, "reason": "user_prompt_recall is off"}
    limit = int(cfg.prompt_recall_limit)
    # a wider pool than the limit: scratch, summaries and what this session already saw are left out after
    found = recall(access, ctx, query=prompt, limit=min(50, limit * PROMPT_POOL_FACTOR), strengthen=False)
    seen, shown_cut = INJECTED.shown(ctx.session_id)
    # The bar is absolute (cosine similarity to the prompt), not the recall's relevance, which is
    # relative to the best candidate and so high for the best match of even an unrelated prompt.
    ranked, bar = found.get("memories") or [], float(cfg.prompt_recall_min_relevance)
    # only knowledge: a scratch capture or a summary is never injected, nor a memory this session
    # wrote (`_written_here`), so one ranked first does not take the place of the prompt's best match
    knowledge = [m for m in ranked if context_ops.injectable(m) and not _written_here(ctx, m)]
    best = _best_match(knowledge)
    candidates = [
        m
        for m in knowledge
        if _clears_bar(m, m is best, bar) and m["id"] not in seen and not context_ops.outdated(access, ctx, m)
    ]
    # What the start block showed cut goes after what Claude has not seen at all (a stable sort
    # keeps recall's order within each): its line comes back only for what its cut left out,
    # which the month replay found needed in 6 of 95 re-shows; unseen first brought 3 more of
    # its 107 needs into context (diligent context recall 0.813 -> 0.841).
    picked = _unseen_first(candidates, shown_cut)[:limit]
    # The user's rule for a kind of artifact the prompt asks to write comes first: a step would
    # bring it later (`step_context`), after this block had spent the turn's budget.
    terms = query_terms(prompt)
    rule = _kind_rule(
        access, ctx, artifacts.prompt_kinds(prompt), {*seen, *(m["id"] for m in picked)}, shown_cut, terms
    )
    picked = [rule, *picked] if rule else picked
    _count_own_in_use(access, ctx, ranked, seen, bar, limit)
    if not picked:
        return _nothing_injected(ctx, prompt, found)
    lines = _Lines(ctx.project_root.name or None, _newer(access, ctx, found, picked), terms, shown_cut)
    picked, block = _prompt_block(picked, lines, budget)
    if context_ops.estimate_tokens(block) > budget:  # not even one line fits beside the note
        return _nothing_injected(ctx, prompt, found)
    INJECTED.add(ctx.session_id, [m["id"] for m in picked], tokens=context_ops.estimate_tokens(block))
    # Cleared the bar for the user's own prompt: the work used it, as a recall Claude made would
    # have. Without this a fact that keeps helping decays as if nobody needed it (the month
    # replay's maintenance archived most knowledge within three weeks). The start block does not
    # strengthen: it shows memories whatever the task, and would keep them alive for that alone.
    # Nor does recall's first memory let in below the bar: offered on the fused rank's word, not
    # known to serve the work (counted as used, it reordered later start blocks and cost the
    # public month world four needs).
    context_ops.strengthen_used(access, ctx, [m for m in picked if m is rule or _clears_bar(m, False, bar)])
    INJECTION_LOG.record(
        ctx.session_id, "prompt", [m["id"] for m in picked], context_ops.estimate_tokens(block), prompt=prompt
    )
    return {
        "additional_context": block,
        "memory_ids": [m["id"] for m in picked],
        "tokens": context_ops.estimate_tokens(block),
    }


#: Cosine a memory needs to a tool step (a command and its error, or a file's path and new text) to
#: be shown after it. Code and commands sit far from prose in meaning: on the month replay's worlds
#: the memory a step needed was recall's first at 0.45-0.95, while at 0.40 as many lines came for
#: nothing; 0.50 kept every gain and added no line on the held-out world.
STEP_MIN_COSINE = 0.50
#: A memory the start block showed cut comes back after a step this close to it: its cut may have
#: hidden the value the step needs (a migration command past the first 240 characters).
STEP_CUT_COSINE = 0.60
#: Memories shown after one step at most: a step is narrow, and every line costs the turn's budget.
STEP_LIMIT = 1
#: Characters of a memory's text on a step block's line: between the start block's cut and the
#: prompt's, so the line fits beside a prompt block within the turn's ceiling more often.
STEP_ITEM_CHARS = 320
#: The line lengths a step's block tries, longest first, when what the turn's prompt left is short:
#: the start block's cut (context.ITEM_CHARS) keeps a memory's point, where the command or the
#: value a step needs usually is, in a block that fits beside a prompt block of two lines.
STEP_LINE_CHARS = (STEP_ITEM_CHARS, context_ops.ITEM_CHARS)
#: Recall's candidates for a step, before what this session saw is left out.
STEP_POOL = 10


def _step_may_show(mem: dict[str, Any], seen: set[str], shown_cut: set[str]) -> bool:
    """Close enough to the step, and not seen in this session (a cut line only when very close)."""
    similarity = float(mem.get("similarity") or 0.0)
    if mem["id"] in seen or similarity < STEP_MIN_COSINE:
        return False
    return mem["id"] not in shown_cut or similarity >= STEP_CUT_COSINE


def _newer(
    access: ScopeAccess, ctx: RequestContext, found: dict[str, Any], shown: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """For each memory of `shown`, the newer memories its values may have been replaced by
    (`context.newer_lists`), with recall's pool and the scopes' strongest (the ones a session
    start would show) at hand, so a line carries the change."""
    pool = context_ops.current(access, ctx, [*(found.get("memories") or []), *context_ops.correction_pool(access, ctx)])
    return context_ops.newer_lists(access, ctx, shown, context_ops.with_changes_elsewhere(access, ctx, pool))


def step_context(access: ScopeAccess, ctx: RequestContext, *, step: str) -> dict[str, Any]:
    """The memory a tool step just taken most likely needs, if it is close to the step and this
    session has not seen it: the port a database listens on, after a command that used another; the
    procedure that names a migration command, after that command ran.

    A prompt says what the work is about; the steps say what is being done, which is when a
    convention or a fix applies. Within what the turn's prompt left of PROMPT_MAX_TOKENS; off with
    `user_prompt_recall`, as the prompt's own recall."""
    step = check_text(step, "step", limit=4000)
    cfg = access.config(ctx.project_root)
    if not cfg.user_prompt_recall:
        return {"additional_context": None, "reason": "user_prompt_recall is off"}
    budget = PROMPT_MAX_TOKENS - INJECTED.turn_tokens(ctx.session_id)
    if budget < context_ops.estimate_tokens(_fence(STEP_BLOCK_TITLE, [])):  # no line could fit: no recall
        return {"additional_context": None, "reason": "the turn's budget is spent"}
    found = recall(access, ctx, query=step, limit=STEP_POOL, strengthen=False)
    seen, shown_cut = INJECTED.shown(ctx.session_id)
    eligible = (
        m
        for m in found.get("memories") or []
        if context_ops.injectable(m)
        and _step_may_show(m, seen, shown_cut)
        and not _written_here(ctx, m)
        and not context_ops.outdated(access, ctx, m)
    )
    candidates = list(itertools.islice(eligible, STEP_LIMIT))  # `outdated` only until enough are found
    kinds = artifacts.step_kinds(step)
    if not candidates and not kinds:
        return {"additional_context": None}
    terms = query_terms(" ".join([step, *(k.query for k in kinds)]))
    rule = _kind_rule(access, ctx, kinds, {*seen, *(m["id"] for m in candidates)}, shown_cut, terms)
    candidates += [rule] if rule else []
    if not candidates:
        return {"additional_context": None}
    lines = _Lines(ctx.project_root.name or None, _newer(access, ctx, found, candidates), terms, shown_cut)
    candidates, block = _step_block(candidates, lines, budget)
    if not candidates:
        return {"additional_context": None, "reason": "the turn's budget is spent"}
    tokens = context_ops.estimate_tokens(block)
    ids = [m["id"] for m in candidates]
    INJECTED.add(ctx.session_id, ids, tokens=tokens)  # as seen: a step never repeats a step's line
    context_ops.strengthen_used(access, ctx, candidates)
    INJECTION_LOG.record(ctx.session_id, "step", ids, tokens, prompt=step)
    return {"additional_context": block, "memory_ids": ids, "tokens": tokens}


#: Recall's candidates for a kind of artifact a step writes (`_kind_rule`).
KIND_POOL = 10


def _kind_rule(
    access: ScopeAccess,
    ctx: RequestContext,
    kinds: list[artifacts.ArtifactKind],
    seen: set[str],
    shown_cut: set[str],
    terms: frozenset[str],
) -> dict[str, Any] | None:
    """The user's memory that names a kind of artifact the step writes (SQL, Markdown, a commit
    message: `core/artifacts.py`), if this session has not seen it and its line would name the
    kind: the user's rules for that kind hold in every project and are needed when one is written,
    which a prompt rarely says. Recall's first for the kind that names it as a word."""
    for kind in kinds:
        found = recall(access, ctx, query=kind.query, scope="user", limit=KIND_POOL, strengthen=False)
        for m in found.get("memories") or []:
            if m["id"] in seen or not context_ops.injectable(m):
                continue
            if _written_here(ctx, m):
                continue
            shown = context_ops.line_body(m, min(STEP_LINE_CHARS), terms if m["id"] in shown_cut else None)
            if kind.named_in(shown) and not context_ops.outdated(access, ctx, m):
                return m
    return None


def _step_block(picked: list[dict[str, Any]], lines: _Lines, budget: int) -> tuple[list[dict[str, Any]], str]:
    """A step's block within `budget` tokens: the longest lines that fit (STEP_LINE_CHARS), the
    last memory left out while none do; ([], "") when not even the first fits."""
    while picked:
        for limit in STEP_LINE_CHARS:
            block = _fence(STEP_BLOCK_TITLE, [lines.render(m, limit) for m in picked])
            if context_ops.estimate_tokens(block) <= budget:
                return picked, block
        picked = picked[:-1]
    return [], ""


#: How far below the configured bar (`prompt_recall_min_relevance`, cosine) recall's first memory
#: for a prompt may be and still go in: first in the fused ranking, its words (a keyword match)
#: and its meaning agree it is this prompt's best, though a short or plain prompt ("Open the PR
#: for the hours work.") is far from every memory in meaning alone. Relative, so a stricter bar
#: a user sets stays stricter for it too (the default 0.30 gives 0.20).
FIRST_HIT_COSINE_DISCOUNT = 0.10


def _count_own_in_use(
    access: ScopeAccess, ctx: RequestContext, ranked: list[dict[str, Any]], seen: set[str], bar: float, limit: int
) -> None:
    """A memory this session wrote that a later prompt of it matches (the bar, no discount) is in
    use, as a line shown for it would be: counted as used once a session (recorded as seen), though
    never shown (`_written_here`). A session that keeps coming back to what it learned says that
    knowledge matters; uncounted, such facts lost their place in later start blocks (the public
    month world lost two needs when these lines were left out without it)."""
    own = [
        m
        for m in ranked
        if _written_here(ctx, m)
        and context_ops.injectable(m)
        and m["id"] not in seen
        and _clears_bar(m, False, bar)
        and not context_ops.outdated(access, ctx, m)
    ][:limit]
    if own:
        INJECTED.add(ctx.session_id, [m["id"] for m in own])
        context_ops.strengthen_used(access, ctx, own)


def _written_here(ctx: RequestContext, mem: dict[str, Any]) -> bool:
    """Whether `mem` was stored in this session: Claude wrote it from this conversation, which
    still holds it, so a line of it tells Claude nothing and takes the place of one that might."""
    return bool(ctx.session_id) and mem.get("session_id") == ctx.session_id


def _best_match(memories: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The prompt's best match among `memories`: the first by relevance (words and meaning fused),
    not by recall's final score, whose priors (scope, importance, recency, status) order near ties
    but say nothing of the prompt. A memory that only a recent use lifts to the top (the user's
    commit rule, shown for every commit) is no evidence of a match; given the lower bar, it left
    the memory that matched best to the full one (measured on the eighth world: a staging-model
    prompt lost its hashing decision to the commit rule). Recall's first when no memory carries
    a relevance (a keyword-only or degraded recall)."""
    scored = [m for m in memories if isinstance(m.get("relevance_score"), int | float)]
    if not scored:
        return memories[0] if memories else None
    return max(scored, key=lambda m: float(m["relevance_score"]))  # the first of equals: recall's order


def _clears_bar(mem: dict[str, Any], first: bool, bar: float) -> bool:
    """Whether `mem` is close enough to the prompt to inject: the configured bar, or that bar less
    FIRST_HIT_COSINE_DISCOUNT for the prompt's best match of those the hook could inject (`_best_match`)."""
    similarity = float(mem.get("similarity") or 0.0)
    return similarity >= bar or (first and similarity >= bar - FIRST_HIT_COSINE_DISCOUNT)


#: How much closer (cosine) to the prompt a memory the start block showed cut must be than every
#: unseen candidate to keep its place before them.
CUT_LEAD_COSINE = 0.2


def _unseen_first(candidates: list[dict[str, Any]], shown_cut: set[str]) -> list[dict[str, Any]]:
    """`candidates` (recall's order) with what the start block showed cut after what Claude has not
    seen at all, unless it is by far the closest to the prompt (CUT_LEAD_COSINE above every unseen
    one): "uploads bounce with HTTP 413" at 0.72 is what that prompt needs, whatever two unseen
    memories at 0.35 offer, and its cut line did not show the limit that causes it."""
    unseen = [m for m in candidates if m["id"] not in shown_cut]
    best = max((float(m.get("similarity") or 0.0) for m in unseen), default=0.0)
    lead = [
        m for m in candidates if m["id"] in shown_cut and float(m.get("similarity") or 0.0) >= best + CUT_LEAD_COSINE
    ]
    rest = [m for m in candidates if m["id"] in shown_cut and m not in lead]
    return [*lead, *unseen, *rest]


def turn_changes(access: ScopeAccess, ctx: RequestContext, *, prompt: str, answer: str = "") -> dict[str, Any]:
    """The stored memories a finished turn's words gave a new value (`promotion.changed_memories`),
    for the Stop hook: such a turn teaches even when no rule, fact or decision shape is in it. The
    hook redacted both texts before sending them (as for `prompt_context`); nothing here stores them."""
    prompt = check_text(prompt, "prompt", limit=4000)
    answer = check_text(answer, "answer", limit=4000)
    return {"changed": promotion.changed_memories(access, ctx, prompt, answer)}


def promote_stated(access: ScopeAccess, ctx: RequestContext, *, ids: list[str]) -> dict[str, Any]:
    """The project memories Claude stored in a turn where the user said it holds in every project,
    carried on to the user scope (`promotion.promote_stated`); queued by the Stop hook."""
    return promotion.promote_stated(access, ctx, [str(i) for i in ids][:MAX_STATED_IDS])


#: Memories one turn's hook may ask to carry on to the user scope.
MAX_STATED_IDS = 8


@dataclass(frozen=True)
class _Lines:
    """How a prompt's or a step's block writes a memory's line: the repository its foreign
    memories are labelled against, the newer memories a replaced value of each is annotated with
    (by memory id), and the work's terms, for which a memory the start block showed cut is
    excerpted (`excerpt`)."""

    repository: str | None
    newer: dict[str, list[dict[str, Any]]]
    terms: frozenset[str]
    shown_cut: set[str]

    def render(self, mem: dict[str, Any], limit: int) -> str:
        """`mem`'s line of at most `limit` characters of its text."""
        return context_ops.memory_line(
            mem,
            repository=self.repository,
            limit=limit,
            newer=self.newer.get(mem["id"], []),
            after_cut=self.terms if mem["id"] in self.shown_cut else None,
        )


def _prompt_block(picked: list[dict[str, Any]], lines: _Lines, budget: int) -> tuple[list[dict[str, Any]], str]:
    """The prompt block of `picked` within `budget` tokens: lines of PROMPT_ITEM_CHARS, the
    best first, as many as fit (at least one, cut shorter if it alone is too long). Whole lines
    rather than more cut ones: a memory the start block showed cut comes back for what its cut
    left out, its sentences about the prompt (`excerpt`; the month replay: three lines cut at the
    start block's length repeated what that block already showed)."""

    def render(mems: list[dict[str, Any]], limit: int) -> str:
        return _fence(PROMPT_BLOCK_TITLE, [lines.render(m, limit) for m in mems])

    block = render(picked, PROMPT_ITEM_CHARS)
    while len(picked) > 1 and context_ops.estimate_tokens(block) > budget:
        picked = picked[:-1]
        block = render(picked, PROMPT_ITEM_CHARS)
    if context_ops.estimate_tokens(block) > budget:
        block = render(picked, context_ops.ITEM_CHARS)
    return picked, block


def capture(
    access: ScopeAccess, ctx: RequestContext, *, request_id: str | None = None, **memory: Any
) -> dict[str, Any]:
    """Store an observation a hook queued, unless the user turned that capture off."""
    key = CAPTURE_CATEGORIES.get(memory.get("category") or "")
    if key and not getattr(access.config(ctx.project_root), key):
        return {"action": "skipped", "reason": f"{key} is off"}
    if not ctx.session_id:
        raise InvalidInput("a captured observation needs the session id", field="session_id")
    args = {k: v for k, v in memory.items() if k in CAPTURE_ALLOWED_KEYS}
    given = args.get("source")
    source = given if isinstance(given, dict) else {}
    args["source"] = {**source, "origin": "hook"}  # a capture is the hook's, whatever its payload says
    if args.get("category") in SCRATCH_CATEGORIES:
        args["metadata"] = {**_with_swaps(args.get("metadata")), "scratch": True, "promote": False}
    if request_id is not None:
        args["request_id"] = request_id
    if args.get("category") == TURN_KNOWLEDGE and isinstance(args.get("content"), str):
        replaced = promotion.replaced_memories(access, ctx, args["content"])
        if replaced:  # linked at session end, where the new memory and the old one share a scope
            given_meta = args.get("metadata")
            args["metadata"] = {**(given_meta if isinstance(given_meta, dict) else {}), "replaces": replaced}
    return store(access, ctx, scope="session", **args)


#: The Stop hook's capture of what a turn taught (hooks.TURN_KNOWLEDGE_CATEGORY).
TURN_KNOWLEDGE = "turn_knowledge"


def _whole_edit(pair: Any) -> bool:
    """Whether `pair` is an edit as the hook sends one: two texts, neither over the bound (a longer
    one, from another sender, is left out as the hook leaves it out, never read cut)."""
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(x, str) and len(x) <= capture_shapes.EDIT_TEXT_MAX_CHARS for x in pair)
    )


def _with_swaps(meta: Any) -> dict[str, Any]:
    """A capture's metadata with a file change's edits read into the values they swapped: the
    edits' text stays out of the store, which keeps the line the capture shows."""
    out = dict(meta) if isinstance(meta, dict) else {}
    edits = out.pop(capture_shapes.EDITS_KEY, None)
    swaps: dict[str, str] = {}
    for pair in edits if isinstance(edits, list) else []:
        if _whole_edit(pair):
            for old, new in fact_diff.edit_swaps(pair[0], pair[1]).items():
                swaps.setdefault(old, new)
    if swaps:
        out[capture_shapes.SWAPS_KEY] = swaps
    return out


def session_end(access: ScopeAccess, ctx: RequestContext, *, reason: str = "session_end") -> dict[str, Any]:
    """Promote the session and drop it (idempotent: a second call finds it ended)."""
    INJECTED.forget(ctx.session_id)
    result = promotion.session_end(access, ctx)
    return {**result, "end_reason": str(reason)[:40]}


def hook_config(access: ScopeAccess, ctx: RequestContext) -> dict[str, Any]:
    cfg = access.config(ctx.project_root)
    return {"stop_hook": bool(cfg.stop_hook), "user_prompt_recall": bool(cfg.user_prompt_recall)}
