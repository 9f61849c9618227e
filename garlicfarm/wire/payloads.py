"""Log entries and the five kinds of value they carry (proposal 150, "Log Contents")."""

from __future__ import annotations

import functools
from typing import ClassVar

import attrs

from garlicfarm.wire.types import ValueType


@attrs.frozen
class Application:
    """Application data: UTF-8 JSON by convention, but carried (and round-tripped) as raw bytes."""

    VALUE_TYPE: ClassVar[ValueType] = ValueType.APPLICATION
    data: bytes


@attrs.frozen
class ClusterServer:
    """A server's id and endpoint; ``endpoint is None`` is the id-only form of RemoveServerRequest."""

    VALUE_TYPE: ClassVar[ValueType] = ValueType.CLUSTER_SERVER
    id: int
    endpoint: str | None = None


@attrs.frozen
class Configuration:
    """A cluster configuration. ``last_log_index`` is the index of the previous configuration."""

    VALUE_TYPE: ClassVar[ValueType] = ValueType.CONFIGURATION
    log_index: int
    last_log_index: int
    servers: tuple[ClusterServer, ...] = ()

    def ids(self) -> frozenset[int]:
        return self._ids

    @functools.cached_property
    def _ids(self) -> frozenset[int]:  # the leader asks for every commit decision: compute once
        return frozenset(s.id for s in self.servers)

    def endpoint_of(self, server_id: int) -> str | None:
        for s in self.servers:
            if s.id == server_id:
                return s.endpoint
        return None


@attrs.frozen
class LogPack:
    """A run of log entries shipped gzip-compressed in a SyncLogRequest (JRaft's offset layout).

    JRaft's index holds absolute positions in the sender's data file (position 0 is the first entry
    after its last compaction) and a JRaft receiver copies them unchanged into its own index file, so
    ``base_offset`` is where the first record lies in that file: the sum of the record sizes
    (9 + value bytes, see docs/protocol.md) of the sender's entries before it, from its log start.
    """

    VALUE_TYPE: ClassVar[ValueType] = ValueType.LOG_PACK
    entries: tuple[LogEntry, ...] = ()
    #: where the records sit in the sender's file, not what they are: left out of equality
    base_offset: int = attrs.field(default=0, eq=False)


@attrs.frozen
class SnapshotSyncRequest:
    """One chunk of a snapshot: ``data`` goes at byte ``offset``; ``done`` marks the last chunk."""

    VALUE_TYPE: ClassVar[ValueType] = ValueType.SNAPSHOT_SYNC_REQUEST
    last_log_index: int
    last_log_term: int
    config: Configuration
    offset: int
    data: bytes
    done: bool


Payload = Application | Configuration | ClusterServer | LogPack | SnapshotSyncRequest


@attrs.frozen
class LogEntry:
    term: int
    value: Payload

    @property
    def value_type(self) -> ValueType:
        return self.value.VALUE_TYPE
