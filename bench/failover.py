"""Failover: time from kill -9 of the leader to the next committed entry, on a real farm over TLS.

    python -m bench.failover [--nodes 3] [--trials 20] [--profile lan] [--links lan|i2p]
        [--tick-ms N] [--election-ticks N] [--heartbeat-ticks N] [--campaign-rank-ticks N]

A prober in this process submits one 100-byte entry at a time (every 10 ms) to the node it believes
leads, following "not the leader" answers and trying the next node when one does not answer within
300 ms; it keeps a connection open to every node. Each trial: steady state, kill -9 the leader, wait
for the first commit acknowledged after the kill, restart the killed node, let it catch up. The
election timeout is election_ticks ticks of tick_ms, then each follower of a known leader waits its rank
in the ring after the leader x campaign_rank_ticks more (docs/raft.md, "Who campaigns first"; 0: a
random timeout in [election_ticks, 2 x election_ticks)): the profile's (garlicfarm/config.py PROFILES)
unless --tick-ms / --election-ticks / --heartbeat-ticks / --campaign-rank-ticks override them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from twisted.internet import task
from twisted.internet.defer import Deferred

from bench.farm_bench import log_warnings_to_stderr, request
from bench.stats import summary
from bench.tuning import set_options
from garlicfarm.chaos.faults import I2P_TUNNEL, LinkTable, all_links
from garlicfarm.chaos.procs import proxied_config
from garlicfarm.chaos.proxy import ChaosProxy
from garlicfarm.config import PROFILES, load_config
from garlicfarm.farminit import FarmSpec
from garlicfarm.net.client import FarmClient
from garlicfarm.net.connection import ClientConnection
from tests.e2e.procfarm import ProcFarm


class Prober:
    def __init__(self, reactor: Any, client: FarmClient, nodes: list[int]) -> None:
        self.reactor = reactor
        self.client = client
        self.nodes = nodes
        self.target = nodes[0]
        self.conns: dict[int, ClientConnection] = {}
        self.commits: list[tuple[float, int]] = []  # (monotonic time, node that acknowledged)
        self.running = True
        #: seconds between probes, and a probe's answer may take
        self.interval = 0.01
        self.timeout = 0.3
        #: a node leads if it acknowledged a probe this recently
        self.recent = 0.1
        #: when each node last failed us: a follower that has not noticed yet still names a dead
        #: leader, and dialling it again costs a connection timeout
        self.failed_at: dict[int, float] = {}
        #: (monotonic time, node, why) of every probe that failed: what a slow trial waited for
        self.failures: list[tuple[float, int, str]] = []

    def _failed_lately(self, node: int) -> bool:
        return time.monotonic() - self.failed_at.get(node, float("-inf")) < 1.0

    def _next(self) -> None:
        i = self.nodes.index(self.target)
        order = self.nodes[i + 1 :] + self.nodes[: i + 1]
        self.target = next((n for n in order if not self._failed_lately(n)), order[0])

    async def keep_warm(self) -> None:
        """Hold an authenticated connection to every node (reconnecting every 0.2 s), as a client
        that fails over quickly does: the redirect then costs no TLS handshake and Digest challenge."""
        while self.running:
            for node in self.nodes:
                conn = self.conns.get(node)
                if conn is None or conn.lost:
                    try:
                        self.conns[node] = await self.client.connect(self.client.endpoints[node])
                    except Exception:
                        self.conns.pop(node, None)
            await task.deferLater(self.reactor, 0.2)

    async def run(self) -> None:
        while self.running:
            target = self.target
            try:
                conn = self.conns.get(target)
                if conn is None or conn.lost:
                    conn = self.conns[target] = await self.client.connect(self.client.endpoints[target])
                answer = await conn.request(request(), timeout=self.timeout)
                if answer.accepted:
                    self.commits.append((time.monotonic(), target))
                elif answer.destination in self.nodes and not self._failed_lately(answer.destination):
                    self.target = answer.destination
                else:
                    self._next()
            except Exception as e:
                self.conns.pop(target, None)
                self.failed_at[target] = time.monotonic()
                self.failures.append((self.failed_at[target], target, str(e) or type(e).__name__))
                self._next()
            await task.deferLater(self.reactor, self.interval)

    def leader(self) -> int | None:
        """The node that acknowledged the last commit, if that was within the last 100 ms."""
        if self.commits and time.monotonic() - self.commits[-1][0] < self.recent:
            return self.commits[-1][1]
        return None


async def trials(reactor: Any, farm: ProcFarm, count: int, slow: bool = False) -> list[float]:
    """``slow``: I2P-like links, where a commit takes seconds and a restarted node half a minute."""
    client = FarmClient(reactor, load_config(farm.config(1)), timeout=30.0 if slow else 1.0)
    prober = Prober(reactor, client, list(range(1, farm.n + 1)))
    if slow:
        prober.interval, prober.timeout, prober.recent = 0.1, 30.0, 15.0
    running = Deferred.fromCoroutine(prober.run())
    warm = Deferred.fromCoroutine(prober.keep_warm())
    times: list[float] = []
    try:
        while len(times) < count:
            # steady state (and the restarted node caught up)
            await task.deferLater(reactor, 45.0 if slow else 2.0)
            leader = prober.leader()
            if leader is None:
                continue
            killed_at = time.monotonic()
            os.kill(farm.procs.pop(leader).pid, signal.SIGKILL)
            while not any(t > killed_at and node != leader for t, node in prober.commits):
                await task.deferLater(reactor, 0.005)
            first = next(t for t, node in prober.commits if t > killed_at and node != leader)
            times.append(first - killed_at)
            print(f"failover trial {len(times)}: {times[-1]:.3f} s (killed {leader})", file=sys.stderr)
            for at, node, why in prober.failures:
                if at > killed_at:
                    print(f"  +{at - killed_at:.1f} s: probe to node {node} failed: {why}", file=sys.stderr)
            prober.conns.pop(leader, None)
            farm.start(leader)
    finally:
        prober.running = False
        await running
        await warm
    return times


async def _behind_proxy(reactor: Any, farm: ProcFarm, profile: str, raft: dict[str, int]) -> ChaosProxy:
    """Put every peer link of ``farm`` through a proxy with I2P-like tunnels, then start the nodes
    (their [raft] tables: ``profile`` and the ``raft`` overrides)."""
    spec = FarmSpec(farm.dir, farm.n, farm.base)
    table = LinkTable(random.Random(1))
    proxy = ChaosProxy(reactor, table, {k: spec.port(k) for k in range(1, farm.n + 1)})
    links = all_links(farm.n)
    ports = await proxy.listen(links)
    table.tunnel(links, I2P_TUNNEL)
    for k in range(1, farm.n + 1):
        Path(farm.config(k)).write_text(proxied_config(spec, k, ports, profile))
        set_options(farm.config(k), "app", interval=3600)
        set_options(farm.config(k), "raft", **raft)
    farm.start_all()
    return proxy


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="lan")
    parser.add_argument("--tick-ms", type=int, help="override the profile's tick")
    parser.add_argument("--election-ticks", type=int, help="override the profile's election timeout")
    parser.add_argument("--heartbeat-ticks", type=int, help="override the profile's heartbeat interval")
    parser.add_argument(
        "--campaign-rank-ticks",
        type=int,
        help="override the profile's ranked campaigns (0: random election timeouts only)",
    )
    parser.add_argument(
        "--links",
        choices=("lan", "i2p"),
        default="lan",
        help="i2p: peer links through the chaos proxy's I2P tunnel model (1-3 s one way, 5%% loss)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--workdir", type=Path, help="keep the farm and its nodes' logs here (default: a temporary directory)"
    )
    args = parser.parse_args()
    log_warnings_to_stderr()
    times: list[float] = []
    overrides = {
        "tick_ms": args.tick_ms,
        "election_ticks": args.election_ticks,
        "heartbeat_ticks": args.heartbeat_ticks,
        "campaign_rank_ticks": args.campaign_rank_ticks,
    }
    chosen = {key: value for key, value in overrides.items() if value is not None}
    with tempfile.TemporaryDirectory() as tmp:
        farm = ProcFarm((args.workdir or Path(tmp)) / "farm", args.nodes)
        for i in range(1, args.nodes + 1):
            set_options(farm.config(i), "app", interval=3600)
            set_options(farm.config(i), "raft", profile=args.profile, **chosen)
        try:

            async def run(reactor: Any) -> None:
                slow = args.links == "i2p"
                proxy = await _behind_proxy(reactor, farm, args.profile, chosen) if slow else None
                if proxy is None:
                    farm.start_all()
                    farm.wait_for_leader()
                times.extend(await trials(reactor, farm, args.trials, slow=proxy is not None))
                if proxy is not None:
                    await proxy.stop()

            task.react(lambda reactor: Deferred.fromCoroutine(run(reactor)), [])
        except SystemExit:
            pass
        finally:
            farm.stop_all()
    profile = PROFILES[args.profile]
    tick = args.tick_ms or profile.tick_ms
    election = args.election_ticks or profile.election_ticks
    ranked = profile.campaign_rank_ticks if args.campaign_rank_ticks is None else args.campaign_rank_ticks
    result = {
        "nodes": args.nodes,
        "profile": args.profile,
        "links": args.links,
        "campaign_rank_ms": tick * ranked,
        "trials": len(times),
        "election_timeout_ms": [tick * election, 2 * tick * election],
        "heartbeat_ms": tick * (args.heartbeat_ticks or profile.heartbeat_ticks),
        **summary(times),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
