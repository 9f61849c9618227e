"""Real garlicfarm processes on loopback, driven through the command line like an operator would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from garlicfarm.chaos.procs import free_base_port

GARLICFARM = [sys.executable, "-m", "garlicfarm"]
__all__ = ["GARLICFARM", "ProcFarm", "cli", "free_base_port"]


def cli(*args: str, timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*GARLICFARM, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"garlicfarm {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
        )
    return result


class ProcFarm:
    def __init__(self, directory: Path, nodes: int) -> None:
        self.dir = directory
        self.n = nodes
        self.base = free_base_port(nodes)
        cli("init", str(directory), "--nodes", str(nodes), "--base-port", str(self.base))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def config(self, i: int) -> str:
        return str(self.dir / f"node-{i}.toml")

    def start(self, i: int) -> None:
        log = open(self.dir / f"node-{i}.log", "ab")  # noqa: SIM115 - the process owns it
        self.procs[i] = subprocess.Popen(
            [*GARLICFARM, "run", "--config", self.config(i)], stdout=log, stderr=log, start_new_session=True
        )

    def start_all(self) -> None:
        for i in range(1, self.n + 1):
            self.start(i)

    def kill(self, i: int) -> None:
        proc = self.procs.pop(i)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        for i in list(self.procs):
            proc = self.procs.pop(i)
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def status(self, i: int) -> dict[str, Any] | None:
        result = cli("status", "--config", self.config(i), "--timeout", "5", check=False, timeout=20)
        if result.returncode not in (0, 2):  # 2: it answered, and knows no leader
            return None
        status: dict[str, Any] = json.loads(result.stdout)
        return status

    def wait_for_leader(self, timeout: float = 30.0, excluding: int | None = None) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leaders = set()
            for i in self.procs:
                status = self.status(i)
                if status and status["role"] == "leader":
                    leaders.add(int(status["id"]))
            if excluding is not None:
                leaders.discard(excluding)
            if len(leaders) == 1:
                return leaders.pop()
            time.sleep(0.3)
        raise AssertionError(f"no single leader within {timeout}s; logs in {self.dir}")

    def submit(self, via: int, value: dict[str, Any]) -> int:
        result = cli("submit", "--config", self.config(via), json.dumps(value), timeout=60)
        return int(result.stdout.strip())

    def wait_for_commit(self, index: int, nodes: list[int], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            statuses = [self.status(i) for i in nodes]
            if all(s is not None and s["commit_index"] >= index for s in statuses):
                return
            time.sleep(0.3)
        raise AssertionError(f"index {index} not committed on {nodes} within {timeout}s")

    def logs(self) -> str:
        return "\n".join(
            f"--- node {i}\n" + (self.dir / f"node-{i}.log").read_text(errors="replace")[-3000:]
            for i in range(1, self.n + 1)
            if (self.dir / f"node-{i}.log").exists()
        )
