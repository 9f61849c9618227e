"""A removed node says so: one warning line naming the configuration's index, and `removed: true` in
its status (`REMOVED` in `status --brief`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.procfarm import ProcFarm, cli

LINE = (
    "this server was removed from the farm at index {index}; it no longer votes or serves; "
    "stop it or add it back"
)


@pytest.mark.e2e
def test_a_removed_node_logs_one_line_and_its_status_says_removed(tmp_path: Path) -> None:
    farm = ProcFarm(tmp_path / "farm", 3)
    farm.start_all()
    try:
        leader = farm.wait_for_leader()
        gone = next(i for i in (1, 2, 3) if i != leader)
        cli("remove-server", "--raft", "--config", farm.config(leader), "--id", str(gone))
        deadline = time.monotonic() + 30
        status = farm.status(gone)
        while not (status and status["removed"]):
            assert time.monotonic() < deadline, f"server {gone} never said it was removed: {status}"
            time.sleep(0.3)
            status = farm.status(gone)
        result = cli("status", "--brief", "--config", farm.config(gone), check=False)
        assert result.returncode == 2, result.stderr  # a removed node knows no leader: exit 2, as documented
        brief = result.stdout
        leader_commit = (farm.status(leader) or {})["commit_index"]
        time.sleep(1.0)  # a line logged twice would be logged by now
    finally:
        farm.stop_all()
    assert list(status)[:4] == ["stopped_by", "id", "role", "removed"], list(status)  # near the top
    assert "REMOVED from the farm: stop it or add it back" in brief, brief
    log = (farm.dir / f"node-{gone}.log").read_text()
    said = [line for line in log.splitlines() if "was removed from the farm" in line]
    assert len(said) == 1, said
    index = int(said[0].split("at index ")[1].split(";")[0])
    assert 1 < index <= leader_commit, (index, leader_commit)  # the removal, committed by the leader
    assert said[0].endswith(LINE.format(index=index)) and "#warn]" in said[0], said
