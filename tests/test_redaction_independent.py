"""The redactor on secrets it was not written for: `bench/data/secrets_independent.jsonl` (120
credentials of 118 kinds in tool output, configs and prose in eight languages) and its look-alikes,
written from a list of kinds by someone who had not read the rules; and the forms that corpus found
missing, each as a rule of its kind rather than as its example."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engram_mcp.core.redaction import redact_outbound, sanitize

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
CASES = [json.loads(line) for line in (DATA / "secrets_independent.jsonl").read_text(encoding="utf-8").splitlines()]
LOOKALIKES = [
    json.loads(line) for line in (DATA / "not_secrets_independent.jsonl").read_text(encoding="utf-8").splitlines()
]
#: Look-alikes the local pass changes, each on purpose: a weak password under a password's name is
#: one (`password: changeme`); a live publishable key and a token under `accessToken` are kept out of
#: memory rather than judged public (Stripe's `pk_live_`, Mapbox's `pk.`).
CHANGED_ON_PURPOSE = {"placeholder_changeme", "stripe_publishable_key", "mapbox_public_token"}


def _left(secret: str, text: str) -> bool:
    pieces = [p for p in re.split(r"\s+|\\n", secret) if len(p) >= 12]
    return secret in text or any(p in text for p in pieces)


@pytest.mark.parametrize("case", CASES, ids=[c["kind"] for c in CASES])
@pytest.mark.parametrize("redactor", [sanitize, redact_outbound], ids=["local", "outbound"])
def test_every_secret_of_the_independent_corpus_is_redacted(case, redactor):
    assert not _left(case["secret"], redactor(case["context"]).text)


def test_the_local_pass_leaves_the_independent_look_alikes_alone():
    changed = {n["kind"] for n in LOOKALIKES if sanitize(n["text"]).text != n["text"]}
    assert changed <= CHANGED_ON_PURPOSE


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a password a person built from words: capitals and digits, a mark, or words and a number
        ("the password for the staging db is Harbour-lantern4417!", "Harbour-lantern4417"),
        ("the passphrase for the signing key is cobalt-river-tundra-otter-58, please", "cobalt-river-tundra-otter-58"),
        ("a senha do servidor de testes do time é Cedar-quartz2291* até sexta", "Cedar-quartz2291*"),
        # eight words between the name and the value
        ("La contraseña de la cuenta de servicio de la réplica es Pw4-kLz8Mv9q, cámbiala", "Pw4-kLz8Mv9q"),
        # a value that opens with `%` is no printf placeholder
        ("le mot de passe du NAS est %Qe7TzR2mWv9L", "%Qe7TzR2mWv9L"),
        # an Authorization scheme no rule names
        ('curl -H "Authorization: Splunk 7Fq2ZkD9xW3mPc8LtB4nVy6H" https://logs', "7Fq2ZkD9xW3mPc8LtB4nVy6H"),
        # Go's DSN, no scheme
        ('dsn := "app:Xr9-pQ2~zLm@tcp(db.internal:3306)/shop"', "Xr9-pQ2~zLm"),
        # a wallet's recovery phrase and a network key
        (
            "restore from the mnemonic: lunar velvet orbit canyon pepper sail ember rotate hazel fringe acid copper",
            "lunar velvet orbit canyon pepper sail ember rotate hazel fringe acid copper",
        ),
        (
            '  mainnet: { accounts: ["0x' + "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318" + '"] }',
            "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
        ),
        ("Google app password for the alerts mailbox: qzvt hwpk mxrd bnlf", "qzvt hwpk mxrd bnlf"),
    ],
)
def test_forms_the_independent_corpus_found_missing(text, secret):
    assert secret not in sanitize(text).text


def test_a_secret_written_twice_is_redacted_where_no_rule_sees_it():
    """Found once by a rule (the URL's password), it is the same secret in the flag's argument list."""
    text = 'REDIS_URL=redis://:Zq8vW2nLr5Tk@cache:6379/0\ncommand: ["redis-server", "--requirepass", "Zq8vW2nLr5Tk"]'
    for redactor in (sanitize, redact_outbound):
        out = redactor(text).text
        assert "Zq8vW2nLr5Tk" not in out and out.count("[REDACTED:url-credentials]") == 2


def test_a_password_that_is_a_word_of_the_text_is_redacted_only_where_it_is_the_password():
    """postgres://coldlink:coldlink@.../coldlink: the URL's password, and the name of the project,
    the user and the database everywhere else."""
    text = "Container coldlink-tsdb-1 is up; .env points at postgres://coldlink:coldlink@localhost:55432/coldlink"
    out = sanitize(text).text
    assert out.count("coldlink") == 3 and "coldlink:[REDACTED:url-credentials]@" in out


@pytest.mark.parametrize(
    "text",
    [
        "the password is sha256-hashed and salted",
        "Cache restored from key: Linux-node-modules-82ff8e783daa0a070f46f9b7897eefce594573cacfabb54f223c77fa1ef7630a",
        "  public key: 6E3OyWCXxREcdCckvgE88hJ8F+YvE2VBW3Cl9jV2k3M=",
        "ED25519 key fingerprint is SHA256:RzVVeY1JbuzovbkCmiTtwwsXZkXKbgNfTxkwZHWXMTg.",
        "valueFrom: arn:aws:secretsmanager:us-east-1:928489325057:secret:prod/api/db-3fUPGJ:password::",
        "export GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "the app password field that will work here is below",
        "port 8080 appears in 8080 other places",
    ],
)
def test_look_alikes_of_those_forms_stay(text):
    assert sanitize(text).text == text
