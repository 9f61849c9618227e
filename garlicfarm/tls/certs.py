"""A farm's certificates: a CA, and node certificates it signs, made with ``cryptography`` and kept as PEM.

Keys are EC P-256: every TLS stack a peer might run (OpenSSL, Java's JSSE for JRaft) handles it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from garlicfarm.tls.errors import TLSError

CA_DAYS = 3650
NODE_DAYS = 730
#: Backdating covers peers whose clocks run a little slow.
_BACKDATE = datetime.timedelta(minutes=5)

SigningKey = (
    ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey | ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey
)
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@attrs.frozen
class CertifiedKey:
    """A certificate and its private key."""

    certificate: x509.Certificate
    key: SigningKey = attrs.field(repr=False)

    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _hash_for(key: SigningKey) -> hashes.SHA256 | None:
    # EdDSA signs the message itself; the others sign a digest.
    return None if isinstance(key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey) else hashes.SHA256()


def new_ca(common_name: str, *, days: int = CA_DAYS, now: datetime.datetime | None = None) -> CertifiedKey:
    """A self-signed CA that may sign node certificates only (path length 0)."""
    now = now or _now()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "garlicfarm"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertifiedKey(cert, key)


def issue_node(
    ca: CertifiedKey,
    common_name: str,
    *,
    dns_names: Iterable[str] = (),
    ip_addresses: Iterable[str | IPAddress] = (),
    days: int = NODE_DAYS,
    now: datetime.datetime | None = None,
) -> CertifiedKey:
    """A node certificate signed by ``ca``, good as TLS server and client, for ``localhost`` and
    ``127.0.0.1`` plus the names and addresses given (peers check the one they dialled)."""
    now = now or _now()
    key = ec.generate_private_key(ec.SECP256R1())
    dns = dict.fromkeys(["localhost", *dns_names])
    try:
        ips = dict.fromkeys([ipaddress.ip_address("127.0.0.1"), *map(ipaddress.ip_address, ip_addresses)])
    except ValueError as e:
        raise TLSError(str(e)) from None
    san = x509.SubjectAlternativeName([*(x509.DNSName(d) for d in dns), *(x509.IPAddress(i) for i in ips)])
    ca_ski = ca.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "garlicfarm"),
                    x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                ]
            )
        )
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        # A node certificate never outlives the CA that vouches for it.
        .not_valid_after(min(now + datetime.timedelta(days=days), ca.certificate.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(san, critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca.key, _hash_for(ca.key))
    )
    return CertifiedKey(cert, key)


def write_file(path: Path, data: bytes, mode: int, *, overwrite: bool = False) -> None:
    """Write ``data`` to ``path`` with permissions ``mode`` from the first byte on (no window in which a
    key is world-readable), refusing to replace an existing file unless ``overwrite``."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    fd = os.open(path, flags, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have narrowed it, or the file already existed
        os.write(fd, data)
    finally:
        os.close(fd)


def write_certified_key(
    pair: CertifiedKey, cert_path: Path, key_path: Path, *, overwrite: bool = False
) -> None:
    write_file(key_path, pair.key_pem(), 0o600, overwrite=overwrite)
    write_file(cert_path, pair.cert_pem(), 0o644, overwrite=overwrite)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise TLSError(f"{path}: cannot read {what}: {e.strerror}") from None


def load_certificates(path: Path) -> list[x509.Certificate]:
    """All certificates in a PEM file (a CA file may hold several trust roots)."""
    data = _read(path, "certificate")
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise TLSError(f"{path}: not a PEM certificate file") from None
    return certs


def load_certificate(path: Path) -> x509.Certificate:
    return load_certificates(path)[0]


def load_private_key(path: Path) -> SigningKey:
    data = _read(path, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise TLSError(f"{path}: the private key is encrypted; garlicfarm needs it unencrypted") from None
    except (ValueError, UnsupportedAlgorithm):
        raise TLSError(f"{path}: not a PEM private key") from None
    if not isinstance(key, SigningKey):
        raise TLSError(f"{path}: a {type(key).__name__} cannot sign; use an EC, RSA or EdDSA key")
    return key


def load_certified_key(cert_path: Path, key_path: Path) -> CertifiedKey:
    """A certificate and its key from PEM files, checked to belong together."""
    cert = load_certificate(cert_path)
    key = load_private_key(key_path)
    raw = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if cert.public_key().public_bytes(*raw) != key.public_key().public_bytes(*raw):
        raise TLSError(f"{key_path}: this private key does not belong to the certificate in {cert_path}")
    return CertifiedKey(cert, key)
