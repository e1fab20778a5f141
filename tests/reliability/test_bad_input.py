"""Bad input (issue 6, part 3): arguments generated from the tools' own JSON Schemas and then
mutated (wrong types, huge strings, unicode, control characters, SurrealQL in every string,
hostile ids) never crash the server, always come back as a correct result or a structured error
envelope, and a failed call changes nothing.

Most examples go through the MCP server's own tool handler in this process (fast), forwarding to
a real daemon; a smaller batch goes over real stdio. The daemon's socket, malformed hook input and
a missing or garbled config file are attacked too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_mcp.core.errors import EngramError
from engram_mcp.core.redaction import sanitize
from engram_mcp.core.operations import SCHEMAS, TOOL_NAMES
from engram_mcp.core.schemas import ID_PATTERN
from tests.reliability._support import (
    PYTHON,
    REPO,
    STRESS,
    InProcessMCP,
    Sandbox,
    assert_envelope,
    hooks_available,
    make_sandbox,
    record,
    scaled,
    socket_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SESSION = "fuzz-session-1"
EXAMPLES = scaled(200, 1000)
MEMORY_ID_RE = re.compile(r"^memory:[0-9A-HJKMNP-TV-Z]{26}$")
ID_FIELDS = {"memory_id", "supersedes", "derived_from"}

# ---------------------------------------------------------------------- hostile strings
SURREALQL = [
    "'; DELETE memory; --",
    '"; DELETE memory; --',
    "memory:x; DELETE memory",
    "⟩; REMOVE TABLE memory; ⟨",
    "`; REMOVE DATABASE default; `",
    "$record",
    "$s0_record",
    "$auth",
    "type::thing('memory', 'x')",
    "(SELECT * FROM memory)",
    "RETURN NONE; DELETE memory;",
    "}; DELETE memory; {",
    "LET $x = (DELETE memory); RETURN $x",
    "DEFINE TABLE memory SCHEMALESS OVERWRITE",
    "REMOVE NAMESPACE project",
    "/* */ DELETE memory WHERE true",
    "\\'; UPDATE memory SET content = 'pwned'",
    "memory:⟨01ARZ3NDEKTSV4RRFFQ69G5FAV⟩",
    "INFO FOR ROOT",
    "BEGIN; DELETE memory; COMMIT;",
]
CONTROL = ["\x00", "\x01\x02\x03", "\x1b[31mred\x1b[0m", "\r\n\r\n", "\u2028\u2029", "\ufeff", "\u202egnp.exe",
           "\u200b\u200c\u200d", "\x7f", "\t\v\f", "a\x00b"]
UNICODE = ["Ünïcödé", "日本語のメモリー", "🧠💾🔥" * 3, "e\u0301\u0301\u0301", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
           "\uffff\ufffe", "Ω≈ç√∫", "عربى", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\ud800", "x\udfffy"]
BAD_IDS = [
    "memory:x; DELETE memory",
    "memory:01ARZ3NDEKTSV4RRFFQ69G5FAV; DELETE memory",
    "memory:⟨01ARZ3NDEKTSV4RRFFQ69G5FAV⟩; DELETE memory",
    "memory:`01ARZ3NDEKTSV4RRFFQ69G5FAV`",
    "entity:01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "memory:01ARZ3NDEKTSV4RRFFQ69G5FAVX",
    "memory:ILOUILOUILOUILOUILOUILOUIL",
    "memory:" + "0" * 26,
    "memory:" + "Z" * 26,
    " memory:01ARZ3NDEKTSV4RRFFQ69G5FAV ",
    "MEMORY:01ARZ3NDEKTSV4RRFFQ69G5FAV",
    "memory:01arz3ndektsv4rrffq69g5fav",
    "memory:",
    "",
    "memory:*",
    "memory:01ARZ3NDEKTSV4RRFFQ69G5FA\u0000",
    "../../etc/passwd",
]
HOSTILE = SURREALQL + CONTROL + UNICODE


# ---------------------------------------------------------------------- schema -> strategy
def _text(max_size: int) -> st.SearchStrategy[str]:
    plain = st.text(max_size=max_size)
    hostile = st.sampled_from([s for s in HOSTILE if len(s) <= max_size])
    mixed = st.builds(lambda a, h, b: (a + h + b)[:max_size], st.text(max_size=20), hostile, st.text(max_size=20))
    return st.one_of(plain, hostile, mixed)


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                      _text(60))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                              st.dictionaries(_text(12), inner, max_size=3)), max_leaves=8)


def from_schema(schema: dict[str, Any], pool: list[str], name: str = "") -> st.SearchStrategy[Any]:
    """A strategy for values valid under `schema` (the subset of JSON Schema the tools use)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([from_schema(s, pool, name) for s in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        if schema.get("pattern") == ID_PATTERN:
            return st.one_of(st.from_regex(ID_PATTERN, fullmatch=True), st.sampled_from(tuple(pool)))
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return _text(min(schema.get("maxLength", 200), 200))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        items = from_schema(schema.get("items", {}), pool, name)
        unique = schema.get("uniqueItems", False)
        return st.lists(items, max_size=4, unique_by=(lambda v: json.dumps(v, sort_keys=True)) if unique else None)
    if kind == "object":
        props = schema.get("properties")
        if props is None:  # update_memory.metadata: any JSON object
            return st.dictionaries(_text(16), JSON_VALUE, max_size=min(schema.get("maxProperties", 5), 5))
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: from_schema(v, pool, k) for k, v in props.items() if k in required},
            optional={k: from_schema(v, pool, k) for k, v in props.items() if k not in required},
        )
    return JSON_VALUE


