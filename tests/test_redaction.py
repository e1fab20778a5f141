"""Tests for engram_mcp.core.redaction: secrets must never be stored in clear."""

from __future__ import annotations

import copy
import itertools
import json
import random
import re
from collections import Counter
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_mcp.core.redaction import (
    SECRET_KINDS,
    Finding,
    RedactionResult,
    redact,
    redact_obj,
    sanitize,
    strip_private,
)

DATA = Path(__file__).parent / "data"


def _load(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


CORPUS = _load("secrets_corpus.jsonl")
NEGATIVES = _load("not_secrets.jsonl")
LABEL = re.compile(r"\[REDACTED:([a-z0-9-]+)\]")


def _corpus_id(i_entry: tuple[int, dict]) -> str:
    i, entry = i_entry
    return f"{i:02d}-{entry['kind']}"


def _pieces(secret: str) -> list[str]:
    """Long fragments of a secret (PEM lines, escaped-newline JSON chunks)."""
    return [p for p in re.split(r"\s+|\\n", secret) if len(p) >= 12]


# ---------------------------------------------------------------------------
# corpus shape
# ---------------------------------------------------------------------------


def test_corpus_is_large_and_covers_every_kind():
    assert len(CORPUS) >= 60
    kinds = Counter(entry["kind"] for entry in CORPUS)
    assert set(kinds) <= set(SECRET_KINDS)
    missing = [k for k in SECRET_KINDS if kinds[k] < 2]
    assert not missing, f"kinds with fewer than 2 corpus lines: {missing}"
    for entry in CORPUS:
        assert set(entry) == {"kind", "secret", "context"}
        assert entry["secret"] in entry["context"]


def test_negative_corpus_is_large():
    assert len(NEGATIVES) >= 30


def test_secret_kinds_are_unique_kebab_case():
    assert isinstance(SECRET_KINDS, tuple)
    assert len(set(SECRET_KINDS)) == len(SECRET_KINDS)
    for kind in SECRET_KINDS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", kind), kind


# ---------------------------------------------------------------------------
# positive corpus
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CORPUS, ids=[_corpus_id(x) for x in enumerate(CORPUS)])
def test_corpus_secret_is_redacted(entry):
    result = sanitize(entry["context"])
    out = result.text
    assert entry["secret"] not in out
    for piece in _pieces(entry["secret"]):
        assert piece not in out, f"fragment of the secret survived: {piece!r}"
    assert f"[REDACTED:{entry['kind']}]" in out
    assert result.redacted
    assert entry["kind"] in {f.kind for f in result.findings}
    # every label in the output is a known kind and never nested
    assert set(LABEL.findall(out)) <= set(SECRET_KINDS)
    assert "[REDACTED:[REDACTED" not in out
    # the findings count exactly the labels written
    assert sum(f.count for f in result.findings) == len(LABEL.findall(out))


@pytest.mark.parametrize("entry", CORPUS, ids=[_corpus_id(x) for x in enumerate(CORPUS)])
def test_corpus_is_idempotent(entry):
    once = sanitize(entry["context"]).text
    twice = sanitize(once)
    assert twice.text == once
    assert not twice.redacted


@pytest.mark.parametrize("entry", CORPUS[:20], ids=[_corpus_id(x) for x in enumerate(CORPUS[:20])])
def test_redact_equals_sanitize_without_private_tags(entry):
    assert redact(entry["context"]) == sanitize(entry["context"])


# ---------------------------------------------------------------------------
# negative corpus and placeholders
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [e["text"] for e in NEGATIVES])
def test_not_secrets_unchanged(text):
    result = sanitize(text)
    assert result.text == text
    assert not result.redacted
    assert result.findings == ()


@pytest.mark.parametrize(
    "text",
    [
        "password=<your-password>",
        "token=${TOKEN}",
        "api_key=$API_KEY",
        "API_KEY=xxx",
        "SECRET=****",
        "password: \"\"",
        "password: null",
        "password = None",
        "token: ${{ secrets.NPM_TOKEN }}",
        "db_password: \"{{ vault_db_password }}\"",
        "export GITHUB_TOKEN=$(gh auth token)",
        "print(\"token=%s\" % token)",
        "url = f\"https://x/?access_token={token}\"",
        "API_TOKEN=your_token_here",
        "password: [hidden]",
        "mysql -u root -p app_db",
        "curl -u \"$USER:$PASS\" https://example.com",
        "git commit -m 'remove hard-coded password'",
        "UUID: 123e4567-e89b-12d3-a456-426614174000",
        "token_count = 5",
        "if password is None:",
    ],
)
def test_placeholders_and_code_unchanged(text):
    assert sanitize(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        # code passing variables, not literals
        "connect(host=host, password=password, port=5432)",
        "    username, password = parsed.auth_decoded",
        '{"client_secret": client_secret, "grant_type": grant_type}',
        "func, args, token=token if explicit_token else None",
        "TOKEN = CHAR ^ CTL ^ SEPARATORS",
        "        self, private_key: rsa.RSAPrivateKey, f_priv: _FragList",
        "    refresh_token: RefreshTokenT,",
        "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
        'toolskey = "VS%0.f0COMNTOOLS" % version',
        # values that name a secret rather than being one
        'EXPIRED_TOKEN = "ExpiredToken"',
        'HEADER_ACCESS_TOKEN = "X-Xet-Access-Token"',
        'CHALLENGE_PASSWORD: "challengePassword",',
        'SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"',
        'api_key="hf_...",  # Pass your HF token',
        "FillMaskOutputElement(score=0.07, token=2936, token_str=' happiness')",
        'publicKeyToken="1fc8b3b9a1e18e3b"',
        '    Token:                     "#cccccc",',
        "       --private-key=FILE          private key file",
        "information can be provided via the --username and --password options",
    ],
)
def test_code_and_secret_names_unchanged(text):
    assert sanitize(text).text == text


@pytest.mark.parametrize(
    "text, secret",
    [
        ('    password = "hunter2"', "hunter2"),  # a hard-coded literal in code
        ("PIN_PASSWORD=1234", "1234"),  # short numbers are secrets under password names
        ("password=monkey", "monkey"),  # not label-like despite containing 'key'
        ("export API_TOKEN=a8Fk29dLq0", "a8Fk29dLq0"),
    ],
)
def test_literals_in_code_and_config_are_redacted(text, secret):
    out = sanitize(text).text
    assert secret not in out
    assert "[REDACTED:password-assignment]" in out


