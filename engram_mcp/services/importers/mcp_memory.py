"""The official MCP memory server's knowledge graph (`@modelcontextprotocol/server-memory`).

Its file (`MEMORY_FILE_PATH`, by default `memory.jsonl`) holds one JSON object per line:
`{"type": "entity", "name", "entityType", "observations": [str]}` and
`{"type": "relation", "from", "to", "relationType"}` (entity names, active voice).

Mapping: every entity becomes an engram entity node of its type; every observation becomes a
semantic memory ("<entity>: <observation>", so it stands on its own in a recall) that
mentions its entity; every relation becomes an entity relation. The server is about the user
across chats, so the default scope is `user`.
"""

from __future__ import annotations

import json
from pathlib import Path

from .batch import ImportBatch

SOURCE = "mcp-memory"
DEFAULT_SCOPE = "user"


def read(path: Path, *, scope: str = DEFAULT_SCOPE, **_: object) -> ImportBatch:
    batch = ImportBatch(SOURCE)
    relations: list[tuple[int, dict]] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as exc:
                batch.skip(f"{path}:{n}", f"not JSON ({exc.msg})")
                continue
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "entity":
                _entity(batch, item, scope, f"{path}:{n}")
            elif kind == "relation":
                relations.append((n, item))
            else:
                batch.skip(f"{path}:{n}", f"neither an entity nor a relation (type {str(kind)[:20]!r})")
    for n, item in relations:
        src, dst, rel = item.get("from"), item.get("to"), item.get("relationType")
        if not (_text(src) and _text(dst) and _text(rel)):
            batch.skip(f"{path}:{n}", "a relation needs from, to and relationType")
            continue
        a = batch.entity(scope=scope, name=str(src))  # an entity only named by a relation still gets a node
        b = batch.entity(scope=scope, name=str(dst))
        batch.relation(scope=scope, source=a, target=b, relation_type=str(rel))
    return batch


def _entity(batch: ImportBatch, item: dict, scope: str, where: str) -> None:
    name, etype = item.get("name"), item.get("entityType") or "concept"
    if not isinstance(name, str) or not name.strip():
        batch.skip(where, "an entity needs a name")
        return
    key = batch.entity(scope=scope, name=name, entity_type=str(etype))
    for i, obs in enumerate(item.get("observations") or []):
        if not isinstance(obs, str) or not obs.strip():
            continue
        mid = batch.memory(
            source_key=f"{name}\x00{obs}",
            scope=scope,
            content=f"{name}: {obs}",
            tags=["mcp-memory", str(etype).lower().replace(" ", "-")[:40]],
            origin={"entity": name, "observation": i},
        )
        batch.mention(scope=scope, memory_id=mid, entity=key, relationship="about")


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())
