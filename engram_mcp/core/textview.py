"""Normalised views of untrusted text, mapped back to the original offsets.

Why: ASCII rules (secret detectors, the context fence) are blind to text that only *looks*
like what they match: Cyrillic ``а`` in ``pаssword``, a full-width colon ``：``, a soft
hyphen or zero-width space inside a key name, a no-break space, ``&lt;`` for ``<``, a key
name in another language (``Passwort``, ``пароль``, ``パスワード``), or a value split into
string literals (``"ghp_ab" "cd"``), shell line continuations or a YAML folded scalar.

:func:`build_view` returns a :class:`View`: the text with all of that undone (NFKC, format
characters removed, look-alike letters folded to ASCII inside words that are otherwise
Latin, look-alike punctuation folded, foreign key names replaced by their English name,
split literals joined), plus :meth:`View.span`, which maps a span of the view back to the
span of original text it came from. Callers detect on the view and edit the original.

Standard library only, and nothing is built unless the text needs it: hooks import this.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right, insort
from collections.abc import Iterable

__all__ = ["View", "build_view", "edits", "fold", "needs_view", "view_from_edits", "windows"]

# Look-alike letters, folded to ASCII only inside a word that has ASCII letters or digits or
# is made only of look-alikes (``рaypal``, ``АКІА``): an all-Cyrillic word is Russian, not
# an attack, and must stay readable for the foreign key-name table below.
_LETTERS = {
    # Cyrillic
    "а": "a",
    "в": "b",
    "е": "e",
    "ё": "e",
    "һ": "h",
    "і": "i",
    "ї": "i",
    "ј": "j",
    "к": "k",
    "м": "m",
    "н": "h",
    "о": "o",
    "р": "p",
    "с": "c",
    "т": "t",
    "у": "y",
    "х": "x",
    "ѕ": "s",
    "ԁ": "d",
    "ԛ": "q",
    "ԝ": "w",
    "ӏ": "l",
    "ɡ": "g",
    "ı": "i",
    "ɑ": "a",
    "ο": "o",
    "α": "a",
    "ρ": "p",
    "ν": "v",
    "υ": "u",
    "ι": "i",
    "κ": "k",
    "τ": "t",
    "ε": "e",
    "χ": "x",
    "ѵ": "v",
    "ԍ": "g",
    "ƅ": "b",
    "А": "A",
    "В": "B",
    "Е": "E",
    "Ё": "E",
    "К": "K",
    "М": "M",
    "Н": "H",
    "О": "O",
    "Р": "P",
    "С": "C",
    "Т": "T",
    "Х": "X",
    "У": "Y",
    "Ѕ": "S",
    "І": "I",
    "Ј": "J",
    "Ԛ": "Q",
    "Ԝ": "W",
    "Һ": "H",
    "Ӏ": "I",
    # Greek capitals
    "Α": "A",
    "Β": "B",
    "Ε": "E",
    "Ζ": "Z",
    "Η": "H",
    "Ι": "I",
    "Κ": "K",
    "Μ": "M",
    "Ν": "N",
    "Ο": "O",
    "Ρ": "P",
    "Τ": "T",
    "Υ": "Y",
    "Χ": "X",
}
# Look-alike punctuation (what NFKC leaves alone), always folded.
_PUNCT = {
    "\u2039": "<",
    "\u203a": ">",
    "\u2329": "<",
    "\u232a": ">",
    "\u3008": "<",
    "\u3009": ">",
    "\u27e8": "<",
    "\u27e9": ">",
    "\u02c2": "<",
    "\u02c3": ">",
    "\u1438": "<",
    "\u1433": ">",
    "\u276e": "<",
    "\u276f": ">",
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2212": "-",
    "\u2043": "-",
    "\ua789": ":",
    "\u2236": ":",
    "\u02d0": ":",
    "\u0589": ":",
    "\u2215": "/",
    "\u2044": "/",
    "\u29f8": "/",
    "\u2024": ".",
    "\uff0e": ".",
    "\u3000": " ",
}
# Key names in other languages, replaced by the English name the ASCII rules know.
_FOREIGN_KEYS = {
    "password": (
        "passwörter",
        "passworts",
        "kennworts",
        "mots de passe",
        "contraseñas",
        "clave de acceso",
        "parola d'ordine",
        "parola chiave",
        "senhas",
        "wachtwoorden",
        "hasła",
        "hasłem",
        "haśle",
        "пароле",
        "паролю",
        "пароли",
        "паролей",
        "パスコード",
        "패스워드",
        "passwort",
        "kennwort",
        "mot de passe",
        "mot_de_passe",
        "motdepasse",
        "mdp",
        "contraseña",
        "contrasena",
        "senha",
        "wachtwoord",
        "hasło",
        "haslo",
        "lösenord",
        "losenord",
        "salasana",
        "пароль",
        "пароля",
        "паролем",
        "パスワード",
        "暗証番号",
        "合言葉",
        "密码",
        "密碼",
        "口令",
        "비밀번호",
        "암호",
        "비번",
        "パス",
        "पासवर्ड",
        "कूटशब्द",
        "كلمة المرور",
        "كلمة السر",
        "كلمه المرور",
        "رمز المرور",
        "رمز عبور",
        "הסיסמה",
        "הסיסמא",
        "סיסמה",
        "סיסמא",
        "şifresi",
        "şifre",
        "sifresi",
        "sifre",
        "parolası",
        "parola",
        "jelszó",
        "jelszava",
        "heslo",
        "hesla",
        "adgangskoden",
        "adgangskode",
        "kodeordet",
        "kodeord",
        "passordet",
        "passord",
        "κωδικός πρόσβασης",
        "συνθηματικό",
        "รหัสผ่าน",
        "mật khẩu",
        "kata sandi",
        "palavra-passe",
        "palavra passe",
        "phrase de passe",
        "frase de contraseña",
        "lösenordet",
        "lösen",
        "ww",
        "κωδικός",
        "κωδικό",
        "κωδικού",
        "şifresini",
        "şifreyi",
        "şifrem",
        "пасс",
        "pass-ul",
        "parolă",
        "parola de",
        "sandi",
        "nywila",
        "nenosiri",
        "الباسورد",
        "باسورد",
        "پسورد",
        "گذرواژه",
        "পাসওয়ার্ড",
        "pass mới",
        "mật mã",
        "паролата",
        "парола",
        "lozinka",
        "lozinku",
        "lozinke",
        "лозинка",
        "лозинку",
        "шифра",
        "шифру",
        "پاس ورڈ",
        "پاسورڈ",
        "کلمہ عبور",
        "கடவுச்சொல்",
        "கடவுச்சொல்லை",
        "kata sandinya",
        "kata laluan",
        "katalaluan",
        "salasanan",
    ),
    # access codes and PINs, read as `PIN` (4 digits are a whole secret after one)
    "PIN": (
        "pin-kode",
        "pin-koden",
        "pin-koodi",
        "pin-kód",
        "pin-kódja",
        "pin-kod",
        "pin-code",
        "pin-nummer",
        "codul pin",
        "código pin",
        "code pin",
        "पिन",
        "পিন",
        "الرقم السري",
        "رمز pin",
        "zugangscode",
        "türcode",
        "digicode",
        "code d'accès",
        "codice di sblocco",
        "código de acceso",
        "código de desbloqueio",
        "kod do drzwi",
        "код от домофона",
        "код домофона",
        "解锁码",
        "开锁码",
        "门锁密码",
        "門鎖密碼",
        "รหัส",
    ),
    "token": ("токена", "токеном", "токен", "jeton", "トークン", "令牌", "토큰", "توکن", "توكن"),
    "secret": (
        "секрета",
        "секрет",
        "geheimnis",
        "segreto",
        "secreto",
        "segredo",
        "sekret",
        "シークレット",
        "秘密",
        "비밀",
    ),
    "credentials": (
        "zugangsdaten",
        "anmeldedaten",
        "identifiants",
        "credenciales",
        "credenziali",
        "credenciais",
        "inloggegevens",
        "poświadczenia",
        "учётные данные",
        "учетные данные",
        "認証情報",
        "凭据",
        "凭证",
        "憑證",
        "자격 증명",
    ),
    "private_key": ("秘密鍵", "私钥", "закрытый ключ", "приватный ключ", "privater schlüssel", "clé privée"),
    "secret_key": (
        "密钥",
        "密鑰",
        "秘钥",
        "секретный ключ",
        "geheimer schlüssel",
        "geheime sleutel",
        "clé secrète",
        "clave secreta",
        "chiave segreta",
        "chave secreta",
        "tajny klucz",
        "klucz tajny",
        "シークレットキー",
        "비밀 키",
    ),
    "access_key": ("アクセスキー", "ключ доступа", "zugangsschlüssel", "clé d'accès"),
    "api_key": (
        "api 키",
        "api키",
        "apiキー",
        "api-ключ",
        "ключ api",
        "api-schlüssel",
        "clé api",
        "clé d'api",
        "api密钥",
    ),
    "key": (
        "ключа",
        "ключом",
        "ключ",
        "schlüssel",
        "clé",
        "clave",
        "chave",
        "chiave",
        "sleutel",
        "klucz",
        "キー",
        "鍵",
        "키",
    ),
}
_FOREIGN_INDEX = {w: en for en, words in _FOREIGN_KEYS.items() for w in words}
#: Names that close a compound (`Datenbankpasswort`, `WLAN-Kennwort`, `adminwachtwoord`): found at
#: the end of a word too, and read as `<word> password`.
_COMPOUND_TAILS = frozenset(
    {"passwort", "kennwort", "wachtwoord", "passord", "salasana", "adgangskode", "kodeord", "heslo"}
)
# Foreign words made of ASCII letters only: the ASCII text is searched for them too.
_FOREIGN_ASCII = tuple(sorted({w for w in _FOREIGN_INDEX if w.isascii()}))

# A value split into adjacent string literals ("ab" "cd", 'ab' + 'cd', "ab" . "cd", across
# lines), a shell line continuation in the middle of a word, a continuation after a space.
# (candidates start at the quote, which a regex finds fast; the token characters on both
# sides are checked in Python: a value cut in two, not "Hello, " + "world")
# (the blanks around an optional `+`/`.` split one way only: `[ \t]*[+.]?[ \t]*` split a run of
# tabs after a quote every way, O(n^2): 12 s on 19,000 characters)
_GLUE = re.compile(
    r"""(?P<q>["'])(?:[ \t]*(?:[+.\\][ \t]*)?\r?\n[ \t]*(?:[+.][ \t]*)?|[ \t]*[+.\\][ \t]*|[ \t]+)(?P=q)"""
    r"|\\\r?\n[ \t]*"
)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
_YAML_HINT = re.compile(r":[ \t]*[>|][-+0-9]{0,2}[ \t]*\r?\n")
# A YAML block scalar header (`key: >-`), whose lines are joined into one value.
# (only under a key that names a secret: joining a script's lines would only cost time)
_YAML_BLOCK = re.compile(
    r"(?m)^(?P<ind>[ \t]*)(?:- )?[^\s#:][^:\r\n]{0,80}:[ \t]*(?P<hdr>[>|][-+0-9]{0,2}[ \t]*)(?=\r?\n)"
)
_SECRET_KEY_WORD = re.compile(r"pass|pwd|secret|token|key|cred|auth|cert", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")

_CHAR_CACHE: dict[str, str] = {}


def _nfkc_char(ch: str) -> str:
    """One character with format characters removed, NFKC applied and punctuation folded."""
    try:
        return _CHAR_CACHE[ch]
    except KeyError:
        pass
    if unicodedata.category(ch) == "Cf" or ch in "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0":
        out = ""
    else:
        out = "".join(_PUNCT.get(c, c) for c in unicodedata.normalize("NFKC", ch))
        out = "".join(" " if c != " " and c.isspace() and c not in "\r\n\t" else c for c in out)
    if len(_CHAR_CACHE) < 8192:
        _CHAR_CACHE[ch] = out
    return out


class View:
    """Normalised text plus the map from its characters back to the original text.

    ``pieces`` are ``(view_start, orig_start, orig_end, literal)``: a literal piece is a
    copied run (view character i maps to ``orig_start + i - view_start``); a replaced piece
    maps every one of its view characters to the whole ``[orig_start, orig_end)``.
    """

    __slots__ = ("text", "_starts", "_pieces")

    def __init__(self, text: str, pieces: list[tuple[int, int, int, bool]]) -> None:
        self.text = text
        self._pieces = pieces
        self._starts = [p[0] for p in pieces]

    def _orig(self, i: int) -> tuple[int, int]:
        k = bisect_right(self._starts, i) - 1
        vs, os_, oe, literal = self._pieces[k]
        if literal:
            return os_ + (i - vs), os_ + (i - vs) + 1
        return os_, oe

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span that view characters ``[start, end)`` came from."""
        if end <= start:
            o = self._orig(min(start, len(self.text) - 1))[0] if self.text else 0
            return o, o
        return self._orig(start)[0], self._orig(end - 1)[1]


_FOREIGN_CACHE: dict[frozenset, re.Pattern] = {}


def _foreign_regex(text: str) -> re.Pattern | None:
    """A regex for the foreign key names present in ``text`` (substring test first: a regex
    of sixty case-insensitive Unicode words is slow on long text)."""
    low = text.lower()
    chars = set(low) if not low.isascii() else None
    present = frozenset(w for w in _FOREIGN_INDEX if (chars is None or w[0] in chars or w.isascii()) and w in low)
    if not present:
        return None
    rx = _FOREIGN_CACHE.get(present)
    if rx is None:
        words = sorted(present, key=len, reverse=True)
        alts = [
            (rf"(?<![0-9]){re.escape(w)}" if w in _COMPOUND_TAILS else rf"(?<![A-Za-z0-9]){re.escape(w)}")
            + "(?![A-Za-z0-9])"
            if w.isascii()
            else re.escape(w)
            for w in words
        ]
        rx = re.compile("|".join(alts), re.IGNORECASE)
        if len(_FOREIGN_CACHE) < 256:
            _FOREIGN_CACHE[present] = rx
    return rx


def _foreign_words(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, english)`` for each foreign key name in ``text``, found with str.find on
    the lowered text (a regex alternation of case-insensitive words is slow on long text)."""
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer: use the regex
        rx = _foreign_regex(text)
        return (
            [] if rx is None else [(m.start(), m.end(), _FOREIGN_INDEX[m.group(0).lower()]) for m in rx.finditer(text)]
        )
    chars = set(low) if not low.isascii() else None
    found = []
    for w, en in _FOREIGN_INDEX.items():
        if chars is not None and not w.isascii() and w[0] not in chars:
            continue
        i = low.find(w)
        while i != -1:
            j = i + len(w)
            # an ASCII name is a word of its own (`ww`, `mdp` inside base64 are not), or a compound's tail
            left = i == 0 or not low[i - 1].isalnum() or (w in _COMPOUND_TAILS and low[i - 1].isalpha())
            if not w.isascii() or (left and (j >= len(low) or not low[j].isalnum())):
                found.append((i, j, en))
            i = low.find(w, j)
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))  # longest first at one position
    return found


