"""Message and log value type numbers, as proposal 150 and JRaft define them."""

from __future__ import annotations

import enum

#: A response destination of 0xFFFFFFFF (JRaft's -1) means "no leader known".
NO_LEADER = 0xFFFFFFFF

REQUEST_HEADER_SIZE = 45
RESPONSE_SIZE = 26
ENTRY_HEADER_SIZE = 13  # term(8) valueType(1) size(4)

MAX_U32 = 0xFFFFFFFF
MAX_U64 = 0xFFFFFFFFFFFFFFFF


class MessageType(enum.IntEnum):
    REQUEST_VOTE_REQUEST = 1
    REQUEST_VOTE_RESPONSE = 2
    APPEND_ENTRIES_REQUEST = 3
    APPEND_ENTRIES_RESPONSE = 4
    CLIENT_REQUEST = 5
    ADD_SERVER_REQUEST = 6
    ADD_SERVER_RESPONSE = 7
    REMOVE_SERVER_REQUEST = 8
    REMOVE_SERVER_RESPONSE = 9
    SYNC_LOG_REQUEST = 10
    SYNC_LOG_RESPONSE = 11
    JOIN_CLUSTER_REQUEST = 12
    JOIN_CLUSTER_RESPONSE = 13
    LEAVE_CLUSTER_REQUEST = 14
    LEAVE_CLUSTER_RESPONSE = 15
    INSTALL_SNAPSHOT_REQUEST = 16
    INSTALL_SNAPSHOT_RESPONSE = 17


REQUEST_TYPES = frozenset({1, 3, 5, 6, 8, 10, 12, 14, 16})
RESPONSE_TYPES = frozenset({2, 4, 7, 9, 11, 13, 15, 17})


class ValueType(enum.IntEnum):
    APPLICATION = 1
    CONFIGURATION = 2
    CLUSTER_SERVER = 3
    LOG_PACK = 4
    SNAPSHOT_SYNC_REQUEST = 5
