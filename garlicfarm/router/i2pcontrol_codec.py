"""I2PControl JSON-RPC 2.0 messages and the RouterInfo answer read into a :class:`RouterStatus`. Pure.

Written against what real routers send, not only the spec (docs/router.md, "Quirks"):

- ``Token`` is always the last key of ``params``: i2pd writes its answers by string concatenation and
  some handlers (NetworkSetting) emit ``{,"key":...}`` when an unknown key such as ``Token`` comes first.
- Request ids are integers: i2pd copies the id into its answer unquoted, so ``"id":"abc"`` comes back
  as ``"id":abc``, which is not JSON.
- Numbers may come as numbers or strings (``8000``, ``"8000"``, ``"1.5E3"``, ``0.00``); anything that
  does not parse counts as missing, and missing numbers are 0.
- ``i2p.router.net.status`` means different things: Java I2P's codes 0..14 (the I2PControl spec), and
  i2pd's own ``RouterStatus`` enum, which has changed between i2pd releases.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from garlicfarm.router.interface import RouterStatus, RouterUnavailable

API_VERSION = 1

# JSON-RPC 2.0 and I2PControl error codes (the I2PControl spec, "Error codes").
METHOD_NOT_FOUND = -32601
INVALID_PASSWORD = -32001
NO_TOKEN = -32002
TOKEN_NOT_FOUND = -32003
TOKEN_EXPIRED = -32004
#: The token is no longer good: authenticate again and retry once.
TOKEN_ERRORS = frozenset({TOKEN_NOT_FOUND, TOKEN_EXPIRED})

UPTIME = "i2p.router.uptime"
VERSION = "i2p.router.version"
NET_STATUS = "i2p.router.net.status"
PARTICIPATING = "i2p.router.net.tunnels.participating"
BW_IN_15S = "i2p.router.net.bw.inbound.15s"
BW_OUT_15S = "i2p.router.net.bw.outbound.15s"
BW_IN_1S = "i2p.router.net.bw.inbound.1s"
BW_OUT_1S = "i2p.router.net.bw.outbound.1s"
#: Answered only by i2pd: its presence says how to read NET_STATUS.
I2PD_MARKER = "i2p.router.net.total.received.bytes"

#: What RouterInfo asks for. i2pd before 2.45 has no 15 s averages, hence the 1 s ones as a fallback.
ROUTER_INFO_KEYS = (
    UPTIME,
    VERSION,
    NET_STATUS,
    PARTICIPATING,
    BW_IN_15S,
    BW_OUT_15S,
    BW_IN_1S,
    BW_OUT_1S,
    I2PD_MARKER,
)
#: NetworkSetting keys read with a null value (any other value *sets* the limit), in KBps.
BW_LIMIT_IN = "i2p.router.net.bw.in"
BW_LIMIT_OUT = "i2p.router.net.bw.out"
#: GetRate: Java I2P's average job lag over the last minute, in ms. i2pd has no GetRate.
JOB_LAG_STAT = "jobQueue.jobLag"
JOB_LAG_PERIOD_MS = 60_000

#: The I2PControl spec's i2p.router.net.status, as Java I2P answers it.
JAVA_NET_STATUS = (
    "OK",
    "TESTING",
    "FIREWALLED",
    "HIDDEN",
    "WARN_FIREWALLED_AND_FAST",
    "WARN_FIREWALLED_AND_FLOODFILL",
    "WARN_FIREWALLED_WITH_INBOUND_TCP",
    "WARN_FIREWALLED_WITH_UDP_DISABLED",
    "ERROR_I2CP",
    "ERROR_CLOCK_SKEW",
    "ERROR_PRIVATE_TCP_ADDRESS",
    "ERROR_SYMMETRIC_NAT",
    "ERROR_UDP_PORT_IN_USE",
    "ERROR_NO_ACTIVE_PEERS_CHECK_CONNECTION_AND_FIREWALL",
    "ERROR_UDP_DISABLED_AND_TCP_UNSET",
)
# i2pd sends (int) i2p::context.GetStatus(), its own enum. Proxy/Mesh came in 2.37; 2.44 moved the
# error out of the status (checked: 2.45.1 answers 3 while its web console says "Unknown"); later
# releases moved "testing" out too and added Stan. The names are i2pd's, upper-cased.
I2PD_NET_STATUS_OLD = ("OK", "TESTING", "FIREWALLED", "ERROR", "UNKNOWN", "PROXY", "MESH")  # < 2.44
I2PD_NET_STATUS_2_44 = ("OK", "TESTING", "FIREWALLED", "UNKNOWN", "PROXY", "MESH")  # 2.44 .. 2.46
I2PD_NET_STATUS_NEW = ("OK", "FIREWALLED", "UNKNOWN", "PROXY", "MESH", "STAN")  # 2.47 and later

_NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")


def encode_request(
    request_id: int, method: str, params: Mapping[str, Any], token: str | None = None
) -> bytes:
    """A JSON-RPC 2.0 request; ``token`` becomes the last key of ``params`` (see the module docstring)."""
    ordered = {k: v for k, v in params.items() if k != "Token"}
    if token is not None:
        ordered["Token"] = token
    message = {"id": request_id, "method": method, "params": ordered, "jsonrpc": "2.0"}
    return json.dumps(message, separators=(",", ":")).encode()


class I2PControlError(RouterUnavailable):
    """The router answered with a JSON-RPC error object."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"I2PControl {method} failed: error {code}: {message}")
        self.method = method
        self.code = code
        self.error_message = message


