"""Handshake configuration for each side, validated on construction (:class:`ConfigError`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from garlicfarm.handshake.digest import Algorithm
from garlicfarm.handshake.errors import ConfigError

DEFAULT_CLUSTER = "farm"
PROTOCOL_VERSION = "1"
DEFAULT_MAX_HEAD_SIZE = 8 * 1024

# Path segments: RFC 3986 unreserved characters, so the target needs no percent-encoding.
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
# Usernames and realms go into quoted-strings: printable ASCII, so both sides hash the same bytes.
_PRINTABLE = re.compile(r"[ -~]+")

CredentialLookup = Mapping[str, str] | Callable[[str], str | None]


def request_target(cluster: str, version: str) -> str:
    return f"/GarlicFarm/{cluster}/{version}/websocket"


def _segment(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not _SEGMENT.fullmatch(value) or value in {".", ".."}:
        raise ConfigError(f"{attribute.name} must be letters, digits or '._~-', not {value!r}")


def _printable(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not _PRINTABLE.fullmatch(value):
        raise ConfigError(f"{attribute.name} must be non-empty printable ASCII, not {value!r}")


def _head_size(_: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 256:
        raise ConfigError(f"{attribute.name} must be at least 256 bytes, not {value!r}")


def _host(_: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not value or not value.isascii() or not value.isprintable() or " " in value:
        raise ConfigError(
            f"{attribute.name} must be a Host header value like '127.0.0.1:9001', not {value!r}"
        )


def _algorithms(
    _: Any, attribute: attrs.Attribute[tuple[Algorithm, ...]], value: tuple[Algorithm, ...]
) -> None:
    if not value or len(set(value)) != len(value) or not all(isinstance(a, Algorithm) for a in value):
        raise ConfigError(f"{attribute.name} must list distinct Algorithm values, not {value!r}")


@attrs.frozen(kw_only=True)
class ServerConfig:
    """What an inbound handshake accepts.

    ``credentials`` maps usernames to passwords, or is a callable returning the password or ``None``
    (per-cluster or per-server credentials: the proposal leaves that to the implementation).
    ``realm`` defaults to the cluster name.
    """

    credentials: CredentialLookup = attrs.field(repr=False)
    cluster: str = attrs.field(default=DEFAULT_CLUSTER, validator=_segment)
    version: str = attrs.field(default=PROTOCOL_VERSION, validator=_segment)
    realm: str = attrs.field(
        default=attrs.Factory(lambda self: self.cluster, takes_self=True), validator=_printable
    )
    max_head_size: int = attrs.field(default=DEFAULT_MAX_HEAD_SIZE, validator=_head_size)

    @property
    def target(self) -> str:
        return request_target(self.cluster, self.version)

    def password_for(self, username: str) -> str | None:
        if isinstance(self.credentials, Mapping):
            return self.credentials.get(username)
        return self.credentials(username)


@attrs.frozen(kw_only=True)
class ClientConfig:
    """What an outbound handshake sends.

    ``host`` is the ``Host`` header value (``ip:port``, IPv6 in brackets) and, with the cluster, the
    challenge cache key. ``algorithms`` is the order of preference among the server's challenges.
    """

    host: str = attrs.field(validator=_host)
    username: str = attrs.field(validator=_printable)
    password: str = attrs.field(repr=False)
    cluster: str = attrs.field(default=DEFAULT_CLUSTER, validator=_segment)
    version: str = attrs.field(default=PROTOCOL_VERSION, validator=_segment)
    algorithms: tuple[Algorithm, ...] = attrs.field(
        default=(Algorithm.SHA256, Algorithm.MD5), converter=tuple, validator=_algorithms
    )
    max_head_size: int = attrs.field(default=DEFAULT_MAX_HEAD_SIZE, validator=_head_size)
    #: optional features offered in a ``GarlicFarm-Features`` header (none: the header is left out)
    features: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return request_target(self.cluster, self.version)
