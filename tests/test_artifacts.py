"""The kinds of artifact a tool step writes (core/artifacts.py), read from the step text the hooks
write (`hooks.step_text`), and how a memory names one."""

from __future__ import annotations

import time

import pytest

from engram_mcp.core.artifacts import ARTIFACT_KINDS, prompt_kinds, step_kinds
from engram_mcp.interfaces.hooks import step_text


def _kinds(payload: dict) -> list[str]:
    return [k.name for k in step_kinds(step_text({"cwd": "/r", **payload}, failed=False))]


@pytest.mark.parametrize(
    ("payload", "kinds"),
    [
        ({"tool_name": "Write", "tool_input": {"file_path": "/r/sql/q1.sql", "content": "select 1"}}, ["SQL"]),
        # SQL inside a file of another language, and in a command
        ({"tool_name": "Edit", "tool_input": {"file_path": "/r/src/orgs.ts",
                                              "new_string": "sql`select count(*) from sites s`"}}, ["SQL"]),
        ({"tool_name": "Bash", "tool_input": {"command": "psql -tAc 'SELECT 1' fleet"}}, ["SQL"]),
        ({"tool_name": "Bash", "tool_input": {"command": "duckdb dev.duckdb < sql/x.sql"}}, ["SQL"]),
        ({"tool_name": "Write", "tool_input": {"file_path": "/r/docs/marts/site.md", "content": "# Site"}}, ["Markdown"]),
        ({"tool_name": "Bash", "tool_input": {"command": "git commit -qam 'Fix totals' -m 'Refs: LK-4'"}},
         ["commit message"]),
        ({"tool_name": "Bash", "tool_input": {"command": "git add -A && git -C ../api commit -s -m x"}},
         ["commit message"]),
        # what is no such artifact
        ({"tool_name": "Bash", "tool_input": {"command": "pre-commit run --all-files"}}, []),
        ({"tool_name": "Bash", "tool_input": {"command": "git commit-tree HEAD^{tree}"}}, []),
        ({"tool_name": "Bash", "tool_input": {"command": "git log --oneline -5"}}, []),
        ({"tool_name": "Edit", "tool_input": {"file_path": "/r/app.py", "new_string": "selected = pick(rows)"}}, []),
        ({"tool_name": "Read", "tool_input": {"file_path": "/r/README.md"}}, []),
    ],
)
def test_a_step_names_the_kinds_of_artifact_it_writes(payload, kinds):
    assert _kinds(payload) == kinds


@pytest.mark.parametrize(
    ("prompt", "kinds"),
    [
        ("Add a short section to docs/installers.md explaining how installers get these.", ["Markdown"]),
        ("Write the release notes in `docs/releases/2026-03.md`, then open the PR.", ["Markdown"]),
        ("Put the yearly query in sql/yearly.sql.", ["SQL"]),
        ("Write the DuckDB query for the yearly report.", ["SQL"]),
        ("Uppercase the SQL keywords in that report.", ["SQL"]),
        ("Commit it.", ["commit message"]),
        ("Squash the fixup commits into one.", ["commit message"]),
        # a kind's name inside another name, or no file of the kind
        ("Run pre-commit on everything.", []),
        ("Why is the sqlite cache so slow?", []),
        ("Rename md_to_html.py and bump v1.8.0.", []),
        ("Deploy the console to staging.", []),
    ],
)
def test_a_prompt_names_the_kinds_of_artifact_it_asks_for(prompt, kinds):
    assert [k.name for k in prompt_kinds(prompt)] == kinds


def test_a_memory_names_a_kind_as_a_word_not_inside_another_name():
    commit = next(k for k in ARTIFACT_KINDS if k.name == "commit message")
    assert commit.named_in("That's how I write all my commits, in every repo.")
    assert commit.named_in("Commit messages: an imperative subject under 50 characters.")
    assert not commit.named_in("Never skip the pre-commit hook with --no-verify.")
    sql = next(k for k in ARTIFACT_KINDS if k.name == "SQL")
    assert sql.named_in("That's how I want SQL written anywhere") and not sql.named_in("the sqlite cache")


def test_reading_a_hostile_step_is_linear():
    """A step's text is the command or file Claude wrote, a prompt what the user typed, each up to
    4,000 characters: options before no subcommand and a SELECT with no FROM are read once each."""
    for step in ("$ git" + " -C -C" * 650, "Write a.ts\n" + "select " * 570, "$ git" + " -x" * 1300 + " status"):
        start = time.perf_counter()
        assert step_kinds(step[:4000]) == []
        assert time.perf_counter() - start < 0.5
    for prompt in ("a" * 4000, "a." * 2000, "git" + " -C x" * 1000, "select " * 570, "/" * 4000 + ".m"):
        start = time.perf_counter()
        assert prompt_kinds(prompt) == []
        assert time.perf_counter() - start < 0.5
