"""`garlicfarm submit` of JSON that is no record of this farm (docs/operations.md's `{"hello": "farm"}`)
commits it and warns that the application ignores it, and why; an entry the leader refuses fails."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.procfarm import ProcFarm, cli


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcFarm]:
    farm = ProcFarm(tmp_path_factory.mktemp("submit") / "farm", 1)
    farm.start_all()
    try:
        farm.wait_for_leader()
        yield farm
    finally:
        farm.stop_all()


@pytest.mark.e2e
def test_the_documented_example_is_committed_with_a_warning(farm: ProcFarm) -> None:
    result = cli("submit", "--config", farm.config(1), '{"hello": "farm"}')
    index = int(result.stdout.strip())
    assert result.stderr == (
        f"garlicfarm submit: warning: entry {index} is committed but ignored by the farm's application "
        '(cluster: None is not this farm (\'farm\')): its records are JSON objects with "cluster": "farm" '
        '(status records, admin commands: docs/protocol.md, "Application layer")\n'
    )


@pytest.mark.e2e
def test_a_record_of_this_farm_is_not_warned_about(farm: ProcFarm) -> None:
    # an admin command of this farm: applied, no warning
    command = {"cluster": "farm", "date": 1, "admin": {"action": "include", "destination": "a" * 52}}
    result = cli("submit", "--config", farm.config(1), json.dumps(command), check=False)
    assert "warning" not in result.stderr, result.stderr
