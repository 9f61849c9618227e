"""Raft elects at most one leader a term (§5.2): a second server claiming a term's leadership is forged
or misconfigured. Its messages are refused, so that entries of one term and index never differ — the
log matching that lets a follower skip entries it holds would otherwise keep forged ones (found from
outside: a credential holder's AppendEntries, posing as leader in the current term, rewrote 969
acknowledged writes on a follower)."""

from __future__ import annotations

from garlicfarm.raft.types import Role
from garlicfarm.wire import (
    AppendEntriesResponse,
    ClusterServer,
    Configuration,
    InstallSnapshotRequest,
    JoinClusterRequest,
    LeaveClusterRequest,
    LogEntry,
    SnapshotSyncRequest,
)
from tests.raft.harness import PAPER, Cluster, append, entry
from tests.raft.test_edge_rules import follower_with


def answer(c: Cluster, handle: int | None) -> AppendEntriesResponse:
    rd = c[1].ready()
    c[1].advance(rd)
    (reply,) = [r for r in rd.replies if r.handle == handle]
    assert isinstance(reply.message, AppendEntriesResponse)
    return reply.message


def test_the_forged_rewrite_of_committed_entries_is_refused() -> None:
    c = follower_with(1, 1, 1, term=3)
    real = [entry(3, b"real-%d" % i) for i in range(4, 8)]
    assert answer(c, c.step(1, append(2, 1, 3, 3, 1, real, commit=3))).accepted  # 2 leads term 3
    # 3, a credential holder, poses as leader of the same term, from the commit index on
    forged = [entry(3, b"forged-%d" % i) for i in range(4, 8)]
    reply = answer(c, c.step(1, append(3, 1, 3, 3, 1, forged, commit=3)))
    assert not reply.accepted
    assert [e.value for e in c[1].log.slice(4, 8)] == [e.value for e in real]
    # the real leader commits: what commits is its entries
    assert answer(c, c.step(1, append(2, 1, 3, 7, 3, [], commit=7))).accepted
    assert c[1].commit == 7 and c[1].log.slice(4, 8) == real
    assert c[1].leader_id == 2 and c[1].leader_conflicts == 1
    assert (
        c[1].leader_conflict
        == "server 3 sent AppendEntriesRequest as leader of term 3, which server 2 leads: refused"
    )
    assert c[1].status()["leader_conflict"] == c[1].leader_conflict


def test_the_first_claimant_of_a_term_is_followed() -> None:
    c = follower_with(1, 1, 1, term=3)  # no leader known in term 3 yet
    assert answer(c, c.step(1, append(3, 1, 3, 3, 1, [entry(3)]))).accepted
    assert c[1].leader_id == 3 and c[1].leader_conflicts == 0
    # a later term belongs to whoever won it
    assert answer(c, c.step(1, append(2, 1, 4, 4, 3, []))).accepted
    assert c[1].leader_id == 2 and c[1].leader_conflicts == 0


def test_a_leader_does_not_step_down_for_a_second_leader_of_its_own_term() -> None:
    c = Cluster(3, PAPER)
    c.elect(1)
    leader = c[1]
    term = leader.term
    handle = c.step(1, append(2, 1, term, leader.log.last_index, term, [entry(term, b"forged")]))
    assert leader.role is Role.LEADER and leader.term == term
    assert not answer(c, handle).accepted
    assert leader.leader_conflict is not None and "which server 1 leads" in leader.leader_conflict


def test_a_candidate_follows_the_winner_of_its_term() -> None:
    c = Cluster(3, PAPER)
    c.campaign(1)
    term = c[1].term
    assert answer(c, c.step(1, append(2, 1, term, 0, 0))).accepted
    assert c[1].role is Role.FOLLOWER and c[1].leader_id == 2 and c[1].leader_conflicts == 0


def test_every_leader_message_is_checked() -> None:
    servers = (ClusterServer(1, "sim://1"), ClusterServer(2, "sim://2"), ClusterServer(3, "sim://3"))
    config = Configuration(0, 0, servers)
    others = [
        JoinClusterRequest(source=3, destination=1, term=3, entries=(LogEntry(3, config),)),
        LeaveClusterRequest(source=3, destination=1, term=3),
        InstallSnapshotRequest(
            source=3,
            destination=1,
            term=3,
            last_log_term=1,
            last_log_index=9,
            entries=(LogEntry(0, SnapshotSyncRequest(9, 1, config, 0, b"x", True)),),
        ),
    ]
    for message in others:
        c = follower_with(1, 1, 1, term=3)
        c.step(1, append(2, 1, 3, 3, 1))
        c[1].advance(c[1].ready())
        c.step(1, message)
        assert c[1].leader_id == 2 and not c[1].removed and c[1].log.snapshot_index == 0, message
        assert c[1].leader_conflicts == 1
