"""HTTPConnectEndpoint against a scripted proxy: StringTransport, iosim and a Clock; no sockets, no sleeps."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from twisted.internet.address import HostnameAddress, IPv4Address
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.error import ConnectionDone, ConnectionLost, ConnectionRefusedError, NoProtocol
from twisted.internet.interfaces import IProtocol, IProtocolFactory, IStreamClientEndpoint, ITransport
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.test import iosim
from zope.interface import implementer, providedBy
from zope.interface.verify import verifyObject

from garlicfarm.net.httpproxy import (
    MAX_REPLY_HEAD,
    HTTPConnectEndpoint,
    ProxyAuthenticationRequired,
    ProxyClosed,
    ProxyError,
    ProxyHeadTooLarge,
    ProxyProtocolError,
    ProxyRefused,
    ProxyTimeout,
    ProxyUnreachable,
)

TARGET = "xyz.b32.i2p"
PROXY_ADDRESS = IPv4Address("TCP", "127.0.0.1", 4444)
OK = b"HTTP/1.1 200 Connection established\r\n\r\n"


class Recorder(Protocol):
    """The caller's protocol: records what the tunnel gives it."""

    def __init__(self) -> None:
        self.data = b""
        self.made = 0
        self.lost: Failure | None = None

    def connectionMade(self) -> None:
        self.made += 1

    def dataReceived(self, data: bytes) -> None:
        self.data += data

    def connectionLost(self, reason: Failure = Failure(ConnectionDone())) -> None:  # noqa: B008
        self.lost = reason


@implementer(IStreamClientEndpoint)
class ScriptedProxy:
    """A proxy endpoint whose connection is a StringTransport; ``hold=True`` leaves connect pending."""

    def __init__(self, *, hold: bool = False, refuse: bool = False) -> None:
        self.transport = StringTransport(peerAddress=PROXY_ADDRESS)
        self.hold = hold
        self.refuse = refuse
        self.protocol: IProtocol | None = None
        self.pending: Deferred[IProtocol] | None = None
        self.cancelled = False

    def connect(self, protocolFactory: IProtocolFactory) -> Deferred[IProtocol]:  # noqa: N803
        if self.refuse:
            return fail(ConnectionRefusedError("127.0.0.1", 4444))
        protocol = protocolFactory.buildProtocol(PROXY_ADDRESS)
        assert protocol is not None
        self.protocol = protocol
        if self.hold:
            self.pending = Deferred(lambda _: setattr(self, "cancelled", True))
            return self.pending
        protocol.makeConnection(self.transport)
        return succeed(protocol)

    def finish_connecting(self) -> None:
        assert self.protocol is not None and self.pending is not None
        self.protocol.makeConnection(self.transport)
        self.pending.callback(self.protocol)

    def reply(self, *chunks: bytes) -> None:
        assert self.protocol is not None
        for chunk in chunks:
            self.protocol.dataReceived(chunk)

    def close(self, reason: Failure | None = None) -> None:
        assert self.protocol is not None
        self.protocol.connectionLost(reason or Failure(ConnectionDone()))

    @property
    def aborted(self) -> bool:
        return bool(self.transport.disconnecting)


def endpoint(proxy: IStreamClientEndpoint, clock: Clock, port: int = 0, **kwargs: Any) -> HTTPConnectEndpoint:
    return HTTPConnectEndpoint(proxy, TARGET, port, reactor=clock, **kwargs)


def result_of(d: Deferred[Any]) -> Any:
    results: list[Any] = []
    d.addBoth(results.append)
    assert results, "the Deferred has not fired"
    assert not isinstance(results[0], Failure), results[0].getTraceback()
    return results[0]


def failure_of(d: Deferred[Any], kind: type[BaseException]) -> BaseException:
    results: list[Any] = []
    d.addBoth(results.append)
    assert results, "the Deferred has not fired"
    assert isinstance(results[0], Failure), f"expected {kind.__name__}, got {results[0]!r}"
    assert results[0].check(kind), results[0].getTraceback()
    value = results[0].value
    assert value is not None
    return value


