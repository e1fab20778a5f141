"""What an MCP tool call does around the daemon round-trip, shared by both MCP servers.

`server.py` (the MCP SDK server) and `bootstrap_server.py` (the standard-library stand-in
that answers while a fresh install builds its virtualenv) handle `tools/call` the same
way: tool name -> daemon op (`TOOL_OPS`, from the operation registry `core/operations.py`),
argument checks (the tools' JSON Schemas, `core/schemas.py`, via `jsonschema`, then generic
size limits), integer coercion, the
compact JSON result, the error envelope (`{"error", "message", "degraded",
"retry_possible", "field"}`) and, for writes the daemon never received, the local write
queue (`queue_locally`). Per call, the project is `$CLAUDE_PROJECT_DIR` (else the working
directory) resolved to its root, and the session is `$CLAUDE_CODE_SESSION_ID`.

Standard library only: `jsonschema` is imported on first validation (`_Validators.load`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any, Callable

from engram_mcp.core import spool
from engram_mcp.core.errors import DaemonUnavailable, EngramError
from engram_mcp.core.ids import SESSION_ID_RE
from engram_mcp.core.operations import BY_NAME, QUEUEABLE_TOOLS, SCHEMAS
from engram_mcp.core.paths import resolve_project_root
from engram_mcp.daemon.client import user_dir_from_env

log = logging.getLogger("engram.mcp")

# Limits no schema states: they only stop absurd payloads before they cost anything.
MAX_STRING_CHARS = 20_000
MAX_ARRAY_ITEMS = 100
MAX_NESTING = 8
MAX_ARGUMENT_BYTES = 256 * 1024
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
ID_HINT = (
    "ids look like memory:<ULID> (26 characters) or its last 8 characters, as memory lines show them; "
    "recall_memories returns them"
)


# ---------------------------------------------------------------------- context
def project_root() -> Path:
    """`$CLAUDE_PROJECT_DIR` or the working directory, resolved to its project root."""
    return resolve_project_root(os.environ.get("CLAUDE_PROJECT_DIR") or None)


def session_id() -> str | None:
    """`$CLAUDE_CODE_SESSION_ID`, or None (then the session scope is unavailable)."""
    sid = os.environ.get("CLAUDE_CODE_SESSION_ID") or None
    if sid is not None and not SESSION_ID_RE.match(sid):
        log.warning("CLAUDE_CODE_SESSION_ID %r is not a valid session id; running without a session", sid[:80])
        return None
    return sid


# ---------------------------------------------------------------------- validation
def _envelope(
    error: str, message: str, *, field: str | None = None, degraded: bool = False, retry: bool = False
) -> dict[str, Any]:
    env: dict[str, Any] = {"error": error, "message": message, "degraded": degraded, "retry_possible": retry}
    if field:
        env["field"] = field
    return env


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_JSON_TYPES = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    list: "array",
    dict: "object",
    type(None): "null",
}


class _Validators:
    """Compiled Draft 2020-12 validators, built on first use (jsonschema costs ~0.2 s)."""

    def __init__(self) -> None:
        self._compiled: dict[str, Any] | None = None
        self._relevance: Callable[[Any], Any] | None = None
        self._lock = threading.Lock()

    def load(self) -> dict[str, Any]:
        if self._compiled is None:
            with self._lock:
                if self._compiled is None:
                    from jsonschema import Draft202012Validator
                    from jsonschema.exceptions import relevance

                    self._relevance = relevance
                    self._compiled = {name: Draft202012Validator(schema) for name, schema in SCHEMAS.items()}
        return self._compiled

    def check(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The error envelope for the most relevant problem, or None when `args` is valid."""
        # Schema first (its messages are the most useful; jsonschema only descends as deep
        # as the schema, so deep input cannot exhaust the stack), then the generic limits.
        validator = self.load()[tool]
        errors = list(validator.iter_errors(args))
        if errors:
            err = max(errors, key=self._relevance)
            field, message = _describe(err, tool)
            others = sorted({_describe(e, tool)[0] for e in errors if e is not err} - {field})
            if others:
                message += f" (also invalid: {', '.join(others[:5])})"
            return _envelope("invalid_input", message, field=field)
        return _guard(args)


def _describe(err: Any, tool: str) -> tuple[str, str]:
    """A short message naming the field, never echoing a huge value."""
    parts = list(err.absolute_path)
    field = _path(parts)
    kind, expected, inst = err.validator, err.validator_value, err.instance
    if kind == "required":
        missing = [p for p in expected if isinstance(inst, dict) and p not in inst] or list(expected)
        field = _path(parts + [missing[0]])
        return field, f"{field} is required"
    if kind == "additionalProperties":
        allowed = sorted((err.schema.get("properties") or {}).keys())
        extra = sorted(k for k in (inst if isinstance(inst, dict) else {}) if k not in allowed)
        name = extra[0] if extra else "?"
        field = _path(parts + [name])
        where = f"{tool}" if not parts else _path(parts)
        allowed_text = ", ".join(allowed) if allowed else "none"
        return field, f"{_short(name, 40)} is not a parameter of {where}; allowed: {allowed_text}"
    if not field:
        field = "arguments"
    if kind == "type":
        got = _JSON_TYPES.get(type(inst), type(inst).__name__)
        want = " or ".join(expected) if isinstance(expected, list) else expected
        return field, f"{field} must be of type {want}, not {got}"
    if kind == "enum":
        return field, f"{field} must be one of {', '.join(map(str, expected))}; got {_short(inst)}"
    if kind == "anyOf":
        options = [v for s in expected for v in (s.get("enum") or (s.get("items") or {}).get("enum") or [])]
        choices = ", ".join(dict.fromkeys(options))
        return field, f"{field} must be one of {choices}, or a list of them; got {_short(inst)}"
    if kind in ("minimum", "maximum"):
        word = "at least" if kind == "minimum" else "at most"
        return field, f"{field} must be {word} {expected}; got {_short(inst)}"
    if kind in ("maxLength", "minLength"):
        n = len(inst) if isinstance(inst, str) else "?"
        limit = f"at most {expected}" if kind == "maxLength" else f"at least {expected}"
        return field, f"{field} is {n} characters; it must be {limit}"
    if kind == "pattern":
        if "memory:" in str(expected):
            return field, f"{field} {_short(inst)} is not a memory id; {ID_HINT}"
        return field, f"{field} {_short(inst)} must match {expected}"
    if kind in ("maxItems", "minItems", "maxProperties"):
        return field, f"{field} has too many entries (limit {expected})"
    if kind == "uniqueItems":
        return field, f"{field} lists an entry twice"
    return field, f"{field}: {str(err.message)[:200]}"


