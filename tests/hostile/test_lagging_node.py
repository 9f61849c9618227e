"""A lagging garlicfarm server restarts in a farm where JRaft-behaviour servers are the majority, all
real processes on loopback behind the handshake bridges (scripts/jraft_interop.py, the same scenario
scripts/jraft-interop.sh runs against real JRaft).

Before: the restarted server, its log behind, campaigned every 0.5-0.9 s and lost every vote; JRaft has
no pre-vote, so both JRaft servers adopted each new term, stepped down and restarted their 3-5 s timers:
no leader for 90 s. Now a server refused for its log backs off (docs/raft.md, "Backing off"): a leader
within 10 s of any loss, and the restarted server catches up."""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.chaos.procs import free_base_port
from tests.interop.test_e2e_jraft_peers import DRIVER

pytestmark = pytest.mark.e2e

TITLE = "2 JRaft + 1 garlicfarm, the garlicfarm server restarts lagging"


def test_a_lagging_server_that_restarts_does_not_keep_a_jraft_majority_leaderless(tmp_path: Path) -> None:
    farm = DRIVER.Farm(tmp_path / "farm", DRIVER.jraft_command(None), free_base_port(510))
    notes: list[str] = []
    try:
        DRIVER.SCENARIOS[TITLE](farm, notes)
    except DRIVER.Failure as e:
        pytest.fail(f"{e}; {'; '.join(notes)}; logs in {tmp_path}")
    finally:
        farm.stop()
    print(*notes, sep="\n")
