"""A mixed farm on a simulated clock: real garlicfarm cores and JRaft-behaviour peers, every message
carried as bytes (garlicfarm's codec on one side, JRaft's raw layout on the other).

The garlicfarm side is what the driver and transport do: the core learns from each peer's handshake
whether it speaks pre-vote (JRaft's bridge offers nothing), and a pre-vote is never sent to a peer that
did not offer it (counted in :attr:`MixedFarm.pre_votes_to_jraft`, which must stay 0).

Time moves in 10 ms steps; a message arrives one step after it is sent; garlicfarm ticks every 50 ms
(its default ``tick_ms``) with its default RaftOptions; JRaft keeps dmprinter's timings.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

import attrs

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import PRE_VOTE_MARKER, RaftOptions
from garlicfarm.storage.interface import HardState, StoredState
from garlicfarm.wire import (
    AddServerRequest,
    Application,
    ClientRequest,
    ClusterServer,
    Configuration,
    LogEntry,
    RemoveServerRequest,
    Request,
    RequestVoteRequest,
    Response,
    decode,
    encode,
)
from tests.interop.jraft_peer import JRaftPeer
from tests.interop.jraft_wire import RESPONSE_TYPES, parse_response

STEP_MS = 10
TICK_MS = 50
CLIENT = 0


def endpoint(i: int) -> str:
    return f"sim://{i}"


@dataclass
class _Envelope:
    at: int
    src: int
    dst: int
    data: bytes
    #: for a response: the request it answers
    request: bytes | None = None


@dataclass
class GfNode:
    core: RaftCore
    handles: dict[int, tuple[int, bytes]] = field(default_factory=dict)
    applied: list[tuple[int, LogEntry]] = field(default_factory=list)


class MixedFarm:
    def __init__(
        self,
        gf: Iterable[int],
        jraft: Iterable[int],
        seed: int = 0,
        options: RaftOptions | None = None,
        founders: Iterable[int] | None = None,
        transport_drops_pre_votes: bool = True,
    ) -> None:
        self.rng = random.Random(seed)
        self.now = 0
        self.gf_ids = set(gf)
        self.jraft_ids = set(jraft)
        members = sorted(self.gf_ids | self.jraft_ids) if founders is None else sorted(founders)
        config = Configuration(0, 0, tuple(ClusterServer(i, endpoint(i)) for i in members))
        self.options = options or attrs.evolve(RaftOptions(), negotiated_pre_vote=True)
        self.gf: dict[int, GfNode] = {}
        self.jraft: dict[int, JRaftPeer] = {}
        for i in sorted(self.gf_ids):
            boot = config if i in members else Configuration(0, 0, ())
            self._add_gf(i, boot)
        for i in sorted(self.jraft_ids):
            alone = Configuration(0, 0, (ClusterServer(i, endpoint(i)),))
            self.jraft[i] = JRaftPeer(
                i, config if i in members else alone, random.Random(seed * 1000 + i), self._sender(i)
            )
        self.wire: list[_Envelope] = []
        self.dead: set[int] = set()
        self.pre_votes_to_jraft = 0
        #: False: the transport before issue 15, which sent a pre-vote to anyone
        self.transport_drops_pre_votes = transport_drops_pre_votes
        self._handles = itertools.count(1)
        self.client_inbox: list[Response] = []

    def _add_gf(self, i: int, boot: Configuration) -> None:
        stored = StoredState(HardState(0, None, 0), None, 1, ())
        core = RaftCore(i, stored, random.Random(self.rng.random()), boot, self.options)
        for peer in self.gf_ids | self.jraft_ids:
            if peer != i:
                core.set_pre_vote_support(peer, peer in self.gf_ids)  # what each handshake said
        self.gf[i] = GfNode(core)

    def _sender(self, src: int):  # type: ignore[no-untyped-def]
        def send(to: int, data: bytes, _endpoint: str | None) -> None:
            self.wire.append(_Envelope(self.now + STEP_MS, src, to, data))

        return send

    # ------------------------------------------------------------------------------------------ running

    def kill(self, i: int) -> None:
        self.dead.add(i)
        self.wire = [e for e in self.wire if i not in (e.src, e.dst)]

    def restart(self, i: int, term: int | None = None) -> None:
        """Bring dead garlicfarm node ``i`` back from what it had stored (the simulated store is its
        log: every Ready is durable at once). ``term``: it had seen that later term before it stopped
        (a vote request of that term refused, say: the term is saved, no vote), as a server that died
        while the others elected does when it heard their election."""
        old = self.gf[i].core
        assert i in self.dead and old.log.snapshot_index == 0
        entries = tuple(old.log.slice(1, old.log.last_index + 1))
        hard = HardState(old.term, old.voted_for, old.commit)
        if term is not None and term > old.term:
            hard = HardState(term, None, old.commit)
        stored = StoredState(hard, None, 1, entries)
        core = RaftCore(i, stored, random.Random(self.rng.random()), old.config_at(0), self.options)
        for peer in self.gf_ids | self.jraft_ids:
            if peer != i:
                core.set_pre_vote_support(peer, peer in self.gf_ids)
        self.gf[i] = GfNode(core)
        self.dead.discard(i)

    def alive(self) -> list[int]:
        nodes = [i for i in self.gf if i not in self.dead]
        nodes += [i for i, p in self.jraft.items() if i not in self.dead and not p.exited]
        return sorted(nodes)

    def run(self, ms: int) -> None:
        end = self.now + ms
        while self.now < end:
            self.step()

    def step(self) -> None:
        self.now += STEP_MS
        if self.now % TICK_MS == 0:
            for i, node in self.gf.items():
                if i not in self.dead:
                    node.core.tick()
        for i, peer in self.jraft.items():
            if i not in self.dead:
                peer.advance(self.now)
        self._drain_all()
        due = [e for e in self.wire if e.at <= self.now]
        self.wire = [e for e in self.wire if e.at > self.now]
        for env in due:
            self._deliver(env)
            self._drain_all()

    def _deliver(self, env: _Envelope) -> None:
        if env.data[0] in RESPONSE_TYPES:
            self._deliver_response(env)
            return
        jraft = self.jraft.get(env.dst)
        if (
            env.dst in self.dead
            or (jraft is not None and jraft.exited)
            or env.dst not in (self.gf.keys() | self.jraft.keys())
        ):
            self._fail(env)
            return
        if jraft is not None:
            response = jraft.handle(env.data)
            if response is None:
                self._fail(env)
            else:
                self._respond(env, response.to_bytes())
            return
        node = self.gf[env.dst]
        handle = next(self._handles)
        node.handles[handle] = (env.src, env.data)
        node.core.step(decode(env.data), handle)

    def _respond(self, request: _Envelope, data: bytes) -> None:
        self.wire.append(_Envelope(self.now + STEP_MS, request.dst, request.src, data, request.data))

    def _fail(self, env: _Envelope) -> None:
        if env.src in self.jraft and env.src not in self.dead:
            self.jraft[env.src].on_failure(env.data, env.dst)

    def _deliver_response(self, env: _Envelope) -> None:
        if env.dst == CLIENT:
            message = decode(env.data)
            assert isinstance(message, Response)
            self.client_inbox.append(message)
            return
        if env.dst in self.dead:
            return
        if env.dst in self.jraft:
            assert env.request is not None
            self.jraft[env.dst].on_response(env.request, parse_response(env.data))
            return
        self.gf[env.dst].core.step(decode(env.data))

    def _drain_all(self) -> None:
        again = True
        while again:
            again = False
            for i, node in self.gf.items():
                if i in self.dead:
                    continue
                while node.core.has_ready():
                    again = True
                    self._drain(i, node)

    def _drain(self, i: int, node: GfNode) -> None:
        ready = node.core.ready()
        node.core.advance(ready)
        for send in ready.sends:
            if self._is_pre_vote(send.message) and send.to in self.jraft_ids:
                self.pre_votes_to_jraft += 1  # the transport would drop it: must never happen
                if self.transport_drops_pre_votes:
                    continue
            self.wire.append(_Envelope(self.now + STEP_MS, i, send.to, encode(send.message)))
        for reply in ready.replies:
            src, request = node.handles.pop(reply.handle)
            self.wire.append(_Envelope(self.now + STEP_MS, i, src, encode(reply.message), request))
        node.applied.extend(ready.committed)

    @staticmethod
    def _is_pre_vote(message: Request) -> bool:
        return isinstance(message, RequestVoteRequest) and message.commit_index == PRE_VOTE_MARKER

    # ------------------------------------------------------------------------------------------ queries

    def leader(self) -> int | None:
        """The live leader of the highest term, if any."""
        best: tuple[int, int] | None = None
        for i in self.alive():
            if i in self.gf:
                core = self.gf[i].core
                if core.is_leader() and (best is None or core.term > best[0]):
                    best = (core.term, i)
            elif self.jraft[i].role == "leader" and (best is None or self.jraft[i].term > best[0]):
                best = (self.jraft[i].term, i)
        return None if best is None else best[1]

    def committed(self, i: int) -> list[LogEntry]:
        if i in self.gf:
            core = self.gf[i].core
            assert core.log.snapshot_index == 0
            return core.log.slice(1, core.commit + 1)
        return self.jraft[i].committed()

    def commit_index(self, i: int) -> int:
        return self.gf[i].core.commit if i in self.gf else self.jraft[i].commit_index

    def last_index(self, i: int) -> int:
        return self.gf[i].core.log.last_index if i in self.gf else self.jraft[i].store.last_index

    # ------------------------------------------------------------------------------------------ clients

    def request(self, to: int, message: Request, wait_ms: int = 1000) -> Response | None:
        """Send ``message`` as a client to ``to`` and run until it is answered (or ``wait_ms``)."""
        self.client_inbox.clear()
        self.wire.append(_Envelope(self.now + STEP_MS, CLIENT, to, encode(message)))
        end = self.now + wait_ms
        while self.now < end and not self.client_inbox:
            self.step()
        return self.client_inbox[0] if self.client_inbox else None

    def submit(self, data: bytes, within_ms: int = 20_000) -> int:
        """Submit one Application entry until a leader accepts it; return when (in ms) it was."""
        end = self.now + within_ms
        message = ClientRequest(entries=(LogEntry(0, Application(data)),))
        target = self.leader()
        while self.now < end:
            if target is None or target not in self.alive():
                self.run(50)
                target = self.leader()
                continue
            response = self.request(target, message)
            if response is not None and response.accepted:
                return self.now
            hint = None if response is None else response.destination
            target = hint if hint in self.alive() else self.leader()
            self.run(50)
        raise AssertionError(f"{data!r} was not accepted within {within_ms} ms")

    def add_server(self, leader: int, server: int) -> Response | None:
        request = AddServerRequest(entries=(LogEntry(0, ClusterServer(server, endpoint(server))),))
        return self.request(leader, request, wait_ms=120_000)

    def remove_server(self, leader: int, server: int) -> Response | None:
        request = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(server)),))
        return self.request(leader, request, wait_ms=30_000)

    def wait_for_leader(self, within_ms: int = 10_000) -> int:
        end = self.now + within_ms
        while self.now < end:
            leader = self.leader()
            if leader is not None:
                return self.now
            self.step()
        raise AssertionError(f"no leader within {within_ms} ms")

    def settle(self, ms: int = 6000) -> None:
        self.run(ms)

    def check_agreement(self, nodes: Iterable[int] | None = None) -> int:
        """Committed logs agree index by index; returns the shortest committed length."""
        nodes = list(self.alive() if nodes is None else nodes)
        logs = {i: self.committed(i) for i in nodes}
        shortest = min(len(log) for log in logs.values())
        longest = max(logs.values(), key=len)
        for i, log in logs.items():
            for index, (mine, theirs) in enumerate(zip(log, longest, strict=False), start=1):
                assert mine == theirs, f"node {i} committed {mine} at {index}, another {theirs}"
        return shortest

    def values(self, i: int) -> list[bytes]:
        return [e.value.data for e in self.committed(i) if isinstance(e.value, Application)]
