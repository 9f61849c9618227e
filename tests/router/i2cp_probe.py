"""Run inside a fresh network namespace: start i2pd offline with I2CP on, publish Meta LS2s through
garlicfarm's I2CP publisher (master-signed; offline-signed with a presigned session), send a forged one
and one past its offline signature's expiry, and print what i2pd's own log said for each, as JSON.

Started by tests/router/test_i2cp_e2e.py like tests/router/i2pd_probe.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.router.i2pd_probe import CONFIG, START_TIMEOUT, log, run_in_reactor, start_i2pd, wait_for_port

I2CP_PORT = 7654
I2CP_CONFIG = CONFIG.replace(
    "[i2cp]\nenabled = false", f"[i2cp]\nenabled = true\naddress = 127.0.0.1\nport = {I2CP_PORT}"
)
I2CP_CONFIG = I2CP_CONFIG.replace("loglevel = info", "loglevel = debug")
#: a server tunnel whose key file i2pd makes itself: a real i2pd destination, used as a leaf
TUNNELS = "[leaf]\ntype = server\nhost = 127.0.0.1\nport = 8080\nkeys = leaf.dat\nsignaturetype = 7\n"
#: what i2pd 2.45.1 logs when it took a leaseset and set out to publish it (offline: no tunnels)
TAKEN = "Can't publish LeaseSet"
WAIT = 20.0


class LogWatch:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def text(self) -> str:
        try:
            return self.path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    async def until(self, reactor: Any, *needles: str) -> list[str]:
        """The lines logged since the last call, once every needle has appeared (or WAIT passed)."""
        from twisted.internet.task import deferLater

        deadline = time.monotonic() + WAIT
        while True:
            new = self.text()[self.offset :]
            if all(n in new for n in needles) or time.monotonic() > deadline:
                self.offset += len(new)
                return [line for line in new.splitlines() if "I2CP" in line or "LeaseSet" in line]
            await deferLater(reactor, 0.1, lambda: None)


async def probe(reactor: Any, directory: Path) -> dict[str, Any]:
    from twisted.internet.endpoints import TCP4ClientEndpoint

    from garlicfarm.i2p import i2cp
    from garlicfarm.i2p.i2cp import SESSION_OPTIONS, SessionConfig
    from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
    from garlicfarm.i2p.metals import MetaLease as Entry
    from garlicfarm.i2p.metals import MetaLeaseSet
    from garlicfarm.router.i2cp import I2CPPublisher
    from garlicfarm.router.interface import MetaLease
    from garlicfarm.router.publishers import PublishError

    watch = LogWatch(directory / "i2pd.log")
    seen: dict[str, Any] = {}
    leaf_file = directory / "data" / "leaf.dat"
    leaf = PrivateKeyFile.decode(leaf_file.read_bytes())  # made by i2pd for its server tunnel
    leaf.check()
    seen["i2pd_leaf"] = {"b32": leaf.destination.b32, "in_log": leaf.destination.b32 in watch.text()}
    contents = (
        MetaLease(leaf.destination.b64, 100),
        MetaLease(create_master(os.urandom).destination.b32, 40),
    )
    endpoint = TCP4ClientEndpoint(reactor, "127.0.0.1", I2CP_PORT)
    now = int(reactor.seconds())

    master = create_master(os.urandom)
    publisher = I2CPPublisher(reactor, endpoint, master, expires=600)
    await publisher.publish("", contents)
    seen["master_signed"] = await watch.until(reactor, "created", TAKEN)
    seen["master_status"] = publisher.status()
    await publisher.stop("")
    seen["stopped"] = await watch.until(reactor, "destroyed")

    member = create_transient(master, os.urandom, now + 3600)
    session = SessionConfig.create(master.destination, master.signer, now * 1000, SESSION_OPTIONS)
    publisher = I2CPPublisher(reactor, endpoint, member, expires=600, session_config=session)
    await publisher.publish("", contents)
    seen["offline_signed"] = await watch.until(reactor, "created", TAKEN)

    good = publisher.signer.current
    assert good is not None and publisher._conn is not None and publisher._session is not None
    forged = bytearray(good.encoded)
    forged[-7] ^= 0x04
    payload = publisher._session.to_bytes(2, "big") + b"\x07" + bytes(forged) + b"\x00"
    publisher._conn.send(i2cp.frame(i2cp.CREATE_LEASESET2, payload))
    seen["flipped_bit"] = await watch.until(reactor, "Invalid LeaseSet2")

    expired = create_transient(master, os.urandom, now - 60)
    late = MetaLeaseSet(
        master.destination,
        now + 5,
        600,
        (Entry(leaf.destination.hash, 0, now + 605),),
        offline=expired.offline,
    ).signed(expired.signer)
    publisher._conn.send(i2cp.create_leaseset2(publisher._session, late))
    seen["offline_expired"] = await watch.until(reactor, "Invalid LeaseSet2")
    await publisher.stop("")

    refusing = I2CPPublisher(reactor, endpoint, expired, session_config=session)
    try:
        await refusing.publish("", contents)
        seen["our_refusal"] = None
    except PublishError as e:
        seen["our_refusal"] = str(e)
    await refusing.stop("")
    return seen


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--i2pd", required=True)
    parser.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    process = start_i2pd(args.i2pd, args.dir, I2CP_CONFIG, TUNNELS)
    try:
        wait_for_port(process, time.monotonic() + START_TIMEOUT, I2CP_PORT)
        log("I2CP is listening")
        from twisted.internet import reactor

        seen = run_in_reactor(lambda: probe(reactor, args.dir))
        print(json.dumps(seen))
        return 0
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
