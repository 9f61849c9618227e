"""The I2CP publisher against a scripted router: deterministic time (task.Clock), bytes checked by our
own decoder here and by real i2pd in tests/router/test_i2cp_e2e.py."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from garlicfarm.i2p import i2cp
from garlicfarm.i2p.keys import create_master, create_transient
from garlicfarm.i2p.metals import MetaLeaseSet
from garlicfarm.i2p.reader import Reader
from garlicfarm.router.i2cp import BACKOFF, I2CPPublisher
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.publishers import PublishError
from tests.i2p.keysource import counter_random

MASTER = create_master(counter_random("master"))
LEAF = create_master(counter_random("leaf")).destination
CONTENTS = (MetaLease(LEAF.b64, 100), MetaLease(LEAF.b32, 1))
NOW = 1_800_000_000.0
SESSION = 0x1234


class Endpoint:
    def __init__(self) -> None:
        self.connections: list[tuple[Any, StringTransport]] = []
        self.refuse = False

    def connect(self, factory: Factory) -> Deferred[Any]:
        if self.refuse:
            return fail(ConnectionRefusedError("127.0.0.1:7654"))
        proto = factory.buildProtocol(None)
        assert proto is not None
        transport = StringTransport()
        proto.makeConnection(transport)
        self.connections.append((proto, transport))
        return succeed(proto)

    @property
    def last(self) -> tuple[Any, StringTransport]:
        return self.connections[-1]


def sent(transport: StringTransport) -> list[tuple[int, bytes]]:
    """The client's messages so far (the protocol byte first), and clear them."""
    data = transport.value()
    transport.clear()
    if data.startswith(i2cp.PROTOCOL_BYTE):
        data = data[1:]
    return i2cp.Framer().feed(data)


def answer(proto: Protocol, kind: int, payload: bytes) -> None:
    proto.dataReceived(i2cp.frame(kind, payload))


def handshake(endpoint: Endpoint, status: int = 1) -> list[tuple[int, bytes]]:
    """Play the router through GetDate and CreateSession; return what the client sent after."""
    proto, transport = endpoint.last
    assert [k for k, _ in sent(transport)] == [i2cp.GET_DATE]
    answer(proto, i2cp.SET_DATE, int(NOW * 1000).to_bytes(8, "big") + b"\x060.9.57")
    ((kind, payload),) = sent(transport)
    assert kind == i2cp.CREATE_SESSION
    config = i2cp.SessionConfig.decode(payload)
    assert config.destination == MASTER.destination
    answer(proto, i2cp.SESSION_STATUS, SESSION.to_bytes(2, "big") + bytes([status]))
    return sent(transport)


def metals_of(messages: list[tuple[int, bytes]]) -> MetaLeaseSet:
    ((kind, payload),) = messages
    assert kind == i2cp.CREATE_LEASESET2
    reader = Reader(payload)
    assert reader.uint(2, "session") == SESSION and reader.uint(1, "type") == 7
    assert payload[-1] == 0  # no private keys follow a Meta LS2
    return MetaLeaseSet.decode(payload[3:-1])


def make(keys: Any = MASTER, **kwargs: Any) -> tuple[I2CPPublisher, Clock, Endpoint]:
    clock, endpoint = Clock(), Endpoint()
    clock.advance(NOW)
    return I2CPPublisher(clock, endpoint, keys, expires=600, **kwargs), clock, endpoint  # type: ignore[arg-type]


def test_publish_opens_a_session_and_sends_a_signed_metals() -> None:
    publisher, _, endpoint = make()
    done = publisher.publish("", CONTENTS)
    metals = metals_of(handshake(endpoint))
    assert done.called and publisher.state == "published"
    assert metals.verdicts(int(NOW)).ok and metals.published == int(NOW)
    assert [lease.cost for lease in metals.leases] == [0, 99]
    assert {lease.hash for lease in metals.leases} == {LEAF.hash}
    assert publisher.status()["leases"][0]["cost"] == 0


def test_renewed_before_expiry_with_a_newer_published() -> None:
    publisher, clock, endpoint = make()
    publisher.publish("", CONTENTS)
    first = metals_of(handshake(endpoint))
    # on a new session: again after 30, 60 and 120 s (a router may have asked too early), then at half
    # of the lifetime (expires=600)
    published = [first.published]
    for delay in (30, 60, 120, 300, 300):
        (call,) = clock.getDelayedCalls()
        assert call.getTime() - clock.seconds() == delay
        clock.advance(delay)
        published.append(metals_of(sent(endpoint.last[1])).published)
    assert published == [int(NOW) + t for t in (0, 30, 90, 210, 510, 810)]
    # a publish within the same second still moves published on by one
    publisher.publish("", CONTENTS)
    assert metals_of(sent(endpoint.last[1])).published == published[-1] + 1


