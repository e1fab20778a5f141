"""The redactor on secrets it was not written for: `bench/data/secrets_independent.jsonl` (120
credentials of 118 kinds in tool output, configs and prose in eight languages) and its look-alikes,
written from a list of kinds by someone who had not read the rules; and the forms that corpus found
missing, each as a rule of its kind rather than as its example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.common import read_jsonl
from engram_mcp.core.redaction import redact_outbound, sanitize

DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
REDACTORS = pytest.mark.parametrize("redactor", [sanitize, redact_outbound], ids=["local", "outbound"])


def _corpus(suffix: str) -> tuple[list[dict], list[dict]]:
    """A corpus's secrets and look-alikes (`secrets_independent{suffix}.jsonl` and its `not_`)."""

    return read_jsonl(DATA / f"secrets_independent{suffix}.jsonl"), read_jsonl(
        DATA / f"not_secrets_independent{suffix}.jsonl"
    )


CASES, LOOKALIKES = _corpus("")
#: Look-alikes the local pass changes, each on purpose: a weak password under a password's name is
#: one (`password: changeme`); a live publishable key and a token under `accessToken` are kept out of
#: memory rather than judged public (Stripe's `pk_live_`, Mapbox's `pk.`).
CHANGED_ON_PURPOSE = {"placeholder_changeme", "stripe_publishable_key", "mapbox_public_token"}


def _left(secret: str, text: str) -> bool:
    pieces = [p for p in re.split(r"\s+|\\n", secret) if len(p) >= 12]
    return secret in text or any(p in text for p in pieces)


def _redacted_by_both(text: str, secret: str) -> None:
    """Neither pass leaves `secret` (or a long piece of it) in `text`."""
    for redactor in (sanitize, redact_outbound):
        assert not _left(secret, redactor(text).text), redactor.__name__


def _kept_by_both(text: str) -> None:
    """Both passes leave `text` as it is: a look-alike, not a secret."""
    for redactor in (sanitize, redact_outbound):
        assert redactor(text).text == text, redactor.__name__


@pytest.mark.parametrize("case", CASES, ids=[c["kind"] for c in CASES])
@REDACTORS
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


# ------------------------------------------------------------------ the second independent corpus
CASES_2, LOOKALIKES_2 = _corpus("2")
#: Left in clear on purpose: Algolia's key in `algoliasearch(appId, key)` is as often the search-only
#: key, which every front end publishes (the same call with it is among the look-alikes).
LEFT_ON_PURPOSE_2 = {"algolia_admin_key_js"}
#: Changed on purpose, as in the first corpus: `DB_PASSWORD=changeme`, live publishable keys (Stripe,
#: Clerk), Mapbox's `pk.` under `accessToken`, and a Supabase anon key (a JWT is kept out of memory
#: whatever its role claims).
CHANGED_ON_PURPOSE_2 = {
    "env_example_placeholders",
    "stripe_publishable_key",
    "clerk_publishable_key",
    "mapbox_public_token",
    "supabase_anon_key_frontend",
}


@pytest.mark.parametrize("case", CASES_2, ids=[c["kind"] for c in CASES_2])
@REDACTORS
def test_every_secret_of_the_second_independent_corpus_is_redacted(case, redactor):
    if case["kind"] in LEFT_ON_PURPOSE_2:
        pytest.skip("left in clear on purpose (LEFT_ON_PURPOSE_2)")
    assert not _left(case["secret"], redactor(case["context"]).text)


