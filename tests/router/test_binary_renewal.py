"""The binary file publisher signs its Meta LS2 again at half its lifetime: leases that do not change
must not let the file's Meta LS2 expire (it did: it was signed only when the leases changed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from twisted.internet.task import Clock
from twisted.logger import LogLevel, formatEvent, globalLogPublisher

from garlicfarm.app.config import app_config
from garlicfarm.app.node import make_publisher
from garlicfarm.config import load_config
from garlicfarm.farminit import FarmSpec, create_farm
from garlicfarm.i2p.metals import MetaLeaseSet
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.signed import BinaryFilePublisher

NOW = 1_800_000_000.0


def _publisher(tmp_path: Path) -> tuple[BinaryFilePublisher, Clock, Path, str, MetaLease]:
    create_farm(FarmSpec(tmp_path / "f", 1, base_port=1), force=True)
    app = app_config(load_config(tmp_path / "f" / "node-1.toml"))
    clock = Clock()
    clock.advance(NOW)
    publisher = make_publisher(clock, app)
    assert isinstance(publisher, BinaryFilePublisher)
    (tmp_path / "f" / "node-1").mkdir()
    return (
        publisher,
        clock,
        tmp_path / "f" / "node-1" / "metals.bin",
        app.master,
        MetaLease(app.leaves[0], 100),
    )


def test_an_unchanged_meta_ls2_is_signed_again_before_it_expires(tmp_path: Path) -> None:
    publisher, clock, path, master, lease = _publisher(tmp_path)
    publisher.publish(master, (lease,))
    first = MetaLeaseSet.decode(path.read_bytes())
    lifetime = first.expires
    for _ in range(5):  # five lifetimes later, the file's Meta LS2 is still valid
        clock.advance(lifetime / 2 + 1)
        current = MetaLeaseSet.decode(path.read_bytes())
        assert current.verdicts(int(clock.seconds())).ok
        assert current.published > first.published
    publisher.stop(master)
    assert not path.exists() and clock.getDelayedCalls() == []


def test_a_failed_renewal_is_said_and_tried_again(tmp_path: Path) -> None:
    publisher, clock, path, master, lease = _publisher(tmp_path)
    publisher.publish(master, (lease,))
    lifetime = MetaLeaseSet.decode(path.read_bytes()).expires
    path.unlink()
    path.parent.rmdir()  # the directory gone: the write fails
    events: list[Any] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        clock.advance(lifetime / 2 + 1)
    finally:
        globalLogPublisher.removeObserver(observer)
    [warning] = [formatEvent(e) for e in events if e.get("log_level") == LogLevel.warn]
    assert "Meta LS2 not renewed (again in 60 s)" in warning
    path.parent.mkdir()
    clock.advance(BinaryFilePublisher.RETRY_S)
    assert MetaLeaseSet.decode(path.read_bytes()).verdicts(int(clock.seconds())).ok
