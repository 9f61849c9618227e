"""Endpoints that arrive over the network take only the protocol's own forms.

Regression (issue 13): AddServerRequest's endpoint was parsed as any Twisted client endpoint string:
``unix:path=...`` made the leader dial a local socket, and ``httpproxy:...:proxyPasswordFile=/proc/...``
made it read a local file and send it to a proxy the requester chose.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.defer import Deferred
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure

from garlicfarm.config import ConfigError
from garlicfarm.handshake import ClientConfig
from garlicfarm.net.connection import NotConnected
from garlicfarm.net.endpoints import (
    EndpointRefused,
    client_endpoint,
    is_loopback,
    parse_network_endpoint,
    scheme_hint,
)
from garlicfarm.net.peers import PeerConnections
from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import RaftOptions
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import ClusterServer, Configuration, RequestVoteRequest

B32 = "a" * 52 + ".b32.i2p"
ONION = "b" * 56 + ".onion"

GOOD = [
    ("tcp://127.0.0.1:9001", ("tcp", "127.0.0.1", 9001)),
    ("tcp://node-2.example.org:443", ("tcp", "node-2.example.org", 443)),
    ("tcp://[::1]:9001", ("tcp", "::1", 9001)),
    (f"i2p://{B32}", ("i2p", B32, 0)),
    (f"i2p://{B32}:7", ("i2p", B32, 7)),
    (f"tor://{ONION}:9001", ("tor", ONION, 9001)),
]

BAD = [
    "unix:path=/run/garlicfarm/admin.sock",
    "httpproxy:host=x:port=1:proxyHost=10.0.0.1:proxyPort=8080:proxyPasswordFile=/proc/self/environ",
    "tor:host=x.onion:port=1",
    "tcp:host=127.0.0.1:port=9001",
    "tcp://127.0.0.1",  # no port
    "tcp://127.0.0.1:0",
    "tcp://127.0.0.1:70000",
    "tcp://user:secret@127.0.0.1:9001",
    "tcp://127.0.0.1:9001/path",
    "tcp://127.0.0.1:9001?proxyPasswordFile=/etc/shadow",
    "tcp://bad_host!:9001",
    "i2p://short.b32.i2p",
    "i2p://example.i2p",
    f"tor://{ONION}",  # no port
    "tor://facebookcorewwwi.onion:443",  # v2 onion names are gone
    "file:///etc/passwd",
    "/etc/passwd",
    "tcp://127.0.0.1:9001\n",
    "tcp://" + "a" * 400 + ":1",
    "tcp://ünïcode.example:1",
]


@pytest.mark.parametrize(("uri", "expected"), GOOD)
def test_the_protocol_forms_are_accepted(uri: str, expected: tuple[str, str, int]) -> None:
    address = parse_network_endpoint(uri)
    assert (address.scheme, address.host, address.port) == expected


@pytest.mark.parametrize("uri", BAD)
def test_anything_else_is_refused(uri: str) -> None:
    with pytest.raises(EndpointRefused):
        parse_network_endpoint(uri)


@given(st.text(max_size=120))
def test_no_string_gets_past_the_check_except_a_protocol_form(uri: str) -> None:
    try:
        address = parse_network_endpoint(uri)
    except EndpointRefused:
        return
    assert uri.startswith(("tcp://", "i2p://", "tor://")) and address.host


def test_an_untrusted_twisted_string_is_never_dialled() -> None:
    reactor = MemoryReactorClock()
    with pytest.raises(EndpointRefused):
        client_endpoint(reactor, "unix:path=/tmp/x", None, trusted=False)
    # the operator's own [peers] entries may still be Twisted endpoint strings
    assert client_endpoint(reactor, "tcp:host=127.0.0.1:port=9001", None) is not None


def _peers(reactor: MemoryReactorClock) -> PeerConnections:
    def endpoint_for(uri: str) -> object:
        return client_endpoint(reactor, uri, None, trusted=False)

    def config_for(uri: str) -> ClientConfig:
        return ClientConfig(host="peer", username="u", password="p", cluster="farm")

    return PeerConnections(reactor, endpoint_for, config_for)  # type: ignore[arg-type]


def test_sending_to_a_refused_endpoint_fails_the_request_and_raises_nothing() -> None:
    reactor = MemoryReactorClock()
    peers = _peers(reactor)
    d: Deferred[object] = peers.send(9, RequestVoteRequest(), "unix:path=/tmp/leader.sock")  # type: ignore[assignment]
    failures: list[Failure] = []
    d.addErrback(failures.append)
    assert failures and failures[0].check(NotConnected)
    assert "cannot dial server 9" in failures[0].getErrorMessage()
    assert reactor.unixClients == [] and reactor.tcpClients == []


def test_servers_that_are_no_longer_wanted_are_no_longer_dialled() -> None:
    reactor = MemoryReactorClock()
    peers = _peers(reactor)
    peers.send(2, RequestVoteRequest(), "tcp://127.0.0.1:9002")
    peers.send(7, RequestVoteRequest(), "tcp://127.0.0.1:9007")  # a joiner that was refused
    assert set(peers.connected()) == {2, 7}
    peers.retain({2, 3})
    assert set(peers.connected()) == {2}


def test_the_core_names_whom_it_still_needs() -> None:
    config = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3)))
    core = RaftCore(1, MemoryLogStore().load(), random.Random(1), config, RaftOptions())
    assert core.contacts() == {2, 3}


# -- cleartext TCP only on loopback, and each name's pattern up to its end -------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.255.255.255", "localhost", "[::1]"])
def test_cleartext_tcp_is_dialled_on_loopback(host: str) -> None:
    reactor = MemoryReactorClock()
    for trusted in (True, False):
        assert client_endpoint(reactor, f"tcp://{host}:9001", None, trusted=trusted) is not None


@pytest.mark.parametrize(
    "host",
    [
        "128.0.0.1",  # one past 127.0.0.0/8
        "126.255.255.255",  # one before it
        "10.0.0.1",
        "0.0.0.0",
        "[::2]",
        "[::ffff:10.0.0.1]",
        "localhost.example.org",  # a name that only begins like loopback
        "localhostx",
        "node-2.example.org",
    ],
)
def test_cleartext_tcp_is_refused_off_loopback(host: str) -> None:
    reactor = MemoryReactorClock()
    for trusted in (True, False):
        with pytest.raises(ConfigError, match="cleartext TCP is refused off loopback"):
            client_endpoint(reactor, f"tcp://{host}:9001", None, trusted=trusted)
    assert reactor.tcpClients == []


def test_loopback_is_loopback_only() -> None:
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("::1")
    for host in ("localhost.", "localhost.evil", "xlocalhost", "128.0.0.1", "::2", "", "127.0.0.1x"):
        assert not is_loopback(host), host


@pytest.mark.parametrize(
    "uri",
    [
        f"i2p://{B32}x",
        f"i2p://{B32}.evil",
        f"i2p://{B32}.example.org:7",
        f"i2p://x{B32}",  # 53 characters before .b32.i2p
        f"i2p://{'a' * 51}.b32.i2p",  # 51
        f"tor://{ONION}x:9001",
        f"tor://{ONION}.evil:9001",
        f"tor://x{ONION}:9001",  # 57 characters before .onion
        f"tor://{'b' * 55}.onion:9001",  # 55
        "tcp://bad_host:9001",
        "tcp://host.example_:9001",
        "tcp://-host:9001",
        "tcp://host-:9001",
        f"tcp://{'a' * 64}:9001",  # a label of 64 characters
        f"tcp://{'.'.join(['a' * 63] * 3 + ['a' * 62])}:9001",  # 254 characters: one past 253
        "tcp://127.0.0.1:65536",
    ],
)
def test_a_name_with_something_after_its_form_is_refused(uri: str) -> None:
    with pytest.raises(EndpointRefused):
        parse_network_endpoint(uri)


@pytest.mark.parametrize(
    "uri",
    [
        f"tcp://{'a' * 63}:9001",  # a label of 63 characters
        f"tcp://{'.'.join(['a' * 63] * 3 + ['a' * 61])}:9001",  # 253 characters
        "tcp://127.0.0.1:65535",
        "tcp://127.0.0.1:1",
    ],
)
def test_a_name_at_its_bounds_is_accepted(uri: str) -> None:
    assert parse_network_endpoint(uri).scheme == "tcp"


def test_the_scheme_hint_is_for_a_whole_host_and_port_only() -> None:
    assert scheme_hint("127.0.0.1:9001") == "; did you mean tcp://127.0.0.1:9001?"
    assert scheme_hint("127.0.0.1:12345") != ""
    assert scheme_hint("127.0.0.1:123456") == ""  # six digits is not a port
    assert scheme_hint("127.0.0.1:9001/x") == ""
    assert scheme_hint("127.0.0.1:9001\n") == ""
