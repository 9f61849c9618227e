"""Deadlines of the many requests on one connection, kept with one reactor timer.

A timer per request (a ``callLater`` scheduled and cancelled thousands of times a second) was a
visible share of a loaded leader's time; requests almost always finish long before their deadline,
so one timer that sits at the earliest open deadline, and looks again when it fires, does the job.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger


class Watchdog:
    """``expired(what)`` is called once a deadline passes with its request still open."""

    log = Logger()

    def __init__(self, reactor: IReactorTime, expired: Callable[[str], None]) -> None:
        self._reactor = reactor
        self._expired = expired
        self._open: dict[int, tuple[float, str]] = {}
        self._tokens = itertools.count()
        self._timer: IDelayedCall | None = None

    def watch(self, seconds: float, what: str) -> int:
        """Start a deadline ``seconds`` from now; the token ends it (:meth:`done`)."""
        token = next(self._tokens)
        deadline = self._reactor.seconds() + seconds
        self._open[token] = (deadline, what)
        if self._timer is None or deadline < self._timer.getTime():
            self._schedule(deadline)
        return token

    def done(self, token: int) -> None:
        self._open.pop(token, None)  # the timer stays: when it fires, it looks again

    def stop(self) -> None:
        self._open.clear()
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _schedule(self, deadline: float) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = self._reactor.callLater(max(0.0, deadline - self._reactor.seconds()), self._fire)

    def _fire(self) -> None:
        self._timer = None
        now = self._reactor.seconds()
        overdue = sorted(
            (deadline, token) for token, (deadline, _what) in self._open.items() if deadline <= now
        )
        for _deadline, token in overdue:
            entry = self._open.pop(token, None)
            if entry is None:
                continue  # an earlier handler closed the connection, which stopped us
            what = entry[1]
            try:
                self._expired(what)
            except Exception:
                # a timer must not die with the deadlines behind it: say so, and go on
                self.log.failure("a request deadline's handler failed ({what})", what=what)
        if self._open:
            self._schedule(min(deadline for deadline, _what in self._open.values()))
