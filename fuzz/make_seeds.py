"""Write the hand-made seed inputs into ``fuzz/corpus/<target>/seed-*``.

Codec seeds are the hex test vectors of docs/protocol.md (one file each, plus all of them as one stream
and the documented error examples). LogPack seeds are packs from ``encode_log_pack`` and a JRaft-style
pack whose offsets do not start at 0, in each of the target's modes, plus a small gzip bomb. Handshake
seeds are real exchanges between :class:`ServerHandshake` and :class:`ClientHandshake` with the fixed
randomness the target uses (so request 2's credentials are valid), and the header values they carry.

Run from the repository root: ``.venv/bin/python -m fuzz.make_seeds``. Seeds are rewritten in place; the
files libFuzzer adds on merges (named by their SHA-1) are left alone.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import attrs

from fuzz.targets import (
    CODEC_LIMITS,
    HANDSHAKE_MODES,
    LOGPACK_LIMITS,
    T0,
    cached_challenge,
    client_config,
    fixed_random,
    nonce_registry,
    server_config,
)
from garlicfarm.cli.inspect import parse_hex
from garlicfarm.handshake import (
    Algorithm,
    Challenge,
    ChallengeCache,
    ClientHandshake,
    NonceRegistry,
    SendBytes,
    ServerHandshake,
)
from garlicfarm.wire import (
    Application,
    ClusterServer,
    Configuration,
    LogEntry,
    MessageType,
    ValueType,
    encode_log_pack,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"
_VECTOR = re.compile(r"### (?P<title>[^\n]+)\n(?:(?!###).)*?```hex\n(?P<hex>.*?)```", re.S)
_ERROR_EXAMPLES = ["12", "03 00000001 00000002 0000000000000005 0000000000000004 000000000000000a "
                   "0000000000000009 ffffffff"]  # fmt: skip
BINARY = b"\x03\x00\x00\x00\x02\x00\x00\x00\x01"  # the start of an AppendEntriesRequest after a 101


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def codec_seeds() -> dict[str, bytes]:
    doc = (ROOT / "docs" / "protocol.md").read_text()
    seeds = {f"vector-{_slug(m['title'])}": parse_hex(m["hex"]) for m in _VECTOR.finditer(doc)}
    seeds["stream-all-vectors"] = b"".join(seeds.values())
    for i, text in enumerate(_ERROR_EXAMPLES):
        seeds[f"error-example-{i}"] = parse_hex(text)
    # Limits and entry rules that random mutation reaches slowly: one entry over max_entries, and an
    # AddServerRequest whose server has no endpoint.
    empty_app = struct.pack(">QBI", 5, ValueType.APPLICATION, 0)
    too_many = empty_app * (CODEC_LIMITS.max_entries + 1)
    seeds["too-many-entries"] = _request(MessageType.APPEND_ENTRIES_REQUEST, too_many)
    id_only = struct.pack(">QBI", 0, ValueType.CLUSTER_SERVER, 4) + struct.pack(">I", 4)
    seeds["add-server-without-endpoint"] = _request(MessageType.ADD_SERVER_REQUEST, id_only)
    return seeds


def _request(kind: MessageType, entries: bytes) -> bytes:
    return struct.pack(">BIIQQQQI", kind, 1, 2, 5, 4, 10, 9, len(entries)) + entries


def _jraft_body(records: list[bytes], first_offset: int) -> bytes:
    """An inflated LogPack as JRaft sends it: offsets copied from its index file, not starting at 0."""
    offsets, pos = [], first_offset
    for record in records:
        offsets.append(struct.pack(">Q", pos))
        pos += len(record)
    index = b"".join(offsets)
    return struct.pack(">II", len(index), pos - first_offset) + index + b"".join(records)


def logpack_seeds() -> dict[str, bytes]:
    config = Configuration(7, 0, (ClusterServer(1, "tcp://127.0.0.1:9001"), ClusterServer(2, "x")))
    packs = {
        "empty": [],
        "one-app": [LogEntry(5, Application(b'{"x":1}'))],
        "app-config": [LogEntry(5, Application(b"abc")), LogEntry(6, config)],
    }
    seeds: dict[str, bytes] = {}
    for name, entries in packs.items():
        packed = encode_log_pack(entries)
        body = zlib.decompress(packed, wbits=16 + zlib.MAX_WBITS)
        seeds[f"gzip-{name}"] = b"\x00" + packed
        seeds[f"body-{name}"] = b"\x01" + body
        seeds[f"msg-gzip-{name}"] = b"\x02" + packed
        seeds[f"msg-body-{name}"] = b"\x03" + body
    records = [struct.pack(">QB", 3, 1) + b"hello", struct.pack(">QB", 4, 1) + b"world!"]
    seeds["body-jraft-offsets"] = b"\x01" + _jraft_body(records, 4096)
    seeds["body-too-many-entries"] = b"\x01" + _jraft_body(records[:1] * (LOGPACK_LIMITS.max_entries + 1), 0)
    bomb = zlib.compress(b"\x00" * (1024 * 1024), 9, wbits=16 + zlib.MAX_WBITS)
    seeds["gzip-bomb-1mib"] = b"\x00" + bomb
    return seeds


def handshake_seeds() -> dict[str, bytes]:
    def mode(name: str) -> bytes:
        return bytes([HANDSHAKE_MODES.index(name)])

    def serve(request: bytes) -> bytes:
        events = ServerHandshake(server_config(), nonce_registry()).receive_data(request, T0 + 1)
        return b"".join(e.data for e in events if isinstance(e, SendBytes))

    request_1 = ClientHandshake(client_config(), ChallengeCache(), T0, fixed_random).initiate()
    cache = ChallengeCache()
    cache.put(("127.0.0.1:9001", "farm"), cached_challenge(nonce_registry()), T0)
    request_2 = ClientHandshake(client_config(), cache, T0, fixed_random).initiate()

    def answer(challenge: Challenge) -> bytes:
        """Request 2 with valid credentials for ``challenge``, whatever its nonce."""
        cache = ChallengeCache()
        cache.put(("127.0.0.1:9001", "farm"), challenge, T0)
        return ClientHandshake(client_config(), cache, T0, fixed_random).initiate()

    registry = nonce_registry()
    fresh = cached_challenge(registry)
    nonces = {
        "md5": answer(attrs.evolve(fresh, algorithm=Algorithm.MD5)),
        "expired-nonce": answer(attrs.evolve(fresh, nonce=registry.issue(T0 - 2 * registry.lifetime))),
        "foreign-nonce": answer(attrs.evolve(fresh, nonce=NonceRegistry(bytes).issue(T0))),
        "websocket-key": request_2.replace(
            b"\r\n\r\n", b"\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        ),
    }
    target = b"/GarlicFarm/farm/1/websocket"
    bad = {
        "wrong-path": request_1.replace(target, b"/GarlicFarm/other/1/websocket"),
        "http-1-0": request_1.replace(b"HTTP/1.1", b"HTTP/1.0"),
        "post": request_1.replace(b"GET", b"POST"),
        "basic": request_1.replace(b"Connection: close", b"Authorization: Basic YWxpY2U6cHc="),
        "body": request_1.replace(b"\r\n\r\n", b"\r\nContent-Length: 3\r\n\r\nabc"),
    }
    challenge_401 = serve(request_1)
    upgrade_101 = serve(request_2)
    assert upgrade_101.startswith(b"HTTP/1.1 101 "), upgrade_101
    head = {
        line.split(b":", 1)[0].lower(): line.split(b":", 1)[1].strip()
        for line in request_2.split(b"\r\n")[1:]
        if b":" in line
    }
    www = [
        line.split(b":", 1)[1].strip()
        for line in challenge_401.split(b"\r\n")
        if line.lower().startswith(b"www-authenticate:")
    ]
    seeds = {
        "server-request-1": mode("server") + request_1,
        "server-request-2": mode("server") + request_2,
        "server-request-2-binary": mode("server") + request_2 + BINARY,
        "client-1-challenge": mode("client-request-1") + challenge_401,
        "client-1-not-found": mode("client-request-1") + serve(bad["wrong-path"]),
        "client-2-upgrade": mode("client-request-2") + upgrade_101 + BINARY,
        "client-2-stale": mode("client-request-2")
        + challenge_401.replace(b"SHA-256", b"SHA-256, stale=true"),
        "authorization-digest": mode("authorization") + head[b"authorization"],
        "authorization-basic": mode("authorization") + b"Basic YWxpY2U6cHc=",
        "www-authenticate-both": mode("www-authenticate") + b", ".join(www),
        "www-authenticate-sha256": mode("www-authenticate") + www[0],
    }
    seeds.update({f"server-{name}": mode("server") + request for name, request in bad.items()})
    seeds.update({f"server-request-2-{name}": mode("server") + r for name, r in nonces.items()})
    digest = head[b"authorization"]
    seeds["authorization-userhash"] = mode("authorization") + digest + b", userhash=true"
    seeds["authorization-empty-cnonce"] = mode("authorization") + re.sub(
        rb'cnonce="[^"]*"', b'cnonce=""', digest
    )
    return seeds


def main() -> None:
    for target, seeds in (
        ("codec", codec_seeds()),
        ("logpack", logpack_seeds()),
        ("handshake", handshake_seeds()),
    ):
        directory = CORPUS / target
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            (directory / f"seed-{name}").write_bytes(data)
        print(f"{target}: {len(seeds)} seeds in {directory.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
