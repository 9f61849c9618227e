"""A simulated server run by the real :class:`RaftDriver` (``garlicfarm simulate --driver``).

The plain :class:`SimNode` drains its core with its own copy of the driver's Ready loop; here the
real driver does it, with a :class:`twisted.internet.task.Clock` per node as its reactor (advanced to
the simulated time before each event), a transport that puts requests on the simulated network and
fires their Deferreds when the answer comes back, and the simulated disk (crash points included).
So the driver's own order (persist, advance, then send, reply, apply; snapshot file, compaction,
prune) is what the invariants check.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall
from twisted.internet.task import Clock
from twisted.logger import Logger, LogPublisher
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.types import Ready, is_vote_grant
from garlicfarm.raft.writers import InlineWriter
from garlicfarm.sim.disk import DiskCrash
from garlicfarm.sim.node import Origin, SimNode
from garlicfarm.wire.messages import Message, Request, RequestVoteResponse, Response
from garlicfarm.wire.payloads import LogEntry


class DelayedWriter:
    """A disk that takes time (``garlicfarm simulate --driver --disk-latency MS``): each write given
    to it runs on the node's clock up to ``2 * mean`` seconds later, after the one before, as the
    service's writer thread does; what had not run when the node crashes is lost with it."""

    def __init__(self, clock: Clock, node: DriverSimNode) -> None:
        self.clock = clock
        self.node = node
        self._rng: random.Random | None = None
        self._last = 0.0
        self._calls: list[IDelayedCall] = []
        self._dead = False

    def write(self, job: Callable[[], None]) -> Deferred[None]:
        if self._dead:
            return Deferred()  # the machine died: this write never happens, and nobody hears of it
        mean = self.node.disk_latency
        if not mean and not self._calls:
            return InlineWriter().write(job)  # no latency: the seed runs as it always did
        if self._rng is None:  # drawn from the node's stream only when the disk takes time
            self._rng = random.Random(self.node.rng.getrandbits(64))
        d: Deferred[None] = Deferred()
        due = max(self._last, self.clock.seconds() + self._rng.uniform(0, 2 * mean))
        self._last = due

        def run() -> None:
            self._calls.remove(call)
            InlineWriter().write(job).chainDeferred(d)

        call = self.clock.callLater(due - self.clock.seconds(), run)
        self._calls.append(call)
        return d

    def stop(self) -> None:
        pass

    def crash(self) -> None:
        """The machine died: the writes not done yet never happen, nor any given to it later."""
        self._dead = True
        calls, self._calls = self._calls, []
        for call in calls:
            call.cancel()


class _Transport:
    def __init__(self, node: DriverSimNode) -> None:
        self.node = node

    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        return self.node.send_request(to, message)


class _CheckedDriver(RaftDriver):
    """The real driver; the simulator looks at each Ready before the driver handles it."""

    #: a crash at a durable write is logged by the driver as a failure: thousands per sweep
    log = Logger(observer=LogPublisher())  # a publisher with no observers: discarded
    sim: DriverSimNode

    def _handle(self, ready: Ready) -> None:
        self.sim._check_entries(self.core, ready)
        if self.sim.mutations.count_unwritten and ready.needs_persist():
            self.core.advance(ready)  # the mutant: our own log counts before its write ended
        if self.sim.mutations.send_before_persist:
            # the mutant driver: messages and answers leave before the store's write
            for send in ready.sends:
                self.transport.send(send.to, send.message, send.endpoint).addCallbacks(
                    self._on_response, self._on_send_failure, errbackArgs=(send.to,)
                )
            for reply in ready.replies:
                pending = self._pending.pop(reply.handle, None)
                if pending is not None:
                    pending.callback(reply.message)
            ready = attrs.evolve(ready, sends=(), replies=())
        super()._handle(ready)
        if ready.snapshot is not None:
            self.sim.checker.restored(self.sim.id, ready.snapshot.meta.last_index, ready.snapshot.data)


