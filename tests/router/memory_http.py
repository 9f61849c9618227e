"""HTTP exchanges of Twisted's Agent on a MemoryReactorClock: each TCP connection the Agent asks for is
joined to a StringTransport, so a test reads the request byte for byte and writes the answer's bytes."""

from __future__ import annotations

import json
from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import IProtocol
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure


class TCPLikeTransport(StringTransport):
    """A StringTransport that behaves like a TCP connection once the client gives up on it:
    ``stopProducing`` closes it, and pausing or resuming a closing connection does nothing."""

    stopped = False

    def stopProducing(self) -> None:
        self.stopped = True
        self.loseConnection()

    def pauseProducing(self) -> None:
        if not self.disconnecting:
            super().pauseProducing()

    def resumeProducing(self) -> None:
        if not self.disconnecting:
            super().resumeProducing()


class Connection:
    """The client side of the reactor's ``index``-th TCP connection, connected to a StringTransport."""

    def __init__(self, reactor: MemoryReactorClock, index: int = -1) -> None:
        host, port, factory, timeout, _ = reactor.tcpClients[index]
        self.address = (host, port)
        #: the connect timeout the Agent asked the reactor for
        self.connect_timeout: float = timeout
        self.transport = TCPLikeTransport()
        protocol = factory.buildProtocol(IPv4Address("TCP", host, port))
        assert protocol is not None
        self.protocol: IProtocol = protocol
        self.protocol.makeConnection(self.transport)

    def sent(self) -> bytes:
        """Everything the client wrote: the request line, headers and body."""
        sent: bytes = self.transport.value()
        return sent

    def request_json(self) -> Any:
        return json.loads(self.sent().partition(b"\r\n\r\n")[2])

    def answer(self, data: bytes) -> None:
        self.protocol.dataReceived(data)

    def close(self, reason: Exception | None = None) -> None:
        """The server closes the connection (cleanly unless ``reason`` says otherwise)."""
        self.protocol.connectionLost(Failure(reason or ConnectionDone()))

    @property
    def dropped(self) -> bool:
        """Whether the client gave up on the connection before the answer was complete."""
        return self.transport.stopped


def response(body: bytes, status: bytes = b"200 OK", *, length: int | None = None) -> bytes:
    """An HTTP/1.1 answer with a Content-Length (``len(body)`` unless ``length`` says otherwise)."""
    size = len(body) if length is None else length
    return b"HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s" % (status, size, body)


def chunked(*chunks: bytes, status: bytes = b"200 OK") -> bytes:
    """An HTTP/1.1 answer in chunked transfer encoding: its length is not known in advance."""
    encoded = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return b"HTTP/1.1 %s\r\nTransfer-Encoding: chunked\r\n\r\n%s0\r\n\r\n" % (status, encoded)
