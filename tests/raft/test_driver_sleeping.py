"""The sleeping driver (one timer for the next due tick) against the fixed-rate one (a tick every
tick_seconds): fed the same events at the same times, they send the same messages, give the same
answers and leave their cores in the same state, step by step. And the core's ``tick(n)`` is n ticks.

Times are binary fractions (a tick of 1/64 s, steps of 1/512 s) so that both drivers' clocks agree to
the bit on which step a tick falls, and no two nodes act at the same instant."""

from __future__ import annotations

import copy
import random
from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.driver import MAX_SLEEP, RaftDriver
from garlicfarm.raft.types import RaftOptions
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import AddServerRequest, ClusterServer, Configuration, LogEntry, Request, Response
from tests.raft.harness import Cluster

TICK = 1 / 64
STEP = 1 / 512
DELAY = 3 / 512
OPTIONS = RaftOptions(election_ticks=10, heartbeat_ticks=3)
#: the same with ranked campaigns (a follower's timeout set by its place after the leader)
RANKED = attrs.evolve(OPTIONS, campaign_rank_ticks=4)


class Farm:
    """Three drivers on one Clock; links can be cut; every message and answer is recorded."""

    def __init__(self, seed: int, fixed_rate: bool, options: RaftOptions = OPTIONS) -> None:
        self.clock = Clock()
        self.record: list[tuple[Any, ...]] = []
        self.cut: set[tuple[int, int]] = set()
        bootstrap = Configuration(
            0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3))
        )
        self.drivers: dict[int, RaftDriver] = {}
        for i in (1, 2, 3):
            store = MemoryLogStore()
            core = RaftCore(i, store.load(), random.Random(seed * 10 + i), bootstrap, options)
            self.drivers[i] = RaftDriver(
                core,
                store,
                self.clock,
                _Transport(self, i),
                TICK,
                group_commit=True,
                submit_timeout=40 * TICK,
                fixed_rate=fixed_rate,
            )
        for driver in self.drivers.values():
            # Each node's ticks a little apart (1/4096 s; messages take a multiple of 8 of those):
            # what two nodes do at the same instant would come in an order neither driver decides.
            self.clock.advance(1 / 4096)
            driver.start()

    def note(self, *what: Any) -> None:
        self.record.append((self.clock.seconds(), *what))

    def outcome(self, what: str, d: Deferred[Any]) -> None:
        def ok(result: Any) -> None:
            self.note(what, "ok", result)

        def failed(failure: Failure) -> None:
            self.note(what, "failed", type(failure.value).__name__)

        d.addCallbacks(ok, failed)

    def state(self) -> list[dict[str, Any]]:
        return [d.status() for d in self.drivers.values()]

    def counters(self) -> list[tuple[int, ...]]:
        return [
            (
                d.core._election_elapsed,
                d.core._heartbeat_elapsed,
                d.core._randomized_timeout,
                d.core._transfer_elapsed,
                d.core.election_backoff,
            )
            for d in self.drivers.values()
        ]


class _Transport:
    def __init__(self, farm: Farm, me: int) -> None:
        self.farm = farm
        self.me = me

    def send(self, to: int, message: Request, endpoint: str | None = None) -> Deferred[Response]:
        farm = self.farm
        farm.note("send", self.me, to, message)
        d: Deferred[Response] = Deferred()

        def deliver() -> None:
            peer = farm.drivers[to]
            if (self.me, to) in farm.cut or not peer.running:
                return

            def answer(response: Response) -> None:
                farm.note("answer", to, self.me, response)
                if (to, self.me) not in farm.cut:
                    farm.clock.callLater(DELAY, d.callback, response)

            peer.handle_request(message).addCallback(answer)

        farm.clock.callLater(DELAY, deliver)
        return d


