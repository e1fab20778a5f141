"""Fixtures of the reliability suite: a sandbox per test (throwaway HOME + git project,
real daemon on demand), and the run's counters printed at the end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.reliability._support import STRESS, Sandbox, make_sandbox, read_counts, reset_counts, shared_sandbox


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of the developer's engram or Claude Code environment leaks into a test."""
    for name in list(os.environ):
        if name.startswith(("ENGRAM_", "CLAUDE")):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session", autouse=True)
def _reset_report() -> None:
    reset_counts()


@pytest.fixture
def sandbox(tmp_path: Path):
    sb = make_sandbox(tmp_path / "sb")
    try:
        yield sb
    finally:
        sb.cleanup()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """One sandbox with a running daemon for a whole module (its tests use projects of their own)."""
    with shared_sandbox(tmp_path_factory, request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")) as sb:
        yield sb


@pytest.fixture
def running(sandbox: Sandbox) -> Sandbox:
    """A sandbox whose daemon (fake embedder) is up."""
    sandbox.start_daemon()
    return sandbox


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    counts = read_counts()
    if not counts:
        return
    terminalreporter.section(f"reliability counts ({'stress' if STRESS else 'ci'})")
    for section, values in sorted(counts.items()):
        if isinstance(values, dict):
            terminalreporter.write_line(f"{section}: " + ", ".join(f"{k}={v}" for k, v in sorted(values.items())))
