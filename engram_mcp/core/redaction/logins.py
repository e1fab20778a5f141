"""A password beside the login it is for, with no key name: a line under a user's line, `user:pw`
next to `ssh user@host`, `admin / Xk9#…` or `login with X` in a sentence, `creds: deploy/…`.

With no name to go by, the value must be built like a password (`passwords._built_like_password`)
and the login must be near: the lines just above, the same line, the same sentence.
"""

from __future__ import annotations

import re

from .labels import _LABEL_MARK
from .passwords import _built_like_password
from .rule import _Rule
from .values import _TOKEN_TRIM, _is_doc_example, _is_placeholder, _password_like

# a password alone on its line, in a block that gives a login just above it (an email, or a
# user / login / account line): a vendor portal's note, a credentials message with no key name
_LOGIN_LINE = re.compile(
    r"^[ \t]*[^@\s]+@[^@\s]+\.[A-Za-z]{2,}[ \t]*$|(?i:\b(?:user(?:name)?|login|e-?mail|usuario|utilisateur|"
    r"benutzer(?:name)?|utente|gebruiker|account|konto|uživatel|kullanıcı|логин|пользователь)\b[ \t]*[:=：])"
)
#: Lines that name a person by email and are no login: a commit's or a mail's headers.
_HEADER_LINE = re.compile(
    r"(?i)^[ \t]*(?:author|commit(?:ter)?|from|to|cc|date|reply-to|signed-off-by|co-authored-by):"
)
LOGIN_LOOKBACK_LINES = 3
LOGIN_LINE_MAX_CHARS = 40  # a password typed or pasted in a note; longer lines are keys and blocks


def _after_login_line(m: re.Match, value: str) -> bool:
    """Whether `value`, alone on its line, is built like a password and one of the few lines above
    it gives a login."""
    if len(value) > LOGIN_LINE_MAX_CHARS or not _built_like_password(value):
        return False
    before = m.string[max(0, m.start() - 4096) : m.start()]
    if before.rfind("-----BEGIN") > before.rfind("-----END"):
        return False  # a line of an armored block (a signature, a key) is no password
    above = before[-600:].splitlines()[-LOGIN_LOOKBACK_LINES:]
    return any(_LOGIN_LINE.search(line) and not _HEADER_LINE.match(line) for line in above)


_RULE_LOGIN_BLOCK_LINE = _Rule(
    "password",
    r"(?m)^[ \t]*(?P<s>[^\s]{6,64})[ \t]*$",
    hints=("@", "user:", "user =", "username", "login", "usuario", "utilisateur", "benutzer", "account:", "konto"),
    check=_after_login_line,
)


# `user:password` beside the login it is for, with no key name: `ssh ops@10.0.0.5  # ops:<pw>`
LOGIN_PAIR_WINDOW_CHARS = 256  # either side of the pair: the command it comments on is near


def _pair_of_the_login(m: re.Match, value: str) -> bool:
    if not _built_like_password(value):
        return False
    text, start, end = m.string, m.start(), m.end()
    lo = max(text.rfind("\n", 0, start) + 1, start - LOGIN_PAIR_WINDOW_CHARS)
    nl = text.find("\n", end, end + LOGIN_PAIR_WINDOW_CHARS)
    hi = nl if nl != -1 else min(len(text), end + LOGIN_PAIR_WINDOW_CHARS)
    return re.search(rf"\b{re.escape(m.group('user'))}@", text[lo:hi]) is not None


_RULE_LOGIN_PAIR = _Rule(
    "password",
    r"(?<![\w@/:.-])(?P<user>[a-z_][a-z0-9_.-]{0,31}):(?P<s>[^\s:@/'\"]{6,64})(?![\w@])",
    hints=("@",),
    check=_pair_of_the_login,
)


