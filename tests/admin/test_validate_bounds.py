"""The admin API's checked bounds at the bound and one past it, the messages that name the field, and
the spellings of a base32 destination (garlicfarm.admin.validate)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from garlicfarm.admin.validate import (
    ACTIONS,
    MAX_BODY,
    MAX_MEMBERS,
    MAX_SERVER_ID,
    BadInput,
    boolean,
    config_document,
    destination,
    destinations,
    members,
    obj,
    parse_json,
    server_id,
    text,
)

B32 = "abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst"


def test_a_body_of_max_body_bytes_is_read_and_one_more_is_not() -> None:
    body = json.dumps({"pad": ""}).encode()
    body = body.replace(b'""', b'"' + b"x" * (MAX_BODY - len(body)) + b'"')
    assert len(body) == MAX_BODY
    assert parse_json(body) == {"pad": "x" * (MAX_BODY - 11)}
    with pytest.raises(BadInput, match=f"body is larger than {MAX_BODY} bytes"):
        parse_json(body + b" ")


def test_server_ids_from_1_to_the_largest() -> None:
    assert server_id(1, "id") == 1 and server_id(MAX_SERVER_ID, "id") == MAX_SERVER_ID
    for bad in (0, MAX_SERVER_ID + 1, True, 1.0, "1"):
        with pytest.raises(BadInput, match="^id must be a server id"):
            server_id(bad, "id")


@pytest.mark.parametrize(
    ("check", "at_bound", "past_it", "message"),
    [
        (text, "x" * 256, "x" * 257, "format must be a string"),
        (
            destinations,
            [B32] * 10_000,
            [B32] * 10_001,
            "format must be a list of destination hashes",
        ),
        (
            members,
            [{"id": i, "endpoint": f"tcp://127.0.0.1:{9000 + i}"} for i in range(1, MAX_MEMBERS + 1)],
            [{"id": i, "endpoint": f"tcp://127.0.0.1:{9000 + i}"} for i in range(1, MAX_MEMBERS + 2)],
            f"format must be a list of at most {MAX_MEMBERS} members",
        ),
    ],
)
def test_lengths_at_the_bound_and_one_past_it(
    check: Callable[[Any, str], Any], at_bound: Any, past_it: Any, message: str
) -> None:
    assert len(check(at_bound, "format")) == len(at_bound)
    with pytest.raises(BadInput, match=f"^{message}$"):
        check(past_it, "format")


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (text, 7, "format must be a string"),
        (destinations, {"a": 1}, "format must be a list of destination hashes"),
        (destinations, "abc", "format must be a list of destination hashes"),
        (members, {"id": 1}, f"format must be a list of at most {MAX_MEMBERS} members"),
        (boolean, 1, "format must be true or false"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_in_the_message(
    check: Callable[[Any, str], Any], value: Any, message: str
) -> None:
    with pytest.raises(BadInput, match=f"^{message}$"):
        check(value, "format")


def test_an_item_is_named_by_its_place_in_the_list() -> None:
    with pytest.raises(BadInput, match=r"^excluded\[1\] must be a destination hash"):
        destinations([B32, "not a destination!"], "excluded")
    with pytest.raises(BadInput, match=r"^members\[0\]\.id must be a server id"):
        members([{"id": 0, "endpoint": "tcp://127.0.0.1:9001"}], "members")
    with pytest.raises(BadInput, match=r"^members\[0\]: missing field 'endpoint'"):
        members([{"id": 1}], "members")


def test_fields_of_the_body_are_named_bare_and_nested_ones_by_their_path() -> None:
    fields, required = ACTIONS["import"]
    document = {"format": "garlicfarm-config/1", "cluster": "farm", "members": [], "excluded": ["!"]}
    with pytest.raises(BadInput, match="^dry_run must be true or false$"):
        obj({"config": {**document, "excluded": []}, "dry_run": "yes"}, "body", fields, required)
    with pytest.raises(BadInput, match=r"^config\.excluded\[0\] must be a destination hash"):
        config_document(document, "config")
    with pytest.raises(
        BadInput,
        match="^config: unknown field 'extra' \\(known: cluster, excluded, format, members, settings\\)$",
    ):
        config_document({**document, "extra": 1}, "config")
    with pytest.raises(BadInput, match="^config: missing field 'excluded'$"):
        config_document({k: v for k, v in document.items() if k != "excluded"}, "config")


def test_a_base32_hash_in_upper_case_without_its_suffix_is_base32() -> None:
    assert destination(B32.upper(), "destination") == f"{B32}.b32.i2p"


def test_mixed_case_without_the_suffix_is_base64_and_kept() -> None:
    mixed = B32[:26].upper() + B32[26:]
    assert destination(mixed, "destination") == mixed
