"""Command lines that carry a secret: `mysql -pX`, `sshpass -p`, `docker login -p`, `curl -u`,
`echo X | … --password-stdin`, `keytool -storepass`, `set KEY VALUE` of a config tool, SQL
that sets a password.

A flag means a password only after its command (`-p` is a port elsewhere), so each rule is
anchored on the flag and looks for the command earlier on the same command line
(`_cmd_rule`): every flag of one command is found, and `|`, `;` or `&` ends the search.
"""

from __future__ import annotations

import re

from .key_names import _classify, _key_strength, _normalize_key
from .rule import _TOKCH, _cmd_check, _line_before, _not_placeholder, _Rule
from .values import _is_label_like, _is_placeholder, _looks_random, _password_like, _value_check

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from .rule import Decision

# Oracle's `sqlplus user/password@db` (and sqlldr, expdp, impdp, rman: the same connect string)
_RULE_ORACLE_CONNECT = _Rule(
    "password-assignment",
    r"(?:(?i:sqlplus|sqlldr|expdp|impdp|rman|sqlcl)(?:[ \t]+-[A-Za-z]+)*[ \t]+[\"']?|jdbc:oracle:(?:thin|oci):)"
    r"[A-Za-z0-9_$#]{1,64}/(?P<s>[^\s@/\"']{1,128})@",
    check=_not_placeholder,
    hints=("sqlplus", "sqlldr", "expdp", "impdp", "rman", "sqlcl", "jdbc:oracle:"),
)
# SQL that sets a password: CREATE/ALTER USER ... IDENTIFIED BY 'x' (MySQL, Oracle), WITH PASSWORD
_RULE_SQL_IDENTIFIED = _Rule(
    "password-assignment",
    r"(?i:identified[ \t]+(?:with[ \t]+\w+[ \t]+)?by(?:[ \t]+password)?)[ \t]+(?:'(?P<sq>[^'\r\n]{1,256})'|\"(?P<dq>[^\"\r\n]{1,256})\"|(?P<uv>[^\s;'\"]{4,128}))",
    groups=("sq", "dq", "uv"),
    check=_not_placeholder,
    hints=("identified",),
)

# --- a password after its flag, on the command's line ----------------------------------------
_CMD_VALUE = r"""(?:'(?P<sq>[^'\r\n]*)'|"(?P<dq>[^"\r\n]*)"|(?P<uv>[^\s'"]+))"""
_CMD_SPAN = r"[^\r\n|;&]{0,512}?"


_RULE_MYSQL = _Rule(
    "password-assignment",
    rf"(?:mysql|mariadb)[a-z\-]{{0,8}}\b{_CMD_SPAN}[ \t]-p{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
)
_RULE_SSHPASS = _Rule(
    "password-assignment",
    rf"sshpass[ \t]+-p[ \t]*{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
)
_RULE_REDIS = _Rule(
    "password-assignment",
    rf"redis-cli\b{_CMD_SPAN}[ \t]-a[ \t]+{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
)
_LOGIN_CMDS = ("docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras")
_RULE_LOGIN_P = _Rule(
    "password-assignment",
    rf"(?:{'|'.join(_LOGIN_CMDS)})(?:[ \t]+registry)?[ \t]+login\b{_CMD_SPAN}[ \t]-p[ \t]+{_CMD_VALUE}",
    groups=("sq", "dq", "uv"),
    check=_cmd_check,
    lb=_TOKCH,
    hints=("login",),
)
_CURL_CMD = re.compile(r"(?<![A-Za-z0-9_\-])(?:curl|wget)\b")


def _curl_check(m: re.Match, value: str) -> bool:
    # anchored on the flag; the command must be curl/wget earlier on the same line
    line = _line_before(m.string, m.start())
    return _CURL_CMD.search(line) is not None and not _is_placeholder(value)


_RULE_CURL_USER = _Rule(
    "password-assignment",
    r"-(?<=[ \t]-)(?:u|-user|-http-user)[ \t=]*['\"]?(?P<user>[^\s:'\"]*):['\"]?(?P<s>[^\s'\"]+)",
    check=_curl_check,
)

# --- headers, command-line secrets, secrets piped or written to a file ----------------------

