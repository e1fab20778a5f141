"""A folder of markdown notes with YAML frontmatter: basic-memory, Obsidian, or plain notes.

Each note becomes one memory (split at paragraph boundaries when longer than a memory may
be) whose content is its title and body. Frontmatter `tags` and inline `#tags` become tags; a
frontmatter `type` that is an engram memory type is kept (basic-memory's `note` and anything
else become semantic). The note's title is an entity; every `[[wiki link]]` is an entity the
memory mentions, and basic-memory's relation lines (`- implements [[Other Note]]`) become
relations between the two notes' entities. Hidden folders (`.obsidian`, `.git`, `.trash`) are
skipped and links are never followed. Ids come from each note's path inside the folder, so
re-importing (or importing the folder from elsewhere) adds nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from engram_mcp.core.errors import InvalidInput
from engram_mcp.services.records import MAX_CONTENT_CHARS
from engram_mcp.services.sharing.memory_file import MAX_FILE_BYTES, SHARED_TYPES, split_frontmatter

from .batch import ImportBatch, from_iso

SOURCE = "markdown"
DEFAULT_SCOPE = "project"
WIKI_LINK_RE = re.compile(r"\[\[([^\]|#\n]{1,200})(?:[#|][^\]\n]*)?\]\]")
INLINE_TAG_RE = re.compile(r"(?<![\w#&/])#([A-Za-z][\w/-]{0,40})")
RELATION_LINE_RE = re.compile(r"^\s*[-*]\s+([A-Za-z][\w -]{0,60}?)\s+\[\[([^\]|#\n]{1,200})(?:[#|][^\]\n]*)?\]\]\s*$")
CODE_FENCE_RE = re.compile(r"```.*?```", re.S)


def read(path: Path, *, scope: str = DEFAULT_SCOPE, **_: Any) -> ImportBatch:
    batch = ImportBatch(SOURCE)
    root = Path(path)
    if root.is_file():
        files = [root]
        root = root.parent
    else:
        files = list(iter_notes(root))
    for file in files:
        rel = file.relative_to(root).as_posix()
        try:
            text = read_text(file)
            note(batch, rel, text, scope=scope, source_key=rel)
        except (InvalidInput, OSError, UnicodeDecodeError) as exc:
            batch.skip(str(file), getattr(exc, "message", None) or str(exc))
    return batch


def iter_notes(root: Path):
    """Every `.md` file below `root`, sorted, hidden folders and links left out."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if name.endswith(".md") and not name.startswith(".") and not full.is_symlink():
                yield full


def read_text(file: Path) -> str:
    if file.stat().st_size > MAX_FILE_BYTES * 4:
        raise InvalidInput(f"is {file.stat().st_size} bytes; notes over {MAX_FILE_BYTES * 4} are left out")
    return file.read_text(encoding="utf-8")


def note(
    batch: ImportBatch,
    where: str,
    text: str,
    *,
    scope: str,
    source_key: str,
    memory_type: str | None = None,
    extra_tags: tuple[str, ...] = (),
    summary: str | None = None,
) -> list[str]:
    """One note's memories, entity and links; returns the memory ids."""
    front, body = split_frontmatter(text)
    body = body.strip()
    if not body:
        batch.skip(where, "no content")
        return []
    title = str(front.get("title") or front.get("name") or Path(where).stem).strip()
    ftype = front.get("type")
    mtype = memory_type or (ftype if ftype in SHARED_TYPES else "semantic")
    tags = [*extra_tags, *_tags(front.get("tags")), *INLINE_TAG_RE.findall(CODE_FENCE_RE.sub("", body))]
    tags = [t.lower().strip("/")[:64] for t in tags if t]
    when = from_iso(front.get("created") or front.get("date") or front.get("created_at"))
    heading = body.lstrip("# ").split("\n", 1)[0].strip()
    content = body if heading.casefold() == title.casefold() else f"{title}\n\n{body}"
    chunks = split_long(content)
    scope_entity = batch.entity(scope=scope, name=title, entity_type=str(ftype or "note")[:40])
    ids = []
    for i, chunk in enumerate(chunks):
        mid = batch.memory(
            source_key=source_key if i == 0 else f"{source_key}\x00{i}",
            scope=scope,
            content=chunk,
            memory_type=mtype,
            tags=tags,
            summary=summary or _text(front.get("description")) or _text(front.get("summary")),
            when=when,
            origin={"path": where, **({"part": i + 1, "parts": len(chunks)} if len(chunks) > 1 else {})},
        )
        batch.mention(scope=scope, memory_id=mid, entity=scope_entity, relationship="note")
        for target in dict.fromkeys(WIKI_LINK_RE.findall(chunk)):
            batch.mention(
                scope=scope,
                memory_id=mid,
                entity=batch.entity(scope=scope, name=target.strip()),
                relationship="links_to",
            )
        ids.append(mid)
    for line in body.splitlines():
        m = RELATION_LINE_RE.match(line)
        if m:
            target = batch.entity(scope=scope, name=m.group(2).strip())
            batch.relation(
                scope=scope, source=scope_entity, target=target, relation_type=m.group(1).strip().replace(" ", "_")
            )
    return ids


def split_long(content: str, limit: int = MAX_CONTENT_CHARS) -> list[str]:
    """Parts of at most `limit` characters, cut between paragraphs where possible."""
    if len(content) <= limit:
        return [content]
    parts, current = [], ""
    for para in content.split("\n\n"):
        while len(para) > limit:
            if current:
                parts.append(current)
                current = ""
            parts.append(para[:limit])
            para = para[limit:]
        if current and len(current) + 2 + len(para) > limit:
            parts.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        parts.append(current)
    return parts


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t.strip().lstrip("#") for t in re.split(r"[,\s]+", value) if t.strip()]
    if isinstance(value, list):
        return [str(t).strip().lstrip("#") for t in value if isinstance(t, (str, int))]
    return []


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and str(value).strip() else None
