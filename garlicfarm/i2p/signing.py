"""Signing and verifying with I2P's signature types, through ``cryptography``.

Signing: Ed25519 (type 7), the type the farm's keys use. Verifying: Ed25519 and ECDSA P-256/P-384/P-521
(types 7, 1, 2, 3: I2P writes an ECDSA signature as r || s, each half the length). Other types raise
:class:`UnsupportedSigType`, so a reader can say "not checked" instead of "forged".
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from garlicfarm.i2p.errors import UnsupportedSigType
from garlicfarm.i2p.sigtypes import ED25519, SigType

_CURVES: dict[int, tuple[ec.EllipticCurve, hashes.HashAlgorithm]] = {
    1: (ec.SECP256R1(), hashes.SHA256()),
    2: (ec.SECP384R1(), hashes.SHA384()),
    3: (ec.SECP521R1(), hashes.SHA512()),
}


def verify(kind: SigType, public_key: bytes, data: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s over ``data``; UnsupportedSigType for other types."""
    if len(signature) != kind.signature_len or len(public_key) != kind.public_len:
        return False
    try:
        if kind.code == ED25519.code:
            ed25519.Ed25519PublicKey.from_public_bytes(public_key).verify(signature, data)
            return True
        if kind.code in _CURVES:
            curve, digest = _CURVES[kind.code]
            half = kind.public_len // 2
            point = ec.EllipticCurvePublicNumbers(
                int.from_bytes(public_key[:half], "big"), int.from_bytes(public_key[half:], "big"), curve
            ).public_key()
            r = int.from_bytes(signature[: kind.signature_len // 2], "big")
            s = int.from_bytes(signature[kind.signature_len // 2 :], "big")
            point.verify(encode_dss_signature(r, s), data, ec.ECDSA(digest))
            return True
    except (InvalidSignature, ValueError):
        return False
    raise UnsupportedSigType(f"cannot verify signature type {kind.code} ({kind.name})")


@attrs.frozen(repr=False)
class SigningKey:
    """A private signing key of type 7 (Ed25519): the 32-byte seed, as both routers store it."""

    private: bytes
    kind: SigType = ED25519

    def __attrs_post_init__(self) -> None:
        if self.kind.code != ED25519.code:
            raise UnsupportedSigType(f"cannot sign with signature type {self.kind.code} ({self.kind.name})")
        if len(self.private) != ED25519.private_len:
            raise ValueError("an Ed25519 private key is 32 bytes")

    def __repr__(self) -> str:  # never print the key
        return f"SigningKey({self.kind.name})"

    @classmethod
    def generate(cls, urandom: Callable[[int], bytes]) -> SigningKey:
        return cls(urandom(ED25519.private_len))

    @property
    def public(self) -> bytes:
        return ed25519.Ed25519PrivateKey.from_private_bytes(self.private).public_key().public_bytes_raw()

    def sign(self, data: bytes) -> bytes:
        return ed25519.Ed25519PrivateKey.from_private_bytes(self.private).sign(data)
