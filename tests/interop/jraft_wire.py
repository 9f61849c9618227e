"""JRaft's binary messages as JRaft itself builds and reads them: raw fields, raw entry values.

The JRaft-behaviour peer works on bytes through this module only (never through garlicfarm's codec), so
a LogPack it receives is the raw gzip a garlicfarm leader produced, applied exactly as JRaft applies it.
"""

from __future__ import annotations

import struct

import attrs

_HEADER = struct.Struct(">BiiqqqqI")  # type source destination term lastLogTerm lastLogIndex commit size
_ENTRY = struct.Struct(">qBi")
_RESPONSE = struct.Struct(">Biiqq?")

RESPONSE_TYPES = frozenset({2, 4, 7, 9, 11, 13, 15, 17})


@attrs.frozen
class RawEntry:
    term: int
    value_type: int
    value: bytes


@attrs.frozen
class RawRequest:
    type: int
    source: int
    destination: int
    term: int
    last_log_term: int = 0
    last_log_index: int = 0
    commit_index: int = 0
    entries: tuple[RawEntry, ...] = ()

    def to_bytes(self) -> bytes:
        body = b"".join(_ENTRY.pack(e.term, e.value_type, len(e.value)) + e.value for e in self.entries)
        return (
            _HEADER.pack(
                self.type,
                self.source,
                self.destination,
                self.term,
                self.last_log_term,
                self.last_log_index,
                self.commit_index,
                len(body),
            )
            + body
        )


@attrs.frozen
class RawResponse:
    type: int
    source: int
    destination: int
    term: int
    next_index: int
    accepted: bool

    def to_bytes(self) -> bytes:
        return _RESPONSE.pack(
            self.type, self.source, self.destination, self.term, self.next_index, self.accepted
        )


def parse_request(data: bytes) -> RawRequest:
    kind, source, destination, term, llt, lli, commit, size = _HEADER.unpack_from(data)
    entries: list[RawEntry] = []
    pos, end = _HEADER.size, _HEADER.size + size
    assert end == len(data), "one whole request"
    while pos < end:
        t, vt, n = _ENTRY.unpack_from(data, pos)
        pos += _ENTRY.size
        entries.append(RawEntry(t, vt, bytes(data[pos : pos + n])))
        pos += n
    return RawRequest(kind, source, destination, term, llt, lli, commit, tuple(entries))


def parse_response(data: bytes) -> RawResponse:
    assert len(data) == _RESPONSE.size
    return RawResponse(*_RESPONSE.unpack(data))
