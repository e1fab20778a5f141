"""Simulated time for every engram process of the replay: Debian's libfaketime, steered through one file.

Why libfaketime (LD_PRELOAD) rather than an engram clock setting: engram's notion of "now" has
many homes (Python's time.time()/datetime.now() in services, storage and hooks, and SurrealDB's
own time::now() inside the Rust engine of the same process); an env var read in `core` would
miss the engine and every call site that someone adds later. libfaketime intercepts
clock_gettime for all of them at once (checked: Python and the embedded engine's time::now()
both report the simulated date) and needs no change to the product.

How: every replayed process gets LD_PRELOAD=<shim>:libfaketimeMT.so.1,
FAKETIME_TIMESTAMP_FILE=<file> and FAKETIME_NO_CACHE=1, so each clock read takes the offset in
the file; the harness rewrites the file (an offset in seconds from the real clock) before each
session and turn. A long-lived daemon therefore follows the calendar too, and time runs on
normally inside a turn. The monotonic clock is left real (FAKETIME_DONT_FAKE_MONOTONIC=1):
timeouts, idle timers and sleeps measure real durations.

The shim: libfaketime 0.9.10 (Debian bookworm) converts an absolute CLOCK_MONOTONIC deadline
with the realtime offset even when the monotonic clock is not faked, so Python 3.11's
time.sleep (clock_nanosleep, TIMER_ABSTIME) fails with EINVAL (wolfcw/libfaketime#426). A
ten-line C library preloaded first sends monotonic sleeps straight to the kernel. It is built
with the system's C compiler into the run's folder.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
from pathlib import Path

LIBFAKETIME_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
)
SHIM_SOURCE = Path(__file__).with_name("monotonic_sleep_shim.c")
MISSING_HELP = (
    "the month replay needs libfaketime for simulated time (as root: apt-get install libfaketime faketime; "
    "`make setup` does it) and a C compiler (gcc) for its sleep shim"
)


class ClockUnavailable(RuntimeError):
    """libfaketime or the compiler is missing: the replay cannot simulate a month."""


def find_libfaketime() -> str | None:
    for path in LIBFAKETIME_CANDIDATES:
        if os.path.exists(path):
            return path
    return None


def build_shim(folder: Path) -> Path:
    """Compile the monotonic-sleep shim into `folder` (once per run)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise ClockUnavailable(MISSING_HELP)
    out = folder / "monotonic_sleep_shim.so"
    if not out.exists():
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(out), str(SHIM_SOURCE), "-ldl"], check=True)
    return out


class SimClock:
    """The simulated wall clock shared by every process started with `env()`."""

    def __init__(self, folder: Path, *, simulate: bool = True) -> None:
        self.simulate = simulate
        self._target: dt.datetime | None = None
        if not simulate:  # --real-time: every process on the real clock, the world's gaps collapse to seconds
            return
        lib = find_libfaketime()
        if lib is None:
            raise ClockUnavailable(MISSING_HELP)
        folder.mkdir(parents=True, exist_ok=True)
        self.shim = build_shim(folder)
        self.lib = lib
        self.file = folder / "faketime-offset"
        self.file.write_text("+0\n")

    def env(self) -> dict[str, str]:
        """Environment entries that put a process (and its children) on the simulated clock."""
        if not self.simulate:
            return {"TZ": "UTC"}
        return {
            "LD_PRELOAD": f"{self.shim}:{self.lib}",
            "FAKETIME_TIMESTAMP_FILE": str(self.file),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "TZ": "UTC",
        }

    def now(self) -> dt.datetime:
        """The simulated time now (the real clock plus the file's offset)."""
        if not self.simulate:
            return dt.datetime.now(dt.timezone.utc)
        offset = float(self.file.read_text().strip() or 0)
        return dt.datetime.fromtimestamp(time.time() + offset, dt.timezone.utc)

    def set(self, when: dt.datetime) -> dt.datetime:
        """Move every process's clock to `when`; never backwards (a slow turn pushes the next one later)."""
        if not self.simulate:
            return self.now()
        if self._target is not None:
            when = max(when, self.now() + dt.timedelta(seconds=1))
        offset = when.timestamp() - time.time()
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(f"{offset:+.3f}\n")
        os.replace(tmp, self.file)
        self._target = when
        return when