# ---------------------------------------------------------------------- mutations
MUTATIONS = ["none", "wrong_type", "huge", "unicode", "control", "surrealql_everywhere", "bad_id", "extra_key",
             "drop_required", "numbers", "not_an_object", "deep", "many_items"]
WRONG_TYPES = [0, -1, 1.5, True, False, None, [], [1, "a"], {}, {"$gt": ""}, "", "x", "memory:x; DELETE memory"]
NUMBERS = [math.nan, math.inf, -math.inf, -0.0, 1e308, -1e308, 2**63, -(2**63) - 1, 10**30, 5.0, 1e-320]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _set(root: Any, path: tuple, value: Any) -> None:
    cur = root
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value


def _get(root: Any, path: tuple) -> Any:
    for p in path:
        root = root[p]
    return root


def _strings(value: Any, prefix: tuple = ()) -> list[tuple]:
    return [p for p in _paths(value, prefix) if isinstance(_get(value, p), str)]


@st.composite
def tool_arguments(draw: Any, tool: str, pool: list[str]) -> tuple[str, Any]:
    schema = SCHEMAS[tool]
    args = draw(from_schema(schema, pool))
    kind = draw(st.sampled_from(MUTATIONS))
    paths = _paths(args)
    strings = _strings(args)
    if kind == "wrong_type":
        if paths:
            _set(args, draw(st.sampled_from(paths)), draw(st.sampled_from(WRONG_TYPES)))
        else:
            args[draw(st.sampled_from(list(schema["properties"]) or ["x"]))] = draw(st.sampled_from(WRONG_TYPES))
    elif kind == "huge":
        size = draw(st.sampled_from([20_001, 100_000, 300_000]))
        target = draw(st.sampled_from(strings)) if strings else ("content",)
        _set(args, target, draw(st.sampled_from(["x", "é", "🧠", "'; DELETE memory; "])) * (size // 4 + 1))
    elif kind in ("unicode", "control"):
        pool_ = UNICODE if kind == "unicode" else CONTROL
        for p in strings or []:
            _set(args, p, _get(args, p) + draw(st.sampled_from(pool_)))
        if not strings and paths:
            _set(args, draw(st.sampled_from(paths)), draw(st.sampled_from(pool_)))
    elif kind == "surrealql_everywhere":
        for p in strings:
            if p[0] in ID_FIELDS or (len(p) > 1 and p[-2] == "derived_from"):
                continue  # ids keep their pattern here; hostile ids are `bad_id`
            _set(args, p, draw(st.sampled_from(SURREALQL)) + " " + _get(args, p))
        if tool == "update_memory":
            args.setdefault("metadata", {})[draw(st.sampled_from(SURREALQL))] = draw(st.sampled_from(SURREALQL))
    elif kind == "bad_id":
        id_paths = [p for p in strings if p[0] in ID_FIELDS]
        if id_paths:
            _set(args, draw(st.sampled_from(id_paths)), draw(st.sampled_from(BAD_IDS)))
        elif "memory_id" in schema["properties"]:
            args["memory_id"] = draw(st.sampled_from(BAD_IDS))
    elif kind == "extra_key":
        args[draw(st.sampled_from(["color", "__proto__", "$where", "memory_id ", "Content", "id", "scope\x00"]))] = draw(JSON_VALUE)
    elif kind == "drop_required":
        required = schema.get("required") or []
        if required:
            args.pop(draw(st.sampled_from(required)), None)
    elif kind == "numbers":
        numeric = [p for p in paths if isinstance(_get(args, p), (int, float)) and not isinstance(_get(args, p), bool)]
        target = draw(st.sampled_from(numeric)) if numeric else draw(st.sampled_from(
            [("importance",), ("limit",), ("depth",), ("max_tokens",), ("source", "conversation_turn")] if tool != "get_memory_status" else [("n",)]))
        if len(target) > 1 and not isinstance(args.get(target[0]), dict):
            args[target[0]] = {}
        _set(args, target, draw(st.sampled_from(NUMBERS)))
    elif kind == "not_an_object":
        return kind, draw(st.sampled_from([[], [args], "x", 5, True, 1.5]))
    elif kind == "deep":
        deep: Any = "bottom"
        for _ in range(draw(st.integers(9, 60))):
            deep = {"a": deep} if draw(st.booleans()) else [deep]
        key = "metadata" if tool == "update_memory" else draw(st.sampled_from(list(schema["properties"]) or ["x"]))
        args[key] = deep
    elif kind == "many_items":
        key = draw(st.sampled_from(["tags", "derived_from", "files_in_context", "related_entities", "sections", "scope"]))
        args[key] = ["t"] * draw(st.sampled_from([33, 101, 5000]))
    return kind, args


# ---------------------------------------------------------------------- correctness of results
def _check_result(tool: str, args: dict[str, Any], res: Any, fuzz: "Fuzz") -> None:
    assert isinstance(res, dict), res
    if tool == "store_memory":
        assert MEMORY_ID_RE.match(res["memory_id"]) and res["action"] in ("created", "merged"), res
        assert res["scope"] == args["scope"]
        if res["action"] == "created":
            stored = fuzz.daemon("get", {"memory_id": res["memory_id"]})
            expected = sanitize(args["content"].replace("\x00", "")).text
            assert stored["content"] == expected, "stored text is the (redacted) input, verbatim: nothing was interpreted"
            fuzz.pool.append(res["memory_id"])
    elif tool == "recall_memories":
        assert isinstance(res.get("memories", []), list) and isinstance(res["total_matched"], int)
        assert len(res.get("memories", [])) <= args.get("limit", 10)
        for m in res.get("memories", []):
            assert MEMORY_ID_RE.match(m["id"]) and isinstance(m["content"], str)
    elif tool == "search_knowledge_graph":
        assert isinstance(res.get("entities", []), list)
    elif tool == "forget_memory":
        assert res["status"] in ("forgotten", "active") and MEMORY_ID_RE.match(res["memory_id"])
    elif tool == "update_memory":
        assert isinstance(res["version"], int) and isinstance(res.get("updated_fields", []), list)
    elif tool == "promote_memory":
        assert res["new_scope"] == args["target_scope"] and MEMORY_ID_RE.match(res["target_id"])
    elif tool == "reflect_and_consolidate":
        assert res["dry_run"] is bool(args.get("dry_run", False))
    elif tool == "get_memory_context":
        block = res.get("context_block", "")
        assert block == "" or (block.startswith("<engram-memory>") and block.rstrip().endswith("</engram-memory>"))
    elif tool == "get_memory_status":
        assert res["connection"]["status"] in ("connected", "degraded")


class Fuzz:
    """The module's daemon, in-process MCP handler and the state fingerprints."""

    def __init__(self, sandbox: Sandbox, mcp: InProcessMCP, pid: int) -> None:
        self.sandbox = sandbox
        self.mcp = mcp
        self.pid = pid
        self.pool: list[str] = []
        self.export_path = sandbox.root / "fp.jsonl"
        self.stats: dict[str, dict[str, int]] = {}
        self._fp: Any = None

    def daemon(self, op: str, args: dict[str, Any] | None = None) -> Any:
        return self.sandbox.call(op, args, session=SESSION)

    def counts(self) -> str:
        """Memory, entity and relationship counts per scope (one status call)."""
        status = self.daemon("status")
        return json.dumps({s: {k: v.get(k) for k in ("total", "by_type", "by_status", "entities", "relationships")}
                           for s, v in status["scopes"].items()}, sort_keys=True)

    def pool_state(self) -> str:
        """The full records (with history) of a few memories the examples target."""
        pool = []
        for mid in self.pool[:3] + self.pool[-1:]:
            try:
                m = self.daemon("get", {"memory_id": mid, "history": True})
                m.pop("strength", None)
                pool.append(m)
            except EngramError as exc:  # a purged or never-stored pool id is fine
                pool.append(exc.code)
        return json.dumps(pool, sort_keys=True, default=str)

    def cheap_fingerprint(self) -> str:
        return self.counts() + self.pool_state()

    def export_fingerprint(self) -> str:
        self.daemon("export", {"path": str(self.export_path), "scopes": ["session", "project", "user"], "include_vectors": False})
        lines = [l for l in self.export_path.read_text().splitlines() if '"kind": "header"' not in l]
        return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory):
    sandbox = make_sandbox(tmp_path_factory.mktemp("fuzz"))
    for k in [k for k in os.environ if k.startswith(("ENGRAM_", "CLAUDE"))]:
        os.environ.pop(k)
    proc = sandbox.start_daemon()
    mcp = InProcessMCP(sandbox)
    f = Fuzz(sandbox, mcp, proc.pid)
    for i, (scope, typ) in enumerate([("project", "semantic"), ("project", "procedural"), ("session", "episodic"),
                                      ("session", "semantic"), ("user", "semantic"), ("project", "episodic")]):
        res = mcp.ok("store_memory", {"content": f"seed memory {i} about the quokka{i} deployment pipeline", "type": typ,
                                      "scope": scope, "importance": 0.8, "tags": ["seed"],
                                      "related_entities": [{"name": f"Service{i}", "type": "component", "relationship": "uses",
                                                            "target": "Postgres"}]}, session=SESSION)
        f.pool.append(res["memory_id"])
    try:
        yield f
    finally:
        total = sum(s["examples"] for s in f.stats.values())
        record("bad_input", in_process_examples=total, tools=len(f.stats),
               per_tool={k: v["examples"] for k, v in f.stats.items()},
               errors=sum(s["errors"] for s in f.stats.values()), successes=sum(s["ok"] for s in f.stats.values()),
               export_comparisons=sum(s["exports"] for s in f.stats.values()),
               record_comparisons=sum(s["deep"] for s in f.stats.values()))
        mcp.close()
        sandbox.cleanup()


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_generated_and_mutated_arguments_never_crash_and_failures_change_nothing(fuzz: Fuzz, tool: str) -> None:
    stats = fuzz.stats.setdefault(tool, {"examples": 0, "errors": 0, "ok": 0, "exports": 0, "deep": 0})
    fuzz._fp = None

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not STRESS,
              suppress_health_check=list(HealthCheck))
    @given(case=tool_arguments(tool, list(fuzz.pool)))
    def run(case: tuple[str, Any]) -> None:
        # every failed call is checked against the counts; one in 8 against whole records with
        # their history too, and one in 40 against a full export of every scope
        kind, args = case
        stats["examples"] += 1
        probe = stats["examples"] % 40
        if fuzz._fp is None:
            fuzz._fp = fuzz.counts()
        pool_before = fuzz.pool_state() if probe % 8 == 1 else None
        export_before = fuzz.export_fingerprint() if probe == 0 else None
        is_error, payload = fuzz.mcp.call(tool, args, session=SESSION)
        if not is_error:
            stats["ok"] += 1
            fuzz._fp = None
            sent = {k: v for k, v in args.items() if v is not None} if isinstance(args, dict) else args
            _check_result(tool, sent, payload, fuzz)
            return
        stats["errors"] += 1
        env = assert_envelope(payload)
        assert env["error"] not in ("internal_error", "engram_error"), f"unhandled failure for {kind} {tool}: {env}"
        assert not (env["degraded"] and env["error"] == "memory_unavailable"), f"bad input reported as a broken store: {env}"
        assert fuzz.counts() == fuzz._fp, f"a failed {tool} call ({kind}: {env['message'][:200]}) changed the stores"
        if pool_before is not None:
            stats["deep"] += 1
            assert fuzz.pool_state() == pool_before, f"a failed {tool} call ({kind}) changed a memory"
        if export_before is not None:
            stats["exports"] += 1
            assert fuzz.export_fingerprint() == export_before, f"a failed {tool} call ({kind}) changed the export"

    run()
    # the daemon that served every example is the one that started: nothing crashed it
    assert fuzz.daemon("ping")["pid"] == fuzz.pid


