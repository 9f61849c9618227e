"""What Prometheus' scrapes cost a farm: CPU per scrape of /metrics, and commits with and without a
scrape of every node each second.

    python -m bench.scrape [--seconds 10] [--rounds 3] [--window 256]

A real 3-node farm (`garlicfarm init` defaults: TLS, fsync, `[metrics]` on loopback). First the leader
is scraped back to back for SECONDS: its CPU seconds in that time, less what it spends at rest in as
long, per scrape. Then ROUNDS pairs of SECONDS-long runs of the lean load generator (WINDOW
single-entry requests in flight), one with every node scraped each second and one without, in
alternation: committed entries per second and CPU per committed entry of the nodes together.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from bench.farm_bench import lean
from bench.stats import cpu_seconds
from bench.tuning import set_options
from garlicfarm.config import load_config
from garlicfarm.net.client import FarmClient
from tests.e2e.procfarm import ProcFarm


def metrics_url(farm: ProcFarm, node: int) -> str:
    listen = tomllib.loads(Path(farm.config(node)).read_text())["metrics"]["listen"]
    port = int(str(listen).split(":")[1]) if not isinstance(listen, int) else listen
    return f"http://127.0.0.1:{port}/metrics"


def scrape(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
    return body


def nodes_cpu(procs: dict[int, psutil.Process]) -> float:
    return sum(cpu_seconds(p) for p in procs.values())


def cost_per_scrape(leader: psutil.Process, url: str, seconds: float) -> dict[str, float]:
    start = cpu_seconds(leader)
    time.sleep(seconds)
    at_rest = cpu_seconds(leader) - start
    body, count = b"", 0
    start, deadline = cpu_seconds(leader), time.monotonic() + seconds
    while time.monotonic() < deadline:
        body = scrape(url)
        count += 1
    spent = cpu_seconds(leader) - start - at_rest
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    return {
        "scrapes": count,
        "cpu_ms_per_scrape": round(spent / count * 1000, 3),
        "bytes_per_scrape": len(body),
        "series": series,
    }


async def load_rounds(
    reactor: Any, farm: ProcFarm, seconds: float, rounds: int, window: int
) -> dict[str, list[dict[str, float]]]:
    client = FarmClient(reactor, load_config(farm.config(1)))
    status = await client.status()
    uri = client.endpoints[status["leader"]]
    first = await client.connect(uri)  # caches the Digest challenge the lean client answers
    first.transport.loseConnection()  # type: ignore[union-attr]
    procs = {i: psutil.Process(p.pid) for i, p in farm.procs.items()}
    urls = [metrics_url(farm, i) for i in farm.procs]
    results: dict[str, list[dict[str, float]]] = {"scraped": [], "not scraped": []}

    def scrape_all() -> Deferred[list[bytes]]:
        return deferToThread(lambda: [scrape(u) for u in urls])

    await lean(reactor, client, uri, 2, window)  # warm up
    for _ in range(rounds):
        for kind in ("scraped", "not scraped"):
            loop = task.LoopingCall(scrape_all)
            loop.clock = reactor
            if kind == "scraped":
                loop.start(1.0)
            before = nodes_cpu(procs)
            run = await lean(reactor, client, uri, seconds, window)
            spent = nodes_cpu(procs) - before
            if loop.running:
                loop.stop()
            results[kind].append(
                {
                    "committed_per_s": round(run["committed_per_s"]),
                    "nodes_cpu_us_per_entry": round(spent / run["count"] * 1e6, 1),
                }
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        farm = ProcFarm(Path(tmp) / "farm", 3)
        for i in range(1, 4):
            set_options(farm.config(i), "app", interval=3600)  # status reports out of the measurement
        farm.start_all()
        try:
            leader = farm.wait_for_leader()
            per_scrape = cost_per_scrape(
                psutil.Process(farm.procs[leader].pid), metrics_url(farm, leader), args.seconds
            )

            async def run(reactor: Any) -> None:
                rounds = await load_rounds(reactor, farm, args.seconds, args.rounds, args.window)
                print(json.dumps({"per_scrape": per_scrape, "load": summarize(rounds)}, indent=2))

            task.react(lambda reactor: Deferred.fromCoroutine(run(reactor)), [])  # exits when done
        finally:
            farm.stop_all()


def summarize(rounds: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    return {
        kind: {
            "committed_per_s_median": statistics.median(r["committed_per_s"] for r in runs),
            "nodes_cpu_us_per_entry_median": statistics.median(r["nodes_cpu_us_per_entry"] for r in runs),
            "runs": runs,
        }
        for kind, runs in rounds.items()
    }


if __name__ == "__main__":
    main()
