"""The durable default :class:`~garlicfarm.storage.interface.LogStore`: one SQLite file.

WAL journal with ``synchronous=FULL`` and one transaction per :meth:`SQLiteLogStore.save`, so a save is
on disk when it returns and the driver's group commit costs one fsync per batch. The file is locked
exclusively while open, so two nodes can never share a log. A file that is empty or missing is
initialised; anything else must carry our ``application_id`` and a format version we can read, or it is
refused with a :class:`~garlicfarm.storage.interface.StorageError` naming the path.

Every row carries a CRC-32 (:func:`entry_crc`, :func:`hard_state_crc`, :func:`snapshot_crc`) over a
canonical encoding of all its fields, the entry's index and term included (a row moved or re-termed
fails), written in the same statement as the row. Opening verifies the hard state and snapshot rows;
:meth:`SQLiteLogStore.load` (what a node does at start: the whole log), :meth:`~SQLiteLogStore.entries`
and the compaction's read of a term verify every row they read. A row that fails raises
:class:`~garlicfarm.storage.interface.CorruptLog`: its bytes are never returned. SQLite has no
checksums of its own, so without ours a byte changed inside a row went unnoticed.

Not thread-safe: the driver must not overlap calls (it may make them from a worker thread).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import struct
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any

from twisted.logger import Logger

from garlicfarm.storage._rules import MAX_INDEX, check_hard_state, check_save, check_snapshot, clamp_commit
from garlicfarm.storage.datadir import UNWRITABLE_ERRNOS
from garlicfarm.storage.interface import (
    CorruptLog,
    DataDirNotWritable,
    HardState,
    SnapshotMeta,
    StorageError,
    StoredState,
)
from garlicfarm.storage.timing import DurationHistogram
from garlicfarm.wire.codec import decode_value, encode_value
from garlicfarm.wire.payloads import Configuration, LogEntry
from garlicfarm.wire.types import ValueType

APPLICATION_ID = 0x47464C47  # "GFLG", in the SQLite header: how `file` and we recognise the store
FORMAT_VERSION = 2  # PRAGMA user_version; bump on any schema change (2: a crc column in every table)
#: older formats this one upgrades on open (one transaction): 1 had no checksums
_UPGRADES_FROM = frozenset({1})
_FORMAT_NAME = "garlicfarm log store"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = frozenset({"garlicfarm_meta", "hard_state", "snapshot", "entries"})

_META_SCHEMA = "CREATE TABLE garlicfarm_meta (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT"
#: the tables with rows, by name (format 2); ``{name}`` so that an upgrade can build them beside the old
_ROW_SCHEMA = {
    "hard_state": "CREATE TABLE {name} (id INTEGER PRIMARY KEY CHECK (id = 0), term INTEGER NOT NULL,"
    " voted_for INTEGER, commit_index INTEGER NOT NULL, crc INTEGER NOT NULL) STRICT",
    "snapshot": "CREATE TABLE {name} (id INTEGER PRIMARY KEY CHECK (id = 0), last_index INTEGER NOT NULL,"
    " last_term INTEGER NOT NULL, config BLOB NOT NULL, crc INTEGER NOT NULL) STRICT",
    "entries": "CREATE TABLE {name} (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL,"
    " value_type INTEGER NOT NULL, value BLOB NOT NULL, crc INTEGER NOT NULL) STRICT",
}
#: format 1 -> 2: each table rebuilt with its crc computed by the functions below (registered in SQL)
_UPGRADE_1 = {
    "hard_state": "INSERT INTO new_hard_state SELECT id, term, voted_for, commit_index,"
    " gf_hard_state_crc(term, voted_for, commit_index) FROM hard_state",
    "snapshot": "INSERT INTO new_snapshot SELECT id, last_index, last_term, config,"
    " gf_snapshot_crc(last_index, last_term, config) FROM snapshot",
    "entries": "INSERT INTO new_entries SELECT idx, term, value_type, value,"
    " gf_entry_crc(idx, term, value_type, value) FROM entries",
}

# Checksums: CRC-32 (zlib's, in the standard library) over the row's fields as big-endian signed 64-bit
# integers, then its bytes; each kind of row starts from its own seed, so no row's checksum is valid
# for a row of another kind. CRC-32 detects every error within 32 consecutive bits, so any single
# changed byte; it is a check against corruption, not a MAC against someone who can write the file.
_INTS = struct.Struct(">qqq")
_HARD = struct.Struct(">qBqq")
_PAIR = struct.Struct(">qq")
_ENTRY_SEED = zlib.crc32(b"garlicfarm entry")
_HARD_STATE_SEED = zlib.crc32(b"garlicfarm hard state")
_SNAPSHOT_SEED = zlib.crc32(b"garlicfarm snapshot")


def entry_crc(index: int, term: int, value_type: int, value: bytes) -> int:
    """The checksum of an entry's row: its index, term, value type and encoded value."""
    return zlib.crc32(value, zlib.crc32(_INTS.pack(index, term, value_type), _ENTRY_SEED))


