"""Reading JSON-RPC lines that may be garbage, for both MCP servers (standard library only).

A request the server cannot read must still be answered: a client waits for the reply to
its id until its own timeout, so silently dropping a line hangs it. Both `server.py` (the
SDK-based server) and `bootstrap_server.py` (the stand-in) read stdin through here:

- A line is at most `MAX_MESSAGE_BYTES`; a longer one is skipped to its newline (never held
  in memory whole) and answered `-32600`.
- Nesting deeper than `MAX_DEPTH` levels is refused before any recursive parser sees it
  (`json.loads` of 100,000 `[` raises RecursionError; other parsers crash): `-32600`.
- Invalid JSON: `-32700`. Valid JSON that is not an object (a number, a batch array): `-32600`.
- Invalid UTF-8 bytes become U+FFFD, as the MCP SDK's own stdio transport decodes them.
- Lone UTF-16 surrogates (`"\\ud83d"`, what a JS client sends when it slices an emoji) cannot
  be encoded as UTF-8, so no reply could echo them: inside `tools/call` arguments they reach
  the tool, which answers a tool error `invalid_input` naming the field (`surrogate_problem`);
  anywhere else the request is answered `-32602`.

Every error reply carries the request's id when one can be recovered, also from a line
that does not parse: `scan` finds the top-level `"id"` member with a tolerant, non-recursive
scanner and the reply echoes its raw JSON text. When no id can be recovered the reply has
`"id": null`, as JSON-RPC 2.0 prescribes for parse errors.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # tool arguments are limited to 256 KiB; escapes can grow them 6x
MAX_DEPTH = 64  # a JSON-RPC envelope adds 3 levels to arguments, which are limited to 8
ID_SCAN_BYTES = 64 * 1024  # where the id of an oversized line is looked for
SKIP_CHUNK_BYTES = 64 * 1024

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603

# Strings and brackets: everything the depth/id scanner needs, matched in C.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_ID_VALUE = re.compile(r'\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*"|-?(?:0|[1-9]\d{0,17})(?![\d.eE]))', re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Rejected:
    """A line that cannot be handled: the error reply to send (None: nobody to answer)."""

    reply: bytes | None
    reason: str


def read_line(stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES) -> tuple[bytes, bool] | None:
    """The next line and whether it was cut at `limit` bytes (its rest is skipped); None at EOF."""
    line = stream.readline(limit + 1)
    if not line:
        return None
    if len(line) <= limit or line.endswith(b"\n"):
        return line, False
    head = line[:ID_SCAN_BYTES]
    while True:  # skip the rest of an oversized line without keeping it
        chunk = stream.readline(SKIP_CHUNK_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return head, True


def scan(text: str, max_depth: int = MAX_DEPTH) -> tuple[int, str | None]:
    """(deepest nesting seen, capped at max_depth + 1; raw JSON of the top-level "id" or None).

    Tolerant and iterative: works on truncated or malformed text, never recurses.
    """
    opened: list[str] = []  # the open brackets; a closer pops to its match (tolerates `[1,2}`)
    deepest = 0
    rid: str | None = None
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in ("[", "{"):
            opened.append(tok)
            if len(opened) > deepest:
                deepest = len(opened)
                if deepest > max_depth and rid is not None:
                    break
        elif tok in ("]", "}"):
            match = "[" if tok == "]" else "{"
            while opened and opened.pop() != match:
                pass
        elif len(opened) == 1 and rid is None and tok == '"id"':
            value = _ID_VALUE.match(text, m.end())
            if value is not None:
                rid = value.group(1)
                if deepest > max_depth:
                    break
    return min(deepest, max_depth + 1), rid


def error_reply(rid: str | None, code: int, message: str) -> bytes:
    """One JSON-RPC error line; `rid` is the id's raw JSON text (already valid JSON) or None."""
    body = json.dumps({"code": code, "message": message}, ensure_ascii=True, separators=(",", ":"))
    return f'{{"jsonrpc":"2.0","id":{rid or "null"},"error":{body}}}\n'.encode()