def _guard(args: Any) -> dict[str, Any] | None:
    """Limits on size and nesting for what the schemas leave open (metadata, string lengths)."""
    stack: list[tuple[Any, list[Any]]] = [(args, [])]
    while stack:
        value, parts = stack.pop()
        if len(parts) > MAX_NESTING:
            field = _path(parts[:MAX_NESTING])
            return _envelope("invalid_input", f"{field} is nested too deeply (limit {MAX_NESTING} levels)", field=field)
        if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
            field = _path(parts) or "arguments"
            return _envelope(
                "invalid_input", f"{field} is {len(value)} characters; the limit is {MAX_STRING_CHARS}", field=field
            )
        if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
            # the store encodes integers as 64-bit: a bigger one would fail there as a "database error"
            field = _path(parts) or "arguments"
            return _envelope("invalid_input", f"{field} is outside the 64-bit integer range", field=field)
        if isinstance(value, float) and not math.isfinite(value):
            field = _path(parts) or "arguments"
            return _envelope("invalid_input", f"{field} must be a finite number, not {value}", field=field)
        if isinstance(value, list):
            if len(value) > MAX_ARRAY_ITEMS:
                field = _path(parts)
                return _envelope(
                    "invalid_input", f"{field} has {len(value)} entries; the limit is {MAX_ARRAY_ITEMS}", field=field
                )
            stack.extend((v, parts + [i]) for i, v in enumerate(value))
        elif isinstance(value, dict):
            stack.extend((v, parts + [k]) for k, v in value.items())
    try:
        size = len(json.dumps(args, ensure_ascii=False).encode())
    except (TypeError, ValueError):
        return _envelope("invalid_input", "arguments must be plain JSON", field="arguments")
    if size > MAX_ARGUMENT_BYTES:
        return _envelope(
            "invalid_input", f"arguments are {size} bytes; the limit is {MAX_ARGUMENT_BYTES}", field="arguments"
        )
    return None


def _coerce_integers(value: Any, schema: dict[str, Any]) -> Any:
    """JSON has one number type: forward 5.0 as 5 where the schema says integer.

    Also drops NUL characters from the strings the schemas declare (as `records.check_text`
    does for stored text): the store cannot encode them in a query key, and a lookup such
    as `search_knowledge_graph(entity="\x00")` would otherwise fail as a "database error".
    """
    if isinstance(value, str):
        return value.replace("\x00", "") if "\x00" in value else value
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict) and "properties" in schema:
        props = schema["properties"]
        return {k: (_coerce_integers(v, props[k]) if k in props else v) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce_integers(v, schema["items"]) for v in value]
    return value


# ---------------------------------------------------------------------- results
def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _compact(value: Any, top: bool = True) -> Any:
    """Drop nulls everywhere and empty lists/objects below the top level (tokens are context)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            v = _compact(v, False)
            if v is None or (isinstance(v, (list, dict)) and not v and (not top or k in ("warnings", "redactions"))):
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [_compact(v, False) for v in value]
    return value


def _error_envelope(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, EngramError):
        return exc.envelope()
    log.error("unexpected failure", exc_info=exc)
    return _envelope("internal_error", f"{type(exc).__name__}: {exc}"[:300], retry=True)


# ---------------------------------------------------------------------- write queue
def queue_locally(
    user_dir: Path | None, tool: str, op: str, args: dict[str, Any], exc: DaemonUnavailable
) -> dict[str, Any] | None:
    """Queue a write the daemon never received (not one it may have applied: no answer).

    Returns the tool result (`{"queued": true, "degraded": true, ...}`), or None when the
    call is not a queueable write or the queue cannot take it (the caller reports `exc`).
    """
    if tool not in QUEUEABLE_TOOLS or exc.message.startswith("engram daemon did not answer"):
        return None
    ctx = {"project_root": str(project_root()), "session_id": session_id()}
    try:
        eid = spool.enqueue(user_dir or user_dir_from_env(), op, args, ctx, reason=f"{exc.code}: {exc.message}"[:500])
    except (OSError, ValueError) as err:
        log.warning("could not queue %s: %s", tool, err)
        return None
    message = f"{exc.message.rstrip('.')}. The write was saved to the write queue and is applied when the engram daemon runs again."
    return spool.queued_answer(eid, exc.code, message, keyed=BY_NAME[op].keyed)