def hard_state_crc(term: int, voted_for: int | None, commit: int) -> int:
    vote = (0, 0) if voted_for is None else (1, voted_for)
    return zlib.crc32(_HARD.pack(term, *vote, commit), _HARD_STATE_SEED)


def snapshot_crc(last_index: int, last_term: int, config: bytes) -> int:
    return zlib.crc32(config, zlib.crc32(_PAIR.pack(last_index, last_term), _SNAPSHOT_SEED))


def _hex(crc: object) -> str:
    return f"{crc:#010x}" if isinstance(crc, int) else repr(crc)


_log = Logger(namespace="garlicfarm.storage.sqlite")

#: rows per INSERT statement (640 parameters: under SQLite's historical limit of 999). One statement
#: for many rows is one sqlite3_step, so the writer thread gives the interpreter's lock up and waits
#: to take it back once per chunk, not once per entry (executemany), while the reactor thread runs.
INSERT_CHUNK = 128
_DELETE_FROM = "DELETE FROM entries WHERE idx >= ?"
_PUT_HARD_STATE = (
    "INSERT OR REPLACE INTO hard_state (id, term, voted_for, commit_index, crc) VALUES (0, ?, ?, ?, ?)"
)
_SELECT_ALL = "SELECT idx, term, value_type, value, crc FROM entries ORDER BY idx"
_SELECT_ENTRIES = (
    "SELECT idx, term, value_type, value, crc FROM entries WHERE idx >= ? AND idx < ? ORDER BY idx"
)


