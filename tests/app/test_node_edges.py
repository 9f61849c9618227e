"""How a node's application parts are built from its settings (garlicfarm.app.node): the router and the
publisher each [router]/[publisher] kind makes and what it is handed, each refused key file, session
file, I2CP endpoint and I2CP login word for word, the master a signing publisher names, the divergence
alarm's rate limit at its bound, and NodeApp.build's wiring: archive, reporter, role, the farm's
newest publishing time, leader changes, and a restarting node's publisher held back until it has
applied what it had committed."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogEvent, LogLevel, capturedLogs, formatEvent

from garlicfarm.app.config import AppConfig
from garlicfarm.app.logcheck import Divergence
from garlicfarm.app.node import DivergenceAlarm, NodeApp, make_publisher, make_router
from garlicfarm.app.schema import StatusRecord, parse_entry
from garlicfarm.app.state import FarmState
from garlicfarm.config import ConfigError, NodeConfig
from garlicfarm.i2p.i2cp import SessionConfig
from garlicfarm.i2p.keys import PrivateKeyFile, create_master
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.router.i2cp import I2CPPublisher
from garlicfarm.router.i2pcontrol import DEFAULT_PASSWORD, I2PControlRouter
from garlicfarm.router.publishers import CommandPublisher, FilePublisher, NullPublisher, URLPublisher
from garlicfarm.router.signed import BinaryFilePublisher
from garlicfarm.router.static import StaticRouter, StatusFileRouter
from tests.app.records import record
from tests.i2p.keysource import counter_random

KEYS = create_master(counter_random("node-edges"))
OTHER = create_master(counter_random("someone else"))
PIN = "sha256:" + ":".join(["AB"] * 32)
I2CP = "tcp:host=127.0.0.1:port=7654"


def keys_file(tmp_path: Path, keys: PrivateKeyFile = KEYS) -> Path:
    path = tmp_path / "metals.keys"
    path.write_bytes(keys.encoded)
    return path


def session_file(tmp_path: Path, keys: PrivateKeyFile = KEYS) -> tuple[Path, SessionConfig]:
    config = SessionConfig.create(keys.destination, keys.signer, 1_800_000_000_000, {"inbound.quantity": "2"})
    path = tmp_path / "session.bin"
    path.write_bytes(config.encoded)
    return path, config


def i2cp_app(tmp_path: Path, **changes: Any) -> AppConfig:
    settings: dict[str, Any] = {"publisher_keys": keys_file(tmp_path), "publisher_i2cp": I2CP, **changes}
    return AppConfig(publisher_kind="i2cp", **settings)


def held(owner: object, name: str) -> object:
    """An attribute a part keeps to itself: what it was handed."""
    return cast("object", getattr(owner, name))


def refusal(reactor: Any, app: AppConfig) -> str:
    with pytest.raises(ConfigError) as caught:
        make_publisher(reactor, app)
    return str(caught.value)


# ---------------------------------------------------------------------------------------- router


def test_a_static_router_with_a_status_file_reads_that_file(tmp_path: Path) -> None:
    router = make_router(MemoryReactorClock(), AppConfig(status_file=tmp_path / "status.json"))
    assert isinstance(router, StatusFileRouter) and router.path == tmp_path / "status.json"
    stand_in = make_router(MemoryReactorClock(), AppConfig(leaves=("leaf-a",)))
    assert type(stand_in) is StaticRouter and [leaf.destination for leaf in stand_in.leaves] == ["leaf-a"]


def test_an_i2pcontrol_router_gets_the_url_pin_leaves_reactor_and_default_password() -> None:
    reactor = MemoryReactorClock()
    app = AppConfig(
        router_kind="i2pcontrol", router_url="https://127.0.0.1:7651/x", router_pin=PIN, leaves=("a", "b")
    )
    router = make_router(reactor, app)
    assert isinstance(router, I2PControlRouter)
    assert (router.url, router.endpoint.pin, router.leaves) == (
        "https://127.0.0.1:7651/x",
        b"\xab" * 32,
        ("a", "b"),
    )
    assert held(router, "_clock") is reactor
    assert held(router, "_password") == DEFAULT_PASSWORD


def test_an_i2pcontrol_routers_password_comes_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("  s3cret\n")
    app = AppConfig(router_kind="i2pcontrol", router_password_file=tmp_path / "pw")
    router = make_router(MemoryReactorClock(), app)
    assert isinstance(router, I2PControlRouter) and held(router, "_password") == "s3cret"
    missing = AppConfig(router_kind="i2pcontrol", router_password_file=tmp_path / "nothing")
    with pytest.raises(ConfigError) as caught:
        make_router(MemoryReactorClock(), missing)
    assert str(caught.value) == f"[router] password_file {tmp_path / 'nothing'}: No such file or directory"


# ------------------------------------------------------------------------------------- publisher


def test_the_plain_publishers_get_their_command_url_or_path_and_the_reactor(tmp_path: Path) -> None:
    reactor = MemoryReactorClock()
    command = make_publisher(reactor, AppConfig(publisher_kind="command", publisher_command=("sign", "-")))
    assert (
        isinstance(command, CommandPublisher)
        and command.argv == ("sign", "-")
        and held(command, "_reactor") is reactor
    )
    url = make_publisher(reactor, AppConfig(publisher_kind="url", publisher_url="https://example.org/m"))
    assert (
        isinstance(url, URLPublisher)
        and url.url == "https://example.org/m"
        and held(url, "_reactor") is reactor
    )
    assert isinstance(make_publisher(reactor, AppConfig(publisher_kind="none")), NullPublisher)
    file = make_publisher(reactor, AppConfig(publisher_path=tmp_path / "m.json"))
    assert isinstance(file, FilePublisher) and file.path == tmp_path / "m.json"


def test_an_i2cp_publisher_gets_its_endpoint_keys_lifetime_and_where(tmp_path: Path) -> None:
    reactor = MemoryReactorClock()
    publisher = make_publisher(reactor, i2cp_app(tmp_path, publisher_expires=900))
    assert isinstance(publisher, I2CPPublisher)
    assert publisher.reactor is reactor and publisher.keys == KEYS and publisher.signer.expires == 900
    assert isinstance(publisher.endpoint, TCP4ClientEndpoint)
    assert (held(publisher.endpoint, "_host"), held(publisher.endpoint, "_port")) == ("127.0.0.1", 7654)
    assert held(publisher.endpoint, "_reactor") is reactor
    assert (publisher.session_config, publisher.auth, publisher.where) == (None, None, f"I2CP at {I2CP}")


def test_an_i2cp_publisher_gets_its_session_config_and_login(tmp_path: Path) -> None:
    path, config = session_file(tmp_path)
    (tmp_path / "i2cp-pw").write_text("hunter2\n")
    app = i2cp_app(
        tmp_path,
        publisher_session=path,
        publisher_username="farm",
        publisher_password_file=tmp_path / "i2cp-pw",
    )
    publisher = make_publisher(MemoryReactorClock(), app)
    assert isinstance(publisher, I2CPPublisher) and publisher.session_config == config
    assert publisher.auth == (("i2cp.password", "hunter2"), ("i2cp.username", "farm"))


def test_an_i2cp_endpoint_that_does_not_parse_is_refused(tmp_path: Path) -> None:
    text = refusal(MemoryReactorClock(), i2cp_app(tmp_path, publisher_i2cp="tcp:port=notanumber"))
    assert (
        text == "[publisher] i2cp 'tcp:port=notanumber': invalid literal for int() with base 10: 'notanumber'"
    )


def test_unusable_key_files_are_refused_naming_the_file(tmp_path: Path) -> None:
    gone = tmp_path / "gone.keys"
    assert (
        refusal(None, i2cp_app(tmp_path, publisher_keys=gone))
        == f"[publisher] keys {gone}: No such file or directory"
    )
    junk = tmp_path / "junk.keys"
    junk.write_bytes(b"\x00" * 10)
    text = refusal(None, i2cp_app(tmp_path, publisher_keys=junk))
    assert (
        text.startswith(f"[publisher] keys {junk}: not a usable key file: ")
        and len(text) > len(str(junk)) + 42
    )


def test_unusable_session_files_are_refused_naming_the_file(tmp_path: Path) -> None:
    gone = tmp_path / "gone.bin"
    reactor = MemoryReactorClock()
    assert refusal(reactor, i2cp_app(tmp_path, publisher_session=gone)) == (
        f"[publisher] session {gone}: No such file or directory"
    )
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x01\x02")
    text = refusal(reactor, i2cp_app(tmp_path, publisher_session=junk))
    assert text.startswith(f"[publisher] session {junk}: not a session config: ")
    others, _config = session_file(tmp_path, OTHER)
    assert refusal(reactor, i2cp_app(tmp_path, publisher_session=others)) == (
        f"[publisher] session {others} is for another destination"
    )


def test_an_i2cp_username_needs_a_readable_password_file(tmp_path: Path) -> None:
    reactor = MemoryReactorClock()
    assert refusal(reactor, i2cp_app(tmp_path, publisher_username="farm")) == (
        "[publisher] username needs password_file (the I2CP password, alone in a file)"
    )
    gone = tmp_path / "gone-pw"
    app = i2cp_app(tmp_path, publisher_username="farm", publisher_password_file=gone)
    assert refusal(reactor, app) == f"[publisher] password_file {gone}: No such file or directory"


# ----------------------------------------------------------------------------------------- alarm


def alarms(events: Sequence[LogEvent]) -> list[str]:
    return [e["what"][:8] for e in events if "ALARM" in e.get("log_format", "")]


def test_the_divergence_alarm_is_quiet_for_just_under_a_minute_then_logged_again() -> None:
    now = [1000.0]
    alarm = DivergenceAlarm(lambda: now[0])
    with capturedLogs() as events:
        for t in (1000.0, 1059.999, 1060.0, 1119.999, 1120.0):
            now[0] = t
            alarm(Divergence(3, 5, "aa" * 32, "bb" * 32))
    assert alarms(events) == ["server 3"] * 3  # at 1000, 1060 and 1120


# ----------------------------------------------------------------------------------------- build


class FakeDriver:
    """What NodeApp.build uses of a RaftDriver: its core's commit and applied indexes, and its hooks."""

    def __init__(self, commit: int, applied: int) -> None:
        self.core = SimpleNamespace(commit=commit, applied=applied)
        self.on_leader_change: list[Callable[[int | None], None]] = []
        self.apply_callbacks: list[Callable[[int, object], None]] = []

    def add_apply_callback(self, callback: Callable[[int, object], None]) -> None:
        self.apply_callbacks.append(callback)


