"""garlicfarm and PySyncObj side by side, in one run: throughput, latency and memory on 3 and 5 nodes.

    bench/setup.sh && .venv/bin/python -m bench.compare [--seconds 10] [--nodes 3 5] [--json OUT]

For each farm size: garlicfarm durable (fsync on), garlicfarm with fsync off, PySyncObj with its
journal (an mmap that is never fsync'ed: PySyncObj has no durable mode) — one after another on the
same machine, each with its best pipelining (garlicfarm: 1000 single-entry ClientRequests in flight
over one TLS connection from bench/lean_client.py, a client process that costs next to nothing, so
that the server's own rate is measured, then the same 1000 spread over 4 connections at once, as
several clients load a farm; PySyncObj: 4096 commands in flight submitted inside the
leader's process, as it has no client protocol); then garlicfarm with fsync on again, loaded by the
full Python client (net/connection.py's ClientConnection, a Deferred per request); then garlicfarm's
client library under 1,000 concurrent submitters (coalesced into ClientRequests of up to
GarlicFarmClient.MAX_BATCH entries). Prints a Markdown table for docs/benchmarks.md, and a second one:
the CPU time every process spent per committed entry at high load (the leader, the followers, the
client, all of them), what each system costs whatever else shares the machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def run(module: str, *argv: str) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [sys.executable, "-m", module, *argv, "--json", out.name], check=True, stdout=subprocess.DEVNULL
        )
        result: dict[str, Any] = json.loads(Path(out.name).read_text())
        return result


def row(name: str, r: dict[str, Any]) -> str:
    t = r["throughput"]
    low, lowf, highf = (
        r["latency_low_load_leader"],
        r["latency_low_load_via_follower"],
        r.get("latency_high_load_via_follower", {}),
    )
    unloaded = f"{low['p50_ms']:.2f} / {low['p99_ms']:.1f}"
    lean = r.get("latency_low_load_leader_lean")
    if lean is not None:  # the server's own latency, then the full Python client's
        unloaded = f"{lean['p50_ms']:.2f} / {lean['p99_ms']:.1f}; full client {unloaded}"
    return (
        f"| {name} | {t['committed_per_s']:,.0f} | {unloaded} "
        f"| {t['p50_ms']:.0f} / {t['p99_ms']:.0f} | {lowf['p50_ms']:.1f} / {lowf['p99_ms']:.1f} "
        f"| {highf.get('p50_ms', float('nan')):.0f} / {highf.get('p99_ms', float('nan')):.0f} "
        f"| {r['rss_mb_per_node_at_rest']:.0f} / {r['rss_mb_per_node_under_load']:.0f} |"
    )


def cpu_row(name: str, per_entry: dict[str, float] | None) -> str:
    """CPU microseconds per committed entry: the leader, a follower (their mean), the client, all."""
    if not per_entry:
        return f"| {name} | | | | |"
    followers = [v for k, v in per_entry.items() if k.startswith("node")]
    follower = f"{sum(followers) / len(followers):.1f}" if followers else ""
    client = per_entry.get("client")
    return (
        f"| {name} | {per_entry.get('leader', float('nan')):.1f} | {follower} "
        f"| {'' if client is None else f'{client:.1f}'} | {per_entry['all']:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--nodes", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--json", type=Path, help="also write every result here")
    args = parser.parse_args()
    seconds = str(args.seconds)
    results: dict[str, Any] = {}
    lines = [
        "| nodes / system | committed entries/s | p50 / p99 ms, low load, leader (lean client; full client) "
        "| p50 / p99 ms, high load, "
        "leader | p50 / p99 ms, low load, via follower | p50 / p99 ms, high load, via follower "
        "| RSS MiB per node, rest / load |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    cpu_lines = [
        "| nodes / system, at high load | leader | a follower (mean) | client | all processes |",
        "| --- | --- | --- | --- | --- |",
    ]
    for n in args.nodes:
        nodes = str(n)
        ours = run(
            "bench.farm_bench",
            "--nodes",
            nodes,
            "--seconds",
            seconds,
            "--window",
            "1000",
            "--submitters",
            "1000",
            "--client",
            "lean",
            "--connections",
            "4",
        )
        ours_nofsync = run(
            "bench.farm_bench",
            *("--nodes", nodes, "--seconds", seconds, "--window", "1000", "--no-fsync", "--client", "lean"),
            *("--submitters", "1000"),
        )
        ours_full = run(
            "bench.farm_bench",
            *("--nodes", nodes, "--seconds", seconds, "--window", "1000", "--client", "full"),
        )
        theirs = run("bench.pysyncobj_bench", "--nodes", nodes, "--seconds", seconds, "--window", "4096")
        results[f"{n}"] = {
            "garlicfarm": ours,
            "garlicfarm_no_fsync": ours_nofsync,
            "garlicfarm_full_client": ours_full,
            "pysyncobj": theirs,
        }
        lines.append(row(f"{n} garlicfarm, TLS, fsync on", ours))
        lines.append(row(f"{n} garlicfarm, TLS, fsync off", ours_nofsync))
        lines.append(row(f"{n} garlicfarm, TLS, fsync on, full Python client", ours_full))
        lines.append(row(f"{n} PySyncObj, encrypted, journal (no fsync)", theirs))
        ratio = ours["throughput"]["committed_per_s"] / theirs["throughput"]["committed_per_s"]
        ratio_off = ours_nofsync["throughput"]["committed_per_s"] / theirs["throughput"]["committed_per_s"]
        lines.append(
            f"| {n}: ratio garlicfarm / PySyncObj | {ratio:.2f} (fsync on), {ratio_off:.2f} (fsync off) "
            "| | | | | |"
        )
        several = ours["several_connections"]
        lines.append(
            f"| {n} garlicfarm, TLS, fsync on, lean client, 4 connections x 250 in flight "
            f"| {several['committed_per_s']:,.0f} | "
            f"| {several['p50_ms']:.0f} / {several['p99_ms']:.0f} | | | |"
        )
        coalesced = ours["client_library"]
        lib_ratio = coalesced["committed_per_s"] / theirs["throughput"]["committed_per_s"]
        lines.append(
            f"| {n} garlicfarm, TLS, fsync on, client library, 1,000 submitters "
            f"| {coalesced['committed_per_s']:,.0f} (ratio {lib_ratio:.2f}) | | "
            f"{coalesced['p50_ms']:.0f} / {coalesced['p99_ms']:.0f} | | | |"
        )
        cpu_lines += [
            cpu_row(f"{n} garlicfarm, TLS, fsync on, lean client", ours.get("cpu_us_per_entry_under_load")),
            cpu_row(
                f"{n} garlicfarm, TLS, fsync on, lean client, 4 connections x 250",
                ours["several_connections"].get("cpu_us_per_entry"),
            ),
            cpu_row(f"{n} garlicfarm, TLS, fsync on, client library", coalesced.get("cpu_us_per_entry")),
            # what fsync costs, apart: PySyncObj's journal is never fsynced
            cpu_row(
                f"{n} garlicfarm, TLS, fsync off, lean client",
                ours_nofsync.get("cpu_us_per_entry_under_load"),
            ),
            cpu_row(
                f"{n} garlicfarm, TLS, fsync off, client library",
                ours_nofsync["client_library"].get("cpu_us_per_entry"),
            ),
            cpu_row(f"{n} PySyncObj (submitted in the leader)", theirs["throughput"].get("cpu_us_per_entry")),
        ]
        print("\n".join(lines), flush=True)
        print("\nCPU microseconds per committed entry\n\n" + "\n".join(cpu_lines), flush=True)
        if args.json:  # after every farm size: a long run interrupted keeps what it measured
            args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
