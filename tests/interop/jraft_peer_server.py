"""The JRaft-behaviour peer as a real network server, started like dmprinter (a directory holding
``config.properties`` and ``cluster.json``): ``python -m tests.interop.jraft_peer_server server DIR``.

It listens on its own endpoint's port and speaks JRaft's raw protocol (no handshake: a bridge in front
of it does that, scripts/jraft_bridge.py), one connection per peer for its own requests, first-in
first-out. Its log is written in JRaft's file layout (store.sti, store.idx, store.data, server.state)
every 200 ms and on exit, so the interop driver reads it as it reads a real JRaft node's.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import struct
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from garlicfarm.wire import ClusterServer, Configuration
from tests.interop.jraft_peer import JRaftPeer
from tests.interop.jraft_wire import parse_response

_HEADER = 45


class _Link:
    """Requests to one peer on one connection, one at a time (a lost answer drops the connection)."""

    def __init__(self, node: Node, to: int, endpoint: str) -> None:
        self.node, self.to, self.endpoint = node, to, endpoint
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        url = urlparse(self.endpoint)
        link: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while True:
            request = await self.queue.get()
            try:
                if link is None:
                    connecting = asyncio.open_connection(url.hostname, url.port)
                    link = await asyncio.wait_for(connecting, timeout=2)
                link[1].write(request)
                await link[1].drain()
                answer = await asyncio.wait_for(link[0].readexactly(26), timeout=5)
            except (OSError, TimeoutError, asyncio.IncompleteReadError):
                if link is not None:
                    link[1].close()
                link = None
                self.node.peer.on_failure(request, self.to)
                continue
            self.node.peer.on_response(request, parse_response(answer))


class Node:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        props = (directory / "config.properties").read_text()
        self.id = int(props.split("=", 1)[1])
        cluster = json.loads((directory / "cluster.json").read_text())
        servers = tuple(ClusterServer(s["id"], s["endpoint"]) for s in cluster["servers"])
        config = Configuration(cluster["logIndex"], cluster["lastLogIndex"], servers)
        self.port = urlparse(config.endpoint_of(self.id) or "").port
        self.links: dict[int, _Link] = {}
        self.peer = JRaftPeer(self.id, config, random.Random(), self.send)
        self.start = time.monotonic()

    def send(self, to: int, data: bytes, endpoint: str | None) -> None:
        link = self.links.get(to)
        if link is None or (endpoint is not None and link.endpoint != endpoint):
            link = self.links[to] = _Link(self, to, endpoint or "")
        link.queue.put_nowait(data)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readexactly(_HEADER)
                (size,) = struct.unpack_from(">I", header, 41)
                data = header + await reader.readexactly(size)
                response = self.peer.handle(data)
                if response is None:
                    break
                writer.write(response.to_bytes())
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        writer.close()

    def dump(self) -> None:
        store = self.peer.store
        (self.dir / "store.sti").write_bytes(struct.pack(">q", store.start))
        (self.dir / "store.idx").write_bytes(b"".join(struct.pack(">q", w) for w in store.index))
        (self.dir / "store.data").write_bytes(bytes(store.data))
        state = struct.pack(">qqi", self.peer.term, self.peer.commit_index, self.peer.voted_for)
        (self.dir / "server.state").write_bytes(state)

    async def run(self) -> int:
        server = await asyncio.start_server(self.serve, "127.0.0.1", self.port)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        ticks = 0
        async with server:
            while not stop.is_set() and not self.peer.exited:
                self.peer.advance(int((time.monotonic() - self.start) * 1000))
                ticks += 1
                if ticks % 20 == 0:
                    self.dump()
                await asyncio.sleep(0.01)
        self.dump()
        for error in self.peer.errors:
            print(f"jraft-peer {self.id}: {error}", flush=True)
        return 0


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] != "server":
        print("usage: python -m tests.interop.jraft_peer_server server DIR [PORT]", file=sys.stderr)
        return 2
    return asyncio.run(Node(Path(sys.argv[2])).run())


if __name__ == "__main__":
    sys.exit(main())
