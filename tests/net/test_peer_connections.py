"""PeerConnections' links to the other servers (garlicfarm.net.peers): one ClientService per peer on the
node's reactor, retrying with jittered exponential backoff; each link dialled at the peer's address with
the peer's client configuration; what ``send`` refuses and why; what ``connected``, ``retain`` and
``stop`` do to the links."""

from __future__ import annotations

import random
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionRefusedError
from twisted.internet.interfaces import IProtocol, IProtocolFactory, IStreamClientEndpoint
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import LogEvent, formatEvent, globalLogPublisher
from twisted.python.failure import Failure
from zope.interface import implementer

from garlicfarm.handshake import PRE_VOTE, TRANSFER, ChallengeCache, ClientConfig, NonceRegistry, Upgraded
from garlicfarm.net.connection import ClientConnection, ConnectionLimits, NotConnected
from garlicfarm.net.peers import PeerConnections
from garlicfarm.raft.types import PRE_VOTE_MARKER, TIMEOUT_NOW_MARKER, TRANSFER_VOTE_MARKER
from garlicfarm.wire import RequestVoteRequest, Response, encode
from tests.handshake.helpers import client_config, rng, sent, serve, server_config
from tests.net.test_connection import LIMITS

ADDRESSES = {2: "tcp://127.0.0.1:28002", 3: "tcp://127.0.0.1:28003"}
MOVED = "tcp://127.0.0.1:38002"


@implementer(IStreamClientEndpoint)
class Endpoint:
    """An endpoint whose connection attempts the test completes or fails by hand."""

    def __init__(self) -> None:
        self.attempts: list[tuple[IProtocolFactory, Deferred[IProtocol]]] = []

    def connect(self, factory: IProtocolFactory) -> Deferred[IProtocol]:
        d: Deferred[IProtocol] = Deferred()
        self.attempts.append((factory, d))
        return d

    def refuse(self) -> None:
        """The latest attempt fails."""
        self.attempts[-1][1].errback(ConnectionRefusedError())


class Link:
    """A connected attempt: the protocol ClientService sees (its proxy), our ClientConnection inside
    it, and the transport under them."""

    def __init__(self, endpoint: Endpoint) -> None:
        factory, d = endpoint.attempts[-1]
        proxy = factory.buildProtocol(None)  # type: ignore[arg-type]
        assert proxy is not None
        connection = getattr(proxy, "_protocol", proxy)
        assert isinstance(connection, ClientConnection)
        self.proxy, self.connection, self.transport = proxy, connection, StringTransport()
        proxy.makeConnection(self.transport)
        d.callback(proxy)

    def upgrade(self, features: str = "") -> None:
        """The peer's 101 arrives: the link is ready."""
        self.connection._upgraded(Upgraded((("garlicfarm-features", features),), b""))

    def close(self) -> None:
        self.proxy.connectionLost(Failure(ConnectionDone()))


class Jitter(random.Random):
    """A random source whose ``random()`` gives the values it was made with, in turn."""

    def __init__(self, *values: float) -> None:
        super().__init__(0)
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


class Node:
    """A PeerConnections on a Clock, with a recording endpoint and client configuration per address."""

    def __init__(self, limits: ConnectionLimits | None = LIMITS, rng: random.Random | None = None) -> None:
        self.clock = Clock()
        self.endpoints: dict[str, Endpoint] = {}
        self.configs: list[str] = []
        self.announced: list[tuple[int, frozenset[str]]] = []
        self.peers = PeerConnections(
            self.clock,
            self._endpoint_for,
            self._config_for,
            limits,
            directory=ADDRESSES.get,
            rng=rng,
            on_features=lambda peer, features: self.announced.append((peer, features)),
        )

    def _endpoint_for(self, address: str) -> Endpoint:
        assert address not in self.endpoints, f"{address} dialled by a second service"
        self.endpoints[address] = Endpoint()
        return self.endpoints[address]

    def _config_for(self, address: str) -> ClientConfig:
        self.configs.append(address)
        return client_config(host=address)

    def link(self, peer: int, address: str | None = None) -> Link:
        """Ask for ``peer`` (it starts dialling) and connect its attempt."""
        self.peers.send(peer, vote(), address).addErrback(lambda _f: None)
        return Link(self.endpoints[address or ADDRESSES[peer]])


