"""Private key files in the routers' own format: Java I2P's PrivateKeyFile, i2pd's ``.dat``.

    Destination | encryption private key (length by the destination's crypto type)
    | signing private key (length by its signing type)

When the signing private key is all zeros the file is offline-signed (i2pd-tools' ``offlinekeys``,
Java's ``PrivateKeyFile -o``) and goes on with the offline block and the transient key:

    expires (4, s) | transient sig type (2) | transient public key | signature by the destination
    | transient private key

A member's file is of that second kind: it can sign Meta LS2s until ``expires`` and no longer, and the
master's own private key never leaves the operator's machine.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from cryptography.hazmat.primitives.asymmetric import x25519

from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.metals import OfflineSignature
from garlicfarm.i2p.reader import Reader
from garlicfarm.i2p.signing import SigningKey
from garlicfarm.i2p.sigtypes import ED25519, X25519, crypto_type, sig_type

Random = Callable[[int], bytes]


@attrs.frozen(repr=False)
class PrivateKeyFile:
    destination: Destination
    crypto_private: bytes
    signing_private: bytes
    offline: OfflineSignature | None = None
    transient_private: bytes | None = None

    def __attrs_post_init__(self) -> None:
        if (self.offline is None) != (self.transient_private is None):
            raise ValueError("an offline key file has both the offline signature and the transient key")
        if self.offline is not None and any(self.signing_private):
            raise ValueError("an offline key file holds no master signing key")

    def __repr__(self) -> str:
        kind = "offline" if self.offline else "master"
        return f"PrivateKeyFile({self.destination.b32}, {kind})"

    @property
    def is_offline(self) -> bool:
        return self.offline is not None

    @property
    def signer(self) -> SigningKey:
        """The key that signs Meta LS2s: the transient one in an offline file, else the master's."""
        if self.offline is not None and self.transient_private is not None:
            return SigningKey(self.transient_private, self.offline.transient_type)
        return SigningKey(self.signing_private, self.destination.sig_type)

    @property
    def encoded(self) -> bytes:
        out = self.destination.encoded + self.crypto_private + self.signing_private
        if self.offline is not None and self.transient_private is not None:
            out += self.offline.encoded + self.transient_private
        return out

    @classmethod
    def decode(cls, data: bytes) -> PrivateKeyFile:
        reader = Reader(data)
        destination = Destination.read(reader)
        crypto = crypto_type(destination.crypto_code, 384)
        crypto_private = reader.take(crypto.private_len, f"{crypto.name} private key")
        kind = destination.sig_type
        signing_private = reader.take(kind.private_len, f"{kind.name} signing private key")
        offline = transient = None
        if not any(signing_private):
            offline = OfflineSignature.read(reader, destination)
            transient = reader.take(offline.transient_type.private_len, "transient private key")
        # Java's PrivateKeyFile may be followed by nothing else; i2pd writes nothing after either.
        reader.end("private key file")
        return cls(destination, crypto_private, signing_private, offline, transient)

    def check(self) -> None:
        """That the private keys belong to the destination (and the offline signature to it)."""
        if self.offline is None:
            if self.signer.public != self.destination.signing_public_key:
                raise I2PFormatError("the signing private key is not the destination's")
        else:
            if not self.offline.verify(self.destination):
                raise I2PFormatError("the offline signature is not the destination's")
            if self.signer.public != self.offline.transient_public:
                raise I2PFormatError("the transient private key does not match the offline signature")


def create_master(urandom: Random) -> PrivateKeyFile:
    """A new destination for a Meta LS2: Ed25519 signing (type 7), X25519 encryption (type 4)."""
    signing = SigningKey.generate(urandom)
    crypto_private = urandom(X25519.private_len)
    crypto_public = x25519.X25519PrivateKey.from_private_bytes(crypto_private).public_key().public_bytes_raw()
    padding = urandom(256 - X25519.public_len + 128 - ED25519.public_len)
    destination = Destination.create(signing.public, crypto_public, padding)
    return PrivateKeyFile(destination, crypto_private, signing.private)


def create_transient(master: PrivateKeyFile, urandom: Random, expires: int) -> PrivateKeyFile:
    """An offline-signed key file for one member: a fresh Ed25519 key the master vouches for until
    ``expires`` (seconds since the epoch). ``master`` must hold the master's signing key."""
    if master.is_offline:
        raise ValueError("an offline key file cannot vouch for another transient key")
    transient = SigningKey.generate(urandom)
    offline = OfflineSignature.create(master.signer, transient.public, expires, sig_type(7))
    zeros = bytes(master.destination.sig_type.private_len)
    return PrivateKeyFile(master.destination, master.crypto_private, zeros, offline, transient.private)
