"""From a registry entry (`core/operations.py`) to a call of its handler, arguments bound first.

The registry names handlers by string so that core never imports services; they are resolved
here, in the daemon, which may. Before a handler runs, the request's arguments are bound to its
signature (`inspect.Signature.bind`): a failure there is the caller's (an unknown, missing or
doubled argument) and becomes `invalid_input` naming the argument; anything raised once the
handler runs, a TypeError included, is a bug and surfaces as one. An argument that names a
memory may give its short id (the end of its ULID, as memory lines and `engram list` show it):
it is made whole here (`with_whole_ids`), so every operation takes one.
"""

from __future__ import annotations

import importlib
import inspect
import re
import threading
from typing import Any, Callable

from engram_mcp.core import operations
from engram_mcp.core.errors import EngramError, InvalidInput
from engram_mcp.core.ids import as_short_id, format_memory_id
from engram_mcp.core.operations import Operation

_ARGUMENT_NAME = re.compile(r"argument:? '([^']+)'")
_modules_lock = threading.Lock()
_functions: dict[str, Callable[..., Any]] = {}


def module_function(handler: str) -> Callable[..., Any]:
    """The function a `"package.module:function"` handler names, imported once."""
    fn = _functions.get(handler)
    if fn is None:
        module_name, _, attr = handler.partition(":")
        with _modules_lock:
            fn = getattr(importlib.import_module(module_name), attr)
            if not callable(fn):
                raise TypeError(f"handler {handler} is not callable")
            _functions[handler] = fn
    return fn


def target(service: Any, op: Operation) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """(callable, leading positional arguments before ctx) for `op` on `service`."""
    if op.handler is None:
        raise InvalidInput(f"operation {op.name!r} is answered by the daemon itself")
    if ":" in op.handler:
        return module_function(op.handler), (service.access,)
    return getattr(service, op.handler), ()


def bind(
    name: str, fn: Callable[..., Any], leading: tuple[Any, ...], ctx: Any, args: dict[str, Any]
) -> inspect.BoundArguments:
    """Bind a request's arguments to operation `name`'s handler, or raise InvalidInput naming the argument."""
    signature = inspect.signature(fn)
    try:
        return signature.bind(*leading, ctx, **args)
    except TypeError as exc:
        takes = _keywords(signature, skip=len(leading) + 1)
        unknown = [] if takes is None else [k for k in args if k not in takes]
        if unknown:  # named before a missing one: a misspelt argument is both, and this says which
            raise InvalidInput(
                f"bad arguments: {unknown[0][:40]!r} is not an argument of {name}; allowed: {', '.join(takes or ())}",
                field=unknown[0],
            ) from None
        found = _ARGUMENT_NAME.search(str(exc))
        raise InvalidInput(f"bad arguments: {exc}", field=found.group(1) if found else None) from None


def _keywords(signature: inspect.Signature, *, skip: int) -> list[str] | None:
    """The names a caller may pass (after the `skip` leading parameters), or None for **kwargs."""
    params = list(signature.parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    by_keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params[skip:] if p.kind in by_keyword]


#: Arguments that name one memory, and those that name several.
ID_ARGUMENTS = ("memory_id", "supersedes", "from_id", "to_id")
ID_LIST_ARGUMENTS = ("derived_from",)


def with_whole_ids(service: Any, ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
    """`args` with each short id of a memory-naming argument made whole (`ScopeAccess.memory_key`:
    the one memory of the caller's scopes whose id ends with it). Claude copies ids from the
    context's lines, which show the short one; a whole id, or a value that is neither, is passed
    on as it is for the handler to judge."""
    access = getattr(service, "access", None)
    if access is None or not any(k in args for k in (*ID_ARGUMENTS, *ID_LIST_ARGUMENTS)):
        return args

    def whole(value: Any, field: str) -> Any:
        if isinstance(value, str) and as_short_id(value) is not None:  # 6-25 characters: never a whole id
            with access.lock:
                return format_memory_id(access.memory_key(ctx, value, field=field))
        return value

    out = dict(args)
    for k in ID_ARGUMENTS:
        if k in out:
            out[k] = whole(out[k], k)
    for k in ID_LIST_ARGUMENTS:
        if isinstance(out.get(k), list):
            out[k] = [whole(v, k) for v in out[k]]
    return out


def call(service: Any, name: str, ctx: Any, args: dict[str, Any]) -> Any:
    """Run operation `name` for `ctx` with `args` (a dict of keyword arguments)."""
    op = operations.get(name)
    if op is None:
        raise InvalidInput(f"unknown operation {str(name)[:40]!r}")
    fn, leading = target(service, op)
    bound = bind(op.name, fn, leading, ctx, with_whole_ids(service, ctx, args))
    marks = getattr(service, "index_marks", None)
    before = marks() if marks is not None and not op.read_only else None
    try:
        return fn(*bound.args, **bound.kwargs)
    except EngramError:
        raise  # refused before it changed anything, or a store that is unavailable
    except Exception:
        # A bug may have struck between an engine commit and the index update that follows
        # it: the indexes of the stores this request wrote are no longer known to match them.
        # Those of the stores it did not write (another project's) stay: a fault in one
        # project's input costs that project only.
        distrust = getattr(service, "distrust_indexes", None)
        if not op.read_only and distrust is not None:
            distrust(before) if before is not None else distrust()
        raise
