"""A healthy farm's start, run and stop log nothing at warn or above: a warning is a problem an
operator must act on. Idle links (here after 2 s instead of 600 s) and the shutdown are routine."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.e2e.procfarm import ProcFarm

SEVERE = re.compile(r"#(warn|error|critical)\]")


@pytest.mark.e2e
def test_a_healthy_start_run_stop_cycle_logs_no_warnings(tmp_path: Path) -> None:
    farm = ProcFarm(tmp_path / "farm", 3)
    for i in (1, 2, 3):
        with open(farm.config(i), "a") as f:
            f.write("\n[limits]\nidle_timeout = 2\n")
    farm.start_all()
    try:
        leader = farm.wait_for_leader()
        index = farm.submit(leader, {"hello": "farm"})
        farm.wait_for_commit(index, [1, 2, 3])
        time.sleep(8)  # links without traffic go idle and are dropped, more than once
    finally:
        farm.stop_all()
    logs = {i: (farm.dir / f"node-{i}.log").read_text() for i in (1, 2, 3)}
    assert any("idle" in text for text in logs.values()), "no idle link was dropped: the test proves nothing"
    severe = [
        f"node {i}: {line}" for i, text in logs.items() for line in text.splitlines() if SEVERE.search(line)
    ]
    assert severe == [], "\n".join(severe)