def send_to_leader(_leader: int, _request: Any) -> Any:
    raise AssertionError("not sent in these tests")


def build(
    tmp_path: Path, driver: FakeDriver, reactor: MemoryReactorClock | None = None, **changes: Any
) -> tuple[NodeApp, FarmState]:
    settings: dict[str, Any] = {
        "interval": 5.0,
        "publish_config": "on",
        "router_kind": "i2pcontrol",
        "publisher_kind": "file",
        "publisher_format": "binary",
        "publisher_path": tmp_path / "metals.bin",
        "publisher_keys": keys_file(tmp_path),
        "archive_dir": tmp_path / "archive",
        "retention_days": 7,
        **changes,
    }
    state = FarmState("farm")
    node = cast("NodeConfig", SimpleNamespace(id=3, cluster="farm"))
    raft = cast("RaftDriver", driver)
    return NodeApp.build(
        node, AppConfig(**settings), state, reactor or MemoryReactorClock(), raft, send_to_leader
    ), state


def published_at(member: int, ms: int) -> StatusRecord:
    raw = record(member, 1_800_000_000_000)
    raw["meta"]["lastPublishedTime"] = ms
    parsed = parse_entry(json.dumps(raw).encode(), "farm")
    assert isinstance(parsed, StatusRecord)
    return parsed


