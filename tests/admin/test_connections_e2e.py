"""The console's connection cap and request deadline against a real node process (HTTPS on loopback).

Hundreds of clients that complete TLS and then send one byte of a request: the console keeps at most
its cap of them, answers an operator's request during the flood, closes the slow ones at the deadline
(no byte resets it), and logs a bounded number of lines.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.net.onenode import OneNode, free_port, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SLOW = 300
CAP = 16
DEADLINE = 2


@pytest.fixture
def node(tmp_path: Path) -> Iterator[OneNode]:
    farm = OneNode(tmp_path / "farm")
    farm.admin_port = free_port(after=farm.base)  # type: ignore[attr-defined]
    with open(farm.config(1), "a") as f:
        f.write(
            f"\n[admin]\nlisten = {farm.admin_port}\n"  # type: ignore[attr-defined]
            f"max_connections = {CAP}\nrequest_deadline = {DEADLINE}\n"
        )
    farm.start_all()
    try:
        farm.wait_for_leader(timeout=30)
        yield farm
    finally:
        farm.stop_all()


def https(port: int, timeout: float = 5.0) -> ssl.SSLSocket:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the node's own certificate; not what this test is about
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return context.wrap_socket(raw)


#: the console's rate-limited lines (garlicfarm/net/budget.py): one per kind, then a summary per interval
KINDS = ("no whole request within", "that owed a request")
INTERVAL = 10.0


def test_slow_clients_cannot_hold_the_console(node: OneNode) -> None:
    port: int = node.admin_port  # type: ignore[attr-defined]
    fds_before = node.fds()
    slow: list[ssl.SSLSocket] = []
    started = time.monotonic()
    try:
        for _ in range(SLOW):
            with contextlib.suppress(OSError):  # pushed out before or during its TLS handshake
                sock = https(port)
                sock.sendall(b"G")  # the first byte of a request that never ends
                slow.append(sock)
        assert node.fds() <= fds_before + CAP + 8
        # during the flood: answered (401: it brought no credentials); a loaded machine may be slow
        with https(port, timeout=30) as operator:
            operator.sendall(b"GET /api/farms HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert operator.recv(100).startswith(b"HTTP/1.1 401")
        wait_for(lambda: node.fds() <= fds_before + 2, 60, "the slow connections closed at the deadline")
    finally:
        for sock in slow:
            sock.close()
    log = node.log()
    elapsed = time.monotonic() - started
    assert "Traceback" not in log
    console = [line for line in log.splitlines() if "admin console: closed a connection" in line]
    assert console, "no line about the closed connections"
    # Bounded by the rate limit, whatever the machine's load: per kind, the first line at once and then
    # at most one summary per interval of the time the flood and its aftermath took (not a fixed count:
    # a slow machine takes longer over the 300 handshakes, and so writes more summaries).
    for kind in KINDS:
        lines = [line for line in console if kind in line]
        assert len(lines) <= 1 + int(elapsed / INTERVAL) + 1, (elapsed, lines)
        assert all(" more " in line and ", the latest: " in line for line in lines[1:]), lines
    assert all(any(kind in line for kind in KINDS) for line in console), console
