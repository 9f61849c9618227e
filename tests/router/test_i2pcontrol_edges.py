"""I2PControlRouter's edges on a MemoryReactorClock, each answer written by the fake router's logic
(tests.router.fake_i2pcontrol): the requests byte for byte (ids from 1, GetRate's parameters, the
connect timeout), the default timeout, tokens that are no tokens, which errors stop GetRate, the
JSON-RPC error naming its method, the log lines of a renewed token and of a method the router lacks,
and the public ``authenticate`` and ``call``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel, capturedLogs, formatEvent
from twisted.python.failure import Failure

from garlicfarm.router.i2pcontrol import I2PControlRouter
from garlicfarm.router.interface import RouterUnavailable
from tests.router.fake_i2pcontrol import PASSWORD, FakeI2PControl
from tests.router.memory_http import Connection, response
from tests.router.outcomes import outcome, value

URL = "http://127.0.0.1:7650/jsonrpc"
Answer = Callable[[str, dict[str, Any]], dict[str, Any]]


def router(reactor: MemoryReactorClock) -> I2PControlRouter:
    return I2PControlRouter(reactor, URL, PASSWORD)


class Server:
    """Answers the router's requests on the reactor's connections, each once, with ``answer``."""

    def __init__(self, reactor: MemoryReactorClock, answer: Answer) -> None:
        self.reactor = reactor
        self.answer = answer
        self.connections: list[Connection] = []

    def run(self) -> list[Connection]:
        """Answers until the router asks for no more; the connections answered now."""
        start = len(self.connections)
        while len(self.connections) < len(self.reactor.tcpClients):
            connection = Connection(self.reactor, len(self.connections))
            self.connections.append(connection)
            request = connection.request_json()
            reply = {"id": request["id"], **self.answer(request["method"], request["params"])}
            connection.answer(response(json.dumps({**reply, "jsonrpc": "2.0"}).encode()))
        return self.connections[start:]


METHOD_NOT_FOUND = {"code": -32601, "message": "Method not found"}
INTERNAL_ERROR = {"code": -32603, "message": "Internal error"}


def failing(fake: FakeI2PControl, errors: dict[str, dict[str, Any]]) -> Answer:
    """``fake``'s answers, but for the methods in ``errors``, which it answers with that JSON-RPC error."""

    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method in errors:
            return {"error": errors[method]}
        return fake.answer(method, params)

    return answer


def serve(reactor: MemoryReactorClock, answer: Answer) -> list[Connection]:
    return Server(reactor, answer).run()


def unavailable(d: Deferred[Any]) -> str:
    failure = outcome(d)
    assert isinstance(failure, Failure) and failure.check(RouterUnavailable), failure
    return str(failure.value)


def test_the_requests_byte_for_byte() -> None:
    """A status read's four requests: ids counting from 1, the token last, GetRate's job lag stat."""
    reactor = MemoryReactorClock()
    d = router(reactor).router_status()
    connections = serve(reactor, FakeI2PControl("java").answer)
    assert value(d).job_lag_ms == 13
    head = (
        b"POST /jsonrpc HTTP/1.1\r\nConnection: close\r\nContent-Length: %d\r\n"
        b"Content-Type: application/json\r\nAccept: application/json\r\nHost: 127.0.0.1:7650\r\n\r\n"
    )
    bodies = [
        b'{"id":1,"method":"Authenticate","params":{"API":1,"Password":"s3cret"},"jsonrpc":"2.0"}',
        b'{"id":2,"method":"RouterInfo","params":{"i2p.router.uptime":null,"i2p.router.version":null,'
        b'"i2p.router.net.status":null,"i2p.router.net.tunnels.participating":null,'
        b'"i2p.router.net.bw.inbound.15s":null,"i2p.router.net.bw.outbound.15s":null,'
        b'"i2p.router.net.bw.inbound.1s":null,"i2p.router.net.bw.outbound.1s":null,'
        b'"i2p.router.net.total.received.bytes":null,"Token":"token-1"},"jsonrpc":"2.0"}',
        b'{"id":3,"method":"NetworkSetting","params":{"i2p.router.net.bw.in":null,'
        b'"i2p.router.net.bw.out":null,"Token":"token-1"},"jsonrpc":"2.0"}',
        b'{"id":4,"method":"GetRate","params":{"Stat":"jobQueue.jobLag","Period":60000,'
        b'"Token":"token-1"},"jsonrpc":"2.0"}',
    ]
    assert [c.sent() for c in connections] == [head % len(body) + body for body in bodies]
    assert [c.connect_timeout for c in connections] == [10.0] * 4


