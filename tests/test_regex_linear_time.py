"""Regexes that untrusted text reaches run in linear time: each test feeds the public call that
reaches one (a former catastrophic-backtracking pattern) an adversarial input of the largest size
the code lets through, and checks that a normal input still gets the same verdict."""

from __future__ import annotations

import random
import time

from engram_mcp.core.redaction import redact_obj, sanitize
from engram_mcp.services.importers import markdown_notes

LIMIT_S = 0.5


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def test_k8s_secret_item_with_long_run_of_spaces_is_linear():
    # redaction/files._K8S_ITEM_YAML: a lazy value before `[ \t]*` tried every end in a run of
    # spaces (3.1 s on this 16,000-character manifest).
    line = "  a: x" + " " * 8000 + "y"
    text = "kind: Secret\ndata:\n" + "\n".join([line, line])
    _, elapsed = _timed(sanitize, text)
    assert elapsed < LIMIT_S
    normal = sanitize("apiVersion: v1\nkind: Secret\ndata:\n  password: cGFzc3dvcmQxMjM0NTY=   \n")
    assert "cGFzc3dvcmQxMjM0NTY=" not in normal.text
    assert "password:" in normal.text


def test_key_with_long_run_of_version_suffixes_is_linear():
    # redaction/key_names._KEY_SUFFIX: `(...)++$` searched from every start of a long run of
    # `v9_` (6.8 s for a 20,000-character JSON key).
    key = "v9_" * 6667 + "x"
    _, elapsed = _timed(redact_obj, {key: "hunter2hunter"})
    assert elapsed < LIMIT_S
    out, _ = redact_obj({"DB_PASSWORD_V2": "hunter2hunter", "api_key_old": "zq8Xk2LmN4pR7tVw"})
    assert out["DB_PASSWORD_V2"] != "hunter2hunter"
    assert out["api_key_old"] != "zq8Xk2LmN4pR7tVw"


def test_quote_followed_by_long_run_of_tabs_is_linear():
    # textview._GLUE: `[ \t]*[+.]?[ \t]*` after a quote split a run of tabs every way
    # (12 s on 19,000 characters through sanitize).
    _, elapsed = _timed(sanitize, 'password = "abc"' + "\t" * 19000 + "x")
    assert elapsed < LIMIT_S
    for glued in (
        'token = "ghp_aB3dE5fG7hJ9kL1mN3p" + "Q5rS7tU9vW1xY3zA5aB3d"',
        'key = "ghp_aB3dE5fG7hJ9kL1mN3p"\n  "Q5rS7tU9vW1xY3zA5aB3d"',
    ):
        assert "[REDACTED:github-token]" in sanitize(glued).text


def test_secret_name_followed_by_long_run_of_blanks_is_linear():
    # redaction/prose._PROSE_DIRECT: `[ \t]+[ \t]*` after a key name split a run of blanks every
    # way (32 s on 19,000 characters through sanitize).
    for blank in (" ", "\t"):
        _, elapsed = _timed(sanitize, "the password" + blank * 19000 + "\x00")
        assert elapsed < LIMIT_S
    assert sanitize("login with password Xk9#pL2mQv").text == "login with password [REDACTED:password-assignment]"


def test_line_of_blanks_before_base64_lines_is_linear():
    # redaction/private_keys._B64_BLOCK: `^[ \t]*` before the first line's `[ \t]*` split a run of
    # blanks every way (4.3 s on 19,000 characters through sanitize).
    _, elapsed = _timed(sanitize, "\t" * 19000 + "x\n" + "A" * 64 + "\n" + "B" * 64 + "\n")
    assert elapsed < LIMIT_S
    rnd = random.Random(1)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = "\n".join("".join(rnd.choice(alphabet) for _ in range(64)) for _ in range(4))
    assert sanitize("key body:\n  " + body + "\n").text == "key body:\n  [REDACTED:private-key]"


def test_sql_insert_value_with_long_run_of_spaces_is_linear():
    # redaction/tables._SQL_VALUE: a lazy unquoted value before `\s*` tried every end in a run of
    # spaces (0.8 s on five 4,000-character rows through sanitize).
    row = "INSERT INTO users (password) VALUES (x" + " " * 3950 + "y);\n"
    _, elapsed = _timed(sanitize, row * 5)
    assert elapsed < LIMIT_S
    quoted = sanitize("INSERT INTO users (name, password) VALUES ('bob', 'Xk9#pL2mQvT7');").text
    assert quoted == "INSERT INTO users (name, password) VALUES ('bob', '[REDACTED:password-assignment]');"
    bare = sanitize("INSERT INTO users (name, password) VALUES (bob,   Xk9pL2mQvT7w   );").text
    assert bare == "INSERT INTO users (name, password) VALUES (bob,   [REDACTED:password]   );"


def _relations(batch):
    return [(line["relation_type"], line.get("evidence")) for line in batch.lines if line["kind"] == "relation"]


def test_markdown_relation_line_with_long_runs_of_spaces_is_linear(tmp_path):
    # services/importers/markdown_notes.RELATION_LINE_RE: `\s*(?:(…))?\s*$` after the link split a
    # run of spaces every way, for each of the name's lengths (minutes on a 40,000-character line).
    note = tmp_path / "note.md"
    note.write_text("# Note\n\n- a" + " " * 20000 + "[[x]]" + " " * 20000 + "y\n", encoding="utf-8")
    batch, elapsed = _timed(markdown_notes.read, note)
    assert elapsed < LIMIT_S
    assert _relations(batch) == []
    note.write_text("# Note\n\n- works with [[Other Note]] (since 2020)  \n", encoding="utf-8")
    relations = _relations(markdown_notes.read(note))
    assert relations == [("works_with", ["since 2020"])]
