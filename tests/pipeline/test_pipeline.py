"""The pipeline end to end on Spark (local mode) over a generated archive, each output checked against
values computed here independently: in plain Python from the archive's lines, with the live service's
``FarmState`` run directly for the publisher and the Meta LS2.

The archive: ``garlicfarm synth`` (2 farms x 4 members x 2 days, 1% bad lines), the same lines again as
archived by a second node (every node archives every committed entry), and a file of hostile lines.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.dataset  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from garlicfarm.app import scoring
from garlicfarm.app.schema import SchemaError, StatusRecord, parse_entry
from garlicfarm.app.state import FarmState
from garlicfarm.pipeline.records import _shown
from garlicfarm.pipeline.synth import SynthResult, SynthSettings, generate
from garlicfarm.wire.payloads import Application, ClusterServer, Configuration, LogEntry

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WINDOW_MS = 300_000
INTERVAL_MS = 60_000
DAY = "date=2026-01-01"

#: synth's bad kinds, as the pipeline classifies them
SYNTH_KINDS = {
    "truncated": "json",
    "not-json": "json",
    "not-utf8": "encoding",
    "no-record": "envelope",
    "date-string": "schema",
    "status-number": "schema",
    "id-zero": "schema",
    "destinations-object": "schema",
    "publish-config": "schema",
    "version": "schema",
    "deep": "schema",
    "huge": "schema",
}

#: hostile lines, and the kind each must be rejected as
HOSTILE: list[tuple[bytes, str]] = [
    (b"", "json"),
    (b"[" * 200_000, "json"),  # deeper than Python's recursion limit
    (
        b'{"index":1,"recorded":1,"record":' + b'{"a":' * 500 + b"1" + b"}" * 501,
        "schema",
    ),  # deeper than the schema allows
    (
        b'{"index":3,"recorded":1,"record":{"cluster":"farm-000","config":{"pad":"'
        + b"y" * 2_000_000
        + b'"}}}',
        "schema",
    ),
    (b"\xff\xfe\x00garbage", "encoding"),
    (b"null", "envelope"),
    (b'"just a string"', "envelope"),
    (b'{"index":"7","recorded":1,"record":{}}', "envelope"),
    (b'{"index":1e400,"recorded":1,"record":{}}', "envelope"),
    (b'{"index":4,"recorded":true,"record":{}}', "envelope"),
    (b'{"index":5,"recorded":1,"record":[1,2]}', "envelope"),
    (b'{"index":6,"recorded":1,"record":{"date":1}}', "schema"),
    (
        b'{"index":8,"recorded":1,"record":{"cluster":"farm-000","date":1767225600000,"id":1,"version":99}}',
        "schema",
    ),
    (b'{"index":9,"recorded":1,"record":{"cluster":"farm-000","date":-5,"id":1}}', "schema"),
    (
        b'{"index":10,"recorded":1,"record":{"cluster":"farm-000","date":1,"id":1,"router":{"uptime":1.5}}}',
        "schema",
    ),
    (
        b'{"index":11,"recorded":1,"record":{"cluster":"farm-000","date":1,"admin":{"action":"exclude","destination":"x"}}}',
        "admin",
    ),
]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthResult]:
    root = tmp_path_factory.mktemp("archive")
    result = generate(SynthSettings(farms=2, members=4, days=2, seed=7, bad_share=0.01), root)
    for partition in sorted(root.glob("date=*")):
        copy = [
            re.sub(rb'^\{"index":(\d+),"recorded":1,', rb'{"index":\1,"recorded":2,', line)
            for line in (partition / "node-1.jsonl").read_bytes().split(b"\n")
        ]
        (partition / "node-2.jsonl").write_bytes(b"\n".join(copy))
    (root / DAY / "node-9.jsonl").write_bytes(b"\n".join(line for line, _ in HOSTILE) + b"\n")
    return root, result


@pytest.fixture(scope="module")
def outputs(spark: Any, archive: tuple[Path, SynthResult], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from garlicfarm.pipeline.job import run_pipeline
    from garlicfarm.pipeline.options import PipelineOptions

    out = tmp_path_factory.mktemp("out")
    options = PipelineOptions(
        archive=str(archive[0]), out=str(out), window_ms=WINDOW_MS, interval_ms=INTERVAL_MS
    )
    summary = run_pipeline(spark, options)
    assert summary.farms == 2
    return out


# ------------------------------------------------------------------------------------------ expected values


def _records(root: Path, node: int) -> list[tuple[int, StatusRecord]]:
    """(index, record) of every line of one node's files that the live schema accepts."""
    out = []
    for path in sorted(root.glob(f"date=*/node-{node}.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                envelope = json.loads(line.decode("utf-8"))
                raw = envelope["record"]
                parsed = parse_entry(json.dumps(raw).encode(), raw["cluster"])
            except (UnicodeDecodeError, ValueError, KeyError, TypeError, SchemaError):
                continue
            assert isinstance(parsed, StatusRecord)
            out.append((envelope["index"], parsed))
    return out


def _partitioned(path: Path) -> pa.Table:
    """A table partitioned by farm and day, the keys typed as the job wrote them."""
    keys = pa.schema([("cluster", pa.string()), ("day", pa.date32())])
    return pq.read_table(path, partitioning=pa.dataset.partitioning(keys, flavor="hive"))


def _ms(column: pa.ChunkedArray) -> list[int]:
    values: list[int] = column.cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    return values


def _day(ms: int) -> datetime.date:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).date()


@pytest.fixture(scope="module")
def replayed(
    archive: tuple[Path, SynthResult],
) -> dict[tuple[str, int], tuple[int | None, tuple[scoring.Lease, ...], int]]:
    """(farm, window start) -> (publisher, leases, changes), from FarmState fed the records directly."""
    by_farm: dict[str, list[tuple[int, StatusRecord]]] = defaultdict(list)
    for index, record in _records(archive[0], 1):
        by_farm[record.cluster].append((index, record))
    expected: dict[tuple[str, int], tuple[int | None, tuple[scoring.Lease, ...], int]] = {}
    for cluster, rows in by_farm.items():
        rows.sort(key=lambda row: row[0])
        state = FarmState(cluster)
        members = tuple(ClusterServer(i) for i in sorted({r.id for _, r in rows}))
        state.apply(0, LogEntry(0, Configuration(0, 0, members)))
        seen_publisher = False
        for index, record in rows:
            before = state.publisher
            data = json.dumps({**_as_json(record)}).encode()
            state.apply(index, LogEntry(1, Application(data)))
            if not state.now:
                continue  # no farm time before a quorum of members has reported: no window yet
            start = state.now // WINDOW_MS * WINDOW_MS
            _, _, changes = expected.get((cluster, start), (None, (), 0))
            changed = seen_publisher and state.publisher != before
            seen_publisher = seen_publisher or state.publisher is not None
            expected[(cluster, start)] = (state.publisher, state.leases, changes + int(changed))
    return expected


def _as_json(record: StatusRecord) -> dict[str, Any]:
    from garlicfarm.app.schema import record_to_json

    return record_to_json(record)


# ------------------------------------------------------------------------------------------ the tests


def test_rejects_are_counted_by_kind_and_never_fatal(
    outputs: Path, archive: tuple[Path, SynthResult]
) -> None:
    _, result = archive
    expected: Counter[str] = Counter()
    for kind, n in result.bad_kinds.items():
        expected[SYNTH_KINDS[kind]] += 2 * n  # both nodes' copies
    for _, kind in HOSTILE:
        expected[kind] += 1
    rejects = pq.read_table(outputs / "rejects")
    assert Counter(rejects.column("kind").to_pylist()) == expected
    assert all(rejects.column("reason").to_pylist())
    # a line is kept cut short (300 bytes, non-UTF-8 bytes shown as \xNN), the 2 MB one too
    assert max(len(line) for line in rejects.column("line").to_pylist()) <= 4 * 300
    files = Counter(Path(f).name for f in rejects.column("file").to_pylist())
    assert files["node-9.jsonl"] == len(HOSTILE)
    # and where: the line number finds the very line in its file
    where = (rejects.column(c).to_pylist() for c in ("file", "line_number", "line"))
    for file, number, shown in zip(*where, strict=True):
        text = Path(unquote(urlparse(file).path)).read_bytes().split(b"\n")[number - 1]
        assert _shown(text) == shown


def test_valid_records_are_what_synth_wrote(archive: tuple[Path, SynthResult]) -> None:
    root, result = archive
    assert len(_records(root, 1)) == result.records
    assert len(_records(root, 2)) == result.records


def test_publisher_per_window_equals_the_live_algorithm(outputs: Path, replayed: dict[Any, Any]) -> None:
    timeline = pq.read_table(outputs / "publisher_timeline")
    got = {
        (cluster, start): (publisher, changes)
        for cluster, start, publisher, changes in zip(
            timeline.column("cluster").to_pylist(),
            _ms(timeline.column("window_start")),
            timeline.column("publisher").to_pylist(),
            timeline.column("changes").to_pylist(),
            strict=True,
        )
    }
    want = {key: (publisher, changes) for key, (publisher, _, changes) in replayed.items()}
    assert got == want
    # a realistic archive: the role moves, and some windows have nobody eligible or a change
    assert len({p for p, _ in want.values()}) > 2
    assert sum(c for _, c in want.values()) > 0


def test_meta_ls_weights_per_window_equal_the_live_algorithm(outputs: Path, replayed: dict[Any, Any]) -> None:
    weights = pq.read_table(outputs / "destination_weights")
    got: dict[tuple[str, int], list[tuple[int, str, int]]] = defaultdict(list)
    for cluster, start, rank, destination, weight in zip(
        weights.column("cluster").to_pylist(),
        _ms(weights.column("window_start")),
        weights.column("rank").to_pylist(),
        weights.column("destination").to_pylist(),
        weights.column("weight").to_pylist(),
        strict=True,
    ):
        got[(cluster, start)].append((rank, destination, weight))
    want = {
        key: [(rank, lease.destination, lease.weight) for rank, lease in enumerate(leases, 1)]
        for key, (_, leases, _) in replayed.items()
        if leases
    }
    assert {key: sorted(rows) for key, rows in got.items()} == want


def _percentile(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def test_member_health_matches_an_independent_computation(
    outputs: Path, archive: tuple[Path, SynthResult], replayed: dict[Any, Any]
) -> None:
    members: dict[tuple[str, int], list[tuple[int, int, StatusRecord]]] = defaultdict(list)
    for index, record in _records(archive[0], 1):
        members[(record.cluster, record.id)].append((record.date, index, record))
    want: dict[tuple[str, int, datetime.date], dict[str, Any]] = {}
    for (cluster, member), rows in members.items():
        rows.sort(key=lambda row: (row[0], row[1]))
        previous: StatusRecord | None = None
        for date, _, record in rows:
            row = want.setdefault(
                (cluster, member, _day(date)),
                {
                    "reports": 0,
                    "gaps": 0,
                    "missed_reports": 0,
                    "longest_gap_s": 0.0,
                    "unhealthy_reports": 0,
                    "restarts": 0,
                    "uptime_max_ms": 0,
                    "bw": [],
                    "tunnels": [],
                },
            )
            row["reports"] += 1
            if previous is not None:
                gap = date - previous.date
                row["longest_gap_s"] = max(row["longest_gap_s"], gap / 1000)
                if gap > 1.5 * INTERVAL_MS:
                    row["gaps"] += 1
                    row["missed_reports"] += math.floor(gap / INTERVAL_MS + 0.5) - 1
                row["restarts"] += record.router.uptime < previous.router.uptime
            row["unhealthy_reports"] += record.router.netStatus.startswith("ERROR")
            row["uptime_max_ms"] = max(row["uptime_max_ms"], record.router.uptime)
            row["bw"].append(record.router.bandwidthCurrent)
            row["tunnels"].append(record.router.participatingTunnels)
            previous = record
    published: Counter[tuple[str, int, datetime.date]] = Counter()
    changes: Counter[tuple[str, datetime.date]] = Counter()
    for (cluster, start), (publisher, _, n) in replayed.items():
        if publisher is not None:
            published[(cluster, publisher, _day(start))] += 1
        changes[(cluster, _day(start))] += n
    for (cluster, member, day), row in want.items():
        for name, values in (("bandwidth", row.pop("bw")), ("tunnels", row.pop("tunnels"))):
            for p in (50, 90, 99):
                row[f"{name}_p{p}"] = _percentile(values, p / 100)
        row["availability"] = row["reports"] / (row["reports"] + row["missed_reports"])
        row["publisher_windows"] = published[(cluster, member, day)]
        row["farm_publisher_changes"] = changes[(cluster, day)]

    table = _partitioned(outputs / "member_health").to_pylist()
    got = {(r["cluster"], r["id"], r["day"]): {k: r[k] for k in next(iter(want.values()))} for r in table}
    assert got.keys() == want.keys()
    for key, row in want.items():
        assert got[key] == pytest.approx(row), key
    # the synthetic outages are there to be found
    assert sum(r["gaps"] for r in want.values()) > 0
    assert sum(r["restarts"] for r in want.values()) > 0


def test_report_is_a_page_with_charts(outputs: Path, archive: tuple[Path, SynthResult]) -> None:
    html = (outputs / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert html.count('src="data:image/png;base64,') >= 3
    assert "farm-000" in html and "farm-001" in html
    rejected = 2 * archive[1].bad + len(HOSTILE)
    assert f"{rejected:,} lines set aside" in html


def test_an_archive_of_nothing_but_bad_lines_fails_after_setting_them_aside(
    spark: Any, tmp_path: Path
) -> None:
    """Every hostile line is rejected with its reason (none crashes the job), and a job with no valid
    record at all is a failure, not empty tables (issue 18: it exited 0)."""
    from garlicfarm.pipeline.job import run_pipeline
    from garlicfarm.pipeline.options import PipelineError, PipelineOptions

    (tmp_path / "archive" / DAY).mkdir(parents=True)
    (tmp_path / "archive" / DAY / "node-1.jsonl").write_bytes(b"\n".join(line for line, _ in HOSTILE) + b"\n")
    out = tmp_path / "out"
    with pytest.raises(PipelineError, match=f"all {len(HOSTILE)} lines rejected"):
        run_pipeline(spark, PipelineOptions(archive=str(tmp_path / "archive"), out=str(out)))
    assert pq.read_table(out / "rejects").num_rows == len(HOSTILE)
    assert not (out / "publisher_timeline").exists()