@REDACTORS
def test_both_passes_leave_the_second_corpus_look_alikes_alone(redactor):
    changed = {n["kind"] for n in LOOKALIKES_2 if redactor(n["text"]).text != n["text"]}
    assert changed <= CHANGED_ON_PURPOSE_2


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # two words and a number after a password's name and a link, in any language
        ("le mot de passe du routeur est citron-vert-42, ne le note nulle part", "citron-vert-42"),
        ("Hasło do bazy to zupa_ogorkowa7, zmienię je w piątek", "zupa_ogorkowa7"),
        ("開発用サーバーのパスワードは tanuki-kitsune-88 です", "tanuki-kitsune-88"),
        # a value in another alphabet
        ("пароль от роутера: ЗелёныйЛес42, не меняйте", "ЗелёныйЛес42"),
        # names in Hindi, Arabic, Hebrew, Turkish, Hungarian, Danish
        ("डेटाबेस का पासवर्ड mango7river है", "mango7river"),
        ("كلمة السر للخادم هي Zaatar#81", "Zaatar#81"),
        ("הסיסמה של הנתב היא Shemesh@19", "Shemesh@19"),
        ("sunucu şifresi: Lokum_1923", "Lokum_1923"),
        ("a szerver jelszó: Gulyas-leves9", "Gulyas-leves9"),
        ("adgangskoden er Smorrebrod22!, husk det", "Smorrebrod22!"),
        # a long letters-only password that ends its clause, and a quoted passphrase
        ("guest wifi pw is pineapplesubmarine.", "pineapplesubmarine"),
        ('the vault passphrase is "copper kettle moonlight orchard" for now', "copper kettle moonlight orchard"),
        # a PIN, a wifi key
        ("The alarm PIN is 80417, don't write it on the door", "80417"),
        ("router key: tangerineelephantsofa (5 GHz only)", "tangerineelephantsofa"),
        # a user / password pair after a login word
        ("credentials: svc-build/Kx7!harbour2 for the CI box", "Kx7!harbour2"),
        # command lines and SQL
        ("sqlplus app_owner/Tz8#quill@//db.prod:1521/APP", "Tz8#quill"),
        ("ALTER USER 'etl'@'%' IDENTIFIED BY 'Ledger-otter-55';", "Ledger-otter-55"),
        ('$pw = ConvertTo-SecureString "Vx9!cobalt" -AsPlainText -Force', "Vx9!cobalt"),
        ("net use \\\\nas\\backup /user:HOME\\kim Rv7#mango /persistent:no", "Rv7#mango"),
        (
            "curl -u :9f1c2e7a5b3d4c6e8a0b1c2d3e4f5a6b https://ipfs.infura.io:5001/api/v0/add",
            "9f1c2e7a5b3d4c6e8a0b1c2d3e4f5a6b",
        ),
        # URLs that carry their credential
        (
            "https://bucket.s3.amazonaws.com/a.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature="
            "9b2e6f1d0c4a8e7b3f5d2c1a0e9f8d7c6b5a4e3d2c1b0a9f8e7d6c5b4a3f2e1d",
            "9b2e6f1d0c4a8e7b3f5d2c1a0e9f8d7c6b5a4e3d2c1b0a9f8e7d6c5b4a3f2e1d",
        ),
        ('RPC = "https://polygon-mainnet.infura.io/v3/Hq7ZkW2mX9pL4tN8vB3cR6yJ"', "Hq7ZkW2mX9pL4tN8vB3cR6yJ"),
        # a session cookie, recovery codes, a BitLocker key, a device config
        ("-H 'Cookie: theme=dark; _shop_session=Zk29fLq8WmX3vTn7Rb4Yc1Hd6Jp0Gs5E'", "Zk29fLq8WmX3vTn7Rb4Yc1Hd6Jp0Gs5E"),
        ("Backup codes for the admin account:\n 4821-9930\n 7713-0248\n 5590-1187", "7713-0248"),
        (
            "Recovery key: 104236-557810-332145-908877-120034-665521-780012-443390",
            "104236-557810-332145-908877-120034-665521-780012-443390",
        ),
        ("username ops privilege 15 secret 0 Edge-kestrel-3", "Edge-kestrel-3"),
        # a markdown table's password column, JSON escaped in a log line, a client built with its key
        ("| host | user | pass |\n|---|---|---|\n| nas | admin | Quill-7-ferret |", "Quill-7-ferret"),
        ('msg="{\\"db\\":{\\"password\\":\\"Nimbus-fox-31\\"}}"', "Nimbus-fox-31"),
        ('vo = voyageai.Client("pa-Xk29WmQ7vLz3Rt8Bn4Yc6Hd1Jp5Gs0Ef")', "pa-Xk29WmQ7vLz3Rt8Bn4Yc6Hd1Jp5Gs0Ef"),
    ],
)
def test_forms_the_second_corpus_found_missing(text, secret):
    """Each class the second corpus found, in examples of its own (other words, other values)."""
    _redacted_by_both(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "The repo signing passphrase is wherever my secrets usually live.",
        "the password is plaintext in that file, which is the bug",
        "Pin the version to 4.2.1 and re-run; pin 13 on the header is ground.",
        "The PIN pad firmware is version 2.1.0",
        "Token usage: prompt_tokens=1802, completion_tokens=97",
        "shared it in 1Password (vault: Platform), ask there",
        "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6231346635383730",
        "  encryptedData:\n    API_TOKEN: AgBy3i4OJSWK+PiTySYZZA9rO43cGDEq2x9Kz8Wm7Qv1Tn5Rb4Yc6Hd0Jp2Gs",
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQIzBAABCAAdFiEEOQU+3Wc3E7xMpUJShYh79RVhlSkkSleornb460nRxs89yZzF\n"
        " J6hIPiOG2H7cOBZYQXxD3mK3g04TZxmj21rzE7o78BFxW/it35VXxJDOeUJT/z3a\n"
        " eEzJTv6wKu9YMdSJXvxQcUTj82jd40olSXm0hOGjuRmeAIl99IqL3BIkaMN5rMd2\n =rgIX\n -----END PGP SIGNATURE-----",
        'data-sitekey="6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI"',
        "existingSecret: grafana-admin",
        "Token contract deployed at 0x5FbDB2315678afecb367f032d93F642f64180aa3 (token: USDX)",
        "key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.",
    ],
)
def test_look_alikes_of_the_second_corpus_forms_stay(text):
    _kept_by_both(text)


