"""Snapshots on disk, beside the log: one file, replaced atomically (temp file, fsync, rename, fsync dir).

Layout: magic ``GFSNAP1\\n``, then last index (8), last term (8), configuration length (4), the
Configuration value as on the wire, data length (8), data, and a SHA-256 of everything before it.
A torn or foreign file is refused with a clear :class:`StorageError`; a crash mid-write leaves the
previous snapshot in place.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path
from typing import Protocol

from garlicfarm.storage.interface import SnapshotMeta, StorageError
from garlicfarm.wire.codec import decode_value, encode_value
from garlicfarm.wire.errors import ProtocolError
from garlicfarm.wire.payloads import Configuration
from garlicfarm.wire.types import ValueType

MAGIC = b"GFSNAP1\n"
_HEAD = struct.Struct(">QQI")


class SnapshotStore(Protocol):
    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        """Durably replace the stored snapshot (atomic: the old one or the new one survives a crash)."""

    def load(self) -> tuple[SnapshotMeta, bytes] | None: ...


class MemorySnapshotStore:
    def __init__(self) -> None:
        self.current: tuple[SnapshotMeta, bytes] | None = None

    def save(self, meta: SnapshotMeta, data: bytes) -> None:
        self.current = (meta, bytes(data))

    def load(self) -> tuple[SnapshotMeta, bytes] | None:
        return self.current


class FileSnapshotStore:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

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
        temp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(temp, "wb") as f:
                f.write(body + hashlib.sha256(body).digest())
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as e:
            raise StorageError(f"cannot write snapshot {self.path}: {e.strerror}") from e

    def load(self) -> tuple[SnapshotMeta, bytes] | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StorageError(f"cannot read snapshot {self.path}: {e.strerror}") from e
        if not raw.startswith(MAGIC):
            raise StorageError(f"{self.path} is not a garlicfarm snapshot")
        body, digest = raw[:-32], raw[-32:]
        if len(raw) < len(MAGIC) + _HEAD.size + 8 + 32 or hashlib.sha256(body).digest() != digest:
            raise StorageError(f"snapshot {self.path} is corrupt (checksum mismatch)")
        last_index, last_term, config_len = _HEAD.unpack_from(body, len(MAGIC))
        pos = len(MAGIC) + _HEAD.size
        try:
            config = decode_value(body, ValueType.CONFIGURATION, pos, pos + config_len)
        except ProtocolError as e:
            raise StorageError(f"snapshot {self.path} is corrupt: {e}") from None
        assert isinstance(config, Configuration)
        pos += config_len
        (length,) = struct.unpack_from(">Q", body, pos)
        data = body[pos + 8 :]
        if len(data) != length:
            raise StorageError(f"snapshot {self.path} is corrupt (data length)")
        return SnapshotMeta(last_index, last_term, config), data
