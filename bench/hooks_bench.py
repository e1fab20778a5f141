"""Hook costs: wall time of each hook process, and the tokens each Stop-hook design costs per turn.

    .venv/bin/python bench/hooks_bench.py [--quick] [--out DIR] [--memories N] [--no-claude]

Part 1 (wall time) runs `bin/engram-hook <Event>` as Claude Code does (a new process per
event, hook JSON on stdin) against a warm daemon with the real embedding model and a
project holding `--memories` memories; it times process start to exit. The first
SessionStart (daemon not running: it is started and the model loaded) is reported apart.

Part 2 (Stop design) drives the real Claude Code CLI with a scripted model on loopback
through the same multi-turn conversation twice: once with engram's command Stop hook, once
with an equivalent `type: prompt` Stop hook, and counts what reaches the Messages API
(tokens estimated as characters / 4 of each request's messages + system). The prompt hook
is a side request carrying the conversation on every turn; the command hook costs nothing
on a quiet turn and, on a turn it blocks, one more main-model request (whose context is
the conversation, mostly a prompt-cache hit) plus its short reason.

Writes hooks.json and hooks.md to bench/results/<timestamp>/ (or --out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, RESULTS_DIR, machine_info, utc_stamp, write_json

sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402

from engram_mcp.daemon.client import DaemonClient  # noqa: E402

HOOK = REPO_ROOT / "bin" / "engram-hook"
INPUTS = REPO_ROOT / "tests" / "data" / "claude_hook_inputs"
CHARS_PER_TOKEN = 4
PROMPT_STOP_HOOK = (
    "Did this turn produce durable knowledge (a decision, convention, fix, procedure or preference) that was not "
    "stored with the engram store_memory tool? If so answer ok=false with the items to store as the reason; otherwise ok=true."
)


def pcts(seconds: list[float]) -> dict[str, Any]:
    ms = np.asarray(seconds) * 1000.0
    return {"n": len(seconds), "p50_ms": round(float(np.percentile(ms, 50)), 1), "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "p99_ms": round(float(np.percentile(ms, 99)), 1), "max_ms": round(float(ms.max()), 1)}


def load_avg() -> float:
    return round(os.getloadavg()[0], 2)


# -- part 1: wall times -------------------------------------------------------------------------

class World:
    def __init__(self, base: Path) -> None:
        self.home = base / "home"
        self.project = base / "project"
        self.home.mkdir(parents=True)
        (self.project / ".git").mkdir(parents=True)
        self.user_dir = self.home / ".claude" / "engram"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "CLAUDE"))}
        self.env.update(HOME=str(self.home), ENGRAM_HOME=str(self.user_dir), ENGRAM_PYTHON=sys.executable)

    def hook(self, event: str, payload: dict[str, Any]) -> tuple[float, subprocess.CompletedProcess]:
        data = json.dumps(payload)
        started = time.perf_counter()
        proc = subprocess.run([str(HOOK), event], input=data, env=self.env, cwd=str(self.project), capture_output=True, text=True, timeout=120)
        return time.perf_counter() - started, proc

    def client(self) -> DaemonClient:
        os.environ["ENGRAM_HOME"] = str(self.user_dir)
        return DaemonClient(self.user_dir, client_name="bench")

    def shutdown(self) -> None:
        try:
            DaemonClient(self.user_dir, autostart=False, timeout=10).call("shutdown")
        except Exception:
            pass


def sample(event: str, world: World, session: str, **over: Any) -> dict[str, Any]:
    data = json.loads((INPUTS / f"{event}.json").read_text())
    data.update(cwd=str(world.project), session_id=session, **over)
    return data


def populate(world: World, n: int) -> None:
    topics = ["build", "tests", "deploy", "database", "api", "frontend", "auth", "logging", "cache", "queue"]
    with world.client() as c:
        for i in range(n):
            t = topics[i % len(topics)]
            c.call("store", {"content": f"Project note {i} about the {t}: use the {t} helper #{i} and keep {t} configs in config/{t}.yaml.",
                             "type": ["semantic", "procedural", "episodic"][i % 3], "scope": "project", "importance": 0.3 + (i % 7) / 10,
                             "dedup": False}, project_root=str(world.project))


def time_hooks(world: Any, cases: dict[str, Any], repeats: int) -> dict[str, list[float]]:
    """Seconds of each run of each case: `make(i) -> (event, payload)`, one hook process per run.

    `world.hook(event, payload) -> (seconds, CompletedProcess)` runs it as Claude Code does.
    """
    out: dict[str, list[float]] = {}
    for name, make in cases.items():
        times = out.setdefault(name, [])
        for i in range(repeats):
            event, payload = make(i)
            elapsed, proc = world.hook(event, payload)
            if proc.returncode != 0:
                raise RuntimeError(f"{name}: exit {proc.returncode}: {proc.stderr[-400:]}")
            times.append(elapsed)
    return out


def wall_times(n_memories: int, repeats: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="engram-hookbench-"))
    world = World(base)
    out: dict[str, Any] = {"memories": n_memories, "repeats": repeats}
    try:
        cold, proc = world.hook("SessionStart", sample("SessionStart", world, "cold-start"))
        out["session_start_cold_ms"] = round(cold * 1000, 1)
        out["session_start_cold_note"] = "daemon not running: it is started, the stores opened and migrated (no model needed)"
        populate(world, n_memories)
        with world.client() as c:
            c.call("recall", {"query": "warm the model"}, project_root=str(world.project))
        transcript = base / "transcript.jsonl"
        answer = " ".join(["answer"] * 80)
        with transcript.open("w") as fh:
            for i in range(40):
                fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": f"prompt {i} " + "x" * 400}}) + "\n")
                fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}) + "\n")
        cases = {
            "PostToolUse (Edit)": lambda i: ("PostToolUse", sample("PostToolUse.Edit", world, "s-bench", tool_input={
                "file_path": str(world.project / "a.py"), "old_string": f"x = {i}", "new_string": f"x = {i + 1}"})),
            "PostToolUseFailure (Bash)": lambda i: ("PostToolUseFailure", sample("PostToolUseFailure", world, "s-bench", error=f"Exit code 1\nerror: case {i}")),
            "PostToolUse (Bash, quiet)": lambda i: ("PostToolUse", sample("PostToolUse.Bash", world, "s-bench")),
            # the transcript already holds the answer Claude Code reports: a lagging one is waited for
            # up to STOP_TRANSCRIPT_SETTLE_S, and a mismatch here would time that wait, not the hook
            "Stop": lambda i: ("Stop", sample("Stop", world, "s-bench", transcript_path=str(transcript), last_assistant_message=answer)),
            "UserPromptSubmit": lambda i: ("UserPromptSubmit", sample("UserPromptSubmit", world, "s-bench", prompt=f"how do we configure the cache for case {i}?")),
            "SessionStart (warm)": lambda i: ("SessionStart", sample("SessionStart", world, f"s-start-{i}")),
        }
        results = {}
        for name, make in cases.items():  # one case at a time: progress and load are per case
            results[name] = pcts(time_hooks(world, {name: make}, repeats)[name])
            results[name]["load_avg"] = load_avg()
            print(f"  {name:28s} p50 {results[name]['p50_ms']:7.1f} ms  p95 {results[name]['p95_ms']:7.1f} ms", flush=True)
        ends = []
        for i in range(max(3, repeats // 10)):
            world.hook("PostToolUseFailure", sample("PostToolUseFailure", world, f"s-end-{i}"))
            elapsed, proc = world.hook("SessionEnd", sample("SessionEnd", world, f"s-end-{i}"))
            ends.append(elapsed)
        results["SessionEnd"] = pcts(ends)
        out["hooks"] = results
        imports = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", "import engram_mcp.interfaces.hooks"], env={**world.env, "PYTHONPATH": str(REPO_ROOT)},
                                 capture_output=True, text=True)
        out["hook_import_modules"] = sum(1 for line in imports.stderr.splitlines() if line.startswith("import time:")) - 1
    finally:
        world.shutdown()
        shutil.rmtree(base, ignore_errors=True)
    return out


# -- part 2: Stop hook designs ----------------------------------------------------------------------

def request_tokens(body: dict[str, Any]) -> int:
    text = json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("system", ""), ensure_ascii=False)
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def stop_design_costs(turns: int) -> dict[str, Any]:
    from tests.claude_harness import FakeAnthropic, ToolUse, git_project, run_claude, write_plugin

    base = Path(tempfile.mkdtemp(prefix="engram-stopbench-"))
    reading = REPO_ROOT / "engram_mcp" / "index" / "retrieval.py"  # a realistic file read into the conversation
    # Turn kinds: quiet work, a stated convention, an error and its fix (the last two have knowledge to keep).
    prompts = ["read retrieval.py and summarise it", "From now on always run ruff before committing.", "run the tests",
               "read retrieval.py again and list its functions", "thanks, that is all"][:turns]
    results: dict[str, Any] = {"turns": len(prompts), "prompts": prompts}
    try:
        for design in ("command", "prompt"):
            home = base / design / "home"
            project = git_project(base / design / "project")
            if design == "command":
                plugin_dir = base / design / "plugin"
                hooks = {"Stop": [{"hooks": [{"type": "command", "command": f'"{HOOK}" Stop', "timeout": 5}]}]}
            else:
                plugin_dir = base / design / "plugin"
                hooks = {"Stop": [{"hooks": [{"type": "prompt", "prompt": PROMPT_STOP_HOOK, "timeout": 30}]}]}
            write_plugin(plugin_dir, "stopbench", hooks=hooks)
            side_tokens, extra_main_tokens, blocks, main_tokens = [], [], 0, []
            for i, prompt in enumerate(prompts):
                if i in (0, 3):
                    script = [ToolUse("Read", {"file_path": str(reading)}), "Here is the summary."]
                elif i == 2:
                    script = [ToolUse("Bash", {"command": "python3 -c 'import not_a_module_xyz'"}), ToolUse("Bash", {"command": "true"}),
                              "The fix was to install the missing module.", "Stored."]
                elif i == 1:
                    script = ["Noted.", "Stored."]
                else:
                    script = ["You're welcome."]
                with FakeAnthropic(script, fallback_text="ok") as api:
                    args = ["-p", prompt, "--output-format", "json", "--plugin-dir", str(plugin_dir), "--allowedTools", "Read,Bash"]
                    if i:
                        args.append("--continue")
                    env = api.env(ENGRAM_HOME=str(home / ".claude" / "engram"), ENGRAM_PYTHON=sys.executable)
                    proc = run_claude(args, home=home, cwd=project, env_extra=env, timeout=180)
                    if proc.returncode != 0:
                        raise RuntimeError(f"claude failed: {proc.stderr[-2000:]}")
                side_tokens.append(sum(request_tokens(r.body) for r in api.side_requests))
                convo = api.conversation
                main_tokens.append(sum(request_tokens(r.body) for r in convo))
                blocked = [r for r in convo if "engram memory check" in json.dumps(r.body.get("messages", [])[-1:])]
                blocks += len(blocked)
                extra_main_tokens.append(sum(request_tokens(r.body) for r in blocked))
            results[design] = {
                "side_request_tokens_per_turn": side_tokens,
                "side_request_tokens_total": sum(side_tokens),
                "turns_blocked": blocks,
                "extra_main_request_tokens_per_turn": extra_main_tokens,
                "extra_main_request_tokens_total": sum(extra_main_tokens),
                "conversation_tokens_total": sum(main_tokens),
            }
            print(f"  Stop design {design:8s}: side requests {sum(side_tokens):7d} tokens, blocked turns {blocks}, "
                  f"extra main-request tokens {sum(extra_main_tokens)}", flush=True)
        hooks_path = REPO_ROOT / "engram_mcp" / "interfaces" / "hooks.py"
        from engram_mcp.interfaces.hooks import STOP_REASON

        results["command_reason_tokens"] = (len(STOP_REASON) + 120) // CHARS_PER_TOKEN
        results["note"] = ("prompt design: every turn sends the conversation to a model (no cache across turns for the side "
                           "request); command design (engram's): no model call and never a block; a turn with unstored "
                           f"knowledge leaves a ~{results['command_reason_tokens']}-token note that the next prompt's "
                           "UserPromptSubmit hook carries (not installed in this comparison; see the stop part).")
        del hooks_path
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return results


def report(result: dict[str, Any]) -> str:
    lines = ["# engram hook costs", "", f"Run {result['stamp']} on {result['machine']['platform']} ({result['machine']['cpus']} CPUs), "
             f"load average at start {result['load_avg_start']}.", ""]
    w = result.get("wall_times")
    if w:
        lines += [f"## Hook wall time (process start to exit; {w['memories']} project memories, warm daemon, real model)", "",
                  "| hook | n | p50 ms | p95 ms | p99 ms | max ms |", "|---|---|---|---|---|---|"]
        for name, r in w["hooks"].items():
            lines.append(f"| {name} | {r['n']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['max_ms']} |")
        lines += ["", f"First SessionStart with no daemon running: {w['session_start_cold_ms']} ms ({w['session_start_cold_note']}).",
                  f"Modules a hook process imports (python -S): {w['hook_import_modules']}.", ""]
    s = result.get("stop_design")
    if s:
        lines += [f"## Stop hook: tokens per design over the same {s['turns']}-turn conversation", "",
                  "| design | side-request tokens | turns blocked | extra main-request tokens |", "|---|---|---|---|"]
        for design in ("command", "prompt"):
            d = s[design]
            lines.append(f"| {design} | {d['side_request_tokens_total']} ({', '.join(map(str, d['side_request_tokens_per_turn']))}) | "
                         f"{d['turns_blocked']} | {d['extra_main_request_tokens_total']} |")
        lines += ["", s["note"], ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and memories (structure check)")
    ap.add_argument("--memories", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--no-claude", action="store_true", help="skip the Stop-design comparison (needs tests/claude-cli/node_modules/.bin/claude: make setup)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    memories = args.memories if args.memories is not None else (50 if args.quick else 1000)
    repeats = args.repeats if args.repeats is not None else (8 if args.quick else 60)
    out_dir = args.out or RESULTS_DIR / utc_stamp()
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"stamp": utc_stamp(), "machine": machine_info(), "load_avg_start": load_avg()}
    print(f"hook wall times ({memories} memories, {repeats} runs each)", flush=True)
    result["wall_times"] = wall_times(memories, repeats)
    if not args.no_claude:
        print("Stop hook designs (real Claude Code, scripted model)", flush=True)
        result["stop_design"] = stop_design_costs(3 if args.quick else 5)
    write_json(out_dir / "hooks.json", result)
    (out_dir / "hooks.md").write_text(report(result), encoding="utf-8")
    print(f"wrote {out_dir / 'hooks.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
