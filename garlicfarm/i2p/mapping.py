"""I2P's Mapping: a 2-byte size, then ``key=value;`` pairs whose strings each carry a 1-byte length.
A dict is written sorted by key (a signature covers it: both routers sort); pairs are written in the
order given, so a decoded mapping encodes back to its own bytes. Read in order, duplicates refused."""

from __future__ import annotations

from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.reader import Reader

Pairs = tuple[tuple[str, str], ...]


def encode_string(text: str) -> bytes:
    """I2P's String: a 1-byte length, then at most 255 bytes of UTF-8."""
    raw = text.encode("utf-8")
    if len(raw) > 255:
        raise ValueError(f"an I2P string is at most 255 bytes: {text[:40]!r}…")
    return bytes([len(raw)]) + raw


def encode_mapping(pairs: Pairs | dict[str, str]) -> bytes:
    items = sorted(pairs.items()) if isinstance(pairs, dict) else pairs
    body = b"".join(encode_string(k) + b"=" + encode_string(v) + b";" for k, v in items)
    if len(body) > 0xFFFF:
        raise ValueError("a mapping is at most 65,535 bytes")
    return len(body).to_bytes(2, "big") + body


def read_mapping(reader: Reader, what: str = "mapping") -> Pairs:
    size = reader.uint(2, f"{what}: size")
    body = reader.sub(size, what)
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    while body.left:
        at = body.offset
        key = read_string(body, what)
        if body.take(1, f"{what}: '='") != b"=":
            raise I2PFormatError(f"{what}: '=' expected after a key", body.offset - 1)
        value = read_string(body, what)
        if body.take(1, f"{what}: ';'") != b";":
            raise I2PFormatError(f"{what}: ';' expected after a value", body.offset - 1)
        if key in seen:
            raise I2PFormatError(f"{what}: key {key!r} appears twice", at)
        seen.add(key)
        pairs.append((key, value))
    return tuple(pairs)


def read_string(body: Reader, what: str, *, lenient: bool = False) -> str:
    """An I2P String; invalid UTF-8 is an error, or replaced where ``lenient`` (text only shown)."""
    length = body.uint(1, f"{what}: string length")
    raw = body.take(length, f"{what}: string")
    if lenient:
        return raw.decode("utf-8", "replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise I2PFormatError(f"{what}: a string is not UTF-8", body.offset - length) from None
