"""HTTPConnectEndpoint through a real tinyproxy on loopback, with the real reactor.

Trial test cases (pytest runs them, spinning the global reactor), each bounded by ``timeout``; the
``tinyproxy`` fixture (tests/net/conftest.py) kills every proxy it started when a test ends.
"""

from __future__ import annotations

import datetime
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from OpenSSL import SSL
from twisted.internet import reactor as _reactor
from twisted.internet.address import HostnameAddress
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.endpoints import (
    TCP4ClientEndpoint,
    TCP4ServerEndpoint,
    clientFromString,
    wrapClientTLS,
    wrapServerTLS,
)
from twisted.internet.interfaces import IListeningPort, IOpenSSLServerConnectionCreator, IStreamClientEndpoint
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.ssl import Certificate, optionsForClientTLS
from twisted.python.failure import Failure
from twisted.trial import unittest
from zope.interface import implementer

from garlicfarm.net.httpproxy import (
    HTTPConnectEndpoint,
    ProxyAuthenticationRequired,
    ProxyRefused,
    ProxyUnreachable,
)
from tests.net.conftest import StartTinyproxy, Tinyproxy

pytestmark = pytest.mark.e2e

reactor: Any = _reactor
MESSAGE = bytes(range(256)) * 64  # 16 KiB: more than one read, every byte value


