"""Export, import and reindex: lossless JSONL, fast when vectors travel along.

An export line is one of: header, memory (the whole record; vector as base64 float32
with its model name), history, entity, mention, relation (entity -> entity), link
(memory -> memory). Export is deterministic (rows sorted by stable keys). Import is
idempotent (a memory id, history entry, entity, mention, relation or link already
present is skipped), keeps ids, timestamps, history and relations, and applies to every
record the checks and redaction `store` applies (records.clean_memory_record): an export
may come from anywhere (an older engram, another machine, a hand-edited file). A bad line
is reported with its number and reason; the rest is imported. Vectors whose model matches
the current one are reused (unless redaction changed the text); the rest are embedded.
Checking and embedding run outside the service lock (the checks of a large file in a child
process, services/import_check.py, while this one writes); records are written in small
transactions (WRITE_BATCH), so an import never keeps a recall waiting.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from engram_mcp.core.errors import InvalidInput, StoreUnavailable
from engram_mcp.core.export_signature import (
    NOT_OURS,
    SIGNED,
    SigningWriter,
    export_key,
    is_signature_line,
    verify,
)
from engram_mcp.core.ids import parse_memory_id
from engram_mcp.core.redaction import redact_outbound_obj
from engram_mcp.core.sensitivity import is_sensitive
from engram_mcp.core.vocabulary import LINK_TYPES, PERSISTENT_SCOPES, SCOPES
from engram_mcp.services import backfill
from engram_mcp.services.access import RequestContext, ScopeAccess
from engram_mcp.services.graph import find_entities, name_key
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.import_check import CheckedMemory, Line, check_memory, checked_lines
from engram_mcp.services.records import (
    MAX_CONTENT_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_HISTORY_CHANGE_CHARS,
    MAX_NAME_CHARS,
    MAX_REASON_CHARS,
    MEMORY_TIME_FIELDS,
    check_enum,
    check_int,
    check_text,
    check_weight,
    clean_evidence,
    clean_free_text,
    clean_object,
    clean_tags,
    findings_summary,
    iso,
    json_default,
    jsonable,
    now_dt,
    origin_of,
    parse_time,
    sanitize_text,
    trim_recall_sessions,
    vector_bytes,
)
from engram_mcp.storage.repository import GRAPH_PAGE_KINDS
from engram_mcp.storage.rows import LinkRow, MentionRow, RelationRow
from engram_mcp.storage.schema import CURRENT_SCHEMA_VERSION

EXPORT_FORMAT = "engram-export"
EXPORT_VERSION = 1
#: How long one locked write of an import may hold the service lock, in ms. The batch size is
#: set from the time the previous batch took (`_Writer`): a larger INSERT costs less per record
#: (10,000 memories with vectors: 1,123 per CPU-second against 928 in batches of 16, same run),
#: and a recall still waits at most one batch behind an import (issue 12: no lock hold above
#: ~100 ms). On a loaded machine the batches stay at the floor, as they were before.
WRITE_LOCK_BUDGET_MS = 60.0
#: First batch of an import, before one has been timed, and the smallest.
WRITE_BATCH = 16
MAX_WRITE_BATCH = 2000
#: Graph and history lines applied per lock hold (each costs one to three small statements).
DEFERRED_BATCH = 16
EMBED_BATCH = 64
#: Memories read in the first lock hold of an export; later pages are sized from the time the
#: last one held the lock, to about EXPORT_LOCK_BUDGET_MS (at most MAX_EXPORT_PAGE): 100
#: records with vectors took 15-40 ms here, and each page is one query whose fixed cost a
#: larger page spreads (the whole export used to hold the lock: 1.1 s at 5,000 memories).
EXPORT_PAGE = 100
EXPORT_LOCK_BUDGET_MS = 60.0
MAX_EXPORT_PAGE = 2000
ENTITY_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
Progress = Callable[[int, int | None, str], None]
DEFAULT_SCOPES = PERSISTENT_SCOPES  # what export and reindex cover unless told otherwise
#: One encoder for every memory line (json.dumps would build one per line), for what orjson refuses.
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, default=json_default)
try:  # a dependency; without it (a broken install) lines are written by json, slower
    import orjson

    _ORJSON_DUMPS: Callable[..., bytes] | None = orjson.dumps
    #: datetimes as `iso` writes them: RFC 3339, UTC as Z, a naive time taken as UTC
    _ORJSON_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NAIVE_UTC
except ImportError:  # pragma: no cover - orjson is installed with engram
    _ORJSON_DUMPS, _ORJSON_OPTIONS = None, 0


def export(
    access: ScopeAccess,
    ctx: RequestContext,
    path: str | Path,
    *,
    scopes: tuple[str, ...] = DEFAULT_SCOPES,
    include_vectors: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write the chosen scopes to `path` (JSONL, 0600).

    Deterministic: every kind of row is written in the order of a stable key (never the
    engine's table-scan order of random record ids), so exporting the same data twice,
    or re-exporting an import, gives the same bytes apart from the header (and the closing
    signature line, when another user's key signs the re-export: `export_signature`).

    An export leaves the store (it is copied, mailed, restored elsewhere), so every text it
    holds gets the outbound redaction pass (`redaction.redact_outbound`), stricter than the
    store's; what it replaced is counted in the answer's `redactions`.

    Memories marked sensitive (core/sensitivity.py) are exported like the rest (a backup
    loses nothing), through the same outbound pass, with the tag and metadata that keep them
    out of context and team files after a restore; `counts.sensitive` says how many.
    """
    for s in scopes:
        check_enum(s, SCOPES, "scopes")
    counts = {"memory": 0, "history": 0, "entity": 0, "mention": 0, "relation": 0, "link": 0}
    redactions: dict[str, int] = {}
    path = _checked_path(path)
    try:
        fd = _open_private(path)
    except OSError as exc:
        raise InvalidInput(f"cannot write the export to {path}: {exc.strerror or exc}", field="path") from None
    with open(fd, "wb") as raw:
        out = SigningWriter(raw, export_key(access.user_dir))
        out.write(
            json.dumps(
                {
                    "kind": "header",
                    "format": EXPORT_FORMAT,
                    "version": EXPORT_VERSION,
                    "schema_version": CURRENT_SCHEMA_VERSION,
                    "model": access.model_name,
                    "scopes": list(scopes),
                }
            )
            + "\n"
        )
        for scope, h in access.try_scopes(ctx, scopes):
            if isinstance(h, StoreUnavailable):
                raise h  # an export must hold every scope asked for
            with access.lock:
                keys = sorted(
                    h.index.keys()
                )  # the derived index holds every memory's key (a query for them: ~180 ms at 5k)
            _export_memories(access, h, scope, keys, out, counts, include_vectors, progress, redactions)
            graph = _export_graph_lines(_read_graph(access, h), scope, redactions)
            for kind, lines in graph.items():
                if lines:
                    out.write("\n".join(map(_line, lines)) + "\n")
                counts[kind] += len(lines)
        out.finish()
    return {"path": str(path), "counts": counts, "redactions": redactions, "signed": True}


