"""CPU time of a process and all its descendants (a JVM and its Python workers, a replay pool)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import psutil


def tree_cpu(root: psutil.Process, seen: dict[int, float]) -> None:
    """CPU seconds of ``root`` and its descendants so far, kept per process (the last reading)."""
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            seen[proc.pid] = times.user + times.system


def run_measured(command: list[str], log_path: Path) -> tuple[float, float, str]:
    """Run ``command`` with its standard error in ``log_path``: its wall seconds, the CPU seconds of it
    and every process it started (read every 0.1 s until it ends), and its standard output.
    SystemExit naming the log if it fails."""
    started = time.monotonic()
    cpu: dict[int, float] = {}
    with (
        log_path.open("w") as err,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True) as proc,
    ):
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            tree_cpu(root, cpu)
            time.sleep(0.1)
        stdout = proc.stdout.read() if proc.stdout else ""
    seconds = time.monotonic() - started
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): see {log_path}")
    return seconds, sum(cpu.values()), stdout
