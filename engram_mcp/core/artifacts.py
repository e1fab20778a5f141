"""The kinds of thing a tool step writes that users keep rules for, and how a step's text and a
memory's text each name one.

A user's rules about a kind of artifact ("uppercase SQL keywords, one clause per line", "one
sentence per line in any Markdown", "the ticket goes in a `Refs:` trailer of every commit") are
needed when Claude writes one, and the prompt rarely says so: "Write the DuckDB query" is far in
meaning from the SQL rule (cosine 0.11 on the month replay), and so is the query itself. The
kind, though, is plain from the step: the file's extension, a SQL statement in what was written,
`git commit` in a command. `services/hook_ops.step_context` shows the user's memory that names
that kind, once a session.

Only kinds where this was measured to bring a needed rule are declared (modelled on the month
replay's four worlds, then replayed). YAML files and `gh pr create` were modelled too: their rules
came up after 28 steps and were needed later in the session after 12 of them, and they met no
need the blocks had not met already.

A step's text is written by the hooks (`interfaces/hooks.step_text`): a command as
`STEP_COMMAND_PREFIX` + the command on its first line, a file write as the tool's name and the
file's path on its first line, then the text written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: How a command step's text begins (`interfaces/hooks.step_text`).
STEP_COMMAND_PREFIX = "$ "
#: The tools whose step text names a file written, then the text written into it.
FILE_WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})

# A statement of SQL, in a file of any language (a query in a TypeScript template, a migration):
# a SELECT with its FROM, or a statement that writes. Bounded gaps: linear on any text.
_SQL_STATEMENT = re.compile(
    r"\bselect\b[^;]{1,400}?\bfrom\b|\binsert\s+into\b|\bcreate\s+(?:table|index|view)\b|"
    r"\balter\s+table\b|\bdelete\s+from\b|\bupdate\s+\w+\s+set\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ArtifactKind:
    """A kind of artifact: how a step shows it writes one, and how a memory names it."""

    name: str
    #: The path of a file written that is of this kind.
    path: re.Pattern[str] | None
    #: A command that writes one.
    command: re.Pattern[str] | None
    #: Whether what was written holds one (SQL inside a file of another language).
    content: re.Pattern[str] | None
    #: A memory naming the kind: whole words, not part of a hyphenated name ("pre-commit").
    named: re.Pattern[str]
    #: What recall is asked for this kind's memories.
    query: str

    def in_command(self, command: str) -> bool:
        """Whether running `command` makes one (`psql -c "SELECT ..."` holds one too)."""
        return bool((self.command and self.command.search(command)) or self._holds(command))

    def in_file(self, path: str, text: str) -> bool:
        """Whether writing `text` into the file at `path` makes one."""
        return bool((self.path and self.path.search(path)) or self._holds(text))

    def _holds(self, text: str) -> bool:
        return bool(self.content and self.content.search(text))

    def named_in(self, memory_text: str) -> bool:
        """Whether a memory's text names this kind."""
        return bool(self.named.search(memory_text))


def _words(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE)


ARTIFACT_KINDS: tuple[ArtifactKind, ...] = (
    ArtifactKind(
        name="SQL",
        path=re.compile(r"\.sql$", re.IGNORECASE),
        command=re.compile(r"(?<![\w-])(?:psql|duckdb|sqlite3|mysql)(?![\w-])"),
        content=_SQL_STATEMENT,
        named=_words("sql"),
        query="SQL style",
    ),
    ArtifactKind(
        name="Markdown",
        path=re.compile(r"\.(?:md|mdx|markdown)$", re.IGNORECASE),
        command=None,
        content=None,
        named=_words("markdown"),
        query="Markdown",
    ),
    ArtifactKind(
        name="commit message",
        path=None,
        # options before the subcommand ("git -C repo commit"), atomic: one way to read each
        command=re.compile(r"(?<![\w-])git(?>\s+-[Cc]\s+\S+|\s+-\S+)*\s+commit(?![\w-])"),
        content=None,
        named=_words(r"commits?|commit messages?"),
        query="commit messages",
    ),
)


def step_kinds(step: str) -> list[ArtifactKind]:
    """The kinds of artifact the step described by `step` (module docstring) writes."""
    head, _, rest = step.partition("\n")
    if head.startswith(STEP_COMMAND_PREFIX):
        command = head[len(STEP_COMMAND_PREFIX) :]
        return [k for k in ARTIFACT_KINDS if k.in_command(command)]
    tool, _, path = head.partition(" ")
    if tool not in FILE_WRITE_TOOLS:
        return []
    return [k for k in ARTIFACT_KINDS if k.in_file(path.strip(), rest)]


#: What separates the words of a prompt, a file's path being one word ("`docs/installers.md`,").
_PROMPT_WORD_GAP = re.compile(r"[\s`'\"()\[\]<>,;]+")


def prompt_kinds(prompt: str) -> list[ArtifactKind]:
    """The kinds of artifact a prompt names, the work it asks for being the writing of one: a
    file of the kind ("a section in docs/installers.md"), the kind itself ("commit it", "the
    SQL"), or a command that writes one ("the duckdb query"). The user's rule for that kind is
    then needed in this turn, before any step shows it (`services/hook_ops.prompt_context`)."""
    paths = [w.rstrip(".:!?") for w in _PROMPT_WORD_GAP.split(prompt)]
    return [
        k
        for k in ARTIFACT_KINDS
        if k.named_in(prompt)
        or (k.path is not None and any(k.path.search(p) for p in paths))
        or (k.command is not None and re.search(k.command.pattern, prompt, re.IGNORECASE) is not None)
    ]


def names_a_kind(text: str) -> bool:
    """Whether a memory's text names a kind of artifact declared here (a rule a step brings)."""
    return any(k.named_in(text) for k in ARTIFACT_KINDS)
