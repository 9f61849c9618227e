"""The console's HTTP side: one twisted.web resource serving the page, its assets and the JSON API
for every farm registered with the :class:`AdminSite` (several farms may share one process and port).

```text
GET  /                                 the page (static/index.html)
GET  /static/<file>                    its script and style sheet
GET  /api/session                      who you are, your CSRF token, the farms you may see
GET  /api/farms                        those farms, one line each
GET  /api/farms/<cluster>              the overview: members, leader, publisher, Meta LS, exclusions
GET  /api/farms/<cluster>/history      the last hour of each member's health
GET  /api/farms/<cluster>/config       the farm's configuration, for import elsewhere
POST /api/farms/<cluster>/<action>     remove-member, add-member, publish, step-down, exclude, include, import
```

Every request needs Digest credentials (a farm's, or its ``[admin]`` credential); you see only the
farms whose credential you gave. Actions also need the CSRF defences of :mod:`garlicfarm.admin.guard`
and a strictly valid JSON body (:mod:`garlicfarm.admin.validate`). GET never changes anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from importlib import resources
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import http, server
from twisted.web.resource import Resource

from garlicfarm.admin.auth import DigestGuard, Refused, User
from garlicfarm.admin.connections import LimitedSite, request_done, request_received
from garlicfarm.admin.farm import ActionError, FarmHandle
from garlicfarm.admin.guard import CSRF_HEADER, CSRF_WINDOW, CsrfTokens, origin_refusal
from garlicfarm.admin.validate import ACTIONS, MAX_BODY, BadInput, obj, parse_json
from garlicfarm.handshake.nonces import NonceRegistry
from garlicfarm.net.budget import RateLimitedLog

# The page's own files only: nothing else on disk is reachable.
ASSETS = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
_SECURITY_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'",
    ),
)


def asset(name: str) -> bytes:
    return (resources.files("garlicfarm.admin") / "static" / name).read_bytes()


class AdminRequest(server.Request):
    """Stops storing a request body past :data:`MAX_BODY`: the handler then answers 400."""

    too_large = False

    def gotLength(self, length: int | None) -> None:
        self.too_large = length is not None and length > MAX_BODY
        super().gotLength(None if self.too_large else length)  # type: ignore[no-untyped-call]

    def handleContentChunk(self, data: bytes) -> None:
        if self.too_large or self.content is None or self.content.tell() + len(data) > MAX_BODY:
            self.too_large = True
            return
        super().handleContentChunk(data)  # type: ignore[no-untyped-call]

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        request_received(self)  # head and body are in: the connection's deadline is off
        super().requestReceived(command, path, version)  # type: ignore[no-untyped-call]

    def finish(self) -> None:
        # first: finishing may read a pipelined request at once, which turns the deadline off again
        request_done(self)
        super().finish()  # type: ignore[no-untyped-call]


class _QuietSite(server.Site):
    """Access-logs what matters only: the page polls every few seconds, and every client's first
    request is a 401 challenge; actions and refused credentials have their own log lines anyway."""

    def log(self, request: http.Request) -> None:
        if request.code >= 400 and request.code != 401:
            super().log(request)


class AdminSite:
    """The farms a process serves, and the HTTP site that shows them."""

    def __init__(
        self,
        reactor: IReactorTime,
        origins: tuple[str, ...] = (),
        random_bytes: Callable[[int], bytes] = os.urandom,
        *,
        max_connections: int = 64,
        request_deadline: float = 30.0,
        csrf_window: float = CSRF_WINDOW,
    ) -> None:
        self.reactor = reactor
        self.origins = origins
        self.max_connections = max_connections
        self.request_deadline = request_deadline
        self.farms: dict[str, FarmHandle] = {}
        self.guard = DigestGuard(NonceRegistry(random_bytes))
        self.csrf = CsrfTokens(random_bytes(32), reactor.seconds, csrf_window)
        self.resource = AdminResource(self)
        #: rate-limited lines for what anyone who reaches the port can cause in bulk
        self.events = RateLimitedLog(reactor, AdminResource.log)

    def register(self, farm: FarmHandle) -> None:
        if farm.cluster in self.farms:
            raise ValueError(f"farm {farm.cluster!r} is already served by this console")
        self.farms[farm.cluster] = farm

    def unregister(self, cluster: str) -> None:
        self.farms.pop(cluster, None)

    def http_factory(self) -> LimitedSite:
        """The factory to listen with: the HTTP site within a connection cap and request deadlines."""
        # the site's own clock for request timeouts too, not the global reactor (tests drive a Clock)
        site = _QuietSite(self.resource, reactor=self.reactor)  # type: ignore[no-untyped-call]
        site.requestFactory = AdminRequest
        site.displayTracebacks = False
        return LimitedSite(
            site,
            self.reactor,
            self.events,
            max_connections=self.max_connections,
            request_deadline=self.request_deadline,
        )


class AdminResource(Resource):
    isLeaf = True  # noqa: N815 - twisted.web's name
    log = Logger()

    def __init__(self, site: AdminSite) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.site = site

    # ------------------------------------------------------------------------------------------ entry

    def render(self, request: server.Request) -> bytes | int:
        for name, value in _SECURITY_HEADERS:
            _header(request, name, value)
        user = self._authenticate(request)
        if user is None:
            return b'{"ok":false,"error":"authentication required"}\n'
        parts = [p for p in request.path.decode("utf-8", "replace").split("/") if p]
        method = request.method.decode("ascii", "replace")
        try:
            if method in ("GET", "HEAD"):
                return self._get(request, user, parts)
            if method == "POST":
                return self._post(request, user, parts)
            _header(request, "Allow", "GET, HEAD, POST")
            raise ActionError(405, f"method {method} is not allowed")
        except ActionError as e:
            return _json(request, e.status, {"ok": False, "error": str(e), **e.details})

    def _authenticate(self, request: server.Request) -> User | None:
        header = request.getHeader("authorization")
        now = self.site.reactor.seconds()
        verdict = self.site.guard.authenticate(
            header,
            request.method.decode("ascii", "replace"),
            request.uri.decode("utf-8", "replace"),
            [farm.credential for farm in self.site.farms.values()],
            now,
        )
        if isinstance(verdict, User):
            return verdict
        assert isinstance(verdict, Refused)
        if header is not None and not verdict.stale:
            # one line per 10 s however many guesses (the count and the latest in the summary)
            self.site.events.event(
                "refused credentials",
                "admin console: refused {method} {path} from {peer}: {reason}",
                method=request.method.decode("ascii", "replace"),
                path=request.path.decode("utf-8", "replace"),
                peer=_peer(request),
                reason=verdict.reason,
            )
        request.setResponseCode(401)
        _header(request, "Content-Type", "application/json")
        for challenge in self.site.guard.challenges(now, stale=verdict.stale):
            request.responseHeaders.addRawHeader("WWW-Authenticate", challenge)
        return None

    # ------------------------------------------------------------------------------------------ GET

    def _get(self, request: server.Request, user: User, parts: list[str]) -> bytes:
        if parts in ([], ["index.html"]):
            _header(request, "Content-Type", "text/html; charset=utf-8")
            return asset("index.html")
        if len(parts) == 2 and parts[0] == "static":
            if parts[1] not in ASSETS:
                raise ActionError(404, "no such file")
            _header(request, "Content-Type", ASSETS[parts[1]])
            return asset(parts[1])
        if parts == ["api", "session"]:
            return _json(
                request,
                200,
                {
                    "user": user.name,
                    "csrf": self.site.csrf.token_for(user.name),
                    "csrf_header": CSRF_HEADER,
                    # the page fetches a fresh token this often (a token lives one to two windows)
                    "csrf_refresh_s": self.site.csrf.window / 2,
                    "farms": [f.summary() for f in self._farms(user)],
                },
            )
        if parts == ["api", "farms"]:
            return _json(request, 200, {"farms": [f.summary() for f in self._farms(user)]})
        if len(parts) in (3, 4) and parts[:2] == ["api", "farms"]:
            farm = self._farm(user, parts[2])
            view = parts[3] if len(parts) == 4 else ""
            if view == "":
                return _json(request, 200, farm.overview(self.site.reactor.seconds()))
            if view == "history":
                return _json(request, 200, farm.history_json())
            if view == "config":
                return _json(request, 200, farm.export())
            if view in ACTIONS:
                _header(request, "Allow", "POST")
                raise ActionError(405, f"{view} is an action: POST it with a JSON body")
        raise ActionError(404, "no such page or API")

    def _farms(self, user: User) -> list[FarmHandle]:
        return [f for name, f in sorted(self.site.farms.items()) if name in user.farms]

    def _farm(self, user: User, cluster: str) -> FarmHandle:
        farm = self.site.farms.get(cluster)
        if farm is None or cluster not in user.farms:
            raise ActionError(404, f"no farm {cluster!r} here (or not for these credentials)")
        return farm

    # ------------------------------------------------------------------------------------------ POST

    def _post(self, request: server.Request, user: User, parts: list[str]) -> bytes | int:
        if len(parts) != 4 or parts[:2] != ["api", "farms"]:
            raise ActionError(404, "no such action")
        action = parts[3]
        if action not in ACTIONS:
            raise ActionError(404, f"no action {action!r} (actions: {', '.join(sorted(ACTIONS))})")
        farm = self._farm(user, parts[2])
        refusal = self._csrf_refusal(request, user)
        if refusal is not None:
            self._log_action(request, user, farm, action, None, f"refused: {refusal}")
            raise ActionError(403, f"refused: {refusal}")
        try:
            if getattr(request, "too_large", False):
                raise BadInput(f"body is larger than {MAX_BODY} bytes")
            assert request.content is not None
            request.content.seek(0)
            fields, required = ACTIONS[action]
            body = obj(parse_json(request.content.read(MAX_BODY + 1)), "body", fields, required)
        except BadInput as e:
            self._log_action(request, user, farm, action, None, f"rejected: {e}")
            raise ActionError(400, str(e)) from None
        d = Deferred.fromCoroutine(self._run(farm, action, body))
        context = (request, user, farm, action, body)
        d.addCallbacks(self._done, self._failed, callbackArgs=context, errbackArgs=context)
        return server.NOT_DONE_YET

    def _csrf_refusal(self, request: server.Request, user: User) -> str | None:
        content_type = (request.getHeader("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return "actions need Content-Type: application/json"
        verdict = self.site.csrf.check(user.name, request.getHeader(CSRF_HEADER))
        if verdict == "expired":
            return f"the {CSRF_HEADER} has expired: reload the page (or GET /api/session for a fresh one)"
        if verdict != "valid":
            return f"missing or wrong {CSRF_HEADER} (GET /api/session gives it)"
        return origin_refusal(
            request.getHeader("origin"),
            request.getHeader("sec-fetch-site"),
            "https" if request.isSecure() else "http",  # type: ignore[no-untyped-call]
            request.getHeader("host"),
            self.site.origins,
        )

    async def _run(self, farm: FarmHandle, action: str, body: dict[str, Any]) -> dict[str, Any]:
        if action == "remove-member":
            return await farm.remove_member(body["id"])
        if action == "add-member":
            return await farm.add_member(body["id"], body["endpoint"])
        if action == "publish":
            return await farm.publish()
        if action == "step-down":
            return await farm.step_down()
        if action in ("exclude", "include"):
            return await farm.exclude(body["destination"], action)
        assert action == "import"
        return await farm.import_config(body["config"], body.get("dry_run", False))

    def _done(
        self,
        result: dict[str, Any],
        request: server.Request,
        user: User,
        farm: FarmHandle,
        action: str,
        body: dict[str, Any],
    ) -> None:
        self._log_action(request, user, farm, action, body, "done")
        _finish(request, 200, {"ok": True, "action": action, "cluster": farm.cluster, "result": result})

    def _failed(
        self,
        failure: Failure,
        request: server.Request,
        user: User,
        farm: FarmHandle,
        action: str,
        body: dict[str, Any],
    ) -> None:
        error = failure.value
        if not isinstance(error, ActionError):
            self.log.failure("admin action {action} crashed", failure, action=action)
            error = ActionError(500, f"{action} failed unexpectedly: {failure.getErrorMessage()}")
        self._log_action(request, user, farm, action, body, f"failed ({error.status}): {error}")
        _finish(request, error.status, {"ok": False, "action": action, "error": str(error), **error.details})

    def _log_action(
        self,
        request: server.Request,
        user: User,
        farm: FarmHandle,
        action: str,
        body: dict[str, Any] | None,
        result: str,
    ) -> None:
        self.log.info(
            "admin action by {user} from {peer} on farm {cluster}: {action} {args}: {result}",
            user=user.name,
            peer=_peer(request),
            cluster=farm.cluster,
            action=action,
            args=json.dumps(body, separators=(",", ":"))[:300] if body is not None else "",
            result=result,
        )


def _header(request: server.Request, name: str, value: str) -> None:
    request.setHeader(name, value)  # type: ignore[no-untyped-call]


def _peer(request: server.Request) -> str:
    address = request.getClientAddress()  # type: ignore[no-untyped-call]
    host = getattr(address, "host", None)
    return str(host) if host is not None else str(address)


def _json(request: server.Request, status: int, body: dict[str, Any]) -> bytes:
    request.setResponseCode(status)
    _header(request, "Content-Type", "application/json")
    return json.dumps(body, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"


def _finish(request: server.Request, status: int, body: dict[str, Any]) -> None:
    if request.finished or getattr(request, "_disconnected", False):
        return  # the client went away; the action is logged all the same
    request.write(_json(request, status, body))  # type: ignore[no-untyped-call]
    request.finish()  # type: ignore[no-untyped-call]
