"""The test vectors in docs/metals.md: each hex block decodes to its JSON, and the fixed keys rebuild it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from garlicfarm.cli.inspect import parse_hex
from garlicfarm.i2p.metals import MetaLeaseSet
from tests.i2p.vectors import VECTORS, decoded

DOC = Path(__file__).resolve().parents[2] / "docs" / "metals.md"
_PAIR = re.compile(r"### (?P<title>[^\n]+)\n.*?```json\n(?P<json>.*?)```\s*```hex\n(?P<hex>.*?)```", re.S)


def found() -> dict[str, tuple[str, str]]:
    return {m["title"]: (m["json"], m["hex"]) for m in _PAIR.finditer(DOC.read_text())}


@pytest.mark.parametrize("title", sorted(VECTORS))
def test_vector(title: str) -> None:
    json_text, hex_text = found()[title]
    wire = parse_hex(hex_text)
    ls = MetaLeaseSet.decode(wire)
    assert decoded(ls) == json.loads(json_text)
    assert VECTORS[title]().encoded == wire
    assert ls.verdicts(1_767_225_600).ok
