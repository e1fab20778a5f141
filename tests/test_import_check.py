"""An import's lines checked in a child process (services/import_check.py): the same lines,
checks and answer as checked in the importing process, and an import that goes on when the
child cannot start or stops half-way, or when the directory it was asked from holds a module
of the same name."""

from __future__ import annotations

import base64
import json
import logging
import sys
from pathlib import Path

import pytest

from tests.fakes import FakeEmbedder
from engram_mcp.core.ids import new_ulid
from engram_mcp.services import import_check
from engram_mcp.services.import_check import CheckedMemory, Line, checked_lines
from engram_mcp.services.service import MemoryService, RequestContext
from engram_mcp.storage import queries as q

FAKE = FakeEmbedder()
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _vec(text: str) -> str:
    return base64.b64encode(FAKE.embed_query(text).astype("<f4").tobytes()).decode()


def _memory(i: int, **record) -> dict:
    content = record.pop("content", f"memory {i}: the build cache lives in .cache/build-{i}")
    rec = {"memory_type": "semantic", "content": content, "tags": [f"t{i % 7}"], "importance": (i % 10) / 10,
           "status": "active", "embedding_model": FAKE.model_name, "created_at": "2026-01-02T03:04:05Z", **record}
    return {"kind": "memory", "scope": "project", "id": new_ulid(), "record": rec, "vector_b64": _vec(content)}


def _mixed_file(path: Path, n: int = 600) -> Path:
    """n memories, and every kind of line an import meets, spread through the file."""
    lines: list[str] = [json.dumps({"kind": "header", "format": "engram-export", "version": 1})]
    first = None
    for i in range(n):
        m = _memory(i)
        first = first or m["id"]
        if i % 97 == 5:
            m = _memory(i, content=f"the deploy token is {TOKEN}")  # redacted: the vector is not reused
        elif i % 89 == 7:
            m["vector_b64"] = base64.b64encode(b"\x00" * 12).decode()  # wrong dimension
        elif i % 83 == 9:
            m["scope"] = "team"
        elif i % 79 == 11:
            m["record"]["importance"] = 7
        elif i % 73 == 13:
            m["id"] = first  # the same id twice
        elif i % 71 == 3:
            del m["vector_b64"]  # embedded on import
        lines.append(json.dumps(m))
        if i % 101 == 17:
            lines += ["{not json", "", "[1, 2]", json.dumps({"kind": "spaceship"}),
                      json.dumps({"kind": "history", "scope": "project", "memory_id": m["id"],
                                  "entry": {"version": 1, "change": "update", "snapshot": {"content": "old"}}})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_child_hands_over_every_line_as_this_process_checks_it(tmp_path, monkeypatch):
    path = _mixed_file(tmp_path / "mixed.jsonl")
    monkeypatch.setattr(import_check, "CHILD_HEAD_LINES", 7)
    here = list(checked_lines(path, None, FAKE.model_name, FAKE.dim, child=False))
    child = list(checked_lines(path, None, FAKE.model_name, FAKE.dim, child=True))
    assert child == here
    assert {type(x) for x in here} == {Line, CheckedMemory}
    kinds = [x for x in here if isinstance(x, CheckedMemory)]
    assert sum(x.error is None for x in kinds) > 500 and sum(x.error is not None for x in kinds) >= 15
    assert any(x.findings for x in kinds) and any(x.obj is None for x in here if isinstance(x, Line))


def _import(tmp_path: Path, name: str, path: Path) -> tuple[dict, list]:
    home = tmp_path / f"home-{name}"
    home.mkdir()
    project = tmp_path / f"proj-{name}"
    (project / ".git").mkdir(parents=True)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ctx = RequestContext(project, None)
        out = svc.import_(ctx, path)
        rows = sorted(svc.handle(ctx, "project").q(q.ALL_MEMORIES), key=lambda r: str(r["id"]))
        return out, [{k: v for k, v in r.items() if k != "id"} | {"id": str(r["id"])} for r in rows]
    finally:
        svc.close()


@pytest.fixture
def mixed(tmp_path, monkeypatch):
    """The mixed file and its import checked in this process (the reference)."""
    path = _mixed_file(tmp_path / "mixed.jsonl")
    monkeypatch.setattr(import_check, "CHILD_MIN_BYTES", 1 << 60)
    reference = _import(tmp_path, "here", path)
    monkeypatch.setattr(import_check, "CHILD_MIN_BYTES", 0)
    monkeypatch.setattr(import_check, "CHILD_HEAD_LINES", 5)
    return path, reference


def _same_answer(got: tuple[dict, list], reference: tuple[dict, list], path: Path) -> None:
    out, rows = got
    ref_out, ref_rows = reference
    assert out["counts"] == ref_out["counts"] and out["counts"]["memory"] > 500
    assert out["rejected"] == ref_out["rejected"] and out["redactions"] == ref_out["redactions"]
    assert rows == ref_rows
    assert TOKEN.lower() not in repr(rows).lower()


def test_an_import_checked_in_a_child_answers_and_writes_what_one_checked_here_does(tmp_path, mixed, caplog):
    path, reference = mixed
    with caplog.at_level(logging.WARNING, logger="engram.import"):
        _same_answer(_import(tmp_path, "child", path), reference, path)
    assert "checking process stopped" not in caplog.text


def test_a_child_that_cannot_start_leaves_every_line_checked_here(tmp_path, mixed, monkeypatch, caplog):
    path, reference = mixed
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    with caplog.at_level(logging.WARNING, logger="engram.import"):
        _same_answer(_import(tmp_path, "nostart", path), reference, path)
    assert "could not start" in caplog.text and "from line 1 here" in caplog.text


def test_a_child_that_stops_half_way_leaves_the_rest_checked_here(tmp_path, mixed, monkeypatch, caplog):
    """The child's output cut after its first chunk (as if it was killed): the lines after the
    last one it handed over whole are checked here, none twice, none lost."""
    path, reference = mixed
    wrapper = tmp_path / "python-cut"
    wrapper.write_text(f'#!/bin/sh\n"{sys.executable}" "$@" | head -c 700000\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(wrapper))
    with caplog.at_level(logging.WARNING, logger="engram.import"):
        _same_answer(_import(tmp_path, "cut", path), reference, path)
    assert "checking process stopped" in caplog.text
    resumed = int(caplog.text.split("checking from line ")[1].split()[0])
    assert 5 + import_check.CHILD_CHUNK_LINES < resumed < 600


def test_the_child_never_imports_a_module_from_the_directory_the_import_was_asked_from(tmp_path, mixed, monkeypatch):
    """A repository holding engram_mcp/services/import_check.py: the child runs engram's own."""
    path, reference = mixed
    hostile = tmp_path / "repo"
    (hostile / "engram_mcp" / "services").mkdir(parents=True)
    marker = tmp_path / "pwned"
    for init in ("engram_mcp/__init__.py", "engram_mcp/services/__init__.py"):
        (hostile / init).write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (hostile / "engram_mcp" / "services" / "import_check.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(hostile)
    _same_answer(_import(tmp_path, "hostile", path), reference, path)
    assert not marker.exists()
