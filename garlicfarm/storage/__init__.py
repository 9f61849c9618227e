"""Durable Raft state: the log-store seam and its SQLite and in-memory implementations."""

from garlicfarm.storage.interface import HardState, LogStore, SnapshotMeta, StorageError, StoredState

__all__ = ["HardState", "LogStore", "SnapshotMeta", "StorageError", "StoredState"]
