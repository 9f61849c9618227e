"""A fault-injecting TCP proxy: one listener per directed link i→j, forwarding to node j's real port.

Node i's configuration points its peer j at the listener for (i, j), so every byte between two nodes
crosses the proxy, which consults a :class:`~garlicfarm.chaos.faults.LinkTable` for each chunk:

* delay: a chunk is held for the link's delay, and never overtakes an earlier one;
* down: TCP cannot lose single bytes without breaking the stream, so bytes are held (a black hole:
  nothing arrives, nothing is refused); when the link heals they are delivered late or the connection
  is aborted, as the table says;
* reset: :meth:`ChaosProxy.reset` aborts connections on both sides (an RST, like a crashed middlebox).

The TLS inside passes through untouched: the proxy sees only ciphertext.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP4ServerEndpoint
from twisted.internet.interfaces import IDelayedCall, IListeningPort, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from garlicfarm.chaos.faults import Heal, Link, LinkTable

#: bytes held on one direction of a connection before it is aborted (a black hole is not a memory leak)
MAX_HELD = 4 * 1024 * 1024


class Direction:
    """Bytes flowing one way through one proxied connection, subject to the link's state.

    ``write`` sends to the far side; ``abort`` tears the whole connection down.
    """

    def __init__(
        self,
        clock: IReactorTime,
        table: LinkTable,
        link: Link,
        write: Callable[[bytes], None],
        abort: Callable[[], None],
    ) -> None:
        self.clock = clock
        self.table = table
        self.link = link
        self._write = write
        self._abort = abort
        self._queue: deque[tuple[float, bytes]] = deque()  # (due time, chunk), in order
        self._held: list[bytes] = []  # what arrived while the link was down
        self._held_size = 0
        self._heal = Heal.RESET
        self._timer: IDelayedCall | None = None
        self.closed = False

    def feed(self, data: bytes) -> None:
        if self.closed:
            return
        if self.table.is_down(self.link) or self._held:
            if not self._held:
                self._heal = self.table.heal_mode(self.link)  # the table forgets it once healed
            self._held.append(data)
            self._held_size += len(data)
            if self._held_size > MAX_HELD:
                self._abort()
            return
        self._enqueue(data)

    def link_changed(self) -> None:
        """The table changed: release or drop what was held once the link is up."""
        if self.closed or not self._held or self.table.is_down(self.link):
            return
        held, self._held, self._held_size = self._held, [], 0
        if self._heal is Heal.RESET:
            self._abort()
            return
        for chunk in held:
            self._enqueue(chunk)

    def close(self) -> None:
        self.closed = True
        self._queue.clear()
        self._held = []
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _enqueue(self, data: bytes) -> None:
        due = self.clock.seconds() + self.table.delay(self.link)
        if self._queue:
            due = max(due, self._queue[-1][0])  # order is kept: no chunk overtakes another
        self._queue.append((due, data))
        self._pump()

    def _pump(self) -> None:
        self._timer = None
        now = self.clock.seconds()
        while self._queue and self._queue[0][0] <= now and not self.closed:
            self._write(self._queue.popleft()[1])
        if self._queue and not self.closed:
            self._timer = self.clock.callLater(self._queue[0][0] - now, self._pump)

    @property
    def pending(self) -> bool:
        return bool(self._queue or self._held)


class _Side(Protocol):
    """One TCP side of a proxied connection; everything it receives goes to the other side."""

    def __init__(self, pair: ProxiedConnection, on_made: Callable[[], None] | None = None) -> None:
        self.pair = pair
        self.on_made = on_made
        self.out: Direction | None = None  # bytes received here, on their way to the other side

    def connectionMade(self) -> None:
        if self.on_made is not None:
            self.on_made()

    def dataReceived(self, data: bytes) -> None:
        if self.out is not None:
            self.out.feed(data)

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.pair.side_lost(self)


class ProxiedConnection:
    """An accepted connection on link i→j and the connection the proxy opened to node j."""

    def __init__(self, proxy: ChaosProxy, link: Link, target: TCP4ClientEndpoint) -> None:
        self.proxy = proxy
        self.link = link
        self.inbound = _Side(self, lambda: self.connect(target))
        self.outbound = _Side(self)
        self.closed = False

    def directions(self) -> list[Direction]:
        return [d for d in (self.inbound.out, self.outbound.out) if d is not None]

    def connect(self, target: TCP4ClientEndpoint) -> None:
        assert self.inbound.transport is not None
        self.inbound.transport.pauseProducing()  # type: ignore[attr-defined]
        d = target.connect(Factory.forProtocol(lambda: self.outbound))
        d.addCallbacks(self._connected, self._failed)

    def _connected(self, _: object) -> None:
        if self.closed:
            self.outbound.transport.abortConnection()  # type: ignore[union-attr]
            return
        a, b = self.link
        clock = self.proxy.reactor
        table = self.proxy.table
        self.inbound.out = Direction(clock, table, (a, b), self._to_outbound, self.abort)
        self.outbound.out = Direction(clock, table, (b, a), self._to_inbound, self.abort)
        self.inbound.transport.resumeProducing()  # type: ignore[union-attr]

    def _failed(self, failure: Failure) -> None:
        self.closed = True
        self.proxy.forget(self)
        if self.inbound.transport is not None:
            self.inbound.transport.abortConnection()  # type: ignore[attr-defined]

    def _to_outbound(self, data: bytes) -> None:
        self.outbound.transport.write(data)  # type: ignore[union-attr]

    def _to_inbound(self, data: bytes) -> None:
        self.inbound.transport.write(data)  # type: ignore[union-attr]

    def link_changed(self) -> None:
        for direction in self.directions():
            direction.link_changed()

    def abort(self) -> None:
        """Tear both sides down at once (RST): whatever is queued or held is lost."""
        if self.closed:
            return
        self.closed = True
        for direction in self.directions():
            direction.close()
        for side in (self.inbound, self.outbound):
            if side.transport is not None and side.connected:
                side.transport.abortConnection()  # type: ignore[attr-defined]
        self.proxy.forget(self)

    def side_lost(self, side: _Side) -> None:
        if self.closed:
            return
        self.closed = True
        for direction in self.directions():
            direction.close()
        other = self.outbound if side is self.inbound else self.inbound
        if other.transport is not None and other.connected:
            other.transport.loseConnection()
        self.proxy.forget(self)


class _Listener(Factory):
    def __init__(self, proxy: ChaosProxy, link: Link, target: TCP4ClientEndpoint) -> None:
        self.proxy = proxy
        self.link = link
        self.target = target

    def buildProtocol(self, addr: Any) -> Protocol:
        pair = ProxiedConnection(self.proxy, self.link, self.target)
        self.proxy.connections.add(pair)
        return pair.inbound


class ChaosProxy:
    """Listeners for directed links, forwarding to nodes' real ports on 127.0.0.1."""

    log = Logger()

    def __init__(
        self, reactor: Any, table: LinkTable, ports: dict[int, int], host: str = "127.0.0.1"
    ) -> None:
        self.reactor = reactor
        self.table = table
        self.ports = ports
        self.host = host
        self.connections: set[ProxiedConnection] = set()
        self.listeners: dict[Link, IListeningPort] = {}
        table.subscribe(self._link_changed)

    async def listen(self, links: Iterable[Link]) -> dict[Link, int]:
        """Open a listener (on a free port) for each link; returns the ports."""
        for link in links:
            target = TCP4ClientEndpoint(self.reactor, self.host, self.ports[link[1]], timeout=5)
            server = TCP4ServerEndpoint(self.reactor, 0, interface=self.host)
            self.listeners[link] = await server.listen(_Listener(self, link, target))
        return {link: port.getHost().port for link, port in self.listeners.items()}  # type: ignore[attr-defined]

    def reset(self, links: Iterable[Link]) -> int:
        """Abort every connection carrying one of ``links`` (either way); returns how many."""
        wanted = set(links)
        hit = [c for c in self.connections if c.link in wanted or c.link[::-1] in wanted]
        for connection in hit:
            connection.abort()
        return len(hit)

    def forget(self, connection: ProxiedConnection) -> None:
        self.connections.discard(connection)

    def _link_changed(self) -> None:
        for connection in list(self.connections):
            connection.link_changed()

    def stop(self) -> Deferred[Any]:
        for connection in list(self.connections):
            connection.abort()
        return gatherResults([Deferred.fromCoroutine(_stop(p)) for p in self.listeners.values()])


async def _stop(port: IListeningPort) -> None:
    stopped = port.stopListening()
    if stopped is not None:
        await stopped