def test_build_wires_the_archive_reporter_and_role_from_the_settings(tmp_path: Path) -> None:
    reactor = MemoryReactorClock()
    driver = FakeDriver(commit=0, applied=0)
    app, state = build(tmp_path, driver, reactor)
    assert (app.config.interval, app.state) == (5.0, state)
    archive = app.archive
    assert (archive.dir, archive.server_id, archive.retention_days) == (tmp_path / "archive", 3, 7)
    state.now = 1_800_000_000_123
    assert (
        archive.clock is not None
        and archive.clock() == 1_800_000_000_123
        and archive.append in state.on_record
    )
    reporter = app.reporter
    assert held(reporter, "driver") is driver and held(reporter, "_send_to_leader") is send_to_leader
    assert (reporter.cluster, reporter.interval, reporter.publish_config) == ("farm", 5.0, "on")
    assert reporter.master == KEYS.destination.b32 and reporter.log_mark == state.digest.mark
    assert isinstance(reporter.router, I2PControlRouter) and held(reporter.router, "_clock") is reactor
    role = app.role
    assert (role.server_id, role.master, role.reporter) == (3, KEYS.destination.b32, reporter)
    assert isinstance(role.hook, BinaryFilePublisher) and role.changed in state.on_change


def test_the_metals_status_is_a_signing_publishers_own(tmp_path: Path) -> None:
    app, _state = build(tmp_path, FakeDriver(0, 0))
    assert isinstance(app.role.hook, BinaryFilePublisher)
    assert app.metals_status() == app.role.hook.status() and app.metals_status() is not None
    plain, _state = build(tmp_path, FakeDriver(0, 0), publisher_format="json", publisher_keys=None)
    assert plain.metals_status() is None


