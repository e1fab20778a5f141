"""The hardened YAML loader every untrusted file goes through (engram_mcp/core/safe_yaml.py)."""

from __future__ import annotations

import datetime
import time
import tracemalloc

import pytest

from engram_mcp.core import safe_yaml
from engram_mcp.core.safe_yaml import UnsafeYAML, load, split_frontmatter

SOURCE = ".claude/team-memory/evil.md"


def alias_bomb(levels: int) -> str:
    """The ~400-byte bomb of issue 32: each level a list of 9 of the previous."""
    names = "abcdefghijklmnop"[: levels + 1]
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip(names, names[1:], strict=False):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    lines.append(f"type: *{names[-1]}")
    return "\n".join(lines) + "\n"


def refused(text: str, *, frontmatter: bool = False) -> str:
    with pytest.raises(UnsafeYAML) as info:
        if frontmatter:
            split_frontmatter(text, source=SOURCE)
        else:
            load(text, source=SOURCE)
    message = str(info.value)
    assert message.startswith(SOURCE + ": "), message
    return message


@pytest.mark.parametrize("as_frontmatter", [False, True])
def test_alias_bomb_is_refused_in_milliseconds_with_tiny_memory(as_frontmatter: bool) -> None:
    text = alias_bomb(8)
    if as_frontmatter:
        text = f"---\n{text}---\nbody\n"
    tracemalloc.start()
    started = time.perf_counter()
    try:
        message = refused(text, frontmatter=as_frontmatter)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "anchor" in message or "alias" in message
    assert elapsed < 0.05, f"{elapsed * 1000:.1f} ms"
    assert peak < 1_000_000, f"{peak} bytes"


def test_an_alias_without_an_anchor_is_refused_too() -> None:
    assert "alias" in refused("a: *nowhere\n")


