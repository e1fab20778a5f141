"""Secrets by their column: a markdown table's cells under a `password` column, the values an
SQL `INSERT` gives to a column named like a secret.

A table or an INSERT names the key once, in its header, and the values rows below or a list
later: no assignment rule sees the two together, so the columns are read here and each value
judged under its column's name.
"""

from __future__ import annotations

import re

from .key_names import _classify
from .labels import _LABEL_MARK
from .values import _is_placeholder

_TABLE_HEADER = re.compile(r"(?m)^[ \t]*\|(?P<cells>[^\n]*\|)[ \t]*\r?\n[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$")
_TABLE_SECRET_COLUMN = re.compile(
    r"(?i)^(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|api[ _-]?key|pin|credentials?)$"
)


def _table_secrets(text: str) -> list[tuple[int, int, str]]:
    """The cells under a markdown table's column named like a secret (`| user | password |`)."""
    if "|" not in text or "---" not in text:
        return []
    out = []
    for m in _TABLE_HEADER.finditer(text):
        names = [c.strip() for c in m.group("cells").split("|")[:-1]]
        columns = [i for i, name in enumerate(names) if _TABLE_SECRET_COLUMN.match(name)]
        if not columns:
            continue
        pos = m.end() + 1
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end == -1 else end
            line = text[pos:end]
            if not line.lstrip().startswith("|"):
                break
            cells, start = [], pos + line.index("|") + 1
            for part in line[line.index("|") + 1 :].split("|")[: len(names)]:
                cells.append((start, start + len(part)))
                start += len(part) + 1
            for i in columns:
                if i < len(cells):
                    s, e = cells[i]
                    value = text[s:e].strip()
                    if value and " " not in value and not _is_placeholder(value) and _LABEL_MARK not in value:
                        s += text[s:e].index(value)
                        out.append((s, s + len(value), "password"))
            pos = end + 1
    return out


_SQL_INSERT = re.compile(
    r"(?is)insert\s+into\s+[\w.\"`\[\]]{1,128}\s*\((?P<cols>[^()]{1,1000})\)\s*values\s*\((?P<vals>[^;]{1,4000}?)\)\s*(?:[,;]|$)"
)
# (an unquoted value ends at its last character that is no space, one way only: a lazy `[^,']*?`
# before `\s*` tried every end in a run of spaces, O(n^2): 0.3 s for one 4,000-character row)
_SQL_VALUE = re.compile(r"\s*+(?:'(?P<sq>(?:[^']|'')*)'|\"(?P<dq>[^\"]*)\"|(?P<other>(?:\s*[^,'\s])*))\s*(?:,|$)")


def _sql_inserts(text: str) -> list[tuple[int, int, str]]:
    """The values of an `INSERT INTO t (…, api_key, …) VALUES (…, '…', …)` under a column named
    like a secret, judged as that column's assignment would be."""
    if "insert" not in text.lower():
        return []
    out = []
    for m in _SQL_INSERT.finditer(text):
        columns = [c.strip(' \t\r\n"`[]') for c in m.group("cols").split(",")]
        pos, end = m.start("vals"), m.end("vals")
        for column in columns:
            v = _SQL_VALUE.match(text, pos, end)
            if v is None or v.end() == pos:
                break
            group = "sq" if v.group("sq") is not None else "dq" if v.group("dq") is not None else None
            if group is not None and _classify(column, v.group(group)) is not None:
                out.append((v.start(group), v.end(group), "password-assignment"))
            pos = v.end()
    return out