def connect(**kwargs: Any) -> tuple[ScriptedProxy, Clock, Deferred[IProtocol]]:
    proxy, clock = ScriptedProxy(), Clock()
    d = endpoint(proxy, clock, **kwargs).connect(Factory.forProtocol(Recorder))
    return proxy, clock, d


# -- the request -----------------------------------------------------------------------------------


def test_sends_connect_with_host_header() -> None:
    proxy, _, d = connect()
    assert proxy.transport.value() == b"CONNECT xyz.b32.i2p:0 HTTP/1.1\r\nHost: xyz.b32.i2p:0\r\n\r\n"
    assert not d.called


def test_sends_basic_proxy_authorization() -> None:
    proxy, _, _ = connect(port=9001, proxy_auth=("alice", "s3cret é"))
    token = base64.b64encode("alice:s3cret é".encode()).decode()
    head = proxy.transport.value().decode()
    assert head.startswith("CONNECT xyz.b32.i2p:9001 HTTP/1.1\r\n")
    assert f"\r\nProxy-Authorization: Basic {token}\r\n" in head


def test_ipv6_target_is_bracketed() -> None:
    proxy, clock = ScriptedProxy(), Clock()
    HTTPConnectEndpoint(proxy, "::1", 9001, reactor=clock).connect(Factory.forProtocol(Recorder))
    assert proxy.transport.value().startswith(b"CONNECT [::1]:9001 HTTP/1.1\r\nHost: [::1]:9001\r\n")


@pytest.mark.parametrize(
    ("host", "port", "auth", "timeout"),
    [
        ("", 0, None, 30.0),
        ("xyz.b32.i2p", 70000, None, 30.0),
        ("xyz.b32.i2p", -1, None, 30.0),
        ("bad host", 0, None, 30.0),
        ("bad\r\nhost", 0, None, 30.0),
        ("xyz.b32.i2p", 0, ("a:b", "pw"), 30.0),
        ("xyz.b32.i2p", 0, None, 0.0),
    ],
)
def test_bad_arguments_fail_at_construction(
    host: str, port: int, auth: tuple[str, str] | None, timeout: float
) -> None:
    with pytest.raises(ValueError, match="HTTPConnectEndpoint"):
        HTTPConnectEndpoint(ScriptedProxy(), host, port, proxy_auth=auth, timeout=timeout, reactor=Clock())


# -- the tunnel ------------------------------------------------------------------------------------


def test_leftover_in_the_same_chunk_as_the_head_goes_to_the_protocol() -> None:
    proxy, clock, d = connect()
    proxy.reply(OK + b"\x00\x01first bytes")
    protocol = result_of(d)
    assert isinstance(protocol, Recorder)
    assert protocol.made == 1
    assert protocol.data == b"\x00\x01first bytes"
    assert not clock.getDelayedCalls()  # the timeout is gone with the attempt


def test_reply_and_leftover_byte_by_byte() -> None:
    proxy, _, d = connect()
    reply = b"HTTP/1.1 200 OK\r\nProxy-Agent: test\r\n\r\nhello, farm"
    for i in range(len(reply)):
        proxy.reply(reply[i : i + 1])
    protocol = result_of(d)
    assert protocol.data == b"hello, farm"


def test_http_10_reply_is_accepted() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.0 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n")
    protocol = result_of(d)
    proxy.reply(b"later")
    assert protocol.data == b"later"


def test_informational_reply_before_the_answer_is_skipped() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 100 Continue\r\n\r\n", OK + b"x")
    assert result_of(d).data == b"x"


def test_a_large_leftover_after_a_small_head_is_not_a_large_head() -> None:
    proxy, _, d = connect()
    proxy.reply(OK + b"z" * (4 * MAX_REPLY_HEAD))
    assert result_of(d).data == b"z" * (4 * MAX_REPLY_HEAD)


