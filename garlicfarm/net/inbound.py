"""Admission of inbound connections: two budgets, so that strangers can never starve the farm.

- **Unauthenticated** connections (TCP accepted, TLS and the HTTP upgrade not yet done) get a small
  budget (``max_unauthenticated``) and the handshake deadline. When it is full, a new connection
  pushes out the *oldest* unauthenticated one: a real peer finishes its handshake in a few round trips,
  so a flood of idle or slow connections cannot keep it out (refusing the newest instead would hand the
  whole budget to whoever connected first). The one pushed out comes from the address that holds the
  most unauthenticated connections, so a flood from one address pushes out its own connections first.
  Connections that finished TLS (under mutual TLS: they hold a certificate the farm trusts) go last:
  strangers only push out strangers.
- **Authenticated** connections (the Digest handshake succeeded) move to their own budget
  (``max_authenticated``); when it is full, a newly authenticated connection is closed.

Every refusal closes the connection at once and is counted in one rate-limited log line, as are TLS
handshake failures (no or a bad client certificate) and handshake timeouts. Partly received messages
of all connections share one :class:`~garlicfarm.net.budget.BufferBudget`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from twisted.internet.interfaces import IAddress, IProtocolNegotiationFactory, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from zope.interface import implementer

from garlicfarm.net.budget import BufferBudget, RateLimitedLog
from garlicfarm.net.connection import ServerConnection
from garlicfarm.net.refusals import RefusalCounts

MiB = 1024 * 1024


@implementer(IProtocolNegotiationFactory)
class InboundFactory(Factory):
    """Builds a :class:`ServerConnection` per accepted connection, within the budgets above."""

    log = Logger()
    noisy = False  # the service logs where it listens; "Starting factory <object at 0x...>" says less

    def __init__(
        self,
        make: Callable[[InboundFactory], ServerConnection],
        max_connections: int,
        clock: IReactorTime,
        *,
        max_unauthenticated: int = 64,
        max_buffered: int = 64 * MiB,
        log_interval: float = 10.0,
    ) -> None:
        self._make = make
        self.clock = clock
        self.max_connections = max_connections
        self.max_unauthenticated = max_unauthenticated
        #: connections still authenticating, oldest first (dicts keep insertion order)
        self.pending: dict[ServerConnection, float] = {}
        self.open: set[ServerConnection] = set()
        self.budget = BufferBudget(max_buffered)
        self.events = RateLimitedLog(clock, self.log, log_interval)
        self.refusals = RefusalCounts()

    def acceptableProtocols(self) -> list[bytes]:
        """ALPN under TLS: the upgrade is HTTP/1.1. (Without an answer here, Twisted's ALPN callback
        fails the handshake of every client that offers ALPN with an OpenSSL internal error.)"""
        return [b"http/1.1"]

    def buildProtocol(self, addr: IAddress | None) -> Protocol:
        if len(self.pending) >= self.max_unauthenticated:
            oldest = self._victim()
            since = self.pending.pop(oldest)
            self.events.event(
                "evicted",
                "closed an unauthenticated connection from {peer} after {age:.1f} s: "
                "{limit} connections were authenticating (the budget)",
                peer=oldest.peer_name,
                age=self.clock.seconds() - since,
                limit=self.max_unauthenticated,
            )
            oldest.evict()
        connection = self._make(self)
        self.pending[connection] = self.clock.seconds()
        return connection

    def _victim(self) -> ServerConnection:
        """The oldest connection short of TLS from the address with the most of them (else the oldest)."""
        strangers = [c for c in self.pending if not c.tls_done]
        if not strangers:
            return next(iter(self.pending))
        per_address = Counter(c.peer_name for c in strangers)
        busiest = max(per_address.values())
        return next(c for c in strangers if per_address[c.peer_name] == busiest)

    # ------------------------------------------------------------------------------------------ admission

    def admit(self, connection: ServerConnection) -> str | None:
        """The connection authenticated: move it to the authenticated budget, or say why not."""
        self.pending.pop(connection, None)
        if len(self.open) >= self.max_connections:
            return f"{len(self.open)} authenticated connections are open (the budget)"
        self.open.add(connection)
        return None

    def closed(self, connection: ServerConnection) -> None:
        self.pending.pop(connection, None)
        self.open.discard(connection)
        self.budget.release(connection)

    def stopFactory(self) -> None:
        self.events.stop()
