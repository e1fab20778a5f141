"""Providers' token formats: a key known by its own shape, wherever it stands.

`AKIA…`, `ghp_…`, `sk-ant-…`, `xoxb-…`, a JWT, a Discord bot token: each is a secret without
any name before it, so these rules run early (after the private-key containers, before every
rule that reads a key's name) and give the most specific kind. Among them the specific come
before the general (`sk-ant-` before OpenAI's `sk-`): `rules._RULES` holds that order.
"""

from __future__ import annotations

import re

from .labels import _LABEL_MARK
from .rule import _ALNUM, _KEYCH_SET, _TOKCH, _not_placeholder, _Rule
from .values import _DIGIT, _LOWER, _UPPER, _looks_random, _shannon

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Callable, Optional


_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA")
_RULE_AWS_ID = _Rule(
    "aws-access-key",
    rf"(?P<s>(?:{'|'.join(_AWS_PREFIXES)})(?<![A-Za-z0-9]....)[A-Z0-9]{{16}})(?![A-Za-z0-9])",
)
_RULE_AWS_SECRET = _Rule(
    "aws-secret-key",
    r"(?i:secret[_\-]?access[_\-]?key[\"']?[ \t]*(?:=>|=|:)[ \t]*[\"']?)"
    r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ("secret",),
)


def _aws_pair_check(_m: re.Match, value: str) -> bool:
    return bool(_DIGIT.search(value) and _LOWER.search(value) and _UPPER.search(value)) and _shannon(value) >= 3.5


# The 40-character secret key written after its access key id, whatever is between them on the
# line: `AWS AKIA... secret 9xK2...`, `AKIA.../9xK2...`, `key id AKIA..., and the key is 9xK2...`.
# The id is already a label when this rule runs (rules run in order).
_RULE_AWS_PAIR = _Rule(
    "aws-secret-key",
    r"\[REDACTED:aws-access-key\][^\r\n]{0,160}?(?<![A-Za-z0-9/+])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    (("aws-access-key]", len(_LABEL_MARK)),),
    check=_aws_pair_check,
)
_RULE_ANTHROPIC = _Rule(
    "anthropic-key",
    r"(?P<s>sk-ant-(?<![A-Za-z0-9_\-]sk-ant-)[A-Za-z0-9_\-]{20,300})",
)


def _openai_check(_m: re.Match, value: str) -> bool:
    body = value[3:]
    return any(ch.isdigit() for ch in body) and any(ch.isalpha() for ch in body) and _shannon(body) >= 3.0


_RULE_OPENAI = _Rule(
    "openai-key",
    r"(?P<s>sk-(?<![A-Za-z0-9_\-]sk-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,300})",
    check=_openai_check,
)
_RULE_STRIPE = _Rule(
    "stripe-key",
    r"(?P<s>(?:(?:sk|rk)_(?:live|test)|pk_live)_[A-Za-z0-9]{10,255}|whsec_[A-Za-z0-9]{20,255})(?![A-Za-z0-9_\-])",
    (("k_live_", 1), ("k_test_", 1), "whsec_"),
    lb=_TOKCH,
)
_RULE_GITHUB = _Rule(
    "github-token",
    r"(?P<s>gh[pousr]_(?<![A-Za-z0-9_\-]....)[A-Za-z0-9]{30,255}"
    r"|github_pat_(?<![A-Za-z0-9_\-]github_pat_)[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_\-])",
)
_RULE_GITLAB = _Rule(
    "gitlab-token",
    r"(?P<s>gl(?<![A-Za-z0-9_\-]gl)(?:pat|dt|rt|ptt|ft|soat|cbt|imt)-[A-Za-z0-9_\-]{20,200}"
    r"(?:\.[A-Za-z0-9_\-]{2,64}){0,4})",
)
_RULE_SLACK_WEBHOOK = _Rule(
    "slack-webhook",
    r"(?i:hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<s>[A-Za-z0-9_/\-]{16,})",
    ("hooks.slack.com/",),
)
_RULE_SLACK = _Rule(
    "slack-token",
    r"(?P<s>x(?<![A-Za-z0-9_\-]x)(?:ox[abeoprs]-[A-Za-z0-9\-]{10,300}|app-[0-9]-[A-Za-z0-9\-]{10,300}))",
)
_RULE_GOOGLE = _Rule(
    "google-api-key",
    r"(?P<s>AIza(?<![A-Za-z0-9_\-]AIza)[0-9A-Za-z_\-]{35})(?![A-Za-z0-9_\-])",
)
_RULE_AZURE = _Rule(
    "azure-key",
    r"(?i:AccountKey|SharedAccessKey|SharedSecret|PrimaryKey|SecondaryKey)[ \t]*=[ \t]*"
    r"(?P<s>[A-Za-z0-9+/]{20,200}={0,2})",
    ("accountkey", "sharedaccesskey", "sharedsecret", "primarykey", "secondarykey"),
    lb=_ALNUM,
)


