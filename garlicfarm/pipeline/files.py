"""The archive's files, listed and classified on the driver before Spark reads a line.

Spark is handed exactly the archive files (``date=YYYY-MM-DD/node-<id>.jsonl``, as
:mod:`garlicfarm.app.archive` writes them, or ``.jsonl.gz`` when compressed afterwards), one by one,
so nothing else in the directory can fail the job or slip into it. Everything else is reported:

* ``foreign``: a file or directory that is not part of the archive (``node-1.jsonl.bak``, a ``tmp/``
  directory inside a partition, ``notes.txt`` at the top); skipped, listed in rejects;
* ``file``: an archive file that cannot be read (a dangling link, no permission) or whose gzip stream
  is corrupt (:mod:`.gzcheck`); *quarantined*: none of its lines are used, and the rejects say how far
  it could be read. The job goes on with the others and exits with status 3.

A UTF-8 byte order mark at the start of a file is noted (Hadoop's line reader drops it, so its first
line reads as it should). Listing costs one directory read per partition (local: ``os.scandir``;
elsewhere: Hadoop's FileSystem through the driver's JVM) and, for a local plain file, a 3-byte read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import attrs

ARCHIVE_NAME = re.compile(r"^node-[1-9][0-9]*\.jsonl(\.gz)?$")
PARTITION_NAME = re.compile(r"^date=[0-9]{4}-[0-9]{2}-[0-9]{2}$")
#: the archive's own bookkeeping (``archive._MARK``): the last log index it holds
MARK = ".last-index"
BOM = b"\xef\xbb\xbf"

#: file-level reject kinds
FOREIGN, QUARANTINED = "foreign", "file"


@attrs.frozen
class Entry:
    name: str
    path: str  #: a plain filesystem path for a local archive, the URI otherwise
    is_dir: bool
    size: int | None  #: None: could not be read (a dangling link, no permission)
    error: str | None = None


@attrs.frozen
class ArchiveFile:
    path: str
    partition: str
    size: int
    compressed: bool


@attrs.frozen
class FileReject:
    """One row of rejects for a whole file (its ``line_number`` is null)."""

    path: str
    partition: str | None
    kind: str
    reason: str
    lines_read: int | None = None
    bytes_read: int | None = None


@attrs.frozen
class Listing:
    files: tuple[ArchiveFile, ...]
    rejects: tuple[FileReject, ...]
    #: archive files that start with a UTF-8 byte order mark (dropped by the reader)
    bom: tuple[str, ...] = ()

    @property
    def quarantined(self) -> tuple[FileReject, ...]:
        return tuple(r for r in self.rejects if r.kind == QUARANTINED)

    @property
    def foreign(self) -> tuple[FileReject, ...]:
        return tuple(r for r in self.rejects if r.kind == FOREIGN)

    def describe(self) -> str:
        parts = [f"{len(self.files):,} archive files read"]
        if self.quarantined:
            parts.append(f"{len(self.quarantined):,} quarantined")
        if self.foreign:
            parts.append(f"{len(self.foreign):,} other {entries(len(self.foreign))} skipped")
        if self.bom:
            parts.append(f"{len(self.bom):,} starting with a UTF-8 BOM (dropped)")
        return ", ".join(parts)


def entries(n: int) -> str:
    return "entry" if n == 1 else "entries"


class FileSystem(Protocol):
    def entries(self, directory: str) -> list[Entry]: ...

    def head(self, path: str, size: int) -> bytes | None:
        """The first ``size`` bytes, or None when that costs too much to ask (a remote store)."""


class LocalFileSystem:
    def entries(self, directory: str) -> list[Entry]:
        out = []
        with os.scandir(directory) as scan:
            for item in scan:
                try:
                    is_dir = item.is_dir()
                    size = None if is_dir else item.stat().st_size
                    out.append(Entry(item.name, item.path, is_dir, size))
                except OSError as e:  # a dangling link
                    out.append(Entry(item.name, item.path, False, None, e.strerror or str(e)))
        return sorted(out, key=lambda e: e.name)

    def head(self, path: str, size: int) -> bytes | None:
        with open(path, "rb") as f:
            return f.read(size)


def list_archive(root: str, fs: FileSystem) -> Listing:
    """The archive under ``root``: its files, and everything else as a reject. ``root`` may also be a
    single ``date=`` partition."""
    files: list[ArchiveFile] = []
    rejects: list[FileReject] = []
    bom: list[str] = []
    top = fs.entries(root)
    root_partition = _partition_of(root)
    partitions: Iterable[tuple[str | None, list[Entry]]] = (
        [(root_partition, top)] if root_partition is not None else _partitions(top, fs, rejects)
    )
    for partition, entries in partitions:
        assert partition is not None
        for entry in entries:
            if entry.is_dir:
                rejects.append(_foreign(entry, partition, "a directory inside a partition: not read"))
            elif not ARCHIVE_NAME.match(entry.name):
                rejects.append(_foreign(entry, partition, "not an archive file (node-<id>.jsonl[.gz])"))
            elif entry.size is None:
                rejects.append(_unreadable(entry, partition, entry.error or "cannot be read"))
            else:
                compressed = entry.name.endswith(".gz")
                try:
                    start = None if compressed else fs.head(entry.path, len(BOM))
                except OSError as e:
                    rejects.append(_unreadable(entry, partition, e.strerror or str(e)))
                    continue
                if start == BOM:
                    bom.append(entry.path)
                files.append(ArchiveFile(entry.path, partition, entry.size, compressed))
    return Listing(tuple(files), tuple(rejects), tuple(bom))


def _partitions(
    top: list[Entry], fs: FileSystem, rejects: list[FileReject]
) -> Iterator[tuple[str | None, list[Entry]]]:
    for entry in top:
        if entry.is_dir and PARTITION_NAME.match(entry.name):
            yield entry.name.removeprefix("date="), fs.entries(entry.path)
        elif entry.name == MARK and not entry.is_dir:
            continue
        elif entry.is_dir:
            rejects.append(_foreign(entry, None, "a directory that is not a date=YYYY-MM-DD partition"))
        else:
            rejects.append(_foreign(entry, None, "a file outside the date=YYYY-MM-DD partitions"))


def _partition_of(path: str) -> str | None:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name.removeprefix("date=") if PARTITION_NAME.match(name) else None


def _foreign(entry: Entry, partition: str | None, why: str) -> FileReject:
    return FileReject(entry.path, partition, FOREIGN, f"skipped: {why}", None, None)


def _unreadable(entry: Entry, partition: str, why: str) -> FileReject:
    return FileReject(entry.path, partition, QUARANTINED, f"unreadable: {why}", 0, 0)


class HadoopFileSystem:
    """Listing through the driver's JVM (``hdfs://``, ``s3a://``, ...): no per-file reads."""

    def __init__(self, spark: Any, uri: str) -> None:
        jvm = spark.sparkContext._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        self._fs = self._path(uri).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def entries(self, directory: str) -> list[Entry]:
        out = []
        for status in self._fs.listStatus(self._path(directory)):
            path = status.getPath()
            is_dir = bool(status.isDirectory())
            out.append(Entry(str(path.getName()), str(path.toString()), is_dir, int(status.getLen())))
        return sorted(out, key=lambda e: e.name)

    def head(self, path: str, size: int) -> bytes | None:
        return None


def local_root(uri: str) -> str | None:
    """The plain path of a local archive (a path or ``file:`` URI), else None."""
    if uri.startswith("file:"):
        return str(Path(uri.removeprefix("file:").removeprefix("//")))
    return None if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", uri) else uri
