"""Snapshots on disk, beside the log: a file per snapshot, each written whole (temp file, fsync, rename,
fsync dir).

Crash safety: taking or installing a snapshot is two durable writes, the snapshot file and the log
store's compaction. The new file is written first under its own name (``<path>.<index>``) and the
previous one is kept until the log store has committed its compaction (``prune``). At start the log
store's snapshot meta names the file to load (``load(meta)``); files it does not name are left over
from a crash between the two writes and are pruned. A crash at any step leaves a node that starts.

Layout: magic ``GFSNAP1\\n``, then last index (8), last term (8), configuration length (4), the
Configuration value as on the wire, data length (8), data, and a SHA-256 of everything before it.
A foreign file is refused with a clear :class:`StorageError`, a torn or corrupt one (the SHA-256 does not
match, checked on every load) with :class:`CorruptLog`, whose one line names the file and the way to
recover; a crash mid-write leaves the previous snapshot in place.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Protocol

from garlicfarm.storage.interface import CorruptLog, SnapshotMeta, StorageError
from garlicfarm.wire.codec import decode_value, encode_value
from garlicfarm.wire.errors import ProtocolError
from garlicfarm.wire.payloads import Configuration
from garlicfarm.wire.types import ValueType

MAGIC = b"GFSNAP1\n"
_HEAD = struct.Struct(">QQI")


class SnapshotStore(Protocol):
    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        """Durably store a snapshot beside the ones held (a crash leaves each whole or absent)."""

    def load(self, meta: SnapshotMeta | None = None) -> tuple[SnapshotMeta, bytes] | None:
        """The snapshot ``meta`` names (None if it is not held), or without ``meta`` the newest."""

    def prune(self, keep: SnapshotMeta | None) -> None:
        """Remove every snapshot but ``keep``'s (once the log store no longer needs them)."""


class MemorySnapshotStore:
    def __init__(self) -> None:
        self.held: dict[SnapshotMeta, bytes] = {}

    @property
    def current(self) -> tuple[SnapshotMeta, bytes] | None:
        return self.load()

    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        self.held[meta] = bytes(data)

    def load(self, meta: SnapshotMeta | None = None) -> tuple[SnapshotMeta, bytes] | None:
        if meta is None:
            if not self.held:
                return None
            meta = max(self.held, key=lambda m: m.last_index)
        data = self.held.get(meta)
        return None if data is None else (meta, data)

    def prune(self, keep: SnapshotMeta | None) -> None:
        self.held = {m: d for m, d in self.held.items() if m == keep}


class FileSnapshotStore:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        #: the files are ``<path>.<index>`` (and ``<path>`` itself, as versions before 0.2 wrote it)
        self.path = Path(path)

    def _file(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{index}")

    def _held(self) -> list[Path]:
        """Snapshot files, newest index first (the legacy unnumbered file last)."""
        numbered = []
        for candidate in self.path.parent.glob(f"{self.path.name}.*"):
            suffix = candidate.name[len(self.path.name) + 1 :]
            if suffix.isdigit():
                numbered.append((int(suffix), candidate))
        files = [p for _, p in sorted(numbered, reverse=True)]
        return [*files, self.path] if self.path.exists() else files

    def load(self, meta: SnapshotMeta | None = None) -> tuple[SnapshotMeta, bytes] | None:
        for candidate in self._held():
            if meta is not None and candidate not in (self._file(meta.last_index), self.path):
                continue
            held = self._read(candidate)
            if meta is None or held[0] == meta:
                return held
        return None

    def prune(self, keep: SnapshotMeta | None) -> None:
        for candidate in self._held():
            if keep is not None and candidate == self._file(keep.last_index):
                continue
            if keep is not None and candidate == self.path and self._read(candidate)[0] == keep:
                continue
            try:
                candidate.unlink()
            except OSError as e:
                raise StorageError(f"cannot remove old snapshot {candidate}: {e.strerror}") from e
        for temp in self.path.parent.glob(f"{self.path.name}*.tmp"):
            temp.unlink(missing_ok=True)

    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        config = encode_value(meta.config)
        body = b"".join(
            (
                MAGIC,
                _HEAD.pack(meta.last_index, meta.last_term, len(config)),
                config,
                struct.pack(">Q", len(data)),
                data,
            )
        )
        target = self._file(meta.last_index)
        temp = target.with_name(target.name + ".tmp")
        try:
            with open(temp, "wb") as f:
                f.write(body + hashlib.sha256(body).digest())
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, target)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as e:
            raise StorageError(f"cannot write snapshot {target}: {e.strerror}") from e

    def _read(self, path: Path) -> tuple[SnapshotMeta, bytes]:
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise StorageError(f"cannot read snapshot {path}: {e.strerror}") from e
        if not raw.startswith(MAGIC):
            raise StorageError(f"{path} is not a garlicfarm snapshot")
        body, digest = raw[:-32], raw[-32:]
        if len(raw) < len(MAGIC) + _HEAD.size + 8 + 32:
            raise CorruptLog(str(path), "snapshot", f"is cut short ({len(raw)} bytes)")
        computed = hashlib.sha256(body).digest()
        if computed != digest:
            raise CorruptLog(
                str(path),
                "snapshot",
                f"fails its checksum (stored SHA-256 {digest.hex()[:16]}…, computed {computed.hex()[:16]}…)",
            )
        last_index, last_term, config_len = _HEAD.unpack_from(body, len(MAGIC))
        pos = len(MAGIC) + _HEAD.size
        try:
            config = decode_value(body, ValueType.CONFIGURATION, pos, pos + config_len)
        except ProtocolError as e:
            problem = f"has a configuration that does not decode ({e})"
            raise CorruptLog(str(path), "snapshot", problem) from None
        assert isinstance(config, Configuration)
        pos += config_len
        (length,) = struct.unpack_from(">Q", body, pos)
        data = body[pos + 8 :]
        if len(data) != length:
            raise CorruptLog(str(path), "snapshot", f"holds {len(data)} bytes of data, not {length}")
        return SnapshotMeta(last_index, last_term, config), data


def recover(expected: SnapshotMeta | None, snapshots: SnapshotStore) -> bytes:
    """At start: the snapshot data the log store's ``expected`` meta names (b"" if none), after
    removing files it does not name (left by a crash between a snapshot's two durable writes)."""
    data = b""
    if expected is not None:
        held = snapshots.load(expected)
        if held is None:
            raise StorageError(
                f"the log store is compacted to index {expected.last_index} but that snapshot's file "
                "is missing: restore the data directory from a backup"
            )
        data = held[1]
    snapshots.prune(expected)
    return data