def test_changeme_is_redacted_by_design():
    # documented choice: weak real-world passwords are redacted, not treated as placeholders
    assert sanitize("ADMIN_PASSWORD=changeme").text == "ADMIN_PASSWORD=[REDACTED:password-assignment]"


# ---------------------------------------------------------------------------
# precise output shapes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "postgres://admin:hunter2@db:5432/x",
            "postgres://admin:[REDACTED:url-credentials]@db:5432/x",
        ),
        ("redis://:p@ss@cache:6379/0", "redis://:[REDACTED:url-credentials]@cache:6379/0"),
        ("DB_PASSWORD=Tr0ub4dor&3", "DB_PASSWORD=[REDACTED:password-assignment]"),
        ('"password": "hunter2"', '"password": "[REDACTED:password-assignment]"'),
        ("password: hunter22", "password: [REDACTED:password-assignment]"),
        ("--password hunter22", "--password [REDACTED:password-assignment]"),
        ("--password=hunter22", "--password=[REDACTED:password-assignment]"),
        ("mysql -uroot -p'hunter22' db", "mysql -uroot -p'[REDACTED:password-assignment]' db"),
        ("mysql -uroot -phunter22 db", "mysql -uroot -p[REDACTED:password-assignment] db"),
        (
            "Server=db;User Id=sa;Password=Pa55;word!;Encrypt=true",
            "Server=db;User Id=sa;Password=[REDACTED:password-assignment];Encrypt=true",
        ),
        (
            "GET /cb?code=1&access_token=abcd1234efgh&state=2",
            "GET /cb?code=1&access_token=[REDACTED:password-assignment]&state=2",
        ),
        (
            "Authorization: Bearer abcdefghijklmnop1234",
            "Authorization: Bearer [REDACTED:bearer-token]",
        ),
        (
            "Authorization: Basic YWRtaW46aHVudGVyMg==",
            "Authorization: Basic [REDACTED:bearer-token]",
        ),
        # a `#` pasted unencoded into a URL's password is part of it, not a fragment
        ("git clone https://deploy:erACpd#1@git.acme.io/x.git", "git clone https://deploy:[REDACTED:url-credentials]@git.acme.io/x.git"),
        # the name and the value as two attributes of one element (.NET appSettings, Spring, Ant)
        ('<add key="DbPassword" value="JKP4GY08vDu#1" />', '<add key="DbPassword" value="[REDACTED:password-assignment]" />'),
        (
            "<property name='db.password' value='s3cr3t-Value' />",
            "<property name='db.password' value='[REDACTED:password-assignment]' />",
        ),
        ('<add key="Theme" value="dark" />', '<add key="Theme" value="dark" />'),
        ('<property name="tokenizer" value="wordpiece"/>', '<property name="tokenizer" value="wordpiece"/>'),
        ('<add key="PasswordPolicy" value="Strict" />', '<add key="PasswordPolicy" value="Strict" />'),
    ],
)
def test_exact_redaction(text, expected):
    assert sanitize(text).text == expected


def test_specific_kind_wins_over_generic():
    gh = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    out = sanitize(f"GITHUB_TOKEN={gh}\npassword={gh}")
    assert out.text == "GITHUB_TOKEN=[REDACTED:github-token]\npassword=[REDACTED:github-token]"
    assert out.findings == (Finding("github-token", 2),)

    ant = "sk-ant-api03-" + "Zx8Qp2LmN4vB7rT1yU6wE3sA" * 4
    assert sanitize(f"OPENAI_API_KEY={ant}").text == "OPENAI_API_KEY=[REDACTED:anthropic-key]"


def test_jwt_inside_bearer_is_not_double_wrapped():
    jwt = (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkRldiJ9."
        "c2lnbmF0dXJlLWJ5dGVzLWFyZS1oZXJlLTEyMzQ1Ng"
    )
    out = sanitize(f"Authorization: Bearer {jwt}")
    assert out.text == "Authorization: Bearer [REDACTED:jwt]"
    assert out.findings == (Finding("jwt", 1),)


def test_private_key_whole_block_is_redacted():
    body = "\n".join(["MIIEowIBAAKCAQEA7bq3x9k2Zp4T1uVwYc8nHq5R6sLmN0dFgJhKiOpQrStUvWx"] * 10)
    block = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    out = sanitize(f"before\n{block}\nafter").text
    assert out == "before\n[REDACTED:private-key]\nafter"


def test_truncated_private_key_is_redacted():
    lines = ["MIIEowIBAAKCAQEA7bq3x9k2Zp4T1uVwYc8nHq5R6sLmN0dFgJhKiOpQrStUvWx"] * 5
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n... [output truncated]"
    out = sanitize(text).text
    assert "MIIEow" not in out
    assert out.startswith("[REDACTED:private-key]")
    assert "[output truncated]" in out


def test_certificate_and_pem_markers_in_code_are_kept():
    code = 'if pem.startswith("-----BEGIN PRIVATE KEY-----"):\n    kind = "pkcs8"'
    assert sanitize(code).text == code


# ---------------------------------------------------------------------------
# <private> spans
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a <private>secret</private> b", "a [private] b"),
        ("a <PRIVATE>x</Private> b", "a [private] b"),
        ("a <private>line1\nline2\n</private>\nb", "a [private]\nb"),
        ("a <private>x <private>y</private> z</private> b", "a [private] b"),
        ("a <private>x</private> b <private>y</private> c", "a [private] b [private] c"),
        ("a <private>never closed\nmore", "a [private]"),
        ("a <private reason='pii'>x</private> b", "a [private] b"),
        ("a </private> b", "a </private> b"),
        ("no tags here", "no tags here"),
        ("", ""),
    ],
)
def test_strip_private(text, expected):
    assert strip_private(text) == expected


def test_sanitize_strips_private_before_redacting():
    text = "note <private>password=hunter22 ghp_" + "a" * 36 + "</private> done"
    result = sanitize(text)
    assert result.text == "note [private] done"
    assert not result.redacted  # nothing left to redact once the span is gone


