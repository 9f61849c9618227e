"""The one exception family the codec raises.

Every malformed input — whatever the bytes — ends in a subclass of :class:`ProtocolError`, whose message
says what was wrong and where (the byte offset from the start of the buffer or stream being decoded).
"""

from __future__ import annotations


class ProtocolError(ValueError):
    """Bytes that are not a valid Garlic Farm message.

    ``offset`` is the byte offset of the offending field from the start of the input (for the
    incremental decoder: from the start of the stream), or ``None`` where no position applies.
    """

    def __init__(self, what: str, offset: int | None = None) -> None:
        self.what = what
        self.offset = offset
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{what}{where}")


class UnknownMessageType(ProtocolError):
    """The first byte of a message is not one of the 17 message types."""


class UnknownValueType(ProtocolError):
    """A log entry's value type is not one of the 5 value types."""


class TruncatedMessage(ProtocolError):
    """The input ended before the message (or a payload inside it) was complete."""


class SizeOverrun(ProtocolError):
    """A size field points past the end of the structure that contains it."""


class TrailingBytes(ProtocolError):
    """A payload holds bytes after its last field."""


class InvalidField(ProtocolError):
    """A field holds a value its type does not allow (a boolean byte of 2, a non-UTF-8 endpoint, ...)."""


class InvalidPayload(ProtocolError):
    """A request carries entries its message type does not allow, or a payload is undecodable."""


class LimitExceeded(ProtocolError):
    """A configured limit was exceeded: entries size, entry count, or LogPack decompressed size."""
