"""A real single-node farm on a MemoryReactorClock with a [metrics] listener, and requests to its
endpoints rendered through twisted.web's resource tree (no sockets)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from twisted.internet.testing import MemoryReactorClock
from twisted.web.resource import Resource, getChildForRequest
from twisted.web.test.requesthelper import DummyRequest

from garlicfarm.config import parse_config
from garlicfarm.metrics.service import MetricsService
from garlicfarm.service import GarlicFarmService

PASSWORD = "correct horse battery staple"


def make_node(
    tmp: Path, clock: MemoryReactorClock, metrics: dict[str, Any] | None = None
) -> GarlicFarmService:
    """A started single-node farm (no TLS, loopback), leader after a few ticks, a status committed."""
    (tmp / "credentials").write_text(PASSWORD + "\n")
    raw: dict[str, Any] = {
        "node": {
            "id": 1,
            "cluster": "farm",
            "endpoint": "tcp://127.0.0.1:9001",
            "listen": "tcp:9001:interface=127.0.0.1",
            "data_dir": "node-1",
        },
        "auth": {"username": "farm", "password_file": "credentials"},
        "peers": {"1": "tcp://127.0.0.1:9001"},
        "app": {"interval": 5},
        "router": {"leaves": ["leaf-1", "leaf-2"]},
        "publisher": {"kind": "none"},
        "metrics": metrics if metrics is not None else {"listen": 9201},
    }
    node = GarlicFarmService(parse_config(raw, tmp / "node-1.toml"), clock)
    node.startService()
    for _ in range(100):
        clock.advance(0.05)
    assert node.driver.core.is_leader()
    assert node.state.latest, "the first status report was committed"
    return node


class Answer:
    def __init__(self, code: int, headers: dict[str, str], body: bytes) -> None:
        self.code = code
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode()


def get(root: Resource, url: str, headers: dict[str, str] | None = None) -> Answer:
    """GET ``url`` (a path with an optional query) from the resource tree ``root``."""
    parts = urlsplit(url)
    request = DummyRequest([segment.encode() for segment in parts.path.lstrip("/").split("/")])
    request.uri = url.encode()
    request.args = {k.encode(): [x.encode() for x in v] for k, v in parse_qs(parts.query, True).items()}
    for name, value in (headers or {}).items():
        request.requestHeaders.addRawHeader(name, value)
    resource = getChildForRequest(root, request)
    body = resource.render(request)
    assert isinstance(body, bytes)
    got = {k.decode().lower(): v[0].decode() for k, v in request.responseHeaders.getAllRawHeaders()}
    return Answer(request.responseCode or 200, got, body)


def basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def metrics_of(node: GarlicFarmService) -> MetricsService:
    assert node.metrics is not None
    return node.metrics
