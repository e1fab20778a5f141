"""A compiled decoder for the engine's answers, and a compiled encoder for its requests.

The embedded SDK hands every answer over as CBOR and decodes it with a pure-Python copy of
cbor2. Measured on this machine, that decoding was about 55% of an export's CPU time and
most of a store's index build (every row read at open). The `cbor2` package's compiled
decoder reads the same bytes 3-6x faster (3,000 memory rows of 5.5 MB: 0.30-0.58 s
against 0.09-0.17 s), with the SDK's own tag handling for SurrealDB's tags and a short path
for the three tags every row carries (datetime, record id, none).

It is installed only after a self-check: a sample holding every kind of value engram stores,
encoded by the SDK, must decode to exactly what the SDK's decoder gives. If `cbor2` is
missing or disagrees, the SDK's decoder stays and the reason is logged: slower, never wrong.

Requests go the other way through the SDK's pure-Python encoder, which costs about a quarter
of an INSERT of ready memory records (0.13 of 0.49 ms a record here; the engine holds the GIL
while it runs, so that time never overlaps it). `cbor2`'s compiled encoder writes the same
bytes in a fraction of it. Two things differ and are bridged: SurrealDB reads a plain CBOR null
as NULL, not NONE, so the SDK writes None as tag 6 (NONE), and the compiled encoder writes
None itself; every None in a request is therefore swapped for a marker first (`_none_tagged`).
The SDK's own types (record ids, tables, durations...) go through the SDK's tagging. The
encoder too is installed only when it writes exactly the SDK's bytes for a sample of every
kind of value engram sends.
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
_encoder_state: dict[str, Any] = {"installed": None, "reason": ""}


def _make_hook() -> Callable[..., Any]:
    """A tag hook for cbor2's decoder: the common tags inline, the rest by the SDK's own decoder."""
    from surrealdb.data import cbor as sdk_cbor
    from surrealdb.data.types import constants
    from surrealdb.data.types.record_id import RecordID

    datetime_tag = constants.TAG_DATETIME_COMPACT
    record_tag = constants.TAG_RECORD_ID
    none_tag = constants.TAG_NONE
    sdk_hook = sdk_cbor.tag_decoder
    record_id = _record_id_maker(RecordID)

    def hook(*args: Any) -> Any:
        tag = args[0] if hasattr(args[0], "tag") else args[1]  # cbor2 6 passes (tag, ...); 5 (decoder, tag)
        number = tag.tag
        if number == datetime_tag:
            value = tag.value
            return _EPOCH + timedelta(0, value[0], value[1] // 1000)  # positional: 0.7 us, not 1.8
        if number == record_tag:
            return record_id(tag.value[0], tag.value[1])
        if number == none_tag:
            return None
        return sdk_hook(None, tag)  # type: ignore[arg-type]  # the SDK hook never reads its decoder

    return hook


def _record_id_maker(record_class: Any) -> Callable[[str, Any], Any]:
    """The SDK's record id without its constructor, which imports a module on every call
    (2.9 us against 0.34 us here; an export or index rebuild of 100k memories makes 100-200k).
    Used only when it builds what the constructor builds (same attributes), else the constructor."""
    new = record_class.__new__

    def make(table: str, key: Any) -> Any:
        made = new(record_class)
        made.table_name = table
        made.id = key
        return made

    try:
        same = vars(make("memory", "k")) == vars(record_class("memory", "k"))
    except TypeError:  # no instance dict (slots): the constructor it is
        same = False
    return make if same else record_class


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


def _install_checked(
    state: dict[str, Any],
    make: Callable[[], Callable[..., Any]],
    agrees: Callable[[Callable[..., Any]], bool],
    put: Callable[[Callable[..., Any]], None],
    *,
    what: str,
    verb: str,
    differs: str,
) -> bool:
    """Once per process (`state`): `make` the compiled `what` ("decoder", "encoder"), keep it
    only if it `agrees` with the SDK's on the self-check, then `put` it in the SDK's place.
    Otherwise the SDK's stays; `state["reason"]` says which is in use and why."""
    with _lock:
        if state["installed"] is not None:
            return bool(state["installed"])
        state["installed"] = False
        try:
            codec = make()
        except (ImportError, AttributeError) as exc:
            state["reason"] = f"cbor2's {what} is not usable ({exc}); the SDK's slower {what} is used"
            log.info(state["reason"])
            return False
        try:
            ok, detail = agrees(codec), differs
        except Exception as exc:  # any disagreement in kind: keep the SDK's
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        if not ok:
            state["reason"] = f"cbor2's {what} {verb} {detail} on the self-check; the SDK's {what} is used"
            log.warning(state["reason"])
            return False
        put(codec)
        state["installed"] = True
        state["reason"] = f"cbor2's compiled {what}"
        return True


def install_fast_decoder() -> bool:
    """Put the compiled decoder in the SDK's embedded connection, once per process, if it agrees."""

    def make() -> Callable[[bytes], Any]:
        import cbor2

        hook = _make_hook()
        return lambda data: cbor2.loads(data, tag_hook=hook)

    def agrees(decode: Callable[[bytes], Any]) -> bool:
        from surrealdb.data import cbor as sdk_cbor

        sample = sdk_cbor.encode(_sample())
        return bool(decode(sample) == sdk_cbor.decode(sample))

    def put(decode: Callable[[bytes], Any]) -> None:
        import surrealdb.connections.blocking_embedded as embedded

        embedded.decode = decode  # type: ignore[assignment]

    return _install_checked(_state, make, agrees, put, what="decoder", verb="gave", differs="a different value")


