"""Decay, strength, fusion and the final ranking score.

strength  = importance * exp(-ln2 * days_since_access / (half_life(type) * (1 + 0.2 * access_count)))
relevance = kw_weight * bm25 / best_bm25 + (1 - kw_weight) * (cos - COSINE_FLOOR) / (best_cos - COSINE_FLOOR)
            (kw_weight: 0.3-0.6 by the best keyword match's coverage of the query, then raised for codes)
final     = relevance + SCOPE_PRIOR * scope_weight + IMPORTANCE_PRIOR * (importance - 0.5)
            + RECENCY_PRIOR * recency + PROCEDURE_PRIOR * [query asks how to do something and
              the memory is procedural]

Relevance to the query comes first; scope, importance, recency and the how-to preference are
small priors that break ties and settle conflicts (their whole range, 0.36 or 0.46 for a how-to
question, is less than the relevance gap
between a relevant memory and a loosely related one). The numbers were calibrated by
measurement on multi-scope coding memory and on LoCoMo together (docs/architecture.md,
"Ranking"). `recency` is the decay factor itself (strength / importance): how fresh the
memory is for its type, extended by every recall. Session memories do not decay during
their session. Everything here is pure and vectorised so the retrieval path stays in numpy.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

import numpy as np

LN2 = math.log(2.0)
SECONDS_PER_DAY = 86_400.0
HALF_LIFE_DAYS: dict[str, float] = {
    "working": 1.0 / 24.0,  # ~1 hour
    "episodic": 1.0,
    "semantic": 7.0,
    "procedural": 30.0,
}
ACCESS_HALF_LIFE_BONUS = 0.2  # each recall extends the effective half-life by 20%
# Priors added to relevance (which lies in about [0, 1.3]): the favoured scope of the profile
# gets SCOPE_PRIOR, importance 1.0 gets +IMPORTANCE_PRIOR / 2 and 0.0 as much below, a memory
# fresh for its type gets RECENCY_PRIOR. Measured: larger priors let user habits and session
# notes push out the project's own answer; smaller ones lose the ties they exist to break.
SCOPE_PRIOR = 0.15
IMPORTANCE_PRIOR = 0.225
RECENCY_PRIOR = 0.09
# A question asking how to do something ("how do I ...", "how should we ...") prefers the memory
# saved as a procedure over a fact or an episode on the same subject: the memory's type is the
# saver's own statement of what kind of knowledge it holds, which neither BM25 nor the embedding
# sees. Smaller than the scope prior: a tie-breaker between memories of the same subject.
PROCEDURE_PRIOR = 0.1
_HOW_TO = re.compile(r"\bhow\s+(?:do|does|can|could|should|would|to)\b", re.IGNORECASE)
# Cosine below which MiniLM calls two short texts unrelated; the vector part of relevance is
# measured from here to the best candidate's cosine (a fixed floor, unlike min-max over the
# candidates, keeps its meaning whether a store holds 50 memories or 100,000).
COSINE_FLOOR = 0.10
# Temporal contiguity: a memory recorded right before or after a relevant one, in the same
# session, shares its context; it gets CONTIGUITY_WEIGHT / lag of its best neighbour's relevance
# at lags 1..CONTIGUITY_LAGS (measured on LoCoMo: lag 2 adds +.02 R@5, lag 3 nothing more).
CONTIGUITY_WEIGHT = 0.3
CONTIGUITY_LAGS = 2
CONTIGUITY_WINDOW_SECONDS = 3_600.0

# Lifecycle thresholds (docs/decisions.md, "Lifecycle")
CONSOLIDATE_BELOW_STRENGTH = 0.3
CONSOLIDATE_MIN_ACCESS = 2
ARCHIVE_BELOW_STRENGTH = 0.1
FORGET_BELOW_STRENGTH = 0.01
ACTIVATE_AFTER_SECONDS = 3_600.0
# Durable knowledge (a semantic or procedural memory of importance >= DURABLE_MIN_IMPORTANCE:
# a rule, a decision, an environment fact, a fix someone chose to keep) fades to `consolidated`
# like any other but is archived by decay only after DURABLE_ARCHIVE_AFTER_DAYS without a recall
# (and forgotten only after that); supersession and forget_memory still end it at once. The month
# replay: a fact stored on day 2 and next needed on day 20 was archived (29 of 61 stored facts).
DURABLE_MIN_IMPORTANCE = 0.5
# An episode is durable knowledge too when whoever stored it rated it above the default importance
# (0.5): a root cause found after a failing command and kept on purpose ("the stub errors at
# runtime: builds need the pure-Go driver"). Hook output stays below it (session summaries 0.4,
# failed commands 0.45, edits 0.3), so passing events still fade in days. The month replay: the
# stand-in's fixes (episodic, 0.7) were archived within three days and missed at every later need.
DURABLE_EPISODE_MIN_IMPORTANCE = 0.6
DURABLE_ARCHIVE_AFTER_DAYS = 180.0
REACTIVATE_AT_STRENGTH = 0.3
CONSOLIDATED_RANK_FACTOR = 0.85  # consolidated memories are queryable at lower priority


def to_epoch(value: datetime | float | int | None) -> float:
    """Seconds since the epoch for datetimes from the engine (always tz-aware)."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def decay_factor(memory_type: str, seconds_since_access: float, access_count: int, *, frozen: bool = False) -> float:
    """exp(-ln2 * days / effective_half_life); 1.0 while `frozen` (live session)."""
    if frozen:
        return 1.0
    half_life = HALF_LIFE_DAYS.get(memory_type, 3.0) * (1.0 + ACCESS_HALF_LIFE_BONUS * max(0, access_count))
    days = max(0.0, seconds_since_access) / SECONDS_PER_DAY
    return math.exp(-LN2 * days / half_life)


