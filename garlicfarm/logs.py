"""How a node's process logs, alike under ``garlicfarm run`` and ``twistd garlicfarm``: a level filter
(info by default), sub-second timestamps, text lines or one JSON object a line."""

from __future__ import annotations

from typing import IO, Any

from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    LogEvent,
    LogLevel,
    LogLevelFilterPredicate,
    PredicateResult,
    formatEvent,
    jsonFileLogObserver,
    textFileLogObserver,
)
from zope.interface import implementer

LOG_LEVELS = ("debug", "info", "warn", "error", "critical")
#: sub-second times: elections and handovers take milliseconds, and an operator compares nodes' logs
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"


def log_observer(stream: IO[Any], level: str = "info", fmt: str = "text") -> ILogObserver:
    """Events at ``level`` and above, as text lines or one JSON object a line."""
    json = fmt == "json"
    base = (
        with_text(jsonFileLogObserver(stream))
        if json
        else textFileLogObserver(stream, timeFormat=TIME_FORMAT)
    )
    return FilteringLogObserver(
        base, [LogLevelFilterPredicate(LogLevel.levelWithName(level)), _quiet_retries(level)]
    )


def with_text(observer: ILogObserver) -> ILogObserver:
    """``observer`` given each event with its rendered message as ``text`` (a JSON line otherwise
    holds only the format string and its fields)."""

    def add_text(event: LogEvent) -> None:
        observer(dict(event, text=formatEvent(event)))

    wrapped: ILogObserver = implementer(ILogObserver)(add_text)
    return wrapped


def _quiet_retries(level: str) -> Any:
    """ClientService's "Scheduling retry N to connect <_WrapperEndpoint object at 0x...>" names no
    peer; the node logs one line per link going up or down instead. Shown at debug."""

    def predicate(event: dict[str, Any]) -> Any:
        noisy = event.get("log_namespace", "").startswith("twisted.application._client_service")
        if noisy and event.get("log_level") == LogLevel.info and level != "debug":
            return PredicateResult.no
        return PredicateResult.maybe

    return predicate