def _sas_check(m: re.Match, _value: str) -> bool:
    start = m.start()
    return start > 0 and m.string[start - 1] in "?&"


_RULE_AZURE_SAS = _Rule(
    "azure-key",
    r"sig=(?P<s>[A-Za-z0-9%+/=]{16,512})",
    check=_sas_check,
)
_RULE_NPM = _Rule(
    "npm-token",
    r"(?P<s>npm_(?<![A-Za-z0-9_\-]npm_)[A-Za-z0-9]{36})(?![A-Za-z0-9])",
)
_RULE_NPM_AUTH = _Rule(
    "npm-token",
    r"_auth(?:Token)?[\"']?=[\"']?(?P<s>[^\s\"'`<>(){}\[\];,&|]+)(?![(\[])",
    check=_not_placeholder,
    lb=_KEYCH_SET,
)
_RULE_PYPI = _Rule(
    "pypi-token",
    r"(?P<s>pypi-AgE(?<![A-Za-z0-9_\-]pypi-AgE)[A-Za-z0-9_\-]{40,1024})",
)
_RULE_TWILIO = _Rule(
    "twilio-key",
    r"(?P<s>SK(?<![A-Za-z0-9]SK)[0-9a-fA-F]{32})(?![A-Za-z0-9])",
)
_RULE_SENDGRID = _Rule(
    "sendgrid-key",
    r"(?P<s>SG\.(?<![A-Za-z0-9]SG\.)[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})(?![A-Za-z0-9_\-])",
)
_RULE_JWT = _Rule(
    "jwt",
    r"(?P<s>eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,8192}\.[A-Za-z0-9_\-]{8,16384}\.[A-Za-z0-9_\-]{0,4096})",
)

# an SDK client built with its key as the first argument (`cohere.Client("…")`; `Anthropic("…")`
# is caught by its prefix). Not Algolia's `algoliasearch(appId, key)`: its key there is as often
# the search-only one, which is published in every front end.
_RULE_CLIENT_KEY = _Rule(
    "api-token",
    r"[Cc]lient\([ \t]*(?:api_?key[ \t]*=[ \t]*)?[\"'](?P<s>[A-Za-z0-9_\-]{24,128})[\"']",
    ("client(",),
    check=lambda _m, v: _looks_random(v),
)

# --- provider token formats added for issue 12 ----------------------------------
# Each starts with a fixed prefix, found with bytes.find on the lowered text (cheap), and
# must not be preceded or followed by token characters.


def _token_rule(kind: str, pattern: str, *anchors: str, check: Optional[Callable] = None) -> _Rule:
    return _Rule(kind, rf"(?P<s>{pattern})(?![A-Za-z0-9_\-])", anchors, check=check, lb=_TOKCH)


def _mixed_check(_m: re.Match, value: str) -> bool:
    body = value.split("_", 1)[-1]
    return bool(_DIGIT.search(body) or (_LOWER.search(body) and _UPPER.search(body))) and _shannon(body) >= 3.0


