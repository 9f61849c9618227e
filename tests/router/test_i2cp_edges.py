"""The I2CP publisher's edges (garlicfarm.router.i2cp) against a scripted router: its status from idle
to stopped, the defaults (a one-hour Meta LS2, 30 s per step), the session config it signs, each step
that gets no answer named when it times out, how the router's refusals and disconnections are reported
(once per kind in the log), renewal not sooner than 1 s, stop (before a publish, during a handshake)
and a later publish, requests from the router during a handshake or after stop, and failures inside
timers and router requests that never reach the reactor. Deterministic time (task.Clock); the
router's side played by hand."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import pytest
from twisted.internet.defer import Deferred, fail
from twisted.internet.error import ConnectionDone, ConnectionRefusedError
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.internet.protocol import Factory
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import LogEvent, LogLevel, capturedLogs, formatEvent
from twisted.python.failure import Failure

from garlicfarm.i2p import i2cp
from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
from garlicfarm.router.i2cp import I2CPPublisher
from tests.i2p.keysource import counter_random
from tests.router.outcomes import delays, failure_text, outcome
from tests.router.test_i2cp_publisher import (
    CONTENTS,
    MASTER,
    NOW,
    SESSION,
    Endpoint,
    answer,
    handshake,
    metals_of,
    sent,
)

REFUSED = "cannot connect: Connection was refused by other side: 127.0.0.1:7654. "
REFUSED += "(is the router running, with I2CP on that port?)"


class Router(Endpoint):
    """The scripted router's endpoint; a dial may also never be answered or fail with ``error``."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = False
        self.error: Exception | None = None

    def connect(self, factory: Factory) -> Deferred[Any]:
        if self.hang:
            return Deferred()
        if self.error is not None:
            return fail(self.error)
        return super().connect(factory)


def start(
    keys: PrivateKeyFile = MASTER, at: float = NOW, **kwargs: Any
) -> tuple[I2CPPublisher, Clock, Router]:
    """A publisher with the defaults unless ``kwargs`` say otherwise, its clock at ``at``."""
    clock, router = Clock(), Router()
    clock.advance(at)
    return I2CPPublisher(clock, cast(IStreamClientEndpoint, router), keys, **kwargs), clock, router


def closing(transport: StringTransport) -> bool:
    """Whether the client has dropped the connection."""
    return bool(transport.disconnecting)


def request_leaseset(router: Router) -> None:
    """The router asks for the session's leaseset (RequestVariableLeaseSet, no leases)."""
    answer(router.last[0], i2cp.REQUEST_VARIABLE_LEASESET, SESSION.to_bytes(2, "big") + b"\x00")


def set_date(router: Router) -> i2cp.SessionConfig:
    """Answer GetDate; return the session config the client then sends in CreateSession."""
    proto, transport = router.last
    assert [kind for kind, _ in sent(transport)] == [i2cp.GET_DATE]
    answer(proto, i2cp.SET_DATE, int(NOW * 1000).to_bytes(8, "big"))
    ((kind, payload),) = sent(transport)
    assert kind == i2cp.CREATE_SESSION
    return i2cp.SessionConfig.decode(payload)


@contextmanager
def logged() -> Iterator[Sequence[LogEvent]]:
    """The events logged inside, with failing Deferreds collected first: an unhandled failure in one
    is logged ("Unhandled error in Deferred") as it is collected."""
    with capturedLogs() as events:
        yield events
        gc.collect()


def errors(events: Sequence[LogEvent]) -> list[str]:
    return [formatEvent(e) or "" for e in events if e.get("log_level") == LogLevel.error]


def tracebacks(events: Sequence[LogEvent]) -> list[str]:
    """Events with a Failure (a bug's traceback or an unhandled Deferred) and critical ones."""
    return [
        formatEvent(e) or ""
        for e in events
        if e.get("log_failure") is not None or e.get("log_level") == LogLevel.critical
    ]


