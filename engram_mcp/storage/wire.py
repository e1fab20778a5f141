"""A compiled decoder for the engine's answers.

The embedded SDK hands every answer over as CBOR and decodes it with a pure-Python copy of
cbor2. Measured on this machine, that decoding was about 55% of an export's CPU time and
most of a store's index build (every row read at open). The `cbor2` package's compiled
decoder reads the same bytes 3-6x faster (3,000 memory rows of 5.5 MB: 0.30-0.58 s
against 0.09-0.17 s), with the SDK's own tag handling for SurrealDB's tags and a short path
for the three tags every row carries (datetime, record id, none).

It is installed only after a self-check: a sample holding every kind of value engram stores,
encoded by the SDK, must decode to exactly what the SDK's decoder gives. If `cbor2` is
missing or disagrees, the SDK's decoder stays and the reason is logged: slower, never wrong.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

log = logging.getLogger("engram.store")

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_lock = threading.Lock()
_state: dict[str, Any] = {"installed": None, "reason": ""}


def _make_hook() -> Callable[..., Any]:
    """A tag hook for cbor2's decoder: the common tags inline, the rest by the SDK's own decoder."""
    from surrealdb.data import cbor as sdk_cbor
    from surrealdb.data.types import constants
    from surrealdb.data.types.record_id import RecordID

    datetime_tag = constants.TAG_DATETIME_COMPACT
    record_tag = constants.TAG_RECORD_ID
    none_tag = constants.TAG_NONE
    sdk_hook = sdk_cbor.tag_decoder

    def hook(*args: Any) -> Any:
        tag = args[0] if hasattr(args[0], "tag") else args[1]  # cbor2 6 passes (tag, ...); 5 (decoder, tag)
        number = tag.tag
        if number == datetime_tag:
            value = tag.value
            return _EPOCH + timedelta(seconds=value[0], microseconds=value[1] // 1000)
        if number == record_tag:
            return RecordID(tag.value[0], tag.value[1])
        if number == none_tag:
            return None
        return sdk_hook(None, tag)  # type: ignore[arg-type]  # the SDK hook never reads its decoder

    return hook


def _sample() -> Any:
    """Every kind of value engram keeps, as the engine would send it back."""
    from surrealdb.cbor import CBORTag
    from surrealdb.data.types import constants
    from surrealdb.data.types.record_id import RecordID

    # the engine sends a datetime as [seconds, nanoseconds] under its own tag
    now = CBORTag(constants.TAG_DATETIME_COMPACT, [1795748645, 678901234])
    row = {
        "id": RecordID("memory", "01JBCDEFGHJKMNPQRSTVWXYZ12"),
        "content": "text with ünïcode, \U0001f600 and a NUL-free body",
        "tags": ["a", "b"],
        "importance": 0.625,
        "access_count": 3,
        "embedding": bytes(range(256)) * 6,
        "created_at": now,
        "forgotten_at": CBORTag(constants.TAG_NONE, None),
        "plain_null": None,
        "metadata": {"nested": [1, 2.5, "x", None, True], "empty": {}},
        "promotion_chain": [{"from": "session", "at": now}],
    }
    return {"result": [{"result": [row, {**row, "content": ""}], "status": "OK", "time": "1ms"}], "id": "x"}


def install_fast_decoder() -> bool:
    """Put the compiled decoder in the SDK's embedded connection, once per process, if it agrees."""
    with _lock:
        if _state["installed"] is not None:
            return bool(_state["installed"])
        _state["installed"] = False
        try:
            import cbor2
            import surrealdb.connections.blocking_embedded as embedded
            from surrealdb.data import cbor as sdk_cbor
        except ImportError as exc:
            _state["reason"] = f"cbor2 is not installed ({exc}); the SDK's slower decoder is used"
            log.info(_state["reason"])
            return False
        hook = _make_hook()

        def decode(data: bytes) -> Any:
            return cbor2.loads(data, tag_hook=hook)

        try:
            sample = sdk_cbor.encode(_sample())
            agrees = decode(sample) == sdk_cbor.decode(sample)
        except Exception as exc:  # any disagreement in kind: keep the SDK's decoder
            agrees, detail = False, f"{type(exc).__name__}: {exc}"
        else:
            detail = "a different value"
        if not agrees:
            _state["reason"] = f"cbor2's decoder gave {detail} on the self-check; the SDK's decoder is used"
            log.warning(_state["reason"])
            return False
        embedded.decode = decode
        _state["installed"] = True
        _state["reason"] = "cbor2's compiled decoder"
        return True


def decoder_in_use() -> str:
    """Which decoder the engine's answers go through (for status and logs)."""
    return str(_state["reason"] or "not chosen yet")
