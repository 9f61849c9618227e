"""What a farm costs at rest: CPU, resident size and peer-link traffic of idle nodes, side by side.

    python -m bench.at_rest [--seconds 60] [--settle 10] [--profiles lan i2p] [--variant KEY=VALUE]
                            [--no-pysyncobj] [--json OUT] [--keep]

Starts, all at once, a 3-node garlicfarm farm per timing profile (``garlicfarm init`` defaults, and
``[raft] profile = ...``), one more lan farm per ``--variant`` (another [raft] setting added) and a
3-node PySyncObj farm (bench/pysyncobj_node.py
--rest: encrypted links, journal, ticking as PySyncObj's own autoTick thread does), all real processes
on loopback. Once each farm has a leader it waits ``--settle`` seconds, then measures over
``--seconds``:

* CPU: each node's user + system time (``/proc/<pid>/stat`` utime + stime), as a percentage of one core;
* RSS: each node's resident size at the end, in MiB, and the part of it no other process shares (USS);
* link traffic: bytes per second between each pair of nodes, both ways, all TCP connections between
  the two processes added up (TLS records and TCP payload, from the kernel's ``bytes_sent`` per
  socket, ``ss -tinp``). Nothing is proxied: the nodes talk to each other directly.

No client submits anything while measuring; the garlicfarm nodes' own status reports ([app]) and the
PySyncObj nodes' polling loops are part of what is measured, as they are of any farm at rest.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.pysyncobj_bench import PySyncObjFarm
from tests.e2e.procfarm import ProcFarm

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` from /proc/<pid>/stat, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of stat(5)


def rss_mib(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


def private_mib(pid: int) -> float:
    """Memory no other process shares (USS: private clean + dirty pages, /proc/<pid>/smaps_rollup):
    RSS counts the shared libraries' pages (OpenSSL, cryptography's, Python's) in every node."""
    kib = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            kib += int(line.split()[1])
    return kib / 1024


#: "Recv-Q Send-Q local:port peer:port users:(("name",pid=N,fd=M))" (no state column: one state asked)
_SOCKET = re.compile(r"^\s*\d+\s+\d+\s+(\S+):(\d+)\s+(\S+):(\d+)\s+users:\(\(.*?pid=(\d+)")
_SENT = re.compile(r"bytes_sent:(\d+)")


def tcp_sent(pids: Iterable[int]) -> dict[tuple[int, int], int]:
    """Bytes sent so far from process A to process B over every established TCP connection between
    two of ``pids`` (``ss -tinp``: one line per socket, then its TCP info)."""
    wanted = set(pids)
    out = subprocess.run(
        ["ss", "-tinpH", "state", "established"], capture_output=True, text=True, check=True
    ).stdout
    owners: dict[tuple[str, int], int] = {}
    sockets: list[tuple[int, tuple[str, int], int]] = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = _SOCKET.match(line)
        if m is None:
            continue
        pid = int(m.group(5))
        if pid not in wanted:
            continue
        local, peer = (m.group(1), int(m.group(2))), (m.group(3), int(m.group(4)))
        owners[local] = pid
        info = lines[i + 1] if i + 1 < len(lines) else ""
        counted = _SENT.search(info)
        sockets.append((pid, peer, int(counted.group(1)) if counted else 0))
    totals: dict[tuple[int, int], int] = {}
    for pid, peer, sent in sockets:
        other = owners.get(peer)
        if other is not None and other != pid:
            totals[(pid, other)] = totals.get((pid, other), 0) + sent
    return totals


