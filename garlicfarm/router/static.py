"""A :class:`RouterAPI` without a router: fixed answers, or a small JSON file read on every call.

For demos, tests and the local quick-start farm. The file uses the status record's own key names
(docs/protocol.md, "Application layer"), so a ``router`` and ``destinations`` section can be copied
from a record; every key is optional (numbers default to 0, ``netStatus`` to ``"OK"``)::

    {
      "router": {"netStatus": "OK", "uptime": 3600000, "participatingTunnels": 120,
                 "bandwidthCurrent": 40960, "version": "2.45.1"},
      "destinations": [{"destination": "base64...", "tunnelsCurrent": 4, "tunnelsConfigured": 4}]
    }
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, fail, succeed

from garlicfarm.router.interface import LeafStatus, RouterStatus, RouterUnavailable

_ROUTER_INTS = {
    "uptime": "uptime_ms",
    "jobLag": "job_lag_ms",
    "exploratoryTunnels": "exploratory_tunnels",
    "participatingTunnels": "participating_tunnels",
    "bandwidthConfigured": "bandwidth_configured",
    "bandwidthCurrent": "bandwidth_current",
}
_LEAF_INTS = {
    "uptime": "uptime_ms",
    "tunnelsConfigured": "tunnels_configured",
    "tunnelsCurrent": "tunnels_current",
    "bandwidthConfigured": "bandwidth_configured",
    "bandwidthCurrent": "bandwidth_current",
    "connectionsConfigured": "connections_configured",
    "connectionsCurrent": "connections_current",
}


class StaticRouter:
    """Always the same status and leaves."""

    def __init__(self, status: RouterStatus, leaves: Iterable[LeafStatus] = ()) -> None:
        self.status = status
        self.leaves = list(leaves)

    @classmethod
    def stand_in(cls, destinations: Iterable[str], *, tunnels: int = 2) -> StaticRouter:
        """A healthy router serving ``destinations`` with ``tunnels`` tunnels each (the Meta LS2 leaves
        out destinations without current tunnels)."""
        leaves = [LeafStatus(d, tunnels_configured=tunnels, tunnels_current=tunnels) for d in destinations]
        return cls(RouterStatus("OK", uptime_ms=0), leaves)

    @staticmethod
    def from_file(path: Path) -> StatusFileRouter:
        return StatusFileRouter(path)

    def router_status(self) -> Deferred[RouterStatus]:
        return succeed(self.status)

    def leaf_status(self) -> Deferred[list[LeafStatus]]:
        return succeed(list(self.leaves))


class StatusFileRouter:
    """Reads ``path`` on every call, so an operator or a test can change the answers while running.
    An unreadable or malformed file fails the call with :class:`RouterUnavailable`, naming the file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def router_status(self) -> Deferred[RouterStatus]:
        try:
            return succeed(load_status_file(self.path)[0])
        except RouterUnavailable as e:
            return fail(e)

    def leaf_status(self) -> Deferred[list[LeafStatus]]:
        try:
            return succeed(load_status_file(self.path)[1])
        except RouterUnavailable as e:
            return fail(e)


def load_status_file(path: Path) -> tuple[RouterStatus, list[LeafStatus]]:
    try:
        raw = json.loads(path.read_bytes())
    except OSError as e:
        raise RouterUnavailable(f"{path}: cannot read the router status file: {e.strerror}") from None
    except ValueError as e:
        raise RouterUnavailable(f"{path}: not JSON: {e}") from None
    if not isinstance(raw, dict):
        raise RouterUnavailable(f"{path}: expected a JSON object with router and destinations")
    router = _table(path, raw, "router")
    destinations = raw.get("destinations", [])
    if not isinstance(destinations, list):
        raise RouterUnavailable(f"{path}: destinations must be a list")
    return _router(path, router), [_leaf(path, i, d) for i, d in enumerate(destinations)]


def _table(path: Path, raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise RouterUnavailable(f"{path}: {key} must be an object")
    return value


def _int(path: Path, where: str, raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RouterUnavailable(f"{path}: {where}.{key} must be a whole number >= 0")
    return value


def _text(path: Path, where: str, raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise RouterUnavailable(f"{path}: {where}.{key} must be a non-empty string")
    return value


def _router(path: Path, raw: Mapping[str, Any]) -> RouterStatus:
    numbers = {field: _int(path, "router", raw, key) for key, field in _ROUTER_INTS.items()}
    return RouterStatus(
        net_status=_text(path, "router", raw, "netStatus") or "OK",
        last_published_ri=_text(path, "router", raw, "lastPublishedRI"),
        version=_text(path, "router", raw, "version"),
        **numbers,
    )


def _leaf(path: Path, index: int, raw: object) -> LeafStatus:
    where = f"destinations[{index}]"
    if not isinstance(raw, dict):
        raise RouterUnavailable(f"{path}: {where} must be an object")
    destination = _text(path, where, raw, "destination")
    if destination is None:
        raise RouterUnavailable(f"{path}: {where}.destination is missing")
    blocklist = raw.get("blocklist", [])
    if not isinstance(blocklist, list) or not all(isinstance(b, str) for b in blocklist):
        raise RouterUnavailable(f"{path}: {where}.blocklist must be a list of strings")
    numbers = {field: _int(path, where, raw, key) for key, field in _LEAF_INTS.items()}
    return LeafStatus(destination, blocklist=tuple(blocklist), **numbers)
