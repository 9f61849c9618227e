"""A Twisted client endpoint that tunnels through an HTTP proxy with ``CONNECT host:port``.

This is how a peer on I2P is reached: the I2P router's HTTP proxy (127.0.0.1:4444 by default) opens a
stream to ``dest.b32.i2p`` once asked ``CONNECT dest.b32.i2p:0 HTTP/1.1``. The proxy's reply is read with
h11, which knows that a 2xx answer to CONNECT switches protocols and hands back the bytes that followed
the head: those already belong to the tunnelled protocol.
"""

from __future__ import annotations

import base64
from typing import Any

import h11
from twisted.internet.address import HostnameAddress, IPv4Address, IPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.error import NoProtocol
from twisted.internet.interfaces import (
    IAddress,
    IDelayedCall,
    IProtocol,
    IProtocolFactory,
    IReactorTime,
    IStreamClientEndpoint,
)
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from garlicfarm.net.httpproxy_errors import (
    ProxyAuthenticationRequired,
    ProxyClosed,
    ProxyError,
    ProxyHeadTooLarge,
    ProxyProtocolError,
    ProxyRefused,
    ProxyTimeout,
    ProxyUnreachable,
)
from garlicfarm.net.httpproxy_transport import TunnelTransport

__all__ = [
    "MAX_REPLY_HEAD",
    "HTTPConnectEndpoint",
    "ProxyAuthenticationRequired",
    "ProxyClosed",
    "ProxyError",
    "ProxyHeadTooLarge",
    "ProxyProtocolError",
    "ProxyRefused",
    "ProxyTimeout",
    "ProxyUnreachable",
]

log = Logger()

# A proxy's reply head is a status line and a few headers; anything longer is not a proxy we trust.
MAX_REPLY_HEAD = 8192


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _endpoint_name(endpoint: IStreamClientEndpoint) -> str | None:
    # Twisted's TCP and Hostname endpoints keep what they were given in these (private) attributes;
    # naming the proxy as configured tells an operator which setting to check.
    host = getattr(endpoint, "_hostText", None) or getattr(endpoint, "_host", None)
    port = getattr(endpoint, "_port", None)
    return _host_port(host, port) if isinstance(host, str) and isinstance(port, int) else None


def _describe(address: IAddress) -> str:
    if isinstance(address, IPv4Address | IPv6Address):
        return _host_port(address.host, address.port)
    return str(address)


@implementer(IStreamClientEndpoint)
class HTTPConnectEndpoint:
    """Connect to ``host:port`` through the HTTP proxy reached by the ``proxy`` endpoint.

    ``connect`` fires with the caller's protocol once the proxy has answered 2xx, or fails with a
    :class:`ProxyError` subclass; ``timeout`` bounds the whole attempt, proxy connection included.
    Once connected, the protocol's ``transport.getPeer()`` is ``HostnameAddress(host, port)``.
    """

    def __init__(
        self,
        proxy: IStreamClientEndpoint,
        host: str,
        port: int,
        proxy_auth: tuple[str, str] | None = None,
        timeout: float = 30.0,
        reactor: IReactorTime | None = None,
    ) -> None:
        if not host:
            raise ValueError("HTTPConnectEndpoint: host must not be empty")
        if not 0 <= port <= 65535:
            raise ValueError(f"HTTPConnectEndpoint: port {port} is out of range 0-65535")
        if not timeout > 0:
            raise ValueError(f"HTTPConnectEndpoint: timeout must be positive, not {timeout}")
        if reactor is None:
            from twisted.internet import reactor as global_reactor  # noqa: PLC0415 - only when none given

            reactor = global_reactor
        self._proxy = proxy
        self._host = host
        self._port = port
        self._target = _host_port(host, port)
        self._user = proxy_auth[0] if proxy_auth else None
        self._timeout = timeout
        self._reactor = reactor
        self._proxy_name = _endpoint_name(proxy)
        # Built now so that a bad host or credential fails here, not on every connect.
        self._request = _connect_request(self._target, proxy_auth)

    def __repr__(self) -> str:
        via = f" via {self._proxy_name}" if self._proxy_name else ""
        return f"<HTTPConnectEndpoint {self._target}{via}>"

    def connect(self, protocolFactory: IProtocolFactory) -> Deferred[IProtocol]:  # noqa: N803 - Twisted's name
        return _Attempt(self, protocolFactory).result


