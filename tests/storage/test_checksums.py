"""End-to-end checksums in the SQLite log store and the snapshot files: a changed byte is never served."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from twisted.logger import globalLogPublisher

from garlicfarm.storage import sqlite as sqlite_module
from garlicfarm.storage.interface import RECOVERY, CorruptLog, HardState, SnapshotMeta, StorageError
from garlicfarm.storage.snapshots import FileSnapshotStore
from garlicfarm.storage.sqlite import APPLICATION_ID, FORMAT_VERSION, SQLiteLogStore
from garlicfarm.wire.codec import encode_value
from tests.storage.conftest import app, config, fast_dir


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "log.db"


def filled(path: Path, count: int = 20) -> None:
    """Entries 1..count (terms 1, 2, 3...), compacted to 3, and a hard state with a vote."""
    with SQLiteLogStore(path) as store:
        store.save(HardState(7, 2, count), 1, [app(1 + i // 5, f"value {i:04} " * 4) for i in range(count)])
        store.compact(SnapshotMeta(3, 1, config(3, 1, 2, 3)))


def execute(path: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(sql, args)
    finally:
        conn.close()


def flip(blob: bytes, at: int, mask: int = 0x01) -> bytes:
    out = bytearray(blob)
    out[at] ^= mask
    return bytes(out)


def one(path: Path) -> bytes:
    conn = sqlite3.connect(path)
    try:
        return bytes(conn.execute("SELECT value FROM entries WHERE idx = 10").fetchone()[0])
    finally:
        conn.close()


def start(path: Path) -> None:
    store = SQLiteLogStore(path)
    try:
        store.load()
    finally:
        store.close()


def refused_at_start(path: Path, where: str) -> CorruptLog:
    """What a node does at start: open, then load everything. The error is one line naming the file,
    the row and the recovery."""
    with pytest.raises(CorruptLog) as info:
        start(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {where} ")
    assert message.endswith(f"the file is corrupt; {RECOVERY}")
    assert info.value.where == where
    return info.value


# ------------------------------------------------------------------------------------- entry rows


def test_a_flipped_byte_in_a_value_is_found_at_start(path: Path) -> None:
    filled(path)
    execute(path, "UPDATE entries SET value = ? WHERE idx = 10", flip(one(path), 5))
    error = refused_at_start(path, "entry 10")
    assert "fails its checksum (stored crc 0x" in str(error)
    assert ", computed 0x" in str(error)


def test_a_flipped_byte_in_a_term_is_found_at_start(path: Path) -> None:
    filled(path)
    execute(path, "UPDATE entries SET term = term | 256 WHERE idx = 12")
    refused_at_start(path, "entry 12")


def test_a_changed_value_type_is_found_at_start(path: Path) -> None:
    filled(path)
    execute(path, "UPDATE entries SET value_type = 4 WHERE idx = 8")
    refused_at_start(path, "entry 8")


@pytest.mark.parametrize(("mask", "where"), [(0x01, "entry 6"), (0x80, f"entry {6 - 2**63}")])
def test_a_flipped_byte_in_an_index_is_found_at_start(path: Path, mask: int, where: str) -> None:
    """Moved past the end (0x01 << 8: idx 6 -> 262, so 6 is missing) or below zero (the sign bit: a row
    before the log's start)."""
    filled(path)
    shift = 8 if mask == 0x01 else 56
    execute(path, f"UPDATE entries SET idx = (idx | ({mask} << {shift})) WHERE idx = 6")
    refused_at_start(path, where)


def test_rows_swapped_between_indexes_are_found(path: Path) -> None:
    """Contiguous, but each row is checksummed with its own index: a moved row fails."""
    filled(path)
    execute(path, "UPDATE entries SET idx = -idx WHERE idx IN (11, 12)")
    execute(path, "UPDATE entries SET idx = CASE idx WHEN -11 THEN 12 ELSE 11 END WHERE idx < 0")
    refused_at_start(path, "entry 11")


def test_a_value_changed_in_the_file_itself_is_found(path: Path) -> None:
    """The outside tester's case: one committed entry rewritten in place in log.db, same length.
    SQLite has no checksum of its own: quick_check passes, only the entry's crc catches it."""
    with SQLiteLogStore(path) as store:
        store.save(HardState(2, 1, 30), 1, [app(1, f"entry-{i:05}-payload") for i in range(1, 31)])
    raw = bytearray(path.read_bytes())  # a clean close checkpointed everything into the file
    at = raw.find(b"entry-00017-payload")
    assert at > 0 and raw.count(b"entry-00017-payload") == 1
    raw[at + 6 : at + 11] = b"00018"
    path.write_bytes(bytes(raw))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    conn.close()
    refused_at_start(path, "entry 17")


# ------------------------------------------------------------------------- hard state, snapshot row


def test_a_flipped_byte_in_the_hard_state_is_found_on_open(path: Path) -> None:
    filled(path)
    execute(path, "UPDATE hard_state SET term = 6")  # 7 with its lowest bit flipped
    with pytest.raises(CorruptLog, match=r": hard state fails its checksum \(stored crc 0x[0-9a-f]{8}"):
        SQLiteLogStore(path)  # the constructor alone


@pytest.mark.parametrize(
    "change",
    ["voted_for = NULL", "voted_for = 3", "commit_index = 19", "crc = crc + 1"],
)
def test_any_change_to_the_hard_state_is_found(path: Path, change: str) -> None:
    filled(path)
    execute(path, f"UPDATE hard_state SET {change}")
    refused_at_start(path, "hard state")


@pytest.mark.parametrize("change", ["last_term = 2", "last_index = 4", "config = ?"])
def test_a_changed_snapshot_row_is_found_on_open(path: Path, change: str) -> None:
    filled(path)
    blob = encode_value(config(3, 1, 2, 4))  # same length, one byte different
    execute(path, f"UPDATE snapshot SET {change}", *([blob] if "?" in change else []))
    with pytest.raises(CorruptLog, match=r": snapshot fails its checksum"):
        SQLiteLogStore(path)
    refused_at_start(path, "snapshot")


# ---------------------------------------------------------------------------------- while running


def test_a_row_corrupted_while_open_is_never_returned(path: Path) -> None:
    filled(path)
    store = SQLiteLogStore(path)
    assert len(store.entries(4, 21)) == 17
    conn = store._conn  # the file is locked: change it through the store's own connection
    assert conn is not None
    value = conn.execute("SELECT value FROM entries WHERE idx = 10").fetchone()[0]
    conn.execute("UPDATE entries SET value = ? WHERE idx = 10", (flip(value, 0, 0x40),))
    assert len(store.entries(4, 10)) == 6  # the rows before it still verify
    for read in (lambda: store.entries(4, 21), lambda: store.entries(10, 11), store.load):
        with pytest.raises(CorruptLog, match=f"^{path}: entry 10 fails its checksum"):
            read()
    # the compaction reads the term at its index: a corrupt row there is not trusted either
    with pytest.raises(CorruptLog, match="entry 10 fails its checksum"):
        store.compact(SnapshotMeta(10, 2, config(10, 1)))
    store.close()


# ------------------------------------------------------------------------------- snapshot files


def test_a_flipped_byte_in_a_snapshot_file_is_found_on_load(tmp_path: Path) -> None:
    meta = SnapshotMeta(120, 4, config(100, 1, 2))
    FileSnapshotStore(tmp_path / "snapshot").save(meta, b"application state " * 10)
    target = tmp_path / "snapshot.120"
    target.write_bytes(flip(target.read_bytes(), 70))
    with pytest.raises(CorruptLog) as info:
        FileSnapshotStore(tmp_path / "snapshot").load(meta)
    message = str(info.value)
    assert message.startswith(f"{target}: snapshot fails its checksum (stored SHA-256 ")
    assert message.endswith(RECOVERY) and "\n" not in message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(min_value=0), mask=st.integers(min_value=1, max_value=255))
