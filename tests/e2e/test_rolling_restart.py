"""A rolling restart by SIGTERM of a whole real farm under writes: every stopping leader hands over
(leadership transfer), the clients of the client library see no error, and no acknowledged write is
lost. bench/rolling.py does the work; its figures (the time without a leader) go in benchmarks.md,
not here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_rolling_restart_loses_no_write_and_shows_no_client_error(tmp_path: Path) -> None:
    out = tmp_path / "rolling.json"
    farm = tmp_path / "farm"
    bench = [sys.executable, "-m", "bench.rolling", "--nodes", "3", "--writers", "2"]
    run = subprocess.run(
        [*bench, "--json", str(out), "--workdir", str(farm)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["restarts"] == 3
    assert result["writes_acknowledged"] > 0
    assert result["client_errors"] == []
    assert result["lost_writes"] == []
    for slow in result["slow_handovers"]:  # the story of each handover slower than 50 ms
        assert slow["gap_ms"] > 50 and slow["commits"], slow
    logs = "".join(path.read_text(errors="replace") for path in sorted(farm.glob("node-*.log")))
    handovers = re.findall(r"handing the leadership over to server (\d)", logs)
    assert handovers, logs[-3000:]
    # a handover's election skips the pre-vote round: a follower becomes candidate at once
    assert re.search(r"candidate in term \d+ \(was follower in term", logs), logs[-3000:]
    assert "not a signed 64-bit value" not in logs