# ---------------------------------------------------------------------- real stdio
def _stdio_cases(pool: list[str]) -> list[tuple[str, Any]]:
    """A fixed batch of hostile calls, one family per line, for the real stdio server."""
    mid = pool[0]
    cases: list[tuple[str, Any]] = []
    for s in SURREALQL:
        cases.append(("store_memory", {"content": s, "type": "semantic", "scope": "project", "tags": [s[:60]], "category": s,
                                       "summary": s, "source": {"tool": s, "file": s}}))
        cases.append(("recall_memories", {"query": s, "category": s, "tags": [s]}))
    for bad in BAD_IDS:
        for tool in ("forget_memory", "update_memory", "promote_memory"):
            args: dict[str, Any] = {"memory_id": bad}
            if tool == "promote_memory":
                args["target_scope"] = "user"
            if tool == "update_memory":
                args["importance"] = 0.1
            cases.append((tool, args))
    for c in CONTROL + [u for u in UNICODE if "\ud800" not in u and "\udfff" not in u]:
        cases.append(("store_memory", {"content": f"note {c} end", "type": "episodic", "scope": "session"}))
        cases.append(("search_knowledge_graph", {"entity": c}))
    for tool in TOOL_NAMES:  # (non-object arguments: the SDK client refuses to send them; see the in-process test)
        cases.append((tool, {"unexpected": True}))
    cases += [
        ("store_memory", {"content": "x" * 300_000, "type": "semantic", "scope": "project"}),
        ("update_memory", {"memory_id": mid, "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}}),
        ("update_memory", {"memory_id": mid, "metadata": {"big": 10**30}}),
        ("store_memory", {"content": "big turn", "type": "semantic", "scope": "project", "source": {"conversation_turn": 2**64}}),
        ("get_memory_context", {"files_in_context": ["a"] * 101}),
        ("recall_memories", {"query": "x", "limit": 1e308}),
    ]
    return cases


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_real_stdio_server_survives_a_batch_of_hostile_calls(fuzz: Fuzz, anyio_backend: str, tmp_path: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    env = fuzz.sandbox.env_with(session=SESSION)
    params = StdioServerParameters(command=PYTHON, args=["-m", "engram_mcp.interfaces.server"], env=env, cwd=str(fuzz.sandbox.project))
    errlog_path = tmp_path / "server.stderr"
    cases = _stdio_cases(fuzz.pool)
    answered = 0
    before = fuzz.pool_state()
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                for tool, args in cases:
                    try:
                        res = await session.call_tool(tool, args)
                    except MCPError:
                        answered += 1  # the SDK refused a non-object argument list: a protocol error, not a crash
                        continue
                    answered += 1
                    payload = json.loads(res.content[0].text)
                    if res.is_error:
                        env_ = assert_envelope(payload)
                        assert env_["error"] not in ("internal_error", "engram_error"), (tool, args if len(str(args)) < 300 else "...", env_)
                    else:
                        _check_result(tool, args, payload, fuzz)
                status = await session.call_tool("get_memory_status", {})
                assert not status.is_error
    stderr = errlog_path.read_text(errors="replace")
    assert "Traceback" not in stderr, stderr[-3000:]
    assert answered == len(cases)
    assert fuzz.daemon("ping")["pid"] == fuzz.pid
    # the seed memories the hostile calls aimed at are unchanged (only stores succeeded)
    after = json.loads(fuzz.pool_state())
    assert [p.get("content") if isinstance(p, dict) else p for p in after[:3]] == \
           [p.get("content") if isinstance(p, dict) else p for p in json.loads(before)[:3]]
    record("bad_input", stdio_calls=len(cases))


# ---------------------------------------------------------------------- the daemon socket itself
def test_daemon_socket_answers_garbage_lines_and_survives(fuzz: Fuzz) -> None:
    lines = [
        b"not json\n", b"\n", b"[]\n", b"42\n", b'"op"\n', b"{}\n", b'{"op": "nope"}\n', b'{"op": 5}\n',
        b'{"op": "store", "args": []}\n', b'{"op": "store", "args": "x"}\n',
        b'{"op": "store", "args": {"content": "x", "type": "semantic", "scope": "project", "evil": 1}}\n',
        b'{"op": "status", "ctx": {"project_root": 5}}\n', b'{"op": "status", "ctx": {"session_id": "../../x"}}\n',
        b'{"op": "status", "ctx": {"session_id": "a; DELETE memory"}}\n', b'{"op": "status", "ctx": []}\n',
        b'{"op": "recall", "args": {"query": "x", "limit": 1e999}}\n', b'{"op": "recall", "args": {"query": NaN}}\n',
        b"\xff\xfe\x00\x01garbage\n", b'{"op": "get", "args": {"memory_id": "memory:x; DELETE memory"}}\n',
        b'{"op": "store", "args": {"content": "' + b"A" * 300_000 + b'", "type": "semantic", "scope": "project"}}\n',
    ]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(socket_of(fuzz.sandbox)))
    f = sock.makefile("rwb")
    answers = []
    for line in lines:
        f.write(line)
        f.flush()
        reply = f.readline()
        assert reply, f"daemon closed the connection after {line[:60]!r}"
        answers.append(json.loads(reply))
    sock.close()
    for line, ans in zip(lines, answers):
        if ans.get("ok"):
            continue
        env = assert_envelope(ans["error"])
        assert env["error"] != "internal_error", (line[:80], env)
    assert fuzz.daemon("ping")["pid"] == fuzz.pid
    record("bad_input", socket_lines=len(lines))


def test_daemon_graph_lookup_with_a_nul_is_bad_input_not_a_broken_store(fuzz: Fuzz) -> None:
    try:
        fuzz.daemon("graph", {"entity": "a\x00b"})
    except EngramError as exc:
        assert exc.code != "memory_unavailable", exc.envelope()


# ---------------------------------------------------------------------- hooks and config
MALFORMED_HOOK_INPUTS = [b"", b"not json", b"{", b"[]", b"null", b'"x"', b"\xff\xfe\x00", b'{"hook_event_name": 5}',
                         b'{"session_id": "../../etc", "cwd": "/nonexistent", "hook_event_name": "PostToolUse"}',
                         b'{"session_id": "s; DELETE memory", "tool_name": {}, "tool_response": []}', b"{" * 10_000]
NOT_AN_OBJECT = 7  # the first inputs are not a JSON object at all: the hook must say so
HOOK_EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "PreCompact", "Stop", "SubagentStop", "SessionEnd"]


@pytest.mark.skipif(not hooks_available(), reason="engram_mcp/interfaces/hooks.py is being written by another engineer")
def test_malformed_hook_input_gives_a_clear_message_and_never_a_traceback(fuzz: Fuzz) -> None:
    from concurrent.futures import ThreadPoolExecutor

    env = fuzz.sandbox.env_with(session=SESSION, ENGRAM_PYTHON=PYTHON)
    cases = [(event, data) for event in HOOK_EVENTS for data in (b"", b"{", b'{"session_id": "s; DELETE memory", "tool_name": {}}')]
    cases += [("PostToolUse", data) for data in MALFORMED_HOOK_INPUTS] + [("SessionStart", data) for data in MALFORMED_HOOK_INPUTS]

    def run(case: tuple[str, bytes]) -> tuple[str, bytes, subprocess.CompletedProcess]:
        event, data = case
        return event, data, subprocess.run([str(REPO / "bin" / "engram-hook"), event], input=data, capture_output=True, env=env,
                                           cwd=str(fuzz.sandbox.project), timeout=60)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, cases))
    for event, data, proc in results:
        err = proc.stderr.decode(errors="replace")
        assert "Traceback" not in err, (event, data[:40], err[-2000:])
        assert proc.returncode == 0, "hooks fail open: a broken input never blocks Claude Code"
        if data in MALFORMED_HOOK_INPUTS[:NOT_AN_OBJECT]:
            assert re.search(r"engram.*(json|input|empty)", err, re.I), f"no clear message for {data[:20]!r}: {err!r}"
        assert proc.stdout in (b"", b"{}") or json.loads(proc.stdout), proc.stdout[:200]
    assert fuzz.daemon("ping")["pid"] == fuzz.pid
    record("bad_input", malformed_hook_inputs=len(cases))