#: The fields of an exported row that hold the user's text (the rest are ids, times, numbers).
EXPORT_MEMORY_TEXT_FIELDS = ("content", "summary", "category", "tags", "metadata", "source", "related_entities")
EXPORT_ENTITY_TEXT_FIELDS = ("name", "description")


def _outbound(row: dict[str, Any], fields: tuple[str, ...], redactions: dict[str, int]) -> bool:
    """Give `fields` of `row` the outbound redaction pass, in place; whether anything changed."""
    changed = False
    for name in fields:
        value = row.get(name)
        if value is None:
            continue
        new, found = redact_outbound_obj(value)
        if found:
            row[name] = new
            changed = True
            for f in found:
                redactions[f.kind] = redactions.get(f.kind, 0) + f.count
    return changed


def _export_memories(
    access: ScopeAccess,
    h: ScopeHandle,
    scope: str,
    keys: list[str],
    out,
    counts: dict[str, int],
    include_vectors: bool,
    progress: Progress | None,
    redactions: dict[str, int],
) -> None:
    """The memories that existed when the export began, a page per lock hold (written to the
    file outside it), in key order; one removed meanwhile is left out."""
    total, start, size = len(keys), 0, EXPORT_PAGE
    while start < total:
        page = keys[start : start + size]
        with access.lock:
            began = time.perf_counter()
            rows = h.repo.get_key_range(page[0], page[-1])
            wanted = set(page)  # the range also holds keys written since the export began
            rows = [r for r in rows if r["id"] in wanted]
            if len(rows) < len(page):  # removed meanwhile, or (never seen) ordered apart by the engine
                rows += h.repo.get_many(wanted.difference(r["id"] for r in rows))
            held = time.perf_counter() - began
        rows.sort(key=lambda r: r["id"])
        _write_memory_lines(rows, scope, out, counts, include_vectors, redactions)
        start += len(page)
        size = next_batch(size, len(page), held, EXPORT_LOCK_BUDGET_MS, EXPORT_PAGE, MAX_EXPORT_PAGE)
        if progress:
            progress(start, total, f"export {scope}")


def _write_memory_lines(
    rows: list[dict[str, Any]],
    scope: str,
    out,
    counts: dict[str, int],
    include_vectors: bool,
    redactions: dict[str, int],
) -> None:
    """Memory lines, by orjson (an export of 10,000: 0.17 s against 0.7-0.8 s by json, which
    also had to turn every time into text first); a line orjson refuses (an integer beyond 64
    bits, a string that is not valid UTF-8) is written by json, as before."""
    lines = []
    for row in rows:
        key, blob = row.pop("id"), row.pop("embedding", None)  # the rows are ours (repository.get_many)
        if is_sensitive(row):
            counts["sensitive"] = counts.get("sensitive", 0) + 1
        if _outbound(row, EXPORT_MEMORY_TEXT_FIELDS, redactions):
            blob = None  # the vector embeds text the file no longer holds: an import embeds what it reads
        line = {"kind": "memory", "scope": scope, "id": key, "record": row}
        if include_vectors and blob:
            line["vector_b64"] = base64.b64encode(bytes(blob)).decode()
        lines.append(_line(line))
    if lines:
        out.write("\n".join(lines) + "\n")
    counts["memory"] += len(lines)


def _line(line: dict[str, Any]) -> str:
    """One export line: by orjson, or by json for what orjson refuses."""
    if _ORJSON_DUMPS is not None:
        try:
            return _ORJSON_DUMPS(line, default=json_default, option=_ORJSON_OPTIONS).decode()
        except TypeError:  # orjson's JSONEncodeError is a TypeError
            pass
    record = line.get("record")
    if isinstance(record, dict):  # a memory's own times, as jsonable writes them
        for name, value in record.items():
            if type(value) is datetime:
                record[name] = iso(value)
    return _LINE_ENCODER.encode(line)


def _read_graph(access: ScopeAccess, h: ScopeHandle) -> dict[str, list[Any]]:
    """Every row of the scope's graph tables (history too), a page per lock hold sized as the
    memory pages are: read whole in one hold, a 100k-memory store held the lock 2.9 s."""
    tables: dict[str, list[Any]] = {}
    for kind in GRAPH_PAGE_KINDS:
        rows: list[Any] = []
        after, size = None, EXPORT_PAGE
        while True:
            with access.lock:
                began = time.perf_counter()
                page, after = h.repo.graph_page(kind, after, size)
                held = time.perf_counter() - began
            rows += page
            if after is None:
                break
            size = next_batch(size, len(page), held, EXPORT_LOCK_BUDGET_MS, EXPORT_PAGE, MAX_EXPORT_PAGE)
        tables[kind] = rows
    return tables


def _export_graph_lines(
    tables: dict[str, list[Any]], scope: str, redactions: dict[str, int]
) -> dict[str, list[dict[str, Any]]]:
    """History, entity, mention, relation and link lines of one scope, each kind sorted, their
    texts (old versions, entity names, evidence) through the outbound pass."""
    history = [
        {
            "kind": "history",
            "scope": scope,
            "memory_id": e.memory,
            "entry": jsonable(e.record()),
        }
        for e in tables["history"]
    ]
    history.sort(
        key=lambda row: (
            row["memory_id"],
            row["entry"].get("version") or 0,
            str(row["entry"].get("changed_at")),
            str(row["entry"].get("change")),
        )
    )
    entities = sorted(
        (
            {
                "kind": "entity",
                "scope": scope,
                "key": e.key,
                "record": jsonable(e.record()),
            }
            for e in tables["entity"]
        ),
        key=lambda row: row["key"],
    )
    mentions = sorted(
        (
            {
                "kind": "mention",
                "scope": scope,
                "memory_id": m.memory,
                "entity_key": m.entity,
                "relationship": m.relationship,
                "created_at": jsonable(m.created_at),
            }
            for m in tables["mention"]
        ),
        key=lambda row: (row["memory_id"], row["entity_key"], str(row["relationship"])),
    )
    relations = sorted(
        (
            {
                "kind": "relation",
                "scope": scope,
                "from": r.src,
                "to": r.dst,
                "relation_type": r.relation_type,
                "weight": r.weight,
                "evidence": list(r.evidence),
                "created_at": jsonable(r.created_at),
            }
            for r in tables["relation"]
        ),
        key=lambda row: (row["from"], row["to"], str(row["relation_type"])),
    )
    links = sorted(
        (
            {
                "kind": "link",
                "scope": scope,
                "from": link.src,
                "to": link.dst,
                "relation_type": link.relation_type,
                "strength": link.strength,
                "created_at": jsonable(link.created_at),
            }
            for link in tables["link"]
        ),
        key=lambda row: (row["from"], row["to"], str(row["relation_type"])),
    )
    for line in history:
        _outbound(line["entry"], ("snapshot", "change"), redactions)
    for line in entities:
        _outbound(line["record"], EXPORT_ENTITY_TEXT_FIELDS, redactions)
    for line in relations:
        _outbound(line, ("evidence",), redactions)
    return {"history": history, "entity": entities, "mention": mentions, "relation": relations, "link": links}


