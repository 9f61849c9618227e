"""``garlicfarm simulate``: run the deterministic cluster simulator over many seeds."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TextIO

import attrs

from garlicfarm.cli.progress import Progress
from garlicfarm.sim.cluster import RunResult, SimSettings, run_seed
from garlicfarm.sim.faults import Faults, Mutations
from garlicfarm.sim.mutants import CORE_MUTANTS

MUTATIONS = [f.name for f in attrs.fields(Mutations) if f.type in (bool, "bool")]
#: every deliberately broken node --mutant can run: the core mutants and the driver's order
MUTANTS = sorted({*CORE_MUTANTS, *MUTATIONS})


def mutations_for(mutant: str | None, flags: Sequence[str] = ()) -> Mutations:
    """The Mutations that run ``mutant`` (a name in :data:`MUTANTS`) plus the --mutate ``flags``."""
    chosen = dict.fromkeys(flags, True)
    core = ""
    if mutant in MUTATIONS:
        chosen[mutant] = True
    elif mutant:
        core = mutant
    return Mutations(**chosen, core=core)


def settings_from(args: argparse.Namespace) -> SimSettings:
    mutations = mutations_for(args.mutant, args.mutate)
    faults = Faults.none() if args.no_faults else Faults()
    if args.disk_latency and not args.driver:
        raise SystemExit("garlicfarm simulate: --disk-latency needs --driver (the driver's writer models it)")
    return SimSettings(
        nodes=args.nodes,
        duration_ms=args.duration,
        faults=faults,
        mutations=mutations,
        driver=args.driver,
        disk_latency_ms=args.disk_latency,
    )


def _replay_command(args: argparse.Namespace, seed: int) -> str:
    parts = ["garlicfarm simulate", f"--seed {seed}", f"--nodes {args.nodes}", f"--duration {args.duration}"]
    parts += [f"--mutate {m}" for m in args.mutate]
    if args.mutant:
        parts.append(f"--mutant {args.mutant}")
    if args.no_faults:
        parts.append("--no-faults")
    if args.driver:
        parts.append("--driver")
    if args.disk_latency:
        parts.append(f"--disk-latency {args.disk_latency:g}")
    return " ".join(parts)


def _run_chunk(seeds: list[int], settings: SimSettings) -> list[RunResult]:
    return [run_seed(seed, settings) for seed in seeds]


def run_simulate(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    settings = settings_from(args)
    seeds = (
        [args.seed] if args.seed is not None else list(range(args.first_seed, args.first_seed + args.seeds))
    )
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(seeds)))
    chunk = max(1, min(25, len(seeds) // (jobs * 4) or 1))
    chunks = [seeds[i : i + chunk] for i in range(0, len(seeds), chunk)]
    done = violations = committed = 0
    progress = None
    if args.progress or (len(seeds) > 1 and sys.stderr.isatty()):
        progress = Progress(sys.stderr, len(seeds))
        progress.start()

    def report(results: list[RunResult]) -> None:
        nonlocal done, violations, committed
        for result in results:
            done += 1
            committed += result.committed
            if result.ok:
                continue
            violations += 1
            stdout.write(f"seed {result.seed}: {len(result.violations)} violation(s)\n")
            for v in result.violations[:5]:
                stdout.write(f"  {v}\n")
            stdout.write(f"  replay: {_replay_command(args, result.seed)}\n")
            stdout.flush()
        if progress is not None:
            progress.update(done, violations)

    try:
        if jobs == 1:
            for c in chunks:
                report(_run_chunk(c, settings))
        else:
            with ProcessPoolExecutor(jobs) as pool:
                for results in pool.map(_run_chunk, chunks, [settings] * len(chunks)):
                    report(results)
    finally:
        if progress is not None:
            progress.finish()
    if args.seed is not None:
        stdout.write(f"seed {args.seed}: {committed} entries committed\n")
    stdout.write(f"{len(seeds)} runs, {violations} violations\n")
    if violations:
        raise SimulationFailed


class SimulationFailed(Exception):
    """At least one run violated an invariant (already reported)."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sim = sub.add_parser(
        "simulate",
        help="run the Raft core in a deterministic simulated cluster over many seeds",
        description="Run K real Raft cores against a simulated clock and network with message drops, "
        "duplication, delays, reordering, partitions, crash-restarts and clock skew; check Raft's "
        "safety invariants after every step and the client history for linearizability. The last "
        "line reads 'N runs, V violations'; the exit status is 1 when V > 0. Each failing seed is "
        "printed with the command that replays it exactly.",
    )
    sim.add_argument("--seeds", type=int, default=100, metavar="N", help="runs, one per seed (default 100)")
    sim.add_argument("--first-seed", type=int, default=0, metavar="S", help="first seed (default 0)")
    sim.add_argument("--seed", type=int, metavar="S", help="replay this one seed")
    sim.add_argument("--nodes", type=int, default=5, metavar="K", help="servers per cluster (default 5)")
    sim.add_argument(
        "--duration",
        type=int,
        default=4000,
        metavar="MS",
        help="simulated ms of faults per run (default 4000)",
    )
    sim.add_argument(
        "--jobs", type=int, default=0, metavar="J", help="worker processes (default: one per CPU)"
    )
    sim.add_argument(
        "--progress",
        action="store_true",
        help="show progress on stderr every 2 s (runs done, violations, time left) even when stderr is "
        "not a terminal (on a terminal it is shown anyway)",
    )
    sim.add_argument("--no-faults", action="store_true", help="a perfect network and no crashes")
    sim.add_argument(
        "--driver",
        action="store_true",
        help="run each server with the real RaftDriver (a task.Clock per node) instead of the "
        "simulator's own Ready loop, so that the driver's persist-before-send order is checked",
    )
    sim.add_argument(
        "--disk-latency",
        type=float,
        default=0.0,
        metavar="MS",
        help="with --driver: log store writes take up to 2*MS simulated ms each, in order, as on the "
        "service's writer thread (messages wait for them; a leader's own entries are written while "
        "they replicate); default 0: done at once",
    )
    sim.add_argument(
        "--mutate",
        action="append",
        default=[],
        choices=MUTATIONS,
        help="break one rule on purpose, to see the simulator catch it (repeatable)",
    )
    sim.add_argument(
        "--mutant",
        choices=MUTANTS,
        metavar="NAME",
        help="run a deliberately broken node, to see the simulator catch it (docs/verification.md "
        "lists them with the seeds each needs): " + ", ".join(MUTANTS),
    )
    sim.set_defaults(run=run_simulate)