GARBLED_CONFIGS = {
    "broken_yaml": "---\nfusion: [unclosed\nkeyword_weight: 0.5\n---\n",
    "unclosed_frontmatter": "---\nfusion: rrf\n",
    "not_a_mapping": "---\n- a\n- b\n---\n",
    "wrong_values": "---\nkeyword_weight: lots\nfusion: psychic\n---\n",
    "binary": b"\xff\xfe\x00\x00garbage\x00",
}


@pytest.fixture(scope="module")
def config_sandbox(tmp_path_factory: pytest.TempPathFactory):
    """One daemon; each case uses a fresh project (the daemon caches config per project for 5 s)."""
    sb = make_sandbox(tmp_path_factory.mktemp("cfg"))
    sb.start_daemon()
    try:
        yield sb
    finally:
        sb.cleanup()


def _fresh_project(sb: Sandbox, name: str) -> Path:
    from tests.reliability._support import make_project

    return make_project(sb.root / f"proj-{name}-{time.monotonic_ns()}")


def test_missing_config_file_means_defaults(config_sandbox: Sandbox) -> None:
    cfg = config_sandbox.home / ".claude" / "engram.local.md"
    cfg.unlink(missing_ok=True)
    proj = _fresh_project(config_sandbox, "missing")
    out = config_sandbox.cli("store", "defaults are fine", "--type", "semantic", "--scope", "project", "--json", cwd=proj)
    assert json.loads(out.stdout)["action"] == "created"


