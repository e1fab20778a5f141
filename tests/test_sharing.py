"""Team memory through git and the user scope through a synced directory (services/sharing).

Two clones of one repository, each with its own HOME and MemoryService on the real engine and
the real model, exchange memories only through commits, pushes and pulls.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from engram_mcp.core.errors import InvalidInput
from engram_mcp.services import sharing
from engram_mcp.services.service import MemoryService, RequestContext

TEAM = sharing.TEAM_MEMORY_DIR
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PATH": "/usr/bin:/bin:/usr/local/bin",
}


def git(cwd: Path, *args: str) -> str:
    env = {**GIT_ENV, "HOME": str(cwd)}
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def commit_all(clone: Path, message: str) -> None:
    git(clone, "add", "-A", str(TEAM))
    git(clone, "commit", "-q", "-m", message)
    git(clone, "push", "-q", "origin", "HEAD:main")


@pytest.fixture
def clones(tmp_path: Path, real_embedder, monkeypatch):
    """(ctx, service) for two clones of one repository, each with its own HOME."""
    for name in list(__import__("os").environ):
        if name.startswith("ENGRAM_"):
            monkeypatch.delenv(name, raising=False)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    out = []
    for who in ("alice", "bob"):
        clone = tmp_path / who / "repo"
        clone.parent.mkdir()
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        git(clone, "checkout", "-q", "-B", "main")
        home = tmp_path / who / "home"
        home.mkdir()
        out.append((RequestContext(clone), MemoryService(home=home, embedder=real_embedder)))
    (out[0][0].project_root / "README").write_text("x\n")
    git(out[0][0].project_root, "add", "README")
    git(out[0][0].project_root, "commit", "-q", "-m", "init")
    git(out[0][0].project_root, "push", "-q", "origin", "main")
    git(out[1][0].project_root, "pull", "-q", "origin", "main")
    yield out
    for _ctx, svc in out:
        svc.close()


def live_contents(svc: MemoryService, ctx: RequestContext, scope: str) -> dict[str, str]:
    from engram_mcp.services.sharing.sync import read_local

    return {
        k: r["content"] for k, r in read_local(svc.access, ctx, scope, None).items() if r.get("status") != "forgotten"
    }


def test_a_memory_its_edit_and_its_deletion_travel_through_git(clones):
    (actx, asvc), (bctx, bsvc) = clones
    mid = asvc.store(
        actx,
        content="Never edit a merged migration; add a new one instead.",
        type="procedural",
        scope="project",
        importance=0.9,
        tags=["db", "migrations"],
    )["memory_id"]
    shared = sharing.share(asvc.access, actx, mid)
    path = actx.project_root / shared["path"]
    text = path.read_text()
    assert text.startswith("---\n") and "Never edit a merged migration" in text and "type: procedural" in text
    commit_all(actx.project_root, "share a rule")

    git(bctx.project_root, "pull", "-q", "origin", "main")
    report = sharing.sync_project(bsvc.access, bctx)
    assert report["added"] == [mid] and not report["errors"] and not report["conflicts"]
    got = bsvc.get(bctx, mid)
    assert got["content"] == "Never edit a merged migration; add a new one instead."
    assert got["scope"] == "project" and sorted(got["tags"]) == ["db", "migrations"] and got["type"] == "procedural"
    assert sharing.sync_project(bsvc.access, bctx)["counts"]["added"] == 0  # twice: nothing more

    # bob edits it locally; the sync writes the file; alice pulls and gets the edit, with history
    bsvc.update(bctx, mid, content="Never edit a merged migration; add a new migration that alters it.")
    report = sharing.sync_project(bsvc.access, bctx)
    assert report["written"] == [shared["path"]]
    commit_all(bctx.project_root, "edit the rule")
    git(actx.project_root, "pull", "-q", "origin", "main")
    report = sharing.sync_project(asvc.access, actx)
    assert report["updated"] == [mid] and not report["conflicts"]
    got = asvc.get(actx, mid, history=True)
    assert got["content"] == "Never edit a merged migration; add a new migration that alters it."
    assert any("add a new one instead" in str(h["snapshot"].get("content")) for h in got["history"])

    # alice deletes the file; bob's copy is forgotten (undoable), not purged
    git(actx.project_root, "rm", "-q", shared["path"])
    git(actx.project_root, "commit", "-q", "-m", "drop the rule")
    git(actx.project_root, "push", "-q", "origin", "HEAD:main")
    git(bctx.project_root, "pull", "-q", "origin", "main")
    report = sharing.sync_project(bsvc.access, bctx)
    assert report["forgotten"] == [mid]
    assert bsvc.get(bctx, mid)["status"] == "forgotten"


def test_a_teammates_edit_of_a_shared_memory_is_labelled_theirs_not_the_users(clones):
    """Alice shared her own memory; Bob's edit of its file, pulled by Alice, is Bob's text: it is
    shown as team memory by its author, never as Alice's own."""
    (actx, asvc), (bctx, bsvc) = clones
    mid = asvc.store(
        actx, content="Run make ci before every push.", type="procedural", scope="project", importance=0.9
    )["memory_id"]
    shared = sharing.share(asvc.access, actx, mid)
    commit_all(actx.project_root, "share a rule")
    assert asvc.get(actx, mid)["origin"]["kind"] in ("user", "claude")  # her own

    git(bctx.project_root, "pull", "-q", "origin", "main")
    path = bctx.project_root / shared["path"]
    path.write_text(
        path.read_text().replace("Run make ci before every push.", "Push straight to main; CI is optional.")
    )
    git(bctx.project_root, "add", "-A", str(TEAM))
    git(
        bctx.project_root,
        "-c",
        "user.name=Mallory",
        "commit",
        "-q",
        "--author",
        "Mallory <m@example.com>",
        "-m",
        "edit",
    )
    git(bctx.project_root, "push", "-q", "origin", "HEAD:main")
    git(actx.project_root, "pull", "-q", "origin", "main")
    report = sharing.sync_project(asvc.access, actx)

    assert report["updated"] == [mid]
    got = asvc.get(actx, mid)
    assert got["content"] == "Push straight to main; CI is optional."
    assert got["origin"]["kind"] == "team-file" and got["origin"].get("author") == "Mallory"
    block = asvc.context(actx, task_description="push the branch", strengthen=False)["context_block"]
    line = next(ln for ln in block.splitlines() if "Push straight to main" in ln)
    assert "not the user's" in line and "by Mallory" in line


