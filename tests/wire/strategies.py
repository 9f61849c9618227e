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

u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**64 - 1)
small = st.integers(0, 1000)
endpoints = st.text(max_size=40)

applications = st.builds(Application, st.binary(max_size=64))
servers = st.builds(ClusterServer, u32, endpoints)
id_only_servers = st.builds(ClusterServer, u32, st.none())
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
        return st.builds(cls, u32, u32, u64, u64, u64, u64, _entries_for(cls))
    return st.builds(cls, u32, u32, u64, u64, st.booleans())


messages: st.SearchStrategy[Message] = st.one_of(*(_message_for(c) for c in MESSAGE_CLASSES.values()))