def _connect_request(target: str, proxy_auth: tuple[str, str] | None) -> h11.Request:
    headers = [("Host", target)]
    if proxy_auth is not None:
        user, password = proxy_auth
        if ":" in user:
            raise ValueError("HTTPConnectEndpoint: a Basic-auth user name cannot contain ':'")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers.append(("Proxy-Authorization", f"Basic {token}"))
    try:
        return h11.Request(method="CONNECT", target=target, headers=headers)
    except (h11.LocalProtocolError, UnicodeError) as e:
        raise ValueError(f"HTTPConnectEndpoint: cannot send CONNECT to {target!r}: {e}") from None


class _Attempt:
    """One ``connect`` call: owns the result Deferred, the timeout and the way to abort."""

    def __init__(self, endpoint: HTTPConnectEndpoint, factory: IProtocolFactory) -> None:
        self.endpoint = endpoint
        self.proxy = endpoint._proxy_name or f"({type(endpoint._proxy).__name__})"
        self.done = False
        self._tunnel: _TunnelProtocol | None = None
        self.result: Deferred[IProtocol] = Deferred(self._cancel)
        self._timer: IDelayedCall = endpoint._reactor.callLater(endpoint._timeout, self._time_out)
        self._connecting = endpoint._proxy.connect(_TunnelFactory(self, factory))
        self._connecting.addErrback(self._proxy_failed)

    def proxy_connected(self, tunnel: _TunnelProtocol) -> None:
        self._tunnel = tunnel
        if self.endpoint._proxy_name is None:
            assert tunnel.transport is not None
            self.proxy = _describe(tunnel.transport.getPeer())

    def succeed(self, protocol: IProtocol) -> None:
        if self._finish():
            log.debug(
                "CONNECT tunnel to {target} through {proxy} is up",
                target=self.endpoint._target,
                proxy=self.proxy,
            )
            self.result.callback(protocol)

    def fail(self, error: BaseException | Failure) -> None:
        if self._finish():
            failure = error if isinstance(error, Failure) else Failure(error)
            log.debug(
                "CONNECT to {target} failed: {error}", target=self.endpoint._target, error=failure.value
            )
            self._abort()
            self.result.errback(failure)

    def _finish(self) -> bool:
        """Mark the attempt over; False if it already was (every way out goes through here once)."""
        if self.done:
            return False
        self.done = True
        if self._timer.active():
            self._timer.cancel()
        return True

    def _abort(self) -> None:
        if self._tunnel is None:
            self._connecting.cancel()
        elif not self._tunnel.closed and self._tunnel.transport is not None:
            transport = self._tunnel.transport
            getattr(transport, "abortConnection", transport.loseConnection)()

    def _cancel(self, _: Deferred[IProtocol]) -> None:
        # Deferred.cancel then fails self.result with CancelledError.
        if self._finish():
            self._abort()

    def _time_out(self) -> None:
        target = self.endpoint._target
        within = f"within {self.endpoint._timeout:g} s"
        if self._tunnel is None:
            message = f"could not connect to HTTP proxy {self.proxy} for CONNECT to {target} {within}"
        else:
            message = f"HTTP proxy {self.proxy} did not answer CONNECT to {target} {within}"
        self.fail(ProxyTimeout(message, proxy=self.proxy, target=target))

    def _proxy_failed(self, failure: Failure) -> None:
        if not self.done:
            error = ProxyUnreachable(
                proxy=self.proxy, target=self.endpoint._target, why=failure.getErrorMessage()
            )
            error.__cause__ = failure.value
            self.fail(error)


class _TunnelFactory(Factory):
    def __init__(self, attempt: _Attempt, wrapped: IProtocolFactory) -> None:
        self._attempt = attempt
        self._wrapped = wrapped

    def doStart(self) -> None:
        self._wrapped.doStart()

    def doStop(self) -> None:
        self._wrapped.doStop()

    def buildProtocol(self, addr: IAddress | None) -> _TunnelProtocol:
        return _TunnelProtocol(self._attempt, self._wrapped)


