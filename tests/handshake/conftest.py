"""The inbound handshake tests' nonce registry, seeded: the same nonces every run."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import NonceRegistry
from tests.handshake.helpers import rng


@pytest.fixture
def nonces() -> NonceRegistry:
    return NonceRegistry(rng(1))
