"""Derived data never answers wrong: an index file damaged the way disks, backups and people
damage files is noticed before its first answer, and every answer then equals a clean rebuild's.

- a flipped bit in any block of the file, the vector rows included (`persist.sum64`), its
  mtime put back so its `clean` marker still names it;
- `data/` restored alone from an older backup, beside the newer `index/` and its marker
  (the generation in `data/` is not the marker's: services/handles.py `DATA_TOKEN_PREFIX`);
- an older index file put back, same inode, with its marker (the store's last checkpoint
  wrote another generation: `INDEX_GENERATION_KEY`).

Everything runs on the real engine with the deterministic fake embedder.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from engram_mcp.index.persist import ALIGN_BYTES, MAGIC
from engram_mcp.services.handles import marker_path, read_marker
from engram_mcp.services.service import MemoryService, RequestContext
from tests.fakes import FakeEmbedder
from tests.test_index_early import QUERIES, _early_equals_rebuild, fill, index_files


def store_dir(project: Path) -> Path:
    return project / ".claude" / "engram"


def project_file(project: Path) -> Path:
    return next(p for p in index_files(store_dir(project)) if p.name.startswith("project."))


def seeded(home: Path, project: Path, n: int = 60) -> None:
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        fill(svc, RequestContext(project, None), n)
    finally:
        svc.close()  # checkpoints: every file written with its marker


def array_spans(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (first byte in the file, byte count) of every array of an index file."""
    raw = path.read_bytes()
    assert raw[: len(MAGIC)] == MAGIC
    (hlen,) = struct.unpack_from("<Q", raw, len(MAGIC))
    header = json.loads(raw[len(MAGIC) + 8 : len(MAGIC) + 8 + hlen])
    start = -(-(len(MAGIC) + 8 + hlen) // ALIGN_BYTES) * ALIGN_BYTES
    return {name: (start + spec["offset"], spec["nbytes"]) for name, spec in header["arrays"].items() if spec["nbytes"]}


def flip_in_place(path: Path, at: int, bit: int) -> None:
    """Flip one bit as a disk would: same inode, same size, mtime put back (the marker's
    identity of the file still matches)."""
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ (1 << bit)]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def vector_bit(home: Path, project: Path) -> int:
    """The offset in its vector block (int8 components, format 3) of one component of a memory
    the first query does not return, where that memory and the query weigh the same way: its
    bit 6 flipped, the component grows by 64 steps and the memory moves up the answer."""
    q = FakeEmbedder().embed_query(QUERIES[0])
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ctx = RequestContext(project, None)
        returned = {m["id"] for m in svc.recall(ctx, query=QUERIES[0], limit=8, strengthen=False)["memories"]}
        index = svc.access.handle(ctx, "project").index
        for key in index.keys():
            row, slot = index.vector_of_key(key), index.slot_of(key)
            if row is None or slot is None or f"memory:{key}" in returned:
                continue
            same_way = np.flatnonzero(row * q > 0)
            if same_way.size:
                return slot * q.size + int(same_way[np.argmax(np.abs(q[same_way]))])
    finally:
        svc.close()
    raise AssertionError("no memory outside the answer shares a word with the query")


def status_of(home: Path, project: Path) -> str:
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        ctx = RequestContext(project, None)
        svc.recall(ctx, query=QUERIES[0], limit=3, strengthen=False)
        handle = svc.access.handle(ctx, "project", early_ok=True)
        handle.wait_engine()
        return handle.index_status
    finally:
        svc.close()