def test_status_from_idle_through_connecting_and_published_to_stopped() -> None:
    """The status keys and states: idle before a publish, connecting until the session exists,
    published, stopped; the router is named "I2CP" by default; no error all along."""
    publisher, _, router = start()
    assert publisher.status() == {
        "state": "idle",
        "router": "I2CP",
        "error": None,
        "master": MASTER.destination.b32,
        "offlineExpires": None,
        "warning": None,
        "published": None,
    }
    publisher.publish("", CONTENTS)
    assert publisher.status()["state"] == "connecting"
    set_date(router)
    assert publisher.status()["state"] == "connecting"
    answer(router.last[0], i2cp.SESSION_STATUS, SESSION.to_bytes(2, "big") + b"\x01")
    metals = metals_of(sent(router.last[1]))
    status = publisher.status()
    assert {k: status[k] for k in ("state", "router", "error", "published")} == {
        "state": "published",
        "router": "I2CP",
        "error": None,
        "published": metals.published,
    }
    publisher.stop("")
    assert publisher.status()["state"] == "stopped"


def test_defaults_a_one_hour_meta_ls2_and_30_s_per_step() -> None:
    """Without options: the Meta LS2 expires 3600 s after it is published, and a router silent for
    30 s (not 29) fails the publish, which names the router "I2CP"."""
    publisher, _, router = start()
    publisher.publish("", CONTENTS)
    assert metals_of(handshake(router)).expires == 3600

    publisher, clock, _ = start()
    done = publisher.publish("", CONTENTS)
    clock.advance(29)
    assert publisher.state == "connecting"
    clock.advance(1)
    assert failure_text(done) == "I2CP: no answer to GetDate within 30 s"


@pytest.mark.parametrize("step", ["connect", "GetDate", "CreateSession"])
def test_a_step_without_an_answer_times_out_with_its_name(step: str) -> None:
    """Dialling, GetDate and CreateSession each get ``timeout`` seconds; the failure names the step and
    ``where``, the connection is dropped and tried again a second later."""
    publisher, clock, router = start(timeout=5.0, where="tcp:127.0.0.1:7654")
    router.hang = step == "connect"
    done = publisher.publish("", CONTENTS)
    if step == "CreateSession":
        set_date(router)
    clock.advance(4)
    assert publisher.state == "connecting"
    clock.advance(1)
    assert failure_text(done) == f"tcp:127.0.0.1:7654: no answer to {step} within 5 s"
    assert publisher.status()["error"] == f"no answer to {step} within 5 s"
    if step != "connect":
        assert closing(router.last[1])
    assert delays(clock) == [1.0]


def test_the_session_config_is_dated_now_in_ms_with_one_tunnel_each_way() -> None:
    """CreateSession's config: this clock's time in milliseconds, the tunnel options, signed by the
    master key."""
    at = NOW + 0.25
    publisher, _, router = start(at=at)
    publisher.publish("", CONTENTS)
    config = set_date(router)
    assert config.date_ms == 1_800_000_000_250
    assert config.options == tuple(sorted(i2cp.SESSION_OPTIONS.items()))
    assert config == i2cp.SessionConfig.create(
        MASTER.destination, MASTER.signer, config.date_ms, i2cp.SESSION_OPTIONS
    )


def test_a_session_config_for_another_destination_is_refused_word_for_word() -> None:
    other = create_master(counter_random("other"))
    presigned = i2cp.SessionConfig.create(other.destination, other.signer, 1)
    with pytest.raises(ValueError, match=r"^the session config is not for this key file's destination$"):
        start(session_config=presigned)


def test_a_disconnect_without_a_reason_says_so() -> None:
    """Disconnect with an empty payload: "no reason given", in the failed publish and the status."""
    publisher, _, router = start()
    done = publisher.publish("", CONTENTS)
    proto, transport = router.last
    answer(proto, i2cp.DISCONNECT, b"")
    assert closing(transport)
    proto.connectionLost(Failure(ConnectionDone()))
    assert failure_text(done) == "I2CP: the router disconnected: no reason given"
    assert publisher.status()["error"] == "the router disconnected: no reason given"


def test_a_router_closing_a_live_session_is_reported_and_the_session_made_again() -> None:
    """A clean close after the session was made: "the router closed the I2CP connection", state
    failing, a new connection and session a second later."""
    publisher, clock, router = start()
    publisher.publish("", CONTENTS)
    handshake(router)
    router.last[0].connectionLost(Failure(ConnectionDone()))
    assert publisher.state == "failing"
    assert publisher.last_error == "the router closed the I2CP connection"
    assert delays(clock) == [1.0]
    clock.advance(1)
    assert len(router.connections) == 2
    metals_of(handshake(router))
    assert publisher.state == "published" and publisher.last_error is None


