"""What the router tests read of a Deferred: its outcome or value (these clients and publishers decide at once
on a test's clock), a PublishError's words, and the seconds until each pending renewal or retry."""

from __future__ import annotations

from typing import TypeVar

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.router.publishers import PublishError

T = TypeVar("T")


def outcome(d: Deferred[T]) -> T | Failure:
    """The Deferred's result, which it has at once here: its value, or the Failure."""
    results: list[T | Failure] = []
    d.addBoth(results.append)
    assert len(results) == 1, "not finished"
    return results[0]


def value(d: Deferred[T]) -> T:
    """The value the Deferred succeeded with (it must not have failed)."""
    result = outcome(d)
    assert not isinstance(result, Failure), result
    return result


def failure_text(d: Deferred[None]) -> str:
    """The message of the PublishError the Deferred failed with."""
    failure = outcome(d)
    assert isinstance(failure, Failure) and failure.check(PublishError), failure
    return str(failure.value)


def delays(clock: Clock) -> list[float]:
    """The seconds until each pending call (the publisher's renewal or retry)."""
    return [call.getTime() - clock.seconds() for call in clock.getDelayedCalls()]