def test_a_master_that_is_not_the_key_files_destination_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        build(tmp_path, FakeDriver(0, 0), master="farm-master", master_given=True)
    assert str(caught.value) == (
        f"[app] master 'farm-master' is not the destination of [publisher] keys ({KEYS.destination.b32})"
    )


def test_a_new_publisher_signs_after_the_newest_time_the_members_reported_publishing(tmp_path: Path) -> None:
    app, state = build(tmp_path, FakeDriver(0, 0))
    assert isinstance(app.role.hook, BinaryFilePublisher)
    newest = app.role.hook.signer.farm_newest
    assert newest is not None and newest() is None  # nobody reported yet
    state.latest[1] = published_at(1, 0)
    assert newest() is None  # nobody has published
    state.latest[2] = published_at(2, 1_800_000_123_999)
    state.latest[4] = published_at(4, 1_700_000_000_000)
    assert newest() == 1_800_000_123  # whole seconds, rounded down


def test_a_leader_change_asks_the_reporter_to_report_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = FakeDriver(0, 0)
    app, _state = build(tmp_path, driver)
    calls: list[str] = []
    monkeypatch.setattr(app.reporter, "leader_changed", lambda: calls.append("again"))
    [on_leader_change] = driver.on_leader_change
    on_leader_change(2)
    assert calls == ["again"]


def test_divergences_are_alarmed_on_the_reactors_clock_word_for_word(tmp_path: Path) -> None:
    reactor = MemoryReactorClock()
    reactor.advance(500)
    _app, state = build(tmp_path, FakeDriver(0, 0), reactor)
    [alarm] = state.on_divergence
    assert isinstance(alarm, DivergenceAlarm) and alarm.clock() == 500
    divergence = Divergence(2, 5, "aa" * 32, "bb" * 32)
    with capturedLogs() as events:
        alarm(divergence)
    [event] = events
    assert event["log_level"] == LogLevel.error
    assert formatEvent(event) == (
        f"ALARM: {divergence.describe()}; one of them holds a corrupt or forged entry: wipe that member and"
        " let it resync (docs/security.md)"
    )


def test_a_node_that_applied_all_it_committed_publishes_at_once(tmp_path: Path) -> None:
    driver = FakeDriver(commit=8, applied=8)
    app, _state = build(tmp_path, driver)
    assert app.role.live is True and driver.apply_callbacks == []


def test_a_restarting_node_publishes_once_it_has_applied_what_it_had_committed(tmp_path: Path) -> None:
    driver = FakeDriver(commit=8, applied=5)
    app, _state = build(tmp_path, driver)
    assert app.role.live is False
    [on_apply] = driver.apply_callbacks
    on_apply(7, None)
    assert app.role.live is False
    on_apply(8, None)
    assert app.role.live is True