_HDR_VALUE = r"""(?:(?P<q>["'])[ \t]*(?P<key>[A-Za-z0-9_.\-]{1,64})[ \t]*:[ \t]*(?P<s>[^"'\r\n]{1,2048}?)[ \t]*(?P=q)"""
_HDR_VALUE += r"""|(?P<key2>[A-Za-z0-9_.\-]{1,64}):[ \t]*(?P<s2>[^\s"']{1,2048}))"""


def _header_decide(m: re.Match) -> Decision:
    key = m.group("key") or m.group("key2")
    g = "s" if m.group("s") is not None else "s2"
    value = m.group(g)
    if _normalize_key(key) in ("authorization", "proxy_authorization"):
        return None  # the Authorization rule keeps the scheme word visible
    if _key_strength(key) is None:
        return None
    v = value.strip()
    if len(v) < 4 or _is_placeholder(v) or _is_label_like(v):
        return None
    return "password-assignment", m.start(g), m.start(g) + len(value.rstrip())


# curl/wget/http -H "X-API-Key: ...", --header 'X-Vault-Token: ...', --header=...
_RULE_HEADER_FLAG = _Rule(
    "password-assignment",
    r"-(?<=[\s\"'=]-)(?:H|-header)(?:[ \t]+|=|(?=[\"']))" + _HDR_VALUE,
    decide=_header_decide,
    hints=("-h",),
)

_VALUE_TAIL = r"""(?:'(?P<sq>[^'\r\n]{1,512})'|"(?P<dq>[^"\r\n]{1,512})"|(?P<uv>[^\s'"`;&|<>()]{1,1024}))"""


def _cmd_rule(command: str, flag: str, *hints: str, kind: str = "password-assignment") -> _Rule:
    """``command ... flag VALUE`` on one command line (no | ; & between them).

    Anchored on the flag, so every flag of one command is found (``-storepass X -keypass Y``);
    the command is looked for earlier on the same command line.
    """
    cmd_pattern = rf"(?<![A-Za-z0-9_\-./])(?:{command})(?![A-Za-z0-9_\-])"  # compiled on first use (re caches it)

    def check(m: re.Match, value: str) -> bool:
        line = _line_before(m.string, m.start())
        segment = re.split(r"[|;&]", line)[-1]
        return re.search(cmd_pattern, segment) is not None and _value_check(m, value)

    return _Rule(kind, rf"[ \t](?:{flag}){_VALUE_TAIL}", groups=("sq", "dq", "uv"), check=check, hints=hints)


def _positional_rule(command: str, *hints: str) -> _Rule:
    """``command args VALUE``: the value is the next word after the command and its arguments."""
    return _Rule(
        "password-assignment",
        rf"(?:{command})[ \t]+{_VALUE_TAIL}",
        groups=("sq", "dq", "uv"),
        check=_value_check,
        lb=_TOKCH | frozenset("/."),
        hints=hints,
    )


