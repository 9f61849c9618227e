"""Encode and decode Garlic Farm messages (proposal 150's byte layouts, JRaft-compatible).

Decoding never trusts a size field: each is checked against the structure that contains it and against
:class:`~garlicfarm.wire.limits.Limits` before anything is allocated, and every failure is a
:class:`~garlicfarm.wire.errors.ProtocolError` subclass naming the byte offset. Encoding checks that the
model fits the layout (field ranges, entry rules) and raises :class:`EncodeError` otherwise, so we never
send what we would ourselves reject.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterable

from garlicfarm.wire.errors import (
    InvalidField,
    InvalidPayload,
    LimitExceeded,
    ProtocolError,
    SizeOverrun,
    TrailingBytes,
    TruncatedMessage,
    UnknownMessageType,
    UnknownValueType,
)
from garlicfarm.wire.limits import DEFAULT_LIMITS, Limits
from garlicfarm.wire.messages import MESSAGE_CLASSES, Message, Request, Response
from garlicfarm.wire.payloads import (
    Application,
    ClusterServer,
    Configuration,
    LogEntry,
    LogPack,
    Payload,
    SnapshotSyncRequest,
)
from garlicfarm.wire.types import (
    ENTRY_HEADER_SIZE,
    NO_LEADER,
    REQUEST_HEADER_SIZE,
    REQUEST_TYPES,
    RESPONSE_SIZE,
    RESPONSE_TYPES,
    MessageType,
    ValueType,
)

_HEADER = struct.Struct(">BIIQQQQI")
_RESPONSE = struct.Struct(">BIIQQB")
#: a log entry's header on the wire: term, value type, value length (the value follows)
ENTRY_HEAD = struct.Struct(">QBI")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_TWO_U32 = struct.Struct(">II")
_TWO_U64 = struct.Struct(">QQ")
_SNAPSHOT_HEAD = struct.Struct(">QQI")  # lastLogIndex lastLogTerm configLen
_SNAPSHOT_MID = struct.Struct(">QI")  # offset dataLen
_LOG_RECORD_HEAD = struct.Struct(">QB")  # LogPack record: term valueType (no size)

assert _HEADER.size == REQUEST_HEADER_SIZE
assert _RESPONSE.size == RESPONSE_SIZE
assert ENTRY_HEAD.size == ENTRY_HEADER_SIZE

Buffer = bytes | bytearray | memoryview


#: JRaft's longs and ints are signed: terms, indexes and offsets are 0..2^63-1 on this wire and server
#: ids 1..2^31-1. The protocol's -1 (all ones) is allowed only where it is a marker: "no leader"
#: (NO_LEADER) in source/destination, the pre-vote marker in commitIndex and in a vote's nextIndex.
MAX_LONG = 2**63 - 1
MAX_ID = 2**31 - 1
#: the marker values a long field may carry beyond 0..2^63-1: JRaft's -1 ("none"; a pre-vote in
#: commitIndex) and -2, -3, which only peers that negotiated leadership transfer send (raft/types.py)
_MARKERS = frozenset({2**64 - 1, 2**64 - 2, 2**64 - 3})


_Field = tuple[str, int, int, str]


def _range_problem(fields: Iterable[_Field]) -> tuple[str, int] | None:
    """The first field out of range, as (message, byte offset), or None. Each field is (name, value,
    offset, kind): kind "id" (0, 1..2^31-1 or -1), "long" (0..2^63-1), "long/-1" (or a marker, -1..-3),
    "server" (1..2^31-1)."""
    for name, value, at, kind in fields:
        if kind == "id":
            ok = value <= MAX_ID or value == NO_LEADER
            want = "a server id (1..2^31-1), 0 or -1"
        elif kind == "server":
            ok = 1 <= value <= MAX_ID
            want = "a server id (1..2^31-1)"
        else:
            ok = value <= MAX_LONG or (kind == "long/-1" and value in _MARKERS)
            want = "a signed 64-bit value from 0 to 2^63-1"
        if not ok:
            return f"{name} is {value}, not {want}", at
    return None


def _check_range(fields: Iterable[_Field], base: int) -> None:
    problem = _range_problem(fields)
    if problem is not None:
        raise InvalidField(problem[0], base + problem[1])


def _response_fields(source: int, destination: int, term: int, next_index: int) -> list[_Field]:
    return [
        ("source", source, 1, "id"),
        ("destination", destination, 5, "id"),
        ("term", term, 9, "long"),
        ("nextIndex", next_index, 17, "long/-1"),
    ]


def _request_fields(
    source: int, destination: int, term: int, last_term: int, last_index: int, commit: int
) -> list[_Field]:
    return [
        ("source", source, 1, "id"),
        ("destination", destination, 5, "id"),
        ("term", term, 9, "long"),
        ("lastLogTerm", last_term, 17, "long"),
        ("lastLogIndex", last_index, 25, "long"),
        ("commitIndex", commit, 33, "long/-1"),
    ]


def _header_fields(m: Message) -> list[_Field]:
    if isinstance(m, Response):
        return _response_fields(m.source, m.destination, m.term, m.next_index)
    return _request_fields(m.source, m.destination, m.term, m.last_log_term, m.last_log_index, m.commit_index)


class EncodeError(ValueError):
    """A model that cannot be put on the wire (a field out of range, entries its type forbids)."""


# ---------------------------------------------------------------------------------------------- decode


def frame_length(buf: Buffer, start: int = 0, limits: Limits = DEFAULT_LIMITS) -> int | None:
    """The length of the message starting at ``buf[start]``, or ``None`` if too few bytes to tell.

    Raises as soon as the first byte or the header's size field is known to be bad, so a peer cannot
    make us wait for (or buffer) a 4 GiB body.
    """
    if len(buf) <= start:
        return None
    kind = buf[start]
    if kind in RESPONSE_TYPES:
        return RESPONSE_SIZE
    if kind not in REQUEST_TYPES:
        raise UnknownMessageType(f"unknown message type {kind}", start)
    if len(buf) - start < REQUEST_HEADER_SIZE:
        return None
    size: int = _U32.unpack_from(buf, start + REQUEST_HEADER_SIZE - 4)[0]
    if size > limits.max_entries_size:
        raise LimitExceeded(
            f"log entries size {size} exceeds the limit of {limits.max_entries_size} bytes",
            start + REQUEST_HEADER_SIZE - 4,
        )
    return REQUEST_HEADER_SIZE + size


def decode(data: Buffer, limits: Limits = DEFAULT_LIMITS) -> Message:
    """Decode exactly one message that fills ``data``."""
    messages = decode_all(data, limits)
    if len(messages) != 1:
        raise TrailingBytes(f"expected one message, found {len(messages)}", 0)
    return messages[0]


def decode_all(data: Buffer, limits: Limits = DEFAULT_LIMITS) -> list[Message]:
    """Decode a buffer holding zero or more whole, concatenated messages."""
    view = memoryview(data)
    out: list[Message] = []
    pos = 0
    while pos < len(view):
        n = frame_length(view, pos, limits)
        if n is None or len(view) - pos < n:
            kind = view[pos]
            need = n if n is not None else REQUEST_HEADER_SIZE
            raise TruncatedMessage(
                f"message type {kind} needs {need} bytes, only {len(view) - pos} remain", pos
            )
        out.append(decode_frame(view[pos : pos + n], limits, base=pos))
        pos += n
    return out


def decode_frame(frame: Buffer, limits: Limits = DEFAULT_LIMITS, base: int = 0) -> Message:
    """Decode one message whose exact length ``frame_length`` has already established.

    ``base`` is the stream offset of ``frame[0]``; error offsets are reported relative to the stream.
    """
    kind = frame[0]
    cls = MESSAGE_CLASSES.get(kind)
    if cls is None:
        raise UnknownMessageType(f"unknown message type {kind}", base)
    if issubclass(cls, Response):
        if len(frame) != RESPONSE_SIZE:
            raise TruncatedMessage(f"a response is {RESPONSE_SIZE} bytes, got {len(frame)}", base)
        _, source, destination, term, next_index, accepted = _RESPONSE.unpack_from(frame, 0)
        if accepted > 1:
            raise InvalidField(f"accepted byte is {accepted}, must be 0 or 1", base + 25)
        if not (source <= MAX_ID and destination <= MAX_ID and term <= MAX_LONG and next_index <= MAX_LONG):
            _check_range(_response_fields(source, destination, term, next_index), base)  # markers, or wrong
        return cls(source, destination, term, next_index, accepted == 1)
    if len(frame) < REQUEST_HEADER_SIZE:
        raise TruncatedMessage(f"a request header is {REQUEST_HEADER_SIZE} bytes, got {len(frame)}", base)
    _, source, destination, term, last_term, last_index, commit, size = _HEADER.unpack_from(frame, 0)
    if len(frame) != REQUEST_HEADER_SIZE + size:
        raise SizeOverrun(
            f"log entries size {size} does not match the {len(frame) - REQUEST_HEADER_SIZE} bytes "
            "that follow the header",
            base + REQUEST_HEADER_SIZE - 4,
        )
    # all in the plain ranges (the usual case), or the field by field check: markers, or an error
    if not (
        source <= MAX_ID
        and destination <= MAX_ID
        and term <= MAX_LONG
        and last_term <= MAX_LONG
        and last_index <= MAX_LONG
        and commit <= MAX_LONG
    ):
        _check_range(_request_fields(source, destination, term, last_term, last_index, commit), base)
    entries = _decode_entries(frame, REQUEST_HEADER_SIZE, len(frame), limits, base)
    _check_entry_rule(cls, entries, base)
    return cls(source, destination, term, last_term, last_index, commit, entries)


def _check_entry_rule(cls: type[Request], entries: tuple[LogEntry, ...], base: int) -> None:
    allowed, least, most = cls.ENTRY_RULE
    name = cls.__name__
    if len(entries) < least or (most is not None and len(entries) > most):
        want = "no entries" if most == 0 else f"{least}..{most if most is not None else 'n'} entries"
        raise InvalidPayload(f"{name} carries {len(entries)} entries, wants {want}", base)
    for entry in entries:
        if entry.value_type not in allowed:
            raise InvalidPayload(f"{name} may not carry a {entry.value_type.name} entry", base)
    if cls.TYPE == MessageType.ADD_SERVER_REQUEST:
        value = entries[0].value
        assert isinstance(value, ClusterServer)
        if value.endpoint is None:
            raise InvalidPayload("AddServerRequest's ClusterServer has no endpoint", base)


def _decode_entries(buf: Buffer, start: int, end: int, limits: Limits, base: int) -> tuple[LogEntry, ...]:
    entries: list[LogEntry] = []
    pos = start
    while pos < end:
        if end - pos < ENTRY_HEADER_SIZE:
            raise SizeOverrun(
                f"log entry header needs {ENTRY_HEADER_SIZE} bytes, only {end - pos} remain",
                base + pos,
            )
        if len(entries) >= limits.max_entries:
            raise LimitExceeded(f"more than {limits.max_entries} log entries", base + pos)
        term, value_type, size = ENTRY_HEAD.unpack_from(buf, pos)
        if term > MAX_LONG:
            _check_range([("log entry term", term, pos, "long")], base)
        value_start = pos + ENTRY_HEADER_SIZE
        if size > end - value_start:
            raise SizeOverrun(
                f"log entry value size {size} overruns the entries by {size - (end - value_start)} bytes",
                base + pos + 9,
            )
        value = decode_value(buf, value_type, value_start, value_start + size, limits, base, pos + 8)
        entries.append(LogEntry(term, value))
        pos = value_start + size
    return tuple(entries)


def decode_value(
    buf: Buffer,
    value_type: int,
    start: int,
    end: int,
    limits: Limits = DEFAULT_LIMITS,
    base: int = 0,
    type_at: int = 0,
) -> Payload:
    """Decode the value of type ``value_type`` that fills ``buf[start:end]``."""
    if value_type == ValueType.APPLICATION:
        return Application(bytes(buf[start:end]))
    if value_type == ValueType.CONFIGURATION:
        return _decode_configuration(buf, start, end, base)
    if value_type == ValueType.CLUSTER_SERVER:
        return _decode_cluster_server(buf, start, end, base)
    if value_type == ValueType.LOG_PACK:
        return _decode_log_pack(bytes(buf[start:end]), limits, base + start)
    if value_type == ValueType.SNAPSHOT_SYNC_REQUEST:
        return _decode_snapshot(buf, start, end, base)
    raise UnknownValueType(f"unknown log value type {value_type}", base + type_at)


def _decode_endpoint(buf: Buffer, start: int, end: int, base: int) -> str:
    try:
        return bytes(buf[start:end]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidField(f"endpoint is not valid UTF-8 ({e.reason})", base + start + e.start) from None


def _decode_server_record(buf: Buffer, pos: int, end: int, base: int) -> tuple[ClusterServer, int]:
    if end - pos < 8:
        raise SizeOverrun(f"server record needs 8 bytes, only {end - pos} remain", base + pos)
    server_id, length = _TWO_U32.unpack_from(buf, pos)
    _check_range([("server id", server_id, pos, "server")], base)
    if length > end - pos - 8:
        raise SizeOverrun(
            f"endpoint length {length} overruns the payload by {length - (end - pos - 8)} bytes",
            base + pos + 4,
        )
    endpoint = _decode_endpoint(buf, pos + 8, pos + 8 + length, base)
    return ClusterServer(server_id, endpoint), pos + 8 + length


def _decode_cluster_server(buf: Buffer, start: int, end: int, base: int) -> ClusterServer:
    if end - start == 4:
        (server_id,) = _U32.unpack_from(buf, start)
        _check_range([("server id", server_id, start, "server")], base)
        return ClusterServer(server_id, None)
    server, pos = _decode_server_record(buf, start, end, base)
    if pos != end:
        raise TrailingBytes(f"{end - pos} bytes after the ClusterServer endpoint", base + pos)
    return server


def _decode_configuration(buf: Buffer, start: int, end: int, base: int) -> Configuration:
    if end - start < 16:
        raise SizeOverrun(f"configuration needs 16 bytes, only {end - start} remain", base + start)
    log_index, last_log_index = _TWO_U64.unpack_from(buf, start)
    _check_range(
        [
            ("configuration logIndex", log_index, start, "long"),
            ("lastLogIndex", last_log_index, start + 8, "long"),
        ],
        base,
    )
    servers: list[ClusterServer] = []
    pos = start + 16
    while pos < end:
        server, pos = _decode_server_record(buf, pos, end, base)
        servers.append(server)
    return Configuration(log_index, last_log_index, tuple(servers))


def _decode_snapshot(buf: Buffer, start: int, end: int, base: int) -> SnapshotSyncRequest:
    if end - start < _SNAPSHOT_HEAD.size:
        raise SizeOverrun("snapshot sync request header truncated", base + start)
    last_index, last_term, config_len = _SNAPSHOT_HEAD.unpack_from(buf, start)
    _check_range(
        [
            ("snapshot lastLogIndex", last_index, start, "long"),
            ("snapshot lastLogTerm", last_term, start + 8, "long"),
        ],
        base,
    )
    pos = start + _SNAPSHOT_HEAD.size
    if config_len > end - pos:
        raise SizeOverrun(f"configuration length {config_len} overruns the payload", base + pos - 4)
    config = _decode_configuration(buf, pos, pos + config_len, base)
    pos += config_len
    if end - pos < _SNAPSHOT_MID.size:
        raise SizeOverrun("snapshot offset and data length truncated", base + pos)
    offset, data_len = _SNAPSHOT_MID.unpack_from(buf, pos)
    _check_range([("snapshot offset", offset, pos, "long")], base)
    pos += _SNAPSHOT_MID.size
    if data_len > end - pos - 1:
        raise SizeOverrun(f"snapshot data length {data_len} overruns the payload", base + pos - 4)
    data = bytes(buf[pos : pos + data_len])
    pos += data_len
    done = buf[pos]
    if done > 1:
        raise InvalidField(f"done byte is {done}, must be 0 or 1", base + pos)
    pos += 1
    if pos != end:
        raise TrailingBytes(f"{end - pos} bytes after the snapshot's done flag", base + pos)
    return SnapshotSyncRequest(last_index, last_term, config, offset, data, done == 1)


def inflate_bounded(data: bytes, limit: int, base: int = 0) -> bytes:
    """Gunzip one gzip member, refusing to produce more than ``limit`` bytes (gzip bombs)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as e:
        raise InvalidPayload(f"LogPack is not valid gzip ({e})", base) from None
    if len(out) > limit:
        raise LimitExceeded(f"LogPack inflates past the limit of {limit} bytes", base)
    if not inflater.eof:
        raise InvalidPayload("LogPack gzip stream is truncated", base)
    if inflater.unused_data:
        raise TrailingBytes(
            f"{len(inflater.unused_data)} bytes after the LogPack's gzip stream",
            base + len(data) - len(inflater.unused_data),
        )
    return out


