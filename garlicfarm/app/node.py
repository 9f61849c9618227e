"""Builds a node's application parts from its configuration: router, reporter, publisher role, archive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from garlicfarm.app.archive import TelemetryArchive
from garlicfarm.app.config import AppConfig
from garlicfarm.app.logcheck import Divergence
from garlicfarm.app.publishing import MetaLSRole, StatusReporter
from garlicfarm.app.state import FarmState
from garlicfarm.config import ConfigError, NodeConfig, read_secret
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.i2cp import SessionConfig
from garlicfarm.i2p.keys import PrivateKeyFile
from garlicfarm.raft.driver import RaftDriver
from garlicfarm.router.interface import MetaLSPublisher, RouterAPI
from garlicfarm.router.signed import SigningPublisher
from garlicfarm.wire import ClientRequest, Response


def make_router(reactor: Any, app: AppConfig) -> RouterAPI:
    if app.router_kind == "i2pcontrol":
        from garlicfarm.router.i2pcontrol import DEFAULT_PASSWORD, I2PControlRouter  # noqa: PLC0415

        password = DEFAULT_PASSWORD  # i2pd's and Java I2P's default, when no password_file is given
        if app.router_password_file is not None:
            password = read_secret(app.router_password_file, "[router]")
        return I2PControlRouter(reactor, app.router_url, password, leaves=app.leaves, pin=app.router_pin)
    from garlicfarm.router.static import StaticRouter  # noqa: PLC0415

    if app.status_file is not None:
        return StaticRouter.from_file(app.status_file)
    return StaticRouter.stand_in(app.leaves)


def _read_keys(app: AppConfig) -> PrivateKeyFile:
    assert app.publisher_keys is not None
    try:
        keys = PrivateKeyFile.decode(app.publisher_keys.read_bytes())
        keys.check()
    except OSError as e:
        raise ConfigError(f"[publisher] keys {app.publisher_keys}: {e.strerror}") from None
    except I2PFormatError as e:
        raise ConfigError(f"[publisher] keys {app.publisher_keys}: not a usable key file: {e}") from None
    return keys


def _session(app: AppConfig, keys: PrivateKeyFile) -> SessionConfig | None:
    if app.publisher_session is None:
        return None
    try:
        config = SessionConfig.decode(app.publisher_session.read_bytes())
    except OSError as e:
        raise ConfigError(f"[publisher] session {app.publisher_session}: {e.strerror}") from None
    except I2PFormatError as e:
        raise ConfigError(f"[publisher] session {app.publisher_session}: not a session config: {e}") from None
    if config.destination != keys.destination:
        raise ConfigError(f"[publisher] session {app.publisher_session} is for another destination")
    return config


def _i2cp_auth(app: AppConfig) -> tuple[tuple[str, str], ...] | None:
    """I2CP's username and password, sent in GetDate, where the router asks for them (i2cp.auth)."""
    if app.publisher_username is None:
        return None
    if app.publisher_password_file is None:
        raise ConfigError("[publisher] username needs password_file (the I2CP password, alone in a file)")
    password = read_secret(app.publisher_password_file, "[publisher]")
    return (("i2cp.password", password), ("i2cp.username", app.publisher_username))


def make_publisher(reactor: Any, app: AppConfig) -> MetaLSPublisher:
    from garlicfarm.router import publishers  # noqa: PLC0415

    if app.publisher_kind == "i2cp":
        from twisted.internet.endpoints import clientFromString  # noqa: PLC0415

        from garlicfarm.router.i2cp import I2CPPublisher  # noqa: PLC0415

        keys = _read_keys(app)
        try:
            endpoint = clientFromString(reactor, app.publisher_i2cp)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"[publisher] i2cp {app.publisher_i2cp!r}: {e}") from None
        return I2CPPublisher(
            reactor,
            endpoint,
            keys,
            expires=app.publisher_expires,
            session_config=_session(app, keys),
            auth=_i2cp_auth(app),
            where=f"I2CP at {app.publisher_i2cp}",
        )
    if app.publisher_kind == "command":
        return publishers.CommandPublisher(list(app.publisher_command), reactor=reactor)
    if app.publisher_kind == "url":
        assert app.publisher_url is not None
        return publishers.URLPublisher(app.publisher_url, reactor=reactor)
    if app.publisher_kind == "none":
        return publishers.NullPublisher()
    assert app.publisher_path is not None
    if app.publisher_format == "binary":
        from garlicfarm.router.signed import BinaryFilePublisher  # noqa: PLC0415

        return BinaryFilePublisher(
            app.publisher_path, _read_keys(app), expires=app.publisher_expires, reactor=reactor
        )
    return publishers.FilePublisher(app.publisher_path)


