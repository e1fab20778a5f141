"""The daemon's request workers: a job submitted never waits behind another while a worker
could take it (connections._Workers)."""

from __future__ import annotations

import threading

import pytest

from engram_mcp.daemon.connections import _Workers


def _idle_pool(size: int) -> _Workers:
    """A pool whose one worker has run a job and gone back to waiting for the next."""
    workers = _Workers(size)
    done = threading.Event()
    workers.submit(done.set)
    assert done.wait(5)
    for _ in range(200):  # the worker counts itself idle just after the job
        with workers._lock:
            if workers.idle == 1:
                break
        threading.Event().wait(0.005)
    assert workers.idle == 1
    return workers


@pytest.mark.parametrize("round_", range(20))
def test_two_jobs_submitted_back_to_back_run_side_by_side(round_: int) -> None:
    """The second of two jobs submitted at once must not wait for the first to finish: the one
    idle worker takes one, a new thread the other (the old count let both claim the idle one)."""
    workers = _idle_pool(4)
    release, second_ran = threading.Event(), threading.Event()
    try:
        workers.submit(lambda: release.wait(10))  # a long job: a 3 s session start
        workers.submit(second_ran.set)  # another project's recall, right behind it
        assert second_ran.wait(2), "the second job waited for the first"
    finally:
        release.set()
        workers.stop()


def test_at_capacity_a_job_waits_and_then_runs_and_the_count_stays_true() -> None:
    workers = _Workers(1)
    release, ran = threading.Event(), []
    workers.submit(lambda: release.wait(10))
    workers.submit(lambda: ran.append(1))
    assert workers.backlog == 1 and not ran
    release.set()
    for _ in range(400):
        if ran:
            break
        threading.Event().wait(0.005)
    assert ran == [1]
    threading.Event().wait(0.05)
    assert (workers.idle, workers.backlog, len(workers.threads)) == (1, 0, 1)
    workers.stop()


def test_a_job_that_raises_leaves_its_worker_serving() -> None:
    workers = _Workers(1)

    def boom() -> None:
        raise RuntimeError("a handler's last guard failed")

    workers.submit(boom)
    ran = threading.Event()
    workers.submit(ran.set)
    assert ran.wait(5)
    workers.stop()


def test_usr1_writes_every_threads_stack_to_the_daemon_log(tmp_path) -> None:
    """`kill -USR1 <pid>` is how a slow request is diagnosed in place: the daemon keeps serving."""
    import os
    import signal
    import time

    from tests.daemon_env import make_env

    env = make_env(tmp_path)
    try:
        client = env.client()
        assert client.call("ping") is not None
        pid = int((env.user_dir / "engramd.lock").read_text())
        log = env.user_dir / "logs" / "engramd.log"
        # A dump shows where each thread is at that instant: one taken while the daemon still
        # finishes the first request's lazy work (an import on the main thread) has neither the
        # serving loop nor the connection thread in it. So signal again until a dump shows them.
        dump = ""
        for _ in range(20):
            offset = len(log.read_text(errors="replace"))
            os.kill(pid, signal.SIGUSR1)
            for _ in range(100):  # the main thread dumps when its loop wakes: at the latest its next tick
                dump = log.read_text(errors="replace")[offset:]
                if "in serve" in dump:  # the main thread's loop: written last
                    break
                time.sleep(0.02)
            if "connections.py" in dump and "in serve" in dump:
                break
        assert "most recent call first" in dump and "connections.py" in dump and "in serve" in dump, dump
        assert client.call("ping") is not None
    finally:
        env.shutdown()


def test_a_starting_daemon_moves_a_full_log_aside(tmp_path) -> None:
    """The daemon appends to engramd.log for as long as engram is installed: at its start, a log
    past DAEMON_LOG_MAX_BYTES becomes engramd.log.1 (replacing the one before) and a new one
    begins, so the two are all that is kept."""
    from engram_mcp.daemon.process import DAEMON_LOG_MAX_BYTES
    from tests.daemon_env import make_env

    env = make_env(tmp_path)
    logs = env.user_dir / "logs"
    logs.mkdir(parents=True, mode=0o700)
    (logs / "engramd.log.1").write_text("the older log\n")
    (logs / "engramd.log").write_text("x" * (DAEMON_LOG_MAX_BYTES - 9) + "old line\n")
    try:
        assert env.client().call("ping") is not None
        assert (logs / "engramd.log.1").read_text().endswith("old line\n")
        assert (logs / "engramd.log").stat().st_size < 64 * 1024
    finally:
        env.shutdown()


def test_usr1_sent_again_and_again_while_the_daemon_loads_never_kills_it(tmp_path) -> None:
    """The dump must not crash what it diagnoses. Dumped from the C signal handler while other
    threads ran (an import, a thread starting), 200 signals during the first request's lazy load
    killed the daemon with SIGSEGV in 11 of 15 starts; it must answer afterwards every time."""
    import os
    import signal
    import time

    from tests.daemon_env import make_env

    env = make_env(tmp_path)
    try:
        for round_ in range(3):
            client = env.client()
            pid = client.call("ping")["pid"]
            for _ in range(200):
                os.kill(pid, signal.SIGUSR1)
                time.sleep(0.003)
            assert client.call("ping")["pid"] == pid, f"round {round_}: the daemon died"
            env.shutdown()
    finally:
        env.shutdown()
