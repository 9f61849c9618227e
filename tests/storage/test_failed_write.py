"""A write that fails part-way leaves nothing of itself: the store rolls its transaction back, so the
entries it had inserted are not read back by the same connection, and the file holds the state from
before it. SQLite rolls back on its own after some errors (a full disk); an error raised between two
statements of a transaction is left to the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.storage.interface import HardState, StorageError
from garlicfarm.storage.sqlite import SQLiteLogStore
from tests.storage.conftest import app


class FailingAt:
    """A connection whose statement starting with ``prefix`` fails, as an I/O error would."""

    def __init__(self, inner: sqlite3.Connection, prefix: str) -> None:
        self.inner, self.prefix = inner, prefix

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.startswith(self.prefix):
            raise sqlite3.OperationalError("disk I/O error")
        return self.inner.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_save_that_fails_after_its_entries_leaves_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "node.db"
    store = SQLiteLogStore(path)
    store.save(HardState(1, 1, 1), 1, [app(1, "kept")])
    real = store._conn
    assert real is not None
    store._conn = FailingAt(real, "INSERT OR REPLACE INTO hard_state")  # type: ignore[assignment]
    with pytest.raises(StorageError, match="save failed: disk I/O error"):
        store.save(HardState(2, 2, 1), 2, [app(2, "lost")])
    assert not real.in_transaction
    store._conn = real
    assert store.load().entries == (app(1, "kept"),)
    store.close()
    with SQLiteLogStore(path) as again:
        assert again.load().entries == (app(1, "kept"),)
        assert again.load().hard_state == HardState(1, 1, 1)
