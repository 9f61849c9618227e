"""The cross-member consistency check: members compare digests of their committed logs.

Every member keeps a running SHA-256 over its applied log (each entry's index and wire encoding chained
onto the digest before it) and puts the digest at its applied index into its status reports. Whoever
applies such a report compares it with its own digest at that index: the same committed prefix gives
the same digest on every member, so a difference means a member's log diverged (a forged or tampered
entry that passed every other check). As etcd's corruption check does, it raises an alarm; it repairs
nothing (the member is wiped and resynced, docs/security.md).

The digest travels in snapshots, so a member that compacted or installed a snapshot keeps the chain.
A member whose chain is unknown (restored from a snapshot without one) neither reports nor compares.
Sans-I/O: the application state feeds it entries and reports.
"""

from __future__ import annotations

import hashlib
import struct
from collections import deque

import attrs

from garlicfarm.app.schema import LogMark
from garlicfarm.wire.codec import ENTRY_HEAD, encode_entry
from garlicfarm.wire.payloads import Application, LogEntry
from garlicfarm.wire.types import ValueType

#: the digest before index 1
GENESIS = bytes(32)
#: digests of the latest applied indexes kept for comparison: a report names its sender's applied
#: index when it was made, a few round trips before the report itself commits
DIGESTS_KEPT = 1024
#: an entry's index, then its wire header (term, value type, length): what encode_entry writes before
#: the value, packed at once for the application's entries (every node hashes every entry it applies)
_INDEX_AND_HEAD = struct.Struct(">Q" + ENTRY_HEAD.format.removeprefix(">"))
_APPLICATION = int(ValueType.APPLICATION)


@attrs.frozen
class Divergence:
    """``member`` reported another digest at ``index`` than this server holds."""

    member: int
    index: int
    theirs: str
    ours: str

    def describe(self) -> str:
        return (
            f"server {self.member}'s committed log differs from this server's at index {self.index}"
            f" (digest {self.theirs[:16]}… there, {self.ours[:16]}… here)"
        )


class LogDigest:
    """The running digest of the applied log, and the latest ``DIGESTS_KEPT`` of its values."""

    def __init__(self) -> None:
        #: the last index folded in; None: the chain is unknown
        self.index = 0
        self.value: bytes | None = GENESIS
        self._kept: deque[bytes] = deque(maxlen=DIGESTS_KEPT)

    def add(self, index: int, entry: LogEntry) -> None:
        if self.value is None:
            return
        if index != self.index + 1:  # a hole (never expected): a chain with one would be wrong
            self.reset(index, None)
            return
        value = entry.value
        if type(value) is Application:
            data = value.data
            piece = _INDEX_AND_HEAD.pack(index, entry.term, _APPLICATION, len(data)) + data
        else:
            piece = index.to_bytes(8, "big") + encode_entry(entry)
        self.value = hashlib.sha256(self.value + piece).digest()
        self.index = index
        self._kept.append(self.value)

    def reset(self, index: int, value: bytes | None) -> None:
        """The chain restarts at ``index`` with ``value`` (a restored snapshot's, None: unknown)."""
        self.index, self.value = index, value
        self._kept.clear()
        if value is not None:
            self._kept.append(value)

    def mark(self) -> LogMark | None:
        return None if self.value is None else LogMark(self.index, self.value.hex())

    def at(self, index: int) -> bytes | None:
        """The digest at ``index``, if it is one of the latest kept."""
        offset = len(self._kept) - 1 - (self.index - index)
        if self.value is None or not 0 <= offset < len(self._kept):
            return None
        return self._kept[offset]

    def compare(self, member: int, mark: LogMark) -> Divergence | None:
        """How ``mark`` differs from this chain, or None: it agrees, or this chain cannot tell
        (``at(mark.index)`` is None)."""
        ours = self.at(mark.index)
        if ours is None or ours.hex() == mark.digest:
            return None
        return Divergence(member, mark.index, mark.digest, ours.hex())
