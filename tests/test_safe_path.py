"""A repository's own Python files never run in engram's processes.

Claude Code starts the MCP server (and the commands' CLI) in the user's project, and `python -m`
puts the working directory first on `sys.path`: a cloned repository with a top-level
`engram_mcp/` package, or a module named like one the server imports (`selectors.py`), ran its
code as the user; so did a `venv.py` or `pip/` in the build that sets up the plugin's Python.
`bin/engram-python` runs every Python in safe path mode, and the build runs its steps with
`-P` outside the project. Real scripts, real interpreters, a hostile working directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _plant(project: Path, marks: Path, *names: str) -> None:
    """Modules under `names` (a package when the name ends in /) that leave a mark file when run."""
    for name in names:
        path = project / (name + "__init__.py" if name.endswith("/") else name)
        path.parent.mkdir(parents=True, exist_ok=True)
        mark = marks / name.strip("/").replace("/", "_")
        path.write_text(f"open({str(mark)!r}, 'w').write('ran')\n")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTHONPATH")}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO), ENGRAM_PYTHON=sys.executable, **extra)
    return env


def test_engram_python_never_imports_from_the_project(tmp_path: Path) -> None:
    project, marks = tmp_path / "project", tmp_path / "marks"
    marks.mkdir()
    _plant(project, marks, "engram_mcp/", "engram_mcp/interfaces/", "selectors.py", "argparse.py", "json/")
    proc = subprocess.run(
        [str(REPO / "bin" / "engram-python"), "-m", "engram_mcp.interfaces.cli", "--help"],
        cwd=project,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "recall" in proc.stdout
    assert not list(marks.iterdir()), "the project's own modules ran"


def test_the_build_runs_venv_and_pip_outside_the_project(tmp_path: Path) -> None:
    """The build's venv and pip steps from a project holding `venv.py` and `pip/` (no index: pip
    starts, then fails to fetch build dependencies, which is all this needs)."""
    project, marks, data = tmp_path / "project", tmp_path / "marks", tmp_path / "data"
    marks.mkdir()
    data.mkdir()
    _plant(project, marks, "venv.py", "venv/", "pip/", "ensurepip/")
    proc = subprocess.run(
        [sys.executable, str(REPO / "bin" / "engram-bootstrap"), "--root", str(REPO), "--data", str(data)],
        cwd=project,
        env=_env(tmp_path, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1"),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    log = (data / "bootstrap.log").read_text(errors="replace")
    assert " -P -m pip install " in log, log[-2000:]  # the virtualenv was made; pip was started
    assert (data / "venv" / "bin" / "python").exists()
    assert not list(marks.iterdir()), "the project's own modules ran in the build"
    assert proc.returncode != 0  # no index: nothing to build with, and the build says so
