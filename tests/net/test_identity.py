"""The server a peer certificate names (garlicfarm.net.identity) and the refusal of a member posing as
another, over a scripted connection (the real TLS path: tests/e2e/test_hostile_peers.py)."""

from __future__ import annotations

import pytest
from OpenSSL import crypto
from twisted.internet.task import Clock

from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.net.identity import certificate_name, server_of_name
from garlicfarm.wire import AppendEntriesRequest, RequestVoteRequest, Response
from tests.net.test_connection import Handler, connected


@pytest.mark.parametrize(
    ("name", "server"),
    [
        ("node-1", 1),
        ("node-42", 42),
        ("node-2147483647", 2147483647),
        ("node-2147483648", None),
        ("node-0", None),
        ("node-01", None),
        ("node-1x", None),
        ("xnode-1", None),
        ("farm", None),
        (None, None),
    ],
)
def test_names(name: str | None, server: int | None) -> None:
    assert server_of_name(name) == server


def test_the_name_of_an_init_certificate(tmp_path: object) -> None:
    from pathlib import Path

    directory = Path(str(tmp_path)) / "f"
    create_farm(FarmSpec(directory, 2, base_port=1), force=True)
    x509 = crypto.load_certificate(crypto.FILETYPE_PEM, (directory / "node-2.pem").read_bytes())

    class Transport:
        def getPeerCertificate(self) -> crypto.X509:
            return x509

    assert certificate_name(Transport()) == "node-2" and server_of_name("node-2") == 2
    assert certificate_name(object()) is None  # not TLS


def test_a_bound_connection_speaks_only_for_its_server() -> None:
    link = connected(Clock(), Handler())
    link.server.certificate, link.server.identity = "node-1", 1
    got: list[Response] = []
    link.client.request(RequestVoteRequest(1, 2, 5, 0, 0, 0)).addCallback(got.append)
    link.pump.flush()
    assert len(got) == 1  # as itself: answered
    lost: list[object] = []
    link.client.request(AppendEntriesRequest(3, 2, 5, 0, 0, 0)).addErrback(lost.append)
    link.pump.flush()
    assert link.server_transport.disconnecting or link.server_transport.disconnected
    assert lost


def test_an_unbound_connection_is_not_checked() -> None:
    link = connected(Clock(), Handler())  # no certificate (or one not named node-<id>)
    got: list[Response] = []
    link.client.request(AppendEntriesRequest(3, 2, 5, 0, 0, 0)).addCallback(got.append)
    link.pump.flush()
    assert len(got) == 1
