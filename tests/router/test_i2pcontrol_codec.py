"""The I2PControl codec: request encoding, lenient numbers, net status names, RouterInfo mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest

from garlicfarm.router import i2pcontrol_codec as codec
from garlicfarm.router.i2pcontrol_codec import I2PControlError
from garlicfarm.router.interface import RouterStatus, RouterUnavailable


def test_token_is_the_last_parameter() -> None:
    body = codec.encode_request(7, "RouterInfo", {"Token": "old", "a": None, "b": 1}, token="t")
    message = json.loads(body)
    assert list(message["params"]) == ["a", "b", "Token"]
    assert message == {
        "id": 7,
        "method": "RouterInfo",
        "params": {"a": None, "b": 1, "Token": "t"},
        "jsonrpc": "2.0",
    }
    assert body.index(b'"Token"') > body.index(b'"b"')


def test_no_token_for_authenticate() -> None:
    message = json.loads(codec.encode_request(1, "Authenticate", {"API": 1, "Password": "p"}))
    assert message["params"] == {"API": 1, "Password": "p"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1234, 1234),
        ("1234", 1234),
        ("1.5E3", 1500),
        (" 12 ", 12),
        ("-3", -3),
        (2.6, 3),
        ("0.00", 0),
        (None, 0),
        ("", 0),
        ("abc", 0),
        ("1e", 0),
        ("nan", 0),
        ("inf", 0),
        (True, 0),
        ([1], 0),
        ({"a": 1}, 0),
        (10**30, 10**30),
    ],
)
def test_lenient_integers(value: Any, expected: int) -> None:
    assert codec.as_int(value) == expected


def test_lenient_floats() -> None:
    assert codec.as_float("1.5E3") == 1500.0
    assert codec.as_float(".5") == 0.5
    assert codec.as_float(float("nan")) == 0.0
    assert codec.as_float("garbage", default=-1.0) == -1.0


@pytest.mark.parametrize(
    ("code", "i2pd", "version", "name"),
    [
        (0, False, "2.10.0", "OK"),
        (1, False, None, "TESTING"),
        (2, False, None, "FIREWALLED"),
        (3, False, None, "HIDDEN"),
        (4, False, None, "WARN_FIREWALLED_AND_FAST"),
        (8, False, None, "ERROR_I2CP"),
        (14, False, None, "ERROR_UDP_DISABLED_AND_TCP_UNSET"),
        (15, False, None, "UNKNOWN_15"),
        (-1, False, None, "UNKNOWN_-1"),
        (3, True, "2.45.1", "UNKNOWN"),  # seen: i2pd 2.45.1 answers 3 while its console says "Unknown"
        (4, True, "2.45.1", "PROXY"),
        (1, True, "2.45.1", "TESTING"),
        (1, True, "2.58.0", "FIREWALLED"),
        (2, True, "2.58.0", "UNKNOWN"),
        (5, True, "2.58.0", "STAN"),
        (3, True, "2.43.0", "ERROR"),
        (3, True, None, "ERROR"),
    ],
)
def test_net_status_names(code: int, i2pd: bool, version: str | None, name: str) -> None:
    assert codec.net_status_name(code, i2pd=i2pd, version=version) == name


def test_router_status_from_i2pd_answer() -> None:
    # Verbatim from i2pd 2.45.1 (RouterInfo, then NetworkSetting).
    info = json.loads(
        '{"i2p.router.uptime":8000,"i2p.router.net.status":3,"i2p.router.version":"2.45.1",'
        '"i2p.router.status":"0","i2p.router.net.bw.inbound.15s":0.00,"i2p.router.net.bw.outbound.15s":0.00,'
        '"i2p.router.net.tunnels.participating":0,"i2p.router.net.total.received.bytes":0.00}'
    )
    limits = {"i2p.router.net.bw.in": 48, "i2p.router.net.bw.out": 48}
    status = codec.router_status(info, bandwidth_limits=limits)
    assert status == RouterStatus("UNKNOWN", uptime_ms=8000, bandwidth_configured=96 * 1024, version="2.45.1")
    assert status.healthy  # i2pd says UNKNOWN in normal operation: only ERROR_* is a failure


def test_router_status_falls_back_to_1s_bandwidth() -> None:
    info = {
        "i2p.router.net.bw.inbound.1s": "10.4",
        "i2p.router.net.bw.outbound.1s": 5,
        "i2p.router.net.status": 0,
    }
    assert codec.router_status(info).bandwidth_current == 15


def test_router_status_ignores_unknown_and_bad_values() -> None:
    info = {
        "i2p.router.uptime": -5,
        "i2p.router.version": "",
        "i2p.router.net.tunnels.participating": "many",
        "i2p.router.extra": [1, 2],
    }
    assert codec.router_status(info) == RouterStatus("UNKNOWN", uptime_ms=0)


def test_decode_result() -> None:
    assert codec.decode_response("Echo", b'{"id":1,"result":{"Result":"hi"},"jsonrpc":"2.0"}') == {
        "Result": "hi"
    }


def test_decode_error() -> None:
    body = b'{"id":null,"error":{"code":-32601,"message":"Method not found"},"jsonrpc":"2.0"}'
    with pytest.raises(I2PControlError, match="GetRate failed: error -32601: Method not found") as caught:
        codec.decode_response("GetRate", body)
    assert caught.value.code == -32601


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"id":1,"result":{,"i2p.router.net.bw.in":48}}', "not JSON"),  # i2pd with Token first
        (b'{"id":abc,"result":{}}', "not JSON"),  # i2pd echoing a string id unquoted
        (b"\xff\xfe", "not JSON"),
        (b"[]", "not a JSON-RPC object"),
        (b'{"id":1}', "no result object"),
        (b'{"id":1,"result":[1]}', "no result object"),
        (b'{"id":1,"error":"bad"}', "malformed error object"),
    ],
)
def test_decode_garbage(body: bytes, why: str) -> None:
    with pytest.raises(RouterUnavailable, match=why):
        codec.decode_response("RouterInfo", body)


def test_router_info_request_fits_i2pd_buffer() -> None:
    # i2pd reads a request (HTTP headers included) into a 1024-byte buffer: stay well below.
    body = codec.encode_request(10**9, "RouterInfo", dict.fromkeys(codec.ROUTER_INFO_KEYS), "t" * 64)
    assert len(body) < 600


# -- bounds: each table's first and last i2pd version, codes outside a table -----------------------


@pytest.mark.parametrize(
    ("version", "code", "name"),
    [
        ("2.43.0", 3, "ERROR"),  # the last version of the old table
        ("2.44.0", 3, "UNKNOWN"),  # the first of the 2.44 table
        ("2.46.1", 1, "TESTING"),  # its last
        ("2.47.0", 1, "FIREWALLED"),  # the first of the new one
        ("2.48.0", 5, "STAN"),
        ("2.47.0.9", 1, "FIREWALLED"),  # a fourth part does not count
        ("2.43.0.99", 3, "ERROR"),
        (None, 3, "ERROR"),  # no version: the oldest table
        ("2.47", 1, "FIREWALLED"),  # two parts only: still the first version of its table
        ("2.44", 3, "UNKNOWN"),
    ],
)
def test_each_i2pd_table_from_its_first_version(version: str | None, code: int, name: str) -> None:
    assert codec.net_status_name(code, i2pd=True, version=version) == name


def test_a_missing_or_garbled_status_code_is_unknown() -> None:
    for value in (None, "x", True, 1e400):
        assert codec.router_status({codec.NET_STATUS: value}).net_status == "UNKNOWN_-1"
    assert codec.router_status({}).net_status == "UNKNOWN"


def test_an_error_without_a_code_or_message_is_still_an_error() -> None:
    with pytest.raises(I2PControlError) as raised:
        codec.decode_response("RouterInfo", b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":7}}')
    assert raised.value.code == 0 and raised.value.error_message == "(no message)"
    assert raised.value.method == "RouterInfo"


def test_an_answer_that_is_not_json_is_quoted_up_to_120_bytes() -> None:
    body = b"<" + b"h" * 200
    with pytest.raises(RouterUnavailable) as raised:
        codec.decode_response("RouterInfo", body)
    assert f"{'<' + 'h' * 119!r}" in str(raised.value)
    assert "h" * 120 not in str(raised.value)


def test_a_request_is_compact_json() -> None:
    assert b" " not in codec.encode_request(1, "RouterInfo", {"i2p.router.version": None, "Token": "t"})
