"""A tiny, deterministic, hand-driven network of :class:`RaftCore` instances for the rule tests.

Nothing happens unless a test asks for it: ``tick`` advances one node's clock, ``ready`` drains one
node (persist, ``advance``, then put its sends and replies on the wire), ``deliver``/``stabilize`` step
messages that are on the wire into their destinations. Every node has its own seeded
``random.Random``, so every run is the same run.

Requests and their replies are paired the way the driver pairs them: a request on the wire carries a
handle; when the destination's ``Ready`` answers that handle, the answer goes back on the wire to the
node that sent the request, or into :attr:`Cluster.client_replies` if a client sent it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import PRE_VOTE_MARKER, RaftOptions, Ready
from garlicfarm.storage.interface import HardState
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import (
    AppendEntriesRequest,
    AppendEntriesResponse,
    Application,
    ClientRequest,
    ClusterServer,
    Configuration,
    LogEntry,
    Message,
    Request,
    RequestVoteRequest,
    RequestVoteResponse,
    Response,
)

#: The paper's algorithm: no pre-vote, no check-quorum; a heartbeat every tick, as in etcd's tests.
PAPER = RaftOptions(election_ticks=10, heartbeat_ticks=1, pre_vote=False, check_quorum=False)
#: This design's defaults for the election extensions (pre-vote and check-quorum on).
GUARDED = RaftOptions(election_ticks=10, heartbeat_ticks=1)


# ------------------------------------------------------------------------------------ the paper's figures

#: Figure 7: the leader's log at the start of term 8, and six followers' logs (terms of entries 1, 2, ...)
FIGURE7_LEADER = (1, 1, 1, 4, 4, 5, 5, 6, 6, 6)
FIGURE7_FOLLOWERS = {
    "a": (1, 1, 1, 4, 4, 5, 5, 6, 6),
    "b": (1, 1, 1, 4),
    "c": (1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6),
    "d": (1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7),
    "e": (1, 1, 1, 4, 4, 4, 4),
    "f": (1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3),
}


# ------------------------------------------------------------------------------------------ builders


R = TypeVar("R", bound=Response)


def configuration(n: int) -> Configuration:
    return Configuration(0, 0, tuple(ClusterServer(i, f"sim://{i}") for i in range(1, n + 1)))


def entry(term: int, data: bytes | None = None) -> LogEntry:
    return LogEntry(term, Application(data if data is not None else b"t%d" % term))


def log_of(*terms: int) -> tuple[LogEntry, ...]:
    """Entries at indexes 1, 2, ... with these terms (the shorthand of the paper's figures)."""
    return tuple(entry(t, b"%d@%d" % (t, i)) for i, t in enumerate(terms, start=1))


def store_with(entries: Sequence[LogEntry] = (), hard_state: HardState | None = None) -> MemoryLogStore:
    store = MemoryLogStore()
    store.save(hard_state, 1 if entries else None, entries)
    return store


def terms(entries: Iterable[LogEntry]) -> list[int]:
    return [e.term for e in entries]


def append(
    src: int,
    dst: int,
    term: int,
    prev_index: int,
    prev_term: int,
    entries: Sequence[LogEntry] = (),
    commit: int = 0,
) -> AppendEntriesRequest:
    return AppendEntriesRequest(
        source=src,
        destination=dst,
        term=term,
        last_log_term=prev_term,
        last_log_index=prev_index,
        commit_index=commit,
        entries=tuple(entries),
    )


def vote(
    src: int, dst: int, term: int, last_index: int, last_term: int, pre: bool = False, commit: int = 0
) -> RequestVoteRequest:
    return RequestVoteRequest(
        source=src,
        destination=dst,
        term=term,
        last_log_term=last_term,
        last_log_index=last_index,
        commit_index=PRE_VOTE_MARKER if pre else commit,
    )


def vote_response(src: int, dst: int, term: int, granted: bool, pre: bool = False) -> RequestVoteResponse:
    return RequestVoteResponse(
        source=src, destination=dst, term=term, next_index=PRE_VOTE_MARKER if pre else 0, accepted=granted
    )


def append_response(src: int, dst: int, term: int, next_index: int, accepted: bool) -> AppendEntriesResponse:
    return AppendEntriesResponse(
        source=src, destination=dst, term=term, next_index=next_index, accepted=accepted
    )


def client_request(data: bytes) -> ClientRequest:
    return ClientRequest(entries=(LogEntry(0, Application(data)),))


# ------------------------------------------------------------------------------------------ the network


@dataclass(frozen=True)
class Envelope:
    """A message on the wire from ``src`` to ``dst``; a request carries the handle its reply answers."""

    src: int
    dst: int
    message: Message
    handle: int | None = None

    def last_index(self) -> int | None:
        """For an AppendEntriesRequest: the index of its last entry (prevLogIndex if it has none)."""
        m = self.message
        if isinstance(m, AppendEntriesRequest):
            return m.last_log_index + len(m.entries)
        return None


Predicate = Callable[[Envelope], bool]


def response(env: Envelope) -> Response:
    assert isinstance(env.message, Response), env
    return env.message


def everything(_: Envelope) -> bool:
    return True


def is_vote_traffic(env: Envelope) -> bool:
    return isinstance(env.message, RequestVoteRequest | RequestVoteResponse)


class Cluster:
    """N cores on :class:`MemoryLogStore` disks, a wire, and the clients' mailbox."""

    def __init__(
        self,
        n: int = 3,
        options: RaftOptions = PAPER,
        stores: dict[int, MemoryLogStore] | None = None,
        seed: int = 0,
    ) -> None:
        self.ids = list(range(1, n + 1))
        self.options = options
        self.seed = seed
        self.bootstrap = configuration(n)
        self.stores = {i: (stores or {}).get(i) or MemoryLogStore() for i in self.ids}
        self.cores: dict[int, RaftCore | None] = {}
        self.incarnation = dict.fromkeys(self.ids, 0)
        #: messages sent and not yet delivered, in send order
        self.wire: list[Envelope] = []
        #: (a, b): messages from a to b are lost
        self.cut: set[tuple[int, int]] = set()
        #: every entry each node applied, over all its incarnations, in order
        self.applied: dict[int, list[tuple[int, LogEntry]]] = {i: [] for i in self.ids}
        #: answers to client requests, by handle
        self.client_replies: dict[int, Response] = {}
        self._handles = itertools.count(1)
        #: handle -> the node that sent the request (None: a client)
        self._owner: dict[int, int | None] = {}
        for i in self.ids:
            self.cores[i] = self._boot(i)

    def _boot(self, i: int) -> RaftCore:
        rng = random.Random(self.seed * 1_000_003 + i * 1009 + self.incarnation[i])
        return RaftCore(i, self.stores[i].load(), rng, self.bootstrap, self.options)

    # -------------------------------------------------------------------------------------- nodes

    def __getitem__(self, i: int) -> RaftCore:
        core = self.cores[i]
        assert core is not None, f"node {i} is down"
        return core

    def live(self) -> list[int]:
        return [i for i in self.ids if self.cores[i] is not None]

    def crash(self, i: int) -> None:
        """Lose node ``i``'s memory (its store survives) and every message to or from it on the wire."""
        self.cores[i] = None
        self.wire = [e for e in self.wire if i not in (e.src, e.dst)]

    def restart(self, i: int) -> RaftCore:
        assert self.cores[i] is None, f"node {i} is running"
        self.incarnation[i] += 1
        core = self.cores[i] = self._boot(i)
        return core

    def applied_terms(self, i: int) -> dict[int, int]:
        """index -> term of every entry node ``i`` applied (in any incarnation)."""
        return {index: e.term for index, e in self.applied[i]}

    def log(self, i: int) -> list[LogEntry]:
        """Node ``i``'s durable log (what its store holds)."""
        store = self.stores[i]
        return store.entries(1, store.last_index + 1)

    # -------------------------------------------------------------------------------------- input

    def tick(self, i: int, n: int = 1) -> None:
        for _ in range(n):
            self[i].tick()

    def step(self, dst: int, message: Message) -> int | None:
        """Step ``message`` into ``dst`` directly (as if it had come from ``message.source``); returns
        the handle a request's reply will answer."""
        handle = None
        if isinstance(message, Request):
            handle = next(self._handles)
            self._owner[handle] = message.source if message.source in self.ids else None
        self._step(dst, message, handle)
        return handle

    def _step(self, dst: int, message: Message, handle: int | None) -> None:
        if isinstance(message, Request):
            self[dst].step(message, handle)
        else:
            self[dst].step(message)

    def propose(self, i: int, data: bytes) -> int:
        """A local client proposal to node ``i``; the returned handle keys its reply."""
        handle = next(self._handles)
        self._owner[handle] = None
        self[i].propose(data, handle)
        return handle

    def client(self, i: int, request: ClientRequest) -> int:
        handle = self.step(i, request)
        assert handle is not None
        return handle

    # -------------------------------------------------------------------------------------- output

    def ready(self, i: int) -> Ready:
        """Drain node ``i`` as its driver would: persist, advance, then send, reply and apply."""
        core = self[i]
        rd = core.ready()
        if rd.snapshot is not None:  # installed from a leader: the store compacts to it, as the driver's
            self.stores[i].compact(rd.snapshot.meta)
        self.write(i, rd)
        self._post(i, rd)
        return rd

    def ready_unwritten(self, i: int) -> Ready:
        """Drain node ``i`` as a driver whose write is still in flight does: its messages leave (a
        leader's entries go out while its own write of them runs), its store and its core wait for
        :meth:`write`. Only for a Ready without a snapshot, replies or committed entries."""
        rd = self[i].ready()
        assert rd.snapshot is None and not rd.replies and not rd.committed, "use ready()"
        self._post(i, rd)
        return rd

    def write(self, i: int, rd: Ready) -> None:
        """Node ``i``'s store writes ``rd`` and its core is told the write is durable."""
        self.stores[i].save(rd.hard_state, rd.entries_from, rd.entries)
        self[i].advance(rd)

    def _post(self, i: int, rd: Ready) -> None:
        for send in rd.sends:
            handle = next(self._handles)
            self._owner[handle] = i
            self.wire.append(Envelope(i, send.to, send.message, handle))
        for reply in rd.replies:
            owner = self._owner.pop(reply.handle)
            if owner is None:
                self.client_replies[reply.handle] = reply.message
            else:
                self.wire.append(Envelope(i, owner, reply.message))
        self.applied[i].extend(rd.committed)

    def flush(self) -> bool:
        """Drain every live node that has something; True if any had."""
        busy = False
        for i in self.live():
            if self[i].has_ready():
                self.ready(i)
                busy = True
        return busy

    # -------------------------------------------------------------------------------------- the wire

    def take(self, which: Predicate = everything) -> list[Envelope]:
        """Remove the matching envelopes from the wire and return them (to inspect, or drop)."""
        taken: list[Envelope] = []
        kept: list[Envelope] = []
        for e in self.wire:  # ``which`` is asked once per envelope: it may be a recorder
            (taken if which(e) else kept).append(e)
        self.wire = kept
        return taken

    def drop(self, which: Predicate = everything) -> int:
        return len(self.take(which))

    def deliver_one(self, env: Envelope) -> None:
        """Step one envelope into its destination (lost if the link is cut or the node is down)."""
        if (env.src, env.dst) in self.cut or self.cores[env.dst] is None:
            return
        self._step(env.dst, env.message, env.handle)

    def deliver(self, which: Predicate = everything) -> int:
        """Deliver the matching envelopes now on the wire (not what they cause); returns how many."""
        batch = self.take(which)
        for env in batch:
            self.deliver_one(env)
        return len(batch)

    def stabilize(self, which: Predicate = everything, rounds: int = 1000) -> None:
        """Drain and deliver until nothing matching ``which`` is left to do; the rest stays on the wire."""
        for _ in range(rounds):
            busy = self.flush()
            if self.deliver(which):
                busy = True
            if not busy:
                return
        raise AssertionError("the network did not settle")

    def isolate(self, i: int) -> None:
        for j in self.ids:
            if j != i:
                self.cut |= {(i, j), (j, i)}

    def partition(self, *groups: Iterable[int]) -> None:
        """Cut every link between different groups."""
        sets = [set(g) for g in groups]
        for a, ga in enumerate(sets):
            for b, gb in enumerate(sets):
                if a != b:
                    self.cut |= {(x, y) for x in ga for y in gb}

    def heal(self) -> None:
        self.cut.clear()

    # -------------------------------------------------------------------------------------- scenarios

    def tick_all(self, n: int = 1) -> None:
        """``n`` rounds of: every live node ticks once, then the network settles."""
        for _ in range(n):
            for i in self.live():
                self[i].tick()
            self.stabilize()

    def campaign(self, i: int) -> Ready:
        """Tick node ``i`` (and only it) until its election timer fires; return the Ready that carries
        what the timeout produced (its vote requests, or its win in a one-node cluster)."""
        self.ready(i)  # what it had to say before the timeout is not part of the answer
        for _ in range(2 * self.options.election_ticks):
            self.tick(i)
            if self[i].has_ready():
                rd = self.ready(i)
                if self[i].is_leader() or sends_of(rd, RequestVoteRequest):
                    return rd
        raise AssertionError(f"node {i} did not time out within 2 * election_ticks")

    def elect(self, i: int, max_ticks: int = 200) -> None:
        """Make node ``i`` leader: tick only it until it campaigns, then deliver only vote traffic; repeat
        until it wins. Other messages (its first AppendEntries included) are left on the wire.

        Voters grant only if they are willing: with check-quorum, a voter that heard from a leader within
        an election timeout refuses, so use this when no leader is known or with :data:`PAPER` options.
        """
        for _ in range(max_ticks):
            self.tick(i)
            if self[i].is_leader():
                self.ready(i)
                return
            if any(isinstance(s.message, RequestVoteRequest) for s in self.ready(i).sends):
                self.stabilize(is_vote_traffic)
                if self[i].is_leader():
                    self.ready(i)
                    return
        raise AssertionError(f"node {i} did not win an election in {max_ticks} ticks")

    def elect_and_settle(self, i: int) -> None:
        """Elect ``i`` and let it replicate its term-start entry everywhere (and tell everyone it is
        committed, which takes one heartbeat)."""
        self.elect(i)
        self.stabilize()
        self.tick(i, self.options.heartbeat_ticks)
        self.stabilize()


def assert_state_machine_safety(c: Cluster) -> None:
    """§5.4.3 State Machine Safety: no two servers ever applied different entries at one index (each
    incarnation of a server applies from its snapshot, here index 1, in order, without gaps)."""
    chosen: dict[int, LogEntry] = {}
    for node, applied in c.applied.items():
        for index, e in applied:
            assert chosen.setdefault(index, e) == e, (
                f"node {node} applied {e} at {index}, not {chosen[index]}"
            )


def reply_of(c: Cluster, handle: int | None, cls: type[R], node: int = 1) -> R:
    """The reply to ``handle`` in node ``node``'s next Ready, checked to be a ``cls``."""
    answer = next(r.message for r in c.ready(node).replies if r.handle == handle)
    assert isinstance(answer, cls), answer
    return answer


def sends_of(rd: Ready, kind: type[Request]) -> list[Request]:
    return [s.message for s in rd.sends if isinstance(s.message, kind)]