_CLI_RULES: tuple[_Rule, ...] = (
    _positional_rule(r"snyk[ \t]+auth", "snyk auth"),
    _positional_rule(r"net[ \t]+use[ \t]+\S+(?:[ \t]+\S+)?[ \t]+/user:\S+", "/user:"),
    _positional_rule(r"ConvertTo-SecureString(?:[ \t]+-String)?", "convertto-securestring"),
    _cmd_rule(r"az[ \t]+login", r"-p[ \t]+|--password[ \t=]+", "az login"),
    _cmd_rule(r"ldap(?:search|modify|add|delete|passwd|whoami|compare|modrdn|exop)", r"-w[ \t]*", "ldap"),
    _cmd_rule(r"doctl", r"-t[ \t]+|--access-token[ \t=]+", "doctl"),
    _cmd_rule(
        r"keytool|jarsigner",
        r"-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass|new)(?::plain)?[ \t]+",
        "keytool ",
        "jarsigner ",
    ),
    _cmd_rule(r"openssl", r"-k[ \t]+", "openssl "),
    _cmd_rule(r"sqlcmd|bcp|ipmitool|osql|isql", r"-P[ \t]*", "sqlcmd ", "bcp ", "ipmitool ", "osql ", "isql "),
    _cmd_rule(r"mongo(?:sh|dump|restore|export|import|stat|top|files)?", r"-p[ \t]+", "mongo"),
    _cmd_rule(r"twine|poetry[ \t]+publish|flit[ \t]+publish", r"-p[ \t]+", "twine ", "publish "),
    _cmd_rule(r"ssh-keygen", r"-[NP][ \t]+", "ssh-keygen "),
    _cmd_rule(r"zip|unzip|7z|7za|7zr|rar|unrar", r"-P[ \t]+|-p(?=[^\s-])", "zip ", "7z ", "7za ", "7zr ", "rar "),
    _cmd_rule(r"gh[ \t]+secret[ \t]+set", r"-b[ \t]*|--body[ \t=]+", "secret set"),
    _cmd_rule(r"kubectl[ \t]+create[ \t]+secret", r"--from-literal[ \t=]+[^=\s]+=", "create secret"),
    _cmd_rule(r"docker|podman|nerdctl|buildah|skopeo|helm|oras|regctl|crane", r"--password[ \t=]+|-p[ \t]+", "login "),
    _positional_rule(r"vault[ \t]+login(?:[ \t]+-[A-Za-z\-]+(?:=\S*)?)*(?![ \t]+(?:-|[A-Za-z_]+=))", "vault login"),
    _positional_rule(r"rabbitmqctl[ \t]+(?:add_user|change_password|authenticate_user)[ \t]+\S+", "rabbitmqctl "),
    _positional_rule(r"net[ \t]+user[ \t]+[^\s/]+(?=[ \t]+[^\s/*])", "net user"),
    _positional_rule(r"htpasswd(?:[ \t]+-[A-Za-z]*b[A-Za-z]*)(?:[ \t]+-\S+)*[ \t]+\S+[ \t]+\S+", "htpasswd "),
    _positional_rule(r"mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+", "mc "),
)
# openssl/pkcs12-style password arguments: -passin pass:VALUE, -passout pass:VALUE
_RULE_PASS_ARG = _Rule(
    "password-assignment",
    r"-(?<=[ \t\"']-)(?:passin|passout|pass|password|passphrase|srcpass|deststorepass|storepass)[ \t=]+pass:"
    + _VALUE_TAIL,
    groups=("sq", "dq", "uv"),
    check=_value_check,
    hints=("pass:",),
)
# smbclient -U user%password, rpcclient -U 'DOM\user%password', --user=user%password
_RULE_SMB_USER = _Rule(
    "password-assignment",
    r"-(?<=[ \t]-)(?:U|-user(?:name)?)(?:[ \t]+|=)?[\"']?[^\s%\"'/]{1,128}%(?P<s>[^\s\"']{1,512})",
    check=_not_placeholder,
    hints=("%",),
)
# `echo VALUE |` / `printf '%s' VALUE |`: a value piped into the next command
_ECHO_VALUE_PIPE = (
    r"(?:echo|printf)(?:[ \t]+-[neE]{1,3})*(?:[ \t]+(?:'%s(?:\\n)?'|\"%s(?:\\n)?\"))?[ \t]+" + _VALUE_TAIL + r"[ \t]*\|"
)
# echo VALUE | docker login --password-stdin (printf, here-strings, any login tool)
_RULE_STDIN_SECRET = _Rule(
    "password-assignment",
    _ECHO_VALUE_PIPE
    + r"[^\r\n|;&]{0,300}?(?:--password-stdin|--token-stdin|--with-token|-password-stdin|--secret-stdin|--stdin)",
    groups=("sq", "dq", "uv"),
    check=_value_check,
    lb=_TOKCH,
    hints=("stdin", "with-token"),
)
_STDIN_TOOLS = (
    r"(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|regctl|gh|glab|vault|kubectl|sshpass|chpasswd|passwd"
    r"|gpg|az|aws|gcloud|doctl|heroku|npm|twine|mysql|psql|ldappasswd)(?![A-Za-z0-9_\-])"
)
# echo VALUE | podman login ... with the --password-stdin flag cut away: a password-like value
_RULE_ECHO_LOGIN = _Rule(
    "password-assignment",
    _ECHO_VALUE_PIPE + r"[ \t]*(?:sudo[ \t]+)?(?:[^\r\n|;&]{0,120}?\blogin\b|" + _STDIN_TOOLS + r")",
    groups=("sq", "dq", "uv"),
    # piped into a login or a tool that reads credentials on stdin (even with its flags cut away)
    check=lambda m, v: _value_check(m, v) and _password_like(v),
    lb=_TOKCH,
    hints=("|",),
)
_RULE_HERESTRING_SECRET = _Rule(
    "password-assignment",
    r"(?:--password-stdin|--token-stdin|--with-token|--stdin)[^\r\n|;&]{0,200}?<<<[ \t]*" + _VALUE_TAIL,
    groups=("sq", "dq", "uv"),
    check=_value_check,
    hints=("<<<",),
)
# `set KEY VALUE` of a config tool: aws configure set aws_secret_access_key V, npm config
# set _authToken V, dotnet user-secrets set "Stripe:SecretKey" V, CONFIG SET requirepass V
_RULE_SET_KEY = _Rule(
    "password-assignment",
    r"set[ \t]+(?:--?[A-Za-z][A-Za-z\-]*[ \t]+)*(?P<kq>[\"']?)(?P<key>[A-Za-z0-9_.:/@\-]{1,128})(?P=kq)[ \t]+"
    + _VALUE_TAIL,
    ("set ", "set\t"),
    decide=lambda m: _set_decide(m),
    lb=_TOKCH,
)


