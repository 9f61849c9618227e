"""The snapshot file: atomic replacement, and clear refusals of anything that is not ours or is torn."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from garlicfarm.storage.interface import SnapshotMeta, StorageError
from garlicfarm.storage.snapshots import FileSnapshotStore, MemorySnapshotStore, recover
from garlicfarm.wire import ClusterServer, Configuration

META = SnapshotMeta(
    120, 7, Configuration(118, 40, (ClusterServer(1, "tcp://a:1"), ClusterServer(2, "tcp://b:2")))
)


def test_round_trip_and_replace(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot")
    assert store.load() is None
    store.save(META, b"state one")
    assert store.load() == (META, b"state one")
    newer = SnapshotMeta(200, 8, META.config)
    store.save(newer, b"")
    assert FileSnapshotStore(tmp_path / "snapshot").load() == (newer, b"")
    assert FileSnapshotStore(tmp_path / "snapshot").load(META) == (META, b"state one")
    store.prune(newer)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot.200"]
    assert store.load(META) is None


def test_a_crash_mid_write_leaves_the_old_snapshot(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(META, b"good")
    (tmp_path / "snapshot.200.tmp").write_bytes(b"GFSNAP1\n half written")  # a kill mid-save leaves
    assert store.load() == (META, b"good")
    store.prune(META)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot.120"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"SQLite format 3\x00", "is not a garlicfarm snapshot"),
        (b"GFSNAP1\n" + b"\x00" * 10, "is corrupt"),
    ],
)
def test_foreign_and_corrupt_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "snapshot"
    path.write_bytes(content)
    with pytest.raises(StorageError, match=message):
        FileSnapshotStore(path).load()


def test_a_flipped_bit_is_caught_and_both_digests_shown(tmp_path: Path) -> None:
    FileSnapshotStore(tmp_path / "snapshot").save(META, b"some application state")
    path = tmp_path / "snapshot.120"
    raw = bytearray(path.read_bytes())
    raw[40] ^= 0x01
    path.write_bytes(bytes(raw))
    stored, computed = bytes(raw[-32:]).hex()[:16], hashlib.sha256(raw[:-32]).hexdigest()[:16]
    with pytest.raises(StorageError) as raised:
        FileSnapshotStore(tmp_path / "snapshot").load()
    assert f"fails its checksum (stored SHA-256 {stored}…, computed {computed}…)" in str(raised.value)


def test_unwritable_directory_is_a_storage_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        missing = tmp_path / "no" / "such" / "dir" / "snapshot"
        with pytest.raises(StorageError, match="cannot write snapshot"):
            FileSnapshotStore(missing).save(META, b"x")
    else:
        tmp_path.chmod(0o500)
        with pytest.raises(StorageError, match="cannot write snapshot"):
            FileSnapshotStore(tmp_path / "snapshot").save(META, b"x")


def test_memory_store() -> None:
    store = MemorySnapshotStore()
    assert store.load() is None
    store.save(META, b"x")
    assert store.load() == (META, b"x")


def test_the_legacy_unnumbered_file_is_still_read(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(META, b"old layout")
    (tmp_path / "snapshot.120").rename(tmp_path / "snapshot")
    assert store.load(META) == (META, b"old layout")
    store.prune(META)
    assert store.load(META) == (META, b"old layout")


def test_every_crash_point_of_taking_a_snapshot_recovers(tmp_path: Path) -> None:
    """Regression: a crash between writing the snapshot file and compacting the log left a node that
    refused to start ("the log store expects a snapshot that is missing or different")."""
    newer = SnapshotMeta(200, 8, META.config)
    # 1. crashed after the new file, before the log store's compaction: the store still names META
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(META, b"old")
    store.save(newer, b"new")
    assert recover(META, store) == b"old"
    assert store.load() == (META, b"old")  # the orphan is gone
    # 2. crashed after the compaction, before pruning the old file: the store names ``newer``
    store.save(newer, b"new")
    assert recover(newer, store) == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.200"]
    # 3. crashed mid-write of a file: a temp file is left, and ignored
    (tmp_path / "snapshot.300.tmp").write_bytes(b"GFSNAP1\n torn")
    assert recover(newer, store) == b"new"
    # 4. never snapshotted, but a first file was written before the crash
    fresh = FileSnapshotStore(tmp_path / "other")
    fresh.save(META, b"x")
    assert recover(None, fresh) == b"" and fresh.load() is None


def test_a_missing_snapshot_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="compacted to index 120 but that snapshot's file is missing"):
        recover(META, FileSnapshotStore(tmp_path / "snapshot"))


def _at(index: int) -> SnapshotMeta:
    return SnapshotMeta(index, 7, META.config)


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_pruning_keeps_only_the_one_named_newer_and_older_go(tmp_path: Path, kind: str) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot") if kind == "file" else MemorySnapshotStore()
    for index in (20, 30, 10):  # neither the first saved nor the last is the newest
        store.save(_at(index), b"state %d" % index)
    assert store.load() == (_at(30), b"state 30")
    store.prune(_at(20))
    assert [store.load(_at(i)) for i in (10, 20, 30)] == [None, (_at(20), b"state 20"), None]
    assert store.load() == (_at(20), b"state 20")


def test_a_damaged_old_snapshot_is_pruned_without_being_read(tmp_path: Path) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(_at(10), b"old")
    store.save(_at(20), b"new")
    (tmp_path / "snapshot.10").write_bytes(b"GFSNAP1\n torn")
    store.prune(_at(20))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot.20"]


def test_a_snapshot_that_cannot_be_removed_or_read_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(_at(10), b"old")
    (tmp_path / "snapshot.30").mkdir()  # something unreadable where a snapshot should be
    with pytest.raises(StorageError) as raised:
        store.load()
    assert str(raised.value) == f"cannot read snapshot {tmp_path / 'snapshot.30'}: Is a directory"
    with pytest.raises(StorageError) as raised:
        store.prune(_at(10))
    assert str(raised.value) == f"cannot remove old snapshot {tmp_path / 'snapshot.30'}: Is a directory"
