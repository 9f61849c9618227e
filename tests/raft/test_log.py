"""RaftLog's record of what changed: whatever the core does to its log (append, truncate, compact),
persisting what ``take_unpersisted`` names leaves a log store holding exactly the log. A property test
against the real in-memory store, whose checks refuse a write that does not fit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from garlicfarm.raft.log import RaftLog
from garlicfarm.storage.interface import SnapshotMeta
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import Application, Configuration, LogEntry

CONFIG = Configuration(0, 0, ())

Op = tuple[str, int, int, int]
# (operation, position, count, term shift) — positions and terms are made valid when applied
operations = st.lists(
    st.tuples(
        st.sampled_from(["append", "truncate", "compact", "compact-other", "persist"]),
        st.integers(0, 12),
        st.integers(0, 3),
        st.integers(0, 2),
    ),
    max_size=30,
)


def entries(count: int, term: int, tag: int) -> list[LogEntry]:
    return [LogEntry(term, Application(b"%d.%d" % (tag, k))) for k in range(count)]


def persist(log: RaftLog, store: MemoryLogStore) -> None:
    start, written = log.take_unpersisted()
    store.save(None, start, written)
    assert log.unpersisted_from is None


def assert_same(log: RaftLog, store: MemoryLogStore) -> None:
    state = store.load()
    snapshot_index = state.snapshot.last_index if state.snapshot is not None else 0
    assert (snapshot_index, store.last_index) == (log.snapshot_index, log.last_index)
    assert store.entries(log.first_index, log.last_index + 1) == log.slice(
        log.first_index, log.last_index + 1
    )


@settings(max_examples=300, deadline=None)
@given(operations)
def test_persisting_what_changed_keeps_the_store_equal_to_the_log(
    ops: list[tuple[str, int, int, int]],
) -> None:
    log, store = RaftLog(0, 0, []), MemoryLogStore()
    for tag, (op, position, count, shift) in enumerate(ops):
        if op == "append":
            log.append(entries(count, log.last_term + shift, tag))
        elif op == "truncate":
            after = min(log.snapshot_index + position, log.last_index)
            log.truncate_and_append(after, entries(count, log.last_term + shift, tag))
        elif op.startswith("compact"):
            index = log.snapshot_index + 1 + position  # may lie past the end: the snapshot replaces the log
            term = log.term_at(index)
            if term is None or op == "compact-other":
                term = log.last_term + 1 + shift  # a snapshot our log disagrees with
            # as the driver: the store compacts first, then the log's changes are saved
            log.compact(index, term)
            store.compact(SnapshotMeta(index, term, CONFIG))
            persist(log, store)
        else:
            persist(log, store)
    persist(log, store)
    assert_same(log, store)


def test_a_write_that_changes_nothing_asks_nothing_of_the_disk() -> None:
    log = RaftLog(0, 0, entries(3, 1, 0))
    log.truncate_and_append(3, [])  # nothing past 3 to replace, nothing to add
    assert log.unpersisted_from is None
    log.compact(2, 1)  # a prefix the log agrees with: the store compacts itself
    assert log.unpersisted_from is None and log.slice(3, 4) == entries(3, 1, 0)[2:]
    log.compact(3, 1)  # up to the very last entry
    assert (log.unpersisted_from, log.last_index) == (None, 3)


def test_a_snapshot_the_log_disagrees_with_replaces_all_of_it() -> None:
    log = RaftLog(0, 0, entries(4, 1, 0))
    log.compact(2, 5)  # our entry 2 is of term 1
    assert (log.snapshot_index, log.snapshot_term, log.last_index) == (2, 5, 2)
    assert log.take_unpersisted() == (3, [])  # the store drops what it held past the snapshot too


def test_entries_are_found_by_their_index_past_a_snapshot() -> None:
    log = RaftLog(4, 2, entries(3, 2, 0))
    assert [log.entry(i) for i in (5, 6, 7)] == entries(3, 2, 0)


def test_a_truncation_without_new_entries_drops_the_stored_tail() -> None:
    log, store = RaftLog(0, 0, []), MemoryLogStore()
    log.append(entries(4, 1, 0))
    persist(log, store)
    log.truncate_and_append(2, [])
    persist(log, store)
    assert_same(log, store)
    assert store.last_index == 2


def test_a_snapshot_covering_every_unsaved_entry_leaves_nothing_to_save() -> None:
    log = RaftLog(0, 0, [])
    log.append(entries(3, 1, 0))  # not saved yet
    log.compact(3, 1)
    assert log.unpersisted_from is None


def test_a_second_compaction_keeps_exactly_the_entries_past_it() -> None:
    log = RaftLog(0, 0, entries(6, 1, 0))
    log.compact(2, 1)
    log.compact(4, 1)  # counted from the first snapshot's end, not from the log's start
    assert (log.snapshot_index, log.last_index) == (4, 6)
    assert log.slice(5, 7) == entries(6, 1, 0)[4:]