def test_the_protocol_sees_a_normal_transport() -> None:
    proxy, _, d = connect(port=9001)
    proxy.reply(OK)
    protocol = result_of(d)
    transport = protocol.transport
    proxy.transport.clear()
    transport.write(b"ping")
    transport.writeSequence([b"a", b"b"])
    assert proxy.transport.value() == b"pingab"
    assert transport.getPeer() == HostnameAddress(b"xyz.b32.i2p", 9001)
    assert transport.getProxyPeer() == PROXY_ADDRESS
    assert transport.getHost() == proxy.transport.getHost()
    assert transport.producer is None  # anything else is the real transport's
    transport.loseConnection()
    assert proxy.transport.disconnecting


def test_connection_lost_reaches_the_protocol() -> None:
    proxy, _, d = connect()
    proxy.reply(OK)
    protocol = result_of(d)
    proxy.close(Failure(ConnectionLost("gone")))
    assert protocol.lost is not None and protocol.lost.check(ConnectionLost)


def test_factory_that_builds_no_protocol() -> None:
    proxy, clock = ScriptedProxy(), Clock()

    class Refusing(Factory):
        def buildProtocol(self, addr: object) -> None:
            return None

    d = endpoint(proxy, clock).connect(Refusing())
    proxy.reply(OK)
    failure_of(d, NoProtocol)
    assert proxy.aborted


def test_a_failing_connection_made_fails_the_deferred() -> None:
    class Broken(Protocol):
        def connectionMade(self) -> None:
            raise RuntimeError("no thanks")

    proxy, clock = ScriptedProxy(), Clock()
    d = endpoint(proxy, clock).connect(Factory.forProtocol(Broken))
    proxy.reply(OK)
    assert str(failure_of(d, RuntimeError)) == "no thanks"
    assert proxy.aborted


def test_interfaces_are_provided() -> None:
    proxy, clock, d = connect()
    verifyObject(IStreamClientEndpoint, HTTPConnectEndpoint(proxy, TARGET, 0, reactor=clock))
    proxy.reply(OK)
    transport = result_of(d).transport
    verifyObject(ITransport, transport)
    assert set(providedBy(proxy.transport)) <= set(providedBy(transport))


def test_through_iosim_both_ways() -> None:
    """A proxy server protocol on the other end of an in-memory connection: answers, then echoes."""

    class EchoingProxy(Protocol):
        head = b""

        def dataReceived(self, data: bytes) -> None:
            assert self.transport is not None
            if b"\r\n\r\n" not in self.head:
                self.head += data
                if b"\r\n\r\n" in self.head:
                    head, rest = self.head.split(b"\r\n\r\n", 1)
                    assert head.startswith(b"CONNECT xyz.b32.i2p:0 HTTP/1.1\r\n")
                    self.transport.write(OK + b"welcome")
                    if rest:
                        self.transport.write(rest)
                return
            self.transport.write(data)

    pumps: list[iosim.IOPump] = []

    @implementer(IStreamClientEndpoint)
    class InMemory:
        def connect(self, protocolFactory: IProtocolFactory) -> Deferred[IProtocol]:  # noqa: N803
            client = protocolFactory.buildProtocol(PROXY_ADDRESS)
            assert client is not None
            server = EchoingProxy()
            pumps.append(
                iosim.connect(
                    server, iosim.FakeTransport(server, True), client, iosim.FakeTransport(client, False)
                )
            )
            return succeed(client)

    d = HTTPConnectEndpoint(InMemory(), TARGET, 0, reactor=Clock()).connect(Factory.forProtocol(Recorder))
    pumps[0].flush()
    protocol = result_of(d)
    protocol.transport.write(b"ping")
    pumps[0].flush()
    assert protocol.data == b"welcomeping"
    protocol.transport.loseConnection()
    pumps[0].flush()
    assert protocol.lost is not None


# -- refusals and broken proxies -------------------------------------------------------------------


def test_403_names_the_proxy_status_and_target() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    error = failure_of(d, ProxyRefused)
    assert str(error) == "HTTP proxy 127.0.0.1:4444 refused CONNECT to xyz.b32.i2p:0: 403 Forbidden"
    assert isinstance(error, ProxyRefused) and error.status_code == 403 and error.reason == "Forbidden"
    assert not isinstance(error, ProxyAuthenticationRequired)
    assert proxy.aborted


