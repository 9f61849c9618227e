"""A snapshot row whose checksum matches but whose configuration does not decode (written so by a
broken or hostile writer, not by a flipped bit) is corruption with its own words; a failed write is
reported by the store (the metrics endpoint reads it) until the store is reopened."""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.storage.interface import CorruptLog, HardState, SnapshotMeta, StorageError
from garlicfarm.storage.sqlite import SQLiteLogStore, snapshot_crc
from tests.storage.conftest import app, config
from tests.storage.test_sqlite import filled, raw, refused


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "node.db"
    filled(path, count=5)
    return path


def test_a_snapshot_whose_configuration_does_not_decode_is_corruption(path: Path) -> None:
    with SQLiteLogStore(path) as store:
        store.compact(SnapshotMeta(2, 1, config(1, 1)))
    blob = b"\x00" * 5
    raw(path).execute(
        "UPDATE snapshot SET config = ?, crc = ?", (blob, snapshot_crc(2, 1, blob))
    ).connection.close()
    error = refused(path, "snapshot has a configuration that does not decode")
    assert isinstance(error, CorruptLog)


def test_a_failed_write_is_reported_until_the_store_is_reopened(path: Path) -> None:
    store = SQLiteLogStore(path)
    before = store.write_error
    assert before is None
    conn = store._conn
    assert conn is not None
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0] + 2}")
    with pytest.raises(StorageError) as info:
        store.save(HardState(4, 1, 0), 6, [app(4, "x" * 4000) for _ in range(10)])
    assert store.write_error == str(info.value)
    store.close()
    with SQLiteLogStore(path) as again:
        assert again.write_error is None
