"""The compiled decoder of the engine's answers (storage/wire.py): installed only when it agrees."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from engram_mcp.storage import wire
from engram_mcp.storage.store import SurrealStore


@pytest.fixture
def fresh_state(monkeypatch):
    import surrealdb.connections.blocking_embedded as embedded

    monkeypatch.setattr(embedded, "decode", embedded.decode)  # restored after the test
    monkeypatch.setattr(wire, "_state", {"installed": None, "reason": ""})
    return embedded


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

