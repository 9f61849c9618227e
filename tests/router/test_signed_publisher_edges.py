"""The binary file publisher's edges (garlicfarm.router.signed): what its status and its signer's status
show, the warning lines it logs, how a publish fails (an expired offline signature, a file that cannot
be written) and when it is tried again, when a renewal is due for short lifetimes, what ``stop`` does
before a publish, after one and when the file cannot be removed. Deterministic time (task.Clock); the
file in tmp_path."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.task import Clock
from twisted.logger import LogEvent, LogLevel, capturedLogs, formatEvent

from garlicfarm.i2p.build import check_leaf
from garlicfarm.i2p.encoding import b32
from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
from garlicfarm.i2p.metals import ENTRY_LEASESET2, MetaLeaseSet
from garlicfarm.router import signed
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.signed import BinaryFilePublisher, MetaLSSigner
from tests.i2p.keysource import counter_random
from tests.router.outcomes import delays, failure_text, outcome

MASTER = create_master(counter_random("master"))
LEAF = create_master(counter_random("leaf")).destination
NOW = 1_800_000_000.0
#: the member's offline signature ends a month from NOW: no warning
OFFLINE_END = int(NOW) + 30 * 86_400
MEMBER = create_transient(MASTER, counter_random("m"), OFFLINE_END)
CONTENTS = (MetaLease(LEAF.b32, 40),)


def publisher_at(
    path: Path, keys: PrivateKeyFile = MEMBER, expires: int = 600
) -> tuple[BinaryFilePublisher, Clock]:
    clock = Clock()
    clock.advance(NOW)
    return BinaryFilePublisher(path, keys, expires=expires, reactor=clock), clock


def warnings(events: Sequence[LogEvent]) -> list[str]:
    return [formatEvent(e) or "" for e in events if e.get("log_level") == LogLevel.warn]


def test_status_shows_idle_then_the_published_meta_ls2_then_idle(tmp_path: Path) -> None:
    """Status before a publish, after it (the signed values: dates, each lease's hash, type, cost
    and end) and after ``stop``."""
    path = tmp_path / "metals.bin"
    publisher, clock = publisher_at(path)
    idle = {
        "state": "idle",
        "router": str(path),
        "master": MASTER.destination.b32,
        "offlineExpires": OFFLINE_END,
        "warning": None,
        "published": None,
    }
    assert publisher.status() == idle
    assert outcome(publisher.publish("master", CONTENTS)) is None
    clock.advance(100)
    end = int(NOW) + 600
    lease = {"hash": b32(LEAF.hash), "type": ENTRY_LEASESET2, "cost": 60, "end": end}
    published = {"published": int(NOW), "expires": end, "secondsLeft": 500, "leases": [lease]}
    assert publisher.status() == idle | {"state": "published"} | published
    assert MetaLeaseSet.decode(path.read_bytes()).published == int(NOW)
    assert outcome(publisher.stop("master")) is None
    assert publisher.status() == idle


def test_seconds_left_stop_at_zero_once_the_meta_ls2_has_expired() -> None:
    """A Meta LS2 past its expiry shows 0 seconds left, not a negative count; 1 s before, 1."""
    clock = Clock()
    clock.advance(NOW)
    signer = MetaLSSigner(MEMBER, 600, clock.seconds)
    signer.published(signer.sign(CONTENTS))
    clock.advance(599)
    assert signer.status()["secondsLeft"] == 1
    clock.advance(1)
    assert signer.status()["secondsLeft"] == 0
    clock.advance(1000)
    assert signer.status()["secondsLeft"] == 0


def test_no_warning_while_the_offline_signature_has_more_than_a_week() -> None:
    """Signing with an offline signature far from its end logs no warning at all."""
    clock = Clock()
    clock.advance(NOW)
    signer = MetaLSSigner(MEMBER, 600, clock.seconds)
    with capturedLogs() as events:
        signer.sign(CONTENTS)
        signer.warn_if_expiring()
    assert warnings(events) == []


def test_the_warnings_name_the_master_the_days_left_and_the_leaf_cut_at_80_characters() -> None:
    """The lines an operator reads: the offline expiry with the master's address, and a refused leaf
    with the reason, the leaf's first 80 characters only (the log stays bounded)."""
    clock = Clock()
    clock.advance(OFFLINE_END - 86_400)
    signer = MetaLSSigner(MEMBER, 600, clock.seconds)
    made_up = "made-up-" + "x" * 92
    with capturedLogs() as events:
        signer.sign((MetaLease(made_up, 50), *CONTENTS))
    assert warnings(events) == [
        f"Meta LS2 of {MASTER.destination.b32}: the offline signature expires in 1.0 days: "
        "make a new transient key",
        f"Meta LS2: leaf {made_up[:80]} left out: {check_leaf(made_up)} "
        "(a leaf is a base64 destination or a b32 address)",
    ]