def test_stop_destroys_the_session_and_leaves_no_timer() -> None:
    publisher, clock, endpoint = make()
    publisher.publish("", CONTENTS)
    handshake(endpoint)
    publisher.stop("")
    _, transport = endpoint.last
    assert sent(transport) == [(i2cp.DESTROY_SESSION, SESSION.to_bytes(2, "big"))]
    assert transport.disconnecting and publisher.state == "stopped"
    assert clock.getDelayedCalls() == []
    assert publisher.status()["published"] is None


def test_refused_session_fails_and_retries_with_backoff() -> None:
    publisher, clock, endpoint = make()
    done = publisher.publish("", CONTENTS)
    assert handshake(endpoint, status=4) == []
    failure = _failure(done)
    assert failure.check(PublishError) and "'refused'" in failure.getErrorMessage()
    assert publisher.state == "failing"
    clock.advance(BACKOFF[0])
    assert len(endpoint.connections) == 2
    metals_of(handshake(endpoint))
    assert publisher.state == "published" and publisher.last_error is None


def test_router_gone_is_retried_and_backoff_grows_to_its_bound() -> None:
    publisher, clock, endpoint = make()
    publisher.publish("", CONTENTS)
    handshake(endpoint)
    endpoint.refuse = True
    endpoint.last[0].connectionLost(Failure(ConnectionRefusedError()))
    delays = []
    for _ in range(10):
        (call,) = clock.getDelayedCalls()
        delays.append(call.getTime() - clock.seconds())
        clock.advance(delays[-1])
    assert delays[0] == BACKOFF[0] and max(delays) == BACKOFF[1]
    assert delays == sorted(delays)
    assert "cannot connect: Connection was refused" in (publisher.last_error or "")
    endpoint.refuse = False
    clock.advance(BACKOFF[1])
    metals_of(handshake(endpoint))
    assert publisher.state == "published"


def test_no_answer_times_out() -> None:
    publisher, clock, endpoint = make(timeout=5.0)
    done = publisher.publish("", CONTENTS)
    clock.advance(5)
    assert "no answer to GetDate within 5 s" in _failure(done).getErrorMessage()
    assert endpoint.last[1].disconnecting


def test_malformed_router_bytes_close_the_connection() -> None:
    publisher, _, endpoint = make()
    done = publisher.publish("", CONTENTS)
    proto, transport = endpoint.last
    proto.dataReceived((i2cp.MAX_MESSAGE + 1).to_bytes(4, "big") + b"\x21")
    assert transport.disconnecting
    proto.connectionLost(Failure(ConnectionRefusedError()))
    assert "malformed I2CP" in _failure(done).getErrorMessage()


def test_disconnect_reason_is_reported() -> None:
    publisher, _, endpoint = make()
    done = publisher.publish("", CONTENTS)
    proto, _ = endpoint.last
    answer(proto, i2cp.DISCONNECT, b"\x0bwrong creds")
    proto.connectionLost(Failure(ConnectionRefusedError()))
    assert "the router disconnected: wrong creds" in _failure(done).getErrorMessage()


def test_router_request_is_answered_with_the_metals() -> None:
    publisher, _, endpoint = make()
    publisher.publish("", CONTENTS)
    handshake(endpoint)
    answer(endpoint.last[0], i2cp.REQUEST_VARIABLE_LEASESET, SESSION.to_bytes(2, "big") + b"\x00")
    assert metals_of(sent(endpoint.last[1])).verdicts(int(NOW)).ok


def test_offline_member_signs_its_session_with_the_offline_block() -> None:
    member = create_transient(MASTER, counter_random("m"), int(NOW) + 86_400)
    publisher, _, endpoint = make(member)
    publisher.publish("", CONTENTS)
    proto, transport = endpoint.last
    sent(transport)
    answer(proto, i2cp.SET_DATE, int(NOW * 1000).to_bytes(8, "big"))
    ((_, payload),) = sent(transport)
    config = i2cp.SessionConfig.decode(payload)
    options = dict(config.options)
    assert options["i2cp.leaseSetOfflineExpiration"] == str(int(NOW) + 86_400)
    assert options["i2cp.leaseSetTransientPublicKey"].startswith("7:")
    signed = i2cp.SessionConfig.signed_part(config.destination, config.options, config.date_ms)
    assert member.signer.sign(signed) == config.signature  # Ed25519 is deterministic


def test_presigned_session_is_sent_as_given() -> None:
    member = create_transient(MASTER, counter_random("m"), int(NOW) + 86_400)
    presigned = i2cp.SessionConfig.create(MASTER.destination, MASTER.signer, 1, i2cp.SESSION_OPTIONS)
    publisher, _, endpoint = make(member, session_config=presigned)
    publisher.publish("", CONTENTS)
    proto, transport = endpoint.last
    sent(transport)
    answer(proto, i2cp.SET_DATE, int(NOW * 1000).to_bytes(8, "big"))
    assert sent(transport) == [(i2cp.CREATE_SESSION, presigned.encoded)]