def test_502_from_an_http_10_proxy_with_a_body() -> None:
    proxy, _, d = connect(port=9001)
    proxy.reply(b"HTTP/1.0 502 Bad Gateway\r\nContent-Type: text/html\r\n\r\n<html>no route</html>")
    error = failure_of(d, ProxyRefused)
    assert str(error) == "HTTP proxy 127.0.0.1:4444 refused CONNECT to xyz.b32.i2p:9001: 502 Bad Gateway"


def test_407_without_credentials_says_the_proxy_wants_them() -> None:
    proxy, _, d = connect()
    proxy.reply(b'HTTP/1.0 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="x"\r\n\r\n')
    error = failure_of(d, ProxyAuthenticationRequired)
    assert str(error) == (
        "HTTP proxy 127.0.0.1:4444 requires authentication for CONNECT to xyz.b32.i2p:0 "
        "(407 Proxy Authentication Required); no credentials were given (proxyUser= and proxyPasswordFile=)"
    )
    assert isinstance(error, ProxyRefused) and error.status_code == 407


def test_407_with_credentials_says_they_were_rejected() -> None:
    proxy, _, d = connect(proxy_auth=("alice", "wrong"))
    proxy.reply(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
    error = failure_of(d, ProxyAuthenticationRequired)
    assert "rejected the credentials of user 'alice'" in str(error)
    assert "wrong" not in str(error)


def test_401_as_tinyproxy_answers_wrong_credentials() -> None:
    proxy, _, d = connect(proxy_auth=("alice", "wrong"))
    proxy.reply(b"HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n\r\n")
    error = failure_of(d, ProxyAuthenticationRequired)
    assert str(error) == (
        "HTTP proxy 127.0.0.1:4444 rejected the credentials of user 'alice' "
        "for CONNECT to xyz.b32.i2p:0 (401 Unauthorized)"
    )


def test_proxy_closes_mid_reply() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 200 Conn")
    assert not d.called
    proxy.close()
    error = failure_of(d, ProxyClosed)
    assert str(error) == (
        "HTTP proxy 127.0.0.1:4444 closed the connection before answering CONNECT to xyz.b32.i2p:0 "
        "(17 bytes of an incomplete reply)"
    )


def test_proxy_closes_without_a_word() -> None:
    proxy, _, d = connect()
    proxy.close()
    assert str(failure_of(d, ProxyClosed)).endswith("before answering CONNECT to xyz.b32.i2p:0")


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x01\x02garbage\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
        b"HTTP/1.1 2OO OK\r\n\r\n",
        b"HTTP/9 200\r\n\r\n",
    ],
)
def test_garbage_reply(garbage: bytes) -> None:
    proxy, _, d = connect()
    proxy.reply(garbage)
    error = failure_of(d, ProxyProtocolError)
    assert str(error).startswith(
        "HTTP proxy 127.0.0.1:4444 sent a reply to CONNECT to xyz.b32.i2p:0 that is not HTTP"
    )
    assert proxy.aborted
    proxy.reply(b"more garbage")  # ignored: the attempt is over


