"""The config keys' declaration (core/config_keys.py) and what is derived from it: the JSON
Schema, the defaults, RetrievalSettings, the README reference and the example file."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from engram_mcp.core import config_keys
from engram_mcp.core.config import CONFIG_SCHEMA, DEFAULTS, Config, load_config
from engram_mcp.core.config_keys import DEFAULT_CONFIG, SECTIONS, SETTINGS
from engram_mcp.core.config_reference import (
    BEGIN_MARKER,
    END_MARKER,
    accepted_phrase,
    main,
    render_reference,
    replace_block,
)
from engram_mcp.index.retrieval import RetrievalSettings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXAMPLE = ROOT / "config.local.md.example"
SECTION_LINE = re.compile(r"^# --- (?P<name>.+?) -+$")


# --------------------------------------------------------------------------- the declaration


def test_every_config_field_is_a_declared_key_with_a_default_its_own_schema_accepts() -> None:
    keys = [f.name for f in dataclasses.fields(Config) if f.name != "sources"]
    assert keys == list(SETTINGS) == list(CONFIG_SCHEMA["properties"]) == list(DEFAULTS)
    for key in keys:
        spec = SETTINGS[key]
        assert spec.section in SECTIONS and spec.doc.strip() and "\n" not in spec.doc, key
        jsonschema.validate({key: DEFAULTS[key]}, CONFIG_SCHEMA, cls=jsonschema.Draft202012Validator)


def test_the_schema_types_follow_the_field_annotations() -> None:
    props = CONFIG_SCHEMA["properties"]
    assert props["rrf_k"]["type"] == "integer" and props["keyword_weight"]["type"] == "number"
    assert props["stop_hook"]["type"] == "boolean" and props["embedding_model"]["type"] == "string"
    assert props["embedding_model_path"]["type"] == ["string", "null"]
    assert props["scope_weights"]["type"] == ["object", "null"]
    assert props["scope_weights"]["required"] == ["session", "project", "user"]
    python_types = {"integer": int, "number": float, "boolean": bool, "string": str, "object": dict}
    for key, value in DEFAULTS.items():  # a default has its declared type (numbers are floats)
        types = props[key]["type"] if isinstance(props[key]["type"], list) else [props[key]["type"]]
        assert (value is None and "null" in types) or type(value) is python_types[types[0]], key


def test_a_key_of_a_type_without_a_json_type_is_refused() -> None:
    with pytest.raises(TypeError, match="no JSON Schema type"):
        config_keys._json_types(list[int])
    with pytest.raises(ValueError, match="unknown config section"):
        config_keys.setting(1, "Nowhere", "doc")


def test_bounds_are_kept_as_written_so_messages_show_them_so() -> None:
    props = CONFIG_SCHEMA["properties"]
    assert (props["keyword_weight"]["minimum"], props["keyword_weight"]["maximum"]) == (0, 1)
    assert isinstance(props["keyword_weight"]["minimum"], int)
    assert props["abandoned_session_hours"]["minimum"] == 0.01


def test_keys_with_a_unit_name_it() -> None:
    units = {"hour": "_hours", "second": "_seconds", "token": "_token_"}
    for key, spec in SETTINGS.items():
        for word, part in units.items():
            if word in spec.doc.lower():
                assert part in f"_{key}_", f"{key}: its doc speaks of {word}s, its name should say {part}"


def test_retrieval_settings_default_to_the_declared_config() -> None:
    assert RetrievalSettings() == RetrievalSettings.from_config(DEFAULT_CONFIG)
    assert RetrievalSettings().min_cosine == DEFAULTS["relevance_min_cosine"]


def test_retrieval_settings_read_every_ranking_key_of_the_effective_config(tmp_path: Path) -> None:
    environ = {
        "ENGRAM_FUSION": "rrf",
        "ENGRAM_KEYWORD_WEIGHT": "0.7",
        "ENGRAM_RRF_K": "11",
        "ENGRAM_CANDIDATE_POOL": "33",
        "ENGRAM_CROSS_SCOPE_DEDUP_SIMILARITY": "0.95",
        "ENGRAM_RELEVANCE_MIN_COSINE": "0.3",
        "ENGRAM_RELEVANCE_MIN_COSINE_RATIO": "0.6",
    }
    settings = RetrievalSettings.from_config(load_config(None, home=tmp_path, environ=environ))
    assert (settings.fusion, settings.keyword_weight, settings.rrf_k, settings.candidate_pool) == ("rrf", 0.7, 11, 33)
    assert (settings.cross_scope_dedup_similarity, settings.min_cosine, settings.min_cosine_ratio) == (0.95, 0.3, 0.6)


# --------------------------------------------------------------------------- the README reference


def test_the_committed_readme_reference_is_what_the_declaration_generates() -> None:
    text = README.read_text(encoding="utf-8")
    assert replace_block(text, render_reference()) == text, "README is out of date: run `make config-docs`"
    assert main(["--check", str(README)]) == 0


def test_the_reference_lists_every_key_once_with_its_default_and_doc() -> None:
    block = render_reference()
    for key, spec in SETTINGS.items():
        rows = [line for line in block.splitlines() if line.startswith(f"| `{key}` |")]
        assert len(rows) == 1, key
        assert spec.doc.replace("<", "&lt;") in rows[0]
        assert accepted_phrase(CONFIG_SCHEMA["properties"][key]) in rows[0]
    assert [line[5:] for line in block.splitlines() if line.startswith("#### ")] == list(SECTIONS)


def test_check_fails_on_a_stale_reference_and_write_repairs_it(tmp_path: Path) -> None:
    doc = tmp_path / "README.md"
    doc.write_text(f"# t\n\n{BEGIN_MARKER}\n| `rrf_k` | old |\n{END_MARKER}\n\nafter\n", encoding="utf-8")
    assert main(["--check", str(doc)]) == 1
    assert main(["--write", str(doc)]) == 0
    assert main(["--check", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# t\n\n" + BEGIN_MARKER) and text.endswith(END_MARKER + "\n\nafter\n")
    with pytest.raises(ValueError):
        replace_block("no markers here", render_reference())


def test_the_module_entry_point_prints_the_reference() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "engram_mcp.core.config_reference"], capture_output=True, text=True, check=True
    ).stdout
    assert out == render_reference()


# --------------------------------------------------------------------------- the example file


def _frontmatter_lines() -> list[str]:
    """The example's lines between its opening and closing '---' lines (section headers hold '---' too)."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "---"
    return lines[1 : lines.index("---", 1)]


