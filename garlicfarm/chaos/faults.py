"""The chaos test's faults, sans-I/O: which directed links are down or slow, and the fault schedule.

Traffic is directed: ``(a, b)`` is the bytes node ``a`` sends to node ``b``, whichever node opened the
TCP connection they travel on. :class:`LinkTable` holds the state the proxy consults for every chunk of
bytes. :class:`FaultSchedule` draws faults from an injected RNG only, so a seed replays the same
sequence of faults (what they hit may name "the leader", which is resolved at run time).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Iterable

import attrs

Link = tuple[int, int]


class Heal(enum.Enum):
    """What becomes of bytes held while a link was down, once it is up again."""

    RESET = "reset"  # the connection is aborted: the bytes are lost, as after a long outage
    DELIVER = "deliver"  # they arrive late, all at once, as after TCP retransmission


@attrs.frozen
class Tunnel:
    """A link's own character, under any fault: a one-way delay drawn per chunk from [min_delay,
    max_delay] (jitter; the proxy keeps order, so a slow chunk holds back the ones behind it), and a
    share of chunks ``loss`` that a reliable stream over a lossy network delivers one retransmission
    timeout (``retransmit`` seconds) late, as I2P's streaming library does over its tunnels."""

    min_delay: float
    max_delay: float
    loss: float = 0.0
    retransmit: float = 0.0

    def sample(self, rng: random.Random) -> float:
        delay = rng.uniform(self.min_delay, self.max_delay)
        if self.loss and rng.random() < self.loss:
            delay += self.retransmit
        return delay


#: I2P tunnels as issue 17 describes them: 1-3 s one way with jitter, 5 % loss (a lost chunk arrives
#: one retransmission timeout, twice the longest one-way delay, late)
I2P_TUNNEL = Tunnel(min_delay=1.0, max_delay=3.0, loss=0.05, retransmit=6.0)


def all_links(nodes: int) -> list[Link]:
    """Every directed link between ``nodes`` servers numbered from 1."""
    return [(i, j) for i in range(1, nodes + 1) for j in range(1, nodes + 1) if i != j]