# ------------------------------------------------------------------ the third: prose and chat, 35 languages
CASES_3, LOOKALIKES_3 = _corpus("3")
#: Still in clear, each a form no rule reads yet (docs/architecture.md, "A third corpus"): an unquoted
#: passphrase of several words, a value whose sentence names no password ("the wifi changed again,
#: the new one is X"), a quoted passphrase before its name, a word and two digits right after the
#: name (`senha jabuticaba77`), a code named only by what it opens ("Koden till porten är 2719"),
#: Thai run together with its name, and four digits after a bank card's password.
LEFT_3 = {
    "master_password_unquoted_passphrase",
    "teams_the_new_one_is",
    "gpg_phrase_de_passe",
    "value_first_quoted_passphrase",
    "entra_com_senha",
    "kod_porten",
    "kode_alarm",
    "kod_azaka",
    "rahat_mai_thai_script",
    "tikuanka_mima",
}
#: The outbound pass takes a long letters-only word after a password's name in any language, and
#: "ww is hoofdlettergevoelig" (Dutch: is case-sensitive) is one.
CHANGED_OUTBOUND_3 = {"ww_hoofdlettergevoelig"}


@pytest.mark.parametrize("case", CASES_3, ids=[f"{c['lang']}-{c['kind']}" for c in CASES_3])
@REDACTORS
def test_every_secret_of_the_third_corpus_is_redacted(case, redactor):
    if case["kind"] in LEFT_3:
        pytest.skip("a form no rule reads yet (LEFT_3)")
    assert not _left(case["secret"], redactor(case["context"]).text)


