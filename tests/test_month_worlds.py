"""The other month worlds (bench/month/<world>, replayed by `make bench` after the public one):
each passes the coding-month validator without a warning, and its generator writes exactly the
committed files, so a hand edit of the data cannot drift from the script that documents it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.month import report
from bench.month.run import OTHER_WORLDS

REPO = Path(__file__).resolve().parents[1]
VALIDATOR = report.PUBLIC_WORLD / "validate.py"
DATA_FILES = ("world.json", "facts.jsonl", "sessions.jsonl")

pytestmark = pytest.mark.skipif(not VALIDATOR.exists(), reason="needs the coding-month validator in ../shared")


@pytest.mark.parametrize("world", OTHER_WORLDS)
def test_each_other_world_is_valid_and_regenerates_identically(world, tmp_path):
    folder = REPO / "bench" / "month" / world
    checked = subprocess.run([sys.executable, str(VALIDATOR), str(folder)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "OK, 0 warning(s)" in checked.stdout, checked.stdout[-2000:] + checked.stderr
    copy = tmp_path / world
    shutil.copytree(folder, copy)
    for name in DATA_FILES:
        (copy / name).unlink()
    subprocess.run([sys.executable, str(copy / "make_world.py")], check=True, capture_output=True, timeout=60)
    for name in DATA_FILES:
        assert (copy / name).read_bytes() == (folder / name).read_bytes(), (
            f"{world}/{name} differs from make_world.py's"
        )