def names_a_key(value: str) -> bool:
    """Whether `value` is, whole, a key's name in another language (`Mot de passe`, `Passwort`,
    `Clé API`): a translation table's entry, not the secret it names."""
    v = value.strip()
    return bool(v) and any(start == 0 and end == len(v) for start, end, _en in _foreign_words(v))


def _glue(text: str) -> list[tuple[str, int, int]]:
    """Split-value glue: ``("quote", start, end)`` between two literals of one value,
    ``("word", ...)`` a line continuation inside a word, ``("space", ...)`` one after a blank."""
    out = []
    n = len(text)
    for m in _GLUE.finditer(text):
        s, e = m.span()
        before = text[s - 1] if s else ""
        if m.group("q"):
            if before in _TOKEN_CHARS and e < n and text[e] in _TOKEN_CHARS:
                out.append(("quote", s, e))
        elif before in (" ", "\t"):
            out.append(("space", s, e))
        elif before and not before.isspace() and before != "\\":
            out.append(("word", s, e))
    return out


_FOREIGN_AUTOMATON: list = []  # [automaton or None], built on first use


def _has_foreign_ascii(low: str) -> bool:
    """Whether lowered `low` holds a foreign key name written in ASCII. One Aho-Corasick pass
    when pyahocorasick is importable (~3 us a memory against ~12 for 44 substring searches,
    and this runs on every write); hooks started with `python -S` search each word."""
    if not _FOREIGN_AUTOMATON:
        try:
            import ahocorasick

            automaton = ahocorasick.Automaton()
            for w in _FOREIGN_ASCII:
                automaton.add_word(w, w)
            automaton.make_automaton()
            _FOREIGN_AUTOMATON.append(automaton)
        except ImportError:
            _FOREIGN_AUTOMATON.append(None)
    automaton = _FOREIGN_AUTOMATON[0]
    if automaton is None:
        return any(w in low for w in _FOREIGN_ASCII)
    return next(automaton.iter(low), None) is not None


