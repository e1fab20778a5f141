"""Three-way sync between one scope of the store and a folder of memory files.

For every shared memory the state file remembers what the last sync saw on each side (a
fingerprint of the file and one of the local memory). Comparing each side with that base
says who changed: only the file -> apply it to the store (store, update or forget, through
the service's own operations, so redaction, dedup, supersession and history apply as for
any write); only the store -> write the file (or delete it); both -> a conflict, reported
with both texts, and neither side is touched until someone resolves it. One file per memory
means two people changing different memories never meet, in git or in a synced folder.

The folder is untrusted input (a cloned repository, a folder someone else can write): each
file is read under bounds, within the caller's time budget, checked per file before it is
parsed; a file that cannot be read, parsed or trusted (git conflict markers, a sync tool's
conflicted copy, an id another file also claims) is reported by path and left alone, and the
others are still applied. A file's memory is stored exactly as written, never merged into a
private memory or another file's (a later write-back would publish the private text), and it
records where it came from: the file, and the last commit and author touching it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeGuard

from engram_mcp.core.errors import EngramError, InvalidInput, StoreUnavailable
from engram_mcp.core.ids import format_memory_id
from engram_mcp.core.sensitivity import is_sensitive
from engram_mcp.core.vocabulary import DURABLE_TYPES
from engram_mcp.index.scope_index import record_key
from engram_mcp.services import edit, records
from engram_mcp.services import store as store_ops

from . import provenance
from .folder import Folder, StateFile
from .memory_file import (
    SharedMemory,
    derived_ulid,
    file_name_for,
    has_conflict_markers,
    parse,
    redacted,
    render,
)

if TYPE_CHECKING:
    from engram_mcp.services.access import RequestContext, ScopeAccess

log = logging.getLogger("engram.sharing")
DELETED = "deleted"  # the fingerprint of a side that no longer holds the memory
READ_PAGE = 100  # memories read per lock hold
READ_SHARE = 0.5  # of a time budget, the most reading and parsing the files may take
#: New files embedded in one call (`Sync._batches`): below the embedder's bulk-session size (16),
#: so a session start's batches run on one core and another project's query keeps the other.
EMBED_BATCH_FILES = 8
EMBED_BATCH_CHARS = 8_000  # characters a batch embeds (each text counted up to EMBED_HEAD_CHARS)
EMBED_HEAD_CHARS = 4_096  # what the model reads of a text at most, about (256 word pieces)
FEW_MEMORIES = 32  # up to this many, links are read per memory instead of for the whole scope
#: Bytes of files one budgeted run (a session start) reads at most; the rest waits.
BUDGET_READ_MAX_BYTES = 8 * 1024 * 1024
#: Seconds a budgeted run waits for another sync of the same folder before it leaves the work to it.
BUSY_WAIT_S = 0.5
#: Bytes of files any run holds at most (3,000 memories are ~3 MB; a hostile folder is not read whole).
READ_MAX_BYTES = 64 * 1024 * 1024
#: Seconds `git log` may take to name the authors of the files (less when the budget is short).
GIT_LOG_TIMEOUT_S = 2.0
#: Names that sync tools give the second version of a file they could not merge (Dropbox and
#: Nextcloud "conflicted copy", Syncthing ".sync-conflict-"): stale text, never applied.
CONFLICT_COPY_RE = re.compile(r"conflicted copy|\.sync-conflict-|\(conflict\)|\(case conflict\)", re.I)
#: `source.kind` of memories that arrived from a file (and the names older versions wrote).
FILE_SOURCE_KINDS = frozenset({"team-file", "user-sync", "team-memory", "user-mirror"})
_SYNC_LOCKS: dict[str, threading.Lock] = {}
_SYNC_LOCKS_GUARD = threading.Lock()


@dataclass
class Target:
    """One folder synced with one scope: which memories go, and where the base is kept."""

    scope: str
    folder: Folder
    state: StateFile
    label: str  # how reports name the folder (a path relative to the project, or the DIR)
    mirror_all: bool  # the user mirror sends every live memory; a project only what was shared
    source_kind: str  # recorded in `source` of memories that arrive from files
    auto_share: dict[str, Any] | None = None  # {min_importance, types}: also share what matches
    #: How a person resolves a conflict here: a command that works for this scope.
    resolve: str = (
        "edit the file or the memory so both say the same, or run `engram share ID` to keep the local version"
    )


#: The advice for a team file whose id names a project memory that never came from a file: the
#: two are different memories; the file gets a new id. Sharing the local memory would publish it.
PRIVATE_CLAIM_RESOLVE = (
    "this project's memory with that id did not come from a file and stays private (untouched, not "
    "shared): give the file a new id (remove its `id:` line) so its text arrives as a memory of its own"
)


@dataclass
class Report:
    """What a sync did, in lists a person can read and a test can check."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    redactions: list[dict[str, Any]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # files left for the next sync (time budget spent)
    #: One entry per memory added or changed from a file: {memory_id, path, change, author?, commit?}.
    arrivals: list[dict[str, Any]] = field(default_factory=list)
    #: Memories marked sensitive (core/sensitivity.py) a write would have published: never written.
    withheld: list[str] = field(default_factory=list)

    def as_dict(self, label: str) -> dict[str, Any]:
        out: dict[str, Any] = {"folder": label}
        for name in (
            "added",
            "updated",
            "forgotten",
            "written",
            "deleted_files",
            "conflicts",
            "errors",
            "redactions",
            "pending",
        ):
            out[name] = getattr(self, name)
        out["counts"] = {k: len(v) for k, v in out.items() if isinstance(v, list)}
        out["arrivals"] = self.arrivals
        if self.withheld:
            out["withheld_sensitive"] = self.withheld
        return out


