"""The Meta LS2 signer's bounds (garlicfarm.router.signed.MetaLSSigner): how far ahead a farm's
publishing date is still followed, when the offline signature's expiry is warned about and how
often, how many refused leaves are remembered — each at the bound and one step past it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from twisted.internet.task import Clock
from twisted.logger import LogEvent, LogLevel, capturedLogs, formatEvent

from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.i2p.build import OFFLINE_WARNING_S
from garlicfarm.i2p.keys import PrivateKeyFile
from garlicfarm.router import signed
from garlicfarm.router.signed import MAX_FARM_AHEAD_S, WARN_EVERY_S, MetaLSSigner


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> PrivateKeyFile:
    directory = tmp_path_factory.mktemp("farm")
    create_farm(FarmSpec(directory, 1, base_port=1), force=True)
    return PrivateKeyFile.decode((directory / "node-1.dat").read_bytes())


def clock_at(t: float) -> Clock:
    clock = Clock()
    clock.advance(t)
    return clock


def signer_at(keys: PrivateKeyFile, t: float) -> tuple[MetaLSSigner, Clock]:
    clock = clock_at(t)
    return MetaLSSigner(keys, 600, clock.seconds), clock


@pytest.mark.parametrize(("ahead", "followed"), [(MAX_FARM_AHEAD_S, True), (MAX_FARM_AHEAD_S + 1, False)])
def test_a_farm_date_up_to_a_minute_ahead_is_followed(
    keys: PrivateKeyFile, ahead: int, followed: bool
) -> None:
    signer, _ = signer_at(keys, 1_000_000.0)
    signer.farm_newest = lambda: 1_000_000 + ahead
    assert signer._newest(1_000_000.0) == (1_000_000 + ahead if followed else None)


def test_the_newest_of_the_members_own_and_the_farms(keys: PrivateKeyFile) -> None:
    signer, _ = signer_at(keys, 1_000_000.0)
    signer._last_published = 1_000_010
    signer.farm_newest = lambda: 1_000_005
    assert signer._newest(1_000_000.0) == 1_000_010
    signer.farm_newest = lambda: 1_000_020
    assert signer._newest(1_000_000.0) == 1_000_020


def left_at(keys: PrivateKeyFile, left: float) -> Clock:
    """A clock ``left`` seconds before the offline signature expires (it is signed: the clock moves)."""
    assert keys.offline is not None
    return clock_at(keys.offline.expires - left)


@pytest.mark.parametrize(
    ("left", "warning"),
    [
        (OFFLINE_WARNING_S + 1, None),
        (OFFLINE_WARNING_S, f"the offline signature expires in {OFFLINE_WARNING_S / 86_400:.1f} days"),
        (86_400 * 3, "the offline signature expires in 3.0 days"),
        (1, "the offline signature expires in 0.0 days"),
        (0, "the offline signature has expired"),
    ],
)
def test_the_offline_signatures_expiry_is_warned_about_from_its_bound(
    keys: PrivateKeyFile, left: int, warning: str | None
) -> None:
    signer = MetaLSSigner(keys, 600, left_at(keys, left).seconds)
    said = signer.warning()
    if warning is None:
        assert said is None
    else:
        assert said is not None and said.startswith(warning)


def warned(events: Sequence[LogEvent]) -> list[str]:
    texts = (formatEvent(e) or "" for e in events if e.get("log_level") == LogLevel.warn)
    return [t for t in texts if "offline signature" in t]


def test_the_expiry_warning_is_logged_once_an_hour(keys: PrivateKeyFile) -> None:
    clock = left_at(keys, 86_400)
    signer = MetaLSSigner(keys, 600, clock.seconds)
    with capturedLogs() as events:
        signer.warn_if_expiring()
        clock.advance(WARN_EVERY_S - 1)
        signer.warn_if_expiring()
        assert len(warned(events)) == 1
        clock.advance(1)
        signer.warn_if_expiring()
        lines = warned(events)
        assert len(lines) == 2
    assert keys.destination.b32 in lines[0]


def test_refused_leaves_are_remembered_up_to_the_bound(
    keys: PrivateKeyFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signed, "MAX_REMEMBERED", 3)
    signer, _ = signer_at(keys, 1_000_000.0)
    for i in range(5):
        assert not signer._is_leaf(f"made-up-{i}")
    assert signer._refused == {"made-up-0", "made-up-1", "made-up-2"}
