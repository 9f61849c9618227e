"""Fixtures: every contract test runs against each log store, and can "restart" the node."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from garlicfarm.storage.interface import LogStore
from garlicfarm.storage.memory import MemoryLogStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire.payloads import Application, ClusterServer, Configuration, LogEntry


def fast_dir() -> str | None:
    """tmpfs where there is one: logic tests need no real fsync (the crash test uses the real disk)."""
    return "/dev/shm" if Path("/dev/shm").is_dir() else None


def app(term: int, data: str) -> LogEntry:
    return LogEntry(term, Application(data.encode()))


def config(log_index: int = 0, *ids: int) -> Configuration:
    return Configuration(log_index, 0, tuple(ClusterServer(i, f"host{i}:7{i:03}") for i in ids))


class Harness:
    """A store plus what a restart means for it: the memory store survives as is, SQLite reopens."""

    def __init__(self, kind: str, directory: Path) -> None:
        self.kind = kind
        self.path = directory / "log.db"
        self.store: LogStore = MemoryLogStore() if kind == "memory" else SQLiteLogStore(self.path)

    def before_and_after_restart(self) -> Iterator[LogStore]:
        yield self.store
        yield self.restart()

    def restart(self) -> LogStore:
        if isinstance(self.store, SQLiteLogStore):
            self.store.close()
            self.store = SQLiteLogStore(self.path)
        return self.store


@pytest.fixture(params=["memory", "sqlite"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with tempfile.TemporaryDirectory(dir=fast_dir()) as d:
        h = Harness(request.param, Path(d))
        yield h
        h.store.close()


@pytest.fixture
def store(harness: Harness) -> LogStore:
    return harness.store
