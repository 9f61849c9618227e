"""The archive generator: the farm's layout, deterministic, realistic faults, bad lines counted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from garlicfarm.app.schema import StatusRecord, parse_entry, record_to_json
from garlicfarm.pipeline.synth import BAD_KINDS, SynthSettings, generate


def _lines(root: Path) -> list[bytes]:
    return [line for path in sorted(root.rglob("*.jsonl")) for line in path.read_bytes().splitlines()]


def test_layout_counts_and_determinism(tmp_path: Path) -> None:
    settings = SynthSettings(farms=2, members=3, days=2, interval_s=300, seed=3, bad_share=0.05)
    result = generate(settings, tmp_path / "a")
    assert sorted(p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a").rglob("*.jsonl")) == [
        "date=2026-01-01/node-1.jsonl",
        "date=2026-01-02/node-1.jsonl",
    ]
    lines = _lines(tmp_path / "a")
    assert len(lines) == result.records + result.bad
    assert sum(result.bad_kinds.values()) == result.bad > 0
    assert set(result.bad_kinds) <= set(BAD_KINDS)
    # at most one report per member and interval, minus outages
    assert result.records <= 2 * 3 * 2 * 288
    generate(settings, tmp_path / "b")
    assert _lines(tmp_path / "b") == lines


def test_valid_lines_pass_the_live_schema_in_log_order(tmp_path: Path) -> None:
    result = generate(SynthSettings(farms=2, members=4, days=1, seed=1, bad_share=0.0), tmp_path)
    assert result.bad == 0
    last_index: dict[str, int] = {}
    last_date: dict[tuple[str, int], int] = {}
    statuses: Counter[str] = Counter()
    for line in _lines(tmp_path):
        envelope = json.loads(line)
        raw = envelope["record"]
        record = parse_entry(json.dumps(raw).encode(), raw["cluster"])
        assert isinstance(record, StatusRecord)
        # index counts per farm, one by one: the farm's log order
        assert envelope["index"] == last_index.get(record.cluster, 0) + 1
        last_index[record.cluster] = envelope["index"]
        # a member's reports only move forward in time (the archive holds accepted records only)
        assert record.date > last_date.get((record.cluster, record.id), -1)
        last_date[(record.cluster, record.id)] = record.date
        statuses[record.router.netStatus] += 1
        # byte for byte what the farm's TelemetryArchive writes for this record
        canonical = {
            "index": envelope["index"],
            "recorded": envelope["recorded"],
            "record": record_to_json(record),
        }
        assert (
            line == json.dumps(canonical, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()
        )
    assert sum(last_index.values()) == result.records
    assert any(s.startswith("ERROR") for s in statuses)  # router error states are mixed in
