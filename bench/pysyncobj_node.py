"""One PySyncObj node for the side-by-side benchmarks (run by bench/pysyncobj_bench.py, not by hand).

PySyncObj has no client protocol: commands are submitted by the nodes themselves (a follower forwards to
the leader). So the load runs inside a node process, single-threaded (``autoTick=False``, the loop calls
``doTick``), which is the fastest way to drive it. The driver talks to the nodes through files in
``--dir``: ``go-<task>`` asks for a measurement, ``result-<task>-<port>.json`` answers, ``stop`` ends.
Every node also prints ``leader <port>`` when it sees a leader and, in ``--probe`` mode, one
``commit <submitted> <committed>`` line (monotonic clock) for every committed probe (the failover
benchmark: only probes submitted after the kill count, not old ones whose commit arrives late).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import psutil
from pysyncobj import SyncObj, SyncObjConf, replicated

PAYLOAD = "x" * 100  # a 100-byte string, the Application entry of our benchmarks


class Appender(SyncObj):  # type: ignore[misc]
    def __init__(self, me: str, others: list[str], conf: SyncObjConf) -> None:
        super().__init__(me, others, conf)
        self.count = 0

    @replicated  # type: ignore[untyped-decorator]
    def append(self, item: str) -> int:
        self.count += 1
        return self.count


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else float("nan")


def pipelined(obj: Appender, seconds: float, window: int) -> dict[str, Any]:
    latencies: list[float] = []
    failures = 0
    outstanding = 0

    def submit() -> None:
        nonlocal outstanding
        started = time.perf_counter()

        def done(result: Any, error: Any) -> None:
            nonlocal outstanding, failures
            outstanding -= 1
            if error == 0:  # FAIL_REASON.SUCCESS
                latencies.append(time.perf_counter() - started)
            else:
                failures += 1

        outstanding += 1
        obj.append(PAYLOAD, callback=done)

    begin = time.perf_counter()
    end = begin + seconds
    while time.perf_counter() < end:
        while outstanding < window:
            submit()
        obj.doTick(0.0)
    while outstanding:
        obj.doTick(0.001)
    elapsed = time.perf_counter() - begin
    ms = [x * 1000 for x in latencies]
    return {
        "committed_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "failures": failures,
        "count": len(latencies),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--partners", type=int, nargs="+", required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--journal", action="store_true", help="keep the log in a journal file")
    parser.add_argument("--password", help="encrypt the links (PySyncObj's answer to TLS)")
    parser.add_argument("--probe", action="store_true", help="submit a probe every 10 ms, print commits")
    parser.add_argument(
        "--rest",
        action="store_true",
        help="tick as PySyncObj's autoTick thread does (autoTickPeriod), take no tasks: a node at rest",
    )
    args = parser.parse_args()
    conf = SyncObjConf(
        autoTick=False,
        journalFile=str(args.dir / f"journal-{args.port}") if args.journal else None,
        fullDumpFile=str(args.dir / f"dump-{args.port}") if args.journal else None,
        password=args.password,
        commandsQueueSize=1_000_000,
    )
    obj = Appender(f"127.0.0.1:{args.port}", [f"127.0.0.1:{p}" for p in args.partners], conf)
    me = f"127.0.0.1:{args.port}"
    seen_leader = None
    next_probe = 0.0
    stop = args.dir / "stop"
    while not stop.exists():
        obj.doTick(conf.autoTickPeriod if args.rest else 0.005)
        leader = obj._getLeader()
        if leader is not None and str(leader) != seen_leader:
            seen_leader = str(leader)
            print(f"leader {seen_leader.rsplit(':', 1)[1]}", flush=True)
        if args.probe and time.monotonic() >= next_probe and leader is not None:
            next_probe = time.monotonic() + 0.01

            def probed(result: Any, error: Any, submitted: float = time.monotonic()) -> None:
                if error == 0:
                    print(f"commit {submitted:.6f} {time.monotonic():.6f}", flush=True)

            obj.append(PAYLOAD, callback=probed)
        is_leader = leader is not None and str(leader) == me
        for go in () if args.rest else args.dir.glob("go-*"):
            task = json.loads(go.read_text())
            if task["on"] != ("leader" if is_leader else "follower") or not obj.isReady():
                continue
            claim = args.dir / f"claim-{go.name}"
            try:
                claim.touch(exist_ok=False)  # one follower takes a follower task
            except FileExistsError:
                continue
            result = pipelined(obj, task["seconds"], task["window"])
            result["rss_mb"] = rss_mb()
            out = args.dir / f"result-{go.name[3:]}.json"
            out.with_suffix(".tmp").write_text(json.dumps(result))
            out.with_suffix(".tmp").rename(out)
            go.unlink()
    obj.destroy()
    sys.exit(0)


def rss_mb() -> float:
    return float(psutil.Process().memory_info().rss) / 2**20


if __name__ == "__main__":
    main()
