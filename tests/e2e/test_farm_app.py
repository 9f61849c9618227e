"""End to end: a real 3-node farm agrees on its Meta LS2 publisher, and moves when its router fails."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.procfarm import ProcFarm, cli

pytestmark = pytest.mark.e2e
HOUR = 3_600_000


def write_router(path: Path, node: int, net: str = "OK") -> None:
    status = {
        "router": {"netStatus": net, "uptime": node * 10 * HOUR, "participatingTunnels": 10 * node},
        "destinations": [{"destination": f"leaf-{node}", "tunnelsConfigured": 2, "tunnelsCurrent": 2}],
    }
    path.write_text(json.dumps(status))


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("app") / "farm", 3)
    for i in range(1, 4):
        write_router(farm.dir / f"router-{i}.json", i)
        # The JSON publisher and made-up leaf names of a status file, in place of init's signed Meta LS2
        # (tests/cli/test_run_script.py and tests/router/test_i2cp_e2e.py cover that).
        config = Path(farm.config(i))
        config.write_text(
            config.read_text().partition("\n# The Meta LS2")[0]
            + f'\n[app]\ninterval = 0.5\n[router]\nstatus_file = "router-{i}.json"\n'
        )
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


def views(farm: ProcFarm) -> list[tuple[Any, Any]]:
    out = []
    for i in range(1, 4):
        status = farm.status(i)
        assert status is not None
        out.append((status["publisher"], json.dumps(status["meta_ls"], sort_keys=True)))
    return out


def wait_for_agreement(farm: ProcFarm, publisher: int, timeout: float = 30.0) -> list[tuple[Any, Any]]:
    deadline = time.monotonic() + timeout
    seen: list[tuple[Any, Any]] = []
    while time.monotonic() < deadline:
        seen = views(farm)
        if len(set(seen)) == 1 and seen[0][0] == publisher:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"no agreement on publisher {publisher}: {seen}\n{farm.logs()}")


def test_one_publisher_and_identical_contents_on_every_member(farm: ProcFarm) -> None:
    seen = wait_for_agreement(farm, publisher=3)  # the longest uptime
    leases = json.loads(seen[0][1])
    assert {lease["destination"] for lease in leases} == {"leaf-1", "leaf-2", "leaf-3"}
    published = json.loads((farm.dir / "node-3" / "metals.json").read_text())
    assert published["publishing"] is True
    assert {lease["destination"] for lease in published["leases"]} == {"leaf-1", "leaf-2", "leaf-3"}


def test_a_router_failure_moves_every_member_to_the_same_publisher(farm: ProcFarm) -> None:
    wait_for_agreement(farm, publisher=3)
    write_router(farm.dir / "router-3.json", 3, net="ERROR_CLOCK_SKEW")
    wait_for_agreement(farm, publisher=2)
    stopped = json.loads((farm.dir / "node-3" / "metals.json").read_text())
    assert stopped["publishing"] is False


def test_reports_are_archived(farm: ProcFarm) -> None:
    lines = [
        json.loads(line)
        for path in (farm.dir / "node-1" / "archive").glob("date=*/node-1.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert {line["record"]["id"] for line in lines} == {1, 2, 3}


@pytest.mark.parametrize(
    "bad",
    [
        {"cluster": "farm", "date": "yesterday", "id": 1},
        {"cluster": "farm", "date": 1, "id": 1, "destinations": [{"destination": "d"}] * 5000},
        {"cluster": "farm", "date": 1, "id": 1, "config": {"a": [[[[[[[[[[1]]]]]]]]]]}},
    ],
    ids=["wrong types", "huge list", "deep nesting"],
)
def test_bad_status_json_is_refused_by_the_leader_and_harms_nothing(
    farm: ProcFarm, bad: dict[str, Any]
) -> None:
    """The leader checks a record with the schema's rules before it enters the log: junk is refused
    (the state machines' deterministic rejection of committed junk is tested in tests/app)."""
    before = farm.submit(2, {"cluster": "other-farm", "note": "before"})
    result = cli("submit", "--config", farm.config(1), json.dumps(bad), check=False, timeout=60)
    assert result.returncode == 1 and "refused by the leader" in result.stderr, result.stderr
    index = before
    assert index < farm.submit(2, {"cluster": "other-farm", "note": "still committing"})