def _open_private(path: Path) -> int:
    if not path.parent.is_dir():  # a missing directory is a typo more often than a wish: never `mkdir -p`
        raise OSError(
            errno.ENOENT, f"the directory {path.parent} does not exist; create it first or choose another path"
        )
    return _open_regular_for_write(path)


def _open_regular_for_write(path: Path) -> int:
    """Open `path` to write, only if it is (or becomes) a regular file, truncated.

    A FIFO would block the daemon's thread until a reader appears (forever), a device or a
    socket is no export file, and a symlink may point anywhere: O_NOFOLLOW | O_NONBLOCK make
    the open itself refuse or return at once, and fstat checks what was opened before anything
    is truncated or written.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads, or a socket
            raise OSError(errno.EINVAL, f"{path} is a FIFO or a socket, not a regular file") from None
        if exc.errno == errno.ELOOP:
            raise OSError(errno.EINVAL, f"{path} is a symbolic link; give the path of a regular file") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file (a FIFO, device or socket)")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _checked_path(path: Any) -> Path:
    """A file path the OS can take: text (valid Unicode, no NUL) or a Path."""
    if not isinstance(path, (str, Path)):
        raise InvalidInput("path must be a file path string", field="path")
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("path is not valid Unicode text (it holds a lone surrogate)", field="path") from None
    if "\x00" in text or not text.strip():
        raise InvalidInput("path must be a non-empty file path without NUL characters", field="path")
    return Path(text)


MAX_REJECTED_LISTED = 100  # rejected lines named one by one in the answer; the count covers the rest


@dataclass
class _Memory:
    """A memory line that passed every check, waiting for its vector or its write."""

    n: int
    scope: str
    key: str
    record: dict[str, Any]
    vector: np.ndarray | None = None


@dataclass
class _Run:
    """The state of one import: handles, counts, what was rejected and why."""

    access: ScopeAccess
    ctx: RequestContext
    path: Path
    target_scope: str | None
    progress: Progress | None
    counts: dict[str, int] = field(
        default_factory=lambda: {
            "memory": 0,
            "skipped": 0,
            "embedded": 0,
            "history": 0,
            "entity": 0,
            "mention": 0,
            "relation": 0,
            "link": 0,
            "rejected": 0,
        }
    )
    findings: list = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    handles: dict[str, ScopeHandle] = field(default_factory=dict)
    defer_vectors: bool = False  # memories of persistent scopes are written without vectors (backfill.py)
    keep_origins: bool = True  # False: every memory is marked imported from `path` (`as_imported`)
    # The memories this import wrote, by scope, when origins are not kept: its history, link,
    # mention and relation lines change only those (`_brought`).
    created: dict[str, set[str]] = field(default_factory=dict)
    # Lines left out because they would change what was in the store before, by kind (`_NotBrought`).
    refused: dict[str, int] = field(default_factory=dict)
    recalls_seen: int = -1  # the service's recall count at the last batch (`give_way`)
    recall_seen_at: float = float("-inf")  # when that count last moved (time.monotonic)

    def handle(self, scope: Any) -> ScopeHandle:
        """The scope's handle; opening a store takes the service lock (briefly, once per scope)."""
        check_enum(scope, SCOPES, "scope")
        if scope not in self.handles:
            with self.access.lock:
                self.handles[scope] = self.access.handle(self.ctx, scope)
        return self.handles[scope]

    def scope_of(self, obj: dict[str, Any]) -> str:
        return check_enum(self.target_scope or obj.get("scope"), SCOPES, "scope")

    def reject(self, n: int, message: str, field_name: str | None = None) -> None:
        self.counts["rejected"] += 1
        if len(self.rejected) < MAX_REJECTED_LISTED:
            entry = {"line": n, "error": f"{self.path}:{n}: {field_name + ': ' if field_name else ''}{message}"}
            if field_name:
                entry["field"] = field_name
            self.rejected.append(entry)

    def tick(self, done: int, total: int | None, label: str) -> None:
        if self.progress is not None:
            self.progress(done, total, label)


def import_(
    access: ScopeAccess,
    ctx: RequestContext,
    path: str | Path,
    *,
    progress: Progress | None = None,
    target_scope: str | None = None,
    keep_origins: bool = False,
) -> dict[str, Any]:
    """Import an export file (or any JSONL of memory lines); idempotent by id.

    Each memory keeps the origin the file states (its `source`: the user, Claude, a hook, a
    teammate's file) only when the file is an export this user's engram signed and nobody has
    changed since (`export_signature`), or when the user vouches for it (`keep_origins`: a
    backup from another machine). Any other file is someone else's text: its memories are
    marked imported from it, the origin they claimed kept beside (`as_imported`), and its
    history, link, mention and relation lines change only what this import brought: a line
    naming a memory that was in the store before (import ids are predictable: a link
    "A supersedes <your note>" hid the user's note from recall) is left out and counted in
    the answer (`origins.refused`, and `rejected` with the reason), as `engram sync` refuses
    a team file's supersedes of a memory no file holds.

    Every record goes through the checks `store` applies (records.clean_memory_record:
    NUL, Unicode, lengths, enums, dates, finite numbers, redaction) and vectors are checked
    (dimension, finite). A bad line is reported with its line number, field and reason and the
    rest is imported; only a file where nothing at all could be used is an error.

    The service lock is never held while parsing, redacting or embedding: lines are
    checked and embedded outside it and written in batches of WRITE_BATCH memories (or
    DEFERRED_BATCH graph lines), each batch under the lock for a few milliseconds, so a
    recall running beside a large import waits for one batch at most.
    `progress(done, total, label)` is called as lines are read, embedded and written.
    """
    path = _checked_path(path)
    if target_scope is not None:
        check_enum(target_scope, SCOPES, "target_scope")
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file", field="path")
    signature = verify(path, export_key(access.user_dir))
    run = _Run(access, ctx, path, target_scope, progress, keep_origins=keep_origins or signature == SIGNED)
    items = checked_lines(run.path, run.target_scope, access.model_name, access.dim())
    out = _run_import(run, items)
    out["origins"] = _origins_report(signature, keep_origins)
    if run.refused:
        out["origins"]["refused"] = dict(sorted(run.refused.items()))
        out["origins"]["refused_why"] = REFUSED_WHY
    return out


