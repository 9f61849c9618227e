"""The inspector's JSON form of messages: snake_case of the proposal's names, one object per message.

``from_json(to_json(m)) == m`` for every message. Application values appear as the parsed JSON when
re-serialising it compactly gives back exactly the bytes on the wire, and as ``{"hex": ...}``
otherwise (not UTF-8, not JSON, other whitespace or key order, or itself a lone ``"hex"`` object), so
``encode`` always reproduces the original bytes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Set as AbstractSet
from typing import Any

from garlicfarm.wire.messages import MESSAGE_CLASSES, Message, Response
from garlicfarm.wire.payloads import (
    Application,
    ClusterServer,
    Configuration,
    LogEntry,
    LogPack,
    Payload,
    SnapshotSyncRequest,
)
from garlicfarm.wire.types import MAX_U32, MAX_U64, ValueType

JsonObject = dict[str, Any]

VALUE_TYPE_NAMES = {
    ValueType.APPLICATION: "Application",
    ValueType.CONFIGURATION: "Configuration",
    ValueType.CLUSTER_SERVER: "ClusterServer",
    ValueType.LOG_PACK: "LogPack",
    ValueType.SNAPSHOT_SYNC_REQUEST: "SnapshotSyncRequest",
}
_VALUE_TYPES_BY_NAME = {name: vt for vt, name in VALUE_TYPE_NAMES.items()}
_CLASSES_BY_NAME = {cls.__name__: cls for cls in MESSAGE_CLASSES.values()}
_HEADER_FIELDS = ("source", "destination", "term", "last_log_term", "last_log_index", "commit_index")


class JsonFormError(ValueError):
    """A JSON object that does not describe a message; ``path`` names the offending member."""

    def __init__(self, path: str, what: str) -> None:
        self.path = path
        super().__init__(f"{path}: {what}" if path else what)


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


# ---------------------------------------------------------------------------------------------- to JSON


def to_json(message: Message) -> JsonObject:
    out: JsonObject = {"type": type(message).__name__}
    if isinstance(message, Response):
        out.update(
            source=message.source,
            destination=message.destination,
            term=message.term,
            next_index=message.next_index,
            accepted=message.accepted,
        )
        return out
    for name in _HEADER_FIELDS:
        out[name] = getattr(message, name)
    out["entries"] = [entry_to_json(e) for e in message.entries]
    return out


def entry_to_json(entry: LogEntry) -> JsonObject:
    return {
        "term": entry.term,
        "value_type": VALUE_TYPE_NAMES[entry.value_type],
        "value": value_to_json(entry.value),
    }


def application_to_json(data: bytes) -> Any:
    try:
        parsed = json.loads(data.decode("utf-8"))
        if canonical_json(parsed) == data and not _is_hex_wrapper(parsed):
            return parsed
    except (ValueError, RecursionError):
        pass  # not UTF-8, not JSON, or hostile nesting: show the bytes instead
    return {"hex": data.hex()}


def _is_hex_wrapper(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"hex"}


def value_to_json(value: Payload) -> Any:
    if isinstance(value, Application):
        return application_to_json(value.data)
    if isinstance(value, Configuration):
        return configuration_to_json(value)
    if isinstance(value, ClusterServer):
        return {"id": value.id, "endpoint": value.endpoint}
    if isinstance(value, LogPack):
        pack: dict[str, Any] = {"entries": [entry_to_json(e) for e in value.entries]}
        if value.base_offset:
            pack["base_offset"] = value.base_offset
        return pack
    return {
        "last_log_index": value.last_log_index,
        "last_log_term": value.last_log_term,
        "config": configuration_to_json(value.config),
        "offset": value.offset,
        "data_b64": base64.b64encode(value.data).decode("ascii"),
        "done": value.done,
    }


def configuration_to_json(config: Configuration) -> JsonObject:
    return {
        "log_index": config.log_index,
        "last_log_index": config.last_log_index,
        "servers": [{"id": s.id, "endpoint": s.endpoint} for s in config.servers],
    }


# ---------------------------------------------------------------------------------------------- from JSON


def from_json(obj: Any) -> Message:
    """The message an object from :func:`to_json` (or written by hand) describes."""
    obj = _object(obj, "", {"type"})
    name = obj["type"]
    cls = _CLASSES_BY_NAME.get(name) if isinstance(name, str) else None
    if cls is None:
        raise JsonFormError("type", f"unknown message type {name!r}")
    if issubclass(cls, Response):
        _object(obj, "", {"type", "source", "destination", "term", "next_index", "accepted"}, exact=True)
        accepted = obj["accepted"]
        if not isinstance(accepted, bool):
            raise JsonFormError("accepted", "expected true or false")
        return cls(
            _u32(obj, "source"),
            _u32(obj, "destination"),
            _u64(obj, "term"),
            _u64(obj, "next_index"),
            accepted,
        )
    _object(obj, "", {"type", *_HEADER_FIELDS}, optional={"entries"})
    entries = _list(obj.get("entries", []), "entries")
    return cls(
        source=_u32(obj, "source"),
        destination=_u32(obj, "destination"),
        term=_u64(obj, "term"),
        last_log_term=_u64(obj, "last_log_term"),
        last_log_index=_u64(obj, "last_log_index"),
        commit_index=_u64(obj, "commit_index"),
        entries=tuple(entry_from_json(e, f"entries[{i}]") for i, e in enumerate(entries)),
    )


def entry_from_json(obj: Any, path: str) -> LogEntry:
    obj = _object(obj, path, {"term", "value_type", "value"}, exact=True)
    name = obj["value_type"]
    value_type = _VALUE_TYPES_BY_NAME.get(name) if isinstance(name, str) else None
    if value_type is None:
        raise JsonFormError(f"{path}.value_type", f"unknown value type {name!r}")
    return LogEntry(_u64(obj, "term", path), value_from_json(value_type, obj["value"], f"{path}.value"))


def value_from_json(value_type: ValueType, value: Any, path: str) -> Payload:
    if value_type == ValueType.APPLICATION:
        if _is_hex_wrapper(value):
            return Application(_hex(value["hex"], f"{path}.hex"))
        try:
            return Application(canonical_json(value))
        except ValueError as e:
            raise JsonFormError(path, str(e)) from None
    if value_type == ValueType.CONFIGURATION:
        return configuration_from_json(value, path)
    if value_type == ValueType.CLUSTER_SERVER:
        obj = _object(value, path, {"id"}, optional={"endpoint"})
        return _server(obj, path, allow_id_only=True)
    if value_type == ValueType.LOG_PACK:
        obj = _object(value, path, {"entries"}, optional={"base_offset"})
        items = _list(obj["entries"], f"{path}.entries")
        base = obj.get("base_offset", 0)
        if isinstance(base, bool) or not isinstance(base, int) or not 0 <= base < 2**64:
            raise JsonFormError(f"{path}.base_offset", "expected an unsigned 64-bit integer")
        entries = tuple(entry_from_json(e, f"{path}.entries[{i}]") for i, e in enumerate(items))
        return LogPack(entries, base)
    fields = {"last_log_index", "last_log_term", "config", "offset", "data_b64", "done"}
    obj = _object(value, path, fields, exact=True)
    if not isinstance(obj["done"], bool):
        raise JsonFormError(f"{path}.done", "expected true or false")
    data = obj["data_b64"]
    try:
        if not isinstance(data, str):
            raise ValueError
        raw = base64.b64decode(data, validate=True)
    except (ValueError, binascii.Error):
        raise JsonFormError(f"{path}.data_b64", "expected a base64 string") from None
    return SnapshotSyncRequest(
        _u64(obj, "last_log_index", path),
        _u64(obj, "last_log_term", path),
        configuration_from_json(obj["config"], f"{path}.config"),
        _u64(obj, "offset", path),
        raw,
        obj["done"],
    )


def configuration_from_json(value: Any, path: str) -> Configuration:
    obj = _object(value, path, {"log_index", "last_log_index", "servers"}, exact=True)
    servers = _list(obj["servers"], f"{path}.servers")
    return Configuration(
        _u64(obj, "log_index", path),
        _u64(obj, "last_log_index", path),
        tuple(
            _server(
                _object(s, f"{path}.servers[{i}]", {"id", "endpoint"}, exact=True), f"{path}.servers[{i}]"
            )
            for i, s in enumerate(servers)
        ),
    )


def _server(obj: JsonObject, path: str, allow_id_only: bool = False) -> ClusterServer:
    endpoint = obj.get("endpoint")
    if endpoint is None and not allow_id_only:
        raise JsonFormError(f"{path}.endpoint", "expected a string")
    if endpoint is not None and not isinstance(endpoint, str):
        raise JsonFormError(f"{path}.endpoint", "expected a string or null")
    if endpoint is not None:
        try:
            endpoint.encode("utf-8")
        except UnicodeEncodeError:
            raise JsonFormError(f"{path}.endpoint", "not encodable as UTF-8") from None
    return ClusterServer(_u32(obj, "id", path), endpoint)


def _object(
    value: Any,
    path: str,
    required: AbstractSet[str],
    optional: AbstractSet[str] = frozenset(),
    exact: bool = False,
) -> JsonObject:
    if not isinstance(value, dict):
        raise JsonFormError(path, "expected an object")
    missing = sorted(required - value.keys())
    if missing:
        raise JsonFormError(path, f"missing {', '.join(missing)}")
    if exact or optional:
        extra = sorted(value.keys() - required - optional)
        if extra:
            raise JsonFormError(path, f"unexpected {', '.join(extra)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise JsonFormError(path, "expected a list")
    return value


def _int(obj: JsonObject, key: str, path: str, top: int) -> int:
    value = obj[key]
    where = f"{path}.{key}" if path else key
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise JsonFormError(where, f"expected an integer 0..{top}")
    return value


def _u32(obj: JsonObject, key: str, path: str = "") -> int:
    return _int(obj, key, path, MAX_U32)


def _u64(obj: JsonObject, key: str, path: str = "") -> int:
    return _int(obj, key, path, MAX_U64)


def _hex(value: Any, path: str) -> bytes:
    try:
        if not isinstance(value, str):
            raise ValueError
        return bytes.fromhex(value)
    except ValueError:
        raise JsonFormError(path, "expected a hex string") from None
