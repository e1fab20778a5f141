"""Decay and the lifecycle states it drives (docs/decisions.md, "Decay" and "Lifecycle")."""

from __future__ import annotations

import math
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from surrealdb import RecordID

from engram_mcp.services import lifecycle
from engram_mcp.index import scoring
from tests.fakes import FakeEmbedder
from engram_mcp.services.service import MemoryService, RequestContext

DAY = 86_400.0
HALF_LIVES = {"working": 1 / 24, "episodic": 1.0, "semantic": 7.0, "procedural": 30.0}


def _hand_strength(importance, mtype, days, access):
    return importance * math.exp(-math.log(2) * days / (HALF_LIVES[mtype] * (1 + 0.2 * access)))


# ------------------------------------------------------------------ the formula
@pytest.mark.parametrize("mtype", ["working", "episodic", "semantic", "procedural"])
@pytest.mark.parametrize("access", [0, 1, 3, 10])
@pytest.mark.parametrize("days", [0.0, 1 / 48, 0.5, 1.0, 7.0, 30.0, 90.0])
def test_strength_follows_the_decisions_formula_for_every_type(mtype, access, days):
    got = scoring.strength(0.8, mtype, days * DAY, access)
    assert got == pytest.approx(_hand_strength(0.8, mtype, days, access), rel=1e-12, abs=1e-15)
    assert scoring.decay_factor(mtype, days * DAY, access) == pytest.approx(got / 0.8, rel=1e-12, abs=1e-15)


def test_half_lives_are_one_hour_one_day_seven_days_thirty_days():
    assert scoring.strength(1.0, "working", 3600, 0) == pytest.approx(0.5)
    assert scoring.strength(1.0, "episodic", DAY, 0) == pytest.approx(0.5)
    assert scoring.strength(1.0, "semantic", 7 * DAY, 0) == pytest.approx(0.5)
    assert scoring.strength(1.0, "procedural", 30 * DAY, 0) == pytest.approx(0.5)
    # each access extends the half-life by 20%: 10 accesses -> 21 days for semantic
    assert scoring.strength(1.0, "semantic", 21 * DAY, 10) == pytest.approx(0.5)
    assert scoring.strength(1.0, "episodic", 1.2 * DAY, 1) == pytest.approx(0.5)


def test_vectorised_decay_matches_the_scalar_one():
    import numpy as np

    half = np.array([HALF_LIVES[t] for t in ("working", "episodic", "semantic", "procedural")])
    secs = np.array([1800.0, 2 * DAY, 10 * DAY, 45 * DAY])
    acc = np.array([0, 2, 5, 1], dtype=float)
    got = scoring.decay_factors(half, secs, acc)
    want = [scoring.decay_factor(t, s, int(a)) for t, s, a in zip(("working", "episodic", "semantic", "procedural"), secs, acc)]
    assert got == pytest.approx(want, rel=1e-12)


# A decay table first published with the formula (semantic, importance 0.8). Only these cells
# agree with the formula (docs/decisions.md, "Decay"); the others (14 d with 5/10 accesses,
# 30 d, 60 d) were off by 0.01-0.03, e.g. 30 d / 0 accesses is 0.041 by the formula but was
# printed as 0.06: the table was wrong there, not the code.
TABLE = [(0, 0, 0.80), (0, 5, 0.80), (0, 10, 0.80), (7, 0, 0.40), (7, 5, 0.57), (7, 10, 0.64), (14, 0, 0.20)]


@pytest.mark.parametrize("days,access,expected", TABLE)
def test_spot_values_of_the_memory_model_decay_table(days, access, expected):
    # the table has two decimals: 0.635 is printed as 0.64
    assert scoring.strength(0.8, "semantic", days * DAY, access) == pytest.approx(expected, abs=0.0051)


@pytest.mark.parametrize("days,access,expected", [(14, 5, 0.40), (14, 10, 0.504), (30, 0, 0.041), (30, 5, 0.181),
                                                  (30, 10, 0.297), (60, 0, 0.0021), (60, 5, 0.041), (60, 10, 0.110)])
def test_table_cells_that_disagree_with_the_formula_follow_the_formula(days, access, expected):
    assert scoring.strength(0.8, "semantic", days * DAY, access) == pytest.approx(expected, abs=0.0006)


