"""Connection budgets against a real node process over TLS on loopback.

- 1,000 connections that never speak, plus some that try TLS without a client certificate: an
  authenticated client still gets its status and commits its writes during the flood, the node's open
  file descriptors stay within its budget and return near the baseline afterwards, and the log holds a
  bounded number of refusal lines and no traceback.
- Authenticated connections that park large partial messages: the node holds at most its
  ``max_buffered`` bytes of them, drops the connections that would exceed it, and keeps committing.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from garlicfarm.handshake import ChallengeCache, ClientConfig, ClientHandshake, Reconnect, Upgraded
from garlicfarm.tls import issue_node, new_ca, write_certified_key
from tests.net.onenode import OneNode, silent, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

FLOOD = 1000
NO_CERTIFICATE = 20
#: [limits] max_unauthenticated's default
PENDING_BUDGET = 64


@pytest.fixture
def node(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[OneNode]:
    farm = OneNode(tmp_path / "farm")
    limits = getattr(request, "param", "")
    if limits:
        with open(farm.config(1), "a") as f:
            f.write(f"\n[limits]\n{limits}\n")
    farm.start_all()
    try:
        farm.wait_for_leader(timeout=30)
        yield farm
    finally:
        farm.stop_all()


def without_certificate(port: int, certificate: tuple[Path, Path] | None = None) -> None:
    """A TLS client that trusts anything and has no certificate (or one the farm does not trust):
    the node must refuse it."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if certificate is not None:
        context.load_cert_chain(*map(str, certificate))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        contextlib.suppress(OSError),  # refused during the handshake or right after it (TLS 1.3)
        context.wrap_socket(raw) as tls,
    ):
        tls.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        tls.recv(100)


def keep_flooding(port: int, flood: list[socket.socket], stop: threading.Event) -> None:
    """More silent connections until told to stop (at most another FLOOD)."""
    for _ in range(FLOOD):
        if stop.is_set():
            return
        try:
            flood.append(silent(port))
        except OSError:
            return


