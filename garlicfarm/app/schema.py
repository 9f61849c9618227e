"""The status record schema (version 1), and its validation.

Every member periodically commits one of these (UTF-8 JSON in an Application entry). Validation is a
pure function of the bytes, so every server reaches the same verdict on a committed entry: a record
that breaks the schema is rejected the same way everywhere, recorded, and never crashes anything.
See docs/protocol.md, "Application layer", for the schema in full.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import attrs

SCHEMA_VERSION = 1
MAX_RECORD_BYTES = 64 * 1024
MAX_DEPTH = 8
MAX_DESTINATIONS = 64
MAX_BLOCKLIST = 256
MAX_STRING = 4096
MAX_INT = 2**53
#: dates are ms since the epoch up to the end of year 9999 (what every datetime library can represent)
MAX_DATE = 253_402_300_799_999
PUBLISH_CONFIGS = ("off", "on", "auto")


class SchemaError(ValueError):
    """A record that breaks the schema; the message says where (a dotted path) and why."""


@attrs.frozen
class Destination:
    destination: str
    uptime: int = 0
    tunnelsConfigured: int = 0  # noqa: N815 - the wire names are camelCase, as the proposal's
    tunnelsCurrent: int = 0  # noqa: N815
    bandwidthConfigured: int = 0  # noqa: N815
    bandwidthCurrent: int = 0  # noqa: N815
    connectionsConfigured: int = 0  # noqa: N815
    connectionsCurrent: int = 0  # noqa: N815
    blocklist: tuple[str, ...] = ()


@attrs.frozen
class RouterSection:
    uptime: int = 0
    netStatus: str = "UNKNOWN"  # noqa: N815
    jobLag: int = 0  # noqa: N815
    exploratoryTunnels: int = 0  # noqa: N815
    participatingTunnels: int = 0  # noqa: N815
    bandwidthConfigured: int = 0  # noqa: N815
    bandwidthCurrent: int = 0  # noqa: N815
    lastPublishedRI: str | None = None  # noqa: N815


@attrs.frozen
class MetaSection:
    destination: str | None = None
    lastPublishedLS: str | None = None  # noqa: N815
    lastPublishedTime: int = 0  # noqa: N815
    publishConfig: str = "auto"  # noqa: N815
    publishing: bool = False


@attrs.frozen
class LogMark:
    """The sender's digest of its committed log up to ``index`` (garlicfarm.app.logcheck)."""

    index: int
    digest: str  # 64 lowercase hex digits


@attrs.frozen
class StatusRecord:
    cluster: str
    date: int
    id: int
    version: int = SCHEMA_VERSION
    meta: MetaSection = MetaSection()
    router: RouterSection = RouterSection()
    destinations: tuple[Destination, ...] = ()
    config: dict[str, Any] = attrs.field(factory=dict, eq=False, hash=False)
    #: optional: members that take part in the cross-member consistency check report it
    log: LogMark | None = None


@attrs.frozen
class AdminCommand:
    """An operator's command committed through the log: exclude or re-include a destination."""

    cluster: str
    date: int
    action: str  # "exclude" | "include"
    destination: str


Entry = StatusRecord | AdminCommand


def parse_entry(data: bytes, cluster: str) -> Entry:
    """The record or admin command in ``data``, or :class:`SchemaError`."""
    return _entry(parse_json(data), cluster)


def _entry(raw: Any, cluster: str) -> Entry:
    foreign = _foreign(raw, cluster)
    if foreign is not None:
        raise foreign
    return _ours(raw, cluster)


def _ours(raw: dict[str, Any], cluster: str) -> Entry:
    """The record or admin command in ``raw``, an object already known to name ``cluster``."""
    if "admin" in raw:
        return _admin(raw, cluster)
    return _status(raw, cluster)


