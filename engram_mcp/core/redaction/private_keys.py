"""Private keys: PEM blocks whole, cut short or without their BEGIN line, and other key files.

The container rules (a GCP service account's `private_key`, a PEM block) run first of all
(`rules._RULES`), so a key's body gets the container's kind rather than a token rule's. A key
whose BEGIN line was cut away (a tool's output truncated before it) is no rule's match: the
headless pass (`_headless_pem`) runs after the rules, over what they left.
"""

from __future__ import annotations

import re
from collections import Counter

from .labels import _LABEL_MARK, label_for
from .rule import _Rule
from .values import _DIGIT, _LOWER, _UPPER

_PEM_BODY = r"[A-Za-z0-9+/=\s\\:,.\-]"
_PEM_KIND = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
# An unterminated block (output cut short) is redacted up to where its base64 ends. Lines may
# be separated by blank lines (PGP armour headers) or, once whitespace was squeezed (entity
# names, one-line snippets), by plain spaces.
_PEM_FALLBACK = (
    r"(?:(?:(?:[ \t]*(?:\r?\n|\\r\\n|\\n))++[ \t]*|[ \t]++)?"
    r"(?:[A-Z][A-Za-z\-]{1,40}:[^\r\n\\]{0,200}|[A-Za-z0-9+/]{16,}+={0,2}|=[A-Za-z0-9+/]{4}))*+"
)


def _pem_check(m: re.Match, value: str) -> bool:
    body = m.group("body") or ""
    return sum(ch.isalnum() for ch in body) >= 16


def _quoted_before(m: re.Match, _value: str) -> bool:
    start = m.start()
    return start > 0 and m.string[start - 1] == m.group("q")


_RULE_GCP_KEY = _Rule(
    "gcp-service-account",
    r"""private_key(?P<q>["'])[ \t]*:[ \t]*(?P=q)(?P<s>-----BEGIN[^"'\r\n]*)""",
    check=_quoted_before,
)
_RULE_GCP_KEY_ID = _Rule(
    "gcp-service-account",
    r"""private_key_id(?P<q>["'])[ \t]*:[ \t]*(?P=q)(?P<s>[0-9a-fA-F]{16,64})(?P=q)""",
    check=_quoted_before,
)
_RULE_PEM = _Rule(
    "private-key",
    rf"(?P<s>-----BEGIN (?:{_PEM_KIND})-----"
    rf"(?P<body>{_PEM_BODY}*?-----END (?:{_PEM_KIND})-----|{_PEM_FALLBACK}))",
    ("-----begin ",),
    check=_pem_check,
    bounded=True,
)
# a wallet key in a Hardhat / Foundry network config: `accounts: ["0x<64 hex>"]`
_RULE_WALLET_KEY = _Rule(
    "private-key",
    r"accounts[\"']?[ \t]*[:=][ \t]*\[[ \t\r\n]*[\"'](?P<s>(?:0x)?[0-9a-fA-F]{64})[\"']",
)
# PuTTY .ppk: the Private-Lines block and its MAC
_RULE_PPK = _Rule(
    "private-key",
    r"Private-Lines:[ \t]*[0-9]{1,3}(?P<s>(?:(?:\s|\\n)+(?!Private-)[A-Za-z0-9+/]{4,}={0,2})+(?:(?:\s|\\n)+Private-(?:MAC|Hash):[ \t]*[0-9a-fA-F]{16,128})?)",
    ("private-lines:",),
)
# NATS nkey seeds (`nsc`, `nk -gen`): S + the key's kind (user, account, operator, server, cluster,
# curve) + base32, 58 characters
_RULE_NKEY_SEED = _Rule(
    "private-key",
    r"(?<![A-Z2-7])(?P<s>S[UAONCX][A-Z2-7]{56})(?![A-Z2-7])",
    hints=("nkey", "seed", "nats", "nsc"),
)


