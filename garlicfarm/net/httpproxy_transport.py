"""The transport a protocol tunnelled through an HTTP CONNECT proxy sees (see garlicfarm.net.httpproxy)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from twisted.internet.address import HostnameAddress
from twisted.internet.interfaces import IAddress, ITransport
from zope.interface import directlyProvides, implementer, providedBy


@implementer(ITransport)
class TunnelTransport:
    """The proxy connection as the tunnelled protocol sees it.

    Everything goes to the real transport (and it provides the same interfaces, e.g. ITCPTransport),
    except ``getPeer``, which names the tunnel's far end: every I2P peer would otherwise be 127.0.0.1:4444.
    """

    def __init__(self, transport: ITransport, peer: HostnameAddress) -> None:
        directlyProvides(self, providedBy(transport))
        self._transport = transport
        self._peer = peer

    def write(self, data: bytes) -> None:
        self._transport.write(data)

    def writeSequence(self, data: Iterable[bytes]) -> None:
        self._transport.writeSequence(data)

    def loseConnection(self) -> None:
        self._transport.loseConnection()

    def getPeer(self) -> IAddress:
        return self._peer

    def getHost(self) -> IAddress:
        return self._transport.getHost()

    def getProxyPeer(self) -> IAddress:
        """The proxy's own address, which ``getPeer`` hides."""
        return self._transport.getPeer()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
