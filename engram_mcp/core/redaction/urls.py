"""URLs and what HTTP carries: credentials in a URL, Authorization headers, cookies, signed links.

Only the secret part is replaced: the scheme, user and host of
``postgres://admin:[REDACTED:url-credentials]@db`` and the ``Bearer`` of an Authorization
header stay readable, so a memory still says what was connected to.
"""

from __future__ import annotations

import re
import urllib.parse

from .rule import _ALNUM, _TOKCH, _not_placeholder, _Rule
from .values import _is_placeholder, _looks_random, _shannon

#: Characters of a URL's scheme, walked back over from `://` (`_url_check`).
_SCHEME_CH = _ALNUM | frozenset("+.-")


# documentation spelling of a URL with credentials: https://user:password@host
_URL_PLACEHOLDERS = frozenset("password pass passwd pwd pw secret pass123 token".split())


def _url_check(m: re.Match, value: str) -> bool:
    # the scheme lies before the anchor: walk back over scheme characters
    text = m.string
    i = start = m.start()
    while i > 0 and text[i - 1] in _SCHEME_CH and start - i <= 30:
        i -= 1
    if start - i < 2 or not text[i].isalpha():
        return False
    return not _is_placeholder(value) and value.lower() not in _URL_PLACEHOLDERS


_RULE_URL = _Rule(
    "url-credentials",
    # a `#` in the password: people paste passwords into URLs unencoded, and `user:pass#1@host` is no fragment
    r"://(?P<user>[^\s:/?#@\[\]\"'<>]{0,256}):(?P<s>[^\s/?\"'<>]{1,256})@(?=[A-Za-z0-9\[_])",
    check=_url_check,
)

_BEARER_VALUE = r"[A-Za-z0-9\-._~+/]+=*"


def _bearer_check(m: re.Match, value: str) -> bool:
    if _is_placeholder(value) or len(value) < 4:
        return False
    if m.group("scheme"):
        return True
    # no scheme: must look like an opaque credential
    return len(value) >= 16 and any(ch.isdigit() for ch in value) and _shannon(value) >= 3.0


def _bare_bearer_check(_m: re.Match, value: str) -> bool:
    return (
        len(value) >= 16
        and any(ch.isdigit() for ch in value)
        and any(ch.isalpha() for ch in value)
        and _shannon(value) >= 3.0
    )


_RULE_AUTH_HEADER = _Rule(
    "bearer-token",
    r"(?i:authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?P<scheme>bearer|basic|token|negotiate|ntlm|apikey|sso-key)[ \t]+)?)"
    rf"(?P<s>(?(scheme)[^\s\"'<>`]+|{_BEARER_VALUE}))",
    ("authorization",),
    check=_bearer_check,
    lb=_ALNUM | frozenset("_"),
)
_RULE_BARE_BEARER = _Rule(
    "bearer-token",
    rf"(?i:bearer|basic)[ \t]+(?P<s>{_BEARER_VALUE})",
    ("bearer", "basic"),
    check=_bare_bearer_check,
    lb=_TOKCH,
)

