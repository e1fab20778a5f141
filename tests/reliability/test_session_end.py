"""Session end is idempotent (issue 12, item 9): Claude Code resends SessionEnd when it gets no
answer in time, the write queue replays a queued session end, and a crash can come after the
summary committed but before the session was dropped. In every case the project keeps
exactly one summary of the session run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.reliability._support import REPO, Sandbox, hooks_available

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HOOK = REPO / "bin" / "engram-hook"


def _hook(sb: Sandbox, event: str, sid: str, **extra) -> subprocess.CompletedProcess:
    payload = {"session_id": sid, "cwd": str(sb.project), "hook_event_name": event, **extra}
    env = sb.env_with(session=sid)
    return subprocess.run([str(HOOK), event], input=json.dumps(payload), env=env, cwd=str(sb.project), capture_output=True,
                          text=True, timeout=120)


def _summaries(sb: Sandbox, tmp: Path) -> list[dict]:
    out = tmp / f"dump-{len(list(tmp.glob('dump-*')))}.jsonl"
    sb.call("export", {"path": str(out), "scopes": ["project"]})
    records = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    return [r for r in records if r["kind"] == "memory" and r["record"].get("category") == "session_summary"]


@pytest.mark.skipif(not hooks_available(), reason="hooks not present")
def test_a_resent_session_end_keeps_one_summary(running: Sandbox, tmp_path: Path) -> None:
    sid = "resend-0000-4000-8000-000000000001"
    assert _hook(running, "SessionStart", sid, source="startup").returncode == 0
    running.call("store", {"content": "we moved the CI to GitHub Actions", "type": "semantic", "scope": "session",
                           "importance": 0.8}, session=sid)
    assert _hook(running, "SessionEnd", sid, reason="other").returncode == 0
    # a capture the first end did not see (queued by a PostToolUse hook, applied late) reopens the session scope
    running.call("hook_capture", {"content": "edited .github/workflows/ci.yml", "type": "episodic", "category": "file_change",
                                  "importance": 0.3}, session=sid)
    for _ in range(2):  # the client's automatic resend, twice
        assert _hook(running, "SessionEnd", sid, reason="other").returncode == 0
    again = running.call("session_end", {}, session=sid)  # and the op itself, once more
    assert again.get("already_ended") or again.get("promoted") == 0
    assert len(_summaries(running, tmp_path)) == 1


def test_a_crash_after_the_summary_commit_does_not_store_it_twice(sandbox: Sandbox, tmp_path: Path) -> None:
    """The summary committed, then the process died before the session was dropped: the
    next session_end (the replay) finds the summary by its id and stores nothing."""
    from engram_mcp.services.service import RequestContext

    sid = "crash-0000-4000-8000-000000000002"
    ctx = RequestContext(sandbox.project, sid)
    with sandbox.service() as svc:
        svc.session_start(ctx)
        svc.store(ctx, content="the release checklist lives in docs/release.md", type="procedural", scope="session", importance=0.9)

        def die(*_a, **_k):
            raise SystemExit("killed after the summary commit")

        svc.registry.drop_session = die
        with pytest.raises(SystemExit):
            svc.session_end(ctx)
    with sandbox.service() as svc:  # a new process: the session is still there, with its summary committed
        first = svc.session_end(ctx)
        assert first["summary_memory_id"]
        assert svc.session_end(ctx).get("already_ended")
    sandbox.start_daemon()
    assert len(_summaries(sandbox, tmp_path)) == 1


def test_a_resumed_session_gets_a_summary_of_its_own(running: Sandbox, tmp_path: Path) -> None:
    """Idempotent per run, not per id: `claude --resume` runs the same session id again."""
    sid = "resume-0000-4000-8000-000000000003"
    for text in ("first run: the API moved to /v2", "second run: /v1 is removed in June"):
        running.call("session_start", {}, session=sid)
        running.call("store", {"content": text, "type": "semantic", "scope": "session", "importance": 0.8}, session=sid)
        running.call("session_end", {}, session=sid)
        running.call("session_end", {}, session=sid)
    assert len(_summaries(running, tmp_path)) == 2


def test_session_start_info_is_stored_clean_and_never_blocks_the_start(running: Sandbox) -> None:
    """What a hook passes about the session lands in session_registry: NUL, a lone surrogate,
    NaN or a token there must neither poison the project store nor fail the start."""
    sid = "info-0000-4000-8000-000000000004"
    token = "ghp_" + "Zq8Xw2Lm4Np6Rt1Vy3Ub5Cd7Ef9Gh0Jk2Lm4"
    line = json.dumps({"id": 1, "op": "session_start", "ctx": {"project_root": str(running.project), "session_id": sid},
                       "args": {"info": {"source": "start\u0000up", "k\u0000": "v", "bad": "\ud800", "n": float("nan"), "tok": token}}})
    import socket

    from tests.reliability._support import socket_of

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(str(socket_of(running)))
        s.sendall(line.encode() + b"\n")
        answer = json.loads(s.makefile("rb").readline())
    assert answer["ok"], answer
    running.call("store", {"content": "the project still reads fine", "type": "semantic", "scope": "project"})
    assert "reads fine" in running.call("context", {})["context_block"]
    from tests.reliability._support import find_in_raw, store_dirs

    assert find_in_raw([token], *store_dirs(running)) == {}


def test_a_session_end_queued_twice_is_applied_once(sandbox: Sandbox, tmp_path: Path) -> None:
    """The hook queues SessionEnd when the daemon cannot do it in time, and Claude Code resends
    it: both entries replay, one summary results."""
    from engram_mcp.core import spool

    sid = "queued-0000-4000-8000-000000000005"
    sandbox.start_daemon()
    sandbox.call("session_start", {}, session=sid)
    sandbox.call("store", {"content": "the staging cluster moved to eu-west-3", "type": "semantic", "scope": "session",
                           "importance": 0.8}, session=sid)
    sandbox.stop_daemon()
    ctx = {"project_root": str(sandbox.project), "session_id": sid}
    spool.enqueue(sandbox.user_dir, "hook_session_end", {"reason": "other"}, ctx)
    # a capture queued after it (a PostToolUse that finished late), then the resent end
    spool.enqueue(sandbox.user_dir, "hook_capture", {"content": "edited deploy/eu-west-3.tf", "type": "episodic",
                                                     "category": "file_change", "importance": 0.3}, ctx)
    spool.enqueue(sandbox.user_dir, "hook_session_end", {"reason": "other"}, ctx)
    sandbox.start_daemon()
    from tests.reliability._support import wait_for

    assert wait_for(lambda: not spool.pending(sandbox.user_dir), timeout=60)
    assert len(_summaries(sandbox, tmp_path)) == 1
