"""Where the driver's log store writes run: inline (tests, the simulator's default) or, in a running
node, on a thread of their own so that an fsync never holds the reactor (Raft dissertation §10.2.1:
the leader writes its own log while the same entries are on their way to the followers).

Every writer runs its jobs one at a time in the order given, and fires each job's Deferred after the
job and every earlier one ended: the driver's safety argument rests on that order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IReactorCore, IReactorFromThreads
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

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
    it (0.15 ms of an unloaded commit's 1.7, measured: docs/benchmarks.md)."""

    def __init__(self, reactor: Any, name: str = "garlicfarm-log-writer") -> None:
        self._reactor = reactor
        # One thread: a pool of one runs its queue first in, first out.
        self._pool = ThreadPool(minthreads=1, maxthreads=1, name=name)
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
        if not self._pool.started:  # started with the first write: a node never run holds no thread
            self._pool.start()
            # the thread must not outlive the reactor (it would keep the process alive)
            self._reactor.addSystemEventTrigger("during", "shutdown", self.stop)
        done: Deferred[None] = Deferred()
        self._waiting.append((job, done))
        if len(self._waiting) == 1:
            self._reactor.callLater(0, self._reactor.callLater, 0, self._hand_over)
        return done

    def _hand_over(self) -> None:
        """From a reactor timer: a job that cannot be handed over fails (the driver stops the node
        and says why) rather than raise into the reactor and leave its Deferred waiting forever."""
        waiting, self._waiting = self._waiting, []
        for job, done in waiting:
            try:
                handed = deferToThreadPool(self._reactor, self._pool, job)
            except Exception:
                done.errback()
            else:
                handed.chainDeferred(done)

    def stop(self) -> None:
        self._stopped = True
        self._hand_over()
        # ThreadPool.stop lets the worker finish what is queued, then joins it.
        if self._pool.started:
            self._pool.stop()
