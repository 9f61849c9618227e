"""Building status records for tests."""

from __future__ import annotations

import json
from typing import Any

from garlicfarm.wire import Application, LogEntry

HOUR = 3_600_000


def record(
    server: int,
    date: int,
    *,
    uptime_h: int = 24,
    net: str = "OK",
    publish: str = "auto",
    tunnels: int = 100,
    bandwidth: int = 100 * 1024,
    lag: int = 0,
    destinations: list[dict[str, Any]] | None = None,
    cluster: str = "farm",
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "date": date,
        "id": server,
        "version": 1,
        "config": {},
        "meta": {
            "destination": f"master{server}",
            "publishConfig": publish,
            "publishing": False,
            "lastPublishedTime": 0,
        },
        "router": {
            "uptime": uptime_h * HOUR,
            "netStatus": net,
            "jobLag": lag,
            "exploratoryTunnels": 4,
            "participatingTunnels": tunnels,
            "bandwidthConfigured": 1024 * 1024,
            "bandwidthCurrent": bandwidth,
        },
        "destinations": destinations
        if destinations is not None
        else [{"destination": f"dest{server}", "uptime": HOUR, "tunnelsConfigured": 4, "tunnelsCurrent": 4}],
    }


def entry(value: dict[str, Any] | bytes, term: int = 1) -> LogEntry:
    data = value if isinstance(value, bytes) else json.dumps(value).encode()
    return LogEntry(term, Application(data))
