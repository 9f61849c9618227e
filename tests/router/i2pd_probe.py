"""Run inside a fresh network namespace: start i2pd offline with I2PControl on, read it with
I2PControlRouter, print what was seen as one JSON object on stdout, stop i2pd.

Started by tests/router/test_i2pd_e2e.py as ``python -m tests.router.i2pd_probe --i2pd ... --dir ...``
under ``unshare --net --pid --fork --kill-child`` (or ``ip netns exec``). The namespace has only
loopback, so i2pd reaches nobody and nobody reaches it.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import attrs

PORT = 7650
PASSWORD = "probe-password"  # a throwaway router in a throwaway namespace
BANDWIDTH_KBPS = 256
START_TIMEOUT = 30.0
#: i2pd answers its first calls slowly while it generates keys; on a loaded 2-core machine that took
#: over 5 s (a flaky run): wait long, the probe's overall timeout still bounds it
ANSWER_TIMEOUT = 30.0

CONFIG = f"""\
log = file
logfile = {{dir}}/i2pd.log
loglevel = info
ipv4 = true
ipv6 = false
nat = true
notransit = true
bandwidth = {BANDWIDTH_KBPS}
[ntcp2]
enabled = true
published = false
[ssu2]
enabled = false
[http]
enabled = false
[httpproxy]
enabled = false
[socksproxy]
enabled = false
[sam]
enabled = false
[bob]
enabled = false
[i2cp]
enabled = false
[upnp]
enabled = false
[addressbook]
enabled = false
[nettime]
enabled = false
[reseed]
threshold = 0
urls =
[persist]
profiles = false
[i2pcontrol]
enabled = true
address = 127.0.0.1
port = {PORT}
password = {PASSWORD}
"""


def log(message: str) -> None:
    print(f"i2pd_probe: {message}", file=sys.stderr, flush=True)


def start_i2pd(
    binary: str, directory: Path, config: str = CONFIG, tunnels: str = ""
) -> subprocess.Popen[bytes]:
    (directory / "data").mkdir()
    (directory / "tunnels.d").mkdir()
    (directory / "tunnels.conf").write_text(tunnels)
    (directory / "i2pd.conf").write_text(config.format(dir=directory))
    argv = [
        binary,
        f"--datadir={directory / 'data'}",
        f"--conf={directory / 'i2pd.conf'}",
        f"--tunconf={directory / 'tunnels.conf'}",
        f"--tunnelsdir={directory / 'tunnels.d'}",
    ]
    with (directory / "i2pd.stdout").open("wb") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def wait_for_port(process: subprocess.Popen[bytes], deadline: float, port: int = PORT) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"i2pd exited with status {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)  # a process starting up: nothing to wait on but its port
    raise RuntimeError(f"i2pd did not open port {port} on 127.0.0.1 within {START_TIMEOUT:g} s")


async def probe(reactor: Any, deadline: float) -> dict[str, Any]:
    from twisted.internet.task import deferLater

    from garlicfarm.router import i2pcontrol_codec as codec
    from garlicfarm.router.i2pcontrol import I2PControlRouter
    from garlicfarm.router.i2pcontrol_http import post
    from garlicfarm.router.interface import RouterUnavailable

    url = f"https://127.0.0.1:{PORT}/jsonrpc"
    router = I2PControlRouter(reactor, url, PASSWORD, leaves=["leaf"], timeout=ANSWER_TIMEOUT)
    reads = 0
    while True:
        status = await router.router_status()
        reads += 1
        if status.uptime_ms > 0 or time.monotonic() > deadline:
            break
        await deferLater(reactor, 0.2, lambda: None)  # i2pd counts uptime in whole seconds
    seen: dict[str, Any] = {"status": attrs.asdict(status), "reads": reads}
    seen["leaves"] = [attrs.asdict(leaf) for leaf in await router.leaf_status()]
    try:
        await I2PControlRouter(reactor, url, "not-the-password", timeout=ANSWER_TIMEOUT).router_status()
        seen["wrong_password"] = None
    except RouterUnavailable as e:
        seen["wrong_password"] = str(e)
    # The quirk the client avoids: a Token before the other NetworkSetting keys.
    token = await router.authenticate()
    raw = json.dumps(
        {
            "id": 99,
            "method": "NetworkSetting",
            "params": {"Token": token, codec.BW_LIMIT_IN: None},
            "jsonrpc": "2.0",
        }
    ).encode()
    seen["token_first_answer"] = (
        await post(router._agent, reactor, url, raw, timeout=ANSWER_TIMEOUT)
    ).decode()
    return seen


def run_probe(deadline: float) -> dict[str, Any]:
    from twisted.internet import reactor

    return run_in_reactor(lambda: probe(reactor, deadline))


def run_in_reactor(probe_coroutine: Callable[[], Coroutine[Any, Any, dict[str, Any]]]) -> dict[str, Any]:
    """Run the reactor until the probe's coroutine ends; its result, or its exception raised again."""
    from twisted.internet import reactor
    from twisted.internet.defer import Deferred
    from twisted.python.failure import Failure

    outcome: list[Any] = []

    def start() -> None:
        d = Deferred.fromCoroutine(probe_coroutine())
        d.addBoth(outcome.append)
        d.addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    reactor.run()
    if isinstance(outcome[0], Failure):
        outcome[0].raiseException()
    result: dict[str, Any] = outcome[0]
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--i2pd", required=True)
    parser.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    deadline = time.monotonic() + START_TIMEOUT
    process = start_i2pd(args.i2pd, args.dir)
    try:
        wait_for_port(process, deadline)
        log("I2PControl is listening")
        print(json.dumps(run_probe(deadline)))
        return 0
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)  # a throwaway router: no state worth a graceful stop
        process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
