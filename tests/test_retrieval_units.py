"""Retrieval internals without the model: relevance floor, filter masks, the hit budget of
`rank`, and the write-behind of recall strengthening."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from engram_mcp.index import retrieval, scoring
from engram_mcp.index.retrieval import RetrievalSettings, ScopeView, rank, relevant_mask
from engram_mcp.index.scope_index import Filters, ScopeIndex
from engram_mcp.index.tokenizer import tokenize
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q

DIM = 384


def _row(key: str, content: str, **kw) -> dict:
    row = {"id": f"memory:{key}", "content": content, "memory_type": "semantic", "status": "active",
           "importance": 0.5, "access_count": 0, "created_at": 1.7e9}
    row.update(kw)
    return row


def _unit(rng: np.random.Generator, base: np.ndarray | None = None, noise: float = 1.0) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32) * noise
    if base is not None:
        v = v + base
    return v / np.linalg.norm(v)


# ------------------------------------------------------------------ relevance floor
def test_relevant_mask_needs_a_keyword_hit_or_a_cosine_above_both_floors():
    kw = np.array([0.0, 2.0, 0.0, 0.0, 0.0])
    cos = np.array([0.80, 0.05, 0.35, 0.27, np.nan])
    # floor = max(0.2, 0.5 * 0.80) = 0.40: only the best and the keyword hit survive
    assert relevant_mask(kw, cos, 0.20, 0.50).tolist() == [True, True, False, False, False]
    # without the strong hit the 0.35 paraphrase is relevant, the 0.27 noise too (above 0.2)
    assert relevant_mask(kw[1:], cos[1:], 0.20, 0.50).tolist() == [True, True, True, False]
    # nothing close: nothing without a keyword hit is relevant
    assert relevant_mask(np.zeros(3), np.array([0.1, 0.15, -0.2]), 0.20, 0.50).tolist() == [False] * 3


def test_rank_returns_nothing_when_nothing_is_related():
    rng = np.random.default_rng(0)
    idx = ScopeIndex("project", DIM, "m")
    for i in range(20):
        idx.upsert(_row(f"K{i:03d}", f"lunch note number {i}"), _unit(rng))
    view = ScopeView("project", idx, 0.35)
    hits, matched = rank([view], _unit(rng), "vite frontend build", Filters(), "hybrid", RetrievalSettings(), 10)
    assert hits == [] and matched == 0
    # with the floor switched off, every candidate comes back again
    loose = RetrievalSettings(min_cosine=-1.0, min_cosine_ratio=0.0)
    hits, matched = rank([view], _unit(rng), "vite frontend build", Filters(), "vector", loose, 10)
    assert len(hits) > 0


def test_the_floor_is_a_config_key(tmp_path):
    from engram_mcp.core.config import load_config

    cfg = load_config(None, home=tmp_path, environ={})
    assert (cfg.relevance_min_cosine, cfg.relevance_min_cosine_ratio) == (0.20, 0.50)
    cfg = load_config(None, home=tmp_path, environ={"ENGRAM_RELEVANCE_MIN_COSINE": "0.3"})
    assert cfg.relevance_min_cosine == 0.3


# ------------------------------------------------------------------ filter masks
def test_cached_masks_follow_every_change_of_the_filtered_columns():
    idx = ScopeIndex("project", DIM, "m")
    idx.upsert(_row("A", "alpha", tags=["db"], category="architecture"))
    idx.upsert(_row("B", "beta", tags=["db", "infra"], status="created"))
    idx.upsert(_row("C", "gamma", category="procedure", memory_type="procedural"))
    slot = {k: idx.slot_of(k) for k in "ABC"}

    def picked(f: Filters) -> set[str]:
        return {idx.key_of(int(s)) for s in np.flatnonzero(idx.mask(f))}

    tags = Filters(tags=frozenset(["db"]))
    assert picked(tags) == {"A", "B"}
    assert picked(Filters(tags=frozenset(["infra", "nope"]))) == {"B"}
    assert picked(Filters(category=frozenset(["procedure"]))) == {"C"}
    assert picked(Filters(types=frozenset(["procedural"]))) == {"C"}
    only_created = Filters(statuses=frozenset(["created"]))
    assert picked(only_created) == {"B"}
    m = idx.mask(tags)
    m[:] = False  # callers get their own copy
    assert picked(tags) == {"A", "B"}
    idx.upsert(_row("A", "alpha", tags=["web"], category="procedure"))  # re-tagged
    assert picked(tags) == {"B"}
    assert picked(Filters(category=frozenset(["procedure"]))) == {"A", "C"}
    assert picked(Filters(category=frozenset(["architecture"]))) == set()
    idx.touch(["B"], time.time())  # created -> active
    assert picked(only_created) == set()
    idx.set_status("C", "archived")
    assert picked(Filters()) == {"A", "B"}
    idx.remove("B")
    assert picked(tags) == set() and picked(Filters()) == {"A"}
    idx.upsert(_row("D", "delta", tags=["db"]))  # a new slot: the mask grows
    assert picked(tags) == {"D"} and idx.mask(tags).size == idx.slots.size
    assert slot["A"] == idx.slot_of("A")


# ------------------------------------------------------------------ hit budget of rank
def _random_views(rnd: random.Random, rng: np.random.Generator) -> tuple[list[ScopeView], np.ndarray]:
    words = "alpha beta gamma delta eps zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau".split()
    base = np.stack([_unit(rng) for _ in range(30)])
    views, keys = [], []
    for scope, weight, n in (("session", 0.5, rnd.randint(0, 40)), ("project", 0.35, rnd.randint(100, 400)), ("user", 0.15, rnd.randint(0, 120))):
        idx = ScopeIndex(scope, DIM, "m")
        for _ in range(n):
            key = rnd.choice(keys) if keys and rnd.random() < 0.05 else f"K{len(keys):05d}"  # some ids in 2 scopes
            keys.append(key)
            vec = None if rnd.random() < 0.05 else _unit(rng, base[rnd.randrange(30)] * 3.0)
            idx.upsert(_row(key, " ".join(rnd.choice(words) for _ in range(rnd.randint(3, 8))),
                            memory_type=rnd.choice(["episodic", "semantic", "procedural"]),
                            status=rnd.choice(["active", "created", "consolidated"]), importance=rnd.random(),
                            access_count=rnd.randint(0, 4), created_at=1.7e9 - rnd.random() * 1e7), vec)
        live = idx.keys()
        for _ in range(len(live) // 15):  # supersession chains
            a, b = rnd.sample(live, 2)
            idx.superseded_by[a] = b
        views.append(ScopeView(scope, idx, weight, frozen=scope == "session"))
    return views, base


def test_building_hits_for_the_best_candidates_only_gives_the_full_ranking(monkeypatch):
    rnd, rng = random.Random(5), np.random.default_rng(5)
    for _ in range(12):
        views, base = _random_views(rnd, rng)
        for _ in range(4):
            text = " ".join(rnd.choice("alpha beta gamma delta mu nu pi".split()) for _ in range(rnd.randint(1, 3)))
            qvec = _unit(rng, base[rnd.randrange(30)] * 3.0)
            strategy = rnd.choice(["hybrid", "vector", "keyword"])
            settings = RetrievalSettings(fusion=rnd.choice(["score", "rrf"]))
            limit = rnd.choice([1, 5, 10, 30])
            args = (views, None if strategy == "keyword" else qvec, text, Filters(), strategy, settings, limit)
            fast, m1 = rank(*args, now=1.7e9)
            monkeypatch.setattr(retrieval, "HIT_BUDGET_EXTRA", 10**9)
            full, m2 = rank(*args, now=1.7e9)
            monkeypatch.undo()
            assert m1 == m2
            assert [(h.scope, h.key, h.score) for h in fast] == [(h.scope, h.key, h.score) for h in full]


# ------------------------------------------------------------------ write-behind strengthening
@pytest.fixture
def svc(home):
    from tests.fakes import FakeEmbedder

    s = MemoryService(home=home, embedder=FakeEmbedder())
    yield s
    s.close()


def _raw_access_count(svc: MemoryService, ctx: RequestContext, mid: str) -> int:
    """Read the engine directly, past the write-behind hook."""
    from surrealdb import RecordID

    h = svc.handle(ctx, "project")
    row = h.store.query(h.ns, h.db, q.GET_MEMORIES, {"ids": [RecordID("memory", mid.split(":", 1)[1])]})[0]
    return int(row.get("access_count", 0))  # unwritten at its default (storage/memory_shape.py)


def test_strengthening_is_written_behind_the_recall_and_seen_by_every_later_statement(svc, project, home):
    ctx = RequestContext(project, None)
    mid = svc.store(ctx, content="The deploy pipeline runs on GitHub Actions", type="procedural", scope="project")["memory_id"]
    for expected in (0, 1):  # the recall reports the count before its own bump, overlaid with held-back ones
        res = svc.recall(ctx, query="deploy pipeline GitHub Actions")
        assert [m["id"] for m in res["memories"]] == [mid] and res["memories"][0]["access_count"] == expected
    assert _raw_access_count(svc, ctx, mid) == 0  # not written yet
    assert svc.get(ctx, mid)["access_count"] == 2  # any statement on the database writes it first
    assert _raw_access_count(svc, ctx, mid) == 2
    svc.recall(ctx, query="deploy pipeline GitHub Actions")
    deadline = time.time() + 5
    while _raw_access_count(svc, ctx, mid) != 3 and time.time() < deadline:
        time.sleep(0.05)  # the timer writes it within FLUSH_DELAY_SECONDS
    assert _raw_access_count(svc, ctx, mid) == 3
    svc.recall(ctx, query="deploy pipeline GitHub Actions")
    svc.close()  # close writes what is pending
    from tests.fakes import FakeEmbedder

    again = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        mem = again.get(ctx, mid)
        assert mem["access_count"] == 4 and mem["status"] == "active"
    finally:
        again.close()


# ------------------------------------------------------------------ temporal contiguity
def test_a_memory_recorded_next_to_the_answer_in_its_session_ranks_above_an_equal_stranger():
    rng = np.random.default_rng(7)
    topic = _unit(rng)
    idx = ScopeIndex("project", DIM, "m")
    # the turn that names the subject, then the answer that does not repeat it
    idx.upsert(_row("K000", "Caroline: I finally went to the support group", session_id="chat-1", created_at=1.7e9),
               _unit(rng, topic * 60))
    idx.upsert(_row("K001", "Melanie: that is wonderful, how did it feel?", session_id="chat-1", created_at=1.7e9 + 5),
               _unit(rng, topic * 8))
    # equally related on its own, but recorded in another session an hour later
    idx.upsert(_row("K002", "Melanie: how did the painting class feel?", session_id="chat-2", created_at=1.7e9 + 7200),
               _unit(rng, topic * 8))
    view = ScopeView("project", idx, 1.0)
    query = _unit(rng, topic * 60)
    plain = RetrievalSettings(contiguity_weight=0.0, min_cosine=-1.0, min_cosine_ratio=0.0)
    linked = RetrievalSettings(min_cosine=-1.0, min_cosine_ratio=0.0)
    rel_plain = {h.key: h.relevance for h in rank([view], query, "", Filters(), "vector", plain, 10)[0]}
    rel_linked = {h.key: h.relevance for h in rank([view], query, "", Filters(), "vector", linked, 10)[0]}
    assert rel_linked["K001"] > rel_plain["K001"]  # its neighbour K000 is the best match
    assert rel_linked["K002"] == pytest.approx(rel_plain["K002"])  # no neighbour within the window
    # a neighbour hidden by the recall's filters lends nothing
    idx.set_status("K000", "forgotten")
    rel_hidden = {h.key: h.relevance for h in rank([view], query, "", Filters(), "vector", linked, 10)[0]}
    assert "K000" not in rel_hidden
    assert rel_hidden["K001"] == pytest.approx(
        {h.key: h.relevance for h in rank([view], query, "", Filters(), "vector", plain, 10)[0]}["K001"])


def test_session_neighbours_follow_moves_and_removals():
    idx = ScopeIndex("project", DIM, "m")
    for i in range(4):
        idx.upsert(_row(f"K00{i}", f"turn {i}", session_id="s", created_at=1.7e9 + i))
    slots = np.array([idx.slot_of("K001")])
    allowed = idx.mask(Filters())
    near = idx.neighbours(slots, allowed, 2)
    assert [idx.key_of(int(s)) for s in near[:, 0, 0]] == ["K000", None]
    assert [idx.key_of(int(s)) for s in near[:, 1, 0]] == ["K002", "K003"]
    idx.remove("K002")
    near = idx.neighbours(slots, idx.mask(Filters()), 2)
    assert [idx.key_of(int(s)) for s in near[:, 1, 0]] == ["K003", None]
    idx.upsert(_row("K003", "turn 3, moved to another session", session_id="t", created_at=1.7e9 + 3))
    assert idx.neighbours(slots, idx.mask(Filters()), 1)[0, 1, 0] == -1


# ------------------------------------------------------------------ keyword coverage
def _at_cosine(query: np.ndarray, cos: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector whose cosine to the unit `query` is exactly `cos`."""
    other = rng.standard_normal(DIM).astype(np.float64)
    other -= other.dot(query) * query
    other /= np.linalg.norm(other)
    return (cos * query + np.sqrt(1.0 - cos * cos) * other).astype(np.float32)


