"""The console's tests' one node: a GarlicFarmService with its console, on a memory reactor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from twisted.internet.testing import MemoryReactorClock

from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import make_node


@pytest.fixture
def clock() -> MemoryReactorClock:
    return MemoryReactorClock()


@pytest.fixture
def node(tmp_path: Path, clock: MemoryReactorClock) -> Iterator[GarlicFarmService]:
    service = make_node(tmp_path, clock)
    yield service
    service.stopService()