def vote(commit_index: int = 0) -> RequestVoteRequest:
    return RequestVoteRequest(1, 2, 5, 0, 0, commit_index)


def refusal(d: Deferred[Response]) -> str:
    """The NotConnected message ``d`` failed with (at once)."""
    failures: list[Failure] = []
    d.addErrback(failures.append)
    assert len(failures) == 1 and failures[0].check(NotConnected), failures
    return failures[0].getErrorMessage()


def test_retries_back_off_on_the_nodes_reactor_by_1_6_to_5_s_stretched_by_the_rngs_jitter() -> None:
    """Failed attempts are retried on the node's clock after min(0.05 s x 1.6^n, 5 s), stretched by up
    to half by the injected rng (ClientService counts the first failure as n = 1: 0.08 s)."""
    jitters = [0.08 * n for n in range(1, 13)]
    node = Node(rng=Jitter(*jitters))
    node.peers.send(2, vote()).addErrback(lambda _f: None)
    endpoint = node.endpoints[ADDRESSES[2]]
    for attempt, jitter in enumerate(jitters, start=1):
        assert len(endpoint.attempts) == attempt
        endpoint.refuse()
        delay = next_retry(node)
        assert delay == pytest.approx(min(0.05 * 1.6**attempt, 5.0) * (1 + jitter / 2)), attempt
        node.clock.advance(delay)
    assert len(endpoint.attempts) == len(jitters) + 1


def next_retry(node: Node) -> float:
    [retry] = node.clock.getDelayedCalls()
    return retry.getTime() - node.clock.seconds()


def challenged(link: Link, server: int = 1) -> None:
    """The peer answers the link's upgrade request with its Digest challenge (a real server
    handshake's 401; another ``server`` does not know the nonce the last one gave): the link closes,
    to come back with the answer."""
    answer = sent(serve(server_config(), NonceRegistry(rng(server)), link.transport.value()))
    assert answer.startswith(b"HTTP/1.1 401 "), answer
    link.connection.dataReceived(answer)
    assert link.connection.challenged and link.transport.disconnecting
    link.close()


def test_the_peers_challenge_is_answered_on_a_new_connection_at_once() -> None:
    """A first link to a peer ends in its Digest challenge: the next connection is made at once, not
    after a backoff (up to a second of jitter kept a new leader from its only follower: check-quorum
    deposed it and the farm went a second without a leader, in a rolling restart)."""
    node = Node(rng=Jitter(0.9, 0.9))
    challenged(node.link(2))
    assert next_retry(node) == 0.0
    node.clock.advance(0)
    endpoint = node.endpoints[ADDRESSES[2]]
    assert len(endpoint.attempts) == 2
    Link(endpoint).upgrade()
    assert node.peers.connected() == {2: True}


def test_a_refusal_right_after_the_answer_to_a_challenge_backs_off() -> None:
    node = Node(rng=Jitter(0.0))
    challenged(node.link(2))
    node.clock.advance(next_retry(node))
    node.endpoints[ADDRESSES[2]].refuse()  # the peer went down meanwhile
    assert next_retry(node) == pytest.approx(0.05 * 1.6**2)  # ClientService's n = 2, not at once


def test_a_second_challenge_in_a_row_and_refusals_after_one_back_off() -> None:
    """Only the first challenge is answered at once: a peer that challenges every connection, or
    refuses the one that answers, is dialled with the backoff of as many failures in a row."""
    node = Node(rng=Jitter(0.0, 0.0, 0.0))
    challenged(node.link(2))
    node.clock.advance(next_retry(node))
    endpoint = node.endpoints[ADDRESSES[2]]
    challenged(Link(endpoint), server=2)
    assert next_retry(node) == pytest.approx(0.05 * 1.6**2)  # the second connection in a row
    node.clock.advance(next_retry(node))
    endpoint.refuse()
    assert next_retry(node) == pytest.approx(0.05 * 1.6**2)  # ClientService's n = 2
    node.clock.advance(next_retry(node))
    endpoint.refuse()
    assert next_retry(node) == pytest.approx(0.05 * 1.6**3)