def test_default_timeout_is_ten_seconds() -> None:
    reactor = MemoryReactorClock()
    d = router(reactor).router_status()
    reactor.advance(9.999)
    assert not d.called
    reactor.advance(0.001)
    assert unavailable(d) == f"I2PControl at {URL}: Authenticate: no answer within 10 s"


@pytest.mark.parametrize("token", [True, "", None, 1.5])
def test_an_answer_without_a_usable_token_means_a_wrong_password(token: Any) -> None:
    reactor = MemoryReactorClock()
    d = router(reactor).router_status()
    connections = serve(reactor, lambda method, params: {"result": {"API": 1, "Token": token}})
    assert unavailable(d) == f"I2PControl at {URL}: wrong I2PControl password (no token in the answer)"
    assert len(connections) == 1


def test_a_numeric_token_is_sent_as_a_string() -> None:
    reactor = MemoryReactorClock()
    d = router(reactor).authenticate()
    serve(reactor, lambda method, params: {"result": {"API": 1, "Token": 7}})
    assert outcome(d) == "7"


def test_json_rpc_error_names_the_method() -> None:
    answer = failing(FakeI2PControl("java"), {"RouterInfo": INTERNAL_ERROR})

    reactor = MemoryReactorClock()
    d = router(reactor).router_status()
    serve(reactor, answer)
    assert unavailable(d) == "I2PControl RouterInfo failed: error -32603: Internal error"


def methods(connections: list[Connection]) -> list[str]:
    return [c.request_json()["method"] for c in connections]


def test_only_getrates_method_not_found_stops_asking_for_it() -> None:
    """NetworkSetting's "method not found", or GetRate failing otherwise, leaves GetRate asked."""
    answer = failing(FakeI2PControl("java"), {"NetworkSetting": METHOD_NOT_FOUND, "GetRate": INTERNAL_ERROR})

    reactor = MemoryReactorClock()
    client, server = router(reactor), Server(reactor, answer)
    d = client.router_status()
    first = server.run()
    assert value(d).job_lag_ms == 0
    d = client.router_status()
    second = server.run()
    assert value(d).bandwidth_configured == 0
    assert methods(first) == ["Authenticate", "RouterInfo", "NetworkSetting", "GetRate"]
    assert methods(second) == ["RouterInfo", "NetworkSetting", "GetRate"]


def test_without_getrate_the_job_lag_is_zero() -> None:
    """i2pd: after GetRate's "method not found", later reads skip it and report no job lag."""
    reactor = MemoryReactorClock()
    client, server = router(reactor), Server(reactor, FakeI2PControl("i2pd").answer)
    d = client.router_status()
    server.run()
    assert value(d).job_lag_ms == 0
    d = client.router_status()
    assert methods(server.run()) == ["RouterInfo", "NetworkSetting"]
    assert value(d).job_lag_ms == 0


def test_authenticate_and_call() -> None:
    """The public JSON-RPC methods: a fresh token, then a call carrying it, answered by its result."""
    reactor = MemoryReactorClock()
    client, server = router(reactor), Server(reactor, FakeI2PControl("java").answer)
    token = client.authenticate()
    server.run()
    assert outcome(token) == "token-1"
    result = client.call("RouterInfo", {"i2p.router.uptime": None})
    connections = server.run()
    assert outcome(result) == {"i2p.router.uptime": 7_200_000, "i2p.router.something.new": {"nested": True}}
    assert connections[-1].request_json()["params"] == {"i2p.router.uptime": None, "Token": "token-1"}


def test_log_lines_of_a_renewed_token_and_a_missing_method() -> None:
    fake = FakeI2PControl("java")
    answer = failing(fake, {"GetRate": METHOD_NOT_FOUND})

    reactor = MemoryReactorClock()
    client, server = router(reactor), Server(reactor, answer)
    with capturedLogs() as events:
        client.router_status()
        server.run()
        fake.expire_next = 1
        client.router_status()
        server.run()
    assert [(e["log_level"], formatEvent(e)) for e in events] == [
        (
            LogLevel.debug,
            "I2PControl GetRate not available: I2PControl GetRate failed: error -32601: Method not found",
        ),
        (LogLevel.info, "I2PControl token no longer valid (-32004); authenticating again"),
    ]
