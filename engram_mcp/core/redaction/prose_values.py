"""Whether the value a key name leads to in a sentence is a secret (`_prose_value_kind`).

A sentence puts words of all kinds where an assignment puts its value: "the password is
required", "the token was rotated", "the key is user_42". What is kept is what reads as a word
of the sentence, a name, a version, a fingerprint or a setting; what is taken depends on the
name (a password's, a secret's, a key's, a PIN's) and on the pass (the outbound one takes
weaker values).
"""

from __future__ import annotations

import re

from .passwords import (
    _DOTTED_NAME,
    _EMAIL,
    _WORDY_SUFFIX,
    _built_like_password,
    _dotted_reference,
    _named_parts,
    _words_and_number,
)
from .values import (
    _DIGIT,
    _IDENTIFIER,
    _PATH,
    _camel_type,
    _is_label_like,
    _is_placeholder,
    _looks_random,
    _password_like,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Optional

#: A version (`1.2.3-rc1`, `v2_1`): no value of a secret.
_VERSION = re.compile(r"v?[0-9]+(?:[._-][0-9A-Za-z]+)+")


# A word of prose a value slot often holds: "the password is required", "the token was rotated".
_PROSE_WORDS = frozenset(
    """
    a an the this that it its in on at of for to from by with via not no yes also only just same
    different new old another other one two both empty blank missing unset wrong invalid valid correct
    incorrect required optional needed necessary mandatory secure insecure safe unsafe weak strong long
    short too very still being kept stored saved shared hidden secret private public known unknown
    available unavailable expired rotated revoked changed reset set sent encrypted hashed managed
    generated random unique static dynamic temporary permanent correct stale fresh ok okay fine
    different present absent sufficient insufficient identical similar separate personal individual
    probably possibly usually always never often only simply actually really likely unlikely exactly
    already mostly rarely normally typically generally
    here there where what which who how when why please see check ask use used
    falsch richtig ungültig abgelaufen erforderlich geändert gespeichert geheim leer neu alt
    faux incorrect invalide requis obligatoire expiré changé vide nouveau
    incorrecta incorrecto inválida inválido obligatoria requerida caducada vacía nueva
    errata sbagliata obbligatoria scaduta cambiata vuota nuova
    incorreta errada obrigatória expirada alterada vazia nova
    onjuist verkeerd verplicht verlopen gewijzigd leeg nieuw
    nieprawidłowe błędne wymagane wygasło zmienione puste nowe
    greșit greșită gresit gresita incorect incorectă yanlış hatalı yanlis hatali sai salah mali
    istekla isteklo istekao istekla
    verkeerd fout forkert feil fel väärin virheellinen rossz hibás špatně chybné špatné
    """.split()
)


def _ordinary_word(value: str) -> bool:
    """A letters-only value that reads as a word of the sentence, not as a password
    (`case-sensitive`: every part of it one)."""
    low = value.lower()
    if low in _PROSE_WORDS or _WORDY_SUFFIX.search(low):
        return True
    parts = [p for p in re.split(r"[-_]", low) if p]
    return len(parts) > 1 and all(p in _PROSE_WORDS or p in _PROSE_VALUE_WORDS for p in parts)


#: Letters-only words that stand where a password's value would ("the password is plaintext"),
#: beyond `_PROSE_WORDS` and the participles: the local pass takes a letters-only value only
#: when it is none of these.
_PROSE_VALUE_WORDS = frozenset(
    """
    plaintext cleartext therefore whatever whichever wherever whenever however whoever nowhere
    somewhere anywhere everywhere elsewhere
    irrelevant meaningless worthless pointless useless harmless obvious trivial guessable visible
    readable writable printable reusable shareable hardcoded hardwired embedded nothing something
    anything everything nobody somebody anybody everybody whoever sensitive insensitive case
    lowercase uppercase alphanumeric numeric correct incorrect protected unprotected confidential
    """.split()
)
#: A letters-only value the local pass takes after a password's name and a link, at least this long.
LETTERS_PASSWORD_MIN_CHARS = 8
#: Words of a quoted passphrase ("velvet otter staircase lantern") the local pass takes, at least.
QUOTED_PASSPHRASE_MIN_WORDS = 3


#: What follows a letters-only password: the clause ends, or a word that starts another
#: ("pw is tacotuesday — same as last time", "the password is bluemoon until Friday"); a word
#: that goes on with the sentence ("is wherever my secrets live") makes the value a word of it.
_CLAUSE_END = re.compile(
    r"[ \t]*(?:$|[\r\n.,;:!?)(\]\[\"'`—–]|-(?:[ \t]|$)|(?:until|till|for|since|and|but|so|which|now|today|tomorrow|on)\b)",
    re.IGNORECASE,
)


def _letters_password(value: str, *, quoted: bool, closed: bool) -> bool:
    """A letters-only value in a password's place that is no word of the sentence: one long word
    that ends its clause (`closed`: `tacotuesday`, `purplemonkeydishwasher`), or a quoted one or
    a quoted passphrase of several words."""
    if not (quoted or closed):
        return False
    words = value.split()
    if len(words) > 1:
        return quoted and len(words) >= QUOTED_PASSPHRASE_MIN_WORDS and not any(_ordinary_word(w) for w in words)
    low = value.lower()
    if len(value) < (6 if quoted else LETTERS_PASSWORD_MIN_CHARS) or low in _PROSE_VALUE_WORDS:
        return False
    joined = [p for p in re.split(r"[-_.]", low) if p]
    if quoted and len(joined) >= QUOTED_PASSPHRASE_MIN_WORDS:  # "river-thimble-walrus-orbit-saffron"
        return not all(p in _PROSE_WORDS or p in _PROSE_VALUE_WORDS for p in joined)
    return not _ordinary_word(value) and not _named_parts(value)


#: `SHA256:RzVVeY1Jbu…`, `MD5:3f:9a:…`: a key's fingerprint, which is published to be compared.
_FINGERPRINT = re.compile(r"(?i)(?:sha(?:1|256|384|512)|md5):")


#: A YAML tag where a value would be (`!vault`, `!Ref`): the value follows, encrypted or looked up.
_YAML_TAG = re.compile(r"![A-Za-z][A-Za-z0-9_]*")
#: Settings in a value's place (`validate:"required,min=12"`, a Go struct tag): no secret.
_SETTINGS = re.compile(r"(?:^|,)[A-Za-z_][A-Za-z0-9_]*=[^,]*,|,[A-Za-z_][A-Za-z0-9_]*=")
#: A count stated as a setting (`prompt_tokens=1284`), named like a secret's key but no value of one.
_COUNTER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[0-9][0-9.,]*")
#: A PIN's digits: "the door PIN ... is 5093" (a bare number is taken after a PIN's name only).
PIN_DIGITS_MIN = 4
PIN_DIGITS_MAX = 12


def _prose_value_kind(
    group: str,
    value: str,
    *,
    linked: bool,
    outbound: bool,
    quoted: bool = False,
    closed: bool = False,
    translated: bool = False,
) -> Optional[str]:
    """The kind of secret `value` is after a key name of `group` (pw, sec, key) in prose, or None."""
    v = value
    if len(v) < 4 or _is_placeholder(v) or _PATH.match(v) or "://" in v or _is_label_like(v):
        return None
    if _EMAIL.fullmatch(v) or _VERSION.fullmatch(v) or _FINGERPRINT.match(v):
        return None
    if _YAML_TAG.fullmatch(v) or _COUNTER.fullmatch(v) or _SETTINGS.search(v):
        return None  # `db_password: !vault |` (the ciphertext follows), `Token usage: prompt_tokens=1284`
    if group == "pin":  # "the door PIN for the server room is 5093": four digits are the whole secret
        return "password" if linked and _pin_or_password(v) else None
    kind = "password" if group == "pw" else "generic-high-entropy"
    if _DOTTED_NAME.fullmatch(v):  # `logging.getLogger` is a name; `hvs.CAESIJ1kZ2x...`, `nebula.ember117` are not
        return None if _dotted_reference(v) else kind
    if _looks_random(v, weak_key=group == "key"):  # `the cache key is <sha>`: a digest, in either pass
        return kind
    has_digit = any(c.isdigit() for c in v)  # `گلسرخ۱۴۰۲`: digits of any script
    has_alpha = any(c.isalpha() for c in v)  # `СеверныйВетер77`: a password in any alphabet
    if group == "key":
        # `the key is user_42` names a value; a value built like a password after a link is one
        # (`la clave del admin es Xk9#pL2m`: clave, chave, chiave, klucz, ключ are passwords too),
        # but an identifier (`MyClass2Name`) is not
        if (
            linked
            and _password_like(v)
            and not _named_parts(v)
            and (not _IDENTIFIER.match(v) or _capital_and_number(v))
        ):
            return kind
        return None
    if group == "sec":
        if _password_like(v, strict=not outbound) and not _named_parts(v):
            return kind
        return kind if outbound and has_digit and has_alpha and len(v) >= 12 and not _named_parts(v) else None
    # a password
    if not linked:
        if v.isdigit():  # "银行卡密码 620814": CJK puts no link between them
            return kind if len(v) >= 6 else None
        return kind if _password_like(v, strict=not outbound) and not _named_parts(v) else None
    if v.isdigit():
        return kind if len(v) >= (4 if outbound else 6) else None
    if has_digit and has_alpha:
        return kind if len(v) >= 6 and (not _named_parts(v) or _words_and_number(v)) else None
    if not has_alpha:
        return kind if outbound and len(v) >= 6 else None
    if not (v.isascii() or quoted):
        return None  # letters of another script and no digit: a word of the sentence ("اشتباه", wrong)
    if not outbound:
        # `the password is incorrect`: a word of the sentence; `pw is tacotuesday`: a password
        # (read so in English only: a long word of another language is as often an adjective)
        return kind if not translated and _letters_password(v, quoted=quoted, closed=closed) else None
    if translated and not (closed or quoted):
        return None  # "Salasanan on oltava …" (must be): another language's word that goes on with its sentence
    return kind if len(v) >= 6 and not _ordinary_word(v) and v.lower() not in _PROSE_VALUE_WORDS else None


def _capital_and_number(value: str) -> bool:
    """`Merengue2020`, `Simit_2024`: a capitalised word and a number, a password's shape, where
    `MyClass2Name` (a camel-case type) and `user_42` are names."""
    return value[:1].isupper() and _DIGIT.search(value) is not None and not _camel_type(value)


def _pin_or_password(token: str) -> bool:
    """After a PIN's or an access code's name: its digits, or a code built like a password."""
    digits = token.isdigit() and PIN_DIGITS_MIN <= len(token) <= PIN_DIGITS_MAX
    code = re.fullmatch(r"[A-Z0-9]{2,6}(?:-[A-Z0-9]{2,8}){1,3}|(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{4,8}", token)
    code_digits = sum(1 for c in token if c.isdigit()) >= PIN_DIGITS_MIN  # `GRA-014` is a crew id
    return digits or _built_like_password(token) or (code is not None and code_digits)