def parse_accepted(data: bytes, cluster: str) -> StatusRecord:
    """The status record in ``data``, bytes this schema has already accepted (:func:`parse_entry`
    returned a StatusRecord for them): read without checking again, with the same defaults. For
    bulk readers of checked records (the pipeline's replay); tests/app/test_schema.py holds it to
    ``parse_entry``'s result on any record that one accepts."""
    raw = json.loads(data)
    meta: dict[str, Any] = raw.get("meta", {})
    router: dict[str, Any] = raw.get("router", {})
    return StatusRecord(
        cluster=cluster,
        date=raw["date"],
        id=raw["id"],
        version=raw.get("version", SCHEMA_VERSION),
        meta=MetaSection(
            destination=meta.get("destination"),
            lastPublishedLS=meta.get("lastPublishedLS"),
            lastPublishedTime=meta.get("lastPublishedTime", 0),
            publishConfig=meta.get("publishConfig") or "auto",
            publishing=meta.get("publishing", False),
        ),
        router=RouterSection(
            uptime=router.get("uptime", 0),
            netStatus=router.get("netStatus") or "UNKNOWN",
            jobLag=router.get("jobLag", 0),
            exploratoryTunnels=router.get("exploratoryTunnels", 0),
            participatingTunnels=router.get("participatingTunnels", 0),
            bandwidthConfigured=router.get("bandwidthConfigured", 0),
            bandwidthCurrent=router.get("bandwidthCurrent", 0),
            lastPublishedRI=router.get("lastPublishedRI"),
        ),
        destinations=tuple(
            Destination(
                destination=d["destination"],
                uptime=d.get("uptime", 0),
                tunnelsConfigured=d.get("tunnelsConfigured", 0),
                tunnelsCurrent=d.get("tunnelsCurrent", 0),
                bandwidthConfigured=d.get("bandwidthConfigured", 0),
                bandwidthCurrent=d.get("bandwidthCurrent", 0),
                connectionsConfigured=d.get("connectionsConfigured", 0),
                connectionsCurrent=d.get("connectionsCurrent", 0),
                blocklist=tuple(d.get("blocklist", ())),
            )
            for d in raw.get("destinations", ())
        ),
        config=raw.get("config", {}),
        log=None if raw.get("log") is None else LogMark(raw["log"]["index"], raw["log"]["digest"]),
    )


def admission_error(data: bytes, cluster: str) -> str | None:
    """Why the leader must not append ``data`` as an Application entry, or None.

    Every entry must be bounded, strict UTF-8 JSON (no lone surrogate, no duplicate key); an entry that
    names this farm must also be a valid record or admin command. JSON for other uses (tools, tests,
    other clusters) is admitted and ignored by the application, as it always was.
    """
    return check_entry(data, cluster)[0]


def check_entry(data: bytes, cluster: str) -> tuple[str | None, Entry | SchemaError]:
    """:func:`admission_error` and the outcome of :func:`parse_entry` (the entry, or the error it
    raises), from one parse: a leader checks an entry when it is submitted and applies it once
    committed (:class:`garlicfarm.app.state.FarmState` keeps the outcome in between)."""
    try:
        raw = parse_json(data)
    except SchemaError as e:
        return str(e), detached(e)
    foreign = _foreign(raw, cluster)
    if foreign is not None:
        return None, foreign  # not this farm's: admitted, and ignored when applied (not raised: cheaper)
    try:
        return None, _ours(raw, cluster)
    except SchemaError as e:
        return str(e), detached(e)


def ignored_reason(data: bytes, cluster: str) -> str | None:
    """Why the application will ignore ``data`` once committed (JSON that is no record of this farm:
    admitted by the leader, see :func:`admission_error`), or None (a record of this farm's, or an
    entry the leader refuses outright)."""
    try:
        raw = parse_json(data)
    except SchemaError:
        return None
    foreign = _foreign(raw, cluster)
    return None if foreign is None else str(foreign)


def _foreign(raw: Any, cluster: str) -> SchemaError | None:
    """Why ``raw`` is no record of this farm's, or None: it is a JSON object naming ``cluster``."""
    if not isinstance(raw, dict):
        return SchemaError("a record is a JSON object")
    if raw.get("cluster") != cluster:
        return SchemaError(f"cluster: {raw.get('cluster')!r} is not this farm ({cluster!r})")
    return None


def detached(error: SchemaError) -> SchemaError:
    """``error`` without its traceback or the exception it was raised during, to be kept: their
    frames lead back to the frame that keeps it, a reference cycle per rejected entry for the
    cyclic collector to find (in a loaded leader, a collection every half millisecond)."""
    error.__traceback__ = error.__context__ = error.__cause__ = None
    return error


