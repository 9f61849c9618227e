"""A core's state as it starts from disk and as it reports it (status is what the CLI, the admin
console and operators read): exact values, found unchecked by mutation testing."""

from __future__ import annotations

import random

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import Role
from garlicfarm.storage.interface import HardState, SnapshotMeta, StoredState
from garlicfarm.wire import ClusterServer, Configuration, LogEntry
from tests.raft.harness import PAPER, Cluster, configuration, entry

FOUR = tuple(ClusterServer(i, f"sim://{i}") for i in range(1, 5))
THREE = FOUR[:3]


def start(hard: HardState, entries: tuple[LogEntry, ...], snapshot: SnapshotMeta | None) -> RaftCore:
    first = snapshot.last_index + 1 if snapshot else 1
    stored = StoredState(hard, snapshot, first, entries)
    return RaftCore(1, stored, random.Random(1), configuration(3), PAPER, b"state" if snapshot else b"")


def test_a_core_starts_from_its_snapshot_and_the_log_after_it() -> None:
    snapshot = SnapshotMeta(5, 2, Configuration(4, 0, FOUR))
    shrunk = Configuration(7, 4, THREE)
    entries = (entry(2), LogEntry(3, shrunk), entry(3))  # indexes 6, 7, 8
    core = start(HardState(3, 2, 10), entries, snapshot)
    assert (core.log.snapshot_index, core.log.snapshot_term, core.log.first_index) == (5, 2, 6)
    assert (core.log.last_index, core.log.last_term) == (8, 3)
    assert (core.term, core.voted_for) == (3, 2)
    assert core.commit == 8  # a saved commit index past the log is cut to the log
    assert core.applied == 5  # the snapshot is applied; the log after it is applied again
    assert core.config_at(5).servers == FOUR and core.config_at(6).servers == FOUR
    assert core.config_at(7) == shrunk and core.config_index == 7 and core.voters() == {1, 2, 3}
    assert core.snapshot_meta() == snapshot
    assert core.role is Role.FOLLOWER and core.leader_id is None


def test_a_saved_commit_index_below_the_snapshot_is_raised_to_it() -> None:
    core = start(HardState(3, None, 1), (entry(3),), SnapshotMeta(5, 2, Configuration(0, 0, THREE)))
    assert (core.commit, core.applied) == (5, 5)


def test_a_core_without_a_snapshot_takes_the_bootstrap_configuration() -> None:
    core = start(HardState(1, None, 1), (entry(1), entry(1)), None)
    assert core.voters() == {1, 2, 3} and core.config_index == 0 and core.snapshot_meta() is None
    assert (core.commit, core.applied) == (1, 0)
    alone = RaftCore(9, StoredState(HardState(0, None, 0), None, 1, ()), random.Random(1), None, PAPER)
    assert alone.voters() == frozenset() and alone.status()["members"] == []


def test_status_says_exactly_where_each_node_stands() -> None:
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    c.propose(1, b"x")
    c.stabilize()
    leader, follower = c[1].status(), c[2].status()
    members = [{"id": i, "endpoint": f"sim://{i}"} for i in (1, 2, 3)]
    last = c[1].log.last_index
    assert leader == {
        "stopped_by": None,
        "id": 1,
        "role": "leader",
        "term": c[1].term,
        "leader": 1,
        "commit_index": last,
        "last_log_index": last,
        "applied_index": last,
        "members": members,
        "snapshot_index": 0,
        "removed": False,
        "joining": None,
        "join_refusal": None,
        "change_refused": None,
        "leader_conflict": None,
        "leader_conflicts": 0,
        "election_backoff": 0,
        "progress": {
            "2": {"match": last, "next": last + 1, "state": "replicate"},
            "3": {"match": last, "next": last + 1, "state": "replicate"},
        },
    }
    assert follower["role"] == "follower" and follower["leader"] == 1 and follower["progress"] == {}
    assert (follower["id"], follower["last_log_index"], follower["term"]) == (2, last, c[1].term)
