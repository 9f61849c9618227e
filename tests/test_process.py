"""What a node's own process sets up for itself."""

from __future__ import annotations

import gc

from garlicfarm.process import settle_startup_objects


def test_startup_objects_leave_the_collectors_generations() -> None:
    before = gc.get_freeze_count()
    try:
        settle_startup_objects()
        assert gc.get_freeze_count() > before
        assert gc.get_count()[0] < 700  # a collection ran first: no garbage is frozen with them
    finally:
        gc.unfreeze()
