"""Forms only the outbound pass takes (`api.redact_outbound`: what leaves the machine).

A shared file may lose a non-secret, never keep a secret: a user / password pair after a
login word ("grafana login: admin / Gr4f4n4!Adm1n", `logins._login_pairs` with weaker values);
a hex secret stated as a key's value ("the vault unseal key is 3f9a..."), not a commit, hash
or checksum; a passphrase of joined words stated as a key's or password's value ("the wifi
key is sunshine-kitten-42").
"""

from __future__ import annotations

import re
from collections import Counter

from .labels import _replace_regions
from .logins import _login_pairs
from .values import _is_doc_example, _is_placeholder

_SECRET_KEY_WORDS = (
    r"unseal|secret|token|api[\s_-]?key|private[\s_-]?key|master[\s_-]?key|encryption[\s_-]?key|signing[\s_-]?key|"
    r"recovery[\s_-]?key|root[\s_-]?key|key|passphrase|password|schlüssel|clé|clave|chiave|ключ|секрет|鍵|キー|密钥|秘钥|키"
)
_HEX_VALUE_RE = re.compile(
    rf"(?i)\b({_SECRET_KEY_WORDS})\b(?:\s+(?:is|was|are|ist|est|es|è|=|:)|\s*[:=：])\s*[\"'`]?([0-9a-f]{{32,128}})\b"
)
#: Words that make a hex value a hash, not a secret (within the clause before it).
_HASH_WORDS = re.compile(
    r"(?i)\b(commit|sha\d*|hash|checksum|digest|revision|rev|integrity|fingerprint|md5|crc|etag|cache|build|"
    r"object|blob|tree|ref|uuid|guid|id)\b"
)
_PASSPHRASE_RE = re.compile(
    r"(?i)\b(?:(wi-?fi|wlan|wpa2?|network|ssid|router|door|safe|alarm|lock|vault|gpg|ssh|pgp|disk|luks|bitlocker)\s+)?"
    r"(key|password|passphrase|pass\s+phrase|passwort|kennwort|mot\s+de\s+passe|contraseña|пароль|pw|pin)\b"
    r"(?:\s+(?:is|was|ist|est|es|è|=|:)|\s*[:=：])\s*[\"'`]?([a-z]{3,}(?:[-_.][a-z0-9]{2,}){2,})[\"'`]?(?![\w/-])"
)


def _outbound_forms(text: str, counts: Counter) -> str:
    """Replace the outbound-only forms above (see their comment); the value alone is replaced."""
    regions = _login_pairs(text, outbound=True)
    for m in _HEX_VALUE_RE.finditer(text):
        clause = text[max(0, m.start() - 40) : m.start(2)]
        if _HASH_WORDS.search(clause):
            continue
        regions.append((m.start(2), m.end(2), "generic-high-entropy"))
    for m in _PASSPHRASE_RE.finditer(text):
        thing, word, value = m.group(1), m.group(2).lower(), m.group(3)
        if _is_placeholder(value) or _is_doc_example(value):
            continue
        if word == "key" and not thing:
            continue  # "the key is user-id-column", "Cache restored from key: Linux-node-...": a key of a named lock only
        if re.search(r"[0-9a-f]{12,}", value, re.I) or _HASH_WORDS.search(text[max(0, m.start() - 40) : m.start(3)]):
            continue  # a hash inside (a cache key) or beside a hash word
        if "." in value and not any(c.isdigit() for c in value) and "-" not in value:
            continue  # a dotted name (logging.getLogger.name)
        regions.append((m.start(3), m.end(3), "password"))
    return _replace_regions(text, regions, counts)
