"""A real 3-node farm: ``garlicfarm members`` from a follower, ``health`` and ``status`` exit statuses,
with the farm whole and after it lost its quorum."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.procfarm import ProcFarm, cli

pytestmark = pytest.mark.e2e


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path / "farm", 3)
    farm.start_all()
    try:
        yield farm
    finally:
        farm.stop_all()


def test_members_health_and_status_exit_codes(farm: ProcFarm) -> None:
    leader = farm.wait_for_leader(timeout=60)
    index = farm.submit(leader, {"hello": "members"})
    follower = next(i for i in (1, 2, 3) if i != leader)
    farm.wait_for_commit(index, [1, 2, 3])

    table = cli("members", "--config", farm.config(follower), "--timeout", "10")
    lines = table.stdout.splitlines()
    assert lines[0].startswith(f"farm farm: answered by node {leader} (leader, term ")
    assert lines[0].endswith(f"asked through node {follower} (follower)")
    rows = {int(line.split()[0]): line.split() for line in lines[2:5]}
    assert sorted(rows) == [1, 2, 3]
    assert rows[leader][2] == "leader" and rows[follower][2] == "follower"

    document = json.loads(cli("members", "--config", farm.config(follower), "--json").stdout)
    assert document["answered_by"] == leader and document["asked"] == follower
    assert all(isinstance(m["lag"], int) and m["reachable"] for m in document["members"])
    assert all(m["commit_index"] >= index for m in document["members"])

    verbose = cli("health", "--config", farm.config(follower), "--verbose")
    assert verbose.stdout.splitlines()[-1] == "readyz check passed"
    assert "[+]leader ok" in verbose.stdout

    for i in (1, 2, 3):
        if i != leader:
            farm.kill(i)
    deadline = time.monotonic() + 30
    while True:  # check-quorum: the leader steps down within an election timeout
        status = cli("status", "--brief", "--config", farm.config(leader), check=False)
        if status.returncode == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert status.returncode == 2, status.stdout + status.stderr
    assert "no leader" in status.stdout
    health = cli("health", "--config", farm.config(leader), check=False)
    assert health.returncode == 1
    assert health.stdout == "[-]leader failed: no leader known\nreadyz check failed\n"
    members = cli("members", "--config", farm.config(leader), "--timeout", "5", check=False)
    assert members.returncode == 2
    assert "no leader known: no lag" in members.stdout.splitlines()[0]
    assert members.stdout.count("unreachable") == 2