def _example_keys() -> list[tuple[str, str, str, list[str]]]:
    """(key, raw value, section, comment lines above it) for every key of the example's frontmatter."""
    lines = _frontmatter_lines()
    out, section, comments = [], "", []
    for line in lines:
        header = SECTION_LINE.match(line)
        if header:
            section, comments = header["name"], []
        elif line.startswith("#"):
            comments.append(line)
        elif not line.strip():
            comments = []
        else:
            key, _, value = line.partition(":")
            out.append((key.strip(), value.strip(), section, comments))
            comments = []
    return out


def test_every_example_key_is_declared_in_its_section_with_its_accepted_values_stated() -> None:
    entries = _example_keys()
    assert [key for key, *_ in entries] == list(SETTINGS)
    for key, _value, section, comments in entries:
        assert section == SETTINGS[key].section, key
        phrase = accepted_phrase(CONFIG_SCHEMA["properties"][key])
        assert comments and comments[0].startswith(f"# {phrase}"), f"{key}: comment should open with {phrase!r}"


def test_the_example_sections_are_the_declared_sections_in_order() -> None:
    assert [m["name"] for m in map(SECTION_LINE.match, _frontmatter_lines()) if m] == list(SECTIONS)


def test_accepted_phrase_states_what_the_schema_accepts() -> None:
    assert accepted_phrase({"type": "integer", "minimum": 1}) == "integer >= 1"
    assert accepted_phrase({"type": "number", "minimum": 0, "maximum": 1}) == "number in [0, 1]"
    assert accepted_phrase({"type": ["string", "null"]}) == "string or null"
    assert accepted_phrase({"type": "string", "enum": ["a", "b"]}) == "one of a, b"
    assert accepted_phrase({"type": "boolean"}) == "true/false"
