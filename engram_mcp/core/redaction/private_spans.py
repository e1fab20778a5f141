"""``<private>...</private>`` spans: what the user marked as never to be stored.

Removed before any secret rule runs (`sanitize` is `strip_private` then `redact`), so text
inside a span is neither stored nor scanned; each outermost span leaves ``[private]``.
"""

from __future__ import annotations

import re

from .labels import PRIVATE_PLACEHOLDER

# <private>, <PRIVATE reason="pii">, </private>; not <private-key> or <private_notes>
_PRIVATE_TAG = re.compile(r"<\s*+(/?)\s*+private(?:\s[^<>]*+)?>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """Replace every outermost ``<private>...</private>`` span with ``[private]``.

    Nesting-aware; an unclosed opening tag hides the rest of the text.
    """
    if not text or "<" not in text:
        return text
    lowered = text.lower()
    if "private" not in lowered:
        return text
    out: list[str] = []
    depth = 0
    pos = 0  # start of the not-yet-emitted visible text
    for m in _PRIVATE_TAG.finditer(text):
        closing = m.group(1) == "/"
        if not closing:
            if depth == 0:
                out.append(text[pos : m.start()])
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                out.append(PRIVATE_PLACEHOLDER)
                pos = m.end()
        # a stray closing tag at depth 0 is left in the visible text
    if depth > 0:
        out.append(PRIVATE_PLACEHOLDER)
    else:
        out.append(text[pos:])
    return "".join(out)