class SQLiteLogStore:
    def __init__(self, path: str | os.PathLike[str], fsync: bool = True) -> None:
        self.path = os.fspath(path)
        #: False only for benchmarks that compare with stores that do not fsync: a crash may then lose
        #: acknowledged entries
        self.fsync = fsync
        #: how long each synced save took (its transaction and fsync), for the metrics endpoint
        self.sync_durations = DurationHistogram()
        self._failed: str | None = None
        self._conn: sqlite3.Connection | None = None
        self._check_magic()
        if not os.path.exists(self.path):
            self._create()
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=0, check_same_thread=False)
        except sqlite3.Error as e:
            raise self._error("open", e) from e
        try:
            self._snapshot, self._last = self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    # ------------------------------------------------------------------------------------------ open

    def _check_magic(self) -> None:
        try:
            with open(self.path, "rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except FileNotFoundError:
            return
        except OSError as e:
            raise StorageError(f"cannot open {self.path}: {e}") from e
        if not head:
            # New stores are created whole and renamed into place (_create): an empty file here is a
            # store that lost its contents, and starting empty would forget this node's term and vote.
            raise StorageError(
                f"{self.path} is empty (0 bytes): this node's log, term and vote are lost. Restore it "
                "from a backup; or, to rejoin as a new empty member, delete it and have the farm "
                "remove and re-add this server"
            )
        if head != _SQLITE_MAGIC:
            raise StorageError(f"{self.path} is not a {_FORMAT_NAME} (not an SQLite database)")

    def _create(self) -> None:
        """Make a new store whole beside ``path``, then rename it into place: a crash during creation
        leaves no store at ``path``, so an empty or partial one there is never mistaken for new."""
        tmp = self.path + ".new"
        try:
            for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
            conn = sqlite3.connect(tmp, isolation_level=None, timeout=0, check_same_thread=False)
            try:
                self._prepare(conn)
            finally:
                conn.close()
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            directory = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except sqlite3.Error as e:
            raise self._error("create", e) from e
        except OSError as e:
            if e.errno in UNWRITABLE_ERRNOS:
                raise DataDirNotWritable(self._directory, f"cannot create {self.path}: {e.strerror}") from e
            raise StorageError(f"cannot create {self.path}: {e}") from e

    def _prepare(self, conn: sqlite3.Connection) -> tuple[SnapshotMeta | None, int]:
        try:
            # Exclusive locking: every lock taken is held until close, and WAL then needs no -shm file.
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            version = self._identify(conn)  # before switching to WAL, which would rewrite a foreign header
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                raise StorageError(f"{self.path}: cannot use WAL journal mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL" if self.fsync else "PRAGMA synchronous = OFF")
            if version == 0:
                self._initialise(conn)
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise StorageError(f"{self.path} is corrupt: {'; '.join(problems)}")
            if version in _UPGRADES_FROM:
                self._upgrade(conn, version)
            self._read_hard_state(conn)
            return self._read_bounds(conn)
        except sqlite3.Error as e:
            raise self._error("open", e) from e

    def _identify(self, conn: sqlite3.Connection) -> int:
        """The file's format version, 0 for a new (or zero-byte) file. Refuse it unless it is empty or
        one of ours in a format we read or upgrade."""
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        if app_id == 0 and version == 0 and not tables:
            return 0
        if app_id != APPLICATION_ID:
            raise StorageError(
                f"{self.path} is not a {_FORMAT_NAME} (SQLite application_id {app_id:#x}, "
                f"tables: {', '.join(sorted(tables)) or 'none'})"
            )
        if version > FORMAT_VERSION:
            raise StorageError(
                f"{self.path} has store format {version}, newer than this garlicfarm reads "
                f"({FORMAT_VERSION}): upgrade garlicfarm"
            )
        if version != FORMAT_VERSION and version not in _UPGRADES_FROM:
            raise StorageError(f"{self.path} has store format {version}, which this garlicfarm cannot read")
        missing = _TABLES - tables
        if missing:
            raise StorageError(f"{self.path} is corrupt: tables missing: {', '.join(sorted(missing))}")
        meta = dict(conn.execute("SELECT key, value FROM garlicfarm_meta").fetchall())
        if meta.get("format") != _FORMAT_NAME or meta.get("version") != version:
            raise StorageError(f"{self.path} is corrupt: format record {meta!r} for version {version}")
        return int(version)

    def _initialise(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_META_SCHEMA)
            for table, statement in _ROW_SCHEMA.items():
                conn.execute(statement.format(name=table))
            conn.executemany(
                "INSERT INTO garlicfarm_meta VALUES (?, ?)",
                [("format", _FORMAT_NAME), ("version", FORMAT_VERSION)],
            )
            # Header fields, set in the same transaction: a crash leaves an empty file or a whole store.
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            conn.execute("COMMIT")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _upgrade(self, conn: sqlite3.Connection, version: int) -> None:
        """Format 1 -> 2 in one transaction: each table rebuilt with a checksum computed for every row
        (a crash leaves the format-1 file as it was). The rows are taken as they are: format 1 had
        nothing to check them against."""
        conn.create_function("gf_entry_crc", 4, entry_crc, deterministic=True)
        conn.create_function("gf_hard_state_crc", 3, hard_state_crc, deterministic=True)
        conn.create_function("gf_snapshot_crc", 3, snapshot_crc, deterministic=True)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table, statement in _ROW_SCHEMA.items():
                conn.execute(statement.format(name=f"new_{table}"))
                conn.execute(_UPGRADE_1[table])
                conn.execute(f"DROP TABLE {table}")
                conn.execute(f"ALTER TABLE new_{table} RENAME TO {table}")
            conn.execute("UPDATE garlicfarm_meta SET value = ? WHERE key = 'version'", (FORMAT_VERSION,))
            conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
            count = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
            conn.execute("COMMIT")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        _log.info(
            "{path}: log store upgraded from format {old} to {new}: checksums computed for its {count} "
            "entries, hard state and snapshot rows",
            path=self.path,
            old=version,
            new=FORMAT_VERSION,
            count=count,
        )

    def _read_hard_state(self, conn: sqlite3.Connection) -> HardState:
        row = conn.execute("SELECT term, voted_for, commit_index, crc FROM hard_state").fetchone()
        if row is None:
            return HardState()
        term, voted_for, commit, crc = row
        try:
            computed: int | None = hard_state_crc(term, voted_for, commit)
        except (struct.error, TypeError):
            computed = None
        if computed != crc:
            raise self._mismatch("hard state", crc, computed)
        return HardState(
            self._stored(term, "hard state", "term"),
            None if voted_for is None else self._stored(voted_for, "hard state", "voted_for"),
            self._stored(commit, "hard state", "commit index"),
        )

    def _read_bounds(self, conn: sqlite3.Connection) -> tuple[SnapshotMeta | None, int]:
        """The snapshot and last index, checking the entries are contiguous after the snapshot."""
        snapshot = self._read_snapshot(conn)
        first = snapshot.last_index + 1 if snapshot is not None else 1
        lo, hi, count = conn.execute("SELECT min(idx), max(idx), count(*) FROM entries").fetchone()
        if count == 0:
            return snapshot, first - 1
        if lo < first:
            raise CorruptLog(self.path, f"entry {lo}", f"is stored but the log starts at {first}")
        if lo > first:
            raise CorruptLog(self.path, f"entry {first}", f"is missing ({count} entries span {lo}..{hi})")
        if hi - lo + 1 != count:
            (gap,) = conn.execute(
                "SELECT min(idx) + 1 FROM entries AS e WHERE idx < ?"
                " AND NOT EXISTS (SELECT 1 FROM entries WHERE idx = e.idx + 1)",
                (hi,),
            ).fetchone()
            raise CorruptLog(self.path, f"entry {gap}", f"is missing ({count} entries span {lo}..{hi})")
        return snapshot, hi

    def _read_snapshot(self, conn: sqlite3.Connection) -> SnapshotMeta | None:
        row = conn.execute("SELECT last_index, last_term, config, crc FROM snapshot").fetchone()
        if row is None:
            return None
        index, term, blob, crc = row
        try:
            computed: int | None = snapshot_crc(index, term, blob)
        except (struct.error, TypeError):
            computed = None
        if computed != crc:
            raise self._mismatch("snapshot", crc, computed)
        try:
            config = decode_value(blob, ValueType.CONFIGURATION, 0, len(blob))
        except ValueError as e:
            raise CorruptLog(self.path, "snapshot", f"has a configuration that does not decode ({e})") from e
        assert isinstance(config, Configuration)
        return SnapshotMeta(
            self._stored(index, "snapshot", "index"), self._stored(term, "snapshot", "term"), config
        )

    def _stored(self, value: int, where: str, what: str) -> int:
        """A term, vote or index as read back: 0..2^63-1, or the store is corrupt."""
        if not 0 <= value <= MAX_INDEX:
            raise CorruptLog(self.path, where, f"{what} is {value}, outside 0..2^63-1")
        return value

    def _mismatch(self, where: str, stored: object, computed: int | None) -> CorruptLog:
        return CorruptLog(
            self.path, where, f"fails its checksum (stored crc {_hex(stored)}, computed {_hex(computed)})"
        )

    def _check_entry(self, row: tuple[Any, ...]) -> None:
        """Raise :class:`CorruptLog` for an entry's row (idx, term, value_type, value, crc) that fails."""
        index, term, value_type, value, crc = row
        try:
            computed: int | None = entry_crc(index, term, value_type, value)
        except (struct.error, TypeError):
            computed = None
        if computed != crc:
            raise self._mismatch(f"entry {index}", crc, computed)

    def _error(self, action: str, e: sqlite3.Error) -> StorageError:
        name = getattr(e, "sqlite_errorname", "")
        if name == "SQLITE_NOTADB":
            return StorageError(f"{self.path} is not a {_FORMAT_NAME} (not an SQLite database: {e})")
        if name.startswith("SQLITE_CORRUPT"):
            return StorageError(f"{self.path} is corrupt: {e}")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return StorageError(f"{self.path} is locked (another node using it?): {e}")
        # SQLite's words for a file it may not write (a read-only mount shows as failing to lock)
        if name.startswith("SQLITE_READONLY") or name == "SQLITE_IOERR_LOCK" or "readonly database" in str(e):
            return DataDirNotWritable(
                self._directory, f"{self.path}: {action} failed: {e} ({name or 'readonly'})"
            )
        return StorageError(f"{self.path}: {action} failed: {e} ({name or type(e).__name__})")

    @property
    def _directory(self) -> str:
        return os.path.dirname(os.path.abspath(self.path))

    # ----------------------------------------------------------------------------------------- access

    @property
    def _first(self) -> int:
        return self._snapshot.last_index + 1 if self._snapshot is not None else 1

    @property
    def write_error(self) -> str | None:
        """Why the store refuses writes (an earlier write failed), or None."""
        return self._failed

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"log store {self.path} is closed")
        return self._conn

    @contextlib.contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One transaction; after a failed write the store refuses writes until reopened, because
        what reached the disk is then unknown (a failed fsync may have dropped dirty pages)."""
        conn = self._connection()
        if self._failed is not None:
            raise StorageError(f"{self.path}: an earlier write failed ({self._failed}); reopen the store")
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException as e:
            with contextlib.suppress(sqlite3.Error):
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            if isinstance(e, sqlite3.Error):
                error = self._error(action, e)
                self._failed = str(error)
                raise error from e
            raise

    def load(self) -> StoredState:
        conn = self._connection()
        try:
            hard_state = self._read_hard_state(conn)
            snapshot = self._read_snapshot(conn)
            first = snapshot.last_index + 1 if snapshot is not None else 1
            entries = self._decode(conn.execute(_SELECT_ALL), first)
        except sqlite3.Error as e:
            raise self._error("load", e) from e
        return StoredState(
            clamp_commit(hard_state, first + len(entries) - 1), snapshot, first, tuple(entries)
        )

    def _decode(self, rows: Iterable[tuple[int, int, int, bytes, int]], first: int) -> list[LogEntry]:
        """Verify and decode rows that must be the contiguous run of indexes starting at ``first``."""
        out: list[LogEntry] = []
        pack, crc32, seed = _INTS.pack, zlib.crc32, _ENTRY_SEED  # entry_crc inlined: the hot loop at start
        for row in rows:
            index, term, value_type, blob, crc = row
            try:
                ok = crc == crc32(blob, crc32(pack(index, term, value_type), seed))
            except (struct.error, TypeError):
                ok = False
            if not ok:
                self._check_entry(row)
            expected = first + len(out)
            if index != expected:
                raise CorruptLog(self.path, f"entry {expected}", f"is missing (found entry {index} there)")
            try:
                value = decode_value(blob, value_type, 0, len(blob))
            except ValueError as e:
                raise CorruptLog(self.path, f"entry {index}", f"does not decode ({e})") from e
            out.append(LogEntry(self._stored(term, f"entry {index}", "term"), value))
        return out

    def save(
        self,
        hard_state: HardState | None = None,
        entries_from: int | None = None,
        entries: Sequence[LogEntry] = (),
        *,
        sync: bool = True,
    ) -> None:
        conn = self._connection()
        check_save(self._first, self._last, entries_from, entries)
        if hard_state is not None:
            check_hard_state(hard_state)
        elif entries_from is None:
            return
        # Encode before the transaction opens, so a value we cannot encode aborts nothing.
        rows: list[tuple[int, int, int, bytes, int]] = []
        if entries_from is not None:
            for i, e in enumerate(entries):
                index, value_type, value = entries_from + i, int(e.value_type), encode_value(e.value)
                rows.append((index, e.term, value_type, value, entry_crc(index, e.term, value_type, value)))
        unsynced = self.fsync and not sync
        if unsynced:  # WAL: this commit is not fsynced, and the next synced one makes it durable too
            conn.execute("PRAGMA synchronous = OFF")
        started = time.perf_counter()
        try:
            self._save(hard_state, entries_from, rows)
        finally:
            if unsynced:
                conn.execute("PRAGMA synchronous = FULL")
        if self.fsync and sync:
            self.sync_durations.observe(time.perf_counter() - started)
        if entries_from is not None:
            self._last = entries_from + len(entries) - 1

    def _save(
        self,
        hard_state: HardState | None,
        entries_from: int | None,
        rows: list[tuple[int, int, int, bytes, int]],
    ) -> None:
        with self._write("save") as conn:
            if entries_from is not None:
                if entries_from <= self._last:
                    conn.execute(_DELETE_FROM, (entries_from,))
                for start in range(0, len(rows), INSERT_CHUNK):
                    chunk = rows[start : start + INSERT_CHUNK]
                    conn.execute(_insert_sql(len(chunk)), [field for row in chunk for field in row])
            if hard_state is not None:
                # The commit index is clamped on load, so capping it to fit SQLite loses nothing.
                commit = min(hard_state.commit, MAX_INDEX)
                voted_for = hard_state.voted_for
                crc = hard_state_crc(hard_state.term, voted_for, commit)
                conn.execute(_PUT_HARD_STATE, (hard_state.term, voted_for, commit, crc))

    def compact(self, snapshot: SnapshotMeta) -> None:
        self._connection()
        check_snapshot(self._snapshot, snapshot)
        config = encode_value(snapshot.config)
        index = snapshot.last_index
        # Raft's InstallSnapshot rule: keep what follows only if our log agrees with the snapshot there.
        keep = self._term_at(index) == snapshot.last_term
        with self._write("compact") as conn:
            if keep:
                conn.execute("DELETE FROM entries WHERE idx <= ?", (index,))
            else:
                conn.execute("DELETE FROM entries")
            conn.execute(
                "INSERT OR REPLACE INTO snapshot (id, last_index, last_term, config, crc)"
                " VALUES (0, ?, ?, ?, ?)",
                (index, snapshot.last_term, config, snapshot_crc(index, snapshot.last_term, config)),
            )
        self._snapshot = snapshot
        self._last = max(self._last, index) if keep else index

    def _term_at(self, index: int) -> int | None:
        if self._snapshot is not None and index == self._snapshot.last_index:
            return self._snapshot.last_term
        if index == 0:
            return 0  # Raft's convention for the position before the first entry
        if not self._first <= index <= self._last:
            return None
        try:
            row = (
                self._connection()
                .execute("SELECT idx, term, value_type, value, crc FROM entries WHERE idx = ?", (index,))
                .fetchone()
            )
        except sqlite3.Error as e:
            raise self._error("read", e) from e
        if row is None:
            return None
        self._check_entry(row)
        return self._stored(row[1], f"entry {index}", "term")

    def entries(self, lo: int, hi: int) -> list[LogEntry]:
        conn = self._connection()
        lo, hi = max(lo, self._first), min(hi, self._last + 1)
        if lo >= hi:
            return []
        try:
            return self._decode(conn.execute(_SELECT_ENTRIES, (lo, hi)), lo)
        except sqlite3.Error as e:
            raise self._error("read", e) from e

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
            except sqlite3.Error as e:
                raise self._error("close", e) from e

    def __enter__(self) -> SQLiteLogStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@functools.lru_cache(maxsize=INSERT_CHUNK)
def _insert_sql(rows: int) -> str:
    """``rows`` placeholders: the text has no data in it, only their count."""
    placeholders = ", ".join(["(?, ?, ?, ?, ?)"] * rows)
    return f"INSERT INTO entries (idx, term, value_type, value, crc) VALUES {placeholders}"  # noqa: S608
