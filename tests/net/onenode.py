"""One real node process on loopback for the connection-budget tests (and anyone flooding one)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from tests.e2e.procfarm import ProcFarm, cli

#: this package's ports (each helper of the project has its own range below the ephemeral range)
PORTS = range(23100, 23200)


def free_port(after: int = 0) -> int:
    for port in PORTS:
        if port <= after:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


class OneNode(ProcFarm):
    """A one-node farm of a real process (it elects itself), on a port of this test's range."""

    def __init__(self, directory: Path) -> None:  # a ProcFarm of one, built without its multi-node set-up
        self.dir = directory
        self.n = 1
        self.base = free_port()
        cli("init", str(directory), "--nodes", "1", "--base-port", str(self.base))
        self.procs = {}

    @property
    def pid(self) -> int:
        return self.procs[1].pid

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def log(self) -> str:
        return (self.dir / "node-1.log").read_text(errors="replace")


def silent(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)  # a process's state from outside: nothing to wait on but polling
    raise AssertionError(f"{what} within {timeout} s")