def strength(
    importance: float, memory_type: str, seconds_since_access: float, access_count: int, *, frozen: bool = False
) -> float:
    return importance * decay_factor(memory_type, seconds_since_access, access_count, frozen=frozen)


def decay_factors(
    half_lives_days: np.ndarray, seconds_since_access: np.ndarray, access_counts: np.ndarray
) -> np.ndarray:
    """Vectorised decay_factor for many memories at once."""
    effective = half_lives_days * (1.0 + ACCESS_HALF_LIFE_BONUS * np.maximum(access_counts, 0))
    days = np.maximum(seconds_since_access, 0.0) / SECONDS_PER_DAY
    return np.exp(-LN2 * days / effective)


def prior(
    importance: np.ndarray,
    recency: np.ndarray,
    scope_weight: float | np.ndarray,
    procedure_match: float | np.ndarray = 0.0,
) -> np.ndarray:
    """What ranks memories of equal relevance: scope (0-1, from the profile), importance, recency,
    and (1 or 0) whether a how-to question meets a procedural memory (`asks_how_to`)."""
    return (
        SCOPE_PRIOR * scope_weight
        + IMPORTANCE_PRIOR * (importance - 0.5)
        + RECENCY_PRIOR * recency
        + PROCEDURE_PRIOR * np.asarray(procedure_match, dtype=np.float64)
    )


def final_score(
    relevance: np.ndarray,
    importance: np.ndarray,
    recency: np.ndarray,
    scope_weight: float | np.ndarray,
    procedure_match: float | np.ndarray = 0.0,
) -> np.ndarray:
    """Relevance first, priors second (see the module docstring)."""
    return relevance + prior(importance, recency, scope_weight, procedure_match)


def asks_how_to(query: str) -> bool:
    """Whether a query asks how to do something ("How do I deploy?", "how should we name ...",
    "how to rerun"): it then prefers procedural memories (PROCEDURE_PRIOR). English only; other
    queries get no type preference."""
    return _HOW_TO.search(query) is not None


def score_fusion(
    keyword: np.ndarray,
    vector: np.ndarray,
    keyword_weight: float,
    cosine_floor: float = COSINE_FLOOR,
    *,
    keyword_top: float | None = None,
    cosine_top: float | None = None,
) -> np.ndarray:
    """Normalised weighted score fusion of BM25 and cosine over one recall's candidates.

    BM25 has no fixed scale, so it is divided by the best keyword score among the candidates.
    Cosine is measured from COSINE_FLOOR (unrelated) up to the best candidate's cosine: MiniLM
    puts relevant and unrelated coding memories only 0.2-0.4 apart, so raw cosine next to a
    0-1 BM25 part let the keyword side decide almost alone (paraphrases, which share no word
    with the memory, then lost to any memory sharing one). Measured on coding memory and
    LoCoMo: this scaling beat raw cosine, min-max over the candidates and z-scores. A caller
    that lowers the relevance floor below COSINE_FLOOR passes its own `cosine_floor`; one that
    scores memories beside the candidates passes the candidates' bests as `keyword_top` and
    `cosine_top` (the scale then stays the candidates', and nothing scores above 1).
    """
    kw = np.maximum(np.asarray(keyword, dtype=np.float64), 0.0)
    k_top = (float(kw.max()) if kw.size else 0.0) if keyword_top is None else keyword_top
    kw = np.minimum(kw, k_top) / k_top if k_top > 0 else np.zeros_like(kw)
    cos = np.nan_to_num(np.asarray(vector, dtype=np.float64), nan=cosine_floor)
    c_top = (float(cos.max()) if cos.size else cosine_floor) if cosine_top is None else cosine_top
    span = c_top - cosine_floor
    vec = np.clip((cos - cosine_floor) / span, 0.0, 1.0) if span > 1e-9 else np.zeros_like(cos)
    return keyword_weight * kw + (1.0 - keyword_weight) * vec