# --- a user / password pair after a login word (both passes; the outbound one takes weaker values)
_LOGIN_WORDS = (
    r"log[\s-]?in|logon|sign[\s-]?in|credentials?|creds|account|anmeldung|zugangsdaten|konto|identifiants|"
    r"connexion|credenciales|acceso|cuenta|credenziali|accesso|inloggning|логин|учётка|учетка|"
    r"ログイン|認証情報|登录|登入|账号|帐号|로그인"
)
#: Cheap substrings of the login words, checked before the pattern runs.
_LOGIN_HINTS = tuple(
    "login log-in logon signin sign-in cred account anmeld zugang konto identifiant connex acceso cuenta accesso "
    "inlogg логин учё учет ログイン 認証 登录 登入 账号 帐号 로그인".split()
) + ("log in", "log\tin", "sign in", "sign\tin", "log\nin", "sign\nin")
_LOGIN_PAIR_RE = re.compile(
    rf"(?i)(?:{_LOGIN_WORDS})\b[^\n:=]{{0,30}}?\s*(?:[:=]|\bis\b|\bwith\b|：)\s*"
    r"[\"'`]?([^\s/:\"'`]{1,64})[\"'`]?\s*(?:/|:|\s\|\s)\s*[\"'`]?([^\s\"'`]{4,128}?)[\"'`]?(?=[\s,;.)]*(?:\s|$))"
)
_LOGIN_WORD_RE = re.compile(rf"(?i)(?<![^\W_])(?:{_LOGIN_WORDS})\b")


#: `admin / 4rW#rtetcP`, in any language's sentence ("Я зашёл под admin / …", "root / … 로 접속"):
#: a user name, a slash between blanks, and a value nobody writes but as a password.
_SLASH_PAIR = re.compile(r"(?<![\w/.:@-])[a-z][a-z0-9._-]{1,31}[ \t]+/[ \t]+(?P<s>[^\s/]{6,64})")
#: "log in with Mango!Tide-84": a login verb and the value it uses.
_LOGIN_WITH = re.compile(r"(?i)\b(?:log(?:ged)?[ -]?in|sign(?:ed)?[ -]?in)[ \t]+(?:with|using)[ \t]+(?P<s>\S{6,64})")


def _login_pairs(text: str, *, outbound: bool) -> list[tuple[int, int, str]]:
    """The password of each user / password pair after a login word ("creds: deploy/Gr4nite&Moss",
    "login with admin / Xyzzy-plugh-9"): built like one (`_password_like`) for the local pass,
    any value that reads as one (`_login_password`) for the outbound pass. And, with no login
    word, a user / value pair or a login's value built like a password (`_built_like_password`)."""
    out = []
    low = text.lower()
    logs_in = "in with" in low or "in using" in low  # cheap before the regex: "log in with X"
    for rx, present in ((_SLASH_PAIR, " / " in text), (_LOGIN_WITH, logs_in)):
        if present:
            for pair in rx.finditer(text):
                value = pair.group("s").rstrip(_TOKEN_TRIM)
                if _built_like_password(value) and _LABEL_MARK not in value:
                    out.append((pair.start("s"), pair.start("s") + len(value), "password"))
    if not any(w in low for w in _LOGIN_HINTS):
        return out
    for word in _LOGIN_WORD_RE.finditer(text):  # where a pair can start: cheaper than the pair's search
        if word.start() and text[word.start() - 1] == ".":
            continue  # `Rails.application.credentials.dig(:aws, …)`: an attribute in code
        m = _LOGIN_PAIR_RE.match(text, word.start())
        if m is None:
            continue
        value = m.group(2)
        if _is_placeholder(value) or _is_doc_example(value) or _LABEL_MARK in m.group(0) or "::" in m.group(0):
            continue  # (`Aws::Credentials.new(`: a scope, not a pair)
        if _login_password(value) if outbound else _password_like(value.strip(".,;)")):
            out.append((m.start(2), m.end(2), "password"))
    return out


def _login_password(value: str) -> bool:
    """Whether the second half of a login pair reads as a password: 6+ characters with a digit or
    a symbol, or 10+ of mixed case; not a path, a URL or a plain word."""
    v = value.strip(".,;)")
    if len(v) < 6 or "://" in v or v.startswith(("/", "~", ".")):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_symbol = any(not c.isalnum() for c in v)
    mixed = any(c.isupper() for c in v) and any(c.islower() for c in v)
    if v.isalpha() and not mixed:
        return False
    return has_digit or has_symbol or (mixed and len(v) >= 10)