def _origins_report(signature: str, vouched: bool) -> dict[str, Any]:
    """What the import did with the origins the file states, and why (for the answer)."""
    if signature == SIGNED:
        return {"kept": True, "why": "the file is an export this engram signed, unchanged since"}
    if vouched:
        return {"kept": True, "why": "kept on your word (keep_origins)"}
    why = (
        "the file's signature does not verify: another engram wrote it, or it was changed after export"
        if signature == NOT_OURS
        else "the file carries no signature of this engram"
    )
    return {
        "kept": False,
        "why": f"{why}; its memories are marked imported from it. If it is your own backup, import it "
        "again with keep_origins (engram import FILE --keep-origins)",
    }


#: A path kept in an imported memory's origin is cut to this many characters.
MAX_IMPORT_PATH_CHARS = 200


def as_imported(source: Any, path: Path) -> dict[str, Any]:
    """The `source` of a memory from a file this engram did not sign: imported from that file
    (`origin_of` reads the kind as an import), with the origin the file claimed for the record."""
    return {
        "kind": "engram-export",
        "path": str(path)[:MAX_IMPORT_PATH_CHARS],
        "claimed_origin": origin_of(source),
    }


def import_records(
    access: ScopeAccess,
    ctx: RequestContext,
    lines: list[dict[str, Any]],
    *,
    label: str,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import lines already in memory (an importer's records) exactly as `import_` imports a
    file's: the same checks, redaction, embedding and batching. No copy of them is written
    anywhere: a temporary file would hold the source's text before its redaction, and an
    import killed before removing it left that text on disk (issue 35). `label` names the
    source in messages ("line N" is the N-th record)."""
    run = _Run(access, ctx, Path(label), None, progress)
    model, dim = access.model_name, access.dim()
    # the count is known before any line is checked: a large import defers from its first memory,
    # so its writes overlap its checks (`_ahead`) instead of waiting for the last one
    run.defer_vectors = _defers(run, sum(1 for obj in lines if obj.get("kind") == "memory"))

    def items() -> Iterator[Line | CheckedMemory]:
        for n, obj in enumerate(lines, 1):
            if obj.get("kind") == "memory":
                yield check_memory(obj, n, None, model, dim)
            else:
                yield Line(n, obj)

    return _run_import(run, _ahead(items()) if len(lines) >= CHECK_AHEAD_MIN_LINES else items())


#: Records from which an import checks its lines in a thread of its own, ahead of the writes.
CHECK_AHEAD_MIN_LINES = 2000
CHECK_AHEAD_QUEUE = 4096


def _ahead(items: Iterator[Any]) -> Iterator[Any]:
    """`items`, produced by a thread ahead of the consumer: the checks (Python, redaction) run
    while the engine commits the previous batch with the interpreter lock released."""
    import queue
    import threading

    out: queue.Queue = queue.Queue(CHECK_AHEAD_QUEUE)
    done = object()
    failure: list[BaseException] = []
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                out.put(item)
        except BaseException as exc:  # handed to the consumer, raised there
            failure.append(exc)
        finally:
            out.put(done)

    worker = threading.Thread(target=produce, name="engram-import-check", daemon=True)
    worker.start()
    try:
        while (item := out.get()) is not done:
            yield item
        if failure:
            raise failure[0]
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                out.get_nowait()
            except queue.Empty:
                worker.join(0.01)


def _run_import(run: _Run, items: Iterable[Line | CheckedMemory]) -> dict[str, Any]:
    writer = _Writer(run)
    to_embed, deferred = _check_lines(run, writer, items)
    writer.flush()
    to_embed = _defer_vectors(run, to_embed, writer)
    _embed_and_write(run, to_embed, writer)
    _import_deferred(run, deferred)
    counts = run.counts
    if counts.get("vectors_deferred"):
        backfill.wake(run.access)  # after the graph lines: the worker does not compete with them
    imported = sum(v for k, v in counts.items() if k not in ("rejected", "embedded", "vectors_deferred"))
    if run.rejected and imported == 0:
        first = run.rejected[0]
        more = f" (and {counts['rejected'] - 1} more bad lines)" if counts["rejected"] > 1 else ""
        raise InvalidInput(
            f"nothing imported: {first['error']}{more}", field=first.get("field"), rejected=run.rejected[:10]
        )
    run.tick(1, 1, "done")
    out: dict[str, Any] = {"path": str(run.path), "counts": counts, "redactions": findings_summary(run.findings)}
    if run.rejected:
        out["rejected"] = run.rejected
    return out


def _check_lines(
    run: _Run, writer: "_Writer", items: Iterable[Line | CheckedMemory]
) -> tuple[list[_Memory], list[tuple[int, dict]]]:
    """Take every line checked (`import_check.checked_lines`: in a child process for a large
    file) without the lock; a memory with a usable vector (or none needed) goes to `writer` at
    once, so the file is never held in memory whole. Returns (memories to embed, graph/history
    lines for later)."""
    to_embed: list[_Memory] = []
    deferred: list[tuple[int, dict]] = []
    seen: set[tuple[str, str]] = set()
    header_seen = False
    for item in items:
        n = item.n
        if n % 500 == 0:
            run.tick(n, None, "check")
        if isinstance(item, CheckedMemory):
            _take_memory(run, item, seen, to_embed, writer)
            continue
        if item.obj is None:
            run.reject(n, item.error or "unreadable line")
            continue
        obj = item.obj
        kind = obj["kind"]
        if kind == "header":
            if header_seen or obj.get("format") != EXPORT_FORMAT or _header_version(obj) > EXPORT_VERSION:
                raise InvalidInput(f"{run.path}:{n}: not an engram export of a version this engram reads", field="path")
            header_seen = True
        elif kind in ("history", "entity", "mention", "relation", "link"):
            deferred.append((n, obj))
        elif is_signature_line(obj):
            continue  # checked before the import began (`export_signature.verify`)
        else:
            run.reject(n, f"unknown kind {kind[:40]!r}", "kind")
    return to_embed, deferred


def _take_memory(
    run: _Run, item: CheckedMemory, seen: set[tuple[str, str]], to_embed: list[_Memory], writer: "_Writer"
) -> None:
    """A checked memory line: rejected, skipped (already here), to embed, or to write."""
    run.findings.extend(item.findings)  # a refused line's redactions are reported too
    if item.error is not None:
        run.reject(item.n, item.error, item.field)
        return
    scope, key = item.scope, item.key
    if (scope, key) in seen or run.handle(scope).index.slot_of(key) is not None:
        run.counts["skipped"] += 1
        return
    seen.add((scope, key))
    if not run.keep_origins:
        item.record["source"] = as_imported(item.record.get("source"), run.path)
    vector = None if item.vector is None else np.frombuffer(item.vector, dtype="<f4")
    mem = _Memory(item.n, scope, key, item.record, vector)
    if vector is None and item.record.get("status") != "forgotten":
        if run.defer_vectors and scope in PERSISTENT_SCOPES:
            backfill.mark(run.access, run.ctx, scope, run.handle(scope))  # listed before it is written
            run.counts["vectors_deferred"] = run.counts.get("vectors_deferred", 0) + 1
            writer.add(mem)
        else:
            to_embed.append(mem)
    else:
        writer.add(mem)


def _header_version(obj: dict[str, Any]) -> int:
    """The export version a header states (a number, or a string of one); unreadable counts as too new."""
    try:
        return int(obj.get("version", 0))
    except (TypeError, ValueError, OverflowError):
        return EXPORT_VERSION + 1


def next_batch(current: int, done: int, held_s: float, budget_ms: float, smallest: int, largest: int) -> int:
    """The size of the next locked batch: what `budget_ms` allows at the per-record time of the
    batch just done (`done` records in `held_s`), at most twice the current size (one fast
    batch on a machine whose load then returns must not buy a long hold), within the bounds."""
    if done <= 0 or held_s <= 0:
        return current
    fits = budget_ms / 1000.0 / (held_s / done)
    return int(max(smallest, min(largest, 2 * current, fits)))


#: Pause after each locked batch of an import, in seconds, so a recall waiting for the lock takes
#: it (and the interpreter) before the next batch does, for both of its holds. Without it an import
#: that no longer waits for its vectors took the lock back at once, batch after batch: another
#: project's recall p50/p95 151/377 ms during a 20,000-memory import (issue 35); 5 ms gave 82/207,
#: 15 ms 35-44/161-165, 25 ms 20-25/69-151, 40 ms 28/58, the import no slower for it (12-23 s, as
#: the machine's load varied; load average ~4 on 2 cores): the pause is short against a batch.
#: Only while recalls are being answered (one was answered in the last RECALLS_RECENT_S): an
#: import nobody waits for does not pause (an export's 10,000 memories are ~50 batches). Pausing
#: only after a batch during which a recall was answered left p95 at 185 ms in the bench.
GIVE_WAY_S = 0.025
RECALLS_RECENT_S = 2.0


def give_way(run: _Run) -> None:
    recalls, now = run.access.state.recalls, time.monotonic()
    if recalls != run.recalls_seen:
        run.recalls_seen, run.recall_seen_at = recalls, now
    if now - run.recall_seen_at < RECALLS_RECENT_S:
        time.sleep(GIVE_WAY_S)


class _Writer:
    """Writes checked memories in batches, each one statement under the service lock.

    The batch size follows the time the last batch held the lock: the next one is sized to
    take about WRITE_LOCK_BUDGET_MS (between WRITE_BATCH and MAX_WRITE_BATCH records), so a
    bulk import runs at the engine's pace while a recall waits one short batch at most.
    """

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.pending: list[_Memory] = []
        self.batch = WRITE_BATCH
        self.written = 0

    def add(self, m: _Memory) -> None:
        self.pending.append(m)
        if len(self.pending) >= self.batch:
            self.flush()

    def write_all(self, memories: list[_Memory]) -> None:
        for m in memories:
            self.add(m)
        self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        held = _write_batch(self.run, batch)
        self.batch = next_batch(self.batch, len(batch), held, WRITE_LOCK_BUDGET_MS, WRITE_BATCH, MAX_WRITE_BATCH)
        self.written += len(batch)
        self.run.tick(self.written, None, "write")
        give_way(self.run)


def _write_batch(run: _Run, batch: list[_Memory]) -> float:
    """Write one batch (per scope: one INSERT under the lock, then the index); the seconds
    the lock was held."""
    by_scope: dict[str, list[_Memory]] = {}
    for m in batch:
        by_scope.setdefault(m.scope, []).append(m)
    held = 0.0
    for scope, items in by_scope.items():
        h = run.handle(scope)
        with run.access.lock:
            started = time.perf_counter()
            fresh = [
                m for m in items if h.index.slot_of(m.key) is None
            ]  # another client may have written one meanwhile
            run.counts["skipped"] += len(items) - len(fresh)
            if fresh:
                try:
                    with h.repo.atomic() as tx:
                        tx.insert_many((m.key, m.record) for m in fresh)
                except InvalidInput:
                    fresh = _write_one_by_one(run, h, fresh)  # find the record the engine refused; keep the rest
                h.index.bulk_load({**m.record, "id": m.key} for m in fresh)  # new slots: one pass for the batch
                run.counts["memory"] += len(fresh)
                if not run.keep_origins:
                    run.created.setdefault(scope, set()).update(m.key for m in fresh)
            held += time.perf_counter() - started
    return held


def _write_one_by_one(run: _Run, h: ScopeHandle, items: list[_Memory]) -> list[_Memory]:
    written = []
    for m in items:
        try:
            h.repo.insert(m.key, m.record)
            written.append(m)
        except InvalidInput as exc:
            run.reject(m.n, exc.message, exc.field)
    return written


def _defer_vectors(run: _Run, memories: list[_Memory], writer: _Writer) -> list[_Memory]:
    """Write a large import's memories without their vectors, now; the rest to embed here.

    From `import_defer_vectors_min` memories to embed (persistent scopes; a session's few are
    embedded as before) and only where a worker will finish the job (services/backfill.py: the
    daemon's): embedding 20,000 took ~90 s of CPU here, which the import no longer waits for.
    The scopes are listed as awaiting vectors before the first such memory is written (a crash
    in between leaves an entry with nothing to do, never a memory nobody will embed)."""
    later = [m for m in memories if m.scope in PERSISTENT_SCOPES]
    if not _defers(run, len(later)):
        return memories
    for scope in sorted({m.scope for m in later}):
        backfill.mark(run.access, run.ctx, scope, run.handle(scope))
    writer.write_all(later)
    run.counts["vectors_deferred"] = run.counts.get("vectors_deferred", 0) + len(later)
    return [m for m in memories if m.scope not in PERSISTENT_SCOPES]


def _defers(run: _Run, memories: int) -> bool:
    """Whether an import of this many memories to embed leaves their vectors to the backfill."""
    least = run.access.config(run.ctx.project_root).import_defer_vectors_min
    return bool(least) and memories >= least and backfill.deferring(run.access)


def _embed_and_write(run: _Run, memories: list[_Memory], writer: _Writer) -> None:
    """Embed in EMBED_BATCH chunks outside the lock and write each chunk, the next chunk
    embedding (in one worker thread; the model releases the GIL) while this one is written.

    The memories are taken shortest first: the model pads every batch to its longest text, so
    chunks of like lengths embed faster than chunks in file order.
    """
    total = len(memories)
    if not total:
        return
    memories = sorted(memories, key=lambda m: len(m.record["content"]))
    chunks = [memories[i : i + EMBED_BATCH] for i in range(0, total, EMBED_BATCH)]

    def embed(chunk: list[_Memory]) -> tuple[np.ndarray | None, str | None]:
        return run.access.embed_documents([m.record["content"] for m in chunk])

    model, done = run.access.model_name, 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-import-embed") as pool:
        pending = pool.submit(embed, chunks[0])
        for i, chunk in enumerate(chunks):
            vecs, _warning = pending.result()
            if i + 1 < len(chunks):
                pending = pool.submit(embed, chunks[i + 1])
            for j, m in enumerate(chunk):
                v = None if vecs is None else vecs[j]
                if v is not None:
                    m.vector = v
                    m.record.update(embedding=vector_bytes(v), embedding_model=model, embedding_dim=int(v.shape[0]))
                    run.counts["embedded"] += 1
            for m in chunk:  # batches follow the lock budget, not the chunks (of 64 they were ~26 records each)
                writer.add(m)
            done += len(chunk)
            run.tick(done, total, "embed")
    writer.flush()


@dataclass
class _ScopeImport:
    """What one scope already holds, loaded once, so a re-import adds nothing twice."""

    history: set[tuple[str, int, str, str]] = field(default_factory=set)
    entity_keys: dict[str, str] = field(default_factory=dict)  # exported key -> key in this store
    mapped_entities: set[str] = field(default_factory=set)  # the values of entity_keys, for O(1) tests
    created_entities: set[str] = field(default_factory=set)
    # (memory, entity, relationship) of the mentions already stored for the entities this file
    # names, read in MENTION_PREFETCH chunks: one query per chunk, never one per mention
    # (issue 35: each per-mention lookup scanned the entity's mentions, so one entity with 20,000
    # observations took minutes).
    mentions: set[tuple[str, str, str]] = field(default_factory=set)
    bumps: dict[str, int] = field(default_factory=dict)  # entity -> new mentions, written per batch
    # The nodes the file's entity lines may meet, read once (`_stored_entities`): by key, and by
    # case-folded name (one node per name).
    stored_keys: set[str] = field(default_factory=set)
    by_name: dict[str, str] = field(default_factory=dict)
    pending: list[tuple[int, MentionRow]] = field(default_factory=list)  # (line, mention) written per batch
    # The memories this import wrote in the scope, when the file's origins are not kept: the only
    # ones its history, link and mention lines may change. None: the origins are kept (any memory).
    brought: set[str] | None = None


def _history_sig(memory_key: str, entry: dict[str, Any]) -> tuple[str, int, str, str]:
    return (
        memory_key,
        int(entry.get("version") or 0),
        str(entry.get("change")),
        str(jsonable(entry.get("changed_at"))),
    )


def _import_deferred(run: _Run, deferred: list[tuple[int, dict]]) -> None:
    """History, graph and links, after the memories they point at exist.

    Each line is checked (ids, text through the store's checks and redaction, weights,
    dates) without the lock; then DEFERRED_BATCH lines are applied per lock hold.
    Idempotent: a history entry (memory, version, change, time), entity, mention, relation
    or link already present is not written again; rows keep their own timestamps, so a
    re-export of an import equals the export.
    """
    state: dict[str, _ScopeImport] = {}
    checked: list[tuple[int, str, str, dict[str, Any]]] = []
    for n, obj in deferred:
        try:
            scope = run.scope_of(obj)
            item = _CHECKERS[obj["kind"]](obj, run.findings)
            if obj["kind"] == "history" and not run.keep_origins and "source" in item["snapshot"]:
                item["snapshot"]["source"] = as_imported(item["snapshot"]["source"], run.path)
            checked.append((n, scope, obj["kind"], item))
        except InvalidInput as exc:
            run.reject(n, exc.message, exc.field)
    total = len(checked)
    batch = DEFERRED_BATCH
    i = 0
    while i < total:
        part = checked[i : i + batch]
        with run.access.lock:
            started = time.perf_counter()
            for scope in {scope for _n, scope, _k, _item in part} - state.keys():
                h = run.handle(scope)
                state[scope] = _ScopeImport({_history_sig(e.memory, e.record()) for e in h.repo.all_history()})
                if not run.keep_origins:
                    state[scope].brought = run.created.get(scope, set())
                _stored_entities(h, checked, scope, state[scope])
                state[scope].mentions = _stored_mentions(h, checked, scope, state[scope])
            for n, scope, kind, item in part:
                try:
                    run.counts[kind] += _APPLIERS[kind](run.handle(scope), item, state[scope])
                except InvalidInput as exc:
                    if isinstance(exc, _NotBrought):
                        run.refused[kind] = run.refused.get(kind, 0) + 1
                    run.reject(n, exc.message, exc.field)
            for scope, st in state.items():
                _flush_mentions(run, run.handle(scope), st)
            held = time.perf_counter() - started
        i += len(part)
        batch = next_batch(batch, len(part), held, WRITE_LOCK_BUDGET_MS, DEFERRED_BATCH, MAX_WRITE_BATCH)
        give_way(run)
        run.tick(i, total, "graph")


MENTION_PREFETCH = 1000  # entities (or entity keys) per query when reading what the store already has


def _stored_mentions(
    h: ScopeHandle, checked: list[tuple[int, str, str, dict[str, Any]]], scope: str, st: "_ScopeImport"
) -> set:
    """The stored mentions of every entity the file's lines name in `scope` (by their keys here
    and the nodes their names map to), read by entity: the `mentions_out` index answers it in
    one query per MENTION_PREFETCH entities, where asking by memory read every mention again for
    each chunk of memories (a no-change re-import of 20,000 took a minute)."""
    entities = {item["entity_key"] for _n, s, kind, item in checked if kind == "mention" and s == scope}
    entities |= st.stored_keys | set(st.by_name.values())
    keys = sorted(entities)
    out: set[tuple[str, str, str]] = set()
    for start in range(0, len(keys), MENTION_PREFETCH):
        out |= {
            (m.memory, m.entity, m.relationship)
            for m in h.repo.mentions_of_entities(keys[start : start + MENTION_PREFETCH])
        }
    return out


def _stored_entities(
    h: ScopeHandle, checked: list[tuple[int, str, str, dict[str, Any]]], scope: str, st: "_ScopeImport"
) -> None:
    """The existing nodes of the file's entity lines, by key and by name, in a few queries."""
    items = [item for _n, s, kind, item in checked if kind == "entity" and s == scope]
    if not items:
        return
    keys = sorted({item["key"] for item in items})
    for start in range(0, len(keys), MENTION_PREFETCH):
        st.stored_keys |= {row.key for row in h.repo.entities(keys[start : start + MENTION_PREFETCH])}
    st.by_name = {k: row.key for k, row in find_entities(h, [item["name"] for item in items]).items()}


def _flush_mentions(run: _Run, h: ScopeHandle, st: "_ScopeImport") -> None:
    """The batch's new mentions and one count update per entity, in one request (a request
    costs ~5 ms in the engine: one per mention made 2,000 mentions take 10 s)."""
    pending, st.pending = st.pending, []
    bumps, st.bumps = st.bumps, {}
    if not pending and not bumps:
        return
    try:
        with h.repo.atomic() as tx:
            tx.import_mentions(mention for _n, mention in pending)
            for key, n in bumps.items():
                tx.bump_mentions(key, n)
    except InvalidInput:  # find the one the engine refused; keep the others
        for n, mention in pending:
            try:
                h.repo.import_mention(mention)
            except InvalidInput as exc:
                run.reject(n, exc.message, exc.field)
        for key, count in bumps.items():
            h.repo.bump_mentions(key, count)


def _when(value: Any, field_name: str) -> datetime:
    """An exported timestamp (checked), or now for files that carry none."""
    return parse_time(value, field_name) or now_dt()


def _memory_key(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a memory id", field=name)
    return parse_memory_id(value, field=name)


def _entity_key(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not ENTITY_KEY_RE.match(value):
        raise InvalidInput(f"{name} must be an entity key (letters, digits, _ and -, at most 64)", field=name)
    return value


def _check_history(obj: dict, findings: list) -> dict[str, Any]:
    entry = obj.get("entry")
    if not isinstance(entry, dict):
        raise InvalidInput("entry must be an object", field="entry")
    key = _memory_key(obj, "memory_id")
    change = check_text(entry.get("change"), "entry.change", limit=MAX_HISTORY_CHANGE_CHARS)
    snapshot = entry.get("snapshot")
    if snapshot is not None and not isinstance(snapshot, dict):
        raise InvalidInput("entry.snapshot must be an object", field="entry.snapshot")
    out = {
        "memory_key": key,
        "version": check_int(entry.get("version"), "entry.version", default=0),
        "change": sanitize_text(change, findings),
        "changed_at": _when(entry.get("changed_at"), "entry.changed_at"),
        "snapshot": _checked_snapshot(snapshot or {}, findings),
        "sig": None,
    }
    out["sig"] = _history_sig(key, {**entry, "version": out["version"]})
    return out


_SNAPSHOT_TEXTS = {
    "content": MAX_CONTENT_CHARS,
    "summary": MAX_REASON_CHARS,
    "forget_reason": MAX_REASON_CHARS,
    "session_id": MAX_REASON_CHARS,
}


def _checked_snapshot(snapshot: dict[str, Any], findings: list) -> dict[str, Any]:
    """A history snapshot: an earlier version of a record, so the record's checks, field by
    field where present (old versions may predate a field), every string redacted.

    The lengths and sizes are checked before anything is redacted (the texts' limits, the tag
    list's, and `clean_object`'s bound on the rest): redaction costs about 1 s per million
    characters, and a 4 MB line must not cost that to be refused."""
    for name, limit in _SNAPSHOT_TEXTS.items():
        if snapshot.get(name) is not None:
            check_text(snapshot[name], f"entry.snapshot.{name}", limit=limit, required=False)
    tags = clean_tags(snapshot.get("tags"), findings, "entry.snapshot.tags") if "tags" in snapshot else None
    if "metadata" in snapshot:
        snapshot = {**snapshot, "metadata": trim_recall_sessions(snapshot["metadata"])}
    if tags is not None:  # checked above; in place, so the snapshot keeps its fields' order
        snapshot = {**snapshot, "tags": tags}
    out = clean_object(
        {k: v for k, v in snapshot.items() if k not in MEMORY_TIME_FIELDS and k != "embedding"},
        findings,
        "entry.snapshot",
    )
    for name, limit in _SNAPSHOT_TEXTS.items():
        if name in out and out[name] is not None:
            out[name] = check_text(out[name], f"entry.snapshot.{name}", limit=limit, required=False)
    if tags is not None:
        out["tags"] = tags
    for name in MEMORY_TIME_FIELDS:
        if snapshot.get(name) is not None:
            out[name] = parse_time(snapshot[name], f"entry.snapshot.{name}")
    return out


def _apply_history(h: ScopeHandle, item: dict[str, Any], st: _ScopeImport) -> int:
    if item["sig"] in st.history:
        return 0
    if h.index.slot_of(item["memory_key"]) is None:
        raise InvalidInput(f"memory:{item['memory_key']} is neither in this file nor in the store", field="memory_id")
    _brought(st, item["memory_key"], "history", "memory_id")
    st.history.add(item["sig"])
    h.repo.add_history(
        item["memory_key"],
        version=item["version"],
        change=item["change"],
        snapshot=item["snapshot"],
        changed_at=item["changed_at"],
    )
    return 1


def _check_entity(obj: dict, findings: list) -> dict[str, Any]:
    rec = obj.get("record") or {}
    if not isinstance(rec, dict):
        raise InvalidInput("record must be an object", field="record")
    key = _entity_key(obj, "key")
    name = clean_free_text(
        rec.get("name") if rec.get("name") is not None else key,
        findings,
        "record.name",
        limit=MAX_NAME_CHARS,
        required=True,
    )
    return {
        "key": key,
        "name": " ".join(name.split()),
        "entity_type": clean_free_text(
            rec.get("entity_type") or "concept", findings, "record.entity_type", limit=MAX_NAME_CHARS, required=True
        ),
        "description": clean_free_text(
            rec.get("description") or "", findings, "record.description", limit=MAX_DESCRIPTION_CHARS
        )
        or "",
        "mention_count": check_int(rec.get("mention_count"), "record.mention_count", default=0),
        "created_at": _when(rec.get("created_at"), "record.created_at"),
        "updated_at": _when(rec.get("updated_at"), "record.updated_at"),
    }


def _apply_entity(h: ScopeHandle, item: dict[str, Any], st: _ScopeImport) -> int:
    """Create the entity with its own timestamps, or map it onto the node this store
    already has for the name (one node per case-folded name)."""
    key = item["key"]
    if key in st.entity_keys:  # the same node twice in one file
        return 0
    # the nodes this store has for the file's keys and names, read in bulk (`_stored_entities`)
    stored = key if key in st.stored_keys else st.by_name.get(name_key(item["name"]))
    if stored is not None:
        _map_entity(st, key, stored)
        return 0
    record = {k: v for k, v in item.items() if k != "key"}
    record["name_key"] = name_key(item["name"])
    h.repo.import_entity(key, record)
    _map_entity(st, key, key)
    st.by_name[record["name_key"]] = key
    st.created_entities.add(key)
    return 1


def _map_entity(st: _ScopeImport, key: str, stored: str) -> None:
    st.entity_keys[key] = stored
    st.mapped_entities.add(stored)


def _check_mention(obj: dict, findings: list) -> dict[str, Any]:
    return {
        "memory_key": _memory_key(obj, "memory_id"),
        "entity_key": _entity_key(obj, "entity_key"),
        "relationship": clean_free_text(
            obj.get("relationship") or "mentions", findings, "relationship", limit=MAX_NAME_CHARS, required=True
        ),
        "created_at": _when(obj.get("created_at"), "created_at"),
    }


def _existing_entity(h: ScopeHandle, st: _ScopeImport, key: str, field_name: str) -> str:
    ekey = st.entity_keys.get(key, key)
    if ekey not in st.mapped_entities:
        if h.repo.entity(ekey) is None:
            raise InvalidInput(f"entity {key} is neither in this file nor in the store", field=field_name)
        st.mapped_entities.add(ekey)
    return ekey


def _apply_mention(h: ScopeHandle, item: dict[str, Any], st: _ScopeImport) -> int:
    if h.index.slot_of(item["memory_key"]) is None:
        raise InvalidInput(f"memory:{item['memory_key']} is neither in this file nor in the store", field="memory_id")
    ekey = _existing_entity(h, st, item["entity_key"], "entity_key")
    rel = item["relationship"]
    sig = (item["memory_key"], ekey, rel)
    if sig in st.mentions:
        return 0
    _brought(st, item["memory_key"], "mention", "memory_id")
    st.pending.append((item.get("n", 0), MentionRow(item["memory_key"], ekey, rel, item["created_at"])))
    st.mentions.add(sig)
    if ekey not in st.created_entities:  # a node this import did not bring: count the new mention
        st.bumps[ekey] = st.bumps.get(ekey, 0) + 1
    return 1


def _check_relation(obj: dict, findings: list) -> dict[str, Any]:
    return {
        "from": _entity_key(obj, "from"),
        "to": _entity_key(obj, "to"),
        "relation_type": clean_free_text(
            obj.get("relation_type"), findings, "relation_type", limit=MAX_NAME_CHARS, required=True
        ),
        "weight": check_weight(obj.get("weight"), "weight", 0.5),
        "evidence": clean_evidence(obj.get("evidence"), findings),
        "created_at": _when(obj.get("created_at"), "created_at"),
    }


def _apply_relation(h: ScopeHandle, item: dict[str, Any], st: _ScopeImport) -> int:
    a = _existing_entity(h, st, item["from"], "from")
    b = _existing_entity(h, st, item["to"], "to")
    if h.repo.find_relation(a, b, item["relation_type"]) is not None:
        return 0
    if st.brought is not None and a not in st.created_entities and b not in st.created_entities:
        # both nodes were in the store before: the relation would change the user's own graph
        raise _NotBrought(
            f"relation between entities {item['from']} and {item['to']}, which this import did not bring: "
            f"{NOT_BROUGHT_HINT}",
            field="from",
        )
    h.repo.import_relation(
        RelationRow(a, b, item["relation_type"], item["weight"], tuple(item["evidence"]), item["created_at"])
    )
    return 1


def _check_link(obj: dict, findings: list) -> dict[str, Any]:
    return {
        "from": _memory_key(obj, "from"),
        "to": _memory_key(obj, "to"),
        "relation_type": check_enum(obj.get("relation_type"), LINK_TYPES, "relation_type"),
        "strength": check_weight(obj.get("strength"), "strength", 0.5),
        "created_at": _when(obj.get("created_at"), "created_at"),
    }


def _apply_link(h: ScopeHandle, item: dict[str, Any], st: _ScopeImport) -> int:
    for end in ("from", "to"):
        if h.index.slot_of(item[end]) is None:
            raise InvalidInput(f"memory:{item[end]} is neither in this file nor in the store", field=end)
    if h.repo.has_link(item["from"], item["to"], item["relation_type"]):
        return 0
    for end in ("from", "to"):
        _brought(st, item[end], "link", end)
    h.repo.import_link(LinkRow(item["from"], item["to"], item["relation_type"], item["strength"], item["created_at"]))
    if item["relation_type"] == "supersedes":
        h.index.mark_superseded(item["to"], item["from"])
    return 1


NOT_BROUGHT_HINT = (
    "a file whose origins are not kept changes only the memories it brings (line left out; "
    "if the file is your own backup, import it again with --keep-origins)"
)
REFUSED_WHY = (
    "history, link, mention and relation lines that named memories (or entities) already in the store "
    "were left out: import ids are predictable, so a file this engram did not sign could otherwise hide "
    "your memories behind its own (supersedes) or give them versions you never wrote. If the file is "
    "your own backup, import it again with --keep-origins"
)


class _NotBrought(InvalidInput):
    """A line of a file whose origins are not kept that would change a memory it did not bring."""


def _brought(st: _ScopeImport, key: str, kind: str, field_name: str) -> None:
    """Refuse a `kind` line that would change memory `key` when the file's origins are not kept
    and this import did not write that memory: `engram sync`'s rule for team files (a file only
    replaces another file's memory), for an export nobody vouches for."""
    if st.brought is not None and key not in st.brought:
        raise _NotBrought(
            f"{kind} line names memory:{key}, which this import did not bring: {NOT_BROUGHT_HINT}", field=field_name
        )


_CHECKERS: dict[str, Callable[[dict, list], dict[str, Any]]] = {
    "history": _check_history,
    "entity": _check_entity,
    "mention": _check_mention,
    "relation": _check_relation,
    "link": _check_link,
}
_APPLIERS: dict[str, Callable[[ScopeHandle, dict[str, Any], _ScopeImport], int]] = {
    "history": _apply_history,
    "entity": _apply_entity,
    "mention": _apply_mention,
    "relation": _apply_relation,
    "link": _apply_link,
}


def reindex(
    access: ScopeAccess,
    ctx: RequestContext,
    *,
    scopes: tuple[str, ...] = DEFAULT_SCOPES,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Embed memories stored without a vector (model was missing) or with another model.

    As import: the rows are read under the lock, embedded outside it (the next chunk in a
    worker thread while this one is written), and each chunk is written back under it,
    re-read first so an edit made meanwhile is not overwritten.
    """
    model = access.model_name
    done, failed = 0, 0

    def embed(rows: list[dict[str, Any]]) -> tuple[np.ndarray | None, str | None]:
        return access.embed_documents([r["content"] for r in rows])

    for scope, h in access.try_scopes(ctx, scopes):
        if isinstance(h, StoreUnavailable):
            raise h
        with access.lock:
            # the derived index knows which live memories lack a vector of this model: no table scan under the lock
            keys = sorted(k for k in (h.index.key_of(s) for s in list(h.index.without_vector)) if k)
        chunks = [keys[i : i + EMBED_BATCH] for i in range(0, len(keys), EMBED_BATCH)]
        if not chunks:
            continue
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-reindex-embed") as pool:
            with access.lock:
                rows = h.repo.get_many(chunks[0])
            pending = pool.submit(embed, rows)
            for i in range(len(chunks)):
                vecs, _warning = pending.result()
                if vecs is None:
                    failed += len(keys) - i * EMBED_BATCH
                    break
                if i + 1 < len(chunks):
                    with access.lock:
                        following = h.repo.get_many(chunks[i + 1])
                    pending = pool.submit(embed, following)
                done += backfill.write_vectors(access, h, rows, vecs, model)
                if progress:
                    progress(min((i + 1) * EMBED_BATCH, len(keys)), len(keys), f"reindex {scope}")
                if i + 1 < len(chunks):
                    rows = following
    return {"reindexed": done, "failed": failed, "model": model}