class Echo(Protocol):
    def connectionMade(self) -> None:
        self.factory.connected.append(self)
        self.lost: Deferred[None] = Deferred()

    def dataReceived(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.lost.callback(None)


class EchoFactory(Factory):
    protocol = Echo

    def __init__(self) -> None:
        self.connected: list[Echo] = []


class Client(Protocol):
    """Collects what comes back; ``until(n)`` fires once n bytes have."""

    def __init__(self) -> None:
        self.data = b""
        self.lost: Deferred[None] = Deferred()
        self._waiting: tuple[int, Deferred[bytes]] | None = None

    def until(self, n: int) -> Deferred[bytes]:
        d: Deferred[bytes] = Deferred()
        self._waiting = (n, d)
        self._check()
        return d

    def dataReceived(self, data: bytes) -> None:
        self.data += data
        self._check()

    def _check(self) -> None:
        if self._waiting is not None and len(self.data) >= self._waiting[0]:
            d, self._waiting = self._waiting[1], None
            d.callback(self.data)

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.lost.callback(None)


def self_signed(name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return certificate, key


@implementer(IOpenSSLServerConnectionCreator)
class ServerTLS:
    """A TLS server from cryptography objects (Twisted's CertificateOptions wants deprecated PKeys)."""

    def __init__(self, certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        self._context = SSL.Context(SSL.TLS_METHOD)
        self._context.use_certificate(certificate)
        self._context.use_privatekey(key)

    def serverConnectionForTLS(self, tlsProtocol: Any) -> SSL.Connection:  # noqa: N803
        return SSL.Connection(self._context, None)


class TunnelThroughTinyproxy(unittest.TestCase):
    timeout = 10

    @pytest.fixture(autouse=True)
    def _proxies(self, tinyproxy: StartTinyproxy, tmp_path: Path) -> None:
        self.start_proxy = tinyproxy
        self.tmp = tmp_path

    def setUp(self) -> None:
        self.echo = EchoFactory()
        self.port: IListeningPort = reactor.listenTCP(0, self.echo, interface="127.0.0.1")
        self.addCleanup(self.port.stopListening)
        self.echo_port: int = self.port.getHost().port

    def via(self, proxy: Tinyproxy, **kwargs: Any) -> HTTPConnectEndpoint:
        return HTTPConnectEndpoint(
            TCP4ClientEndpoint(reactor, proxy.host, proxy.port),
            "127.0.0.1",
            self.echo_port,
            reactor=reactor,
            timeout=5,
            **kwargs,
        )

    @inlineCallbacks
    def round_trip(self, endpoint: IStreamClientEndpoint) -> Generator[Deferred[Any], Any, None]:
        client = yield endpoint.connect(Factory.forProtocol(Client))
        assert isinstance(client, Client) and client.transport is not None
        assert client.transport.getPeer() == HostnameAddress(b"127.0.0.1", self.echo_port)
        client.transport.write(MESSAGE)
        echoed = yield client.until(len(MESSAGE))
        assert echoed == MESSAGE
        client.transport.loseConnection()
        yield client.lost
        yield self.echo.connected[0].lost  # tinyproxy closes its side: nothing left open in the reactor

    @inlineCallbacks
    def refusal(
        self, endpoint: IStreamClientEndpoint, kind: type[Exception]
    ) -> Generator[Any, Any, Exception]:
        error = yield self.assertFailure(endpoint.connect(Factory.forProtocol(Client)), kind)
        assert not self.echo.connected
        return error  # type: ignore[no-any-return]

    def test_bytes_go_both_ways(self) -> Deferred[None]:
        return self.round_trip(self.via(self.start_proxy(connect_ports=[self.echo_port])))

    def test_bytes_go_both_ways_via_the_endpoint_string(self) -> Deferred[None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port])
        description = (
            f"httpproxy:host=127.0.0.1:port={self.echo_port}:proxyHost=127.0.0.1:proxyPort={proxy.port}"
        )
        return self.round_trip(clientFromString(reactor, description + ":timeout=5"))

    @inlineCallbacks
    def test_port_not_allowed_by_connectport(self) -> Generator[Any, Any, None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port + 1 if self.echo_port < 65535 else 1])
        error = yield self.refusal(self.via(proxy), ProxyRefused)
        assert str(error) == (
            f"HTTP proxy {proxy.address} refused CONNECT to 127.0.0.1:{self.echo_port}: 403 Access violation"
        )

    @inlineCallbacks
    def test_client_denied_by_acl(self) -> Generator[Any, Any, None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port], deny_loopback=True)
        error = yield self.refusal(self.via(proxy), ProxyRefused)
        assert str(error).endswith(": 403 Access denied")

    @inlineCallbacks
    def test_target_down(self) -> Generator[Any, Any, None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port])
        yield self.port.stopListening()
        error = yield self.refusal(self.via(proxy), ProxyRefused)
        assert isinstance(error, ProxyRefused) and error.status_code == 500

    @inlineCallbacks
    def test_basic_auth_required(self) -> Generator[Any, Any, None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port], basic_auth=("alice", "s3cret"))
        error = yield self.refusal(self.via(proxy), ProxyAuthenticationRequired)
        assert "requires authentication" in str(error) and "407 Proxy Authentication Required" in str(error)

    @inlineCallbacks
    def test_basic_auth_wrong_password(self) -> Generator[Any, Any, None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port], basic_auth=("alice", "s3cret"))
        error = yield self.refusal(
            self.via(proxy, proxy_auth=("alice", "guess")), ProxyAuthenticationRequired
        )
        assert "rejected the credentials of user 'alice'" in str(error)

    def test_basic_auth_with_credentials(self) -> Deferred[None]:
        return self.round_trip(
            self.via(
                self.start_proxy(connect_ports=[self.echo_port], basic_auth=("alice", "s3cret")),
                proxy_auth=("alice", "s3cret"),
            )
        )

    def test_basic_auth_via_the_endpoint_string_and_a_password_file(self) -> Deferred[None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port], basic_auth=("alice", "s3cret"))
        secret = self.tmp / "proxy-password"
        secret.write_text("s3cret\n")
        description = (
            f"httpproxy:host=127.0.0.1:port={self.echo_port}:proxyHost=127.0.0.1:proxyPort={proxy.port}"
            f":proxyUser=alice:proxyPasswordFile={secret}:timeout=5"
        )
        return self.round_trip(clientFromString(reactor, description))

    @inlineCallbacks
    def test_tls_inside_the_tunnel(self) -> Generator[Any, Any, None]:
        """How a TLS peer is reached through a proxy: wrapClientTLS around the CONNECT endpoint."""
        certificate, key = self_signed("peer.example")
        listening = yield wrapServerTLS(
            ServerTLS(certificate, key), TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1")
        ).listen(self.echo)
        self.addCleanup(listening.stopListening)
        self.echo_port = listening.getHost().port
        trust = Certificate.loadPEM(certificate.public_bytes(serialization.Encoding.PEM))
        proxy = self.start_proxy(connect_ports=[self.echo_port])
        yield self.round_trip(
            wrapClientTLS(optionsForClientTLS("peer.example", trustRoot=trust), self.via(proxy))
        )

    @inlineCallbacks
    def test_no_proxy_listening(self) -> Generator[Any, Any, None]:
        proxy = self.start_proxy(connect_ports=[self.echo_port])
        proxy.process.kill()
        proxy.process.wait(timeout=5)
        error = yield self.refusal(self.via(proxy), ProxyUnreachable)
        assert str(error).startswith(
            f"could not connect to HTTP proxy {proxy.address} for CONNECT to 127.0.0.1:"
        )
