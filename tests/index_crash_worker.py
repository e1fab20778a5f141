"""A process that writes memories and checkpoints its indexes until it is killed (tests/test_index_persist.py).

    python -m tests.index_crash_worker <home> <project> <seed> [checkpoint|write]

It prints "ready" after its first checkpoint, then loops forever over a random mix of stores,
updates, forgets, supersedes, recalls (which strengthen) and checkpoints, so a kill -9 lands
at any point: between a write and its checkpoint, inside a checkpoint, inside a write.

With a last argument it stands still at a chosen point instead, so a test reaches each state
on purpose rather than hoping a random sleep hits it: after a random number of steps it does
that step (a checkpoint: every file trusted; a write: the project's file stale), prints
"at <point>" and waits on stdin for the kill.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from engram_mcp.services.service import MemoryService, RequestContext
from tests.fakes import FakeEmbedder

WORDS = "alpha beta gamma delta cache deploy index query token retry schema parser merge branch".split()


def main(home: Path, project: Path, seed: int, stop_at: str | None = None) -> None:
    rnd = random.Random(seed)
    svc = MemoryService(home=home, embedder=FakeEmbedder())
    ctx = RequestContext(project, f"crash-{seed}")
    mine: list[str] = []

    def text() -> str:
        return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 12))) + f" n{rnd.randrange(10**6)}"

    for _ in range(20):
        mine.append(
            svc.store(ctx, content=text(), type="semantic", scope="project", tags=[rnd.choice(WORDS)])["memory_id"]
        )
    svc.checkpoint()
    print("ready", flush=True)
    steps = rnd.randint(3, 30) if stop_at else -1
    while True:
        if steps == 0:
            if stop_at == "checkpoint":
                svc.checkpoint()
            else:
                mine.append(svc.store(ctx, content=text(), type="semantic", scope="project")["memory_id"])
            print(f"at {stop_at}", flush=True)
            sys.stdin.readline()  # the test kills it here
            time.sleep(3600)
        steps -= 1
        roll = rnd.random()
        if roll < 0.35 or not mine:
            kind = rnd.choice(["semantic", "episodic", "procedural"])
            scope = rnd.choice(["project", "project", "user"])
            res = svc.store(ctx, content=text(), type=kind, scope=scope, tags=[rnd.choice(WORDS)])
            if scope == "project":
                mine.append(res["memory_id"])
        elif roll < 0.45:
            svc.update(ctx, rnd.choice(mine), content=text(), importance=round(rnd.random(), 2))
        elif roll < 0.5 and len(mine) > 2:
            a, b = rnd.sample(mine, 2)
            svc.link(ctx, a, b, "supersedes")
        elif roll < 0.58:
            svc.forget(ctx, mine.pop(rnd.randrange(len(mine))), reason="crash test")
        elif roll < 0.85:
            svc.recall(ctx, query=text(), limit=5)
        else:
            svc.checkpoint()
            if rnd.random() < 0.5:
                time.sleep(0.1)  # idle after a checkpoint, as the daemon is: a kill may land here


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
