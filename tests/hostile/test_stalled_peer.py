"""A follower that stops reading (SIGSTOP: as a peer behind a path that drops its packets looks to the
leader) costs the leader a bounded amount, on a live 3-node TLS farm of real processes writing 60 KB
entries. Before: the leader resent a full batch (up to 1 MiB) to the stopped follower at every
heartbeat and queued it in the transport until the 30 s response timeout: 63 -> 797 MB in 30 s.

What each member must hold anyway is the log itself (it lives in memory): the healthy follower's
growth measures that, and the leader may grow only a documented bound more (docs/security.md)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from tests.hostile.farm import WAIT, HostileFarm, answer, client_request, eventually

pytestmark = pytest.mark.e2e

#: what the leader may hold beyond the healthy follower: one peer link's unanswered requests (8 MiB),
#: its socket buffer, a probe batch (1 MiB), and the allocator's slack
BOUND = 64 * 2**20
#: what the leader may keep beyond the healthy follower once the stopped one has caught up
BACK = 32 * 2**20
STALL = 20.0
PAD = "x" * 60_000


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileFarm]:
    farm = HostileFarm(tmp_path_factory.mktemp("stalled") / "farm", 3)
    farm.start_all()
    try:
        farm.leader()
        yield farm
    finally:
        for node in farm.procs:  # never leave a stopped process behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(farm.pid(node), signal.SIGCONT)
        farm.stop_all()


class BigWrites(threading.Thread):
    """60 KB entries to the leader, one at a time, at most 40 a second."""

    def __init__(self, farm: HostileFarm, leader: int) -> None:
        super().__init__(daemon=True)
        self.farm, self.leader = farm, leader
        self.acked = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        with self.farm.authenticated(self.leader) as sock:
            sock.settimeout(WAIT)
            n = 0
            while not self.stopping.is_set():
                n += 1
                sock.sendall(client_request(json.dumps({"big": n, "pad": PAD}).encode()))
                if answer(sock).accepted:
                    self.acked += 1
                self.stopping.wait(0.025)


def rss(farm: HostileFarm, node: int) -> int:
    return int(psutil.Process(farm.pid(node)).memory_info().rss)


def test_a_follower_that_stops_reading_costs_the_leader_a_bounded_amount(farm: HostileFarm) -> None:
    leader = farm.leader()
    victim, healthy = farm.followers()
    writes = BigWrites(farm, leader)
    writes.start()
    try:
        eventually(lambda: writes.acked >= 40, "the first 40 big writes")
        base = {node: rss(farm, node) for node in (leader, healthy)}
        os.kill(farm.pid(victim), signal.SIGSTOP)
        peak = dict(base)
        acked_before = writes.acked
        deadline = time.monotonic() + STALL
        while time.monotonic() < deadline:
            for node in (leader, healthy):
                peak[node] = max(peak[node], rss(farm, node))
            time.sleep(0.2)  # sampling a real process's memory
        committed_while_stopped = writes.acked - acked_before
        os.kill(farm.pid(victim), signal.SIGCONT)
        leader_commit = int((farm.status(leader) or {})["commit_index"])
        eventually(
            lambda: int((farm.status(victim) or {}).get("commit_index", 0)) >= leader_commit,
            "the stopped follower caught up once it read again",
        )
    finally:
        writes.stopping.set()
        writes.join(timeout=WAIT)
    # once the follower reads again, what the leader held for it comes back: the leader holds no more
    # beyond its baseline than the healthy follower, which holds the same log, plus a little
    after: dict[int, int] = {}

    def given_back() -> bool:
        after.update({node: rss(farm, node) for node in (leader, healthy)})
        return after[leader] - base[leader] <= after[healthy] - base[healthy] + BACK

    try:
        eventually(given_back, "the leader's memory came back")
    finally:
        mib = {n: ((peak[n] - base[n]) / 2**20, (after.get(n, 0) - base[n]) / 2**20) for n in base}
        print(f"RSS growth (MiB) at the peak and after: leader {mib[leader]}, healthy {mib[healthy]}")
    growth = {node: peak[node] - base[node] for node in base}
    assert committed_while_stopped >= 40, "the farm kept committing with 2 of 3"
    assert growth[leader] <= growth[healthy] + BOUND, (
        f"leader grew {growth[leader] / 2**20:.0f} MiB, healthy follower {growth[healthy] / 2**20:.0f} MiB "
        f"over {STALL:g} s with server {victim} stopped ({committed_while_stopped} entries of 60 KB)"
    )
