"""A snapshot file cut at every length, and one whose data length field lies: each read refuses it as
corrupt, naming the file, with the words that say what is wrong (garlicfarm.storage.snapshots)."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest

from garlicfarm.storage.interface import CorruptLog, SnapshotMeta, StorageError
from garlicfarm.storage.snapshots import MAGIC, FileSnapshotStore
from garlicfarm.wire import ClusterServer, Configuration

META = SnapshotMeta(120, 7, Configuration(118, 40, (ClusterServer(1, "tcp://a:1"),)))
#: the smallest a file could be: magic, index, term, configuration length, data length, SHA-256
SMALLEST = len(MAGIC) + 20 + 8 + 32


def saved(tmp_path: Path, data: bytes) -> tuple[FileSnapshotStore, Path, bytes]:
    store = FileSnapshotStore(tmp_path / "snapshot")
    store.save(META, data)
    path = tmp_path / f"snapshot.{META.last_index}"
    return store, path, path.read_bytes()


def test_a_file_cut_at_any_length_is_refused_for_what_it_lacks(tmp_path: Path) -> None:
    store, path, raw = saved(tmp_path, b"state")
    for cut in range(len(MAGIC), len(raw)):
        path.write_bytes(raw[:cut])
        with pytest.raises(CorruptLog) as raised:
            store.load()
        message = str(raised.value)
        assert message.startswith(f"{path}: snapshot ")
        if cut < SMALLEST:
            assert f"is cut short ({cut} bytes)" in message, cut
        else:
            assert "fails its checksum" in message, cut


def test_the_smallest_checked_length_is_read_past_the_length_check(tmp_path: Path) -> None:
    store, path, raw = saved(tmp_path, b"state")
    path.write_bytes(raw[:SMALLEST])
    with pytest.raises(CorruptLog, match="fails its checksum"):
        store.load()
    path.write_bytes(raw[: SMALLEST - 1])
    with pytest.raises(CorruptLog, match=f"is cut short \\({SMALLEST - 1} bytes\\)"):
        store.load()


@pytest.mark.parametrize("claimed", [4, 6, 2**64 - 1])
def test_a_data_length_field_that_lies_is_refused(tmp_path: Path, claimed: int) -> None:
    store, path, raw = saved(tmp_path, b"state")
    body = raw[:-32]
    at = len(body) - len(b"state") - 8
    assert struct.unpack_from(">Q", body, at)[0] == 5
    forged = body[:at] + struct.pack(">Q", claimed) + body[at + 8 :]
    path.write_bytes(forged + hashlib.sha256(forged).digest())  # a checksum that matches
    with pytest.raises(CorruptLog) as raised:
        store.load()
    assert str(raised.value).startswith(f"{path}: snapshot holds 5 bytes of data, not {claimed}")


def test_a_configuration_that_does_not_decode_is_named(tmp_path: Path) -> None:
    store, path, raw = saved(tmp_path, b"state")
    body = bytearray(raw[:-32])
    body[len(MAGIC) + 16 : len(MAGIC) + 20] = struct.pack(">I", 3)  # a 3-byte configuration
    forged = bytes(body)
    path.write_bytes(forged + hashlib.sha256(forged).digest())
    with pytest.raises(CorruptLog) as raised:
        store.load()
    assert str(raised.value).startswith(f"{path}: snapshot has a configuration that does not decode (")


def test_what_a_save_cut_off_before_its_rename_leaves_is_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, path, _ = saved(tmp_path, b"state")

    def power_cut(*_args: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", power_cut)
    with pytest.raises(StorageError):
        store.save(SnapshotMeta(130, 7, META.config), b"newer")
    monkeypatch.undo()
    assert len(list(tmp_path.iterdir())) == 2  # the half-done file is left behind ...
    store.prune(META)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # ... and found and removed
