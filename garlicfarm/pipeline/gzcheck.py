"""Each gzip file of the archive checked before Spark's text source reads it.

Spark's text source fails the whole job on a gzip stream that ends early or has a bad checksum, and
``spark.sql.files.ignoreCorruptFiles`` instead drops the rest of such a file without saying which or
how much. So each ``.gz`` file is decompressed once beforehand, *on the executors*, one task per file,
streaming through zlib in bounded memory; a file whose stream is corrupt is quarantined with the reason
and how much of it decompressed (lines, bytes), and only the sound ones go to the text source.

Why this and not a check on the driver: it scales with the executors, and the driver only collects one
small row per file. The price is a second decompression of the compressed files (zlib's C code, about
as fast as the JVM's); the archive writer's own plain ``.jsonl`` files cost nothing here (any bytes
are lines, and a bad line is a reject, never fatal). A local archive's files are opened by path (they
must be readable by path on every executor for Spark to read them anyway); elsewhere (``hdfs://``,
``s3a://``) each file comes through Hadoop as one binary row, so a compressed file over
:data:`MAX_REMOTE_BYTES` is not checked (said in the log) and read as it is.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from garlicfarm.pipeline.files import BOM

#: decompressed bytes held at once while checking
CHUNK = 1 << 20
#: the largest remote .gz file checked (it travels as one row)
MAX_REMOTE_BYTES = 512 << 20


@attrs.frozen
class GzipCheck:
    path: str
    error: str | None  #: None: the stream is sound
    lines: int  #: whole lines decompressed (before the error, if any)
    bytes: int  #: bytes decompressed
    bom: bool = False


def check_gzip(path: str, chunks: Iterable[bytes]) -> GzipCheck:
    """Decompress ``chunks`` (a gzip file, possibly several members end to end), counting lines."""
    decompressor = zlib.decompressobj(wbits=31)
    lines = size = 0
    head = b""
    last = b"\n"
    pending = False  # input seen since the last member ended
    seen = False
    try:
        for chunk in chunks:
            data = chunk
            while data:
                seen = pending = True
                out = decompressor.decompress(data, CHUNK)
                if out:
                    lines += out.count(b"\n")
                    size += len(out)
                    last = out[-1:]
                    if len(head) < len(BOM):
                        head = (head + out)[: len(BOM)]
                if decompressor.eof:
                    data = decompressor.unused_data
                    decompressor = zlib.decompressobj(wbits=31)
                    pending = False
                else:
                    data = decompressor.unconsumed_tail
        if not seen:
            error: str | None = "empty file: not a gzip stream"
        elif pending:
            error = "truncated: the gzip stream ends early"
        else:
            error = None
    except zlib.error as e:
        error = f"corrupt gzip stream: {e}"
    if error is None and size and last != b"\n":
        lines += 1  # a last line without its newline
    return GzipCheck(path, error, lines, size, head == BOM)


def _check_local(path: str) -> GzipCheck:
    def chunks() -> Iterable[bytes]:
        with open(path, "rb") as f:
            while block := f.read(CHUNK):
                yield block

    try:
        return check_gzip(path, chunks())
    except OSError as e:
        return GzipCheck(path, f"unreadable: {e.strerror or e}", 0, 0)


def check_files(spark: Any, paths: Sequence[str], local: bool) -> list[GzipCheck]:
    """Every file of ``paths`` checked, one task each."""
    if not paths:
        return []
    context = spark.sparkContext
    slices = min(len(paths), max(1, 2 * context.defaultParallelism))
    if local:
        return list(context.parallelize(list(paths), slices).map(_check_local).collect())
    rows = spark.read.format("binaryFile").load(list(paths)).select("path", "content").repartition(slices)
    found = rows.rdd.map(lambda row: check_gzip(row.path, [bytes(row.content)])).collect()
    # binaryFile names a file by its URI, which may be spelt otherwise than the listing's
    by_path = {_normal(check.path): check for check in found}
    return [attrs.evolve(by_path[_normal(p)], path=p) for p in paths if _normal(p) in by_path]


def _normal(uri: str) -> str:
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    host, _, path = rest.partition("/")
    return f"{scheme}://{host}/{path}".rstrip("/")
