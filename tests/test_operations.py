"""The operation registry (core/operations.py) and the daemon's dispatch from it (daemon/dispatch.py).

One entry says an operation exists, with its schema, handler and flags; everything else
derives from it. These tests check that the entries are consistent with their handlers, that
the tool surfaces list exactly the registry's tools, that arguments are bound to the handler's
signature before the call (a caller's bad argument is invalid_input naming it, a TypeError
inside a handler is a bug), and that a new operation needs only an entry and a module.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core import operations
from engram_mcp.core.operations import Operation
from engram_mcp.daemon import connections, dispatch
from engram_mcp.services.service import MemoryService
from tests.daemon_env import daemon_request, make_env

PACKAGE = Path(__file__).resolve().parents[1] / "engram_mcp"


# ---------------------------------------------------------------------- self-consistency
def _handler(op: Operation) -> tuple[Any, int]:
    """(the handler function, how many leading parameters precede the caller's arguments)."""
    assert op.handler is not None
    if ":" in op.handler:
        return dispatch.module_function(op.handler), 2  # (access, ctx, ...)
    fn = getattr(MemoryService, op.handler)
    assert callable(fn), f"{op.name}: MemoryService.{op.handler} is not callable"
    return fn, 2  # (self, ctx, ...)


def _parameters(op: Operation) -> tuple[set[str], set[str], bool]:
    """(accepted names, required names, takes **kwargs) of the caller's part of the signature."""
    fn, skip = _handler(op)
    params = list(inspect.signature(fn).parameters.values())[skip:]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = {p.name for p in params if p.kind in kinds}
    required = {p.name for p in params if p.kind in kinds and p.default is inspect.Parameter.empty}
    return accepted, required, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


@pytest.mark.parametrize("op", [op for op in operations.OPERATIONS if op.handler], ids=lambda op: op.name)
def test_every_handler_resolves_and_its_signature_matches_the_schema(op: Operation) -> None:
    accepted, required, open_ended = _parameters(op)
    if op.browse_op:  # recall without a query is served by the browse op: a property may be either's
        extra, needed, more = _parameters(operations.BY_NAME[op.browse_op])
        accepted, required, open_ended = accepted | extra, required & needed, open_ended or more
    props = set(op.schema.get("properties", {}))
    assert open_ended or props <= accepted, f"{op.name}: the handler does not take {sorted(props - accepted)}"
    assert required <= set(op.schema.get("required", [])), (
        f"{op.name}: the handler requires {sorted(required - set(op.schema.get('required', [])))} "
        "that the schema does not"
    )
    assert set(op.schema.get("required", [])) <= props


def test_registry_entries_and_flags_are_consistent() -> None:
    assert len(operations.BY_NAME) == len(operations.OPERATIONS), "an operation is registered twice"
    for op in operations.OPERATIONS:
        assert op.schema.get("type") == "object" and op.schema.get("additionalProperties") is False, op.name
        assert not op.keyed or op.queueable, f"{op.name}: only a queued write is replayed with a key"
        assert not (op.queueable and op.read_only), f"{op.name}: a read is never queued"
        assert op.browse_op is None or op.browse_op in operations.BY_NAME
        if op.tool is not None:
            assert op.tool_spec()["annotations"]["readOnlyHint"] is op.read_only
    assert operations.QUICK_OPS == ("ping", "shutdown", "drain")
    assert connections.QUICK_OPS is operations.QUICK_OPS  # the socket loop answers exactly these itself
    assert set(operations.QUEUEABLE_TOOLS) == {"store_memory", "update_memory", "forget_memory", "promote_memory"}


def test_every_enum_of_every_operation_schema_is_a_declared_word_list() -> None:
    from tests.test_vocabulary import WORD_LISTS, _enums

    for op in operations.OPERATIONS:
        for path, values in _enums(op.schema):
            if any(set(values) & set(words) for words in WORD_LISTS.values()):
                assert tuple(values) in WORD_LISTS.values(), f"{op.name}{path}: {values}"


def test_both_mcp_servers_list_exactly_the_registry_tools() -> None:
    from engram_mcp.interfaces.bootstrap_server import StandIn
    from engram_mcp.interfaces.server import build_server

    wire = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in build_server().engram.tools]
    assert wire == operations.TOOLS
    assert StandIn.__module__  # imported under the full interpreter too
    assert [t["name"] for t in operations.TOOLS] == [op.tool.name for op in operations.OPERATIONS if op.tool]
    assert all(operations.SCHEMAS[t["name"]] is t["inputSchema"] for t in operations.TOOLS)


