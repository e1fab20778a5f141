"""A key and its value: ``key = value`` in every syntax, and the same pair written as code.

The generic assignment rule (`_RULE_ASSIGN`: `=`, `:`, `=>`, `:=` after a name holding pass,
pwd, secret, token, key, cred or auth) runs last of all the rules, after every more specific
one has had its say; the value is judged with the key's name (`key_names._classify`). Most of
this module tells a hard-coded secret from code that only names one: `password = "hunter2"`
is redacted, `password = args.password`, `f(password=password)` and `token: AccessToken` are
not. The other rules here read the same pair in other shapes: command-line flags, XML
elements and attributes, JSON escaped in a string, subscripts, call arguments.
"""

from __future__ import annotations

import re

from .codes import _app_password_shape
from .key_names import _ARN_HEAD, _PUBLIC_QUALIFIER, _classify, _key_strength, _under_encrypted_data
from .passwords import _dotted_reference
from .rule import _KEYCH_SET, _line_before, _not_placeholder, _Rule
from .values import (
    _CODE_PREFIX,
    _IDENTIFIER,
    _camel_type,
    _is_placeholder,
    _looks_random,
    _mixed_letters,
    _password_like,
    _value_check,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from .rule import Decision

# --- a key and its value in code: escaped JSON, a call's arguments, a subscript ----------------


def _key_value_decide(m: re.Match) -> Decision:
    """A rule's `key` and value `s` judged as that key's assignment would be (`_classify`)."""
    kind = _classify(m.group("key"), m.group("s"))
    return None if kind is None else (kind, m.start("s"), m.end("s"))


# JSON inside a JSON string, as a log prints a config: `\"password\":\"Esc-Json-Pelican9\"`
_RULE_ESCAPED_JSON = _Rule(
    "password-assignment",
    r'\\"(?P<key>[A-Za-z0-9_.\-]{1,64})\\"[ \t]*:[ \t]*\\"(?P<s>[^"\\\r\n]{1,512})\\"',
    ('\\"',),
    decide=_key_value_decide,
    hints=("pass", "pwd", "secret", "token", "key", "cred", "auth"),
)
# credentials handed to a call: `NetworkCredential("user", "pw")`, `basic_auth 'user', 'pw'`,
# `server.login("me@x", "pw")`, `new PDO(dsn, 'user', 'pw')`, `getConnection(url, "user", "pw")`,
# `.basic_auth("user", Some("pw"))`: the string after the user's, when it reads as a password
#: Where such a call is tried (the lowered text's literals; the regex is matched there only).
_CALL_CREDENTIAL_NAMES = ("credential", "basic_auth", "basicauth", "login", "getconnection", "pdo(", "connect(")
_RULE_CALL_CREDENTIALS = _Rule(
    "password-assignment",
    r"(?i:credentials?|basic_?auth|login|getconnection|pdo|connect)[ \t]*\(?[ \t\r\n]*"
    r"(?:[\"'][^\"'\r\n]{1,300}[\"'][ \t]*,[ \t\r\n]*)?[\"'][^\"'\r\n]{1,128}[\"'][ \t]*,[ \t\r\n]*"
    r"(?:Some\([ \t]*)?[\"'](?P<s>[^\"'\r\n]{4,128})[\"']",
    _CALL_CREDENTIAL_NAMES,
    check=lambda _m, v: (
        not _is_placeholder(v)
        and (_password_like(v) or _looks_random(v) or _app_password_shape(v) or _mixed_letters(v))
    ),
)
# a basic-auth pair encoded in code: `Buffer.from('user:pw').toString('base64')`, `b64encode(b"user:pw")`
_RULE_ENCODED_PAIR = _Rule(
    "password-assignment",
    r"(?:Buffer\.from|b64encode|btoa|encodeToString|base64_encode)\([ \t]*b?[\"'`][^\"'`:\s]{1,64}:(?P<s>[^\"'`\s]{4,128})[\"'`]",
    hints=("buffer.from", "b64encode", "btoa", "encodetostring", "base64_encode"),
    check=_not_placeholder,
)


# a value set by subscript: `app.config["SECRET_KEY"] = "…"`, `os.environ['API_TOKEN'] = '…'`
_RULE_SUBSCRIPT = _Rule(
    "password-assignment",
    r"\[[ \t]*[\"'](?P<key>[A-Za-z0-9_.\-]{1,64})[\"'][ \t]*\][ \t]*=[ \t]*[\"'](?P<s>[^\"'\r\n]{4,512})[\"']",
    hints=("pass", "pwd", "secret", "token", "key", "cred", "auth"),
    decide=_key_value_decide,
)

# --- assignments: key = value, key: value, --key value, <key>value</key> ----------------------

_KW_ANCHORS = ("pass", "pwd", "secret", "token", "key", "cred", "auth")
_KW = r"(?i:pass|pwd|secret|token|key|cred|auth)"
# An unquoted value: separators ; & , | belong to the value unless they look like
# a delimiter (followed by whitespace, end, another delimiter or a `key=`).
_UNQUOTED = (
    r"(?:[^\s\"'`<>(){}\[\];&,|]"
    r"|[;&,|](?![ \t\r\n]|$|[;&,|]|[A-Za-z_][A-Za-z0-9_.\-]{0,64}[=:])){1,4096}+"
)
_DQ = r'"(?P<dq>(?:[^"\\\r\n]|\\.){1,1024})"'
_SQ = r"'(?P<sq>(?:[^'\\\r\n]|\\.){1,1024})'"


_NAME = re.compile(
    r"^[A-Za-z_][A-Za-z_]*$"  # a digit-free name
    r"|^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$"  # an attribute chain
)


_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|cred|auth", re.I)
_CODE_WORDS = frozenset("await yield lambda not new typeof function async self cls this".split())


def _is_code_value(m: re.Match, value: str, key_start: int, end: int) -> bool:
    """True when an unquoted assigned value is a program identifier, not a secret.

    Only digit-free names qualify (``value``, ``db_password``, ``args.token``):
    random-looking values such as ``a8Fk29dLq0`` or ``hunter2`` stay secrets.
    """
    text = m.string
    spaced_eq = m.group("sep") != ":" and bool(m.group("sp1")) and bool(m.group("sp2"))
    if spaced_eq and not _NAME.match(value) and not _camel_type(value):
        # `N = 16000 // 320`: anything followed by more code on the line
        nl = text.find("\n", end, end + 512)
        rest = text[end : nl if nl != -1 else end + 512].strip()
        return bool(rest) and rest[0] not in "#;"
    if not (_NAME.match(value) or _camel_type(value)):
        return False
    sep = m.group("sep")
    if value in _CODE_WORDS:
        return True
    if m.group("kq"):
        return True  # `"password": password` is a dict literal, not JSON
    follower = text[end : end + 2]
    if follower[:1] == ")" or (follower[:1] == "," and follower[1:2] in ("", " ", "\t", "\r", "\n")):
        return True  # `f(password=password, ...)`, `{"k": v, ...}`
    if sep == ":":
        # `token: AccessToken` (a type annotation)
        return bool(_camel_type(value) and _SECRET_WORD.search(value))
    spaced = bool(m.group("sp1")) and bool(m.group("sp2"))
    if spaced:
        nl = text.find("\n", end, end + 512)
        rest = text[end : nl if nl != -1 else end + 512].strip()
        if rest and rest[0] not in "#;":
            return True  # an expression: `TOKEN = CHAR ^ CTL`
        if "." in value or _SECRET_WORD.search(value):
            return True  # `password = args.password`, `token = new_token`
        if _line_before(text, key_start).strip(" \t") or text[key_start - 1 : key_start] in (" ", "\t"):
            return True  # indented or preceded by code: `    password = value`
    return False


_CODE_REST = re.compile(r"[ \t]*(?:[-+*/%&|^<>=!.,(\[{?]|(?:if|else|and|or|is|in|for|not|then)\b)")


def _assignment_decide(m: re.Match) -> Decision:
    text = m.string
    # the key is the whole run of key characters around the keyword anchor
    key_start = m.start()
    limit = key_start - 128
    while key_start > 0 and key_start > limit and text[key_start - 1] in _KEYCH_SET:
        key_start -= 1
    key = text[key_start : m.end("krest")]
    if _ARN_HEAD.search(text[max(0, key_start - 160) : key_start]):
        return None  # `arn:aws:secretsmanager:us-east-1:…:secret:prod/db`: a resource's name, not a value
    if _PUBLIC_QUALIFIER.search(text[max(0, key_start - 13) : key_start].lower()):
        return None  # `public key: 6E3Oy…` (WireGuard), `host key:`: published to be compared
    if "encryptedData" in text and _under_encrypted_data(text, key_start):
        return None  # a SealedSecret's ciphertext: made to be committed
    if m.group("dq") is not None:
        g = "dq"
    elif m.group("sq") is not None:
        g = "sq"
    else:
        g = "uv"
        value = m.group("uv")
        sep = m.group("sep")
        end = m.end("uv")
        # a value built like a password under a secret's name is one, even with prose or
        # more settings after it on the line (`password: Yr5FU2Gc1co@ and the user ...`)
        strength = _key_strength(key)
        strong_value = strength is not None and (
            (strength != "weak" and _password_like(value, strict=strength == "generic"))
            or _looks_random(value, weak_key=strength == "weak")
        )
        if strong_value and sep != ":" and _IDENTIFIER.match(value) and _CODE_REST.match(text, end):
            strong_value = False  # `token = AccessToken2 if fresh else None`: code, not a value
        if _CODE_PREFIX.match(value) or (not strong_value and _is_code_value(m, value, key_start, end)):
            return None
        if key.startswith("-") and _METAVAR.match(value):
            return None  # usage text: `--private-key=FILE`
        if _dotted_reference(value):
            return None  # `{token:o.default.string}`: a reference in code, not `Biscotto.Hanok763`
        if sep == ":" and not strong_value:
            # YAML / header style: the unquoted value must be the whole rest of the
            # line (or end at a flow-mapping delimiter); otherwise it is prose.
            rest = text[end : end + 256]
            stripped = rest.lstrip(" \t")
            if stripped and stripped[0] not in "\r\n#,}]":
                return None
    kind = _classify(key, m.group(g))
    if kind is None:
        return None
    return kind, m.start(g), m.end(g)


_RULE_ASSIGN = _Rule(
    "password-assignment",
    rf"{_KW}(?P<krest>[A-Za-z0-9_.\-]{{0,64}}+)(?P<kq>[\"']?)"
    r"(?P<sp1>[ \t]*)(?P<sep>=>|:=|=(?!=)|:(?![:/]))(?P<sp2>[ \t]*)"
    rf"(?:{_DQ}|{_SQ}|(?P<uv>{_UNQUOTED})(?![(\[]))",
    _KW_ANCHORS,
    decide=_assignment_decide,
    skip_long_rejects=True,
)

_METAVAR = re.compile(r"^[A-Z][A-Z_\-]*$")


def _flag_decide(m: re.Match) -> Decision:
    for g in ("dq", "sq", "uv"):
        value = m.group(g)
        if value is not None:
            break
    else:  # pragma: no cover - the regex guarantees one group
        return None
    if g == "uv" and (_METAVAR.match(value) or value.isalpha() and value.islower()):
        return None  # argparse metavar `--token TOKEN`, prose `--password option`
    if g == "uv" and value.startswith("-") and not _password_like(value):
        return None  # the next flag (`--token -v`), not a value that starts with a dash
    kind = _classify(m.group("key"), value)
    if kind is None:
        return None
    return kind, m.start(g), m.end(g)


_RULE_FLAG = _Rule(
    "password-assignment",
    rf"--(?<![A-Za-z0-9_\-]--)(?P<key>(?=[A-Za-z0-9])[A-Za-z0-9_\-]{{0,64}}?{_KW}[A-Za-z0-9_\-]{{0,64}}+)[ \t]+"
    rf"(?:{_DQ}|{_SQ}|(?P<uv>(?!--)[^\s\"'`;&|<>()\[\]{{}}]++))",
    decide=_flag_decide,
)


def _xml_decide(m: re.Match) -> Decision:
    """`s` given under the name `name`: an element's text or a `value` attribute."""
    kind = _classify(m.group("name"), m.group("s"))
    if kind is None:
        return None
    return kind, m.start("s"), m.end("s")


_RULE_XML = _Rule(
    "password-assignment",
    rf"<(?P<name>[A-Za-z0-9_.:\-]{{0,64}}?{_KW}[A-Za-z0-9_.\-]{{0,64}}+)>(?P<s>[^<\r\n]{{1,1024}})</(?P=name)>",
    decide=_xml_decide,
    hints=("</",),
)


# `<add key="DbPassword" value="..."/>` (.NET appSettings), `<property name="db.password" value="..."/>`
# (Spring, Ant, Maven): the name and the value are two attributes of one element
_RULE_XML_ATTR = _Rule(
    "password-assignment",
    rf"""\b(?:key|name)[ \t]*=[ \t]*(?P<q>["'])(?P<name>[A-Za-z0-9_.:\-]{{0,64}}?{_KW}[A-Za-z0-9_.:\-]{{0,64}}+)(?P=q)"""
    r"""[ \t]+value[ \t]*=[ \t]*(?P<vq>["'])(?P<s>(?:(?!(?P=vq))[^\r\n]){1,1024})(?P=vq)""",
    decide=_xml_decide,
    hints=("value",),
)


# requests/httpx auth=("user", "secret"), HTTPBasicAuth("user", "secret"), BasicAuth(...)
_RULE_AUTH_TUPLE = _Rule(
    "password-assignment",
    r"(?:auth|Auth)[ \t]*[=(][ \t]*\(?[ \t]*(?P<uq>[\"'])[^\"'\r\n]{0,128}(?P=uq)[ \t]*,[ \t]*(?P<q>[\"'])(?P<s>[^\"'\r\n]{4,512})(?P=q)",
    ("auth",),
    check=_value_check,
)
# define('DB_PASSWORD', 'x'), setenv("API_TOKEN", "x"), config.set("secret", "x")
_RULE_KEY_ARG = _Rule(
    "password-assignment",
    rf"{_KW}(?P<krest>[A-Za-z0-9_.\-]{{0,64}}+)(?P<kq>[\"'])[ \t]*,[ \t]*(?P<q>[\"'])(?P<s>[^\"'\r\n]{{1,1024}})(?P=q)",
    _KW_ANCHORS,
    decide=lambda m: _key_arg_decide(m),
    hints=(",",),
)


def _key_arg_decide(m: re.Match) -> Decision:
    text = m.string
    key_start = m.start()
    while key_start > 0 and m.start() - key_start < 64 and text[key_start - 1] in _KEYCH_SET:
        key_start -= 1
    if key_start == 0 or text[key_start - 1] != m.group("kq"):
        return None  # the key must be a quoted string: define('DB_PASSWORD', '...')
    value = m.group("s")
    if value.isalpha() and value.islower():
        return None  # a pair of words in code: ("password", "incorrect")
    kind = _classify(text[key_start : m.end("krest")], value)
    return None if kind is None else (kind, m.start("s"), m.end("s"))
