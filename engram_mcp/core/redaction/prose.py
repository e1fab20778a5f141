"""Secrets in prose: "the staging admin password is X until Friday", in any language.

Found on the normalised view (`textview` maps `Passwort`, `mot de passe`, `пароль`, `パスワード`,
`密码`, `비밀번호` ... to `password`), so one English list of key names serves every language;
what links the name to its value (a copula, a colon, a dash, a particle) is spelled per language.
The local pass (every write) redacts a value built like a secret; the outbound pass (what leaves
the machine: team files, the sync folder, exports) also redacts weaker values and any random
token near a key name.

This module finds the names and follows the links (`_prose_pass`); whether the value found is
a secret is `prose_values`'s call, and where else in the sentence a value may stand is
`sentences`'s.
"""

from __future__ import annotations

import re
from collections import Counter

from engram_mcp.core import textview

from .key_names import _ABOUT_WORDS, _ARN_HEAD, _NEXT_WORD, _PUBLIC_QUALIFIER, _under_encrypted_data
from .labels import _LABEL_MARK, _LABEL_RE, _overlaps, label_for
from .prose_values import _CLAUSE_END, _prose_value_kind
from .rule import _ascii_lower
from .sentences import SENTENCE_NAMES_MAX, _in_sentence, _near_tokens, _random_tokens
from .values import _IDENTIFIER, _is_doc_example

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Iterable, Optional

    from .rule import Decision

# Key names are found from their head word (one simple regex on the ASCII-lowered view: a
# regex of every spelling with a look-behind costs ~25 us a memory, this ~3), then read whole.
_PROSE_HEAD = re.compile(r"pass|pw|pin|secret|token|cred|key")
_PROSE_NAME = re.compile(
    r"(?:(?P<pw>pass(?:words?|phrases?|codes?|wd)|pwd?|pin[ _-]?(?:code|number)s?)"  # pw: "the admin pw: X"
    r"|(?P<sec>secrets?(?:[ _-]?(?:access[ _-]?)?keys?)?|tokens?|credentials?|creds)"
    r"|(?P<key>keys?))(?![a-z0-9_\-])"
)
# the word before `key` that makes it a secret's name: `api key`, `apikey`, `signing-key`
_KEY_QUALIFIER = re.compile(r"(?:api|access|private|secret|signing|master|encryption|license|deploy|client|app)[ _-]?$")
# the word before `key` that makes it a password: `the wifi key is ...`, `WPA2 key`, `network key`
_PASSWORD_QUALIFIER = re.compile(r"(?<![a-z])(?:wi-?fi|wlan|wpa2?|wpa3|psk|network|router|hotspot)[ _-]?$")
# cheap test before anything else, for a text without foreign key names (`textview.needs_view`)
_PROSE_HINTS = ("pass", "pw", "pin", "secret", "token", "cred", "key")


def _prose_names(low: str) -> Iterable[tuple[int, int, str]]:
    """``(start, end, group)`` of each key name in `low` (ASCII-lowered): pw, sec or key."""
    consumed = 0
    for h in _PROSE_HEAD.finditer(low):
        start = h.start()
        if start < consumed:
            continue
        m = _PROSE_NAME.match(low, start)
        if m is None:
            continue
        group = m.lastgroup or "key"
        qualifier = _KEY_QUALIFIER.search(low, max(0, start - 12), start)
        head = qualifier.start() if qualifier is not None else start
        if head and low[head - 1].isalnum() and low[head - 1] != "1":
            continue  # inside a word: `bypass`, `monkey`, `turnkey`, `X25519PrivateKey`
        if head and low[head - 1] == "1" and (head < 2 or not low[head - 2].isalnum()):
            continue  # 1Password, the product: "shared it in 1Password (vault: Search)"
        if group == "key" and _PUBLIC_QUALIFIER.search(low, max(0, start - 12), start):
            continue  # `public key: 6E3Oy…`, `pubkey`: published, not a secret
        if group == "key" and qualifier is None:
            password_qualifier = _PASSWORD_QUALIFIER.search(low, max(0, start - 12), start)
            if password_qualifier is not None:
                consumed = m.end()
                yield password_qualifier.start(), m.end(), "pwq"
                continue
        if qualifier is not None and group == "key":
            group = "sec"
        elif qualifier is None and start and low[start - 1].isalpha():
            continue
        consumed = m.end()
        yield head, m.end(), group


