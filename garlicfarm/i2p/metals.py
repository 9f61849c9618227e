"""MetaLeaseSet (netDb store type 7), with its LeaseSet2 header and optional offline signature.

Layout (common-structures; i2pd LeaseSet2::ReadFromBuffer and ReadMetaLS2TypeSpecificPart):

    Destination | published (4, s) | expires (2, s after published) | flags (2)
    [OfflineSignature: expires (4, s) | transient sig type (2) | transient key | signature by the
     destination over those three]                                            (flags bit 0)
    options Mapping | lease count (1) | MetaLease x count (40 each)
    revocation count (1) | 32-byte hashes | signature

MetaLease: hash (32) | flags (3; bits 3-0 the entry type) | cost (1, lower preferred) | end (4, s).
The signature covers the store type byte 7 followed by everything from the destination to the
revocations; with offline keys it is the transient key's, else the destination's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import attrs

from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.encoding import b32
from garlicfarm.i2p.errors import I2PFormatError, UnsupportedSigType
from garlicfarm.i2p.mapping import Pairs, encode_mapping, read_mapping
from garlicfarm.i2p.reader import Reader
from garlicfarm.i2p.signing import SigningKey, verify
from garlicfarm.i2p.sigtypes import SigType, sig_type

STORE_TYPE = 7
FLAG_OFFLINE = 0x1
FLAG_UNPUBLISHED = 0x2
FLAG_BLINDED = 0x4
#: entry types of a MetaLease (bits 3-0 of its flags)
ENTRY_LEASESET, ENTRY_LEASESET2, ENTRY_META = 1, 3, 5
MAX_EXPIRES = 0xFFFF
MAX_ENTRIES = 255
LEASE_LEN = 40


@attrs.frozen
class OfflineSignature:
    """A transient signing key, valid until ``expires``, signed by the destination's own key."""

    expires: int
    transient_type: SigType
    transient_public: bytes = attrs.field(repr=lambda b: b.hex()[:16] + "…")
    signature: bytes = attrs.field(repr=False)

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.expires <= 0xFFFFFFFF:
            raise ValueError("an offline signature's expiry is 4 bytes of seconds")
        if len(self.transient_public) != self.transient_type.public_len:
            raise ValueError("the transient key's length does not match its type")

    @property
    def signed_data(self) -> bytes:
        return (
            self.expires.to_bytes(4, "big")
            + self.transient_type.code.to_bytes(2, "big")
            + self.transient_public
        )

    @property
    def encoded(self) -> bytes:
        return self.signed_data + self.signature

    @classmethod
    def create(
        cls, master: SigningKey, transient_public: bytes, expires: int, transient_type: SigType | None = None
    ) -> OfflineSignature:
        unsigned = cls(expires, transient_type or master.kind, transient_public, b"")
        return attrs.evolve(unsigned, signature=master.sign(unsigned.signed_data))

    @classmethod
    def read(cls, reader: Reader, destination: Destination) -> OfflineSignature:
        expires = reader.uint(4, "offline signature: expires")
        at = reader.offset
        kind = sig_type(reader.uint(2, "offline signature: transient type"), at)
        public = reader.take(kind.public_len, "offline signature: transient key")
        signature = reader.take(destination.sig_type.signature_len, "offline signature: signature")
        return cls(expires, kind, public, signature)

    def verify(self, destination: Destination) -> bool:
        return verify(destination.sig_type, destination.signing_public_key, self.signed_data, self.signature)


@attrs.frozen
class MetaLease:
    hash: bytes = attrs.field(repr=b32)
    cost: int
    end: int
    entry_type: int = ENTRY_LEASESET2
    #: the flags' other 20 bits, as read (zero when written here)
    high_flags: int = 0

    def __attrs_post_init__(self) -> None:
        if len(self.hash) != 32:
            raise ValueError("a MetaLease names a 32-byte hash")
        if not 0 <= self.cost <= 255 or not 0 <= self.end <= 0xFFFFFFFF:
            raise ValueError("a MetaLease's cost is one byte and its end four bytes of seconds")
        if not 0 <= self.entry_type <= 0xF or not 0 <= self.high_flags < 1 << 20:
            raise ValueError("a MetaLease's flags are three bytes")

    @property
    def encoded(self) -> bytes:
        flags = (self.high_flags << 4) | self.entry_type
        return self.hash + flags.to_bytes(3, "big") + bytes([self.cost]) + self.end.to_bytes(4, "big")

    @classmethod
    def read(cls, reader: Reader) -> MetaLease:
        hash32 = reader.take(32, "lease: hash")
        flags = reader.uint(3, "lease: flags")
        cost = reader.uint(1, "lease: cost")
        end = reader.uint(4, "lease: end")
        return cls(hash32, cost, end, flags & 0xF, flags >> 4)