def _newest_published(state: FarmState) -> int | None:
    """The newest publishing time (s) the members reported: a new publisher must publish after it."""
    newest = max((r.meta.lastPublishedTime for r in state.latest.values()), default=0)
    return newest // 1000 if newest else None


def _master(app: AppConfig, publisher: MetaLSPublisher) -> str:
    """The master the node reports: a signing publisher's key file names it."""
    if not isinstance(publisher, SigningPublisher):
        return app.master
    signer = publisher.signer
    b32: str = signer.keys.destination.b32
    if app.master_given and app.master not in (b32, signer.keys.destination.b64):
        raise ConfigError(f"[app] master {app.master!r} is not the destination of [publisher] keys ({b32})")
    return b32


class DivergenceAlarm:
    """Logs a member's divergence when a report first shows it, then at most every ``every`` seconds
    per member (forged reports in a member's name cannot flood the log)."""

    log = Logger()

    def __init__(self, clock: Callable[[], float], every: float = 60.0) -> None:
        self.clock, self.every = clock, every
        self._logged: dict[int, float] = {}

    def __call__(self, divergence: Divergence) -> None:
        now = self.clock()
        last = self._logged.get(divergence.member)
        if last is not None and now - last < self.every:
            return
        self._logged[divergence.member] = now
        self.log.error(
            "ALARM: {what}; one of them holds a corrupt or forged entry: wipe that member and let it"
            " resync (docs/security.md)",
            what=divergence.describe(),
        )


@attrs.define
class NodeApp:
    config: AppConfig
    state: FarmState
    archive: TelemetryArchive
    reporter: StatusReporter
    role: MetaLSRole

    def metals_status(self) -> dict[str, Any] | None:
        """The live signed Meta LS2 of a signing publisher (i2cp, binary file), else None."""
        hook = self.role.hook
        return hook.status() if isinstance(hook, SigningPublisher) else None

    @classmethod
    def build(
        cls,
        node: NodeConfig,
        app: AppConfig,
        state: FarmState,
        reactor: Any,
        driver: RaftDriver,
        send_to_leader: Callable[[int, ClientRequest], Deferred[Response]],
    ) -> NodeApp:
        assert app.archive_dir is not None
        archive = TelemetryArchive(app.archive_dir, node.id, app.retention_days, clock=lambda: state.now)
        state.on_record.append(archive.append)
        publisher = make_publisher(reactor, app)
        master = _master(app, publisher)
        if isinstance(publisher, SigningPublisher):
            publisher.signer.farm_newest = lambda: _newest_published(state)
        reporter = StatusReporter(
            reactor,
            driver,
            send_to_leader,
            make_router(reactor, app),
            node.cluster,
            interval=app.interval,
            publish_config=app.publish_config,
            master=master,
            log_mark=state.digest.mark,
        )
        state.on_divergence.append(DivergenceAlarm(reactor.seconds))
        role = MetaLSRole(node.id, master, publisher, reporter)
        state.on_change.append(role.changed)
        driver.on_leader_change.append(lambda _leader: reporter.leader_changed())
        # A restarting node replays its log first: the publisher hook acts on live state only, once
        # the node has applied what it had committed before it stopped.
        caught_up_at = driver.core.commit
        if driver.core.applied < caught_up_at:
            role.live = False

            def on_apply(index: int, _entry: object) -> None:
                if not role.live and index >= caught_up_at:
                    role.go_live()

            driver.add_apply_callback(on_apply)
        return cls(app, state, archive, reporter, role)
