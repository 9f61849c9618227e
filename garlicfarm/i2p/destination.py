"""Destination (KeysAndCert): 256-byte public-key field, 128-byte signing-public-key field, certificate.

A KEY certificate (type 5) names the signing type and the encryption type. A signing key shorter than
its 128-byte field sits at the field's end (after padding), an encryption key at the start of its
256-byte field; a longer signing key (P-521, RSA) spills its excess into the certificate after the two
type fields. The hash is SHA-256 of all the bytes, whatever the types, so any destination can be
hashed even where its keys cannot be used.
"""

from __future__ import annotations

from functools import cached_property

import attrs

from garlicfarm.i2p.encoding import b32, b64decode, b64encode, sha256
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.reader import Reader
from garlicfarm.i2p.sigtypes import ED25519, SIG_TYPES, X25519, CryptoType, SigType, sig_type

PUBLIC_KEY_FIELD = 256
SIGNING_KEY_FIELD = 128
CERT_NULL = 0
CERT_KEY = 5
#: the smallest destination: two key fields and a NULL certificate
MIN_LEN = PUBLIC_KEY_FIELD + SIGNING_KEY_FIELD + 3


@attrs.frozen
class Destination:
    public_key_field: bytes = attrs.field(repr=False)
    signing_key_field: bytes = attrs.field(repr=False)
    cert_type: int
    cert_payload: bytes = attrs.field(repr=False)

    def __attrs_post_init__(self) -> None:
        if len(self.public_key_field) != PUBLIC_KEY_FIELD or len(self.signing_key_field) != SIGNING_KEY_FIELD:
            raise I2PFormatError("a destination's key fields are 256 and 128 bytes")
        if not 0 <= self.cert_type <= 255 or len(self.cert_payload) > 0xFFFF:
            raise I2PFormatError("bad certificate")
        if self.cert_type == CERT_KEY:
            if len(self.cert_payload) < 4:
                raise I2PFormatError("a KEY certificate holds at least the two key types (4 bytes)")
            kind = SIG_TYPES.get(self.sig_code)
            if kind is not None and len(self.cert_payload) < 4 + max(0, kind.public_len - SIGNING_KEY_FIELD):
                raise I2PFormatError(f"the KEY certificate is too short for a {kind.name} key")

    @classmethod
    def create(
        cls,
        signing_public: bytes,
        crypto_public: bytes,
        padding: bytes,
        *,
        kind: SigType = ED25519,
        crypto: CryptoType = X25519,
    ) -> Destination:
        """A destination with a KEY certificate; ``padding`` fills the key fields' unused bytes."""
        if len(signing_public) != kind.public_len or len(crypto_public) != crypto.public_len:
            raise ValueError("key lengths do not match their types")
        if kind.public_len > SIGNING_KEY_FIELD or crypto.public_len > PUBLIC_KEY_FIELD:
            raise ValueError("keys longer than their field are not made here")
        pad_public = PUBLIC_KEY_FIELD - crypto.public_len
        pad_signing = SIGNING_KEY_FIELD - kind.public_len
        if len(padding) != pad_public + pad_signing:
            raise ValueError(f"padding must be {pad_public + pad_signing} bytes")
        return cls(
            crypto_public + padding[:pad_public],
            padding[pad_public:] + signing_public,
            CERT_KEY,
            kind.code.to_bytes(2, "big") + crypto.code.to_bytes(2, "big"),
        )

    @classmethod
    def read(cls, reader: Reader) -> Destination:
        start = reader.offset
        public = reader.take(PUBLIC_KEY_FIELD, "destination: public key")
        signing = reader.take(SIGNING_KEY_FIELD, "destination: signing key")
        cert_type = reader.uint(1, "destination: certificate type")
        length = reader.uint(2, "destination: certificate length")
        payload = reader.take(length, "destination: certificate")
        try:
            return cls(public, signing, cert_type, payload)
        except I2PFormatError as e:
            raise I2PFormatError(f"destination: {e.what}", start) from None

    @classmethod
    def decode(cls, data: bytes) -> Destination:
        reader = Reader(data)
        dest = cls.read(reader)
        reader.end("destination")
        return dest

    @classmethod
    def from_b64(cls, text: str) -> Destination:
        try:
            return cls.decode(b64decode(text.strip()))
        except I2PFormatError as e:
            raise I2PFormatError(f"not a destination: {e}") from None

    @cached_property
    def encoded(self) -> bytes:
        return (
            self.public_key_field
            + self.signing_key_field
            + bytes([self.cert_type])
            + len(self.cert_payload).to_bytes(2, "big")
            + self.cert_payload
        )

    @property
    def sig_code(self) -> int:
        return int.from_bytes(self.cert_payload[:2], "big") if self.cert_type == CERT_KEY else 0

    @property
    def crypto_code(self) -> int:
        return int.from_bytes(self.cert_payload[2:4], "big") if self.cert_type == CERT_KEY else 0

    @property
    def sig_type(self) -> SigType:
        """The signing type; an I2PFormatError for a type this code does not know."""
        return sig_type(self.sig_code)

    @property
    def signing_public_key(self) -> bytes:
        kind = self.sig_type
        if kind.public_len <= SIGNING_KEY_FIELD:
            return self.signing_key_field[SIGNING_KEY_FIELD - kind.public_len :]
        excess = kind.public_len - SIGNING_KEY_FIELD
        return self.signing_key_field + self.cert_payload[4 : 4 + excess]

    @cached_property
    def hash(self) -> bytes:
        return sha256(self.encoded)

    @property
    def b32(self) -> str:
        return b32(self.hash)

    @property
    def b64(self) -> str:
        return b64encode(self.encoded)