def test_oversized_head() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 200 OK\r\n")
    for _ in range(MAX_REPLY_HEAD // 64 + 1):
        proxy.reply(b"X-Padding: " + b"p" * 51 + b"\r\n")
    error = failure_of(d, ProxyHeadTooLarge)
    assert str(error) == (
        f"HTTP proxy 127.0.0.1:4444 sent a reply head over {MAX_REPLY_HEAD} bytes to CONNECT to xyz.b32.i2p:0"
    )
    assert isinstance(error, ProxyProtocolError)
    assert proxy.aborted


# -- time, cancellation, an absent proxy -----------------------------------------------------------


def test_timeout_waiting_for_the_reply() -> None:
    proxy, clock, d = connect(timeout=5)
    clock.advance(4.9)
    assert not d.called
    clock.advance(0.1)
    error = failure_of(d, ProxyTimeout)
    assert str(error) == "HTTP proxy 127.0.0.1:4444 did not answer CONNECT to xyz.b32.i2p:0 within 5 s"
    assert proxy.aborted
    proxy.reply(OK)  # too late: ignored
    proxy.close()


def test_timeout_connecting_to_the_proxy() -> None:
    proxy, clock = ScriptedProxy(hold=True), Clock()
    d = endpoint(proxy, clock, timeout=2.5).connect(Factory.forProtocol(Recorder))
    clock.advance(2.5)
    error = failure_of(d, ProxyTimeout)
    assert (
        str(error)
        == "could not connect to HTTP proxy (ScriptedProxy) for CONNECT to xyz.b32.i2p:0 within 2.5 s"
    )
    assert proxy.cancelled


def test_cancel_while_connecting_to_the_proxy() -> None:
    proxy, clock = ScriptedProxy(hold=True), Clock()
    d = endpoint(proxy, clock).connect(Factory.forProtocol(Recorder))
    d.cancel()
    failure_of(d, CancelledError)
    assert proxy.cancelled
    assert not clock.getDelayedCalls()


def test_cancel_while_waiting_for_the_reply() -> None:
    proxy, clock, d = connect()
    d.cancel()
    failure_of(d, CancelledError)
    assert proxy.aborted
    assert not clock.getDelayedCalls()
    proxy.reply(OK + b"late")  # the connection is going away; nothing is delivered
    proxy.close()


def test_proxy_connection_made_after_a_cancel_is_dropped() -> None:
    """An endpoint whose connect cannot be cancelled may still connect: the tunnel closes at once."""
    proxy, clock = ScriptedProxy(hold=True), Clock()
    d = endpoint(proxy, clock).connect(Factory.forProtocol(Recorder))
    d.cancel()
    failure_of(d, CancelledError)
    proxy.protocol.makeConnection(proxy.transport)  # type: ignore[union-attr]
    assert proxy.transport.value() == b""
    assert proxy.transport.disconnecting


def test_proxy_unreachable() -> None:
    d = endpoint(ScriptedProxy(refuse=True), Clock()).connect(Factory.forProtocol(Recorder))
    error = failure_of(d, ProxyUnreachable)
    assert str(error).startswith(
        "could not connect to HTTP proxy (ScriptedProxy) for CONNECT to xyz.b32.i2p:0: "
    )
    assert "Connection was refused" in str(error)
    assert isinstance(error.__cause__, ConnectionRefusedError)


def test_every_failure_is_a_proxy_error() -> None:
    for kind in (ProxyRefused, ProxyAuthenticationRequired, ProxyClosed, ProxyProtocolError, ProxyTimeout):
        assert issubclass(kind, ProxyError)


def test_endpoint_names_the_proxy_from_twisted_tcp_endpoints() -> None:
    from twisted.internet.endpoints import TCP4ClientEndpoint
    from twisted.internet.testing import MemoryReactorClock

    reactor = MemoryReactorClock()
    ep = HTTPConnectEndpoint(TCP4ClientEndpoint(reactor, "127.0.0.1", 4444), TARGET, 0, reactor=reactor)
    d = ep.connect(Factory.forProtocol(Recorder))
    assert reactor.tcpClients[0][:2] == ("127.0.0.1", 4444)
    reactor.advance(30)
    assert "HTTP proxy 127.0.0.1:4444 for CONNECT" in str(failure_of(d, ProxyTimeout))
    assert repr(ep) == "<HTTPConnectEndpoint xyz.b32.i2p:0 via 127.0.0.1:4444>"


# -- bounds and details ----------------------------------------------------------------------------


def test_port_65535_and_a_short_timeout_are_taken_65536_is_not() -> None:
    HTTPConnectEndpoint(ScriptedProxy(), TARGET, 65535, timeout=0.5, reactor=Clock())
    with pytest.raises(ValueError, match="HTTPConnectEndpoint"):
        HTTPConnectEndpoint(ScriptedProxy(), TARGET, 65536, reactor=Clock())


def test_an_informational_reply_and_the_answer_in_one_read() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"x")
    assert result_of(d).data == b"x"


