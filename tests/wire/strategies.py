"""Hypothesis strategies for every message and value type."""

from __future__ import annotations

from hypothesis import strategies as st

from garlicfarm.wire import (
    MESSAGE_CLASSES,
    Application,
    ClusterServer,
    Configuration,
    LogEntry,
    LogPack,
    Message,
    Request,
    Response,
    SnapshotSyncRequest,
    ValueType,
)

# What the wire carries (JRaft's signed ints and longs): ids 1..2^31-1 (0 for clients, -1 = no
# leader), terms/indexes/offsets 0..2^63-1, and -1..-3 only as commitIndex/nextIndex markers.
header_ids = st.one_of(st.integers(0, 2**31 - 1), st.just(0xFFFFFFFF))
server_ids = st.integers(1, 2**31 - 1)
u64 = st.integers(0, 2**63 - 1)  # a Java long's non-negative range
long_or_marker = st.one_of(u64, st.sampled_from([2**64 - 1, 2**64 - 2, 2**64 - 3]))
small = st.integers(0, 1000)
endpoints = st.text(max_size=40)

applications = st.builds(Application, st.binary(max_size=64))
servers = st.builds(ClusterServer, server_ids, endpoints)
id_only_servers = st.builds(ClusterServer, server_ids, st.none())
configurations = st.builds(Configuration, u64, u64, st.lists(servers, max_size=4).map(tuple))
log_values = st.one_of(applications, configurations)
log_entries = st.builds(LogEntry, u64, log_values)
log_packs = st.builds(LogPack, st.lists(log_entries, max_size=5).map(tuple))
snapshots = st.builds(
    SnapshotSyncRequest, u64, u64, configurations, u64, st.binary(max_size=64), st.booleans()
)

_PAYLOADS = {
    ValueType.APPLICATION: applications,
    ValueType.CONFIGURATION: configurations,
    ValueType.CLUSTER_SERVER: st.one_of(servers, id_only_servers),
    ValueType.LOG_PACK: log_packs,
    ValueType.SNAPSHOT_SYNC_REQUEST: snapshots,
}


def _entries_for(cls: type[Request]) -> st.SearchStrategy[tuple[LogEntry, ...]]:
    allowed, least, most = cls.ENTRY_RULE
    if most == 0:
        return st.just(())
    values = st.one_of(*(_PAYLOADS[v] for v in sorted(allowed)))
    if cls.__name__ == "AddServerRequest":
        values = servers
    entry = st.builds(LogEntry, u64, values)
    return st.lists(entry, min_size=least, max_size=most if most is not None else 4).map(tuple)


def _message_for(cls: type[Request] | type[Response]) -> st.SearchStrategy[Message]:
    if issubclass(cls, Request):
        return st.builds(cls, header_ids, header_ids, u64, u64, u64, long_or_marker, _entries_for(cls))
    return st.builds(cls, header_ids, header_ids, u64, long_or_marker, st.booleans())


messages: st.SearchStrategy[Message] = st.one_of(*(_message_for(c) for c in MESSAGE_CLASSES.values()))
