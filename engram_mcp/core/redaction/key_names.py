"""Key names: how strongly a name says "secret", and ``key = value`` judged whole.

Every rule that reads a key and its value (assignments, flags, XML, headers, `set KEY VALUE`,
SQL columns, dict keys in `redact_obj`) asks the same two questions here: how strong is the
key's name (`_key_strength`: `password` is strong, `cache_key` names no secret, `password_hint`
is text about one), and is the value a secret under that name (`_classify`). Also the places
where a name says nothing secret: a public key, an ARN, a SealedSecret's ciphertext, a word
after the name that makes the phrase about something else (`password policy`).
"""

from __future__ import annotations

import re

from engram_mcp.core import textview

from .values import _PATH, _is_label_like, _is_placeholder, _looks_random, _password_like

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Optional


# A key's name, normalised (`dbPassword`, `DB-PASSWORD` -> `db_password`), and its words.
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_STRONG_KEY = re.compile(
    r"(?:passw(?:or)?d|passphrase|secret|token|"
    r"(?:^|_)(?:pwd|pass|pw)|"
    r"(?:^|_)(?:api|access|secret|private|auth|encryption|signing|master|client|app|"
    r"account|service|license|sas|session|webhook|subscription|functions|admin|deploy|install|integration|"
    r"ingest|write|master)_?key|apikey)$"
)
#: A version or stage suffix (`_v2`, `_old`): `_strip_key_suffix` removes the run of them that ends the name.
_KEY_SUFFIX = re.compile(r"(?:_?v?[0-9]++|_(?:old|new|prev|previous|next|current|bak|backup|prod|dev|test|staging))++")
_GENERIC_EXCLUDED_TAIL = frozenset(
    """
    id ids name names file files path paths dir url uri type types count len length
    size limit max min ttl expiry expires expiration timeout header field env var
    prefix suffix format version policy usage budget index idx column col table
    enabled enable disabled required ref refs arn location source store hash hashed digest
    """.split()
)
_GENERIC_EXCLUDED_ANY = frozenset(
    "public pub cache sort primary foreign partition lookup hotkey idempotency shortcut keyboard keycode keymap".split()
)
#: Key names whose value is published or names another object, whatever words they hold: a
#: CAPTCHA's site key (in every page), `existingSecret` / `secretName` / `secretKeyRef` (a
#: Kubernetes Secret's name; the value lives in it).
_NAMES_NO_SECRET = re.compile(r"(?:^|_)(?:existing_secret|secret_name|secret_ref|secret_key_ref|site_?key)$")


def _normalize_key(key: str) -> str:
    return _NON_ALNUM.sub("_", _CAMEL.sub("_", key).lower()).strip("_")


def _strip_key_suffix(norm: str) -> str:
    """`norm` less the leftmost run of `_KEY_SUFFIX` that ends it (at its end or before a final newline).

    What ``re.sub(_KEY_SUFFIX.pattern + "$", "", norm)`` returns, in linear time: that search began a
    run at every position of a long one only to fail at its end (O(n^2): 6.8 s for a 20,000-character
    key). A start inside a run that failed fails too (its first suffix ends where one of the run's ends
    and the rest is the same, or it matches nothing), so the next start tried is where the run stopped.
    """
    i, n = 0, len(norm)
    while i < n:
        m = _KEY_SUFFIX.match(norm, i)
        if m is None:
            i += 1
            continue
        end = m.end()
        if end == n or (end == n - 1 and norm[end] == "\n"):
            return norm[:i] + norm[end:]
        i = end
    return norm


_KEY_CACHE: dict = {}


def _key_strength(key: str) -> Optional[str]:
    """Return 'strong', 'generic', 'weak', 'about' (a name for text about a secret: `password_hint`)
    or None for an assignment key."""
    try:
        return _KEY_CACHE[key]
    except KeyError:
        pass
    result = _key_strength_uncached(key)
    if len(_KEY_CACHE) >= 4096:
        _KEY_CACHE.clear()
    _KEY_CACHE[key] = result
    return result


#: The last word of a key that names the interface's words about a secret (`password_hint = "At
#: least 12 characters"`, `token_label`): what follows is text for people.
_UI_TEXT_WORDS = frozenset(
    "label labels description message messages text title placeholder help tooltip caption".split()
)


#: A secret's name in English, as a value: the interface's word for it (`"label": "Password"`).
_SECRET_NAMES = frozenset(("password", "passwords", "passphrase", "secret", "token", "api key", "pin"))


