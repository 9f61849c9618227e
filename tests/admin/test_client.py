"""The ``garlicfarm`` command's console client (garlicfarm.admin.client.AdminClient), in memory: against
the node's real console (Digest, CSRF, its answers and refusals, TLS against the farm's CA), and against
a scripted HTTP server for what a console never does (no Digest, a broken challenge, no JSON, silence).
The errors are checked word for word: the command prints them as they are."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from OpenSSL import SSL
from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionLost, ConnectionRefusedError
from twisted.internet.testing import MemoryReactorClock
from twisted.protocols import tls as tls_protocol
from twisted.python.failure import Failure
from twisted.test.iosim import ConnectionCompleter, IOPump
from twisted.web.client import ResponseNeverReceived
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Request, Site

from garlicfarm.admin.client import AdminClient, AdminClientError
from garlicfarm.admin.service import server_endpoint
from garlicfarm.admin.site import AdminSite
from garlicfarm.config import TLSConfig
from garlicfarm.handshake.authheader import parse_credentials
from garlicfarm.net.agent_errors import telling_cause
from garlicfarm.net.client import plain_reason
from garlicfarm.service import GarlicFarmService
from tests.admin.nodes import PASSWORD, farm_tls, handle

# iosim's transports sit under the Agent's endpoint wrapper, which has no abortConnection
pytestmark = pytest.mark.filterwarnings("ignore:Using readBody with a transport:DeprecationWarning")

#: the node's console (tests/admin/nodes.make_node: [admin] listen = its port + 100, no TLS)
CONSOLE = "http://127.0.0.1:9101"
#: where the scripted server listens
SCRIPTED = "http://127.0.0.1:9200"


class Wire:
    """Completes the client's connections on the memory reactor (twisted.test.iosim) to whatever
    listens on their port, and moves the bytes and turns the clock (callLater(0)) until nothing moves."""

    def __init__(self, clock: MemoryReactorClock) -> None:
        self.clock = clock
        self.completer = ConnectionCompleter(clock)
        self.pumps: list[IOPump] = []

    @property
    def connections(self) -> int:
        """Connections made so far: the client makes one per request."""
        return len(self.pumps)

    def start(self, job: Coroutine[Any, Any, Any]) -> list[Any]:
        """Run ``job``; its result (or Failure) appears in the returned list."""
        box: list[Any] = []
        Deferred.fromCoroutine(job).addBoth(box.append)
        self.turn()
        return box

    def turn(self) -> None:
        for _ in range(100):
            pump = self.completer.succeedOnce()
            if pump is not None:
                self.pumps.append(pump)
            for p in self.pumps:
                p.flush()
            self.clock.advance(0)

    def run(self, job: Coroutine[Any, Any, Any]) -> Any:
        """``job``'s result, or its exception raised."""
        return outcome(self.start(job))


def outcome(box: list[Any]) -> Any:
    assert box, "no answer yet"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


def refusal(wire: Wire, job: Coroutine[Any, Any, Any]) -> AdminClientError:
    """The AdminClientError ``job`` fails with."""
    with pytest.raises(AdminClientError) as caught:
        wire.run(job)
    return caught.value


@pytest.fixture
def wire(clock: MemoryReactorClock, monkeypatch: pytest.MonkeyPatch) -> Wire:
    # FileBodyProducer writes a body through the global cooperator, and TLS batches writes with
    # callLater(0), both on the real reactor by default: run them on the clock
    cooperator = task.Cooperator(scheduler=lambda work: clock.callLater(0, work))
    monkeypatch.setattr(task, "cooperate", cooperator.cooperate)
    monkeypatch.setattr(tls_protocol, "_get_default_clock", lambda: clock)
    return Wire(clock)


def console(clock: MemoryReactorClock, password: str = PASSWORD, url: str = CONSOLE + "/") -> AdminClient:
    return AdminClient(clock, url, "farm", password, None)


# ------------------------------------------------------------------------------------------ the real console


