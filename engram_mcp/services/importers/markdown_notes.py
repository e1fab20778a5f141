"""A folder of markdown notes with YAML frontmatter: basic-memory, Obsidian, or plain notes.

Each note becomes one memory (split at paragraph boundaries when longer than a memory may
be; every part after the first starts with "Title (part 2/4)", so a part recalled alone still
says what it is about) whose content is its title and body. Frontmatter `tags` and inline
`#tags` become tags; a frontmatter `type` that is an engram memory type is kept (basic-memory's
`note` and anything else become semantic); Obsidian `aliases` are added to the text as
"Also known as: ..." so a search by an alias finds the note.

The note's title is an entity. Every `[[wiki link]]`, in the body or in a frontmatter value
(`related: "[[Other]]"`), is an entity the memory mentions; an embed (`![[diagram.png]]`) or
a link to a file that is not a note is an attachment, not an entity. basic-memory's relation
lines, in all their forms (`- implements [[Other]]`, `- requires [[X]] (context)`,
`- "pairs well with" [[Y]]`), become relations between the two notes' entities, the context
kept as the relation's evidence. An entity's type is the one its own note gives, whichever
note was read first.

Dates: frontmatter `created`/`date` (YAML reads `2024-03-14` as a date) is the note's creation
time, the file's modification time its last edit; a date that is not a date skips that note,
reported, and the rest is imported. Hidden folders (`.obsidian`, `.git`, `.trash`) are
skipped, links are never followed, FIFOs, devices and sockets are refused unopened
(files.py). Ids come from the folder (its resolved path) and each note's path inside it, so
re-importing the folder adds nothing and an edited note updates its memory (resync.py); a
note of the same name in another folder is another memory, never an edit of this one. A
folder of more notes than an import reads is refused as it is listed (batch.py limits).
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.safe_yaml import split_frontmatter
from engram_mcp.services.records import MAX_CONTENT_CHARS
from engram_mcp.services.sharing.memory_file import MAX_FILE_BYTES, SHARED_TYPES

from . import files
from .batch import MAX_MEMORIES_PER_IMPORT, ImportBatch, TooManyRecords, from_epoch_s, from_iso, source_file

SOURCE = "markdown"
DEFAULT_SCOPE = "project"
MAX_NOTE_BYTES = MAX_FILE_BYTES * 4
_LINK_BODY = r"\[\[([^\]|#\n]{1,200})(?:[#|][^\]\n]*)?\]\]"
WIKI_LINK_RE = re.compile(r"(?<!!)" + _LINK_BODY)
INLINE_TAG_RE = re.compile(r"(?<![\w#&/])#([A-Za-z][\w/-]{0,40})")
# (the blanks after the link are taken one way only: `\s*(?:(…))?\s*$` split a run of them every
# way, O(n^2) for each of the name's 61 lengths: minutes on a 40,000-character line)
RELATION_LINE_RE = re.compile(
    r"^\s*[-*]\s+(?:\"([^\"\n]{1,60})\"|([A-Za-z][\w -]{0,60}?))\s+" + _LINK_BODY + r"\s*(?:\(([^)\n]{0,500})\)\s*)?$"
)
CODE_FENCE_RE = re.compile(r"```.*?```", re.S)
NOTE_SUFFIXES = ("", ".md", ".markdown")  # a link to anything else (img.png, doc.pdf) is an attachment
DATE_FIELDS = ("created", "date", "created_at")
MAX_ALIASES = 20
PART_TITLE_RESERVE = 240  # characters kept free in each part for its "Title (part i/n)" line


def read(path: Path, *, scope: str = DEFAULT_SCOPE, **_: Any) -> ImportBatch:
    root = Path(path)
    if root.is_file() or not root.is_dir():
        files.check_regular(root)
        notes = [root]
        root = root.parent
        # the folder: a note is its path in it; its other notes were not read, so none is removed
        batch = ImportBatch(SOURCE, file=source_file(root), partial=True)
    else:
        batch = ImportBatch(SOURCE, file=source_file(root))
        notes = []
        for note_file in iter_notes(root, batch):
            notes.append(note_file)
            batch.check_count(len(notes), MAX_MEMORIES_PER_IMPORT, "notes", root.name or str(root))
    for file in notes:
        rel = file.relative_to(root).as_posix()
        try:
            text, st = read_text(file)
            note(batch, rel, text, scope=scope, source_key=rel, modified=from_epoch_s(st.st_mtime))
        except TooManyRecords:
            raise
        except (InvalidInput, OSError, ValueError) as exc:  # UnsafeYAML, UnicodeDecodeError, NotRegular
            batch.skip(rel, _reason(exc))
    return batch


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(getattr(exc, "message", None) or exc)[:300]


def iter_notes(root: Path, batch: ImportBatch | None = None):
    """Every `.md` regular file below `root`, sorted; hidden folders, links and special
    files (reported in `batch`) left out."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if not name.endswith(".md") or name.startswith("."):
                continue
            try:
                files.check_regular(full)
            except (OSError, ValueError) as exc:
                if batch is not None:
                    batch.skip(full.relative_to(root).as_posix(), _reason(exc))
                continue
            yield full