def test_coverage_scales_the_keyword_weight_around_the_configured_one():
    w = 0.4
    assert scoring.coverage_keyword_weight(w, None) == w
    assert scoring.coverage_keyword_weight(w, 0.0) == pytest.approx(w * scoring.COVERAGE_WEIGHT_MIN)
    assert scoring.coverage_keyword_weight(w, 5.0) == pytest.approx(w * scoring.COVERAGE_WEIGHT_MAX)
    assert scoring.coverage_keyword_weight(w, 0.5) == pytest.approx(w)  # the configured weight at half coverage
    ladder = [scoring.coverage_keyword_weight(w, c) for c in np.linspace(0.0, 1.2, 13)]
    assert ladder == sorted(ladder)
    assert scoring.coverage_keyword_weight(0.9, 2.0) == 1.0  # never above keyword-only
    # codes still push the weight toward 1 whatever the coverage
    assert scoring.adaptive_keyword_weight(w, "SQLX_OFFLINE 9f3ac21e", 0.0) > 0.9


def test_keyword_coverage_is_the_best_match_share_of_the_query_idf_mass():
    idx = ScopeIndex("project", DIM, "m")
    rng = np.random.default_rng(3)
    texts = ["parser tests flaky on the mac laptop", "the deploy runs tests in CI", "lunch at noon",
             "release notes for the android app", "gradle build cache"]
    for i, t in enumerate(texts):
        idx.upsert(_row(f"K{i:03d}", t), _unit(rng))
    view = ScopeView("project", idx, 1.0)
    slots = np.arange(len(texts))
    query = "why are the parser tests flaky on the mac laptop"
    kw = np.asarray(idx.bm25.scores_for(query, slots), dtype=np.float64)
    full = retrieval.keyword_coverage([(view, slots, kw)], query)
    one_word = retrieval.keyword_coverage([(view, slots[1:2], kw[1:2])], query)
    assert 0.8 < full < 1.2  # the first memory holds every query term once
    assert one_word < scoring.COVERAGE_LOW  # "tests" alone is a sliver of the query
    assert retrieval.keyword_coverage([(view, slots, kw)], "the of and") is None  # no query terms


