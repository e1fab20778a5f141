"""Claude Code's auto memory: `~/.claude/projects/<project>/memory/` (read-only).

`<project>` is the project's git root with every character that is not a letter or digit
replaced by `-` (`/home/me/app` -> `-home-me-app`). Claude Code derives it from the git
repository, so all worktrees of a repository share the main worktree's folder (a linked
worktree's own folder name holds its transcripts, not its memory); `default_dir` resolves a
worktree to its main worktree the same way, from the `.git` file's `gitdir:` and that
directory's `commondir`, without running git.

The folder holds `MEMORY.md`, an index Claude Code loads into every session (lines like
`- [Title](file.md) — hook`, or facts written directly as bullets), and topic files, each one
fact with frontmatter `name`, `description` and `type` (`user`, `feedback`, `project` or
`reference`).

engram coexists with auto memory: this importer only reads these files; it never edits,
moves or disables them (a tool that silently disabled auto memory lost its users' memory).
Mapping: a `user` topic goes to the user scope (semantic); `feedback` (how to work) is
procedural, `project` and `reference` are semantic, in the project scope; a topic's file
dates are its memory's dates. A bullet of MEMORY.md that is not a link is a memory of its
own; a link to a topic file that does not exist is reported, not stored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.paths import main_worktree
from engram_mcp.core.safe_yaml import split_frontmatter

from . import files
from .batch import MAX_MEMORIES_PER_IMPORT, ImportBatch, TooManyRecords, from_epoch_s, source_file
from .markdown_notes import note, read_text

SOURCE = "auto-memory"
DEFAULT_SCOPE = "project"
INDEX_NAME = "MEMORY.md"
TOPIC_TYPES = {
    "user": ("user", "semantic"),
    "feedback": ("project", "procedural"),
    "project": ("project", "semantic"),
    "reference": ("project", "semantic"),
}
LINK_ONLY_RE = re.compile(r"^\s*[-*]\s+\[[^\]]*\]\(([^)\s]+\.md)\)")
BULLET_RE = re.compile(r"^\s*[-*]\s+(.+)$")


def default_dir(project_root: Path, home: Path) -> Path:
    """Where Claude Code keeps this project's auto memory (a worktree's: its main worktree's)."""
    root = main_worktree(project_root)
    return home / ".claude" / "projects" / project_folder_name(root) / "memory"


def project_folder_name(path: str | Path) -> str:
    """Claude Code's folder name for a project path: every character not a letter or digit as `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def read(path: Path, *, scope: str | None = None, **_: Any) -> ImportBatch:
    folder = Path(path)
    if not folder.is_dir():
        raise InvalidInput(f"{folder}: no auto memory folder here (Claude Code writes MEMORY.md there)", field="path")
    batch = ImportBatch(SOURCE, file=source_file(folder))
    topics = []
    listed = 0
    for _p in folder.glob("*.md"):  # counted as listed (a folder of a million files is refused, not sorted)
        listed += 1
        batch.check_count(listed, MAX_MEMORIES_PER_IMPORT, "files", folder.name)
    for p in sorted(folder.glob("*.md")):
        if p.name == INDEX_NAME:
            continue
        try:
            files.check_regular(p)
            topics.append(p)
        except (OSError, ValueError) as exc:
            batch.skip(p.name, str(exc)[:300])
    for file in topics:
        try:
            _topic(batch, file, scope)
        except TooManyRecords:
            raise
        except (InvalidInput, OSError, ValueError) as exc:  # UnsafeYAML, UnicodeDecodeError
            batch.skip(file.name, getattr(exc, "message", None) or str(exc)[:300])
    index = folder / INDEX_NAME
    if index.exists() or index.is_symlink():
        try:
            _index(batch, index, {p.name for p in topics}, scope)
        except (OSError, ValueError) as exc:
            batch.skip(INDEX_NAME, str(exc)[:300])
    return batch


def _topic(batch: ImportBatch, file: Path, scope_override: str | None) -> None:
    text, st = read_text(file)
    front, _body = split_frontmatter(text, source=file.name)
    kind = str(front.get("type") or "project")
    scope, mtype = TOPIC_TYPES.get(kind, ("project", "semantic"))
    note(
        batch,
        file.name,
        text,
        scope=scope_override or scope,
        source_key=f"topic\x00{file.name}",
        memory_type=mtype,
        extra_tags=("auto-memory", kind),
        modified=from_epoch_s(st.st_mtime),
        entity_type=f"auto-memory {kind}"[:40],
    )


def _index(batch: ImportBatch, index: Path, topic_names: set[str], scope_override: str | None) -> None:
    """Bullets of MEMORY.md that hold a fact themselves (a link to a topic file is its topic)."""
    text, st = read_text(index)
    section = ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        link = LINK_ONLY_RE.match(line)
        if link:
            if Path(link.group(1)).name not in topic_names:
                batch.skip(f"{INDEX_NAME}:{n}", f"dangling link: {link.group(1)[:100]} is not a topic file here")
            continue
        m = BULLET_RE.match(line)
        if not m or len(m.group(1).strip()) < 3:
            continue
        fact = m.group(1).strip()
        batch.memory(
            source_key=f"index\x00{fact}",
            scope=scope_override or "project",
            content=f"{section}: {fact}" if section else fact,
            tags=["auto-memory", "memory-md"],
            updated=from_epoch_s(st.st_mtime),
            origin={"path": INDEX_NAME, "line": n},
            group=f"index:{section}"[:300],
        )