def test_the_third_corpus_look_alikes_stay():
    assert all(sanitize(n["text"]).text == n["text"] for n in LOOKALIKES_3)
    assert {n["kind"] for n in LOOKALIKES_3 if redact_outbound(n["text"]).text != n["text"]} <= CHANGED_OUTBOUND_3


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # the value anywhere in the name's sentence, before it or after words that are no link
        ("Vx4#lunar-Kite is the new admin password for the NAS, from today", "Vx4#lunar-Kite"),
        ("Take Strudel!2024 als Passwort für den Testzugang", "Strudel!2024"),
        ("I changed the staging DB password to Quokka^River71 this morning", "Quokka^River71"),
        ("J'ai changé le mot de passe du VPN, maintenant c'est Crêpe#Lyon88", "Crêpe#Lyon88"),
        ("管理员密码改成 Mt9#KunLun 了", "Mt9#KunLun"),
        # the value alone on the line after the sentence that names it
        ("Here is the password for the shared inbox:\nWq7!tern-Basalt\nthanks", "Wq7!tern-Basalt"),
        # a user / value pair with no login word, and "log in with X"
        ("Я проверил под deploy / Zx8$meadowLark, всё работает", "Zx8$meadowLark"),
        ("just sign in with Harbor^Moss93 until SSO lands", "Harbor^Moss93"),
        # PINs and access codes, and digits of any script
        ("Der Türcode für das Lager lautet 48213", "48213"),
        ("Su PIN-koodi on 55190, älä kerro", "55190"),
        ("is the gate pin still 7731?", "7731"),
        ("رمز عبور سرور: باران۱۴۰۳", "باران۱۴۰۳"),
        # slang and informal names
        ("пасс от прода Kv7_lmqPzR, никому", "Kv7_lmqPzR"),
        ("Nywila ya seva ni Simba#Mara42", "Simba#Mara42"),
        ("mdp wifi = Ecl@ir2025", "Ecl@ir2025"),
    ],
)
def test_forms_the_third_corpus_found_missing(text, secret):
    """Each class the third corpus found, in examples of its own."""
    _redacted_by_both(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "The password is in 1Password under Platform/Prod, ask Lena if you can't see it.",
        "invalid password for user_id=650191 (attempt 3)",
        "token = AccessToken2 if fresh else AccessToken1",
        "base = (litres * rates.base_ppl / 100).quantize(PENNY, rounding=ROUND_HALF_UP)",
        "AWS_SECRET_ACCESS_KEY=op://Team Vault/publisher/secret access key",
        "sops exec-env secrets.enc.env './gradlew publish -Pperiod=2026-07'",
        "パスワード：別途お送りします",
        "Parola este greșită, încearcă din nou.",
        "The PIN pad on the server room door is broken again.",
        "Before it even checks the PIN: GRA-014 isn't active on any vessel.",
        "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
        "Run migrations, then log in with your SSO account as usual.",
    ],
)
def test_look_alikes_of_the_third_corpus_forms_stay(text):
    assert sanitize(text).text == text


# ------------------------------------------------------------------ the fourth: held out until its first run
CASES_4, LOOKALIKES_4 = _corpus("4")
#: Still in clear (by value: the corpus's kinds are generic): a password whose sentence names none
#: ("sudo keeps rejecting '…'", "c'est … et pas …"), and one corrected in the sentence before the
#: one that names it ("it's X not Y. the other one was the old root pw").
LEFT_4 = {"lanternComet@9025", "T1g3r!69", "x1q0mDPthGOnVH8w"}
#: Changed on purpose, as in the other corpora: `REDIS_PASSWORD=changeme`, a live publishable key.
CHANGED_ON_PURPOSE_4 = {"env_example_placeholders", "stripe_publishable_key"}


@pytest.mark.parametrize("case", CASES_4, ids=[f"{c['lang']}-{c['kind']}-{i}" for i, c in enumerate(CASES_4)])
@REDACTORS
def test_every_secret_of_the_fourth_corpus_is_redacted(case, redactor):
    if case["secret"] in LEFT_4:
        pytest.skip("a form no rule reads yet (LEFT_4)")
    assert not _left(case["secret"], redactor(case["context"]).text)