def _decode_log_pack(data: bytes, limits: Limits, base: int) -> LogPack:
    raw = inflate_bounded(data, limits.max_logpack_decompressed, base)
    # Offsets below are into the inflated data; they are reported as "inflated byte N".
    if len(raw) < 8:
        raise InvalidPayload(f"inflated LogPack is {len(raw)} bytes, needs at least 8", base)
    index_len, log_len = _TWO_U32.unpack_from(raw, 0)
    if index_len % 8:
        raise InvalidPayload(f"LogPack index length {index_len} is not a multiple of 8", base)
    if 8 + index_len + log_len != len(raw):
        raise InvalidPayload(
            f"LogPack declares {index_len}+{log_len} bytes of index and log, inflated body has "
            f"{len(raw) - 8}",
            base,
        )
    count = index_len // 8
    if count > limits.max_entries:
        raise LimitExceeded(f"LogPack holds {count} entries, limit {limits.max_entries}", base)
    # JRaft copies its index file: offsets are absolute positions in the sender's data file, so
    # entry i spans [off[i] - off[0], off[i+1] - off[0]) of the log data, the last one to its end.
    offsets = [o for (o,) in _U64.iter_unpack(raw[8 : 8 + index_len])]
    if count == 0:
        if log_len:
            raise InvalidPayload(f"LogPack has no index but {log_len} bytes of log data", base)
        return LogPack(())
    first = offsets[0]
    bounds = [o - first for o in offsets] + [log_len]
    log = memoryview(raw)[8 + index_len :]
    entries: list[LogEntry] = []
    for i in range(count):
        lo, hi = bounds[i], bounds[i + 1]
        if hi > log_len:  # an offset past the data (lo is the previous hi, so it was checked)
            raise InvalidPayload(
                f"LogPack entry {i} spans log bytes {lo}..{hi}, outside the {log_len} bytes of log data",
                base,
            )
        if hi - lo < _LOG_RECORD_HEAD.size:
            raise InvalidPayload(
                f"LogPack entry {i} spans {hi - lo} bytes, needs at least {_LOG_RECORD_HEAD.size}",
                base,
            )
        term, value_type = _LOG_RECORD_HEAD.unpack_from(log, lo)
        if term > MAX_LONG:
            raise InvalidField(f"LogPack entry {i} has term {term}, not from 0 to 2^63-1", base)
        if value_type not in (ValueType.APPLICATION, ValueType.CONFIGURATION):
            raise InvalidPayload(f"LogPack entry {i} has value type {value_type}", base)
        try:
            value = decode_value(log, value_type, lo + 9, hi, limits)
        except ProtocolError as e:
            raise type(e)(f"in LogPack entry {i}: {e.what}", base) from None
        entries.append(LogEntry(term, value))
    return LogPack(tuple(entries), first)


