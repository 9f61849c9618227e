"""SQLite store specifics: files that are not ours, corruption, locking, failed writes."""

from __future__ import annotations

import errno
import os
import random
import sqlite3
import types
from pathlib import Path
from typing import Any

import pytest

import garlicfarm.storage.sqlite
from garlicfarm.storage.interface import CorruptLog, DataDirNotWritable, HardState, SnapshotMeta, StorageError
from garlicfarm.storage.sqlite import (
    APPLICATION_ID,
    FORMAT_VERSION,
    INSERT_CHUNK,
    SQLiteLogStore,
    entry_crc,
    hard_state_crc,
)
from garlicfarm.wire.payloads import ClusterServer, Configuration, LogEntry
from tests.storage.conftest import app, config


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "node.db"


def filled(path: Path, count: int = 200, size: int = 300) -> None:
    with SQLiteLogStore(path) as store:
        store.save(
            HardState(3, 1, count), 1, [app(1 + i // 50, f"{i:05}" * (size // 5)) for i in range(count)]
        )


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def refused(path: Path, match: str) -> StorageError:
    with pytest.raises(StorageError, match=match) as info:
        SQLiteLogStore(path)
    assert str(path) in str(info.value)
    return info.value


def test_creates_a_missing_file_with_our_header(path: Path) -> None:
    SQLiteLogStore(path).close()
    header = path.read_bytes()[:100]
    assert header.startswith(b"SQLite format 3\x00")
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert int.from_bytes(header[60:64], "big") == FORMAT_VERSION


def test_durability_settings(path: Path) -> None:
    with SQLiteLogStore(path) as store:
        conn = store._conn
        assert conn is not None
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: fsync the WAL per commit
        assert conn.execute("PRAGMA locking_mode").fetchone()[0] == "exclusive"


def test_a_commit_index_saved_without_sync_is_kept_and_the_next_save_is_synced(path: Path) -> None:
    """Issue 17: the commit index alone is saved without an fsync; the setting is put back at once."""
    with SQLiteLogStore(path) as store:
        conn = store._conn
        assert conn is not None
        store.save(HardState(2, 1, 0), 1, [app(1, "a"), app(2, "b")])
        store.save(HardState(2, 1, 2), sync=False)
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert store.load().hard_state == HardState(2, 1, 2)
    with SQLiteLogStore(path) as store:
        assert store.load().hard_state == HardState(2, 1, 2)


def test_reopen_gives_the_same_state(path: Path) -> None:
    with SQLiteLogStore(path) as store:
        store.save(HardState(4, 2, 5), 1, [app(t, str(t)) for t in (1, 1, 2, 3, 4, 4)])
        store.compact(SnapshotMeta(2, 1, config(1, 1, 2)))
        store.save(HardState(5, None, 5), 6, [app(5, "five")])
        before = store.load()
    with SQLiteLogStore(path) as store:
        assert store.load() == before
        assert store.load().entries[-1] == app(5, "five")


@pytest.mark.parametrize("count", [1, INSERT_CHUNK - 1, INSERT_CHUNK, INSERT_CHUNK + 1, 2 * INSERT_CHUNK + 5])
def test_saves_of_any_size_come_back_whole_and_in_order(path: Path, count: int) -> None:
    """Entries go in as INSERTs of up to INSERT_CHUNK rows each: none lost or reordered at a chunk's edge."""
    first = [app(1, f"first {i}") for i in range(count)]
    second = [app(2, f"second {i}") for i in range(count)]
    with SQLiteLogStore(path) as store:
        store.save(HardState(2, 1, 0), 1, first)
        store.save(HardState(2, 1, 0), 1 + count // 2, second)  # overwrites the tail, past a chunk's edge
    with SQLiteLogStore(path) as store:
        assert store.load().entries == tuple(first[: count // 2] + second)


def test_empty_sqlite_database_is_initialised(path: Path) -> None:
    raw(path).execute("VACUUM").connection.close()
    with SQLiteLogStore(path) as store:
        assert store.load().entries == ()


@pytest.mark.parametrize("size", [1, 15, 100, 4096, 20000])
def test_random_bytes_are_refused(path: Path, size: int) -> None:
    path.write_bytes(random.Random(size).randbytes(size))
    refused(path, "is not a garlicfarm log store")


def test_garbage_after_the_sqlite_magic_is_refused(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + random.Random(1).randbytes(8000))
    refused(path, "is (not a garlicfarm log store|corrupt)")


def test_foreign_database_is_refused_and_left_alone(path: Path) -> None:
    conn = raw(path)
    conn.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
    conn.execute("INSERT INTO moz_places VALUES (1, 'http://example.i2p/')")
    conn.close()
    before = path.read_bytes()
    error = refused(path, "is not a garlicfarm log store")
    assert "moz_places" in str(error)
    assert path.read_bytes() == before


def test_newer_format_is_refused(path: Path) -> None:
    SQLiteLogStore(path).close()
    raw(path).execute(f"PRAGMA user_version = {FORMAT_VERSION + 1}").connection.close()
    refused(path, "newer than this garlicfarm reads")


def test_missing_table_is_corruption(path: Path) -> None:
    SQLiteLogStore(path).close()
    raw(path).execute("DROP TABLE snapshot").connection.close()
    refused(path, "is corrupt: tables missing: snapshot")


@pytest.mark.parametrize("keep", [0.5, 0.9, 2000 / 61440])
def test_truncated_file_is_refused(path: Path, keep: float) -> None:
    filled(path)
    data = path.read_bytes()
    assert not Path(f"{path}-wal").exists()  # a clean close checkpoints everything into the file
    path.write_bytes(data[: int(len(data) * keep)])
    refused(path, "is corrupt|is not a garlicfarm log store")


def test_gap_in_the_log_is_corruption(path: Path) -> None:
    filled(path, count=10)
    raw(path).execute("DELETE FROM entries WHERE idx = 5").connection.close()
    error = refused(path, r"entry 5 is missing \(9 entries span 1\.\.10\): the file is corrupt")
    assert isinstance(error, CorruptLog)


def test_entries_at_or_below_the_snapshot_are_corruption(path: Path) -> None:
    filled(path, count=10)
    with SQLiteLogStore(path) as store:
        store.compact(SnapshotMeta(4, 1, config()))
    row = (4, 1, 1, b"\x00")
    raw(path).execute(
        "INSERT INTO entries VALUES (?, ?, ?, ?, ?)", (*row, entry_crc(*row))
    ).connection.close()
    refused(path, "entry 4 is stored but the log starts at 5: the file is corrupt")


def test_undecodable_value_is_corruption(path: Path) -> None:
    filled(path, count=10)
    # with a checksum to match: what a bug that wrote a bad value would leave
    crc = entry_crc(7, 1, 2, b"\x00\x01")
    raw(path).execute(
        "UPDATE entries SET value_type = 2, value = x'0001', crc = ? WHERE idx = 7", (crc,)
    ).connection.close()
    with SQLiteLogStore(path) as store, pytest.raises(CorruptLog, match="entry 7 does not decode"):
        store.load()


def test_commit_written_past_the_log_is_clamped(path: Path) -> None:
    filled(path, count=10)
    crc = hard_state_crc(3, 1, 99)
    raw(path).execute("UPDATE hard_state SET commit_index = 99, crc = ?", (crc,)).connection.close()
    with SQLiteLogStore(path) as store:
        assert store.load().hard_state.commit == 10


def test_second_opener_is_refused_while_locked(path: Path) -> None:
    with SQLiteLogStore(path):  # creates the file
        refused(path, "is locked")
    with SQLiteLogStore(path):  # opens it without writing
        refused(path, "is locked")
    SQLiteLogStore(path).close()


def test_unopenable_paths(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no-such-dir"):
        SQLiteLogStore(tmp_path / "no-such-dir" / "x.db")
    with pytest.raises(StorageError, match=str(tmp_path)):
        SQLiteLogStore(tmp_path)


def test_disk_full_is_a_storage_error_and_poisons_writes(path: Path) -> None:
    store = SQLiteLogStore(path)
    store.save(HardState(1, 1, 1), 1, [app(1, "kept")])
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[union-attr]
    store._conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # type: ignore[union-attr]
    with pytest.raises(StorageError, match=f"{path}: save failed: .*full"):
        store.save(HardState(2, 2, 1), 2, [app(2, "x" * 4000) for _ in range(10)])
    assert store.load().entries == (app(1, "kept"),)
    assert store.load().hard_state == HardState(1, 1, 1)
    with pytest.raises(StorageError, match="an earlier write failed"):
        store.save(HardState(2))
    store.close()
    with SQLiteLogStore(path) as store:
        store.save(HardState(2), 2, [app(2, "after")])
        assert store.load().entries == (app(1, "kept"), app(2, "after"))


def test_unencodable_value_aborts_the_whole_save(path: Path) -> None:
    bad = Configuration(1, 0, (ClusterServer(1, None),))  # a configuration needs endpoints
    with SQLiteLogStore(path) as store:
        store.save(HardState(1), 1, [app(1, "a")])
        with pytest.raises(ValueError, match="endpoint"):
            store.save(HardState(2), 2, [app(2, "b"), LogEntry(2, bad)])
        with pytest.raises(ValueError, match="endpoint"):
            store.compact(SnapshotMeta(1, 1, bad))
        assert store.load().hard_state == HardState(1)
        assert store.load().entries == (app(1, "a"),)


def test_closed_store_refuses_use(path: Path) -> None:
    store = SQLiteLogStore(path)
    store.close()
    store.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        store.load()
    with pytest.raises(ValueError, match="closed"):
        store.save(HardState(1))
    with pytest.raises(ValueError, match="closed"):
        store.entries(1, 2)


def test_no_stray_files_after_close(path: Path) -> None:
    filled(path, count=5)
    assert sorted(os.listdir(path.parent)) == [path.name]


def test_fsync_off_is_an_explicit_choice(path: Path) -> None:
    """``fsync=False`` (benchmarks only) turns SQLite's syncs off; the default stays FULL."""
    with SQLiteLogStore(path, fsync=False) as store:
        conn = store._conn
        assert conn is not None
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 0  # OFF


def _with_connect(connect: Any) -> Any:
    """The sqlite3 module as the store sees it, with another ``connect`` (patching sqlite3 itself
    would reach every user of it, the coverage tool's data file included)."""
    return types.SimpleNamespace(**{**vars(sqlite3), "connect": connect})


NOT_WRITABLE = "the data directory is not writable \\(read-only file system or permissions\\)"


def test_a_store_sqlite_may_not_write_says_the_data_directory_is_not_writable(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filled(path, count=3)
    connect = sqlite3.connect

    def read_only(target: str, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.pop("uri", None)
        conn: sqlite3.Connection = connect(f"file:{target}?mode=ro", *args, uri=True, **kwargs)
        return conn

    # what a read-only mount gives SQLite; the store's sqlite3 only (coverage keeps its data in SQLite too)
    monkeypatch.setattr(garlicfarm.storage.sqlite, "sqlite3", _with_connect(read_only))
    error = refused(path, f"^{path.parent}: {NOT_WRITABLE}: {path}: open failed: .*SQLITE_IOERR_LOCK")
    assert isinstance(error, DataDirNotWritable)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("SQLITE_READONLY", "attempt to write a readonly database"),
        ("SQLITE_READONLY_DIRECTORY", "attempt to write a readonly database"),
        ("SQLITE_IOERR_LOCK", "disk I/O error"),
        ("", "attempt to write a readonly database"),
    ],
)
def test_sqlite_read_only_errors_name_the_data_directory(path: Path, name: str, message: str) -> None:
    with SQLiteLogStore(path) as store:
        error = sqlite3.OperationalError(message)
        if name:
            error.sqlite_errorname = name
        got = store._error("save", error)
    assert isinstance(got, DataDirNotWritable)
    assert str(got).startswith(f"{path.parent}: the data directory is not writable (")
    assert message in str(got)


def test_a_read_only_directory_refuses_creating_the_store(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path) + ".new")

    monkeypatch.setattr(garlicfarm.storage.sqlite, "sqlite3", _with_connect(read_only))
    refused(path, f"^{path.parent}: {NOT_WRITABLE}: cannot create {path}: Read-only file system")
