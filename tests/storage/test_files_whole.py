"""What the stores leave on disk and in the process, beyond what a load returns: a new log store is
whole before its name appears, a crashed creation's leftovers do not spoil the next one, the bytes a
snapshot file holds are written before its fsync, no file descriptor is left open, and a log whose
first entries vanished is refused (each a statement whose deletion no other test noticed)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.storage.datadir import prepare_data_dir
from garlicfarm.storage.interface import CorruptLog, HardState, SnapshotMeta
from garlicfarm.storage.snapshots import FileSnapshotStore
from garlicfarm.storage.sqlite import APPLICATION_ID, SQLiteLogStore
from tests.storage.conftest import app, config
from tests.storage.test_sqlite import filled, raw, refused


def open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_leak() -> Iterator[None]:
    before = open_descriptors()
    yield
    assert open_descriptors() <= before, "a file descriptor was left open"


def test_a_new_store_is_whole_before_it_takes_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash right after the rename must find a store, not an empty SQLite file (which reads as
    'this node lost its log')."""
    seen: list[tuple[int, set[str]]] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        finally:
            conn.close()
        seen.append((app_id, tables))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    SQLiteLogStore(tmp_path / "node.db").close()
    ((app_id, tables),) = seen
    assert app_id == APPLICATION_ID
    assert {"entries", "hard_state", "snapshot", "garlicfarm_meta"} <= tables


def test_what_a_crashed_creation_left_does_not_spoil_the_next(tmp_path: Path) -> None:
    path = tmp_path / "node.db"
    for leftover in ("node.db.new", "node.db.new-wal", "node.db.new-shm"):
        (tmp_path / leftover).write_bytes(b"half a database from before the crash" * 100)
    with SQLiteLogStore(path) as store:
        store.save(HardState(1, 1, 0), 1, [app(1, "a")])
    with SQLiteLogStore(path) as store:
        assert store.load().entries == (app(1, "a"),)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("node.db.new")) == []


def test_a_log_whose_first_entries_vanished_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "node.db"
    filled(path, count=10)
    raw(path).execute("DELETE FROM entries WHERE idx <= 2").connection.close()
    error = refused(path, r"entry 1 is missing \(8 entries span 3\.\.10\): the file is corrupt")
    assert isinstance(error, CorruptLog)


def test_a_snapshot_file_holds_all_its_bytes_when_it_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python buffers writes: without a flush before the fsync, the data reaches the file only at
    close, after the fsync, and a power loss then leaves a short snapshot."""
    sizes: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isfile(os.readlink(f"/proc/self/fd/{fd}")):
            sizes.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    store = FileSnapshotStore(tmp_path / "snapshot")
    meta = SnapshotMeta(5, 2, config(1, 2))
    store.save(meta, b"x" * 1000)
    final = os.path.getsize(tmp_path / "snapshot.5")
    assert sizes == [final]


def test_creating_opening_and_snapshotting_leave_no_descriptor_open(tmp_path: Path, no_leak: None) -> None:
    prepare_data_dir(tmp_path / "data")
    with SQLiteLogStore(tmp_path / "data" / "node.db") as store:
        store.save(HardState(1, 1, 0), 1, [app(1, "a")])
    snapshot_store = FileSnapshotStore(tmp_path / "data" / "snapshot")
    snapshot_store.save(SnapshotMeta(1, 1, config(1)), b"state")
    assert snapshot_store.load() is not None


def test_a_snapshot_asked_for_is_read_without_reading_the_others(tmp_path: Path) -> None:
    """The log store names the snapshot it holds; a damaged newer file beside it (a save cut off after
    its rename, before the log store moved on) must not stop that one from loading."""
    store = FileSnapshotStore(tmp_path / "snapshot")
    older, newer = SnapshotMeta(5, 2, config(1, 2)), SnapshotMeta(9, 3, config(1, 2))
    store.save(older, b"five")
    store.save(newer, b"nine")
    (tmp_path / "snapshot.9").write_bytes(b"damaged")
    assert store.load(older) == (older, b"five")
    assert store.load(SnapshotMeta(7, 3, config(1, 2))) is None
