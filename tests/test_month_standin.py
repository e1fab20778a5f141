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


def test_who_someone_is_leads_the_memory_with_the_name_its_pronoun_points_to() -> None:
    """ "She's the PM ... signs off any wording" names no rule word, yet a model keeps it, and
    with the sentence before it, which says who "she" is; the outcome's promise comes after."""
    memory = standin.memory_from_turn(
        _turn(
            "Ping Dorota about the banner text before it ships. She's our PM and signs off anything users read.",
            "Asked Dorota on the PR. I'll treat any user-facing text as needing her OK from now on.",
        )
    )
    assert memory.content.startswith("Ping Dorota about the banner text before it ships. She's our PM")


def test_a_pronoun_sentence_without_anything_lasting_is_not_taken_for_a_role() -> None:
    memory = standin.memory_from_turn(_turn("Run the linter on src/. It's slow, give it a minute."))
    assert memory.content.startswith("Run the linter on src/.")


def test_a_request_that_names_a_role_is_not_taken_for_who_someone_is() -> None:
    """ "Tell the pilot lead what changed" asks for something; the answer's lesson still leads."""
    memory = standin.memory_from_turn(
        _turn(
            "Ship it to the crew phones today, and tell the pilot lead what changed.",
            "Sent as an over-the-air update, because only JavaScript changed.",
        )
    )
    assert memory.content.startswith("Sent as an over-the-air update")


def test_a_users_rule_for_everywhere_leads_though_the_outcome_has_a_rule_word() -> None:
    """The user's "Use ripgrep ...: I've got rg and fd everywhere" holds wherever they work, so it
    is the user's point; an outcome with a durable word ("the only source ... now") does not turn
    the turn into a question the outcome answers."""
    memory = standin.memory_from_turn(
        _turn(
            "Find everything that still reads the old env var. Use ripgrep, not grep -r: I've got rg and fd "
            "everywhere, and grep wades through target/.",
            "Two places: an override in config.rs and the default file. Removed both, so the TOML file is the "
            "only source of the interval now.",
        )
    )
    assert memory.content.startswith("Use ripgrep, not grep -r: I've got rg and fd everywhere"), memory.content
    assert memory.scope == "user"
