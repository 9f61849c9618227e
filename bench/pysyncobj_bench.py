"""PySyncObj doing the equivalent replicated append, for the side-by-side tables in docs/benchmarks.md.

    python -m bench.pysyncobj_bench [--nodes 3] [--seconds 10] [--no-journal] [--json OUT]
    python -m bench.pysyncobj_bench --failover 20 [--nodes 3]

Each node is a process (bench/pysyncobj_node.py) on loopback, links encrypted with PySyncObj's
``password`` (its answer to TLS) and the log in its journal file. Note what that journal is: an mmap'ed
file that is never fsync'ed while running — PySyncObj has no durable mode, so compare it with ours
both with and without fsync.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import psutil

from bench.stats import cpu_seconds, cpu_us_per_entry, summary
from tests.e2e.procfarm import free_base_port


class PySyncObjFarm:
    def __init__(
        self, directory: Path, nodes: int, journal: bool = True, probe: bool = False, rest: bool = False
    ) -> None:
        self.dir = directory
        self.rest = rest
        base = free_base_port(nodes)
        self.ports = list(range(base, base + nodes))
        self.journal = journal
        self.probe = probe
        self.procs: dict[int, subprocess.Popen[str]] = {}
        self.lines: queue.Queue[tuple[int, str]] = queue.Queue()
        self.leader: int | None = None
        self.views: dict[int, int] = {}

    def start(self, port: int) -> None:
        self.views.pop(port, None)
        argv = [sys.executable, "-m", "bench.pysyncobj_node", "--port", str(port), "--dir", str(self.dir)]
        argv += ["--partners", *(str(p) for p in self.ports if p != port), "--password", "bench-secret"]
        argv += ["--journal"] if self.journal else []
        argv += ["--probe"] if self.probe else []
        argv += ["--rest"] if self.rest else []
        log = open(self.dir / f"node-{port}.log", "ab")  # noqa: SIM115 - the process owns it
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        self.procs[port] = proc
        threading.Thread(target=self._read, args=(port, proc.stdout), daemon=True).start()

    def _read(self, port: int, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            if line.startswith("leader "):
                self.views[port] = int(line.split()[1])  # what each node last said leads
            else:
                self.lines.put((port, line.strip()))

    def start_all(self) -> None:
        for port in self.ports:
            self.start(port)

    def wait_for_leader(self, timeout: float = 30.0, excluding: int | None = None) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = {p: v for p, v in self.views.items() if p in self.procs and v != excluding}
            agreed = set(live.values())
            if len(live) == len(self.procs) and len(agreed) == 1:
                self.leader = agreed.pop()
                return self.leader
            time.sleep(0.05)
        raise AssertionError(f"PySyncObj elected no leader within {timeout}s; logs in {self.dir}")

    def run_task(self, name: str, on: str, seconds: float, window: int) -> dict[str, Any]:
        go = self.dir / f"go-{name}"
        go.write_text(json.dumps({"on": on, "seconds": seconds, "window": window}))
        result = self.dir / f"result-{name}.json"
        rss: list[float] = []
        cpu_at_start = self.cpu_seconds()
        deadline = time.monotonic() + seconds + 120
        while not result.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"task {name} gave no result; logs in {self.dir}")
            rss.append(self.rss_mb())
            time.sleep(0.5)
        answer: dict[str, Any] = json.loads(result.read_text())
        answer["rss_mb_per_node_under_load"] = max(rss) if rss else None
        if answer.get("count"):
            # CPU per committed entry, as bench.farm_bench counts it (the submitter is the leader)
            spent = {
                ("leader" if port == self.leader else f"node{port}"): s - cpu_at_start.get(port, 0.0)
                for port, s in self.cpu_seconds().items()
            }
            answer["cpu_us_per_entry"] = cpu_us_per_entry(spent, answer["count"])
        return answer

    def cpu_seconds(self) -> dict[int, float]:
        """User and system CPU seconds each node has used so far."""
        spent = {}
        for port, proc in self.procs.items():
            with contextlib.suppress(psutil.NoSuchProcess):
                spent[port] = cpu_seconds(psutil.Process(proc.pid))
        return spent

    def rss_mb(self) -> float:
        """The largest resident size among the nodes, in MiB."""
        sizes = []
        for proc in self.procs.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                sizes.append(psutil.Process(proc.pid).memory_info().rss / 2**20)
        return max(sizes, default=0.0)

    def kill(self, port: int) -> None:
        proc = self.procs.pop(port)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        (self.dir / "stop").touch()
        for port in list(self.procs):
            proc = self.procs.pop(port)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def throughput(nodes: int, seconds: float, journal: bool, window: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        farm = PySyncObjFarm(Path(tmp), nodes, journal=journal)
        farm.start_all()
        try:
            farm.wait_for_leader()
            time.sleep(1.0)  # let every node finish connecting
            rest = farm.rss_mb()
            farm.run_task("warmup", "leader", 2, 64)
            tput = farm.run_task("tput", "leader", seconds, window)
            return {
                "nodes": nodes,
                "journal": journal,
                "rss_mb_per_node_under_load": tput["rss_mb_per_node_under_load"],
                "window": window,
                "rss_mb_per_node_at_rest": rest,
                "throughput": tput,
                "latency_low_load_leader": farm.run_task("low", "leader", seconds / 2, 1),
                "latency_low_load_via_follower": farm.run_task("lowf", "follower", seconds / 2, 1),
                "latency_high_load_via_follower": farm.run_task("highf", "follower", seconds / 2, window),
            }
        finally:
            farm.stop_all()


def failover(nodes: int, trials: int) -> dict[str, Any]:
    """Kill -9 the leader; seconds until a surviving node sees its next probe committed."""
    times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        farm = PySyncObjFarm(Path(tmp), nodes, probe=True)
        farm.start_all()
        try:
            for trial in range(trials):
                leader = farm.wait_for_leader(timeout=60)
                if leader not in farm.procs:
                    continue
                time.sleep(1.0)  # steady state: probes committing
                while not farm.lines.empty():
                    farm.lines.get_nowait()
                killed_at = time.monotonic()
                farm.kill(leader)
                while True:
                    _port, line = farm.lines.get(timeout=60)
                    if line.startswith("commit ") and float(line.split()[1]) > killed_at:
                        times.append(float(line.split()[2]) - killed_at)
                        break
                farm.start(leader)
                print(f"pysyncobj failover trial {trial + 1}: {times[-1]:.3f} s", file=sys.stderr)
        finally:
            farm.stop_all()
    return {"nodes": nodes, "trials": trials, **summary(times)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--window", type=int, default=256, help="requests in flight at high load")
    parser.add_argument("--no-journal", action="store_true", help="keep the log in memory only")
    parser.add_argument("--failover", type=int, metavar="TRIALS", help="measure failover instead")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if args.failover:
        result = failover(args.nodes, args.failover)
    else:
        result = throughput(args.nodes, args.seconds, not args.no_journal, args.window)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
