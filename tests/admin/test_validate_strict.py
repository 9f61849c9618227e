"""The admin API's JSON is strict: a repeated key is refused, and endpoints are network forms.

Regression (issue 13): ``{"id":99,"id":2}`` removed member 2 (json.loads keeps the last key).
"""

from __future__ import annotations

import pytest

from garlicfarm.admin.validate import BadInput, destination, endpoint, parse_json


def test_duplicate_keys_are_refused() -> None:
    with pytest.raises(BadInput, match="duplicate key 'id'"):
        parse_json(b'{"id":99,"id":2}')
    with pytest.raises(BadInput, match="duplicate key"):
        parse_json(b'{"members":[{"id":1,"id":2}]}')
    assert parse_json(b'{"id":2}') == {"id": 2}


@pytest.mark.parametrize(
    "value",
    ["unix://x:1", "httpproxy://h:1?proxyPasswordFile=/proc/self/environ", "tcp://user@h:1", "tcp://h"],
)
def test_endpoints_must_be_network_forms(value: str) -> None:
    with pytest.raises(BadInput):
        endpoint(value, "endpoint")
    assert endpoint("tcp://127.0.0.1:9004", "endpoint") == "tcp://127.0.0.1:9004"


B32 = "abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst"


@pytest.mark.parametrize("spelling", [B32, f"{B32}.b32.i2p", f"{B32.upper()}.B32.I2P", f" {B32} "])
def test_a_base32_destination_has_one_canonical_form(spelling: str) -> None:
    """Regression (issue 16): `exclude` stored X.b32.i2p and X as two entries."""
    assert destination(spelling, "destination") == f"{B32}.b32.i2p"


def test_base64_destinations_are_kept_and_bad_base32_refused() -> None:
    base64 = "AbC-~" * 20
    assert destination(base64, "destination") == base64
    with pytest.raises(BadInput, match="not a base32 destination"):
        destination("short.b32.i2p", "destination")
