"""Bad files never cost good ones: the archive is listed and classified before Spark reads it, corrupt
gzip files are quarantined with how much of them could be read, anything else is skipped with a word,
and an empty archive says so before Spark starts."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path
from typing import Any

import pytest

from garlicfarm.pipeline.files import BOM, FOREIGN, QUARANTINED, LocalFileSystem, list_archive
from garlicfarm.pipeline.gzcheck import check_gzip
from garlicfarm.pipeline.synth import SynthSettings, generate

DAY = "date=2026-01-01"


def _lines(n: int) -> bytes:
    return b"".join(b'{"n":%d}\n' % i for i in range(n))


def _chunks(data: bytes, size: int = 1000) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_sound_gzip_file_passes_with_its_lines_counted() -> None:
    data = _lines(5000)
    check = check_gzip("f", _chunks(gzip.compress(data)))
    assert (check.error, check.lines, check.bytes, check.bom) == (None, 5000, len(data), False)
    # several members end to end (cat a.gz b.gz) are one sound file, as gzip and Hadoop read it
    both = check_gzip("f", _chunks(gzip.compress(data) + gzip.compress(BOM + data)))
    assert (both.error, both.lines) == (None, 10000)
    no_newline = check_gzip("f", [gzip.compress(b"a\nb")])
    assert (no_newline.error, no_newline.lines) == (None, 2)


def test_a_cut_or_damaged_gzip_file_says_why_and_how_far_it_read() -> None:
    data = _lines(100_000)
    packed = gzip.compress(data)
    cut = check_gzip("f", _chunks(packed[: len(packed) // 2]))
    assert cut.error == "truncated: the gzip stream ends early"
    assert 0 < cut.lines < 100_000 and 0 < cut.bytes < len(data)
    damaged = bytearray(packed)
    damaged[-6] ^= 0xFF  # the CRC
    crc = check_gzip("f", [bytes(damaged)])
    assert crc.error is not None and crc.error.startswith("corrupt gzip stream")
    assert check_gzip("f", []).error == "empty file: not a gzip stream"
    assert check_gzip("f", [b"plain text\n"]).error is not None
    assert check_gzip("f", [packed + b"junk"]).error is not None
    assert zlib.decompress(packed, wbits=31) == data


def test_the_listing_sorts_archive_files_from_everything_else(tmp_path: Path) -> None:
    day = tmp_path / DAY
    day.mkdir()
    (tmp_path / ".last-index").write_text("7")  # the archive's own
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "old").mkdir()
    (day / "node-1.jsonl").write_bytes(BOM + b"{}\n")
    (day / "node-2.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    (day / "node-1.jsonl.bak").write_text("x")
    (day / "tmp").mkdir()
    (day / "node-3.jsonl").symlink_to(tmp_path / "gone")
    listing = list_archive(str(tmp_path), LocalFileSystem())
    assert [(Path(f.path).name, f.partition, f.compressed) for f in listing.files] == [
        ("node-1.jsonl", "2026-01-01", False),
        ("node-2.jsonl.gz", "2026-01-01", True),
    ]
    assert listing.bom == (str(day / "node-1.jsonl"),)
    found = {(Path(r.path).relative_to(tmp_path).as_posix(), r.kind) for r in listing.rejects}
    assert found == {
        ("notes.txt", FOREIGN),
        ("old", FOREIGN),
        (f"{DAY}/node-1.jsonl.bak", FOREIGN),
        (f"{DAY}/tmp", FOREIGN),
        (f"{DAY}/node-3.jsonl", QUARANTINED),
    }
    assert all(not r.path.startswith("file:") for r in listing.rejects)
    # a single partition is an archive too
    assert len(list_archive(str(day), LocalFileSystem()).files) == 2


def test_an_empty_archive_says_so_before_spark_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from garlicfarm.cli.main import main
    from garlicfarm.pipeline import job

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started for an empty archive")

    monkeypatch.setattr(job, "build_session", no_spark)
    (tmp_path / "a" / DAY).mkdir(parents=True)
    (tmp_path / "a" / DAY / "notes.txt").write_text("x")
    assert main(["pipeline", "--archive", str(tmp_path / "a"), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "no archive files (date=YYYY-MM-DD/node-<id>.jsonl[.gz])" in err and "1 other entry there" in err
    assert err.count("\n") == 1


@pytest.mark.e2e
def test_bad_files_are_quarantined_and_the_good_ones_processed(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    from garlicfarm.pipeline.job import QUARANTINE_STATUS, run_pipeline
    from garlicfarm.pipeline.options import PipelineOptions

    archive = tmp_path / "the archive+1"  # a space and a plus: paths in rejects are plain paths
    result = generate(SynthSettings(farms=1, members=3, days=1, interval_s=600, bad_share=0), archive)
    day = archive / DAY
    good = (day / "node-1.jsonl").read_bytes()
    packed = gzip.compress(good.replace(b'"recorded":1', b'"recorded":2'))
    (day / "node-2.jsonl.gz").write_bytes(packed)
    (day / "node-3.jsonl.gz").write_bytes(packed[: len(packed) // 2])  # truncated
    (day / "node-4.jsonl").write_bytes(BOM + good.replace(b'"recorded":1', b'"recorded":4'))
    (day / "node-1.jsonl.bak").write_bytes(b"not an archive line\n")
    (day / "stray").mkdir()
    (day / "stray" / "node-5.jsonl").write_bytes(good)
    os.symlink(tmp_path / "gone", day / "node-6.jsonl")
    out = tmp_path / "out"
    summary = run_pipeline(spark, PipelineOptions(archive=str(archive), out=str(out)))
    assert summary.exit_status == QUARANTINE_STATUS
    assert summary.records == 3 * result.records  # node-1, node-2 and node-4 (its first line too)
    assert summary.rejected == 0
    text = "\n".join(summary.describe())
    assert "3 archive files read, 2 quarantined, 2 other entries skipped, 1 starting with a UTF-8 BOM" in text
    assert str(day / "node-3.jsonl.gz") in text
    rejects = {r["file"]: r for r in pq.read_table(out / "rejects").to_pylist()}
    truncated = rejects[str(day / "node-3.jsonl.gz")]
    assert truncated["kind"] == QUARANTINED and truncated["reason"].startswith("truncated")
    assert truncated["line_number"] is None
    assert 0 < truncated["lines_read"] < result.records and 0 < truncated["bytes_read"] < len(good)
    assert rejects[str(day / "node-6.jsonl")]["reason"].startswith("unreadable")
    assert rejects[str(day / "node-1.jsonl.bak")]["kind"] == FOREIGN
    assert rejects[str(day / "stray")]["kind"] == FOREIGN
    assert len(rejects) == 4


@pytest.mark.e2e
def test_a_remote_archive_is_listed_and_checked_through_hadoop(spark: Any, tmp_path: Path) -> None:
    """The path for hdfs://, s3a://, ...: listing through Hadoop's FileSystem, gzip files checked as
    binary values. Run here on file:// URIs, which take the same path when given to these directly."""
    from garlicfarm.pipeline.files import HadoopFileSystem
    from garlicfarm.pipeline.gzcheck import check_files

    day = tmp_path / DAY
    day.mkdir()
    packed = gzip.compress(_lines(1000))
    (day / "node-1.jsonl.gz").write_bytes(packed)
    (day / "node-2.jsonl.gz").write_bytes(packed[:-20])
    (day / "notes.txt").write_text("x")
    uri = f"file://{tmp_path}"
    listing = list_archive(uri, HadoopFileSystem(spark, uri))
    assert [Path(f.path).name for f in listing.files] == ["node-1.jsonl.gz", "node-2.jsonl.gz"]
    assert [(Path(r.path).name, r.kind) for r in listing.rejects] == [("notes.txt", FOREIGN)]
    checks = check_files(spark, [f.path for f in listing.files], local=False)
    assert [(Path(c.path).name, c.error is None, c.lines) for c in checks] == [
        ("node-1.jsonl.gz", True, 1000),
        ("node-2.jsonl.gz", False, checks[1].lines),
    ]
    assert checks[1].lines < 1000
