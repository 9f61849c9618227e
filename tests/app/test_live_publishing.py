"""The publisher hook acts on live state only: a restarting node replays its log without publishing
each decision of the past, then acts once on the state as it stands.

Regression (issue 16): a restarting node logged 7 "publishing the Meta LS" lines in one second while
replaying its log.
"""

from __future__ import annotations

from garlicfarm.app.publishing import MetaLSRole
from garlicfarm.app.scoring import Lease
from garlicfarm.router.interface import MetaLease
from tests.app.test_farm_app import RecordingHook


def test_replayed_decisions_are_not_published_then_the_live_one_is_once() -> None:
    hook = RecordingHook()
    role = MetaLSRole(1, "master", hook)
    role.live = False
    for weight in range(7):  # the history a restart replays: the role came and went
        role.changed(1, (Lease("d", weight + 1),))
        role.changed(2, ())
    role.changed(1, (Lease("d", 42),))
    assert hook.calls == []
    role.go_live()
    assert hook.calls == [("publish", (MetaLease("d", 42),))]
    role.go_live()  # idempotent
    assert len(hook.calls) == 1


def test_a_node_that_is_not_publisher_when_live_publishes_nothing() -> None:
    hook = RecordingHook()
    role = MetaLSRole(1, "master", hook)
    role.live = False
    role.changed(1, (Lease("d", 1),))
    role.changed(3, (Lease("d", 1),))
    role.go_live()
    assert hook.calls == [] and not role.active
