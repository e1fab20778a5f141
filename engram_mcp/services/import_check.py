"""The checks of an import's lines: here, or in a child process while this one writes.

Every line of an import goes through the checks `store` applies (JSON, then
`records.clean_memory_record`: NUL, Unicode, lengths, enums, dates, finite numbers, redaction;
then the vector: base64, dimension, finite). They need nothing from the store, and they cost
more than writing the record does (~130 against ~70 us a memory with its vector, measured
here), so in one process an import runs at the pace of its checks plus its writes. The engine
holds the GIL while it writes, so a thread cannot overlap them.

So a large file (`CHILD_MIN_BYTES`) is checked by a child process, this module run as
`python -m engram_mcp.services.import_check`: it reads the file itself and writes its lines,
checked, to its stdout in chunks (pickled), while the importing process writes the previous
chunk; the two run on two cores. The child is started with this interpreter and this package
and reads nothing but the file it is given.

Failure is never an import's failure: if the child cannot start, or stops before its last
chunk (killed, out of memory), the lines after the last one it handed over are checked here,
and the log says why. Either way the caller sees the same stream (`checked_lines`).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from engram_mcp.core.errors import InvalidInput
from engram_mcp.core.ids import parse_memory_id
from engram_mcp.core.redaction import Finding
from engram_mcp.core.vocabulary import SCOPES
from engram_mcp.services.records import check_enum, check_vector, clean_memory_record

log = logging.getLogger("engram.import")

MAX_LINE_BYTES = 4 * 1024 * 1024  # a longer line cannot hold a valid record (content <= 20,000 chars)
#: A file at least this large is checked in a child process. Starting one takes ~0.2 s (an
#: interpreter and the checks' modules); a file of 4 MB holds ~1,500 memories with vectors,
#: ~0.4 s of checks.
CHILD_MIN_BYTES = 4 * 1024 * 1024
#: Lines checked here while the child starts (it skips them): its start-up is ~0.2 s, during
#: which this process checks and writes ~700 memories with vectors instead of waiting.
CHILD_HEAD_LINES = 1000
#: Lines per chunk the child hands over: small enough that the writer starts at once, large
#: enough that a chunk's pickling is not per line.
CHILD_CHUNK_LINES = 256
_DONE = "done"


@dataclass
class Line:
    """One line of the file that is not a memory (or could not be parsed: `error`)."""

    n: int
    obj: dict[str, Any] | None
    error: str | None = None


@dataclass
class CheckedMemory:
    """A memory line after every check: its record ready to write, or why it was refused
    (`error`, `field`). `vector` is the exported vector's bytes when it can be reused."""

    n: int
    scope: str = ""
    key: str = ""
    record: dict[str, Any] = field(default_factory=dict)
    vector: bytes | None = None
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    field: str | None = None


def read_lines(path: Path, after: int = 0, upto: int | None = None) -> Iterator[Line]:
    """Every non-blank line after line `after` (up to line `upto`), parsed; a line that is not
    a JSON object is reported, not fatal."""
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if upto is not None and n > upto:
                return
            if n <= after or not raw.strip():
                continue
            if len(raw) > MAX_LINE_BYTES:
                yield Line(n, None, f"line is {len(raw)} bytes; a record is at most {MAX_LINE_BYTES}")
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield Line(
                    n,
                    None,
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                    "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8) and import it again",
                )
                continue
            except (json.JSONDecodeError, RecursionError) as exc:
                yield Line(n, None, f"not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})")
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
                yield Line(n, None, "each line must be an object with a 'kind'")
                continue
            yield Line(n, obj)


def check_memory(obj: dict[str, Any], n: int, target_scope: str | None, model: str, dim: int) -> CheckedMemory:
    """A memory line through every check; a refusal is returned, not raised."""
    findings: list[Finding] = []
    try:
        scope = check_enum(target_scope or obj.get("scope"), SCOPES, "scope")
        key = parse_memory_id(str(obj.get("id", "")), field="id")
        raw: Any = obj.get("record")  # a dict once clean_memory_record has accepted it
        rec = clean_memory_record(raw, findings, scope=scope)
        # a text changed by the checks (redaction, a NUL removed) is no longer what its vector describes
        changed = (rec.get("content"), rec.get("summary")) != (raw.get("content"), raw.get("summary"))
        vector = _reusable_vector(obj, rec, model, dim, changed)
    except InvalidInput as exc:
        return CheckedMemory(n, findings=findings, error=exc.message, field=exc.field)
    return CheckedMemory(n, scope, key, rec, vector, findings)


