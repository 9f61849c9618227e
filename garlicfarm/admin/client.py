"""A client of the console's JSON API, for the ``garlicfarm`` command: Digest authentication (on the
handshake's pieces), the CSRF token for actions, TLS checked against the farm's CA or pins."""

from __future__ import annotations

import json
import os
from io import BytesIO
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectError
from twisted.web.client import Agent, BrowserLikePolicyForHTTPS, FileBodyProducer, readBody
from twisted.web.http_headers import Headers
from twisted.web.iweb import IPolicyForHTTPS, IResponse
from zope.interface import implementer

from garlicfarm.admin.guard import CSRF_HEADER
from garlicfarm.config import TLSConfig
from garlicfarm.handshake.authheader import parse_challenges
from garlicfarm.handshake.digest import Challenge, DigestCredentials
from garlicfarm.handshake.errors import AuthHeaderSyntaxError
from garlicfarm.net.agent_errors import telling_cause
from garlicfarm.net.client import plain_reason


class AdminClientError(Exception):
    """The console refused or failed; the message is its answer."""

    def __init__(self, message: str, answer: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        #: the console's JSON answer to a refused action (``leader``, ...), when it sent one
        self.answer = answer or {}


@implementer(IPolicyForHTTPS)
class _FarmTLS:
    def __init__(self, tls: TLSConfig) -> None:
        self.tls = tls

    def creatorForNetloc(self, hostname: bytes, port: int) -> Any:
        from garlicfarm.tls.options import client_options  # noqa: PLC0415 - pyOpenSSL is heavy

        return client_options(self.tls, hostname.decode("ascii"))


class AdminClient:
    def __init__(
        self,
        reactor: Any,
        url: str,
        username: str,
        password: str,
        tls: TLSConfig | None,
        timeout: float = 30.0,
    ) -> None:
        self.reactor = reactor
        self.url = url.rstrip("/")
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        self.username = username
        self.password = password
        self.timeout = timeout
        self.tls = tls
        self.challenge: Challenge | None = None
        self.nc = 0
        self.csrf: str | None = None

    async def get(self, path: str) -> Any:
        return await self._request("GET", path, None)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        if self.csrf is None:
            self.csrf = (await self.get("/api/session"))["csrf"]
        return await self._request("POST", path, json.dumps(body).encode())

    async def _request(self, method: str, path: str, body: bytes | None) -> Any:
        for _attempt in range(3):
            headers = Headers({"Accept": ["application/json"]})
            if body is not None:
                headers.setRawHeaders("Content-Type", ["application/json"])
                headers.setRawHeaders(CSRF_HEADER, [self.csrf or ""])
                headers.setRawHeaders("Origin", [self.origin])
            if self.challenge is not None:
                self.nc += 1
                credentials = DigestCredentials.answer(
                    self.challenge,
                    username=self.username,
                    password=self.password,
                    method=method,
                    uri=path,
                    nc=self.nc,
                    cnonce=os.urandom(8).hex(),
                )
                headers.setRawHeaders("Authorization", [credentials.to_header()])
            producer = None if body is None else FileBodyProducer(BytesIO(body))  # type: ignore[no-untyped-call]
            policy = _FarmTLS(self.tls) if self.tls is not None else BrowserLikePolicyForHTTPS()  # type: ignore[no-untyped-call]
            agent = Agent(self.reactor, policy)  # type: ignore[no-untyped-call]
            d: Deferred[IResponse] = agent.request(
                method.encode(), (self.url + path).encode(), headers, producer
            )
            d.addTimeout(self.timeout, self.reactor)
            try:
                response = await d
                data = await readBody(response)
            except ConnectError as e:  # worded as the peer-protocol client words it (plain_reason)
                raise AdminClientError(f"cannot connect to {self.url}: {plain_reason(e)}") from None
            except Exception as e:
                raise AdminClientError(f"{self.url}{path}: {plain_reason(telling_cause(e))}") from None
            if response.code == 401:
                sent = headers.hasHeader("Authorization")
                if not self._take_challenge(response) and sent:
                    raise AdminClientError(f"{self.url}: the console refused the credentials")
                continue
            try:
                answer = json.loads(data)
            except ValueError:
                raise AdminClientError(f"{self.url}{path}: HTTP {response.code}, not JSON") from None
            if response.code >= 400:
                raise AdminClientError(answer.get("error", f"HTTP {response.code}"), answer)
            return answer
        raise AdminClientError(f"{self.url}: the console refused the credentials")

    def _take_challenge(self, response: IResponse) -> bool:
        """Adopt the 401's challenge (the first one we can answer); whether it said stale."""
        values = response.headers.getRawHeaders("WWW-Authenticate") or []
        try:
            items = parse_challenges(", ".join(values))
        except AuthHeaderSyntaxError:
            items = []
        challenges = [c for c in (Challenge.from_item(i) for i in items) if c is not None]
        if not challenges:
            raise AdminClientError(f"{self.url}: no usable Digest challenge (not a garlicfarm console?)")
        self.challenge, self.nc = challenges[0], 0
        return challenges[0].stale
