"""Client requests (Raft §8, proposal 150's ClientRequest): only the leader accepts them, the answer
waits for the commit decision, and a follower names the leader it knows."""

from __future__ import annotations

from garlicfarm.raft.types import Role
from garlicfarm.wire import NO_LEADER, AppendEntriesRequest, AppendEntriesResponse, Response
from tests.raft.harness import PAPER, Cluster, client_request, terms


def _answer(c: Cluster, handle: int) -> Response:
    reply = c.client_replies[handle]
    assert isinstance(reply, AppendEntriesResponse)
    return reply


def test_client_request_to_follower_names_the_leader() -> None:
    """§8: a follower rejects a client request and points the client to the leader it knows."""
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = c.client(2, client_request(b"x"))
    c.ready(2)
    reply = _answer(c, handle)
    assert (reply.accepted, reply.source, reply.destination) == (False, 2, 1)
    assert c[2].log.last_index == 1


def test_client_request_without_known_leader_says_no_leader() -> None:
    """§8: with no leader known the rejection's destination is NO_LEADER (0xFFFFFFFF)."""
    c = Cluster(3, PAPER)
    handle = c.client(1, client_request(b"x"))
    c.ready(1)
    reply = _answer(c, handle)
    assert (reply.accepted, reply.destination) == (False, NO_LEADER)


def test_client_request_to_leader_answered_once_committed() -> None:
    """§8: the leader answers a client only once its entry commits, with next_index = its index + 1."""
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = c.client(1, client_request(b"x"))
    c.ready(1)  # appended and durable on the leader: not yet committed
    c.deliver(lambda env: isinstance(env.message, AppendEntriesRequest))
    c.flush()  # the followers' acknowledgements are on the wire, not yet at the leader
    assert handle not in c.client_replies
    c.stabilize()
    reply = _answer(c, handle)
    assert (reply.accepted, reply.next_index, reply.destination) == (True, 3, 1)


def test_overwritten_request_refused_only_when_commit_passes_it() -> None:
    """§5.3, §8: a deposed leader's pending request whose entry is overwritten is refused once the commit
    index reaches that index, not when the entry is truncated (another server might still commit it)."""
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    c.isolate(1)
    handle = c.client(1, client_request(b"x"))  # index 2, term 1: only on the old leader
    c.ready(1)
    c.elect(2)  # term 2, with node 3's vote
    c.wire = [e for e in c.wire if e.src != 1]
    c.heal()
    c.deliver(lambda env: (env.src, env.dst) == (2, 1))  # term 2's index 2 replaces x; commit still 1
    c.ready(1)
    assert (c[1].role, terms(c.log(1)), c[1].commit) == (Role.FOLLOWER, [1, 2], 1)
    assert handle not in c.client_replies
    c.stabilize()
    c.tick(2)  # the heartbeat carries commit index 2
    c.stabilize()
    assert c[1].commit == 2
    reply = _answer(c, handle)
    assert (reply.accepted, reply.destination) == (False, 2)


def test_pending_request_accepted_when_its_entry_commits_under_next_leader() -> None:
    """§5.4.2, §8: a deposed leader's pending request is accepted if its entry is the one that commits,
    under the next leader."""
    c = Cluster(3, PAPER)
    c.elect_and_settle(1)
    handle = c.client(1, client_request(b"x"))  # index 2, term 1
    c.ready(1)
    c.deliver(lambda env: (env.src, env.dst) == (1, 2))
    c.ready(2)
    c.wire.clear()  # node 2's acknowledgement and the copy for node 3 are lost
    c.isolate(1)
    c.elect(2)  # term 2; node 2's log is longer than node 3's, so it wins
    c.stabilize()
    assert c[2].commit == 3
    c.heal()
    c.tick(2)
    c.stabilize()
    assert (c[1].role, c[1].commit, terms(c.log(1))) == (Role.FOLLOWER, 3, [1, 1, 2])
    reply = _answer(c, handle)
    assert (reply.accepted, reply.next_index, reply.destination) == (True, 3, 2)