class _TunnelProtocol(Protocol):
    """Speaks CONNECT to the proxy, then relays between the proxy connection and the caller's protocol."""

    def __init__(self, attempt: _Attempt, factory: IProtocolFactory) -> None:
        self._attempt = attempt
        self._factory = factory
        self._http = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_REPLY_HEAD)
        self._received = 0
        self._wrapped: IProtocol | None = None
        self.closed = False

    def connectionMade(self) -> None:
        assert self.transport is not None
        self._attempt.proxy_connected(self)
        if self._attempt.done:  # timed out or cancelled while the proxy connection was being made
            self.transport.loseConnection()
            return
        for event in (self._attempt.endpoint._request, h11.EndOfMessage()):
            self.transport.write(self._http.send(event) or b"")

    def dataReceived(self, data: bytes) -> None:
        if self._wrapped is not None:
            self._wrapped.dataReceived(data)
            return
        if self._attempt.done:
            return  # failed or cancelled; the connection is being aborted
        self._received += len(data)
        self._http.receive_data(data)
        try:
            self._read_reply()
        except h11.RemoteProtocolError as e:
            self._attempt.fail(self._bad_reply(e))

    def _read_reply(self) -> None:
        while True:
            event = self._http.next_event()
            if event is h11.NEED_DATA:
                return
            if isinstance(event, h11.InformationalResponse):
                continue  # e.g. "100 Continue" before the real answer
            if not isinstance(event, h11.Response):
                raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before the reply")
            if self._http.their_state is h11.SWITCHED_PROTOCOL:  # h11 does this on a 2xx to CONNECT
                leftover, _closed = self._http.trailing_data
                self._open_tunnel(leftover)
            else:
                self._attempt.fail(self._refused(event))
            return

    def _open_tunnel(self, leftover: bytes) -> None:
        assert self.transport is not None
        endpoint = self._attempt.endpoint
        peer = HostnameAddress(endpoint._host.encode("ascii"), endpoint._port)
        wrapped = self._factory.buildProtocol(peer)
        if wrapped is None:
            self._attempt.fail(NoProtocol())
            return
        self._wrapped = wrapped
        try:
            wrapped.makeConnection(TunnelTransport(self.transport, peer))
        except Exception:  # the caller's connectionMade failed: say so now, not at the timeout
            self._attempt.fail(Failure())
            return
        self._attempt.succeed(wrapped)
        if leftover:
            wrapped.dataReceived(leftover)

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self.closed = True
        if self._wrapped is not None:
            wrapped, self._wrapped = self._wrapped, None
            wrapped.connectionLost(reason)
            return
        proxy, target = self._attempt.proxy, self._attempt.endpoint._target
        partial = f" ({self._received} bytes of an incomplete reply)" if self._received else ""
        message = f"HTTP proxy {proxy} closed the connection before answering CONNECT to {target}{partial}"
        self._attempt.fail(ProxyClosed(message, proxy=proxy, target=target))

    def _refused(self, response: h11.Response) -> ProxyRefused:
        attempt = self._attempt
        details: dict[str, Any] = {
            "proxy": attempt.proxy,
            "target": attempt.endpoint._target,
            "status_code": response.status_code,
            "reason": response.reason.decode("ascii", "replace"),
        }
        # 407 is the standard answer; tinyproxy answers wrong credentials with 401.
        if response.status_code in (401, 407):
            return ProxyAuthenticationRequired(user=attempt.endpoint._user, **details)
        return ProxyRefused(**details)

    def _bad_reply(self, error: h11.RemoteProtocolError) -> ProxyProtocolError:
        proxy, target = self._attempt.proxy, self._attempt.endpoint._target
        if error.error_status_hint == 431:  # h11's "Receive buffer too long"
            message = (
                f"HTTP proxy {proxy} sent a reply head over {MAX_REPLY_HEAD} bytes to CONNECT to {target}"
            )
            return ProxyHeadTooLarge(message, proxy=proxy, target=target)
        what = str(error)
        what = what if len(what) <= 200 else what[:200] + "..."
        message = f"HTTP proxy {proxy} sent a reply to CONNECT to {target} that is not HTTP: {what}"
        return ProxyProtocolError(message, proxy=proxy, target=target)