def events(seed: int, steps: int) -> dict[int, list[tuple[Any, ...]]]:
    """What happens at which step: submissions, partitions and heals, handovers."""
    rng = random.Random(seed)
    plan: dict[int, list[tuple[Any, ...]]] = {}
    for n in range(steps // 40):
        at = rng.randrange(steps)
        kind = rng.choice(["submit", "submit", "submit", "isolate", "heal", "transfer", "cut"])
        node = rng.randint(1, 3)
        plan.setdefault(at, []).append((kind, node, n, rng.randint(1, 3)))
    return plan


def apply(farm: Farm, event: tuple[Any, ...]) -> None:
    kind, node, n, other = event
    driver = farm.drivers[node]
    if kind == "submit":
        farm.outcome(f"submit {n}", driver.submit(b"%d" % n))
    elif kind == "isolate":
        farm.cut |= {(node, j) for j in (1, 2, 3)} | {(j, node) for j in (1, 2, 3)}
    elif kind == "cut":
        farm.cut.add((node, other))
    elif kind == "heal":
        farm.cut.clear()
    elif kind == "transfer":
        farm.outcome(f"transfer {n}", driver.transfer_leadership())


@pytest.mark.parametrize("options", [OPTIONS, RANKED], ids=["random", "ranked"])
@pytest.mark.parametrize("look", [False, True], ids=["asleep", "looked-at-every-step"])
@pytest.mark.parametrize("seed", range(12))
def test_the_sleeping_driver_does_what_the_ticking_one_does(
    seed: int, look: bool, options: RaftOptions
) -> None:
    steps = 8 * 64 * 6  # six seconds of ticks
    plan = events(seed, steps)
    ticking = Farm(seed, fixed_rate=True, options=options)
    sleeping = Farm(seed, fixed_rate=False, options=options)
    woken = 0
    for step in range(steps):
        for event in plan.get(step, ()):
            apply(ticking, event)
            apply(sleeping, event)
        ticking.clock.advance(STEP)
        before = len(sleeping.clock.getDelayedCalls())
        sleeping.clock.advance(STEP)
        woken += before != len(sleeping.clock.getDelayedCalls())
        if look:  # a catch-up at any time (what any message does first) changes nothing either
            for driver in sleeping.drivers.values():
                driver._catch_up()
            assert sleeping.counters() == ticking.counters(), f"step {step}"
        assert sleeping.state() == ticking.state(), f"step {step}"
        assert sleeping.record == ticking.record, f"step {step}"
    for driver in sleeping.drivers.values():
        driver._catch_up()
    assert sleeping.counters() == ticking.counters()
    assert any(d.core.is_leader() for d in sleeping.drivers.values()) or plan
    assert len(sleeping.record) > 100


def test_a_follower_at_rest_is_not_woken_and_a_leader_only_for_heartbeats() -> None:
    farm = Farm(1, fixed_rate=False)
    wakes = {i: 0 for i in farm.drivers}
    for i, driver in farm.drivers.items():
        original = driver._wake

        def counted(i: int = i, original: Any = original) -> None:
            wakes[i] += 1
            original()

        driver._wake = counted  # type: ignore[method-assign]
    for _ in range(8 * 64):
        farm.clock.advance(STEP)  # one second: an election
    leader = next(i for i, d in farm.drivers.items() if d.core.is_leader())
    wakes = dict.fromkeys(wakes, 0)
    for _ in range(8 * 64 * 3):
        farm.clock.advance(STEP)  # three seconds at rest
    # the ticks that send heartbeats, and those that check the quorum (every election timeout)
    due = [k for k in range(3 * 64) if k % OPTIONS.heartbeat_ticks == 0 or k % OPTIONS.election_ticks == 0]
    assert len(due) - 2 <= wakes[leader] <= len(due) + 2
    assert all(wakes[i] == 0 for i in farm.drivers if i != leader)


def test_a_stalled_follower_hears_the_queued_heartbeat_before_its_timer_runs_out() -> None:
    """A reactor late by many ticks (a paused process): the due tick waits for the next tick of the
    grid, so that the messages that queued up meanwhile are read first, as with a fixed rate."""
    farm = Farm(2, fixed_rate=False)
    for _ in range(8 * 64):
        farm.clock.advance(STEP)
    leader = next(d for d in farm.drivers.values() if d.core.is_leader())
    term = leader.core.term
    farm.clock.advance(1.0)  # every timer is a second late, heartbeats still in flight
    for _ in range(8 * 64):
        farm.clock.advance(STEP)
    assert leader.core.is_leader() and all(d.core.term == term for d in farm.drivers.values())


@pytest.mark.parametrize("options", [OPTIONS, RANKED], ids=["random", "ranked"])
@pytest.mark.parametrize("seed", range(30))
def test_the_core_ticked_n_times_at_once_is_the_core_ticked_n_times(seed: int, options: RaftOptions) -> None:
    """Cores in the states a cluster goes through (elections, leading, lost messages, a handover, a
    server joining that never answers): tick(n) from any of them leaves the same state and output
    as n whole ticks."""
    rng = random.Random(seed)
    cluster = Cluster(3, options=options, seed=seed)
    for _ in range(150):
        i = rng.choice(cluster.live())
        action = rng.random()
        if action < 0.5:
            cluster.tick(i, rng.randint(1, 12))
        elif action < 0.8:
            cluster.deliver()
        elif action < 0.9:
            cluster.drop()
        elif cluster[i].is_leader() and action < 0.94:
            cluster.propose(i, b"x")
        elif cluster[i].is_leader() and action < 0.97:
            cluster[i].transfer_leadership()
        elif cluster[i].is_leader():
            # a fourth server that never answers: the leader invites it, resends, gives up
            joining = LogEntry(0, ClusterServer(4, "tcp://127.0.0.1:9004"))
            cluster.step(i, AddServerRequest(entries=(joining,)))
        if rng.random() < 0.8:
            cluster.flush()  # (else the next ticks come on top of a Ready not drained yet)
        cluster.drop(lambda envelope: envelope.dst == 4)
        for core_id in cluster.live():
            core = cluster[core_id]
            n = rng.randint(1, 40)
            at_once, one_by_one = copy.deepcopy(core), copy.deepcopy(core)
            at_once.tick(n)
            for _ in range(n):
                one_by_one._tick()  # a whole tick, bound or not
            assert _inside(at_once) == _inside(one_by_one)
            assert _output(at_once) == _output(one_by_one)


def _inside(core: RaftCore) -> dict[str, Any]:
    state = {k: _plain(v) for k, v in vars(core).items() if k not in ("_rng", "snapshot_check")}
    return state | {"rng": core._rng.getstate()}


def _plain(value: Any) -> Any:
    """Every field of every object inside ``value``, as comparable built-in values."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset) or type(value).__name__ == "deque":
        return [_plain(v) for v in value]
    slots = getattr(type(value), "__slots__", None)
    if slots and not hasattr(value, "__dict__"):
        return (type(value).__name__, {k: _plain(getattr(value, k)) for k in slots})
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return (type(value).__name__, {k: _plain(v) for k, v in vars(value).items()})
    return value


def _output(core: RaftCore) -> Any:
    ready = core.ready() if core.has_ready() else None
    return None if ready is None else (ready.sends, ready.replies, ready.hard_state, ready.entries)


def test_a_reactor_always_late_by_ticks_still_elects_and_sends_heartbeats() -> None:
    """Every turn longer than several ticks: a due tick is put off once, never for ever."""
    farm = Farm(3, fixed_rate=False)
    for _ in range(200):
        farm.clock.advance(5 * TICK + STEP)
    leaders = [d for d in farm.drivers.values() if d.core.is_leader()]
    assert len(leaders) == 1
    sent = len(farm.record)
    for _ in range(50):
        farm.clock.advance(5 * TICK + STEP)
    assert leaders[0].core.is_leader() and len(farm.record) > sent + 50


def _outsider() -> tuple[Clock, RaftCore, RaftDriver]:
    """A started server 4 outside the configuration of 1, 2 and 3: it never campaigns, hears nobody."""
    clock = Clock()
    store = MemoryLogStore()
    others = Configuration(0, 0, tuple(ClusterServer(i, f"tcp://127.0.0.1:{9000 + i}") for i in (1, 2, 3)))
    core = RaftCore(4, store.load(), random.Random(4), others, OPTIONS)
    driver = RaftDriver(core, store, clock, _Transport(Farm(0, True), 4), TICK)
    driver.start()
    return clock, core, driver


def test_a_node_nothing_wakes_still_looks_at_its_clock_for_livez() -> None:
    """A server outside the configuration never campaigns and hears nobody: its driver still looks at
    the clock every MAX_SLEEP, so that /livez tells its turning reactor from a stuck one."""
    clock, core, driver = _outsider()
    assert core.ticks_until_due() is None
    for _ in range(40):
        clock.advance(0.25)
        assert driver.last_tick is not None and clock.seconds() - driver.last_tick <= MAX_SLEEP
    assert len(clock.getDelayedCalls()) == 1  # one timer, never a tick a tick
    driver._catch_up()
    assert core._election_elapsed == int(10.0 / TICK) and core.role.value == "follower"


def test_a_failure_when_the_timer_wakes_stops_the_node_loudly() -> None:
    """The wake timer runs the core's ``ticks_until_due``: should it raise (a bug), the node stops and
    says why, instead of the timer dying with the node left silently asleep."""
    clock, core, driver = _outsider()

    def broken() -> int | None:
        raise RuntimeError("a bug in the core")

    core.ticks_until_due = broken  # type: ignore[method-assign]
    clock.advance(MAX_SLEEP + TICK)
    assert driver.stopped_by is not None and driver.stopped_by.check(RuntimeError)
    assert not driver.running
