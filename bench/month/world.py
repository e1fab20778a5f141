"""A coding-month world as the harness may see it: world.json and sessions.jsonl, never facts.jsonl.

README rule 4 of the world: the stand-in for Claude must not read the facts. This module has
no code path that opens facts.jsonl (only score.py, run as its own process, does), so nothing
the replay stores or shows can be derived from the answer key.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSION_START_TIMES = ((9, 30), (13, 30), (16, 30))  # the world README's suggested starts, local time
LATER_SESSION_GAP_H = 2  # a 4th, 5th ... session of a day starts this many hours after the one before
TURN_GAP_MIN = 4  # turns a few minutes apart
SESSION_END_AFTER_LAST_TURN_MIN = 3


@dataclass(frozen=True)
class World:
    """The calendar and the sessions of one world folder (`--world DIR`)."""

    folder: Path
    projects: list[str]
    start_date: dt.date
    days: int
    sessions: list[dict[str, Any]]

    def session_starts(self) -> dict[str, dt.datetime]:
        """Each session's simulated start (UTC is the local zone of every replayed process)."""
        starts: dict[str, dt.datetime] = {}
        per_day: dict[int, int] = {}
        for s in self.sessions:
            nth = per_day.get(s["day"], 0)
            per_day[s["day"]] = nth + 1
            date = self.start_date + dt.timedelta(days=s["day"] - 1)
            if nth < len(SESSION_START_TIMES):
                h, m = SESSION_START_TIMES[nth]
            else:
                h, m = SESSION_START_TIMES[-1][0] + LATER_SESSION_GAP_H * (nth - 2), SESSION_START_TIMES[-1][1]
            starts[s["session_id"]] = dt.datetime(
                date.year, date.month, date.day, tzinfo=dt.timezone.utc
            ) + dt.timedelta(hours=h, minutes=m)
        return starts


def turn_time(session_start: dt.datetime, turn_no: int) -> dt.datetime:
    """When turn `turn_no` (1-based) is submitted: a minute after the start, then every few minutes."""
    return session_start + dt.timedelta(minutes=1 + TURN_GAP_MIN * (turn_no - 1))


def load_world(folder: Path) -> World:
    folder = Path(folder)
    meta = json.loads((folder / "world.json").read_text(encoding="utf-8"))
    sessions = [
        json.loads(line)
        for line in (folder / "sessions.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return World(
        folder=folder,
        projects=[p["key"] for p in meta["projects"]],
        start_date=dt.date.fromisoformat(meta["start_date"]),
        days=int(meta["days"]),
        sessions=sessions,
    )
