"""Shared pieces of the connection budgets: a protocol that closes at once, rate-limited log lines,
and one node-wide memory budget for partly received messages.

A flood must cost the node a bounded amount of everything: file descriptors (a refused connection is
closed at once), memory (partial messages of all connections share one budget) and log (one line per
kind of event per interval, however many events).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.logger import Logger, LogLevel
from twisted.python.failure import Failure


class CloseAtOnce(Protocol):
    """What a factory builds for a connection it refuses.

    Returning ``None`` from ``buildProtocol`` is not an option under TLS: Twisted's TLS wrapper then
    raises AttributeError and never closes the socket. Aborting from ``connectionMade`` closes the TCP
    connection at once (under TLS, before the handshake starts).
    """

    def connectionMade(self) -> None:
        abort = getattr(self.transport, "abortConnection", None)
        if abort is not None:
            abort()
        elif self.transport is not None:
            self.transport.loseConnection()

    def dataReceived(self, data: bytes) -> None:
        pass  # nothing a refused peer says matters

    def connectionLost(self, reason: Failure | None = None) -> None:
        pass


class _Window:
    __slots__ = ("count", "fields", "fmt", "level", "timer")

    def __init__(self, timer: IDelayedCall, fmt: str, level: LogLevel) -> None:
        self.timer = timer
        self.fmt = fmt
        self.level = level
        self.count = 0
        self.fields: dict[str, Any] = {}


class RateLimitedLog:
    """At most one line per key per ``interval`` seconds, however many events.

    The first event of a quiet key is logged in full at once; later ones in the same interval are only
    counted, and when the interval ends one summary line says how many there were (naming the latest),
    then a new interval starts. A key that stays quiet for a whole interval starts over.
    """

    def __init__(self, clock: IReactorTime, log: Logger, interval: float = 10.0) -> None:
        self._clock = clock
        self._log = log
        self.interval = interval
        self._windows: dict[Hashable, _Window] = {}
        #: lines written, for tests and status
        self.lines = 0

    @property
    def open_windows(self) -> int:
        """Keys counting right now (each holds one delayed call)."""
        return len(self._windows)

    def event(self, key: Hashable, fmt: str, level: LogLevel = LogLevel.warn, **fields: Any) -> None:
        window = self._windows.get(key)
        if window is not None:
            window.count += 1
            window.fmt, window.fields = fmt, fields
            return
        self._write(level, fmt, fields)
        self._open(key, fmt, level)

    def _open(self, key: Hashable, fmt: str, level: LogLevel) -> None:
        self._windows[key] = _Window(self._clock.callLater(self.interval, self._close, key), fmt, level)

    def _close(self, key: Hashable) -> None:
        window = self._windows.pop(key)
        if window.count == 0:
            return
        self._summarise(window, f"in the last {self.interval:g} s")
        self._open(key, window.fmt, window.level)

    def _summarise(self, window: _Window, when: str) -> None:
        self._write(window.level, f"{window.count} more {when}, the latest: {window.fmt}", window.fields)

    def _write(self, level: LogLevel, fmt: str, fields: dict[str, Any]) -> None:
        self.lines += 1
        self._log.emit(level, fmt, **fields)

    def stop(self) -> None:
        """Write what is counted and cancel the timers (a stopped listener leaves no delayed calls)."""
        for key, window in list(self._windows.items()):
            window.timer.cancel()
            del self._windows[key]
            if window.count:
                self._summarise(window, "since the last line like it")


class BufferBudget:
    """Bytes of partly received messages, over all connections of a node.

    Each connection reports how many bytes its decoder holds after taking out every whole message; a
    report that would take the total past ``limit`` is refused, and the connection is dropped (which
    frees its bytes). Without it, 256 connections that each park one 16 MiB - 1 byte frame hold 4 GiB.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._held: dict[object, int] = {}

    def update(self, holder: object, nbytes: int) -> bool:
        """Record that ``holder`` now buffers ``nbytes``; False (and nothing recorded) if over budget."""
        before = self._held.get(holder, 0)
        total = self.total - before + nbytes
        if nbytes > before and total > self.limit:
            return False
        self.total = total
        if nbytes:
            self._held[holder] = nbytes
        else:
            self._held.pop(holder, None)
        return True

    def release(self, holder: object) -> None:
        self.total -= self._held.pop(holder, 0)

    def held(self, holder: object) -> int:
        return self._held.get(holder, 0)