def test_a_flipped_bit_in_any_block_of_the_index_file_is_noticed_before_the_first_answer(
    home: Path, project: Path, tmp_path: Path
) -> None:
    seeded(home, project)
    path = project_file(project)
    pristine = tmp_path / "pristine"
    shutil.copytree(store_dir(project) / "index", pristine, copy_function=shutil.copy2)
    spans = array_spans(path)
    assert "vec_i8" in spans and "rec_json" in spans and "vec_f32" not in spans
    in_vectors = vector_bit(home, project)
    for name, (start, nbytes) in sorted(spans.items()):
        shutil.rmtree(store_dir(project) / "index")
        shutil.copytree(pristine, store_dir(project) / "index", copy_function=shutil.copy2)
        assert read_marker(path) is not None
        if name == "vec_i8":  # a memory the query does not return gets a larger similarity
            flip_in_place(path, start + in_vectors, 6)
        else:
            flip_in_place(path, start + nbytes // 2, 0)
        _early_equals_rebuild(home, project)  # every answer, the first included, is a rebuild's
    # and the status says why the file was not used
    shutil.rmtree(store_dir(project) / "index")
    shutil.copytree(pristine, store_dir(project) / "index", copy_function=shutil.copy2)
    flip_in_place(path, spans["vec_i8"][0] + in_vectors, 6)
    status = status_of(home, project)
    assert status.startswith("rebuilt") and "vec_i8: checksum mismatch" in status, status


def test_data_restored_alone_from_an_older_backup_is_noticed_before_the_first_answer(
    home: Path, project: Path, tmp_path: Path
) -> None:
    seeded(home, project)
    backup = tmp_path / "data-backup"
    shutil.copytree(store_dir(project) / "data", backup, copy_function=shutil.copy2)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project, None)
    try:
        for i in range(5):
            svc.store(ctx, content=f"alpha cache written after the backup {i}", type="semantic", scope="project")
        gone = svc.recall(ctx, query="alpha cache", limit=3, strengthen=False)["memories"][-1]["id"]
        svc.forget(ctx, gone, reason="test")
    finally:
        svc.close()  # the newer index file, with its marker
    assert read_marker(project_file(project)) is not None
    shutil.rmtree(store_dir(project) / "data")
    shutil.copytree(backup, store_dir(project) / "data", copy_function=shutil.copy2)
    _early_equals_rebuild(home, project)


def test_an_older_index_file_put_back_with_its_marker_is_noticed_before_the_first_answer(
    home: Path, project: Path, tmp_path: Path
) -> None:
    seeded(home, project)
    path = project_file(project)
    old_file, old_marker = tmp_path / "old.eidx", tmp_path / "old.clean"
    os.link(path, old_file)  # the same inode, kept when the next checkpoint renames a new file in
    shutil.copy2(marker_path(path), old_marker)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project, None)
    try:
        for q in QUERIES:  # forget what the older file answers with
            hits = svc.recall(ctx, query=q, limit=2, strengthen=False)["memories"]
            for m in hits:
                if m["scope"] == "project":
                    svc.forget(ctx, m["id"], reason="test")
        svc.store(ctx, content="alpha cache after the older file", type="semantic", scope="project")
    finally:
        svc.close()
    assert os.stat(path).st_ino != os.stat(old_file).st_ino
    os.replace(old_file, path)
    os.replace(old_marker, marker_path(path))
    marker = read_marker(path)
    st = os.stat(path)
    assert marker is not None and marker["file"] == [st.st_ino, st.st_size, st.st_mtime_ns]  # it names the file
    _early_equals_rebuild(home, project)


@pytest.mark.parametrize("what", ["data token", "marker"])
def test_a_write_after_a_checkpoint_takes_away_both_the_marker_and_the_data_token(
    home: Path, project: Path, what: str
) -> None:
    """The generation in `data/` goes with the marker before the next counter-moving commit, so
    a `data/` backed up after later writes never vouches for an index file of before them."""
    from engram_mcp.services.handles import DATA_TOKEN_PREFIX

    seeded(home, project)
    tokens = lambda: sorted((store_dir(project) / "data").glob(f"{DATA_TOKEN_PREFIX}project.*"))  # noqa: E731
    assert tokens() and read_marker(project_file(project)) is not None
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        svc.store(RequestContext(project, None), content="a later write", type="semantic", scope="project")
        if what == "data token":
            assert tokens() == []
        else:
            assert read_marker(project_file(project)) is None
    finally:
        svc.close()
