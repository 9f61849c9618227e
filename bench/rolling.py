"""Rolling restart of a whole farm by SIGTERM while clients write: lost writes, client errors, and the
time the farm was without a leader at each handover.

    python -m bench.rolling [--nodes 3] [--rounds 1] [--writers 4] [--profile lan] [--json OUT]

Every node of a real TLS farm is stopped with SIGTERM (what systemd or an operator sends), waited
for, started again and given time to catch up, one after the other, ``--rounds`` times over; a
stopping leader hands over (leadership transfer) before it exits. Meanwhile ``--writers`` clients of
the client library (``GarlicFarmClient``, which follows redirects) each submit unique entries one
after another, and a prober submits every 2 ms to whoever it believes leads. Afterwards every node's
committed log is read: each acknowledged write must be there, at the index it was acknowledged at.

The gap at a handover is the longest interval between two writes the prober got committed, around
the SIGTERM of the leader: the time no server took writes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from twisted.internet import task
from twisted.internet.defer import Deferred

from bench.failover import Prober
from bench.farm_bench import client_settings, log_warnings_to_stderr
from bench.tuning import set_options
from garlicfarm.chaos.checker import read_node_log
from garlicfarm.chaos.procs import NO_SNAPSHOTS
from garlicfarm.client import ClientSettings, GarlicFarmClient
from garlicfarm.config import load_config
from garlicfarm.net.client import FarmClient
from garlicfarm.wire import Application
from tests.e2e.procfarm import ProcFarm

#: a handover slower than this (the target) has its story printed, from the causes Prober records
SLOW = 0.05


class Writers:
    """Clients of the client library writing unique values, one at a time each."""

    def __init__(self, reactor: Any, settings: ClientSettings, count: int) -> None:
        self.reactor = reactor
        self.clients = [GarlicFarmClient(reactor, settings) for _ in range(count)]
        self.acknowledged: dict[bytes, int] = {}
        #: when each write was acknowledged (monotonic): did the farm take writes while the prober got none?
        self.times: list[float] = []
        self.errors: list[str] = []
        self.running = True

    async def run(self, n: int) -> None:
        client, seq = self.clients[n], 0
        while self.running:
            value = json.dumps({"bench": f"writer-{n}-{seq}"}).encode()
            seq += 1
            try:
                self.acknowledged[value] = await client.submit(value)
                self.times.append(time.monotonic())
            except Exception as e:
                self.errors.append(f"writer {n}: {e}")
            await task.deferLater(self.reactor, 0.005)


async def roll(reactor: Any, farm: ProcFarm, rounds: int, writers: int) -> dict[str, Any]:
    writing = Writers(reactor, client_settings(farm), writers)
    prober = Prober(
        reactor, FarmClient(reactor, load_config(farm.config(1)), timeout=1.0), list(range(1, farm.n + 1))
    )
    prober.interval = 0.002
    jobs = [Deferred.fromCoroutine(writing.run(n)) for n in range(writers)]
    jobs.append(Deferred.fromCoroutine(prober.run()))
    jobs.append(Deferred.fromCoroutine(prober.keep_warm()))
    gaps: list[float] = []
    slow: list[dict[str, Any]] = []
    try:
        await task.deferLater(reactor, 2.0)
        for _ in range(rounds):
            for node in range(1, farm.n + 1):
                was_leader = prober.leader() == node
                stopped_at = time.monotonic()
                proc = farm.procs.pop(node)
                os.kill(proc.pid, signal.SIGTERM)
                while proc.poll() is None:
                    await task.deferLater(reactor, 0.01)
                prober.conns.pop(node, None)
                deadline = time.monotonic() + 30
                while (
                    was_leader and time.monotonic() < deadline and not _served_since(prober, stopped_at, node)
                ):
                    await task.deferLater(reactor, 0.01)
                if was_leader:
                    gaps.append(_gap_around(prober.commits, stopped_at, node))
                    print(f"handover from {node}: {gaps[-1] * 1000:.1f} ms without a leader", file=sys.stderr)
                    if gaps[-1] > SLOW:
                        slow.append(_what_the_prober_met(prober, writing, stopped_at, node, gaps[-1]))
                        print(json.dumps(slow[-1], indent=2), file=sys.stderr)
                farm.start(node)
                await task.deferLater(reactor, 3.0)  # it starts, catches up, and the farm settles
    finally:
        writing.running = prober.running = False
        for job in jobs:
            await job
    return {
        "acknowledged": dict(writing.acknowledged),
        "errors": writing.errors,
        "gaps": gaps,
        "slow_handovers": slow,
        "probes": len(prober.commits),
    }


def _served_since(prober: Prober, at: float, old: int) -> bool:
    return any(t > at and node != old for t, node in prober.commits[-50:])


def _gap_around(commits: list[tuple[float, int]], at: float, old: int) -> float:
    """The longest interval between consecutive commits from 1 s before ``at`` to the first commit
    after it that another node than ``old`` acknowledged."""
    end = next((t for t, node in commits if t > at and node != old), None)
    times = [t for t, _ in commits if at - 1.0 <= t and (end is None or t <= end)]
    if end is None or len(times) < 2:
        return float("nan")
    return max(b - a for a, b in itertools.pairwise(times))


def _what_the_prober_met(prober: Prober, writing: Writers, at: float, old: int, gap: float) -> dict[str, Any]:
    """A slow handover's story from the prober's side: each probe that failed from 1 s before the
    SIGTERM to the first commit through the new leader, who acknowledged the commits around it, and
    the writers' acknowledgements meanwhile (times in ms after the SIGTERM)."""
    end = next((t for t, node in prober.commits if t > at and node != old), at + 30.0)
    return {
        "from": old,
        "gap_ms": round(gap * 1000, 1),
        "writes_acknowledged": [round((t - at) * 1000, 1) for t in writing.times if at <= t <= end],
        "failed_probes": [
            [round((t - at) * 1000, 1), node, why] for t, node, why in prober.failures if at - 1.0 <= t <= end
        ],
        "commits": [[round((t - at) * 1000, 1), node] for t, node in prober.commits if at - 0.05 <= t <= end],
    }


