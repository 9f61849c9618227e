"""Outbound links to peers: one ClientService per peer, kept up with jittered exponential backoff.

``send`` never waits for a connection: Raft retries on its own schedule, so a request to a peer that
is not connected fails at once (and the link keeps trying to come up in the background).

A first connection to a peer ends in its Digest challenge (the handshake's normal path: the
challenge is cached, and the next connection answers it); that reconnection is made at once, not
after a backoff: a new leader whose first link to a follower waited for one held the farm without a
quorum for up to a second (then check-quorum deposed it).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterable

from twisted.application.internet import ClientService
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime, IStreamClientEndpoint
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger

from garlicfarm.handshake import PRE_VOTE, TRANSFER, ChallengeCache, ClientConfig
from garlicfarm.net.connection import ClientConnection, ConnectionLimits, NotConnected, _failed
from garlicfarm.raft.types import PRE_VOTE_MARKER, TIMEOUT_NOW_MARKER, TRANSFER_VOTE_MARKER
from garlicfarm.wire import Request, RequestVoteRequest, Response

EndpointFor = Callable[[str], IStreamClientEndpoint]
ClientConfigFor = Callable[[str], ClientConfig]


class _Peer:
    def __init__(self, endpoint: str, service: ClientService) -> None:
        self.endpoint = endpoint
        self.service = service
        self.connection: ClientConnection | None = None
        self.last_failure: str | None = None
        #: connections in a row that closed before the link came up (a handshake that failed, or
        #: ended in the peer's Digest challenge), and whether the last one was a challenge
        self.unready = 0
        self.challenged = False


class PeerConnections:
    log = Logger()

    def __init__(
        self,
        reactor: IReactorTime,
        endpoint_for: EndpointFor,
        client_config_for: ClientConfigFor,
        limits: ConnectionLimits | None = None,
        directory: Callable[[int], str | None] = lambda _id: None,
        rng: random.Random | None = None,
        on_features: Callable[[int, frozenset[str]], None] = lambda _id, _features: None,
    ) -> None:
        self.reactor = reactor
        self._endpoint_for = endpoint_for
        self._client_config_for = client_config_for
        self.limits = limits or ConnectionLimits()
        self._directory = directory
        self._on_features = on_features
        self._rng = rng or random.Random()  # noqa: S311 - backoff jitter, not secrecy
        self.cache = ChallengeCache()
        self._peers: dict[int, _Peer] = {}
        self.running = True

    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        if not self.running:
            return _failed(NotConnected("shutting down"))
        address = endpoint or self._directory(to)
        if address is None:
            return _failed(NotConnected(f"no endpoint known for server {to}"))
        peer = self._peers.get(to)
        if peer is not None and peer.endpoint != address:
            self._forget(to)  # the server moved
            peer = None
        if peer is None:
            try:
                peer = self._start(to, address)
            except ValueError as e:  # EndpointRefused, ConfigError: an endpoint we will not dial
                return _failed(NotConnected(f"cannot dial server {to}: {e}"))
        if peer.connection is None:
            return _failed(NotConnected(f"not connected to server {to} yet"))
        if is_pre_vote(message) and PRE_VOTE not in peer.connection.features:
            # JRaft would take it for a real vote and raise its term; the core learnt this when the
            # connection came up and asks this peer for real votes only from its next campaign.
            return _failed(NotConnected(f"server {to} does not speak pre-vote"))
        if is_transfer(message) and TRANSFER not in peer.connection.features:
            return _failed(NotConnected(f"server {to} does not speak leadership transfer"))
        return peer.connection.request(message)

    def connected(self) -> dict[int, bool]:
        return {peer_id: peer.connection is not None for peer_id, peer in self._peers.items()}

    def _start(self, peer_id: int, address: str) -> _Peer:
        config = self._client_config_for(address)
        peer: _Peer

        def ready(connection: ClientConnection) -> None:
            peer.connection = connection
            peer.unready = 0
            self.log.info(
                "connected to server {id} at {address} (features: {features})",
                id=peer_id,
                address=address,
                features=", ".join(sorted(connection.features)) or "none",
            )
            self._on_features(peer_id, connection.features)

        def lost(connection: ClientConnection, why: str) -> None:
            if peer.connection is connection:
                peer.connection = None
                self.log.info("link to server {id} lost: {why}", id=peer_id, why=why)
            elif connection.upgraded is None:
                peer.unready += 1
                peer.challenged = connection.challenged
            peer.last_failure = why

        def build() -> Protocol:
            return ClientConnection(
                self.reactor, config, self.cache, self.limits, ready, lost, flow_control=True
            )

        factory = Factory.forProtocol(build)
        factory.noisy = False  # "Starting factory <...>" per attempt names no peer: our lines do
        service = ClientService(
            self._endpoint_for(address),
            factory,
            retryPolicy=lambda n: self._retry_after(peer, n),
            clock=self.reactor,
        )
        peer = _Peer(address, service)
        self._peers[peer_id] = peer
        service.startService()
        return peer

    def _retry_after(self, peer: _Peer, attempt: int) -> float:
        """Seconds before the next connection to ``peer``: none to answer its first challenge, else
        min(0.05 s x 1.6^n, 5 s) for the n-th failure in a row, stretched by up to half at random so
        that the links of a restarted farm do not all come back at once. ClientService counts from 1
        again after each connection that came up; handshakes that failed count on here (a peer that
        refuses our credentials is not redialled several times a second)."""
        if attempt == 1 and peer.unready == 1 and peer.challenged:
            return 0.0
        delay = min(0.05 * 1.6 ** min(max(attempt, peer.unready), 100), 5.0)
        return delay * (1 + self._rng.random() / 2)

    def dial(self, wanted: Iterable[int]) -> None:
        """Bring up a link to each of ``wanted`` not linked yet (its endpoint known and one we dial):
        a node that becomes leader, or campaigns, then has its links, instead of a dial and a
        challenge to wait for when it needs them."""
        if not self.running:
            return
        for peer_id in wanted:
            address = self._directory(peer_id)
            if peer_id not in self._peers and address is not None:
                # (an endpoint we will not dial: send says so when there is something to send)
                with contextlib.suppress(ValueError):
                    self._start(peer_id, address)

    def retain(self, wanted: Iterable[int]) -> None:
        """Stop dialling servers no longer ``wanted`` (removed, or a join refused or timed out):
        without this a leader would redial a refused joiner forever."""
        keep = set(wanted)
        for peer_id in [p for p in self._peers if p not in keep]:
            self.log.info("no longer dialling server {id}: not a member and not joining", id=peer_id)
            self._forget(peer_id)

    def _forget(self, peer_id: int) -> Deferred[None] | None:
        peer = self._peers.pop(peer_id, None)
        if peer is None:
            return None
        result: Deferred[None] = peer.service.stopService()
        return result

    def stop(self) -> Deferred[list[None]]:
        from twisted.internet.defer import gatherResults  # noqa: PLC0415

        self.running = False
        stops = [d for peer_id in list(self._peers) if (d := self._forget(peer_id)) is not None]
        return gatherResults(stops)


def is_pre_vote(message: Request) -> bool:
    return isinstance(message, RequestVoteRequest) and message.commit_index == PRE_VOTE_MARKER


def is_transfer(message: Request) -> bool:
    """TimeoutNow or a transfer vote: markers JRaft would read as a commit index."""
    return isinstance(message, RequestVoteRequest) and message.commit_index in (
        TIMEOUT_NOW_MARKER,
        TRANSFER_VOTE_MARKER,
    )
