"""Certificate fingerprints and pins: ``sha256:AB:CD:...``, as printed and as written in ``[tls] pins``."""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from OpenSSL import crypto

from garlicfarm.tls.errors import TLSError

_PREFIX = "sha256:"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def _as_x509(cert: bytes | str | x509.Certificate | crypto.X509) -> x509.Certificate:
    if isinstance(cert, x509.Certificate):
        return cert
    if isinstance(cert, crypto.X509):
        return cert.to_cryptography()
    data = cert.encode("ascii") if isinstance(cert, str) else cert
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError as e:
        raise TLSError(f"not a PEM certificate: {e}") from None


def digest(cert: bytes | str | x509.Certificate | crypto.X509) -> bytes:
    """SHA-256 of the certificate's DER form, as ``openssl x509 -fingerprint -sha256`` shows it."""
    return _as_x509(cert).fingerprint(hashes.SHA256())


def fingerprint(cert: bytes | str | x509.Certificate | crypto.X509) -> str:
    """``sha256:AB:CD:...`` for a PEM certificate (bytes or text) or a certificate object."""
    return format_pin(digest(cert))


def format_pin(value: bytes) -> str:
    return _PREFIX + ":".join(f"{b:02X}" for b in value)


def parse_pin(pin: str) -> bytes:
    """The 32-byte digest of a pin written ``sha256:AB:CD:...``, ``AB:CD:...`` or as 64 bare hex digits."""
    text = pin.strip()
    if text[: len(_PREFIX)].lower() == _PREFIX:
        text = text[len(_PREFIX) :]
    compact = text.replace(":", "")
    # Colons, if any, must separate every byte: a typo that drops a digit should not shift the rest.
    if not _HEX64.fullmatch(compact) or (":" in text and not all(len(p) == 2 for p in text.split(":"))):
        raise TLSError(f"pin {pin!r} is not a SHA-256 fingerprint (sha256:AB:CD:... or 64 hex digits)")
    return bytes.fromhex(compact)


def parse_pins(pins: Iterable[str]) -> frozenset[bytes]:
    return frozenset(parse_pin(p) for p in pins)


def is_pinned(value: bytes, pins: Iterable[bytes]) -> bool:
    """Whether ``value`` (a digest) is one of ``pins``, comparing every pin in constant time."""
    found = False
    for pin in pins:
        found |= hmac.compare_digest(value, pin)
    return found
