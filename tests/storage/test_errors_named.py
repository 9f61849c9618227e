"""What the SQLite store says when it fails or finds damage: each message names the file, the
operation (open, create, load, read, compact, close), the row and the field, in words an operator can
act on — and a row whose checksum matches but whose values cannot be Raft's is refused as well."""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.storage.interface import (
    RECOVERY,
    CorruptLog,
    DataDirNotWritable,
    HardState,
    SnapshotMeta,
    StorageError,
)
from garlicfarm.storage.sqlite import SQLiteLogStore, entry_crc, hard_state_crc, snapshot_crc
from garlicfarm.wire.codec import encode_value
from tests.storage.conftest import app, config


def sqlite_error(message: str, name: str | None) -> sqlite3.Error:
    error = sqlite3.OperationalError(message)
    if name is not None:
        error.sqlite_errorname = name
    return error


@pytest.fixture
def store(tmp_path: Path) -> SQLiteLogStore:
    return SQLiteLogStore(tmp_path / "node.db")


@pytest.mark.parametrize(
    ("name", "kind", "says"),
    [
        ("SQLITE_NOTADB", StorageError, "{path} is not a garlicfarm log store (not an SQLite database: x)"),
        ("SQLITE_CORRUPT_INDEX", StorageError, "{path} is corrupt: x"),
        ("SQLITE_BUSY", StorageError, "{path} is locked (another node using it?): x"),
        ("SQLITE_LOCKED_SHAREDCACHE", StorageError, "{path} is locked (another node using it?): x"),
        (
            "SQLITE_READONLY_DIRECTORY",
            DataDirNotWritable,
            "{path}: read failed: x (SQLITE_READONLY_DIRECTORY)",
        ),
        ("SQLITE_IOERR_LOCK", DataDirNotWritable, "{path}: read failed: x (SQLITE_IOERR_LOCK)"),
        ("SQLITE_FULL", StorageError, "{path}: read failed: x (SQLITE_FULL)"),
        (None, StorageError, "{path}: read failed: x (OperationalError)"),
    ],
)
def test_each_kind_of_sqlite_error_is_named(
    store: SQLiteLogStore, name: str | None, kind: type[StorageError], says: str
) -> None:
    error = store._error("read", sqlite_error("x", name))
    assert type(error) is kind
    assert str(error).endswith(says.format(path=store.path))


def test_a_readonly_database_without_an_error_name_is_the_data_dirs_fault(store: SQLiteLogStore) -> None:
    error = store._error("save", sqlite_error("attempt to write a readonly database", None))
    assert isinstance(error, DataDirNotWritable)
    assert f"{store.path}: save failed: attempt to write a readonly database (readonly)" in str(error)


class Failing:
    """A connection on which every statement fails, and closing too, as on a disk gone bad."""

    def __init__(self, inner: sqlite3.Connection) -> None:
        self.inner = inner
        self.in_transaction = False

    def execute(self, *args: Any) -> sqlite3.Cursor:
        raise sqlite3.OperationalError("disk I/O error")

    def close(self) -> None:
        self.inner.close()
        raise sqlite3.OperationalError("disk I/O error")


def test_each_operation_is_named_in_its_failure(store: SQLiteLogStore) -> None:
    store.save(HardState(1, 1, 1), 1, [app(1, "a"), app(1, "b"), app(1, "c")])
    assert store._conn is not None
    store._conn = Failing(store._conn)  # type: ignore[assignment]
    failed = f"^{re.escape(store.path)}: (\\w+) failed: disk I/O error \\(OperationalError\\)$"
    for action, call in [
        ("load", store.load),
        ("read", lambda: store.entries(1, 3)),
        ("read", lambda: store.compact(SnapshotMeta(2, 1, config(0, 1)))),  # the term at 2, read first
        ("compact", lambda: store.compact(SnapshotMeta(9, 1, config(0, 1)))),  # past the log: no read
        ("close", store.close),
    ]:
        with pytest.raises(StorageError) as raised:
            call()
        match = re.match(failed, str(raised.value))
        assert match is not None and match.group(1) == action, str(raised.value)


