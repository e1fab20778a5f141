"""Text that is safe to show: in a terminal, and in Claude's context.

Memory bodies, file names, tags and team files come from other people (a cloned repository,
a synced folder, an import). Shown raw, their bytes act: an ANSI or OSC escape rewrites the
terminal (hides lines, fakes a prompt, plants a hyperlink, sets the window title), a carriage
return overprints a line, bidi controls make ``rm -rf /`` read as something harmless, and
zero-width or Unicode "tag" characters carry instructions a human reviewer cannot see but a
model reads. These functions remove all of that and keep everything readable.

Standard library only and a few regular expressions: the hooks call this under ``python -S``
on every prompt, so it must import in microseconds and run in linear time.
"""

from __future__ import annotations

import re

__all__ = ["context_safe", "one_line", "printable"]

#: Escape sequences, removed whole so their parameters do not leak into the text:
#: CSI (colours, cursor moves, erase), OSC (titles, hyperlinks, clipboard) up to BEL or ST
#: or the end of the text, DCS/SOS/PM/APC strings, and two-byte ESC sequences; each in its
#: 7-bit (ESC ...) and 8-bit (C1 byte) form.
_ESCAPE_RE = re.compile(
    r"""
      (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?          # CSI ... final
    | (?:\x1b[\]P^_X]|[\x9d\x90\x9e\x9f\x98]) [^\x07\x1b\x9c\n]* (?:\x07|\x1b\\|\x9c)?  # OSC/DCS/PM/APC/SOS ... ST
    | \x1b [\x20-\x2f]* [\x30-\x7e]?                                   # nF / Fp / Fe / Fs: ESC ( B, ESC 7, ESC c
    """,
    re.VERBOSE,
)

#: Characters removed: C0 controls but tab and newline, DEL and C1 controls, and every
#: Unicode format (Cf) character: soft hyphen, Arabic number signs, bidi embeddings,
#: overrides and isolates (U+202A-202E, U+2066-2069, U+200E/F, U+061C), zero-width space,
#: joiners and word joiner (U+200B-200D, U+2060-2064), BOM, interlinear annotations, tag
#: characters (U+E0000-E007F, "ASCII smuggling") and the rest; tests/test_display.py checks
#: this class against unicodedata. Variation selectors supplement (U+E0100-E01EF) is removed
#: too: it encodes hidden bytes the same way and has no use in engram's text; so are the
#: variation selectors U+FE00-FE0E (sixteen of them hide a byte per pair; U+FE0F, the emoji
#: presentation selector, is kept alone and removed in runs), the Mongolian free variation
#: selectors, and the characters that draw nothing: the combining grapheme joiner (U+034F),
#: the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0) and the Khmer inherent vowels (U+17B4-5).
_REMOVED_RE = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb"
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\uffa0\ufe00-\ufe0e"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
    "]+"
    "|\ufe0f{2,}"
)
#: Line breaks other than "\n": a lone carriage return overprints the line on a terminal;
#: U+2028/U+2029 and NEL break lines in some renderers but not others. All become "\n".
_LINE_BREAK_RE = re.compile("\r\n?|[\u2028\u2029\x85]")
#: Lone surrogates (from a file decoded with surrogateescape) cannot be encoded for output.
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` for a terminal: escape sequences, control, bidi, zero-width and other format
    characters removed; newlines and tabs kept, every other line break made a newline."""
    text = _LINE_BREAK_RE.sub("\n", text)
    text = _ESCAPE_RE.sub("", text)
    text = _REMOVED_RE.sub("", text)
    return _SURROGATE_RE.sub("\ufffd", text)


def one_line(text: str) -> str:
    """`text` for one line of a report: :func:`printable`, and every line break or tab shown as
    ``\\n`` / ``\\t``. A file name or an author is one field: a newline in it (git and every
    file system allow one) must not start a line of its own, which could pass for the report's
    own ("updated: ...", "0 file(s) need a person") or hide the lines after it."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def context_safe(text: str) -> str:
    """`text` for Claude's context: nothing invisible to the user who reads the same memory
    (hidden tag characters, zero-width, bidi, escapes) reaches the model; newlines are kept.
    The same rules as :func:`printable`, named for its use so the two can diverge."""
    return printable(text)
