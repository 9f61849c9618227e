"""The TCP endpoint under every client connection passes its timeout to each connection attempt."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import (
    IHostnameResolver,
    IHostResolution,
    IReactorPluggableNameResolver,
    IResolutionReceiver,
)
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock
from zope.interface import implementer

from garlicfarm.net.tcp import tcp_endpoint


@implementer(IHostResolution)
class Resolved:
    """A resolution already answered."""

    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        raise NotImplementedError


@implementer(IHostnameResolver)
class OneAddress:
    """Resolves every name to 192.0.2.1 at once."""

    def resolveHostName(
        self,
        resolutionReceiver: IResolutionReceiver,  # noqa: N803 - Twisted's names
        hostName: str,  # noqa: N803
        portNumber: int = 0,  # noqa: N803
        addressTypes: Sequence[type] | None = None,  # noqa: N803
        transportSemantics: str = "TCP",  # noqa: N803
    ) -> IHostResolution:
        resolutionReceiver.resolutionBegan(None)  # type: ignore[arg-type]
        resolutionReceiver.addressResolved(IPv4Address("TCP", "192.0.2.1", portNumber))
        resolutionReceiver.resolutionComplete()
        return Resolved(hostName)


def reactor_resolving_to_one_address() -> MemoryReactorClock:
    """A memory reactor whose resolver answers at once (MemoryReactor's own maps every name to 127.0.0.1)."""
    reactor = MemoryReactorClock()
    assert IReactorPluggableNameResolver.providedBy(reactor)
    reactor.installNameResolver(OneAddress())
    return reactor


@pytest.mark.parametrize(
    ("host", "dialled"), [("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("node1.example", "192.0.2.1")]
)
def test_each_connection_attempt_gets_the_timeout(host: str, dialled: str) -> None:
    """An address is dialled as it is, a name at its resolved address; each with the given timeout."""
    reactor = reactor_resolving_to_one_address()
    tcp_endpoint(reactor, host, 9001, 7.5).connect(Factory.forProtocol(Protocol))
    reactor.advance(0)
    host_, port, _factory, timeout, _bind = reactor.tcpClients[0]
    assert (host_, port, timeout) == (dialled, 9001, 7.5)
