"""One memory as one markdown file with YAML frontmatter: the format teams commit and review.

```
---
id: memory:01JB...
type: procedural
importance: 0.8
tags: [migrations, db]
supersedes: [memory:01JA...]
---
Never edit a merged migration; add a new one.
```

The body is the content; the frontmatter holds what a reviewer needs to judge it (type,
importance, tags, category, summary, which memory it replaces). Nothing personal or
machine-bound goes in (no session ids, access counts, vectors): the file is the same on
every machine, so it only changes when the memory does, and a pull request diff shows
exactly the change in knowledge. A repository is untrusted input, so YAML is read only through
`core.safe_yaml` (no aliases, bounded size, depth and numbers) with a frontmatter bound far
below the file's, and every problem comes back as an InvalidInput naming the file.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

import yaml

from engram_mcp.core import safe_yaml
from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import CROCKFORD, format_memory_id, parse_memory_id
from engram_mcp.core.redaction import redact_outbound
from engram_mcp.core.vocabulary import MEMORY_TYPES

SHARED_TYPES = tuple(t for t in MEMORY_TYPES if t != "working")  # working memory is session scratch
MAX_FILE_BYTES = 256 * 1024  # a memory is at most 20,000 characters; a bigger file is no memory file
#: Frontmatter bytes of a memory file: what engram writes is a few hundred bytes; the bound keeps
#: the parse of a hostile file (250 KB of valid YAML) in microseconds, not seconds.
MAX_FRONTMATTER_BYTES = 16 * 1024
#: Lines git writes into a file it could not merge. A file holding them is a conflict to resolve,
#: never content: `=======` alone is also a setext heading, so only the two outer markers count.
#: Seven or more: a repository may lengthen them (`.gitattributes` `conflict-marker-size`, common
#: for markdown), and a CRLF checkout ends them with a carriage return.
_CONFLICT_MARKER_RE = re.compile(r"^(?:<{7,}|>{7,})(?:[ \t].*)?\r?$", re.M)
#: What a checkout holds for a file tracked with Git LFS when LFS is not installed: a pointer
#: (version, sha256 oid, size), which would otherwise become a memory of three lines.
_LFS_POINTER_RE = re.compile(r"\Aversion https://git-lfs\.github\.com/spec/v1\r?\n")
#: Characters a YAML parser reads as a line break (U+2028, U+2029, NEL) that a reviewer's diff
#: shows inside one line: in the frontmatter they could hide a key (`tags: [ci]<U+2028>supersedes:
#: [...]` reads as one line on a review page). Refused in a file; `render` never writes them.
_HIDDEN_BREAK_RE = re.compile("[\u2028\u2029\x85]")
#: Tags written as one string split as the markdown importer splits them (`tags: oncall, pager`).
_TAG_SPLIT_RE = re.compile(r"[,\s]+")
SLUG_WORDS = 6
#: Memories one file may say it replaces: each is one update at apply time, and a file naming
#: thousands would hold a session start.
MAX_SUPERSEDES = 20
_SLUG_STRIP_RE = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class SharedMemory:
    """The fields of a memory that travel, in a form both sides compare equal.

    `fingerprint()` is what the three-way sync compares: two machines holding the same
    knowledge give the same fingerprint whatever their local bookkeeping says.
    """

    memory_id: str  # bare ULID
    content: str
    memory_type: str
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    category: str | None = None
    summary: str | None = None
    supersedes: tuple[str, ...] = ()
    created_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    id_from_name: bool = field(default=False, compare=False)  # no `id:` in the file: derived from its name

    def fingerprint(self) -> str:
        """A hash of what a teammate would call "the memory" (not its id or timestamps)."""
        canon = {
            "content": self.content.strip(),
            "type": self.memory_type,
            "importance": round(float(self.importance), 2),
            "tags": sorted(self.tags),
            "category": self.category or None,
            "summary": (self.summary or "").strip() or None,
            "supersedes": sorted(self.supersedes),
        }
        return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()[:32]


def derived_ulid(namespace: str, source_key: str, *, when_ms: int | None = None) -> str:
    """A ULID that is a pure function of where a record came from.

    Used for records that carry no engram id (a hand-written shared file, an imported note or
    observation): running the same import twice yields the same ids, so the second run adds
    nothing. The time part is the source's own time when known (so ids still sort by age),
    else derived from the hash; the random part is the hash.
    """
    digest = hashlib.sha256(f"{namespace}\x00{source_key}".encode()).digest()
    ms = when_ms if when_ms is not None and 0 <= when_ms < (1 << 48) else int.from_bytes(digest[:6], "big") >> 1
    value = (ms << 80) | int.from_bytes(digest[6:16], "big")
    chars = []
    for _ in range(26):
        chars.append(CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def slug(text: str) -> str:
    """A few lower-case words of the content, for a file name a person can recognise."""
    words = _SLUG_STRIP_RE.sub(" ", text.lower()).split()[:SLUG_WORDS]
    return "-".join(words)[:60].strip("-") or "memory"


def file_name_for(memory: SharedMemory) -> str:
    """`<slug>-<last 8 of the id>.md`: readable, unique, and fixed once written (an edit of
    the content keeps the name, so a diff shows an edit, not a rename).

    The slug is taken from the content as the file publishes it (`redacted`): a name is
    committed too, so a secret the outbound pass removes from the body ("the admin pw:
    hunter2hunter2", a token near a key name) must not stay in the name built from its first
    words."""
    return f"{slug(redacted(memory)[0].content)}-{memory.memory_id[-8:].lower()}.md"


def redacted(memory: SharedMemory) -> tuple[SharedMemory, int]:
    """The memory with secrets and <private> spans removed from every text field, and how
    many were found. Runs before every write of a file: a store redacts too, but a file is
    published (a team file goes to git, a sync folder to another machine), so it gets the
    stricter outbound pass at the last moment (`redaction.redact_outbound`: passwords in prose,
    tokens near a key name in any language)."""
    found = 0

    def clean(text: str | None) -> str | None:
        nonlocal found
        if text is None:
            return None
        result = redact_outbound(text)
        found += sum(f.count for f in result.findings)
        return result.text

    tags = tuple(clean(t) or "" for t in memory.tags)
    return (
        SharedMemory(
            memory_id=memory.memory_id,
            content=clean(memory.content) or "",
            memory_type=memory.memory_type,
            importance=memory.importance,
            tags=tags,
            category=clean(memory.category),
            summary=clean(memory.summary),
            supersedes=memory.supersedes,
            created_at=memory.created_at,
        ),
        found,
    )


def render(memory: SharedMemory) -> str:
    """The file text (redacted first). Keys in a fixed order so equal memories give equal bytes."""
    memory, _found = redacted(memory)
    memory = replace(
        memory,
        tags=tuple(_HIDDEN_BREAK_RE.sub(" ", t) for t in memory.tags),
        category=_HIDDEN_BREAK_RE.sub(" ", memory.category) if memory.category else memory.category,
        summary=_HIDDEN_BREAK_RE.sub(" ", memory.summary) if memory.summary else memory.summary,
    )  # one-line fields: a YAML line break in them would be refused when the file is read back
    front: dict[str, Any] = {"id": format_memory_id(memory.memory_id), "type": memory.memory_type}
    front["importance"] = round(float(memory.importance), 2)
    if memory.tags:
        front["tags"] = list(memory.tags)
    if memory.category:
        front["category"] = memory.category
    if memory.summary:
        front["summary"] = memory.summary
    if memory.supersedes:
        front["supersedes"] = [format_memory_id(k) for k in memory.supersedes]
    if memory.created_at:
        front["created_at"] = memory.created_at
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100)
    return f"---\n{head}---\n{memory.content.strip()}\n"


def split_frontmatter(
    text: str, *, source: str = "the file", max_bytes: int = safe_yaml.MAX_YAML_BYTES
) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body) of a markdown file; a file without frontmatter is all body.

    Read with the hardened loader; raises InvalidInput (never a bare ValueError or
    RecursionError) when the frontmatter is not bounded YAML or not a mapping.
    """
    try:
        return safe_yaml.split_frontmatter(text, source=source, max_bytes=max_bytes)
    except safe_yaml.UnsafeYAML as exc:
        message = str(exc)
        prefix = f"{source}: "
        raise InvalidInput(message[len(prefix) :] if message.startswith(prefix) else message) from None


def has_conflict_markers(text: str) -> bool:
    """Whether git left `<<<<<<<` / `>>>>>>>` lines in the file (an unresolved merge)."""
    return _CONFLICT_MARKER_RE.search(text) is not None


def parse(text: str, *, fallback_id: str, source: str = "the file") -> SharedMemory:
    """A shared memory from a file's text; raises InvalidInput naming what is wrong.

    `fallback_id` is used when the frontmatter has no `id` (a file a person wrote by hand):
    derived from the file's path, so every clone gives it the same id.
    """
    if _LFS_POINTER_RE.match(text):
        raise InvalidInput(
            "is a Git LFS pointer, not the file's text; run `git lfs pull` (or track .md files without LFS)"
        )
    front, body = split_frontmatter(text, source=source, max_bytes=MAX_FRONTMATTER_BYTES)
    hidden = _HIDDEN_BREAK_RE.search(text, 0, len(text) - len(body))
    if hidden:
        raise InvalidInput(
            f"the frontmatter holds U+{ord(hidden.group()):04X}, which YAML reads as a line break but a review "
            "page shows inside a line (it can hide a key); remove it"
        )
    content = body.strip()
    if not content:
        raise InvalidInput("the file has no content below its frontmatter")
    raw_id = front.get("id")
    memory_id = parse_memory_id(raw_id, field="id") if raw_id is not None else fallback_id
    mtype = front.get("type", front.get("memory_type", "semantic"))
    if mtype not in SHARED_TYPES:
        raise InvalidInput(f"type must be one of {', '.join(SHARED_TYPES)}; got {str(mtype)[:40]!r}", field="type")
    importance = front.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
        raise InvalidInput("importance must be a number from 0 to 1", field="importance")
    tags = _tag_list(front.get("tags"))
    replaced = _string_list(front.get("supersedes"), "supersedes")
    if len(replaced) > MAX_SUPERSEDES:
        raise InvalidInput(
            f"supersedes names at most {MAX_SUPERSEDES} memories; got {len(replaced)}", field="supersedes"
        )
    supersedes = tuple(parse_memory_id(s, field="supersedes") for s in replaced)
    category = _optional_text(front.get("category"), "category")
    summary = _optional_text(front.get("summary"), "summary")
    created = _created_at(front.get("created_at"))
    known = {"id", "type", "memory_type", "importance", "tags", "supersedes", "category", "summary", "created_at"}
    return SharedMemory(
        memory_id=memory_id,
        content=content,
        memory_type=mtype,
        importance=float(importance),
        tags=tuple(tags),
        category=category,
        summary=summary,
        supersedes=supersedes,
        created_at=created,
        extra={k: v for k, v in front.items() if k not in known},
        id_from_name=raw_id is None,
    )


def _tag_list(value: Any) -> list[str]:
    """Tags as the markdown importer reads them: one string is split at commas and spaces
    (`tags: oncall, pager` is two tags), a list gives one tag per item; a leading `#` goes."""
    if isinstance(value, str):
        value = _TAG_SPLIT_RE.split(value)
    return [t for t in (s.strip().lstrip("#") for s in _string_list(value, "tags")) if t]


def _created_at(value: Any) -> str | None:
    """`created_at` as ISO 8601 text, or None; a value that is no date is refused by name
    (`2024-13-45` must not become a memory's time, nor abort the other files)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).isoformat()
    text = str(value).strip() if isinstance(value, str) else ""
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"created_at must be a date and time like 2026-03-02T09:10:00+00:00; got {str(value)[:40]!r}",
            field="created_at",
        ) from None
    return text


def _string_list(value: Any, name: str) -> list[str]:
    """A YAML list of strings (or one string, as people write `tags: ci`)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise InvalidInput(f"{name} must be a list of strings", field=name)
    return [str(v) for v in value]


def _optional_text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, int, float)):
        raise InvalidInput(f"{name} must be text", field=name)
    return str(value)
