"""Every message a node sends or answers carries the right header: source, destination, term, its log
position, and an endpoint for a server outside its configuration. Audited at the moment the driver
hands each message to the transport, over a farm's whole life: elections, writes, a server joining
through a snapshot, a server removed and told to leave (mutation testing found these fields unchecked)."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred

from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.types import PRE_VOTE_MARKER
from garlicfarm.wire import (
    AddServerRequest,
    AppendEntriesRequest,
    ClientRequest,
    InstallSnapshotRequest,
    JoinClusterRequest,
    LeaveClusterRequest,
    RemoveServerRequest,
    Request,
    RequestVoteRequest,
    Response,
    SnapshotSyncRequest,
    SyncLogRequest,
)
from tests.raft.farm import Farm, endpoint, outcome


class Audit:
    def __init__(self, farm: Farm) -> None:
        self.farm = farm
        self.problems: list[str] = []
        self.seen: set[str] = set()

    def watch(self, i: int) -> None:
        driver = self.farm.drivers[i]
        send, handle = driver.transport.send, driver.handle_request

        def audited_send(to: int, message: Request, where: str | None = None) -> Deferred[Response]:
            self.request(driver, to, message, where)
            return send(to, message, where)

        def audited_handle(message: Request) -> Deferred[Response]:
            return handle(message).addCallback(self.response, driver, message)

        driver.transport.send = audited_send  # type: ignore[method-assign,assignment]
        driver.handle_request = audited_handle  # type: ignore[method-assign,assignment]

    def check(self, ok: bool, what: str, message: Any) -> None:
        if not ok:
            self.problems.append(f"{what}: {message!r}")

    def request(self, driver: RaftDriver, to: int, m: Request, where: str | None) -> None:
        core = driver.core
        self.seen.add(type(m).__name__)
        self.check(m.source == core.id and m.destination == to, "source/destination", m)
        pre_vote = isinstance(m, RequestVoteRequest) and m.commit_index == PRE_VOTE_MARKER
        self.check(m.term == core.term + (1 if pre_vote else 0), "term", m)  # a pre-vote names the next
        if isinstance(m, JoinClusterRequest | LeaveClusterRequest):
            self.check(
                (m.last_log_index, m.last_log_term) == (core.log.last_index, core.log.last_term), "log end", m
            )
            self.check(m.commit_index == core.commit, "commit", m)
        if isinstance(m, InstallSnapshotRequest):
            meta = core.snapshot_meta()
            chunk = m.entries[0].value
            assert meta is not None and isinstance(chunk, SnapshotSyncRequest)
            self.check(
                (m.last_log_index, m.last_log_term) == (meta.last_index, meta.last_term), "snapshot", m
            )
            self.check(
                (chunk.last_log_index, chunk.last_log_term) == (meta.last_index, meta.last_term), "chunk", m
            )
            self.check(m.commit_index == core.commit, "commit", m)
        if isinstance(m, JoinClusterRequest | SyncLogRequest | InstallSnapshotRequest):
            # one wrapper entry (the invitation, the pack, the chunk) in the sender's term
            self.check([e.term for e in m.entries] == [core.term], "wrapper entry term", m)
        if isinstance(m, AppendEntriesRequest):
            self.check(all(1 <= e.term <= core.term for e in m.entries), "entry terms", m)
        if core.config.endpoint_of(to) is None:
            self.check(where == endpoint(to), "endpoint of a server outside the configuration", m)

    def response(self, r: Response, driver: RaftDriver, request: Request) -> Response:
        # an answer to a client names the leader as its destination (a redirect), not the client
        client = isinstance(request, ClientRequest | AddServerRequest | RemoveServerRequest)
        self.check(r.source == driver.core.id, "answer source", r)
        self.check(client or r.destination == request.source, "answer destination", r)
        self.check(0 <= r.term <= max(driver.core.term, request.term), "answer term", r)
        return r


def test_every_header_is_right_over_a_farms_life() -> None:
    farm = Farm(3, spares=1, snapshot_every=10)
    audit = Audit(farm)
    for i in farm.drivers:
        audit.watch(i)
    farm.submit([b"v%d" % k for k in range(30)])
    leader = farm.leader()
    joined = leader.add_server(4, endpoint(4))
    farm.run(1.5)
    outcome(joined)
    farm.submit([b"after-join"])
    leader = farm.leader()
    gone = next(i for i in (1, 2, 3) if i != leader.core.id)
    removal = leader.remove_server(gone)
    farm.run(1.0)
    outcome(removal)
    farm.submit([b"after-leave"])
    assert audit.problems == []
    assert {"JoinClusterRequest", "LeaveClusterRequest", "InstallSnapshotRequest"} <= audit.seen
    assert {"AppendEntriesRequest", "RequestVoteRequest"} <= audit.seen