@REDACTORS
def test_the_fourth_corpus_look_alikes_stay(redactor):
    changed = {n["kind"] for n in LOOKALIKES_4 if redactor(n["text"]).text != n["text"]}
    assert changed <= CHANGED_ON_PURPOSE_4


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # credentials handed to a call by position, or encoded for basic auth
        ('conn = psycopg.connect("host=db", "etl", "Qx7#harbor")', "Qx7#harbor"),
        ("http.basic_auth 'ci-bot', 'NqTRvGwLpYxE'", "NqTRvGwLpYxE"),
        ('var c = new NetworkCredential("svc@corp.io", "Spruce8&Lake");', "Spruce8&Lake"),
        ("auth = base64.b64encode(b'reporter:Kv2-Lm9-Qz4').decode()", "Kv2-Lm9-Qz4"),
        ('smtp.login("alerts@corp.io", "qpzm wxly tkcr bnvd")', "qpzm wxly tkcr bnvd"),
        # a value set by subscript, Bundler credentials, an Oracle thin URL, a SQL INSERT
        ("app.config['JWT_SECRET'] = 'f3a9c1e7b2d4086a5c9e1f7b3d2a4c6e'", "f3a9c1e7b2d4086a5c9e1f7b3d2a4c6e"),
        ('BUNDLE_ENTERPRISE__SIDEKIQ__COM: "8f2a1c3e:9b7d6e5f"', "9b7d6e5f"),
        ("url = jdbc:oracle:thin:scott/Tig3r#Oak@//db:1521/XE", "Tig3r#Oak"),
        (
            "INSERT INTO tokens (owner, access_token) VALUES ('ops', 'p8Xk2LmQ9vZr4TnW7yBc1HdF');",
            "p8Xk2LmQ9vZr4TnW7yBc1HdF",
        ),
        # names in Bulgarian, Croatian, Serbian, Urdu, Tamil, Malay; glued to CJK; a German compound
        ("Паролата за сървъра е kedar7Mountain", "kedar7Mountain"),
        ("Lozinka za bazu je Rq8zPlmW2x, ne dijeli je", "Rq8zPlmW2x"),
        ("Шифра за налог је Ks9#tvrdjava", "Ks9#tvrdjava"),
        ("ڈیٹا بیس کا پاس ورڈ Lhr7#Minar ہے", "Lhr7#Minar"),
        ("தரவுத்தள கடவுச்சொல் Chn4#Marina ஆகும்", "Chn4#Marina"),
        ("Kata laluan pelayan ialah Petronas#88", "Petronas#88"),
        ("用户名admin，密码Hz8#West_Lake", "Hz8#West_Lake"),
        ("Ich habe das Adminpasswort auf `Kiel#Hafen22` gesetzt", "Kiel#Hafen22"),
        # every value built like a password in the sentence: the corrected one too
        ("şifre Delta-42-Fjord değil, qWzXyTpLmNbV olacak", "qWzXyTpLmNbV"),
    ],
)
def test_forms_the_fourth_corpus_found_missing(text, secret):
    """Each class the fourth corpus found, in examples of its own."""
    _redacted_by_both(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        'Password string `json:"password" validate:"required,min=12"`',
        "const r=({token:e,onExpire:t})=>{n.default.useEffect(()=>{})};r.propTypes={token:o.default.string};",
        '  password_hash: "$2b$12$a1y3jO1PJj5weGil3FOZJEmFrqgCg1vmT/gtPn8IhKiYDJ2MEBDDV"',
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQwW0Qz3eFhMD/vtc2lwhE9OECip+knR7sy ci@build",
        "credentials: Aws::Credentials.new(Rails.application.credentials.dig(:aws, :access_key_id))",
        "ARN: arn:aws:secretsmanager:eu-central-1:491203887714:secret:prod/stripe-I4Jah4",
    ],
)
def test_look_alikes_of_the_fourth_corpus_forms_stay(text):
    _kept_by_both(text)