def test_a_flood_of_unauthenticated_connections(node: OneNode) -> None:
    fds_before, rss_before = node.fds(), node.rss_kib()
    flood: list[socket.socket] = []
    stop = threading.Event()
    more: threading.Thread | None = None
    try:
        for i in range(FLOOD):
            flood.append(silent(node.base))
            if i % 100 == 99:
                without_certificate(node.base)
        for _ in range(NO_CERTIFICATE - FLOOD // 100):
            without_certificate(node.base)
        stranger = issue_node(new_ca("not the farm's CA"), "stranger")
        write_certified_key(stranger, node.dir / "stranger.pem", node.dir / "stranger.key")
        without_certificate(node.base, (node.dir / "stranger.pem", node.dir / "stranger.key"))
        # while all 1,000 are still open on our side and more keep coming: an authenticated client
        # gets in, and commits
        more = threading.Thread(target=keep_flooding, args=(node.base, flood, stop), daemon=True)
        more.start()
        status = node.status(1)
        assert status is not None and status["role"] == "leader"
        index = node.submit(1, {"flood": True})
        node.wait_for_commit(index, [1], timeout=20)
        fds_during = node.fds()
        # the budget, and connections being closed this reactor turn (old code: 756)
        assert fds_during <= fds_before + 2 * PENDING_BUDGET, (fds_before, fds_during)
    finally:
        stop.set()
        if more is not None:
            more.join(timeout=10)
        for s in flood:
            s.close()
    wait_for(lambda: node.fds() <= fds_before + 4, 20, "the node's fds back near the baseline")
    rss_after = node.rss_kib()
    assert rss_after - rss_before < 64 * 1024, (rss_before, rss_after)
    log = node.log()
    assert "Traceback" not in log
    assert "AttributeError" not in log
    evicted = [line for line in log.splitlines() if "unauthenticated connection" in line]
    assert 1 <= len(evicted) <= 10, evicted
    refused_tls = [line for line in log.splitlines() if "TLS handshake from 127.0.0.1 failed" in line]
    assert 2 <= len(refused_tls) <= 10, refused_tls
    assert any("peer did not return a certificate" in line for line in refused_tls), refused_tls
    assert any("certificate verify failed" in line for line in refused_tls), refused_tls
    print(  # the numbers for the record (pytest -s)
        f"fds {fds_before} -> {fds_during} during -> {node.fds()} after; "
        f"RSS {rss_before} -> {rss_after} KiB; log {len(log.splitlines())} lines, "
        f"{len(evicted)} eviction lines, {len(refused_tls)} TLS refusal lines"
    )


def upgraded(node: OneNode) -> ssl.SSLSocket:
    """A connection through TLS with the node's own certificate and the real Digest handshake."""
    context = ssl.create_default_context(cafile=str(node.dir / "ca.pem"))
    context.load_cert_chain(str(node.dir / "node-1.pem"), str(node.dir / "node-1.key"))
    context.set_alpn_protocols(["h2", "http/1.1"])  # as Java and Go TLS clients may
    password = (node.dir / "credentials").read_text().strip()
    config = ClientConfig(host=f"127.0.0.1:{node.base}", username="farm", password=password, cluster="farm")
    cache = ChallengeCache()
    for _ in range(2):  # the first try gets the challenge
        raw = socket.create_connection(("127.0.0.1", node.base), timeout=10)
        sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
        assert sock.selected_alpn_protocol() == "http/1.1"
        handshake = ClientHandshake(config, cache, time.time(), os.urandom)
        sock.sendall(handshake.initiate())
        while True:
            events = handshake.receive_data(sock.recv(65536), time.time())
            if any(isinstance(e, Upgraded) for e in events):
                return sock
            if any(isinstance(e, Reconnect) for e in events) or (not events and handshake.finished):
                sock.close()
                break
            if events:
                raise AssertionError(f"handshake failed: {events}")
    raise AssertionError("no upgrade after the challenge")


PARKED = 8
PART = 6 * 1024 * 1024  # of an 8 MiB message: 48 MiB offered in all, 16 MiB allowed


@pytest.mark.parametrize("node", ["max_buffered = 16777216\nmax_entries_size = 8388608"], indirect=True)
def test_parked_partial_messages_share_one_budget(node: OneNode) -> None:
    rss_before = node.rss_kib()
    header = struct.pack(">BIIQQQQI", 3, 9, 1, 1, 0, 0, 0, 8 * 1024 * 1024)
    parked: list[ssl.SSLSocket] = []
    dropped = 0
    try:
        for _ in range(PARKED):
            sock = upgraded(node)
            parked.append(sock)
            try:
                sock.sendall(header + b"\x00" * PART)
            except OSError:  # dropped while we were still sending
                dropped += 1
        index = node.submit(1, {"parked": True})  # the farm carries on
        node.wait_for_commit(index, [1], timeout=20)
        wait_for(lambda: "past 16777216 bytes" in node.log(), 20, "a connection dropped over the budget")
        rss_during = node.rss_kib()
    finally:
        for sock in parked:
            sock.close()
    # 16 MiB of partial messages at most (old code: all 48 MiB, and everything below on top), plus
    # TLS and socket buffers, plus the allocator's high-water mark: buffers grown by realloc and
    # freed are not always given back to the system at once (measured: 13 to 38 MiB over the same
    # 16 MiB held, on the code before and after the writer thread alike)
    assert rss_during - rss_before < 42 * 1024, (rss_before, rss_during)
    log = node.log()
    over = [line for line in log.splitlines() if "past 16777216 bytes" in line]
    assert over, log[-3000:]
    assert len(over) <= 4
    assert "Traceback" not in log
    print(f"RSS {rss_before} -> {rss_during} KiB; {len(over)} budget lines; {dropped} sends failed")
