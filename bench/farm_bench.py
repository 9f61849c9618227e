"""Throughput and commit latency of a real garlicfarm farm: node processes over TLS on loopback.

    python -m bench.farm_bench [--nodes 3] [--seconds 10] [--window 256] [--batch 1] [--no-fsync]

A client in this process keeps WINDOW ClientRequests (of BATCH 100-byte Application entries each) in
flight on one authenticated TLS connection to the leader (the protocol lets a client pipeline: answers
come back in order). Throughput is committed entries per second; latency is submit -> "committed"
answer, at low load (one request in flight, on the farm at rest, before any load) and high load
(WINDOW in flight), to the leader and through a follower (the follower answers with the leader's id;
the client resends there, as clients do); unloaded latency to the leader also from the lean client.
Resident size and CPU of every node are sampled at rest and under load. ``--connections N`` adds a
phase with the same requests in flight spread over N lean TLS connections at once (several clients).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from twisted.internet import task
from twisted.internet.defer import Deferred, gatherResults
from twisted.logger import (
    FilteringLogObserver,
    LogLevel,
    LogLevelFilterPredicate,
    globalLogBeginner,
    textFileLogObserver,
)

from bench.lean_client import LeanLoad
from bench.lean_client import connect as lean_connect
from bench.stats import cpu_seconds, cpu_us_per_entry, percentile
from bench.tuning import set_options
from garlicfarm.client import ClientSettings, GarlicFarmClient
from garlicfarm.config import load_config
from garlicfarm.net.client import FarmClient
from garlicfarm.net.connection import ClientConnection
from garlicfarm.wire import Application, ClientRequest, LogEntry, encode
from tests.e2e.procfarm import ProcFarm

PAYLOAD = json.dumps({"bench": "x" * 88}, separators=(",", ":")).encode()
assert len(PAYLOAD) == 100


def request(batch: int = 1) -> ClientRequest:
    return ClientRequest(entries=tuple(LogEntry(0, Application(PAYLOAD)) for _ in range(batch)))


async def pipelined(
    conn: ClientConnection,
    seconds: float,
    window: int,
    batch: int = 1,
    leader: ClientConnection | None = None,
) -> dict[str, float]:
    """Keep ``window`` requests of ``batch`` entries in flight for ``seconds``.

    With ``leader``, ``conn`` is a follower: it answers "not the leader" (naming it) and the request
    is sent again to the leader, as a client does; latency counts both legs.
    """
    latencies: list[float] = []
    done: Deferred[None] = Deferred()
    end = time.perf_counter() + seconds
    outstanding = 0
    failures = 0

    def send() -> None:
        nonlocal outstanding
        outstanding += 1
        started = time.perf_counter()
        d = conn.request(request(batch), timeout=30)
        if leader is not None:
            d.addCallback(
                lambda answer: answer if answer.accepted else leader.request(request(batch), timeout=30)
            )
        d.addCallbacks(answered, failed, callbackArgs=(started,))

    def answered(response: Any, started: float) -> None:
        nonlocal outstanding, failures
        outstanding -= 1
        if response.accepted:
            latencies.append(time.perf_counter() - started)
        else:
            failures += 1
        step()

    def failed(_: object) -> None:
        nonlocal outstanding, failures
        outstanding -= 1
        failures += 1
        step()

    def step() -> None:
        if time.perf_counter() < end and not conn.lost:
            send()
        elif outstanding == 0 and not done.called:
            done.callback(None)

    started = time.perf_counter()
    for _ in range(window):
        send()
    await done
    elapsed = time.perf_counter() - started
    ms = [x * 1000 for x in latencies]
    return {
        "committed_per_s": len(latencies) * batch / elapsed,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "failures": failures,
        "count": len(latencies) * batch,
    }


async def lean(
    reactor: Any, client: FarmClient, uri: str, seconds: float, window: int, connections: int = 1
) -> dict[str, float]:
    """``window`` single-entry requests in flight on each of ``connections`` TLS connections from the
    lean load generator (bench/lean_client.py), all running at once."""
    loads = [
        LeanLoad(reactor, client.handshake_config(uri), client.cache, encode(request()), window)
        for _ in range(connections)
    ]
    for load in loads:
        await lean_connect(reactor, uri, client.config.tls, load)
    results = await gatherResults([load.run(seconds) for load in loads], consumeErrors=True)
    ms = [x * 1000 for load in loads for x in load.latencies]
    failures = sum(load.failures for load in loads)
    return {
        "committed_per_s": (len(ms) - failures) / max(r["elapsed"] for r in results),
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "failures": failures,
        "count": len(ms) - failures,
        "connections": connections,
    }


def client_settings(farm: ProcFarm) -> ClientSettings:
    """What a client of the library needs to reach ``farm``: every node, node 1's credentials."""
    config = load_config(farm.config(1))
    endpoints: tuple[str, ...] = tuple(config.peers[i] for i in sorted(config.peers))
    return ClientSettings(
        endpoints=endpoints,
        username=config.username,
        password=config.password(),
        cluster=config.cluster,
        tls=config.tls,
    )


