"""The public calls: `redact`, `sanitize`, `redact_obj`, `redact_outbound`, `redact_outbound_obj`.

`sanitize` (strings) and `redact_obj` (JSON-like objects, their dict keys used as context) are
what every storing path calls; the outbound variants add the stricter pass for what leaves the
machine. The clean (key, value) pairs of objects are remembered (`_CLEAN_PAIRS`), so an
import's repeated metadata is redacted once.
"""

from __future__ import annotations

from collections import Counter

from .echoes import _redact_echoes
from .key_names import _classify, _normalize_key
from .labels import Finding, RedactionResult, _findings, label_for
from .outbound import _outbound_forms
from .passes import _redact_counts
from .private_spans import strip_private
from .prose import _prose_pass
from .values import _CODE_PREFIX, _is_placeholder

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at runtime (hook start-up budget)
    from typing import Any


def redact(text: str) -> RedactionResult:
    """Replace every detected secret with ``[REDACTED:<kind>]``."""
    if not isinstance(text, str):
        raise TypeError(f"redact() expects str, got {type(text).__name__}")
    counts: Counter = Counter()
    out = _redact_echoes(text, _redact_counts(text, counts), counts)
    return RedactionResult(out, _findings(counts))


def sanitize(text: str) -> RedactionResult:
    """``strip_private`` then ``redact``: the one call every storing path uses."""
    if not isinstance(text, str):
        raise TypeError(f"sanitize() expects str, got {type(text).__name__}")
    return redact(strip_private(text))


def _sanitize_pair(key: Any, value: str, counts: Counter, outbound: bool = False) -> str:
    """Sanitize a string value, using its dict key as context: the same passes as `sanitize`
    (or `redact_outbound`, which an export's and a shared file's every field must get whole:
    its login pairs, hex key values and echoes too), then the key's say."""
    counts_before = sum(counts.values())
    out = _text_passes(value, counts, outbound)
    if sum(counts.values()) != counts_before or not isinstance(key, str):
        return out
    # the value alone did not reveal a secret: `{"password": "hunter2"}`
    if _normalize_key(key) in ("authorization", "proxy_authorization"):
        v = out.strip()
        scheme, _, cred = v.partition(" ")
        if cred and scheme.lower() in ("bearer", "basic", "token", "negotiate", "ntlm"):
            if not _is_placeholder(cred) and len(cred) >= 4:
                counts["bearer-token"] += 1
                return f"{scheme} {label_for('bearer-token')}"
        elif v and not _is_placeholder(v) and len(v) >= 8:
            counts["bearer-token"] += 1
            return label_for("bearer-token")
        return out
    if _CODE_PREFIX.match(out.strip()):
        return out
    kind = _classify(key, out)
    if kind is None:
        return out
    counts[kind] += 1
    return label_for(kind)


#: Clean (key, value) pairs already seen, and how many at most: an import's records repeat the
#: same metadata values (a source's name, an entity, a project) thousands of times, ~13 fields a
#: record. Only a value that came out unchanged and found nothing is kept, so the memo holds no
#: secret and no <private> span: text the store keeps anyway.
_CLEAN_PAIRS: dict[tuple[str | None, str, bool | None], None] = {}
_CLEAN_PAIRS_MAX = 4096
_CLEAN_VALUE_CHARS = 300


def _sanitize_pair_memo(key: Any, value: str, counts: Counter, outbound: bool) -> str:
    memo = (key if isinstance(key, str) else None, value, outbound)
    if len(value) <= _CLEAN_VALUE_CHARS and memo in _CLEAN_PAIRS:
        return value
    found: Counter = Counter()
    out = _sanitize_pair(key, value, found, outbound)
    if found:
        counts.update(found)
    elif out == value and len(value) <= _CLEAN_VALUE_CHARS:
        if len(_CLEAN_PAIRS) >= _CLEAN_PAIRS_MAX:
            _CLEAN_PAIRS.clear()
        _CLEAN_PAIRS[memo] = None
    return out


def _clean_key(k: str, counts: Counter) -> str:
    """A dict key redacted (`_walk`); the keys of a record are the same few names every time."""
    memo = (None, k, None)
    if len(k) <= _CLEAN_VALUE_CHARS and memo in _CLEAN_PAIRS:
        return k
    found: Counter = Counter()
    nk = _redact_counts(strip_private(k), found)
    if found:
        counts.update(found)
    elif nk == k and len(k) <= _CLEAN_VALUE_CHARS:
        if len(_CLEAN_PAIRS) >= _CLEAN_PAIRS_MAX:
            _CLEAN_PAIRS.clear()
        _CLEAN_PAIRS[memo] = None
    return nk


def _walk(obj: Any, counts: Counter, key: Any = None, outbound: bool = False) -> Any:
    if isinstance(obj, str):
        return _sanitize_pair_memo(key, obj, counts, outbound)
    if isinstance(obj, dict):
        new: dict = {}
        for k, v in obj.items():
            nk = _clean_key(k, counts) if isinstance(k, str) else k
            if nk != k and nk in new:  # two secret keys redacted to the same label
                n = 2
                while f"{nk}#{n}" in new:
                    n += 1
                nk = f"{nk}#{n}"
            new[nk] = _walk(v, counts, k, outbound)
        return new
    if isinstance(obj, list):
        return [_walk(v, counts, key, outbound) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, counts, key, outbound) for v in obj)
    return obj


def redact_obj(obj: Any) -> tuple[Any, tuple[Finding, ...]]:
    """Recursively sanitize every string in dicts/lists/tuples.

    Dict keys are used as context: ``{"password": "hunter2"}`` is redacted even
    though ``hunter2`` alone is not recognisable.  Returns ``(new_obj,
    findings)``; the input is not modified.  Non-string scalars are kept.
    """
    counts: Counter = Counter()
    new = _walk(obj, counts)
    return new, _findings(counts)


def _text_passes(text: str, counts: Counter, outbound: bool) -> str:
    """`sanitize`'s passes, or `redact_outbound`'s, on `text`; what they found added to `counts`."""
    stripped = strip_private(text)
    out = _redact_counts(stripped, counts)
    if outbound:
        out = _outbound_forms(_prose_pass(out, counts, outbound=True), counts)
    return _redact_echoes(stripped, out, counts)


def redact_outbound(text: str) -> RedactionResult:
    """The stricter pass for text that leaves the machine (a team file in git, the user sync
    folder, an export): everything :func:`sanitize` removes, plus secrets in prose with weaker
    values (``the password is changeme``, a PIN) and any random-looking token within a line's
    reach of a key name in any language (``AWS key ... secret 9xK2...``). It accepts more false
    positives than the local pass (``bench/secrets_bench.py`` counts them): a commit hash beside
    the word ``token`` may be replaced in a shared file, never a secret left in one."""
    if not isinstance(text, str):
        raise TypeError(f"redact_outbound() expects str, got {type(text).__name__}")
    counts: Counter = Counter()
    return RedactionResult(_text_passes(text, counts, outbound=True), _findings(counts))


def redact_outbound_obj(obj: Any) -> tuple[Any, tuple[Finding, ...]]:
    """:func:`redact_obj` with the outbound pass (:func:`redact_outbound`) on every string."""
    counts: Counter = Counter()
    new = _walk(obj, counts, outbound=True)
    return new, _findings(counts)
