"""Where the driver's log store writes run: inline (tests, the simulator's default) or, in a running
node, on a thread of their own so that an fsync never holds the reactor (Raft dissertation §10.2.1:
the leader writes its own log while the same entries are on their way to the followers).

Every writer runs its jobs one at a time in the order given, and fires each job's Deferred after the
job and every earlier one ended: the driver's safety argument rests on that order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, Protocol

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IReactorCore, IReactorFromThreads
from twisted.python.failure import Failure

Job = Callable[[], None]


class Writer(Protocol):
    def write(self, job: Job) -> Deferred[None]:
        """Run ``job`` after every job given before; fires when it ended (fails with its exception)."""

    def stop(self) -> None:
        """Finish the jobs already given, then accept no more."""


class InlineWriter:
    """Runs each job at once, on the caller's thread: the Deferred has fired when ``write`` returns."""

    def write(self, job: Job) -> Deferred[None]:
        try:
            job()
        except BaseException:
            return fail()
        return succeed(None)

    def stop(self) -> None:
        pass


class ThreadWriter:
    """Runs the jobs on one thread of their own, in order; results come back through the reactor.

    A job reaches the thread two reactor turns after it was given, once the messages of its turn
    left: Twisted's TLS encrypts a turn's writes at the start of the next turn, and the socket sends
    them in that turn's I/O. The thread takes the interpreter's lock whenever the reactor lets it go
    (at every system call), so a job handed over at once held back the AppendEntries written beside
    it (0.15 ms of an unloaded commit's 1.7, measured: docs/benchmarks.md).

    The jobs of a turn cross to the thread as one batch and their results come back in one reactor
    call: a plain thread and a ``SimpleQueue`` rather than Twisted's thread pool, which paid a
    context, a worker hand-off and a reactor wake-up for every write of a loaded leader."""

    def __init__(self, reactor: Any, name: str = "garlicfarm-log-writer") -> None:
        self._reactor = reactor
        self._name = name
        self._thread: threading.Thread | None = None
        self._queue: SimpleQueue[list[tuple[Job, Deferred[None]]] | None] = SimpleQueue()
        self._stopped = False
        #: jobs given this turn, in order, with the Deferreds handed out for them
        self._waiting: list[tuple[Job, Deferred[None]]] = []

    @staticmethod
    def usable(reactor: object) -> bool:
        """Whether ``reactor`` can take results from a thread (a test's Clock cannot)."""
        return IReactorFromThreads.providedBy(reactor) and IReactorCore.providedBy(reactor)

    def write(self, job: Job) -> Deferred[None]:
        if self._stopped:
            return fail(RuntimeError("the log writer was stopped"))
        if self._thread is None:  # started with the first write: a node never run holds no thread
            # a daemon: a process that ends without the reactor's shutdown is not held by it (what was not
            # yet written was not acknowledged either)
            thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no thread to be had: the driver stops the node and says why
                return fail()
            self._thread = thread
            # the thread must not outlive the reactor (it would keep the process alive)
            self._reactor.addSystemEventTrigger("during", "shutdown", self.stop)
        done: Deferred[None] = Deferred()
        self._waiting.append((job, done))
        if len(self._waiting) == 1:
            self._reactor.callLater(0, self._reactor.callLater, 0, self._hand_over)
        return done

    def _hand_over(self) -> None:
        waiting, self._waiting = self._waiting, []
        if waiting:
            self._queue.put(waiting)

    def _work(self) -> None:
        """The writer's thread: each batch's jobs in order, a job's failure its own (the ones after
        it still run, as the driver expects of any writer); the outcomes go back in one call."""
        while (batch := self._queue.get()) is not None:
            outcomes: list[Failure | None] = []
            for job, _ in batch:
                try:
                    job()
                except BaseException:
                    outcomes.append(Failure())
                else:
                    outcomes.append(None)
            self._reactor.callFromThread(_fire, batch, outcomes)

    def stop(self) -> None:
        """Finishes the jobs already given (the thread is joined), then refuses more."""
        self._stopped = True
        self._hand_over()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()


def _fire(batch: list[tuple[Job, Deferred[None]]], outcomes: list[Failure | None]) -> None:
    """In the reactor: each job's Deferred, in order."""
    for (_, done), outcome in zip(batch, outcomes, strict=True):
        if outcome is None:
            done.callback(None)
        else:
            done.errback(outcome)