async def library(
    reactor: Any, farm: ProcFarm, seconds: float, submitters: int, max_batch: int
) -> dict[str, float]:
    """``submitters`` concurrent callers of ``GarlicFarmClient.submit``, one 100-byte entry each at a
    time: the client library coalesces what is submitted in one reactor turn into one ClientRequest."""
    client = GarlicFarmClient(reactor, client_settings(farm), max_batch=max_batch)
    latencies: list[float] = []
    end = time.perf_counter() + seconds

    async def submitter() -> None:
        while time.perf_counter() < end:
            started = time.perf_counter()
            await client.submit(PAYLOAD)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await gatherResults([Deferred.fromCoroutine(submitter()) for _ in range(submitters)])
    elapsed = time.perf_counter() - started
    client.close()
    ms = [x * 1000 for x in latencies]
    return {
        "committed_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "requests": client.requests,
        "count": len(latencies),
    }


class Sampler:
    """Resident size and CPU of the node processes (and this client), sampled while a phase runs."""

    def __init__(self, reactor: Any, farm: ProcFarm) -> None:
        self.procs = {i: psutil.Process(p.pid) for i, p in farm.procs.items()}
        self.procs[0] = psutil.Process()  # the client
        self.rss: dict[int, float] = {}
        self._cpu_at_start: dict[int, float] = {}
        self.loop = task.LoopingCall(self.sample)
        self.loop.clock = reactor

    def sample(self) -> None:
        for i, proc in self.procs.items():
            self.rss[i] = max(self.rss.get(i, 0.0), proc.memory_info().rss / 2**20)

    def start(self) -> None:
        self.rss.clear()
        for i, proc in self.procs.items():
            proc.cpu_percent()  # starts the interval
            self._cpu_at_start[i] = cpu_seconds(proc)
        self.loop.start(0.5)

    def stop(self, committed: int = 0, leader: int | None = None) -> dict[str, Any]:
        """With ``committed`` (entries committed in the phase): CPU microseconds per committed entry,
        per process and for all of them together, the server's efficiency whatever else runs."""
        self.loop.stop()
        cpu = {i: proc.cpu_percent() for i, proc in self.procs.items()}
        result: dict[str, Any] = {
            "rss_mb_max_node": max(v for i, v in self.rss.items() if i),
            "cpu_percent": {_name(i, leader): round(v) for i, v in cpu.items()},
        }
        if committed:
            spent = {
                _name(i, leader): cpu_seconds(proc) - self._cpu_at_start[i] for i, proc in self.procs.items()
            }
            result["cpu_us_per_entry"] = cpu_us_per_entry(spent, committed)
        return result


def _name(i: int, leader: int | None) -> str:
    return "client" if i == 0 else ("leader" if i == leader else f"node{i}")