# ---------------------------------------------------------------------------------------------- encode


def encode(message: Message) -> bytes:
    """The wire bytes of one message."""
    # all in the plain ranges (the usual case), or the field by field check: markers, or an error
    # (a negative value passes both and struct refuses it)
    try:
        if isinstance(message, Response):
            if not (
                message.source <= MAX_ID
                and message.destination <= MAX_ID
                and message.term <= MAX_LONG
                and message.next_index <= MAX_LONG
            ):
                _check_encodable_range(message)
            return _RESPONSE.pack(
                message.TYPE,
                message.source,
                message.destination,
                message.term,
                message.next_index,
                1 if message.accepted else 0,
            )
        if not (
            message.source <= MAX_ID
            and message.destination <= MAX_ID
            and message.term <= MAX_LONG
            and message.last_log_term <= MAX_LONG
            and message.last_log_index <= MAX_LONG
            and message.commit_index <= MAX_LONG
        ):
            _check_encodable_range(message)
        _check_encodable_entries(message)
        body = b"".join(encode_entry(e) for e in message.entries)
        header = _HEADER.pack(
            message.TYPE,
            message.source,
            message.destination,
            message.term,
            message.last_log_term,
            message.last_log_index,
            message.commit_index,
            len(body),
        )
    except struct.error as e:
        raise EncodeError(f"{type(message).__name__}: a field is out of range ({e})") from None
    return header + body


