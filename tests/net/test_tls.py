"""Mutual TLS over loopback with the real reactor: who gets in, who is refused, and why.

Trial test cases (pytest runs them, spinning the global reactor); each is bounded by ``timeout``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from OpenSSL import SSL, crypto
from twisted.internet import reactor as _reactor
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.endpoints import HostnameEndpoint, wrapClientTLS
from twisted.internet.error import ConnectionLost
from twisted.internet.interfaces import IHandshakeListener, IListeningPort, ISSLTransport
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.ssl import Certificate, optionsForClientTLS
from twisted.python.failure import Failure
from twisted.trial import unittest
from zope.interface import implementer

from garlicfarm.config import TLSConfig
from garlicfarm.tls import (
    TLSError,
    UnpinnedPeer,
    client_endpoint,
    fingerprint,
    issue_node,
    new_ca,
    server_endpoint,
    write_certified_key,
)

pytestmark = pytest.mark.timeout(30)

reactor: Any = _reactor
HELLO = b"hello, farm"

# Key generation is the slow part: one farm and one stranger for the whole module.
FARM_CA = new_ca("farm CA")
OTHER_CA = new_ca("other CA")
NODES = {
    "node-1": issue_node(FARM_CA, "node-1"),
    "node-2": issue_node(FARM_CA, "node-2"),
    "stranger": issue_node(OTHER_CA, "stranger"),
}


@implementer(IHandshakeListener)
class Peer(Protocol):
    """Echoes (server) or sends HELLO and waits for it back (client); records how it ended."""

    def __init__(self, send: bytes = b"") -> None:
        self.send = send
        self.handshake_done = False
        self.received = b""
        self.echoed: Deferred[bytes] = Deferred()
        self.reason: Failure | None = None
        self.lost: Deferred[None] = Deferred()

    def peer_certificate(self) -> crypto.X509:
        certificate = ISSLTransport(self.transport).getPeerCertificate()
        assert isinstance(certificate, crypto.X509)
        return certificate

    def connectionMade(self) -> None:
        if self.send:
            self.transport.write(self.send)  # type: ignore[union-attr]  # buffered until the handshake ends

    def handshakeCompleted(self) -> None:
        self.handshake_done = True

    def dataReceived(self, data: bytes) -> None:
        if not self.send:
            self.transport.write(data)  # type: ignore[union-attr]
            return
        self.received += data
        if self.received == self.send and not self.echoed.called:
            self.echoed.callback(self.received)

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        # A Deferred given a Failure would take its errback path: keep the reason aside.
        self.reason = reason
        self.lost.callback(None)


class Accepting(Factory):
    def __init__(self) -> None:
        self.peers: list[Peer] = []
        self.first: Deferred[Peer] = Deferred()

    def buildProtocol(self, addr: Any) -> Peer:
        peer = Peer()
        self.peers.append(peer)
        if not self.first.called:
            self.first.callback(peer)
        return peer


class Dialling(Factory):
    def buildProtocol(self, addr: Any) -> Peer:
        return Peer(HELLO)


class TLSLoopbackTests(unittest.TestCase):
    timeout = 20

    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(_remove_tree, self.dir)
        for name, pair in [("farm-ca", FARM_CA), ("other-ca", OTHER_CA), *NODES.items()]:
            write_certified_key(pair, self.dir / f"{name}.pem", self.dir / f"{name}.key")

    def tls(self, name: str, ca: str | None = "farm-ca", pins: tuple[str, ...] = ()) -> TLSConfig:
        return TLSConfig(
            ca=self.dir / f"{ca}.pem" if ca else None,
            cert=self.dir / f"{name}.pem",
            key=self.dir / f"{name}.key",
            pins=pins,
        )

    @inlineCallbacks
    def listen(self, tls: TLSConfig) -> Any:
        factory = Accepting()
        port: IListeningPort = yield server_endpoint(reactor, "tcp:0:interface=127.0.0.1", tls).listen(
            factory
        )
        self.addCleanup(port.stopListening)
        address = port.getHost()
        assert isinstance(address, IPv4Address)
        return factory, address.port

    @inlineCallbacks
    def dial(self, port: int, tls: TLSConfig, hostname: str | None = None) -> Any:
        endpoint = client_endpoint(reactor, "127.0.0.1", port, tls, hostname, timeout=5)
        client: Peer = yield endpoint.connect(Dialling())
        return client

    @inlineCallbacks
    def exchange(self, server_tls: TLSConfig, client_tls: TLSConfig, hostname: str | None = None) -> Any:
        """Connect, echo HELLO, disconnect; returns the certificate fingerprints (server saw, client saw)."""
        accepting, port = yield self.listen(server_tls)
        client: Peer = yield self.dial(port, client_tls, hostname)
        yield client.echoed
        server: Peer = yield accepting.first
        assert client.handshake_done and server.handshake_done
        # Mutual: each side saw the other's certificate.
        seen = fingerprint(server.peer_certificate()), fingerprint(client.peer_certificate())
        client.transport.loseConnection()  # type: ignore[union-attr]
        yield client.lost
        yield server.lost
        return seen

    @inlineCallbacks
    def refused(self, server_tls: TLSConfig, client_tls: TLSConfig, hostname: str | None = None) -> Any:
        """Connect and expect the handshake to fail; returns the (server, client) connectionLost reasons."""
        accepting, port = yield self.listen(server_tls)
        client = yield self.dial(port, client_tls, hostname)
        yield client.lost
        server: Peer = yield accepting.first
        yield server.lost
        assert not client.echoed.called, "no application data may get through"
        assert not server.handshake_done
        assert server.received == b""
        return server.reason, client.reason

    @inlineCallbacks
    def test_same_farm_nodes_exchange_bytes(self) -> Any:
        seen = yield self.exchange(self.tls("node-1"), self.tls("node-2"))
        assert seen == (pem_fingerprint("node-2"), pem_fingerprint("node-1"))

    @inlineCallbacks
    def test_dns_name_in_certificate_is_accepted(self) -> Any:
        yield self.exchange(self.tls("node-1"), self.tls("node-2"), hostname="localhost")

    @inlineCallbacks
    def test_client_refuses_server_from_another_ca(self) -> Any:
        server_reason, client_reason = yield self.refused(
            self.tls("stranger", ca="other-ca"), self.tls("node-2")
        )
        client_reason.trap(SSL.Error)
        assert "certificate verify failed" in str(client_reason.value)
        assert server_reason.check(SSL.Error, ConnectionLost)  # the client's alert, or just the close

    @inlineCallbacks
    def test_server_refuses_client_from_another_ca(self) -> Any:
        server_reason, client_reason = yield self.refused(
            self.tls("node-1"), self.tls("stranger", ca="farm-ca")
        )
        server_reason.trap(SSL.Error)
        assert "certificate verify failed" in str(server_reason.value)
        # TLS 1.3: the client finished its side first, then hears the server's alert.
        assert client_reason.check(SSL.Error, ConnectionLost)

    @inlineCallbacks
    def test_server_refuses_client_without_certificate(self) -> Any:
        accepting, port = yield self.listen(self.tls("node-1"))
        ca = Certificate.loadPEM(FARM_CA.cert_pem())
        anonymous = optionsForClientTLS("127.0.0.1", trustRoot=ca)
        client = yield wrapClientTLS(anonymous, HostnameEndpoint(reactor, "127.0.0.1", port)).connect(
            Dialling()
        )
        yield client.lost
        server: Peer = yield accepting.first
        yield server.lost
        assert server.reason is not None
        server.reason.trap(SSL.Error)
        assert not server.handshake_done

    @inlineCallbacks
    def test_optional_client_certificates_let_a_peer_in_without_one(self) -> Any:
        """[tls] client_certificates = "optional": a proposal-following peer without a client
        certificate gets through TLS (Digest still authenticates it); a wrong one is still refused."""
        optional = attrs.evolve(self.tls("node-1"), require_client_certificate=False)
        accepting, port = yield self.listen(optional)
        ca = Certificate.loadPEM(FARM_CA.cert_pem())
        anonymous = optionsForClientTLS("127.0.0.1", trustRoot=ca)
        client = yield wrapClientTLS(anonymous, HostnameEndpoint(reactor, "127.0.0.1", port)).connect(
            Dialling()
        )
        yield client.echoed
        server: Peer = yield accepting.first
        assert server.handshake_done
        assert server.transport.getPeerCertificate() is None  # type: ignore[union-attr]
        client.transport.loseConnection()
        yield client.lost
        yield server.lost
        server_reason, _ = yield self.refused(optional, self.tls("stranger", ca="farm-ca"))
        server_reason.trap(SSL.Error)

    @inlineCallbacks
    def test_hostname_mismatch_is_refused(self) -> Any:
        _, client_reason = yield self.refused(
            self.tls("node-1"), self.tls("node-2"), hostname="node-1.example"
        )
        assert "node-1.example" in str(client_reason.value)

    @inlineCallbacks
    def test_ip_address_mismatch_is_refused(self) -> Any:
        _, client_reason = yield self.refused(self.tls("node-1"), self.tls("node-2"), hostname="10.9.8.7")
        assert "10.9.8.7" in str(client_reason.value)

    @inlineCallbacks
    def test_pinning_accepts_pinned_certificates_without_a_ca(self) -> Any:
        # Different CAs and no CA configured: only the pins vouch for the peers.
        server = self.tls("node-1", ca=None, pins=(pem_fingerprint("stranger"),))
        client = self.tls("stranger", ca=None, pins=(pem_fingerprint("node-1")[7:].replace(":", "").lower(),))
        seen = yield self.exchange(server, client, hostname="ignored.example")
        assert seen == (pem_fingerprint("stranger"), pem_fingerprint("node-1"))

    @inlineCallbacks
    def test_pinning_server_refuses_unpinned_client(self) -> Any:
        server = self.tls("node-1", ca=None, pins=(pem_fingerprint("node-2"),))
        client = self.tls("stranger", ca=None, pins=(pem_fingerprint("node-1"),))
        server_reason, _ = yield self.refused(server, client)
        server_reason.trap(UnpinnedPeer)
        assert pem_fingerprint("stranger") in str(server_reason.value)

    @inlineCallbacks
    def test_pinning_client_refuses_unpinned_server(self) -> Any:
        server = self.tls("node-1", ca=None, pins=(pem_fingerprint("node-2"),))
        client = self.tls("node-2", ca=None, pins=(pem_fingerprint("stranger"),))
        _, client_reason = yield self.refused(server, client)
        client_reason.trap(UnpinnedPeer)
        assert pem_fingerprint("node-1") in str(client_reason.value)

    @inlineCallbacks
    def test_pins_with_a_ca_need_both(self) -> Any:
        # Pinned but from another CA: the chain check still refuses it.
        server = self.tls("node-1", pins=(pem_fingerprint("stranger"), pem_fingerprint("node-2")))
        server_reason, _ = yield self.refused(
            server, self.tls("stranger", ca=None, pins=(pem_fingerprint("node-1"),))
        )
        server_reason.trap(SSL.Error)
        yield self.exchange(server, self.tls("node-2"))

    def test_missing_key_file_is_named(self) -> None:
        tls = TLSConfig(ca=self.dir / "farm-ca.pem", cert=self.dir / "node-1.pem", key=self.dir / "nope.key")
        with pytest.raises(TLSError, match=r"nope\.key: cannot read private key"):
            server_endpoint(reactor, "tcp:0:interface=127.0.0.1", tls)
        with pytest.raises(TLSError, match=r"nope\.key"):
            client_endpoint(reactor, "127.0.0.1", 9, tls)


def pem_fingerprint(name: str) -> str:
    return fingerprint(NODES[name].certificate)


def _remove_tree(path: Path) -> None:
    for child in path.iterdir():
        child.unlink()
    path.rmdir()


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("127.0.0.1", "TCP4ClientEndpoint"),
        ("::1", "TCP6ClientEndpoint"),
        ("node1.example", "HostnameEndpoint"),
    ],
)
def test_an_ip_address_is_dialled_as_it_is_and_a_name_through_its_addresses(host: str, kind: str) -> None:
    """HostnameEndpoint reports a refused connection only when its next attempt is due, 0.3 s later:
    a client failing over from a dead node paid that on every try (net/tcp.py)."""
    from twisted.internet.testing import MemoryReactorClock

    from garlicfarm.net.tcp import tcp_endpoint

    assert type(tcp_endpoint(MemoryReactorClock(), host, 9001, 5)).__name__ == kind