def _key_strength_uncached(key: str) -> Optional[str]:
    norm = _normalize_key(key)
    if not norm:
        return None
    comps = [c for c in norm.split("_") if c]
    if "public" in comps or "pub" in comps or "publishable" in comps:
        return None  # publicKeyToken, public_key, pub_key: not secrets
    if len(comps) > 1 and (comps[-1] in _ABOUT_WORDS or comps[-1] in _UI_TEXT_WORDS):
        return "about"  # `password_hint`, `api_key_label`: text about the secret, unless built like one
    if _NAMES_NO_SECRET.search(norm):
        return None
    # `password2`, `API_KEY_V2`, `DB_PASSWORD_OLD` name the same kind of value
    if _STRONG_KEY.search(_strip_key_suffix(norm) or norm):
        return "strong"
    if not comps or comps[-1] in _GENERIC_EXCLUDED_TAIL:
        return None
    if any(c in _GENERIC_EXCLUDED_ANY for c in comps):
        return None
    strong_word = False
    weak_word = False
    for c in comps:
        if any(w in c for w in ("secret", "token", "passw", "credential", "apikey", "privkey")):
            strong_word = True
        elif c in ("creds", "auth", "pwd", "pass", "pw", "sk") or c.endswith("key") or c == "keys":
            weak_word = True
    if strong_word:
        return "generic"
    if weak_word:
        return "weak"
    return None


#: A key naming a password or a PIN, whose short all-digit value is still secret.
_PASSWORDISH = re.compile(r"pass|pwd|pin|phrase")


#: A password hash in crypt(3) form: bcrypt, argon2, scrypt, sha-crypt, yescrypt.
_CRYPT_HASH = re.compile(r"\$(?:2[abxy]?|argon2(?:id|i|d)|scrypt|[156y]|pbkdf2[\w-]*)\$")
#: A value written only in CJK scripts and their punctuation: a phrase, not a password.
_CJK_PHRASE = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef\s]+")


def _classify(key: str, value: str, *, min_len: int = 4) -> Optional[str]:
    """Kind for ``key = value`` or None when it is not a secret."""
    strength = _key_strength(key)
    if strength is None:
        return None
    v = value.strip()
    if len(v) < min_len or _is_placeholder(v) or _PATH.match(v) or _is_label_like(v):
        return None
    if v.lower() in _SECRET_NAMES or textview.names_a_key(v):
        return None  # `"login.password": "Mot de passe"`: a translation of the key's name
    if _CJK_PHRASE.fullmatch(v):
        return None  # `パスワード：別途お送りします` ("sent separately"): a phrase in the value's place
    if _CRYPT_HASH.match(v):
        return None  # `$2b$12$…`, `$argon2id$…`: a password's hash, what a store keeps instead of it
    if strength == "about":  # `password_hint = "At least 12 characters"`; not `api_key_label = <random>`
        return "password-assignment" if " " not in v and (_password_like(v) or _looks_random(v)) else None
    if _is_placeholder(v.rstrip(":.,;")):
        return None  # `token: str:` in a docstring
    if v.isdigit() and len(v) < 8 and not _PASSWORDISH.search(_normalize_key(key)):
        return None  # `token=2936` is a token id, `max_key=100` a number; PINs stay secret
    if strength == "strong":
        return "password-assignment"
    if _looks_random(v, weak_key=(strength == "weak")):
        return "generic-high-entropy"
    if strength == "generic" and _password_like(v, strict=True) and not _is_label_like(v):
        return "password-assignment"
    return None


#: Inside an ARN (`arn:aws:secretsmanager:us-east-1:<account>:secret:prod/db`): names a resource.
_ARN_HEAD = re.compile(r"(?<![\w:/.\-])arn:[a-z\-]{2,20}:[^\s\"'`]*$")


def _under_encrypted_data(text: str, pos: int) -> bool:
    """Whether the YAML key at `pos` sits under an `encryptedData:` mapping (a Bitnami
    SealedSecret: its values are ciphertext only the cluster's controller can open)."""
    line_start = text.rfind("\n", 0, pos) + 1
    indent = len(text[line_start:pos]) - len(text[line_start:pos].lstrip(" "))
    end = line_start - 1
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        stripped = line.lstrip(" ")
        if stripped and len(line) - len(stripped) < indent:
            return stripped.rstrip() == "encryptedData:"
        end = start - 1
    return False


#: The word before `key` that makes it published: `public key`, `pubkey`, `host key`.
_PUBLIC_QUALIFIER = re.compile(r"(?<![a-z])(?:public|pub|publishable|host)[ _-]?$")


# A word after a password's name that makes the phrase about something else than its value:
# "the password hint is bluefish", "password policy: ...", "the password manager is 1Password".
_ABOUT_WORDS = frozenset(
    """
    hint hints policy policies manager managers field fields prompt prompts rule rules requirement
    requirements length strength reset resets file files store hash hashes hashing format expiry
    change changes rotation complexity history dialog screen page form protected protection
    pad pads reader readers entry
    """.split()
)


#: The word right after a name (what `_ABOUT_WORDS` is checked against).
_NEXT_WORD = re.compile(r"[ \t_-]*([A-Za-z]+)")
