"""The test vectors in docs/protocol.md: each JSON block encodes to the hex block that follows it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from garlicfarm.cli.inspect import parse_hex
from garlicfarm.wire import LogPack, decode, encode
from garlicfarm.wire.jsonform import from_json, to_json

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
_PAIR = re.compile(r"### (?P<title>[^\n]+)\n.*?```json\n(?P<json>.*?)```\s*```hex\n(?P<hex>.*?)```", re.S)


def vectors() -> list[tuple[str, str, str]]:
    found = [(m["title"], m["json"], m["hex"]) for m in _PAIR.finditer(DOC.read_text())]
    assert len(found) >= 17
    return found


@pytest.mark.parametrize(("title", "json_text", "hex_text"), vectors(), ids=lambda v: str(v)[:40])
def test_vector(title: str, json_text: str, hex_text: str) -> None:
    message = from_json(json.loads(json_text))
    wire = parse_hex(hex_text)
    assert decode(wire) == message
    assert to_json(decode(wire)) == json.loads(json_text)
    if not any(isinstance(e.value, LogPack) for e in getattr(message, "entries", ())):
        assert encode(message) == wire
        assert encode(decode(wire)) == wire


def test_every_message_type_has_a_vector() -> None:
    titles = {json.loads(j)["type"] for _, j, _ in vectors()}
    assert len(titles) == 17