def needs_view(text: str) -> bool:
    """Whether :func:`build_view` could change anything (cheap; most text is plain ASCII)."""
    if not text.isascii():
        return True
    if ("\\\n" in text or "\\\r\n" in text or "'" in text or '"' in text) and _glue(text):
        return True
    if ":" in text and _YAML_HINT.search(text) is not None:
        return True
    if _has_flat_yaml(text) and _flat_yaml_matches(text):
        return True
    return _has_foreign_ascii(text.lower()) and bool(_foreign_words(text))


def _edits(text: str, fence: bool) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, replacement)`` edits, sorted by start."""
    edits: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []  # sorted, non-overlapping

    def free(s: int, e: int) -> bool:
        k = bisect_right(taken, (s, float("inf"))) - 1
        if k >= 0 and taken[k][1] > s:
            return False
        return k + 1 >= len(taken) or taken[k + 1][0] >= e

    def add(s: int, e: int, rep: str) -> None:
        if free(s, e):
            edits.append((s, e, rep))
            insort(taken, (s, e))

    ascii_text = text.isascii()
    for s, e, en in _foreign_words(text):
        # `root密码` -> `root password`, `密码Vortex7533@` -> `password Vortex7533@`: an English name
        # glued to the word before or after it would not read as one
        before = " " if s and text[s - 1].isascii() and text[s - 1].isalnum() else ""
        after = " " if e < len(text) and text[e].isascii() and (text[e].isalnum() or text[e] in "$%&*!@#") else ""
        add(s, e, before + en + after)
    if fence and "&" in text:
        import html  # here, not at import: html.entities is a large table and hooks never need it

        for m in _ENTITY.finditer(text):
            rep = html.unescape(m.group(0))
            if rep != m.group(0):
                add(m.start(), m.end(), "".join(_nfkc_char(c) if not c.isascii() else c for c in rep))
    for kind, s, e in _glue(text):
        add(s, e, "" if kind != "space" else " ")
    if ":" in text:
        _yaml_blocks(text, add)
        if _has_flat_yaml(text):
            _yaml_flat(text, add)
    if not ascii_text:
        _unicode_edits(text, add, free, fence)
    edits.sort()
    return edits


def _unicode_edits(text: str, add, free, all_letters: bool) -> None:
    """Edits for non-ASCII characters: look-alike letters in Latin-looking words, then NFKC,
    format characters and look-alike punctuation anywhere (one regex pass per kind)."""
    distinct = {c for c in set(text) if not c.isascii()}
    changed = {c: _nfkc_char(c) for c in distinct}
    changed = {c: r for c, r in changed.items() if r != c}
    lookalike = {c for c in distinct if c in _LETTERS or any(x in _LETTERS for x in changed.get(c, ""))}
    if lookalike:
        cls = "".join(re.escape(c) for c in sorted(lookalike))
        words: Iterable[re.Match[str] | tuple[int, str]]
        if all_letters:
            words = re.finditer(f"[{cls}]+", text)
        elif re.search(f"[A-Za-z0-9][{cls}]|[{cls}][A-Za-z0-9]", text) is None:
            words = iter(())  # no look-alike touches an ASCII letter: plain foreign text
        else:
            words = _mixed_words(text, re.finditer(f"[A-Za-z0-9][{cls}]|[{cls}][A-Za-z0-9]", text))
        for m in words:
            start, word = (m.start(), m.group(0)) if isinstance(m, re.Match) else m
            for i, ch in enumerate(word):
                if ch.isascii():
                    continue
                rep = "".join(_LETTERS.get(c, c) for c in changed.get(ch, ch))
                if rep != ch:
                    add(start + i, start + i + 1, rep)
    if changed:
        cls = "".join(re.escape(c) for c in sorted(changed))
        for m in re.finditer(f"[{cls}]+", text):  # a run is one edit: ｆｕｌｌ -> full
            run = m.group(0)
            if free(m.start(), m.end()):
                add(m.start(), m.end(), "".join(changed[c] for c in run))
            else:
                for i, ch in enumerate(run):
                    add(m.start() + i, m.start() + i + 1, changed[ch])


_WORD_CHAR = re.compile(r"[\w\u00ad\u200b-\u200d\u2060\ufeff]")
WORD_SCAN_CHARS = 64  # how far a word is followed from a look-alike touching an ASCII letter


def _mixed_words(text: str, pairs) -> list[tuple[int, str]]:
    """The words around each look-alike/ASCII pair (each word once), as (start, word)."""
    out: list[tuple[int, str]] = []
    last_end = -1
    for m in pairs:
        if m.start() < last_end:
            continue
        lo, hi = m.start(), m.end()
        while lo > 0 and m.start() - lo < WORD_SCAN_CHARS and _WORD_CHAR.match(text, lo - 1):
            lo -= 1
        while hi < len(text) and hi - m.end() < WORD_SCAN_CHARS and _WORD_CHAR.match(text, hi):
            hi += 1
        out.append((lo, text[lo:hi]))
        last_end = hi
    return out


# a block scalar squeezed onto one line: `password: >- Mwz-KB23 n_HwDe1B host: db` (found from
# the `: >` literal; the key before it must name a secret)
_YAML_FLAT = re.compile(
    r":[ \t]*(?P<hdr>[>|][-+0-9]{0,2}[ \t]+)(?P<vals>[^\s:]+(?:[ \t]+[^\s:]+){0,8})(?=[ \t]+[^\s]*:|[ \t]*$)", re.M
)


def _has_flat_yaml(text: str) -> bool:
    """Cheap test before the flat block-scalar search."""
    return ": >" in text or ": |" in text or ":>" in text or ":|" in text


def _flat_yaml_matches(text: str) -> list[re.Match]:
    out = []
    for m in _YAML_FLAT.finditer(text):
        k = m.start()
        j = k
        while j > 0 and k - j < 80 and (text[j - 1].isalnum() or text[j - 1] in "_.-"):
            j -= 1
        if _SECRET_KEY_WORD.search(text, j, k):
            out.append(m)
    return out


def _yaml_flat(text: str, add) -> None:
    for m in _flat_yaml_matches(text):
        add(m.start("hdr"), m.end("hdr"), "")
        base = m.start("vals")
        for gap in re.finditer(r"[ \t]+", m.group("vals")):
            add(base + gap.start(), base + gap.end(), "")


def _yaml_blocks(text: str, add) -> None:
    """Join the lines of a YAML block scalar (``key: >-`` then indented lines) into one value."""
    for m in _YAML_BLOCK.finditer(text):
        if not _SECRET_KEY_WORD.search(text, m.start(), m.start("hdr")) and not _foreign_words(m.group(0)):
            continue
        indent = len(m.group("ind"))
        pos = m.start("hdr")
        joined = 0
        while pos < len(text) and joined < 64:
            nl = text.find("\n", pos)
            if nl == -1:
                break
            j = nl + 1
            k = j
            while k < len(text) and text[k] in " \t":
                k += 1
            if k - j <= indent or k >= len(text) or text[k] in "\r\n":
                break
            add(pos, k, "")
            joined += 1
            pos = text.find("\n", k)
            if pos == -1:
                break
            if pos > k and text[pos - 1] == "\r":
                pos -= 1


def edits(text: str, *, fence: bool = False) -> list[tuple[int, int, str]]:
    """What :func:`build_view` would change, as sorted ``(start, end, replacement)``."""
    if not needs_view(text) and not (fence and "&" in text):
        return []
    return _edits(text, fence)


MAX_VIEW_WINDOWS = 3  # separate windows worth viewing before one view of the whole text is cheaper ...
WINDOW_CHARS_PER_EXTRA = 8000  # ... plus one more window per this many characters of text


def windows(text: str, found: list[tuple[int, int, str]], pad: int = 400) -> list[tuple[int, int]]:
    """Merged spans of whole lines around each edit (at most ``pad`` characters each side).

    Detection only needs to look near what was normalised, so a long text with a few
    look-alikes costs a few short views instead of a second pass over everything.
    """
    out: list[tuple[int, int]] = []
    n = len(text)
    if found and found[-1][1] - found[0][0] > n // 2 and len(found) > 8:
        return [(0, n)]  # edits all over the text: one view of it all is cheaper than many
    for s, e, _rep in found:
        lo = text.rfind("\n", max(0, s - pad), s) + 1 or max(0, s - pad)
        nl = text.find("\n", e, min(n, e + pad))
        hi = nl if nl != -1 else min(n, e + pad)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    if len(out) > max(MAX_VIEW_WINDOWS, n // WINDOW_CHARS_PER_EXTRA):
        return [(0, n)]  # each window costs a pass of every rule: past a few, one view of it all is cheaper
    return out


def view_from_edits(text: str, found: list[tuple[int, int, str]]) -> View | None:
    """The view of ``text`` with ``found`` applied (see :func:`edits`)."""
    out: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    vpos = 0
    opos = 0
    for s, e, rep in found:
        if s > opos:
            pieces.append((vpos, opos, s, True))
            out.append(text[opos:s])
            vpos += s - opos
        if rep:
            pieces.append((vpos, s, e, False))
            out.append(rep)
            vpos += len(rep)
        opos = e
    if opos < len(text):
        pieces.append((vpos, opos, len(text), True))
        out.append(text[opos:])
    view = "".join(out)
    if view == text or not pieces:
        return None
    return View(view, pieces)


def build_view(text: str, *, fence: bool = False) -> View | None:
    """The normalised view of ``text``, or None when it would be the text itself.

    ``fence``: the view the context fence check wants: HTML character references decoded
    (``&lt;``) and every look-alike letter folded, even in a word with no ASCII letter.
    Secret detection wants neither (``&amp;`` in a URL is part of the URL, and an
    all-Cyrillic word is Russian).
    """
    found = edits(text, fence=fence)
    return view_from_edits(text, found) if found else None


def fold(text: str, *, fence: bool = False) -> str:
    """Just the normalised text (for comparisons and key names)."""
    v = build_view(text, fence=fence)
    return text if v is None else v.text


# --- tags a reader could take for the context fence or the harness's own markup -------------------
HARNESS_TAGS = (
    "engram-memory",
    "system-reminder",
    "system",
    "user-prompt-submit-hook",
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "function_calls",
    "function_results",
    "tool_use",
    "tool_result",
    "invoke",
    "parameter",
    "human",
    "assistant",
    "important-instruction-reminders",
    "session-start-hook",
    "post-tool-use-hook",
    "user-memory-input",
    "claude-memory",
    "instructions",
)
#: Any dash a reader takes for a hyphen in a tag name: en and em dashes, the horizontal bar, the
#: modifier minus, small and full-width forms, the Katakana prolonged sound mark, two- and
#: three-em dashes, the double oblique hyphen and the Mongolian todo soft hyphen (the ones the
#: view folds to `-` are listed in _PUNCT).
_TAG_DASHES = "\u2013\u2014\u2015\u02d7\ufe58\ufe63\uff0d\u30fc\u2e3a\u2e3b\u2e17\u1806"
_TAG_NAMES = "|".join(  # a separator may be a dash, _, a blank or nothing (a soft hyphen stood for it)
    rf"[-_\s{_TAG_DASHES}]?".join(re.escape(part) for part in re.split(r"[-_]", t))
    for t in sorted(HARNESS_TAGS, key=len, reverse=True)
)
# `<` (already folded from ＜, ‹, &lt; ...), optional `/`, a tag name, its attributes, `>`
_TAG_PATTERN = rf"<\s*/?\s*(?:{_TAG_NAMES})(?![\w-])[^<>\r\n]{{0,200}}>?"  # compiled on first use


def neutralise_tags(text: str) -> str:
    """Turn every spelling of a fence or harness tag into bracketed text: ``<system-reminder>``,
    ``＜/engram-memory＞``, ``&lt;system&gt;``, ``</еngram-memory>`` (Cyrillic е), with soft
    hyphens or zero-width characters inside, all become ``(...)``.

    Detection runs on the fence view (:func:`build_view` with ``fence=True``); the brackets are
    replaced in the original text, whatever spelled them, and the rest is kept. ``(`` and ``)``
    normalise to nothing that reads as a tag, so the result is stable under any normalisation.
    """
    if text.isascii() and "<" not in text and "&" not in text:
        return text
    view = build_view(text, fence=True)
    seen = view.text if view is not None else text
    hits = list(re.finditer(_TAG_PATTERN, seen, re.IGNORECASE))
    if not hits:
        return text

    def orig(start: int, end: int) -> tuple[int, int]:
        return view.span(start, end) if view is not None else (start, end)

    repl: list[tuple[int, int, str]] = []
    for m in hits:
        repl.append((*orig(m.start(), m.start() + 1), "("))
        if m.group(0).endswith(">"):
            repl.append((*orig(m.end() - 1, m.end()), ")"))
    out: list[str] = []
    copied = 0
    for s, e, rep in sorted(repl):
        if s < copied:
            continue
        out += [text[copied:s], rep]
        copied = e
    out.append(text[copied:])
    return "".join(out)
