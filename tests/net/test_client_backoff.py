"""FarmClient.request_leader waiting for a leader: it asks again after 0.2 s, doubling up to 2 s and
never more, and gives up once it has waited its timeout (task.Clock: no real time passes)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.net.client import ClientError, FarmClient
from garlicfarm.wire import NO_LEADER, AppendEntriesResponse, ClientRequest, Response
from tests.net.test_client_reuse import Access, FakeTransport


class NoLeaderYet:
    """A node that answers every request with "no leader known"."""

    features: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.lost = False
        self.transport = FakeTransport(self)  # type: ignore[arg-type]

    def request(self, _request: Any, timeout: float) -> Deferred[Response]:
        return succeed(AppendEntriesResponse(source=1, destination=NO_LEADER, term=1, next_index=0))


def _attempts(timeout: float) -> tuple[list[float], list[Any], Clock]:
    clock = Clock()
    client = FarmClient(clock, Access(), timeout=timeout)
    times: list[float] = []

    async def connect(_uri: str) -> NoLeaderYet:
        times.append(clock.seconds())
        return NoLeaderYet()

    client.connect = connect  # type: ignore[method-assign,assignment]
    result: list[Any] = []
    Deferred.fromCoroutine(client.request_leader(ClientRequest(), "submit")).addBoth(result.append)
    for _ in range(1000):
        if result:
            break
        clock.advance(0.05)
    return times, result, clock


def test_the_pause_doubles_from_0_2_s_to_2_s_and_stays_there() -> None:
    times, result, _ = _attempts(timeout=10.0)
    pauses = [b - a for a, b in itertools.pairwise(times)]
    expected = [0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0, 2.0]
    assert pauses == pytest.approx(expected, abs=0.051)  # the clock steps 0.05 s
    assert max(pauses) <= 2.0 + 0.051
    assert isinstance(result[0], Failure) and result[0].check(ClientError)
    assert "submit: " in result[0].getErrorMessage()


@pytest.mark.parametrize(("timeout", "attempts"), [(3.0, 5), (3.1, 6), (5.0, 6), (5.01, 7)])
def test_it_gives_up_once_it_has_waited_its_timeout_not_a_pause_later(timeout: float, attempts: int) -> None:
    # waited after each pause: 0.2, 0.6, 1.4, 3.0, 5.0, 7.0 ...: the attempt after the pause that
    # reaches the timeout is the last
    times, result, clock = _attempts(timeout)
    assert len(times) == attempts
    assert isinstance(result[0], Failure) and result[0].check(ClientError)
    assert clock.seconds() == pytest.approx(times[-1], abs=0.051)