# Words linking a key name to its value: en, de, fr, es, it, pt, nl, pl, ru, cs, sv, ar, he, vi,
# id (whole words; none that also starts a clause of another language, like "je" or "la": the
# first link found is the one judged), then marks and the ja, zh, ko particles, which need no
# blank around them.
_PROSE_LINK_WORDS = (
    "is|was|are|were|will be|has been|have been|becomes|became|remains|set to|changed to|reset to|"
    "rotated to|updated to|now|currently|still|temporarily|"
    "ist|lautet|war|wird|heißt|bleibt|jetzt|nun|"
    "est|était|sera|reste|maintenant|désormais|"
    "es|era|será|sigue siendo|ahora|"
    "è|e'|sarà|resta|ora|adesso|"
    "é|continua|agora|"
    "wordt|luidt|blijft|nu|"
    "to|jest|brzmi|był|było|teraz|"
    "это|будет|был|было|теперь|сейчас|"
    "bylo|zní|"
    "är|blir|er|"
    "هي|هو|هى|"
    "היא|הוא|"
    "là|adalah|ialah|"
    "on|ovat|είναι|ni|ay|este|হলো|হল|je|је|е"
)
_PROSE_LINK = (
    rf"(?:[ \t]+(?:{_PROSE_LINK_WORDS})(?=[ \t:：]|$)"
    r"|[ \t]*(?:[:：→]|->|=>)|[ \t]+=(?!=)"
    r"|[ \t]+[-–—]+(?=[ \t])"
    r"|[ \t]*(?:は|が|も|是|为|為|는|은|이|가))"
)
_PROSE_VALUE = (
    r"[ \t]*(?:(?P<q>[\"'“‘«„「『‹`])(?P<qv>[^\"'”’»“‘「」『』‹›`\r\n]{1,128})[\"'”’»」』›`]"
    r"|(?P<v>(?:[A-Za-z0-9!#$%&*+\-./:;=?@^_|~\\\u0900-\u0dff\u0e00-\u0e7f]"
    r"|(?![\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uff00-\uffef])[^\W_]){1,200}))"
)
# the key name, a few words about whose it is ("for the staging admin"), a link, the value
_PROSE_LINKED = re.compile(
    # whole words (possessive), up to eight ("la contraseña de la base de datos de producción es X"):
    # a link is tried after each word, not at each character
    # (a parenthesis first: "the password (staging admin) is X", "密码（到周五）是 X")
    r"(?P<fill>(?:['’]s)?(?:[ \t]*[（(][^()（）\r\n]{0,40}[)）])?"
    r"(?:[ \t]++(?:[^\s=:：.!?;。！？,]|\.(?=[^\s.])){1,40}+){0,8}?)"
    + rf"(?:{_PROSE_LINK}){{1,3}}"
    # ja, zh, ko put a few words between the link and the value: "パスワードは金曜日まで X です"
    + r"(?:[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{1,20}+[ \t:：]*)?"
    + _PROSE_VALUE
)
# the value right after the key name: "secret key 9xK2...", "login with password Xk9#pL2mQv"
# (the value's own leading `[ \t]*` dropped: `[ \t]+[ \t]*` split a run of blanks every way, O(n^2))
_PROSE_DIRECT = re.compile(r"[ \t]+" + _PROSE_VALUE.removeprefix(r"[ \t]*"))
#: `PIN` in capitals (a personal identification number); `pin` alone is also a verb ("pin the
#: version") and a hardware pin, so only `PIN`, `PIN code`, `pin code` and `pin number` name one.
_PIN_NAME = re.compile(
    r"(?<![A-Za-z0-9_+/=])(?:PINs?|(?i:alarm|door|gate|atm|card|sim|bank|debit|phone|safe|lock)[ _-]?(?i:pin))"
    r"(?![A-Za-z0-9_+/=])"
)