def _lock_for(target: Target) -> threading.Lock:
    """One sync of a folder at a time in this process (a session start and `engram sync` may race)."""
    key = str(target.folder.path)
    with _SYNC_LOCKS_GUARD:
        return _SYNC_LOCKS.setdefault(key, threading.Lock())


# ---------------------------------------------------------------------- local side
def read_local(
    access: "ScopeAccess", ctx: "RequestContext", scope: str, keys: set[str] | None, *, with_links: bool = True
) -> dict[str, dict[str, Any]]:
    """Rows of `scope` by key (`keys`, or every memory of the scope when None), with
    `_supersedes`: the keys each one replaces (not read when `with_links` is False: a memory just
    stored from a file has none yet). Read in pages under the service lock."""
    with access.lock:
        h = access.handle(ctx, scope)
        wanted = sorted(h.index.keys() if keys is None else (k for k in keys if h.index.slot_of(k) is not None))
    rows: dict[str, dict[str, Any]] = {}
    for i in range(0, len(wanted), READ_PAGE):
        page = wanted[i : i + READ_PAGE]
        with access.lock:
            for row in h.repo.get_many(page):
                rows[record_key(row)] = dict(row, _supersedes=[])
    if not with_links:
        return rows
    with access.lock:
        if len(rows) <= FEW_MEMORIES:  # a few: their own links, not the scope's
            links = [link for k in rows for link in h.repo.links_of(k) if link.src == k]
        else:
            links = h.repo.all_links()
    for link in links:
        if link.relation_type == "supersedes" and link.src in rows:
            rows[link.src]["_supersedes"].append(link.dst)
    return rows