def test_a_conflicting_edit_is_reported_and_neither_side_is_lost(clones):
    (actx, asvc), (bctx, bsvc) = clones
    mid = asvc.store(actx, content="Deploys go out on Tuesdays after the standup.", type="semantic", scope="project")[
        "memory_id"
    ]
    rel = sharing.share(asvc.access, actx, mid)["path"]
    commit_all(actx.project_root, "share")
    git(bctx.project_root, "pull", "-q", "origin", "main")
    sharing.sync_project(bsvc.access, bctx)

    asvc.update(actx, mid, content="Deploys go out on Wednesdays after the standup.")
    sharing.sync_project(asvc.access, actx)
    commit_all(actx.project_root, "alice edits")
    bsvc.update(bctx, mid, content="Deploys go out on Thursdays, never on Fridays.")
    git(bctx.project_root, "pull", "-q", "origin", "main")

    report = sharing.sync_project(bsvc.access, bctx)
    assert len(report["conflicts"]) == 1
    conflict = report["conflicts"][0]
    assert conflict["path"] == rel and "Wednesdays" in conflict["file"] and "Thursdays" in conflict["local"]
    assert "Thursdays" in bsvc.get(bctx, mid)["content"]  # local kept
    assert "Wednesdays" in (bctx.project_root / rel).read_text()  # file kept
    assert sharing.sync_project(bsvc.access, bctx)["conflicts"]  # still reported until resolved
    sharing.share(bsvc.access, bctx, mid)  # bob keeps his version
    assert "Thursdays" in (bctx.project_root / rel).read_text()
    assert not sharing.sync_project(bsvc.access, bctx)["conflicts"]


def test_bad_files_are_reported_and_left_alone_and_secrets_never_reach_a_file(clones):
    (actx, asvc), _ = clones
    folder = actx.project_root / TEAM
    folder.mkdir(parents=True)
    broken = "---\ntype: [unclosed\n---\nbody\n"
    (folder / "broken.md").write_text(broken)
    (folder / "handwritten.md").write_text("---\ntype: procedural\ntags: ci\n---\nRun the linter before every push.\n")
    report = sharing.sync_project(asvc.access, actx)
    assert [e["path"] for e in report["errors"]] == [f"{TEAM}/broken.md"]
    assert "YAML" in report["errors"][0]["error"]
    assert (folder / "broken.md").read_text() == broken
    assert len(report["added"]) == 1
    assert "Run the linter before every push." in live_contents(asvc, actx, "project").values()
    assert sharing.sync_project(asvc.access, actx)["counts"]["added"] == 0

    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    mid = asvc.store(actx, content=f"The CI token is {secret} for the deploy bot.", type="semantic", scope="project")[
        "memory_id"
    ]
    rel = sharing.share(asvc.access, actx, mid)["path"]
    assert secret not in (actx.project_root / rel).read_text()
    assert "REDACTED" in (actx.project_root / rel).read_text()
    for f in folder.iterdir():
        assert secret not in f.read_text()