def test_nested_private_text_never_leaks():
    text = "<private>outer <private>inner</private> still-private</private>visible"
    out = strip_private(text)
    assert "inner" not in out and "still-private" not in out and "outer" not in out
    assert out == "[private]visible"


# ---------------------------------------------------------------------------
# redact_obj
# ---------------------------------------------------------------------------


def test_redact_obj_walks_nested_structures():
    aws = "AKIA" + "QWERTYUIOPASDFGH"
    obj = {
        "tool": "Bash",
        "exit_code": 1,
        "ok": False,
        "ratio": 0.5,
        "nothing": None,
        "input": {"command": f"export AWS_ACCESS_KEY_ID={aws}", "cwd": "/home/dev"},
        "lines": ["fine", "postgres://u:hunter2@db/x", ("tuple", "<private>hidden</private>")],
        "password": "hunter22",
        "headers": {"Authorization": "Bearer abcdefghij0123456789"},
        "token_count": 12,
        "nested": [[{"client_secret": "s3cr3t-value"}]],
    }
    original = copy.deepcopy(obj)
    new, findings = redact_obj(obj)
    assert obj == original  # input not mutated
    assert new["tool"] == "Bash" and new["exit_code"] == 1 and new["ok"] is False
    assert new["ratio"] == 0.5 and new["nothing"] is None and new["token_count"] == 12
    assert new["input"]["command"] == "export AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]"
    assert new["input"]["cwd"] == "/home/dev"
    assert new["lines"][0] == "fine"
    assert new["lines"][1] == "postgres://u:[REDACTED:url-credentials]@db/x"
    assert new["lines"][2] == ("tuple", "[private]")
    assert new["password"] == "[REDACTED:password-assignment]"
    assert new["headers"]["Authorization"] == "Bearer [REDACTED:bearer-token]"
    assert new["nested"][0][0]["client_secret"] == "[REDACTED:password-assignment]"
    counts = {f.kind: f.count for f in findings}
    assert counts == {
        "aws-access-key": 1,
        "url-credentials": 1,
        "bearer-token": 1,
        "password-assignment": 2,
    }
    # findings follow SECRET_KINDS order
    assert [f.kind for f in findings] == sorted(counts, key=SECRET_KINDS.index)


def test_redact_obj_key_context_respects_placeholders_and_code():
    obj = {"password": "${DB_PASSWORD}", "token": "", "api_key": "xxx", "secret": "os.environ.get('S')"}
    new, findings = redact_obj(obj)
    assert new == obj
    assert findings == ()


def test_redact_obj_scalars_and_strings():
    assert redact_obj(5) == (5, ())
    assert redact_obj(None) == (None, ())
    new, findings = redact_obj("token=abcd1234")
    assert new == "token=[REDACTED:password-assignment]"
    assert findings == (Finding("password-assignment", 1),)


def test_redact_obj_sanitizes_dict_keys():
    key = "postgres://u:hunter2@db/x"
    new, findings = redact_obj({key: 1})
    assert new == {"postgres://u:[REDACTED:url-credentials]@db/x": 1}
    assert findings == (Finding("url-credentials", 1),)


# ---------------------------------------------------------------------------
# result types
# ---------------------------------------------------------------------------


def test_result_types_are_frozen():
    result = sanitize("token=abcd1234")
    assert isinstance(result, RedactionResult)
    assert result.redacted
    with pytest.raises(FrozenInstanceError):
        result.text = "x"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        result.findings[0].count = 3  # type: ignore[misc]
    clean = sanitize("nothing to see")
    assert not clean.redacted and clean.findings == ()


def test_counts_aggregate_per_kind():
    text = "\n".join(f"password{i}=hunter2{i}xx" for i in range(5))
    result = sanitize(text)
    assert result.findings == (Finding("password-assignment", 5),)


def test_non_str_input_raises_type_error():
    with pytest.raises(TypeError):
        sanitize(b"bytes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

_FRAGMENTS = [
    "password", "=", ":", " ", "\n", '"', "'", "<private>", "</private>", "://", "@", "AKIA",
    "Bearer ", "Authorization: ", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "eyJ", ".", "token", "secret", "key", "_", "-", "sk-", "sk-ant-", "ghp_", "xoxb-", "glpat-",
    "npm_", "pypi-AgE", "SG.", "SK", "AIza", "--password ", "mysql -p", "curl -u ", "sshpass -p ",
    "login a password ", "[REDACTED:jwt]", "[private]", "${X}", "$", "<", ">", "abcdEFGH1234ijkl",
    "0123456789abcdef", "Zx8Qp2LmN4vB7rT1yU6wE3sA", "\\n", ";", "&", ",", "(", ")", "[", "]", "#",
    "AccountKey=", '"private_key": "', "hooks.slack.com/services/", "https://", "?sig=", "_authToken=",
    "<password>", "</password>",
]
_structured_text = st.lists(
    st.one_of(
        st.sampled_from(_FRAGMENTS),
        st.text(max_size=12),
        st.text(alphabet="abcXYZ019+/=-_", min_size=1, max_size=40),
    ),
    max_size=40,
).map("".join)
_any_text = st.one_of(st.text(max_size=2000), _structured_text)


def _growth_ok(before: str, after: str) -> bool:
    # every redaction consumes at least one character of input plus its context and
    # writes one bounded label, so output stays linear in the input size
    return len(after) <= 5 * len(before) + 64


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_any_text)
def test_sanitize_never_raises_and_is_bounded(text):
    result = sanitize(text)
    assert isinstance(result.text, str)
    assert _growth_ok(text, result.text)
    assert all(f.count > 0 and f.kind in SECRET_KINDS for f in result.findings)


@pytest.mark.parametrize(
    "glued",
    [
        "0000000000000000-----END PRIVATE KEY-----mysql -p01",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n-----END RSA PRIVATE KEY-----mysql -u root -phunter22",
    ],
)
def test_a_secret_glued_to_a_redacted_one_is_found_in_the_same_call(glued):
    """Redacting one secret changes the context of the next: `sanitize` passes again until the
    text stops changing, so the second is redacted at once (and a second call changes nothing)."""
    once = sanitize(glued)
    assert "password-assignment" in {f.kind for f in once.findings}
    assert sanitize(once.text).text == once.text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_any_text)