# ------------------------------------------------------------------ maintenance
class Store:
    """A project where memories can be aged directly in the database."""

    def __init__(self, home, project):
        self.home, self.project = home, project
        self.ctx = RequestContext(project, "sess-1")
        self.svc = MemoryService(home=home, embedder=FakeEmbedder())

    def store(self, content, *, scope="project", type="semantic", importance=0.5, **kw):
        return self.svc.store(self.ctx, content=content, type=type, scope=scope, importance=importance, dedup=False, **kw)["memory_id"]

    def set(self, mid, scope="project", **fields):
        """Write fields straight into the record (datetimes / status / access_count)."""
        h = self.svc.handle(self.ctx, scope)
        for name, value in fields.items():
            h.q(f"UPDATE type::thing('memory', $id) SET {name} = $v", {"id": mid.split(":", 1)[1], "v": value})

    def age(self, mid, *, days, scope="project", **fields):
        """Last access (and creation) `days` ago."""
        t = datetime.now(timezone.utc) - timedelta(days=days)
        self.set(mid, scope, last_accessed_at=t, created_at=t, **fields)

    def reopen(self):
        """Close and open again, rebuilding the indexes from the records: `set` writes behind
        the index's back, so the persisted index files (services/handles.py) are dropped."""
        self.svc.close()
        for directory in (self.project / ".claude" / "engram" / "index", self.home / ".claude" / "engram" / "index"):
            shutil.rmtree(directory, ignore_errors=True)
        self.svc = MemoryService(home=self.home, embedder=FakeEmbedder())

    def get(self, mid, **kw):
        return self.svc.get(self.ctx, mid, **kw)

    def close(self):
        self.svc.close()


@pytest.fixture
def store(home, project):
    s = Store(home, project)
    yield s
    s.close()


def test_created_becomes_active_after_one_hour(store):
    fresh = store.store("just stored")
    older = store.store("stored two hours ago")
    store.set(older, created_at=datetime.now(timezone.utc) - timedelta(hours=2), last_accessed_at=datetime.now(timezone.utc) - timedelta(hours=2))
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert report["project"]["activated"] == 1
    assert store.get(fresh)["status"] == "created"
    assert store.get(older)["status"] == "active"
    # and recall activates at once
    store.svc.recall(store.ctx, query="just stored")
    assert store.get(fresh)["status"] == "active"


def test_weak_rarely_used_memories_are_archived(store):
    weak = store.store("a passing remark about the weather", type="episodic")
    strong = store.store("a durable procedure", type="procedural", importance=0.9)
    store.age(weak, days=5, status="active")  # 0.5 * 2^-5 = 0.016 < 0.1, access 0
    store.age(strong, days=5, status="active")
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert report["project"]["archived"] == 1
    assert store.get(weak)["status"] == "archived"
    assert store.get(strong)["status"] == "active"
    # archived memories leave recall
    assert weak not in [m["id"] for m in store.svc.recall(store.ctx, query="weather remark")["memories"]]


def test_a_weak_memory_never_recalled_skips_straight_from_created_to_archived(store):
    mid = store.store("an episode nobody looked at again", type="episodic")
    store.age(mid, days=5)
    store.reopen()
    store.svc.maintain(store.ctx)
    assert store.get(mid)["status"] == "archived"


def test_used_memories_that_decay_are_consolidated_and_queued(store):
    mid = store.store("the team used to deploy on Fridays", importance=0.5)
    store.age(mid, days=10, status="active", access_count=2)  # 0.5 * 2^(-10 / 9.8) = 0.25 < 0.3
    assert _hand_strength(0.5, "semantic", 10, 2) < 0.3
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert report["project"]["consolidated"] == 1
    assert store.get(mid)["status"] == "consolidated"
    h = store.svc.handle(store.ctx, "project")
    queue = h.q("SELECT * FROM consolidation_queue")
    assert len(queue) == 1
    assert queue[0]["memory"] == RecordID("memory", mid.split(":", 1)[1])
    assert queue[0]["reason"] == "decay" and queue[0]["status"] == "pending"
    # a second pass does not queue it twice
    store.svc.maintain(store.ctx)
    assert len(h.q("SELECT * FROM consolidation_queue")) == 1
    # consolidated memories stay recallable
    assert [m["id"] for m in store.svc.recall(store.ctx, query="deploy on Fridays", strengthen=False)["memories"]] == [mid]


