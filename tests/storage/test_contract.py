"""The LogStore contract, run against every implementation (see conftest's ``harness``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from garlicfarm.storage.interface import HardState, LogStore, SnapshotMeta, StorageError, StoredState
from garlicfarm.storage.sqlite import SQLiteLogStore, hard_state_crc
from garlicfarm.wire.payloads import ClusterServer, LogEntry
from tests.storage.conftest import Harness, app, config


def log(*terms: int, tag: str = "e") -> list[LogEntry]:
    return [app(t, f"{tag}{i}") for i, t in enumerate(terms)]


def test_empty_load(store: LogStore) -> None:
    assert store.load() == StoredState(HardState(), None, 1, ())
    assert store.entries(0, 10) == []


def test_append_and_read(store: LogStore) -> None:
    entries = log(1, 1, 2)
    store.save(HardState(2, 3, 1), 1, entries)
    assert store.load() == StoredState(HardState(2, 3, 1), None, 1, tuple(entries))
    store.save(None, 4, log(2, tag="x"))
    assert store.load().entries == (*entries, app(2, "x0"))
    assert store.load().hard_state == HardState(2, 3, 1)


def test_overwrite_from_the_middle(store: LogStore) -> None:
    store.save(None, 1, log(1, 1, 1, 1, 1))
    store.save(None, 3, log(2, 2, tag="new"))
    assert store.load().entries == (app(1, "e0"), app(1, "e1"), app(2, "new0"), app(2, "new1"))


def test_truncate_without_new_entries(store: LogStore) -> None:
    store.save(None, 1, log(1, 1, 1))
    store.save(None, 2, [])
    assert store.load().entries == (app(1, "e0"),)
    store.save(None, 1, [])
    assert store.load().entries == ()


def test_hard_state_round_trip(harness: Harness) -> None:
    big = 2**63 - 1  # the largest term: JRaft's signed longs, SQLite's integers
    harness.store.save(HardState(big, big, 0), 1, [app(big, "max")])
    for store in harness.before_and_after_restart():
        assert store.load().hard_state == HardState(big, big, 0)
        assert store.load().entries == (app(big, "max"),)
    harness.store.save(HardState(7, None, 1))
    assert harness.restart().load().hard_state == HardState(7, None, 1)


def test_hard_state_alone_keeps_entries(store: LogStore) -> None:
    store.save(None, 1, log(1, 1))
    store.save(HardState(1, None, 2))
    assert store.load().entries == tuple(log(1, 1))


def test_commit_is_clamped_to_the_stored_log(harness: Harness) -> None:
    harness.store.save(HardState(3, 1, 10), 1, log(1, 1))
    assert harness.store.load().hard_state.commit == 2
    harness.store.save(None, 2, [])
    assert harness.restart().load().hard_state == HardState(3, 1, 1)


def test_configuration_entries_round_trip(harness: Harness) -> None:
    entries = [LogEntry(1, config(1, 1, 2, 3)), LogEntry(1, ClusterServer(9, None)), app(2, "{}")]
    harness.store.save(None, 1, entries)
    assert harness.restart().load().entries == tuple(entries)


def test_compact_then_load(harness: Harness) -> None:
    harness.store.save(HardState(2, 1, 4), 1, log(1, 1, 2, 2, 2))
    snap = SnapshotMeta(3, 2, config(0, 1, 2))
    harness.store.compact(snap)
    for store in harness.before_and_after_restart():
        state = store.load()
        assert state.snapshot == snap
        assert state.first_index == 4
        assert state.entries == tuple(log(1, 1, 2, 2, 2)[3:])
        assert state.hard_state.commit == 4
        assert tuple(store.entries(1, 10)) == state.entries
    harness.store.save(None, 4, log(3, tag="after"))
    assert harness.store.load().entries == (app(3, "after0"),)


def test_compact_past_the_end_drops_the_log(harness: Harness) -> None:
    harness.store.save(HardState(2, 1, 3), 1, log(1, 1, 1))
    snap = SnapshotMeta(10, 4, config(0, 1))
    harness.store.compact(snap)
    for store in harness.before_and_after_restart():
        assert store.load() == StoredState(HardState(2, 1, 3), snap, 11, ())
    harness.store.save(None, 11, log(4))
    assert harness.store.entries(0, 100) == log(4)


def test_compact_that_disagrees_with_the_log_drops_it(store: LogStore) -> None:
    """Raft's InstallSnapshot rule: entries after a conflicting snapshot point cannot be kept."""
    store.save(None, 1, log(1, 1, 1, 1))
    store.compact(SnapshotMeta(2, 5, config()))
    assert store.load().entries == ()
    assert store.load().first_index == 3


def test_compact_at_the_same_index_keeps_what_follows(store: LogStore) -> None:
    store.save(None, 1, log(1, 2, 3))
    store.compact(SnapshotMeta(1, 1, config(0, 1)))
    store.compact(SnapshotMeta(1, 1, config(0, 1, 2)))
    state = store.load()
    assert state.entries == tuple(log(1, 2, 3)[1:])
    assert state.snapshot == SnapshotMeta(1, 1, config(0, 1, 2))


