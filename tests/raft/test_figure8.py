"""Figure 8 of the Raft paper (§5.4.2): why a leader may not commit an earlier term's entry by counting
its replicas, and how committing an entry of its own term makes the earlier ones safe.

Five servers, all starting with one committed entry of term 1 (index 1), as in the figure:

(a) S1 leads term 2 and replicates its entries (its term-start entry and a client entry, indexes 2-3)
    to S2 only.
(b) S1 crashes; S5 wins term 3 with votes from S3, S4 and itself, and appends different entries at
    indexes 2-3, on itself only; then crashes.
(c) S1 restarts, wins term 4 and replicates its term-2 entries to S3 and S4: they are now on four of
    five servers and the leader *knows* a majority has them, but its own term-4 entry is on no one else.
(d) If S1 crashes now, S5 can win term 5 (S2, S3 and S4 see a log ending in term 3 as more up to date
    than theirs) and overwrite indexes 2-3 everywhere. Counting replicas in (c) would have committed
    entries that are now gone. This core did not: it waits for an entry of its own term.
(e) If instead S1 replicates its term-4 entry to a majority, that commits it and the term-2 entries
    before it; then S5 can no longer win, and whoever wins keeps them.

Adapted: every new leader's first entry is its term-start Configuration entry (the paper's figure has
client entries), and entries travel one per AppendEntries so the test can stop between them.
"""

from __future__ import annotations

import attrs

from garlicfarm.raft.types import Role
from garlicfarm.storage.interface import HardState
from garlicfarm.wire import AppendEntriesRequest
from tests.raft.harness import (
    PAPER,
    Cluster,
    Envelope,
    Predicate,
    assert_state_machine_safety,
    is_vote_traffic,
    log_of,
    store_with,
    terms,
)

OPTIONS = attrs.evolve(PAPER, max_entries_per_append=1, max_inflight=1)


def installs_past(c: Cluster, index: int) -> Predicate:
    """An AppendEntries its destination would accept and that carries an entry past ``index``."""

    def check(env: Envelope) -> bool:
        m = env.message
        if not isinstance(m, AppendEntriesRequest) or c.cores[env.dst] is None:
            return False
        last = env.last_index()
        assert last is not None
        return last > index and c[env.dst].log.term_at(m.last_log_index) == m.last_log_term

    return check


def figure8_c() -> Cluster:
    """The cluster in state (c): S1 leads term 4; its term-2 entries (indexes 2-3) are on S1-S4 and S1
    knows S3 and S4 have them; its term-4 entry (index 4) is on S1 only; S5 is down."""
    stores = {i: store_with(log_of(1), HardState(term=1, commit=1)) for i in range(1, 6)}
    c = Cluster(5, OPTIONS, stores)

    # (a) S1 leads term 2 and replicates indexes 2-3 to S2 only.
    c.elect(1)
    c.propose(1, b"S1 in term 2")
    c.partition({1, 2}, {3, 4, 5})
    c.stabilize()
    assert c[1].term == 2
    assert terms(c.log(1)) == terms(c.log(2)) == [1, 2, 2]
    assert c[1].commit == 1

    # (b) S1 crashes; S5 wins term 3 (S3, S4) and appends indexes 2-3 on itself only; S5 crashes.
    c.crash(1)
    c.heal()
    c.elect(5)
    c.propose(5, b"S5 in term 3")
    c.ready(5)
    assert c[5].term == 3
    c.crash(5)
    assert terms(c.log(5)) == [1, 3, 3]

    # (c) S1 restarts and wins term 4; its term-2 entries reach S3 and S4, its term-4 entry no one.
    c.restart(1)
    c.elect(1)
    assert c[1].term == 4
    assert terms(c.log(1)) == [1, 2, 2, 4]
    held = installs_past(c, 3)
    c.stabilize(lambda env: not held(env))
    assert [terms(c.log(i)) for i in (2, 3, 4)] == [[1, 2, 2]] * 3
    return c


def test_figure8_old_term_entry_on_majority_is_not_committed() -> None:
    """§5.4.2, Figure 8(c): the leader knows a majority stores its term-2 entries; it does not commit."""
    c = figure8_c()
    assert [c[1].progress[i].match for i in (3, 4)] == [3, 3]  # S1, S3, S4: a majority holds index 3
    assert c[1].commit == 1
    assert c.applied_terms(1) == {1: 1}


def test_figure8_uncommitted_old_term_entry_may_be_overwritten() -> None:
    """§5.4.2, Figure 8(d): S5 wins term 5 and overwrites indexes 2-3 on the majority that held them,
    which is safe only because they were never committed (nobody applied them)."""
    c = figure8_c()
    c.crash(1)
    c.restart(5)
    c.elect(5)
    assert c[5].term == 5
    c.stabilize()
    c.tick(5)  # a heartbeat carries the new commit index
    c.stabilize()
    for i in (2, 3, 4, 5):
        assert terms(c.log(i)) == [1, 3, 3, 5]
        assert c[i].commit == 4
    assert all(e.term != 2 for node in c.applied.values() for _, e in node)
    assert_state_machine_safety(c)


def test_figure8_current_term_entry_commits_earlier_ones() -> None:
    """§5.4.2, Figure 8(e): once S1's term-4 entry is on a majority it commits, and the term-2 entries
    with it; S5 can then never win, and the next leader keeps them."""
    c = figure8_c()
    c.stabilize(lambda env: env.dst in (3, 4) or env.src in (3, 4))
    assert c[1].commit == 4
    assert c.applied_terms(1) == {1: 1, 2: 2, 3: 2, 4: 4}

    c.crash(1)
    c.restart(5)
    for _ in range(10 * OPTIONS.election_ticks):  # S5 campaigns again and again: S3 and S4 refuse
        c.tick(5)
        c.stabilize(is_vote_traffic)
        assert c[5].role is not Role.LEADER

    c.elect(3)
    c.stabilize()
    c.tick(3)
    c.stabilize()
    for i in (2, 3, 4, 5):
        assert terms(c.log(i))[:4] == [1, 2, 2, 4]
        assert c[i].commit == 5
    assert_state_machine_safety(c)