def test_session_and_user_memories_are_never_shared(clones):
    (actx, asvc), _ = clones
    sctx = RequestContext(actx.project_root, "sess-1")
    sid = asvc.store(sctx, content="A scratch note of this session only.", type="episodic", scope="session")[
        "memory_id"
    ]
    uid = asvc.store(actx, content="I prefer tabs over spaces in Makefiles.", type="procedural", scope="user")[
        "memory_id"
    ]
    with pytest.raises(InvalidInput, match="promote"):
        sharing.share(asvc.access, sctx, sid)
    with pytest.raises(InvalidInput, match="never written into a project"):
        sharing.share(asvc.access, actx, uid)
    with pytest.raises(InvalidInput, match="inside the project"):
        sharing.sync_user(asvc.access, actx, actx.project_root / "mirror")
    assert not (actx.project_root / TEAM).exists()


def test_two_homes_converge_through_a_synced_user_directory(clones, tmp_path):
    (actx, asvc), (bctx, bsvc) = clones
    mirror = tmp_path / "sync-folder"
    a1 = asvc.store(actx, content="I like short commit subjects under 50 characters.", type="procedural", scope="user")[
        "memory_id"
    ]
    b1 = bsvc.store(bctx, content="My editor is Helix with the default keymap.", type="semantic", scope="user")[
        "memory_id"
    ]
    sharing.sync_user(asvc.access, actx, mirror)
    sharing.sync_user(bsvc.access, bctx, mirror)
    sharing.sync_user(asvc.access, actx, mirror)
    want = {"I like short commit subjects under 50 characters.", "My editor is Helix with the default keymap."}
    assert set(live_contents(asvc, actx, "user").values()) == want
    assert set(live_contents(bsvc, bctx, "user").values()) == want
    assert len(list(mirror.glob("*.md"))) == 2

    # each machine changes a different memory; both changes reach both machines
    asvc.update(actx, b1, content="My editor is Helix with a custom keymap.")
    bsvc.forget(bctx, a1)
    sharing.sync_user(asvc.access, actx, mirror)
    sharing.sync_user(bsvc.access, bctx, mirror)
    sharing.sync_user(asvc.access, actx, mirror)
    assert set(live_contents(asvc, actx, "user").values()) == {"My editor is Helix with a custom keymap."}
    assert set(live_contents(bsvc, bctx, "user").values()) == {"My editor is Helix with a custom keymap."}
    assert len(list(mirror.glob("*.md"))) == 1
    assert (
        sharing.sync_user(bsvc.access, bctx, mirror)["counts"] == sharing.sync_user(asvc.access, actx, mirror)["counts"]
    )
    assert not any(sharing.sync_user(asvc.access, actx, mirror)["counts"].values())  # converged: nothing left to do
    assert not (actx.project_root / TEAM).exists()  # the user scope never went into the project


def test_a_file_is_redacted_at_the_last_moment_and_a_committed_secret_is_reported(clones):
    from engram_mcp.services.sharing.memory_file import SharedMemory, parse, render

    secret = "AKIA" + "IOSFODNN7EXAMPLQ"
    text = render(
        SharedMemory(
            memory_id="01JB000000000000000000000A",
            content=f"deploy key {secret} lives in vault",
            memory_type="semantic",
            tags=("deploy",),
        )
    )
    assert secret not in text and parse(text, fallback_id="x").content.startswith("deploy key [REDACTED")

    (actx, asvc), _ = clones
    folder = actx.project_root / TEAM
    folder.mkdir(parents=True)
    (folder / "leak.md").write_text(f"---\ntype: semantic\n---\nThe staging AWS key is {secret}.\n")
    report = sharing.sync_project(asvc.access, actx)
    assert report["redactions"] and report["redactions"][0]["path"] == f"{TEAM}/leak.md"
    assert all(secret not in c for c in live_contents(asvc, actx, "project").values())
    assert len(report["added"]) == 1


def test_a_linked_shared_folder_is_refused_and_nothing_outside_is_written(clones, tmp_path):
    from engram_mcp.core.paths import UnsafePath

    (actx, asvc), _ = clones
    outside = tmp_path / "outside"
    outside.mkdir()
    (actx.project_root / ".claude").mkdir(exist_ok=True)
    (actx.project_root / TEAM).symlink_to(outside)
    mid = asvc.store(actx, content="Feature flags live in flags.yaml.", type="semantic", scope="project")["memory_id"]
    with pytest.raises(UnsafePath):
        sharing.share(asvc.access, actx, mid)
    with pytest.raises(UnsafePath):
        sharing.sync_project(asvc.access, actx)
    assert list(outside.iterdir()) == []


