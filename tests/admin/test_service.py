"""The console wired into GarlicFarmService: [admin] parsing (every key, defaults, bounds, messages),
admin_url in the status, one shared site and port for several farms of one process (closed with the
last), the site's settings, a port that cannot be bound, TLS, health sampling on the reactor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from twisted.internet.address import IPv4Address
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort
from twisted.internet.testing import MemoryReactorClock
from twisted.protocols.tls import TLSMemoryBIOFactory
from zope.interface import implementer

from garlicfarm.admin import service as admin_service
from garlicfarm.admin.config import AdminConfig, admin_config
from garlicfarm.admin.service import AdminService, admin_url
from garlicfarm.config import ConfigError, TLSConfig, parse_config
from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import farm_tls, make_node


def _config(tmp_path: Path, admin: object, username: str = "farm") -> AdminConfig:
    """The [admin] table ``admin`` of a node whose [auth] names ``username`` and ``credentials``."""
    raw = {
        "node": {"id": 1, "endpoint": "tcp://127.0.0.1:9001", "listen": "tcp:9001", "data_dir": "n"},
        "auth": {"username": username, "password_file": "credentials"},
        "admin": admin,
    }
    return admin_config(parse_config(raw, tmp_path / "node.toml"))


def test_a_bare_port_means_loopback(tmp_path: Path) -> None:
    config = _config(tmp_path, {"listen": 9101})
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


def test_every_key_is_read(tmp_path: Path) -> None:
    """Each [admin] key reaches the AdminConfig; a password_file is relative to the node's file;
    origins are compared without case or a trailing slash."""
    config = _config(
        tmp_path,
        {
            "listen": "tcp:9443:interface=0.0.0.0",
            "username": "admin",
            "password_file": "admin-credentials",
            "url": "https://farm.example:9443/",
            "origins": ["HTTPS://Console.BOX/", "http://other.example:8080"],
            "sample_interval": 2,
        },
    )
    assert config == AdminConfig(
        listen="tcp:9443:interface=0.0.0.0",
        username="admin",
        password_file=tmp_path / "admin-credentials",
        url="https://farm.example:9443/",
        origins=("https://console.box", "http://other.example:8080"),
        sample_interval=2.0,
        source=f"{tmp_path / 'node.toml'}: [admin]",
    )


def test_the_defaults(tmp_path: Path) -> None:
    """Without the keys: [auth]'s username and password file, samples every 10 s, 64 connections, 30 s
    to send a request, the address made from listen."""
    config = _config(tmp_path, {"listen": 9101}, username="operator")
    assert (config.username, config.password_file) == ("operator", tmp_path / "credentials")
    assert (config.sample_interval, config.max_connections, config.request_deadline) == (10.0, 64, 30.0)
    assert config.url is None and config.origins == ()


@pytest.mark.parametrize("url", ["http://127.0.0.1:9101/", "https://farm.example/console/"])
def test_http_and_https_urls_are_accepted(tmp_path: Path, url: str) -> None:
    assert _config(tmp_path, {"url": url}).url == url


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("listen", 1),
        ("listen", 65535),
        ("sample_interval", 0.1),
        ("sample_interval", 600),
        ("max_connections", 1),
        ("request_deadline", 1),
        ("request_deadline", 3600),
    ],
)
def test_bounds_are_inclusive(tmp_path: Path, key: str, value: int | float) -> None:
    """The ranges the messages name include their ends."""
    config = _config(tmp_path, {key: value})
    expected = f"tcp:{value}:interface=127.0.0.1" if key == "listen" else value
    assert getattr(config, key) == expected


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("listen", 0, "listen port 0 out of range 1..65535"),
        ("listen", 65536, "listen port 65536 out of range 1..65535"),
        ("sample_interval", True, "sample_interval must be a number of seconds from 0.1 to 600"),
        ("sample_interval", 600.5, "sample_interval must be a number of seconds from 0.1 to 600"),
        ("max_connections", True, "max_connections must be a positive integer"),
        ("request_deadline", True, "request_deadline must be a number of seconds from 1 to 3600"),
        ("request_deadline", 3600.5, "request_deadline must be a number of seconds from 1 to 3600"),
    ],
)
def test_values_just_outside_are_refused(tmp_path: Path, key: str, value: object, message: str) -> None:
    """Just past each bound, and true/false for a number, are refused with the key's own message."""
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, {key: value})
    assert str(caught.value) == f"{tmp_path / 'node.toml'}: [admin] {message}"


def test_the_password_is_read_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "credentials").write_text("  s3cret \n")
    assert _config(tmp_path, {"listen": 9101}).password() == "s3cret"


def test_a_missing_password_file_names_the_admin_table(tmp_path: Path) -> None:
    """The error names the file and the table that named it."""
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, {"listen": 9101}).password()
    where = f"{tmp_path / 'node.toml'}: [admin]"
    assert str(caught.value) == f"{where} password_file {tmp_path / 'credentials'}: No such file or directory"


