"""TLS options at their edges, handshaking in memory (twisted.test.iosim, real pyOpenSSL): who is let in
with optional client certificates, with pins alone, with pins and a CA, and what a refusal logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from OpenSSL import SSL
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IHandshakeListener, ISSLTransport
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.ssl import CertificateOptions
from twisted.logger import capturedLogs, formatEvent
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.python.failure import Failure
from twisted.test.iosim import FakeTransport, connect
from zope.interface import implementer

from garlicfarm.config import TLSConfig
from garlicfarm.tls import TLSError, UnpinnedPeer, fingerprint, issue_node, new_ca, write_certified_key
from garlicfarm.tls.certs import CertifiedKey
from garlicfarm.tls.options import NodeTLS, client_options, own_certificate_options, server_options
from garlicfarm.tls.pins import digest

FARM_CA = new_ca("farm CA")
OTHER_CA = new_ca("other CA")
NODE_1 = issue_node(FARM_CA, "node-1")
NODE_2 = issue_node(FARM_CA, "node-2")
STRANGER = issue_node(OTHER_CA, "stranger")


def node(
    own: CertifiedKey,
    *,
    ca: CertifiedKey | None = FARM_CA,
    pins: tuple[CertifiedKey, ...] = (),
    require: bool = True,
) -> NodeTLS:
    """A node's loaded [tls]: trusting ``ca`` (if any) and pinning ``pins``' certificates."""
    return NodeTLS(
        own,
        (ca.certificate,) if ca else (),
        frozenset(digest(p.certificate) for p in pins),
        require_client_certificate=require,
    )


@implementer(IHandshakeListener)
class Peer(Protocol):
    handshake_done = False
    reason: Failure | None = None

    def handshakeCompleted(self) -> None:
        self.handshake_done = True

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.reason = reason

    def peer_certificate(self) -> Any:
        return ISSLTransport(self.transport).getPeerCertificate()


def handshake(server_creator: Any, client_creator: Any) -> tuple[Peer, Peer]:
    """Run a TLS handshake between the two connection creators over an in-memory transport."""
    address = IPv4Address("TCP", "127.0.0.1", 9001)
    server_peer, client_peer = Peer(), Peer()
    server = TLSMemoryBIOFactory(server_creator, False, Factory.forProtocol(lambda: server_peer))
    client = TLSMemoryBIOFactory(client_creator, True, Factory.forProtocol(lambda: client_peer))
    server_tls, client_tls = server.buildProtocol(address), client.buildProtocol(address)
    connect(
        server_tls,
        FakeTransport(server_tls, isServer=True),
        client_tls,
        FakeTransport(client_tls, isServer=False),
    ).flush()
    return server_peer, client_peer


def anonymous() -> CertificateOptions:
    """A client that presents no certificate and checks none."""
    return CertificateOptions()


def accepted(peer: Peer, certificate: CertifiedKey | None) -> None:
    assert peer.handshake_done and peer.reason is None
    seen = peer.peer_certificate()
    assert (seen and fingerprint(seen)) == (certificate and fingerprint(certificate.certificate))


def refused(peer: Peer, *errors: type[Exception]) -> None:
    assert not peer.handshake_done
    assert peer.reason is not None and peer.reason.check(*errors), peer.reason


def test_a_loaded_node_tls_is_not_read_again(tmp_path: Path) -> None:
    """A NodeTLS is used as it is: its files may be gone by the time a connection is made."""
    write_certified_key(FARM_CA, tmp_path / "ca.pem", tmp_path / "ca.key")
    write_certified_key(NODE_1, tmp_path / "node-1.pem", tmp_path / "node-1.key")
    loaded = NodeTLS.load(
        TLSConfig(ca=tmp_path / "ca.pem", cert=tmp_path / "node-1.pem", key=tmp_path / "node-1.key")
    )
    for name in ("ca.pem", "ca.key", "node-1.pem", "node-1.key"):
        (tmp_path / name).unlink()
    server, client = handshake(server_options(loaded), client_options(node(NODE_2), "localhost"))
    accepted(server, NODE_2)
    accepted(client, NODE_1)


def test_trusting_nobody_is_refused_by_name(tmp_path: Path) -> None:
    write_certified_key(NODE_1, tmp_path / "node-1.pem", tmp_path / "node-1.key")
    with pytest.raises(TLSError) as raised:
        NodeTLS.load(TLSConfig(ca=None, cert=tmp_path / "node-1.pem", key=tmp_path / "node-1.key"))
    assert (
        str(raised.value)
        == f"{tmp_path / 'node-1.pem'}: [tls] needs ca or pins, to know which peers to trust"
    )


# -- CA mode, client certificates optional ---------------------------------------------------------


def test_optional_client_certificates_still_let_a_farm_certificate_in() -> None:
    """client_certificates = "optional" keeps OpenSSL's verdict on a certificate that is sent: the
    farm's is accepted (and seen), another CA's refused, none at all let in."""
    optional = server_options(node(NODE_1, require=False))
    server, _ = handshake(optional, client_options(node(NODE_2), "localhost"))
    accepted(server, NODE_2)
    server, _ = handshake(optional, client_options(node(STRANGER), "localhost"))
    refused(server, SSL.Error)
    server, _ = handshake(optional, anonymous())
    accepted(server, None)


def test_a_required_client_certificate_keeps_an_anonymous_client_out() -> None:
    server, _ = handshake(server_options(node(NODE_1)), anonymous())
    refused(server, SSL.Error)


# -- pins ------------------------------------------------------------------------------------------


def test_pins_alone_require_a_client_certificate_unless_optional() -> None:
    """With pins, a client sending no certificate is refused, unless client certificates are optional;
    an unpinned one is refused either way."""
    server, _ = handshake(server_options(node(NODE_1, ca=None, pins=(NODE_2,))), anonymous())
    refused(server, SSL.Error)
    optional = server_options(node(NODE_1, ca=None, pins=(NODE_2,), require=False))
    server, _ = handshake(optional, anonymous())
    accepted(server, None)
    server, _ = handshake(optional, client_options(node(STRANGER, ca=None, pins=(NODE_1,)), "x"))
    refused(server, UnpinnedPeer)
    server, _ = handshake(optional, client_options(node(NODE_2, ca=None, pins=(NODE_1,)), "x"))
    accepted(server, NODE_2)


def test_pins_with_a_ca_make_the_client_check_the_chain_too() -> None:
    """A client with a CA and pins refuses a pinned server whose certificate comes from another CA."""
    server_side = server_options(node(STRANGER, ca=None, pins=(NODE_2,)))
    _, client = handshake(server_side, client_options(node(NODE_2, pins=(STRANGER,)), "stranger"))
    refused(client, SSL.Error)
    _, client = handshake(server_side, client_options(node(NODE_2, ca=None, pins=(STRANGER,)), "stranger"))
    accepted(client, STRANGER)


def test_pins_alone_ignore_the_issuers_a_peer_sends() -> None:
    """Without a CA, a pinned peer that also sends its issuer's certificate (untrusted here) is accepted:
    the pin names the leaf, and OpenSSL's verdict on the issuers is not asked for."""
    with_issuer = own_certificate_options(node(NODE_2), extraCertChain=[FARM_CA.certificate])
    server, _ = handshake(server_options(node(NODE_1, ca=None, pins=(NODE_2,))), with_issuer)
    accepted(server, NODE_2)


def test_an_unpinned_peer_is_logged_with_its_fingerprint() -> None:
    with capturedLogs() as events:
        server, _ = handshake(
            server_options(node(NODE_1, ca=None, pins=(NODE_2,))),
            client_options(node(STRANGER, ca=None, pins=(NODE_1,)), "x"),
        )
    refused(server, UnpinnedPeer)
    pin = fingerprint(STRANGER.certificate)
    warnings = [e for e in events if e.get("fingerprint") == pin]
    assert [formatEvent(e) for e in warnings] == [f"refused peer certificate {pin}: not in [tls] pins"]
