"""The stores' shared rules at their bounds and one past: the last index a log may reach, a
snapshot's term and index, and a forked in-memory store keeping the term and vote it had."""

from __future__ import annotations

import pytest

from garlicfarm.storage._rules import MAX_INDEX, check_hard_state, check_save, check_snapshot
from garlicfarm.storage.interface import HardState, SnapshotMeta
from garlicfarm.storage.memory import MemoryLogStore
from tests.storage.conftest import app, config


def test_a_log_may_reach_the_largest_index_and_not_one_more() -> None:
    check_save(MAX_INDEX, MAX_INDEX - 1, MAX_INDEX, [app(1, "last")])
    with pytest.raises(ValueError, match=f"entries would run past the largest index {MAX_INDEX}"):
        check_save(MAX_INDEX - 1, MAX_INDEX - 2, MAX_INDEX - 1, [app(1, "a"), app(1, "b"), app(1, "c")])


@pytest.mark.parametrize("field", ["last_index", "last_term"])
def test_a_snapshot_may_hold_the_largest_long_and_not_one_more(field: str) -> None:
    top = {"last_index": 1, "last_term": 1, field: MAX_INDEX}
    check_snapshot(None, SnapshotMeta(top["last_index"], top["last_term"], config(1, 1)))
    over = {"last_index": 1, "last_term": 1, field: MAX_INDEX + 1}
    with pytest.raises(
        ValueError, match=f"snapshot {'term' if field == 'last_term' else 'index'} {MAX_INDEX + 1}"
    ):
        check_snapshot(None, SnapshotMeta(over["last_index"], over["last_term"], config(1, 1)))


def test_a_forked_memory_store_keeps_its_term_and_vote() -> None:
    store = MemoryLogStore()
    store.save(HardState(7, 2, 0), 1, [app(7, "a")])
    fork = store.copy()
    assert fork.hard_state == HardState(7, 2, 0)
    assert fork.load() == store.load()


@pytest.mark.parametrize("field", ["term", "voted_for", "commit"])
def test_a_hard_state_may_hold_the_largest_long_and_not_one_more(field: str) -> None:
    values = {"term": 1, "voted_for": 1, "commit": 1}
    check_hard_state(HardState(**{**values, field: MAX_INDEX}))
    with pytest.raises(ValueError, match=f"^{field} {MAX_INDEX + 1} is outside 0..2\\^63-1$"):
        check_hard_state(HardState(**{**values, field: MAX_INDEX + 1}))
    with pytest.raises(ValueError, match=f"^{field} -1 is outside"):
        check_hard_state(HardState(**{**values, field: -1}))