def test_no_password_file_at_all(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        AdminConfig(listen="tcp:9101").password()
    assert str(caught.value) == "[admin]: no password_file"


def test_connection_limits_are_read(tmp_path: Path) -> None:
    config = _config(tmp_path, {"listen": 9101, "max_connections": 8, "request_deadline": 5})
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


@pytest.mark.parametrize(
    ("admin", "url"),
    [
        (AdminConfig(listen="tcp:1", url="https://farm.example/console/"), "https://farm.example/console/"),
        (AdminConfig(listen="tcp:9101:interface=0.0.0.0"), "http://127.0.0.1:9101/"),
        (AdminConfig(listen="tcp6:9101:interface=\\:\\:"), "http://127.0.0.1:9101/"),
        (AdminConfig(listen="tcp6:9101:interface=\\:\\:1"), "http://[::1]:9101/"),
        (AdminConfig(listen="tcp:9101:interface=192.0.2.7:backlog=5"), "http://192.0.2.7:9101/"),
        (AdminConfig(listen="ssl:9101:interface=127.0.0.1"), None),
        (AdminConfig(listen="tcp"), None),
        (AdminConfig(listen="tcp:http"), None),
    ],
)
def test_admin_url_from_listen(admin: AdminConfig, url: str | None) -> None:
    """An url that ends in / is kept; a bind to all addresses is reached on loopback; only a tcp or tcp6
    listen with a port number gives an address (an endpoint type we cannot read gives none)."""
    assert admin_url(admin, None) == url


def test_a_listen_that_is_not_an_endpoint_string() -> None:
    with pytest.raises(ConfigError) as caught:
        admin_service.server_endpoint(MemoryReactorClock(), "nope:9101", None)
    assert str(caught.value).startswith(
        "[admin] listen 'nope:9101' is not a Twisted server endpoint string: "
    )


def test_cleartext_console_only_on_loopback() -> None:
    with pytest.raises(ConfigError) as caught:
        admin_service.server_endpoint(MemoryReactorClock(), "tcp:9101:interface=0.0.0.0", None)
    assert str(caught.value) == "[admin] listen without [tls] must be on loopback (interface=127.0.0.1)"


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


@implementer(IListeningPort)
class Port:
    """A listening port that remembers whether it was stopped."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.listening = True

    def startListening(self) -> None:
        pass

    def stopListening(self) -> None:
        self.listening = False

    def getHost(self) -> IPv4Address:
        return IPv4Address("TCP", "127.0.0.1", self.number)


class Ports(MemoryReactorClock):
    """A memory reactor whose listening ports say whether they were stopped (``ports`` by number)."""

    def __init__(self) -> None:
        super().__init__()
        self.ports: dict[int, Port] = {}

    def listenTCP(self, port: int, factory: Any, backlog: int = 50, interface: str = "") -> Port:
        super().listenTCP(port, factory, backlog, interface)
        self.ports[port] = Port(port)
        return self.ports[port]


def test_two_farms_share_one_console_port(tmp_path: Path) -> None:
    """The site and its port live while any farm uses them: the last one's stop closes the port."""
    clock = Ports()
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
        assert admin_service._SITES["tcp:9101:interface=127.0.0.1"] is shared
        assert clock.ports[9101].listening
    finally:
        south.stopService()
    assert not admin_service._SITES
    assert not clock.ports[9101].listening


LISTEN = "tcp:9102:interface=127.0.0.1"


def second_console(node: GarlicFarmService, **admin: Any) -> AdminService:
    """Another console for ``node``'s farm, on port 9102, with ``admin``'s settings."""
    return AdminService(node, attrs.evolve(admin_config(node.config), listen=LISTEN, **admin))


def test_the_site_is_built_from_admin(node: GarlicFarmService) -> None:
    """origins, max_connections and request_deadline reach the site."""
    service = second_console(node, origins=("https://x.example",), max_connections=5, request_deadline=7.0)
    service.startService()
    try:
        site = admin_service._SITES[LISTEN].site
        assert (site.origins, site.max_connections, site.request_deadline) == (("https://x.example",), 5, 7.0)
        assert list(site.farms) == ["farm"]
    finally:
        service.stopService()
    assert LISTEN not in admin_service._SITES


def test_samples_start_one_interval_after_the_start(
    node: GarlicFarmService, clock: MemoryReactorClock
) -> None:
    """The first sample is taken one interval after the start (none at once), at the reactor's time."""
    service = second_console(node, sample_interval=4.0)
    service.startService()
    try:
        assert service.farm.history.samples(1) == []
        clock.advance(4)
        assert [s.t for s in service.farm.history.samples(1)] == [clock.seconds()]
    finally:
        service.stopService()


def test_a_port_that_cannot_be_bound_fails_the_start(
    node: GarlicFarmService, clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy port fails the start naming the address and the key, and leaves no site behind."""

    def busy(port: int, factory: Any, backlog: int = 50, interface: str = "") -> None:
        raise CannotListenError(interface, port, OSError(98, "Address already in use"))

    monkeypatch.setattr(clock, "listenTCP", busy)
    with pytest.raises(ConfigError) as caught:
        second_console(node).startService()
    assert (
        str(caught.value) == f"cannot listen on {LISTEN} ([admin] listen): [Errno 98] Address already in use"
    )
    assert LISTEN not in admin_service._SITES


def test_with_tls_the_console_is_https(
    node: GarlicFarmService, clock: MemoryReactorClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node with [tls] serves its console over TLS with its own certificate, at an https address."""
    monkeypatch.setattr(node, "config", attrs.evolve(node.config, tls=farm_tls(tmp_path)))
    service = second_console(node)
    assert service.url == service.farm.admin_url == "https://127.0.0.1:9102/"
    service.startService()
    try:
        (factory,) = [factory for port, factory, *_ in clock.tcpServers if port == 9102]
        assert isinstance(factory, TLSMemoryBIOFactory)
    finally:
        service.stopService()


def test_without_admin_there_is_no_console(tmp_path: Path) -> None:
    clock = MemoryReactorClock()
    node = make_node(tmp_path, clock, admin_port=None)
    try:
        assert node.admin is None
        assert node.status()["admin_url"] is None
    finally:
        node.stopService()
