"""A real 3-node TLS farm of real processes under a steady client load, for the attack suite.

:class:`LoadClient` keeps writing through an authenticated connection to the leader (following
redirects) and records every acknowledged write; :class:`Peer` is an attacker holding the farm's
credentials (a Digest-authenticated connection speaking raw frames). Resource use is read with psutil.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from garlicfarm.handshake import ChallengeCache, ClientConfig, ClientHandshake, Reconnect, Upgraded
from garlicfarm.wire import Application, ClientRequest, LogEntry, Response, decode, encode
from garlicfarm.wire.types import NO_LEADER, RESPONSE_SIZE
from tests.e2e.procfarm import ProcFarm

#: a conservative bound for each wait: long on a loaded 2-core machine, never a threshold that passes
#: or fails by CPU speed (a working farm answers in milliseconds)
WAIT = 30.0


class HostileFarm(ProcFarm):
    def port(self, node: int) -> int:
        return self.base + node - 1

    def password(self) -> str:
        return (self.dir / "credentials").read_text().strip()

    def tls(self, node: int, *, certificate: bool = True, as_node: int = 1) -> ssl.SSLSocket:
        """A TLS connection to ``node``, with ``as_node``'s certificate (or none)."""
        context = ssl.create_default_context(cafile=str(self.dir / "ca.pem"))
        if certificate:
            context.load_cert_chain(
                str(self.dir / f"node-{as_node}.pem"), str(self.dir / f"node-{as_node}.key")
            )
        raw = socket.create_connection(("127.0.0.1", self.port(node)), timeout=10)
        return context.wrap_socket(raw, server_hostname="127.0.0.1")

    def authenticated(self, node: int, password: str | None = None, as_node: int = 1) -> ssl.SSLSocket:
        """A connection through the real Digest handshake (the challenge costs one connection)."""
        config = ClientConfig(
            host=f"127.0.0.1:{self.port(node)}",
            username="farm",
            password=self.password() if password is None else password,
            cluster="farm",
        )
        cache = ChallengeCache()
        for _ in range(2):
            sock = self.tls(node, as_node=as_node)
            handshake = ClientHandshake(config, cache, time.time(), os.urandom)
            sock.sendall(handshake.initiate())
            while True:
                data = sock.recv(65536)
                events = handshake.receive_data(data, time.time())
                if any(isinstance(e, Upgraded) for e in events):
                    return sock
                if any(isinstance(e, Reconnect) for e in events) or not data or handshake.finished:
                    sock.close()
                    break
        raise PermissionError(f"node {node} did not upgrade the connection")

    def pid(self, node: int) -> int:
        return self.procs[node].pid

    def resources(self) -> dict[int, tuple[int, int]]:
        """node -> (open fds, RSS bytes)."""
        out = {}
        for node in self.procs:
            proc = psutil.Process(self.pid(node))
            out[node] = (proc.num_fds(), proc.memory_info().rss)
        return out

    def roles(self) -> dict[int, dict[str, Any]]:
        return {i: s for i in self.procs if (s := self.status(i)) is not None}

    def leader(self) -> int:
        return self.wait_for_leader(timeout=WAIT)

    def followers(self) -> list[int]:
        leader = self.leader()
        return [i for i in self.procs if i != leader]


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def closed_by_peer(sock: socket.socket, within: float = 10.0) -> bool:
    """True if the node closes the connection within ``within`` seconds."""
    sock.settimeout(within)
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except TimeoutError:
        return False
    except (OSError, ssl.SSLError):
        return True
    return False


def client_request(data: bytes) -> bytes:
    return encode(ClientRequest(entries=(LogEntry(0, Application(data)),)))


def answer(sock: socket.socket) -> Response:
    message = decode(recv_exact(sock, RESPONSE_SIZE))
    assert isinstance(message, Response)
    return message


class LoadClient(threading.Thread):
    """Writes ``{"load": n}`` one at a time to the leader, recording n -> index when acknowledged."""

    def __init__(self, farm: HostileFarm) -> None:
        super().__init__(daemon=True)
        self.farm = farm
        self.acked: dict[int, int] = {}
        self.errors = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        target, sock, n = 1, None, 0
        while not self.stopping.is_set():
            try:
                if sock is None:
                    sock = self.farm.authenticated(target)
                    sock.settimeout(10)
                n += 1
                sock.sendall(client_request(json.dumps({"load": n}).encode()))
                response = answer(sock)
                if response.accepted:
                    with self._lock:
                        self.acked[n] = response.next_index - 1
                    continue
                sock.close()
                sock = None
                leader = response.destination
                target = leader if leader != NO_LEADER and leader in self.farm.procs else target % 3 + 1
                self.stopping.wait(0.05)
            except (OSError, ssl.SSLError, PermissionError, ConnectionError, ValueError):
                self.errors += 1
                if sock is not None:
                    sock.close()
                sock = None
                target = target % 3 + 1
                self.stopping.wait(0.1)
        if sock is not None:
            sock.close()

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def wait_for_progress(self, writes: int = 5, within: float = WAIT) -> None:
        """The farm keeps committing: ``writes`` more acknowledged writes within ``within`` seconds."""
        start = self.count()
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.count() >= start + writes:
                return
            self.stopping.wait(0.1)
        raise AssertionError(f"the farm stopped committing: {self.count() - start} writes in {within}s")

    def stop(self) -> dict[int, int]:
        self.stopping.set()
        self.join(timeout=WAIT)
        with self._lock:
            return dict(self.acked)


def eventually(check: Callable[[], bool], what: str, within: float = WAIT) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {within}s: {what}")


def node_dir(farm: HostileFarm, node: int) -> Path:
    return farm.dir / f"node-{node}"