def _check_encodable_range(message: Message) -> None:
    problem = _range_problem(_header_fields(message))
    if problem is not None:
        raise EncodeError(f"{type(message).__name__}: {problem[0]}")


def _check_encodable_entries(message: Request) -> None:
    try:
        _check_entry_rule(type(message), message.entries, 0)
    except ProtocolError as e:
        raise EncodeError(e.what) from None


def encode_entry(entry: LogEntry) -> bytes:
    value = encode_value(entry.value)
    return ENTRY_HEAD.pack(entry.term, entry.value_type, len(value)) + value


def encode_value(value: Payload) -> bytes:
    """The bytes of a log value (without the entry header)."""
    try:
        if isinstance(value, Application):
            return bytes(value.data)
        if isinstance(value, Configuration):
            return _encode_configuration(value)
        if isinstance(value, ClusterServer):
            if value.endpoint is None:
                return _U32.pack(value.id)
            return _encode_server(value)
        if isinstance(value, LogPack):
            return encode_log_pack(value.entries, value.base_offset)
        config = _encode_configuration(value.config)
        return b"".join(
            (
                _SNAPSHOT_HEAD.pack(value.last_log_index, value.last_log_term, len(config)),
                config,
                _SNAPSHOT_MID.pack(value.offset, len(value.data)),
                bytes(value.data),
                b"\x01" if value.done else b"\x00",
            )
        )
    except struct.error as e:
        raise EncodeError(f"{type(value).__name__}: a field is out of range ({e})") from None