def _valid_id(raw: str | None) -> str | None:
    """The raw id text when it is a JSON string or integer, else None."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return raw if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def decode(line: bytes, truncated: bool = False) -> Any | Rejected:
    """The parsed JSON object of one line, or why it is rejected (with the reply to send)."""
    text = line.decode("utf-8", errors="replace")
    depth, raw_id = scan(text)
    rid = _valid_id(raw_id)
    if truncated:
        return _reject(rid, INVALID_REQUEST, f"Invalid request: message larger than {MAX_MESSAGE_BYTES} bytes")
    if depth > MAX_DEPTH:
        return _reject(rid, INVALID_REQUEST, f"Invalid request: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        message = json.loads(text)
    except RecursionError:  # (the depth scan makes this unreachable; kept as a last guard)
        return _reject(rid, INVALID_REQUEST, "Invalid request: JSON nested too deeply")
    except ValueError as exc:
        where = (
            f": {exc.msg} at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else f": {exc}"
        )
        return _reject(rid, PARSE_ERROR, f"Parse error{where}"[:300])
    if not isinstance(message, dict):
        what = "a batch (JSON array)" if isinstance(message, list) else f"a JSON {type(message).__name__}"
        return _reject(None, INVALID_REQUEST, f"Invalid request: a message must be a JSON object, not {what}")
    return message


def check_surrogates(message: dict[str, Any]) -> Rejected | None:
    """Refuse a message with a lone surrogate outside `tools/call` arguments (see module doc)."""
    rest = message
    if message.get("method") == "tools/call" and isinstance(message.get("params"), dict):
        rest = {**message, "params": {k: v for k, v in message["params"].items() if k != "arguments"}}
    where = find_surrogate(rest)
    if where is None:
        return None
    if "id" not in message:
        return Rejected(None, "notification with a lone surrogate")
    rid = message.get("id")
    # json.dumps escapes a surrogate in the id itself as \\uXXXX: valid JSON, what the client sent
    raw_id = json.dumps(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
    path, index, char = where
    return _reject(
        raw_id,
        INVALID_PARAMS,
        f"Invalid params: {path or 'the message'} contains a lone UTF-16 surrogate (\\u{ord(char):04x}) at "
        f"character {index}; send well-formed Unicode (was an emoji cut in half?)",
    )


def check_id(message: dict[str, Any]) -> Rejected | None:
    """Refuse a request whose id is not a string or an integer (a parser would take it for a
    notification and never answer it)."""
    if "id" not in message or "method" not in message:
        return None
    rid = message["id"]
    if isinstance(rid, (str, int)) and not isinstance(rid, bool):
        return None
    return _reject(None, INVALID_REQUEST, "Invalid request: id must be a string or an integer")


def find_surrogate(value: Any) -> tuple[str, int, str] | None:
    """(path, character index, the surrogate) of the first lone surrogate in keys or strings, or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            m = _SURROGATE.search(item)
            if m:
                return path, m.start(), m.group()
        elif isinstance(item, dict):
            for k, v in item.items():
                key = str(k)
                m = _SURROGATE.search(key)
                sub = f"{path}.{_SURROGATE.sub('?', key)}" if path else _SURROGATE.sub("?", key)
                if m:
                    return sub, m.start(), m.group()
                stack.append((v, sub))
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def surrogate_problem(args: Any) -> tuple[str, str] | None:
    """(field, message) when tool arguments hold a lone surrogate: an invalid argument."""
    where = find_surrogate(args)
    if where is None:
        return None
    path, index, char = where
    field = path or "arguments"
    return field, (
        f"{field} contains a lone UTF-16 surrogate (\\u{ord(char):04x}) at character {index}, which is not "
        "valid Unicode text; send the text whole (an emoji cut in half?)"
    )


def scrub(value: Any) -> Any:
    """`value` with every lone surrogate replaced by U+FFFD (for replies that would not encode)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _reject(rid: str | None, code: int, message: str) -> Rejected:
    return Rejected(error_reply(rid, code, message), message)
