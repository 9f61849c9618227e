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


@pytest.mark.parametrize("length", [51, 53])
def test_a_base32_destination_is_52_characters_not_one_more_or_less(length: int) -> None:
    text = ("abcdefghijklmnopqrstuvwxyz234567" * 2)[:length]
    assert destination(text, "destination") == text  # not base32: kept as it is, never given .b32.i2p
    with pytest.raises(BadInput, match="not a base32 destination"):
        destination(f"{text}.b32.i2p", "destination")


@pytest.mark.parametrize("junk", ["\n", "\x00", "\x7f", "é"])
def test_an_endpoint_with_anything_unprintable_after_it_is_refused_as_such(junk: str) -> None:
    with pytest.raises(BadInput, match="must be an endpoint such as"):
        endpoint(f"tcp://127.0.0.1:9004{junk}", "endpoint")


def test_an_endpoint_of_512_characters_is_looked_at_and_513_refused_unread() -> None:
    with pytest.raises(BadInput, match="endpoint: endpoint"):  # parse_network_endpoint's refusal
        endpoint("tcp://" + "a" * 506, "endpoint")
    with pytest.raises(BadInput, match="must be an endpoint such as"):
        endpoint("tcp://" + "a" * 507, "endpoint")


def test_a_destination_of_1024_characters_is_kept_and_1025_refused() -> None:
    assert destination("A" * 1024, "destination") == "A" * 1024
    with pytest.raises(BadInput, match="up to 1024 characters"):
        destination("A" * 1025, "destination")
    with pytest.raises(BadInput, match="must be a destination hash"):
        destination("AbC-~\n!", "destination")
