"""The bounded HTTP POST (garlicfarm.router.i2pcontrol_http) with Twisted's Agent on a
MemoryReactorClock: the request byte for byte, which statuses count as success, the error messages
word for word (HTTP status with the body's excerpt, sizes at the bound and one past, with and without
a Content-Length, a connection dropped mid-answer, refused or timed-out connections, timeouts on the
clock) and that an oversized or abandoned answer drops the connection."""

from __future__ import annotations

from typing import Any

import pytest
from OpenSSL import SSL
from twisted.internet.defer import Deferred
from twisted.internet.error import (
    ConnectionLost,
    ConnectionRefusedError,
    TimeoutError,
)
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure
from twisted.web.client import Agent, ResponseNeverReceived

from garlicfarm.router.i2pcontrol_http import HTTPStatusError, RequestFailed, describe, post
from tests.router.memory_http import Connection, chunked, response
from tests.router.outcomes import outcome

URL = "http://127.0.0.1:7650/jsonrpc"
REFUSED = "connection refused (is the router running, with I2PControl enabled on that port?)"
CLOSED = "the server closed the connection without a complete answer (not an HTTP(S) server?)"


def start(
    body: bytes = b'{"id":1}', *, max_size: int = 100, **kwargs: Any
) -> tuple[MemoryReactorClock, Deferred[bytes], Connection]:
    """A POST under way on a fresh reactor, its connection made (the answer not yet written)."""
    reactor = MemoryReactorClock()
    agent = Agent(reactor, connectTimeout=10)
    d = post(agent, reactor, URL, body, timeout=10, max_size=max_size, **kwargs)
    return reactor, d, Connection(reactor)


def error(d: Deferred[bytes]) -> RequestFailed:
    """The RequestFailed the POST failed with."""
    failure = outcome(d)
    assert isinstance(failure, Failure), failure
    assert isinstance(failure.value, RequestFailed), failure
    return failure.value


def test_the_request_byte_for_byte() -> None:
    """POST to the URL's path, no persistent connection, the body's length, JSON in and out."""
    _, _, connection = start(b'{"id":1,"method":"Echo"}')
    assert connection.sent() == (
        b"POST /jsonrpc HTTP/1.1\r\n"
        b"Connection: close\r\n"
        b"Content-Length: 24\r\n"
        b"Content-Type: application/json\r\n"
        b"Accept: application/json\r\n"
        b"Host: 127.0.0.1:7650\r\n"
        b"\r\n"
        b'{"id":1,"method":"Echo"}'
    )


def test_another_content_type() -> None:
    _, _, connection = start(b"x", content_type=b"text/plain")
    assert b"\r\nContent-Type: text/plain\r\nAccept: application/json\r\n" in connection.sent()


@pytest.mark.parametrize("status", [b"200 OK", b"204 No Content", b"299 Whatever"])
def test_2xx_is_success(status: bytes) -> None:
    _, d, connection = start()
    body = b"" if status.startswith(b"204") else b'{"ok":1}'
    connection.answer(response(body, status))
    assert outcome(d) == body


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (b"300 Multiple Choices", b"elsewhere", "HTTP 300 Multiple Choices: elsewhere"),
        (b"503 Service Unavailable", b"", "HTTP 503 Service Unavailable"),
        (b"500 Internal Server Error", b"  \n  trouble \r\n", "HTTP 500 Internal Server Error: trouble"),
        (b"500 Oops", b"bad \xff\xfe bytes", "HTTP 500 Oops: bad \ufffd\ufffd bytes"),
        (b"502 Bad Gateway", b"a" * 300, "HTTP 502 Bad Gateway: " + "a" * 200),
    ],
)
def test_other_statuses_fail_with_an_excerpt(status: bytes, body: bytes, message: str) -> None:
    """Not 2xx: the code, the phrase and at most 200 bytes of the body (invalid UTF-8 replaced)."""
    _, d, connection = start(max_size=1000)
    connection.answer(response(body, status))
    failure = error(d)
    assert isinstance(failure, HTTPStatusError)
    assert str(failure) == message
    assert failure.code == int(status[:3])


def test_content_length_at_the_bound() -> None:
    _, d, connection = start()
    connection.answer(response(b"a" * 100))
    assert outcome(d) == b"a" * 100


