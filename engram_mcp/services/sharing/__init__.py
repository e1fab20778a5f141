"""Memory that travels: team memory committed in the repository, the user scope mirrored
to a directory the user syncs, both as one markdown file per memory.

- `share(access, ctx, memory_id)`: write a project memory's file into the project's
  `.claude/team-memory/` (committed with the code; see docs/team-memory.md for the name).
- `sync_project(access, ctx)`: apply files added, edited or deleted by others; write local edits
  of shared memories back; report conflicts and unreadable files. `pull_only` applies files
  without writing (what a session start does).
- `sync_user(access, ctx, directory)`: the same rules between the user scope and `directory`,
  every live user memory included, so two machines converge.

Session memories are never shared (promote first) and user memories never go into a project.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_mcp.core.errors import InvalidInput, MemoryNotFound
from engram_mcp.core.paths import project_dir
from engram_mcp.core.vocabulary import DURABLE_TYPES

from .folder import Folder, StateFile
from .sync import Target, relative_label, run_sync, share_one

if TYPE_CHECKING:
    from engram_mcp.services.access import RequestContext, ScopeAccess

#: The committed folder of team memory, relative to the project root. Inside `.claude/`,
#: beside the settings and commands teams already commit, and outside `.claude/engram/`
#: (the git-ignored store), so `git add .claude/team-memory` is all it takes.
TEAM_MEMORY_DIR = Path(".claude") / "team-memory"
PROJECT_STATE_FILE = "team-memory.state.json"
#: `source.kind` of a memory that arrived from a file: a repository's team folder, or the
#: user's own synced folder. The context and `show` say whose text it is from this.
TEAM_FILE_KIND = "team-file"
USER_SYNC_KIND = "user-sync"


def project_target(access: "ScopeAccess", ctx: "RequestContext") -> Target:
    root = Path(ctx.project_root)
    with access.lock:
        access.handle(ctx, "project")  # makes the store directory (with its .gitignore) the state lives in
    return Target(
        scope="project",
        folder=Folder(root / TEAM_MEMORY_DIR, root),
        state=StateFile(project_dir(root), root, PROJECT_STATE_FILE),
        label=str(TEAM_MEMORY_DIR),
        mirror_all=False,
        source_kind=TEAM_FILE_KIND,
        auto_share=_auto_share_rule(access.config(root).team_memory_share_min_importance),
    )


#: The memory types the configured rule shares: knowledge and how-tos, not events.
AUTO_SHARE_TYPES = DURABLE_TYPES


def _auto_share_rule(min_importance: float | None) -> dict[str, Any] | None:
    return None if min_importance is None else {"min_importance": min_importance, "types": AUTO_SHARE_TYPES}


def user_target(access: "ScopeAccess", directory: Path) -> Target:
    directory = Path(os.path.abspath(os.path.expanduser(str(directory))))
    tag = hashlib.sha256(os.path.realpath(directory).encode()).hexdigest()[:12]
    return Target(
        scope="user",
        folder=Folder(directory, directory),
        state=StateFile(access.user_dir, access.user_dir.parent, f"user-mirror-{tag}.state.json"),
        label=str(directory),
        mirror_all=True,
        source_kind=USER_SYNC_KIND,
        resolve=(
            f"edit the file in {directory} or the memory (`engram update ID --content ...`) so both say the same, "
            f"then run `engram sync --user {directory}` again"
        ),
    )


def has_team_memory(ctx: "RequestContext") -> bool:
    """Whether the project has a shared folder (cheap: one stat, for the session start)."""
    return (Path(ctx.project_root) / TEAM_MEMORY_DIR).is_dir()


def share(access: "ScopeAccess", ctx: "RequestContext", memory_id: str) -> dict[str, Any]:
    """Share one project memory with the team: write its file (again, if it exists)."""
    if not isinstance(memory_id, str):
        raise InvalidInput("memory_id must be a memory id like 'memory:01J...' (or its last 8 characters)")
    with access.lock:
        located = access.locate(ctx, memory_id)  # a full or a short id
    found = {loc.handle.scope for loc in located}
    if not found:
        raise MemoryNotFound(f"No memory {memory_id} in this project's session, project or user scopes.")
    if "project" not in found:
        if "session" in found:
            raise InvalidInput(
                "session memories are never shared; promote it to the project first (engram promote ID project)",
                field="memory_id",
            )
        raise InvalidInput(
            "user memories are never written into a project; `engram sync --user DIR` mirrors them to a directory",
            field="memory_id",
        )
    target = project_target(access, ctx)
    out = share_one(access, ctx, target, located[0].key)
    out["hint"] = f"commit {out['path']} to share it (git add {target.label})"
    out.update(new_scope="team", target_id=out["memory_id"])  # the answer of promote_memory to `team`
    return out


def sync_project(
    access: "ScopeAccess", ctx: "RequestContext", *, pull_only: bool = False, budget_s: float | None = None
) -> dict[str, Any]:
    return run_sync(access, ctx, project_target(access, ctx), pull_only=pull_only, budget_s=budget_s)


def sync_user(access: "ScopeAccess", ctx: "RequestContext", directory: str | Path) -> dict[str, Any]:
    if not isinstance(directory, (str, Path)) or not str(directory).strip() or "\x00" in str(directory):
        raise InvalidInput("directory must be a path", field="directory")
    target = user_target(access, Path(directory))
    try:
        rel = relative_label(Path(target.folder.path), Path(ctx.project_root))
    except Exception:  # pragma: no cover - a label only
        rel = str(target.folder.path)
    if not rel.startswith("..") and not os.path.isabs(rel):
        raise InvalidInput(
            f"{directory} is inside the project; user memories are never written into a project", field="directory"
        )
    return run_sync(access, ctx, target)
