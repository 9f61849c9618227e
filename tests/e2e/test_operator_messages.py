"""What an operator reads when things go wrong: one plain line that says what is wrong.

Regressions (issue 16): `submit` with 2 of 3 nodes down said "connection refused" instead of "no
leader / no quorum"; raw Failure reprs; `status --brief` printed "leader None"; `remove-server --raft
--id 9` of a non-member printed "server 9 removed".
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.procfarm import ProcFarm, cli

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("operator") / "farm", 3)
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


def test_removing_a_non_member_says_so(farm: ProcFarm) -> None:
    result = cli("remove-server", "--raft", "--config", farm.config(1), "--id", "9", check=False)
    assert result.returncode == 1
    assert "server 9 is not a member (members: 1, 2, 3)" in result.stderr
    assert "removed" not in result.stdout


def test_status_brief_reads_plainly(farm: ProcFarm) -> None:
    line = cli("status", "--brief", "--config", farm.config(1)).stdout
    assert "None" not in line and "members [1,2,3]" in line


def test_without_a_quorum_submit_says_no_leader_and_why(farm: ProcFarm) -> None:
    leader = farm.wait_for_leader()
    for i in (1, 2, 3):
        if i != leader:
            farm.kill(i)
    result = cli("submit", "--config", farm.config(leader), "--timeout", "3", '{"x": 1}', check=False)
    assert result.returncode == 1
    message = result.stderr.strip()
    assert "no leader after" in message and "no quorum" in message, message
    assert "Failure" not in message and "Traceback" not in message, message
    answer = cli("status", "--brief", "--config", farm.config(leader), check=False)
    line = answer.stdout
    assert "no leader" in line or "leader " in line
    assert answer.returncode == (2 if "no leader" in line else 0), answer.stderr
    tiny = cli("status", "--config", farm.config(leader), "--timeout", "0.001", check=False)
    assert "DNS" not in tiny.stderr and "Failure" not in tiny.stderr, tiny.stderr
