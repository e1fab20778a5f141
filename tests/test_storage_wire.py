"""The compiled decoder of the engine's answers (storage/wire.py): installed only when it agrees."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from engram_mcp.storage import wire
from engram_mcp.storage.store import SurrealStore


def _fresh(monkeypatch, module, attribute: str, state: str):
    """`module.attribute` restored after the test, and wire's `state` as before any install."""
    monkeypatch.setattr(module, attribute, getattr(module, attribute))
    monkeypatch.setattr(wire, state, {"installed": None, "reason": ""})
    return module


@pytest.fixture
def fresh_state(monkeypatch):
    import surrealdb.connections.blocking_embedded as embedded

    return _fresh(monkeypatch, embedded, "decode", "_state")


def test_the_compiled_decoder_reads_what_the_sdk_reads(fresh_state):
    from surrealdb.data import cbor as sdk_cbor

    assert wire.install_fast_decoder() is True
    assert fresh_state.decode is not sdk_cbor.decode
    sample = sdk_cbor.encode(wire._sample())
    assert fresh_state.decode(sample) == sdk_cbor.decode(sample)
    row = fresh_state.decode(sample)["result"][0]["result"][0]
    assert row["created_at"] == datetime(2026, 11, 27, 3, 4, 5, 678901, tzinfo=timezone.utc)
    assert row["forgotten_at"] is None and row["id"].table_name == "memory"


def test_a_decoder_that_disagrees_is_not_installed(fresh_state, monkeypatch, caplog):
    import cbor2

    real = cbor2.loads
    monkeypatch.setattr(cbor2, "loads", lambda data, **kw: {**real(data, **kw), "id": "other"})
    before = fresh_state.decode
    assert wire.install_fast_decoder() is False
    assert fresh_state.decode is before
    assert "self-check" in wire.decoder_in_use()


def test_a_store_round_trip_through_the_compiled_decoder(tmp_path, fresh_state):
    store = SurrealStore(tmp_path / "s", label="test").open()
    try:
        assert wire.decoder_in_use() == "cbor2's compiled decoder"
        store.query("ns", "db", "CREATE type::thing('memory', 'k1') CONTENT $r RETURN NONE",
                    {"r": {"content": "ü \U0001f600", "embedding": b"\x00\x01" * 8, "when": datetime.now(timezone.utc)}})
        rows = store.query("ns", "db", "SELECT * FROM memory")
        assert rows[0]["content"] == "ü \U0001f600" and rows[0]["embedding"] == b"\x00\x01" * 8
        assert rows[0]["when"].tzinfo is not None
    finally:
        store.close()



@pytest.fixture
def fresh_encoder(monkeypatch):
    import surrealdb.request_message.descriptors.cbor_ws as requests

    return _fresh(monkeypatch, requests, "encode", "_encoder_state")


def test_the_compiled_encoder_writes_the_sdks_bytes(fresh_encoder):
    from surrealdb.data import cbor as sdk_cbor

    assert wire.install_fast_encoder() is True
    assert fresh_encoder.encode is not sdk_cbor.encode
    sample = wire._request_sample()
    assert fresh_encoder.encode(sample) == sdk_cbor.encode(sample)
    # None is NONE (tag 6), not CBOR null, wherever it sits
    assert fresh_encoder.encode({"a": [None, {"b": None}]}) == sdk_cbor.encode({"a": [None, {"b": None}]})
    assert b"\xc6\xf6" in fresh_encoder.encode({"x": None})
    # a naive datetime is taken as UTC, as the SDK takes it
    naive = datetime(2026, 1, 2, 3, 4, 5, 6)
    assert fresh_encoder.encode([naive]) == sdk_cbor.encode([naive])


def test_an_encoder_that_disagrees_is_not_installed(fresh_encoder, monkeypatch):
    import cbor2

    real = cbor2.dumps
    monkeypatch.setattr(cbor2, "dumps", lambda obj, **kw: real(obj, **kw) + b"\x00")
    before = fresh_encoder.encode
    assert wire.install_fast_encoder() is False
    assert fresh_encoder.encode is before
    assert "self-check" in wire.encoder_in_use()


def test_a_schemafull_write_through_the_compiled_encoder(tmp_path, fresh_state, fresh_encoder):
    """None must reach the engine as NONE: an option<string> field refuses NULL."""
    from surrealdb.data.types.record_id import RecordID

    store = SurrealStore(tmp_path / "s", label="test").open()
    try:
        assert wire.encoder_in_use() == "cbor2's compiled encoder"
        store.query("ns", "db", "DEFINE TABLE t SCHEMAFULL; DEFINE FIELD note ON t TYPE option<string>; "
                    "DEFINE FIELD at ON t TYPE datetime;")
        when = datetime(2026, 11, 27, 3, 4, 5, 678901, tzinfo=timezone.utc)
        store.query("ns", "db", "INSERT INTO t $rows RETURN NONE",
                    {"rows": [{"id": RecordID("t", "a"), "note": None, "at": when},
                              {"id": RecordID("t", "b"), "note": "ü", "at": when}]})
        rows = store.query("ns", "db", "SELECT * FROM t WHERE note = $none ORDER BY id", {"none": None})
        assert [r["id"].id for r in rows] == ["a"]
        assert rows[0]["at"] == when and "note" not in rows[0]
    finally:
        store.close()


def test_record_ids_are_built_as_the_sdk_builds_them():
    from surrealdb.data.types.record_id import RecordID

    make = wire._record_id_maker(RecordID)
    assert make is not RecordID  # the short path is in use on this SDK
    made = make("memory", "01JB")
    assert type(made) is RecordID and vars(made) == vars(RecordID("memory", "01JB")) and made == RecordID("memory", "01JB")

    class Different(RecordID):
        def __init__(self, table_name, identifier):
            super().__init__(table_name, identifier)
            self.extra = 1

    assert wire._record_id_maker(Different) is Different  # a constructor that does more is kept
