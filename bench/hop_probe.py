"""The floor of one hop between two Twisted processes on loopback: a 26-byte message echoed back,
one at a time, over TCP and over TLS (a garlicfarm response is 26 bytes; every unloaded commit is
four such hops).

    python -m bench.hop_probe [--count 3000]

Prints the round trip's p50 and p90 in µs for each; one hop is about half.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from twisted.internet import protocol, ssl, task
from twisted.internet.defer import Deferred

from bench.stats import percentile
from garlicfarm.net.connection import no_delay
from garlicfarm.tls.certs import issue_node, new_ca

MESSAGE = b"x" * 26


class Echo(protocol.Protocol):
    def connectionMade(self) -> None:
        no_delay(self.transport)

    def dataReceived(self, data: bytes) -> None:
        self.transport.write(data)  # type: ignore[union-attr]


class Ping(protocol.Protocol):
    def __init__(self, count: int, done: Deferred[list[float]]) -> None:
        self.count = count
        self.done = done
        self.took: list[float] = []
        self.started = 0.0

    def connectionMade(self) -> None:
        no_delay(self.transport)
        self._send()

    def _send(self) -> None:
        self.started = time.perf_counter()
        self.transport.write(MESSAGE)  # type: ignore[union-attr]

    def dataReceived(self, data: bytes) -> None:
        self.took.append(time.perf_counter() - self.started)
        if len(self.took) < self.count:
            self._send()
        else:
            self.transport.loseConnection()  # type: ignore[union-attr]
            self.done.callback(self.took[len(self.took) // 10 :])  # past the warm-up


def serve(port_file: Path, pem: Path | None) -> None:
    from twisted.internet import reactor  # noqa: PLC0415 (the server process's own, not the prober's)

    factory = protocol.ServerFactory.forProtocol(Echo)
    listening: Any = reactor
    if pem is None:
        port = listening.listenTCP(0, factory, interface="127.0.0.1")
    else:
        options = ssl.PrivateCertificate.loadPEM(pem.read_text()).options()  # type: ignore[no-untyped-call]
        port = listening.listenSSL(0, factory, options, interface="127.0.0.1")
    port_file.write_text(str(port.getHost().port))
    listening.run()


def ping(port: int, tls: bool, count: int) -> None:
    """Measure, print, and exit the process (task.react)."""

    async def run(reactor: Any) -> None:
        done: Deferred[list[float]] = Deferred()
        factory = protocol.ClientFactory.forProtocol(lambda: Ping(count, done))
        if tls:
            reactor.connectSSL("127.0.0.1", port, factory, ssl.CertificateOptions(verify=False))
        else:
            reactor.connectTCP("127.0.0.1", port, factory)
        took = [t * 1e6 for t in await done]
        kind = "TLS" if tls else "TCP"
        print(f"{kind}: round trip p50 {percentile(took, 50):.0f} us, p90 {percentile(took, 90):.0f} us")

    task.react(lambda reactor: Deferred.fromCoroutine(run(reactor)), [])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--serve", nargs=2, metavar=("PORT_FILE", "PEM"), help=argparse.SUPPRESS)
    parser.add_argument("--ping", nargs=2, metavar=("PORT", "TLS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), Path(args.serve[1]) if args.serve[1] != "-" else None)
        return
    if args.ping:
        ping(int(args.ping[0]), args.ping[1] == "tls", args.count)
    with tempfile.TemporaryDirectory() as tmp:
        ca = new_ca("hop probe")
        node = issue_node(ca, "hop probe")
        key = node.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        pem = Path(tmp) / "node.pem"
        pem.write_bytes(key + node.cert_pem())
        for kind, server_pem in (("tcp", "-"), ("tls", str(pem))):
            port_file = Path(tmp) / f"{kind}.port"
            server = subprocess.Popen(
                [sys.executable, "-m", "bench.hop_probe", "--serve", str(port_file), server_pem]
            )
            try:
                for _ in range(100):
                    if port_file.exists() and port_file.read_text():
                        break
                    time.sleep(0.05)
                ping_command = ["--count", str(args.count), "--ping", port_file.read_text(), kind]
                subprocess.run([sys.executable, "-m", "bench.hop_probe", *ping_command], check=True)
            finally:
                server.terminate()
                server.wait()


if __name__ == "__main__":
    main()
