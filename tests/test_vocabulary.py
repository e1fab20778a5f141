"""The vocabulary (core/vocabulary.py) is the one spelling of scopes, types, statuses and links:
the store's ASSERTs, the MCP tool schemas and the CLI's choices all say what it says, and no
module of the package spells one of its word lists out again."""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram_mcp.core import vocabulary as v
from engram_mcp.core.config import CONFIG_SCHEMA, SCOPE_WEIGHT_PROFILES
from engram_mcp.index.scoring import HALF_LIFE_DAYS
from engram_mcp.interfaces.cli import build_parser
from engram_mcp.core.operations import TOOLS
from engram_mcp.storage.schema import MIGRATIONS

PACKAGE = Path(__file__).resolve().parent.parent / "engram_mcp"
#: Every declared word list, by name (the ordered tuples themselves).
WORD_LISTS: dict[str, tuple[str, ...]] = {
    name: value
    for name, value in vars(v).items()
    if name.isupper() and isinstance(value, tuple) and all(isinstance(w, str) for w in value)
}
ASSERT_IN = re.compile(
    r"DEFINE FIELD (?:IF NOT EXISTS |OVERWRITE )?(?P<field>\w+) ON (?:TABLE )?(?P<table>\w+) .*?"
    r"ASSERT \$value IN \[(?P<words>[^\]]*)\]"
)
REMOVE_FIELD = re.compile(r"REMOVE FIELD (?:IF EXISTS )?(?P<field>\w+) ON (?:TABLE )?(?P<table>\w+)")


