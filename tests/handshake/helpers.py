"""Shared fixtures for the handshake tests: deterministic randomness, configs, hand-built requests."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from garlicfarm.handshake import (
    Algorithm,
    Challenge,
    ChallengeCache,
    ClientConfig,
    ClientHandshake,
    DigestCredentials,
    NonceRegistry,
    SendBytes,
    ServerConfig,
    ServerEvent,
    ServerHandshake,
)

USER = "alice"
PASSWORD = "correct horse battery staple"
HOST = "127.0.0.1:9001"
TARGET = "/GarlicFarm/farm/1/websocket"
T0 = 1_700_000_000.0
HOUR = 3600.0
BINARY = b"\x03\x00\x00\x00\x02\x00\x00\x00\x01"  # the start of an AppendEntriesRequest


def rng(seed: int = 0) -> Callable[[int], bytes]:
    return random.Random(seed).randbytes


def server_config(**changes: object) -> ServerConfig:
    fields: dict[str, object] = {"credentials": {USER: PASSWORD, "bob": "hunter2"}}
    fields.update(changes)
    return ServerConfig(**fields)  # type: ignore[arg-type]


def client_config(**changes: object) -> ClientConfig:
    fields: dict[str, object] = {"host": HOST, "username": USER, "password": PASSWORD}
    fields.update(changes)
    return ClientConfig(**fields)  # type: ignore[arg-type]


def request(
    headers: Iterable[str] = (), *, target: str = TARGET, method: str = "GET", version: str = "HTTP/1.1"
) -> bytes:
    """A request head written out by hand (not through h11), as a peer would put it on the wire."""
    lines = [f"{method} {target} {version}", f"Host: {HOST}", "Cache-Control: no-cache", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def request_1(**kwargs: str) -> bytes:
    return request(["Connection: close"], **kwargs)


def request_2(authorization: str, *, extra: Sequence[str] = (), **kwargs: str) -> bytes:
    headers = ["Connection: keep-alive, Upgrade", "Upgrade: websocket", f"Authorization: {authorization}"]
    return request([*headers, *extra], **kwargs)


def credentials(
    nonces: NonceRegistry,
    nonce: str,
    *,
    algorithm: Algorithm = Algorithm.SHA256,
    username: str = USER,
    password: str = PASSWORD,
    nc: int = 1,
    cnonce: str = "0a4f113b",
    realm: str = "farm",
    uri: str = TARGET,
    **overrides: Any,
) -> DigestCredentials:
    """Credentials a correct client would send for ``nonce``, with any field then overridden."""
    challenge = Challenge(realm, nonce, algorithm, nonces.opaque)
    answered = DigestCredentials.answer(
        challenge, username=username, password=password, method="GET", uri=uri, nc=nc, cnonce=cnonce
    )
    return attrs.evolve(answered, **overrides)


def sent(events: Sequence[object]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, SendBytes))


def serve(
    config: ServerConfig,
    nonces: NonceRegistry,
    data: bytes,
    now: float = T0,
    extra_headers: Sequence[tuple[str, str]] = (),
) -> list[ServerEvent]:
    return ServerHandshake(config, nonces, extra_headers).receive_data(data, now)


def head_lines(response: bytes) -> list[str]:
    head, _, _ = response.partition(b"\r\n\r\n")
    return head.decode("latin-1").split("\r\n")


def header_list(response: bytes, name: str) -> list[str]:
    prefix = name.lower() + ":"
    return [
        line.split(":", 1)[1].strip() for line in head_lines(response)[1:] if line.lower().startswith(prefix)
    ]


@attrs.define
class Farm:
    """One server (config, nonce registry) and one client (config, cache), talking in memory."""

    server: ServerConfig = attrs.field(factory=server_config)
    client: ClientConfig = attrs.field(factory=client_config)
    nonces: NonceRegistry = attrs.field(factory=lambda: NonceRegistry(rng(1)))
    cache: ChallengeCache = attrs.field(factory=ChallengeCache)
    client_random: Callable[[int], bytes] = attrs.field(factory=lambda: rng(2))

    def handshakes(self, now: float) -> tuple[ClientHandshake, ServerHandshake]:
        return (
            ClientHandshake(self.client, self.cache, now, self.client_random),
            ServerHandshake(self.server, self.nonces, [("GarlicFarm-Leader", "3")]),
        )