_TOKEN_RULES: tuple[_Rule, ...] = (
    _token_rule("google-oauth", r"ya29\.[0-9A-Za-z_\-.]{20,2048}", "ya29."),
    _token_rule("google-oauth", r"GOCSPX-[0-9A-Za-z_\-]{24,40}", "gocspx-"),
    _token_rule("google-oauth", r"1//0[0-9A-Za-z_\-]{38,512}", "1//0"),
    _token_rule("vault-token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,512}", "hvs.", "hvb.", "hvr."),
    _token_rule("docker-token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,128}", "dckr_"),
    _token_rule("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}", "dop_v1_", "doo_v1_", "dor_v1_"),
    _token_rule(
        "huggingface-token",
        r"(?:hf|api_org)_[A-Za-z0-9]{30,40}",
        "hf_",
        "api_org_",
        check=lambda m, v: _mixed_check(m, v) or (len(v.split("_")[-1]) == 34 and _shannon(v.split("_")[-1]) >= 3.5),
    ),
    _token_rule("age-secret-key", r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}", "age-secret-key-1"),
    _token_rule("mailgun-key", r"key-[0-9a-z]{32}", "key-", check=_mixed_check),
    _token_rule("api-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shpat_", "shpca_", "shppa_", "shpss_"),
    _token_rule("api-token", r"lin_(?:api|oauth)_[A-Za-z0-9]{32,64}", "lin_api_", "lin_oauth_"),
    _token_rule("api-token", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "pmak-"),
    _token_rule("api-token", r"gl(?:sa|c)_[A-Za-z0-9+/_=]{32,400}", "glsa_", "glc_", check=_mixed_check),
    _token_rule("api-token", r"sntr[ysu]_[A-Za-z0-9+/=_\-]{40,400}", "sntrys_", "sntryu_", "sntrs_"),
    _token_rule("api-token", r"dapi[a-f0-9]{32}(?:-[0-9])?", "dapi", check=_mixed_check),
    _token_rule("api-token", r"NRAK-[A-Z0-9]{27}", "nrak-"),
    _token_rule("api-token", r"pul-[a-f0-9]{40}", "pul-"),
    _token_rule(
        "api-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}", "dp.pt.", "dp.st.", "dp.sa.", "dp.ct."
    ),
    _token_rule("api-token", r"ATATT3[A-Za-z0-9_\-=]{100,300}", "atatt3"),
    _token_rule("api-token", r"figd_[A-Za-z0-9_\-]{40}", "figd_"),
    _token_rule("api-token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}", "pscale_"),
    _token_rule("api-token", r"HRKU-[A-Za-z0-9_\-]{30,80}", "hrku-"),
    _token_rule("api-token", r"sbp_[a-f0-9]{40}", "sbp_"),
    _token_rule("api-token", r"xai-[A-Za-z0-9]{60,100}", "xai-", check=_mixed_check),
    _token_rule("api-token", r"gsk_[A-Za-z0-9]{48,56}", "gsk_", check=_mixed_check),
    _token_rule("api-token", r"r8_[A-Za-z0-9]{37}", "r8_", check=_mixed_check),
    _token_rule("api-token", r"pplx-[a-zA-Z0-9]{48}", "pplx-"),
    _token_rule("api-token", r"ntn_[0-9]{11}[A-Za-z0-9]{35}", "ntn_"),
    _token_rule("api-token", r"LTAI[A-Za-z0-9]{12,20}", "ltai", check=_mixed_check),
    _token_rule("api-token", r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}", "sq0atp-", "sq0csp-"),
    _token_rule(
        "api-token", r"(?:FlyV1 )?fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,800}", "fm1_", "fm2_", "fm1a_", "fm1r_", "fm2_"
    ),
    _token_rule("api-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}", (".atlasv1.", 14)),  # type: ignore[arg-type]
    _token_rule("api-token", r"EAA[A-Za-z0-9]{90,400}", "eaa", check=_mixed_check),
    _token_rule("api-token", r"sk_[a-f0-9]{48}", "sk_"),  # ElevenLabs-style
    _token_rule("api-token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", "pat", check=_mixed_check),  # Airtable
    _token_rule("api-token", r"[0-9a-f]{32}-us[0-9]{1,2}", ("-us", 32), check=_mixed_check),  # type: ignore[arg-type]  # Mailchimp
    _token_rule(
        "api-token", r"access_token\$production\$[0-9a-z]{16}\$[0-9a-f]{32}", "access_token$production$"
    ),  # Braintree
    _token_rule("api-token", r"secret_[A-Za-z0-9]{43}", "secret_", check=_mixed_check),  # Notion (before ntn_)
    _token_rule("api-token", r"sl\.[A-Za-z0-9_\-]{120,1400}", "sl.", check=_mixed_check),  # Dropbox
    _token_rule("api-token", r"APA91b[A-Za-z0-9_\-]{100,300}", "apa91b"),  # Firebase Cloud Messaging server key
)
_RULE_TELEGRAM = _Rule(
    "telegram-bot-token",
    r"(?P<s>[0-9]{8,10}:AA[0-9A-Za-z_\-]{32,34})(?![A-Za-z0-9_\-])",
    ((":aa", 8), (":aa", 9), (":aa", 10)),
    lb=frozenset("0123456789"),
)
_RULE_DISCORD_WEBHOOK = _Rule(
    "discord-webhook",
    r"(?i:discord(?:app)?\.com/api(?:/v[0-9]{1,2})?/webhooks/)(?P<s>[0-9]{17,20}/[A-Za-z0-9_\-]{60,80})",
    ("discord",),
)
_RULE_MAILGUN_NEW = _Rule(
    "mailgun-key",
    r"(?P<s>[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})(?![A-Za-z0-9_\-])",
    lb=_TOKCH,
    pre=r"-[0-9a-f]{8}-[0-9a-f]{8}(?![0-9a-f])",
)
# A Twilio account SID passed next to its auth token: Client("AC...", "<32 hex>"), -u AC...:<hex>
_RULE_TWILIO_PAIR = _Rule(
    "twilio-key",
    r"AC(?<![A-Za-z0-9]AC)[0-9a-f]{32}[\"']?[ \t]*[,:][ \t]*[\"']?(?P<s>[0-9a-f]{32})(?![A-Za-z0-9])",
)

