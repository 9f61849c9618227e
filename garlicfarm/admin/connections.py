"""The console's connection limits: a cap on open connections, and a deadline for each request.

twisted.web alone has neither: its idle timeout starts over on every byte, so a client that sends one
byte a second keeps a connection (and its buffers) forever, and nothing caps how many it opens. Here
each connection must deliver a whole request (head and body) within ``request_deadline`` seconds of
connecting or of its previous answer, whatever it sends in between; while the site works on an answer
the deadline is off (an action may wait for a commit).

At the cap, a new connection pushes out the oldest one that owes a request (idle, or sending one), so
slow or idle clients cannot keep an operator out; only when every connection waits for an answer is the
new one closed. Refusals, evictions and expiries are logged rate-limited.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.interfaces import (
    IAddress,
    IDelayedCall,
    IProtocolNegotiationFactory,
    IReactorTime,
    ITransport,
)
from twisted.internet.protocol import Protocol, connectionDone
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory
from twisted.python.failure import Failure
from twisted.web import server
from zope.interface import implementer

from garlicfarm.net.budget import CloseAtOnce, RateLimitedLog


class RequestDeadline(ProtocolWrapper):
    """One console connection: the HTTP channel it wraps tells it when a request is in and answered."""

    factory: LimitedSite

    def __init__(self, factory: LimitedSite, wrapped: Any) -> None:
        super().__init__(factory, wrapped)
        self._timer: IDelayedCall | None = None

    def makeConnection(self, transport: ITransport) -> None:
        super().makeConnection(transport)  # type: ignore[no-untyped-call]
        self.request_done()

    @property
    def owes_request(self) -> bool:
        """The client owes us a request (the site owes it nothing)."""
        return self._timer is not None and self._timer.active()

    def request_received(self) -> None:
        """A whole request is in: the site owes the answer, the client owes nothing."""
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def request_done(self) -> None:
        """An answer is out (or the connection is new): the next request must come in time."""
        self.request_received()
        if self.disconnecting or not self.connected:
            return
        self._timer = self.factory.clock.callLater(self.factory.request_deadline, self._expire)

    def _expire(self) -> None:
        self._timer = None
        peer = self.getPeer()  # type: ignore[no-untyped-call]
        self.factory.events.event(
            "deadline",
            "admin console: closed a connection from {peer}: no whole request within {deadline:g} s",
            peer=str(getattr(peer, "host", peer)),
            deadline=self.factory.request_deadline,
        )
        self.transport.abortConnection()  # type: ignore[union-attr]

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self.connected = False  # Twisted leaves it set; an answer finished later must set no deadline
        self.request_received()
        super().connectionLost(reason)  # type: ignore[no-untyped-call]


@implementer(IProtocolNegotiationFactory)
class LimitedSite(WrappingFactory[RequestDeadline]):
    """Wraps the console's :class:`~twisted.web.server.Site` with a connection cap and request deadlines."""

    protocol = RequestDeadline

    def __init__(
        self,
        site: server.Site,
        clock: IReactorTime,
        events: RateLimitedLog,
        *,
        max_connections: int,
        request_deadline: float,
    ) -> None:
        super().__init__(site)  # type: ignore[no-untyped-call]
        self.clock = clock
        self.max_connections = max_connections
        self.request_deadline = request_deadline
        self.events = events

    def acceptableProtocols(self) -> list[bytes]:
        """ALPN under TLS: HTTP/1.1 only. Without an answer here OpenSSL fails every handshake whose
        client offers ALPN (browsers do); HTTP/2 would bypass the request deadlines."""
        return [b"http/1.1"]

    @property
    def open(self) -> int:
        return len(self.protocols)

    def buildProtocol(self, addr: IAddress | None) -> Protocol:  # type: ignore[override] # a refusal is no wrapper
        if len(self.protocols) >= self.max_connections:
            idle = next((p for p in self.protocols if p.owes_request), None)
            if idle is None:
                self.events.event(
                    "cap",
                    "admin console: refused a connection from {peer}: "
                    "{n} connections are open (the cap), all waiting for answers",
                    peer=str(getattr(addr, "host", addr)),
                    n=len(self.protocols),
                )
                return CloseAtOnce()
            self.unregisterProtocol(idle)
            peer = idle.getPeer()
            self.events.event(
                "evicted",
                "admin console: closed a connection from {peer} that owed a request: "
                "{n} connections are open (the cap; the oldest goes first)",
                peer=str(getattr(peer, "host", peer)),
                n=self.max_connections,
            )
            idle.transport.abortConnection()
        protocol: Protocol = super().buildProtocol(addr)
        return protocol

    def unregisterProtocol(self, p: RequestDeadline) -> None:
        self.protocols.pop(p, None)  # an evicted connection leaves the count before it is gone

    def stopFactory(self) -> None:
        self.events.stop()
        super().stopFactory()  # type: ignore[no-untyped-call]


def _wrapper(request: server.Request) -> RequestDeadline | None:
    channel = getattr(request, "channel", None)
    transport = getattr(channel, "transport", None)
    return transport if isinstance(transport, RequestDeadline) else None


def request_received(request: server.Request) -> None:
    if (wrapper := _wrapper(request)) is not None:
        wrapper.request_received()


def request_done(request: server.Request) -> None:
    if (wrapper := _wrapper(request)) is not None:
        wrapper.request_done()
