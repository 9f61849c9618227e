"""Signature and encryption types, with the key and signature lengths I2P gives each
(common-structures: "Key Certificates"; i2pd libi2pd/Identity.h, Signature.h).

Every type here can be parsed (its keys cut out of a Destination, its signatures skipped); signing
and verifying are in :mod:`garlicfarm.i2p.signing`, for the types ``cryptography`` implements.
"""

from __future__ import annotations

import attrs

from garlicfarm.i2p.errors import I2PFormatError


@attrs.frozen
class SigType:
    code: int
    name: str
    public_len: int
    private_len: int
    signature_len: int


@attrs.frozen
class CryptoType:
    code: int
    name: str
    public_len: int
    private_len: int


SIG_TYPES: dict[int, SigType] = {
    t.code: t
    for t in (
        SigType(0, "DSA_SHA1", 128, 20, 40),
        SigType(1, "ECDSA_SHA256_P256", 64, 32, 64),
        SigType(2, "ECDSA_SHA384_P384", 96, 48, 96),
        SigType(3, "ECDSA_SHA512_P521", 132, 66, 132),
        SigType(4, "RSA_SHA256_2048", 256, 512, 256),
        SigType(5, "RSA_SHA384_3072", 384, 768, 384),
        SigType(6, "RSA_SHA512_4096", 512, 1024, 512),
        SigType(7, "EdDSA_SHA512_Ed25519", 32, 32, 64),
        SigType(8, "EdDSA_SHA512_Ed25519ph", 32, 32, 64),
        SigType(9, "GOST_R3410_2001_SHA256", 64, 32, 64),
        SigType(10, "GOST_R3410_2012_SHA512", 128, 64, 128),
        SigType(11, "RedDSA_SHA512_Ed25519", 32, 32, 64),
    )
}

CRYPTO_TYPES: dict[int, CryptoType] = {
    t.code: t
    for t in (
        CryptoType(0, "ElGamal", 256, 256),
        CryptoType(1, "EC_P256", 64, 256),  # i2pd keeps 256 bytes in its key files (32 used)
        CryptoType(2, "EC_P384", 96, 48),
        CryptoType(3, "EC_P521", 132, 66),
        CryptoType(4, "ECIES_X25519", 32, 32),
    )
}

ED25519 = SIG_TYPES[7]
X25519 = CRYPTO_TYPES[4]


def sig_type(code: int, offset: int | None = None) -> SigType:
    try:
        return SIG_TYPES[code]
    except KeyError:
        raise I2PFormatError(f"unknown signature type {code}", offset) from None


def crypto_type(code: int, offset: int | None = None) -> CryptoType:
    try:
        return CRYPTO_TYPES[code]
    except KeyError:
        raise I2PFormatError(f"unknown encryption type {code}", offset) from None
