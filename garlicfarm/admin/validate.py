"""Strict parsing of the actions' JSON bodies: a JSON object with exactly the known fields, of the
right types. Everything else is a :class:`BadInput` with a message naming the field."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from garlicfarm.app.schema import unique_keys
from garlicfarm.net.endpoints import EndpointRefused, parse_network_endpoint

MAX_BODY = 64 * 1024
MAX_SERVER_ID = 2**31 - 1
MAX_MEMBERS = 1000
# I2P destination hashes and leaf destinations: base32 (.b32.i2p) or base64 (I2P alphabet: -~).
_DESTINATION = re.compile(r"[A-Za-z0-9+/=~.-]{1,1024}")
_ENDPOINT = re.compile(r"[ -~]{1,512}")  # printable ASCII; the transport layer parses it


class BadInput(ValueError):
    """A request body the API refuses (400); the message says what is wrong."""


def parse_json(body: bytes) -> Any:
    if len(body) > MAX_BODY:
        raise BadInput(f"body is larger than {MAX_BODY} bytes")
    try:
        return json.loads(body.decode("utf-8"), object_pairs_hook=unique_keys)
    except (UnicodeDecodeError, RecursionError, ValueError) as e:
        raise BadInput(f"body is not valid JSON: {e}") from None


def server_id(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SERVER_ID:
        raise BadInput(f"{where} must be a server id, an integer from 1 to {MAX_SERVER_ID}")
    return value


_B32 = re.compile(r"[a-z2-7]{52}")


def destination(value: Any, where: str) -> str:
    """A destination hash in one canonical form: ``X``, ``X.b32.i2p`` and their upper-case spellings of
    a base32 hash are one destination, stored as ``x.b32.i2p``; base64 is case-sensitive, kept as is."""
    if not isinstance(value, str) or not _DESTINATION.fullmatch(value.strip()):
        raise BadInput(f"{where} must be a destination hash (base32 or base64, up to 1024 characters)")
    text: str = value.strip()
    lowered = text.lower()
    bare = lowered.removesuffix(".b32.i2p")
    # one case throughout (or the .b32.i2p suffix) says base32; base64 mixes cases
    if _B32.fullmatch(bare) and (bare != lowered or text in (lowered, text.upper())):
        return f"{bare}.b32.i2p"
    if lowered.endswith(".b32.i2p"):
        raise BadInput(f"{where}: {text!r} is not a base32 destination (52 characters a-z, 2-7)")
    return text


def endpoint(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _ENDPOINT.fullmatch(value) or "://" not in value:
        raise BadInput(f"{where} must be an endpoint such as tcp://127.0.0.1:9004")
    try:
        parse_network_endpoint(value)  # it goes to the farm in an AddServerRequest
    except EndpointRefused as e:
        raise BadInput(f"{where}: {e}") from None
    return value


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadInput(f"{where} must be true or false")
    return value


def members(value: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or len(value) > MAX_MEMBERS:
        raise BadInput(f"{where} must be a list of at most {MAX_MEMBERS} members")
    out = []
    for i, item in enumerate(value):
        fields = obj(
            item, f"{where}[{i}]", {"id": server_id, "endpoint": endpoint}, required={"id", "endpoint"}
        )
        out.append(fields)
    if len({m["id"] for m in out}) != len(out):
        raise BadInput(f"{where} lists a server id twice")
    return out


def destinations(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or len(value) > 10_000:
        raise BadInput(f"{where} must be a list of destination hashes")
    return [destination(d, f"{where}[{i}]") for i, d in enumerate(value)]


def anything(value: Any, where: str) -> Any:
    return value


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) > 256:
        raise BadInput(f"{where} must be a string")
    return value


Field = Callable[[Any, str], Any]


def obj(
    value: Any, where: str, fields: dict[str, Field], required: set[str] | frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``value`` as an object with only ``fields`` (each checked), all of ``required`` present."""
    if not isinstance(value, dict):
        raise BadInput(f"{where} must be a JSON object")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise BadInput(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(fields))})")
    missing = sorted(required - set(value))
    if missing:
        raise BadInput(f"{where}: missing field {missing[0]!r}")
    return {
        key: fields[key](item, f"{where}.{key}" if where != "body" else key) for key, item in value.items()
    }


def config_document(value: Any, where: str) -> dict[str, Any]:
    """An exported configuration (see :meth:`FarmHandle.export`); ``settings`` is carried, not applied."""
    return obj(
        value,
        where,
        {
            "format": text,
            "cluster": text,
            "members": members,
            "excluded": destinations,
            "settings": anything,
        },
        required={"format", "cluster", "members", "excluded"},
    )


#: each action's body: its fields and which are required
ACTIONS: dict[str, tuple[dict[str, Field], frozenset[str]]] = {
    "remove-member": ({"id": server_id}, frozenset({"id"})),
    "add-member": ({"id": server_id, "endpoint": endpoint}, frozenset({"id", "endpoint"})),
    "publish": ({}, frozenset()),
    "step-down": ({}, frozenset()),
    "exclude": ({"destination": destination}, frozenset({"destination"})),
    "include": ({"destination": destination}, frozenset({"destination"})),
    "import": ({"config": config_document, "dry_run": boolean}, frozenset({"config"})),
}
