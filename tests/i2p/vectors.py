"""The fixed inputs of docs/metals.md's test vectors: keys from RFC 8032 and RFC 7748, so that anyone
can rebuild the bytes with another implementation. ``python -m tests.i2p.vectors`` prints them."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric import x25519

from garlicfarm.cli.keys import metals_json
from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.metals import MetaLease, MetaLeaseSet, OfflineSignature
from garlicfarm.i2p.signing import SigningKey

#: RFC 8032 section 7.1, TEST 1 and TEST 2 secret keys (Ed25519 seeds)
MASTER_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
TRANSIENT_SEED = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
#: RFC 7748 section 6.1, Alice's private key
X25519_PRIVATE = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
PUBLISHED = 1_767_225_600  # 2026-01-01T00:00:00Z
EXPIRES = 3600
NOW = PUBLISHED


def master() -> tuple[Destination, SigningKey]:
    key = SigningKey(MASTER_SEED)
    crypto = x25519.X25519PrivateKey.from_private_bytes(X25519_PRIVATE).public_key().public_bytes_raw()
    return Destination.create(key.public, crypto, bytes(224 + 96)), key


def leases() -> tuple[MetaLease, ...]:
    end = PUBLISHED + EXPIRES
    return (MetaLease(b"\x11" * 32, cost=0, end=end), MetaLease(b"\x22" * 32, cost=60, end=end))


def master_signed() -> MetaLeaseSet:
    dest, key = master()
    return MetaLeaseSet(dest, PUBLISHED, EXPIRES, leases()).signed(key)


def offline_signed() -> MetaLeaseSet:
    dest, key = master()
    transient = SigningKey(TRANSIENT_SEED)
    offline = OfflineSignature.create(key, transient.public, PUBLISHED + 86_400)
    return MetaLeaseSet(dest, PUBLISHED, EXPIRES, leases(), offline=offline).signed(transient)


VECTORS = {"A Meta LS2 signed by the master": master_signed, "An offline-signed Meta LS2": offline_signed}


def decoded(ls: MetaLeaseSet) -> dict[str, object]:
    out = metals_json(ls)
    verdicts = ls.verdicts(NOW)
    out["verdicts"] = {"offlineSignature": verdicts.offline, "signature": verdicts.signature}
    return out


def hex_lines(data: bytes, width: int = 32) -> str:
    return "\n".join(data[i : i + width].hex() for i in range(0, len(data), width))


if __name__ == "__main__":
    for title, make in VECTORS.items():
        ls = make()
        text = json.dumps(decoded(ls), indent=2)
        print(f"### {title}\n\n```json\n{text}\n```\n\n```hex\n{hex_lines(ls.encoded)}\n```\n")