def test_a_router_gone_mid_message_fails_the_step_it_was_answering() -> None:
    """The connection lost with half a SetDate read: the publish fails with Twisted's reason, and the
    next try starts from the protocol byte."""
    publisher, clock, router = start()
    done = publisher.publish("", CONTENTS)
    proto, _ = router.last
    proto.dataReceived(i2cp.frame(i2cp.SET_DATE, int(NOW * 1000).to_bytes(8, "big"))[:7])
    proto.connectionLost(Failure(ConnectionDone()))
    assert failure_text(done) == "I2CP: connection lost: Connection was closed cleanly."
    clock.advance(1)
    assert router.last[1].value().startswith(i2cp.PROTOCOL_BYTE)
    metals_of(handshake(router))


def test_a_message_of_65535_bytes_is_read_and_one_of_65536_drops_the_connection() -> None:
    """The length bound on the router's messages, at the bound and one past: a message of unknown type
    at 65,535 bytes is ignored, a length of 65,536 closes the connection and is what gets reported."""
    publisher, _, router = start()
    publisher.publish("", CONTENTS)
    handshake(router)
    proto, transport = router.last
    answer(proto, 99, bytes(i2cp.MAX_MESSAGE))
    assert not closing(transport) and publisher.state == "published"
    proto.dataReceived((i2cp.MAX_MESSAGE + 1).to_bytes(4, "big") + b"\x63")
    assert closing(transport)
    proto.connectionLost(Failure(ConnectionDone()))
    assert (
        publisher.last_error == "the router sent malformed I2CP: I2CP message of 65536 bytes (at most 65535)"
    )


def test_a_failure_without_a_message_is_named_by_its_type() -> None:
    publisher, _, router = start()
    router.error = OSError()
    done = publisher.publish("", CONTENTS)
    assert failure_text(done) == "I2CP: OSError"
    assert publisher.last_error == "OSError"


def test_an_unexpected_error_is_what_the_publish_reports() -> None:
    """A bug while signing (not the router): its message in the failure and the status."""
    publisher, _, router = start()

    def broken(contents: Any) -> Any:
        raise RuntimeError("a bug")

    publisher.signer.sign = broken  # type: ignore[method-assign]
    with logged():
        done = publisher.publish("", CONTENTS)
        handshake(router)
    assert failure_text(done) == "I2CP: a bug"
    assert publisher.status()["error"] == "a bug"


def test_each_kind_of_failure_is_logged_once_while_retried() -> None:
    """A refused dial from the first publish on, three tries: one error line; then the dial hangs:
    one more line, for the timeout."""
    publisher, clock, router = start(timeout=5.0)
    router.error = ConnectionRefusedError("127.0.0.1:7654")
    with logged() as events:
        done = publisher.publish("", CONTENTS)
        clock.advance(1)
        clock.advance(2)
        router.error, router.hang = None, True
        clock.advance(4)
        clock.advance(5)
        clock.advance(8)
        clock.advance(5)
    assert failure_text(done) == f"I2CP: {REFUSED}"
    assert len(router.connections) == 0 and publisher.state == "failing"
    master = MASTER.destination.b32
    assert errors(events) == [
        f"Meta LS2 of {master}: {REFUSED}",
        f"Meta LS2 of {master}: no answer to connect within 5 s",
    ]
    assert tracebacks(events) == []


@pytest.mark.parametrize(("expires", "renew"), [(1, 1.0), (2, 1.0), (3, 1.5)])
def test_renewal_at_half_the_lifetime_but_not_sooner_than_1_s(expires: int, renew: float) -> None:
    publisher, clock, router = start(expires=expires)
    publisher.publish("", CONTENTS)
    metals_of(handshake(router))
    assert delays(clock) == [renew]


def test_stop_before_any_publish_only_changes_the_state() -> None:
    publisher, clock, router = start()
    assert outcome(publisher.stop("")) is None
    assert publisher.state == "stopped" and router.connections == [] and clock.getDelayedCalls() == []