def test_consolidated_memories_that_keep_decaying_are_archived(store):
    mid = store.store("an old consolidated note", importance=0.4)  # below DURABLE_MIN_IMPORTANCE
    store.age(mid, days=40, status="consolidated", access_count=2)  # 0.4 * 2^(-40/9.8) = 0.024
    store.reopen()
    store.svc.maintain(store.ctx)
    assert store.get(mid)["status"] == "archived"


def test_durable_knowledge_fades_to_consolidated_and_stays_in_reach_for_months(store):
    """A rule stored on day 2 and needed on day 20 without a recall in between (issue 33's month
    replay archived 29 of 61 stored facts): durable knowledge stops at consolidated."""
    fact = store.store("the staging database listens on port 6543", importance=0.7)
    rule = store.store("always run the linter before pushing", type="procedural", importance=0.7)
    note = store.store("looked at the staging logs", type="episodic", importance=0.5)
    fix = store.store("the nightly import failed on a locked DuckDB file: tests now use a temp copy",
                      type="episodic", importance=0.7)
    weak = store.store("maybe try a different cache size", importance=0.3)
    for mid in (fact, rule, note, weak, fix):
        store.age(mid, days=60, status="active")  # fact: 0.7 * 2^(-60/7) = 0.0018
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert store.get(fact)["status"] == "consolidated"
    assert store.get(rule)["status"] == "consolidated"  # 0.7 * 2^-2 = 0.175 < 0.3
    assert store.get(note)["status"] == "archived"  # an episode at the default importance fades as before
    assert store.get(weak)["status"] == "archived"
    assert store.get(fix)["status"] == "consolidated"  # an episode kept on purpose is knowledge
    assert report["project"]["consolidated"] == 3
    h = store.svc.handle(store.ctx, "project")
    assert h.q("SELECT * FROM consolidation_queue") == []  # fading is no consolidator job
    store.svc.maintain(store.ctx)  # a second pass neither archives nor forgets it
    assert store.get(fact)["status"] == "consolidated"
    found = store.svc.recall(store.ctx, query="staging database port", strengthen=False)["memories"]
    assert fact in [m["id"] for m in found]


def test_durable_knowledge_unused_for_months_is_archived_then_forgotten(store):
    from engram_mcp.index.scoring import DURABLE_ARCHIVE_AFTER_DAYS

    mid = store.store("the old build server is called hermes", importance=0.7)
    store.age(mid, days=DURABLE_ARCHIVE_AFTER_DAYS + 1, status="consolidated")
    store.reopen()
    store.svc.maintain(store.ctx)
    assert store.get(mid)["status"] == "archived"
    store.svc.maintain(store.ctx)
    assert store.get(mid)["status"] == "forgotten"


def test_archived_memories_below_one_percent_are_forgotten_with_content_and_vector_cleared(store):
    mid = store.store("the flaky test was quarantined", type="episodic")
    store.svc.update(store.ctx, mid, summary="quarantined")  # leaves a history entry with content
    store.age(mid, days=10, status="archived")  # 0.5 * 2^-10 = 0.0005
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert report["project"]["forgotten"] == 1
    mem = store.get(mid, history=True)
    assert mem["status"] == "forgotten"
    assert mem["content"] == "[forgotten]"
    assert mem["has_embedding"] is False and mem.get("summary") is None
    assert all(h["snapshot"]["content"] == "[forgotten]" for h in mem["history"])
    raw = store.svc.handle(store.ctx, "project").q("SELECT * FROM type::thing('memory', $id)", {"id": mid.split(":", 1)[1]})[0]
    assert "embedding" not in raw
    assert "quarantined" not in repr(raw)
    # the skeleton stays for referential integrity, and it can no longer be found by text
    assert raw["memory_type"] == "episodic"
    assert store.svc.recall(store.ctx, query="flaky test quarantined", include_forgotten=True, strategy="keyword")["memories"] == []


