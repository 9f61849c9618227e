"""Durable Raft state: the log-store seam and its SQLite and in-memory implementations."""

from garlicfarm.storage.datadir import prepare_data_dir
from garlicfarm.storage.interface import (
    CorruptLog,
    DataDirNotWritable,
    HardState,
    LogStore,
    SnapshotMeta,
    StorageError,
    StoredState,
)
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.sqlite import SQLiteLogStore

__all__ = [
    "CorruptLog",
    "DataDirNotWritable",
    "HardState",
    "LogStore",
    "MemoryLogStore",
    "SQLiteLogStore",
    "SnapshotMeta",
    "StorageError",
    "StoredState",
    "prepare_data_dir",
]
