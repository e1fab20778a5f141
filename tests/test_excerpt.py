"""A memory the session start showed cut comes back, on a prompt's or a step's line, with the
sentences the work is about instead of its head again."""

from __future__ import annotations

from engram_mcp.services.excerpt import excerpt, query_terms, with_lesson

GATEWAY = (
    "Right, the gateway team never commits generated code. Whoever consumes a proto change runs buf generate "
    "from proto/ and commits internal/gen in their own PR, and nobody edits those files by hand. Outcome: "
    "Regenerated the golden files and read the diff: the only change is the new level column in "
    "logs_default.txt, which comes from the level field of LogsResponse. For any future proto change I'll run "
    "buf generate from proto/ and commit the result. Draft PR #231 is open with Tomasz Wójcik as reviewer, "
    "since he owns the gateway protocol."
)
PR_PROMPT = "Open a PR. This changes how we use the protocol, so get the right eyes on it."


def test_a_text_that_fits_is_shown_whole_whatever_the_work():
    assert excerpt("Staging deploys use fly.staging.toml.", 400, query_terms("release notes")) == (
        "Staging deploys use fly.staging.toml."
    )


def test_a_long_text_shows_the_sentences_the_work_is_about_after_the_head_it_saw():
    assert "Tomasz" not in GATEWAY[:240]  # the head alone hides the reviewer
    line = excerpt(GATEWAY, 240, query_terms(PR_PROMPT))
    assert len(line) <= 240
    assert line.startswith("… ") and "never commits generated code" not in line
    assert line.endswith("Draft PR #231 is open with Tomasz Wójcik as reviewer, since he owns the gateway protocol.")


def test_sentences_keep_the_texts_order_with_a_mark_for_each_gap():
    line = excerpt(GATEWAY, 400, query_terms("buf generate the proto change and open the PR"))
    assert line.index("Whoever consumes") < line.index("For any future") < line.index("Draft PR #231")
    assert " … For any future" in line and "Outcome" not in line and len(line) <= 400


def test_one_shared_word_is_not_enough_and_the_line_is_the_texts_head():
    line = excerpt(GATEWAY, 120, query_terms("run the tests"))  # "run" alone matches a sentence
    assert line == GATEWAY[: line.index("…")].rstrip() + "…" and len(line) <= 120


def test_a_matching_sentence_longer_than_the_line_is_clipped_at_a_word():
    text = "Short lead. " + "The staging deploy " + "really " * 60 + "ends here."
    line = excerpt(text, 150, query_terms("staging deploy"))
    assert line.startswith("… The staging deploy really") and line.endswith("…") and len(line) <= 150


LESSON = (
    "The cross build on mistral first failed in openssl-sys ('Could not find directory of OpenSSL installation'): "
    "reqwest's default features pull in native-tls and with it openssl-sys, and the cross image has no aarch64 "
    "OpenSSL. I switched reqwest to default-features = false with json and rustls-tls. From now on keep "
    "openssl-sys out of the tree: any HTTP or TLS crate gets default features off and its rustls-tls feature. "
    "Asked: Build the coldlink-edge binary for the yard gateways."
)


def test_an_episodes_line_shows_the_rule_it_taught_after_a_shorter_event():
    """The head alone tells what failed and stops before the lesson; the line keeps the event's
    start and then the rule, within the same length."""
    assert "rustls-tls feature" not in LESSON[:240]
    line = with_lesson(LESSON, 240)
    assert len(line) <= 240, line
    assert line.startswith("The cross build on mistral first failed")
    assert "From now on keep openssl-sys out of the tree: any HTTP or TLS crate gets default features off" in line
    assert line.index("failed") < line.index("From now on") and "Asked" not in line


def test_an_episode_shows_its_head_when_the_line_shows_its_rule_or_it_has_none():
    short = "The deploy failed on a locked state file. From now on check the lock before an apply. More context here."
    assert with_lesson(short, 400) == short  # it fits
    assert with_lesson(short, 80) == short[:80].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"  # the rule begins on the line
    plain = LESSON.replace("From now on keep", "We keep")
    assert with_lesson(plain, 240) == plain[:239].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
