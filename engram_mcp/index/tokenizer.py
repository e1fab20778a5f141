"""The BM25 tokenizer: lowercase words, English stop words dropped, Snowball-stemmed, identifiers split.

Shared by the BM25 index (`bm25.py`) and the knowledge graph's entity matching, so a query and a
memory are always cut into the same terms.
"""

from __future__ import annotations

import re

import Stemmer

__all__ = ["ENGLISH_STOP_WORDS", "TOKENIZER_VERSION", "tokenize"]

#: Bumped whenever `tokenize` cuts a text into other terms: a persisted BM25 index holds the terms
#: of its day, so an index file stamped with another version is rebuilt from the store.
#: 2: hyphenated compounds are also indexed solid.
TOKENIZER_VERSION = 2

# Close to NLTK's English list (the one common BM25 baselines use), plus
# the fragments left by splitting contractions on the apostrophe ("don't" -> "don", "t").
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against ain all am an and any are aren arent as at
    be because been before being below between both but by
    can cannot could couldn couldnt d did didn didnt do does doesn doesnt doing don dont down during
    each few for from further
    had hadn hadnt has hasn hasnt have haven havent having he her here hers herself him himself his how
    i if in into is isn isnt it its itself
    just ll m ma me mightn more most mustn my myself
    needn no nor not now o of off on once only or other our ours ourselves out over own
    re s same shan she should shouldn so some such
    t than that thats the their theirs them themselves then there these they this those through to too
    under until up ve very
    was wasn we were weren what when where which while who whom why will with won wouldn wouldnt
    y you your yours yourself yourselves
    """.split()
)

_WORD_RE = re.compile(r"\w+")  # str patterns are Unicode-aware: letters and digits of any script
# Words joined by hyphens ("to-do", "pre-commit", "re-run"); letters only, so ranges, dates,
# versions and flags ("3.6-beta", "2024-06-11", "--force-with-lease" parts) are left alone.
_HYPHENATED_RE = re.compile(r"(?<![\w-])[^\W\d_]+(?:-[^\W\d_]+)+(?![\w-])")
_STEMMER = Stemmer.Stemmer("english")
_TOKEN_CACHE_MAX_ENTRIES = 200_000  # raw token -> terms; ~30 MB when full, then cleared wholesale
_token_cache: dict[str, tuple[str, ...]] = {}


def tokenize(text: str) -> list[str]:
    """Split text into BM25 terms: lowercase, stop words dropped, Snowball-stemmed.

    Identifiers are indexed both whole and by part ("getUserName" -> get, user, name, getusername;
    "user_name" -> user, name, username) so a memory about `parseConfigFile` is found by
    "parse config" and by the identifier itself. Underscores are dropped from the whole form so the
    snake_case and camelCase spellings of one name meet.

    A hyphenated compound is indexed by its parts and also written solid ("to-do" -> todo,
    "pre-commit" -> pre, commit, precommit): people spell these both ways ("TODO", "precommit",
    "rerun"), and the parts alone are often stop words or too common to match ("to", "do", "re").

    Speed: terms are cached per raw token (the same words recur), so a 20-word sentence takes a few
    microseconds once its words have been seen.
    """
    out: list[str] = []
    cache = _token_cache
    raws = _WORD_RE.findall(text)
    if "-" in text:
        raws.extend(m.replace("-", "") for m in _HYPHENATED_RE.findall(text))
    for raw in raws:
        terms = cache.get(raw)
        if terms is None:
            terms = _terms_of_token(raw)
            if len(cache) >= _TOKEN_CACHE_MAX_ENTRIES:
                cache.clear()
            cache[raw] = terms
        out.extend(terms)
    return out


def _terms_of_token(raw: str) -> tuple[str, ...]:
    """Terms produced by one `\\w+` token (uncached path)."""
    low = raw.lower()
    if "_" not in raw and (raw == low or raw[1:] == low[1:]):  # plain or Capitalised word
        return () if low in ENGLISH_STOP_WORDS else (_STEMMER.stemWord(low),)
    parts = [p.lower() for p in _identifier_parts(raw)]
    words = [p for p in parts if p not in ENGLISH_STOP_WORDS]
    whole = low.replace("_", "")
    if whole and len(parts) > 1:
        words.append(whole)
    elif whole and not words and whole not in ENGLISH_STOP_WORDS:
        words.append(whole)
    return tuple(dict.fromkeys(_STEMMER.stemWords(words)))


def _identifier_parts(raw: str) -> list[str]:
    """Parts of a snake_case / camelCase / PascalCase / HTTPServer-style identifier."""
    parts: list[str] = []
    for chunk in raw.split("_"):
        if chunk:
            parts.extend(_camel_parts(chunk))
    return parts


def _camel_parts(chunk: str) -> list[str]:
    """Split on lower->Upper, digit->Upper and ACRONYMWord boundaries (any script with case)."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(chunk)):
        prev, cur = chunk[i - 1], chunk[i]
        if not cur.isupper():
            continue
        after_lower = prev.islower() or prev.isdigit()
        acronym_end = prev.isupper() and i + 1 < len(chunk) and chunk[i + 1].islower()
        if after_lower or acronym_end:
            parts.append(chunk[start:i])
            start = i
    parts.append(chunk[start:])
    return parts