def test_handshakes_that_fail_in_a_row_back_off_though_each_connection_came_up() -> None:
    """ClientService starts counting again after every connection that came up; a peer that takes
    the connection and refuses our credentials each time is still dialled less and less often."""
    node = Node(rng=Jitter(*[0.0] * 6))
    link = node.link(2)
    endpoint = node.endpoints[ADDRESSES[2]]
    for n in range(1, 6):
        link.close()  # closed before the 101: a handshake that failed
        assert next_retry(node) == pytest.approx(min(0.05 * 1.6**n, 5.0)), n
        node.clock.advance(next_retry(node))
        link = Link(endpoint)
    link.upgrade()
    link.close()  # a link that was up: the count starts again
    assert next_retry(node) == pytest.approx(0.05 * 1.6)


def test_each_peer_is_dialled_once_at_its_address_with_that_addresss_client_config() -> None:
    """The directory's address picks both the endpoint and the client configuration; asking again
    for the same peer at the same address reuses its link."""
    node = Node()
    two, three = node.link(2), node.link(3)
    node.peers.send(2, vote()).addErrback(lambda _f: None)  # same address: the same link
    assert list(node.endpoints) == [ADDRESSES[2], ADDRESSES[3]] == node.configs
    assert len(node.endpoints[ADDRESSES[2]].attempts) == 1
    assert two.connection.config == client_config(host=ADDRESSES[2])
    assert three.connection.config == client_config(host=ADDRESSES[3])


def test_a_link_is_a_flow_controlled_connection_on_the_reactor_with_the_limits_and_shared_cache() -> None:
    """Every link times out on the node's reactor, with the node's limits, flow control and one
    challenge cache shared by all peers."""
    node = Node()
    two, three = node.link(2), node.link(3)
    assert len(node.clock.getDelayedCalls()) == 2  # each connection's handshake deadline, on our clock
    assert isinstance(node.peers.cache, ChallengeCache)
    for link in (two, three):
        assert link.connection.reactor is node.peers.reactor
        assert link.connection.limits is LIMITS and link.connection._cache is node.peers.cache
        assert link.connection.flow_control is True


def test_limits_default_to_connection_limits() -> None:
    """No limits given: the defaults, down to each link."""
    node = Node(limits=None)
    assert node.peers.limits == ConnectionLimits()
    assert node.link(2).connection.limits == ConnectionLimits()


def test_a_ready_link_is_announced_with_its_features_and_counts_as_connected() -> None:
    """on_features hears (peer id, features) once the 101 arrives; connected() is True from then on
    for that peer only."""
    node = Node()
    two, _three = node.link(2), node.link(3)
    assert node.peers.connected() == {2: False, 3: False}
    two.upgrade("pre-vote, transfer")
    assert node.announced == [(2, frozenset({PRE_VOTE, TRANSFER}))]
    assert node.peers.connected() == {2: True, 3: False}


def test_a_lost_link_clears_only_its_own_peer() -> None:
    """A link that goes takes only its own peer off the connected ones."""
    node = Node()
    two, three = node.link(2), node.link(3)
    two.upgrade()
    three.upgrade()
    two.close()
    assert node.peers.connected() == {2: False, 3: True}
    assert refusal(node.peers.send(2, vote())) == "not connected to server 2 yet"
    assert node.peers._peers[2].last_failure == "connection closed"


def test_send_refuses_at_once_what_it_cannot_deliver() -> None:
    """No address, no link yet, or a pre-vote or transfer message to a peer without the feature:
    NotConnected at once, saying which, and nothing written."""
    node = Node()
    assert refusal(node.peers.send(9, vote())) == "no endpoint known for server 9"
    assert refusal(node.peers.send(2, vote())) == "not connected to server 2 yet"
    link = Link(node.endpoints[ADDRESSES[2]])
    link.upgrade()  # a peer that speaks neither pre-vote nor leadership transfer
    assert refusal(node.peers.send(2, vote(PRE_VOTE_MARKER))) == "server 2 does not speak pre-vote"
    for marker in (TIMEOUT_NOW_MARKER, TRANSFER_VOTE_MARKER):
        assert refusal(node.peers.send(2, vote(marker))) == "server 2 does not speak leadership transfer"
    assert link.connection.unanswered_bytes == 0  # nothing was sent


