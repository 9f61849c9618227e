"""End to end: `garlicfarm chaos` on 5 real node processes for 45 s — no lost write, no violation.

Seed 128's schedule starts with kill -9 of the leader, an isolation, a brief kill -9 of a majority,
another isolation and a one-way partition, all within its first ~31 s (what each hits is resolved at
run time, so which node leads is up to the farm).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUMMARY = re.compile(
    r"chaos seed (?P<seed>\d+): \d+s, (?P<faults>\d+) faults, (?P<kills>\d+) kills, (?P<elections>\d+) "
    r"elections, ops (?P<ok>\d+) acknowledged / \d+ refused / \d+ unknown, (?P<committed>\d+) committed; "
    r"(?P<lost>\d+) lost writes, (?P<violations>\d+) violations \((?P<lin>[a-z ]+)\), "
    r"(?P<crashes>\d+) crashes"
)


@pytest.mark.timeout(400)
def test_chaos_run_loses_nothing(tmp_path: Path) -> None:
    work = tmp_path / "farm"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "garlicfarm",
            "chaos",
            "--nodes",
            "5",
            "--duration",
            "45",
            "--seed",
            "128",
            "--workdir",
            str(work),
        ],
        capture_output=True,
        text=True,
        timeout=380,
        check=False,
    )
    output = result.stdout + result.stderr
    match = SUMMARY.search(result.stdout)
    assert match is not None, output[-5000:]
    assert result.returncode == 0, output[-5000:]
    found = {k: int(v) for k, v in match.groupdict().items() if k != "lin"}
    assert found["lost"] == 0 and found["violations"] == 0 and found["crashes"] == 0, output[-5000:]
    assert match["lin"] == "linearizable"
    assert found["faults"] >= 4 and found["kills"] >= 3, output[-5000:]
    assert found["elections"] >= 1, output[-5000:]
    assert found["ok"] > 0 and found["committed"] >= found["ok"]
    assert "fault: kill-majority" in result.stdout and "fault: isolate" in result.stdout