#: A copula after the value, in languages that put it last ("पासवर्ड chai4life है", "비번 qwer1234!!
#: 입니다", "parolası Simit_2024'tür"): the value is linked to the name as by "is".
_COPULA_AFTER = re.compile(
    r"[ \t]*(?:है|हैं|था|थी|ہے|ஆகும்|です|でした|だ|입니다|이에요|예요|이다|است|['’]?(?:dir|dır|dur|dür|tir|tır|tur|tür))(?!\w)"
)


#: Links tried after a key name when the first one's value is no secret ("das Passwort, das er mir
#: gab, ist X": `er` of another language is no link there; `ist` is).
PROSE_LINK_TRIES = 3


def _prose_decide(text: str, name_end: int, group: str, outbound: bool, translated: bool = False) -> Decision:
    """The secret after the key name ending at `name_end`, as (kind, start, end), or None.
    `translated`: the name was another language's (the view's English): no assignment rule
    knows it, so a value right after its colon is judged here. A `pwq` name (`wifi key`) is a
    password's, which no assignment rule knows either."""
    nxt = _NEXT_WORD.match(text, name_end)
    if nxt is not None and nxt.group(1).lower() in _ABOUT_WORDS:
        return None
    unassigned = translated or group == "pwq"  # no assignment rule reads this name
    if group == "pwq":
        group = "pw"
    plural = text[name_end - 1 : name_end] in ("s", "S")
    pos = name_end
    for _ in range(PROSE_LINK_TRIES):
        t = _PROSE_LINKED.match(text, pos)
        if t is None:
            break
        decision, pos = _prose_value_at(text, t, True, name_end, group, outbound, translated, plural, unassigned)
        if decision is not None:
            return decision
        if pos <= 0:
            break
    t = _PROSE_DIRECT.match(text, name_end)
    if t is None:
        return None
    return _prose_value_at(text, t, False, name_end, group, outbound, translated, plural, unassigned)[0]


def _one_word_before(text: str, name_end: int) -> bool:
    """Whether the name ending at `name_end` is one word, as an assignment's key is (`api_key:`,
    not `API Key：`, which no assignment rule reads)."""
    start = name_end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-."):
        start -= 1
    return start == 0 or text[start - 1] != " " or start < 2 or not text[start - 2].isalnum()


def _prose_value_at(
    text: str,
    t: re.Match,
    linked: bool,
    name_end: int,
    group: str,
    outbound: bool,
    translated: bool,
    plural: bool,
    unassigned: bool,
) -> tuple[Decision, int]:
    """The decision for the value `t` found after a name, and where to look for another link
    (0: nowhere; only a value judged and refused sends the search on). `translated`: the name
    was another language's; `unassigned`: no assignment rule reads it (that, or `wifi key`)."""
    if (
        not outbound
        and linked
        and not unassigned
        and not t.group("fill")
        and not text[name_end : t.start("q") if t.group("q") else t.start("v")].strip(" \t:")
        and _one_word_before(text, name_end)
    ):
        return None, 0  # `token: value` right after the name is an assignment: the assignment rules judge it
    if t.group("qv") is not None:
        start, end = t.span("qv")
    else:
        start, end = t.span("v")
        if not linked and _COPULA_AFTER.match(text, end):
            linked = True  # "비번 qwer1234!! 입니다": the value whole, its last mark included
        else:
            while end > start and text[end - 1] in ".,;:!?":
                end -= 1  # the sentence's punctuation, not the value's
    value = text[start:end]
    if plural and value.isalpha():
        return None, 0  # "passwords: provider tokens, headers": a list of what they are, not one
    quoted = t.group("qv") is not None
    closed = not quoted and _CLAUSE_END.match(text, end) is not None
    fill_end = t.end("fill") if "fill" in t.re.groupindex else name_end
    if linked and "=" in text[fill_end:start] and _IDENTIFIER.fullmatch(value):
        return None, t.end()  # `token = AccessToken2 if fresh else None`: code
    kind = _prose_value_kind(
        group, value, linked=linked, outbound=outbound, quoted=quoted, closed=closed, translated=translated
    )
    if kind is not None:
        return (kind, start, end), 0
    return None, t.end()