# --------------------------------------------------------------------------- fifth corpus
# Held out until its first run, written by a writer who read neither the rules nor the other
# corpora: tool formats, configs, code and chat across ~40 families, 25 languages (200 + 200).
CASES_5, LOOKALIKES_5 = _corpus("5")
#: Still in clear (by value): a password with no name in its sentence (a chat answer on the next
#: line, a column of a host table), a
#: six-digit SMS code, a door code, digit groups after a German router's key name, a Consul
#: token (a UUID) under `tokens { agent = … }`, a key in German prose named only by the line
#: before ("der neue ist …"), a mixed-case password with a dot that reads as a type name, and
#: the second half of a token a terminal wrapped onto its own line.
LEFT_5 = {
    "187126",
    "425c10a1135d67248f534b746e0abd0d",
    "9588#",
    "9928 3078 4570 1864",
    "SfddmRazwJG2.X",
    "YAQaLUcbqK2C0.7H",
    "Zephyr%Otter892",
    "e2c178f1-1524-4fc4-8879-9bcc8f8b61e2",
    "ghp_cTeFPZVbroR5vKHV9Z\nTi7yVPqaVVkOHKD9hf",
}
#: Changed on purpose (live publishable keys, a placeholder `sk_live_xxx…`, vendor documentation
#: keys), and look-alikes still changed (a JWKS's key id, an OAuth error's description, a
#: detect-secrets baseline's hash, masked values): the outbound pass may lose a non-secret.
CHANGED_5 = {
    "aws_configure_list_masked",
    "detect_secrets_baseline",
    "jwks_public",
    "kubeconfig_exec_plugin",
    "mapbox_public_token",
    "oauth_error_response",
    "placeholder_env_example",
    "secretsmanager_arn",
    "security_training_examples",
    "stripe_error_masked",
    "stripe_publishable_key",
    "vendor_doc_example_slack",
    "vendor_doc_example_totp",
    "vendor_public_kms_key",
}


@pytest.mark.parametrize("case", CASES_5, ids=[f"{c['lang']}-{c['kind']}-{i}" for i, c in enumerate(CASES_5)])
@REDACTORS
def test_every_secret_of_the_fifth_corpus_is_redacted(case, redactor):
    if case["secret"] in LEFT_5:
        pytest.skip("a form no rule reads yet (LEFT_5)")
    assert not _left(case["secret"], redactor(case["context"]).text)