def test_a_reason_phrase_that_is_not_ascii_is_reported_not_raised() -> None:
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 403 F\xc3\xb6rbidden\r\nContent-Length: 0\r\n\r\n")
    error = failure_of(d, ProxyRefused)
    assert isinstance(error, ProxyRefused) and error.reason == "F\ufffd\ufffdrbidden"


def test_what_a_broken_proxy_said_is_cut_at_200_characters() -> None:
    lengths = set()
    for pad in range(120, 220):  # each x one more character of h11's account: every length passes by
        proxy, _, d = connect()
        proxy.reply(b"HTTP/1.1 2OO " + b"x" * pad + b"\r\n\r\n")
        error = failure_of(d, ProxyProtocolError)
        what = str(error).split("that is not HTTP: ", 1)[1]
        assert (len(what) <= 200) if not what.endswith("...") else (len(what) == 203)
        lengths.add(len(what))
        assert isinstance(error, ProxyError) and error.proxy == "127.0.0.1:4444"
        assert error.target == "xyz.b32.i2p:0"
    assert {199, 200, 203} <= lengths  # both sides of the cut were seen


# -- what an operator and a caller see (kills of the mutation run) ---------------------------------


class RecordingTransport(StringTransport):
    """Tells an abort (buffered bytes dropped at once) from a graceful close, and counts aborts."""

    def __init__(self) -> None:
        super().__init__(peerAddress=PROXY_ADDRESS)
        self.aborts = 0

    def abortConnection(self) -> None:
        self.aborts += 1
        super().abortConnection()


class CloseOnlyTransport(StringTransport):
    """A transport without abortConnection (ITransport does not promise one)."""

    def __getattribute__(self, name: str) -> Any:
        if name == "abortConnection":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_the_messages_of_bad_arguments_are_exact() -> None:
    """The construction errors name the endpoint class and the problem, nothing more."""
    with pytest.raises(ValueError, match=r"^HTTPConnectEndpoint: host must not be empty$"):
        HTTPConnectEndpoint(ScriptedProxy(), "", 0, reactor=Clock())
    with pytest.raises(ValueError, match=r"^HTTPConnectEndpoint: a Basic-auth user name cannot contain ':'$"):
        HTTPConnectEndpoint(ScriptedProxy(), TARGET, 0, proxy_auth=("a:b", "pw"), reactor=Clock())


def test_without_a_reactor_the_global_one_times_the_attempt() -> None:
    """No reactor given: the attempt's timeout is scheduled on Twisted's global reactor."""
    from twisted.internet import reactor

    before = set(reactor.getDelayedCalls())
    d = HTTPConnectEndpoint(ScriptedProxy(hold=True), TARGET, 0, timeout=7).connect(
        Factory.forProtocol(Recorder)
    )
    [timer] = set(reactor.getDelayedCalls()) - before
    assert timer.getTime() - reactor.seconds() == pytest.approx(7, abs=1)
    d.cancel()
    failure_of(d, CancelledError)
    assert not timer.active()


def test_repr_without_a_proxy_name_says_no_via() -> None:
    """A proxy endpoint that does not name its host and port leaves ``via`` out of the repr."""
    assert repr(endpoint(ScriptedProxy(), Clock())) == "<HTTPConnectEndpoint xyz.b32.i2p:0>"


def test_an_endpoint_naming_only_its_host_is_named_by_its_peer() -> None:
    """Both ``_host`` and an int ``_port`` are needed to name the proxy as configured; with a host alone
    the error names the address the proxy connection reached."""
    proxy = ScriptedProxy()
    proxy._host = "proxy.lan"  # type: ignore[attr-defined]
    ep = endpoint(proxy, Clock())
    assert repr(ep) == "<HTTPConnectEndpoint xyz.b32.i2p:0>"
    d = ep.connect(Factory.forProtocol(Recorder))
    proxy.reply(b"HTTP/1.1 403 Forbidden\r\n\r\n")
    assert str(failure_of(d, ProxyRefused)).startswith("HTTP proxy 127.0.0.1:4444 refused")


