"""The console's tests' one node: a GarlicFarmService with its console, on a memory reactor; its
console site; the log events a test captures."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogEvent, capturedLogs

from garlicfarm.admin.site import AdminSite
from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import handle, make_node


@pytest.fixture
def clock() -> MemoryReactorClock:
    return MemoryReactorClock()


@pytest.fixture
def node(tmp_path: Path, clock: MemoryReactorClock) -> Iterator[GarlicFarmService]:
    service = make_node(tmp_path, clock)
    yield service
    service.stopService()


@pytest.fixture
def site(node: GarlicFarmService, clock: MemoryReactorClock) -> AdminSite:
    site = AdminSite(clock)
    site.register(handle(node))
    return site


@pytest.fixture
def logs() -> Iterator[Sequence[LogEvent]]:
    with capturedLogs() as events:
        yield events
