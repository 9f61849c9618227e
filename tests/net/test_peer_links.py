"""What PeerConnections dials with: each peer link a flow-controlled ClientConnection with the node's
limits, the shared challenge cache and the peer's own configuration; a link that comes up is used
and announced, one that goes is forgotten (garlicfarm.net.peers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IProtocolFactory, IStreamClientEndpoint
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import formatEvent, globalLogPublisher
from zope.interface import implementer

from garlicfarm.config import load_config
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.handshake import Upgraded
from garlicfarm.net.connection import ClientConnection
from garlicfarm.net.peers import PeerConnections
from garlicfarm.service import TEND_SECONDS, GarlicFarmService
from garlicfarm.wire import RequestVoteRequest
from tests.handshake.helpers import client_config
from tests.net.test_connection import LIMITS

ADDRESS = "tcp://127.0.0.1:28001"


@implementer(IStreamClientEndpoint)
class Dialled:
    """An endpoint that records the factory it is asked to connect and never connects."""

    def __init__(self) -> None:
        self.factories: list[IProtocolFactory] = []

    def connect(self, factory: IProtocolFactory) -> Deferred[Any]:
        self.factories.append(factory)
        return Deferred()


def peers_dialling() -> tuple[PeerConnections, Dialled, list[str], list[tuple[int, frozenset[str]]]]:
    endpoint = Dialled()
    asked: list[str] = []
    announced: list[tuple[int, frozenset[str]]] = []

    def config_for(address: str) -> Any:
        asked.append(address)
        return client_config()

    peers = PeerConnections(
        Clock(),
        lambda _address: endpoint,
        config_for,
        LIMITS,
        directory=lambda _id: ADDRESS,
        on_features=lambda peer, features: announced.append((peer, features)),
    )
    return peers, endpoint, asked, announced


def link(peers: PeerConnections, endpoint: Dialled) -> ClientConnection:
    peers.send(2, RequestVoteRequest(1, 2, 5, 0, 0, 0))  # not connected yet: it starts dialling
    return built(endpoint)


def built(endpoint: Dialled) -> ClientConnection:
    """The protocol the dialled factory makes (ClientService wraps it in a proxy of its own)."""
    proxy = endpoint.factories[0].buildProtocol(None)  # type: ignore[arg-type]
    protocol = getattr(proxy, "_protocol", proxy)
    assert isinstance(protocol, ClientConnection)
    return protocol


def test_a_peer_link_is_flow_controlled_with_the_nodes_limits_and_shared_cache() -> None:
    peers, endpoint, asked, _ = peers_dialling()
    connection = link(peers, endpoint)
    assert connection.flow_control is True  # a peer that stops reading costs a bounded amount
    assert connection.limits is LIMITS and connection._cache is peers.cache
    assert connection.reactor is peers.reactor
    assert asked == [ADDRESS] and connection.config == client_config()


def test_a_link_that_comes_up_is_used_and_its_features_announced() -> None:
    peers, endpoint, _, announced = peers_dialling()
    connection = link(peers, endpoint)
    connection.upgraded = Upgraded((("garlicfarm-features", "pre-vote, transfer"),), b"")
    connection._on_ready(connection)
    assert peers.connected() == {2: True}
    assert announced == [(2, frozenset({"pre-vote", "transfer"}))]
    connection._on_lost(connection, "gone")
    assert peers.connected() == {2: False}
    assert peers._peers[2].last_failure == "gone"


def test_a_stale_links_loss_does_not_drop_the_live_one() -> None:
    peers, endpoint, _, _ = peers_dialling()
    first = link(peers, endpoint)
    second = built(endpoint)
    for connection in (first, second):  # a reconnection: the newer link is the peer's
        connection._upgraded(Upgraded((("garlicfarm-features", ""),), b""))
    first._on_lost(first, "the old one went")
    assert peers.connected() == {2: True} and peers._peers[2].connection is second
    assert peers._peers[2].unready == 0  # a link that was up is no failed handshake


def test_a_nodes_link_that_comes_up_tells_its_driver_what_the_peer_speaks_and_that_it_is_up(
    tmp_path: Path,
) -> None:
    create_farm(FarmSpec(tmp_path, 3, base_port=21970), force=True)
    service = GarlicFarmService(load_config(tmp_path / "node-1.toml"), MemoryReactorClock())
    told: list[int] = []
    service.driver.link_up = told.append  # type: ignore[method-assign,assignment]
    service.peers._on_features(2, frozenset({"transfer"}))
    assert told == [2]
    assert service.driver.core._transfer_support == {2: True}
    assert service.driver.core._pre_vote_support == {2: False}


def test_a_running_node_keeps_a_link_to_every_other_voter_and_tends_them_on(tmp_path: Path) -> None:
    """Dialled at start (whoever leads next has its links), checked every TEND_SECONDS; a failure
    of the check is logged and the next one runs."""
    create_farm(FarmSpec(tmp_path, 3, base_port=21980), force=True)
    reactor = MemoryReactorClock()
    service = GarlicFarmService(load_config(tmp_path / "node-1.toml"), reactor)
    events: list[Any] = []
    observer: Any = events.append
    service.startService()
    try:
        assert service.peers.connected() == {2: False, 3: False}
        assert len(reactor.tcpClients) == 2
        service.peers.retain = None  # type: ignore[assignment,method-assign]
        globalLogPublisher.addObserver(observer)
        reactor.advance(TEND_SECONDS)
        globalLogPublisher.removeObserver(observer)
        said = [formatEvent(e) for e in events]
        assert "could not tend the peer links (will try again)" in said
        assert service._pruner.running
    finally:
        del service.peers.retain
        service.stopService()
