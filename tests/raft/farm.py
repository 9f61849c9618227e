"""A deterministic in-process farm of RaftDrivers on a task.Clock, for membership and snapshot tests."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.raft.types import RaftOptions
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.wire import Application, ClusterServer, Configuration, LogEntry, Request, Response

TICK = 0.01
OPTIONS = RaftOptions(election_ticks=10, heartbeat_ticks=2, snapshot_chunk=64, join_timeout_ticks=100)


def endpoint(server_id: int) -> str:
    return f"tcp://127.0.0.1:{9000 + server_id}"


class Machine:
    """The application: the list of applied values; snapshots are deterministic JSON-ish bytes."""

    def __init__(self) -> None:
        self.values: list[bytes] = []

    def apply(self, index: int, entry: LogEntry) -> None:
        if isinstance(entry.value, Application):
            self.values.append(entry.value.data)

    def check(self, entry: LogEntry) -> str | None:
        return None  # any entry is welcome

    def check_snapshot(self, data: bytes) -> str | None:
        return None

    def snapshot(self) -> bytes:
        return b"\n".join(self.values)

    def restore(self, data: bytes) -> None:
        self.values = data.split(b"\n") if data else []

    def digest(self) -> str:
        return hashlib.sha256(self.snapshot()).hexdigest()


class Transport:
    def __init__(self, farm: Farm, me: int) -> None:
        self.farm = farm
        self.me = me

    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        d: Deferred[Response] = Deferred()

        def deliver() -> None:
            peer = self.farm.drivers.get(to)
            if peer is None or not peer.running or not self.farm.link_up(self.me, to, message):
                return  # lost; the sender's core retries on its own schedule
            reply = peer.handle_request(message)

            def back(response: Response) -> None:
                if self.farm.link_up(to, self.me, response):
                    d.callback(response)

            reply.addCallbacks(back, lambda _f: None)

        self.farm.clock.callLater(0.001, deliver)
        return d


class Farm:
    def __init__(
        self,
        members: int,
        spares: int = 0,
        snapshot_every: int = 10_000,
        machine: Callable[[int], Any] | None = None,
    ) -> None:
        self.clock = Clock()
        self._machine = machine or (lambda _i: Machine())
        self.snapshot_every = snapshot_every
        self.bootstrap = Configuration(
            0, 0, tuple(ClusterServer(i, endpoint(i)) for i in range(1, members + 1))
        )
        self.drivers: dict[int, RaftDriver] = {}
        self.stores: dict[int, MemoryLogStore] = {}
        self.snapshot_stores: dict[int, MemorySnapshotStore] = {}
        self.machines: dict[int, Any] = {}
        #: (src, dst) pairs that lose everything
        self.cut: set[tuple[int, int]] = set()
        #: a hook deciding per message whether it gets through (for cutting a transfer mid-way)
        self.filter: Callable[[int, int, Any], bool] = lambda src, dst, message: True
        for i in range(1, members + spares + 1):
            self.stores[i] = MemoryLogStore()
            self.snapshot_stores[i] = MemorySnapshotStore()
            self.start(i, self.bootstrap if i <= members else Configuration(0, 0, ()))

    def link_up(self, src: int, dst: int, message: object) -> bool:
        return (src, dst) not in self.cut and self.filter(src, dst, message)

    def start(self, i: int, bootstrap: Configuration | None = None) -> RaftDriver:
        machine = self.machines[i] = self._machine(i)
        stored = self.stores[i].load()
        saved = self.snapshot_stores[i].load()
        data = b""
        if stored.snapshot is not None:
            assert saved is not None
            data = saved[1]
            machine.restore(data)
        config = bootstrap if bootstrap is not None else self.bootstrap
        core = RaftCore(i, stored, random.Random(i), config, OPTIONS, data)
        driver = RaftDriver(
            core,
            self.stores[i],
            self.clock,
            Transport(self, i),
            TICK,
            state_machine=machine,
            snapshots=self.snapshot_stores[i],
            snapshot_every=self.snapshot_every,
        )
        self.drivers[i] = driver
        driver.start()
        return driver

    def stop(self, i: int) -> None:
        self.drivers[i].stop()

    def run(self, seconds: float) -> None:
        for _ in range(round(seconds / 0.001)):
            self.clock.advance(0.001)

    def leader(self) -> RaftDriver:
        leaders = [d for d in self.drivers.values() if d.running and d.core.is_leader()]
        assert len(leaders) == 1, {i: d.core.role.value for i, d in self.drivers.items()}
        return leaders[0]

    def wait_for_leader(self, seconds: float = 3.0) -> RaftDriver:
        for _ in range(round(seconds / 0.05)):
            self.run(0.05)
            leaders = [d for d in self.drivers.values() if d.running and d.core.is_leader()]
            if len(leaders) == 1:
                return leaders[0]
        raise AssertionError("no leader elected")

    def submit(self, values: list[bytes], seconds: float = 0.5) -> list[int]:
        leader = self.wait_for_leader()
        results = [leader.submit(v) for v in values]
        self.run(seconds)
        return [outcome(d) for d in results]

    def members(self, i: int) -> set[int]:
        return set(self.drivers[i].core.voters())


def outcome(d: Deferred[Any]) -> Any:
    """The result of a fired Deferred; raises its failure's exception."""
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]
