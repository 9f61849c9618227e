"""A handshake bridge for mixed farms with JRaft on loopback (scripts/jraft-interop.sh; not in CI).

JRaft has no handshake: its peers open a TCP connection and send binary messages at once. garlicfarm
expects the HTTP upgrade with Digest first. One bridge sits at each server's advertised endpoint and
tells the two apart by the first bytes (``GET `` never starts a JRaft message, whose first byte is the
type, 1..17):

* ``--front jraft`` (in front of a JRaft node): a handshake is answered as a garlicfarm server would
  (Digest, then 101 *without* any ``GarlicFarm-Features``: JRaft speaks none), then bytes are piped to
  the JRaft node; raw JRaft traffic is piped straight through;
* ``--front garlicfarm`` (in front of a garlicfarm node): a handshake is piped straight through; raw
  JRaft traffic gets a client handshake to the garlicfarm node first (no features offered), then pipes.

Cleartext, loopback only, like garlicfarm's own cleartext mode.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from garlicfarm.handshake import (
    Authenticated,
    ChallengeCache,
    ClientConfig,
    ClientHandshake,
    Close,
    Failed,
    NonceRegistry,
    Reconnect,
    SendBytes,
    ServerConfig,
    ServerHandshake,
    Upgraded,
)

HOST = "127.0.0.1"


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def splice(
    a: tuple[asyncio.StreamReader, asyncio.StreamWriter], b: tuple[asyncio.StreamReader, asyncio.StreamWriter]
) -> None:
    await asyncio.gather(pipe(a[0], b[1]), pipe(b[0], a[1]))


class Bridge:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        password = open(args.password_file, encoding="utf-8").read().strip()  # noqa: SIM115
        self.server_config = ServerConfig(credentials={args.username: password}, cluster=args.cluster)
        self.client_config = ClientConfig(
            host=f"{HOST}:{args.target}", username=args.username, password=password, cluster=args.cluster
        )
        self.nonces = NonceRegistry(os.urandom)
        self.cache = ChallengeCache()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await reader.readexactly(4)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        try:
            if first == b"GET " and self.args.front == "jraft":
                await self._handshake_then_pipe(first, reader, writer)
            elif first != b"GET " and self.args.front == "garlicfarm":
                await self._upgrade_then_pipe(first, reader, writer)
            else:
                target = await asyncio.open_connection(HOST, self.args.target)
                target[1].write(first)
                await splice((reader, writer), target)
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            print(f"bridge {self.args.listen}: {e}", file=sys.stderr, flush=True)
            writer.close()

    async def _handshake_then_pipe(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        handshake = ServerHandshake(self.server_config, self.nonces, ())
        data = first
        while True:
            leftover = None
            for event in handshake.receive_data(data, time.time()):
                if isinstance(event, SendBytes):
                    writer.write(event.data)
                elif isinstance(event, Close):
                    await writer.drain()
                    writer.close()
                    return
                elif isinstance(event, Authenticated):
                    leftover = event.leftover
            if leftover is not None:
                await writer.drain()
                target = await asyncio.open_connection(HOST, self.args.target)
                if leftover:
                    target[1].write(leftover)
                await splice((reader, writer), target)
                return
            data = await reader.read(65536)

    async def _upgrade_then_pipe(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        for _attempt in range(3):
            target = await asyncio.open_connection(HOST, self.args.target)
            handshake = ClientHandshake(self.client_config, self.cache, time.time(), os.urandom)
            target[1].write(handshake.initiate())
            outcome = None
            while outcome is None:
                data = await target[0].read(65536)
                for event in handshake.receive_data(data, time.time()):
                    if isinstance(event, Upgraded | Reconnect | Failed):
                        outcome = event
            if isinstance(outcome, Reconnect):
                target[1].close()
                continue
            if isinstance(outcome, Failed):
                raise ConnectionError(f"handshake with {self.args.target} failed: {outcome}")
            assert isinstance(outcome, Upgraded)
            target[1].write(first)
            if outcome.leftover:
                writer.write(outcome.leftover)
            await splice((reader, writer), target)
            return
        raise ConnectionError("no 101 after three attempts")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--target", type=int, required=True)
    parser.add_argument("--front", choices=("jraft", "garlicfarm"), required=True)
    parser.add_argument("--cluster", default="farm")
    parser.add_argument("--username", default="farm")
    parser.add_argument("--password-file", required=True)
    args = parser.parse_args()
    bridge = Bridge(args)
    server = await asyncio.start_server(bridge.serve, HOST, args.listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
