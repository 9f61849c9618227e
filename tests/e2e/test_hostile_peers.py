"""A live TLS farm shrugs off hostile connections: garbage, half handshakes, 4 GiB size fields."""

from __future__ import annotations

import os
import socket
import ssl
import struct
import time
from collections.abc import Iterator

import pytest

from garlicfarm.handshake import ChallengeCache, ClientConfig, ClientHandshake, Reconnect, Upgraded
from tests.e2e.procfarm import ProcFarm
from tests.hostile.farm import closed_by_peer as closed_within

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("hostile") / "farm", 3)
    for i in range(1, 4):
        with open(farm.config(i), "a") as f:
            f.write("\n[limits]\nhandshake_timeout = 1.0\n")
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


def tls_socket(farm: ProcFarm) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(farm.dir / "ca.pem"))
    context.load_cert_chain(str(farm.dir / "node-1.pem"), str(farm.dir / "node-1.key"))
    raw = socket.create_connection(("127.0.0.1", farm.base + 1), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def upgraded_socket(farm: ProcFarm) -> ssl.SSLSocket:
    """A connection through the real Digest handshake (the challenge costs one extra connection)."""
    password = (farm.dir / "credentials").read_text().strip()
    config = ClientConfig(
        host=f"127.0.0.1:{farm.base + 1}", username="farm", password=password, cluster="farm"
    )
    cache = ChallengeCache()
    for _ in range(2):
        sock = tls_socket(farm)
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


def test_cleartext_garbage_on_the_tls_port(farm: ProcFarm) -> None:
    sock = socket.create_connection(("127.0.0.1", farm.base + 1), timeout=10)
    sock.sendall(os.urandom(4096))
    assert closed_within(sock, 5)


def test_random_bytes_after_tls(farm: ProcFarm) -> None:
    sock = tls_socket(farm)
    sock.sendall(os.urandom(2048))
    assert closed_within(sock, 5)


def test_a_half_handshake_is_dropped_at_the_deadline(farm: ProcFarm) -> None:
    sock = tls_socket(farm)
    sock.sendall(b"GET /GarlicFarm/farm/1/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert closed_within(sock, 5)


def test_a_four_gigabyte_size_field_after_a_real_handshake(farm: ProcFarm) -> None:
    sock = upgraded_socket(farm)
    sock.sendall(struct.pack(">BIIQQQQI", 3, 9, 1, 1, 0, 0, 0, 0xFFFFFFFF))
    assert closed_within(sock, 5)


def test_one_member_cannot_speak_for_another(farm: ProcFarm) -> None:
    """Node 1's certificate (common name node-1) binds its connections to server 1: an AppendEntries
    claiming to come from server 3 is refused, the connection dropped, and node 2 says why."""
    from garlicfarm.wire import AppendEntriesRequest, RequestVoteRequest, encode

    honest = upgraded_socket(farm)
    honest.sendall(
        encode(
            RequestVoteRequest(
                source=1, destination=2, term=0, last_log_term=0, last_log_index=0, commit_index=0
            )
        )
    )
    assert len(honest.recv(26)) == 26  # answered (a vote refused for its stale term, but answered)
    honest.close()
    forged = upgraded_socket(farm)
    forged.sendall(
        encode(
            AppendEntriesRequest(
                source=3, destination=2, term=10**6, last_log_term=0, last_log_index=0, commit_index=0
            )
        )
    )
    assert closed_within(forged, 5)
    log = (farm.dir / "node-2.log").read_text()
    assert (
        "AppendEntriesRequest from server 3, over a connection whose certificate (node-1) is server 1's"
        in log
    )
    status = farm.status(2)
    assert status is not None and status["term"] < 10**6  # the forged term was never adopted


def test_the_farm_still_commits(farm: ProcFarm) -> None:
    index = farm.submit(2, {"still": "alive"})
    farm.wait_for_commit(index, [1, 2, 3])


def test_remove_and_add_a_server_with_the_cli(farm: ProcFarm) -> None:
    from tests.e2e.procfarm import cli

    cli("remove-server", "--config", farm.config(1), "--id", "3")
    status = farm.status(1)
    assert status is not None and [m["id"] for m in status["members"]] == [1, 2]
    cli(
        "add-server",
        "--config",
        farm.config(1),
        "--id",
        "3",
        "--endpoint",
        f"tcp://127.0.0.1:{farm.base + 2}",
    )
    status = farm.status(3)
    assert status is not None and [m["id"] for m in status["members"]] == [1, 2, 3]
    index = farm.submit(3, {"back": 3})
    farm.wait_for_commit(index, [1, 2, 3])