def test_compact_at_zero_keeps_the_log(store: LogStore) -> None:
    store.save(None, 1, log(1, 2))
    store.compact(SnapshotMeta(0, 0, config(0, 1)))
    assert store.load().entries == tuple(log(1, 2))
    assert store.load().first_index == 1


def test_compact_everything(store: LogStore) -> None:
    store.save(None, 1, log(1, 1))
    store.compact(SnapshotMeta(2, 1, config()))
    assert store.load().entries == ()
    assert store.load().first_index == 3
    store.save(None, 3, log(2))
    assert store.entries(3, 4) == log(2)


def test_entries_clipping(store: LogStore) -> None:
    entries = log(1, 1, 2, 2, 3)
    store.save(None, 1, entries)
    assert store.entries(1, 6) == entries
    assert store.entries(-5, 100) == entries
    assert store.entries(2, 4) == entries[1:3]
    assert store.entries(4, 2) == []
    assert store.entries(6, 9) == []
    assert store.entries(2**70, 2**80) == []
    store.compact(SnapshotMeta(2, 1, config()))
    assert store.entries(1, 4) == entries[2:3]
    assert store.entries(0, 2) == []


@pytest.mark.parametrize(
    ("entries_from", "match"),
    [(0, "not past the snapshot"), (5, "gap"), (100, "gap")],
)
def test_bad_entries_from(store: LogStore, entries_from: int, match: str) -> None:
    store.save(None, 1, log(1, 1, 1))
    with pytest.raises(ValueError, match=match):
        store.save(HardState(9), entries_from, log(1))
    assert store.load() == StoredState(HardState(), None, 1, tuple(log(1, 1, 1)))


def test_entries_from_must_be_past_the_snapshot(store: LogStore) -> None:
    store.save(None, 1, log(1, 1, 1))
    store.compact(SnapshotMeta(2, 1, config()))
    with pytest.raises(ValueError, match="not past the snapshot"):
        store.save(None, 2, log(2))
    store.save(None, 3, log(2))


def test_entries_without_entries_from(store: LogStore) -> None:
    with pytest.raises(ValueError, match="without entries_from"):
        store.save(HardState(1), None, log(1))
    assert store.load().hard_state == HardState()


@pytest.mark.parametrize(
    "hard_state",
    [
        HardState(-1),
        HardState(2**63),
        HardState(2**64 - 1),
        HardState(1, -2),
        HardState(1, 2**63),
        HardState(1, 1, -1),
    ],
)
def test_bad_hard_state(store: LogStore, hard_state: HardState) -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.2\^63-1"):
        store.save(hard_state, 1, log(1))
    assert store.load().entries == ()


@pytest.mark.parametrize("term", [-1, 2**63, 2**64 - 1])
def test_bad_entry_term(store: LogStore, term: int) -> None:
    with pytest.raises(ValueError, match="term"):
        store.save(HardState(1), 1, [app(1, "ok"), app(term, "bad")])
    assert store.load() == StoredState(HardState(), None, 1, ())


def test_snapshot_cannot_go_back(store: LogStore) -> None:
    store.save(None, 1, log(1, 1, 1))
    store.compact(SnapshotMeta(2, 1, config()))
    with pytest.raises(ValueError, match="older"):
        store.compact(SnapshotMeta(1, 1, config()))
    with pytest.raises(ValueError, match="out of range"):
        store.compact(SnapshotMeta(-1, 1, config()))
    assert store.load().first_index == 3


def test_loaded_state_is_isolated_from_later_saves(store: LogStore) -> None:
    store.save(None, 1, log(1, 1))
    before = store.load()
    got = store.entries(1, 3)
    got.clear()
    store.save(None, 2, log(5, 5))
    assert before.entries == tuple(log(1, 1))
    assert store.entries(1, 2) == log(1)


def test_a_negative_term_on_disk_is_corruption_not_a_huge_term(tmp_path: Path) -> None:
    """Regression: a stored -5 read back as 2^64-5 (two's complement), an unencodable term."""
    path = tmp_path / "log.db"
    store = SQLiteLogStore(path)
    store.save(HardState(3, 1, 0), 1, [app(3, "x")])
    store.close()
    conn = sqlite3.connect(path)
    # with a checksum to match, as a bug writing -5 would have left it: the range check still refuses it
    conn.execute("UPDATE hard_state SET term = -5, crc = ?", (hard_state_crc(-5, 1, 0),))
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match=r"term is -5, outside 0\.\.2\^63-1"):
        SQLiteLogStore(path).load()


def test_a_zero_byte_store_is_refused_not_taken_for_a_new_node(tmp_path: Path) -> None:
    """Regression: a 0-byte log.db started as an empty node, forgetting its term and vote."""
    path = tmp_path / "log.db"
    path.write_bytes(b"")
    with pytest.raises(StorageError, match=r"empty \(0 bytes\): this node's log, term and vote are lost"):
        SQLiteLogStore(path)


def test_a_new_store_appears_whole(tmp_path: Path) -> None:
    """A new store is created beside its path and renamed in: no half-made file is ever at ``path``."""
    path = tmp_path / "log.db"
    SQLiteLogStore(path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.db"]
    assert SQLiteLogStore(path).load() == StoredState(HardState(), None, 1, ())
