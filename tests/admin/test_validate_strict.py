"""The admin API's JSON is strict: a repeated key is refused, and endpoints are network forms.

Regression (issue 13): ``{"id":99,"id":2}`` removed member 2 (json.loads keeps the last key).
"""

from __future__ import annotations

import pytest

from garlicfarm.admin.validate import BadInput, endpoint, parse_json


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
