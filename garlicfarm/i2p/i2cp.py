"""I2CP's client side, sans-I/O: the messages a Meta LS2 publisher sends and the router's answers.

The client first sends the protocol byte 0x2a; every message is then a 4-byte payload length, a
1-byte type and the payload (i2cp.rst; i2pd libi2pd_client/I2CP.cpp).
"""

from __future__ import annotations

import attrs

from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.encoding import b64encode
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.mapping import Pairs, encode_mapping, encode_string, read_mapping, read_string
from garlicfarm.i2p.metals import STORE_TYPE, MetaLeaseSet, OfflineSignature
from garlicfarm.i2p.reader import Reader
from garlicfarm.i2p.signing import SigningKey

PROTOCOL_BYTE = b"\x2a"
#: the API version this client speaks (Meta LS2 over CreateLeaseSet2 needs 0.9.39 or later)
CLIENT_VERSION = "0.9.66"
#: no I2CP message this client expects is anywhere near this; i2pd's own limit is 65,535
MAX_MESSAGE = 0xFFFF

CREATE_SESSION, DESTROY_SESSION, SESSION_STATUS = 1, 3, 20
DISCONNECT, GET_DATE, SET_DATE = 30, 32, 33
REQUEST_VARIABLE_LEASESET, CREATE_LEASESET2 = 37, 41

#: tunnels the master's session asks for: a Meta LS2 needs none to be published, but a router builds
#: at least one each way before it acts for a session
SESSION_OPTIONS = {
    "inbound.quantity": "1",
    "outbound.quantity": "1",
    "inbound.length": "1",
    "outbound.length": "1",
}

SESSION_STATES = {0: "destroyed", 1: "created", 2: "updated", 3: "invalid", 4: "refused"}


def frame(kind: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + bytes([kind]) + payload


def get_date(auth: Pairs | None = None) -> bytes:
    """GetDate with our API version; ``auth`` (``i2cp.username``/``i2cp.password``) when the router asks."""
    return frame(GET_DATE, encode_string(CLIENT_VERSION) + (encode_mapping(dict(auth)) if auth else b""))


@attrs.frozen
class SessionConfig:
    """Destination, options, creation date (ms) and a signature over the three.

    Signed by the destination's own key, or — for an offline-signed member — by the transient key with
    the offline block in the options (Java I2P checks that; i2pd verifies only against the destination's
    own key, so for i2pd a member uses a config the master signed ahead of time, ``garlicfarm keys
    session``)."""

    destination: Destination
    options: Pairs
    date_ms: int
    signature: bytes = attrs.field(repr=False)

    @staticmethod
    def signed_part(destination: Destination, options: Pairs, date_ms: int) -> bytes:
        return destination.encoded + encode_mapping(dict(options)) + date_ms.to_bytes(8, "big")

    @property
    def encoded(self) -> bytes:
        return self.signed_part(self.destination, self.options, self.date_ms) + self.signature

    @classmethod
    def create(
        cls,
        destination: Destination,
        key: SigningKey,
        date_ms: int,
        options: dict[str, str] | None = None,
        offline: OfflineSignature | None = None,
    ) -> SessionConfig:
        opts = dict(options or {})
        if offline is not None:
            opts["i2cp.leaseSetOfflineExpiration"] = str(offline.expires)
            opts["i2cp.leaseSetTransientPublicKey"] = (
                f"{offline.transient_type.code}:{b64encode(offline.transient_public)}"
            )
            opts["i2cp.leaseSetOfflineSignature"] = b64encode(offline.signature)
        pairs = tuple(sorted(opts.items()))
        return cls(destination, pairs, date_ms, key.sign(cls.signed_part(destination, pairs, date_ms)))

    @classmethod
    def decode(cls, data: bytes) -> SessionConfig:
        reader = Reader(data)
        destination = Destination.read(reader)
        options = read_mapping(reader, "session options")
        date_ms = reader.uint(8, "session date")
        signature = reader.take(destination.sig_type.signature_len, "session signature")
        reader.end("session config")
        return cls(destination, options, date_ms, signature)


def create_session(config: SessionConfig) -> bytes:
    return frame(CREATE_SESSION, config.encoded)


def create_leaseset2(session_id: int, metals: MetaLeaseSet) -> bytes:
    """CreateLeaseSet2 of store type 7: no private keys follow a Meta LS2."""
    return frame(
        CREATE_LEASESET2, session_id.to_bytes(2, "big") + bytes([STORE_TYPE]) + metals.encoded + b"\x00"
    )


def destroy_session(session_id: int) -> bytes:
    return frame(DESTROY_SESSION, session_id.to_bytes(2, "big"))


@attrs.frozen
class SetDate:
    date_ms: int
    version: str


@attrs.frozen
class SessionStatus:
    session_id: int
    status: int

    @property
    def name(self) -> str:
        return SESSION_STATES.get(self.status, f"status {self.status}")


@attrs.frozen
class Disconnect:
    reason: str


@attrs.frozen
class RequestLeaseSet:
    """RequestVariableLeaseSet: the router's tunnels are ready and it asks for a leaseset."""

    session_id: int
    leases: int


@attrs.frozen
class Other:
    kind: int


Message = SetDate | SessionStatus | Disconnect | RequestLeaseSet | Other


def parse(kind: int, payload: bytes) -> Message:
    reader = Reader(payload)
    if kind == SET_DATE:
        date_ms = reader.uint(8, "SetDate: date")
        return SetDate(date_ms, read_string(reader, "SetDate: version", lenient=True) if reader.left else "")
    if kind == SESSION_STATUS:
        return SessionStatus(
            reader.uint(2, "SessionStatus: session"), reader.uint(1, "SessionStatus: status")
        )
    if kind == DISCONNECT:
        return Disconnect(read_string(reader, "Disconnect: reason", lenient=True) if reader.left else "")
    if kind == REQUEST_VARIABLE_LEASESET:
        return RequestLeaseSet(
            reader.uint(2, "RequestLeaseSet: session"), reader.uint(1, "RequestLeaseSet: count")
        )
    return Other(kind)


class Framer:
    """Cuts the router's byte stream into ``(type, payload)``; a length over ``MAX_MESSAGE`` is an error
    (the connection is then dropped), so a hostile router cannot make us buffer without bound."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        out: list[tuple[int, bytes]] = []
        while len(self._buffer) >= 5:
            length = int.from_bytes(self._buffer[:4], "big")
            if length > MAX_MESSAGE:
                raise I2PFormatError(f"I2CP message of {length} bytes (at most {MAX_MESSAGE})")
            if len(self._buffer) < 5 + length:
                break
            out.append((self._buffer[4], bytes(self._buffer[5 : 5 + length])))
            del self._buffer[: 5 + length]
        return out
