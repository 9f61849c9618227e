"""The HTTP side: ``/metrics``, ``/livez``, ``/readyz`` as twisted.web resources, behind HTTP Basic auth
when ``[metrics]`` names credentials.

``/metrics`` renders the node's registry on the reactor thread with prometheus_client's encoders (the
text format, or OpenMetrics when Prometheus asks for it). prometheus_client's own Twisted resource
is not used: it runs the scrape on the global reactor's thread pool, and the node's state belongs to
the reactor thread.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Callable
from urllib.parse import parse_qsl, urlsplit

from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry
from twisted.logger import Logger
from twisted.web.resource import Resource
from twisted.web.server import Request

from garlicfarm.metrics.health import Check, render

REALM = "garlicfarm metrics"


class MetricsPage(Resource):
    isLeaf = True  # noqa: N815 - twisted.web's name

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.registry = registry

    def render_GET(self, request: Request) -> bytes:
        accept = request.getHeader("accept") or ""
        encoder, content_type = choose_encoder(accept)
        body = encoder(self.registry)
        request.setHeader("content-type", content_type)  # type: ignore[no-untyped-call]
        request.setHeader("cache-control", "no-store")  # type: ignore[no-untyped-call]
        return body


class HealthPage(Resource):
    """``/livez`` or ``/readyz``: 200 when every check passes, else 503; ``?verbose`` lists them all."""

    isLeaf = True  # noqa: N815 - twisted.web's name
    log = Logger()

    def __init__(self, kind: str, checks: Callable[[], list[Check]]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.kind = kind
        self._checks = checks

    def render_GET(self, request: Request) -> bytes:
        try:
            checks = self._checks()
        except Exception:
            self.log.failure("{kind}: reading the node's state failed", kind=self.kind)
            checks = [Check("read", "reading the node's state failed (the node's log has the traceback)")]
        code, body = render(self.kind, checks, verbose=_verbose(request.uri))
        request.setResponseCode(code)
        request.setHeader("content-type", "text/plain; charset=utf-8")  # type: ignore[no-untyped-call]
        request.setHeader("cache-control", "no-store")  # type: ignore[no-untyped-call]
        return body.encode()


def _verbose(uri: bytes) -> bool:
    """``?verbose`` (twisted.web's ``request.args`` leaves out a key without ``=``)."""
    query = urlsplit(uri).query
    return any(key == b"verbose" for key, _ in parse_qsl(query, keep_blank_values=True))


class Unauthorized(Resource):
    isLeaf = True  # noqa: N815 - twisted.web's name

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    def render(self, request: Request) -> bytes:
        request.setResponseCode(401)
        request.setHeader("www-authenticate", f'Basic realm="{REALM}", charset="UTF-8"')  # type: ignore[no-untyped-call]
        request.setHeader("content-type", "text/plain; charset=utf-8")  # type: ignore[no-untyped-call]
        return b"authentication required\n"


class BasicAuthGuard(Resource):
    """Passes requests to ``wrapped`` only with the right HTTP Basic credentials."""

    def __init__(self, wrapped: Resource, username: str, password: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.wrapped = wrapped
        self._expected = f"{username}:{password}".encode()

    def authorized(self, request: Request) -> bool:
        header = request.getHeader("authorization") or ""
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            given = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(given, self._expected)

    def getChildWithDefault(self, path: bytes, request: Request) -> Resource:
        if not self.authorized(request):
            return Unauthorized()
        child: Resource = self.wrapped.getChildWithDefault(path, request)  # type: ignore[no-untyped-call]
        return child

    def render(self, request: Request) -> bytes:
        if not self.authorized(request):
            return Unauthorized().render(request)
        result: bytes = self.wrapped.render(request)  # type: ignore[no-untyped-call]
        return result


def metrics_root(
    registry: CollectorRegistry,
    live: Callable[[], list[Check]],
    ready: Callable[[], list[Check]],
    credentials: tuple[str, str] | None = None,
) -> Resource:
    root = Resource()  # type: ignore[no-untyped-call]
    root.putChild(b"metrics", MetricsPage(registry))
    root.putChild(b"livez", HealthPage("livez", live))
    root.putChild(b"readyz", HealthPage("readyz", ready))
    if credentials is None:
        return root
    return BasicAuthGuard(root, *credentials)
