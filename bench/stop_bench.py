#!/usr/bin/env python3
"""The Stop hook's trigger on the labelled corpus: how often it nudges, and whether it should have.

    .venv/bin/python bench/stop_bench.py [--out DIR] [--world DIR]

Each turn of `tests/data/stop_corpus.jsonl` (labelling rules: `tests/data/stop_corpus.md`) is
written out as a Claude Code transcript (an earlier turn, the prompt, or an engram command the
way Claude Code records it, every tool_use with its tool_result, the final answer) and goes
through the hook's own code: `hooks.last_turn` -> `hooks.turn_facts` -> `hooks.stop_signals`.

Reported per split (`dev`: the rules were tuned on it; `heldout`: not looked at while tuning, except two
of its misses that showed the wrapper and routine-setup rules)
and overall: precision, recall (= catch rate on `durable` turns), the nudge rate on `none` turns,
a confusion table, a per-category breakdown, the note's size in tokens, the turns where it must
never fire (engram already stored; an engram command), the prompts issue 13 found blocked, and
the trigger this one replaced (measured on the same turns) with what each design costs.
With `--world DIR` (default: `../shared/bench/coding-month` when present) also the trigger on every
turn of a coding-month world (issue 33): teaching and quiet turns flagged, and whether the hook's own
memory of a flagged turn shows each taught fact (the world's anchors; only this evaluation reads
facts.jsonl). And, on that world and the ones written in this repository (bench/month), how each
user fact's teaching turn is read for the user scope (`scope_eval`): by the user's words, the note,
the replay's stand-in. Writes stop.json and stop.md. Pure Python, no daemon, no model: ~1 s.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import read_jsonl  # noqa: E402
from engram_mcp.interfaces import hooks, stop_trigger  # noqa: E402
from engram_mcp.services.context import estimate_tokens  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "stop_corpus.jsonl"
DEFAULT_WORLD = ROOT.parent / "shared" / "bench" / "coding-month"  # issue 33's month world, when beside the checkout
RESULTS_DIR = ROOT / "bench" / "results"
SPLITS = ("dev", "heldout", "all")
TARGET_NUDGE_RATE_NONE = 0.05  # issue 13: at most 5% of turns without durable knowledge
TARGET_CATCH_RATE = 0.80  # ... and at least 80% of the turns with it
TARGET_NOTE_TOKENS = 150
# Task prompts issue 13 found blocked by the previous trigger (plain turns: no error, no store).
ISSUE_PROMPTS = (
    "Fix the failing test but don't change the public API",
    "Make sure the build passes before you commit",
    "Add a --verbose flag; it should be off by default",
    "You must handle the empty list case",
    "Remember to run the linter",
    "Refactor utils.py, we use snake_case everywhere",
    "Please never push directly to main in this repo",
)

# The trigger this one replaced (engram_mcp/interfaces/hooks.py before issue 13), kept to measure against.
LEGACY_USER_CUES = re.compile(
    r"\b(always|never|from now on|prefer|convention|we use|make sure|don't|do not|remember|"
    r"instead of|should be|must)\b",
    re.IGNORECASE,
)
LEGACY_ANSWER_CUES = re.compile(
    r"\b(root cause|the fix|fixed (?:it|by|the)|workaround|turned out|the issue was|the problem was|"
    r"decided|decision|convention|going forward|instead of|requires|you need to)\b",
    re.IGNORECASE,
)


def legacy_fires(facts: dict[str, Any]) -> bool:
    """The previous rule: an error followed by more work (or a cue in the answer) after the last store,
    or, with no store in the turn, a cue word in the prompt or the answer."""
    errors, recovered = 0, False
    for event in facts["events"]:
        if stop_trigger.is_store_tool(event["name"]):
            errors, recovered = 0, False
        elif errors:
            recovered = True
        if event.get("failed"):
            errors, recovered = errors + 1, False
    answer_cue = bool(LEGACY_ANSWER_CUES.search(facts["answer"]))
    if errors and (recovered or answer_cue):
        return True
    return not facts["stored"] and bool(LEGACY_USER_CUES.search(facts["prompt"]) or answer_cue)


# ------------------------------------------------------------------------------------ transcripts
def _entry(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": role, "message": {"role": role, "content": content}, **extra}


def prompt_entries(prompt: str) -> list[dict[str, Any]]:
    """The user's prompt as Claude Code records it: a slash command becomes its command tags plus a meta expansion."""
    m = re.match(r"\s*/([\w:.-]+)\s*(.*)", prompt, re.DOTALL)
    if not m:
        return [_entry("user", prompt)]
    name, args = m.group(1), m.group(2)
    tags = f"<command-message>{name}</command-message>\n<command-name>/{name}</command-name>\n<command-args>{args}</command-args>"
    return [
        _entry("user", tags),
        _entry("user", [{"type": "text", "text": f"(the /{name} command's text) {args}"}], isMeta=True),
    ]