def test_sanitize_is_idempotent(text):
    once = sanitize(text).text
    assert sanitize(once).text == once


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_GENERATED = {
    "aws-access-key": st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16, max_size=16).map(
        lambda s: "AKIA" + s
    ),
    "github-token": st.text(alphabet=_ALNUM, min_size=36, max_size=36).map(lambda s: "ghp_" + s),
    "npm-token": st.text(alphabet=_ALNUM, min_size=36, max_size=36).map(lambda s: "npm_" + s),
    "twilio-key": st.text(alphabet="0123456789abcdef", min_size=32, max_size=32).map(lambda s: "SK" + s),
    "google-api-key": st.text(alphabet=_ALNUM + "-_", min_size=35, max_size=35).map(lambda s: "AIza" + s),
    "stripe-key": st.text(alphabet=_ALNUM, min_size=24, max_size=40).map(lambda s: "sk_live_" + s),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(_GENERATED)).flatmap(lambda k: st.tuples(st.just(k), _GENERATED[k])),
       st.sampled_from(["{s}", "value: {s}\n", "X={s}", '"{s}"', "curl -H 'x: {s}' https://a", "({s})"]))
def test_generated_fixed_format_secrets_are_redacted(kind_secret, template):
    kind, secret = kind_secret
    out = sanitize(template.format(s=secret)).text
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_redact_obj_is_idempotent_and_keeps_colliding_keys():
    a, b = "ghp_" + "A1" * 18, "ghp_" + "B2" * 18
    new, findings = redact_obj({a: 1, b: 2, "password": "hunter22"})
    assert new == {
        "[REDACTED:github-token]": 1,
        "[REDACTED:github-token]#2": 2,
        "password": "[REDACTED:password-assignment]",
    }
    assert findings == (Finding("github-token", 2), Finding("password-assignment", 1))
    again, findings2 = redact_obj(new)
    assert again == new and findings2 == ()


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _structured_text,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["password", "token", "api_key", "note", "cmd", "auth"]) | st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json_like)
def test_redact_obj_never_raises_and_is_idempotent(obj):
    new, findings = redact_obj(obj)
    again, _ = redact_obj(new)
    assert again == new
    assert all(f.count > 0 and f.kind in SECRET_KINDS for f in findings)


# -- whole tags ---------------------------------------------------------------------------
NAME_TAGS = ("python3.11 postgres16 ubuntu2204 log4shell i18next web3auth es2022 iso8601 base64url sha256sum "
             "oauth2proxy node18lts vue3router x86_64 utf8mb4_unicode syncthing2 sqlalchemy2 nextjs14 release-2024-05 "
             "bug-12345 gpt-4o claude-3-5-sonnet k8s v1.2.3 s3-bucket rfc7231 pep440 edition2021 sprint42 q3-2025 "
             "typescript5 elasticsearch8 tensorflow2 100k-bench p95-latency sha256-abc123 web3-auth oauth2-proxy "
             "node-18-alpine python-3.12-slim py3-none-any arm64-darwin linux-x86_64-gnu issue-4521-fix "
             "internationalization strengthlessness kubernetes-operator").split()
PASSWORD_TAGS = ["tr0ub4dor&3phnc", "nedawlhvbbe0", "os4irvdzdy", "v919bdjysh", "kvdhaiuwjjhchkr8", "0kutn5j0wju",
                 "zswtq9k3tkcan", "ofu2ajyewq95",
                 # cut by separators into parts too short to judge alone (issue 12)
                 "uim00d_crzu9", "6x10-lgmavje", "x006syakpqn-b", "jmdnwbatccqcfocl"]


@pytest.mark.parametrize("tag", NAME_TAGS)
def test_a_name_with_digits_is_a_tag_not_a_secret(tag):
    from engram_mcp.core.redaction import tag_secret_kind

    assert tag_secret_kind(tag) is None


@pytest.mark.parametrize("tag", PASSWORD_TAGS)
def test_a_lower_cased_password_as_a_whole_tag_is_redacted(tag):
    from engram_mcp.core.redaction import redact_tags
    from engram_mcp.services.records import check_tags

    assert redact_tags([tag, "auth"])[0] == ["[REDACTED:password]", "auth"]
    assert check_tags([tag.upper(), "auth"]) == ["[REDACTED:password]", "auth"]


