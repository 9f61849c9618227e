"""Incremental decoding: feed bytes in any split, take whole messages out (h11-style, sans-I/O)."""

from __future__ import annotations

from garlicfarm.wire.codec import decode_frame, frame_length
from garlicfarm.wire.errors import ProtocolError
from garlicfarm.wire.limits import DEFAULT_LIMITS, Limits
from garlicfarm.wire.messages import Message


class Decoder:
    """Cuts a byte stream into messages. There is no outer length prefix: the type byte says
    whether a response (26 bytes) or a request (45-byte header + ``logEntriesSize``) follows.

    After a :class:`ProtocolError` the stream cannot be resynchronised; the decoder stays failed and
    raises the same error again, so the caller's only move is to drop the connection.
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._limits = limits
        self._buf = bytearray()
        self._start = 0  # read position inside _buf
        self._consumed = 0  # stream offset of _buf[0]
        self._error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as messages."""
        return len(self._buf) - self._start

    @property
    def stream_offset(self) -> int:
        """Stream offset of the first byte not yet returned as part of a message."""
        return self._consumed + self._start

    def feed(self, data: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._start and self._start == len(self._buf):
            self._consumed += self._start
            self._buf.clear()
            self._start = 0
        self._buf += data

    def next_message(self) -> Message | None:
        """The next whole message, or ``None`` until more bytes arrive."""
        if self._error is not None:
            raise self._error
        try:
            try:
                n = frame_length(self._buf, self._start, self._limits)
            except ProtocolError as e:
                # frame_length counts from the start of our buffer; report stream offsets.
                offset = None if e.offset is None else e.offset + self._consumed
                raise type(e)(e.what, offset) from None
            if n is None or len(self._buf) - self._start < n:
                return None
            end = self._start + n
            with memoryview(self._buf) as view:
                message = decode_frame(view[self._start : end], self._limits, self.stream_offset)
        except ProtocolError as e:
            self._error = e
            raise
        self._start = end
        # Compact once the consumed prefix dominates, so a long stream does not grow the buffer.
        if self._start > 65536 and self._start * 2 > len(self._buf):
            del self._buf[: self._start]
            self._consumed += self._start
            self._start = 0
        return message

    def receive(self, data: bytes) -> list[Message]:
        """Feed ``data`` and return every message now complete."""
        self.feed(data)
        out: list[Message] = []
        while (message := self.next_message()) is not None:
            out.append(message)
        return out