async def measure(
    reactor: Any,
    farm: ProcFarm,
    seconds: float,
    window: int,
    batch: int,
    submitters: int = 0,
    lean_client: bool = False,
    max_batch: int = GarlicFarmClient.MAX_BATCH,
    connections: int = 0,
) -> dict[str, Any]:
    client = FarmClient(reactor, load_config(farm.config(1)))
    status = await client.status()
    for _ in range(100):  # a farm just started may still be electing its first leader
        if status["leader"] is not None:
            break
        await task.deferLater(reactor, 0.1)
        status = await client.status()
    leader_id = status["leader"]
    if leader_id is None:
        raise RuntimeError("the farm elected no leader in 10 s")
    leader_uri = client.endpoints[leader_id]
    leader = await client.connect(leader_uri)
    follower_id = next(i for i in client.endpoints if i != leader_id)
    follower = await client.connect(client.endpoints[follower_id])
    sampler = Sampler(reactor, farm)
    sampler.start()
    await task.deferLater(reactor, 1.0)
    at_rest = sampler.stop()
    # Unloaded first, on a farm at rest: for ~30 s after a load run the kernel still writes the
    # nodes' dirty pages back (vm.dirty_expire_centisecs), and an unloaded commit's fsyncs wait
    # behind it (~0.1 ms more at p50, measured; back to the rest value 40 s later).
    await pipelined(leader, 0.5, 1)  # warm up
    unloaded = {
        "latency_low_load_leader": await pipelined(leader, seconds / 2, 1),
        "latency_low_load_leader_lean": await lean(reactor, client, leader_uri, seconds / 2, 1),
        "latency_low_load_via_follower": await pipelined(follower, seconds / 2, 1, leader=leader),
    }
    await pipelined(leader, 2, 64)  # warm up
    sampler.start()
    if lean_client:
        throughput = await lean(reactor, client, leader_uri, seconds, window)
    else:
        throughput = await pipelined(leader, seconds, window, batch)
    under_load = sampler.stop(int(throughput["count"]), leader_id)
    results = {
        "leader": leader_id,
        "client": "lean" if lean_client else "full",
        "throughput": throughput,
        "rss_mb_per_node_at_rest": at_rest["rss_mb_max_node"],
        "rss_mb_per_node_under_load": under_load["rss_mb_max_node"],
        "cpu_percent_under_load": under_load["cpu_percent"],
        "cpu_us_per_entry_under_load": under_load["cpu_us_per_entry"],
        **unloaded,
        "latency_high_load_via_follower": await pipelined(follower, seconds / 2, window, leader=leader),
    }
    for conn in (leader, follower):
        conn.transport.loseConnection()  # type: ignore[union-attr]
    if connections:
        # the same requests in flight spread over several clients (4 x 250 for a window of 1000): the
        # leader reads fewer requests per read than from one connection with all of them
        sampler.start()
        several = await lean(reactor, client, leader_uri, seconds, max(1, window // connections), connections)
        used = sampler.stop(int(several["count"]), leader_id)
        several.update(cpu_percent=used["cpu_percent"], cpu_us_per_entry=used["cpu_us_per_entry"])
        results["several_connections"] = several
    if submitters:
        await library(reactor, farm, 2, submitters, max_batch)  # warm up
        sampler.start()
        coalesced = await library(reactor, farm, seconds, submitters, max_batch)
        used = sampler.stop(int(coalesced["count"]), leader_id)
        coalesced.update(cpu_percent=used["cpu_percent"], cpu_us_per_entry=used["cpu_us_per_entry"])
        results["client_library"] = coalesced
    return results


def slow_disk(tmp: Path, delay_ms: float) -> None:
    """Build bench/slow_fsync.c and preload it into the node processes started from now on."""
    library = tmp / "slow_fsync.so"
    source = Path(__file__).with_name("slow_fsync.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"], check=True)
    os.environ["LD_PRELOAD"] = str(library)
    os.environ["GARLICFARM_FSYNC_DELAY_US"] = str(round(delay_ms * 1000))


def log_warnings_to_stderr() -> None:
    """The client side's warnings (a dropped connection and why) on stderr, beside the results."""
    levels = LogLevelFilterPredicate(defaultLogLevel=LogLevel.warn)
    levels.setLogLevelForNamespace("garlicfarm", LogLevel.info)
    observer = FilteringLogObserver(textFileLogObserver(sys.stderr), [levels])
    globalLogBeginner.beginLoggingTo([observer], redirectStandardIO=False)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--window", type=int, default=256, help="requests in flight at high load")
    parser.add_argument("--batch", type=int, default=1, help="entries per ClientRequest at high load")
    parser.add_argument("--no-fsync", action="store_true", help="[storage] fsync = false on every node")
    parser.add_argument(
        "--submitters",
        type=int,
        default=0,
        help="also measure this many concurrent GarlicFarmClient.submit callers (coalesced)",
    )
    parser.add_argument(
        "--writer", choices=("thread", "inline"), default="thread", help="[storage] writer of every node"
    )
    parser.add_argument(
        "--snapshot-every", type=int, metavar="N", help="[raft] snapshot_every of every node (default 5000)"
    )
    parser.add_argument(
        "--fsync-delay-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="a slow disk: every fsync of the nodes first waits MS (bench/slow_fsync.c preloaded; needs cc)",
    )
    parser.add_argument(
        "--max-batch",
        type=int,
        default=GarlicFarmClient.MAX_BATCH,
        help="with --submitters: the client library's max_batch (entries per ClientRequest)",
    )
    parser.add_argument(
        "--connections",
        type=int,
        default=0,
        metavar="N",
        help="also load the leader from N lean TLS connections at once, --window / N in flight on each",
    )
    parser.add_argument(
        "--client",
        choices=("lean", "full"),
        default="full",
        help="high load from bench/lean_client.py (single-entry requests only) or the full ClientConnection",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    log_warnings_to_stderr()
    with tempfile.TemporaryDirectory() as tmp:
        if args.fsync_delay_ms:
            slow_disk(Path(tmp), args.fsync_delay_ms)
        farm = ProcFarm(Path(tmp) / "farm", args.nodes)
        for i in range(1, args.nodes + 1):
            set_options(farm.config(i), "app", interval=3600)  # status reports out of the measurement
            set_options(farm.config(i), "storage", fsync=not args.no_fsync, writer=args.writer)
            if args.snapshot_every is not None:
                set_options(farm.config(i), "raft", snapshot_every=args.snapshot_every)
        farm.start_all()
        try:
            farm.wait_for_leader()
            box: dict[str, Any] = {}

            async def run(reactor: Any) -> None:
                box.update(
                    await measure(
                        reactor,
                        farm,
                        args.seconds,
                        args.window,
                        args.batch,
                        args.submitters,
                        lean_client=args.client == "lean",
                        max_batch=args.max_batch,
                        connections=args.connections,
                    )
                )

            task.react(lambda reactor: Deferred.fromCoroutine(run(reactor)), [])
        except SystemExit:
            pass
        finally:
            farm.stop_all()
    result = {
        "nodes": args.nodes,
        "fsync": not args.no_fsync,
        "writer": args.writer,
        "fsync_delay_ms": args.fsync_delay_ms,
        "window": args.window,
        "batch": args.batch,
        "max_batch": args.max_batch,
        "connections": args.connections,
        **box,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