def parse_json(data: bytes) -> Any:
    """``data`` as bounded, strict JSON, or :class:`SchemaError`: at most MAX_RECORD_BYTES of UTF-8,
    nesting at most MAX_DEPTH, no duplicate object key, no string (key or value) holding a lone
    surrogate (``"\\ud800"`` is valid JSON but no UTF-8 text: it cannot be stored or sent on)."""
    if len(data) > MAX_RECORD_BYTES:
        raise SchemaError(f"record is {len(data)} bytes, more than {MAX_RECORD_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SchemaError(f"not UTF-8 at byte {e.start}") from None
    if text.startswith("\ufeff"):  # as json.loads says it (its decoder object does not check)
        raise SchemaError(
            f"not JSON: {json.JSONDecodeError('Unexpected UTF-8 BOM (decode using utf-8-sig)', text, 0)}"
        )
    try:
        raw = _DECODER.decode(text)
    except RecursionError:
        raise SchemaError(f"nested deeper than {MAX_DEPTH}") from None
    except SchemaError:
        raise
    except ValueError as e:
        raise SchemaError(f"not JSON: {e}") from None
    if not _tree_ok(raw, "\\u" in text):
        _check_tree(raw)  # the walk that names what is wrong, and where
    return raw


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s object_pairs_hook that refuses a repeated key: JSON leaves it undefined, and
    taking the last (``{"id":99,"id":2}``) lets a check see one value and the action use another."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SchemaError(f"duplicate key {_printable(key)}")
        out[key] = value
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")
#: one decoder for every record (json.loads with a hook builds a new one per call)
_DECODER = json.JSONDecoder(object_pairs_hook=unique_keys)
_CONTAINERS = (dict, list)


def _tree_ok(value: Any, escapes: bool) -> bool:
    """The checks of :func:`_check_tree`, fast, without naming anything: no string can hold a lone
    surrogate when the text had no ``\\u`` escape (UTF-8 cannot encode one)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(item, dict):
            if escapes and any(_SURROGATE.search(key) for key in item):
                return False
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            if isinstance(item, str) and _SURROGATE.search(item):
                return False
            continue
        # only what could fail is looked at: containers, strings that may hold an escape, and
        # anything one level too deep
        for v in children:
            if isinstance(v, _CONTAINERS) or (escapes and isinstance(v, str)) or depth >= MAX_DEPTH:
                stack.append((v, depth + 1))
    return True


def _printable(text: str) -> str:
    return ascii(text[:64])


def _check_tree(value: Any) -> None:
    stack = [(value, 1, "")]
    while stack:
        item, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaError(f"nested deeper than {MAX_DEPTH}")
        if isinstance(item, dict):
            for key, v in item.items():
                if _SURROGATE.search(key):
                    raise SchemaError(f"{path}: key {_printable(key)} holds a lone surrogate")
                stack.append((v, depth + 1, f"{path}.{key}" if path else key))
        elif isinstance(item, list):
            stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(item))
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise SchemaError(f"{path or 'value'}: holds a lone surrogate, not valid Unicode text")


def _status(raw: dict[str, Any], cluster: str) -> StatusRecord:
    version = _int(raw, "version", "version", default=SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise SchemaError(f"version: {version} is not a schema this server reads ({SCHEMA_VERSION})")
    meta = _section(raw, "meta")
    router = _section(raw, "router")
    config = raw.get("config", {})
    if not isinstance(config, dict):
        raise SchemaError("config: must be an object")
    destinations = raw.get("destinations", [])
    if not isinstance(destinations, list):
        raise SchemaError("destinations: must be a list")
    if len(destinations) > MAX_DESTINATIONS:
        raise SchemaError(f"destinations: {len(destinations)} entries, more than {MAX_DESTINATIONS}")
    publish_config = _str(meta, "meta.publishConfig", "publishConfig", default="auto")
    if publish_config not in PUBLISH_CONFIGS:
        raise SchemaError(f"meta.publishConfig: {publish_config!r} is not off, on or auto")
    publishing = meta.get("publishing", False)
    if not isinstance(publishing, bool):
        raise SchemaError("meta.publishing: must be true or false")
    server_id = _int(raw, "id", "id")
    if not 1 <= server_id < 2**31:
        raise SchemaError(f"id: {server_id} is not a server id")
    return StatusRecord(
        cluster=cluster,
        date=_date(raw, "date", "date"),
        id=server_id,
        version=version,
        meta=MetaSection(
            destination=_str(meta, "meta.destination", "destination", default=None),
            lastPublishedLS=_str(meta, "meta.lastPublishedLS", "lastPublishedLS", default=None),
            lastPublishedTime=_date(meta, "meta.lastPublishedTime", "lastPublishedTime", default=0),
            publishConfig=publish_config,
            publishing=publishing,
        ),
        router=RouterSection(
            uptime=_int(router, "router.uptime", "uptime", default=0),
            netStatus=_str(router, "router.netStatus", "netStatus", default="UNKNOWN") or "UNKNOWN",
            jobLag=_int(router, "router.jobLag", "jobLag", default=0),
            exploratoryTunnels=_int(router, "router.exploratoryTunnels", "exploratoryTunnels", default=0),
            participatingTunnels=_int(
                router, "router.participatingTunnels", "participatingTunnels", default=0
            ),
            bandwidthConfigured=_int(router, "router.bandwidthConfigured", "bandwidthConfigured", default=0),
            bandwidthCurrent=_int(router, "router.bandwidthCurrent", "bandwidthCurrent", default=0),
            lastPublishedRI=_str(router, "router.lastPublishedRI", "lastPublishedRI", default=None),
        ),
        destinations=tuple(_destination(d, f"destinations[{i}]") for i, d in enumerate(destinations)),
        config=config,
        log=_log_mark(raw),
    )


_DIGEST = re.compile("[0-9a-f]{64}")


def _log_mark(raw: dict[str, Any]) -> LogMark | None:
    if raw.get("log") is None:
        return None
    mark = _section(raw, "log")
    digest = _str(mark, "log.digest", "digest")
    if not _DIGEST.fullmatch(digest):
        raise SchemaError("log.digest: must be 64 lowercase hex digits (a SHA-256)")
    return LogMark(_int(mark, "log.index", "index"), digest)


def _destination(raw: Any, path: str) -> Destination:
    if not isinstance(raw, dict):
        raise SchemaError(f"{path}: must be an object")
    blocklist = raw.get("blocklist", [])
    if not isinstance(blocklist, list) or len(blocklist) > MAX_BLOCKLIST:
        raise SchemaError(f"{path}.blocklist: must be a list of at most {MAX_BLOCKLIST} strings")
    for i, item in enumerate(blocklist):
        if not isinstance(item, str) or len(item) > MAX_STRING:
            raise SchemaError(f"{path}.blocklist[{i}]: must be a string")
    numbers = {
        name: _int(raw, f"{path}.{name}", name, default=0)
        for name in (
            "uptime",
            "tunnelsConfigured",
            "tunnelsCurrent",
            "bandwidthConfigured",
            "bandwidthCurrent",
            "connectionsConfigured",
            "connectionsCurrent",
        )
    }
    return Destination(
        destination=_str(raw, f"{path}.destination", "destination"), blocklist=tuple(blocklist), **numbers
    )


def _admin(raw: dict[str, Any], cluster: str) -> AdminCommand:
    command = _section(raw, "admin")
    action = _str(command, "admin.action", "action")
    if action not in ("exclude", "include"):
        raise SchemaError(f"admin.action: {action!r} is not exclude or include")
    return AdminCommand(
        cluster, _date(raw, "date", "date"), action, _str(command, "admin.destination", "destination")
    )


def _section(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise SchemaError(f"{key}: must be an object")
    return value


_MISSING: Any = object()


def _int(raw: dict[str, Any], path: str, key: str, default: int | None = None) -> int:
    value = raw.get(key, _MISSING)
    if value is _MISSING:
        if default is None:
            raise SchemaError(f"{path}: missing")
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise SchemaError(f"{path}: must be an integer from 0 to 2^53")
    return value


def _date(raw: dict[str, Any], path: str, key: str, default: int | None = None) -> int:
    value = _int(raw, path, key, default)
    if value > MAX_DATE:
        raise SchemaError(f"{path}: {value} ms is after the year 9999")
    return value


def _str(raw: dict[str, Any], path: str, key: str, default: Any = _MISSING) -> Any:
    value = raw.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise SchemaError(f"{path}: missing")
        return default
    if not isinstance(value, str) or len(value) > MAX_STRING:
        raise SchemaError(f"{path}: must be a string of at most {MAX_STRING} characters")
    return value


def record_to_json(record: StatusRecord) -> dict[str, Any]:
    """The canonical JSON object of a record (what the archive and snapshots store)."""
    out: dict[str, Any] = attrs.asdict(record, recurse=True)
    out["destinations"] = [dict(d, blocklist=list(d["blocklist"])) for d in out["destinations"]]
    if out["log"] is None:
        del out["log"]  # records of members that do not report one read as they always did
    return out


def record_from_json(raw: dict[str, Any]) -> StatusRecord:
    """The inverse of :func:`record_to_json` (for snapshots: trusted, already validated input)."""
    return StatusRecord(
        cluster=raw["cluster"],
        date=raw["date"],
        id=raw["id"],
        version=raw["version"],
        meta=MetaSection(**raw["meta"]),
        router=RouterSection(**raw["router"]),
        destinations=tuple(
            Destination(**dict(d, blocklist=tuple(d["blocklist"]))) for d in raw["destinations"]
        ),
        config=raw["config"],
        log=None if raw.get("log") is None else LogMark(raw["log"]["index"], raw["log"]["digest"]),
    )
