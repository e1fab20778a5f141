"""A small world in the coding-month format, written on demand: the test suite's and `--quick` bench's world.

Two projects, five sessions over nine days, four facts (one user fact probed in the other
project, one fact replaced by a later one), quiet turns with edits and a failing command.
It passes the world's validate.py; nothing in the replay is tuned to it.
"""

from __future__ import annotations

import json
from pathlib import Path

WORLD = {
    "projects": [
        {"key": "relay", "name": "relay", "stack": "Go 1.22, cobra", "description": "CLI that relays meter readings"},
        {"key": "portal", "name": "portal", "stack": "TypeScript, SvelteKit", "description": "web portal for tenants"},
    ],
    "days": 10,
    "start_date": "2026-04-06",
}

FACTS = [
    (
        "R1",
        "project",
        "relay",
        "semantic",
        "environment",
        "The staging relay API listens on port 7070.",
        ["7070"],
        "t01",
        1,
        "R2",
    ),
    (
        "R2",
        "project",
        "relay",
        "semantic",
        "environment",
        "The staging relay API moved to port 7443.",
        ["7443"],
        "t03",
        2,
        None,
    ),
    (
        "U1",
        "user",
        None,
        "semantic",
        "convention",
        "The user signs every commit with `git commit -S`, in every repo.",
        ["commit -S"],
        "t01",
        3,
        None,
    ),
    (
        "P1",
        "project",
        "portal",
        "procedural",
        "procedure",
        "Portal deploys go through `fly deploy --strategy canary`.",
        ["--strategy canary"],
        "t02",
        2,
        None,
    ),
]


def _bash(command: str, output: str, error: bool = False) -> dict:
    return {"tool": "Bash", "input": {"command": command}, "output": output, "error": error}


def _turn(n: int, prompt: str, answer: str, events=(), teaches=(), needs=()) -> dict:
    return {
        "turn": n,
        "prompt": prompt,
        "events": list(events),
        "answer": answer,
        "teaches": list(teaches),
        "needs": list(needs),
        "quiet": not teaches,
    }


SESSIONS = [
    {
        "session_id": "t01",
        "project": "relay",
        "day": 1,
        "turns": [
            _turn(
                1,
                "FYI the staging relay API is on port 7070, use it for manual checks of the new command.",
                "Checked staging on port 7070: it answers with version 1.8.2. I'll use it for manual checks.",
                [_bash("curl -s http://staging.relay.internal:7070/version", "1.8.2")],
                ["R1"],
            ),
            _turn(
                2,
                "Add a --since flag to the readings command, default 24h.",
                "Added --since (default 24h) to cmd/relay/readings.go; go test ./... passes after fixing a typo.",
                [
                    {
                        "tool": "Edit",
                        "input": {
                            "file_path": "cmd/relay/readings.go",
                            "old_string": "var limit int",
                            "new_string": "var limit int\n\tvar since time.Duration",
                        },
                        "output": "ok",
                        "error": False,
                    },
                    _bash("go test ./...", "readings_test.go:14: undefined: sinse", True),
                    _bash("go test ./...", "ok  \trelay/cmd/relay\t0.41s"),
                ],
            ),
            _turn(
                3,
                "Commit it. I always sign my commits with `git commit -S`, in every repo, so do that from now on.",
                "Committed 3f2a1c0 with `git commit -S`; I'll sign every commit that way in all your repos.",
                [_bash("git commit -S -m 'Add --since to readings'", "[main 3f2a1c0] Add --since to readings")],
                ["U1"],
            ),
        ],
    },
    {
        "session_id": "t02",
        "project": "portal",
        "day": 2,
        "turns": [
            _turn(
                1,
                "The tenant list sorts by id; sort it by name instead and commit.",
                "Sorted by name in src/routes/tenants/+page.server.ts and committed 9b1e2d4, signed.",
                [
                    {
                        "tool": "Edit",
                        "input": {
                            "file_path": "src/routes/tenants/+page.server.ts",
                            "old_string": "orderBy(tenants.id)",
                            "new_string": "orderBy(tenants.name)",
                        },
                        "output": "ok",
                        "error": False,
                    },
                    _bash("git commit -S -am 'Sort tenants by name'", "[main 9b1e2d4] Sort tenants by name"),
                ],
                needs=["U1"],
            ),
            _turn(
                2,
                "Ship it. We agreed that portal deploys always go through `fly deploy --strategy canary`, never a plain deploy.",
                "Deployed with `fly deploy --strategy canary`: the canary passed its checks and the rollout finished.",
                [_bash("fly deploy --strategy canary", "==> Canary deployment succeeded")],
                ["P1"],
            ),
        ],
    },
    {
        "session_id": "t03",
        "project": "relay",
        "day": 5,
        "turns": [
            _turn(
                1,
                "Check that the staging API still answers after the weekend.",
                "Staging answered on the usual port, but only with a redirect notice.",
                [_bash("curl -s http://staging.relay.internal:7070/version", "301 moved: use port 7443")],
                needs=["R1"],
            ),
            _turn(
                2,
                "Right, heads up: staging moved to port 7443 this morning and stays there. Check it again.",
                "Staging answers on port 7443 with version 1.9.0. I'll use 7443 for staging from now on.",
                [_bash("curl -s http://staging.relay.internal:7443/version", "1.9.0")],
                ["R2"],
            ),
        ],
    },
    {
        "session_id": "t04",
        "project": "relay",
        "day": 9,
        "turns": [
            _turn(
                1,
                "Run the new readings command against staging for a quick manual check.",
                "Ran it against staging: 48 readings for the last 24 hours.",
                [_bash("go run ./cmd/relay readings --addr staging.relay.internal:7443", "48 readings")],
                needs=["R2"],
            ),
            _turn(
                2,
                "Good. Commit the README update too.",
                "Committed the README update, signed.",
                [_bash("git commit -S -am 'Document readings'", "[main 77c0a9e] Document readings")],
                needs=["U1"],
            ),
        ],
    },
    {
        "session_id": "t05",
        "project": "portal",
        "day": 9,
        "turns": [
            _turn(
                1,
                "Release the sorting fix to production.",
                "Released to production; the canary passed first.",
                [_bash("fly deploy --strategy canary", "==> Canary deployment succeeded")],
                needs=["P1"],
            ),
        ],
    },
]


def write(folder: Path) -> Path:
    """Write world.json, facts.jsonl and sessions.jsonl into `folder`; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text(json.dumps(WORLD, indent=1) + "\n", encoding="utf-8")
    with (folder / "facts.jsonl").open("w", encoding="utf-8") as fh:
        for fid, scope, project, typ, kind, content, anchors, session, turn, newer in FACTS:
            fh.write(
                json.dumps(
                    {
                        "fact_id": fid,
                        "scope": scope,
                        "project": project,
                        "type": typ,
                        "content": content,
                        "anchors": anchors,
                        "taught_in": {"session": session, "turn": turn},
                        "superseded_by": newer,
                        "kind": kind,
                    }
                )
                + "\n"
            )
    with (folder / "sessions.jsonl").open("w", encoding="utf-8") as fh:
        for s in SESSIONS:
            fh.write(json.dumps(s) + "\n")
    return folder
