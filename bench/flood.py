"""Connection flood: what 1,000+ unauthenticated connections cost one real node over TLS on loopback.

    python -m bench.flood [--connections 1000] [--no-certificate 20]

Opens the connections (they never speak) plus some TLS clients without a client certificate, asks the
node for its status with the farm's credentials while they are open, closes them, and prints the
node's file descriptors and RSS before, during and after, how long the status took, and the size of
its log (lines, tracebacks). tests/net/test_flood_e2e.py asserts the bounds; this prints the numbers.
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import time
from pathlib import Path

from tests.net.onenode import OneNode, silent, wait_for
from tests.net.test_flood_e2e import without_certificate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--no-certificate", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        node = OneNode(Path(directory) / "farm")
        node.start_all()
        try:
            node.wait_for_leader(timeout=30)
            fds, rss = [node.fds()], [node.rss_kib()]
            flood: list[socket.socket] = []
            started = time.monotonic()
            every = max(1, args.connections // max(1, args.no_certificate))
            for i in range(args.connections):
                flood.append(silent(node.base))
                if i % every == every - 1:
                    without_certificate(node.base)
            opened = time.monotonic() - started
            started = time.monotonic()
            status = node.status(1)
            took = time.monotonic() - started
            fds.append(node.fds())
            rss.append(node.rss_kib())
            for s in flood:
                s.close()
            wait_for(lambda: node.fds() <= fds[0] + 4, 30, "fds back near the baseline")
            fds.append(node.fds())
            rss.append(node.rss_kib())
            log = node.log()
        finally:
            node.stop_all()
    print(f"{args.connections} connections opened in {opened:.1f} s")
    print(f"authenticated status during the flood: {'ok' if status else 'FAILED'} in {took:.2f} s")
    print(f"node fds before / during / after: {' / '.join(map(str, fds))}")
    print(f"node RSS before / during / after: {' / '.join(f'{r / 1024:.0f} MB' for r in rss)}")
    print(f"node log: {len(log)} bytes, {len(log.splitlines())} lines, {log.count('Traceback')} tracebacks")


if __name__ == "__main__":
    main()