# --- private key bodies without their BEGIN line ------------------------------------------------
_PEM_END = re.compile(r"-----END (?:[A-Z0-9 ]{0,40})PRIVATE KEY(?: BLOCK)?-----")
_B64_TOKEN = re.compile(r"[A-Za-z0-9+/]{4,}={0,2}")
_PEM_HEADER_TOKEN = re.compile(r"(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):")
_PEM_SPLIT = re.compile(r"(?:\s|\\r|\\n)+")
# Lines of a key body whose BEGIN and END lines were cut away: 3+ lines of base64 (PEM
# wraps at 64, OpenSSH at 70, others at 60-76), the first and last possibly cut.
# (`^[ \t]*+`: the blanks before a block are its line's own, one way only; `^[ \t]*` before the
# first line's `[ \t]*` split a run of blanks every way, O(n^2): 4.3 s on 19,000 characters)
_B64_BLOCK = re.compile(
    r"(?m)^[ \t]*+(?P<s>(?:[A-Za-z0-9+/]{8,76}={0,2}(?:\r?\n|\\n))?(?:[ \t]*[A-Za-z0-9+/]{60,76}(?:\r?\n|\\n)){2,}"
    r"(?:[ \t]*[A-Za-z0-9+/]{1,76}={0,2})?)"
    r"|(?P<sq>(?<![A-Za-z0-9+/])(?:[A-Za-z0-9+/]{60,76}[ \t]+){2,}[A-Za-z0-9+/]{1,76}={0,2})"
)
_B64_LINE = re.compile(r"[A-Za-z0-9+/]{60}")
_PUBLIC_PEM = re.compile(
    r"-----(?:BEGIN|END) (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC|X509 CRL|CERTIFICATE REQUEST|NEW CERTIFICATE|TRUSTED"
    r"|PGP SIGNATURE|PGP MESSAGE|SSH SIGNATURE|SIGNED MESSAGE|PKCS7|CMS)"
)


def _headless_pem(text: str, counts: Counter) -> str:
    """Redact key bodies whose BEGIN line is gone (output cut before it) or both ends are."""
    if "-----END " in text:
        text = _headless_with_end(text, counts)
    if len(text) >= 180 and _B64_LINE.search(text):
        text = _b64_blocks(text, counts)
    return text


def _headless_with_end(text: str, counts: Counter) -> str:
    out: list[str] = []
    copied = 0
    for m in _PEM_END.finditer(text):
        start = m.start()
        pos = start
        alnum = 0
        tokens = list(_PEM_SPLIT.finditer(text, max(copied, start - 16384), start))
        # walk back over whitespace-separated tokens that are key material
        cursor = start
        for sep in reversed(tokens):
            tok = text[sep.end() : cursor]
            if tok and not (
                _B64_TOKEN.fullmatch(tok)
                and (len(tok) >= 16 or re.search(r"[0-9+/]", tok))
                or _PEM_HEADER_TOKEN.fullmatch(tok)
                or re.fullmatch(r"[A-Z0-9,\-]{1,40}", tok)
            ):
                break
            alnum += len(tok)
            pos = sep.end() if tok else pos
            cursor = sep.start()
        else:
            tok = text[max(copied, cursor - 128) : cursor]
            tail = re.search(r"[A-Za-z0-9+/=]+$", tok)
            if tail:
                alnum += len(tail.group(0))
                pos = cursor - len(tail.group(0))
        if alnum < 16 or _LABEL_MARK in text[pos:start]:
            continue
        out.append(text[copied:pos])
        out.append(label_for("private-key"))
        copied = m.end()
        counts["private-key"] += 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


def _b64_blocks(text: str, counts: Counter) -> str:
    out: list[str] = []
    copied = 0
    for m in _B64_BLOCK.finditer(text):
        g = "s" if m.group("s") is not None else "sq"
        block = m.group(g)
        start, end = m.start(g), m.end(g)
        if start < copied or not (_DIGIT.search(block) and _LOWER.search(block) and _UPPER.search(block)):
            continue
        before = text[max(0, start - 16384) : start]
        last = before.rfind("-----BEGIN ")
        if last != -1 and _PUBLIC_PEM.match(before, last) and "-----END " not in before[last + 11 :]:
            continue  # inside a certificate or public key
        after = text[end : end + 200].lstrip()
        if _PUBLIC_PEM.match(after):
            continue
        out.append(text[copied:start])
        out.append(label_for("private-key"))
        copied = end
        counts["private-key"] += 1
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)