def _translated(text: str, view: "textview.View", start: int, end: int) -> bool:
    """Whether the view's key name at [start, end) stands for another language's word."""
    s, e = view.span(start, end)
    return text[s:e].lower() != view.text[start:end].lower()


def _has_prose_hint(low: str) -> bool:
    """Whether lowered text holds a head word of a key name (a loop: ~1.4 us a memory, `any` ~2.2)."""
    for hint in _PROSE_HINTS:
        if hint in low:
            return True
    return False


def _prose_pass(text: str, counts: Counter, *, outbound: bool, foreign: Optional[bool] = None) -> str:
    """Secrets written in sentences, in any language (see above); the view is searched and the
    original characters replaced. `foreign`: `textview.needs_view(text)` when the caller knows it."""
    if foreign is None:
        foreign = textview.needs_view(text)
    if not foreign and not _has_prose_hint(text.lower()):
        return text
    view = textview.build_view(text) if foreign else None
    seen = view.text if view is not None else text
    labels = [x.span() for x in _LABEL_RE.finditer(seen)] if _LABEL_MARK in seen else []
    found: list[tuple[int, int, str]] = []
    tokens: Optional[list[tuple[int, int]]] = None
    names = list(_prose_names(_ascii_lower(seen).decode("ascii")))
    judged: dict[tuple[int, str], bool] = {}  # words of sentences judged (`_in_sentence`)
    searched = 0
    sealed, arns = "encryptedData" in seen, "arn:" in seen  # once: a text of names must stay linear
    if "PIN" in seen or "pin" in seen or "Pin" in seen:
        named = {s for s, _e, _g in names}
        names += [(m.start(), m.end(), "pin") for m in _PIN_NAME.finditer(seen) if m.start() not in named]
    for start, end, group in names:
        if labels and _overlaps(labels, start, end):
            continue
        if sealed and _under_encrypted_data(seen, start):
            continue  # a SealedSecret's ciphertext
        if arns and _ARN_HEAD.search(seen[max(0, start - 160) : start]):
            continue  # `arn:aws:secretsmanager:…:secret:prod/stripe-I4Jah4`: a resource's name
        translated = view is not None and _translated(text, view, start, end)
        decision = _prose_decide(seen, end, group, outbound, translated)
        if decision is not None:
            kind, s, e = decision
            found.append((s, e, kind))
        else:
            searched += 1
            if searched <= SENTENCE_NAMES_MAX:
                found += [(s, e, kind) for kind, s, e in _in_sentence(seen, start, end, group, judged)]
        if outbound:
            if tokens is None:
                tokens = _random_tokens(seen)
            found += [(s, e, kind) for kind, s, e in _near_tokens(seen, tokens, start, end)]
    if not found:
        return text
    regions = []
    for s, e, kind in sorted(set(found)):
        if labels and _overlaps(labels, s, e):
            continue
        if view is not None:
            s, e = view.span(s, e)
        if _is_doc_example(text[s:e]) or _LABEL_MARK in text[s:e]:
            continue
        regions.append((s, e, kind))
    out: list[str] = []
    copied = 0
    for s, e, kind in sorted(regions):
        if s < copied:
            continue
        out += [text[copied:s], label_for(kind)]
        copied = e
        counts[kind] += 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)