def test_any_changed_byte_in_a_snapshot_file_is_found(tmp_path: Path, at: int, mask: int) -> None:
    meta = SnapshotMeta(120, 4, config(100, 1, 2))
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(meta, b"application state")
    target = tmp_path / "snapshot.120"
    data = target.read_bytes()
    target.write_bytes(flip(data, at % len(data), mask))
    with pytest.raises(StorageError):
        store.load()


# ------------------------------------------------------------------------------------ migration


V1_SCHEMA = (
    "CREATE TABLE garlicfarm_meta (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT",
    "CREATE TABLE hard_state (id INTEGER PRIMARY KEY CHECK (id = 0), term INTEGER NOT NULL,"
    " voted_for INTEGER, commit_index INTEGER NOT NULL) STRICT",
    "CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 0), last_index INTEGER NOT NULL,"
    " last_term INTEGER NOT NULL, config BLOB NOT NULL) STRICT",
    "CREATE TABLE entries (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL,"
    " value_type INTEGER NOT NULL, value BLOB NOT NULL) STRICT",
)


def make_v1(path: Path, count: int = 300) -> None:
    """A store as garlicfarm wrote it before checksums (format 1), made by hand."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    for statement in V1_SCHEMA:
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO garlicfarm_meta VALUES (?, ?)", [("format", "garlicfarm log store"), ("version", 1)]
    )
    conn.execute("INSERT INTO hard_state VALUES (0, 9, 2, 250)")
    conn.execute("INSERT INTO snapshot VALUES (0, 5, 1, ?)", (encode_value(config(5, 1, 2, 3)),))
    conn.executemany(
        "INSERT INTO entries VALUES (?, ?, 1, ?)",
        [(i, 1 + i // 100, encode_value(app(1, f"old {i}").value)) for i in range(6, count + 1)],
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("COMMIT")
    conn.close()


def expected_v1(count: int = 300) -> tuple[HardState, SnapshotMeta, tuple[Any, ...]]:
    entries = tuple(app(1 + i // 100, f"old {i}") for i in range(6, count + 1))
    return HardState(9, 2, 250), SnapshotMeta(5, 1, config(5, 1, 2, 3)), entries


@pytest.fixture
def logged() -> Iterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    yield events
    globalLogPublisher.removeObserver(observer)


def test_a_format_1_store_is_upgraded_and_keeps_its_log(path: Path, logged: list[dict[str, Any]]) -> None:
    make_v1(path)
    hard_state, snapshot, entries = expected_v1()
    with SQLiteLogStore(path) as store:
        state = store.load()
        assert (state.hard_state, state.snapshot, state.entries) == (hard_state, snapshot, entries)
        store.save(HardState(10, 3, 250), 301, [app(10, "new")])
    upgrades = [e for e in logged if e.get("log_namespace") == "garlicfarm.storage.sqlite"]
    assert len(upgrades) == 1
    assert upgrades[0]["old"] == 1 and upgrades[0]["new"] == FORMAT_VERSION == 2
    assert upgrades[0]["count"] == 295 and upgrades[0]["path"] == str(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert conn.execute("SELECT value FROM garlicfarm_meta WHERE key = 'version'").fetchone()[0] == 2
    assert {r[1] for r in conn.execute("PRAGMA table_info(entries)")} >= {"crc"}
    conn.close()
    with SQLiteLogStore(path) as store:  # a format-2 file now: opened as is, no second upgrade
        assert store.load().entries == (*entries, app(10, "new"))
    assert len([e for e in logged if e.get("log_namespace") == "garlicfarm.storage.sqlite"]) == 1
    # and its checksums are live: a flipped byte in a migrated row is found
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE entries SET term = 3 WHERE idx = 150")
    conn.close()
    refused_at_start(path, "entry 150")


def test_an_upgrade_that_fails_leaves_the_format_1_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One transaction: a failure part way (a crash, a full disk) leaves the old file, upgraded later."""
    make_v1(path)
    calls = 0

    def failing(*args: Any) -> int:
        nonlocal calls
        calls += 1
        if calls == 100:
            raise OSError("disk gone")
        return 0

    monkeypatch.setattr(sqlite_module, "entry_crc", failing)
    # the failure itself is reported, not a rollback's after it
    with pytest.raises(StorageError, match="open failed: user-defined function raised exception"):
        SQLiteLogStore(path)
    monkeypatch.undo()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "crc" not in {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
    conn.close()
    with SQLiteLogStore(path) as store:
        assert store.load().entries == expected_v1()[2]


@pytest.mark.parametrize("version", [0, FORMAT_VERSION + 1])
def test_unknown_versions_are_still_refused(path: Path, version: int) -> None:
    SQLiteLogStore(path).close()
    execute(path, f"PRAGMA user_version = {version}")
    with pytest.raises(StorageError, match=f"store format {version}"):
        SQLiteLogStore(path)


# ------------------------------------------------------------------------------------ round trip


def test_many_entries_come_back_whole(path: Path) -> None:
    written = [app(1 + i // 700, "x" * (i % 517) + str(i)) for i in range(5000)]
    with SQLiteLogStore(path) as store:
        for start in range(0, 5000, 333):
            store.save(HardState(8, 1, start), start + 1, written[start : start + 333])
    with SQLiteLogStore(path) as store:
        assert store.load().entries == tuple(written)
        assert store.entries(1234, 2345) == written[1233:2344]
        store.compact(SnapshotMeta(2500, 4, config(2500, 1)))
    with SQLiteLogStore(path) as store:
        state = store.load()
        assert state.first_index == 2501 and state.entries == tuple(written[2500:])


# ------------------------------------------------------------------------ any single changed byte

_FIELDS = {
    "entries": ("idx", "term", "value_type", "value", "crc"),
    "hard_state": ("term", "voted_for", "commit_index", "crc"),
    "snapshot": ("last_index", "last_term", "config", "crc"),
}


@pytest.fixture(scope="module")
def pristine() -> Iterator[bytes]:
    with tempfile.TemporaryDirectory(dir=fast_dir()) as d:
        path = Path(d) / "log.db"
        filled(path, count=12)
        yield path.read_bytes()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table=st.sampled_from(sorted(_FIELDS)),
    row=st.integers(min_value=0, max_value=8),
    field=st.integers(min_value=0, max_value=4),
    at=st.integers(min_value=0, max_value=10_000),
    mask=st.integers(min_value=1, max_value=255),
)
def test_any_single_changed_byte_in_any_row_is_found(
    pristine: bytes, table: str, row: int, field: int, at: int, mask: int
) -> None:
    """Each field as stored (an integer as its 8 bytes, big-endian; a blob as is), one byte changed:
    opening and loading the store fails with CorruptLog, never returns it."""
    with tempfile.TemporaryDirectory(dir=fast_dir()) as d:
        path = Path(d) / "log.db"
        path.write_bytes(pristine)
        conn = sqlite3.connect(path, isolation_level=None)
        key = "idx" if table == "entries" else "id"
        keys = [r[0] for r in conn.execute(f"SELECT {key} FROM {table} ORDER BY {key}")]
        name = _FIELDS[table][field % len(_FIELDS[table])]
        target = keys[row % len(keys)]
        (value,) = conn.execute(f"SELECT {name} FROM {table} WHERE {key} = ?", (target,)).fetchone()
        assume(value is not None)
        if isinstance(value, bytes):
            changed: int | bytes = flip(value, at % len(value), mask)
        else:
            raw = value.to_bytes(8, "big", signed=True)
            changed = int.from_bytes(flip(raw, at % 8, mask), "big", signed=True)
        try:
            conn.execute(f"UPDATE {table} SET {name} = ? WHERE {key} = ?", (changed, target))
        except sqlite3.IntegrityError:
            assume(False)  # an index moved onto another row's: not a change SQLite can hold
        finally:
            conn.close()
        with pytest.raises(CorruptLog) as info:
            start(path)
        assert "\n" not in str(info.value) and str(info.value).startswith(f"{path}: ")