# -- capture hooks: redact the whole text first, cut after (issue 12, defect 6) ---------------
def _key_block(rng_seed: int, lines: int = 12, width: int = 70) -> tuple[str, list[str]]:
    import random

    rng = random.Random(rng_seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = ["".join(rng.choice(alphabet) for _ in range(width)) for _ in range(lines)]
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END OPENSSH PRIVATE KEY-----\n"
    return block, body


def _bash(stdout: str = "", stderr: str = "", command: str = "./deploy.sh") -> dict:
    return {"tool_name": "Bash", "hook_event_name": "PostToolUse", "tool_input": {"command": command},
            "tool_response": {"stdout": stdout, "stderr": stderr, "interrupted": False}}


def _stored(memory: dict | None) -> str:
    assert memory is not None, "the error output was captured"
    return json.dumps(memory, ensure_ascii=False)


@pytest.mark.parametrize("stream", ["stderr", "stdout"])
@pytest.mark.parametrize("gap", [0, 40, 100])
def test_bash_capture_redacts_a_key_whose_begin_line_is_before_the_cut(stream: str, gap: int) -> None:
    """The error marker comes after the key: cutting 200 characters before it used to leave
    the BEGIN line out, so the key body was stored."""
    from engram_mcp.interfaces.hooks import command_memory

    block, body = _key_block(gap)
    text = "$ cat ~/.ssh/id_deploy\n" + block + "x" * gap + "\nerror: permission denied (publickey)\n"
    out = _stored(command_memory(_bash(**{stream: text}), failed=False))
    assert "permission denied" in out
    assert not [line for line in body if line[:16] in out], out[:600]


def test_bash_capture_redacts_a_secret_whose_key_name_the_cut_would_split() -> None:
    from engram_mcp.interfaces.hooks import ERROR_MARKERS, command_memory

    secret = "Xq7!pLm2#Rt9vWz4"
    prefix = "starting deploy\n"
    line = f"export DB_PASSWORD={secret}\n"
    inside_key = len(prefix) + line.index("DB_PASSWORD") + 5
    filler = "y" * (inside_key + 200 - len(prefix + line) - 1) + "\n"  # the 200-character window starts in `DB_PASSWORD`
    text = prefix + line + filler + "error: migration failed\n"
    m = ERROR_MARKERS.search(text)
    assert m is not None and text.index("DB_PASSWORD") < m.start() - 200 < text.index(secret)
    out = _stored(command_memory(_bash(stderr=text), failed=False))
    assert secret not in out and secret[4:] not in out, out


def test_failed_bash_capture_redacts_a_long_error_before_cutting_it() -> None:
    from engram_mcp.interfaces.hooks import command_memory

    block, body = _key_block(7, lines=40)
    payload = {"tool_name": "Bash", "hook_event_name": "PostToolUseFailure", "tool_input": {"command": "cat key"},
               "error": "Exit code 1\n" + "noise line\n" * 500 + block + "fatal: bad key\n"}
    out = _stored(command_memory(payload, failed=True))
    assert not [line for line in body if line[:16] in out]


def test_a_huge_output_is_bounded_and_still_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redacting everything is linear in the output: an 8 MB output is scanned from its end only,
    cut at a line boundary, and a key body cut there is still redacted."""
    import time

    from engram_mcp.interfaces.hooks import command_memory

    block, body = _key_block(11, lines=30)
    text = "z" * 8_000_000 + "\n" + block + "error: out of memory\n"
    t0 = time.perf_counter()
    out = _stored(command_memory(_bash(stdout=text), failed=False))
    assert time.perf_counter() - t0 < 2.0
    assert not [line for line in body if line[:16] in out]


def test_edit_capture_redacts_a_secret_before_cutting_the_snippet() -> None:
    from engram_mcp.interfaces.hooks import file_change_memory

    secret = "Vb3#nQ8zLw2!Kp5t"
    new = "# settings\n" + "a = 1\n" * 36 + f"DB_PASSWORD={secret}\n"
    payload = {"tool_name": "Edit", "hook_event_name": "PostToolUse", "cwd": "/p",
               "tool_input": {"file_path": "/p/settings.env", "old_string": "x", "new_string": new},
               "tool_response": {"filePath": "/p/settings.env"}}
    out = _stored(file_change_memory(payload))
    assert secret not in out and secret[:8] not in out


# ---------------------------------------------------------------------- the per-text literal lookup (issue 15)
@pytest.mark.parametrize("lookup", ["automaton", "regex fallback"])
def test_the_one_pass_literal_lookup_finds_exactly_the_literals_a_per_literal_search_finds(lookup):
    """`_run_rules` skips a rule whose hints or anchors are all absent, as found by one pass
    (pyahocorasick's automaton, or a regex without it); that pass must report every literal
    present (overlapping and nested ones too)."""
    from engram_mcp.core import redaction

    found = redaction._Lookup()
    assert found.automaton is not None, "pyahocorasick is a dependency of engram"
    if lookup == "regex fallback":
        found.automaton = None
    literals = found.literals
    texts = [row["context"] for row in CORPUS] + [json.dumps(row) for row in _load("not_secrets.jsonl")]
    texts += ["-----BEGIN RSA ghp_ sk-proj-abc sk-abc bearer Basic authorization auth:" * 2, "", "x"]
    pool = sorted(n.decode() for n in literals)
    rnd = random.Random(7)
    texts += ["".join(rnd.choice(pool) for _ in range(12)) for _ in range(300)]  # back to back: overlaps at the joins
    texts += [" ".join(pool), "".join(pool), "".join(pool).upper()]
    for text in texts:
        low = redaction._ascii_lower(text)
        assert found.present(low) == {n for n in literals if n in low}, text[:80]


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        ("AKIA[0-9A-Z]{16}", 0, {b"akia"}),
        ("(?P<s>(?:ab|cd)e)x", 0, {b"abex", b"cdex"}),
        ("x|yz", 0, {b"x", b"yz"}),
        ("-(?<=[ \\t]-)(?:u|-user)=", 0, {b"-u=", b"--user="}),
        ("ab\\b(?!c)d", 0, {b"abd"}),
        ("ab?c", 0, {b"a"}),  # an optional character ends the prefix
        ("a?bc", 0, set()),
        ("[ab]cd", 0, set()),
        ("abc", re.IGNORECASE, set()),  # case-insensitive: no prefix (K may be the Kelvin sign)
        ("(?i)abc", 0, set()),
        ("ab(?i:cd)", 0, {b"ab"}),
        ("caf\u00e9s", 0, {b"caf"}),  # a non-ASCII literal ends the prefix
        ("(?:a|b)c", 0, set()),  # the parser makes one-character alternatives a class
        # at most LEADING_LITERALS_MAX alternatives: the seventh choice of two would make 128
        (
            "(?:aa|bb)(?:cc|dd)(?:ee|ff)(?:gg|hh)(?:ii|jj)(?:kk|ll)(?:mm|nn)",
            0,
            {
                "".join(t).encode()
                for t in itertools.product(
                    ("aa", "bb"), ("cc", "dd"), ("ee", "ff"), ("gg", "hh"), ("ii", "jj"), ("kk", "ll")
                )
            },
        ),
    ],
)
def test_a_scan_rule_is_skipped_only_when_a_literal_every_match_begins_with_is_absent(pattern, flags, expected):
    from engram_mcp.core import redaction

    assert redaction._leading_literals(pattern, flags) == expected


def test_every_match_of_every_rule_begins_with_one_of_its_derived_leading_literals():
    """The derived prefixes are what lets `_run_rules` skip a rule: checked against every match
    the rules find in the secrets corpus and the look-alike texts."""
    from engram_mcp.core import redaction

    texts = [row["context"] for row in CORPUS] + [json.dumps(row) for row in _load("not_secrets.jsonl")]
    checked = 0
    for rule in redaction._RULES:
        if rule.anchors is not None:
            continue
        prefixes = redaction._leading_literals(rule._pattern, rule._flags)
        for text in texts:
            low = redaction._ascii_lower(text)
            for m in rule.regex.finditer(text):
                checked += 1
                assert prefixes == frozenset() or any(low.startswith(p, m.start()) for p in prefixes), (
                    rule.kind,
                    text[:80],
                )
    assert checked > 100


@pytest.mark.parametrize("derived", [False, True], ids=["first texts of a process", "leading literals derived"])
def test_skipping_rules_by_their_literals_changes_nothing_against_running_every_rule(derived, monkeypatch):
    """`_run_rules` visits only the candidates of the literals present; running all ~100 rules
    in order on the same texts (each with its declared hints, which are part of what it
    means: `docker run -p 8080:80` is no password without a `login`) must give the same text
    and the same counts."""
    from collections import Counter

    from engram_mcp.core import redaction
    from engram_mcp.core.redaction import literals

    def every_rule(text: str, counts: Counter) -> str:
        for rule in redaction._RULES:
            low = redaction._ascii_lower(text)
            if not rule.hints or any(h in low for h in rule.hints):
                text = redaction._apply(rule, text, low, counts)
        return text

    monkeypatch.setattr(literals, "_LOOKUP", redaction._Lookup(derive=derived))
    monkeypatch.setattr(literals, "LEADING_LITERALS_AFTER_PASSES", 0 if derived else 10**9)
    texts = [row["context"] for row in CORPUS] + [json.dumps(row) for row in _load("not_secrets.jsonl")]
    rnd = random.Random(11)
    texts += [
        " ".join(rnd.sample(texts, 3)) for _ in range(300)
    ]  # secrets side by side: one changes what the next sees
    for text in texts:
        fast, slow = Counter(), Counter()
        assert redaction._run_rules(text, fast) == every_rule(text, slow), text[:80]
        assert fast == slow, text[:80]


def test_a_process_derives_the_leading_literals_once_it_has_run_enough_passes(monkeypatch):
    from engram_mcp.core import redaction
    from engram_mcp.core.redaction import literals

    monkeypatch.setattr(literals, "_LOOKUP", None)
    monkeypatch.setattr(literals, "_PASSES_SEEN", 0)
    monkeypatch.setattr(literals, "LEADING_LITERALS_AFTER_PASSES", 3)
    seen = []
    for _ in range(6):
        assert redaction.sanitize("DB_PASSWORD=Vb3#nQ8zLw2!Kp5t").text == "DB_PASSWORD=[REDACTED:password-assignment]"
        seen.append(literals._LOOKUP.derived)
    assert seen[0] is False and seen[-1] is True
    assert seen == sorted(seen), "derived once, then kept"


# -- issue 32: secrets in prose, the outbound pass, identifiers, reported redactions ----------------
def redact_outbound(text: str) -> RedactionResult:
    """Imported when called, so each test of this section fails on its own on code without it."""
    from engram_mcp.core.redaction import redact_outbound as outbound

    return outbound(text)


# Values are generated (fixed seed): a test about the class, not about one spelling.
def _password(seed: int) -> str:
    rng = random.Random(seed)
    parts = [rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ"), rng.choice("abcdefghijkmnopqrstuvwxyz"), rng.choice("23456789"),
             rng.choice("!#$%&*@")] + [rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
                                       for _ in range(rng.randint(6, 10))]
    rng.shuffle(parts)
    return rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") + "".join(parts)  # a leading `$` or `%` reads as a placeholder


def _token(seed: int, n: int = 40) -> str:
    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    while True:
        t = "".join(rng.choice(alphabet) for _ in range(n))
        if re.search(r"[0-9]", t) and re.search(r"[a-z]", t) and re.search(r"[A-Z]", t):
            return t


# "the staging admin password is X until Friday" in each language engram must read (issue 32)
PROSE_PASSWORDS = [
    ("en", "the staging admin password is {v} until Friday"),
    ("en", "FYI the password for the reporting replica was changed to {v} this morning"),
    ("en", "login with user deploy and password {v}"),
    ("de", "Das Passwort für den Staging-Admin ist {v} bis Freitag."),
    ("de", "Das Kennwort des Testkontos lautet {v}, bitte nicht weitergeben"),
    ("fr", "le mot de passe de l'admin de recette est {v} jusqu'à vendredi"),
    ("es", "la contraseña del administrador es {v} hasta el viernes"),
    ("it", "la password dell'utente admin è {v} fino a venerdì"),
    ("pt", "a senha do admin de homologação é {v} até sexta"),
    ("nl", "het wachtwoord van de beheerder is {v} tot vrijdag"),
    ("pl", "hasło administratora to {v} do piątku"),
    ("ru", "Пароль администратора стенда — {v}, действует до пятницы"),
    ("ru", "пароль от staging: {v} до пятницы"),
    ("ja", "ステージング管理者のパスワードは {v} です（金曜日まで）"),
    ("ja", "検証環境のパスワードは「{v}」です"),
    ("zh", "管理员密码是 {v}，周五前有效"),
    ("ko", "관리자 비밀번호는 {v} 입니다"),
    ("ja", "ステージングの管理者パスワードは金曜日まで {v} です"),
    ("zh", "管理员密码（到周五）是 {v}"),
    ("en", "the password (staging admin) is {v} until Friday"),
    ("es", "la clave del administrador es {v} hasta el viernes"),
    ("pt", "a chave do admin é {v} até sexta"),
]


@pytest.mark.parametrize("i, lang_template", list(enumerate(PROSE_PASSWORDS)), ids=lambda x: str(x))
def test_a_password_in_prose_is_redacted_locally_in_every_language(i, lang_template):
    _lang, template = lang_template
    value = _password(100 + i)
    result = sanitize(template.format(v=value))
    assert value not in result.text
    assert result.redacted and sum(f.count for f in result.findings) == len(LABEL.findall(result.text))


@pytest.mark.parametrize("template", [
    "the key is {v} for the signing service", "Der geheime Schlüssel der API ist {v}", "la clave secreta es {v}",
    "APIキーは {v} です", "服务的密钥是 {v}", "서비스 토큰은 {v} 입니다", "секретный ключ сервиса: {v}",
    "il token di deploy è {v}", "o token de deploy é {v}", "de API-sleutel is {v}", "klucz API to {v}",
])
def test_a_random_token_after_a_key_name_in_prose_is_redacted_locally(template):
    value = _token(len(template))
    assert value not in sanitize(template.format(v=value)).text


@pytest.mark.parametrize("gap", [" secret ", " / ", ", and the secret key is ", " (secret: ", " with "])
def test_the_aws_secret_after_its_key_id_in_prose_is_redacted(gap):
    key_id = "AKIA" + _token(7, 16).upper()[:16]
    secret = _token(8, 40)
    text = f"AWS {key_id}{gap}{secret} for the uploader"
    for result in (sanitize(text), redact_outbound(text)):
        assert key_id not in result.text and secret not in result.text


@pytest.mark.parametrize("text", [
    "the password is required", "the password is incorrect", "the token is expired", "the key is user_42",
    "the password is stored in the vault, not in the repo", "the API token was rotated yesterday",
    "the password is sha256-hashed before it is stored", "pin the version to 3.2.1",
    "password reset flow uses SHA-256", "the secret is in 1Password under 'staging'",
    "Das Passwort ist falsch", "パスワードは必須です", "пароль неверный", "the key is in the drawer",
    "The cache password hint is bluefish!", "six prose passwords: provider tokens, headers",
    "jsonschema.validate({key: DEFAULTS[key]}, cls=jsonschema.Draft202012Validator)",
    "token: ${{ secrets.GITHUB_TOKEN }}", "holds `WANDB_API_KEY`, `AWS_PROFILE=wrenly-ml`",
])
def test_prose_about_passwords_is_kept(text):
    assert sanitize(text).text == text
    assert redact_outbound(text).text == text


NOT_SECRET_IDENTIFIERS = [
    "commit 4f3c2a1b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a fixed it", "ULID 01HZX3K9QWERTY7ASDFGZXCVBN",
    "memory:01JB5M0V2Q8T1Z4X7C3N6R9K2W", "id 123e4567-e89b-12d3-a456-426614174000",
    '"integrity": "sha512-9Xv1nQw0Zp3L7kYbT2mR8sHcJ4fU6gE5aD1oW0iV3xN7yB9qK2lM4tS6uP8rC0eF5hG7jA1zX3vQ9wE2tY4uI6oP=="',
    "image: redis@sha256:2f4a9c8e1b7d3f6a0e5c9b2d8f1a4e7c0b3d6f9a2e5c8b1d4f7a0e3c6b9d2f5a8",
    "aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgc2VjcmV0IGF0IGFsbA==", "version 2.14.0-rc.1 on port 8443",
    "db-replica-03.eu-west-1.internal:5432", "win10x64 h264x1080 python3x11 arm64v8a i18n2l10n gpt4o2024 llama3b8",
]


@pytest.mark.parametrize("text", NOT_SECRET_IDENTIFIERS)
def test_identifiers_hashes_and_checksums_are_not_secrets_locally(text):
    assert sanitize(text).text == text


VERSIONED_NAME_TAGS = ["win10x64", "h264x1080", "python3x11", "arm64v8a", "i18n2l10n", "gpt4o2024", "llama3b8",
                       "qwen2vl7b", "mistral7bv02", "yolov8n640", "resnet50v2", "x86x64", "mp4h265", "utf8x16"]


@pytest.mark.parametrize("tag", VERSIONED_NAME_TAGS)
def test_a_versioned_name_is_never_replaced_as_a_password(tag):
    from engram_mcp.core.redaction import redact_tags, tag_secret_kind
    from engram_mcp.services.records import check_tags

    assert tag_secret_kind(tag) is None
    assert redact_tags([tag]) == ([tag], ())
    assert check_tags([tag]) == [tag]


def test_every_tag_replaced_at_store_and_update_is_reported(fake_service, ctx):
    res = fake_service.store(ctx, content="Build matrix for the media encoder", type="semantic", scope="project",
                             tags=["win10x64", "arm64v8a", "nedawlhvbbe0"])
    assert res["redactions"] == {"password": 1}
    mem = fake_service.get(ctx, res["memory_id"])
    assert mem["tags"] == ["win10x64", "arm64v8a", "[REDACTED:password]"]
    upd = fake_service.update(ctx, res["memory_id"], tags={"add": ["kvdhaiuwjjhchkr8", "gpt4o2024"]})
    assert upd["redactions"] == {"password": 1}
    assert "kvdhaiuwjjhchkr8" not in repr(fake_service.get(ctx, res["memory_id"]))


# The outbound pass: what a team file, the sync folder or an export may hold
OUTBOUND_ONLY = [
    "the staging password is changeme until Friday",  # a weak password in words
    "the door PIN code is 4821",
    "password: swordfish for now",
    "token refresh for the uploader: {t} (prod)",  # a random token near a key name
    "{t} is the signing secret of the webhook",
    "Der Zugangsschlüssel {t} gilt bis Freitag",
]


@pytest.mark.parametrize("template", OUTBOUND_ONLY)
def test_the_outbound_pass_also_takes_weak_values_and_tokens_near_key_names(template):
    secret = _token(len(template))
    text = template.format(t=secret)
    value = secret if "{t}" in template else re.search(r"(changeme|4821|swordfish)", text).group(1)
    out = redact_outbound(text)
    assert value not in out.text and out.redacted
    assert redact_outbound(out.text).text == out.text  # idempotent


def test_the_outbound_pass_removes_at_least_what_the_local_pass_removes():
    for entry in CORPUS:
        out = redact_outbound(entry["context"]).text
        assert entry["secret"] not in out
        assert all(p not in out for p in _pieces(entry["secret"]))
    for n in NEGATIVES:  # and is counted, not hidden, where it is stricter (bench/secrets_bench.py)
        redact_outbound(n["text"])


def test_a_shared_file_never_holds_a_secret_written_in_prose():
    from engram_mcp.services.sharing.memory_file import SharedMemory, parse, redacted, render

    key_id, secret, pw = "AKIA" + "Q3EGRDL2XJ7MPN5B", _token(11, 40), _password(12)
    mem = SharedMemory(memory_id="01JB000000000000000000000B", memory_type="semantic",
                       content=f"Uploader: AWS {key_id} secret {secret}. The staging admin password is {pw} until Friday;"
                               " the kiosk password is changeme.",
                       summary=f"Пароль администратора — {pw}", tags=("deploy", "win10x64"))
    text = render(mem)
    for value in (key_id, secret, pw, "changeme"):
        assert value not in text
    assert parse(text, fallback_id="x").tags == ("deploy", "win10x64")
    assert redacted(mem)[1] == 5  # the key id, its secret, the password twice, changeme


def test_share_and_export_apply_the_outbound_pass(fake_service, ctx, tmp_path):
    from engram_mcp.services import sharing

    secret = _token(21, 40)
    # a six-letter word as a password: too short for the local pass to take, the outbound pass does
    mid = fake_service.store(ctx, content=f"AWS upload token {secret} expires soon; the kiosk password is orchid",
                             type="semantic", scope="project", importance=0.9)["memory_id"]
    assert "orchid" in fake_service.get(ctx, mid)["content"]
    shared = sharing.share(fake_service.access, ctx, mid)
    text = (ctx.project_root / shared["path"]).read_text()
    assert secret not in text and "orchid" not in text
    out = fake_service.export(ctx, tmp_path / "backup.jsonl", scopes=("project",))
    dump = (tmp_path / "backup.jsonl").read_text()
    assert secret not in dump and "orchid" not in dump
    assert out["redactions"].get("password") == 1


def test_an_export_gets_the_whole_outbound_pass_in_every_field(fake_service, ctx, tmp_path):
    """The forms only the outbound pass takes (a login pair, a hex key value) and its echo rule
    must reach every field of an export, its history and metadata included, as they reach a
    team file (red-team finding: an export kept `admin / hunter2` in clear)."""
    hexkey = "3f9a" * 10
    content = f"grafana login: admin / hunter2x; the vault unseal key is {hexkey}"
    mid = fake_service.store(ctx, content=content, type="semantic", scope="project", importance=0.9,
                             metadata={"note": "grafana login: admin / hunter2x"})["memory_id"]
    fake_service.update(ctx, mid, content=content + " (checked)")
    out = fake_service.export(ctx, tmp_path / "backup.jsonl", scopes=("project",))
    dump = (tmp_path / "backup.jsonl").read_text()
    assert "hunter2x" not in dump and hexkey not in dump
    assert out["redactions"].get("password", 0) >= 1


# ------------------------------------------------------------------ issue 32: outbound forms in other words
@pytest.mark.parametrize(
    "text,secret",
    [
        ("grafana login: admin / Gr4f4n4!Adm1n", "Gr4f4n4!Adm1n"),
        ("Jenkins credentials: deploy / S3cure#2024 for the CI box", "S3cure#2024"),
        ("die Anmeldung für Grafana: admin / Gr4f4n4!Adm1n", "Gr4f4n4!Adm1n"),
        ("sign in: alice / hunter2hunter2", "hunter2hunter2"),
        ("the vault unseal key is 3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e", "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e"),
        ("the recovery key is 9f86d081884c7d659a2feaa0c55ad015", "9f86d081884c7d659a2feaa0c55ad015"),
        ("the wifi key is sunshine-kitten-42", "sunshine-kitten-42"),
        ("the door pin is purple-monkey-dishwasher", "purple-monkey-dishwasher"),
    ],
)
def test_outbound_pass_takes_login_pairs_hex_keys_and_passphrases(text: str, secret: str) -> None:
    from engram_mcp.core.redaction import redact_outbound

    out = redact_outbound(text)
    assert secret not in out.text and out.findings, out


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a fixed the key handling",
        "the sha256 checksum is 3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
        "the cache key is 3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
        "the build key is 3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
        "the primary key is user-id-column",
        "Cache restored from key: Linux-node-modules-9fceb02d0ae598e95dc970b74767f19372d61af8",
        "the key is config-v2-final in the yaml",
        "login: see the docs / wiki page",
        "the login flow: oauth / saml",
        "login with user/password placeholders",
        "the key is logging.getLogger.name",
        "login: admin / admin",
    ],
)
def test_outbound_pass_keeps_hashes_and_ordinary_pairs(text: str) -> None:
    from engram_mcp.core.redaction import redact_outbound

    out = redact_outbound(text)
    assert out.text == text and not out.findings, out


@pytest.mark.parametrize(
    "text, secret",
    [
        ("AIRTABLE_PAT=pat0a0uARxlNtencY.ff2d3c425c8d99d19bdd0b6cc60d5d32cbe54014c2b54b95523cf6941fa1c257", "pat0a0uARxlNtencY"),
        ("mailchimp: 273dbc46dfcea25bab29539ad5966d51-us21", "273dbc46dfcea25bab29539ad5966d51"),
        ("gateway = access_token$production$5i5latjpuu3xf6mz$57d21fa5d328263dfe574de739988b88", "5i5latjpuu3xf6mz"),
        ("the integration uses secret_N1aE6PwZPf1Qh6yYTWmE4lBYOvfZ8UzDzV8fUkkibjL", "N1aE6PwZPf1Qh6yYTWmE4lBYOvfZ8UzDzV8fUkkibjL"),
    ],
)
def test_provider_tokens_without_a_telling_key_are_redacted(text, secret):
    """Airtable, Mailchimp, Braintree and Notion's older integration tokens: the format alone tells."""
    out = sanitize(text).text
    assert secret not in out and "[REDACTED:api-token]" in out, out


@pytest.mark.parametrize(
    "text",
    ["the pathfinder_module_registry_lookup_table.py file", "secret_key_base is read from the credentials file",
     "sha: 273dbc46dfcea25bab29539ad5966d51, region us-east-1"],
)
def test_names_shaped_like_those_tokens_are_kept(text):
    assert sanitize(text).text == text


def test_a_tag_of_long_digit_runs_is_judged_in_linear_time() -> None:
    """A tag reads as a versioned name (`utf8mb4`, `gpt4o`) or not; a crafted one of digit runs
    (a teammate's file or an import chooses its tags) must not stall the store: the name's form
    once let a run of digits split every way (1.5 s at 29 characters, doubling per digit)."""
    import time

    from engram_mcp.core.redaction import tag_secret_kind

    for tag in ("ab1c" + "2" * 58 + "!", "x9" + "1" * 61 + "-", "1a" * 31 + "!!"):
        t0 = time.perf_counter()
        tag_secret_kind(tag)
        assert time.perf_counter() - t0 < 0.5, tag
    assert tag_secret_kind("utf8mb4") is None and tag_secret_kind("gpt4o") is None