def test_a_proxy_reached_over_a_unix_socket_is_named_by_its_address() -> None:
    """A peer address that is not IP is named by its str()."""
    from twisted.internet.address import UNIXAddress

    proxy = ScriptedProxy()
    proxy.transport = StringTransport(peerAddress=UNIXAddress(b"/run/i2p/http.sock"))
    d = endpoint(proxy, Clock()).connect(Factory.forProtocol(Recorder))
    proxy.reply(b"HTTP/1.1 403 Forbidden\r\n\r\n")
    error = failure_of(d, ProxyRefused)
    name = str(UNIXAddress(b"/run/i2p/http.sock"))
    assert str(error) == f"HTTP proxy {name} refused CONNECT to xyz.b32.i2p:0: 403 Forbidden"
    assert isinstance(error, ProxyError) and error.proxy == name


def test_the_callers_factory_is_given_the_target_address() -> None:
    """buildProtocol gets the address the caller asked for, as a HostnameAddress, not the proxy's."""
    addresses: list[object] = []

    class Noting(Factory):
        def buildProtocol(self, addr: Any) -> Protocol:
            addresses.append(addr)
            return Recorder()

    proxy = ScriptedProxy()
    d = endpoint(proxy, Clock(), port=9001).connect(Noting())
    proxy.reply(OK)
    result_of(d)
    assert addresses == [HostnameAddress(b"xyz.b32.i2p", 9001)]


def test_a_failed_attempt_aborts_the_proxy_connection() -> None:
    """A refusal aborts the proxy connection (nothing more is waited for), once."""
    proxy = ScriptedProxy()
    proxy.transport = RecordingTransport()
    d = endpoint(proxy, Clock()).connect(Factory.forProtocol(Recorder))
    proxy.reply(b"HTTP/1.1 403 Forbidden\r\n\r\n")
    failure_of(d, ProxyRefused)
    assert proxy.transport.aborts == 1 and proxy.transport.disconnected


def test_a_proxy_connection_without_abort_is_closed() -> None:
    """A transport without abortConnection is closed with loseConnection."""
    proxy = ScriptedProxy()
    proxy.transport = CloseOnlyTransport(peerAddress=PROXY_ADDRESS)
    d = endpoint(proxy, Clock()).connect(Factory.forProtocol(Recorder))
    proxy.reply(b"HTTP/1.1 403 Forbidden\r\n\r\n")
    failure_of(d, ProxyRefused)
    assert proxy.transport.disconnecting


def test_a_proxy_that_closed_is_not_aborted_again() -> None:
    """The proxy closing before its answer fails the attempt without touching the lost connection."""
    proxy = ScriptedProxy()
    proxy.transport = RecordingTransport()
    d = endpoint(proxy, Clock()).connect(Factory.forProtocol(Recorder))
    proxy.close()
    failure_of(d, ProxyClosed)
    assert proxy.transport.aborts == 0


def test_an_incomplete_reply_counts_every_chunk() -> None:
    """The byte count of an incomplete reply is the sum over all the chunks received."""
    proxy, _, d = connect()
    proxy.reply(b"HTTP/1.1 ", b"200 ", b"Conn")
    proxy.close()
    assert str(failure_of(d, ProxyClosed)).endswith("(17 bytes of an incomplete reply)")


def test_every_failure_names_its_proxy_and_target() -> None:
    """``.proxy`` and ``.target`` of a timeout, a closed proxy and an oversized head."""
    proxy, clock, d = connect(port=9001, timeout=5)
    clock.advance(5)
    timeout = failure_of(d, ProxyTimeout)
    proxy, _, d = connect(port=9001)
    proxy.close()
    closed = failure_of(d, ProxyClosed)
    proxy, _, d = connect(port=9001)
    proxy.reply(b"HTTP/1.1 200 OK\r\nX-Padding: " + b"p" * MAX_REPLY_HEAD)
    too_large = failure_of(d, ProxyHeadTooLarge)
    for error in (timeout, closed, too_large):
        assert isinstance(error, ProxyError)
        assert (error.proxy, error.target) == ("127.0.0.1:4444", "xyz.b32.i2p:9001")