class LinkTable:
    """Directed links that are down (bytes held) or delayed; observers hear of every change."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._down: dict[Link, Heal] = {}
        self._delay: dict[Link, float] = {}
        #: the links' own delays and losses (not faults: ``heal_all`` keeps them)
        self._tunnels: dict[Link, Tunnel] = {}
        self._rng = rng or random.Random(0)  # noqa: S311 - simulated jitter, not secrecy
        self._observers: list[Callable[[], None]] = []

    def subscribe(self, observer: Callable[[], None]) -> None:
        self._observers.append(observer)

    def is_down(self, link: Link) -> bool:
        return link in self._down

    def heal_mode(self, link: Link) -> Heal:
        return self._down.get(link, Heal.RESET)

    def delay(self, link: Link) -> float:
        """Seconds this chunk on ``link`` is held back (order is kept): a fault's delay plus, on a
        link with a :class:`Tunnel`, a fresh draw of its own."""
        tunnel = self._tunnels.get(link)
        return self._delay.get(link, 0.0) + (tunnel.sample(self._rng) if tunnel else 0.0)

    def tunnel(self, links: Iterable[Link], tunnel: Tunnel) -> None:
        for link in links:
            self._tunnels[link] = tunnel
        self._changed()

    def cut(self, links: Iterable[Link], heal: Heal = Heal.RESET) -> None:
        for link in links:
            self._down[link] = heal
        self._changed()

    def slow(self, links: Iterable[Link], seconds: float) -> None:
        for link in links:
            self._delay[link] = seconds
        self._changed()

    def heal_all(self) -> None:
        self._down.clear()
        self._delay.clear()
        self._changed()

    @property
    def down(self) -> frozenset[Link]:
        return frozenset(self._down)

    def _changed(self) -> None:
        for observer in self._observers:
            observer()


# ---------------------------------------------------------------------------------------------- faults


class Kind(enum.Enum):
    DELAY = "delay"  # links to and from some nodes slowed down
    DROP = "drop"  # both directions between node pairs black-holed
    RESET = "reset"  # every connection touching some nodes aborted (RST), once
    ONE_WAY = "one-way"  # a node's outgoing (or incoming) traffic black-holed, the other way up
    ISOLATE = "isolate"  # a node cut off from all others
    SPLIT = "split"  # the farm split in two groups (the first group is the minority)
    KILL = "kill"  # kill -9 of a minority of nodes, restarted when the fault ends
    KILL_MAJORITY = "kill-majority"  # kill -9 of a majority, briefly: nothing may be acknowledged


NETWORK = frozenset({Kind.DELAY, Kind.DROP, Kind.RESET, Kind.ONE_WAY, Kind.ISOLATE, Kind.SPLIT})

#: relative frequency of each kind
WEIGHTS: dict[Kind, float] = {
    Kind.DELAY: 2,
    Kind.DROP: 2,
    Kind.RESET: 1,
    Kind.ONE_WAY: 2,
    Kind.ISOLATE: 2,
    Kind.SPLIT: 2,
    Kind.KILL: 3,
    Kind.KILL_MAJORITY: 0.5,
}


@attrs.frozen
class Fault:
    """One fault, as drawn: ``count`` nodes, the leader first if ``leader_first``, then ``order``."""

    kind: Kind
    #: seconds the fault lasts (0 for RESET)
    duration: float
    count: int
    leader_first: bool
    #: a permutation of the node ids: who is picked after (or instead of) the leader
    order: tuple[int, ...]
    delay: float = 0.0
    heal: Heal = Heal.RESET
    #: ONE_WAY: True cuts what the nodes send, False what they receive
    outgoing: bool = True

    def nodes(self, leader: int | None) -> tuple[int, ...]:
        """The nodes hit, given the current leader (``None``: not known)."""
        chosen: list[int] = []
        if self.leader_first and leader is not None and leader in self.order:
            chosen.append(leader)
        for node in self.order:
            if len(chosen) >= self.count:
                break
            if node not in chosen:
                chosen.append(node)
        return tuple(chosen)

    def links(self, nodes: tuple[int, ...]) -> tuple[Link, ...]:
        """The directed links a network fault affects, for the resolved ``nodes``."""
        everyone = sorted(self.order)
        inside = set(nodes)
        outside = [k for k in everyone if k not in inside]
        if self.kind is Kind.DROP:
            pairs = list(zip(nodes[::2], nodes[1::2], strict=False))
            return tuple(link for a, b in pairs for link in ((a, b), (b, a)))
        if self.kind is Kind.ONE_WAY:
            return tuple((a, b) if self.outgoing else (b, a) for a in nodes for b in outside)
        if self.kind is Kind.DELAY:  # every link touching the nodes (all of them may be chosen)
            return tuple(
                sorted({link for a in nodes for b in everyone if b != a for link in ((a, b), (b, a))})
            )
        # RESET, ISOLATE, SPLIT: everything crossing the cut between the nodes and the rest
        return tuple(link for a in nodes for b in outside for link in ((a, b), (b, a)))

    def describe(self, nodes: tuple[int, ...]) -> str:
        who = ",".join(map(str, nodes))
        if self.kind is Kind.DELAY:
            return f"delay {self.delay * 1000:.0f} ms on links of [{who}] for {self.duration:.1f}s"
        if self.kind is Kind.RESET:
            return f"reset connections of [{who}]"
        if self.kind is Kind.ONE_WAY:
            way = "sends" if self.outgoing else "receives"
            return (
                f"one-way: what [{who}] {way} black-holed for {self.duration:.1f}s (heal: {self.heal.value})"
            )
        if self.kind in (Kind.KILL, Kind.KILL_MAJORITY):
            return f"{self.kind.value} -9 [{who}] for {self.duration:.1f}s"
        return f"{self.kind.value} [{who}] for {self.duration:.1f}s (heal: {self.heal.value})"


class FaultSchedule:
    """An endless, seed-determined sequence of faults for a farm of ``nodes`` (ids 1..nodes)."""

    def __init__(self, rng: random.Random, nodes: int, max_fault: float = 8.0) -> None:
        if nodes < 3:
            raise ValueError("chaos needs at least 3 nodes, so that a minority can fail")
        self.rng = rng
        self.n = nodes
        self.max_fault = max_fault
        self.minority = (nodes - 1) // 2
        self.majority = nodes // 2 + 1

    def pause(self) -> float:
        """Calm seconds between two faults."""
        return self.rng.uniform(0.5, 2.5)

    def next(self) -> Fault:
        rng = self.rng
        kinds = list(WEIGHTS)
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        order = tuple(rng.sample(range(1, self.n + 1), self.n))
        leader_first = rng.random() < 0.5
        duration = rng.uniform(2.0, self.max_fault)
        heal = rng.choice(list(Heal))
        if kind is Kind.DELAY:
            return Fault(kind, duration, rng.randint(1, self.n), leader_first, order, rng.uniform(0.02, 0.4))
        if kind is Kind.DROP:
            return Fault(kind, duration, 2 * rng.randint(1, self.minority), leader_first, order, heal=heal)
        if kind is Kind.RESET:
            return Fault(kind, 0.0, rng.randint(1, self.minority), leader_first, order)
        if kind is Kind.ONE_WAY:
            outgoing = rng.random() < 0.5
            return Fault(kind, duration, 1, leader_first, order, heal=heal, outgoing=outgoing)
        if kind is Kind.ISOLATE:
            return Fault(kind, duration, 1, leader_first, order, heal=heal)
        if kind is Kind.SPLIT:
            return Fault(kind, duration, rng.randint(1, self.minority), leader_first, order, heal=heal)
        if kind is Kind.KILL:
            return Fault(
                kind, rng.uniform(1.0, self.max_fault), rng.randint(1, self.minority), leader_first, order
            )
        return Fault(kind, rng.uniform(1.0, 3.0), self.majority, leader_first, order)
