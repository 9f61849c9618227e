"""Child process for test_crash: writes to a SQLite store until killed.

Before each write it prints what it is about to do, and after the write returns it prints ``ack``, so
the parent knows which writes were acknowledged (they must survive) and which one was in flight (it may
or may not have). Entry contents follow from (index, term), so the parent can rebuild them exactly.

Usage: crash_writer.py PATH SEED [nofsync]   (nofsync: a store that never fsyncs, which must lose data
to a power loss: tests/powerloss)
"""

from __future__ import annotations

import random
import sys

from garlicfarm.storage.interface import HardState, SnapshotMeta
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire.payloads import Application, ClusterServer, Configuration, LogEntry

SNAPSHOT_CONFIG = Configuration(0, 0, (ClusterServer(1, "a:1"), ClusterServer(2, "b:2")))


def entry_for(index: int, term: int) -> LogEntry:
    """A recognisable entry whose size varies, so writes span pages and trigger WAL checkpoints."""
    return LogEntry(term, Application(f"<{index}:{term}>".encode() * (1 + (index * 7919 + term) % 60)))


def main(path: str, seed: int, fsync: bool = True) -> None:
    rng = random.Random(seed)
    store = SQLiteLogStore(path, fsync=fsync)
    state = store.load()
    first, last = state.first_index, state.first_index + len(state.entries) - 1
    term = state.hard_state.term

    def report(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    while True:
        roll = rng.random()
        if roll < 0.03 and last >= first:
            index = rng.randint(first, last)
            (entry,) = store.entries(index, index + 1)
            report(f"compact {index} {entry.term}")
            store.compact(SnapshotMeta(index, entry.term, SNAPSHOT_CONFIG))
            first = index + 1
        else:
            entries_from, count = last + 1, 1
            if roll < 0.15:  # a new leader overwrites the uncommitted tail
                term += 1
                entries_from, count = max(first, last - rng.randint(0, 3)), rng.randint(1, 3)
            elif rng.random() < 0.2:
                count = rng.randint(2, 20)
            voted_for, commit = term % 5, max(first - 1, entries_from - 1)
            report(f"save {term} {voted_for} {commit} {entries_from} {count}")
            entries = [entry_for(entries_from + i, term) for i in range(count)]
            store.save(HardState(term, voted_for, commit), entries_from, entries)
            last = entries_from + count - 1
        report("ack")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), fsync=sys.argv[3:] != ["nofsync"])