@REDACTORS
def test_the_fifth_corpus_look_alikes_stay(redactor):
    changed = {n["kind"] for n in LOOKALIKES_5 if redactor(n["text"]).text != n["text"]}
    assert changed <= CHANGED_5


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a password built with a dot: a word and a number, not a name in code
        ("Il nuovo password del NAS è Girasole.Tramonto48, l'utente resta admin", "Girasole.Tramonto48"),
        ("DB_PASS=Pepper.Cactus2291", "Pepper.Cactus2291"),
        ("Salasana wikiin: kuusi.Revontuli775", "kuusi.Revontuli775"),
        # tool formats: a NATS seed, a Discord bot token, a Teams webhook, a Wi-Fi QR payload and PSK
        (
            "nsc generated the account seed:\nSA3TTQG3QA7O3FDLS6BQKPS4BOZG3FOXCTLCFV7YNDP5KI225P6PNTWBQB",
            "SA3TTQG3QA7O3FDLS6BQKPS4BOZG3FOXCTLCFV7YNDP5KI225P6PNTWBQB",
        ),
        (
            "bot.run('MTU4NzQxNzU3MzgxMDQyMjg3OA.U0k41g.5Sn7pipffpGyyDGUGixgyv3sXSZtK54GAA4UQ_')",
            "5Sn7pipffpGyyDGUGixgyv3sXSZtK54GAA4UQ_",
        ),
        (
            "https://corp.webhook.office.com/webhookb2/a1b2@c3d4/IncomingWebhook/c6e0dd60132b41e97ac77e2ec9b1a199/e5f6",
            "c6e0dd60132b41e97ac77e2ec9b1a199",
        ),
        ("QR payload: WIFI:S:Cafe-Nord;T:WPA;P:Ma5ala!Chai;;", "Ma5ala!Chai"),
        ('network={\n  ssid="Loft"\n  psk="orchid lantern 77"\n}', "orchid lantern 77"),
        # commands: mosquitto's -P, a quoted curl password, a secret echoed into a file named as one,
        # a key file printed
        ("mosquitto_sub -h broker -u sensor -P 'Tq7#vane' -t 'home/#'", "Tq7#vane"),
        ("curl --user 'deploy:Zz9-Kite.Fjord' https://ci.example/api", "Zz9-Kite.Fjord"),
        ("printf '%s' 'Qv8!rTe3wind' > secrets/db_password", "Qv8!rTe3wind"),
        ("$ cat ~/.config/app/api_token\n653a212d11045aea4ba840915631fd3f\n$ ls", "653a212d11045aea4ba840915631fd3f"),
        # links and query keys: a sign-in link's token, an `appid`, an Express session cookie
        (
            "Reset link: https://app.example.com/users/password/reset?token=vAIekh0rcT0AJc3zsAXbKmmcb3op6aXIz_3Xtlr1",
            "vAIekh0rcT0AJc3zsAXbKmmcb3op6aXIz_3Xtlr1",
        ),
        ("GET /data/2.5/weather?q=Oslo&appid=c6e0dd60132b41e97ac77e2ec9b1a199", "c6e0dd60132b41e97ac77e2ec9b1a199"),
        ("Cookie: connect.sid=s%3Aq8ZrT2mKx9LpWc4Vn7.Hy%2F3dJ6sQ1fRt8uWe5Ya0Zb2Xc4Vn6", "q8ZrT2mKx9LpWc4Vn7"),
        # a password alone on its line under a login, and `user:password` beside `user@host`
        (
            "Supplier portal\nhttps://portal.example.com\nops@example.com\nWq7!tRm2vKz\n(shared with finance)",
            "Wq7!tRm2vKz",
        ),
        ("usuario: soporte@clinica.example\nPk4mZt9x.qa\nSaludos", "Pk4mZt9x.qa"),
        ("ssh deploy@10.20.0.7   # deploy:Rt6-kLm9Qx2", "Rt6-kLm9Qx2"),
        # recovery codes after a sentence of words, and a wallet's words with a wallet named
        ("backup codes, keep them somewhere safe:\n4f2a1-9c8e3\n7b6d5-0a1f2\n3e9c7-5d2b8", "7b6d5-0a1f2"),
        (
            "ledger backup for the test wallet:\nridge pilot cabin amber walnut fossil tiger orbit lemon crane medal pulse",
            "ridge pilot cabin amber walnut fossil tiger orbit lemon crane medal pulse",
        ),
    ],
)
def test_forms_the_fifth_corpus_found_missing(text, secret):
    """Each class the fifth corpus found, in examples of its own."""
    _redacted_by_both(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "password_hash = hashlib.sha256",
        "DB_PASSWORD = settings.DATABASE_PASSWORD",
        'password_hint = "Au moins 12 caractères"',
        '"signup.password": "Contraseña"',
        "WIFI:S:Cafe-Nord;T:nopass;P:;;",
        "mosquitto_pub -h broker -p 1883 -t home/lights -m on",
        "echo 'done' > build.log",
        "$ cat README.md\nengram gives Claude lasting memory.",
        "https://example.com/password/reset?lang=en-GB",
        "we walked along the ridge and the pilot pointed at the cabin and the amber walnut trees",
        "From: ops@example.com\nSubject: deploy\nDeployV2\nThanks",
        "ssh deploy@10.20.0.7 'tail -f /var/log/app.log'  # deploy:logs",
        "author Ana <ana@example.com>\ngpgsig -----BEGIN PGP SIGNATURE-----\n iQIzBAABCAAdFiEEx9Kq2LmN\n -----END PGP SIGNATURE-----",
    ],
)
def test_look_alikes_of_the_fifth_corpus_forms_stay(text):
    _kept_by_both(text)


