"""A node that stops on a failure says so everywhere and, as a process of its own, ends.

Regression (issue 13): a node stopped by a storage failure kept answering ``status`` as "leader,
term 1" and named itself leader in the 101's GarlicFarm-Leader header, and its process ran on.
"""

from __future__ import annotations

import json
from pathlib import Path

from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure

from garlicfarm.config import load_config
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.service import LEADER_HEADER, STATUS_HEADER, GarlicFarmService
from garlicfarm.storage import StorageError


def test_a_failed_node_claims_nothing_and_stops_its_reactor(tmp_path: Path) -> None:
    create_farm(FarmSpec(tmp_path, 1, base_port=21901), force=True)
    reactor = MemoryReactorClock()
    service = GarlicFarmService(load_config(tmp_path / "node-1.toml"), reactor, exit_on_failure=True)
    try:
        service.driver.start()
        for _ in range(200):
            reactor.advance(0.05)
        assert service.driver.core.is_leader()
        assert LEADER_HEADER in dict(service._upgrade_headers())
        service.driver.stop(Failure(StorageError("disk full")))
        headers = dict(service._upgrade_headers())
        assert LEADER_HEADER not in headers
        status = json.loads(headers[STATUS_HEADER])
        assert (status["role"], status["leader"]) == ("stopped", None)
        assert service.status()["stopped_by"] == "disk full"
        assert service.failure is not None
        assert not reactor.hasStopped
        reactor.advance(0)
        assert reactor.hasStopped  # `garlicfarm run` then exits with status 1
    finally:
        service.store.close()