def test_user_scope_memories_are_archived_but_never_forgotten(store):
    mid = store.store("I once used Perl for a build script", scope="user", type="episodic")
    store.age(mid, days=30, scope="user", status="active")
    store.reopen()
    store.svc.maintain(store.ctx)
    assert store.get(mid)["status"] == "archived"
    store.age(mid, days=300, scope="user")
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert report["user"].get("forgotten", 0) == 0
    mem = store.get(mid)
    assert mem["status"] == "archived" and mem["content"] == "I once used Perl for a build script"


def test_forget_memory_is_purged_after_thirty_days(store):
    mid = store.store("a note the user asked to forget")
    store.svc.forget(store.ctx, mid)
    store.svc.maintain(store.ctx)
    assert store.get(mid)["content"] == "a note the user asked to forget"  # undo still possible
    store.set(mid, forgotten_at=datetime.now(timezone.utc) - timedelta(days=31))
    store.reopen()
    report = store.svc.maintain(store.ctx)
    assert report["project"]["purged"] == 1
    assert store.get(mid)["content"] == "[forgotten]"


def test_session_memories_do_not_decay_during_the_session(store):
    mid = store.store("working on the parser bug", scope="session", type="episodic", importance=0.6)
    store.age(mid, days=3, scope="session")
    store.reopen()
    mem = store.get(mid)
    assert mem["strength"] == pytest.approx(0.6)  # an episodic memory 3 days old would be 0.075
    store.svc.maintain(store.ctx)
    assert store.get(mid)["status"] == "created"
    hit = store.svc.recall(store.ctx, query="parser bug", scope="session", strengthen=False)["memories"][0]
    assert hit["strength"] == pytest.approx(0.6)
    # the same memory in the project scope does decay
    pid = store.store("working on the lexer bug", type="episodic", importance=0.6)
    store.age(pid, days=3)
    store.reopen()
    assert store.get(pid)["strength"] == pytest.approx(_hand_strength(0.6, "episodic", 3, 0), abs=1e-3)


def test_recalling_an_archived_memory_strengthens_and_reactivates_it(store):
    strong = store.store("the payments service retries webhooks five times", importance=0.8)
    faint = store.store("the payments dashboard once had a purple theme", importance=0.2)
    for mid in (strong, faint):
        store.age(mid, days=60, status="archived")
    store.reopen()
    assert store.svc.recall(store.ctx, query="payments webhooks dashboard")["memories"] == []
    found = store.svc.recall(store.ctx, query="payments webhooks dashboard", include_forgotten=True)
    assert {m["id"] for m in found["memories"]} == {strong, faint}
    s, f = store.get(strong), store.get(faint)
    assert s["access_count"] == 1 and f["access_count"] == 1
    assert s["strength"] == pytest.approx(0.8, abs=1e-3)  # last access is now
    assert s["status"] == "active"  # 0.8 >= 0.3: back to active
    assert f["status"] == "archived"  # 0.2 < 0.3: strengthened, still archived
    assert [m["id"] for m in store.svc.recall(store.ctx, query="payments webhooks")["memories"]] == [strong]


def test_maintenance_reports_per_scope_and_records_when_it_ran(store):
    store.store("anything at all")
    report = lifecycle.maintain(store.svc.access, store.ctx)
    assert set(report) == {"project", "user"}
    # maintain_if_due: not due again right away
    assert lifecycle.maintain_if_due(store.svc.access, store.ctx) is None


def test_a_purge_leaves_no_copy_of_the_forgotten_text(store):
    mid = store.store("The cache password hint is bluefish")
    assert store.svc.store(store.ctx, content="The cache password hint is bluefish!", type="semantic", scope="project")["action"] == "merged"
    store.svc.update(store.ctx, mid, summary="hint bluefish")
    store.svc.update(store.ctx, mid, importance=0.6)
    store.svc.forget(store.ctx, mid)
    store.set(mid, forgotten_at=datetime.now(timezone.utc) - timedelta(days=31))
    store.reopen()
    assert store.svc.maintain(store.ctx)["project"]["purged"] == 1
    h = store.svc.handle(store.ctx, "project")
    key = mid.split(":", 1)[1]
    dump = repr(h.q("SELECT * FROM type::thing('memory', $id)", {"id": key}))
    dump += repr(h.q("SELECT * FROM memory_history WHERE memory = type::thing('memory', $id)", {"id": key}))
    assert "bluefish" not in dump


