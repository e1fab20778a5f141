"""Promotion session -> project -> user, the session lifecycle, crash recovery (real model)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from engram_mcp.services import promotion
from engram_mcp.core.errors import InvalidInput, MemoryNotFound
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q

pytestmark = pytest.mark.slow


def _store(svc, ctx, content, scope="session", type="semantic", **kw) -> str:
    return svc.store(ctx, content=content, type=type, scope=scope, **kw)["memory_id"]


def _project_rows(svc, ctx, content=None) -> list[dict]:
    rows = svc.handle(ctx, "project").q(q.ALL_MEMORIES) or []
    return [r for r in rows if content is None or r.get("content") == content]


def _log(svc, ctx, mid, scope="project") -> list[dict]:
    return svc.handle(ctx, scope).q(q.PROMOTIONS_OF, {"memory_id": mid}) or []


def test_session_end_promotes_what_qualifies_and_drops_the_session(real_service, ctx, project):
    real_service.session_start(ctx)
    important = _store(real_service, ctx, "The ORM is SQLAlchemy 2.0 with async sessions", importance=0.7)
    used = _store(real_service, ctx, "Frontend assets are built with vite", importance=0.3)
    minor = _store(real_service, ctx, "Glanced at the CHANGELOG", type="episodic", importance=0.2)
    scratch = _store(real_service, ctx, "Scratch: bisect between v1.2 and v1.3", type="working", importance=0.95)
    opted_out = _store(real_service, ctx, "A personal aside that should stay in the session", importance=0.9, metadata={"promote": False})
    for _ in range(2):  # access_count 2 qualifies a low-importance memory
        real_service.recall(ctx, query="vite frontend assets", scope="session", limit=1)
    assert real_service.get(ctx, used)["access_count"] == 2

    res = real_service.session_end(ctx)
    assert res["promoted"] == 2 and res["merged"] == 0 and res["not_promoted"] == 3
    pctx = RequestContext(project)
    for mid in (important, used):
        mem = real_service.get(pctx, mid)  # same id in the project scope
        assert mem["scope"] == "project" and mem["status"] == "active"
        chain = mem["promotion_chain"]
        assert len(chain) == 1
        assert chain[0]["scope"] == "session" and chain[0]["memory_id"] == mid and chain[0]["action"] == "created"
        assert chain[0]["session_id"] == "sess-1" and chain[0]["reason"] == "session_end"
        assert len(_log(real_service, ctx, mid)) == 1
    assert real_service.get(pctx, used)["access_count"] == 2
    for mid in (minor, scratch, opted_out):
        with pytest.raises(MemoryNotFound):
            real_service.get(pctx, mid)
    # the session database is gone and the registry says so
    assert "s_sess_1" not in real_service.registry.session_databases(project)
    reg = real_service.handle(ctx, "project").q(q.GET_SESSION, {"key": "s_sess_1"})[0]
    assert reg["status"] == "completed" and reg["memories_promoted"] == 2 and reg["ended_at"]

    # a factual summary of the session is kept in the project
    summary = real_service.get(pctx, res["summary_memory_id"])
    assert summary["type"] == "episodic" and summary["category"] == "session_summary" and summary["scope"] == "project"
    assert "session-summary" in summary["tags"]
    assert "SQLAlchemy" in summary["content"] and "bisect" not in summary["content"]

    # idempotent
    again = real_service.session_end(ctx)
    assert again["already_ended"] is True and again["promoted"] == 0
    assert len(_project_rows(real_service, ctx)) == 3


def test_links_between_session_memories_survive_promotion(real_service, ctx, project):
    real_service.session_start(ctx)
    old = _store(real_service, ctx, "Releases are cut from the develop branch", importance=0.8)
    new = _store(real_service, ctx, "The branching model changed to trunk-based", importance=0.8, supersedes=old)
    real_service.session_end(ctx)
    pctx = RequestContext(project)
    assert real_service.get(pctx, new)["links"] == [{"from": new, "to": old, "relation": "supersedes"}]
    order = [m["id"] for m in real_service.recall(pctx, query="Releases are cut from the develop branch", strengthen=False,
                                                  include_superseded=True)["memories"]]
    assert order.index(new) < order.index(old)  # recall hides a superseded memory unless asked; asked, it ranks below


def test_an_explicit_summary_is_stored_as_the_session_summary(real_service, ctx, project):
    real_service.session_start(ctx)
    _store(real_service, ctx, "Moved the cron jobs to systemd timers", importance=0.8)
    res = real_service.session_end(ctx, summary="Migrated cron to systemd timers; all green.")
    assert real_service.get(RequestContext(project), res["summary_memory_id"])["content"] == "Migrated cron to systemd timers; all green."


def test_session_end_merges_into_a_similar_project_memory_instead_of_duplicating(real_service, ctx, project):
    pid = _store(real_service, ctx, "The project uses PostgreSQL 16 as its database", scope="project", importance=0.4, tags=["db"])
    real_service.session_start(ctx)
    sid = _store(real_service, ctx, "This project's database is PostgreSQL version 16", importance=0.6, tags=["postgres"])
    res = real_service.session_end(ctx)
    assert res["promoted"] == 1 and res["merged"] == 1
    with pytest.raises(MemoryNotFound):
        real_service.get(RequestContext(project), sid)
    mem = real_service.get(RequestContext(project), pid, history=True)
    assert mem["content"] == "The project uses PostgreSQL 16 as its database"
    assert mem["importance"] == 0.6 and mem["tags"] == ["db", "postgres"]
    assert mem["access_count"] == 1
    assert mem["promotion_chain"][-1]["action"] == "merged"
    assert mem["promotion_chain"][-1]["memory_id"] == sid and mem["promotion_chain"][-1]["similarity"] >= 0.85
    assert mem["history"][-1]["change"] == "promotion_merge"
    assert len(_project_rows(real_service, ctx, "The project uses PostgreSQL 16 as its database")) == 1
    assert _log(real_service, ctx, sid)[0]["target_id"] == pid


def test_explicit_promotion_session_to_project_to_user_keeps_the_chain(real_service, ctx, project, home):
    mid = _store(real_service, ctx, "I always run black before committing Python", type="procedural", importance=0.8)
    up = real_service.promote(ctx, mid, "project", reason="useful here")
    assert up["previous_scope"] == "session" and up["new_scope"] == "project" and up["action"] == "created"
    assert real_service.get(ctx, mid)["also_in"] == ["project"]
    up2 = real_service.promote(RequestContext(project), mid, "user")  # the caller sees the project copy
    assert up2["previous_scope"] == "project" and up2["action"] == "created" and up2["target_id"] == mid
    user_copy = real_service.get(RequestContext(project), mid)
    assert user_copy["also_in"] == ["user"]  # the project copy is found first
    user_row = real_service.handle(ctx, "user").q(q.GET_MEMORY, {"id": mid.split(":", 1)[1]})[0]
    assert user_row["scope"] == "user"
    chain = user_row["promotion_chain"]
    assert [c["scope"] for c in chain] == ["session", "project"]
    assert chain[0]["reason"] == "useful here" and chain[1]["reason"] == "explicit"
    assert chain[1]["project"].startswith("p_")
    # the user copy lives in the user store, outside the project
    assert real_service.handle(ctx, "user").store.directory == home / ".claude" / "engram"
    # the sources know where they went
    proj_meta = real_service.handle(ctx, "project").q(q.GET_MEMORY, {"id": mid.split(":", 1)[1]})[0]["metadata"]
    assert proj_meta["promoted_to"][0]["scope"] == "user"


def test_promoting_to_user_from_a_session_that_also_has_a_project_copy_goes_through_the_project(real_service, ctx):
    mid = _store(real_service, ctx, "Always pin GitHub Actions to a commit SHA", type="procedural", importance=0.8)
    real_service.promote(ctx, mid, "project")
    real_service.update(RequestContext(ctx.project_root), mid, tags={"add": ["security"]})  # no session in ctx: project copy only
    res = real_service.promote(ctx, mid, "user")
    assert res["previous_scope"] == "project"
    user_row = real_service.handle(ctx, "user").q(q.GET_MEMORY, {"id": mid.split(":", 1)[1]})[0]
    assert [c["scope"] for c in user_row["promotion_chain"]] == ["session", "project"]


def test_promoting_twice_is_idempotent(real_service, ctx):
    mid = _store(real_service, ctx, "Feature branches are squash-merged", importance=0.8)
    first = real_service.promote(ctx, mid, "project")
    second = real_service.promote(ctx, mid, "project")
    assert first["action"] == "created" and second["action"] == "already_promoted"
    assert len(_project_rows(real_service, ctx, "Feature branches are squash-merged")) == 1
    assert len(_log(real_service, ctx, mid)) == 1
    pid = _store(real_service, ctx, "Prefer rebase over merge for local branches", scope="project", importance=0.8)
    assert real_service.promote(ctx, pid, "user")["action"] == "created"
    assert real_service.promote(ctx, pid, "user")["action"] == "already_promoted"
    assert len(real_service.handle(ctx, "user").q(q.ALL_MEMORIES)) == 1
    with pytest.raises(InvalidInput) as err:
        real_service.promote(RequestContext(ctx.project_root), pid, "project")  # not broader than project
    assert err.value.field == "target_scope"


def test_working_memories_are_never_promoted(real_service, ctx, project):
    real_service.session_start(ctx)
    mid = _store(real_service, ctx, "Scratch: current hypothesis is a race in the cache", type="working", importance=1.0)
    for _ in range(3):
        real_service.recall(ctx, query="race in the cache hypothesis")
    with pytest.raises(InvalidInput):
        real_service.promote(ctx, mid, "project")
    real_service.session_end(ctx)
    with pytest.raises(MemoryNotFound):
        real_service.get(RequestContext(project), mid)


def _crash(svc: MemoryService) -> None:
    """The process dies without session_end: the store is simply closed."""
    svc.close()


def _set_last_seen(svc, ctx, session_id, when):
    svc.handle(ctx, "project").q(q.UPSERT_SESSION, {"key": "s_" + session_id.replace("-", "_"), "fields": {"last_seen_at": when}})


def test_a_crashed_session_is_recovered_and_promoted_by_the_next_session_start(home, project, real_embedder):
    a = RequestContext(project, "sess-a")
    svc = MemoryService(home=home, embedder=real_embedder)
    svc.session_start(a)
    mid = _store(svc, a, "Integration tests need docker compose up first", type="procedural", importance=0.8)
    low = _store(svc, a, "Read a blog post", type="episodic", importance=0.1)
    _set_last_seen(svc, a, "sess-a", datetime.now(timezone.utc) - timedelta(hours=13))  # default limit: 12 h
    _crash(svc)

    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        b = RequestContext(project, "sess-b")
        res = svc.session_start(b)
        assert res["recovered_sessions"] == [{"session_id": "sess-a", "promoted": 1}]
        mem = svc.get(RequestContext(project), mid)
        assert mem["scope"] == "project" and mem["promotion_chain"][0]["reason"] == "recovered"
        with pytest.raises(MemoryNotFound):
            svc.get(RequestContext(project), low)
        assert "s_sess_a" not in svc.registry.session_databases(project)
        reg = svc.handle(b, "project").q(q.GET_SESSION, {"key": "s_sess_a"})[0]
        assert reg["status"] == "abandoned"
        # the recovering session itself is untouched
        assert "s_sess_b" in svc.registry.session_databases(project)
        assert svc.session_start(b)["recovered_sessions"] == []
    finally:
        svc.close()


def test_abandoned_session_hours_comes_from_the_project_config(home, project, real_embedder):
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "engram.local.md").write_text("---\nabandoned_session_hours: 0.01\n---\n")
    a = RequestContext(project, "sess-a")
    svc = MemoryService(home=home, embedder=real_embedder)
    svc.session_start(a)
    mid = _store(svc, a, "Staging deploys need the VPN", importance=0.9)
    _set_last_seen(svc, a, "sess-a", datetime.now(timezone.utc) - timedelta(minutes=1))  # 0.01 h = 36 s
    _crash(svc)
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        res = svc.session_start(RequestContext(project, "sess-b"))
        assert [r["session_id"] for r in res["recovered_sessions"]] == ["sess-a"]
        assert svc.get(RequestContext(project), mid)["scope"] == "project"
    finally:
        svc.close()


def test_a_recent_session_of_another_window_is_not_recovered(home, project, real_embedder):
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        a, b = RequestContext(project, "sess-a"), RequestContext(project, "sess-b")
        svc.session_start(a)
        mid = _store(svc, a, "Window A is still working on this", importance=0.9)
        assert svc.session_start(b)["recovered_sessions"] == []
        assert svc.get(a, mid)["scope"] == "session"
    finally:
        svc.close()


def test_a_long_running_but_active_session_is_not_recovered(home, project, real_embedder):
    svc = MemoryService(home=home, embedder=real_embedder)
    try:
        a, b = RequestContext(project, "sess-a"), RequestContext(project, "sess-b")
        svc.session_start(a)
        _set_last_seen(svc, a, "sess-a", datetime.now(timezone.utc) - timedelta(hours=13))  # started 13 h ago
        mid = _store(svc, a, "Window A stored this a moment ago", importance=0.2, type="episodic")
        svc.recall(a, query="stored a moment ago")
        assert svc.session_start(b)["recovered_sessions"] == []
        assert svc.get(a, mid)["scope"] == "session"
    finally:
        svc.close()


def test_a_half_applied_promotion_is_completed_once_on_rerun(real_service, ctx, project, monkeypatch):
    real_service.session_start(ctx)
    mid = _store(real_service, ctx, "Secrets are loaded from Vault at startup", importance=0.9)
    key = mid.split(":", 1)[1]
    session = real_service.handle(ctx, "session")
    row = session.q(q.GET_MEMORY, {"id": key})[0]

    def crash(*_a, **_k):
        raise RuntimeError("simulated crash before the source was marked")

    monkeypatch.setattr(promotion, "_mark_source", crash)
    with pytest.raises(RuntimeError):
        promotion.promote_row(real_service.access, session, key, row, real_service.handle(ctx, "project"), reason="session_end")
    monkeypatch.undo()
    # the project copy and its log entry committed together; the source was not marked
    assert len(_project_rows(real_service, ctx, "Secrets are loaded from Vault at startup")) == 1
    assert len(_log(real_service, ctx, mid)) == 1
    assert "promoted_to" not in (session.q(q.GET_MEMORY, {"id": key})[0].get("metadata") or {})

    # the process dies here; the next run finishes the session
    real_service.close()
    svc = MemoryService(home=real_service.home, embedder=real_service.embedder)
    try:
        res = svc.session_end(ctx)
        assert res["promoted"] == 1
        rows = _project_rows(svc, ctx, "Secrets are loaded from Vault at startup")
        assert len(rows) == 1
        mem = svc.get(RequestContext(project), mid)
        assert len(mem["promotion_chain"]) == 1 and mem["promotion_chain"][0]["memory_id"] == mid
        logs = _log(svc, ctx, mid)
        assert len(logs) == 1 and logs[0]["target_id"] == mid and logs[0]["from_scope"] == "session"
    finally:
        svc.close()


def test_a_half_applied_merge_is_not_merged_twice(real_service, ctx, project, monkeypatch):
    pid = _store(real_service, ctx, "Logs are shipped to Loki via promtail", scope="project", importance=0.5)
    real_service.session_start(ctx)
    sid = _store(real_service, ctx, "Logs get shipped to Loki using promtail", importance=0.7)
    monkeypatch.setattr(promotion, "_mark_source", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("crash")))
    with pytest.raises(RuntimeError):
        real_service.session_end(ctx)
    monkeypatch.undo()
    after_first = real_service.get(RequestContext(project), pid)
    assert after_first["access_count"] == 1 and len(after_first["promotion_chain"]) == 1
    res = real_service.session_end(ctx)
    assert res["promoted"] == 1
    mem = real_service.get(RequestContext(project), pid)
    assert mem["access_count"] == 1 and len(mem["promotion_chain"]) == 1 and mem["version"] == after_first["version"]
    assert len(_log(real_service, ctx, sid)) == 1
    assert len(_project_rows(real_service, ctx)) == 2  # the merged memory + the session summary



def test_a_memory_seen_in_two_projects_becomes_a_user_candidate(real_service, tmp_path):
    """docs/decisions.md, project -> user: "recalled in >= 3 sessions *or* seen in >= 2 projects"."""
    from engram_mcp.services import lifecycle

    roots = []
    for name in ("alpha", "beta"):
        (tmp_path / name / ".git").mkdir(parents=True)
        roots.append(tmp_path / name)
    a, b = RequestContext(roots[0], "sess-a"), RequestContext(roots[1], "sess-b")

    real_service.session_start(a)
    in_a = _store(real_service, a, "Prefer httpx over requests for HTTP clients in Python", importance=0.8)
    other_a = _store(real_service, a, "Database migrations are written with Alembic", importance=0.8)
    assert real_service.session_end(a)["user_promotion_candidates"] == 0  # one project, never recalled: not yet

    real_service.session_start(b)
    in_b = _store(real_service, b, "For HTTP clients in Python, prefer httpx over requests", importance=0.8)  # cosine ~0.98
    other_b = _store(real_service, b, "The frontend is built with SvelteKit", importance=0.8)
    assert real_service.session_end(b)["user_promotion_candidates"] == 1
    queued = real_service.handle(b, "project").q(q.PENDING_QUEUE, {"limit": 10})
    assert [(str(r["memory"].id), r["reason"]) for r in queued] == [(in_b[7:], "promotion")]

    # project alpha now sees it too
    pa = real_service.handle(a, "project")
    assert lifecycle.queue_user_candidates(real_service.access, pa, real_service.config(roots[0])) == 1
    assert [str(r["memory"].id) for r in pa.q(q.PENDING_QUEUE, {"limit": 10})] == [in_a[7:]]
    # the sightings live in the user store; forgetting a copy withdraws its sighting
    user = real_service.handle(a, "user")
    assert {s["memory_id"] for s in user.q(q.ALL_SIGHTINGS)} == {in_a, other_a, in_b, other_b}
    real_service.forget(RequestContext(roots[0]), in_a)
    assert {s["memory_id"] for s in user.q(q.ALL_SIGHTINGS)} == {other_a, in_b, other_b}


# -- what a session leaves to the next one (issue 33) ------------------------------------------------
def _hook_capture(svc, ctx, content, category, type="episodic", importance=0.45, **more):
    from engram_mcp.services import hook_ops

    return hook_ops.capture(svc.access, ctx, content=content, type=type, importance=importance, category=category,
                            tags=["hook"], source={"hook": "PostToolUse"}, **more)["memory_id"]


def test_edit_and_command_captures_stay_scratch_of_their_session(real_service, ctx, project):
    """Captures of what was done (an edit, a failed command) are never promoted, whatever their access
    count, and a session that learned nothing leaves no summary listing the commands that ran."""
    real_service.session_start(ctx)
    edit = _hook_capture(real_service, ctx, "Edited src/cache.py: `ttl = 60` → `ttl = 300`.", "file_change", importance=0.3)
    failed = _hook_capture(real_service, ctx, "Command failed (exit 2): `make lint` — error: unused import", "error")
    for _ in range(2):  # recalled twice: a knowledge memory this used would qualify
        real_service.recall(ctx, query="ttl cache edit unused import", scope="session", limit=5)
    assert real_service.get(ctx, edit)["metadata"].get("scratch") is True
    res = real_service.session_end(ctx)
    assert res["promoted"] == 0 and res["summary_memory_id"] is None
    assert _project_rows(real_service, ctx) == []
    for mid in (edit, failed):
        with pytest.raises(MemoryNotFound):
            real_service.get(RequestContext(project), mid)


def test_a_summary_says_what_was_learned_and_names_the_memories_it_quotes(real_service, ctx, project):
    real_service.session_start(ctx)
    _hook_capture(real_service, ctx, "Command failed (exit 1): `pnpm build` — error TS2307", "error")
    learned = _hook_capture(real_service, ctx, "User: the preview deploys go to the review-apps namespace, every branch.",
                            "turn_knowledge", type="semantic", importance=0.6)
    res = real_service.session_end(ctx)
    summary = real_service.get(RequestContext(project), res["summary_memory_id"])
    assert "review-apps" in summary["content"] and "pnpm build" not in summary["content"]
    assert summary["metadata"]["derived_from"] == [learned]


def test_what_the_user_stated_for_every_project_reaches_the_user_scope_at_session_end(real_service, ctx, project, tmp_path):
    """A rule stated "in any repo" is needed in the next project too: session end carries it past the project."""
    real_service.session_start(ctx)
    _hook_capture(real_service, ctx, "User: changelog entries are written in past tense, in every repo.",
                  "turn_knowledge", type="semantic", importance=0.6, metadata={"promote_to": "user"})  # as Stop sends it
    real_service.session_end(ctx)
    other = tmp_path / "another-project"
    other.mkdir()
    found = real_service.recall(RequestContext(other, "sess-2"), query="how are changelog entries written", scope="user",
                                strengthen=False)["memories"]
    assert any("past tense" in m["content"] for m in found)


def test_a_turn_that_says_a_value_changed_supersedes_the_older_memory_at_session_end(real_service, project):
    """The user said the old value is gone: from the next session on, only the new one is recalled."""
    first = RequestContext(project, "sess-port-1")
    real_service.session_start(first)
    old = _hook_capture(real_service, first, "User: the metrics API listens on port 7070 on every host.",
                        "turn_knowledge", type="semantic", importance=0.6)
    real_service.session_end(first)
    second = RequestContext(project, "sess-port-2")
    real_service.session_start(second)
    new = _hook_capture(real_service, second, "User: the metrics API moved to port 7443, and 7070 is closed.",
                        "turn_knowledge", type="semantic", importance=0.6)
    assert real_service.get(second, new)["metadata"]["replaces"] == [old]
    unrelated = _hook_capture(real_service, second, "User: the metrics dashboards now live in the ops folder.",
                              "turn_knowledge", type="semantic", importance=0.6)
    assert "replaces" not in real_service.get(second, unrelated)["metadata"]  # names none of its values
    real_service.session_end(second)
    found = real_service.recall(RequestContext(project), query="which port does the metrics API listen on",
                                strengthen=False)["memories"]
    texts = [(m["category"], m["content"]) for m in found]
    assert any("7443" in t for _c, t in texts), texts
    assert not any("7070 on every host" in t for _c, t in texts), texts  # nor the summary that quoted it


def test_states_replacement_needs_a_named_value_a_new_one_and_a_change_word():
    from engram_mcp.services.promotion import states_replacement

    old = "Builds run on the runner build-07 with Node 18."
    assert states_replacement(old, "We moved off build-07: builds run on build-12 now.")
    assert not states_replacement(old, "Builds run on build-07, it is fast enough.")  # no change
    assert not states_replacement(old, "Lint moved to a pre-commit hook now.")  # names no value of the old one


def test_the_hooks_draft_is_not_promoted_beside_what_claude_stored_from_the_note(real_service, project):
    """The Stop hook drafted the turn's knowledge; Claude, nudged, stored it itself: one memory lasts."""
    ctx = RequestContext(project, "sess-draft")
    real_service.session_start(ctx)
    draft = _hook_capture(real_service, ctx, "User: the nightly export job runs at 03:15 UTC every day. Outcome: noted.",
                          "turn_knowledge", type="semantic", importance=0.6)
    kept = _hook_capture(real_service, ctx, "User: the search index is rebuilt on Sundays, by every region.",
                         "turn_knowledge", type="semantic", importance=0.6)
    real_service.store(ctx, content="The nightly export job runs daily at 03:15 UTC.", type="semantic", scope="project",
                       importance=0.7, source={"origin": "claude"})
    real_service.session_end(ctx)
    pctx = RequestContext(project)
    with pytest.raises(MemoryNotFound):
        real_service.get(pctx, draft)
    assert real_service.get(pctx, kept)["scope"] == "project"


def test_a_correction_claude_stored_without_supersedes_replaces_the_older_memory_at_session_end(real_service, project):
    first = RequestContext(project, "sess-c1")
    real_service.session_start(first)
    old = real_service.store(first, content="The metrics API listens on port 7070 on every host.", type="semantic",
                             scope="project", importance=0.7, source={"origin": "claude"})["memory_id"]
    other = real_service.store(first, content="The metrics API is owned by the platform team.", type="semantic",
                               scope="project", importance=0.7, source={"origin": "claude"})["memory_id"]
    real_service.session_end(first)
    second = RequestContext(project, "sess-c2")
    real_service.session_start(second)
    new = real_service.store(second, content="The metrics API moved to port 7443; 7070 is closed now.", type="semantic",
                             scope="project", importance=0.7, source={"origin": "claude"})["memory_id"]
    real_service.session_end(second)
    ids = [m["id"] for m in real_service.recall(RequestContext(project), query="metrics API port owner",
                                                strengthen=False)["memories"]]
    assert new in ids and other in ids and old not in ids