def test_the_registry_imports_under_python_s_without_services() -> None:
    """The stand-in and the hooks import it with the standard library only (`python -S -P`)."""
    code = (
        "import sys; import engram_mcp.core.operations as o; "
        "print(len(o.TOOLS), sorted(m for m in sys.modules if m.startswith('engram_mcp.') and not m.startswith('engram_mcp.core')))"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PACKAGE.parent)}
    out = subprocess.run([sys.executable, "-S", "-P", "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["9", "[]"]


def _literal_ops(path: Path, calls: set[str]) -> set[str]:
    """The string literals passed as the operation name to `calls` in one module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if name in calls and args:
                found.add(args[0].value if name != "enqueue" else node.args[1].value)
    return found


def test_the_cli_and_the_hooks_send_only_registered_operations() -> None:
    cli = _literal_ops(PACKAGE / "interfaces" / "cli.py", {"call", "call_with_progress"})
    # `engram daemon stop` sends its op through the client's stop_daemon, which waits for the exit
    cli |= _literal_ops(PACKAGE / "daemon" / "client.py", {"call"})
    hooks = _literal_ops(PACKAGE / "interfaces" / "hooks.py", {"ask", "enqueue"})
    assert {"store", "recall", "list", "tags", "export", "shutdown", "ping"} <= cli
    assert {"hook_session_start", "hook_prompt", "hook_config", "hook_session_end", "hook_capture"} <= hooks
    assert not (cli | hooks) - set(operations.BY_NAME), "an op name no entry declares"


# ---------------------------------------------------------------------- argument binding
def test_an_unknown_argument_is_invalid_input_naming_it(daemon, ctx) -> None:
    res = daemon_request(daemon, "status", {"verbose": True}, ctx)
    assert res["error"]["error"] == "invalid_input" and res["error"]["field"] == "verbose"
    res = daemon_request(daemon, "tags", {"scope": "project", "colour": "red"}, ctx)  # a module handler
    assert res["error"]["error"] == "invalid_input" and res["error"]["field"] == "colour"
    assert res["error"]["message"] == "bad arguments: 'colour' is not an argument of tags; allowed: scope, limit"


def test_a_missing_argument_is_invalid_input_naming_it(daemon, ctx) -> None:
    res = daemon_request(daemon, "forget", {"reason": "old"}, ctx)
    assert res["error"]["error"] == "invalid_input" and res["error"]["field"] == "memory_id"
    assert "memory_id" in res["error"]["message"]
    res = daemon_request(daemon, "hook_prompt", {}, ctx)
    assert res["error"]["error"] == "invalid_input" and res["error"]["field"] == "prompt"


def test_an_argument_that_collides_with_the_context_is_invalid_input(daemon, ctx) -> None:
    res = daemon_request(daemon, "get", {"memory_id": "memory:01JAAAAAAAAAAAAAAAAAAAAAAA", "ctx": {}}, ctx)
    assert res["error"]["error"] == "invalid_input" and res["error"]["field"] == "ctx"


def test_an_unknown_operation_is_invalid_input(daemon, ctx) -> None:
    res = daemon_request(daemon, "no_such_op", {}, ctx)
    assert res["error"]["error"] == "invalid_input" and "no_such_op" in res["error"]["message"]
    with pytest.raises(Exception, match="unknown operation"):
        dispatch.call(daemon.service, "no_such_op", ctx, {})


def raises_type_error(access: Any, ctx: Any, *, x: int = 1) -> dict[str, Any]:
    """A handler whose body has a bug that Python reports as a TypeError about arguments."""
    return {"n": len(x)}  # type: ignore[arg-type]  # TypeError: object of type 'int' has no len()


def worded_like_bad_input(access: Any, ctx: Any) -> dict[str, Any]:
    raise TypeError("helper() got an unexpected keyword argument 'weight'")


def echo(access: Any, ctx: Any, *, word: str) -> dict[str, Any]:
    """A tiny read-only op: proves a new operation needs only its entry and its function."""
    return {"word": word, "project": str(ctx.project_root), "has_lock": hasattr(access, "lock")}


def _register(monkeypatch: pytest.MonkeyPatch, name: str, handler: str) -> None:
    op = Operation(name, handler, {"type": "object", "properties": {}, "additionalProperties": False}, read_only=True)
    monkeypatch.setitem(operations.BY_NAME, name, op)


@pytest.mark.parametrize("handler", ["raises_type_error", "worded_like_bad_input"])
def test_a_type_error_inside_a_handler_is_an_internal_error(daemon, ctx, monkeypatch, handler: str) -> None:
    _register(monkeypatch, "probe", f"tests.test_operations:{handler}")
    res = daemon_request(daemon, "probe", {}, ctx)
    assert res["ok"] is False
    assert res["error"]["error"] == "internal_error" and res["error"]["message"].startswith("TypeError")
    assert res["error"]["retry_possible"] is True


def test_a_new_operation_is_one_entry_and_one_function(daemon, ctx, monkeypatch) -> None:
    _register(monkeypatch, "echo", "tests.test_operations:echo")
    res = daemon_request(daemon, "echo", {"word": "hello"}, ctx)
    assert res == {"id": 1, "ok": True, "result": {"word": "hello", "project": str(ctx.project_root), "has_lock": True}}
    assert daemon_request(daemon, "echo", {"words": "hello"}, ctx)["error"]["field"] == "words"


def test_a_queued_write_with_a_bad_argument_is_rejected_naming_it(daemon, fake_service, ctx) -> None:
    from engram_mcp.core import spool

    c = {"project_root": str(ctx.project_root), "session_id": ctx.session_id}
    spool.enqueue(fake_service.user_dir, "tag", {"memory_id": "memory:01JAAAAAAAAAAAAAAAAAAAAAAA", "colour": "x"}, c)
    assert daemon.drain_spool()["rejected"] == 1
    rejected = next((spool.spool_dir(fake_service.user_dir) / "rejected").glob("*.json"))
    error = json.loads(rejected.read_text())["rejected_error"]
    assert error.startswith("invalid_input: bad arguments") and "colour" in error


# ---------------------------------------------------------------------- the `tags` operation
def _store(daemon: Any, ctx: Any, content: str, tags: list[str], scope: str = "project") -> str:
    res = daemon_request(daemon, "store", {"content": content, "type": "semantic", "scope": scope, "tags": tags}, ctx)
    assert res["ok"], res
    return res["result"]["memory_id"]


def test_tags_counts_the_tags_of_recallable_memories_per_scope(daemon, ctx) -> None:
    _store(daemon, ctx, "Invoices are generated by the billing cron at midnight", ["billing", "cron"])
    gone = _store(daemon, ctx, "Refunds over 500 EUR need a manager's approval", ["billing", "refunds"])
    _store(daemon, ctx, "The user prefers tabs over spaces in Makefiles", ["billing", "style"], scope="user")
    assert daemon_request(daemon, "forget", {"memory_id": gone}, ctx)["ok"]
    res = daemon_request(daemon, "tags", {}, ctx)["result"]
    assert res["tags"][0] == {"tag": "billing", "count": 2, "by_scope": {"project": 1, "user": 1}}
    assert {t["tag"]: t["count"] for t in res["tags"]} == {"billing": 2, "cron": 1, "style": 1}  # refunds: forgotten
    assert res["total_tags"] == 3 and res["warnings"] == []
    only = daemon_request(daemon, "tags", {"scope": "project", "limit": 1}, ctx)["result"]
    assert only["tags"] == [{"tag": "billing", "count": 1, "by_scope": {"project": 1}}] and only["total_tags"] == 2
    bad = daemon_request(daemon, "tags", {"limit": 0}, ctx)["error"]
    assert bad["error"] == "invalid_input" and bad["field"] == "limit"
    assert daemon_request(daemon, "tags", {"scope": "team"}, ctx)["error"]["field"] == "scope"


@pytest.mark.slow
def test_engram_tags_over_the_real_daemon(tmp_path: Path) -> None:
    e = make_env(tmp_path)
    try:
        for text, tags in (("Deploy with make deploy", "deploy,ci"), ("CI runs on every push", "ci")):
            e.cli("store", text, "--type", "procedural", "--scope", "project", "--tags", tags)
        listed = json.loads(e.cli("--json", "tags").stdout)
        assert [(t["tag"], t["count"]) for t in listed["tags"]] == [("ci", 2), ("deploy", 1)]
        human = e.cli("tags", "--limit", "1").stdout.splitlines()
        assert human[0].split() == ["2", "ci"] and "1 of 2 tags" in human[1]
        bad = e.cli("tags", "--scope", "team", check=False)
        assert bad.returncode == 1 and "scope" in bad.stderr
    finally:
        e.shutdown()