def test_seen_in_projects_counts_identical_content_without_vectors():
    """The fingerprint path of "seen in >= 2 projects": same text (blanks and case aside), no vector needed."""
    from engram_mcp.services.sightings import Sightings, projects_seen
    from engram_mcp.index.scope_index import content_hash

    s = Sightings(["p_other", "p_third"], [content_hash("Use uv for  Python envs"), content_hash("something else")], None)
    assert projects_seen(s, "p_me", "use uv for python envs", None, 0.85) == {"p_me", "p_other"}
    assert projects_seen(s, "p_me", "unrelated", None, 0.85) == {"p_me"}


def test_maintenance_queues_each_decayed_memory_once_across_passes(fake_service, ctx):
    """The batch queueing path: a second pass does not queue the same memory again."""
    from engram_mcp.services import lifecycle
    from engram_mcp.storage import queries as q

    h = fake_service.handle(ctx, "project")
    keys = [fake_service.store(ctx, content=f"fact number {i} about topic {i * 7}", type="semantic", scope="project",
                               dedup=False)["memory_id"].split(":")[1] for i in range(5)]
    assert lifecycle._enqueue_many(h, keys + keys[:2], "decay", 0.5) == 5
    assert lifecycle._enqueue_many(h, keys, "decay", 0.5) == 0
    assert sorted(str(m.id) for m in h.q(q.QUEUED_MEMORIES, {"reason": "decay"})) == sorted(keys)


# ---------------------------------------------------------------------- issue 15: disk that does not grow with reading
def test_maintenance_compacts_a_store_that_reads_grew_and_leaves_one_that_did_not(store, monkeypatch):
    """Recall strengthening rewrites whole records and the engine keeps every old version, so
    reads alone grow the files; maintenance compacts once they pass COMPACT_GROWTH_RATIO times
    their size after the last compaction, and everything is still there afterwards."""
    monkeypatch.setattr(lifecycle, "COMPACT_MIN_BYTES", 0)
    mids = [store.store(f"note {i} about the deploy pipeline and its build cache") for i in range(30)]
    first = store.svc.maintain(store.ctx)["project"]["compaction"]  # a store never compacted: compacted now
    assert first["bytes_before"] > 0 and first["bytes_after"] > 0
    assert "compaction" not in store.svc.maintain(store.ctx)["project"]  # nothing grew since
    h = store.svc.handle(store.ctx, "project")
    grown_from = h.store.size_bytes()
    for _ in range(40):
        store.svc.recall(store.ctx, query="deploy pipeline build cache", limit=10)
        store.svc.access.write_behind.flush_all()  # each recall's bumps written (the timer's second, without the wait)
    assert h.store.size_bytes() > lifecycle.COMPACT_GROWTH_RATIO * grown_from, "reads grew the store"
    calls = []
    again = store.svc.maintain(store.ctx, progress=lambda d, t, label: calls.append(label))["project"]["compaction"]
    assert "compact project" in calls  # a long copy is announced
    assert again["bytes_after"] < again["bytes_before"] / lifecycle.COMPACT_GROWTH_RATIO
    assert all(store.get(m)["content"].startswith("note ") for m in mids)
    assert sum(store.get(m)["access_count"] for m in mids) == 400  # the strengthening survived the rewrite
    assert len(store.svc.recall(store.ctx, query="deploy pipeline", limit=5)["memories"]) == 5


def test_a_small_store_is_not_compacted_and_scheduled_maintenance_compacts_in_the_background(store, monkeypatch):
    import threading

    store.store("a small store")
    assert all("compaction" not in r for r in store.svc.maintain(store.ctx).values())  # below COMPACT_MIN_BYTES
    monkeypatch.setattr(lifecycle, "COMPACT_MIN_BYTES", 0)
    report = lifecycle.maintain(store.svc.access, store.ctx, compact_in_background=True)
    assert "compaction" not in report["project"]  # the answer does not wait for it
    for t in [t for t in threading.enumerate() if t.name == "engram-compact"]:
        t.join(60)
    h = store.svc.handle(store.ctx, "project")
    assert isinstance(h.repo.meta_get(lifecycle.COMPACTION_META_KEY)["bytes_after"], int)