@attrs.frozen
class Verdicts:
    """What checking a Meta LS2's signatures found: ``valid``, ``invalid``, ``expired`` (an offline
    signature past its date), or ``unsupported`` (a signature type this code cannot verify)."""

    offline: str | None
    signature: str

    @property
    def ok(self) -> bool:
        return self.signature == "valid" and self.offline in (None, "valid")


@attrs.frozen
class MetaLeaseSet:
    destination: Destination
    published: int
    expires: int
    leases: tuple[MetaLease, ...]
    offline: OfflineSignature | None = None
    #: flags other than the offline bit, which follows ``offline``
    flags: int = 0
    options: Pairs = ()
    revocations: tuple[bytes, ...] = ()
    signature: bytes = attrs.field(default=b"", repr=False)

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.published <= 0xFFFFFFFF or not 0 <= self.expires <= MAX_EXPIRES:
            raise ValueError("published is 4 bytes of seconds, expires 2 bytes of seconds after it")
        if not 0 <= self.flags <= 0xFFFF or self.flags & FLAG_OFFLINE:
            raise ValueError("flags are 2 bytes; the offline bit follows the offline signature")
        if len(self.leases) > MAX_ENTRIES or len(self.revocations) > MAX_ENTRIES:
            raise ValueError(f"at most {MAX_ENTRIES} leases and {MAX_ENTRIES} revocations")
        if any(len(h) != 32 for h in self.revocations):
            raise ValueError("a revocation is a 32-byte hash")

    @property
    def signer_type(self) -> SigType:
        return self.offline.transient_type if self.offline else self.destination.sig_type

    @property
    def all_flags(self) -> int:
        return self.flags | (FLAG_OFFLINE if self.offline else 0)

    @cached_property
    def body(self) -> bytes:
        """Everything the signature covers, but its leading store type byte."""
        parts = [
            self.destination.encoded,
            self.published.to_bytes(4, "big"),
            self.expires.to_bytes(2, "big"),
            self.all_flags.to_bytes(2, "big"),
            self.offline.encoded if self.offline else b"",
            encode_mapping(self.options),
            bytes([len(self.leases)]),
            *(lease.encoded for lease in self.leases),
            bytes([len(self.revocations)]),
            *self.revocations,
        ]
        return b"".join(parts)

    @property
    def signed_data(self) -> bytes:
        return bytes([STORE_TYPE]) + self.body

    @property
    def encoded(self) -> bytes:
        """The netDb bytes (without the store type byte), as I2CP's CreateLeaseSet2 carries them."""
        if len(self.signature) != self.signer_type.signature_len:
            raise ValueError("the Meta LS2 is not signed")
        return self.body + self.signature

    @property
    def expires_at(self) -> int:
        return self.published + self.expires

    def signed(self, key: SigningKey) -> MetaLeaseSet:
        """This Meta LS2 signed by ``key``: the transient key when offline-signed, else the master's."""
        expected = self.offline.transient_public if self.offline else self.destination.signing_public_key
        if key.public != expected:
            raise ValueError("this key is not the one the Meta LS2 names as its signer")
        return attrs.evolve(self, signature=key.sign(self.signed_data))

    def verdicts(self, now: int) -> Verdicts:
        """Check both signatures; ``now`` (seconds) judges the offline signature's expiry, as routers do."""
        offline: str | None = None
        if self.offline is not None:
            offline = _verdict(self.offline.verify, self.destination)
            if offline == "valid" and self.offline.expires < now:
                offline = "expired"
        signer = self.offline.transient_public if self.offline else self.destination.signing_public_key
        signature = _verdict(verify, self.signer_type, signer, self.signed_data, self.signature)
        return Verdicts(offline, signature)

    @classmethod
    def decode(cls, data: bytes) -> MetaLeaseSet:
        reader = Reader(data)
        destination = Destination.read(reader)
        published = reader.uint(4, "published")
        expires = reader.uint(2, "expires")
        flags = reader.uint(2, "flags")
        offline = OfflineSignature.read(reader, destination) if flags & FLAG_OFFLINE else None
        options = read_mapping(reader, "options")
        count = reader.uint(1, "lease count")
        leases = tuple(MetaLease.read(reader) for _ in range(count))
        count = reader.uint(1, "revocation count")
        revocations = tuple(reader.take(32, "revocation") for _ in range(count))
        at = reader.offset
        try:
            signer = offline.transient_type if offline else destination.sig_type
        except I2PFormatError as e:
            raise I2PFormatError(f"signature: {e.what}", at) from None
        signature = reader.take(signer.signature_len, "signature")
        reader.end("Meta LS2")
        return cls(
            destination,
            published,
            expires,
            leases,
            offline,
            flags & ~FLAG_OFFLINE,
            options,
            revocations,
            signature,
        )


def _verdict(check: Callable[..., bool], *args: Any) -> str:
    try:
        return "valid" if check(*args) else "invalid"
    except UnsupportedSigType:
        return "unsupported"