_QUERY_TOKEN = re.compile(r"\S+")
_WORDISH = re.compile(r"[A-Za-z][a-z]*(?:'[a-z]+)?[?.,!:;]*")


def identifier_share(query: str) -> float:
    """Share of a query's tokens that are codes rather than words (hashes, versions, paths,
    snake_case/camelCase names, flags, error codes).

    MiniLM has no meaning for `9f3ac21e` or `SQLX_OFFLINE`: on such tokens its cosine is
    noise between look-alike strings, while BM25 matches them exactly. A query made only of
    codes is therefore ranked by its keywords; natural-language queries keep the fusion.
    """
    tokens = [t.strip("`'\"()[]{}<>") for t in _QUERY_TOKEN.findall(query)]
    tokens = [t for t in tokens if t]
    if not tokens:
        return 0.0
    codes = sum(1 for t in tokens if not _WORDISH.fullmatch(t) and any(c.isalnum() for c in t))
    return codes / len(tokens)


# Keyword coverage (see `coverage_keyword_weight`): the share of the query's IDF mass that its best
# BM25 match reaches. At COVERAGE_LOW or less the fusion's BM25 weight is COVERAGE_WEIGHT_MIN x the
# configured weight, at COVERAGE_HIGH or more COVERAGE_WEIGHT_MAX x, linear in between, so the
# configured weight holds at coverage 0.5 (a match on half of the query's information).
COVERAGE_LOW = 0.3
COVERAGE_HIGH = 0.9
COVERAGE_WEIGHT_MIN = 0.75
COVERAGE_WEIGHT_MAX = 1.5


def coverage_keyword_weight(keyword_weight: float, coverage: float | None) -> float:
    """The fusion's BM25 weight scaled by how well the best keyword match covers the query.

    BM25 divided by the best candidate's score says nothing about whether that best match is
    good: a memory sharing one incidental word ("tests", "run") gets the full keyword share
    when nothing matches better, and then outranks the memory the embedding prefers. Coverage
    (`keyword_coverage`: best BM25 over the sum of the query terms' IDF, about 1 when some memory
    holds every query term once) is an absolute scale: low coverage means the keyword evidence
    is thin and the vector side should decide; high coverage means a memory states the query's
    own words and BM25 deserves more weight. None (no keyword statistics) keeps the weight.
    Measured on the coding-memory set and LoCoMo together: R@5 +0.012 / hit@1 +0.005 on coding
    memory (paraphrase R@5 0.787 -> 0.825), LoCoMo unchanged (R@5 0.727, MRR +0.002).
    """
    if coverage is None:
        return keyword_weight
    t = min(1.0, max(0.0, (coverage - COVERAGE_LOW) / (COVERAGE_HIGH - COVERAGE_LOW)))
    return min(1.0, keyword_weight * (COVERAGE_WEIGHT_MIN + (COVERAGE_WEIGHT_MAX - COVERAGE_WEIGHT_MIN) * t))


def adaptive_keyword_weight(keyword_weight: float, query: str, coverage: float | None = None) -> float:
    """The fusion's BM25 weight: scaled by the keyword coverage, then raised toward 1 by the
    query's share of codes (see above)."""
    base = coverage_keyword_weight(keyword_weight, coverage)
    return base + (1.0 - base) * identifier_share(query) ** 2


def rrf_fusion(keyword_ranks: np.ndarray, vector_ranks: np.ndarray, k: int) -> np.ndarray:
    """Reciprocal rank fusion; ranks are 1-based, 0 means 'not in that list'.

    Returned values are rescaled into [0, 1] by the best possible score so they can
    feed the composite; never threshold on them (they bunch together).
    """
    kw = np.where(keyword_ranks > 0, 1.0 / (k + keyword_ranks), 0.0)
    vec = np.where(vector_ranks > 0, 1.0 / (k + vector_ranks), 0.0)
    return (kw + vec) / (2.0 / (k + 1))
