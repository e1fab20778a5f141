"""Claude Code's auto memory: `~/.claude/projects/<project>/memory/` (read-only).

`<project>` is the project's git root with every character that is not a letter or digit
replaced by `-` (`/home/me/app` -> `-home-me-app`). The folder holds `MEMORY.md`, an index
Claude Code loads into every session (lines like `- [Title](file.md) — hook`, or facts
written directly as bullets), and topic files, each one fact with frontmatter `name`,
`description` and `type` (`user`, `feedback`, `project` or `reference`).

engram coexists with auto memory: this importer only reads these files; it never edits,
moves or disables them (a tool that silently disabled auto memory lost its users' memory).
Mapping: a `user` topic goes to the user scope (semantic); `feedback` (how to work) is
procedural, `project` and `reference` are semantic, in the project scope. A bullet of
MEMORY.md that is not a link to a topic file is a memory of its own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from engram_mcp.core.errors import InvalidInput
from engram_mcp.services.sharing.memory_file import split_frontmatter

from .batch import ImportBatch
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
    """Where Claude Code keeps this project's auto memory."""
    return home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project_root)) / "memory"


def read(path: Path, *, scope: str | None = None, **_: Any) -> ImportBatch:
    batch = ImportBatch(SOURCE)
    folder = Path(path)
    if not folder.is_dir():
        raise InvalidInput(f"{folder}: no auto memory folder here (Claude Code writes MEMORY.md there)", field="path")
    topics = sorted(p for p in folder.glob("*.md") if p.name != INDEX_NAME and not p.is_symlink())
    for file in topics:
        try:
            _topic(batch, file, scope)
        except (InvalidInput, OSError, UnicodeDecodeError) as exc:
            batch.skip(str(file), getattr(exc, "message", None) or str(exc))
    index = folder / INDEX_NAME
    if index.is_file() and not index.is_symlink():
        _index(batch, index, {p.name for p in topics}, scope)
    return batch


def _topic(batch: ImportBatch, file: Path, scope_override: str | None) -> None:
    text = read_text(file)
    front, _body = split_frontmatter(text)
    kind = str(front.get("type") or "project")
    scope, mtype = TOPIC_TYPES.get(kind, ("project", "semantic"))
    note(
        batch,
        str(file),
        text,
        scope=scope_override or scope,
        source_key=f"topic\x00{file.name}",
        memory_type=mtype,
        extra_tags=("auto-memory", kind),
    )


def _index(batch: ImportBatch, index: Path, topic_names: set[str], scope_override: str | None) -> None:
    """Bullets of MEMORY.md that hold a fact themselves (a link to a topic file is its topic)."""
    section = ""
    for n, line in enumerate(read_text(index).splitlines(), 1):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        link = LINK_ONLY_RE.match(line)
        if link and Path(link.group(1)).name in topic_names:
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
            origin={"path": str(index), "line": n},
        )
