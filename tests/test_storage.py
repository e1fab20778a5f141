"""The embedded store: privacy on disk, namespaces, locking, migrations, project roots."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engram_mcp.core.errors import SchemaTooNew, StorageFull, StoreUnavailable
from engram_mcp.core.ids import new_ulid
from engram_mcp.core.paths import project_dir, project_id, resolve_project_root
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q
from engram_mcp.storage.schema import CURRENT_SCHEMA_VERSION, MIGRATIONS
from engram_mcp.storage.store import SurrealStore
from tests.fakes import FakeEmbedder
from tests.conftest import install_before_store_marks


def _modes(root: Path) -> list[tuple[Path, int, bool]]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            p = Path(dirpath) / name
            out.append((p, stat.S_IMODE(p.lstat().st_mode), True))
        for name in files:
            p = Path(dirpath) / name
            out.append((p, stat.S_IMODE(p.lstat().st_mode), False))
    return out


def _fill(svc: MemoryService, ctx: RequestContext, n: int = 20) -> None:
    for i in range(n):
        for scope in ("session", "project", "user"):
            svc.store(
                ctx,
                content=f"{scope} note {i}: widget {i * 13} uses gear {i * 7}",
                type="semantic",
                scope=scope,
                dedup=False,
            )


def _assert_private_tree(root: Path) -> None:
    assert stat.S_IMODE(root.stat().st_mode) == 0o700, root
    entries = _modes(root)
    assert entries, f"{root} is empty"
    bad = [(str(p), oct(m)) for p, m, is_dir in entries if m != (0o700 if is_dir else 0o600)]
    assert not bad, f"not private: {bad}"


def test_store_directories_are_0700_and_every_file_0600(home, project, ctx):
    old = os.umask(0o022)  # the usual umask: the engine's own files would be 0644
    try:
        svc = MemoryService(home=home, embedder=FakeEmbedder())
        _fill(svc, ctx)
        _assert_private_tree(project_dir(project))
        _assert_private_tree(home / ".claude" / "engram")
        svc.close()
        # reopen and write more: files created by a later run are private too
        svc = MemoryService(home=home, embedder=FakeEmbedder())
        _fill(svc, ctx, 5)
        _assert_private_tree(project_dir(project))
        svc.close()
        _assert_private_tree(project_dir(project))
        _assert_private_tree(home / ".claude" / "engram")
    finally:
        os.umask(old)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_store_directory_holds_a_gitignore_and_git_ignores_the_whole_store(home, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        svc.store(RequestContext(repo, "s1"), content="the repo uses make", type="semantic", scope="project")
        svc.store(RequestContext(repo, "s1"), content="scratch", type="working", scope="session")
    finally:
        svc.close()
    store = project_dir(repo)
    ignore = store / ".gitignore"
    assert ignore.is_file()
    assert "*" in [line.strip() for line in ignore.read_text().splitlines()]
    files = [p.relative_to(repo).as_posix() for p, _m, is_dir in _modes(store) if not is_dir]
    assert files
    for rel in [".claude/engram/", *files]:
        res = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", rel])
        assert res.returncode == 0, f"git does not ignore {rel}"
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ".claude/engram" not in status.stdout
    # the user's own .gitignore was not touched
    assert not (repo / ".gitignore").exists()


def test_scopes_map_to_session_s_id_project_p_hash_and_user_default(fake_service, project, ctx):
    fake_service.store(ctx, content="a session note", type="episodic", scope="session")
    status = fake_service.status(ctx)["scopes"]
    digest = hashlib.sha256(os.path.realpath(project).encode()).hexdigest()[:12]
    assert status["session"]["database"] == "session/s_sess_1"
    assert status["project"]["database"] == f"project/p_{digest}"
    assert status["user"]["database"] == "user/default"
    assert project_id(project) == f"p_{digest}"
    h = fake_service.handle(ctx, "session")
    assert (h.ns, h.db) == ("session", "s_sess_1")
    # session and project scopes share the project store; the user store is separate
    assert status["session"]["path"] == status["project"]["path"] == str(project_dir(project))
    assert status["user"]["path"] == str(fake_service.user_dir)


def test_a_second_store_on_the_same_directory_is_refused_as_locked(tmp_path):
    first = SurrealStore(tmp_path / "store", label="project").open()
    try:
        with pytest.raises(StoreUnavailable) as err:
            SurrealStore(tmp_path / "store", label="project").open()
        assert "locked" in err.value.message
        assert str(os.getpid()) in err.value.message
    finally:
        first.close()
    # released on close: a new opener gets it
    again = SurrealStore(tmp_path / "store", label="project").open()
    again.close()


def test_a_second_service_cannot_open_a_store_held_by_the_first(home, ctx):
    a = MemoryService(home=home, embedder=FakeEmbedder())
    b = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        a.store(ctx, content="held by a", type="semantic", scope="project")
        with pytest.raises(StoreUnavailable):
            b.handle(ctx, "project")
        # reads degrade to a warning instead of failing
        res = b.recall(ctx, query="held", scope="project")
        assert res["degraded"] is True
        assert res["warnings"][0]["code"] == "scope_unavailable"
    finally:
        a.close()
        b.close()


def test_a_write_that_would_fill_the_disk_is_refused_before_the_engine_and_reads_go_on(home, ctx, monkeypatch):
    """The space guard of storage/store.py: refused writes leave the engine healthy (the real-disk
    version, a full tmpfs, is tests/reliability/test_faults.py)."""
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        kept = svc.store(ctx, content="written while there was room", type="semantic", scope="project")["memory_id"]
        store = svc.handle(ctx, "project").store
        room = {"bytes": 10_000}
        monkeypatch.setattr(store, "_room_bytes", lambda: room["bytes"])
        with pytest.raises(StorageFull) as err:
            svc.store(ctx, content="no room for this one", type="semantic", scope="project")
        assert "disk is full" in err.value.message and "reads keep working" in err.value.message
        assert store.is_open and store.failure == err.value.message
        res = svc.recall(ctx, query="written room", scope="project", strategy="keyword")
        assert [m["id"] for m in res["memories"]] == [kept]
        assert res["degraded"] and res["warnings"][0]["code"] == "scope_read_only"
        assert svc.status(ctx)["scopes"]["project"]["status"] == "read_only"
        room["bytes"] = 10 << 20  # space is back: nothing to reopen, the next write goes through
        assert store.failure is None
        assert (
            svc.store(ctx, content="written after space came back", type="semantic", scope="project")["action"]
            == "created"
        )
        assert svc.status(ctx)["scopes"]["project"]["status"] == "connected"
    finally:
        svc.close()


def test_migrations_are_idempotent(tmp_path):
    """Every statement of every migration runs again over the data written at its version: a
    crash mid-migration leaves the version before it, and the migration reruns. Versions 1-4
    rerun over whole records (what they wrote), version 5 over sparse ones too."""
    store = SurrealStore(tmp_path / "store", label="project").open()
    upto_v4 = MIGRATIONS[:4]
    try:
        assert store.ensure_schema("project", "p_test", migrations=upto_v4) == 4
        assert store.ensure_schema("project", "p_test", migrations=upto_v4) == 4
        key = new_ulid()
        store.query(
            "project",
            "p_test",
            q.CREATE_MEMORY,
            {
                "id": key,
                "record": {
                    "memory_type": "semantic",
                    "scope": "project",
                    "content": "kept through re-migration",
                    "category": "fact",
                },
            },
        )
        # force every statement of migrations 1-4 to run again over existing data
        store.query("project", "p_test", q.SET_SCHEMA_VERSION, {"version": 0})
        assert store.ensure_schema("project", "p_test", migrations=upto_v4) == 4
        assert store.ensure_schema("project", "p_test", migrations=MIGRATIONS) == CURRENT_SCHEMA_VERSION
        sparse = new_ulid()
        store.repository("project", "p_test").insert(
            sparse, {"memory_type": "semantic", "scope": "project", "content": "written sparse"}
        )
        store.query("project", "p_test", q.SET_SCHEMA_VERSION, {"version": 4})
        assert store.ensure_schema("project", "p_test", migrations=MIGRATIONS) == CURRENT_SCHEMA_VERSION
        assert store.schema_version("project", "p_test") == CURRENT_SCHEMA_VERSION
        row = store.query("project", "p_test", q.GET_MEMORY, {"id": key})[0]
        assert row["content"] == "kept through re-migration"
        assert row["category"] == "fact"
        assert row["access_count"] == 0  # written whole at version 4
        row = store.query("project", "p_test", q.GET_MEMORY, {"id": sparse})[0]
        assert row["content"] == "written sparse" and "access_count" not in row
    finally:
        store.close()


def _memory_indexes(store: SurrealStore, ns: str, db: str) -> set[str]:
    info = store.query(ns, db, "INFO FOR TABLE memory")
    return set((info or {}).get("indexes", {}))


def test_a_v3_store_loses_the_memory_indexes_no_query_reads(tmp_path):
    """Version 4 removes the status, session and category indexes (recall and maintenance read
    the derived index); a store written at version 3 has them and loses them on open, its
    memories untouched."""
    store = SurrealStore(tmp_path / "store", label="project").open()
    try:
        assert store.ensure_schema("project", "p_test", migrations=MIGRATIONS[:3]) == 3
        assert {"memory_status", "memory_session", "memory_category"} <= _memory_indexes(store, "project", "p_test")
        key = new_ulid()
        store.query(
            "project",
            "p_test",
            q.CREATE_MEMORY,
            {
                "id": key,
                "record": {
                    "memory_type": "semantic",
                    "scope": "project",
                    "content": "kept through v4",
                    "session_id": "s1",
                },
            },
        )
        assert store.ensure_schema("project", "p_test") == CURRENT_SCHEMA_VERSION
        assert not _memory_indexes(store, "project", "p_test") & {"memory_status", "memory_session", "memory_category"}
        assert store.query("project", "p_test", q.GET_MEMORY, {"id": key})[0]["session_id"] == "s1"
    finally:
        store.close()


def test_an_old_store_is_upgraded_and_category_backfilled_from_metadata(home, project, ctx):
    ns, db = "project", project_id(project)
    install_before_store_marks(home)  # an old store, from an old install
    store = SurrealStore(project_dir(project), label="project").open()
    key = new_ulid()
    try:
        assert store.ensure_schema(ns, db, migrations=MIGRATIONS[:1]) == MIGRATIONS[0][0]
        assert store.schema_version(ns, db) == 1
        store.query(
            ns,
            db,
            q.CREATE_MEMORY,
            {
                "id": key,
                "record": {
                    "memory_type": "semantic",
                    "scope": "project",
                    "content": "We decided to keep SurrealKV as the engine",
                    "metadata": {"category": "decision", "origin": "v1"},
                },
            },
        )
    finally:
        store.close()

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        mem = svc.get(ctx, f"memory:{key}")
        h = svc.handle(ctx, "project")
        assert h.store.schema_version(ns, db) == CURRENT_SCHEMA_VERSION
        assert mem["category"] == "decision"
        assert mem["metadata"] == {"origin": "v1"}
        assert mem["content"] == "We decided to keep SurrealKV as the engine"
        hits = svc.recall(ctx, query="SurrealKV engine", category="decision", strategy="keyword")["memories"]
        assert [m["id"] for m in hits] == [f"memory:{key}"]
    finally:
        svc.close()


def test_a_store_with_a_newer_schema_is_refused_and_left_untouched(home, project, ctx):
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    stored = svc.store(ctx, content="written by a future engram", type="semantic", scope="project")
    key = stored["memory_id"].split(":", 1)[1]
    h = svc.handle(ctx, "project")
    h.q(q.SET_SCHEMA_VERSION, {"version": CURRENT_SCHEMA_VERSION + 1})
    before = h.q(q.GET_MEMORY, {"id": key})[0]
    svc.close()

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        with pytest.raises(SchemaTooNew) as err:
            svc.handle(ctx, "project")
        assert err.value.code == "schema_too_new"
        assert str(CURRENT_SCHEMA_VERSION + 1) in err.value.message
        res = svc.recall(ctx, query="future engram", scope="project")
        assert res["memories"] == [] and res["degraded"]
        assert svc.status(ctx)["scopes"]["project"]["status"] == "unavailable"
    finally:
        svc.close()

    store = SurrealStore(project_dir(project), label="project").open()
    try:
        assert store.schema_version("project", project_id(project)) == CURRENT_SCHEMA_VERSION + 1
        after = store.query("project", project_id(project), q.GET_MEMORY, {"id": key})[0]
        assert after == before
    finally:
        store.close()


# ---------------------------------------------------------------- project roots
def test_a_subdirectory_resolves_to_the_git_top_level(project):
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    assert resolve_project_root(sub) == Path(os.path.realpath(project))
    assert resolve_project_root(project) == Path(os.path.realpath(project))


def test_symlinked_and_relative_paths_map_to_the_same_project_and_store(home, project, tmp_path, monkeypatch):
    (project / "src").mkdir()
    link = tmp_path / "link-to-proj"
    link.symlink_to(project, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    roots = {
        resolve_project_root(link),
        resolve_project_root(link / "src"),
        resolve_project_root("proj/src"),
        resolve_project_root(project),
    }
    assert roots == {Path(os.path.realpath(project))}
    assert project_id(link) == project_id(project)
    monkeypatch.chdir(project / "src")
    assert resolve_project_root() == Path(os.path.realpath(project))

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        mid = svc.store(
            RequestContext(resolve_project_root(link / "src")),
            content="stored via the symlink",
            type="semantic",
            scope="project",
        )["memory_id"]
        got = svc.get(RequestContext(resolve_project_root("../src")), mid)
        assert got["content"] == "stored via the symlink"
    finally:
        svc.close()


def test_a_git_worktree_with_a_dot_git_file_is_its_own_project(project):
    wt = project / "worktrees" / "feature"
    (wt / "src").mkdir(parents=True)
    (wt / ".git").write_text("gitdir: ../../.git/worktrees/feature\n")
    root = resolve_project_root(wt / "src")
    assert root == Path(os.path.realpath(wt))
    assert project_id(root) != project_id(project)
    assert project_dir(root) != project_dir(project)


def test_without_git_the_working_directory_is_the_project(tmp_path):
    plain = tmp_path / "nogit" / "deeper"
    plain.mkdir(parents=True)
    assert not any((p / ".git").exists() for p in [plain, *plain.parents])
    assert resolve_project_root(plain) == Path(os.path.realpath(plain))


# ---------------------------------------------------------------------- hostile repositories (issue 12)
def _victim_tree(root: Path) -> tuple[Path, dict[str, tuple[int, int, int]]]:
    victim = root / "victim"
    (victim / "bin").mkdir(parents=True)
    (victim / "bin" / "deploy.sh").write_text("#!/bin/sh\n")
    os.chmod(victim / "bin" / "deploy.sh", 0o755)
    os.chmod(victim, 0o755)
    return victim, _lstat_tree(victim)


def _lstat_tree(root: Path) -> dict[str, tuple[int, int, int]]:
    entries = [root] + [Path(d) / n for d, dirs, files in os.walk(root) for n in dirs + files]
    return {str(p): (p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns) for p in entries}


@pytest.mark.parametrize(
    "where", [".claude", ".claude/engram", ".claude/engram/data", ".claude/engram/data/manifest", ".claude/engram/LOCK"]
)
def test_a_project_store_reached_through_a_link_is_refused_and_the_target_untouched(home, project, tmp_path, where):
    victim, before = _victim_tree(tmp_path)
    link = project / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim / "bin" / "deploy.sh" if where.endswith("LOCK") else victim)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        with pytest.raises(StoreUnavailable) as err:
            svc.store(RequestContext(project, None), content="through a link", type="semantic", scope="project")
        assert str(link) in err.value.message and "symbolic link" in err.value.message and "Fix:" in err.value.message
        svc.store(RequestContext(project, None), content="the user scope still works", type="semantic", scope="user")
        recall = svc.recall(RequestContext(project, None), query="user scope")
        assert any(w["code"] == "scope_unavailable" for w in recall["warnings"]), recall["warnings"]
    finally:
        svc.close()
    assert _lstat_tree(victim) == before
    assert link.is_symlink()


def test_a_store_directory_of_another_user_is_refused(home, project):
    if os.getuid() != 0:
        pytest.skip("needs root to create a directory owned by another user")
    (project / ".claude").mkdir()
    os.chown(project / ".claude", 4242, 4242)
    with pytest.raises(StoreUnavailable) as err:
        SurrealStore(project_dir(project), label="project", trusted=project).open()
    assert "owned by uid 4242" in err.value.message
    assert not (project / ".claude" / "engram").exists()


def test_only_what_engram_created_gets_its_mode_changed(home, project):
    """A real, pre-existing store directory keeps its mode and its foreign files; engram's own are private."""
    store = project / ".claude" / "engram"
    (store / "bin").mkdir(parents=True)
    (store / "bin" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(store / "bin" / "run.sh", 0o755)
    os.chmod(project / ".claude", 0o755)
    SurrealStore(store, label="project", trusted=project).open().close()
    assert stat.S_IMODE((store / "bin" / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((store / "bin").stat().st_mode) == 0o755
    assert stat.S_IMODE((project / ".claude").stat().st_mode) == 0o755
    _assert_private_tree(store / "data")
    assert stat.S_IMODE((store / "LOCK").stat().st_mode) == 0o600


def test_stores_created_under_umask_000_are_private_at_every_level(home, project, ctx):
    old = os.umask(0)
    try:
        svc = MemoryService(home=home, embedder=FakeEmbedder())
        _fill(svc, ctx, 3)
        svc.close()
    finally:
        os.umask(old)
    for created in (home / ".claude", project / ".claude"):
        assert stat.S_IMODE(created.stat().st_mode) == 0o700, created
    _assert_private_tree(project_dir(project))
    _assert_private_tree(home / ".claude" / "engram")


@pytest.mark.parametrize("plant", ["data.old", "data.compact+marker", "marker"])
def test_a_committed_compaction_leftover_link_is_refused_before_recovery_touches_it(project, tmp_path, plant):
    """Recovery of an interrupted compaction renames, zero-fills and deletes data.old/, data.compact/
    and COMPACT_READY: a repository committing them as links to the user's files must not get them scrubbed."""
    victim, before = _victim_tree(tmp_path)
    content = (victim / "bin" / "deploy.sh").read_bytes()
    store = project / ".claude" / "engram"
    store.mkdir(parents=True)
    if plant == "data.old":
        (store / "data.old").symlink_to(victim)
    elif plant == "data.compact+marker":
        (store / "data.compact").symlink_to(victim)
        (store / "COMPACT_READY").write_text("1\n")
    else:
        (store / "COMPACT_READY").symlink_to(victim / "bin" / "deploy.sh")
    with pytest.raises(StoreUnavailable) as err:
        SurrealStore(store, label="project", trusted=project).open()
    assert "symbolic link" in err.value.message
    assert (victim / "bin" / "deploy.sh").read_bytes() == content
    assert _lstat_tree(victim) == before


def test_a_transaction_that_bumps_the_counter_itself_bumps_it_once(tmp_path):
    """A migration names the bump itself; the store must not add a second one (read back one
    short after a reopen, it let a file's stamp be reached again by other contents)."""
    from engram_mcp.storage import queries as q
    from engram_mcp.storage.store import SurrealStore

    def counter(store: SurrealStore) -> int:
        return int(store.query("ns", "db", q.GET_CHANGES)["n"])

    store = SurrealStore(tmp_path / "s", label="test").open()
    try:
        store.query("ns", "db", q.CREATE_MEMORY, {"id": "a", "record": {"content": "x"}})
        before = counter(store)
        store.transaction(
            "ns", "db", [(q.CREATE_MEMORY, {"id": "b", "record": {"content": "y"}}), (q.BUMP_CHANGES, {})]
        )
        assert counter(store) == before + 1
        store.transaction("ns", "db", [(q.CREATE_MEMORY, {"id": "c", "record": {"content": "z"}})])
        assert counter(store) == before + 2
    finally:
        store.close()
    reopened = SurrealStore(tmp_path / "s", label="test").open()
    try:
        assert counter(reopened) == before + 2
    finally:
        reopened.close()


_TORN_WRITER = r"""
import os, sys
sys.path.insert(0, sys.argv[2])
from engram_mcp.storage import queries as q
from engram_mcp.storage.store import SurrealStore
store = SurrealStore(sys.argv[1], label="project").open()
store.ensure_schema("project", "p_torn")
record = {"memory_type": "semantic", "scope": "project", "content": "v1 " + "x" * 300, "category": "fact", "version": 1}
store.query("project", "p_torn", q.CREATE_MEMORY, {"id": "m1", "record": record})
row = {k: v for k, v in store.query("project", "p_torn", q.GET_MEMORY, {"id": "m1"})[0].items() if k != "id"}
print(store.query("project", "p_torn", q.GET_CHANGES)["n"], flush=True)  # the counter before the update
repo = store.repository("project", "p_torn")
with repo.atomic() as tx:  # what ScopeAccess.write_update writes: history first, then the record
    tx.add_history("m1", version=1, change="update", snapshot=dict(row))
    tx.replace("m1", {**row, "content": "v2 " + "y" * 300, "version": 2})
os._exit(0)  # killed: the engine is never closed
"""


def _torn_state(store: SurrealStore) -> tuple[list[int], int | None]:
    from surrealdb import RecordID

    rows = store.query("project", "p_torn", q.GET_MEMORY, {"id": "m1"}) or []
    hist = store.query("project", "p_torn", q.HISTORY_OF, {"memory": RecordID("memory", "m1")}) or []
    return sorted(int(h["version"]) for h in hist), (int(rows[0]["version"]) if rows else None)


def _logged_after(store: SurrealStore, counter: int) -> list[list[str]]:
    """The memory keys the change log names after `counter` (what an index repair reads again)."""
    rows = store.query("project", "p_torn", q.CHANGES_AFTER, {"after": counter, "limit": 10}) or []
    return [list(r.get("keys") or []) for r in rows]


def test_a_history_row_left_by_a_transaction_a_crash_tore_is_dropped_at_the_next_open(tmp_path):
    """The engine keeps the first writes of a transaction whose end the log lost: cutting the log
    inside an update leaves its history row without the new version (what a kill -9 in the middle
    of the engine's write left on CI). The next open after an unclean close drops that row; a
    finished update's row stays, and nothing is checked after a clean close. Whatever part of the
    update survives, the change log names it (the bump is the transaction's first write), so a
    persisted index is repaired, never trusted stale."""
    src = tmp_path / "src"
    done = subprocess.run(
        [os.sys.executable, "-c", _TORN_WRITER, str(src), str(Path(__file__).resolve().parents[1])],
        check=True,
        capture_output=True,
        text=True,
    )
    before = int(done.stdout.split()[-1])
    log_file = next((src / "data").rglob("*.clog"))
    size = log_file.stat().st_size
    torn_seen = False
    for cut in [0, *range(8, 1200, 8)]:
        copy = tmp_path / f"cut{cut}"
        shutil.copytree(src, copy)
        with open(next((copy / "data").rglob("*.clog")), "r+b") as f:
            f.truncate(size - cut)
        store = SurrealStore(copy, label="project").open()
        try:
            versions, version = _torn_state(store)
            if version is None:
                break  # the cut reached the memory's own creation
            torn = versions == [1] and version == 1
            if versions or version == 2:  # some write of the update survived: the log names it
                assert _logged_after(store, before) == [["m1"]], (
                    f"cut {cut}: a surviving write is not in the change log"
                )
            store.ensure_schema("project", "p_torn")
            after = _torn_state(store)
            if torn:
                torn_seen = True
                assert after == ([], 1), f"cut {cut}: the torn update's history row is still there"
                assert store.torn_repairs == {("project", "p_torn"): 1}
                break
            assert after == (versions, version), f"cut {cut}: a consistent state was changed"
            assert store.torn_repairs == {}
        finally:
            store.close()
        shutil.rmtree(copy)
    else:
        pytest.fail("no cut reached the memory's creation")
    if not torn_seen:
        pytest.skip("this engine never kept part of a torn transaction")
    # closed cleanly just now: the next open checks nothing
    reopened = SurrealStore(copy, label="project").open()
    try:
        assert not reopened._unclean
    finally:
        reopened.close()


def test_a_torn_update_check_that_cannot_write_still_opens_the_store(tmp_path, monkeypatch, caplog):
    """After an unclean close on a full disk, the check is skipped with a warning, not fatal."""
    (tmp_path / "s").mkdir(mode=0o700)
    (tmp_path / "s" / "LOCK").write_text("4242")  # a pid left by an owner that died
    (tmp_path / "s" / "LOCK").chmod(0o600)
    store = SurrealStore(tmp_path / "s", label="project").open()
    real = store.query

    def full_disk(ns, db, sql, params=None):
        if sql == q.DROP_TORN_HISTORY:
            raise StorageFull("the disk is full")
        return real(ns, db, sql, params)

    monkeypatch.setattr(store, "query", full_disk)
    try:
        assert store._unclean
        assert store.ensure_schema("project", "p_full") == CURRENT_SCHEMA_VERSION
        assert "torn-update check skipped" in caplog.text
    finally:
        store.close()
    assert (tmp_path / "s" / "LOCK").read_text().strip()  # the pid stays: the next open checks again
    again = SurrealStore(tmp_path / "s", label="project").open()
    try:
        assert again._unclean
        again.ensure_schema("project", "p_full")  # the check runs (and finds nothing)
    finally:
        again.close()
    assert (tmp_path / "s" / "LOCK").read_text() == ""  # checked, closed cleanly: emptied


PURGE_WORKER = """
import sys
from pathlib import Path
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage.store import SurrealStore
from tests.fakes import FakeEmbedder

home, project = Path(sys.argv[1]), Path(sys.argv[2])
svc = MemoryService(home=home, embedder=FakeEmbedder())
ctx = RequestContext(project, None)
for i in range(30):
    svc.store(ctx, content=f"an ordinary note {i} on the build", type="semantic", scope="project")
mid = svc.store(ctx, content="the staging host is zebrafish quantum walnut", type="semantic", scope="project")["memory_id"]
svc.checkpoint()  # its index file holds the text too


def held_compact(self):  # stand still where the test kills: the purge committed, its compaction not run
    print("compacting", flush=True)
    sys.stdin.readline()


SurrealStore.compact = held_compact
print("ready", flush=True)
svc.forget(ctx, mid, reason="a secret", purge_now=True)
"""
SECRET = b"zebrafish quantum walnut"


def _files_holding(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


@pytest.mark.timeout(300)
def test_a_purge_killed_before_its_compaction_leaves_no_purged_bytes_after_the_next_start(home, project):
    """kill -9 after a purge committed and before its compaction ran: the next open finishes
    it without being asked, so no file of the store (data or index) holds the purged text."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", PURGE_WORKER, str(home), str(project)],
        env=env,
        cwd=env["PYTHONPATH"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        assert proc.stdout.readline().strip() == "compacting", proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
        proc.wait()
    store_dir = project_dir(project)
    assert _files_holding(store_dir, SECRET), "the purged text is on disk before the next start"
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        got = svc.recall(RequestContext(project, None), query="ordinary note build", limit=40, strengthen=False)
        assert got["memories"] and all(b"zebrafish" not in m["content"].encode() for m in got["memories"])
    finally:
        svc.close()
    assert _files_holding(store_dir, SECRET) == []


# ---------------------------------------------------------------------- a file a crash left without its header
def _store_with(tmp_path: Path, contents: list[str]) -> Path:
    """A real store directory holding `contents` as memories, closed cleanly."""
    directory = tmp_path / "s"
    store = SurrealStore(directory, label="project").open()
    try:
        for i, text in enumerate(contents):
            store.query("ns", "db", q.CREATE_MEMORY, {"id": f"m{i}", "record": {"content": text}})
    finally:
        store.close()
    return directory


def _contents(directory: Path) -> list[str]:
    store = SurrealStore(directory, label="project").open()
    try:
        return sorted(r["content"] for r in store.query("ns", "db", q.ALL_MEMORIES) or [])
    finally:
        store.close()


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted((directory / "data").rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kept_bytes", [0, 2, 100])
def test_a_new_store_whose_first_log_segment_a_kill_left_headerless_opens(tmp_path, kept_bytes, caplog):
    """Measured under kill -9: a project store killed while it was created had its manifest and an
    empty `.clog`, and the engine refused it at every open after ("failed to fill whole buffer").
    The headerless segment holds nothing; it is removed and the store opens and takes writes."""
    directory = _store_with(tmp_path, [])
    (clog,) = (directory / "data" / "clog").glob("*.clog")
    with open(clog, "r+b") as f:
        f.truncate(kept_bytes)
    store = SurrealStore(directory, label="project").open()
    try:
        store.query("ns", "db", q.CREATE_MEMORY, {"id": "a", "record": {"content": "after the crash"}})
    finally:
        store.close()
    assert "left without a header by a crash" in caplog.text
    assert _contents(directory) == ["after the crash"]


@pytest.mark.parametrize("kept_bytes", [0, 3, 150])
def test_a_newest_segment_without_its_header_is_dropped_and_every_record_before_it_kept(tmp_path, kept_bytes):
    directory = _store_with(tmp_path, ["alpha uses port 5433", "beta deploys on fridays"])
    clog_dir = directory / "data" / "clog"
    (first,) = clog_dir.glob("*.clog")
    torn = clog_dir / "00000000000000000001.clog"  # the next segment, killed before its header was whole
    torn.write_bytes(first.read_bytes()[:kept_bytes])
    assert _contents(directory) == ["alpha uses port 5433", "beta deploys on fridays"]
    assert not torn.exists()


def test_a_manifest_a_kill_left_headerless_is_dropped_and_the_store_opens(tmp_path):
    directory = _store_with(tmp_path, ["gamma is pinned to node 20"])
    (manifest,) = (directory / "data" / "manifest").glob("*.manifest")
    with open(manifest, "r+b") as f:
        f.truncate(40)
    assert _contents(directory) == ["gamma is pinned to node 20"]


@pytest.mark.parametrize("damage", ["manifest cut after its header", "segment with a damaged first length"])
def test_an_engine_refusal_a_headerless_file_does_not_explain_leaves_every_file_as_it_was(tmp_path, damage):
    """Only a file shorter than a plausible header is removed: a whole header with a cut record, or a
    segment whose first bytes were damaged, is refused as before and nothing is deleted."""
    directory = _store_with(tmp_path, ["delta owns the billing service"])
    if damage == "manifest cut after its header":
        (manifest,) = (directory / "data" / "manifest").glob("*.manifest")
        with open(manifest, "r+b") as f:
            f.truncate(190)  # the 174-byte header is whole; the record after it is not
    else:
        (clog,) = (directory / "data" / "clog").glob("*.clog")
        data = bytearray(clog.read_bytes())
        data[0:4] = (10**9).to_bytes(4, "big")  # a length no header has: damage, not a cut
        clog.write_bytes(bytes(data))
    before = _tree(directory)
    with pytest.raises(StoreUnavailable):
        SurrealStore(directory, label="project").open()
    assert _tree(directory) == before