def read_text(file: Path) -> tuple[str, os.stat_result]:
    return files.read_text(file, max_bytes=MAX_NOTE_BYTES)


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
    modified: datetime | None = None,
    entity_type: str | None = None,
) -> list[str]:
    """One note's memories, entity and links; returns the memory ids."""
    front, body = split_frontmatter(text, source=where)
    body = body.strip()
    if not body:
        batch.skip(where, "empty: no content")
        return []
    when = _created(front)
    title = " ".join(str(front.get("title") or front.get("name") or Path(where).stem).split())[:200]
    ftype = front.get("type") if isinstance(front.get("type"), str) else None
    mtype = memory_type or (ftype if ftype in SHARED_TYPES else "semantic")
    tags = [*extra_tags, *_tags(front.get("tags")), *INLINE_TAG_RE.findall(CODE_FENCE_RE.sub("", body))]
    tags = [t.lower().strip("/")[:64] for t in tags if t]
    heading = body.lstrip("# ").split("\n", 1)[0].strip()
    content = body if heading.casefold() == title.casefold() else f"{title}\n\n{body}"
    aliases = _aliases(front.get("aliases") or front.get("alias"))
    if aliases:
        content += "\n\nAlso known as: " + ", ".join(aliases)
    note_entity = batch.entity(scope=scope, name=title, entity_type=entity_type or (ftype or "note")[:40])
    front_links = [t for t in WIKI_LINK_RE.findall(_front_text(front)) if _is_note(t)]
    chunks = split_long(content, title)
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
            updated=modified,
            origin={"path": where, **({"part": i + 1, "parts": len(chunks)} if len(chunks) > 1 else {})},
        )
        batch.mention(scope=scope, memory_id=mid, entity=note_entity, relationship="note")
        links = WIKI_LINK_RE.findall(chunk) + (front_links if i == 0 else [])
        for target in dict.fromkeys(t.strip() for t in links if _is_note(t)):
            if target.casefold() != title.casefold():
                batch.mention(
                    scope=scope, memory_id=mid, entity=batch.entity(scope=scope, name=target), relationship="links_to"
                )
        ids.append(mid)
    _relations(batch, body, scope, note_entity)
    return ids


def _relations(batch: ImportBatch, body: str, scope: str, note_entity: str) -> None:
    for line in CODE_FENCE_RE.sub("", body).splitlines():
        m = RELATION_LINE_RE.match(line)
        if not m or not _is_note(m.group(3)):
            continue
        name = (m.group(1) or m.group(2)).strip()
        target = batch.entity(scope=scope, name=m.group(3).strip())
        context = (m.group(4) or "").strip()
        batch.relation(
            scope=scope,
            source=note_entity,
            target=target,
            relation_type=re.sub(r"\s+", "_", name),
            evidence=[context] if context else None,
        )


def _created(front: dict[str, Any]) -> datetime | None:
    """The note's creation date from its frontmatter; one that is not a date refuses the note."""
    for name in DATE_FIELDS:
        value = front.get(name)
        if value is None or value == "":
            continue
        when = from_iso(value)
        if when is None:
            raise InvalidInput(f"invalid date: {name}: {str(value)[:40]!r} is not a date (YYYY-MM-DD)")
        return when
    return None


def _is_note(target: str) -> bool:
    suffix = Path(target.strip()).suffix.lower()
    return suffix in NOTE_SUFFIXES or not re.fullmatch(r"\.[a-z0-9]{1,5}", suffix)


def _front_text(front: dict[str, Any]) -> str:
    """Every string value of the frontmatter (one level of lists), where links may be written."""
    out = []
    for key, value in front.items():
        if key in ("title", "name"):
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                out.append(v)
    return "\n".join(out)


def split_long(content: str, title: str = "", limit: int = MAX_CONTENT_CHARS) -> list[str]:
    """Parts of at most `limit` characters, cut between paragraphs where possible; each part
    after the first starts with "Title (part i/n)"."""
    if len(content) <= limit:
        return [content]
    room = limit - PART_TITLE_RESERVE
    parts, current = [], ""
    for para in content.split("\n\n"):
        while len(para) > room:
            if current:
                parts.append(current)
                current = ""
            parts.append(para[:room])
            para = para[room:]
        if current and len(current) + 2 + len(para) > room:
            parts.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        parts.append(current)
    n = len(parts)
    head = title[: PART_TITLE_RESERVE - 20] or "Note"
    return [p if i == 0 else f"{head} (part {i + 1}/{n})\n\n{p}" for i, p in enumerate(parts)]


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t.strip().lstrip("#") for t in re.split(r"[,\s]+", value) if t.strip()]
    if isinstance(value, list):
        return [str(t).strip().lstrip("#") for t in value if isinstance(t, (str, int))]
    return []


def _aliases(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [" ".join(str(a).split())[:100] for a in items if isinstance(a, (str, int)) and str(a).strip()][:MAX_ALIASES]


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and str(value).strip() else None
