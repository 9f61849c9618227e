"""The exceptions of the I2P structures."""

from __future__ import annotations


class I2PFormatError(ValueError):
    """Bytes (or text) that are not a valid I2P structure; the message says what and where."""

    def __init__(self, what: str, offset: int | None = None) -> None:
        self.what = what
        self.offset = offset
        super().__init__(what if offset is None else f"{what} at byte {offset}")


class UnsupportedSigType(I2PFormatError):
    """A signature type this implementation can parse but not sign or verify with."""