@pytest.mark.parametrize(
    "text",
    [
        # a path word inside another word, a digest as a query value, a commit id
        "https://cdn.example.com/presets/theme.css?v=5d41402abc4b2a76b9719d911017c592",
        "https://ci.example.com/job/verify-build/?commit=aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d",
        "https://example.com/docs/deactivate-account?ref=5d41402abc4b2a76b9719d911017c592",
        # a file whose name holds a secret's word inside another word
        "echo 'performance' > /sys/devices/keyboard/governor",
        "echo enabled > tokenizer_mode",
        "echo 'main-branch' >> monkey.txt",
        # everyday words before a digest, not a command printing a key file
        "I added more keys:\naaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d",
        "Then type token\n5d41402abc4b2a76b9719d911017c592",
        # a line of prose that names a wallet, a commit's author above a message
        "fix seed script and update wallet tests for the new ledger format",
        "Author: Bob <bob@example.com>\nDate:   Mon Jun 2 10:00:00 2025\n\n    Refactor2",
        # UI text under a secret's name, a numbered host in code
        'password_hint = "Mindestens 12 Zeichen"',
        "password = config.server01",
    ],
)
def test_look_alikes_of_the_new_rules_stay(text):
    """What a review found the fifth corpus's new rules took for secrets."""
    _kept_by_both(text)


@pytest.mark.parametrize(
    "text",
    [
        'api_key_label = "a8F5f167f44f4964e6c998dee827110cb8Q"',
        'admin_password_reset="Winter2024!x"',
        'DEPLOY_TOKEN_TEXT="ghx_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA"',
    ],
)
def test_a_value_built_like_a_secret_under_a_name_for_text_is_still_redacted(text):
    secret = text.split("=", 1)[1].strip(' "')
    for redactor in (sanitize, redact_outbound):
        assert secret not in redactor(text).text, redactor.__name__


@pytest.mark.parametrize(
    "text",
    [
        "recovery codes abcd1" + " " * 20_000 + "x",
        "cat " + "key" * 60_000 + "\nx",
        "x@y.co " + "ab:Xyz1234q " * 20_000,
        "https://a.example/" + "login/" * 5_000 + "?" + "a=b&" * 5_000,
        "echo " + "x" * 200 + " > " + "a/" * 20_000 + "key",
        "wallet\n" + ("abc " * 23 + "abc\n") * 2_000,
    ],
    ids=["recovery-blanks", "cat-key", "login-pairs", "sign-in-path", "echo-path", "wallet-lines"],
)
def test_the_new_rules_read_crafted_text_in_linear_time(text):
    """Each new rule on input built to make a regex backtrack (a few hundred KB): about a second
    for both passes on an idle machine (login-pairs, the slowest: 1.2 s), where the first versions
    of two of them took minutes. The bound leaves room for a loaded two-core machine (2.3 s seen
    with one other process busy) and still fails a quadratic rule by far."""
    import time

    started = time.perf_counter()
    sanitize(text)
    redact_outbound(text)
    assert time.perf_counter() - started < 8.0


@pytest.mark.parametrize(("cases", "left"), [(CASES_4, LEFT_4), (CASES_5, LEFT_5)], ids=["fourth", "fifth"])
def test_the_lists_of_secrets_left_in_clear_are_true(cases, left):
    """Each value a list calls left is still in clear in some pass: a rule that starts catching
    one must take it off the list (and the figure in the docs with it)."""
    by_secret = {c["secret"]: c for c in cases}
    for secret in left:
        case = by_secret[secret]
        assert any(_left(secret, r(case["context"]).text) for r in (sanitize, redact_outbound)), secret
