"""Certificates, keys and pins, without the network."""

from __future__ import annotations

import datetime
import ipaddress
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, x25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from garlicfarm.config import ConfigError
from garlicfarm.tls import (
    CertifiedKey,
    TLSError,
    digest,
    fingerprint,
    is_pinned,
    issue_node,
    load_certified_key,
    load_private_key,
    new_ca,
    parse_pin,
    write_certified_key,
    write_file,
)

CA = new_ca("test CA")
NODE = issue_node(CA, "node-1", dns_names=["node-1.example"], ip_addresses=["192.0.2.7", "::1"])


def test_ca_may_sign_node_certificates_only() -> None:
    constraints = CA.certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    assert isinstance(CA.key, ec.EllipticCurvePrivateKey) and CA.key.curve.name == "secp256r1"
    lifetime = CA.certificate.not_valid_after_utc - CA.certificate.not_valid_before_utc
    assert datetime.timedelta(days=3650) <= lifetime < datetime.timedelta(days=3651)


def test_node_certificate_chains_to_ca_and_names_itself() -> None:
    cert = NODE.certificate
    cert.verify_directly_issued_by(CA.certificate)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "node-1.example"]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("192.0.2.7"),
        ipaddress.ip_address("::1"),
    ]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.not_valid_after_utc - cert.not_valid_before_utc < datetime.timedelta(days=731)


def test_node_certificate_never_outlives_its_ca() -> None:
    short_ca = new_ca("short", days=30)
    node = issue_node(short_ca, "n")
    assert node.certificate.not_valid_after_utc == short_ca.certificate.not_valid_after_utc


def test_bad_ip_address_is_a_tls_error() -> None:
    with pytest.raises(TLSError, match="not-an-ip"):
        issue_node(CA, "n", ip_addresses=["not-an-ip"])


def test_key_files_are_private_and_never_silently_replaced(tmp_path: Path) -> None:
    cert, key = tmp_path / "n.pem", tmp_path / "n.key"
    write_certified_key(NODE, cert, key)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(cert.stat().st_mode) == 0o644
    with pytest.raises(FileExistsError):
        write_certified_key(NODE, cert, key)
    key.chmod(0o644)
    write_certified_key(NODE, cert, key, overwrite=True)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert load_certified_key(cert, key).certificate == NODE.certificate


def test_mismatched_key_names_both_files(tmp_path: Path) -> None:
    other = issue_node(CA, "node-2")
    write_file(tmp_path / "n.pem", NODE.cert_pem(), 0o644)
    write_file(tmp_path / "o.key", other.key_pem(), 0o600)
    with pytest.raises(
        TLSError, match=r"o\.key: this private key does not belong to the certificate in .*n\.pem"
    ):
        load_certified_key(tmp_path / "n.pem", tmp_path / "o.key")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a PEM private key"),
        (b"-----BEGIN CERTIFICATE-----\nxx\n-----END CERTIFICATE-----\n", "not a PEM private key"),
        (
            ec.generate_private_key(ec.SECP256R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"pw"),
            ),
            "encrypted",
        ),
        (
            x25519.X25519PrivateKey.generate().private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
            "cannot sign",
        ),
    ],
)
def test_unusable_key_files_are_named(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.key"
    path.write_bytes(content)
    with pytest.raises(TLSError, match=rf"bad\.key: .*{message}"):
        load_private_key(path)


def test_unusable_certificate_and_missing_files_are_named(tmp_path: Path) -> None:
    write_file(tmp_path / "n.key", NODE.key_pem(), 0o600)
    (tmp_path / "junk.pem").write_text("junk")
    with pytest.raises(TLSError, match=r"junk\.pem: not a PEM certificate file"):
        load_certified_key(tmp_path / "junk.pem", tmp_path / "n.key")
    with pytest.raises(ConfigError, match=r"absent\.pem: cannot read certificate: No such file"):
        load_certified_key(tmp_path / "absent.pem", tmp_path / "n.key")


def test_fingerprint_format() -> None:
    text = fingerprint(NODE.cert_pem())
    assert text.startswith("sha256:")
    hex_pairs = text[len("sha256:") :].split(":")
    assert len(hex_pairs) == 32 and all(len(p) == 2 and p == p.upper() for p in hex_pairs)
    assert fingerprint(NODE.certificate) == fingerprint(NODE.cert_pem().decode()) == text
    assert parse_pin(text) == digest(NODE.certificate)


@pytest.mark.parametrize(
    "form",
    [
        lambda f: f,
        lambda f: f.lower(),
        lambda f: f[len("sha256:") :],
        lambda f: f[len("sha256:") :].replace(":", ""),
        lambda f: "SHA256:" + f[len("sha256:") :].replace(":", "").lower(),
        lambda f: f"  {f}\n",
    ],
)
def test_pins_parse_in_every_written_form(form: Callable[[str], str]) -> None:
    assert parse_pin(form(fingerprint(NODE.certificate))) == digest(NODE.certificate)


@pytest.mark.parametrize(
    "pin",
    [
        "",
        "sha256:",
        "AB" * 31,  # too short
        "AB" * 33,  # too long
        "zz" * 32,
        "sha1:" + "AB" * 32,
        "ABC:" + ":".join(["AB"] * 30) + ":A",  # colons in the wrong places
    ],
)
def test_malformed_pins_are_refused(pin: str) -> None:
    with pytest.raises(TLSError, match="not a SHA-256 fingerprint"):
        parse_pin(pin)


def test_is_pinned() -> None:
    value = digest(NODE.certificate)
    assert is_pinned(value, [bytes(32), value])
    assert not is_pinned(value, [bytes(32)])
    assert not is_pinned(value, [])
    assert not is_pinned(value, [value[:16]])


NOW = datetime.datetime(2024, 6, 1, 12, 0, tzinfo=datetime.UTC)
BACKDATE = datetime.timedelta(minutes=5)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """A CA's key signs certificates and CRLs only; a node's signs its TLS handshakes only."""
    return x509.KeyUsage(
        digital_signature=not signs_certificates,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _farm_name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "garlicfarm"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def test_ca_fields_exactly() -> None:
    """The CA: named in the farm's organisation, backdated five minutes, its key usage exactly
    certificate and CRL signing (critical), its key identifiers not critical, signed with SHA-256."""
    ca = new_ca("farm CA", days=10, now=NOW)
    cert = ca.certificate
    assert cert.subject == cert.issuer == _farm_name("farm CA")
    assert cert.not_valid_before_utc == NOW - BACKDATE
    assert cert.not_valid_after_utc == NOW + datetime.timedelta(days=10)
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value == _key_usage(signs_certificates=True)
    assert not cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).critical
    assert not cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).critical
    assert isinstance(cert.signature_hash_algorithm, hashes.SHA256)