def lost_writes(farm: ProcFarm, acknowledged: dict[bytes, int]) -> list[str]:
    logs = [read_node_log(i, farm.dir / f"node-{i}" / "log.db") for i in range(1, farm.n + 1)]
    committed: dict[int, bytes] = {}
    for log in logs:
        for index, entry in log.entries.items():
            if isinstance(entry.value, Application):
                committed.setdefault(index, entry.value.data)
    return [
        f"{value.decode()} acknowledged at {index}, the log holds {committed.get(index, b'nothing')!r}"
        for value, index in sorted(acknowledged.items(), key=lambda item: item[1])
        if committed.get(index) != value
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1, help="times the whole farm is restarted")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--profile", choices=("lan", "i2p"), default="lan")
    parser.add_argument(
        "--writer", choices=("thread", "inline"), default="thread", help="[storage] writer of every node"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--workdir", type=Path, help="keep the farm (configurations, logs) here")
    args = parser.parse_args()
    log_warnings_to_stderr()
    with tempfile.TemporaryDirectory() as tmp:
        farm = ProcFarm(args.workdir or Path(tmp) / "farm", args.nodes)
        for i in range(1, args.nodes + 1):
            set_options(farm.config(i), "app", interval=3600)
            # no log compaction: the check afterwards reads every committed entry from the logs
            set_options(farm.config(i), "raft", profile=args.profile, snapshot_every=NO_SNAPSHOTS)
            set_options(farm.config(i), "storage", writer=args.writer)
        farm.start_all()
        outcome: dict[str, Any] = {}
        try:
            farm.wait_for_leader()

            async def run(reactor: Any) -> None:
                outcome.update(await roll(reactor, farm, args.rounds, args.writers))

            task.react(lambda reactor: Deferred.fromCoroutine(run(reactor)), [])
        except SystemExit:
            pass
        finally:
            farm.stop_all()
        lost = lost_writes(farm, outcome.get("acknowledged", {}))
    gaps = outcome.get("gaps", [])
    result = {
        "nodes": args.nodes,
        "profile": args.profile,
        "restarts": args.rounds * args.nodes,
        "writes_acknowledged": len(outcome.get("acknowledged", {})),
        "probes_committed": outcome.get("probes", 0),
        "client_errors": outcome.get("errors", []),
        "lost_writes": lost,
        "handovers": len(gaps),
        "gap_ms": [round(g * 1000, 1) for g in gaps],
        "slow_handovers": outcome.get("slow_handovers", []),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