def test_a_publish_after_stop_makes_a_new_session() -> None:
    """Publisher again after another member's turn: a new connection and session, a new Meta LS2."""
    publisher, _, router = start()
    publisher.publish("", CONTENTS)
    handshake(router)
    publisher.stop("")
    done = publisher.publish("", CONTENTS)
    assert len(router.connections) == 2
    metals_of(handshake(router))
    assert outcome(done) is None and publisher.state == "published"


def test_a_request_after_stop_is_not_answered() -> None:
    """The old connection's RequestVariableLeaseSet after stop: nothing sent, no new connection."""
    publisher, clock, router = start()
    publisher.publish("", CONTENTS)
    handshake(router)
    publisher.stop("")
    sent(router.last[1])
    request_leaseset(router)
    assert sent(router.last[1]) == [] and len(router.connections) == 1
    assert publisher.state == "stopped" and clock.getDelayedCalls() == []


def test_a_request_during_the_handshake_is_answered_by_the_publish_under_way() -> None:
    """The router asks before SessionStatus arrives: one CreateLeaseSet2, not a second behind it."""
    publisher, _, router = start()
    publisher.publish("", CONTENTS)
    set_date(router)
    request_leaseset(router)
    answer(router.last[0], i2cp.SESSION_STATUS, SESSION.to_bytes(2, "big") + b"\x01")
    metals_of(sent(router.last[1]))


@pytest.mark.parametrize("trigger", ["renew", "answer to the router"])
def test_failed_renewals_and_answers_stay_inside_and_are_retried(trigger: str) -> None:
    """The member's offline signature expires while it publishes: the renewal (or the answer to the
    router's request) and the retry after it fail; each is logged once as an error, with no traceback
    and no unhandled failure, and the next retry is scheduled."""
    member = create_transient(MASTER, counter_random("m"), int(NOW) + 10)
    publisher, clock, router = start(member)
    publisher.publish("", CONTENTS)
    handshake(router)
    with logged() as events:
        if trigger == "renew":
            clock.advance(30)
        else:
            clock.advance(10)
            request_leaseset(router)
        assert publisher.state == "failing" and delays(clock) == [1.0]
        clock.advance(1)
        assert handshake(router) == []
    assert publisher.state == "failing" and delays(clock) == [2.0]
    assert publisher.last_error is not None and "offline signature" in publisher.last_error
    assert errors(events) == [f"Meta LS2 of {MASTER.destination.b32}: {publisher.last_error}"]
    assert tracebacks(events) == []


@pytest.mark.parametrize("why", ["renew", "retry", "answer to the router"])
def test_a_bug_inside_a_timer_or_a_request_is_logged_naming_it(
    why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that is not a PublishError (a bug) under the renewal timer, the retry timer or the
    router's request: one traceback naming which, nothing unhandled, and the reactor never sees it."""
    publisher, clock, router = start()
    publisher.publish("", CONTENTS)
    handshake(router)
    if why == "retry":
        router.last[0].connectionLost(Failure(ConnectionDone()))
    monkeypatch.setattr(publisher, "_publish_now", lambda: fail(RuntimeError("a bug")))
    with logged() as events:
        if why == "answer to the router":
            request_leaseset(router)
        else:
            clock.advance(delays(clock)[0])
    assert tracebacks(events) == [f"Meta LS2: the I2CP {why} failed"]
    (event,) = [e for e in events if e.get("log_failure") is not None]
    assert event["log_failure"].check(RuntimeError)


def test_stop_during_the_handshake_sends_nothing_and_destroys_the_session() -> None:
    """Another member takes over while the router has not answered CreateSession yet: once it does, no
    Meta LS2 is sent, the session is destroyed, and neither a traceback nor an error is left behind."""
    publisher, clock, router = start()
    publisher.publish("", CONTENTS)
    set_date(router)
    with logged() as events:
        stopped = publisher.stop("")
        answer(router.last[0], i2cp.SESSION_STATUS, SESSION.to_bytes(2, "big") + b"\x01")
    assert outcome(stopped) is None
    assert sent(router.last[1]) == [(i2cp.DESTROY_SESSION, SESSION.to_bytes(2, "big"))]
    assert closing(router.last[1]) and clock.getDelayedCalls() == []
    assert publisher.status()["state"] == "stopped" and publisher.status()["error"] is None
    assert tracebacks(events) == [] and errors(events) == []
