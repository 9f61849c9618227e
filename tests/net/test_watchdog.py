"""One reactor timer for the deadlines of every open request on a connection."""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.interfaces import IDelayedCall
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent

from garlicfarm.net.watchdog import Watchdog


def _dog() -> tuple[Clock, Watchdog, list[str]]:
    clock = Clock()
    expired: list[str] = []
    return clock, Watchdog(clock, expired.append), expired


def test_an_open_request_expires_at_its_deadline() -> None:
    clock, dog, expired = _dog()
    dog.watch(5, "a")
    clock.advance(4.9)
    assert expired == []
    clock.advance(0.1)
    assert expired == ["a"]


def test_finished_requests_never_expire_and_share_one_timer() -> None:
    clock, dog, expired = _dog()
    tokens = [dog.watch(5, f"r{i}") for i in range(1000)]
    assert len(clock.getDelayedCalls()) == 1
    for token in tokens:
        dog.done(token)
    clock.advance(10)
    assert expired == [] and clock.getDelayedCalls() == []


def test_the_earliest_open_deadline_wins_whatever_the_order() -> None:
    clock, dog, expired = _dog()
    first = dog.watch(10, "long")
    dog.watch(3, "short")
    clock.advance(3)
    assert expired == ["short"]
    dog.done(first)


def test_after_a_finished_head_the_timer_moves_to_the_next_deadline() -> None:
    clock, dog, expired = _dog()
    head = dog.watch(5, "head")
    clock.advance(2)
    dog.watch(5, "next")  # due at 7
    dog.done(head)
    clock.advance(3)  # the timer fires at 5, finds nothing due, waits for 7
    assert expired == []
    clock.advance(2)
    assert expired == ["next"]


def test_stop_cancels_everything() -> None:
    clock, dog, expired = _dog()
    dog.watch(1, "x")
    dog.stop()
    clock.advance(2)
    assert expired == [] and clock.getDelayedCalls() == []


def test_a_failing_expiry_is_logged_and_the_later_deadlines_still_fire() -> None:
    clock = Clock()
    expired: list[str] = []

    def expire(what: str) -> None:
        expired.append(what)
        if what == "first":
            raise RuntimeError("a bug in the connection's drop")

    dog = Watchdog(clock, expire)
    dog.watch(1, "first")
    dog.watch(2, "second")
    with capturedLogs() as events:
        clock.advance(1)
        clock.advance(1)
    assert expired == ["first", "second"]
    assert any("deadline" in (formatEvent(e) or "") for e in events if e.get("log_failure"))


def test_a_handler_that_stops_the_watchdog_ends_the_round() -> None:
    clock = Clock()
    expired: list[str] = []

    def expire_and_close(what: str) -> None:
        expired.append(what)
        dog.stop()  # what a connection's drop does when its transport closes at once

    dog = Watchdog(clock, expire_and_close)
    dog.watch(1, "a")
    dog.watch(1, "b")
    clock.advance(1)
    assert expired == ["a"] and clock.getDelayedCalls() == []


def test_a_deadline_under_a_second_expires_on_time() -> None:
    """The timer is set for the deadline itself, however close it is."""
    clock, dog, expired = _dog()
    dog.watch(0.25, "soon")
    clock.advance(0.25)
    assert expired == ["soon"]


class CountingClock(Clock):
    """A Clock that counts the timers set on it."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0

    def callLater(
        self, delay: float, callable: Callable[..., object], *args: object, **kw: object
    ) -> IDelayedCall:
        self.timers += 1
        return super().callLater(delay, callable, *args, **kw)


def test_a_handler_that_finishes_another_overdue_request_leaves_the_rest_in_the_round() -> None:
    """An overdue request finished by an earlier handler is skipped and the round goes on: the ones
    after it expire in the same round, with no further timer."""
    clock = CountingClock()
    expired: list[str] = []
    tokens: dict[str, int] = {}

    def expire(what: str) -> None:
        expired.append(what)
        if what == "a":
            dog.done(tokens["b"])

    dog = Watchdog(clock, expire)
    for name in ("a", "b", "c"):
        tokens[name] = dog.watch(1, name)
    clock.advance(1)
    assert expired == ["a", "c"]
    assert clock.timers == 1


def test_finishing_a_request_twice_or_after_it_expired_is_harmless() -> None:
    """``done`` with a token no longer open (an answer after its deadline) does nothing."""
    clock, dog, expired = _dog()
    token = dog.watch(1, "late")
    clock.advance(1)
    dog.done(token)
    dog.done(token)
    assert expired == ["late"]


def test_a_stopped_watchdog_can_watch_again() -> None:
    """After ``stop`` a new deadline schedules a new timer."""
    clock, dog, expired = _dog()
    dog.watch(1, "old")
    dog.stop()
    dog.watch(2, "new")
    clock.advance(2)
    assert expired == ["new"]


def test_requests_with_the_same_deadline_keep_the_timer() -> None:
    """A deadline equal to the timer's does not cancel and reschedule it (requests of one tick)."""
    clock, dog, _expired = _dog()
    dog.watch(5, "a")
    [timer] = clock.getDelayedCalls()
    for i in range(10):
        dog.watch(5, f"r{i}")
    assert clock.getDelayedCalls() == [timer]