@pytest.mark.parametrize("name", sorted(GARBLED_CONFIGS))
def test_garbled_config_file_gives_a_message_naming_the_file(config_sandbox: Sandbox, name: str) -> None:
    cfg = config_sandbox.home / ".claude" / "engram.local.md"
    body = GARBLED_CONFIGS[name]
    cfg.write_bytes(body if isinstance(body, bytes) else body.encode())
    proj = _fresh_project(config_sandbox, name)
    try:
        proc = config_sandbox.cli("store", "with a garbled config", "--type", "semantic", "--scope", "project", check=False, cwd=proj)
        text = proc.stdout + proc.stderr
        assert "Traceback" not in text
        if proc.returncode != 0:
            assert "engram.local.md" in text and len(text) < 2000, text
        mcp = InProcessMCP(config_sandbox)
        try:
            is_error, payload = mcp.call("recall_memories", {"query": "garbled"}, project=proj)
        finally:
            mcp.close()
        if is_error:
            env = assert_envelope(payload)
            assert "engram.local.md" in env["message"], env
        if name == "broken_yaml":
            doctor = config_sandbox.cli("doctor", check=False, cwd=proj)
            assert doctor.returncode != 0 and "engram.local.md" in doctor.stdout and "line" in doctor.stdout, doctor.stdout
    finally:
        cfg.unlink()
    record("bad_input", garbled_configs=len(GARBLED_CONFIGS))


def test_garbled_config_is_a_typed_non_retryable_error_or_a_warning(config_sandbox: Sandbox) -> None:
    cfg = config_sandbox.home / ".claude" / "engram.local.md"
    cfg.write_text(GARBLED_CONFIGS["broken_yaml"])
    proj = _fresh_project(config_sandbox, "typed")
    mcp = InProcessMCP(config_sandbox)
    try:
        is_error, payload = mcp.call("recall_memories", {"query": "garbled"}, project=proj)
    finally:
        mcp.close()
        cfg.unlink()
    if is_error:
        assert payload["error"] != "internal_error" and payload["retry_possible"] is False, payload


def test_export_to_an_impossible_path_is_a_typed_error(config_sandbox: Sandbox) -> None:
    blocker = config_sandbox.root / "a-file"
    blocker.write_text("x")
    proc = config_sandbox.cli("--json", "export", str(blocker / "sub" / "out.jsonl"), check=False)
    assert proc.returncode == 1
    env = json.loads(proc.stderr)
    assert env["error"] == "invalid_input" and str(blocker) in env["message"], env