class DriverSimNode(SimNode):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.driver: _CheckedDriver | None = None
        self.clock = Clock()
        self._awaiting: dict[int, Deferred[Response]] = {}
        self._request_ids = itertools.count(1)
        self.writer: DelayedWriter | None = None
        super().__init__(*args, **kwargs)

    def start(self) -> None:
        super().start()
        core = self.core
        if core is None:
            return
        driver = _CheckedDriver(
            core,
            self.store,
            self.clock,
            _Transport(self),
            tick_seconds=1e9,  # ticks come from the simulator's (skewed) tick events
            on_apply=self._applied_by_driver,
            submit_timeout=0.4,
            state_machine=self.machine,
            snapshots=self.snapshots,
            snapshot_every=self.compact_every or 10**9,
            # as the service runs it: a reactor turn's messages share one Ready, drained by a
            # callLater(0) -- after the caller attached its callbacks to handle_request's Deferred
            group_commit=True,
            writer=self._new_writer(),
        )
        driver.sim = self
        driver.on_failure.append(self._driver_failed)
        self.driver = driver
        driver.start()

    def _new_writer(self) -> DelayedWriter:
        self.writer = DelayedWriter(self.clock, self)
        return self.writer

    def crash(self) -> None:
        if self.writer is not None:
            self.writer.crash()
        driver, self.driver = self.driver, None
        if driver is not None and driver.running:
            driver.stop()
        self._awaiting = {}
        super().crash()

    def _driver_failed(self, failure: Failure) -> None:
        if failure.check(DiskCrash):
            self.crash()  # the simulated machine died just before a durable write
        else:
            self.checker.fail("driver stopped", f"node {self.id}: {failure.getErrorMessage()}")

    def _catch_up_clock(self) -> bool:
        """Bring the node's clock to the simulated time (writes that were due end now, and may crash
        the node); whether the node is still up."""
        if self.driver is not None:
            self.clock.advance(max(0.0, self.checker.now / 1000 - self.clock.seconds()))
        return self.driver is not None

    def _turn(self, act: Callable[[RaftDriver], object]) -> None:
        """One reactor turn of a node that is up: ``act`` on its driver, then the turn's end (the
        driver drains its core)."""
        if not self._catch_up_clock():
            return
        assert self.driver is not None
        act(self.driver)
        self.clock.advance(0)
        self._after()

    def tick(self) -> None:
        self._turn(lambda driver: driver._tick())

    def transfer(self, target: int | None) -> None:
        self._turn(lambda driver: driver.transfer_leadership(target))

    def link_up(self, peer: int) -> None:
        self._turn(lambda driver: driver.link_up(peer))

    def receive(self, message: Message, origin: Origin | None) -> None:
        if not self._catch_up_clock():
            return
        driver = self.driver
        assert driver is not None
        if isinstance(message, Request):
            assert origin is not None
            d = driver.handle_request(message)
            d.addCallbacks(self._answer, lambda _f: None, callbackArgs=(origin,))
            self.clock.advance(0)  # the end of this reactor turn: the driver drains the core
        else:
            waiting = None if origin is None or origin.op is None else self._awaiting.pop(origin.op, None)
            if waiting is not None:
                waiting.callback(message)
                self.clock.advance(0)
        self._after()

    def _answer(self, response: Response, origin: Origin) -> None:
        if self.driver is None:
            return  # crashed before answering: the answer is lost with it
        if origin.node is not None:
            self._send(self.id, origin.node, response, Origin(node=origin.node, op=origin.op))
            if isinstance(response, RequestVoteResponse) and is_vote_grant(response):
                self.checker.voted(self.id, response.term, origin.node)
                if self.crash_after_vote and self.rng.random() < self.crash_after_vote:
                    self.crash_points.force_next = True  # the node dies at its next durable write
        else:
            self._on_reply(origin, response)

    def send_request(self, to: int, message: Request) -> Deferred[Response]:
        d: Deferred[Response] = Deferred()
        request_id = next(self._request_ids)
        self._awaiting[request_id] = d
        self._send(self.id, to, message, Origin(node=self.id, op=request_id))
        return d

    def _applied_by_driver(self, index: int, entry: LogEntry) -> None:
        if self.checker.applied(self.id, index, entry, self.machine.snapshot()):
            self._on_apply(self.id, index, entry)

    def _after(self) -> None:
        core: RaftCore | None = self.core
        if core is not None and self.driver is not None:
            self._observe(core)