def test_a_thin_keyword_match_no_longer_outranks_the_memory_the_embedding_prefers():
    rng = np.random.default_rng(11)
    query_vec = _unit(rng)
    idx = ScopeIndex("project", DIM, "m")
    # shares one word of the query ("tests") and is only loosely related by meaning
    idx.upsert(_row("K000", "the deploy job runs the tests before the upload"), _at_cosine(query_vec, 0.325, rng))
    # shares no word, but is the embedding's clear answer
    idx.upsert(_row("K001", "snapshot suites break when the analyser changes"), _at_cosine(query_vec, 0.60, rng))
    for i in range(2, 8):  # unrelated memories give the terms their IDF
        idx.upsert(_row(f"K{i:03d}", f"gradle cache note {i}"), _at_cosine(query_vec, 0.0, rng))
    view = ScopeView("project", idx, 1.0)
    query = "why do the parser tests fail after the tokenizer upgrade"
    settings = RetrievalSettings(contiguity_weight=0.0)
    hits, _ = rank([view], query_vec, query, Filters(), "hybrid", settings, 5)
    assert [h.key for h in hits[:2]] == ["K001", "K000"]
    # with the fixed weight (coverage ignored) the one shared word used to win
    fixed = scoring.score_fusion(np.array([1.0, 0.0]), np.array([0.325, 0.60]), 0.4)
    assert fixed[0] > fixed[1]


