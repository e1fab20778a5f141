"""The official MCP memory server's knowledge graph (`@modelcontextprotocol/server-memory`).

Its file (`MEMORY_FILE_PATH`, by default `memory.jsonl`) holds one JSON object per line, as
its `saveGraph` writes them: `{"type": "entity", "name", "entityType", "observations": [str]}`
and `{"type": "relation", "from", "to", "relationType"}` (relation types in active voice,
"works_at").

Mapping: every entity becomes an engram entity node of its type; every observation becomes a
semantic memory ("<entity>: <observation>", so it stands on its own in a recall) that
mentions its entity; every relation becomes an entity relation *and* a memory stating it
("John_Smith works at Anthropic"), because a graph edge alone is found by `graph_search` but
never by a recall, and "where does John work" is a recall. The server is about the user
across chats, so the default scope is `user`.

An observation has no id of its own (the server edits by deleting a string and adding
another), so its memories are grouped by entity: on a re-import, a new observation of an
entity that lost one is that one edited (resync.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .batch import MAX_MEMORIES_PER_IMPORT, ImportBatch, source_file
from .files import open_regular

SOURCE = "mcp-memory"
DEFAULT_SCOPE = "user"
MAX_LINE_CHARS = 32 * 1024 * 1024  # one entity line holds all its observations: 20,000 of them are ~2 MB
MAX_OBSERVATIONS_PER_ENTITY = 25_000  # issue 35's large entity had 20,000; more is refused (batch.py limits)


def read(path: Path, *, scope: str = DEFAULT_SCOPE, **_: object) -> ImportBatch:
    batch = ImportBatch(SOURCE, file=source_file(path))
    relations: list[tuple[str, dict]] = []
    with open_regular(path) as f:
        for n, raw in enumerate(f, 1):
            where = f"{path.name}:{n}"
            if not raw.strip():
                continue
            item = _parse(batch, raw, where)
            kind = item.get("type") if isinstance(item, dict) else None
            if item is None:
                continue
            if kind == "entity":
                _entity(batch, item, scope, where)
            elif kind == "relation":
                # each relation becomes a memory later: counted now, so the list cannot grow unbounded
                batch.check_count(
                    batch.memory_count + len(relations) + 1,
                    MAX_MEMORIES_PER_IMPORT,
                    "entity observations and relations",
                    where,
                )
                relations.append((where, item))
            else:
                batch.skip(where, f"neither an entity nor a relation (type {str(kind)[:20]!r})")
    for where, item in relations:
        _relation(batch, item, scope, where)
    return batch


def _parse(batch: ImportBatch, raw: str, where: str) -> Any:
    if len(raw) > MAX_LINE_CHARS:
        batch.skip(where, f"line too long ({len(raw)} characters)")
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        batch.skip(where, f"not JSON ({exc.msg})")
    except RecursionError:
        batch.skip(where, "not JSON this server writes (nested too deeply)")
    return None


def _entity(batch: ImportBatch, item: dict, scope: str, where: str) -> None:
    name, etype = _str(item.get("name")), _str(item.get("entityType")) or "concept"
    if name is None:
        batch.skip(where, "an entity needs a name")
        return
    observations = item.get("observations") or []
    if not isinstance(observations, list):
        batch.skip(where, "observations must be a list of strings")
        observations = []
    batch.check_count(len(observations), MAX_OBSERVATIONS_PER_ENTITY, f"observations of entity {name[:80]!r}", where)
    key = batch.entity(scope=scope, name=name, entity_type=etype)
    for i, obs in enumerate(observations):
        if not _text(obs):
            if obs not in (None, ""):
                batch.skip(f"{where} observation {i + 1}", "an observation must be text")
            continue
        mid = batch.memory(
            source_key=f"{name}\x00{obs}",
            scope=scope,
            content=f"{name}: {obs}",
            tags=["mcp-memory", etype.lower().replace(" ", "-")[:40]],
            origin={"entity": name[:200], "observation": i},
            group=f"entity:{name.casefold()}"[:300],
        )
        batch.mention(scope=scope, memory_id=mid, entity=key, relationship="about")


def _relation(batch: ImportBatch, item: dict, scope: str, where: str) -> None:
    src, dst, rel = _str(item.get("from")), _str(item.get("to")), _str(item.get("relationType"))
    if src is None or dst is None or rel is None:
        batch.skip(where, "a relation needs from, to and relationType")
        return
    a = batch.entity(scope=scope, name=src)  # an entity only named by a relation still gets a node
    b = batch.entity(scope=scope, name=dst)
    batch.relation(scope=scope, source=a, target=b, relation_type=rel)
    mid = batch.memory(
        source_key=f"relation\x00{src}\x00{rel}\x00{dst}",
        scope=scope,
        content=f"{src} {relation_phrase(rel)} {dst}",
        tags=["mcp-memory", "relation"],
        origin={"entity": src[:200], "relation": rel[:200], "to": dst[:200]},
    )
    batch.mention(scope=scope, memory_id=mid, entity=a, relationship="subject")
    batch.mention(scope=scope, memory_id=mid, entity=b, relationship="object")


def relation_phrase(relation_type: str) -> str:
    """`works_at` -> `works at`, `isPartOf` -> `is part of`: the relation as words."""
    words = []
    for part in relation_type.replace("_", " ").replace("-", " ").split():
        spaced = "".join(f" {c.lower()}" if c.isupper() and i else c for i, c in enumerate(part))
        words.append(spaced.strip() if not part.isupper() else part)
    return " ".join(words)


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _str(value: object) -> str | None:
    """A non-blank string field, else None (a number or list where a name belongs is no name)."""
    return value if isinstance(value, str) and value.strip() else None
