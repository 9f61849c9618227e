"""A node dials a peer where its operator's [peers] says (NAT, tunnel, the chaos proxy), whatever
endpoint the Raft configuration advertises; servers [peers] does not name come from the configuration."""

from __future__ import annotations

from pathlib import Path

import attrs
from twisted.internet.testing import MemoryReactorClock

from garlicfarm.config import load_config
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.service import GarlicFarmService


def test_peers_entry_wins_over_the_configuration_endpoint(tmp_path: Path) -> None:
    spec = FarmSpec(tmp_path, 3, base_port=47001)
    create_farm(spec, force=True)  # force: skips the free-port check; nothing listens in this test
    service = GarlicFarmService(load_config(tmp_path / "node-1.toml"), MemoryReactorClock())
    try:
        assert service._lookup(2) == spec.endpoint(2)
        service.config = attrs.evolve(service.config, peers={2: "tcp://127.0.0.1:1234"})
        assert service._lookup(2) == "tcp://127.0.0.1:1234"  # the operator's word
        assert service._lookup(3) == spec.endpoint(3)  # from the Raft configuration
        assert service._lookup(9) is None
    finally:
        service.store.close()