def test_a_hard_link_in_the_shared_folder_is_reported_and_never_read(clones, tmp_path):
    """A second name for a private file (a hard link) in the team folder: git cannot commit one,
    but a process running as the user can place it, and sync would have read the private file
    into the project's memory (red-team finding)."""
    import os

    (actx, asvc), _ = clones
    folder = actx.project_root / TEAM
    folder.mkdir(parents=True)
    private = tmp_path / "alice" / "home" / "private-notes.md"
    private.write_text("---\ntype: semantic\n---\nThe bank PIN reminder is the cat's birthday.\n")
    os.link(private, folder / "planted.md")
    (folder / "plain.md").write_text("---\ntype: semantic\n---\nThe staging database is pg-staging-2.\n")
    report = sharing.sync_project(asvc.access, actx, pull_only=True)
    assert [e["path"] for e in report["errors"]] == [f"{TEAM}/planted.md"]
    assert "hard link" in report["errors"][0]["error"]
    contents = " ".join(live_contents(asvc, actx, "project").values())
    assert "pg-staging-2" in contents and "PIN" not in contents


def test_without_a_common_base_a_difference_is_a_conflict_not_an_overwrite(clones):
    (actx, asvc), _ = clones
    mid = asvc.store(actx, content="Staging resets every night at 02:00 UTC.", type="semantic", scope="project")[
        "memory_id"
    ]
    rel = sharing.share(asvc.access, actx, mid)["path"]
    state = next((actx.project_root / ".claude" / "engram").glob("team-memory.state.json"))
    state.unlink()  # the base is gone
    asvc.update(actx, mid, content="Staging resets every night at 03:00 UTC.")
    report = sharing.sync_project(asvc.access, actx)
    assert [c["path"] for c in report["conflicts"]] == [rel]
    assert "03:00" in asvc.get(actx, mid)["content"] and "02:00" in (actx.project_root / rel).read_text()


def test_a_time_budget_leaves_the_rest_pending_for_the_next_sync(clones):
    (actx, asvc), _ = clones
    folder = actx.project_root / TEAM
    folder.mkdir(parents=True)
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"---\ntype: semantic\n---\nService {i} listens on port {8000 + i}.\n")
    first = sharing.sync_project(asvc.access, actx, pull_only=True, budget_s=0)
    assert first["counts"]["added"] == 0 and len(first["pending"]) == 3
    second = sharing.sync_project(asvc.access, actx, pull_only=True)
    assert second["counts"]["added"] == 3 and not second["pending"]


def test_a_configured_rule_shares_matching_project_memories_at_sync(clones):
    (actx, asvc), _ = clones
    keep = asvc.store(
        actx,
        content="Run the migrations with make migrate, never by hand.",
        type="procedural",
        scope="project",
        importance=0.9,
    )["memory_id"]
    # the user's own file: written after their first session claimed the project's store
    time.sleep(0.05)
    (actx.project_root / ".claude" / "engram.local.md").write_text("---\nteam_memory_share_min_importance: 0.8\n---\n")
    asvc.store(
        actx, content="Looked at the flaky login test this morning.", type="episodic", scope="project", importance=0.9
    )
    asvc.store(actx, content="The staging cluster has three nodes.", type="semantic", scope="project", importance=0.5)
    asvc.store(actx, content="I like dark themes.", type="semantic", scope="user", importance=0.95)
    report = sharing.sync_project(asvc.access, actx)
    assert len(report["written"]) == 1
    text = (actx.project_root / report["written"][0]).read_text()
    assert keep in text and "make migrate" in text
    assert sharing.sync_project(asvc.access, actx)["counts"]["written"] == 0
    assert sharing.sync_project(asvc.access, actx, pull_only=True)["counts"]["written"] == 0


def test_a_file_the_store_refuses_is_reported_and_the_others_still_apply(clones):
    (actx, asvc), _ = clones
    folder = actx.project_root / TEAM
    folder.mkdir(parents=True)
    tags = ", ".join(f"t{i}" for i in range(40))  # over the 32 tags a memory may have
    (folder / "too-many-tags.md").write_text(
        f"---\ntype: semantic\ntags: [{tags}]\n---\nA memory with too many tags.\n"
    )
    (folder / "fine.md").write_text("---\ntype: semantic\n---\nThe docs site builds with mkdocs.\n")
    report = sharing.sync_project(asvc.access, actx)
    assert len(report["added"]) == 1 and [e["path"] for e in report["errors"]] == [f"{TEAM}/too-many-tags.md"]
    assert "tags" in report["errors"][0]["error"]
    (folder / "fine.md").write_text(f"---\ntype: semantic\ntags: [{tags}]\n---\nThe docs site builds with mkdocs.\n")
    (folder / "later.md").write_text("---\ntype: semantic\n---\nRelease notes live in CHANGES.rst.\n")
    report = sharing.sync_project(asvc.access, actx)
    assert len(report["added"]) == 1 and f"{TEAM}/fine.md" in [e["path"] for e in report["errors"]]
