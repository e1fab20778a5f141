"""The README's "Configuration reference", generated from the config keys' declaration.

``python -m engram_mcp.core.config_reference`` prints the reference; ``--write README.md``
replaces the block between the markers in that file, and ``--check README.md`` exits 1 when
the committed block differs from what the declaration gives (``make config-docs`` writes it;
tests/test_config_reference.py checks it). The same short phrase of what a key accepts
("number in [0, 1]") opens each key's comment in ``config.local.md.example``, which the tests
check too.

Standard library only, like the declaration it reads.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engram_mcp.core.config_keys import CONFIG_SCHEMA, DEFAULTS, SECTIONS, SETTINGS

BEGIN_MARKER = "<!-- BEGIN config reference (generated: make config-docs; do not edit by hand) -->"
END_MARKER = "<!-- END config reference -->"


def accepted_phrase(schema: Mapping[str, Any]) -> str:
    """What a key accepts, in the words the example file and the docs use: "integer >= 1"."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    main = types[0]
    nullable = "null" in types
    if main == "object":
        entries = ", ".join(f"{name}: N" for name in schema["properties"])
        entry = accepted_phrase(next(iter(schema["properties"].values())))
        return f"{'null, or ' if nullable else ''}{{{entries}}} with each N a {entry}"
    if main == "boolean":
        text = "true/false"
    elif main in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        text = main if low is None else f"{main} in [{low}, {high}]" if high is not None else f"{main} >= {low}"
    else:
        text = main
    return text + (" or null" if nullable else "")


def shown_default(value: object) -> str:
    """A default as YAML would spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell (no column break; `<name>` is not taken for an HTML tag)."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def render_reference() -> str:
    """The markdown block, markers included: one table per section, keys in declaration order."""
    properties = CONFIG_SCHEMA["properties"]
    lines = [
        BEGIN_MARKER,
        "### Configuration reference",
        "",
        "Every key, what it accepts and its default. Each can also be set by the environment",
        "variable `ENGRAM_` + the key in upper case (`ENGRAM_CONTEXT_TOKEN_BUDGET=800`).",
    ]
    for section in SECTIONS:
        keys = [name for name, spec in SETTINGS.items() if spec.section == section]
        lines += ["", f"#### {section}", "", "| Key | Accepts | Default | What it does |", "|---|---|---|---|"]
        for name in keys:
            schema = properties[name]
            cells = (
                f"`{name}`",
                _cell(accepted_phrase(schema)),
                f"`{_cell(shown_default(DEFAULTS[name]))}`",
                _cell(schema["description"]),
            )
            lines.append("| " + " | ".join(cells) + " |")
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


def replace_block(text: str, block: str) -> str:
    """`text` with the reference between the markers replaced by `block` (ValueError without markers)."""
    start, end = text.find(BEGIN_MARKER), text.find(END_MARKER)
    if start < 0 or end < start:
        raise ValueError(f"no '{BEGIN_MARKER}' ... '{END_MARKER}' block")
    return text[:start] + block + text[end + len(END_MARKER) :].removeprefix("\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reference, write it into a file, or check a file holds the current one."""
    parser = argparse.ArgumentParser(prog="python -m engram_mcp.core.config_reference", description=__doc__)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", type=Path, help="replace the reference block in FILE")
    group.add_argument("--check", metavar="FILE", type=Path, help="exit 1 when FILE's block is out of date")
    args = parser.parse_args(argv)
    block = render_reference()
    target = args.write or args.check
    if target is None:
        sys.stdout.write(block)
        return 0
    text = target.read_text(encoding="utf-8")
    updated = replace_block(text, block)
    if args.check:
        if updated != text:
            print(f"{target}: the configuration reference is out of date; run make config-docs", file=sys.stderr)
            return 1
        return 0
    if updated != text:
        target.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
