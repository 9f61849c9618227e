"""A deterministic simulation of a Garlic Farm cluster (FoundationDB-style).

N real Raft cores run in one process against a simulated clock and network. One seed fixes every
decision (delays, drops, partitions, crashes, client timing), so a failing run replays exactly.
"""

from __future__ import annotations

import heapq
import random
import traceback
from collections.abc import Callable
from typing import Any

import attrs

from garlicfarm.raft.types import RaftOptions, Role
from garlicfarm.sim.faults import Faults, Mutations
from garlicfarm.sim.history import ClientOp, Outcome, check_history
from garlicfarm.sim.invariants import InvariantChecker, Violation
from garlicfarm.sim.linearizability import LogModel, Operation, Verdict, check
from garlicfarm.sim.node import Origin, SimNode
from garlicfarm.storage.interface import LogStore
from garlicfarm.wire.messages import (
    AddServerRequest,
    AppendEntriesResponse,
    ClientRequest,
    Message,
    RemoveServerRequest,
    Response,
)
from garlicfarm.wire.payloads import Application, ClusterServer, Configuration, LogEntry
from garlicfarm.wire.types import NO_LEADER


@attrs.frozen
class SimSettings:
    nodes: int = 3
    duration_ms: int = 4000
    #: after ``duration_ms`` faults stop and the network heals; the cluster must then make progress
    settle_ms: int = 3000
    tick_ms: int = 10
    clients: int = 3
    client_timeout_ms: int = 400
    faults: Faults = Faults()
    mutations: Mutations = Mutations()
    options: RaftOptions = RaftOptions(election_ticks=10, heartbeat_ticks=2)
    #: servers beyond ``nodes`` that start outside the cluster, for membership changes to add
    spares: int = 2
    #: mean ms between membership changes (add or remove a server through the leader); 0 = none
    membership_every: int = 600
    #: compact the log every this many applied entries (swarm testing draws it per seed); 0 = never
    compact_every: int = 0
    #: swarm testing: each seed draws its own batch size, pipelining depth, fault intensities and
    #: client load, so that some runs replicate one entry at a time, crash constantly, or idle
    swarm: bool = True
    client_think_ms: int = 30
    #: bytes in the state machine's snapshot, and per InstallSnapshot chunk (swarm draws both)
    snapshot_bytes: int = 40
    snapshot_chunk: int = 64 * 1024
    #: membership requests per operator action, each to a leader and a few ms apart: overlapping
    #: changes, and retries of one change, are what the one-change-at-a-time rule must refuse
    membership_burst: int = 1
    #: run each server with the real RaftDriver (garlicfarm/sim/driven.py) instead of the simulator's
    #: own Ready loop
    driver: bool = False
    #: mean ms between leadership transfers asked of the leader (swarm draws it per seed, from a
    #: random stream of its own, so that seeds without transfers run as they did before); 0 = none
    transfer_every: int = 800
    #: with ``driver``: mean ms a write of the log store takes, run in order on the node's clock as
    #: the service's writer thread runs them (messages wait for the writes they need; a leader's
    #: AppendEntries do not wait for its own); 0 = every write done at once
    disk_latency_ms: float = 0


@attrs.frozen
class RunResult:
    seed: int
    violations: tuple[Violation, ...]
    committed: int
    acknowledged: int
    elections: int
    events: int

    @property
    def ok(self) -> bool:
        return not self.violations


