"""Each endpoint form dials where it says (garlicfarm.net.endpoints.client_endpoint): TCP and TLS to the
host and port, i2p:// through the router's HTTP proxy naming the destination and port, tor:// through
txtorcon; and Twisted endpoint strings as the operator wrote them (parse_endpoint)."""

from __future__ import annotations

from pathlib import Path

import pytest
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock
from txtorcon import TorClientEndpoint  # type: ignore[import-untyped]

from garlicfarm.config import ConfigError, TLSConfig
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.net.endpoints import Address, client_endpoint, parse_endpoint
from garlicfarm.net.httpproxy import HTTPConnectEndpoint
from tests.net.test_endpoint_strings import dial

B32 = "abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst.b32.i2p"
ONION = "a" * 56 + ".onion"


def dialled(reactor: MemoryReactorClock) -> tuple[str, int]:
    host, port, _factory, _timeout, _bind = reactor.tcpClients[-1]
    return host, port


@pytest.mark.parametrize("trusted", [True, False])
def test_cleartext_tcp_dials_its_host_and_port(trusted: bool) -> None:
    reactor = MemoryReactorClock()
    client_endpoint(reactor, "tcp://127.0.0.2:9004", None, trusted=trusted).connect(
        Factory.forProtocol(Protocol)
    )
    assert dialled(reactor) == ("127.0.0.2", 9004)


def test_tls_dials_its_host_and_port(tmp_path: Path) -> None:
    create_farm(FarmSpec(tmp_path / "f", 1, base_port=1), force=True)
    tls = TLSConfig(
        ca=tmp_path / "f" / "ca.pem", cert=tmp_path / "f" / "node-1.pem", key=tmp_path / "f" / "node-1.key"
    )
    reactor = MemoryReactorClock()
    endpoint = client_endpoint(reactor, "tcp://10.0.0.2:9005", tls)
    endpoint.connect(Factory.forProtocol(Protocol))
    assert dialled(reactor) == ("10.0.0.2", 9005)  # TLS: off loopback too


@pytest.mark.parametrize(("uri", "connect"), [(f"i2p://{B32}", f"{B32}:0"), (f"i2p://{B32}:7", f"{B32}:7")])
def test_i2p_goes_through_the_routers_http_proxy(uri: str, connect: str) -> None:
    reactor = MemoryReactorClock()
    endpoint = client_endpoint(reactor, uri, None, trusted=False)
    assert isinstance(endpoint, HTTPConnectEndpoint)
    host, port, sent = dial(endpoint, reactor)
    assert (host, port) == ("127.0.0.1", 4444)
    assert sent.startswith(f"CONNECT {connect} HTTP/1.1\r\n".encode())


def test_tor_goes_through_txtorcon() -> None:
    reactor = MemoryReactorClock()
    endpoint = client_endpoint(reactor, f"tor://{ONION}:9001", None, trusted=False)
    assert isinstance(endpoint, TorClientEndpoint)
    assert (endpoint.host, endpoint.port) == (ONION, 9001)
    assert reactor.tcpClients == []  # nothing dialled before a connect


@pytest.mark.parametrize(
    ("uri", "address"),
    [
        ("tcp:host=example.org:port=9001", Address("tcp", "example.org", 9001)),
        ("tcp:host=a=b:port=2", Address("tcp", "a=b", 2)),  # only the first '=' separates
        ("tcp:port=2", Address("tcp", "peer", 2)),  # no host: a name for the challenge cache
        ("unix:path=/run/gf.sock", Address("unix", "peer", 0)),
        ("tcp:host=example.org:port=", Address("tcp", "example.org", 0)),
    ],
)
def test_a_twisted_string_names_its_scheme_host_and_port(uri: str, address: Address) -> None:
    assert parse_endpoint(uri) == address


def test_a_malformed_twisted_string_is_a_configuration_error() -> None:
    with pytest.raises(
        ConfigError, match="expected tcp://host:port, i2p://dest.b32.i2p or a Twisted endpoint"
    ):
        client_endpoint(MemoryReactorClock(), "nosuchendpoint:x=1", None)