def test_content_length_one_past_the_bound() -> None:
    """Refused from the header alone, before any of the body is read, and the connection dropped."""
    _, d, connection = start()
    connection.answer(response(b"", length=101))
    assert str(error(d)) == "the answer is 101 bytes, more than the 100 allowed"
    assert connection.dropped


def test_chunked_answer_at_the_bound() -> None:
    """Without a Content-Length, the chunks are counted and joined as they were sent."""
    _, d, connection = start()
    connection.answer(chunked(b"a" * 60, b"b" * 40))
    assert outcome(d) == b"a" * 60 + b"b" * 40


def test_chunked_answer_one_past_the_bound() -> None:
    _, d, connection = start()
    connection.answer(chunked(b"a" * 60, b"b" * 41))
    assert str(error(d)) == "the answer is larger than the 100 bytes allowed"
    assert connection.dropped


def test_answer_ended_by_closing_the_connection() -> None:
    """No length and no chunks: the body ends where the server closes (HTTP/1.0 style)."""
    _, d, connection = start()
    connection.answer(b"HTTP/1.1 200 OK\r\n\r\n" + b"a" * 50)
    connection.answer(b"b" * 50)
    connection.close()
    assert outcome(d) == b"a" * 50 + b"b" * 50


def test_connection_lost_in_the_middle_of_the_body_fails_the_request() -> None:
    """(The message is checked in test_i2pcontrol_http_data_loss.)"""
    _, d, connection = start()
    connection.answer(response(b"abc", length=10))
    connection.close(ConnectionLost("reset"))
    error(d)


def test_connection_lost_in_the_middle_of_the_headers() -> None:
    _, d, connection = start()
    connection.answer(b"HTTP/1.1 200 OK\r\nContent-Le")
    connection.close(ConnectionLost("reset"))
    assert str(error(d)) == CLOSED


def test_no_answer_at_all_times_out_on_the_clock() -> None:
    reactor, d, _ = start()
    reactor.advance(9.999)
    assert not d.called
    reactor.advance(0.001)
    assert str(error(d)) == "no answer within 10 s"


def test_a_body_that_stops_coming_times_out_and_drops_the_connection() -> None:
    reactor, d, connection = start()
    connection.answer(response(b"abc", length=10))
    reactor.advance(10)
    assert str(error(d)) == "no answer within 10 s"
    assert connection.dropped


def connect_failed(reason: Exception) -> Deferred[bytes]:
    """A POST whose TCP connection attempt fails with ``reason``."""
    reactor = MemoryReactorClock()
    agent = Agent(reactor, connectTimeout=10)
    d = post(agent, reactor, URL, b"{}", timeout=7.5)
    factory = reactor.tcpClients[0][2]
    factory.clientConnectionFailed(reactor.connectors[0], Failure(reason))
    reactor.advance(1)  # the endpoint's next attempt: there is none
    return d


def test_connection_refused() -> None:
    assert str(error(connect_failed(ConnectionRefusedError()))) == REFUSED


def test_connect_timeout_names_the_timeout() -> None:
    assert str(error(connect_failed(TimeoutError()))) == "no answer within 7.5 s"


def test_describe_looks_past_lost_connections_for_the_telling_reason() -> None:
    wrapped = ResponseNeverReceived([Failure(ConnectionLost()), Failure(SSL.Error("bad certificate"))])
    assert describe(wrapped) == "TLS failed: bad certificate"
    assert describe(ResponseNeverReceived([Failure(ConnectionLost())])) == CLOSED


def test_describe_a_wrapped_timeout_with_and_without_its_length() -> None:
    assert describe(ResponseNeverReceived([Failure(TimeoutError())]), 5) == "no answer within 5 s"
    assert describe(TimeoutError()) == "timed out"


def test_describe_other_exceptions_by_type_and_message() -> None:
    assert describe(ValueError("odd")) == "ValueError: odd"


def test_describe_reasons_that_are_not_failures() -> None:
    """Another library's exception with a ``reasons`` list of its own is described as itself."""

    class Several(Exception):
        reasons = ["first", "second"]

    assert describe(Several("both")) == "Several: both"
