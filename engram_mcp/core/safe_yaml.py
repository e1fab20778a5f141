"""The one YAML loader for every file engram reads: config, team files, sync folders, imports.

Every such file may come from someone else (a cloned repository, a synced folder, a
teammate), so YAML here is untrusted input and is read with bounds that hold whatever the
text is:

- anchors and aliases are refused while *parsing*, before anything is built: an alias bomb
  of a few hundred bytes (``b: [*a, *a, ...]`` nine levels deep) expands to billions of
  nodes the moment anything walks it, which froze the daemon for every project;
- size, nesting depth, number of nodes and the length of each scalar are bounded, so 500
  nested ``[`` is a clear refusal, never a ``RecursionError``;
- integers and floats are bounded in digits (a 5,000-digit integer trips Python's int-str
  limit with a bare ``ValueError``, and big ints make every later step slow);
- an invalid timestamp (``created_at: 2024-13-45``), or one no later use can convert to UTC,
  stays the string it was written as, instead of aborting the whole file with a ``ValueError``;
- only JSON-like values and dates come out: ``!!binary``, ``!!set``, ``!!omap`` and
  ``!!pairs`` are refused like ``!!python/...`` tags.

Whatever goes wrong surfaces as :class:`UnsafeYAML`, a ``ValueError`` whose message starts
with the source's name, so a caller reports the file and goes on with the others.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import yaml

from engram_mcp.core.display import printable

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "MAX_SCALAR_CHARS",
    "MAX_YAML_BYTES",
    "UnsafeYAML",
    "load",
    "split_frontmatter",
]

#: Bytes of YAML read at most (UTF-8). Frontmatter is a few hundred bytes; 256 KiB leaves room
#: for a long description while keeping a parse in milliseconds.
MAX_YAML_BYTES = 256 * 1024
#: Nesting of collections. Real frontmatter is 2-3 levels deep; the bound also keeps the
#: recursive composer and constructor far from Python's recursion limit.
MAX_DEPTH = 64
#: Values (scalars and collections) in one document. Real frontmatter holds tens; building
#: 2,000 costs ~25 ms (PyYAML resolves each plain scalar in Python, C loader or not), 20,000
#: cost ~270 ms, and a session start reads many files.
MAX_NODES = 2_000
#: Characters of one scalar (a memory is at most 20,000 characters; a key or tag far less).
MAX_SCALAR_CHARS = 64 * 1024
#: Characters of the text of one integer or float (signs, underscores, ``0x`` included).
MAX_INT_DIGITS = 100

#: The C parser when PyYAML was built with libyaml: the bounds are checked on its events and
#: by the Python constructor methods overridden below, so speed costs no hardening.
_BASE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FRONTMATTER_OPEN_RE = re.compile(r"---[ \t]*\r?\n")
_LEADING_BLANK_LINES_RE = re.compile(r"(?:[ \t]*\r?\n)+")
_FRONTMATTER_CLOSE_RE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.M)


class UnsafeYAML(ValueError):
    """YAML engram will not read: broken, or beyond the bounds. The message starts with the
    source (a file's display path) and says what is wrong, and where when known. It may quote
    the file's name and the parser's view of its text, so it is made `printable`: showing it
    can never act on a terminal."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


class _Loader(_BASE_LOADER):
    """SafeLoader whose number and timestamp constructors cannot blow up or abort a file."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        _check_number_text(node, "integer")
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> Any:
        _check_number_text(node, "number")
        return super().construct_yaml_float(node)

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        """A date that does not exist (2024-13-45) is kept as the text written: a wrong
        `created_at` must cost that one value, never the file."""
        try:
            value = super().construct_yaml_timestamp(node)
            if isinstance(value, datetime.datetime) and value.tzinfo is not None:
                value.astimezone(datetime.timezone.utc)  # 9999-12-31T23:59-23:59 overflows every later use
        except (ValueError, OverflowError):
            return str(node.value)
        return value

    def construct_refused(self, node: yaml.Node) -> Any:
        """Types no engram file uses (bytes, sets, ordered pairs): refused, so every value that
        leaves this module is JSON-like (mapping, list, text, number, bool, null) or a date."""
        raise _Refused(f"YAML tag {node.tag.rsplit(':', 1)[-1]!r} is not allowed", node.start_mark)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
for _tag in ("binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _Loader.construct_refused)


class _Refused(Exception):
    """A bound was crossed at `mark` (turned into UnsafeYAML with the source's name)."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.mark = mark


def _check_number_text(node: yaml.ScalarNode, noun: str) -> None:
    if len(str(node.value)) > MAX_INT_DIGITS:
        raise _Refused(f"an {noun} of more than {MAX_INT_DIGITS} characters", node.start_mark)


def load(
    text: str,
    *,
    source: str,
    max_bytes: int = MAX_YAML_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> Any:
    """The value of one YAML document, read under the module's bounds (stricter ones may be
    passed, e.g. for config files). Raises :class:`UnsafeYAML` naming `source`."""
    return _load(text, source=source, line_offset=0, max_bytes=max_bytes, max_depth=max_depth, max_nodes=max_nodes)


def split_frontmatter(
    text: str,
    *,
    source: str,
    max_bytes: int = MAX_YAML_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body) of a markdown file.

    A file whose first non-blank line is not ``---`` has no frontmatter: ``({}, text)``. A
    frontmatter that is never closed, too large, not YAML or not a mapping raises
    :class:`UnsafeYAML`: guessing would turn a hostile or broken head into content. A leading
    byte-order mark and CRLF line ends are accepted; line numbers in messages are the file's.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    blank = _LEADING_BLANK_LINES_RE.match(text)
    start, skipped_lines = (blank.end(), blank.group().count("\n")) if blank else (0, 0)
    opening = _FRONTMATTER_OPEN_RE.match(text, start)
    if opening is None:
        return {}, text
    # Look for the closing line only within the bound: 10 MB without one is refused at once.
    window = text[: opening.end() + max_bytes + 8]
    closing = _FRONTMATTER_CLOSE_RE.search(window, opening.end())
    if closing is None:
        if len(text) > len(window):
            raise UnsafeYAML(f"{source}: frontmatter larger than {max_bytes // 1024} KiB (no closing '---' within it)")
        raise UnsafeYAML(
            f"{source}: frontmatter opened with '---' on line {skipped_lines + 1} is never closed by a '---' line"
        )
    head = text[opening.end() : closing.start()]
    value = _load(
        head,
        source=source,
        line_offset=skipped_lines + 1,
        max_bytes=max_bytes,
        max_depth=max_depth,
        max_nodes=max_nodes,
    )
    if value is None:
        value = {}
    if not isinstance(value, dict):
        kind = "list" if isinstance(value, list) else "string" if isinstance(value, str) else type(value).__name__
        raise UnsafeYAML(f"{source}: the frontmatter must be a mapping of key: value, not a {kind}")
    return value, text[closing.end() :]


def _load(text: str, *, source: str, line_offset: int, max_bytes: int, max_depth: int, max_nodes: int) -> Any:
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise UnsafeYAML(f"{source}: YAML larger than {max_bytes // 1024} KiB; not read")
    try:
        _vet_events(text, max_depth=max_depth, max_nodes=max_nodes)
        loader = _Loader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except _Refused as exc:
        raise UnsafeYAML(f"{source}: {exc.problem}{_where(exc.mark, line_offset)}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["not valid YAML"])[0]
        raise UnsafeYAML(f"{source}: not valid YAML{_where(mark, line_offset)}: {_clip(str(problem))}") from None
    except RecursionError:
        raise UnsafeYAML(f"{source}: YAML nested too deeply") from None
    except (ValueError, TypeError, OverflowError, MemoryError) as exc:
        raise UnsafeYAML(f"{source}: YAML value cannot be read: {_clip(str(exc))}") from None


def _vet_events(text: str, *, max_depth: int, max_nodes: int) -> None:
    """Refuse anchors, aliases, deep nesting, too many nodes and huge scalars from the event
    stream alone: nothing is composed yet, so a bomb costs milliseconds and no memory."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_BASE_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise _Refused("YAML aliases (*name) are not allowed", event.start_mark)
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if event.anchor is not None:
                raise _Refused("YAML anchors (&name) are not allowed", event.start_mark)
            if nodes > max_nodes:
                raise _Refused(f"more than {max_nodes} YAML values", event.start_mark)
            if isinstance(event, yaml.ScalarEvent) and len(event.value) > MAX_SCALAR_CHARS:
                raise _Refused(f"a YAML value longer than {MAX_SCALAR_CHARS} characters", event.start_mark)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    raise _Refused(f"YAML nested deeper than {max_depth} levels", event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _where(mark: Any, line_offset: int) -> str:
    if mark is None:
        return ""
    return f" at line {mark.line + 1 + line_offset}, column {mark.column + 1}"


def _clip(text: str, limit: int = 160) -> str:
    """A bounded prefix of a parser message (it may quote the untrusted text)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