def _set_decide(m: re.Match) -> Decision:
    for g in ("dq", "sq", "uv"):
        value = m.group(g)
        if value is not None:
            break
    else:  # pragma: no cover
        return None
    key = m.group("key")
    if key == "requirepass" or key == "masterauth":
        key = "password"
    if g == "uv" and value.isalpha() and value.islower():
        return None  # prose: `set token expiry ...`
    if _key_strength(key.replace(":", "_").replace("/", "_")) is None:
        return None
    if not _value_check(m, value):
        return None
    kind = _classify(key, value) or ("password-assignment" if _key_strength(key) == "strong" else None)
    return None if kind is None else (kind, m.start(g), m.end(g))


# mosquitto's clients take the password as `-P` (elsewhere a port): only after their name
_RULE_MOSQUITTO_P = _Rule(
    "password-assignment",
    r"mosquitto_(?:pub|sub|rr)\b[^\n]{0,400}?[ \t]-P[ \t]+(?P<q>['\"]?)(?P<s>[^\s'\"]{1,128})(?P=q)",
    ("mosquitto_",),
    check=_not_placeholder,
)
# a file named as a secret: its base name holds the word whole (`~/.vault_pass.txt`, `api_token`,
# `master.key`), not inside another word (`keyboard`, `monkey.txt`, `tokenizer_mode`)
_SECRET_FILE_NAME = (
    r"(?:[^\s;&|/]*/)*+(?=[^\s;&|/]*?(?<![A-Za-z])(?i:pass(?:word)?|secret|token|key|cred(?:ential)?s?|pwd)"
    r"(?:s?(?![A-Za-z])))[^\s;&|/]++"
)
# a secret written to a file named as one: `echo 'X' > ~/.vault_pass.txt`, `printf %s X > token`
_RULE_ECHO_TO_SECRET_FILE = _Rule(
    "password-assignment",
    r"(?:echo(?:[ \t]+-[neE]+)?|printf(?:[ \t]+'%s(?:\\n)?')?)[ \t]+(?P<q>['\"]?)(?P<s>[^\s'\"$`]{6,256})(?P=q)"
    r"[ \t]*>>?[ \t]*" + _SECRET_FILE_NAME,
    ("echo", "printf"),
    check=_not_placeholder,
)
# what printing a key file shows: `$ cat config/master.key` (a command at a line's start or after a
# prompt) and the value on the next line
_RULE_PRINTED_KEY_FILE = _Rule(
    "generic-high-entropy",
    r"(?m:^)[ \t]*(?:[$>#%][ \t]*)?(?:cat|head|less|more|type|Get-Content)[ \t]+"
    + _SECRET_FILE_NAME
    + r"[ \t]*\r?\n[ \t]*(?P<s>[A-Za-z0-9+/=_\-]{16,512})[ \t]*(?:\r?\n|$)",
    hints=("cat ", "head ", "less ", "more ", "type ", "get-content "),
    check=lambda _m, v: _looks_random(v) or bool(re.fullmatch(r"[0-9a-f]{32,128}", v)),
)
