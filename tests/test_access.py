"""ScopeAccess: the one per-scope iteration every operation reads the caller's scopes through.

"For each scope: skip the session scope without a session id, open the handle, report a
store that cannot open instead of failing" is written once (`try_scopes`); recall, list,
locate, status, graph search, maintenance, export and reindex all go through it. A project
whose `.claude` is a link to elsewhere is refused by the store (a real StoreUnavailable),
which makes a real unavailable scope here.
"""

from __future__ import annotations

from pathlib import Path

from engram_mcp.core.errors import StoreUnavailable
from engram_mcp.services.access import SCOPE_ORDER, RequestContext
from engram_mcp.services.handles import ScopeHandle


def _refuse_project_store(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)


def test_the_session_scope_is_skipped_without_a_session_id(fake_service, project: Path) -> None:
    got = list(fake_service.access.try_scopes(RequestContext(project, None), SCOPE_ORDER))
    assert [scope for scope, _ in got] == ["project", "user"]
    assert all(isinstance(h, ScopeHandle) and h.scope == scope for scope, h in got)


def test_a_store_that_cannot_open_is_reported_not_raised_and_the_others_still_open(
    fake_service, project: Path, tmp_path: Path
) -> None:
    _refuse_project_store(project, tmp_path)
    ctx = RequestContext(project, "sess-1")
    got = dict(fake_service.access.try_scopes(ctx, SCOPE_ORDER))
    assert isinstance(got["session"], StoreUnavailable) and isinstance(got["project"], StoreUnavailable)
    assert isinstance(got["user"], ScopeHandle)

    warnings: list[dict] = []
    opened = fake_service.access.open_scopes(ctx, SCOPE_ORDER, warnings)
    assert [scope for scope, _ in opened] == ["user"]
    assert [(w["code"], w["scope"]) for w in warnings] == [
        ("scope_unavailable", "session"),
        ("scope_unavailable", "project"),
    ]


def test_status_and_recall_report_the_unavailable_scope_from_the_same_iteration(
    fake_service, project: Path, tmp_path: Path
) -> None:
    fake_service.store(RequestContext(project), content="the user prefers uv", type="semantic", scope="user")
    _refuse_project_store(project, tmp_path)
    ctx = RequestContext(project, None)
    status = fake_service.status(ctx)
    assert status["scopes"]["project"]["status"] == "unavailable"
    assert status["scopes"]["user"]["status"] == "connected"
    assert status["connection"]["degraded_scopes"] == ["project"]
    found = fake_service.recall(ctx, query="uv")
    assert found["degraded"] is True and found["warnings"][0]["scope"] == "project"
    assert [m["scope"] for m in found["memories"]] == ["user"]


def test_the_iteration_opens_each_store_only_when_the_loop_reaches_it(fake_service, project: Path) -> None:
    """Export and reindex work scope by scope: the next store opens after the previous is done."""
    ctx = RequestContext(project, None)
    registry = fake_service.access.registry
    walk = fake_service.access.try_scopes(ctx, ("project", "user"))
    scope, _ = next(walk)
    assert scope == "project" and registry.open_stores() and len(registry.open_stores()) == 1
    next(walk)
    assert len(registry.open_stores()) == 2