def _encode_server(server: ClusterServer) -> bytes:
    if server.endpoint is None:
        raise EncodeError(f"server {server.id} in a configuration needs an endpoint")
    endpoint = server.endpoint.encode("utf-8")
    return _TWO_U32.pack(server.id, len(endpoint)) + endpoint


def _encode_configuration(config: Configuration) -> bytes:
    return _TWO_U64.pack(config.log_index, config.last_log_index) + b"".join(
        _encode_server(s) for s in config.servers
    )


def encode_log_pack(entries: Iterable[LogEntry], base_offset: int = 0) -> bytes:
    """gzip(indexLen, logLen, 8-byte offsets, records of term/type/value). The offsets are JRaft's:
    positions in the sender's data file, the first record at ``base_offset`` (docs/protocol.md)."""
    offsets: list[bytes] = []
    records: list[bytes] = []
    pos = base_offset
    for entry in entries:
        if entry.value_type not in (ValueType.APPLICATION, ValueType.CONFIGURATION):
            raise EncodeError(f"a LogPack may not hold a {entry.value_type.name} entry")
        record = _LOG_RECORD_HEAD.pack(entry.term, entry.value_type) + encode_value(entry.value)
        offsets.append(_U64.pack(pos))
        records.append(record)
        pos += len(record)
    index = b"".join(offsets)
    body = _TWO_U32.pack(len(index), pos - base_offset) + index + b"".join(records)
    return gzip.compress(body, compresslevel=6, mtime=0)
