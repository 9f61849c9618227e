"""Nothing on the apply or snapshot path raises into the reactor: a failure stops the node loudly,
naming the entry, and the node then says it stopped everywhere; junk never enters the log.

Regressions (issue 13): a status record with a lone surrogate made every ``snapshot()`` raise, the
exception escaped ``RaftDriver._process`` and the tick LoopingCall died silently; a forged
InstallSnapshot with garbage data was installed and the node died at every start.
"""

from __future__ import annotations

import json
import random
from typing import Any, cast

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import ILogObserver, LogLevel, globalLogPublisher

from garlicfarm.app.state import FarmState
from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import EntryRefused, RaftDriver
from garlicfarm.raft.types import RaftOptions, Role
from garlicfarm.storage.interface import StorageError
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.snapshots import MemorySnapshotStore
from garlicfarm.wire import (
    AppendEntriesResponse,
    Application,
    ClientRequest,
    ClusterServer,
    Configuration,
    InstallSnapshotRequest,
    LogEntry,
    Request,
    Response,
    SnapshotSyncRequest,
)

CONFIG = Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"),))
OPTIONS = RaftOptions(election_ticks=10, heartbeat_ticks=2)


class NoPeers:
    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        return Deferred()


class Exploding(FarmState):
    """A state machine with a bug: it raises on one entry."""

    def apply(self, index: int, entry: LogEntry) -> None:
        if isinstance(entry.value, Application) and entry.value.data == b'{"boom":1}':
            raise RuntimeError("a bug in the state machine")
        super().apply(index, entry)


def one_node(
    state: FarmState, configuration: Configuration = CONFIG, me: int = 1
) -> tuple[Clock, RaftDriver]:
    clock = Clock()
    store = MemoryLogStore()
    core = RaftCore(me, store.load(), random.Random(1), configuration, OPTIONS)
    driver = RaftDriver(
        core, store, clock, NoPeers(), 0.01, state_machine=state, snapshots=MemorySnapshotStore()
    )
    driver.start()
    for _ in range(100):
        clock.advance(0.01)
    return clock, driver


def record(**fields: Any) -> bytes:
    base = {"cluster": "farm", "date": 1_700_000_000_000, "id": 1}
    base.update(fields)
    return json.dumps(base).encode()


def test_an_exception_in_apply_stops_the_node_naming_the_entry() -> None:
    events: list[dict[str, Any]] = []
    observer = cast(ILogObserver, events.append)
    globalLogPublisher.addObserver(observer)
    try:
        clock, driver = one_node(Exploding("farm"))
        assert driver.core.is_leader()
        failed: list[Any] = []
        driver.submit(b'{"boom":1}').addErrback(failed.append)
        for _ in range(10):
            clock.advance(0.01)  # nothing escapes into the reactor
    finally:
        globalLogPublisher.removeObserver(observer)
    assert not driver.running
    critical = [e for e in events if e.get("log_level") is LogLevel.critical]
    assert any("state machine failed on log entry" in e.get("what", "") for e in critical), critical
    status = driver.status()
    assert (status["role"], status["leader"]) == ("stopped", None)
    assert "a bug in the state machine" in status["stopped_by"]
    assert not clock.getDelayedCalls() or all(not c.active() for c in clock.getDelayedCalls())


def test_an_exception_in_the_core_tick_stops_the_node_instead_of_killing_the_timer() -> None:
    clock, driver = one_node(FarmState("farm"))

    def broken(count: int = 1) -> None:
        raise ValueError("an unencodable term")

    driver.core.tick = broken  # type: ignore[method-assign]
    clock.advance(1.0)  # (a sleeping driver ticks the core when a tick is due: a heartbeat's)
    assert not driver.running
    assert driver.core.role is Role.STOPPED
    assert driver.on_failure == []  # nobody registered; stopping was still clean


def test_the_leader_refuses_junk_before_it_enters_the_log() -> None:
    clock, driver = one_node(FarmState("farm"))
    last = driver.core.log.last_index
    answers: list[Response] = []
    junk = (
        b"x" * (64 * 1024 + 1),  # larger than any record apply would take
        record(router={"netStatus": "\\ud800"}).replace(b"\\\\ud800", b"\\ud800"),
        b'{"id":99,"id":2}',
        record(date=253_402_300_800_000),  # the year 10000
    )
    for data in junk:
        request = ClientRequest(entries=(LogEntry(0, Application(data)),))
        driver.handle_request(request).addCallback(answers.append)
    clock.advance(0.01)
    assert [a.accepted for a in answers] == [False] * len(junk)
    assert all(isinstance(a, AppendEntriesResponse) and a.destination == a.source == 1 for a in answers)
    assert driver.core.log.last_index == last  # nothing appended, nothing replicated
    refused: list[Any] = []
    driver.submit(junk[0]).addErrback(lambda f: refused.append(f.check(EntryRefused)))
    assert refused == [EntryRefused]
    # a valid entry batched with junk is not half-taken: the whole request is refused
    mixed = ClientRequest(entries=(LogEntry(0, Application(record())), LogEntry(0, Application(junk[2]))))
    driver.handle_request(mixed).addCallback(answers.append)
    clock.advance(0.01)
    assert answers[-1].accepted is False and driver.core.log.last_index == last


def test_a_forged_snapshot_is_refused_and_nothing_is_installed() -> None:
    two = Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"), ClusterServer(2, "tcp://x:1")))
    state = FarmState("farm")
    clock, driver = one_node(state, two, me=2)
    before = state.snapshot()
    chunk = SnapshotSyncRequest(50, 3, two, 0, b"\x00garbage, not a FarmState", True)
    forged = InstallSnapshotRequest(
        source=1, destination=2, term=3, last_log_term=3, last_log_index=50, entries=(LogEntry(3, chunk),)
    )
    answers: list[Response] = []
    driver.handle_request(forged).addCallback(answers.append)
    clock.advance(0.01)
    assert [a.accepted for a in answers] == [False]
    assert driver.running
    assert driver.core.log.snapshot_index == 0 and driver.core.commit == 0
    assert state.snapshot() == before
    assert driver.snapshots is not None and driver.snapshots.load() is None


class FullDisk(MemoryLogStore):
    def __init__(self) -> None:
        super().__init__()
        self.full = False

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.full:
            raise StorageError("disk full")
        super().save(*args, **kwargs)


def test_a_storage_failure_stops_the_node_and_it_says_so() -> None:
    """Regression: a node stopped by a full disk went on answering status as "leader, term 1"."""
    clock = Clock()
    store = FullDisk()
    core = RaftCore(1, store.load(), random.Random(1), CONFIG, OPTIONS)
    driver = RaftDriver(core, store, clock, NoPeers(), 0.01, state_machine=FarmState("farm"))
    stopped: list[Any] = []
    driver.on_failure.append(stopped.append)
    driver.start()
    for _ in range(100):
        clock.advance(0.01)
    assert driver.core.is_leader()
    store.full = True
    driver.submit(record()).addErrback(lambda _f: None)
    clock.advance(0.01)
    assert not driver.running and len(stopped) == 1
    status = driver.status()
    assert (status["role"], status["leader"]) == ("stopped", None)
    assert "disk full" in status["stopped_by"]
