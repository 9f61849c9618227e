"""The endpoints built from endpoint strings, and each refusal word for word.

garlicfarm.net.endpoints: the operator's own strings (parse_endpoint) and the network's stricter forms
(parse_network_endpoint); garlicfarm.tls.endpoints: TLS around a plain TCP endpoint, with its timeout,
and listening strings that must not add TLS of their own. A MemoryReactorClock records what is dialled.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock, StringTransport

from garlicfarm.config import ConfigError, TLSConfig
from garlicfarm.net.endpoints import (
    Address,
    EndpointRefused,
    client_endpoint,
    parse_endpoint,
    parse_network_endpoint,
)
from garlicfarm.tls import client_endpoint as tls_client_endpoint
from garlicfarm.tls import issue_node, new_ca, server_endpoint, write_certified_key

B32 = "abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst.b32.i2p"
ONION = "a" * 56 + ".onion"
FORMS = "tcp://host:port, i2p://<52 base32>.b32.i2p[:port] or tor://<56 base32>.onion:port"
OPERATOR_FORMS = "expected tcp://host:port, i2p://dest.b32.i2p or a Twisted endpoint"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TLSConfig:
    """A farm node's [tls] files."""
    path = tmp_path_factory.mktemp("tls")
    ca = new_ca("farm CA")
    write_certified_key(ca, path / "ca.pem", path / "ca.key")
    write_certified_key(issue_node(ca, "node-1"), path / "node-1.pem", path / "node-1.key")
    return TLSConfig(ca=path / "ca.pem", cert=path / "node-1.pem", key=path / "node-1.key")


def dialled(reactor: MemoryReactorClock, endpoint: IStreamClientEndpoint) -> tuple[str, int, float, bytes]:
    """Connect ``endpoint``; return the host, port and timeout of the TCP connection made, and the first
    bytes sent on it (a TLS handshake record begins with 0x16)."""
    endpoint.connect(Factory.forProtocol(Protocol))
    host, port, factory, timeout, _bind = reactor.tcpClients[-1]
    transport = StringTransport()
    protocol = factory.buildProtocol(None)
    assert protocol is not None
    protocol.makeConnection(transport)
    return host, port, timeout, transport.value()


def refusal(error: type[Exception], call: Callable[..., object], *args: object) -> str:
    with pytest.raises(error) as raised:
        call(*args)
    return str(raised.value)


# -- the operator's own strings (trusted) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "address"),
    [
        ("tcp://Node-2.Example.org:9001", Address("tcp", "node-2.example.org", 9001)),
        (f"i2p://{B32}", Address("i2p", B32, 0)),
        (f"i2p://{B32}:7", Address("i2p", B32, 7)),
        (f"tor://{ONION}:9001", Address("tor", ONION, 9001)),
    ],
)
def test_an_operators_url_names_its_scheme_host_and_port(uri: str, address: Address) -> None:
    assert parse_endpoint(uri) == address


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("127.0.0.1:9001", "endpoint '127.0.0.1:9001': no scheme; did you mean tcp://127.0.0.1:9001?"),
        ("ftp://example.org:21", f"endpoint 'ftp://example.org:21': {OPERATOR_FORMS}"),
        ("tcp://:9001", f"endpoint 'tcp://:9001': {OPERATOR_FORMS}"),  # no host
        ("tcp://example.org:x", "endpoint 'tcp://example.org:x': bad port"),
        ("tcp://example.org", "endpoint 'tcp://example.org': tcp:// needs a port"),
    ],
)
def test_an_operators_bad_url_is_refused_saying_why(uri: str, message: str) -> None:
    assert refusal(ConfigError, parse_endpoint, uri) == message


def test_an_operators_tor_url_is_held_to_the_network_form() -> None:
    assert refusal(EndpointRefused, parse_endpoint, f"tor://{ONION}") == (
        f"endpoint 'tor://{ONION}': tor:// needs a v3 .onion name and a port"
    )


