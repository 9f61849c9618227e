"""The console wired into GarlicFarmService: [admin] parsing, admin_url in the status, one shared
site and port for several farms of one process, health sampling on the reactor."""

from __future__ import annotations

from pathlib import Path

import pytest
from twisted.internet.testing import MemoryReactorClock

from garlicfarm.admin import service as admin_service
from garlicfarm.admin.config import AdminConfig, admin_config
from garlicfarm.admin.service import admin_url
from garlicfarm.config import ConfigError, TLSConfig, parse_config
from tests.admin.nodes import make_node


def _config(tmp_path: Path, admin: object) -> object:
    raw = {
        "node": {"id": 1, "endpoint": "tcp://127.0.0.1:9001", "listen": "tcp:9001", "data_dir": "n"},
        "auth": {"username": "farm", "password_file": "credentials"},
        "admin": admin,
    }
    return admin_config(parse_config(raw, tmp_path / "node.toml"))


def test_a_bare_port_means_loopback(tmp_path: Path) -> None:
    config = _config(tmp_path, {"listen": 9101})
    assert isinstance(config, AdminConfig)
    assert config.listen == "tcp:9101:interface=127.0.0.1"
    assert config.username == "farm" and config.password_file == tmp_path / "credentials"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"listen": 70000}, "out of range"),
        ({"listen": ""}, "non-empty string"),
        ({"username": "admin"}, "go together"),
        ({"port": 1}, "unknown key 'port'"),
        ({"sample_interval": 0}, "sample_interval"),
        ({"origins": ["example.com"]}, "origins"),
        ({"url": "ftp://x"}, "url"),
        ({"max_connections": 0}, "max_connections"),
        ({"request_deadline": 0.5}, "request_deadline"),
    ],
)
def test_bad_admin_tables(tmp_path: Path, table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(tmp_path, table)


def test_connection_limits_are_read(tmp_path: Path) -> None:
    config = _config(tmp_path, {"listen": 9101, "max_connections": 8, "request_deadline": 5})
    assert isinstance(config, AdminConfig)
    assert (config.max_connections, config.request_deadline) == (8, 5.0)


def test_admin_url() -> None:
    tls = TLSConfig(ca=Path("ca.pem"), cert=Path("c.pem"), key=Path("k.pem"))
    assert admin_url(AdminConfig(listen="tcp:9101:interface=127.0.0.1"), tls) == "https://127.0.0.1:9101/"
    assert admin_url(AdminConfig(listen="tcp:9101"), None) == "http://127.0.0.1:9101/"
    assert admin_url(AdminConfig(listen="tcp:9101:interface=\\:\\:1"), tls) == "https://[::1]:9101/"
    assert admin_url(AdminConfig(listen="tcp:1", url="https://farm.example/console"), tls) == (
        "https://farm.example/console/"
    )
    assert admin_url(AdminConfig(), tls) is None


def test_cleartext_console_only_on_loopback() -> None:
    with pytest.raises(ConfigError, match="loopback"):
        admin_service.server_endpoint(MemoryReactorClock(), "tcp:9101:interface=0.0.0.0", None)


def test_the_node_serves_its_console(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock)
    try:
        assert node.admin is not None
        assert node.status()["admin_url"] == "http://127.0.0.1:9101/"
        ports = [port for port, *_ in clock.tcpServers]
        assert ports == [9001, 9101]
        before = len(node.admin.farm.history.samples(1))
        for _ in range(3):
            clock.advance(node.admin.admin.sample_interval)
        assert len(node.admin.farm.history.samples(1)) == before + 3
    finally:
        node.stopService()
    assert "tcp:9101:interface=127.0.0.1" not in admin_service._SITES


def test_two_farms_share_one_console_port(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    north = make_node(tmp_path, clock, cluster="north", port=9001)
    # south names north's console address: both farms are served by the one site
    south = make_node(tmp_path, clock, cluster="south", port=9011, admin_port=9101)
    try:
        assert north.admin is not None and south.admin is not None
        shared = admin_service._SITES["tcp:9101:interface=127.0.0.1"]
        assert sorted(shared.site.farms) == ["north", "south"]
        assert [port for port, *_ in clock.tcpServers].count(9101) == 1
        north.stopService()
        assert sorted(shared.site.farms) == ["south"]
    finally:
        south.stopService()
    assert not admin_service._SITES


def test_without_admin_there_is_no_console(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock, admin_port=None)
    try:
        assert node.admin is None
        assert node.status()["admin_url"] is None
    finally:
        node.stopService()