# ------------------------------------------------------------------ one scale for all scopes
def test_shared_stats_score_two_indexes_like_one_index_holding_both():
    from engram_mcp.index.bm25 import BM25Index, SharedStats

    texts = ["deploy runs nomad job", "run the tests with nextest", "compaction needs the writer lock",
             "run book for the nightly job", "user prefers fish shell", "run gh run view on a red build"]
    whole, left, right = BM25Index(), BM25Index(), BM25Index()
    whole.set_many(range(6), texts)
    left.set_many(range(4), texts[:4])
    right.set_many(range(2), texts[4:])
    query = "why can't I run the compaction job"
    stats = SharedStats.of([left, right], tokenize(query))
    expected = whole.scores_for(query, range(6))
    got = np.concatenate([left.scores_for(query, range(4), stats=stats), right.scores_for(query, range(2), stats=stats)])
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # on its own statistics the small index rates the common word "run" far higher
    assert right.scores_for(query, [1])[0] > got[5] * 1.2
    # search() ranks with them too
    slots, scores = right.search(query, 5, stats=stats)
    assert slots.tolist() == [1] and scores[0] == pytest.approx(expected[5], rel=1e-5)


def test_a_recall_over_several_scopes_scores_every_scope_on_the_shared_scale():
    rng = np.random.default_rng(5)
    qvec = _unit(rng)
    project, user = ScopeIndex("project", DIM, "m"), ScopeIndex("user", DIM, "m")
    for i in range(12):
        project.upsert(_row(f"P{i:03d}", f"run step {i} of the pipeline"), _unit(rng))
    project.upsert(_row("P100", "run the compaction with the ingester stopped"), _at_cosine(qvec, 0.4, rng))
    user.upsert(_row("U000", "run the compaction with the ingester stopped"), _at_cosine(qvec, 0.4, rng))
    for i in range(1, 11):  # the user store never says "run": there the word looks rare
        user.upsert(_row(f"U{i:03d}", f"prefers fish shell and neovim, habit {i}"), _unit(rng))
    views = [ScopeView("project", project, 1.0), ScopeView("user", user, 0.0)]
    hits, _ = rank(views, qvec, "run compaction", Filters(), "hybrid", RetrievalSettings(), 10)
    kw = {h.key: h.keyword for h in hits}
    assert kw["U000"] == pytest.approx(kw["P100"], rel=1e-5)  # same text, same score
    alone = user.bm25.scores_for("run compaction", [user.slot_of("U000")])[0]
    assert alone > 1.2 * kw["U000"]  # its own statistics inflated it