class SimCluster:
    def __init__(self, seed: int, settings: SimSettings) -> None:
        self.seed = seed
        self.settings = settings
        self.rng = random.Random(seed)
        self.now = 0
        self.checker = InvariantChecker()
        self._queue: list[tuple[int, int, str, Any]] = []
        self._seq = 0
        self.blocked: set[tuple[int, int]] = set()
        self.faults_on = True
        #: transfers draw from their own stream: a seed that has none is the run it always was
        self._transfer_rng = random.Random(f"transfer:{seed}")
        options = settings.options
        if settings.swarm:
            scale = self.rng.choice
            snapshot_bytes = scale((40, 1000, 4000))
            options = attrs.evolve(
                options,
                max_entries_per_append=self.rng.choice((1, 2, 5, 200)),
                max_inflight=self.rng.choice((1, 4, 32)),
                # from one chunk per snapshot to about 60
                snapshot_chunk=scale((64, 256, 1024, settings.snapshot_chunk)),
                # plain Raft elections (as with JRaft peers) split votes far more often
                pre_vote=scale((True, True, False)),
            )
            faults = settings.faults
            settings = attrs.evolve(
                settings,
                faults=attrs.evolve(
                    faults,
                    drop=faults.drop * scale((0, 1, 5)),
                    partition_every=int(faults.partition_every * scale((0.2, 0.5, 1, 3))),
                    crash_every=int(faults.crash_every * scale((0.1, 0.2, 0.5, 1, 3))),
                    crash_after_commit=faults.crash_after_commit * scale((0, 1, 10, 30)),
                    crash_after_vote=faults.crash_after_vote * scale((0, 1, 10)),
                    crash_at_write=faults.crash_at_write * scale((0, 1, 10)),
                    crash_at_snapshot_write=faults.crash_at_snapshot_write * scale((0, 1, 4)),
                    restart_min=scale((2, faults.restart_min)),
                    restart_spread=scale((20, faults.restart_spread)),
                    long_delay=faults.long_delay * scale((1, 1, 4)),
                    late_duplicate=faults.late_duplicate * scale((0, 1, 5, 20)),
                    duplicate=faults.duplicate * scale((0, 1, 5)),
                    # wider delay spreads reorder more; long delays deliver stale messages late
                    max_delay=faults.max_delay * scale((1, 1, 4)),
                    long_delay_rate=faults.long_delay_rate * scale((0, 1, 5)),
                ),
                clients=scale((1, 2, settings.clients)),
                client_think_ms=scale((1, settings.client_think_ms, 300)),
                compact_every=scale((0, 5, 20, 100)),
                membership_every=scale((0, settings.membership_every // 3, settings.membership_every)),
                membership_burst=scale((1, 2, 3)),
                snapshot_bytes=snapshot_bytes,
                options=options,
                transfer_every=self._transfer_rng.choice(
                    (0, 0, settings.transfer_every // 4, settings.transfer_every)
                ),
            )
            self.settings = settings
        members = range(1, settings.nodes + 1)
        ids = list(range(1, settings.nodes + settings.spares + 1))
        bootstrap = Configuration(0, 0, tuple(ClusterServer(i, f"sim://{i}") for i in members))
        self.nodes: dict[int, SimNode] = {}
        self.tick_period: dict[int, int] = {}
        for i in ids:
            node_class = SimNode
            if settings.driver:
                from garlicfarm.sim.driven import DriverSimNode  # noqa: PLC0415 - imports Twisted

                node_class = DriverSimNode
            node = node_class(
                i,
                bootstrap if i in members else Configuration(0, 0, ()),
                options,
                random.Random(self.rng.getrandbits(64)),
                self.checker,
                settings.mutations,
                self._send,
                self._client_reply,
                self._applied,
                self._schedule_restart,
                self._stores,
            )
            node.crash_mid_ready = settings.faults.crash_mid_ready
            node.crash_after_commit = settings.faults.crash_after_commit
            node.crash_after_vote = settings.faults.crash_after_vote
            node.crash_points.crash_rate = settings.faults.crash_at_write
            node.crash_points.snapshot_crash_rate = settings.faults.crash_at_snapshot_write
            node.compact_every = settings.compact_every
            node.disk_latency = settings.disk_latency_ms / 1000
            node.snapshot_bytes = node.machine.size = settings.snapshot_bytes
            self.nodes[i] = node
            skew = settings.faults.clock_skew
            self.tick_period[i] = max(1, round(settings.tick_ms * (1 + self.rng.uniform(-skew, skew))))
            self._at(self.rng.randrange(settings.tick_ms), "tick", i)
        self.committed: dict[int, bytes] = {}
        self.ops: list[ClientOp] = []
        self._client_op: dict[int, ClientOp | None] = {}
        self._client_hint: dict[int, int | None] = {}
        #: without a leader to follow, a client asks the servers in turn (as garlicfarm.client tries
        #: its endpoints), from a place of its own: at random it could keep asking servers that were
        #: removed and never learnt it, while the farm runs without them (seed 19093, 5 nodes)
        self._client_turn: dict[int, int] = {}
        for c in range(settings.clients):
            self._client_op[c] = None
            self._client_hint[c] = None
            self._client_turn[c] = self.rng.randrange(len(self.nodes))
            self._at(50 + self.rng.randrange(100), "client", c)
        if settings.faults.partition_every:
            self._at(self._exp(settings.faults.partition_every), "partition", None)
        if settings.faults.crash_every:
            self._at(self._exp(settings.faults.crash_every), "crash", None)
        if settings.membership_every:
            self._at(self._exp(settings.membership_every), "membership", None)
        if settings.transfer_every:
            self._at(self._next_transfer(), "transfer", None)
        self.events = 0

    # ------------------------------------------------------------------------------------------ scheduling

    def _exp(self, mean: int) -> int:
        return max(1, int(self.rng.expovariate(1 / mean)))

    def _at(self, delay: int, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (self.now + delay, self._seq, kind, payload))

    def run(self) -> RunResult:
        end = self.settings.duration_ms
        handlers: dict[str, Callable[[Any], None]] = {
            "tick": self._on_tick,
            "deliver": self._on_deliver,
            "client": self._on_client,
            "client_reply": self._on_client_reply,
            "client_timeout": self._on_client_timeout,
            "partition": self._on_partition,
            "crash": self._on_crash,
            "restart": self._on_restart,
            "membership": self._on_membership,
            "transfer": self._on_transfer,
        }
        limit = end + self.settings.settle_ms
        settled_commit: int | None = None
        while self._queue and not self.checker.violations:
            time, _, kind, payload = heapq.heappop(self._queue)
            if time > limit:
                break
            if self.faults_on and time >= end:
                self._heal()
                settled_commit = len(self.committed)
            self.now = self.checker.now = time
            self.events += 1
            handlers[kind](payload)
        if not self.checker.violations:
            self._final_checks(settled_commit)
        elections = len(self.checker._leaders)
        return RunResult(
            self.seed,
            tuple(self.checker.violations),
            len(self.committed),
            sum(1 for op in self.ops if op.outcome is Outcome.OK),
            elections,
            self.events,
        )

    def _heal(self) -> None:
        self.faults_on = False
        was_blocked = set(self.blocked)
        self.blocked.clear()
        self._links_up(was_blocked)
        for node in self.nodes.values():
            node.crash_mid_ready = node.crash_after_commit = node.crash_after_vote = 0.0
            node.crash_points.crash_rate = node.crash_points.snapshot_crash_rate = 0.0
            node.crash_points.force_next = False  # a "crash soon" not yet due: faults are over
            if not node.up:
                node.start()

    def _links_up(self, was_blocked: set[tuple[int, int]]) -> None:
        """Tell each live sender whose link came back (the driver's PeerConnections would)."""
        for a, b in sorted(was_blocked - self.blocked):
            if self.nodes[a].up:
                self.nodes[a].link_up(b)

    def _final_checks(self, committed_at_heal: int | None) -> None:
        for problem in check_history(self.ops, self.committed):
            self.checker.fail("linearizability", problem)
        # The same history through the general Wing-Gong checker, ending with a read of the whole log.
        history = [
            Operation(
                op.client,
                "append",
                "log",
                op.value,
                op.call,
                op.ret if op.outcome is Outcome.OK else None,
                op.index if op.outcome is Outcome.OK else None,
            )
            for op in self.ops
            if op.outcome is not Outcome.FAILED
        ]
        client_values = {op.value for op in self.ops}
        log = [v for _, v in sorted(self.committed.items()) if v in client_values]
        history.append(Operation(-1, "read", "log", None, self.now + 1, self.now + 2, tuple(log)))
        verdict = check(history, LogModel(), max_steps=200_000)
        if verdict.verdict is Verdict.NOT_LINEARIZABLE:
            self.checker.fail("linearizability", f"Wing-Gong: {verdict.explanation}")
        if committed_at_heal is not None and len(self.committed) <= committed_at_heal:
            self.checker.fail(
                "liveness",
                f"nothing committed in the {self.settings.settle_ms} ms after the network healed",
            )

    # ------------------------------------------------------------------------------------------ network

    def _stores(self) -> dict[int, LogStore]:
        return {i: n.durable for i, n in self.nodes.items()}

    def _send(self, src: int, dst: int, message: Message, origin: Origin | None) -> None:
        faults = self.settings.faults if self.faults_on else Faults.none()
        if self.rng.random() < faults.drop:
            return
        copies = 2 if self.rng.random() < faults.duplicate else 1
        for _ in range(copies):
            delay = self.rng.randint(faults.min_delay, faults.max_delay)
            if self.rng.random() < faults.long_delay_rate:
                delay += self.rng.randrange(faults.long_delay)
            self._at(delay, "deliver", (src, dst, message, origin))
        if faults.late_duplicate and self.rng.random() < faults.late_duplicate:
            self._at(self.rng.randrange(faults.late_delay), "deliver", (src, dst, message, origin))

    def _on_deliver(self, payload: tuple[int | None, int, Message, Origin | None]) -> None:
        src, dst, message, origin = payload
        if src is not None and (src, dst) in self.blocked:
            return
        self.nodes[dst].receive(message, origin)

    def _on_tick(self, node_id: int) -> None:
        self.nodes[node_id].tick()
        self._at(self.tick_period[node_id], "tick", node_id)

    # ------------------------------------------------------------------------------------------ faults

    def _on_partition(self, _payload: None) -> None:
        if not self.faults_on:
            return
        ids = list(self.nodes)
        choice = self.rng.random()
        was_blocked = set(self.blocked)
        self.blocked.clear()
        leaders = self.leaders()
        if choice < 0.3 and leaders:  # isolate the leader: strands whatever it appended last
            side = {self.rng.choice(leaders)}
            self.blocked = {(a, b) for a in ids for b in ids if (a in side) != (b in side)}
        elif choice < 0.55:  # symmetric split
            side = set(self.rng.sample(ids, self.rng.randint(1, len(ids) - 1)))
            self.blocked = {(a, b) for a in ids for b in ids if (a in side) != (b in side)}
        elif choice < 0.75:  # one-way cuts
            for _ in range(self.rng.randint(1, len(ids))):
                a, b = self.rng.sample(ids, 2)
                self.blocked.add((a, b))
        # else: healed
        self._links_up(was_blocked)
        self._at(self._exp(self.settings.faults.partition_every), "partition", None)

    def _on_crash(self, _payload: None) -> None:
        if not self.faults_on:
            return
        up = [i for i, n in self.nodes.items() if n.up]
        if up:
            self.nodes[self.rng.choice(up)].crash()
        self._at(self._exp(self.settings.faults.crash_every), "crash", None)

    def _on_membership(self, _payload: None) -> None:
        """An operator adds a server outside the configuration or removes one in it, via the leader."""
        if not self.faults_on:
            return
        self._at(self._exp(self.settings.membership_every), "membership", None)
        leaders = self.leaders()
        if not leaders:
            return
        delay = 0
        for _ in range(self.settings.membership_burst):
            leader = self.nodes[self.rng.choice(leaders)]
            assert leader.core is not None
            members = leader.core.voters()
            outside = [i for i in self.nodes if i not in members]
            origin = Origin(client=-1)
            delay += self.rng.randint(1, 30)
            request: AddServerRequest | RemoveServerRequest
            if outside and (len(members) <= 2 or self.rng.random() < 0.5):
                new = self.rng.choice(outside)
                request = AddServerRequest(entries=(LogEntry(0, ClusterServer(new, f"sim://{new}")),))
            elif len(members) > 1:
                gone = self.rng.choice(sorted(members))
                request = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(gone)),))
            else:
                continue
            self._at(delay, "deliver", (None, leader.id, request, origin))

    def _next_transfer(self) -> int:
        return max(1, int(self._transfer_rng.expovariate(1 / self.settings.transfer_every)))

    def _on_transfer(self, _payload: None) -> None:
        """An operator (or a shutting-down node) asks the leader to hand over, to a voter or to
        whichever it likes; overlapping with crashes, partitions and membership changes."""
        if not self.faults_on:
            return
        self._at(self._next_transfer(), "transfer", None)
        leaders = self.leaders()
        if not leaders:
            return
        leader = self.nodes[self._transfer_rng.choice(leaders)]
        assert leader.core is not None
        voters = sorted(leader.core.voters() - {leader.id})
        target = self._transfer_rng.choice([None, *voters]) if voters else None
        leader.transfer(target)

    def _schedule_restart(self, node_id: int) -> None:
        if self.faults_on:
            faults = self.settings.faults
            self._at(faults.restart_min + self.rng.randrange(faults.restart_spread), "restart", node_id)

    def _on_restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.up:
            node.start()

    # ------------------------------------------------------------------------------------------ clients

    def _applied(self, node_id: int, index: int, entry: LogEntry) -> None:
        if isinstance(entry.value, Application):
            self.committed[index] = entry.value.data

    def _on_client(self, client: int) -> None:
        if self._client_op[client] is not None:
            return
        op = ClientOp(client, len(self.ops), f"c{client}-{len(self.ops)}".encode(), self.now)
        self.ops.append(op)
        self._client_op[client] = op
        target = self._client_hint[client]
        if target is None:
            servers = sorted(self.nodes)
            target = servers[self._client_turn[client] % len(servers)]
            self._client_turn[client] += 1
        request = ClientRequest(entries=(LogEntry(0, Application(op.value)),))
        self._send_client(target, request, Origin(client=client, op=op.op))
        self._at(self.settings.client_timeout_ms, "client_timeout", (client, op.op))

    def _send_client(self, target: int, request: ClientRequest, origin: Origin) -> None:
        delay = self.rng.randint(1, 10)
        if self.faults_on and self.rng.random() < self.settings.faults.drop:
            return
        self._at(delay, "deliver", (None, target, request, origin))

    def _client_reply(self, origin: Origin, response: Response) -> None:
        if self.faults_on and self.rng.random() < self.settings.faults.drop:
            return
        self._at(self.rng.randint(1, 10), "client_reply", (origin, response))

    def _on_client_reply(self, payload: tuple[Origin, Response]) -> None:
        origin, response = payload
        if origin.client == -1:
            return  # the membership operator does not wait for answers
        assert origin.client is not None and origin.op is not None
        op = self.ops[origin.op]
        if op.outcome is not Outcome.PENDING or not isinstance(response, AppendEntriesResponse):
            return  # a late or duplicate answer: the client moved on
        op.ret = self.now
        if response.accepted:
            op.outcome, op.index = Outcome.OK, response.next_index - 1
            self._client_hint[origin.client] = response.source
        else:
            op.outcome = Outcome.FAILED
            leader = response.destination
            self._client_hint[origin.client] = None if leader == NO_LEADER else leader
        self._client_op[origin.client] = None
        self._at(self.rng.randint(1, self.settings.client_think_ms), "client", origin.client)

    def _on_client_timeout(self, payload: tuple[int, int]) -> None:
        client, op_id = payload
        op = self.ops[op_id]
        if op.outcome is Outcome.PENDING:
            op.outcome = Outcome.UNKNOWN
            self._client_op[client] = None
            self._client_hint[client] = None
            self._at(self.rng.randint(1, self.settings.client_think_ms), "client", client)

    def leaders(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.core is not None and n.core.role is Role.LEADER]


def run_seed(seed: int, settings: SimSettings) -> RunResult:
    cluster = SimCluster(seed, settings)
    try:
        return cluster.run()
    except Exception as e:  # any exception in a core is a bug to report, with its seed
        where = traceback.extract_tb(e.__traceback__)[-1]
        detail = f"{type(e).__name__}: {e} at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}"
        return RunResult(seed, (Violation(cluster.now, "exception", detail),), 0, 0, 0, cluster.events)
