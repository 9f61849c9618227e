"""The chaos test's farm: real ``garlicfarm run`` processes whose peer links all go through the proxy.

``garlicfarm init`` writes the farm; then each ``node-K.toml`` gets its ``[peers]`` rewritten so that
peer J is the proxy's listener for the directed link K→J (its own entry keeps its real endpoint), and
snapshots are turned off, so that the whole log is still there to check at the end. A node's
bootstrap configuration comes from its own ``[peers]``, so each node dials its peers through its own
proxy listeners. Clients do not use the proxy: they talk to the nodes' real ports.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from garlicfarm.chaos.faults import Link
from garlicfarm.farminit import HOST, METRICS_OFFSET, FarmSpec, create_farm, node_config

#: snapshots would compact the log the checker reads; [raft] snapshot_every must be at most 10**9
NO_SNAPSHOTS = 10**9


#: farms of real processes (tests, chaos, benchmarks) take ports below Linux's ephemeral range
#: (32768-60999), where no outgoing connection can take one between the check and the node's bind
PORT_RANGE = range(20000, 32000)


def free_base_port(count: int) -> int:
    """A base port with ``count`` free ports after it on 127.0.0.1, below the ephemeral range, and
    ``count`` free ones from ``METRICS_OFFSET`` after it (where ``garlicfarm init`` puts the nodes'
    metrics listeners)."""
    rng = random.Random(os.getpid() * 1_000_003 + time.monotonic_ns())  # noqa: S311 - spread, not secrecy
    for _ in range(200):
        base = rng.randrange(PORT_RANGE.start, PORT_RANGE.stop - count)
        sockets: list[socket.socket] = []
        metrics = range(base + METRICS_OFFSET, base + METRICS_OFFSET + count)
        ports = sorted({*range(base, base + count), *metrics})
        try:
            for port in ports:
                s = socket.socket()
                sockets.append(s)
                s.bind((HOST, port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError(f"no run of {count} free ports in {PORT_RANGE.start}..{PORT_RANGE.stop - 1}")


def proxied_config(spec: FarmSpec, node: int, proxy_ports: dict[Link, int], profile: str = "lan") -> str:
    """``node-K.toml`` with peers behind the proxy, snapshots off, and the [raft] timing profile."""
    text = node_config(spec, node)
    head, _, _ = text.partition("[peers]\n")
    peers = "".join(
        f'{k} = "{spec.endpoint(k) if k == node else f"tcp://{HOST}:{proxy_ports[(node, k)]}"}"\n'
        for k in range(1, spec.nodes + 1)
    )
    return f'{head}[peers]\n{peers}\n[raft]\nprofile = "{profile}"\nsnapshot_every = {NO_SNAPSHOTS}\n'


class NodeProcesses:
    """Start, kill -9 and stop the node processes of a farm written in ``directory``."""

    def __init__(self, directory: Path, nodes: int) -> None:
        self.dir = directory
        self.n = nodes
        self.spec = FarmSpec(directory, nodes, free_base_port(nodes))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.starts = 0

    @property
    def ports(self) -> dict[int, int]:
        return {k: self.spec.port(k) for k in range(1, self.n + 1)}

    def endpoint(self, node: int) -> str:
        return self.spec.endpoint(node)

    def config_path(self, node: int) -> Path:
        return self.dir / f"node-{node}.toml"

    def write(self, proxy_ports: dict[Link, int], profile: str = "lan") -> None:
        create_farm(self.spec)
        for k in range(1, self.n + 1):
            text = proxied_config(self.spec, k, proxy_ports, profile)
            self.config_path(k).write_text(text, encoding="utf-8")

    def start(self, node: int) -> None:
        log = open(self.dir / f"node-{node}.log", "ab")  # noqa: SIM115 - the child process owns it
        try:
            self.procs[node] = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "garlicfarm", "run", "--config", str(self.config_path(node))],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self.starts += 1

    def alive(self) -> list[int]:
        return sorted(k for k, p in self.procs.items() if p.poll() is None)

    def dead(self) -> list[int]:
        return [k for k in range(1, self.n + 1) if k not in self.alive()]

    def crashed(self) -> dict[int, int]:
        """Nodes that exited on their own (not killed by us), with their exit status."""
        return {k: rc for k, p in self.procs.items() if (rc := p.poll()) is not None}

    def kill(self, node: int) -> None:
        proc = self.procs.pop(node, None)
        if proc is None:
            return
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def terminate_all(self) -> None:
        """SIGTERM to every running node: a clean stop (the store is closed)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()

    def stop_all(self) -> None:
        """SIGTERM, then SIGKILL after 15 s. Blocks: the proxy is not served meanwhile, so nodes whose
        links go through it may only end with the SIGKILL (use :meth:`terminate_all` and poll first)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for node in list(self.procs):
            proc = self.procs.pop(node)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def log_tail(self, node: int, chars: int = 3000) -> str:
        path = self.dir / f"node-{node}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""
