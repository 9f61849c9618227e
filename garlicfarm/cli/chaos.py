"""``garlicfarm chaos``: a farm of real node processes under network faults and kill -9, checked."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure


class ChaosFailed(Exception):
    """Lost writes, violations or crashes were found (already printed); the command exits 1."""


def run_chaos(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    from twisted.internet import reactor

    from garlicfarm.chaos.runner import ChaosRun, ChaosSettings

    problems = [
        "--nodes must be from 3 to 9" if not 3 <= args.nodes <= 9 else "",
        "--duration must be positive" if args.duration <= 0 else "",
        "--clients must be from 1 to 64" if not 1 <= args.clients <= 64 else "",
        "--max-fault must be at least 2 seconds" if args.max_fault < 2 else "",
    ]
    if any(problems):
        sys.stderr.write(f"garlicfarm chaos: {'; '.join(p for p in problems if p)}\n")
        raise ChaosFailed("bad options")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    directory = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="garlicfarm-chaos-"))
    settings = ChaosSettings(
        directory=directory,
        nodes=args.nodes,
        duration=args.duration,
        seed=seed,
        clients=args.clients,
        max_fault=args.max_fault,
        profile=args.profile,
        links=args.links,
        faults=not args.no_faults,
        # over I2P-like links a commit takes a few round trips of seconds each
        request_timeout=60.0 if args.links == "i2p" else 5.0,
        settle=300.0 if args.links == "i2p" else 60.0,
    )

    def say(line: str) -> None:
        stdout.write(line + "\n")
        stdout.flush()

    say(
        f"garlicfarm chaos --nodes {args.nodes} --duration {args.duration:g} --seed {seed} "
        f"--clients {args.clients} --profile {args.profile} --links {args.links}"
        f"{' --no-faults' if args.no_faults else ''} --workdir {directory}"
    )
    run = ChaosRun(reactor, settings, say)
    box: list[Any] = []

    def start() -> None:
        d: Deferred[Any] = Deferred.fromCoroutine(run.run())
        d.addBoth(box.append).addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    try:
        reactor.run()
    finally:
        run.procs.stop_all()  # interrupted: leave no node behind
    if not box:
        say(f"interrupted (a signal stopped the reactor) before the run ended; logs in {directory}")
        raise ChaosFailed("interrupted")
    if isinstance(box[0], Failure):
        if box[0].check(RuntimeError):  # the farm never came up: say why, and where its logs are
            say(f"chaos run failed: {box[0].value}")
            raise ChaosFailed(str(box[0].value))
        box[0].raiseException()
    summary = box[0]
    verdict = summary.verdict
    if verdict is not None:
        for problem in [*verdict.lost, *verdict.violations][:20]:
            say(f"  {problem}")
        if not verdict.linearizable.ok:
            say(f"  linearizability: {verdict.linearizable.explanation}")
    for crash in summary.crashes:
        say(f"  {crash}")
    say(summary.line())
    if not summary.ok:
        say(
            f"replay the fault schedule: garlicfarm chaos --nodes {args.nodes} --seed {seed}; "
            f"logs in {directory}"
        )
        raise ChaosFailed(summary.line())


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chaos = sub.add_parser(
        "chaos",
        help="chaos test: real nodes behind a fault-injecting proxy, kill -9 cycles, checked history",
        description="Start a farm of real node processes whose peer links all go through a TCP proxy "
        "that delays, black-holes and resets them (one-way and full partitions too), kill -9 and restart "
        "nodes (the leader among them; briefly a majority), while clients append unique values. Then "
        "heal, stop, and check the nodes' committed logs agree, every acknowledged write is at its "
        "index, and the history is linearizable. Exits 1 on any lost write, violation or node crash. "
        "The seed fixes the fault schedule (not the OS timing).",
    )
    chaos.add_argument("--nodes", type=int, default=5, metavar="N", help="farm size, 3 or more (default 5)")
    chaos.add_argument(
        "--duration", type=float, default=60.0, metavar="S", help="seconds of faults (default 60)"
    )
    chaos.add_argument("--seed", type=int, metavar="N", help="fault schedule seed (default: random)")
    chaos.add_argument("--workdir", metavar="DIR", help="where the farm lives (default: a new temp dir)")
    chaos.add_argument("--clients", type=int, default=4, metavar="N", help="concurrent clients (default 4)")
    chaos.add_argument(
        "--max-fault", type=float, default=8.0, metavar="S", help="longest fault, seconds (default 8)"
    )
    chaos.add_argument(
        "--profile", choices=("lan", "i2p"), default="lan", help="the nodes' [raft] profile (default lan)"
    )
    chaos.add_argument(
        "--links",
        choices=("lan", "i2p"),
        default="lan",
        help="i2p: every peer link delays each chunk 1-3 s and delivers 5%% of them 6 s late, as a "
        "stream over I2P tunnels does (default lan: loopback)",
    )
    chaos.add_argument(
        "--no-faults",
        action="store_true",
        help="no faults and no kills: only the links' own delays (every election is then a spurious one)",
    )
    chaos.set_defaults(run=run_chaos)
