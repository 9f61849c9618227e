"""Which saves the driver must make durable before anything leaves (issue 17)."""

from __future__ import annotations

from garlicfarm.raft.types import Ready
from garlicfarm.storage.interface import HardState
from garlicfarm.wire.payloads import Application, LogEntry


def test_only_the_commit_index_alone_may_go_unsynced() -> None:
    durable = (3, 2)
    assert not Ready(hard_state=HardState(3, 2, 9)).needs_sync(durable)  # the commit index alone
    assert Ready(hard_state=HardState(4, 2, 9)).needs_sync(durable)  # a new term
    assert Ready(hard_state=HardState(3, None, 9)).needs_sync(durable)  # a vote changed
    assert Ready(hard_state=HardState(3, 1, 9)).needs_sync(durable)
    assert Ready(entries_from=5, entries=(LogEntry(3, Application(b"x")),)).needs_sync(durable)
    assert Ready(hard_state=HardState(3, 2, 9), entries_from=5).needs_sync(durable)
