"""StaticRouter and the status file it can read on every call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from garlicfarm.router.interface import LeafStatus, RouterStatus, RouterUnavailable
from garlicfarm.router.static import StaticRouter


def result(d: Deferred[Any]) -> Any:
    """The result of an already-fired Deferred (raising its failure)."""
    out: list[Any] = []
    d.addBoth(out.append)
    assert out, "the Deferred has not fired"
    if isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]


def test_static_answers() -> None:
    status = RouterStatus("OK", uptime_ms=5)
    router = StaticRouter(status, [LeafStatus("a")])
    assert result(router.router_status()) is status
    assert result(router.leaf_status()) == [LeafStatus("a")]


def test_stand_in_is_healthy_with_current_tunnels() -> None:
    router = StaticRouter.stand_in(["a", "b"], tunnels=3)
    assert result(router.router_status()).healthy
    assert result(router.leaf_status()) == [
        LeafStatus("a", tunnels_configured=3, tunnels_current=3),
        LeafStatus("b", tunnels_configured=3, tunnels_current=3),
    ]


def test_file_is_read_on_every_call(tmp_path: Path) -> None:
    path = tmp_path / "router.json"
    path.write_text(
        json.dumps(
            {
                "router": {
                    "netStatus": "FIREWALLED",
                    "uptime": 3_600_000,
                    "participatingTunnels": 7,
                    "version": "x",
                },
                "destinations": [{"destination": "leaf", "tunnelsCurrent": 2, "blocklist": ["h"]}],
            }
        )
    )
    router = StaticRouter.from_file(path)
    assert result(router.router_status()) == RouterStatus(
        "FIREWALLED", uptime_ms=3_600_000, participating_tunnels=7, version="x"
    )
    assert result(router.leaf_status()) == [LeafStatus("leaf", tunnels_current=2, blocklist=("h",))]
    path.write_text(json.dumps({"router": {"netStatus": "ERROR_CLOCK_SKEW"}}))
    assert result(router.router_status()) == RouterStatus("ERROR_CLOCK_SKEW", uptime_ms=0)
    assert result(router.leaf_status()) == []


def test_empty_object_is_a_healthy_router(tmp_path: Path) -> None:
    path = tmp_path / "router.json"
    path.write_text("{}")
    assert result(StaticRouter.from_file(path).router_status()) == RouterStatus("OK", uptime_ms=0)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{", "not JSON"),
        ("[]", "expected a JSON object"),
        ('{"router": []}', "router must be an object"),
        ('{"router": {"uptime": -1}}', r"router.uptime must be a whole number >= 0"),
        ('{"router": {"uptime": "5"}}', r"router.uptime must be a whole number >= 0"),
        ('{"router": {"netStatus": 3}}', r"router.netStatus must be a non-empty string"),
        ('{"destinations": {}}', "destinations must be a list"),
        ('{"destinations": [1]}', r"destinations\[0\] must be an object"),
        ('{"destinations": [{}]}', r"destinations\[0\].destination is missing"),
        ('{"destinations": [{"destination": "d", "blocklist": [1]}]}', "blocklist must be a list of strings"),
        (
            '{"destinations": [{"destination": "d", "tunnelsCurrent": true}]}',
            "tunnelsCurrent must be a whole",
        ),
    ],
)
def test_bad_file(tmp_path: Path, content: str, why: str) -> None:
    path = tmp_path / "router.json"
    path.write_text(content)
    with pytest.raises(RouterUnavailable, match=why) as caught:
        result(StaticRouter.from_file(path).router_status())
    assert str(path) in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RouterUnavailable, match="cannot read the router status file"):
        result(StaticRouter.from_file(tmp_path / "nope.json").leaf_status())


def test_implementations_satisfy_router_api(tmp_path: Path) -> None:
    from garlicfarm.router.i2pcontrol import I2PControlRouter
    from garlicfarm.router.interface import RouterAPI
    from tests.router.fake_i2pcontrol import reactor

    # mypy checks these assignments against the RouterAPI protocol.
    routers: list[RouterAPI] = [
        StaticRouter.stand_in(["a"]),
        StaticRouter.from_file(tmp_path / "r.json"),
        I2PControlRouter(reactor),
    ]
    assert len(routers) == 3


def test_a_stand_in_has_two_tunnels_a_destination_and_no_uptime() -> None:
    router = StaticRouter.stand_in(["a"])
    assert result(router.router_status()) == RouterStatus("OK", uptime_ms=0)
    assert result(router.leaf_status()) == [LeafStatus("a", tunnels_configured=2, tunnels_current=2)]


def test_a_status_files_texts_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps({"router": {"lastPublishedRI": "2026-11-27", "version": "2.55.0"}}))
    status = result(StaticRouter.from_file(path).router_status())
    assert (status.net_status, status.last_published_ri, status.version) == ("OK", "2026-11-27", "2.55.0")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"router": {"lastPublishedRI": 5}}, "router.lastPublishedRI must be a non-empty string"),
        ({"router": {"version": ""}}, "router.version must be a non-empty string"),
        ({"router": {"netStatus": []}}, "router.netStatus must be a non-empty string"),
        ({"destinations": [{"destination": 7}]}, "destinations[0].destination must be a non-empty string"),
        (
            {"destinations": [{"destination": "a"}, {"destination": "b", "tunnelsCurrent": -1}]},
            "destinations[1].tunnelsCurrent must be a whole number >= 0",
        ),
    ],
)
def test_a_bad_value_in_the_status_file_is_named_with_the_file(
    tmp_path: Path, content: dict[str, Any], says: str
) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps(content))
    router = StaticRouter.from_file(path)
    for call in (router.router_status, router.leaf_status):  # each reads the whole file
        with pytest.raises(RouterUnavailable) as raised:
            result(call())
        assert str(raised.value) == f"{path}: {says}"