class _NoneMarker:
    """Stands for None inside a request, so the compiled encoder calls the hook for it."""

    __slots__ = ()


_NONE = _NoneMarker()
_SCALARS = frozenset((str, int, float, bool, bytes))  # written as they are
_UTC = timezone.utc


def _datetime_tag(value: datetime) -> Any:
    """A datetime as the SDK writes it (tag 0, RFC 3339, UTC as Z; naive taken as UTC): the
    compiled encoder's own datetime path costs ~7 us a value, 4 of them on every memory row."""
    import cbor2

    if value.tzinfo is None:
        value = value.replace(tzinfo=_UTC)
    return cbor2.CBORTag(0, value.isoformat().replace("+00:00", "Z"))


def _none_tagged(value: Any) -> Any:
    """A copy of `value` with every None (in lists, tuples and dict values) as the marker and
    every datetime as its tag.

    Dict keys are left alone: CBOR keys are never None in anything engram sends."""
    kind = type(value)
    if kind is dict:
        return {k: (v if type(v) in _SCALARS else _none_tagged(v)) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else _none_tagged(v) for v in value]
    if value is None:
        return _NONE
    if kind is datetime:
        return _datetime_tag(value)
    if isinstance(value, dict):  # a subclass (OrderedDict, defaultdict...): the SDK writes a map
        return {k: _none_tagged(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_none_tagged(v) for v in value]
    if isinstance(value, datetime):
        return _datetime_tag(value)
    return value


def _make_encoder() -> Callable[[Any], bytes]:
    """cbor2's compiled dumps with the SDK's tags (tag 6 for None, the SDK's types by its own hook)."""
    import cbor2
    from surrealdb.data import cbor as sdk_cbor
    from surrealdb.data.types import constants
    from surrealdb.data.types.record_id import RecordID

    none_tag = cbor2.CBORTag(constants.TAG_NONE, None)
    record_tag = constants.TAG_RECORD_ID
    sdk_default = getattr(sdk_cbor.default_encoder, "__wrapped__", sdk_cbor.default_encoder)
    dumps = cbor2.dumps

    class _Tagged:
        """Catches the tag the SDK's hook builds (its own CBORTag class, unknown to cbor2)."""

        tagged: Any = None

        def encode(self, tagged: Any) -> None:
            self.tagged = tagged

    def default(encoder: Any, value: Any) -> None:
        if value is _NONE:
            encoder.encode(none_tag)
        elif type(value) is RecordID:
            encoder.encode(cbor2.CBORTag(record_tag, [value.table_name, value.id]))
        else:
            caught = _Tagged()
            sdk_default(caught, value)  # type: ignore[arg-type]  # raises for a type the SDK cannot send either
            encoder.encode(cbor2.CBORTag(caught.tagged.tag, caught.tagged.value))

    def encode(obj: Any) -> bytes:
        return dumps(_none_tagged(obj), default=default, timezone=_UTC)

    return encode


def _request_sample() -> Any:
    """Every kind of value engram sends to the engine, in a request as the SDK builds it."""
    from collections import OrderedDict

    from surrealdb.data.types.record_id import RecordID
    from surrealdb.data.types.table import Table

    now = datetime(2026, 11, 27, 3, 4, 5, 678901, tzinfo=timezone.utc)
    row = {
        "id": RecordID("memory", "01JBCDEFGHJKMNPQRSTVWXYZ12"),
        "content": "text with ünïcode, \U0001f600 and quotes \"'",
        "tags": ["a", "b"],
        "importance": 0.625,
        "small": 1e-300,
        "access_count": 3,
        "negative": -7,
        "big": 2**70,
        "flag": True,
        "embedding": bytes(range(256)) * 6,
        "created_at": now,
        "summary": None,
        "metadata": {"nested": [1, 2.5, "x", None, False, (3, None)], "empty": {}, "none": None},
        "ordered": OrderedDict(a=None, b=[None]),
        "promotion_chain": [{"from": "session", "at": now}],
        "empty_list": [],
    }
    params = {"rows": [row, {**row, "content": ""}], "key": "k", "limit": 10, "table": Table("memory"), "gone": None}
    return {"id": "x", "method": "query", "params": ["INSERT INTO memory $rows RETURN NONE", params]}


def install_fast_encoder() -> bool:
    """Put the compiled encoder in the SDK's request path, once per process, if it agrees."""

    def agrees(encode: Callable[[Any], bytes]) -> bool:
        from surrealdb.data import cbor as sdk_cbor

        sample = _request_sample()
        return encode(sample) == sdk_cbor.encode(sample)

    def put(encode: Callable[[Any], bytes]) -> None:
        import surrealdb.request_message.descriptors.cbor_ws as requests

        requests.encode = encode  # type: ignore[assignment]

    return _install_checked(
        _encoder_state, _make_encoder, agrees, put, what="encoder", verb="wrote", differs="different bytes"
    )


def encoder_in_use() -> str:
    """Which encoder the requests to the engine go through (for status and logs)."""
    return str(_encoder_state["reason"] or "not chosen yet")


def decoder_in_use() -> str:
    """Which decoder the engine's answers go through (for status and logs)."""
    return str(_state["reason"] or "not chosen yet")
