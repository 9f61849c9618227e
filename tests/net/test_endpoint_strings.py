"""Endpoint strings as Twisted parses them: ``httpproxy:``, ``i2p:`` (ours), ``tor:``, ``onion:`` (txtorcon).

Parsing must not contact anything: a MemoryReactorClock records the connections an endpoint would make.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from twisted.internet.endpoints import (
    HostnameEndpoint,
    TCP4ClientEndpoint,
    clientFromString,
    quoteStringArgument,
)
from twisted.internet.interfaces import (
    IStreamClientEndpointStringParserWithReactor,
    IStreamServerEndpointStringParser,
)
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.plugin import getPlugins
from twisted.python.failure import Failure
from txtorcon import TorClientEndpoint  # type: ignore[import-untyped]
from zope.interface.verify import verifyObject

from garlicfarm.net.endpoint_strings import I2P_TIMEOUT
from garlicfarm.net.httpproxy import HTTPConnectEndpoint, ProxyTimeout


def parse(description: str) -> tuple[HTTPConnectEndpoint, MemoryReactorClock]:
    reactor = MemoryReactorClock()
    endpoint = clientFromString(reactor, description)
    assert isinstance(endpoint, HTTPConnectEndpoint)
    assert not reactor.tcpClients  # parsing connects to nothing
    return endpoint, reactor


def dial(endpoint: HTTPConnectEndpoint, reactor: MemoryReactorClock) -> tuple[str, int, bytes]:
    """Connect; return where the proxy connection went and what was sent on it."""
    endpoint.connect(Factory.forProtocol(Protocol)).addErrback(lambda _: None)
    host, port, factory, _, _ = reactor.tcpClients[-1]
    transport = StringTransport()
    protocol = factory.buildProtocol(None)
    assert protocol is not None
    protocol.makeConnection(transport)
    return host, port, transport.value()


def test_our_parsers_are_twisted_plugins() -> None:
    parsers = {p.prefix: p for p in getPlugins(IStreamClientEndpointStringParserWithReactor)}
    assert {"httpproxy", "i2p", "tor"} <= set(parsers)
    for prefix in ("httpproxy", "i2p"):
        verifyObject(IStreamClientEndpointStringParserWithReactor, parsers[prefix])
    assert "onion" in {p.prefix for p in getPlugins(IStreamServerEndpointStringParser)}


def test_plugins_are_found_by_an_installed_garlicfarm(tmp_path: Path) -> None:
    """From outside the checkout: only an install (pip install -e .) puts twisted/plugins on the path."""
    code = (
        "from twisted.internet import reactor\n"
        "from twisted.internet.endpoints import clientFromString\n"
        "print(clientFromString(reactor, 'i2p:host=xyz.b32.i2p'))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, f"is garlicfarm installed (pip install -e .)?\n{run.stderr}"
    assert run.stdout.strip() == "<HTTPConnectEndpoint xyz.b32.i2p:0 via 127.0.0.1:4444>"


# -- i2p: ------------------------------------------------------------------------------------------


def test_i2p_defaults_to_the_routers_proxy_and_port_0() -> None:
    endpoint, reactor = parse("i2p:host=xyz.b32.i2p")
    host, port, sent = dial(endpoint, reactor)
    assert (host, port) == ("127.0.0.1", 4444)
    assert sent == b"CONNECT xyz.b32.i2p:0 HTTP/1.1\r\nHost: xyz.b32.i2p:0\r\n\r\n"


def test_i2p_timeout_is_longer_than_tcp() -> None:
    endpoint, reactor = parse("i2p:host=xyz.b32.i2p")
    d = endpoint.connect(Factory.forProtocol(Protocol))
    assert reactor.tcpClients[0][3] == I2P_TIMEOUT  # the TCP connect to the proxy
    assert [c.getTime() for c in reactor.getDelayedCalls()] == [I2P_TIMEOUT]  # the whole attempt
    errors: list[Failure] = []
    d.addErrback(errors.append)
    reactor.advance(I2P_TIMEOUT)
    assert errors[0].check(ProxyTimeout)


def test_i2p_with_every_option(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("pw\n")
    endpoint, reactor = parse(
        f"i2p:host=Farm.I2P:port=9001:proxyHost=127.0.0.2:proxyPort=4445:proxyUser=u:proxyPasswordFile={secret}"
    )
    host, port, sent = dial(endpoint, reactor)
    assert (host, port) == ("127.0.0.2", 4445)
    assert sent.startswith(b"CONNECT Farm.I2P:9001 HTTP/1.1\r\n")
    assert b"\r\nProxy-Authorization: Basic dTpwdw==\r\n" in sent  # base64("u:pw"): the newline is not kept


def test_i2p_refuses_a_host_outside_i2p() -> None:
    """The refusal says what an I2P name looks like and which prefix to use instead, word for word."""
    with pytest.raises(ValueError) as raised:
        clientFromString(MemoryReactorClock(), "i2p:host=example.com")
    assert str(raised.value) == (
        "i2p: host='example.com' is not an I2P name (expected xyz.b32.i2p or an address-book name "
        "ending in .i2p); use httpproxy: for other hosts"
    )


# -- httpproxy: ------------------------------------------------------------------------------------


def test_httpproxy() -> None:
    endpoint, reactor = parse("httpproxy:host=xyz.b32.i2p:port=0:proxyHost=127.0.0.1:proxyPort=4444")
    assert dial(endpoint, reactor) == (
        "127.0.0.1",
        4444,
        b"CONNECT xyz.b32.i2p:0 HTTP/1.1\r\nHost: xyz.b32.i2p:0\r\n\r\n",
    )


def test_httpproxy_ipv6_proxy() -> None:
    endpoint, reactor = parse(r"httpproxy:host=example.org:port=443:proxyHost=\:\:1:proxyPort=3128")
    assert dial(endpoint, reactor)[:2] == ("::1", 3128)


def test_httpproxy_proxy_by_name_is_resolved_when_connecting() -> None:
    endpoint, _ = parse("httpproxy:host=example.org:port=443:proxyHost=proxy.lan:proxyPort=3128")
    assert isinstance(endpoint._proxy, HostnameEndpoint)
    assert repr(endpoint) == "<HTTPConnectEndpoint example.org:443 via proxy.lan:3128>"


def test_httpproxy_literal_ipv4_proxy_needs_no_resolver() -> None:
    endpoint, _ = parse("httpproxy:host=example.org:port=443:proxyHost=10.1.2.3:proxyPort=3128")
    assert isinstance(endpoint._proxy, TCP4ClientEndpoint)


def test_tls_inside_an_httpproxy_tunnel() -> None:
    """Twisted's own ``tls:`` takes an inner endpoint: TLS to a peer reached through a CONNECT proxy."""
    inner = quoteStringArgument("httpproxy:host=peer.example:port=9001:proxyHost=127.0.0.1:proxyPort=3128")
    assert inner == r"httpproxy\:host=peer.example\:port=9001\:proxyHost=127.0.0.1\:proxyPort=3128"
    reactor = MemoryReactorClock()
    endpoint = clientFromString(reactor, f"tls:peer.example:9001:endpoint={inner}")
    endpoint.connect(Factory.forProtocol(Protocol)).addErrback(lambda _: None)
    assert reactor.tcpClients[0][:2] == ("127.0.0.1", 3128)


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ("httpproxy:host=a:port=1:proxyHost=127.0.0.1", "httpproxy: proxyPort= is required"),
        ("httpproxy:port=1:proxyHost=127.0.0.1:proxyPort=1", "httpproxy: host= is required"),
        ("httpproxy:host=a:proxyHost=127.0.0.1:proxyPort=1", "httpproxy: port= is required"),
        ("httpproxy:host=a:port=1:proxyPort=1", "httpproxy: proxyHost= is required"),
        ("httpproxy:a:1", "httpproxy: unexpected 'a'; give every option as key=value"),
        ("i2p:host=a.i2p:proxyPassword=x", "i2p: unknown option 'proxyPassword'; known: host, port, "),
        ("i2p:host=a.i2p:port=99999", r"i2p: port='99999' is not a port number \(0-65535\)"),
        ("i2p:host=a.i2p:proxyPort=-1", r"i2p: proxyPort='-1' is not a port number"),
        ("i2p:host=a.i2p:timeout=0", "i2p: timeout='0' is not a positive number of seconds"),
        ("i2p:host=a.i2p:timeout=nan", "i2p: timeout='nan' is not a positive number of seconds"),
        ("i2p:host=a.i2p:proxyUser=u", "i2p: proxyUser= and proxyPasswordFile= go together"),
        (
            "i2p:host=a.i2p:proxyUser=u:proxyPasswordFile=/nonexistent/pw",
            "i2p: cannot read proxyPasswordFile=",
        ),
        (
            "i2p:host=a.i2p:proxyUser=a\\:b:proxyPasswordFile=/dev/null",
            "i2p: proxyPasswordFile='/dev/null' must hold one non-empty line",
        ),
        ("i2p:host=bad host.i2p", "HTTPConnectEndpoint: cannot send CONNECT to 'bad host.i2p:0'"),
    ],
)
def test_bad_strings_say_what_is_wrong(description: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        clientFromString(MemoryReactorClock(), description)


def test_password_file_of_two_lines_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("one\ntwo\n")
    with pytest.raises(ValueError, match="must hold one non-empty line"):
        clientFromString(MemoryReactorClock(), f"i2p:host=a.i2p:proxyUser=a:proxyPasswordFile={secret}")


def test_user_name_with_a_colon_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("pw")
    with pytest.raises(ValueError, match="user name cannot contain ':'"):
        clientFromString(MemoryReactorClock(), f"i2p:host=a.i2p:proxyUser=a\\:b:proxyPasswordFile={secret}")


# -- tor: (txtorcon) -------------------------------------------------------------------------------


def test_tor_parses_without_contacting_tor() -> None:
    reactor = MemoryReactorClock()
    endpoint = clientFromString(reactor, "tor:host=xyz.onion:port=9001")
    assert isinstance(endpoint, TorClientEndpoint)
    assert (endpoint.host, endpoint.port) == ("xyz.onion", 9001)
    assert not reactor.tcpClients


def test_tor_with_a_socks_port() -> None:
    reactor = MemoryReactorClock()
    endpoint = clientFromString(
        reactor, "tor:host=xyz.onion:port=9001:socksHostname=127.0.0.1:socksPort=9050"
    )
    assert isinstance(endpoint, TorClientEndpoint)
    assert isinstance(endpoint._socks_endpoint, TCP4ClientEndpoint)
    assert not reactor.tcpClients


# -- the bounds and the ends of names --------------------------------------------------------------


@pytest.mark.parametrize("host", ["example.i2p.evil.org", "example.i2px", "i2p", "example-i2p"])
def test_i2p_refuses_a_name_that_only_contains_i2p(host: str) -> None:
    with pytest.raises(ValueError, match="is not an I2P name"):
        clientFromString(MemoryReactorClock(), f"i2p:host={host}")


@pytest.mark.parametrize("key", ["port", "proxyPort"])
def test_a_port_of_65535_is_accepted_and_65536_refused(key: str) -> None:
    endpoint, _ = parse(f"i2p:host=a.i2p:{key}=65535")
    assert isinstance(endpoint, HTTPConnectEndpoint)
    with pytest.raises(ValueError, match=rf"i2p: {key}='65536' is not a port number \(0-65535\)"):
        clientFromString(MemoryReactorClock(), f"i2p:host=a.i2p:{key}=65536")


@pytest.mark.parametrize(
    ("content", "password"),
    [
        ("pässwort\r\n", "pässwort"),  # UTF-8 whatever the locale; a Windows editor's line end
        ("pw  \n", "pw  "),  # spaces are the password's own
        ("pwX\n", "pwX"),  # only line-end characters go
    ],
)
def test_a_password_file_is_utf_8_and_loses_only_its_line_end(
    tmp_path: Path, content: str, password: str
) -> None:
    import base64

    secret = tmp_path / "pw"
    secret.write_bytes(content.encode("utf-8"))
    endpoint, reactor = parse(f"i2p:host=a.i2p:proxyUser=u:proxyPasswordFile={secret}")
    _, _, sent = dial(endpoint, reactor)
    token = base64.b64encode(f"u:{password}".encode()).decode()
    assert f"\r\nProxy-Authorization: Basic {token}\r\n".encode() in sent


@pytest.mark.parametrize("content", ["one\rtwo", "\r\n", ""])
def test_a_password_file_with_a_carriage_return_inside_or_nothing_is_refused(
    tmp_path: Path, content: str
) -> None:
    secret = tmp_path / "pw"
    secret.write_bytes(content.encode())
    with pytest.raises(ValueError, match="must hold one non-empty line"):
        clientFromString(MemoryReactorClock(), f"i2p:host=a.i2p:proxyUser=a:proxyPasswordFile={secret}")


@pytest.mark.parametrize(("timeout", "taken"), [("0.5", True), ("1", True), ("0", False), ("x", False)])
def test_a_timeout_is_any_positive_number_of_seconds(timeout: str, taken: bool) -> None:
    description = f"i2p:host=a.i2p:timeout={timeout}"
    if taken:
        clientFromString(MemoryReactorClock(), description)
    else:
        with pytest.raises(ValueError, match="is not a positive number of seconds"):
            clientFromString(MemoryReactorClock(), description)


def test_a_reactor_without_time_is_refused_by_name() -> None:
    from twisted.internet.testing import MemoryReactor

    with pytest.raises(TypeError, match="the reactor must provide IReactorTCP and IReactorTime"):
        clientFromString(MemoryReactor(), "i2p:host=a.i2p")


def test_a_password_file_is_read_as_utf_8_under_an_ascii_locale(tmp_path: Path) -> None:
    """The file's encoding does not depend on the locale: a daemon started with LC_ALL=C (no coercion to
    UTF-8, no UTF-8 mode) reads the same password."""
    import os

    secret = tmp_path / "pw"
    secret.write_bytes("pässwort\n".encode())
    code = (
        "import sys\n"
        "from garlicfarm.net.endpoint_strings import _credentials\n"
        "print(ascii(_credentials('i2p', 'u', sys.argv[1])))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHON"))}
    env |= {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    run = subprocess.run(
        [sys.executable, "-c", code, str(secret)],
        check=False,
        cwd=Path(__file__).resolve().parents[2],  # this checkout's garlicfarm
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "('u', 'p\\xe4sswort')"
