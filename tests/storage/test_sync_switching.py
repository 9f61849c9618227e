"""Which saves are fsynced: SQLite syncs a WAL commit when ``synchronous`` is FULL at that commit, so
the statements the store sends around each save are what decides it. A save is synced unless the
caller says ``sync=False`` (the commit index alone); a store opened with ``fsync=False`` never
switches; each synced save, and only those, is timed for the metrics endpoint; a save with nothing
to write sends no statement at all."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from garlicfarm.storage.interface import HardState
from garlicfarm.storage.sqlite import SQLiteLogStore
from tests.storage.conftest import app

OFF, FULL = "PRAGMA synchronous = OFF", "PRAGMA synchronous = FULL"


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[SQLiteLogStore, list[str]]]:
    with SQLiteLogStore(tmp_path / "log.db") as store:
        store.save(HardState(1, 1, 0), 1, [app(1, "a")])
        statements: list[str] = []
        conn = store._conn
        assert conn is not None
        conn.set_trace_callback(statements.append)
        yield store, statements


def pragmas(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith("PRAGMA synchronous")]


def test_a_save_is_synced_unless_told_otherwise(traced: tuple[SQLiteLogStore, list[str]]) -> None:
    store, statements = traced
    store.save(HardState(1, 1, 0), 2, [app(1, "b")])
    store.save(HardState(2, 1, 1))
    assert pragmas(statements) == []  # FULL all along: each commit fsyncs


def test_an_unsynced_save_commits_with_sync_off_and_puts_full_back(
    traced: tuple[SQLiteLogStore, list[str]],
) -> None:
    store, statements = traced
    store.save(HardState(1, 1, 1), sync=False)
    assert pragmas(statements) == [OFF, FULL]
    first, last = statements.index(OFF), statements.index(FULL)
    assert any(s.startswith("COMMIT") or "hard_state" in s for s in statements[first + 1 : last])
    assert store._conn is not None
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_a_store_without_fsync_never_switches(tmp_path: Path) -> None:
    with SQLiteLogStore(tmp_path / "log.db", fsync=False) as store:
        conn = store._conn
        assert conn is not None
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        store.save(HardState(1, 1, 0), 1, [app(1, "a")])
        store.save(HardState(1, 1, 1), sync=False)
        assert pragmas(statements) == []
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 0
        assert store.sync_durations.read()[1] == 0  # nothing synced, nothing timed


def test_only_synced_saves_are_timed_and_each_time_is_a_duration(
    traced: tuple[SQLiteLogStore, list[str]],
) -> None:
    store, _ = traced
    before = store.sync_durations.read()[1]  # the fixture's first save
    store.save(HardState(1, 1, 1), sync=False)
    assert store.sync_durations.read()[1] == before
    store.save(HardState(1, 1, 0), 2, [app(1, "b")])
    _, count, total = store.sync_durations.read()
    assert count == before + 1
    # a duration, not a reading of the clock: no more than the clock has run since it started
    assert 0 <= total <= time.perf_counter()


def test_a_save_of_nothing_writes_nothing(traced: tuple[SQLiteLogStore, list[str]]) -> None:
    store, statements = traced
    timed = store.sync_durations.read()[1]
    store.save()
    assert statements == []
    assert store.sync_durations.read()[1] == timed