def _enums(node: Any, path: str = "") -> Iterator[tuple[str, list[Any]]]:
    """(path, values) of every JSON Schema enum below `node`."""
    if isinstance(node, dict):
        if "enum" in node:
            yield path, node["enum"]
        for key, child in node.items():
            yield from _enums(child, f"{path}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _enums(child, f"{path}/{i}")


def _tool_enum(tool: str, prop: str) -> list[list[Any]]:
    (schema,) = [t["inputSchema"] for t in TOOLS if t["name"] == tool]
    return [values for _, values in _enums(schema["properties"][prop])]


def _cli_choices() -> dict[tuple[str, str], list[str]]:
    """{(command, option): choices} of every CLI argument that has choices."""
    out: dict[tuple[str, str], list[str]] = {}
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                for arg in sub._actions:
                    if arg.choices is not None:
                        out[(command, arg.dest)] = list(arg.choices)
    return out


def _latest_asserts() -> dict[tuple[str, str], tuple[str, ...]]:
    """{(table, field): allowed words} from the last migration that defines each asserted field
    (a field a later migration removes is gone)."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for _version, _about, statements in MIGRATIONS:
        for statement in statements:
            for m in ASSERT_IN.finditer(statement):
                found[(m["table"], m["field"])] = tuple(w.strip().strip("'\"") for w in m["words"].split(","))
            for m in REMOVE_FIELD.finditer(statement):
                found.pop((m["table"], m["field"]), None)
    return found


# --------------------------------------------------------------------------- the store


def test_the_schema_asserts_allow_exactly_the_vocabulary() -> None:
    assert _latest_asserts() == {
        ("memory_link", "relation_type"): v.LINK_TYPES,
        ("session_registry", "status"): v.SESSION_STATUSES,
        ("consolidation_queue", "reason"): v.QUEUE_REASONS,
        ("consolidation_queue", "status"): v.QUEUE_STATUSES,
    }


def test_the_memory_fields_are_checked_against_the_vocabulary() -> None:
    """The memory table is schemaless since version 5; storage/memory_shape.py checks its
    words on every write, and allows exactly the vocabulary's."""
    from engram_mcp.core.errors import InvalidInput
    from engram_mcp.storage.memory_shape import FIELDS

    for name, words in (("memory_type", v.MEMORY_TYPES), ("scope", v.SCOPES), ("status", v.STATUSES)):
        for word in words:
            assert FIELDS[name](word, name) == word
        for wrong in ("team", words[0].upper(), ""):
            with pytest.raises(InvalidInput):
                FIELDS[name](wrong, name)


def test_the_assert_reader_sees_a_later_migration_remove_a_field(monkeypatch) -> None:
    extra = (99, "t", ["REMOVE FIELD IF EXISTS relation_type ON memory_link;"])
    monkeypatch.setattr(sys.modules[__name__], "MIGRATIONS", [*MIGRATIONS, extra])
    assert ("memory_link", "relation_type") not in _latest_asserts()


def test_the_assert_reader_sees_a_later_migration_redefine_a_field(monkeypatch) -> None:
    extra = (99, "t", ["DEFINE FIELD OVERWRITE scope ON memory TYPE string ASSERT $value IN ['session', 'team'];"])
    monkeypatch.setattr(sys.modules[__name__], "MIGRATIONS", [*MIGRATIONS, extra])
    assert _latest_asserts()[("memory", "scope")] == ("session", "team")


# --------------------------------------------------------------------------- the MCP tools


def test_the_tool_schemas_enums_are_the_vocabulary() -> None:
    assert _tool_enum("store_memory", "scope") == [list(v.SCOPES)]
    assert _tool_enum("store_memory", "type") == [list(v.MEMORY_TYPES)]
    assert _tool_enum("recall_memories", "scope") == [list(v.SCOPES)] * 2  # one scope, or a list of them
    assert _tool_enum("recall_memories", "type") == [list(v.MEMORY_TYPES)] * 2
    assert _tool_enum("recall_memories", "strategy") == [list(v.RECALL_STRATEGIES)]
    assert _tool_enum("promote_memory", "target_scope") == [list(v.PROMOTE_TARGETS)]
    assert _tool_enum("reflect_and_consolidate", "strategy") == [list(v.CONSOLIDATE_STRATEGIES)]
    assert _tool_enum("reflect_and_consolidate", "scope") == [list(v.SCOPES)]
    assert _tool_enum("search_knowledge_graph", "direction") == [list(v.GRAPH_DIRECTIONS)]
    assert _tool_enum("get_memory_context", "sections") == [list(v.CONTEXT_SECTIONS)]


def test_no_tool_enum_spells_part_of_a_word_list_differently() -> None:
    lists = {frozenset(words): words for words in WORD_LISTS.values()}
    for tool in TOOLS:
        for path, values in _enums(tool["inputSchema"]):
            words = set(values)
            related = [w for w in WORD_LISTS.values() if words & set(w)]
            if related:
                assert frozenset(words) in lists, f"{tool['name']}{path}: {values} is no declared word list"


# --------------------------------------------------------------------------- the CLI


def test_the_cli_choices_are_the_vocabulary() -> None:
    choices = _cli_choices()
    assert choices[("store", "type")] == list(v.MEMORY_TYPES)
    assert choices[("store", "scope")] == list(v.SCOPES)
    assert choices[("recall", "strategy")] == list(v.RECALL_STRATEGIES)
    assert choices[("promote", "scope")] == list(v.PERSISTENT_SCOPES)
    assert choices[("import", "scope")] == list(v.PERSISTENT_SCOPES)
    assert choices[("consolidate", "strategy")] == list(v.CONSOLIDATE_STRATEGIES)
    for (command, option), values in choices.items():
        if any(set(values) & set(words) for words in WORD_LISTS.values()):
            assert tuple(values) in WORD_LISTS.values(), f"engram {command} {option}: {values}"


# --------------------------------------------------------------------------- everything else


def test_tables_keyed_by_a_vocabulary_cover_it() -> None:
    assert set(HALF_LIFE_DAYS) == set(v.MEMORY_TYPES)
    for weights in SCOPE_WEIGHT_PROFILES.values():
        assert tuple(weights) == v.SCOPES
    assert CONFIG_SCHEMA["properties"]["scope_weights"]["required"] == list(v.SCOPES)
    assert set(v.PERSISTENT_SCOPES) < set(v.SCOPES) and set(v.DURABLE_TYPES) < set(v.MEMORY_TYPES)
    assert set(v.LIVE_STATUSES) < set(v.RECALLABLE_STATUSES) < set(v.STATUSES)


def _spelled_word_lists(path: Path) -> Iterator[tuple[int, str]]:
    """(line, list name) of each tuple, list or set literal in `path` that holds exactly the
    words of a declared word list (of two words or more)."""
    by_words = {frozenset(words): name for name, words in WORD_LISTS.items() if len(words) > 1}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                words = frozenset(e.value for e in node.elts)  # type: ignore[attr-defined]
                if len(words) == len(node.elts) and words in by_words:
                    yield node.lineno, by_words[words]


def test_no_module_spells_a_declared_word_list_again() -> None:
    spelled = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "vocabulary.py"
        for line, name in _spelled_word_lists(path)
    ]
    assert spelled == [], "import these from engram_mcp.core.vocabulary instead:\n" + "\n".join(spelled)


def test_the_spelling_check_finds_a_respelt_list(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('A = ("session", "project", "user")\nB = ["user", "project"]\nC = ("session", "x")\n')
    assert list(_spelled_word_lists(module)) == [(1, "SCOPES"), (2, "PERSISTENT_SCOPES")]


def test_the_vocabulary_imports_under_python_dash_s() -> None:
    """Hooks and the stand-in server run with `python -S`: the vocabulary needs nothing installed."""
    code = "import sys; import engram_mcp.core.vocabulary; print(sorted(m for m in sys.modules if m.startswith('engram')))"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['engram_mcp', 'engram_mcp.core', 'engram_mcp.core.vocabulary']"


def test_the_memory_skill_explains_every_memory_type_and_scope() -> None:
    text = (PACKAGE.parent / "skills" / "using-memory" / "SKILL.md").read_text(encoding="utf-8")
    missing = [word for word in (*v.MEMORY_TYPES, *v.SCOPES) if f"`{word}`" not in text]
    assert missing == [], f"skills/using-memory/SKILL.md does not explain {missing}"