@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_deep_nesting_is_refused_not_a_recursion_error(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    message = refused("x: " + opener * 500 + "1" + closer * 500 + "\n")
    assert "nested deeper" in message


def test_deep_block_nesting_is_refused() -> None:
    text = "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n"
    assert "nested deeper" in refused(text)


def test_nesting_within_bounds_is_read() -> None:
    assert load("x: " + "[" * 10 + "1" + "]" * 10, source=SOURCE)["x"] == [[[[[[[[[[1]]]]]]]]]]


@pytest.mark.parametrize(
    "literal", ["9" * 5000, "-" + "1" * 4400, "0x" + "f" * 5000, "1" + "_0" * 3000, "1." + "5" * 5000]
)
def test_huge_numbers_are_refused_naming_the_source(literal: str) -> None:
    message = refused(f"importance: {literal}\n")
    assert "more than" in message and "line 1" in message


def test_ordinary_numbers_are_read() -> None:
    assert load("a: 12\nb: 0.75\nc: -3\nd: 1.0e+3\n", source=SOURCE) == {"a": 12, "b": 0.75, "c": -3, "d": 1000.0}


@pytest.mark.parametrize("value", ["2024-13-45", "2024-02-30", "2024-01-01 25:61:00", "2024-12-31T99:00:00Z"])
def test_an_invalid_date_stays_text_and_the_other_keys_are_kept(value: str) -> None:
    front, body = split_frontmatter(f"---\ncreated_at: {value}\ntitle: ok\n---\nbody\n", source=SOURCE)
    assert front == {"created_at": value, "title": "ok"}
    assert body == "body\n"


def test_valid_dates_stay_dates() -> None:
    front = load("d: 2024-01-02\nt: 2024-01-02T03:04:05Z\n", source=SOURCE)
    assert front["d"] == datetime.date(2024, 1, 2)
    assert isinstance(front["t"], datetime.datetime)


def test_ten_megabytes_of_frontmatter_is_refused_quickly() -> None:
    text = "---\n" + "key: value of some length\n" * 400_000 + "---\nbody\n"
    assert len(text) > 10_000_000
    started = time.perf_counter()
    message = refused(text, frontmatter=True)
    assert "KiB" in message
    assert time.perf_counter() - started < 0.5
    assert "KiB" in refused("x: " + "y" * (safe_yaml.MAX_YAML_BYTES + 10))


def test_ten_megabytes_without_a_closing_line_is_refused_quickly() -> None:
    started = time.perf_counter()
    assert "KiB" in refused("---\n" + "x: 1\n" * 2_000_000, frontmatter=True)
    assert time.perf_counter() - started < 0.5


def test_too_many_nodes_and_too_long_scalars_are_refused() -> None:
    assert "values" in refused("x: [" + ", ".join(["1"] * (safe_yaml.MAX_NODES + 1)) + "]\n")
    assert "longer than" in refused("x: " + "a" * (safe_yaml.MAX_SCALAR_CHARS + 1) + "\n")


@pytest.mark.parametrize(
    "text",
    [
        "x: [1, 2\n",
        "x: !!python/object/apply:os.system ['true']\n",
        "x: !!int abc\n",
        "? [a, b]\n: c\n",
        "x: 'unclosed\n",
        "\t- tab indented\n",
        "x: 1\nx: {\n",
    ],
)
def test_any_parse_error_is_unsafe_yaml_naming_the_source(text: str) -> None:
    refused(text)


def test_frontmatter_round_trip_keeps_keys_and_body() -> None:
    text = "---\nid: m1\ntype: semantic\ntags: [a, b]\nimportance: 0.7\n---\nUse pnpm.\n\nSecond line.\n"
    front, body = split_frontmatter(text, source=SOURCE)
    assert front == {"id": "m1", "type": "semantic", "tags": ["a", "b"], "importance": 0.7}
    assert body == "Use pnpm.\n\nSecond line.\n"


def test_a_byte_order_mark_and_crlf_line_ends_are_accepted() -> None:
    front, body = split_frontmatter("\ufeff---\r\ntype: semantic\r\nimportance: 1\r\n---\r\nBody\r\n", source=SOURCE)
    assert front == {"type": "semantic", "importance": 1}
    assert body == "Body\r\n"


def test_no_frontmatter_is_all_body_and_empty_frontmatter_is_an_empty_mapping() -> None:
    assert split_frontmatter("Just a note.\n---\nx: 1\n", source=SOURCE) == ({}, "Just a note.\n---\nx: 1\n")
    assert split_frontmatter("---\n---\nBody", source=SOURCE) == ({}, "Body")


def test_frontmatter_that_is_not_a_mapping_or_never_closed_is_refused() -> None:
    assert "mapping" in refused("---\n- a\n- b\n---\nbody\n", frontmatter=True)
    assert "mapping" in refused("---\njust text\n---\nbody\n", frontmatter=True)
    assert "never closed" in refused("---\na: b\n", frontmatter=True)


def test_error_lines_are_lines_of_the_file() -> None:
    message = refused("---\na: 1\nb: &x 2\n---\nbody\n", frontmatter=True)
    assert "line 3" in message


def test_stricter_bounds_may_be_passed() -> None:
    with pytest.raises(UnsafeYAML, match="deeper than 2"):
        load("a: [[[1]]]\n", source=SOURCE, max_depth=2)


@pytest.mark.parametrize("tag", ["binary", "set", "omap", "pairs"])
def test_only_json_like_values_and_dates_come_out(tag: str) -> None:
    value = {"binary": "AAAA", "set": "{x, y}", "omap": "[x: 1]", "pairs": "[x: 1]"}[tag]
    assert f"'{tag}' is not allowed" in refused(f"a: !!{tag} {value}\n")


@pytest.mark.parametrize("value", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"])
def test_a_datetime_that_cannot_be_converted_to_utc_stays_text(value: str) -> None:
    assert load(f"created_at: {value}\n", source=SOURCE) == {"created_at": value}


def test_text_that_cannot_be_encoded_or_holds_nul_is_refused_naming_the_source() -> None:
    refused("a: \udcff\n")
    refused("a: b\x00c\n")


def test_messages_are_printable_whatever_the_file_name_and_text() -> None:
    with pytest.raises(UnsafeYAML) as info:
        split_frontmatter("---\na: &x 1\n---\n", source="team/\x1b]0;owned\x07evil\u202e.md")
    assert "\x1b" not in str(info.value) and "\u202e" not in str(info.value)
    assert str(info.value).startswith("team/evil.md: ")
