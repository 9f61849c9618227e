"""`garlicfarm init` makes a farm that publishes a real Meta LS2: its keys, and what nodes read of them."""

from __future__ import annotations

import json
import time
from pathlib import Path

from twisted.internet.task import Clock

from garlicfarm.app.config import app_config
from garlicfarm.app.node import make_publisher
from garlicfarm.config import load_config
from garlicfarm.farminit import TRANSIENT_DAYS, FarmSpec, create_farm
from garlicfarm.i2p.build import leaf_hash
from garlicfarm.i2p.i2cp import SessionConfig
from garlicfarm.i2p.keys import PrivateKeyFile
from garlicfarm.i2p.metals import MetaLeaseSet
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.signed import BinaryFilePublisher


def test_keys_and_configs(tmp_path: Path) -> None:
    create_farm(FarmSpec(tmp_path / "f", 2, base_port=1), force=True)
    d = tmp_path / "f"
    master = PrivateKeyFile.decode((d / "master.dat").read_bytes())
    master.check()
    assert not master.is_offline
    transients = set()
    for k in (1, 2):
        member = PrivateKeyFile.decode((d / f"node-{k}.dat").read_bytes())
        member.check()
        assert member.destination == master.destination and member.offline is not None
        left = member.offline.expires - time.time()
        assert TRANSIENT_DAYS * 86_400 - 60 < left <= TRANSIENT_DAYS * 86_400
        transients.add(member.signer.public)
        session = SessionConfig.decode((d / f"node-{k}.session").read_bytes())
        assert session.destination == master.destination  # presigned by the master, for i2pd
        leaf = PrivateKeyFile.decode((d / f"node-{k}-leaf.dat").read_bytes())
        app = app_config(load_config(d / f"node-{k}.toml"))
        assert app.master == master.destination.b32
        assert app.leaves == (leaf.destination.b64,)
        assert leaf_hash(app.leaves[0]) == leaf.destination.hash
        assert (app.publisher_kind, app.publisher_format) == ("file", "binary")
        assert app.publisher_keys == d / f"node-{k}.dat"
        assert app.publisher_path == d / f"node-{k}" / "metals.bin"
    assert len(transients) == 2  # one transient key per member


def test_the_configured_publisher_writes_a_signed_metals(tmp_path: Path) -> None:
    create_farm(FarmSpec(tmp_path / "f", 1, base_port=1), force=True)
    d = tmp_path / "f"
    app = app_config(load_config(d / "node-1.toml"))
    now = 1_800_000_000.0
    clock = Clock()
    clock.advance(now)
    publisher = make_publisher(clock, app)
    assert isinstance(publisher, BinaryFilePublisher)
    (d / "node-1").mkdir()
    publisher.publish(app.master, (MetaLease(app.leaves[0], 100),))
    metals = MetaLeaseSet.decode((d / "node-1" / "metals.bin").read_bytes())
    assert metals.destination.b32 == app.master and metals.verdicts(int(now)).ok
    assert [lease.hash for lease in metals.leases] == [leaf_hash(app.leaves[0])]
    publisher.stop(app.master)
    assert not (d / "node-1" / "metals.bin").exists()


def test_a_configured_leaf_must_be_a_destination_where_the_metals_is_signed(tmp_path: Path) -> None:
    import pytest

    from garlicfarm.config import ConfigError

    create_farm(FarmSpec(tmp_path / "f", 1, base_port=1), force=True)
    toml = tmp_path / "f" / "node-1.toml"
    text = toml.read_text()
    leaf = app_config(load_config(toml)).leaves[0]
    b32 = PrivateKeyFile.decode((tmp_path / "f" / "node-1-leaf.dat").read_bytes()).destination.b32
    toml.write_text(text.replace(leaf, b32))
    assert app_config(load_config(toml)).leaves == (b32,)  # a b32 address will do
    toml.write_text(text.replace(leaf, "farm-leaf-1"))
    with pytest.raises(
        ConfigError, match="'farm-leaf-1' is neither a base64 destination nor a .b32.i2p address"
    ):
        app_config(load_config(toml))


def test_the_farms_newest_publishing_date_is_read_from_the_records() -> None:
    from garlicfarm.app.node import _newest_published
    from garlicfarm.app.schema import parse_accepted
    from garlicfarm.app.state import FarmState
    from tests.app.records import record

    state = FarmState("farm")
    assert _newest_published(state) is None
    for server, published_ms in ((1, 1_700_000_000_500), (2, 1_700_000_100_900), (3, 0)):
        raw = record(server, 1_700_000_000_000)
        raw["meta"]["lastPublishedTime"] = published_ms
        state.latest[server] = parse_accepted(json.dumps(raw).encode(), "farm")
    assert _newest_published(state) == 1_700_000_100