def test_expired_offline_key_is_refused_before_the_router() -> None:
    member = create_transient(MASTER, counter_random("m"), int(NOW) - 1)
    publisher, _, endpoint = make(member)
    done = publisher.publish("", CONTENTS)
    sent(endpoint.last[1])
    handshake_rest = endpoint.last[0]
    answer(handshake_rest, i2cp.SET_DATE, int(NOW * 1000).to_bytes(8, "big"))
    sent(endpoint.last[1])
    answer(handshake_rest, i2cp.SESSION_STATUS, SESSION.to_bytes(2, "big") + b"\x01")
    assert "expired" in _failure(done).getErrorMessage()
    assert sent(endpoint.last[1]) == []  # nothing signed by an expired key left this node
    assert publisher.status()["warning"].startswith("the offline signature has expired")


def test_session_config_for_another_destination_is_refused() -> None:
    other = create_master(counter_random("other"))
    presigned = i2cp.SessionConfig.create(other.destination, other.signer, 1)
    with pytest.raises(ValueError, match="another|not for this"):
        make(session_config=presigned)


def _failure(d: Deferred[Any]) -> Failure:
    out: list[Failure] = []
    d.addErrback(out.append)
    assert out, "the Deferred has not failed"
    return out[0]


def test_a_leaf_that_is_no_destination_is_left_out_with_one_warning() -> None:
    from twisted.logger import globalLogPublisher

    events: list[dict[str, Any]] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        publisher, _, endpoint = make()
        publisher.publish("", (*CONTENTS, MetaLease("farm-leaf-3", 50)))
        metals = metals_of(handshake(endpoint))
        publisher.publish("", (*CONTENTS, MetaLease("farm-leaf-3", 50)))
    finally:
        globalLogPublisher.removeObserver(observer)
    assert len(metals.leases) == 2 and metals.verdicts(int(NOW)).ok
    warnings = [e for e in events if "left out" in e.get("log_format", "")]
    assert len(warnings) == 1 and warnings[0]["leaf"] == "farm-leaf-3"


def test_auth_goes_in_get_date() -> None:
    publisher, _, endpoint = make(auth=(("i2cp.password", "pw"), ("i2cp.username", "farm")))
    publisher.publish("", CONTENTS)
    ((kind, payload),) = sent(endpoint.last[1])
    reader = Reader(payload)
    version = reader.take(reader.uint(1, "version"), "version")
    assert kind == i2cp.GET_DATE and version == i2cp.CLIENT_VERSION.encode()
    from garlicfarm.i2p.mapping import read_mapping

    assert dict(read_mapping(reader)) == {"i2cp.password": "pw", "i2cp.username": "farm"}


def test_a_handover_publishes_after_the_farms_newest() -> None:
    publisher, _, endpoint = make()
    publisher.signer.farm_newest = lambda: int(NOW) + 5  # the member before ran 5 s ahead
    publisher.publish("", CONTENTS)
    assert metals_of(handshake(endpoint)).published == int(NOW) + 6


def test_a_farm_date_far_ahead_is_not_followed() -> None:
    publisher, _, endpoint = make()
    publisher.signer.farm_newest = lambda: 4_102_444_800  # a member claiming 2100
    publisher.publish("", CONTENTS)
    assert metals_of(handshake(endpoint)).published == int(NOW)


def test_an_unexpected_error_is_logged_and_retried_never_a_dead_timer() -> None:
    from twisted.logger import globalLogPublisher

    publisher, clock, endpoint = make()
    real_sign = publisher.signer.sign
    calls = [0]

    def broken(contents: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("a bug")
        return real_sign(contents)

    publisher.signer.sign = broken  # type: ignore[method-assign]
    events: list[dict[str, Any]] = []
    observer: Any = events.append
    globalLogPublisher.addObserver(observer)
    try:
        done = publisher.publish("", CONTENTS)
        handshake(endpoint)
        assert _failure(done).check(PublishError) and publisher.state == "failing"
        assert any(e.get("log_failure") is not None for e in events)  # a traceback, once
        (retry,) = clock.getDelayedCalls()  # the timer lives on
        clock.advance(retry.getTime() - clock.seconds())
        metals_of(handshake(endpoint))
    finally:
        globalLogPublisher.removeObserver(observer)
    assert publisher.state == "published"


def test_retries_wait_1_s_doubling_to_one_minute_and_never_longer() -> None:
    """The bound itself, not only "the largest delay seen is the constant": a retry a minute apart at
    most, whatever the constant is changed to."""
    publisher, clock, endpoint = make()
    publisher.publish("", CONTENTS)
    handshake(endpoint)
    endpoint.refuse = True
    endpoint.last[0].connectionLost(Failure(ConnectionRefusedError()))
    delays = []
    for _ in range(12):
        (call,) = clock.getDelayedCalls()
        delays.append(call.getTime() - clock.seconds())
        clock.advance(delays[-1])
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0, 60.0, 60.0, 60.0]
