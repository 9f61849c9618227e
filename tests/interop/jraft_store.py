"""JRaft's file-based log store, as its behaviour reads in ``FileBasedSequentialLogStore`` (exts).

Written from reading JRaft, not copied. Two "files": the index (one absolute data-file position per
entry) and the data (records of term 8, type 1, value, no length). What matters for interoperability:

* ``pack_log`` copies a run of index words *unchanged* (absolute positions in this data file) and the
  data bytes they cover, gzips ``indexLen logLen index data``;
* ``apply_log_pack`` writes the pack's index words unchanged into this index file at the pack's first
  index, and its data at the position this index holds there (or at the data's end when the pack
  extends the log), truncating both after;
* ``entry_at`` sizes an entry as the difference of two index words (the last one: to the data's end),
  and fails as JRaft does when they are inconsistent (negative or too short a record);
* ``compact`` rebases the index to 0 at the new start (a joiner compacts at the snapshot it installs).
"""

from __future__ import annotations

import gzip
import struct

from garlicfarm.wire import LogEntry, ValueType
from garlicfarm.wire.codec import decode_value, encode_value

_RECORD = struct.Struct(">QB")


class JRaftStoreCorrupt(Exception):
    """What JRaft hits reading a corrupt store (NegativeArraySizeException, BufferUnderflowException)."""


def record(entry: LogEntry) -> bytes:
    return _RECORD.pack(entry.term, entry.value_type) + encode_value(entry.value)


class JRaftLogStore:
    def __init__(self) -> None:
        self.start = 1
        self.index: list[int] = []
        self.data = bytearray()

    @property
    def first_available(self) -> int:
        return self.start + len(self.index)

    @property
    def last_index(self) -> int:
        return self.first_available - 1

    def last_term(self) -> int:
        return 0 if not self.index else self.entry_at(self.last_index).term

    def term_at(self, i: int) -> int:
        return 0 if i == 0 else self.entry_at(i).term

    def append(self, entry: LogEntry) -> int:
        self.index.append(len(self.data))
        self.data += record(entry)
        return self.last_index

    def write_at(self, i: int, entry: LogEntry) -> None:
        k = i - self.start
        position = self.index[k] if k < len(self.index) else len(self.data)
        del self.index[k:]
        del self.data[position:]
        self.append(entry)

    def raw_at(self, i: int) -> tuple[int, int, bytes]:
        k = i - self.start
        if not 0 <= k < len(self.index):
            raise IndexError(f"index {i} out of range {self.start}..{self.last_index}")
        lo = self.index[k]
        hi = self.index[k + 1] if k + 1 < len(self.index) else len(self.data)
        if hi - lo < 0:
            raise JRaftStoreCorrupt(f"NegativeArraySizeException reading entry {i} ({lo}..{hi})")
        if hi - lo < _RECORD.size or hi > len(self.data):
            raise JRaftStoreCorrupt(f"BufferUnderflowException reading entry {i} ({lo}..{hi})")
        term, value_type = _RECORD.unpack_from(self.data, lo)
        return term, value_type, bytes(self.data[lo + _RECORD.size : hi])

    def entry_at(self, i: int) -> LogEntry:
        term, value_type, value = self.raw_at(i)
        if value_type not in (ValueType.APPLICATION, ValueType.CONFIGURATION):
            raise JRaftStoreCorrupt(f"entry {i} has value type {value_type}")
        return LogEntry(term, decode_value(value, ValueType(value_type), 0, len(value)))

    def pack_log(self, i: int, count: int) -> bytes:
        k = i - self.start
        end = min(k + count, len(self.index))
        words = self.index[k:end]
        end_of_log = self.index[end] if end < len(self.index) else len(self.data)
        log = bytes(self.data[words[0] : end_of_log])
        index = b"".join(struct.pack(">Q", w) for w in words)
        return gzip.compress(struct.pack(">ii", len(index), len(log)) + index + log)

    def apply_log_pack(self, i: int, pack: bytes) -> None:
        if not self.start <= i <= self.first_available:
            raise IndexError(f"pack at {i} out of range {self.start}..{self.first_available}")
        raw = gzip.decompress(pack)
        index_len, log_len = struct.unpack_from(">ii", raw)
        words = [w for (w,) in struct.iter_unpack(">Q", raw[8 : 8 + index_len])]
        log = raw[8 + index_len : 8 + index_len + log_len]
        k = i - self.start
        position = len(self.data) if k == len(self.index) else self.index[k]
        self.index[k:] = words
        self.data[position:] = log

    def compact(self, last: int) -> None:
        if last >= self.last_index:
            self.start, self.index, self.data = last + 1, [], bytearray()
            return
        k = last - self.start + 1
        position = self.index[k]
        self.index = [w - position for w in self.index[k:]]
        del self.data[:position]
        self.start = last + 1
