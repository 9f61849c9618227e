"""Entries committed per second through a 3-node Raft cluster of real cores, no I/O.

Messages are delivered in-process, FIFO, as soon as a node's Ready has been "persisted" into a
MemoryLogStore. Each round proposes BATCH entries of 100 bytes to the leader and pumps messages until
the cluster is quiet; BATCH=1 measures per-entry overhead, larger batches show what batching buys.

    python bench/core_throughput.py [--entries N] [--nodes K]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import deque

from garlicfarm.raft.core import RaftCore
from garlicfarm.raft.types import RaftOptions
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.wire import ClusterServer, Configuration, Message, Request


class Cluster:
    def __init__(self, nodes: int) -> None:
        bootstrap = Configuration(0, 0, tuple(ClusterServer(i, f"bench://{i}") for i in range(1, nodes + 1)))
        self.stores = {i: MemoryLogStore() for i in range(1, nodes + 1)}
        self.cores = {
            i: RaftCore(i, self.stores[i].load(), random.Random(i), bootstrap, RaftOptions())
            for i in self.stores
        }
        self.queue: deque[tuple[int, int, Message]] = deque()
        self.replies: dict[tuple[int, int], int] = {}  # (node, handle) -> requester
        self.handle = 0
        self.committed = 0

    def drain(self, node: int) -> None:
        core = self.cores[node]
        while core.has_ready():
            rd = core.ready()
            if rd.needs_persist():
                self.stores[node].save(rd.hard_state, rd.entries_from, rd.entries)
            core.advance(rd)
            for send in rd.sends:
                self.queue.append((node, send.to, send.message))
            for reply in rd.replies:
                requester = self.replies.pop((node, reply.handle), None)
                if requester is not None:
                    self.queue.append((node, requester, reply.message))
            if node == 1:
                self.committed += len(rd.committed)

    def pump(self) -> None:
        while self.queue:
            src, dst, message = self.queue.popleft()
            if isinstance(message, Request):
                self.handle += 1
                self.replies[(dst, self.handle)] = src
                self.cores[dst].step(message, self.handle)
            else:
                self.cores[dst].step(message)
            self.drain(dst)

    def elect(self) -> None:
        leader = self.cores[1]
        while not leader.is_leader():
            leader.tick()
            self.drain(1)
            self.pump()


def measure(nodes: int, entries: int, batch: int) -> float:
    cluster = Cluster(nodes)
    cluster.elect()
    leader = cluster.cores[1]
    payload = b'{"pad":"' + b"x" * 90 + b'"}'
    start_commit = cluster.committed
    started = time.perf_counter()
    proposed = 0
    while proposed < entries:
        for _ in range(batch):
            cluster.handle += 1
            leader.propose(payload, cluster.handle)
        proposed += batch
        cluster.drain(1)
        cluster.pump()
    elapsed = time.perf_counter() - started
    assert cluster.committed - start_commit >= entries
    return entries / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--nodes", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.nodes}-node cluster, {args.entries} entries of 100 bytes, no I/O")
    for batch in (1, 10, 100):
        rate = measure(args.nodes, args.entries, batch)
        print(f"  batch {batch:>3}: {rate:>10,.0f} entries/s")


if __name__ == "__main__":
    main()