def transcript_entries(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole transcript tail for one corpus turn, preceded by an unrelated earlier turn."""
    entries = [
        _entry("user", "earlier prompt: from now on always use tabs"),
        _entry("assistant", [{"type": "text", "text": "ok"}]),
    ]
    entries += prompt_entries(turn["prompt"])
    for i, event in enumerate(turn["tools"]):
        tid = f"toolu_{i:04d}"
        entries.append(
            _entry("assistant", [{"type": "tool_use", "id": tid, "name": event["name"], "input": event["input"]}])
        )
        result = {"type": "tool_result", "tool_use_id": tid, "content": event.get("output") or ""}
        if event.get("failed"):
            result["is_error"] = True
        entries.append(_entry("user", [result]))
    entries.append(_entry("assistant", [{"type": "text", "text": turn["answer"]}]))
    return entries


def classify(turn: dict[str, Any]) -> tuple[list[str], bool]:
    """(signals of the current trigger, whether the legacy trigger fires), both through hooks.turn_facts."""
    facts = hooks.turn_facts(hooks.last_turn(transcript_entries(turn)))
    return hooks.stop_signals(facts), legacy_fires(facts)


# ------------------------------------------------------------------------------------ metrics
def metrics(rows: list[dict[str, Any]], key: str = "fired") -> dict[str, Any]:
    tp = sum(r[key] and r["label"] == "durable" for r in rows)
    fp = sum(r[key] and r["label"] == "none" for r in rows)
    fn = sum(not r[key] and r["label"] == "durable" for r in rows)
    tn = sum(not r[key] and r["label"] == "none" for r in rows)
    return {
        "turns": len(rows),
        "durable": tp + fn,
        "none": fp + tn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,  # = the catch rate on durable turns
        "nudge_rate_none": round(fp / (fp + tn), 3) if fp + tn else None,
        "fire_rate": round((tp + fp) / len(rows), 3) if rows else None,
    }


def by_category(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        c = out.setdefault(r["category"], {"turns": 0, "durable": 0, "fired": 0, "fired_legacy": 0, "wrong": 0})
        c["turns"] += 1
        c["durable"] += r["label"] == "durable"
        c["fired"] += r["fired"]
        c["fired_legacy"] += r["legacy"]
        c["wrong"] += r["fired"] != (r["label"] == "durable")
    return out


def note_tokens() -> dict[str, Any]:
    """The note with every signal (the longest it gets) and with one."""
    longest = hooks.stop_note(list(stop_trigger.SIGNAL_TEXT), every_project=True)
    shortest = min((hooks.stop_note([s]) for s in stop_trigger.SIGNAL_TEXT), key=len)
    return {
        "longest_chars": len(longest),
        "longest_tokens": estimate_tokens(longest),
        "longest_tokens_pessimistic": -(-len(longest) // 3),
        "shortest_tokens": estimate_tokens(shortest),
        "text": longest,
        "estimate": "characters / 4 (pessimistic: / 3); Claude's tokenizer is not available offline",
    }


def issue_prompts() -> list[dict[str, Any]]:
    out = []
    for prompt in ISSUE_PROMPTS:
        turn = {
            "prompt": prompt,
            "answer": "Done.",
            "tools": [{"name": "Edit", "input": {"file_path": "src/app.py"}, "failed": False, "output": "ok"}],
        }
        signals, legacy = classify(turn)
        out.append({"prompt": prompt, "fires": bool(signals), "signals": signals, "legacy_fires": legacy})
    return out


def run(out_dir: Path, world: Path | None = None) -> dict[str, Any]:
    turns = read_jsonl(CORPUS)
    rows = []
    for t in turns:
        signals, legacy = classify(t)
        rows.append(
            {
                "id": t["id"],
                "split": t["split"],
                "category": t["category"],
                "label": t["label"],
                "stored": t["stored"],
                "command": stop_trigger.is_engram_command(t["prompt"]),
                "fired": bool(signals),
                "signals": signals,
                "legacy": legacy,
            }
        )
    result: dict[str, Any] = {
        "corpus": str(CORPUS.relative_to(ROOT)),
        "turns": len(rows),
        "durable_share": round(sum(r["label"] == "durable" for r in rows) / len(rows), 3),
    }
    for split in SPLITS:
        sel = [r for r in rows if split == "all" or r["split"] == split]
        result[split] = {"current": metrics(sel), "legacy": metrics(sel, "legacy")}
    result["categories"] = by_category(rows)
    result["never_fire"] = {
        "stored_turns": sum(r["stored"] for r in rows),
        "fired_on_stored": sum(r["fired"] and r["stored"] for r in rows),
        "command_turns": sum(r["command"] for r in rows),
        "fired_on_command": sum(r["fired"] and r["command"] for r in rows),
    }
    result["note"] = note_tokens()
    result["issue_prompts"] = issue_prompts()
    result["mistakes"] = [
        {k: r[k] for k in ("id", "split", "category", "label", "signals")}
        for r in rows
        if r["fired"] != (r["label"] == "durable")
    ]
    result["cost_per_100_turns"] = costs(result["all"], result["note"]["longest_tokens"])
    cur = result["heldout"]["current"]
    result["targets"] = {
        "nudge_rate_none_max": TARGET_NUDGE_RATE_NONE,
        "catch_rate_min": TARGET_CATCH_RATE,
        "note_tokens_max": TARGET_NOTE_TOKENS,
        "heldout_meets_nudge_rate": cur["nudge_rate_none"] is not None
        and cur["nudge_rate_none"] <= TARGET_NUDGE_RATE_NONE,
        "heldout_meets_catch_rate": cur["recall"] is not None and cur["recall"] >= TARGET_CATCH_RATE,
        "note_within_tokens": result["note"]["longest_tokens"] <= TARGET_NOTE_TOKENS,
        "never_fired_on_stored_or_command": not (
            result["never_fire"]["fired_on_stored"] or result["never_fire"]["fired_on_command"]
        ),
    }
    if world is not None and (world / "sessions.jsonl").exists():
        result["world"] = world_eval(world)
    from bench.month.run import OTHER_WORLDS

    scope_worlds = [
        w for w in [world, *(OWN_WORLDS_DIR / n for n in OTHER_WORLDS)] if w and (w / "facts.jsonl").exists()
    ]
    result["scope"] = scope_eval(scope_worlds)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "stop.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "stop.md").write_text(report(result), encoding="utf-8")
    return result


def costs(all_split: dict[str, Any], note_tokens_: int) -> dict[str, Any]:
    """Extra main-model requests and tokens per 100 turns of this corpus's mix, per delivery design.

    A block is one more main-model request per flagged turn (its whole conversation prefix, cached);
    the note rides on the next prompt's request: no request of its own, ~note tokens of input.
    """
    cur, old = all_split["current"], all_split["legacy"]
    per100 = 100 / cur["turns"]
    return {
        "legacy_trigger_block": {
            "extra_requests": round((old["tp"] + old["fp"]) * per100, 1),
            "wasted_requests": round(old["fp"] * per100, 1),
        },
        "current_trigger_block": {
            "extra_requests": round((cur["tp"] + cur["fp"]) * per100, 1),
            "wasted_requests": round(cur["fp"] * per100, 1),
        },
        "current_trigger_nudge": {
            "extra_requests": 0,
            "extra_input_tokens": round((cur["tp"] + cur["fp"]) * per100 * note_tokens_),
        },
    }


# ------------------------------------------------------------------------------------ a coding-month world
def world_turns(world: Path) -> list[dict[str, Any]]:
    """Every turn of a coding-month world (`sessions.jsonl`) in the corpus's shape, with its labels."""
    out = []
    for s in read_jsonl(world / "sessions.jsonl"):
        for i, t in enumerate(s["turns"]):
            tools = [
                {
                    "name": e["tool"],
                    "input": e["input"],
                    "failed": bool(e.get("error")),
                    "output": e.get("output") or "",
                }
                for e in t["events"]
            ]
            out.append(
                {
                    "id": f"{s['session_id']}/{t['turn']}",
                    "session": s["session_id"],
                    "project": s["project"],
                    "last": i == len(s["turns"]) - 1,
                    "prompt": t["prompt"],
                    "answer": t["answer"],
                    "tools": tools,
                    "teaches": t["teaches"],
                    "quiet": t["quiet"],
                    "world_turn": t,
                }
            )
    return out


def shows(text: str, anchors: list[str]) -> bool:
    low = text.lower()
    return all(a.lower() in low for a in anchors)


#: Where the coding-month worlds written in this repository live (bench/month/run.py OTHER_WORLDS).
OWN_WORLDS_DIR = ROOT / "bench" / "month"


def scope_eval(worlds: list[Path]) -> list[dict[str, Any]]:
    """Per world, how the user scope is read from each fact's teaching turn: the user's words that
    carry Claude's project store on to the user scope unasked (`stop_trigger.user_says_every_project`),
    what the note tells Claude (`for_every_project`, the answer's words too), and the scope the
    replay's stand-in picks (`standin.memory_from_turn`). A user fact none of them reads stays in the
    project it was taught in, where the other projects never see it, and a replacement taught in
    another project never supersedes it. The labels (facts.jsonl) are read here only."""
    from bench.month import standin

    out = []
    for world in worlds:
        sessions = {s["session_id"]: s for s in read_jsonl(world / "sessions.jsonl")}
        counts = {k: {"user": 0, "project": 0} for k in ("facts", "user_words", "note", "standin")}
        missed = []
        for fact in read_jsonl(world / "facts.jsonl"):
            taught = fact["taught_in"]
            turn = sessions[taught["session"]]["turns"][taught["turn"] - 1]
            scope = "user" if fact["scope"] == "user" else "project"
            read = {
                "user_words": stop_trigger.user_says_every_project(turn["prompt"]),
                "note": stop_trigger.for_every_project(turn["prompt"], turn["answer"]),
                "standin": standin.memory_from_turn(turn).scope == "user",
            }
            counts["facts"][scope] += 1
            for k, v in read.items():
                counts[k][scope] += v
            if scope == "user" and not any(read.values()):
                missed.append(fact["fact_id"])
        out.append({"world": world.name if world.parent == OWN_WORLDS_DIR else str(world), **counts, "missed": missed})
    return out


def world_eval(world: Path) -> dict[str, Any]:
    """The trigger on a world's turns, as the nudged replay sees them: where the previous turn of the
    session was flagged, the stand-in stores first thing in this turn (a store_memory call before the
    turn's own work, so the hook sees a store). Per teaching turn: fired, and whether the hook's own
    memory (`turn_knowledge_memory`) or the stand-in's next-turn memory shows each taught fact (the
    evaluation reads facts.jsonl for the anchors; nothing the hook or the stand-in does reads it)."""
    from bench.month import standin

    facts = {f["fact_id"]: f for f in read_jsonl(world / "facts.jsonl")}
    turns = world_turns(world)
    rows = []
    prev_fired, prev_session = False, None
    for k, t in enumerate(turns):
        entries = transcript_entries(t)
        if prev_fired and prev_session == t["session"]:
            store = {
                "type": "tool_use",
                "id": "toolu_note",
                "name": stop_trigger.ENGRAM_TOOL_PREFIX + "store_memory",
                "input": {"content": "(the previous turn)"},
            }
            at = next(i for i, e in enumerate(entries) if e["type"] == "user" and i >= 2) + 1
            entries[at:at] = [
                _entry("assistant", [store]),
                _entry("user", [{"type": "tool_result", "tool_use_id": "toolu_note", "content": "{}"}]),
            ]
        turn_facts = hooks.turn_facts(hooks.last_turn(entries))
        signals = hooks.stop_signals(turn_facts, note_delivered=prev_fired and prev_session == t["session"])
        memory = hooks.turn_knowledge_memory(turn_facts, signals) if signals else None
        nxt = turns[k + 1] if k + 1 < len(turns) and turns[k + 1]["session"] == t["session"] else None
        standin_text = standin.memory_from_turn(t["world_turn"]).content if signals and nxt else ""
        row = {
            "id": t["id"],
            "quiet": t["quiet"],
            "last": t["last"],
            "fired": bool(signals),
            "signals": signals,
            "stored_before": bool(turn_facts["stored"]),
            "facts": {},
        }
        for fid in t["teaches"]:
            anchors = facts[fid]["anchors"]
            row["facts"][fid] = {
                "kind": facts[fid]["kind"],
                "hook": bool(memory) and shows(memory["content"], anchors),
                "standin": shows(standin_text, anchors),
            }
        rows.append(row)
        prev_fired, prev_session = bool(signals), t["session"]
    teach = [r for r in rows if not r["quiet"]]
    quiet = [r for r in rows if r["quiet"]]
    per_fact = [(r, fid, v) for r in teach for fid, v in r["facts"].items()]
    return {
        "world": str(world),
        "teaching_fired": sum(r["fired"] for r in teach),
        "teaching": len(teach),
        "quiet_fired": sum(r["fired"] for r in quiet),
        "quiet": len(quiet),
        "facts": len(per_fact),
        "captured_by_hook": sum(v["hook"] for _, _, v in per_fact),
        "captured_either": sum(v["hook"] or v["standin"] for _, _, v in per_fact),
        "last_turn_facts": sum(r["last"] for r, _, _ in per_fact),
        "last_turn_captured_by_hook": sum(r["last"] and v["hook"] for r, _, v in per_fact),
        "missed": [
            {
                "turn": r["id"],
                "fact": fid,
                "kind": v["kind"],
                "fired": r["fired"],
                "signals": r["signals"],
                "stored_before": r["stored_before"],
                "hook": v["hook"],
            }
            for r, fid, v in per_fact
            if not v["hook"]
        ],
        "quiet_fired_turns": [r["id"] for r in quiet if r["fired"]],
    }


# ------------------------------------------------------------------------------------ report
def _pct(x: Any) -> str:
    return f"{100 * x:.1f}%" if isinstance(x, (int, float)) else "-"


def report(r: dict[str, Any]) -> str:
    L = [
        "# Stop hook trigger on the labelled corpus",
        "",
        f"{r['turns']} turns ({_pct(r['durable_share'])} durable) from `{r['corpus']}`, labelling rules in "
        "`tests/data/stop_corpus.md`; each turn goes through the hook's own transcript parsing. "
        "`dev`: the rules were tuned on it; `heldout`: not looked at while tuning, except two of its misses (t162, t164) "
        "that showed the wrapper and routine-setup rules of the fix signal.",
        "",
        "| split | turns | precision | recall (catch rate) | nudge rate on `none` | legacy: recall | legacy: block rate on `none` |",
        "|---|---|---|---|---|---|---|",
    ]
    for split in SPLITS:
        c, o = r[split]["current"], r[split]["legacy"]
        L.append(
            f"| {split} | {c['turns']} | {_pct(c['precision'])} | {_pct(c['recall'])} ({c['tp']}/{c['durable']}) | "
            f"{_pct(c['nudge_rate_none'])} ({c['fp']}/{c['none']}) | {_pct(o['recall'])} | {_pct(o['nudge_rate_none'])} ({o['fp']}/{o['none']}) |"
        )
    t = r["targets"]
    L += [
        "",
        f"Targets (held-out): nudge rate on `none` <= {_pct(t['nudge_rate_none_max'])}: "
        f"{'met' if t['heldout_meets_nudge_rate'] else 'NOT met'}; catch rate >= {_pct(t['catch_rate_min'])}: "
        f"{'met' if t['heldout_meets_catch_rate'] else 'NOT met'}; note <= {t['note_tokens_max']} tokens: "
        f"{'met' if t['note_within_tokens'] else 'NOT met'}; never on stored or command turns: "
        f"{'met' if t['never_fired_on_stored_or_command'] else 'NOT met'}.",
        "",
    ]
    c = r["all"]["current"]
    L += [
        "Confusion (all turns, current trigger):",
        "",
        "| | fires | silent |",
        "|---|---|---|",
        f"| durable | {c['tp']} | {c['fn']} |",
        f"| none | {c['fp']} | {c['tn']} |",
        "",
    ]
    L += [
        "Per category (`legacy` = the trigger this one replaced):",
        "",
        "| category | turns | durable | fires | wrong | legacy fires |",
        "|---|---|---|---|---|---|",
    ]
    for name, k in sorted(r["categories"].items()):
        L.append(f"| {name} | {k['turns']} | {k['durable']} | {k['fired']} | {k['wrong']} | {k['fired_legacy']} |")
    nf = r["never_fire"]
    n = r["note"]
    L += [
        "",
        f"Never fires: on {nf['stored_turns']} turns where engram stored, fired {nf['fired_on_stored']}; "
        f"on {nf['command_turns']} engram command turns, fired {nf['fired_on_command']}.",
        "",
        f"The note: {n['longest_tokens']} tokens at most (pessimistic {n['longest_tokens_pessimistic']}; {n['estimate']}), "
        "added once to the next prompt's context:",
        "",
        f"> {n['text']}",
        "",
        "Prompts issue 13 found blocked (a plain turn each):",
        "",
        "| prompt | fires now | legacy |",
        "|---|---|---|",
    ]
    for p in r["issue_prompts"]:
        L.append(
            f"| {p['prompt']} | {'yes ' + ', '.join(p['signals']) if p['fires'] else 'no'} | {'yes' if p['legacy_fires'] else 'no'} |"
        )
    k = r["cost_per_100_turns"]
    L += [
        "",
        "Cost per 100 turns of this mix:",
        "",
        "| design | extra main-model requests | of them wasted | extra input tokens |",
        "|---|---|---|---|",
        f"| legacy trigger, block | {k['legacy_trigger_block']['extra_requests']} | {k['legacy_trigger_block']['wasted_requests']} | one conversation prefix each |",
        f"| this trigger, block | {k['current_trigger_block']['extra_requests']} | {k['current_trigger_block']['wasted_requests']} | one conversation prefix each |",
        f"| this trigger, note on the next prompt (shipped) | 0 | 0 | {k['current_trigger_nudge']['extra_input_tokens']} |",
        "",
    ]
    if "world" in r:
        w = r["world"]
        L += [
            f"On the coding-month world `{w['world']}` (every turn through the same parsing; where the previous turn "
            "of the session was flagged, the nudged stand-in's store comes first in the turn):",
            "",
            "| teaching turns flagged | quiet turns flagged | facts shown by the hook's own memory | of them taught in a session's last turn |",
            "|---|---|---|---|",
            f"| {w['teaching_fired']}/{w['teaching']} | {w['quiet_fired']}/{w['quiet']} | {w['captured_by_hook']}/{w['facts']} | "
            f"{w['last_turn_captured_by_hook']}/{w['last_turn_facts']} |",
            "",
            "Facts missed: " + (", ".join(f"{m['fact']} ({m['turn']}, {m['kind']})" for m in w["missed"]) or "none"),
            "",
        ]
    if r.get("scope"):
        L += [
            "The user scope read from each fact's teaching turn, per world (user facts read as the user's / "
            "user facts; project facts read so, wrongly): the user's words carry Claude's project store on to "
            "the user scope, the note tells Claude to use it, the replay's stand-in picks it:",
            "",
            "| world | user facts | user's words | note | stand-in | project facts read as the user's (words / note / stand-in) | user facts none reads |",
            "|---|---|---|---|---|---|---|",
        ]
        for w in r["scope"]:
            L.append(
                f"| {w['world']} | {w['facts']['user']} | {w['user_words']['user']} | {w['note']['user']} | "
                f"{w['standin']['user']} | {w['user_words']['project']} / {w['note']['project']} / "
                f"{w['standin']['project']} of {w['facts']['project']} | {', '.join(w['missed']) or 'none'} |"
            )
        L.append("")
    if r["mistakes"]:
        L += [
            "Turns it gets wrong: "
            + ", ".join(f"{m['id']} ({m['split']}, {m['category']}, {m['label']})" for m in r["mistakes"]),
            "",
        ]
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="result directory (default bench/results/stop-<UTC>)")
    ap.add_argument(
        "--world",
        type=Path,
        default=DEFAULT_WORLD,
        help="a coding-month world: the trigger on its teaching and quiet turns too (default: the shared one, if present)",
    )
    a = ap.parse_args(argv)
    from datetime import datetime, timezone

    out = a.out or RESULTS_DIR / ("stop-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    result = run(out, a.world)
    for split in SPLITS:
        c = result[split]["current"]
        print(
            f"{split:8s} precision {_pct(c['precision'])}  recall {_pct(c['recall'])} ({c['tp']}/{c['durable']})  "
            f"nudge rate on none {_pct(c['nudge_rate_none'])} ({c['fp']}/{c['none']})",
            flush=True,
        )
    if "world" in result:
        w = result["world"]
        print(
            f"world    teaching turns flagged {w['teaching_fired']}/{w['teaching']}  quiet {w['quiet_fired']}/{w['quiet']}  "
            f"facts in the hook's memory {w['captured_by_hook']}/{w['facts']} "
            f"(taught in a session's last turn {w['last_turn_captured_by_hook']}/{w['last_turn_facts']})",
            flush=True,
        )
    for w in result.get("scope") or []:
        print(
            f"scope    {w['world'][-30:]:30s} user facts read as the user's: words {w['user_words']['user']}/"
            f"{w['facts']['user']}, stand-in {w['standin']['user']}; project facts read so: {w['user_words']['project']}",
            flush=True,
        )
    print(f"wrote {out / 'stop.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
