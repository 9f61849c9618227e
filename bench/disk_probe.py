"""What an fsync costs on this disk, alone and with other processes fsyncing at once (as every node
of a farm on one machine does for each commit).

    python -m bench.disk_probe [--processes 1 3] [--seconds 3] [--dir DIR]

Two loops, each in PROCESSES processes at once, each process on a file of its own: an 8 KiB
overwrite of a preallocated file then ``fdatasync``, and garlicfarm's SQLite log store saving one
100-byte entry with its hard state (one transaction, fsynced: a follower's save). Prints the p50 and
p90 latency per loop and process count.
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

from bench.stats import percentile
from garlicfarm.storage.interface import HardState
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import Application, LogEntry


def raw_fdatasync(path: Path, seconds: float) -> list[float]:
    block = 8192
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"\0" * block * 500)
        os.fsync(fd)
        took: list[float] = []
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            started = time.perf_counter()
            os.pwrite(fd, b"y" * block, (i % 500) * block)
            os.fdatasync(fd)
            took.append(time.perf_counter() - started)
            i += 1
        return took
    finally:
        os.close(fd)


def store_save(path: Path, seconds: float) -> list[float]:
    entry = LogEntry(1, Application(b'{"bench":"' + b"x" * 88 + b'"}'))
    took: list[float] = []
    with SQLiteLogStore(path) as store:
        end = time.monotonic() + seconds
        i = 0
        while time.monotonic() < end:
            i += 1
            started = time.perf_counter()
            store.save(HardState(1, 1, i - 1), i, [entry])
            took.append(time.perf_counter() - started)
    return took


LOOPS = {"fdatasync": raw_fdatasync, "store": store_save}


def child(loop: str, path: Path, seconds: float) -> None:
    print(json.dumps(LOOPS[loop](path, seconds)))


def measure(loop: str, processes: int, seconds: float, directory: Path) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.disk_probe", "--seconds", str(seconds), "--child", loop]
    procs = [
        subprocess.Popen([*command, str(directory / f"{loop}-{i}")], stdout=subprocess.PIPE)
        for i in range(processes)
    ]
    took: list[float] = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode:
            raise SystemExit(f"a probe process failed (exit {p.returncode})")
        took += json.loads(out)
    us = [t * 1e6 for t in took]
    return {"p50_us": percentile(us, 50), "p90_us": percentile(us, 90), "count": len(us)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temporary directory)")
    parser.add_argument("--child", nargs=2, metavar=("LOOP", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), args.seconds)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for loop in LOOPS:
            for n in args.processes:
                r = measure(loop, n, args.seconds, Path(tmp))
                p50, p90 = r["p50_us"], r["p90_us"]
                print(f"{loop:9} {n} process(es): p50 {p50:.0f} us, p90 {p90:.0f} us", flush=True)


if __name__ == "__main__":
    main()