def decode_response(method: str, body: bytes) -> dict[str, Any]:
    """The ``result`` object of a JSON-RPC answer; raises :class:`I2PControlError` for an error object
    and :class:`RouterUnavailable` for anything that is not a JSON-RPC answer."""
    try:
        message = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        excerpt = body[:120].decode("utf-8", "replace")
        raise RouterUnavailable(
            f"I2PControl {method}: the router's answer is not JSON: {excerpt!r}"
        ) from None
    if not isinstance(message, dict):
        raise RouterUnavailable(f"I2PControl {method}: the router's answer is not a JSON-RPC object")
    error = message.get("error")
    if error is not None:
        if not isinstance(error, dict):
            raise RouterUnavailable(f"I2PControl {method}: malformed error object {error!r:.120}")
        code = as_int(error.get("code"), default=0)
        text = error.get("message")
        raise I2PControlError(method, code, text if isinstance(text, str) else "(no message)")
    result = message.get("result")
    if not isinstance(result, dict):
        raise RouterUnavailable(f"I2PControl {method}: the router's answer has no result object")
    return result


def as_float(value: object, default: float = 0.0) -> float:
    """A number from a JSON number or a numeric string; ``default`` for anything else (bools, null,
    garbage, NaN, infinities)."""
    if isinstance(value, bool):
        return default
    if not isinstance(value, int | float | str) or (isinstance(value, str) and not _NUMBER.fullmatch(value)):
        return default
    number = float(value)
    return number if math.isfinite(number) else default


def as_int(value: object, default: int = 0) -> int:
    """An integer from a JSON number or a numeric string ("1234", "1.5E3"), rounded; else ``default``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = as_float(value, default=math.nan)
    return round(number) if math.isfinite(number) else default


def _version_tuple(version: str | None) -> tuple[int, ...]:
    parts = re.findall(r"\d+", version or "")
    return tuple(int(p) for p in parts[:3])


def is_i2pd(result: Mapping[str, Any]) -> bool:
    return I2PD_MARKER in result


def net_status_name(code: int, *, i2pd: bool, version: str | None = None) -> str:
    """The name of an ``i2p.router.net.status`` code, as Java I2P or the given i2pd version means it."""
    names: tuple[str, ...]
    if i2pd:
        found = _version_tuple(version)
        if found >= (2, 47):
            names = I2PD_NET_STATUS_NEW
        elif found >= (2, 44):
            names = I2PD_NET_STATUS_2_44
        else:
            names = I2PD_NET_STATUS_OLD
    else:
        names = JAVA_NET_STATUS
    return names[code] if 0 <= code < len(names) else f"UNKNOWN_{code}"


def _bandwidth(result: Mapping[str, Any]) -> int:
    inbound, outbound = (BW_IN_15S, BW_OUT_15S) if BW_IN_15S in result else (BW_IN_1S, BW_OUT_1S)
    return max(0, round(as_float(result.get(inbound)) + as_float(result.get(outbound))))


def router_status(
    result: Mapping[str, Any], *, bandwidth_limits: Mapping[str, Any] | None = None, job_lag_ms: float = 0.0
) -> RouterStatus:
    """A :class:`RouterStatus` from a RouterInfo ``result`` (and, if read, NetworkSetting's limits in
    KBps and GetRate's job lag). Unknown keys are ignored, missing ones read as 0 or None."""
    version = result.get(VERSION)
    version = version if isinstance(version, str) and version else None
    if NET_STATUS in result:
        code = as_int(result.get(NET_STATUS), default=-1)
        net_status = net_status_name(code, i2pd=is_i2pd(result), version=version)
    else:
        net_status = "UNKNOWN"
    limits = bandwidth_limits or {}
    configured_kbps = as_float(limits.get(BW_LIMIT_IN)) + as_float(limits.get(BW_LIMIT_OUT))
    return RouterStatus(
        net_status=net_status,
        uptime_ms=max(0, as_int(result.get(UPTIME))),
        job_lag_ms=max(0, round(job_lag_ms)),
        participating_tunnels=max(0, as_int(result.get(PARTICIPATING))),
        # I2P's KBps are KiB/s.
        bandwidth_configured=max(0, round(configured_kbps * 1024)),
        bandwidth_current=_bandwidth(result),
        version=version,
    )
