"""What the month replay's stand-in for Claude writes when it stores a turn (bench/month/standin.py).

It never reads the world's facts, so its memory is what a model would keep of the turn's own
words. Two things a model keeps that a word list missed: the sentence a rule points back to
("Uppercase keywords please. That's how I want SQL written anywhere."), and a rule the user says
holds wherever they work, though it has none of the durable words ("for any Markdown you write
for me: one sentence per line").
"""

from __future__ import annotations

from bench.month import standin


def _turn(prompt: str, answer: str = "Done.") -> dict:
    return {"prompt": prompt, "answer": answer, "events": []}


def test_a_rule_that_points_back_keeps_the_sentence_it_points_to_first() -> None:
    memory = standin.memory_from_turn(
        _turn("Two-space indents and trailing commas. That's how I want JSON laid out anywhere, fixtures included.")
    )
    assert memory.content.startswith("Two-space indents and trailing commas. That's how I want JSON laid out")


def test_a_rule_for_wherever_the_user_works_leads_the_memory() -> None:
    memory = standin.memory_from_turn(
        _turn("Rename the flag to --dry-run. Oh, and for any YAML you write for me: two-space indents, no anchors.")
    )
    assert memory.content.startswith("Oh, and for any YAML you write for me: two-space indents")
    assert memory.scope == "user"


def test_an_environment_remark_is_not_taken_for_a_rule() -> None:
    """ "On this laptop" says where, not that a rule holds: the request's detail still leads."""
    memory = standin.memory_from_turn(_turn("First build on this laptop. Set up `~/.config/app.toml` for dev."))
    assert memory.content.startswith("Set up `~/.config/app.toml` for dev.")
