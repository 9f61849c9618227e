"""A leader counts itself towards a commit only as far as its own store holds its log (§5.3 with
asynchronous writes: the driver sends a leader's entries while its own write of them runs). When a
server's log is cut back (a truncation, an installed snapshot), what it had written beyond the cut no
longer counts: entries written later at those indexes are new, and durable only once written.

Statement deletion found both resets unchecked by the unit tests: without them, a server that was cut
back and then elected counted as written an entry it had not written yet, and committed it with one
copy fewer on disk than a majority."""

from __future__ import annotations

from collections.abc import Callable

from garlicfarm.storage.interface import HardState
from garlicfarm.wire import InstallSnapshotRequest, LogEntry, SnapshotSyncRequest
from tests.raft.harness import PAPER, Cluster, append, configuration, entry, log_of, store_with


def _truncated(c: Cluster) -> None:
    """A leader of term 2 keeps two of node 1's five entries and writes its own third."""
    c.step(1, append(2, 1, term=2, prev_index=2, prev_term=1, entries=[entry(2)]))


def _replaced_by_a_snapshot(c: Cluster) -> None:
    """A leader of term 2 sends a snapshot ending at 3 in term 2: node 1's entry 3 (term 1) differs,
    so the snapshot replaces the whole log."""
    chunk = SnapshotSyncRequest(3, 2, configuration(3), 0, b"state at 3", True)
    c.step(
        1,
        InstallSnapshotRequest(
            source=2, destination=1, term=2, last_log_term=2, last_log_index=3, entries=(LogEntry(2, chunk),)
        ),
    )


def _commit_after_cut_back(cut_back: Callable[[Cluster], None]) -> tuple[int, int]:
    """Node 1 (five entries of term 1, written) is cut back to three, is elected in term 3 with node
    2's vote (node 2 holds the same three), and node 3 is unreachable. A new entry at 5 goes out
    before node 1 has written it, and node 2 acknowledges it: node 1's commit index then, and once
    its write is done."""
    c = Cluster(
        3,
        PAPER,
        stores={
            1: store_with(log_of(1, 1, 1, 1, 1), HardState(term=1)),
            2: store_with(log_of(1, 1, 2), HardState(term=2)),
        },
    )
    cut_back(c)
    c.ready(1)
    assert c[1].log.last_index == 3 and c[1].log.term_at(3) == 2
    c.isolate(3)
    c.elect(1)
    c.stabilize()
    assert c[1].commit == 4 and c[2].log.last_index == 4, "node 2 did not catch up"
    c.propose(1, b"at 5")
    rd = c.ready_unwritten(1)
    assert [e.term for e in rd.entries] == [3] and rd.entries_from == 5
    c.stabilize(lambda env: 2 in (env.src, env.dst))
    assert c[2].log.last_index == 5
    before = c[1].commit
    c.write(1, rd)
    return before, c[1].commit


def test_a_truncated_log_counts_again_only_once_rewritten() -> None:
    assert _commit_after_cut_back(_truncated) == (4, 5)


def test_a_log_replaced_by_a_snapshot_counts_only_to_the_snapshot() -> None:
    assert _commit_after_cut_back(_replaced_by_a_snapshot) == (4, 5)
