"""Whose export a file is: one this user's engram wrote, or someone else's text.

An export keeps each memory's `source`, the record of where its text came from (the user,
Claude, a hook, a teammate's file, an import). A restore must keep it, or every backup would
turn the user's own memories into imports. But an export is a plain JSONL file: anyone can
write one that says `"origin": "user"` on every line, mail it, or leave it in a repository,
and an import that believed it would show a stranger's text as the user's own preference.

So an export ends with a signature line: an HMAC-SHA256 of every byte before it, under a key
derived from this user's store key (`store_owner`, `~/.claude/engram/store-key`, 0600), which
no repository or teammate can read. An import keeps the origins a file states only when the
signature verifies; any other file (unsigned, signed by another engram, or edited after it
was written) is imported with every memory marked as imported from that file, the origin it
claimed kept beside it for the record. The user can vouch for a file with `--keep-origins`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import BinaryIO

from engram_mcp.core import store_owner

SIGNATURE_KIND = "signature"
SIGNATURE_FORMAT = "engram-export-signature v1"
#: What the export key is derived for: the store key itself never signs anything else.
_KEY_CONTEXT = b"engram export signature v1"
#: The signature line is short; reading this much from the end always holds it whole.
_TAIL_BYTES = 4096
_CHUNK_BYTES = 1 << 20

#: What `verify` says of a file.
SIGNED = "signed"  # by this user's engram, unchanged since
UNSIGNED = "unsigned"  # no signature line (another tool's JSONL, or an export from before signatures)
NOT_OURS = "not-ours"  # a signature that does not verify: another engram's key, or edited since


def export_key(user_dir: Path) -> bytes:
    """The key exports are signed with, derived from this user's store key."""
    return hmac.new(store_owner.load(user_dir).key, _KEY_CONTEXT, hashlib.sha256).digest()


class SigningWriter:
    """Writes text to a binary file and signs every byte written; `finish` appends the signature."""

    def __init__(self, raw: BinaryIO, key: bytes) -> None:
        self._raw = raw
        self._mac = hmac.new(key, digestmod=hashlib.sha256)

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self._mac.update(data)
        self._raw.write(data)

    def finish(self) -> None:
        """The signature line, last: it covers every line before it."""
        line = {"kind": SIGNATURE_KIND, "format": SIGNATURE_FORMAT, "hmac": self._mac.hexdigest()}
        self._raw.write((json.dumps(line) + "\n").encode("ascii"))


def verify(path: Path, key: bytes) -> str:
    """`SIGNED`, `UNSIGNED` or `NOT_OURS` for the file at `path` (read twice: its tail, then
    every byte before the signature line)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - _TAIL_BYTES))
        tail = f.read()
        body = tail.rstrip(b"\n")
        start = body.rfind(b"\n") + 1  # the last line's first byte, within `tail`
        claimed = _signature_of(body[start:])
        if claimed is None:
            return UNSIGNED
        signed_bytes = size - len(tail) + start
        f.seek(0)
        mac = hmac.new(key, digestmod=hashlib.sha256)
        left = signed_bytes
        while left > 0:
            chunk = f.read(min(_CHUNK_BYTES, left))
            if not chunk:
                return NOT_OURS
            mac.update(chunk)
            left -= len(chunk)
    return SIGNED if hmac.compare_digest(mac.hexdigest(), claimed) else NOT_OURS


def is_signature_line(obj: dict) -> bool:
    """Whether a parsed line is an export's signature (the import reads past it)."""
    return obj.get("kind") == SIGNATURE_KIND


def _signature_of(line: bytes) -> str | None:
    """The HMAC a signature line states, or None when the line is not one."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get("kind") != SIGNATURE_KIND or obj.get("format") != SIGNATURE_FORMAT:
        return None
    value = obj.get("hmac")
    return value if isinstance(value, str) else None