class Measured:
    """One farm's processes: name -> pid."""

    def __init__(self, system: str, pids: dict[str, int]) -> None:
        self.system = system
        self.pids = pids
        self.cpu0: dict[str, float] = {}
        self.sent0: dict[tuple[int, int], int] = {}
        self.t0 = 0.0

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.cpu0 = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self.sent0 = tcp_sent(self.pids.values())

    def stop(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self.t0
        cpu = {name: cpu_seconds(pid) - self.cpu0[name] for name, pid in self.pids.items()}
        sent = tcp_sent(self.pids.values())
        names = {pid: name for name, pid in self.pids.items()}
        links: dict[str, float] = {}
        for (a, b), total in sorted(sent.items()):
            if names[a] < names[b]:
                both = total - self.sent0.get((a, b), 0) + sent.get((b, a), 0) - self.sent0.get((b, a), 0)
                links[f"{names[a]}-{names[b]}"] = round(both / elapsed, 1)
        return {
            "system": self.system,
            "seconds": round(elapsed, 1),
            "cpu_percent": {name: round(100 * s / elapsed, 3) for name, s in cpu.items()},
            "rss_mib": {name: round(rss_mib(pid), 1) for name, pid in self.pids.items()},
            "uss_mib": {name: round(private_mib(pid), 1) for name, pid in self.pids.items()},
            "link_bytes_per_s": links,
        }


def garlicfarm_farm(directory: Path, profile: str, raft: Sequence[str] = ()) -> ProcFarm:
    """A farm from ``garlicfarm init`` with ``[raft] profile`` and the ``raft`` settings ("key = value")."""
    farm = ProcFarm(directory, 3)
    lines = [f'profile = "{profile}"', *raft]
    for i in range(1, 4):
        path = Path(farm.config(i))
        path.write_text(path.read_text() + "\n[raft]\n" + "\n".join(lines) + "\n")
    farm.start_all()
    return farm


def garlicfarm_pids(farm: ProcFarm, leader: int) -> dict[str, int]:
    return {("leader" if i == leader else f"node{i}"): p.pid for i, p in sorted(farm.procs.items())}


def _version(package: str) -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return version(package)


def table(results: list[dict[str, Any]]) -> str:
    rows = [
        "| system | CPU % of a core, per node (leader first) | RSS MiB per node | of which private (USS) "
        "| bytes/s per link, both ways |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        order = sorted(r["cpu_percent"], key=lambda n: (n != "leader", n))
        cpu = " / ".join(f"{r['cpu_percent'][n]:.2f}" for n in order)
        rss = " / ".join(f"{r['rss_mib'][n]:.0f}" for n in order)
        uss = " / ".join(f"{r['uss_mib'][n]:.0f}" for n in order)
        links = ", ".join(f"{k} {v:,.0f}" for k, v in r["link_bytes_per_s"].items()) or "-"
        rows.append(f"| {r['system']} | {cpu} | {rss} | {uss} | {links} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=10.0, help="seconds to wait after the election")
    parser.add_argument("--profiles", nargs="+", default=["lan", "i2p"], choices=["lan", "i2p"])
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also a lan farm with this [raft] setting (e.g. heartbeat_ticks=10); repeatable",
    )
    parser.add_argument("--no-pysyncobj", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the farms' directories (logs)")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.keep:
            tmp = tempfile.mkdtemp(prefix="at-rest-")
            print(f"farms in {tmp}")
        else:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="at-rest-"))
        farms: dict[str, ProcFarm] = {}
        pso: PySyncObjFarm | None = None
        try:
            for profile in args.profiles:
                farms[f"{profile} profile"] = garlicfarm_farm(Path(tmp) / f"gf-{profile}", profile)
            for n, variant in enumerate(args.variant):
                key, _, value = variant.partition("=")
                setting = f"{key.strip()} = {value.strip()}"
                farms[f"lan profile, {setting}"] = garlicfarm_farm(Path(tmp) / f"gf-v{n}", "lan", [setting])
            if not args.no_pysyncobj:
                (Path(tmp) / "pso").mkdir()
                pso = PySyncObjFarm(Path(tmp) / "pso", 3, journal=True, rest=True)
                pso.start_all()
            measured: list[Measured] = []
            leaders: dict[str, int] = {}
            for profile, farm in farms.items():
                leader = leaders[profile] = farm.wait_for_leader(timeout=120)
                measured.append(Measured(f"garlicfarm, {profile}", garlicfarm_pids(farm, leader)))
            if pso is not None:
                lead = pso.wait_for_leader(timeout=60)
                pids = {("leader" if p == lead else f"node{p}"): proc.pid for p, proc in pso.procs.items()}
                measured.append(Measured(f"PySyncObj {_version('pysyncobj')}, encrypted, journal", pids))
            time.sleep(args.settle)
            for m in measured:
                m.start()
            time.sleep(args.seconds)
            results = [m.stop() for m in measured]
            for profile, farm in farms.items():
                now = farm.wait_for_leader(timeout=30)
                if now != leaders[profile]:
                    was = leaders[profile]
                    print(f"NOTE: {profile}: the leader changed while measuring ({was} -> {now})")
        finally:
            for farm in farms.values():
                with contextlib.suppress(Exception):
                    farm.stop_all()
            if pso is not None:
                with contextlib.suppress(Exception):
                    pso.stop_all()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