def test_the_days_left_are_rounded_to_a_tenth() -> None:
    """1.05 days and one second before the offline signature ends, the warning says 1.1 days."""
    clock = Clock()
    clock.advance(OFFLINE_END - (86_400 * 105 // 100 + 1))
    signer = MetaLSSigner(MEMBER, 600, clock.seconds)
    assert signer.warning() == "the offline signature expires in 1.1 days: make a new transient key"


def test_an_expired_offline_signature_fails_the_publish_and_is_tried_again_in_a_minute(
    tmp_path: Path,
) -> None:
    """The publish fails with the signer's reason, nothing is written, the status says why, and the
    next try is a minute later (and a minute after that, while it stays expired)."""
    path = tmp_path / "metals.bin"
    expired = create_transient(MASTER, counter_random("m"), int(NOW) - 1)
    publisher, clock = publisher_at(path, expired)
    why = failure_text(publisher.publish("master", CONTENTS))
    assert why.startswith(f"the offline signature of {MASTER.destination.b32} expired at {int(NOW) - 1} ")
    assert not path.exists()
    assert delays(clock) == [BinaryFilePublisher.RETRY_S]
    status = publisher.status()
    assert status["state"] == "idle"
    assert status["warning"] == (
        "the offline signature has expired: this member can no longer publish the Meta LS2"
    )
    with capturedLogs() as events:
        clock.advance(BinaryFilePublisher.RETRY_S)
    assert any(w.startswith("Meta LS2 not renewed (again in 60 s): the offline") for w in warnings(events))
    assert delays(clock) == [BinaryFilePublisher.RETRY_S]


def test_a_file_that_cannot_be_written_fails_with_the_os_reason_and_is_written_a_minute_later(
    tmp_path: Path,
) -> None:
    """The failure names the file and the system's reason, and the status does not show the Meta LS2
    that was signed but never written; once the directory is there, the retry a minute later writes
    it and the next renewal is at half its lifetime."""
    path = tmp_path / "gone" / "metals.bin"
    publisher, clock = publisher_at(path)
    why = failure_text(publisher.publish("master", CONTENTS))
    assert why == f"{path}: cannot write the Meta LS2: {os.strerror(errno.ENOENT)}"
    assert delays(clock) == [BinaryFilePublisher.RETRY_S]
    status = publisher.status()
    assert (status["state"], status["published"]) == ("idle", None)
    path.parent.mkdir()
    clock.advance(BinaryFilePublisher.RETRY_S)
    written = MetaLeaseSet.decode(path.read_bytes())
    assert written.published == publisher.status()["published"]
    assert publisher.status()["state"] == "published"
    assert delays(clock) == [300.0]


def test_a_failed_renewal_leaves_the_status_on_the_meta_ls2_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A renewal that cannot be written (a full disk) leaves the file's Meta LS2 as it was (the write
    is atomic): the status shows that one, not the one signed for the failed renewal."""
    path = tmp_path / "metals.bin"
    publisher, clock = publisher_at(path)
    assert outcome(publisher.publish("master", CONTENTS)) is None

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(signed, "write_atomically", full)
    with capturedLogs() as events:
        clock.advance(300)
    why = f"{path}: cannot write the Meta LS2: {os.strerror(errno.ENOSPC)}"
    assert warnings(events) == [f"Meta LS2 not renewed (again in 60 s): {why}"]
    assert delays(clock) == [BinaryFilePublisher.RETRY_S]
    status = publisher.status()
    assert (status["state"], status["published"]) == ("published", int(NOW))
    assert MetaLeaseSet.decode(path.read_bytes()).published == int(NOW)


@pytest.mark.parametrize(("expires", "renewal"), [(1, 1.0), (2, 1.0), (3, 1.5), (600, 300.0)])
def test_renewed_at_half_the_lifetime_but_not_sooner_than_a_second(
    tmp_path: Path, expires: int, renewal: float
) -> None:
    publisher, clock = publisher_at(tmp_path / "metals.bin", expires=expires)
    assert outcome(publisher.publish("master", CONTENTS)) is None
    assert delays(clock) == [renewal]


def test_an_unexpected_renewal_error_is_logged_and_tried_again_in_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error that is no PublishError does not reach the reactor: it is logged, and the Meta LS2 is
    signed and written again a minute later."""
    path = tmp_path / "metals.bin"
    publisher, clock = publisher_at(path)
    assert outcome(publisher.publish("master", CONTENTS)) is None
    sign = publisher.signer.sign

    def broken(contents: Any) -> MetaLeaseSet:
        monkeypatch.setattr(publisher.signer, "sign", sign)
        raise RuntimeError("boom")

    monkeypatch.setattr(publisher.signer, "sign", broken)
    with capturedLogs() as events:
        clock.advance(300)
    failures = [e for e in events if e.get("log_failure") is not None]
    assert [formatEvent(e) for e in failures] == ["Meta LS2 renewal failed unexpectedly"]
    assert delays(clock) == [BinaryFilePublisher.RETRY_S]
    clock.advance(BinaryFilePublisher.RETRY_S)
    assert MetaLeaseSet.decode(path.read_bytes()).published == int(NOW) + 360


def test_stop_before_any_publish_succeeds(tmp_path: Path) -> None:
    """No file, no renewal yet: stopping is not an error."""
    publisher, clock = publisher_at(tmp_path / "metals.bin")
    assert outcome(publisher.stop("master")) is None
    assert delays(clock) == []


def test_a_publish_after_stop_starts_again(tmp_path: Path) -> None:
    """``stop`` removes the file and the renewal; a later publish (leadership regained) writes the
    file again and schedules its renewal."""
    path = tmp_path / "metals.bin"
    publisher, clock = publisher_at(path)
    assert outcome(publisher.publish("master", CONTENTS)) is None
    assert outcome(publisher.stop("master")) is None
    assert not path.exists() and delays(clock) == []
    clock.advance(10)
    assert outcome(publisher.publish("master", CONTENTS)) is None
    assert MetaLeaseSet.decode(path.read_bytes()).published == int(NOW) + 10
    assert delays(clock) == [300.0]


def test_a_file_that_cannot_be_removed_fails_the_stop(tmp_path: Path) -> None:
    """The path is a directory: ``stop`` fails with the file's name and the system's reason."""
    path = tmp_path / "metals.bin"
    (path / "inside").mkdir(parents=True)
    publisher, _ = publisher_at(path)
    assert failure_text(publisher.stop("master")) == (
        f"{path}: cannot remove the Meta LS2: {os.strerror(errno.EISDIR)}"
    )
