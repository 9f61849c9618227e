"""The pipeline's incremental run against a full one: an archive of D days, a full run over it, then a
day D+1 added and the run repeated (incremental), each as a user runs ``garlicfarm pipeline``.

    python -m bench.pipeline_incremental --source /work/gf-incr/source --generate 10x10x11

``--source`` holds D+1 days (``garlicfarm synth``; ``--generate FARMSxMEMBERSxDAYS`` writes it if it is
not there); the archive the runs read is a directory of hard links to its first D days, then to all.
Wall time is the command's; CPU time is its whole process tree's (driver, JVM, Python workers),
sampled every 0.1 s. ``--verify`` also runs a full run over the D+1 days and compares every table row
by row with the incremental run's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.dataset as ds  # type: ignore[import-untyped]

from bench.proctree import run_measured


def timed(command: list[str], log_path: Path) -> dict[str, Any]:
    """Run ``command``; its wall and CPU seconds, its stages' times (from its log), its summary."""
    seconds, cpu_seconds, stdout = run_measured(command, log_path)
    log = log_path.read_text()
    stages = dict(re.findall(r"garlicfarm\.pipeline\.job: (.+?): done in ([0-9.]+) s", log))
    job = re.search(r"pipeline done in ([0-9.]+) s", log)
    return {
        "command": " ".join(command),
        "wall_s": round(seconds, 1),
        "cpu_s": round(cpu_seconds, 1),
        # what is not the job: interpreter and imports, the JVM's start, the session, its stop
        "outside_job_s": round(seconds - float(job.group(1)), 1) if job else None,
        "stages_s": {name: float(t) for name, t in stages.items()},
        "summary": stdout.strip().splitlines(),
    }


def pipeline_command(archive: Path, out: Path, master: str, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "garlicfarm", "pipeline", "--archive", str(archive), "--out", str(out)]
    return [*command, "--master", master, *extra]


def link_days(source: Path, archive: Path, days: list[str]) -> None:
    """``archive`` gets hard links to ``days`` of ``source`` (no copy of the bytes)."""
    for day in days:
        target = archive / day
        target.mkdir(parents=True, exist_ok=True)
        for file in (source / day).iterdir():
            if not (target / file.name).exists():
                os.link(file, target / file.name)


def table_rows(out: Path) -> dict[str, list[tuple[str, ...]]]:
    rows = {}
    for name in ("publisher_timeline", "destination_weights", "member_health", "rejects"):
        hive = ds.partitioning(pa.schema([("cluster", pa.string()), ("day", pa.string())]), flavor="hive")
        table = ds.dataset(out / name, format="parquet", partitioning=None if name == "rejects" else hive)
        data = table.to_table()
        columns = sorted(data.column_names)
        values = zip(*(data.column(c).to_pylist() for c in columns), strict=True)
        rows[name] = sorted(tuple(repr(v) for v in row) for row in values)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="an archive of D+1 days (synth's)")
    parser.add_argument("--generate", metavar="FxMxD", help="write --source with garlicfarm synth if missing")
    parser.add_argument("--work", type=Path, default=Path("/tmp/gf-incr"), help="archive and outputs go here")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--verify", action="store_true", help="also a full run over D+1 days, compared")
    parser.add_argument(
        "--again", action="store_true", help="also a run with nothing changed: the fixed costs of a run"
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        if not args.generate:
            parser.error(f"no archive at {args.source} (give --generate FARMSxMEMBERSxDAYS)")
        farms, members, days = args.generate.split("x")
        synth = [sys.executable, "-m", "garlicfarm", "synth", "--out", str(args.source)]
        subprocess.run([*synth, "--farms", farms, "--members", members, "--days", days], check=True)
    days = sorted(p.name for p in args.source.glob("date=*"))
    if len(days) < 2:
        parser.error("the source archive needs two days at least")
    archive, out = args.work / "archive", args.work / "out"
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    link_days(args.source, archive, days[:-1])
    figures: dict[str, Any] = {"days": len(days) - 1, "added": days[-1]}
    figures["full"] = timed(pipeline_command(archive, out, args.master, "--full"), args.work / "full.log")
    link_days(args.source, archive, days[-1:])
    figures["incremental"] = timed(pipeline_command(archive, out, args.master), args.work / "incremental.log")
    full, incremental = figures["full"], figures["incremental"]
    figures["wall_ratio"] = round(incremental["wall_s"] / full["wall_s"], 3)
    figures["cpu_ratio"] = round(incremental["cpu_s"] / full["cpu_s"], 3)
    if args.again:
        figures["unchanged"] = timed(pipeline_command(archive, out, args.master), args.work / "unchanged.log")
    if args.verify:
        check = args.work / "check"
        figures["full_after"] = timed(
            pipeline_command(archive, check, args.master, "--full"), args.work / "check.log"
        )
        figures["identical"] = table_rows(out) == table_rows(check)
    for name in ("full", "incremental", "unchanged", "full_after"):
        if name in figures:
            run = figures[name]
            sys.stdout.write(f"{name}: {run['command']}\n  wall {run['wall_s']} s, CPU {run['cpu_s']} s, ")
            sys.stdout.write(f"outside the job {run['outside_job_s']} s\n")
            for stage, seconds in run["stages_s"].items():
                sys.stdout.write(f"    {seconds:6.1f} s  {stage}\n")
            for line in run["summary"]:
                sys.stdout.write(f"  | {line}\n")
    sys.stdout.write(f"incremental / full: wall {figures['wall_ratio']}, CPU {figures['cpu_ratio']}\n")
    if "identical" in figures:
        sys.stdout.write(
            f"tables identical to a full run over the {len(days)} days: {figures['identical']}\n"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
