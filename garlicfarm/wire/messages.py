"""The 17 message types: frozen attrs models shared by the codec, the Raft core and the tools."""

from __future__ import annotations

from typing import ClassVar

import attrs

from garlicfarm.wire.payloads import LogEntry
from garlicfarm.wire.types import MessageType, ValueType


@attrs.frozen
class Request:
    """A request: the 45-byte header plus zero or more log entries."""

    TYPE: ClassVar[MessageType]
    #: (allowed value types, minimum entries, maximum entries or None for no maximum)
    ENTRY_RULE: ClassVar[tuple[frozenset[ValueType], int, int | None]]
    source: int = 0
    destination: int = 0
    term: int = 0
    last_log_term: int = 0
    last_log_index: int = 0
    commit_index: int = 0
    entries: tuple[LogEntry, ...] = ()


@attrs.frozen
class Response:
    """A response: always exactly 26 bytes."""

    TYPE: ClassVar[MessageType]
    source: int = 0
    destination: int = 0
    term: int = 0
    next_index: int = 0
    accepted: bool = False


_NONE: tuple[frozenset[ValueType], int, int | None] = (frozenset(), 0, 0)
_LOG: frozenset[ValueType] = frozenset({ValueType.APPLICATION, ValueType.CONFIGURATION})


@attrs.frozen
class RequestVoteRequest(Request):
    """A candidate (or pre-candidate) asks for a vote; carries no entries."""

    TYPE = MessageType.REQUEST_VOTE_REQUEST
    ENTRY_RULE = _NONE


@attrs.frozen
class RequestVoteResponse(Response):
    """``accepted`` is the vote."""

    TYPE = MessageType.REQUEST_VOTE_RESPONSE


@attrs.frozen
class AppendEntriesRequest(Request):
    """Replication from the leader; no entries is a heartbeat."""

    TYPE = MessageType.APPEND_ENTRIES_REQUEST
    ENTRY_RULE = (_LOG, 0, None)


@attrs.frozen
class AppendEntriesResponse(Response):
    """Also the answer to ClientRequest; ``destination`` is then the leader."""

    TYPE = MessageType.APPEND_ENTRIES_RESPONSE


@attrs.frozen
class ClientRequest(Request):
    """Application entries from a client; answered by AppendEntriesResponse."""

    TYPE = MessageType.CLIENT_REQUEST
    ENTRY_RULE = (frozenset({ValueType.APPLICATION}), 0, None)


@attrs.frozen
class AddServerRequest(Request):
    """One ClusterServer entry (id and endpoint)."""

    TYPE = MessageType.ADD_SERVER_REQUEST
    ENTRY_RULE = (frozenset({ValueType.CLUSTER_SERVER}), 1, 1)


@attrs.frozen
class AddServerResponse(Response):
    """``destination`` is the leader."""

    TYPE = MessageType.ADD_SERVER_RESPONSE


@attrs.frozen
class RemoveServerRequest(Request):
    """One id-only ClusterServer entry."""

    TYPE = MessageType.REMOVE_SERVER_REQUEST
    ENTRY_RULE = (frozenset({ValueType.CLUSTER_SERVER}), 1, 1)


@attrs.frozen
class RemoveServerResponse(Response):
    """``destination`` is the leader."""

    TYPE = MessageType.REMOVE_SERVER_RESPONSE


@attrs.frozen
class SyncLogRequest(Request):
    """One LogPack entry for a joining server."""

    TYPE = MessageType.SYNC_LOG_REQUEST
    ENTRY_RULE = (frozenset({ValueType.LOG_PACK}), 1, 1)


@attrs.frozen
class SyncLogResponse(Response):
    TYPE = MessageType.SYNC_LOG_RESPONSE


@attrs.frozen
class JoinClusterRequest(Request):
    """One Configuration entry: the leader invites a new server."""

    TYPE = MessageType.JOIN_CLUSTER_REQUEST
    ENTRY_RULE = (frozenset({ValueType.CONFIGURATION}), 1, 1)


@attrs.frozen
class JoinClusterResponse(Response):
    TYPE = MessageType.JOIN_CLUSTER_RESPONSE


@attrs.frozen
class LeaveClusterRequest(Request):
    """The leader tells a removed server to leave; no entries."""

    TYPE = MessageType.LEAVE_CLUSTER_REQUEST
    ENTRY_RULE = _NONE


@attrs.frozen
class LeaveClusterResponse(Response):
    TYPE = MessageType.LEAVE_CLUSTER_RESPONSE


@attrs.frozen
class InstallSnapshotRequest(Request):
    """One SnapshotSyncRequest entry (a chunk of a snapshot)."""

    TYPE = MessageType.INSTALL_SNAPSHOT_REQUEST
    ENTRY_RULE = (frozenset({ValueType.SNAPSHOT_SYNC_REQUEST}), 1, 1)


@attrs.frozen
class InstallSnapshotResponse(Response):
    """``next_index`` is the next byte offset the follower wants."""

    TYPE = MessageType.INSTALL_SNAPSHOT_RESPONSE


Message = Request | Response

MESSAGE_CLASSES: dict[int, type[Request] | type[Response]] = {
    MessageType.REQUEST_VOTE_REQUEST: RequestVoteRequest,
    MessageType.REQUEST_VOTE_RESPONSE: RequestVoteResponse,
    MessageType.APPEND_ENTRIES_REQUEST: AppendEntriesRequest,
    MessageType.APPEND_ENTRIES_RESPONSE: AppendEntriesResponse,
    MessageType.CLIENT_REQUEST: ClientRequest,
    MessageType.ADD_SERVER_REQUEST: AddServerRequest,
    MessageType.ADD_SERVER_RESPONSE: AddServerResponse,
    MessageType.REMOVE_SERVER_REQUEST: RemoveServerRequest,
    MessageType.REMOVE_SERVER_RESPONSE: RemoveServerResponse,
    MessageType.SYNC_LOG_REQUEST: SyncLogRequest,
    MessageType.SYNC_LOG_RESPONSE: SyncLogResponse,
    MessageType.JOIN_CLUSTER_REQUEST: JoinClusterRequest,
    MessageType.JOIN_CLUSTER_RESPONSE: JoinClusterResponse,
    MessageType.LEAVE_CLUSTER_REQUEST: LeaveClusterRequest,
    MessageType.LEAVE_CLUSTER_RESPONSE: LeaveClusterResponse,
    MessageType.INSTALL_SNAPSHOT_REQUEST: InstallSnapshotRequest,
    MessageType.INSTALL_SNAPSHOT_RESPONSE: InstallSnapshotResponse,
}