# -- strings from the network ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("tcp://127.0.0.1:70000", f"endpoint 'tcp://127.0.0.1:70000': expected {FORMS}"),  # urlsplit's error
        (
            "localhost:9001",
            f"endpoint 'localhost:9001': expected {FORMS}; did you mean tcp://localhost:9001?",
        ),
        ("unix:path=/tmp/x", f"endpoint 'unix:path=/tmp/x': expected {FORMS}"),
        ("tcp://:9001", "endpoint 'tcp://:9001': tcp:// needs a host name or IP address and a port"),
        ("tcp://127.0.0.1", "endpoint 'tcp://127.0.0.1': tcp:// needs a host name or IP address and a port"),
        (
            "i2p://example.i2p",
            "endpoint 'i2p://example.i2p': i2p:// needs a <52 base32 characters>.b32.i2p name",
        ),
        (f"tor://{ONION}", f"endpoint 'tor://{ONION}': tor:// needs a v3 .onion name and a port"),
        ("tcp://é:1", "endpoint 'tcp://é:1': not a short printable ASCII string"),
    ],
)
def test_a_network_endpoint_is_refused_saying_why(uri: str, message: str) -> None:
    assert refusal(EndpointRefused, parse_network_endpoint, uri) == message


@pytest.mark.parametrize(
    ("length", "why"),
    [(300, "tcp:// needs a host name or IP address and a port"), (301, "not a short printable ASCII string")],
)
def test_a_network_endpoint_is_at_most_300_characters_and_shown_up_to_80(length: int, why: str) -> None:
    uri = "tcp://" + "a" * (length - 8) + ":1"  # a 292- or 293-character label: too long either way
    assert refusal(EndpointRefused, parse_network_endpoint, uri) == f"endpoint {uri[:80]!r}: {why}"


# -- what is dialled -------------------------------------------------------------------------------


@pytest.mark.parametrize("trusted", [True, False])
def test_tcp_with_tls_dials_tls_over_tcp_with_a_30_second_timeout(tls: TLSConfig, trusted: bool) -> None:
    reactor = MemoryReactorClock()
    host, port, timeout, sent = dialled(
        reactor, client_endpoint(reactor, "tcp://10.0.0.2:9005", tls, trusted)
    )
    assert (host, port, timeout) == ("10.0.0.2", 9005, 30)
    assert sent[:1] == b"\x16"  # a ClientHello


@pytest.mark.parametrize("trusted", [True, False])
def test_cleartext_tcp_on_loopback_is_plain_tcp(trusted: bool) -> None:
    reactor = MemoryReactorClock()
    host, port, _, sent = dialled(reactor, client_endpoint(reactor, "tcp://127.0.0.1:9004", None, trusted))
    assert (host, port, sent) == ("127.0.0.1", 9004, b"")  # no handshake: the protocol speaks first


def test_a_tls_endpoint_takes_the_timeout_it_is_given(tls: TLSConfig) -> None:
    reactor = MemoryReactorClock()
    assert dialled(reactor, tls_client_endpoint(reactor, "10.0.0.3", 9006, tls, timeout=5))[2] == 5


# -- listening -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "listen", ["ssl:22600", "tls:22600", "le:/tmp:tcp:443", "lets:/tmp:tcp:443", " SSL:22600"]
)
def test_a_listening_string_that_does_its_own_tls_is_refused(tls: TLSConfig, listen: str) -> None:
    assert refusal(ConfigError, server_endpoint, MemoryReactorClock(), listen, tls) == (
        f"listen {listen!r}: give a plain endpoint such as 'tcp:22600:interface=127.0.0.1'; "
        "TLS is added from [tls]"
    )


def test_a_listening_string_twisted_does_not_know_is_refused(tls: TLSConfig) -> None:
    message = refusal(ConfigError, server_endpoint, MemoryReactorClock(), "nosuchkind:1", tls)
    assert message.startswith("listen 'nosuchkind:1' is not a Twisted server endpoint string: ")
