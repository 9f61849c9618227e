"""I2P's base64 (``-`` and ``~`` for ``+`` and ``/``, padded) and base32 addresses."""

from __future__ import annotations

import base64
import binascii
import hashlib

from garlicfarm.i2p.errors import I2PFormatError

_ALT = b"-~"


def b64encode(data: bytes) -> str:
    return base64.b64encode(data, altchars=_ALT).decode("ascii")


def b64decode(text: str) -> bytes:
    """Strict: I2P's alphabet only (a standard ``+`` or ``/`` is refused), padding as encoded."""
    if not text.isascii() or "+" in text or "/" in text:
        raise I2PFormatError("not I2P base64 (its alphabet is A-Z a-z 0-9 - ~)")
    try:
        return base64.b64decode(text.encode("ascii"), altchars=_ALT, validate=True)
    except binascii.Error as e:
        raise I2PFormatError(f"not I2P base64: {e}") from None


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def b32(hash32: bytes) -> str:
    """The ``.b32.i2p`` address of a 32-byte hash: lowercase base32, no padding."""
    if len(hash32) != 32:
        raise ValueError("a b32 address is made of a 32-byte hash")
    return base64.b32encode(hash32).decode("ascii").rstrip("=").lower() + ".b32.i2p"


def b32decode(address: str) -> bytes:
    """The hash behind a ``xxxx.b32.i2p`` address (the suffix is optional)."""
    name = address.strip().lower().removesuffix(".b32.i2p")
    if len(name) != 52 or not name.isascii():
        raise I2PFormatError(f"not a b32 address: {address[:80]!r}")
    try:
        return base64.b32decode(name.upper() + "====")
    except binascii.Error:
        raise I2PFormatError(f"not a b32 address: {address[:80]!r}") from None