# Twilio's auth token as a literal next to a client call: Client(account_sid, "<32 hex>")
_RULE_TWILIO_CLIENT = _Rule(
    "twilio-key",
    r"(?:Client|TwilioRestClient)\((?P<args>[^()\r\n]{0,160}?)[\"'](?P<s>[0-9a-f]{32})[\"']",
    hints=("twilio",),
)


def _snowflake_b64(part: str) -> bool:
    """Whether `part` is base64 of a Discord id (a snowflake: 17-20 digits), as a bot token begins."""
    import base64
    import binascii

    try:
        raw = base64.b64decode(part + "=" * (-len(part) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return raw.isdigit() and 17 <= len(raw) <= 20


# a Discord bot token: the bot's id (base64 of a snowflake), a timestamp and an HMAC, dot-joined
_RULE_DISCORD_BOT = _Rule(
    "api-token",
    r"(?<![A-Za-z0-9_\-.])(?P<s>[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40})(?![A-Za-z0-9_\-])",
    hints=("discord", "token", "login(", "bot.run", "bot_"),
    check=lambda _m, v: _snowflake_b64(v.split(".", 1)[0]),
)
# Microsoft Teams incoming webhook URLs: `.../IncomingWebhook/<32 hex>/<guid>`, a bearer capability
_RULE_TEAMS_WEBHOOK = _Rule(
    "webhook-secret",
    r"incomingwebhook/(?P<s>[0-9a-fA-F]{32})(?=/)",
    ("incomingwebhook/",),
    flags=re.IGNORECASE,
)
