"""StatusReporter: what its record says of the operator's publish_config, and its retries of a failed
status report: 0.5 s doubling up to ``max_backoff`` (and no more than the interval), jittered, and
never past that bound whatever the jitter (task.Clock)."""

from __future__ import annotations

import itertools
import random
import types
from typing import Any

import pytest
from twisted.internet.task import Clock

from garlicfarm.app.publishing import RETRY_FIRST, StatusReporter
from garlicfarm.app.schema import StatusRecord, parse_entry
from garlicfarm.router.interface import RouterStatus

EPSILON = 1e-9


class GoneRouter:
    async def router_status(self) -> Any:
        raise ConnectionRefusedError("the router is not there")

    async def leaf_status(self) -> Any:
        raise AssertionError("not reached")


class Fixed(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def _delays(
    count: int, *, jitter: float, max_backoff: float | None = 15.0, interval: float = 60.0
) -> list[float]:
    clock = Clock()
    bound = {} if max_backoff is None else {"max_backoff": max_backoff}
    reporter = StatusReporter(
        clock,
        None,  # type: ignore[arg-type]  # never reached: the router fails first
        lambda leader, request: None,  # type: ignore[arg-type,return-value]
        GoneRouter(),  # type: ignore[arg-type]
        "farm",
        interval=interval,
        rng=Fixed(jitter),
        **bound,  # type: ignore[arg-type]
    )
    reporter.start()
    clock.advance(0)
    delays = []
    for _ in range(count):
        (call,) = clock.getDelayedCalls()
        delays.append(call.getTime() - clock.seconds())
        clock.advance(delays[-1])
    reporter.stop()
    assert reporter.failures == count + 1
    return delays


def test_without_jitter_the_delay_doubles_to_max_backoff_and_stays() -> None:
    assert RETRY_FIRST == 0.5
    assert _delays(9, jitter=0.5) == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0, 15.0]


def test_by_default_the_delay_reaches_15_s_and_stays() -> None:
    assert _delays(8, jitter=0.5, max_backoff=None) == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]


def test_the_interval_bounds_the_delay_too() -> None:
    assert _delays(7, jitter=0.5, max_backoff=15.0, interval=4.0) == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]


@pytest.mark.parametrize("jitter", [0.0, 0.25, 0.75, 0.999999])
def test_jitter_never_takes_the_delay_past_max_backoff(jitter: float) -> None:
    delays = _delays(12, jitter=jitter)
    assert max(delays) <= 15.0 + EPSILON  # (the clock's float sums)
    assert delays[-1] >= 7.5 - EPSILON  # the jitter still spreads it: half the bound at least
    assert all(b >= a - EPSILON for a, b in itertools.pairwise(delays))


@pytest.mark.parametrize("jitter", [0.0, 0.999999])
def test_jitter_never_takes_the_delay_past_the_interval(jitter: float) -> None:
    assert max(_delays(10, jitter=jitter, max_backoff=15.0, interval=4.0)) <= 4.0 + EPSILON


class UpRouter:
    async def router_status(self) -> RouterStatus:
        return RouterStatus("OK", 3_600_000)

    async def leaf_status(self) -> list[Any]:
        return []


@pytest.mark.parametrize("publish_config", ["on", "off", "auto"])
def test_the_operators_publish_config_is_what_the_record_says(publish_config: str) -> None:
    submitted: list[bytes] = []

    async def submit(data: bytes) -> int:
        submitted.append(data)
        return 7

    core = types.SimpleNamespace(id=3, is_leader=lambda: True)
    driver = types.SimpleNamespace(core=core, submit=submit)
    clock = Clock()
    reporter = StatusReporter(
        clock,
        driver,  # type: ignore[arg-type]
        lambda leader, request: None,  # type: ignore[arg-type,return-value]
        UpRouter(),  # type: ignore[arg-type]
        "farm",
        publish_config=publish_config,
    )
    reporter.start()
    clock.advance(0)
    reporter.stop()
    (data,) = submitted
    record = parse_entry(data, "farm")
    assert isinstance(record, StatusRecord) and record.id == 3
    assert record.meta.publishConfig == publish_config