def test_node_fields_exactly() -> None:
    """A node certificate: named in the farm's organisation, issued by its CA, backdated five minutes
    like the CA, its key usage exactly digital signatures (critical), the rest not critical."""
    ca = new_ca("farm CA", now=NOW)
    cert = issue_node(ca, "node-7", days=30, now=NOW).certificate
    assert cert.subject == _farm_name("node-7")
    assert cert.issuer == ca.certificate.subject
    assert cert.not_valid_before_utc == NOW - BACKDATE
    assert cert.not_valid_after_utc == NOW + datetime.timedelta(days=30)
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value == _key_usage(signs_certificates=False)
    for kind in (x509.ExtendedKeyUsage, x509.SubjectAlternativeName, x509.SubjectKeyIdentifier):
        assert not cert.extensions.get_extension_for_class(kind).critical
    assert isinstance(cert.signature_hash_algorithm, hashes.SHA256)


def _eddsa_ca() -> CertifiedKey:
    """A CA of the operator's own with an Ed25519 key (the farm's own CAs are EC)."""
    key = ed25519.Ed25519PrivateKey.generate()
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_farm_name("EdDSA CA"))
        .issuer_name(_farm_name("EdDSA CA"))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - BACKDATE)
        .not_valid_after(NOW + datetime.timedelta(days=1000))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(ski, critical=False)
        .sign(key, None)
    )
    return CertifiedKey(cert, key)


def test_an_eddsa_ca_signs_node_certificates_without_a_digest() -> None:
    """EdDSA signs the message itself: no hash is given (one would be refused)."""
    ca = _eddsa_ca()
    cert = issue_node(ca, "n", now=NOW).certificate
    cert.verify_directly_issued_by(ca.certificate)
    assert cert.signature_hash_algorithm is None


def test_a_key_that_cannot_sign_is_named_by_its_type(tmp_path: Path) -> None:
    path = tmp_path / "x.key"
    path.write_bytes(
        x25519.X25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    with pytest.raises(TLSError) as refused:
        load_private_key(path)
    assert str(refused.value) == f"{path}: a X25519PrivateKey cannot sign; use an EC, RSA or EdDSA key"


def test_write_file_refuses_to_replace_a_file_by_default(tmp_path: Path) -> None:
    path = tmp_path / "n.key"
    write_file(path, b"first", 0o600)
    with pytest.raises(FileExistsError):
        write_file(path, b"second", 0o600)
    assert path.read_bytes() == b"first"


def test_a_written_file_has_its_mode_from_its_creation_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is created with its mode (under the umask), not made wider and narrowed afterwards:
    no moment in which a key is readable by others."""
    modes: list[int] = []
    fchmod = os.fchmod

    def watching(fd: int, mode: int) -> None:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", watching)
    umask = os.umask(0o022)
    try:
        write_file(tmp_path / "n.key", b"secret", 0o600)
    finally:
        os.umask(umask)
    assert modes == [0o600]
    assert stat.S_IMODE((tmp_path / "n.key").stat().st_mode) == 0o600