def test_a_transfer_reaches_a_peer_that_speaks_it() -> None:
    """TimeoutNow and transfer votes go to a peer that announced transfer."""
    node = Node()
    link = node.link(2)
    link.upgrade("transfer")
    sent = [vote(TIMEOUT_NOW_MARKER), vote(TRANSFER_VOTE_MARKER)]
    for message in sent:
        node.peers.send(2, message)
    assert link.transport.value().endswith(b"".join(map(encode, sent)))


def test_a_peer_that_moved_is_dialled_at_its_new_address_and_its_old_link_closed() -> None:
    """A new address for a known peer closes the old link and dials (once) the new one."""
    node = Node()
    old = node.link(2)
    old.upgrade()
    new = node.link(2, MOVED)
    assert old.transport.disconnecting
    assert list(node.endpoints) == [ADDRESSES[2], MOVED] and new.connection.config.host == MOVED
    assert node.peers.connected() == {2: False}
    node.peers.send(2, vote(), MOVED).addErrback(lambda _f: None)
    assert len(node.endpoints[MOVED].attempts) == 1  # the moved peer's address is kept


def test_retain_stops_the_links_not_wanted_and_forget_ignores_an_unknown_peer() -> None:
    """retain() closes the links of servers not wanted; forgetting a peer never dialled is a no-op."""
    node = Node()
    two, _three = node.link(2), node.link(3)
    node.peers.retain({3, 4})
    assert two.transport.disconnecting
    assert node.peers.connected() == {3: False}
    assert node.peers._forget(4) is None


def test_stop_closes_every_link_and_waits_for_them_then_refuses_to_send() -> None:
    """stop() closes live links, cancels attempts in progress, fires only once every link is closed,
    and nothing is dialled afterwards."""
    node = Node()
    two = node.link(2)
    node.peers.send(3, vote()).addErrback(lambda _f: None)  # still dialling
    stopped: list[list[None]] = []
    node.peers.stop().addCallback(stopped.append)
    assert two.transport.disconnecting
    assert node.endpoints[ADDRESSES[3]].attempts[0][1].called  # the attempt is cancelled
    assert stopped == []  # server 2's link has not closed yet
    two.close()
    assert stopped == [[None, None]]
    assert node.peers.connected() == {}
    assert refusal(node.peers.send(2, vote())) == "shutting down"
    assert len(node.endpoints[ADDRESSES[2]].attempts) == 1


def test_dialling_logs_no_anonymous_starting_factory_lines() -> None:
    """The per-peer factory is not noisy: no 'Starting factory' line (naming no peer) per attempt."""
    node = Node()
    node.peers.send(2, vote()).addErrback(lambda _f: None)
    factory, _ = node.endpoints[ADDRESSES[2]].attempts[0]
    events: list[LogEvent] = []
    observer: Any = events.append  # a callable is an ILogObserver
    globalLogPublisher.addObserver(observer)
    try:
        factory.doStart()
    finally:
        globalLogPublisher.removeObserver(observer)
    assert not [e for e in events if "Starting factory" in (formatEvent(e) or "")]


def test_dial_brings_up_a_link_to_each_peer_not_linked_yet_whose_endpoint_it_knows() -> None:
    node = Node()
    two = node.link(2)
    node.peers.dial([2, 3, 9])  # 9: no endpoint known
    node.peers.dial([3])
    assert len(node.endpoints[ADDRESSES[2]].attempts) == 1 and two.connection is not None
    assert len(node.endpoints[ADDRESSES[3]].attempts) == 1  # dialled once, kept up by its service
    assert node.peers.connected() == {2: False, 3: False} and set(node.endpoints) == set(ADDRESSES.values())
    assert node.configs == [ADDRESSES[2], ADDRESSES[3]]  # nothing made for the server of no endpoint


def test_dial_skips_an_endpoint_it_will_not_dial_and_dials_nothing_once_stopped() -> None:
    node = Node()

    def refused(address: str) -> Endpoint:
        raise ValueError(f"{address}: cleartext off loopback")

    node.peers._endpoint_for = refused
    node.peers.dial([2])
    assert node.peers.connected() == {}
    node = Node()
    node.peers.stop()
    node.peers.dial([2, 3])
    assert node.endpoints == {}
