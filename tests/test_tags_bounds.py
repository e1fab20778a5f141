"""Per-record lists and objects are bounded before anything is redacted (red-team pass 4, 07).

One unsigned export line of 200,000 tags kept a daemon worker at 100% CPU for minutes: every
tag was redacted before the 32-tag limit was checked, and the duplicate test was a list scan
(quadratic). The same holds for any field an import line carries whose every string is
redacted: metadata, source, a history snapshot (and its tags).
"""

from __future__ import annotations

import json
import time

import pytest

from engram_mcp.core.errors import InvalidInput
from engram_mcp.services import records
from engram_mcp.services.records import (
    MAX_JSON_CHARS,
    MAX_JSON_VALUES,
    MAX_RECALL_SESSIONS,
    MAX_TAG_ITEMS,
    MAX_TAGS,
    check_tags,
    clean_memory_record,
    clean_object,
    clean_tags,
)

HEADER = {"kind": "header", "format": "engram-export", "version": 1}


class _Calls(dict):
    """The counts, and the objects given to `redact_obj` (`.objects`)."""

    def __init__(self, counts: dict, objects: list) -> None:
        super().__init__(counts)
        self._counts, self.objects = counts, objects

    def __getitem__(self, key):
        return self._counts[key]

    def __eq__(self, other):
        return self._counts == other


@pytest.fixture
def redactions(monkeypatch):
    """Count every redaction pass `records` runs (texts, tags, objects)."""
    calls = {"text": 0, "obj": 0}
    seen: list = []
    real_sanitize, real_obj = records.sanitize, records.redact_obj

    def sanitize(text):
        calls["text"] += 1
        return real_sanitize(text)

    def redact_obj(obj):
        calls["obj"] += 1
        seen.append(obj)
        return real_obj(obj)

    monkeypatch.setattr(records, "sanitize", sanitize)
    monkeypatch.setattr(records, "redact_obj", redact_obj)
    records._clean_tag.cache_clear()
    calls_with_objects = _Calls(calls, seen)
    yield calls_with_objects
    records._clean_tag.cache_clear()


def test_a_tag_list_of_thousands_is_refused_before_any_tag_is_redacted(redactions):
    tags = [f"t{i}" for i in range(5_000)]
    with pytest.raises(InvalidInput) as err:
        clean_tags(tags, [])
    assert err.value.field == "tags" and f"at most {MAX_TAGS}" in err.value.message
    assert "5000 entries" in err.value.message and str(MAX_TAG_ITEMS) in err.value.message
    with pytest.raises(InvalidInput) as err:
        check_tags(tags, "tags.remove")
    assert err.value.field == "tags.remove" and "5000 entries" in err.value.message
    assert redactions == {"text": 0, "obj": 0}


def test_a_tag_list_of_too_many_characters_is_refused_before_any_tag_is_redacted(redactions):
    tags = ["x" * 2_000] * 10
    with pytest.raises(InvalidInput) as err:
        clean_tags(tags, [])
    assert "20000 characters" in err.value.message and redactions == {"text": 0, "obj": 0}


def test_duplicates_and_blanks_still_collapse_in_order_within_the_bound():
    tags = ["Deploy", "cache", " ", "deploy", "CACHE", "api"] * 20  # 120 entries, 3 tags
    assert clean_tags(tags, []) == check_tags(tags) == ["deploy", "cache", "api"]
    with pytest.raises(InvalidInput, match=f"at most {MAX_TAGS} tags"):
        clean_tags([f"t{i}" for i in range(MAX_TAGS + 1)], [])


def test_an_import_line_of_30000_tags_is_refused_at_once_and_the_next_line_imported(fake_service, ctx, tmp_path):
    lines = [
        HEADER,
        {
            "kind": "memory",
            "scope": "project",
            "id": "01JZZZZZZZZZZZZZZZZZZZZZ09",
            "record": {"memory_type": "semantic", "content": "many tags", "tags": [f"t{i}" for i in range(30_000)]},
        },
        {
            "kind": "memory",
            "scope": "project",
            "id": "01JZZZZZZZZZZZZZZZZZZZZZ10",
            "record": {"memory_type": "semantic", "content": "ok"},
        },
    ]
    path = tmp_path / "manytags.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    started = time.monotonic()
    out = fake_service.import_(ctx, path)
    assert time.monotonic() - started < 3.0  # was 10 s and more (quadratic), minutes at 200,000
    assert out["counts"]["memory"] == 1 and out["counts"]["rejected"] == 1
    [bad] = out["rejected"]
    assert bad["line"] == 2 and bad["field"] == "tags" and "30000 entries" in bad["error"], bad


@pytest.mark.parametrize(
    "value,what",
    [
        ({f"k{i}": f"v{i}" for i in range(50_000)}, "values"),
        ({"notes": ["v"] * (MAX_JSON_VALUES + 1)}, "values"),
        ({"a": "x" * (MAX_JSON_CHARS + 1)}, "characters"),
        ({"deep": [[["y" * 1_000] * 100] * 10] * 3}, "characters"),
    ],
    ids=["keys", "list", "one-string", "nested"],
)
def test_an_oversized_metadata_object_is_refused_before_it_is_redacted(redactions, value, what):
    with pytest.raises(InvalidInput) as err:
        clean_memory_record({"memory_type": "semantic", "content": "x", "metadata": value}, [], scope="project")
    assert (
        err.value.field == "metadata"
        and f"more than {MAX_JSON_VALUES if what == 'values' else MAX_JSON_CHARS} {what}" in err.value.message
    )
    assert all(len(json.dumps(o)) < 100 for o in redactions.objects), "the metadata was redacted"  # the empty source
    with pytest.raises(InvalidInput):
        clean_object(value, [], "source")


def test_a_long_used_memorys_recall_sessions_are_cut_to_the_last_ones_not_refused():
    sessions = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(20_000)]  # 720,000 characters
    rec = clean_memory_record(
        {"memory_type": "semantic", "content": "x", "metadata": {"recall_sessions": sessions, "ticket": "OPS-1"}},
        [],
        scope="project",
    )
    assert (
        rec["metadata"]["recall_sessions"] == sessions[-MAX_RECALL_SESSIONS:] and rec["metadata"]["ticket"] == "OPS-1"
    )


def _history(memory_id: str, snapshot: dict) -> dict:
    return {
        "kind": "history",
        "scope": "project",
        "memory_id": memory_id,
        "entry": {"version": 1, "change": "update", "snapshot": snapshot},
    }


@pytest.mark.parametrize(
    "snapshot,field",
    [
        ({"content": "x" * 300_000}, "entry.snapshot.content"),
        ({"content": "old", "tags": [f"t{i}" for i in range(50_000)]}, "entry.snapshot.tags"),
        ({"content": "old", "metadata": {f"k{i}": "v" for i in range(50_000)}}, "entry.snapshot"),
    ],
    ids=["content", "tags", "metadata"],
)
def test_an_oversized_history_snapshot_is_refused_before_it_is_redacted(
    fake_service, ctx, tmp_path, redactions, snapshot, field
):
    mid = "01JZZZZZZZZZZZZZZZZZZZZZ11"
    lines = [
        HEADER,
        {"kind": "memory", "scope": "project", "id": mid, "record": {"memory_type": "semantic", "content": "new"}},
        _history(mid, snapshot),
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = fake_service.import_(ctx, path)
    [bad] = out["rejected"]
    assert bad["line"] == 3 and bad["field"] == field, bad
    # the memory line's (empty) source and metadata may be redacted here; the snapshot never is
    assert not [o for o in redactions.objects if isinstance(o, dict) and "content" in o], "the snapshot was redacted"
