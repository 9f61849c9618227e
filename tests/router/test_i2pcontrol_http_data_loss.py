"""An answer cut off in the middle of its body (fewer bytes than its Content-Length, or an unfinished
chunked body) is reported as such, not by Twisted's private exception's name (``_DataLoss: ``)."""

from __future__ import annotations

import pytest
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure
from twisted.web.client import Agent

from garlicfarm.router.i2pcontrol_http import RequestFailed, post
from tests.router.memory_http import Connection, chunked, response

CUT_OFF = "the server closed the connection in the middle of the answer"


@pytest.mark.parametrize(
    ("partial", "reason"),
    [
        (response(b"abc", length=10), ConnectionLost("reset")),
        (response(b"abc", length=10), ConnectionDone()),
        (chunked(b"abc")[:-5], ConnectionLost("reset")),
    ],
)
def test_answer_cut_off_in_the_body(partial: bytes, reason: Exception) -> None:
    reactor = MemoryReactorClock()
    d = post(Agent(reactor), reactor, "http://127.0.0.1:7650/jsonrpc", b"{}", timeout=10)
    connection = Connection(reactor)
    connection.answer(partial)
    connection.close(reason)
    failures: list[Failure] = []
    d.addErrback(failures.append)
    assert failures and failures[0].check(RequestFailed)
    assert str(failures[0].value) == CUT_OFF
