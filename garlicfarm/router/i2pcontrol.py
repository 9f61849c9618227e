"""The local router's status through I2PControl (JSON-RPC 2.0 over HTTPS): a :class:`RouterAPI`.

``Authenticate`` once for a token, keep it, and send it with every call; when the router says the
token expired or is unknown (-32003/-32004), authenticate again and retry that call once. A status read
is RouterInfo, NetworkSetting (the configured bandwidth, read with null values), and GetRate for Java
I2P's job lag (i2pd has no GetRate: after its "method not found" we stop asking).

I2PControl has no per-destination API, so :meth:`leaf_status` reports the configured leaves with zeros
(docs/router.md, "Leaves").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.web.client import Agent, HTTPConnectionPool
from twisted.web.iweb import IAgent

from garlicfarm.router import i2pcontrol_codec as codec
from garlicfarm.router.i2pcontrol_codec import I2PControlError
from garlicfarm.router.i2pcontrol_http import MAX_RESPONSE, RequestFailed, post
from garlicfarm.router.i2pcontrol_tls import RouterTLSPolicy, check_url
from garlicfarm.router.interface import LeafStatus, RouterStatus, RouterUnavailable

DEFAULT_URL = "https://127.0.0.1:7650/jsonrpc"
#: Both routers' factory default; an operator should change it.
DEFAULT_PASSWORD = "itoopie"  # noqa: S105


class I2PControlRouter:
    """:class:`~garlicfarm.router.interface.RouterAPI` over I2PControl.

    ``url`` must be on loopback unless ``pin`` (the router certificate's SHA-256, ``sha256:AB:...``)
    is given; otherwise the constructor raises
    :class:`~garlicfarm.router.i2pcontrol_tls.I2PControlConfigError`.
    """

    log = Logger()

    def __init__(
        self,
        reactor: Any,
        url: str = DEFAULT_URL,
        password: str = DEFAULT_PASSWORD,
        *,
        leaves: Iterable[str] = (),
        pin: str | None = None,
        timeout: float = 10.0,
        max_response: int = MAX_RESPONSE,
        agent: IAgent | None = None,
    ) -> None:
        self.endpoint = check_url(url, pin)
        self.url = url
        self.leaves = tuple(leaves)
        self.timeout = timeout
        self.max_response = max_response
        self._password = password
        self._clock: IReactorTime = reactor
        if agent is None:
            # i2pd closes every connection after one answer: nothing to keep alive. (Twisted's Agent
            # and pool are untyped, hence the ignores.)
            pool = HTTPConnectionPool(reactor, persistent=False)  # type: ignore[no-untyped-call]
            policy = RouterTLSPolicy(self.endpoint)
            agent = Agent(reactor, contextFactory=policy, connectTimeout=timeout, pool=pool)  # type: ignore[no-untyped-call]
        self._agent: IAgent = agent
        self._ids = itertools.count(1)
        self._token: str | None = None
        self._has_get_rate = True

    # -- RouterAPI

    def router_status(self) -> Deferred[RouterStatus]:
        return Deferred.fromCoroutine(self._router_status())

    def leaf_status(self) -> Deferred[list[LeafStatus]]:
        # No I2PControl method reports a destination's tunnels or traffic (docs/router.md, "Leaves").
        return succeed([LeafStatus(destination) for destination in self.leaves])

    # -- JSON-RPC

    def authenticate(self) -> Deferred[str]:
        """A fresh token (kept for the calls that follow)."""
        return Deferred.fromCoroutine(self._authenticate())

    def call(self, method: str, params: Mapping[str, Any]) -> Deferred[dict[str, Any]]:
        """``method`` with ``params`` and the token; the ``result`` object. Fails with RouterUnavailable
        (:class:`~garlicfarm.router.i2pcontrol_codec.I2PControlError` for a JSON-RPC error)."""
        return Deferred.fromCoroutine(self._call(method, params))

    async def _router_status(self) -> RouterStatus:
        info = await self._call("RouterInfo", dict.fromkeys(codec.ROUTER_INFO_KEYS))
        limits = await self._optional(
            "NetworkSetting", dict.fromkeys((codec.BW_LIMIT_IN, codec.BW_LIMIT_OUT))
        )
        job_lag = 0.0
        if self._has_get_rate:
            rate = await self._optional(
                "GetRate", {"Stat": codec.JOB_LAG_STAT, "Period": codec.JOB_LAG_PERIOD_MS}
            )
            job_lag = codec.as_float(rate.get("Result"))
        return codec.router_status(info, bandwidth_limits=limits, job_lag_ms=job_lag)

    async def _optional(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """A call whose JSON-RPC errors only mean "not available here": an empty result instead."""
        try:
            return await self._call(method, params)
        except I2PControlError as e:
            if e.code == codec.METHOD_NOT_FOUND and method == "GetRate":
                self._has_get_rate = False
            self.log.debug("I2PControl {method} not available: {why}", method=method, why=str(e))
            return {}

    async def _call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        token = self._token or await self._authenticate()
        try:
            return await self._rpc(method, params, token)
        except I2PControlError as e:
            if e.code not in codec.TOKEN_ERRORS:
                raise
            self.log.info("I2PControl token no longer valid ({code}); authenticating again", code=e.code)
        return await self._rpc(method, params, await self._authenticate())

    async def _authenticate(self) -> str:
        self._token = None
        try:
            result = await self._rpc(
                "Authenticate", {"API": codec.API_VERSION, "Password": self._password}, None
            )
        except I2PControlError as e:
            if e.code == codec.INVALID_PASSWORD:
                raise RouterUnavailable(f"I2PControl at {self.url}: wrong I2PControl password") from None
            raise
        token = result.get("Token")
        if not isinstance(token, str | int) or isinstance(token, bool) or token == "":
            # i2pd answers a wrong password with an empty result instead of error -32001.
            raise RouterUnavailable(
                f"I2PControl at {self.url}: wrong I2PControl password (no token in the answer)"
            )
        self._token = str(token)
        return self._token

    async def _rpc(self, method: str, params: Mapping[str, Any], token: str | None) -> dict[str, Any]:
        body = codec.encode_request(next(self._ids), method, params, token)
        try:
            answer = await post(
                self._agent, self._clock, self.url, body, timeout=self.timeout, max_size=self.max_response
            )
        except RequestFailed as e:
            raise RouterUnavailable(f"I2PControl at {self.url}: {method}: {e}") from None
        return codec.decode_response(method, answer)