def _reusable_vector(obj: dict[str, Any], rec: dict[str, Any], model: str, dim: int, changed: bool) -> bytes | None:
    """The exported vector when it is of this model and still describes the text (checked:
    base64, dimension, finite); otherwise the record loses its vector fields."""
    blob = obj.get("vector_b64")
    if blob is not None and rec.get("embedding_model") == model and not changed:
        raw, _vec = check_vector(blob, "vector_b64", dim=dim)
        rec.update(embedding=raw, embedding_dim=dim)
        return raw
    for name in ("embedding", "embedding_model", "embedding_dim"):
        rec.pop(name, None)
    return None


def _checked_here(
    path: Path, target_scope: str | None, model: str, dim: int, after: int = 0, upto: int | None = None
) -> Iterator[Line | CheckedMemory]:
    for line in read_lines(path, after, upto):
        if line.obj is not None and line.obj["kind"] == "memory":
            yield check_memory(line.obj, line.n, target_scope, model, dim)
        else:
            yield line


def checked_lines(
    path: Path, target_scope: str | None, model: str, dim: int, *, child: bool | None = None
) -> Iterator[Line | CheckedMemory]:
    """The file's lines in order, memory lines checked (`CheckedMemory`), the others parsed
    (`Line`). `child`: check in a child process (None: when the file is at least CHILD_MIN_BYTES)."""
    if child is None:
        try:
            child = path.stat().st_size >= CHILD_MIN_BYTES
        except OSError:
            child = False
    if not child:
        yield from _checked_here(path, target_scope, model, dim)
        return
    last = 0
    try:
        for item in _checked_in_child(path, target_scope, model, dim, head=CHILD_HEAD_LINES):
            last = item.n
            yield item
        return
    except _ChildStopped as exc:
        why = str(exc)
    log.warning("import of %s: the checking process stopped (%s); checking from line %d here", path, why, last + 1)
    yield from _checked_here(path, target_scope, model, dim, after=last)


class _ChildStopped(Exception):
    """The child process could not start or ended before its last chunk."""


def _checked_in_child(
    path: Path, target_scope: str | None, model: str, dim: int, *, head: int
) -> Iterator[Line | CheckedMemory]:
    """The first `head` lines checked here while the child starts, then the child's lines.

    The child is this package's module run by this interpreter, with `-P` and the package's
    own directory as its working directory, so no module is ever imported from where the
    import was asked (a repository's files are not trusted)."""
    package_parent = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)}
    args = [sys.executable, "-P", "-m", __name__, str(path.resolve()), target_scope or "", model, str(dim), str(head)]
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=env, cwd=package_parent
            )
        except (OSError, ValueError) as exc:
            raise _ChildStopped(f"it could not start: {exc}") from None
        try:
            assert proc.stdout is not None
            yield from _checked_here(path, target_scope, model, dim, upto=head)
            yield from _chunks(proc.stdout, errors, proc)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _chunks(stream: IO[bytes], errors: IO[bytes], proc: subprocess.Popen) -> Iterator[Line | CheckedMemory]:
    """Items of the child's chunks until its closing one."""
    while True:
        try:
            chunk = pickle.load(stream)
        except Exception as exc:  # EOF, a torn pickle, a broken pipe: the child did not finish
            proc.kill()
            proc.wait()
            errors.seek(0)
            tail = errors.read()[-300:].decode("utf-8", "replace").strip()
            raise _ChildStopped(f"exit {proc.returncode}: {tail or exc!r}") from None
        if chunk == _DONE:
            return
        yield from chunk


def main(argv: list[str]) -> int:
    """The child: check the lines of the file named by argv after its first ones (the parent
    checks those) and write them, in chunks, to stdout."""
    path, target_scope, model, dim, after = Path(argv[0]), argv[1] or None, argv[2], int(argv[3]), int(argv[4])
    out = sys.stdout.buffer
    chunk: list[Line | CheckedMemory] = []
    for item in _checked_here(path, target_scope, model, dim, after=after):
        chunk.append(item)
        if len(chunk) >= CHILD_CHUNK_LINES:
            pickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)
            chunk = []
    if chunk:
        pickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)
    pickle.dump(_DONE, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()
    return 0


if __name__ == "__main__":
    # Run as the module the parent imports, so what is pickled names its classes as the parent
    # knows them (engram_mcp.services.import_check.Line, not __main__.Line).
    from engram_mcp.services import import_check

    sys.exit(import_check.main(sys.argv[1:]))
