"""A bounds-checked cursor over bytes: every read past the end is an :class:`I2PFormatError` naming the
field and its offset from the start of the input, never an IndexError or a short slice."""

from __future__ import annotations

from garlicfarm.i2p.errors import I2PFormatError


class Reader:
    def __init__(self, data: bytes, offset: int = 0, stop: int | None = None) -> None:
        self.data = data
        self.offset = offset
        self.stop = len(data) if stop is None else stop

    @property
    def left(self) -> int:
        return self.stop - self.offset

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > self.left:
            raise I2PFormatError(f"{what}: needs {n} bytes, {self.left} left", self.offset)
        out = self.data[self.offset : self.offset + n]
        self.offset += n
        return out

    def uint(self, n: int, what: str) -> int:
        return int.from_bytes(self.take(n, what), "big")

    def sub(self, n: int, what: str) -> Reader:
        """A reader over the next ``n`` bytes (offsets still counted from the input's start)."""
        start = self.offset
        self.take(n, what)
        return Reader(self.data, start, start + n)

    def end(self, what: str) -> None:
        if self.left:
            raise I2PFormatError(f"{self.left} bytes after the {what}", self.offset)
