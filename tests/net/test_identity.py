"""The server a peer certificate names (garlicfarm.net.identity) and the refusal of a member posing as
another, over a scripted connection (the real TLS path: tests/e2e/test_hostile_peers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from OpenSSL import crypto
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel, formatEvent, globalLogPublisher

from garlicfarm.config import load_config
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.net.identity import certificate_file_name, certificate_name, server_of_name
from garlicfarm.service import GarlicFarmService
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


def test_the_name_in_a_certificate_file(tmp_path: Path) -> None:
    create_farm(FarmSpec(tmp_path / "f", 2, base_port=1), force=True)
    assert certificate_file_name(tmp_path / "f" / "node-2.pem") == "node-2"
    assert certificate_file_name(tmp_path / "f" / "missing.pem") is None
    assert certificate_file_name(tmp_path / "f" / "node-2.toml") is None  # not PEM


def _certificate_without_common_name() -> bytes:
    """A self-signed certificate whose subject names an organisation only (no CN)."""
    import datetime

    from cryptography import x509 as cx509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = cx509.Name([cx509.NameAttribute(NameOID.ORGANIZATION_NAME, "no common name")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        cx509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


def test_a_certificate_without_a_common_name_names_nothing(tmp_path: Path) -> None:
    pem = _certificate_without_common_name()
    (tmp_path / "no-cn.pem").write_bytes(pem)
    assert certificate_file_name(tmp_path / "no-cn.pem") is None
    x509 = crypto.load_certificate(crypto.FILETYPE_PEM, pem)

    class Transport:
        def getPeerCertificate(self) -> crypto.X509:
            return x509

    assert certificate_name(Transport()) is None  # bound to no server


@pytest.mark.parametrize(("node", "warned"), [(1, False), (2, True)])
def test_a_member_whose_certificate_names_another_is_told(tmp_path: Path, node: int, warned: bool) -> None:
    create_farm(FarmSpec(tmp_path, 2, base_port=21960), force=True)
    toml = tmp_path / "node-1.toml"
    text = toml.read_text().replace('cert = "node-1.pem"', f'cert = "node-{node}.pem"')
    toml.write_text(text.replace('key = "node-1.key"', f'key = "node-{node}.key"'))
    events: list[Any] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        GarlicFarmService(load_config(toml), MemoryReactorClock())
    finally:
        globalLogPublisher.removeObserver(observer)
    said = [formatEvent(e) for e in events if e.get("log_level") == LogLevel.warn]
    assert any("is named 'node-2', not node-1: peers cannot bind" in text for text in said) == warned, said