def test_get_answers_the_consoles_json(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """A GET is answered after one Digest challenge with the console's JSON (the URL's trailing / dropped)."""
    answer = wire.run(console(clock).get("/api/farms"))
    assert [f["cluster"] for f in answer["farms"]] == ["farm"]
    assert wire.connections == 2  # the challenge, then the answer


def test_a_second_request_reuses_the_challenge(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """The nonce is answered again with the next nc: no second challenge round trip."""
    client = console(clock)
    wire.run(client.get("/api/farms"))
    before = wire.connections
    assert wire.run(client.get("/api/farms/farm"))["cluster"] == "farm"
    assert wire.run(client.get("/api/farms/farm/history"))
    assert wire.connections == before + 2


def test_an_expired_nonce_is_renewed_without_failing(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """A stale 401 (the nonce outlived its hour) makes the client answer the fresh challenge."""
    client = console(clock)
    wire.run(client.get("/api/farms"))
    clock.advance(3601)
    before = wire.connections
    assert wire.run(client.get("/api/farms"))["farms"]
    assert wire.connections == before + 2


def test_an_action_fetches_the_csrf_token_first(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """POST gets the session's CSRF token once, sends it with its JSON body and own Origin, and the
    console carries the action out."""
    client = console(clock)
    answer = wire.run(client.post("/api/farms/farm/exclude", {"destination": "farm-leaf-1"}))
    assert answer["ok"] is True and answer["result"]["excluded"] == "farm-leaf-1"
    assert node.state.excluded == {"farm-leaf-1"}
    token = client.csrf
    assert token
    answer = wire.run(client.post("/api/farms/farm/include", {"destination": "farm-leaf-1"}))
    assert answer["result"]["included"] == "farm-leaf-1" and client.csrf == token
    assert not node.state.excluded


def test_a_refused_action_raises_the_consoles_error(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """A 400 is an error whose message is the console's own, with its whole JSON answer kept."""
    error = refusal(wire, console(clock).post("/api/farms/farm/exclude", {"destination": "not a hash!"}))
    assert str(error) == "destination must be a destination hash (base32 or base64, up to 1024 characters)"
    assert error.answer["ok"] is False and error.answer["error"] == str(error)


def test_a_wrong_password_is_refused_after_one_try(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """A 401 to our own credentials (not stale) ends at once, with no further tries."""
    error = refusal(wire, console(clock, password="guess").get("/api/farms"))
    assert str(error) == f"{CONSOLE}: the console refused the credentials"
    assert error.answer == {}
    assert wire.connections == 2


def test_an_html_page_is_not_json(node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire) -> None:
    """A URL that is not the API (the page itself) says so instead of a JSON traceback."""
    error = refusal(wire, console(clock).get("/"))
    assert str(error) == f"{CONSOLE}/: HTTP 200, not JSON"


def test_a_url_without_a_trailing_slash(
    node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire
) -> None:
    """``[admin] url`` with or without its trailing / reaches the same API."""
    assert wire.run(console(clock, url=CONSOLE).get("/api/farms"))["farms"]


def test_nobody_listening_is_cannot_connect(clock: MemoryReactorClock, wire: Wire) -> None:
    """A refused connection says where and why, in the words of the peer-protocol client."""
    box = wire.start(console(clock).get("/api/farms"))
    wire.completer.failOnce(Failure(ConnectionRefusedError()))
    clock.advance(0.3)  # HostnameEndpoint's next look at its (one) attempt
    wire.turn()
    with pytest.raises(AdminClientError) as caught:
        outcome(box)
    assert str(caught.value) == (
        f"cannot connect to {CONSOLE}: connection refused (is the node running and listening there?)"
    )
    assert caught.value.answer == {}


# ------------------------------------------------------------------------------------------ over TLS


@pytest.fixture
def tls_console(node: GarlicFarmService, clock: MemoryReactorClock, wire: Wire, tmp_path: Path) -> TLSConfig:
    """The node's farm served over TLS on port 9443 as AdminService would (server_endpoint); the
    farm's [tls] for the client."""
    tls = farm_tls(tmp_path)
    site = AdminSite(clock)
    site.register(handle(node))
    server_endpoint(clock, "tcp:9443:interface=127.0.0.1", tls).listen(site.http_factory())
    return tls


def test_tls_is_checked_against_the_farms_ca(
    tls_console: TLSConfig, clock: MemoryReactorClock, wire: Wire
) -> None:
    """With [tls], the console's certificate is verified against the farm's CA, for the host dialled."""
    client = AdminClient(clock, "https://127.0.0.1:9443/", "farm", PASSWORD, tls_console)
    assert [f["cluster"] for f in wire.run(client.get("/api/farms"))["farms"]] == ["farm"]


def test_without_tls_the_farms_ca_is_not_trusted(
    tls_console: TLSConfig, clock: MemoryReactorClock, wire: Wire
) -> None:
    """Without [tls], an https console is checked as a browser would: a farm CA's certificate fails."""
    client = AdminClient(clock, "https://127.0.0.1:9443/", "farm", PASSWORD, None)
    error = refusal(wire, client.get("/api/farms"))
    assert str(error) == (
        "https://127.0.0.1:9443/api/farms: TLS refused: certificate verify failed (check [tls] ca and the "
        "peer's certificate)"
    )


def test_a_tls_refusal_is_named_before_the_lost_connection_that_follows() -> None:
    """Inside the Agent's ResponseNeverReceived, the TLS error is the cause, not the connection lost
    with it; a connection lost alone is the cause then."""
    lost, refused = ConnectionLost(), SSL.Error([("SSL routines", "", "certificate verify failed")])
    assert telling_cause(ResponseNeverReceived([Failure(lost), Failure(refused)])) is refused
    assert telling_cause(ResponseNeverReceived([Failure(lost)])) is lost
    assert plain_reason(telling_cause(ResponseNeverReceived([Failure(lost), Failure(refused)]))).startswith(
        "TLS refused: certificate verify failed"
    )


# ------------------------------------------------------------------------------------------ a scripted server

Answer = tuple[int, list[tuple[str, str]], bytes]


class Scripted(Resource):
    """Answers each request with ``script(request)`` (None: never answers), recording what it got."""

    isLeaf = True  # noqa: N815 - twisted.web's name

    def __init__(self, script: Callable[[Request], Answer | None]) -> None:
        super().__init__()
        self.script = script
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []

    def render(self, request: Request) -> bytes | int:
        headers = {k.decode().lower(): v[0].decode() for k, v in request.requestHeaders.getAllRawHeaders()}
        assert request.method is not None and request.uri is not None and request.content is not None
        self.requests.append((request.method.decode(), request.uri.decode(), headers, request.content.read()))
        answer = self.script(request)
        if answer is None:
            return NOT_DONE_YET
        code, extra, body = answer
        request.setResponseCode(code)
        for name, value in extra:
            request.responseHeaders.addRawHeader(name, value)
        return body


def scripted(clock: MemoryReactorClock, script: Callable[[Request], Answer | None]) -> Scripted:
    resource = Scripted(script)
    clock.listenTCP(9200, Site(resource, reactor=clock))
    return resource


def challenge(algorithm: str = "SHA-256", stale: bool = False) -> tuple[str, str]:
    value = f'Digest realm="r", qop="auth", algorithm={algorithm}, nonce="n1", opaque="o"'
    return ("WWW-Authenticate", value + (", stale=true" if stale else ""))


def digest_then(answer: Answer) -> Callable[[Request], Answer]:
    """A server that challenges (SHA-256, then MD5) until it gets any Digest answer, then ``answer``."""

    def script(request: Request) -> Answer:
        if (request.getHeader("authorization") or "").startswith("Digest "):
            return answer
        return 401, [challenge("SHA-256"), challenge("MD5")], b"{}"

    return script


def digest_params(request: tuple[str, str, dict[str, str], bytes]) -> dict[str, str]:
    """The parameters of a recorded request's Digest ``Authorization``."""
    item = parse_credentials(request[2]["authorization"])
    assert item.scheme == "digest"
    return dict(item.params)


def test_requests_ask_for_json_and_actions_send_json_token_and_origin(
    clock: MemoryReactorClock, wire: Wire
) -> None:
    """Every request asks for JSON; an action sends a JSON body, the CSRF token and the console's own
    Origin, under a path prefix kept from the URL; the first usable challenge (SHA-256) is answered
    with nc 1, 2, 3 on the one nonce."""
    server = scripted(clock, digest_then((200, [], b'{"csrf": "T0KEN", "ok": true}')))
    client = AdminClient(clock, SCRIPTED + "/consoleX/", "farm", PASSWORD, None)
    assert wire.run(client.post("/api/x", {"a": 1})) == {"csrf": "T0KEN", "ok": True}
    wire.run(client.get("/api/y"))
    (_, _, first, _), session, action, then = server.requests
    assert "authorization" not in first
    assert [(m, path) for m, path, _, _ in server.requests[1:]] == [
        ("GET", "/consoleX/api/session"),
        ("POST", "/consoleX/api/x"),
        ("GET", "/consoleX/api/y"),
    ]
    for _, _, headers, _ in server.requests:
        assert headers["accept"] == "application/json"
    headers, body = action[2], action[3]
    assert body == b'{"a": 1}'
    assert headers["content-type"] == "application/json"
    assert headers["x-csrf-token"] == "T0KEN"
    assert headers["origin"] == "http://127.0.0.1:9200"
    assert "content-type" not in session[2] and "origin" not in then[2]
    assert "content-length" not in then[2] and then[3] == b""  # a GET has no body at all
    answered = [digest_params(r) for r in server.requests[1:]]
    assert [(a["algorithm"], a["nc"]) for a in answered] == [
        ("SHA-256", "00000001"),
        ("SHA-256", "00000002"),
        ("SHA-256", "00000003"),
    ]


def test_a_usable_challenge_after_one_that_is_not(clock: MemoryReactorClock, wire: Wire) -> None:
    """Basic (or anything not Digest with qop=auth) is skipped for the Digest challenge after it."""

    def script(request: Request) -> Answer:
        if request.getHeader("authorization"):
            return 200, [], b"[1]"
        return 401, [("WWW-Authenticate", 'Basic realm="r"'), challenge("MD5")], b""

    server = scripted(clock, script)
    assert wire.run(console(clock, url=SCRIPTED).get("/a")) == [1]
    assert digest_params(server.requests[1])["algorithm"] == "MD5"


@pytest.mark.parametrize(
    "header", [("WWW-Authenticate", 'Basic realm="r"'), ("WWW-Authenticate", 'Digest realm="'), ("X-No", "1")]
)
def test_a_401_without_a_usable_digest_challenge(
    clock: MemoryReactorClock, wire: Wire, header: tuple[str, str]
) -> None:
    """A 401 that offers no Digest challenge we can answer (or garbles it) is not a garlicfarm console."""
    scripted(clock, lambda request: (401, [header], b""))
    error = refusal(wire, console(clock, url=SCRIPTED).get("/a"))
    assert str(error) == f"{SCRIPTED}: no usable Digest challenge (not a garlicfarm console?)"


def test_a_console_that_keeps_saying_stale_is_given_up_after_three_tries(
    clock: MemoryReactorClock, wire: Wire
) -> None:
    """Stale after stale is retried three times in all, then reported as refused credentials."""
    server = scripted(clock, lambda request: (401, [challenge(stale=True)], b""))
    error = refusal(wire, console(clock, url=SCRIPTED).get("/a"))
    assert str(error) == f"{SCRIPTED}: the console refused the credentials"
    assert len(server.requests) == 3


def test_an_error_status_without_an_error_text(clock: MemoryReactorClock, wire: Wire) -> None:
    """A JSON error answer without ``error`` is named by its HTTP status, its JSON kept."""
    scripted(clock, digest_then((503, [], b'{"busy": true}')))
    error = refusal(wire, console(clock, url=SCRIPTED).get("/a"))
    assert str(error) == "HTTP 503"
    assert error.answer == {"busy": True}


def test_a_status_below_400_is_an_answer(clock: MemoryReactorClock, wire: Wire) -> None:
    """Any status below 400 with JSON is the answer."""
    scripted(clock, digest_then((399, [], b'{"fine": 1}')))
    assert wire.run(console(clock, url=SCRIPTED).get("/a")) == {"fine": 1}


def test_an_error_page_that_is_not_json(clock: MemoryReactorClock, wire: Wire) -> None:
    """A proxy's HTML error page is reported by status, not parsed."""
    scripted(clock, digest_then((502, [], b"<html>bad gateway</html>")))
    error = refusal(wire, console(clock, url=SCRIPTED).get("/a"))
    assert str(error) == f"{SCRIPTED}/a: HTTP 502, not JSON"


def test_a_silent_console_times_out_after_30_seconds(clock: MemoryReactorClock, wire: Wire) -> None:
    """The default timeout is 30 s per request; it is reported with the URL asked."""
    scripted(clock, lambda request: None)
    box = wire.start(console(clock, url=SCRIPTED).get("/a"))
    clock.advance(29.9)
    wire.turn()
    assert not box
    clock.advance(0.1)
    wire.turn()
    with pytest.raises(AdminClientError) as caught:
        outcome(box)
    assert str(caught.value) == f"{SCRIPTED}/a: timed out"


def test_the_timeout_is_the_one_given(clock: MemoryReactorClock, wire: Wire) -> None:
    """``timeout`` (the command's --timeout) replaces the 30 s."""
    scripted(clock, lambda request: None)
    box = wire.start(AdminClient(clock, SCRIPTED, "farm", PASSWORD, None, timeout=2).get("/a"))
    clock.advance(2)
    wire.turn()
    with pytest.raises(AdminClientError, match="timed out"):
        outcome(box)