@pytest.mark.parametrize("at", ["open", "create"])
def test_a_connection_sqlite_refuses_is_named_for_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    path = tmp_path / "node.db"
    if at == "open":
        SQLiteLogStore(path).close()
    real = sqlite3.connect

    def refuse(target: str, **kwargs: Any) -> sqlite3.Connection:
        if target == str(path) or target == f"{path}.new":
            raise sqlite3.OperationalError("unable to open database file")
        return real(target, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with pytest.raises(StorageError, match=f"^{re.escape(str(path))}: {at} failed: unable to open"):
        SQLiteLogStore(path)


def test_a_new_store_that_cannot_be_initialised_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed statement's own error is reported (the rollback after it must not replace it), and
    nothing is left at the path."""
    path = tmp_path / "node.db"
    real = sqlite3.connect

    class FailingHeader:
        def __init__(self, inner: sqlite3.Connection) -> None:
            self.inner = inner

        def execute(self, sql: str, *args: Any) -> Any:
            if sql.startswith("PRAGMA application_id = "):
                raise sqlite3.OperationalError("disk I/O error")
            return self.inner.execute(sql, *args)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: FailingHeader(real(*a, **k)))
    with pytest.raises(StorageError, match=r": open failed: disk I/O error \(OperationalError\)$"):
        SQLiteLogStore(path)
    assert not path.exists()


def test_leftovers_of_a_creation_that_crashed_are_cleared(tmp_path: Path) -> None:
    """What a creation that crashed left beside the path (its file, a write-ahead log with whole
    frames, a shared-memory file) is gone, and none of it reaches the new store."""
    path = tmp_path / "node.db"
    crashed = sqlite3.connect(f"{path}.new", isolation_level=None)
    crashed.execute("PRAGMA journal_mode = WAL")
    crashed.execute("PRAGMA wal_autocheckpoint = 0")
    crashed.execute("CREATE TABLE intruder (x)")
    wal = Path(f"{path}.new-wal").read_bytes()
    crashed.close()
    Path(f"{path}.new").write_bytes(b"")
    Path(f"{path}.new-wal").write_bytes(wal)
    Path(f"{path}.new-shm").write_bytes(b"half-written " * 100)
    with SQLiteLogStore(path) as store:
        store.save(HardState(1, None, 0), 1, [app(1, "x")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.db"]


def test_writes_may_come_from_another_thread(store: SQLiteLogStore) -> None:
    """The node's log writer saves on its own thread, the reactor reads on its own."""
    errors: list[BaseException] = []

    def write() -> None:
        try:
            store.save(HardState(1, 1, 0), 1, [app(1, "from the writer")])
        except BaseException as e:
            errors.append(e)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    assert errors == []
    assert store.entries(1, 2) == [app(1, "from the writer")]


def test_a_compaction_that_disagrees_ends_the_log_at_the_snapshot(store: SQLiteLogStore) -> None:
    store.save(HardState(1, 1, 0), 1, [app(1, str(i)) for i in range(5)])
    store.compact(SnapshotMeta(3, 2, config(0, 1)))  # term 2 at 3: our entry there is term 1
    with pytest.raises(ValueError, match="would leave a gap after the last index 3"):
        store.save(None, 5, [app(2, "past the end")])
    store.save(None, 4, [app(2, "next")])
    assert store.load().entries == (app(2, "next"),)


# ------------------------------------------------------------------ rows whose checksum matches


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """A new store's file, closed: its rows are the test's to rewrite."""
    path = tmp_path / "node.db"
    SQLiteLogStore(path).close()
    return path


def refused(path: Path, says: str) -> None:
    with pytest.raises(CorruptLog) as raised:
        SQLiteLogStore(path)
    assert str(raised.value) == f"{path}: {says}: the file is corrupt; {RECOVERY}"
    assert raised.value.path == str(path)  # for a program that handles it
    assert says.startswith(raised.value.where)


def rewrite(path: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(sql, args)
    conn.close()


@pytest.mark.parametrize(
    ("term", "vote", "commit", "says"),
    [
        (-1, 1, 0, "hard state term is -1, outside 0..2^63-1"),
        (1, -2, 0, "hard state voted_for is -2, outside 0..2^63-1"),
        (1, None, -3, "hard state commit index is -3, outside 0..2^63-1"),
    ],
)
def test_a_hard_state_outside_raft_is_refused(
    path: Path, term: int, vote: int | None, commit: int, says: str
) -> None:
    rewrite(
        path,
        "INSERT OR REPLACE INTO hard_state VALUES (0, ?, ?, ?, ?)",
        term,
        vote,
        commit,
        hard_state_crc(term, vote, commit),
    )
    refused(path, says)


def test_a_hard_state_with_another_checksum_shows_both(path: Path) -> None:
    computed = hard_state_crc(1, None, 0)
    rewrite(path, "INSERT OR REPLACE INTO hard_state VALUES (0, 1, NULL, 0, 7)")
    refused(path, f"hard state fails its checksum (stored crc 0x00000007, computed {computed:#010x})")


@pytest.mark.parametrize(
    ("index", "term", "says"),
    [(-1, 1, "snapshot index is -1, outside 0..2^63-1"), (5, -2, "snapshot term is -2, outside 0..2^63-1")],
)
def test_a_snapshot_row_outside_raft_is_refused(path: Path, index: int, term: int, says: str) -> None:
    blob = encode_value(config(0, 1))
    rewrite(
        path,
        "INSERT INTO snapshot VALUES (0, ?, ?, ?, ?)",
        index,
        term,
        blob,
        snapshot_crc(index, term, blob),
    )
    refused(path, says)


def test_a_snapshot_row_with_another_checksum_shows_both(path: Path) -> None:
    blob = encode_value(config(0, 1))
    computed = snapshot_crc(5, 1, blob)
    rewrite(path, "INSERT INTO snapshot VALUES (0, 5, 1, ?, 9)", blob)
    refused(path, f"snapshot fails its checksum (stored crc 0x00000009, computed {computed:#010x})")


def test_an_entry_with_a_term_outside_raft_is_refused_at_start_and_when_read(tmp_path: Path) -> None:
    path = tmp_path / "node.db"
    with SQLiteLogStore(path) as store:
        store.save(HardState(1, None, 0), 1, [app(1, "a"), app(1, "b")])
    blob = encode_value(app(1, "b").value)
    rewrite(path, "UPDATE entries SET term = -1, crc = ? WHERE idx = 2", entry_crc(2, -1, 1, blob))
    says = f"{path}: entry 2 term is -1, outside 0..2^63-1: the file is corrupt; {RECOVERY}"
    with SQLiteLogStore(path) as store:  # opening reads the bounds and the hard state only
        with pytest.raises(CorruptLog) as raised:
            store.load()
        assert str(raised.value) == says
        with pytest.raises(CorruptLog) as raised:
            store.compact(SnapshotMeta(2, 1, config(0, 1)))  # reads the term at 2
        assert str(raised.value) == says


def test_rows_that_vanish_or_do_not_decode_while_open_are_named(store: SQLiteLogStore) -> None:
    store.save(HardState(1, None, 0), 1, [app(1, "a"), app(1, "b"), app(1, "c")])
    assert store._conn is not None
    store._conn.execute("DELETE FROM entries WHERE idx = 2")
    with pytest.raises(CorruptLog) as raised:
        store.entries(1, 4)
    assert str(raised.value) == (
        f"{store.path}: entry 2 is missing (found entry 3 there): the file is corrupt; {RECOVERY}"
    )
    garbage = b"\xff\xff"  # no configuration (value type 2)
    store._conn.execute(
        "UPDATE entries SET value_type = 2, value = ?, crc = ? WHERE idx = 3",
        (garbage, entry_crc(3, 1, 2, garbage)),
    )
    with pytest.raises(CorruptLog, match=f"^{re.escape(store.path)}: entry 3 does not decode \\("):
        store.entries(3, 4)
