"""What the publishers' tests read of a publish: its outcome (these publishers decide at once on a
test's Clock), the PublishError's words, and the seconds until each pending renewal or retry."""

from __future__ import annotations

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.router.publishers import PublishError


def outcome(d: Deferred[None]) -> Failure | None:
    """The Deferred's result, which it has at once here: None, or the Failure."""
    results: list[Failure | None] = []
    d.addBoth(results.append)
    assert len(results) == 1
    return results[0]


def failure_text(d: Deferred[None]) -> str:
    """The message of the PublishError the Deferred failed with."""
    failure = outcome(d)
    assert failure is not None and failure.check(PublishError)
    return str(failure.value)


def delays(clock: Clock) -> list[float]:
    """The seconds until each pending call (the publisher's renewal or retry)."""
    return [call.getTime() - clock.seconds() for call in clock.getDelayedCalls()]
