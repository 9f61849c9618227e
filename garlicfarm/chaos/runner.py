"""One chaos run: a farm of real processes behind the proxy, faults and kill -9 cycles under a client
workload, then a quiet period, a clean stop, and the checks of :mod:`garlicfarm.chaos.checker`."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.logger import Logger

from garlicfarm.chaos.checker import RunVerdict, check_run, read_node_log
from garlicfarm.chaos.faults import I2P_TUNNEL, NETWORK, Fault, FaultSchedule, Kind, LinkTable, all_links
from garlicfarm.chaos.procs import NodeProcesses
from garlicfarm.chaos.proxy import ChaosProxy
from garlicfarm.chaos.workload import Tally, Workload
from garlicfarm.config import load_config
from garlicfarm.net.client import FarmClient


@attrs.frozen
class ChaosSettings:
    directory: Path
    nodes: int = 5
    duration: float = 60.0
    seed: int = 0
    clients: int = 4
    max_fault: float = 8.0
    request_timeout: float = 5.0
    #: seconds to wait, after the faults, for every node to hold the same committed log
    settle: float = 60.0
    #: the nodes' [raft] profile (garlicfarm/config.py PROFILES)
    profile: str = "lan"
    #: "i2p": every link is an I2P-like tunnel (faults.I2P_TUNNEL) for the whole run; "lan": loopback
    links: str = "lan"
    #: False: no faults and no kills, only the links' own character (a run for spurious elections)
    faults: bool = True


@attrs.define
class ChaosSummary:
    seed: int
    seconds: float = 0.0
    faults: Counter[str] = attrs.field(factory=Counter)
    kills: int = 0
    elections: int = 0
    tally: Tally = attrs.field(factory=Tally)
    crashes: list[str] = attrs.field(factory=list)
    settled: bool = False
    verdict: RunVerdict | None = None

    @property
    def lost(self) -> int:
        return len(self.verdict.lost) if self.verdict else 0

    @property
    def violations(self) -> int:
        if self.verdict is None:
            return 0
        return len(self.verdict.violations) + (0 if self.verdict.linearizable.ok else 1)

    @property
    def ok(self) -> bool:
        return self.verdict is not None and self.verdict.ok and not self.crashes

    def line(self) -> str:
        lin = self.verdict.linearizable.verdict.value if self.verdict else "not checked"
        return (
            f"chaos seed {self.seed}: {self.seconds:.0f}s, {sum(self.faults.values())} faults, "
            f"{self.kills} kills, {self.elections} elections, ops {self.tally.ok} acknowledged / "
            f"{self.tally.failed} refused / {self.tally.unknown} unknown, "
            f"{self.verdict.committed_client_values if self.verdict else 0} committed; "
            f"{self.lost} lost writes, {self.violations} violations ({lin}), {len(self.crashes)} crashes"
        )


class ChaosRun:
    log = Logger()

    def __init__(self, reactor: Any, settings: ChaosSettings, report: Callable[[str], None]) -> None:
        self.reactor = reactor
        self.settings = settings
        self._report = report
        self.procs = NodeProcesses(settings.directory, settings.nodes)
        self.table = LinkTable(random.Random(settings.seed + 1))  # noqa: S311 - simulated jitter
        self.proxy = ChaosProxy(reactor, self.table, self.procs.ports)
        self.schedule = FaultSchedule(
            random.Random(settings.seed),  # noqa: S311 - a replayable schedule, not secrecy
            settings.nodes,
            settings.max_fault,
        )
        self.summary = ChaosSummary(settings.seed)
        self.terms: dict[int, int] = {}  # term -> leader seen in it
        self.leader: int | None = None
        self._leader_term = 0
        self._started = time.monotonic()
        self.workload: Workload | None = None
        self._status_client: FarmClient | None = None
        self._monitoring = True
        #: [start, end] (monotonic ns, the workload's clock) of the times a majority was killed
        self.outages: list[tuple[int, int]] = []

    def report(self, line: str) -> None:
        self._report(f"[{time.monotonic() - self._started:7.1f}s] {line}")

    async def run(self) -> ChaosSummary:
        s = self.settings
        n = s.nodes
        try:
            links = all_links(n)
            proxy_ports = await self.proxy.listen(links)
            if s.links == "i2p":
                self.table.tunnel(links, I2P_TUNNEL)
            self.procs.write(proxy_ports, s.profile)
            self.report(f"farm of {n} in {s.directory}, ports {self.procs.spec.base_port}.., seed {s.seed}")
            for k in range(1, n + 1):
                self.procs.start(k)
            config = load_config(self.procs.config_path(1))
            self._status_client = FarmClient(self.reactor, config, timeout=2.0)
            monitor = Deferred.fromCoroutine(self._monitor())
            await self._wait_for_leader(60.0)
            self.report(f"leader {self.leader} in term {self._leader_term}; workload of {s.clients} clients")
            endpoints = {k: self.procs.endpoint(k) for k in range(1, n + 1)}
            self.workload = Workload(
                self.reactor, config, endpoints, f"s{s.seed}", s.clients, s.request_timeout
            )
            self.summary.tally = self.workload.tally
            self.workload.start()
            if s.faults:
                await self._nemesis(time.monotonic() + s.duration)
            else:
                await self._quiet(time.monotonic() + s.duration)
            await self._settle()
            self._monitoring = False
            await monitor
        finally:
            self._monitoring = False
            self.summary.seconds = time.monotonic() - self._started
            self._check_crashes()
            await self._stop_nodes(15.0)
            await self.proxy.stop()
            self.report("nodes stopped; reading their logs")
        if self.workload is not None:
            logs = [
                read_node_log(k, s.directory / f"node-{k}" / "log.db")
                for k in range(1, n + 1)
                if (s.directory / f"node-{k}" / "log.db").exists()
            ]
            self._save_history()
            self.summary.verdict = check_run(self.workload.ops, logs, self.outages)
            self.report(f"checked {len(self.workload.ops)} operations against {len(logs)} logs")
        return self.summary

    def _save_history(self) -> None:
        """history.jsonl in the farm's directory: every operation, for a post-mortem of a failed check."""
        assert self.workload is not None
        with (self.settings.directory / "history.jsonl").open("w", encoding="utf-8") as out:
            for op in self.workload.ops:
                record = {
                    "client": op.client,
                    "op": op.op,
                    "value": op.value.decode(),
                    "call_ns": op.call,
                    "return_ns": op.ret,
                    "outcome": op.outcome.value,
                    "index": op.index,
                }
                out.write(json.dumps(record) + "\n")
            for start, end in self.outages:
                out.write(json.dumps({"majority_down_ns": [start, end]}) + "\n")

    # ------------------------------------------------------------------------------------------ faults

    async def _nemesis(self, deadline: float) -> None:
        last_progress = time.monotonic()
        while time.monotonic() < deadline:
            fault = self.schedule.next()
            pause = self.schedule.pause()
            await self._apply(fault)
            await self._sleep(pause)
            self._check_crashes()
            if time.monotonic() - last_progress >= 10:
                last_progress = time.monotonic()
                self._progress()

    async def _quiet(self, deadline: float) -> None:
        """No faults: every election seen now is a spurious one (the links' delays alone caused it)."""
        while time.monotonic() < deadline:
            await self._sleep(min(60.0, max(0.0, deadline - time.monotonic())))
            self._check_crashes()
            self._progress()

    async def _apply(self, fault: Fault) -> None:
        nodes = fault.nodes(self.leader)
        self.summary.faults[fault.kind.value] += 1
        self.report(f"fault: {fault.describe(nodes)}")
        if fault.kind in NETWORK:
            links = fault.links(nodes)
            if fault.kind is Kind.RESET:
                self.proxy.reset(links)
                return
            if fault.kind is Kind.DELAY:
                self.table.slow(links, fault.delay)
            else:
                self.table.cut(links, fault.heal)
            await self._sleep(fault.duration)
            self.table.heal_all()
            return
        for k in nodes:
            self.procs.kill(k)
            self.summary.kills += 1
        down = time.monotonic_ns()
        await self._sleep(fault.duration)
        if fault.kind is Kind.KILL_MAJORITY:
            self.outages.append((down, time.monotonic_ns()))
        for k in nodes:
            self.procs.start(k)

    def _check_crashes(self) -> None:
        for k, rc in self.procs.crashed().items():
            self.summary.crashes.append(f"node {k} exited by itself with status {rc}")
            self.report(f"node {k} CRASHED (exit {rc}); log tail:\n{self.procs.log_tail(k)}")
            self.procs.procs.pop(k)
            self.procs.start(k)

    # ------------------------------------------------------------------------------------------ watching

    async def _monitor(self) -> None:
        """Poll one node's status at a time: who leads, in which term (elections seen)."""
        turn = 0
        while self._monitoring:
            alive = self.procs.alive()
            if alive:
                turn += 1
                await self._poll(alive[turn % len(alive)])
            await self._sleep(0.3)

    async def _poll(self, node: int) -> dict[str, Any] | None:
        assert self._status_client is not None
        d = Deferred.fromCoroutine(self._status_client.status(self.procs.endpoint(node)))
        d.addTimeout(3.0, self.reactor)
        try:
            status: dict[str, Any] = await d
        except Exception:
            return None
        term, leader = int(status["term"]), status["leader"]
        if leader is not None and term not in self.terms:
            self.terms[term] = int(leader)
            if len(self.terms) > 1:
                self.summary.elections += 1
                self.report(f"election: node {leader} leads term {term}")
        if leader is not None and term >= self._leader_term:
            self.leader, self._leader_term = int(leader), term
        return status

    async def _wait_for_leader(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.leader is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no leader within {timeout:.0f}s; logs in {self.settings.directory}")
            await self._sleep(0.3)

    async def _settle(self) -> None:
        """Heal everything, restart every node, stop the clients, wait for one committed log everywhere."""
        self.table.heal_all()
        for k in self.procs.dead():
            self.procs.start(k)
        self.report("faults over: all links healed, all nodes up; stopping clients")
        assert self.workload is not None
        await self.workload.stop()
        self._progress()
        deadline = time.monotonic() + self.settings.settle
        while time.monotonic() < deadline:
            statuses = [await self._poll(k) for k in range(1, self.settings.nodes + 1)]
            commits = {s["commit_index"] for s in statuses if s is not None}
            lasts = {s["last_log_index"] for s in statuses if s is not None}
            if all(s is not None for s in statuses) and len(commits) == 1 and commits == lasts:
                self.summary.settled = True
                self.report(f"settled: every node has committed index {commits.pop()}")
                return
            await self._sleep(0.5)
        self.report(f"not settled within {self.settings.settle:.0f}s; checking what is committed")

    async def _stop_nodes(self, grace: float) -> None:
        """SIGTERM, and keep serving the proxy while the nodes close their links; SIGKILL after ``grace``."""
        self.procs.terminate_all()
        deadline = time.monotonic() + grace
        while self.procs.alive() and time.monotonic() < deadline:
            await self._sleep(0.1)
        self.procs.stop_all()

    def _progress(self) -> None:
        t = self.summary.tally
        self.report(
            f"progress: {sum(self.summary.faults.values())} faults, {self.summary.kills} kills, "
            f"{self.summary.elections} elections, ops {t.ok} ok / {t.failed} refused / {t.unknown} unknown"
        )

    async def _sleep(self, seconds: float) -> None:
        await deferLater(self.reactor, seconds, lambda: None)