# `Authorization: SSWS 00eLAQw0…` (Okta), `Authorization: Key …`: a scheme the rule above does not
# name, followed by a value built like a credential
_RULE_AUTH_SCHEME = _Rule(
    "bearer-token",
    r"(?i:authorization[\"']?[ \t]*[:=][ \t]*[\"']?)[A-Za-z][A-Za-z0-9_\-]{1,30}[ \t]+"
    rf"(?P<s>{_BEARER_VALUE})",
    ("authorization",),
    check=_bare_bearer_check,
    lb=_ALNUM | frozenset("_"),
)
# Go's database/sql DSN: `user:password@tcp(host:3306)/db` (no scheme, so not `_RULE_URL`)
_RULE_GO_DSN = _Rule(
    "url-credentials",
    r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]{1,64}:(?P<s>[^\s@\"'`/:()]{1,128})@(?:tcp|unix|udp)\(",
    check=_not_placeholder,
    pre=r"@(?:tcp|unix|udp)\(",
)


def _random_value(_m: re.Match, value: str) -> bool:
    """A value random enough for a key's place (`_looks_random` with a weak key's bar)."""
    return _looks_random(value, weak_key=True)


# a pre-signed URL's signature (S3 and compatible stores, GCS V4): anyone holding the URL has the object
_RULE_URL_SIGNATURE = _Rule(
    "url-credentials",
    r"(?i:[?&](?:X-Amz-Signature|X-Goog-Signature|Signature|X-Amz-Security-Token|sig))=(?P<s>[A-Za-z0-9%+/=_\-]{16,2048})",
    hints=("signature=", "security-token=", "sig="),
)
# RPC providers' keys in the URL path (`https://eth-mainnet.g.alchemy.com/v2/<key>`, Infura, QuickNode)
_RPC_KEY_PATHS = ("alchemy.com/v2/", "alchemyapi.io/v2/", "infura.io/v3/", "infura.io/ws/v3/", "quiknode.pro/")
_RULE_RPC_URL_KEY = _Rule(
    "api-token",
    r"(?i:alchemy\.com/v2|alchemyapi\.io/v2|infura\.io/v3|infura\.io/ws/v3|quiknode\.pro)/(?P<s>[A-Za-z0-9_\-]{16,128})",
    _RPC_KEY_PATHS,
    check=_random_value,
)


def _random_cookie(value: str) -> bool:
    """A session cookie's value is random whole or in a part: Express signs its id as
    `s:<id>.<signature>` (URL-encoded in the header: `s%3A…`)."""
    return _looks_random(value, weak_key=True) or any(
        _looks_random(part, weak_key=True) for part in re.split(r"[:.]", value)
    )


# a session cookie in a Cookie header or a curl -b: `sessionid=…` (Django, and jsessionid,
# phpsessid), `_app_session=…` (Rails), `connect.sid=…` (Express)
_SESSION_COOKIE_NAMES = ("sessionid=", "session_id=", "sessid=", "session=", "connect.sid=")
_RULE_SESSION_COOKIE = _Rule(
    "bearer-token",
    r"(?i:sessionid|session_id|sessid|session|connect\.sid)=(?P<s>[A-Za-z0-9%._\-+/=:]{16,1024})",
    _SESSION_COOKIE_NAMES,
    check=lambda _m, v: _random_cookie(urllib.parse.unquote(v)),
)
# OpenWeather-style `appid=<key>` in a URL's query
_RULE_APPID = _Rule(
    "api-token",
    r"[?&]appid=(?P<s>[A-Za-z0-9_\-]{16,128})",
    (("appid=", 1),),
    check=lambda _m, v: _looks_random(v),
)
# a link that signs its holder in: a token-named query value in a URL with a path segment about
# logging in (whole segments: `presets` is no reset, `deactivate-account` no activation)
_SIGN_IN_SEGMENT = (
    r"(?i:magic(?:[-_]link)?|login|log-in|signin|sign-in|sign_in|passwordless|reset|password-reset|verify|"
    r"confirm|invite|invitation|activate|activation|onboard|auth|sso|callback)"
)
#: A digest as a query value (a cache-busting `?v=<md5>`, a `?sha=<sha1>`): no sign-in token.
_HEX_DIGEST = re.compile(r"[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}")
_SIGN_IN_PARAM = r"(?i:t|tk|token|code|key|sig|signature|otp|auth|login_token|magic|ticket|nonce|secret)"
_RULE_SIGN_IN_LINK = _Rule(
    "bearer-token",
    r"https?://[^\s/?#\"'<>]{1,200}(?:/[^\s/?#\"'<>]{0,100}){0,12}?/"
    + _SIGN_IN_SEGMENT
    + r"(?=[/?])(?:/[^\s/?#\"'<>]{0,100}){0,6}\?(?:[^\s#\"'<>&]{0,200}&){0,8}"
    + _SIGN_IN_PARAM
    + r"=(?P<s>[A-Za-z0-9_\-.~%]{20,512})",
    hints=("://",),
    check=lambda _m, v: _looks_random(v) and not _HEX_DIGEST.fullmatch(v),
)
