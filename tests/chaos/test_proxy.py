"""The fault-injecting proxy on a memory reactor: delays keep order, black holes hold or reset."""

from __future__ import annotations

from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone, ConnectionRefusedError
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from garlicfarm.chaos.faults import Heal, LinkTable
from garlicfarm.chaos.proxy import MAX_HELD, ChaosProxy, Direction

NOWHERE = IPv4Address("TCP", "127.0.0.1", 40000)


class Sink:
    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.aborted = 0

    def write(self, data: bytes) -> None:
        self.data.append(data)

    def abort(self) -> None:
        self.aborted += 1


def direction(clock: Clock, table: LinkTable, sink: Sink) -> Direction:
    d = Direction(clock, table, (1, 2), sink.write, sink.abort)
    table.subscribe(d.link_changed)
    return d


def test_bytes_pass_straight_through_on_a_healthy_link() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    direction(clock, table, sink).feed(b"abc")
    assert sink.data == [b"abc"]


def test_a_delay_holds_chunks_and_keeps_their_order() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    d = direction(clock, table, sink)
    table.slow([(1, 2)], 0.2)
    d.feed(b"1")
    clock.advance(0.1)
    table.slow([(1, 2)], 0.01)  # a shorter delay now must not let the next chunk overtake
    d.feed(b"2")
    assert sink.data == []
    clock.advance(0.1)
    assert sink.data == [b"1", b"2"]
    table.slow([(2, 1)], 5.0)  # the other direction's delay is not ours
    d.feed(b"3")
    clock.advance(0.01)
    assert sink.data == [b"1", b"2", b"3"]


def test_a_black_hole_delivers_late_when_told_to() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    d = direction(clock, table, sink)
    table.cut([(1, 2)], Heal.DELIVER)
    d.feed(b"x")
    d.feed(b"y")
    clock.advance(60)
    assert sink.data == []
    table.heal_all()
    assert sink.data == [b"x", b"y"]
    assert sink.aborted == 0


def test_a_black_hole_resets_the_connection_on_heal_by_default() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    d = direction(clock, table, sink)
    table.cut([(1, 2)])
    d.feed(b"x")
    table.heal_all()
    assert sink.data == [] and sink.aborted == 1


def test_an_idle_connection_survives_a_black_hole() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    d = direction(clock, table, sink)
    table.cut([(1, 2)])
    table.heal_all()
    d.feed(b"x")
    assert sink.data == [b"x"] and sink.aborted == 0


def test_held_bytes_are_bounded() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    d = direction(clock, table, sink)
    table.cut([(1, 2)], Heal.DELIVER)
    d.feed(b"z" * (MAX_HELD + 1))
    assert sink.aborted == 1


def test_a_closed_direction_writes_nothing_more() -> None:
    clock, table, sink = Clock(), LinkTable(), Sink()
    d = direction(clock, table, sink)
    table.slow([(1, 2)], 0.1)
    d.feed(b"x")
    d.close()
    clock.advance(1)
    d.feed(b"y")
    assert sink.data == []


# ---------------------------------------------------------------------------------------------- proxy


def proxied(
    reactor: MemoryReactorClock, proxy: ChaosProxy
) -> tuple[Any, StringTransport, Any, StringTransport]:
    """Accept one connection on the proxy's only listener and complete its connection to the node."""
    box: list[Any] = []
    Deferred.fromCoroutine(proxy.listen([(1, 2)])).addBoth(box.append)
    assert isinstance(box[0], dict) and list(box[0]) == [(1, 2)]
    factory = reactor.tcpServers[0][1]
    inbound: Any = factory.buildProtocol(NOWHERE)
    in_t = StringTransport()
    inbound.makeConnection(in_t)
    assert in_t.producerState == "paused"  # nothing is read before the node's side is up
    host, port, client_factory, *_ = reactor.tcpClients[0]
    assert (host, port) == ("127.0.0.1", 9002)
    outbound: Any = client_factory.buildProtocol(NOWHERE)
    out_t = StringTransport()
    outbound.makeConnection(out_t)
    assert in_t.producerState == "producing"
    return inbound, in_t, outbound, out_t


def test_the_proxy_forwards_both_ways_and_cuts_one_way() -> None:
    reactor, table = MemoryReactorClock(), LinkTable()
    proxy = ChaosProxy(reactor, table, {1: 9001, 2: 9002})
    inbound, in_t, outbound, out_t = proxied(reactor, proxy)
    inbound.dataReceived(b"request")
    outbound.dataReceived(b"response")
    assert out_t.value() == b"request" and in_t.value() == b"response"
    table.cut([(2, 1)], Heal.DELIVER)  # what node 2 says does not reach node 1; the other way works
    inbound.dataReceived(b"-more")
    outbound.dataReceived(b"-held")
    assert out_t.value() == b"request-more" and in_t.value() == b"response"
    table.heal_all()
    assert in_t.value() == b"response-held"


def test_reset_aborts_both_sides() -> None:
    reactor, table = MemoryReactorClock(), LinkTable()
    proxy = ChaosProxy(reactor, table, {1: 9001, 2: 9002})
    _, in_t, _, out_t = proxied(reactor, proxy)
    assert proxy.reset([(2, 1)]) == 1  # either direction names the connection
    assert in_t.disconnecting and out_t.disconnecting
    assert proxy.connections == set()


def test_when_one_side_closes_so_does_the_other() -> None:
    reactor, table = MemoryReactorClock(), LinkTable()
    proxy = ChaosProxy(reactor, table, {1: 9001, 2: 9002})
    _, in_t, outbound, _ = proxied(reactor, proxy)
    outbound.connectionLost(Failure(ConnectionDone()))
    assert in_t.disconnecting
    assert proxy.connections == set()


def test_a_node_that_is_down_gets_the_connection_aborted() -> None:
    reactor, table = MemoryReactorClock(), LinkTable()
    proxy = ChaosProxy(reactor, table, {1: 9001, 2: 9002})
    Deferred.fromCoroutine(proxy.listen([(1, 2)]))
    inbound: Any = reactor.tcpServers[0][1].buildProtocol(NOWHERE)
    in_t = StringTransport()
    inbound.makeConnection(in_t)
    connector = reactor.connectors[0]
    client_factory = reactor.tcpClients[0][2]
    client_factory.clientConnectionFailed(connector, Failure(ConnectionRefusedError()))
    assert in_t.disconnecting
    assert proxy.connections == set()
