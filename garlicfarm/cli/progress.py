"""Progress of a long command on stderr: throttled, and rewritten in place on a terminal."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """``done/total`` runs, the violations so far, the time spent and an estimate of what is left;
    at most one line per ``interval`` seconds (and the last), also while nothing finishes (a ticker)."""

    def __init__(
        self,
        stream: TextIO,
        total: int,
        interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.total = total
        self.interval = interval
        self.clock = clock
        self.tty = stream.isatty()
        self.started = clock()
        self.done = self.violations = 0
        self._shown = -interval
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self) -> None:
        """Show the progress every ``interval`` seconds even while no run finishes."""
        self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._ticker.start()

    def update(self, done: int, violations: int) -> None:
        with self._lock:
            self.done, self.violations = done, violations
        if done >= self.total or self.clock() - self.started - self._shown >= self.interval:
            self._show()

    def finish(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        elapsed = self.clock() - self.started
        percent = 100 * self.done // max(1, self.total)
        text = f"{self.done}/{self.total} runs ({percent}%), {self.violations} violations, {elapsed:.0f}s"
        if 0 < self.done < self.total:
            text += f", about {elapsed * (self.total - self.done) / self.done:.0f}s left"
        return text

    def _show(self) -> None:
        with self._lock:
            self._shown = self.clock() - self.started
            line = self.line()
            self.stream.write(f"\r{line}\x1b[K" if self.tty else f"{line}\n")
            self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            if self.clock() - self.started - self._shown >= self.interval:
                self._show()