def _is_live(row: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    return row is not None and row.get("status") != "forgotten"


def as_shared(row: dict[str, Any], file_id: str, to_file_id: Callable[[str], str]) -> SharedMemory:
    """A local row in the shared form, under the id its file carries."""
    created = row.get("created_at")
    return SharedMemory(
        memory_id=file_id,
        content=str(row.get("content") or ""),
        memory_type=str(row.get("memory_type") or "semantic"),
        importance=float(row.get("importance", 0.5)),
        tags=tuple(row.get("tags") or ()),
        category=row.get("category"),
        summary=row.get("summary"),
        supersedes=tuple(sorted(to_file_id(k) for k in row.get("_supersedes") or ())),
        created_at=created.isoformat() if isinstance(created, datetime) else (str(created) if created else None),
        extra={"sensitive": True} if is_sensitive(row) else {},  # never rendered: write_file refuses it
    )


# ---------------------------------------------------------------------- the sync
class _Sync:
    """One run: the state, both sides, and the report being filled."""

    def __init__(
        self,
        access: "ScopeAccess",
        ctx: "RequestContext",
        target: Target,
        pull_only: bool,
        budget_s: float | None = None,
    ) -> None:
        self.access, self.ctx, self.t, self.pull_only = access, ctx, target, pull_only
        self.deadline = None if budget_s is None else time.monotonic() + budget_s
        # reading and parsing get at most READ_SHARE of a budget, so a session start always
        # applies some files (10,000 files took the whole budget to parse, and none was applied)
        self.read_deadline = None if budget_s is None else time.monotonic() + budget_s * READ_SHARE
        self.report = Report()
        self.entries = target.state.load()
        self.files: dict[str, tuple[str, SharedMemory]] = {}
        self.bad_names: set[str] = set()
        self.pending_seen: set[str] = set()
        self.held: set[str] = set()  # ids that files left alone claim: never applied, never deletions
        self.partial = False  # some files were not read (budget, too many): no deletions this run
        self._origins: dict[str, dict[str, str]] | None = None
        self.supersede_todo: list[tuple[str, tuple[str, ...]]] = []
        self.dropped: set[str] = set()  # local keys whose shared file went away in this run

    # -- ids between the two sides
    def to_file_id(self, key: str) -> str:
        for fid, e in self.entries.items():
            if e.get("key") == key:
                return fid
        return key

    def to_local_key(self, fid: str) -> str:
        return str(self.entries.get(fid, {}).get("key") or fid)

    def run(self) -> Report:
        self._read_files()
        self._unmerge_private()
        self._match_renames()
        self.local = read_local(self.access, self.ctx, self.t.scope, self._local_keys())
        arrived = sorted(set(self.files) - set(self.entries))  # before _known drops deleted entries
        for fid in sorted(self.entries):
            if not self._out_of_time(fid):
                self._guarded(self._known, fid)
        for batch in self._batches(arrived):
            with store_ops.embedded_beforehand(self._embed(batch)):
                for fid in batch:
                    if not self._out_of_time(fid):
                        self._guarded(self._arrived, fid)
        if self.t.mirror_all and not self.pull_only:
            self._send_new_local()
        elif self.t.auto_share and not self.pull_only:
            self._share_by_rule(self.t.auto_share)
        self._apply_supersessions()
        self.t.state.save(self.entries)
        return self.report

    def _batches(self, arrived: list[str]) -> Iterator[list[str]]:
        """The new files in batches embedded together: at most EMBED_BATCH_FILES files and
        EMBED_BATCH_CHARS characters (a long body alone), so a batch's embedding is short beside
        the time budget and never loads both cores for long (another project's recall)."""
        batch: list[str] = []
        chars = 0
        for fid in arrived:
            size = min(len(self.files[fid][1].content), EMBED_HEAD_CHARS)
            if batch and (len(batch) >= EMBED_BATCH_FILES or chars + size > EMBED_BATCH_CHARS):
                yield batch
                batch, chars = [], 0
            batch.append(fid)
            chars += size
        if batch:
            yield batch

    def _embed(self, batch: list[str]) -> dict[str, Any]:
        """{cleaned text: vector} of a batch's files, embedded in one call outside the write lock
        (`store_ops.embedded_beforehand`); empty past the budget or when embedding fails (each
        store then embeds its own, or stores without a vector, as before)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return {}
        cleaned = set()
        for fid in batch:
            try:
                cleaned.add(records.clean_content(self.files[fid][1].content, []))
            except Exception:  # noqa: BLE001, S112 - its store reports it, against its file
                continue
        texts = sorted(cleaned)
        if len(texts) < 2:
            return {}
        try:
            vectors, _warning = self.access.embed_documents(texts)
        except Exception:  # noqa: BLE001 - each store embeds its own text then
            return {}
        return {} if vectors is None else dict(zip(texts, vectors, strict=True))

    def _guarded(self, step: Callable[[str], None], fid: str) -> None:
        """One memory's step; a refusal of the service (a purged memory, too many tags) is
        reported against its file and the sync goes on. An unavailable store stops the sync."""
        try:
            step(fid)
        except StoreUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - one file's failure is reported; the others still apply
            name = self.files[fid][0] if fid in self.files else self.entries.get(fid, {}).get("path")
            if not isinstance(exc, EngramError):
                log.warning("sync of %s/%s failed", self.t.label, name, exc_info=True)
            message = exc.message if isinstance(exc, EngramError) else f"cannot be applied ({type(exc).__name__})"
            self.report.errors.append({"path": f"{self.t.label}/{name}", "error": f"{self.t.label}/{name}: {message}"})

    def _out_of_time(self, fid: str) -> bool:
        """Past the time budget (a session start must not wait for a large first sync): the
        file is left for the next sync, and the state keeps what was done so far."""
        if self.deadline is None or time.monotonic() < self.deadline:
            return False
        name = self.files[fid][0] if fid in self.files else self.entries.get(fid, {}).get("path")
        path = f"{self.t.label}/{name}"
        if path not in self.pending_seen:  # an unread file is already listed
            self.pending_seen.add(path)
            self.report.pending.append(path)
        return True

    def _read_files(self) -> None:
        """Read and parse the folder's files, each checked against the budget before it is
        read and before it is parsed; what is not reached is pending, never a deletion."""
        budgeted = self.deadline is not None
        reading = self.t.folder.read_within(
            deadline=self.read_deadline, max_total_bytes=BUDGET_READ_MAX_BYTES if budgeted else READ_MAX_BYTES
        )
        self.partial = bool(reading.unread) or reading.too_many
        if budgeted:
            self.report.pending.extend(f"{self.t.label}/{n}" for n in reading.unread)
            self.pending_seen.update(self.report.pending)
        elif reading.unread:  # a folder of memory files is a few MB: this much is no memory folder
            self.report.errors.append(
                {
                    "path": self.t.label,
                    "error": f"{self.t.label}: more than {READ_MAX_BYTES // (1024 * 1024)} MB of files; "
                    f"{len(reading.unread)} files were left alone",
                }
            )
        if reading.too_many:
            self.report.errors.append(
                {"path": self.t.label, "error": f"{self.t.label}: too many files; only the first ones were read"}
            )
        claims: dict[str, list[tuple[str, SharedMemory]]] = {}
        text_keys: dict[str, str] = {}  # file name -> its parse key: the secrets count is remembered by it
        for ft in reading.files:
            path = f"{self.t.label}/{ft.name}"
            if self.read_deadline is not None and time.monotonic() >= self.read_deadline:
                self.partial = True
                self.report.pending.append(path)
                self.pending_seen.add(path)
                continue
            mem = self._parse_one(ft.name, ft.text, ft.error)
            if mem is not None:
                claims.setdefault(mem.memory_id, []).append((ft.name, mem))
                text_keys[ft.name] = _text_key(ft.name, ft.text or "")
        for fid, claimants in claims.items():
            if len(claimants) > 1 or CONFLICT_COPY_RE.search(claimants[0][0]):
                self._claimed_twice(claimants)
                self.held.add(fid)  # its memory is left as it is, whatever the entry's file name says
                continue
            name, mem = claimants[0]
            self.files[fid] = (name, mem)
            found = _secrets_in(mem, text_keys.get(name))
            if found:
                self.report.redactions.append(
                    {
                        "path": f"{self.t.label}/{name}",
                        "secrets": found,
                        "message": "the file holds secrets; they were redacted in the store, remove them from the file",
                    }
                )

    def _parse_one(self, name: str, text: str | None, error: str | None) -> SharedMemory | None:
        """One file's memory, or None with the reason reported (a bad file never stops the others)."""
        path = f"{self.t.label}/{name}"
        if text is None:
            self._bad(name, f"{path}: {error}")
            return None
        if has_conflict_markers(text):
            self._file_conflict(
                name, "holds git conflict markers (<<<<<<< ... >>>>>>>) from an unfinished merge; resolve them"
            )
            return None
        try:
            return _parsed(text, name, path)
        except InvalidInput as exc:
            self._bad(name, f"{path}: {exc.message}")
        except (Exception, RecursionError) as exc:  # noqa: BLE001 - a parser bug is still one file
            self._bad(name, f"{path}: cannot be read ({type(exc).__name__})")
        return None

    def _claimed_twice(self, claimants: list[tuple[str, SharedMemory]]) -> None:
        """Two files with one id (a copy, a sync tool's conflicted copy): neither can be told
        the real one, so both are left alone and reported until one is removed or re-identified."""
        names = [n for n, _m in claimants]
        for name in names:
            others = ", ".join(f"{self.t.label}/{o}" for o in names if o != name)
            if CONFLICT_COPY_RE.search(name):
                why = "is a sync tool's conflicted copy; merge what it adds into the original file and delete it"
            else:
                why = f"has the same id as {others}; delete one or give one a new id"
            self._file_conflict(name, why, memory_id=format_memory_id(claimants[0][1].memory_id))

    def _file_conflict(self, name: str, why: str, *, memory_id: str | None = None) -> None:
        """A file that must be resolved by a person: a conflict, left alone (never a deletion)."""
        self.bad_names.add(name)
        self.report.conflicts.append(
            {
                "memory_id": memory_id,
                "path": f"{self.t.label}/{name}",
                "file": None,
                "local": None,
                "reason": why,
                "resolve": f"fix {self.t.label}/{name}, then run the sync again",
            }
        )

    def _unmerge_private(self) -> None:
        """A state written before files were stored apart may map a file to a private memory
        it was merged into (its key is not the file's id, and the memory did not come from a
        file). Writing that memory back would publish the private text, so the mapping is
        dropped: the file arrives again, stored as written, and the private memory stays private."""
        odd = {fid: str(e.get("key")) for fid, e in self.entries.items() if str(e.get("key")) != fid}
        if not odd:
            return
        rows = read_local(self.access, self.ctx, self.t.scope, set(odd.values()))
        for fid, key in odd.items():
            source = (rows.get(key) or {}).get("source")
            kind = source.get("kind") if isinstance(source, dict) else None
            if key in rows and kind not in FILE_SOURCE_KINDS:
                self.entries.pop(fid, None)

    def _match_renames(self) -> None:
        """A hand-written file without `id:` takes its id from its name, so a rename looks like
        a new file and a vanished one. When the vanished file's body is the new file's, it is
        the same memory: its state entry moves to the new name and the memory keeps its key,
        history and strength (instead of forget + add)."""
        if self.partial:
            return
        vanished = {
            e.get("body") or e.get("file"): fid
            for fid, e in self.entries.items()
            if fid not in self.files and fid not in self.held and e.get("path") not in self.bad_names
        }
        for fid, (name, mem) in sorted(self.files.items()):
            if fid in self.entries or not mem.id_from_name:
                continue
            old = vanished.pop(body_hash(mem.content), None) or vanished.pop(mem.fingerprint(), None)
            if old is not None and old in self.entries:
                self.entries[fid] = {**self.entries.pop(old), "path": name}

    def origin(self, name: str | None) -> dict[str, str]:
        """The last commit touching the file and its author (read once per run, time-boxed)."""
        if self._origins is None:
            timeout = GIT_LOG_TIMEOUT_S
            if self.deadline is not None:
                timeout = min(timeout, max(0.0, (self.deadline - time.monotonic()) / 3))
            self._origins = provenance.last_commits(self.t.folder.path, timeout_s=timeout)
        return dict(self._origins.get(name or "", {}))

    def _repository(self) -> dict[str, str]:
        """The repository a team file came from (its directory's name), kept in the memory's
        origin: once the memory is promoted to the user scope, another project's context must
        name the repository the text came from, not the one open at the time."""
        if self.t.scope != "project":
            return {}
        name = provenance.clean_text(Path(self.ctx.project_root).name, 80)
        return {"project": name} if name else {}

    def _source_path(self, name: str | None) -> str:
        """The file's path as a memory records it: printable, bounded (a file name is untrusted)."""
        return provenance.clean_text(f"{self.t.label}/{name}", provenance.MAX_PATH_CHARS)

    def _arrival(self, key: str, name: str | None, change: str) -> None:
        self.report.arrivals.append(
            {
                "memory_id": format_memory_id(key),
                "path": f"{self.t.label}/{name}",
                "change": change,
                **self.origin(name),
            }
        )

    def _bad(self, name: str, message: str) -> None:
        self.bad_names.add(name)
        self.report.errors.append({"path": f"{self.t.label}/{name}", "error": message})

    # -- a memory both sides knew at the last sync
    def _file_fp(self, fid: str) -> str:
        return self.files[fid][1].fingerprint() if fid in self.files else DELETED

    def _local_keys(self) -> set[str] | None:
        """The local memories this run must read: all of the scope for a mirror; a file's
        memory for a project; and when only applying (a session start), only those whose file
        changed, so 3,000 unchanged files cost no store reads."""
        if self.t.mirror_all:
            return None
        if self.pull_only:
            changed = {str(e.get("key")) for fid, e in self.entries.items() if self._file_fp(fid) != e.get("file")}
            return changed | (set(self.files) - set(self.entries))
        return {str(e.get("key")) for e in self.entries.values()} | set(self.files)

    def _known(self, fid: str) -> None:
        e = self.entries[fid]
        if fid not in self.files and (self.partial or fid in self.held or e.get("path") in self.bad_names):
            return  # unread or unreadable this run: left alone, never taken for a deletion
        if fid in self.files:
            e["path"] = self.files[fid][0]  # a file keeping its `id:` may have been renamed
        name, mem = self.files.get(fid, (e.get("path"), None))
        file_fp = self._file_fp(fid)
        if self.pull_only and file_fp == e.get("file"):
            return  # only applying: a file nobody changed has nothing to apply (its local row was not read)
        row = self.local.get(str(e.get("key")))
        local_mem = as_shared(row, fid, self.to_file_id) if _is_live(row) else None
        local_fp = local_mem.fingerprint() if local_mem else DELETED
        file_changed, local_changed = file_fp != e.get("file"), local_fp != e.get("local")
        if not file_changed and not local_changed:
            return
        if file_fp == local_fp:  # both made the same change (or both deleted)
            self._settle(fid, name, file_fp, local_fp)
            return
        if file_changed and not local_changed:
            self._apply_file(fid, name, mem)
        elif local_changed and not file_changed:
            if not self.pull_only:
                self._write_local(fid, name, local_mem)
        else:
            self._conflict(fid, str(e.get("key")), name, mem, local_mem)

    def _conflict(
        self,
        fid: str,
        key: str,
        name: str | None,
        mem: SharedMemory | None,
        local_mem: SharedMemory | None,
        *,
        resolve: str | None = None,
    ) -> None:
        """Report both versions; change neither (the next sync reports it again until resolved)."""
        self.report.conflicts.append(
            {
                "memory_id": format_memory_id(key),
                "path": f"{self.t.label}/{name}",
                "file": mem.content if mem else None,
                "local": local_mem.content if local_mem else None,
                "resolve": resolve or self.t.resolve,
            }
        )

    def _settle(self, fid: str, name: str | None, file_fp: str, local_fp: str) -> None:
        if file_fp == DELETED:
            self.dropped.add(str(self.entries.pop(fid, {}).get("key")))
        else:
            self.entries[fid].update(path=name, file=file_fp, local=local_fp)

    def _apply_file(self, fid: str, name: str | None, mem: SharedMemory | None) -> None:
        key = self.to_local_key(fid)
        if mem is None:  # deleted by someone else
            row = self.local.get(key)
            if _is_live(row):
                edit.forget(
                    self.access,
                    self.ctx,
                    format_memory_id(key),
                    reason=f"its shared file {self.t.label}/{name} was deleted",
                )
                self.report.forgotten.append(format_memory_id(key))
                self.local[key] = {**(row or {}), "status": "forgotten"}
            self.entries.pop(fid, None)
            self.dropped.add(key)
            return
        self._update_local(key, mem, name)
        self.report.updated.append(format_memory_id(key))
        self._arrival(key, name, "updated")
        self._remember(fid, key, name, mem)

    def _update_local(self, key: str, mem: SharedMemory, name: str | None) -> None:
        row = self.local.get(key) or {}
        if row.get("status") == "forgotten":
            edit.forget(self.access, self.ctx, format_memory_id(key), undo=True)
        old_tags, new_tags = set(row.get("tags") or ()), set(mem.tags)
        edit.apply_update(
            self.access,
            self.ctx,
            format_memory_id(key),
            content=mem.content,
            summary=mem.summary,
            importance=mem.importance,
            category=mem.category if mem.category is not None else ("" if row.get("category") else None),
            memory_type=mem.memory_type,
            tags={"add": sorted(new_tags - old_tags), "remove": sorted(old_tags - new_tags)},
            # the memory's `source` stays its arrival; the latest file edit is recorded beside it
            metadata={"shared_file": {"path": self._source_path(name), **self.origin(name)}},
            source=self._file_source(row, name),
        )
        if mem.supersedes:
            self.supersede_todo.append((key, mem.supersedes))

    def _file_source(self, row: dict[str, Any], name: str | None) -> dict[str, Any] | None:
        """The source a memory takes when a file's version is applied to it: unchanged when it
        already came from a file; the file's when it was the user's own (shared with `engram share`,
        or mirrored), since the text is now whoever edited the file's. Labelled by its first
        writer, a teammate's edit of the user's shared memory was shown as the user's own."""
        source = row.get("source")
        if isinstance(source, dict) and source.get("kind") in FILE_SOURCE_KINDS:
            return None
        return {
            "kind": self.t.source_kind,
            "path": self._source_path(name),
            **self.origin(name),
            **self._repository(),
            "edited_from": records.origin_of(source).get("kind"),
        }

    def _remember(self, fid: str, key: str, name: str | None, mem: SharedMemory, *, fresh: bool = False) -> None:
        """Record both sides as they are now: the new base for this memory (`fresh`: just
        stored, so it replaces nothing yet and its links are not read)."""
        row = read_local(self.access, self.ctx, self.t.scope, {key}, with_links=not fresh).get(key)
        self.local[key] = row or {}
        local_fp = as_shared(row, fid, self.to_file_id).fingerprint() if _is_live(row) else DELETED
        self.entries[fid] = {
            "key": key,
            "path": name,
            "file": mem.fingerprint(),
            "local": local_fp,
            "body": body_hash(mem.content),
        }

    def _write_local(self, fid: str, name: str | None, local_mem: SharedMemory | None) -> None:
        if local_mem is None:  # forgotten here: the file goes
            if name and self.t.folder.delete(name):
                self.report.deleted_files.append(f"{self.t.label}/{name}")
            self.entries.pop(fid, None)
            return
        self.write_file(fid, self.to_local_key(fid), local_mem, name)

    def write_file(self, fid: str, key: str, local_mem: SharedMemory, name: str | None) -> None:
        """Write one memory's file (redacted) and record the new base. A `created_at` the file
        already holds is kept: two machines' clocks must not make the file flip between them."""
        if local_mem.extra.get("sensitive") or is_sensitive({"tags": local_mem.tags}):
            # a sensitive memory never reaches a team file or the user mirror (share, write-back, rule)
            self.report.withheld.append(format_memory_id(key))
            return
        name = name or file_name_for(local_mem)
        on_file = self.files.get(fid, (None, None))[1]
        if on_file is not None and on_file.created_at:
            local_mem = replace(local_mem, created_at=on_file.created_at)
        text = render(local_mem)
        self.t.folder.write(name, text)
        written = parse(text, fallback_id=fid)
        self.entries[fid] = {
            "key": key,
            "path": name,
            "file": written.fingerprint(),
            "local": local_mem.fingerprint(),
            "body": body_hash(written.content),
        }
        self.report.written.append(f"{self.t.label}/{name}")

    # -- a file this machine has not synced before
    def _arrived(self, fid: str) -> None:
        name, mem = self.files[fid]
        with self.access.lock:
            h = self.access.handle(self.ctx, self.t.scope)
            present = h.index.slot_of(fid) is not None
            elsewhere = sorted({loc.handle.scope for loc in self.access.locate(self.ctx, format_memory_id(fid))})
        if any(scope != self.t.scope for scope in elsewhere):
            # an id a file chose (derived ids of imports are predictable) naming a memory of
            # another scope: an edit by id reaches every copy, so the file could rewrite or
            # forget a private memory. Left alone and named.
            self._bad(
                name,
                f"{self.t.label}/{name}: its id is already used by a memory outside this folder; "
                "give the file a new id (or remove the `id:` line)",
            )
            return
        if present:
            row = self.local.get(fid) or read_local(self.access, self.ctx, self.t.scope, {fid}).get(fid)
            local_mem = as_shared(row, fid, self.to_file_id) if _is_live(row) else None
            if self._claims_private(row, local_mem, mem):
                self.held.add(fid)
                self._conflict(
                    fid,
                    fid,
                    name,
                    mem,
                    local_mem,
                    # never advise `engram share` here: it would write the private memory into the file
                    resolve=PRIVATE_CLAIM_RESOLVE,
                )
                return
            if local_mem is not None and local_mem.fingerprint() != mem.fingerprint():
                # both hold it and they differ, with no base to say who changed (the state was
                # lost, or the file was written elsewhere): a conflict, neither side touched
                self._conflict(fid, fid, name, mem, local_mem)
                return
            if local_mem is None:
                self._update_local(fid, mem, name)
                self.report.added.append(format_memory_id(fid))
                self._arrival(fid, name, "added")
            self._remember(fid, fid, name, mem)
            return
        origin = self.origin(name)
        try:
            # dedup=False: the file's memory is exactly what was shared, never merged into a
            # private memory (whose text a later write-back would publish) or another file's
            result = store_ops.store(
                self.access,
                self.ctx,
                content=mem.content,
                type=mem.memory_type,
                scope=self.t.scope,
                importance=mem.importance,
                tags=list(mem.tags),
                category=mem.category,
                summary=mem.summary,
                source={
                    "kind": self.t.source_kind,
                    "path": self._source_path(name),
                    **origin,
                    **self._repository(),
                },
                request_id=fid,
                dedup=False,
            )
        except EngramError as exc:
            self.report.errors.append(
                {"path": f"{self.t.label}/{name}", "error": f"{self.t.label}/{name}: {exc.message}"}
            )
            return
        key = str(result["memory_id"]).split(":", 1)[1]
        self.report.added.append(format_memory_id(key))
        self._arrival(key, name, "added")
        if mem.supersedes:
            self.supersede_todo.append((key, mem.supersedes))
        self._remember(fid, key, name, mem, fresh=result.get("action") == "created")

    def _claims_private(self, row: dict[str, Any] | None, local_mem: SharedMemory | None, mem: SharedMemory) -> bool:
        """Whether a team file with no sync base names a project memory that is not the file's:
        one that did not arrive from a file, and differs from it or was forgotten here. Taking
        it as a conflict would advise `engram share`, publishing the private text; applying it
        would overwrite (or revive) a private memory. The user's own mirror folder is theirs."""
        if self.t.mirror_all or row is None:
            return False
        source = row.get("source")
        if isinstance(source, dict) and source.get("kind") in FILE_SOURCE_KINDS:
            return False
        return local_mem is None or local_mem.fingerprint() != mem.fingerprint()

    def _send_new_local(self) -> None:
        """Mirror: every live memory of the scope that no file holds yet gets one."""
        mapped = {str(e.get("key")) for e in self.entries.values()} | self.dropped
        for key in sorted(self.local):
            row = self.local[key]
            if key in mapped or key in self.files or not _is_live(row):
                continue
            self.write_file(key, key, as_shared(row, key, self.to_file_id), None)

    def _share_by_rule(self, rule: dict[str, Any]) -> None:
        """The configured rule (e.g. procedural and semantic memories of importance >= 0.8):
        each live project memory it matches that no file holds yet gets one."""
        types = set(rule.get("types") or DURABLE_TYPES)
        floor = float(rule.get("min_importance", 1.0))
        mapped = {str(e.get("key")) for e in self.entries.values()} | self.dropped | set(self.files)
        for key, row in sorted(read_local(self.access, self.ctx, self.t.scope, None).items()):
            if key in mapped or not _is_live(row) or row.get("status") == "archived":
                continue
            if row.get("memory_type") in types and float(row.get("importance", 0)) >= floor:
                self.write_file(key, key, as_shared(row, key, self.to_file_id), None)

    def _apply_supersessions(self) -> None:
        """Supersession links named by files, once every file's memory exists here. A file only
        replaces another file's memory: a link hides the older memory from recall, so a file
        naming a private memory's id (those of imports are predictable) is refused by name."""
        shared = {str(e.get("key")) for e in self.entries.values()}
        for key, replaced in self.supersede_todo:
            have = set(read_local(self.access, self.ctx, self.t.scope, {key}).get(key, {}).get("_supersedes") or ())
            for fid in replaced:
                old = self.to_local_key(fid)
                if old in have or old == key:
                    continue
                if old not in shared:
                    where = f"{self.t.label}/{self.entries.get(self.to_file_id(key), {}).get('path')}"
                    self.report.errors.append(
                        {
                            "path": where,
                            "error": f"{where}: supersedes {format_memory_id(fid)}, which no file of "
                            f"{self.t.label} holds; a file only replaces another shared memory (link left out)",
                        }
                    )
                    continue
                try:
                    edit.update(self.access, self.ctx, format_memory_id(key), supersedes=format_memory_id(old))
                except EngramError as exc:
                    self.report.errors.append(
                        {"path": format_memory_id(key), "error": f"supersedes {fid}: {exc.message}"}
                    )
                    continue
            # the link changed the local side: refresh its base so it is not taken for an edit
            fid = self.to_file_id(key)
            if fid in self.entries and fid in self.files:
                self._remember(fid, key, self.entries[fid].get("path"), self.files[fid][1])


#: Files parsed and redaction-checked in this process, by (name, text): a session start in a
#: folder of 3,000 unchanged files reads them all, and re-parsing each took most of its budget.
_PARSED: dict[str, SharedMemory] = {}
_SECRETS: dict[str, int] = {}
PARSE_CACHE_MAX = 20_000
#: Characters of file text the parse cache holds at most before it starts over.
PARSE_CACHE_MAX_CHARS = 16 * 1024 * 1024
_parsed_chars = 0


def _parsed(text: str, name: str, path: str) -> SharedMemory:
    """`parse` of one file, remembered by its name and text (a pure function of both); errors
    are not cached, so a fixed file is read again."""
    global _parsed_chars
    key = _text_key(name, text)
    mem = _PARSED.get(key)
    if mem is None:
        mem = parse(text, fallback_id=derived_ulid("shared-file", name), source=path)
        if len(_PARSED) >= PARSE_CACHE_MAX or _parsed_chars + len(text) > PARSE_CACHE_MAX_CHARS:
            _PARSED.clear()
            _parsed_chars = 0
        _PARSED[key] = mem
        _parsed_chars += len(text)
    return mem


def _text_key(name: str, text: str) -> str:
    """What a file's parse is a pure function of: its name and text."""
    return hashlib.sha256(f"{name}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _secrets_in(mem: SharedMemory, text_key: str | None = None) -> int:
    """How many secrets redaction finds in a file's fields, remembered by the file's name and
    text when given (a fingerprint serialises every field: 10,000 files took ~0.6 s a sync),
    else per fingerprint and body."""
    key = f"t:{text_key}" if text_key else f"{mem.fingerprint()}:{body_hash(mem.content)}"
    found = _SECRETS.get(key)
    if found is None:
        found = redacted(mem)[1]
        if len(_SECRETS) >= PARSE_CACHE_MAX:
            _SECRETS.clear()
        _SECRETS[key] = found
    return found


def body_hash(content: str) -> str:
    """What a rename keeps: the body alone (a renamed file is matched by it)."""
    return hashlib.sha256(content.strip().encode()).hexdigest()[:32]


def run_sync(
    access: "ScopeAccess",
    ctx: "RequestContext",
    target: Target,
    *,
    pull_only: bool = False,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """Sync `target` both ways (or only apply the files, `pull_only`); returns the report.
    With `budget_s`, memories not reached in that time are listed as `pending`, and a sync of
    the same folder already running (`engram sync` of a large pull) is waited for BUSY_WAIT_S at
    most: it applies the files itself, and the report says `busy`."""
    lock = _lock_for(target)
    started = time.monotonic()
    if not lock.acquire(timeout=-1 if budget_s is None else max(0.0, min(budget_s, BUSY_WAIT_S))):
        return {**Report().as_dict(target.label), "busy": "another sync of this folder is running"}
    try:
        left = None if budget_s is None else max(0.0, budget_s - (time.monotonic() - started))
        return _Sync(access, ctx, target, pull_only, left).run().as_dict(target.label)
    finally:
        lock.release()


def share_one(access: "ScopeAccess", ctx: "RequestContext", target: Target, key: str) -> dict[str, Any]:
    """Write one local memory's file now (also: keep the local version of a conflict)."""
    with _lock_for(target):
        sync = _Sync(access, ctx, target, pull_only=False)
        row = read_local(access, ctx, target.scope, {key}).get(key)
        if not _is_live(row):
            raise InvalidInput(f"memory:{key} is not a live memory of scope {target.scope}", field="memory_id")
        if is_sensitive(row):
            raise InvalidInput(
                f"memory:{key} is marked sensitive (tag or metadata); sensitive memories are never written to a "
                "team file or a mirror",
                field="memory_id",
            )
        fid = sync.to_file_id(key)
        name = sync.entries.get(fid, {}).get("path")
        sync.write_file(fid, key, as_shared(row, fid, sync.to_file_id), name)
        target.state.save(sync.entries)
        return {"memory_id": format_memory_id(key), "path": sync.report.written[0], "folder": target.label}


def relative_label(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