# ------------------------------------------------------------------ how-to questions
def test_asks_how_to_recognises_questions_about_doing_something():
    for q in ("How do I deploy a new version?", "how should we name branches", "HOW TO rerun CI",
              "How can I get onto the cluster?", "how does a change get deployed"):
        assert scoring.asks_how_to(q), q
    for q in ("Who approves PRs?", "Why did the index fragment?", "what runs in CI", "however slow it is",
              "showdown"):
        assert not scoring.asks_how_to(q), q


def test_a_how_to_question_prefers_the_procedure_among_memories_of_one_subject():
    rng = np.random.default_rng(9)
    qvec = _unit(rng)
    idx = ScopeIndex("project", DIM, "m")
    idx.upsert(_row("K000", "release train cut every second tuesday"), _at_cosine(qvec, 0.52, rng))
    idx.upsert(_row("K001", "release lane builds and uploads the bundle", memory_type="procedural"),
               _at_cosine(qvec, 0.50, rng))
    for i in range(2, 8):
        idx.upsert(_row(f"K{i:03d}", f"gradle cache note {i}"), _at_cosine(qvec, 0.0, rng))
    view = ScopeView("project", idx, 1.0)
    settings = RetrievalSettings(contiguity_weight=0.0)

    def first(query: str) -> str:
        return rank([view], qvec, query, Filters(), "hybrid", settings, 3)[0][0].key

    assert first("How do I put out a release?") == "K001"
    assert first("When is the release?") == "K000"  # no how-to: the closer fact wins
