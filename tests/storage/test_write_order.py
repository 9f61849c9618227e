"""The orders durability rests on, checked call by call (a power loss between two of them is what a
swap would break, and a test run rarely lands a loss in that window): a new file's data is fsynced
before it is renamed into place, and the directory is fsynced after the rename."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.storage import snapshots, sqlite
from garlicfarm.storage.interface import HardState, SnapshotMeta
from garlicfarm.storage.snapshots import FileSnapshotStore
from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire.payloads import ClusterServer, Configuration

CONFIG = Configuration(0, 0, (ClusterServer(1, "tcp://127.0.0.1:1"),))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """("fsync", what the descriptor names) and ("replace", source -> target), in order."""
    seen: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        seen.append(("replace", f"{src} -> {dst}"))
        real_replace(src, dst)

    for module in (sqlite, snapshots):
        monkeypatch.setattr(module.os, "fsync", fsync)
        monkeypatch.setattr(module.os, "replace", replace)
    yield seen


def _order(calls: list[tuple[str, str]], renamed: Path) -> tuple[int, int, int]:
    """Where the renamed file's data was fsynced, where it was renamed, where its directory was."""
    rename = next(
        i for i, (kind, what) in enumerate(calls) if kind == "replace" and what.endswith(f"-> {renamed}")
    )
    source = calls[rename][1].split(" -> ")[0]
    data = max(i for i, (kind, what) in enumerate(calls[:rename]) if kind == "fsync" and what == source)
    directory = next(
        i
        for i, (kind, what) in enumerate(calls)
        if i > rename and kind == "fsync" and what == str(renamed.parent)
    )
    return data, rename, directory


def test_a_new_store_is_synced_then_renamed_then_its_directory_synced(
    tmp_path: Path, calls: list[tuple[str, str]]
) -> None:
    path = tmp_path / "log.db"
    with SQLiteLogStore(path) as store:
        store.save(HardState(1), 1, [])
    data, rename, directory = _order(calls, path)
    assert data < rename < directory


def test_a_snapshot_file_is_synced_then_renamed_then_its_directory_synced(
    tmp_path: Path, calls: list[tuple[str, str]]
) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(SnapshotMeta(7, 1, CONFIG), b"state")
    data, rename, directory = _order(calls, tmp_path / "snapshot.7")
    assert data < rename < directory
