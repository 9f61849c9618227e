"""The status record a member sends through the log (garlicfarm.app.publishing.status_record): its
JSON keys are the schema's, word for word, since every member and the pipeline read them
(docs/protocol.md, "Application layer")."""

from __future__ import annotations

from garlicfarm.app.publishing import status_record
from garlicfarm.app.schema import SCHEMA_VERSION, LogMark
from garlicfarm.router.interface import LeafStatus, RouterStatus


def test_every_field_is_sent_under_the_schemas_name() -> None:
    router = RouterStatus(
        "FIREWALLED",
        uptime_ms=1,
        job_lag_ms=2,
        exploratory_tunnels=3,
        participating_tunnels=4,
        bandwidth_configured=5,
        bandwidth_current=6,
        last_published_ri="ri",
    )
    leaf = LeafStatus("leaf", 7, 8, 9, 10, 11, 12, 13, ("blocked",))
    record = status_record(
        "farm", 3, 1_000, router, [leaf], "on", True, "farm-master", 14, LogMark(15, "ab" * 32)
    )
    assert record == {
        "version": SCHEMA_VERSION,
        "cluster": "farm",
        "date": 1_000,
        "id": 3,
        "config": {},
        "meta": {
            "destination": "farm-master",
            "lastPublishedTime": 14,
            "publishConfig": "on",
            "publishing": True,
        },
        "router": {
            "uptime": 1,
            "netStatus": "FIREWALLED",
            "jobLag": 2,
            "exploratoryTunnels": 3,
            "participatingTunnels": 4,
            "bandwidthConfigured": 5,
            "bandwidthCurrent": 6,
            "lastPublishedRI": "ri",
        },
        "destinations": [
            {
                "destination": "leaf",
                "uptime": 7,
                "tunnelsConfigured": 8,
                "tunnelsCurrent": 9,
                "bandwidthConfigured": 10,
                "bandwidthCurrent": 11,
                "connectionsConfigured": 12,
                "connectionsCurrent": 13,
                "blocklist": ["blocked"],
            }
        ],
        "log": {"index": 15, "digest": "ab" * 32},
    }
