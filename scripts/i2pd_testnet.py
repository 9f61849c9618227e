"""A 3-router i2pd testnet in one network namespace: does a Meta LS2 handed to router A over I2CP reach
floodfill B, and does a newer one handed to router C (handover, transient key) replace it on B?

Run (as root, from anywhere):

    .venv/bin/python scripts/i2pd_testnet.py [--dir DIR] [--net public|loopback] [--hops N]

The outer call re-runs this file under ``unshare --net --pid --fork --kill-child`` (``--inside``): every
i2pd started there dies with the namespace. Results: ``<dir>/results.json``, router logs
``<dir>/{A,B,C}/i2pd.log``, B's console pages ``<dir>/B-leasesets-*.html``.

--net public (default): the routers live on 11.0.0.1-3 (non-reserved addresses put on ``lo`` inside the
namespace: no packet leaves it). --net loopback: 127.0.0.1-3, which i2pd 2.45.1 refuses whatever
``reservedrange`` says (NTCP2Server::HandleAccept checks IsInReservedRange unconditionally); kept to
reproduce that block.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAIN = HERE.parent  # the checkout
I2PD = "/usr/sbin/i2pd"
PYTHON = str(MAIN / ".venv/bin/python")

#: session options for our I2CP sessions: zero-hop tunnels (no peers needed to build them)
ZERO_HOP = {
    "inbound.quantity": "1",
    "outbound.quantity": "1",
    "inbound.length": "0",
    "outbound.length": "0",
}
HTTP_B = 7070
STORE_WAIT = 150.0  # seconds to wait for B to store a Meta LS2
HOPS = 0  # inbound/outbound.length of our I2CP sessions (--hops; garlicfarm's SESSION_OPTIONS say 1)
LINGER = 0.0  # seconds to keep publisher 2 up after B stored its Meta LS2 (--linger)

ROUTERS = {
    # name: (last octet, ntcp2 port, i2cp port or None, floodfill, http port or None)
    "A": (1, 20001, 7654, False, None),
    "B": (2, 20002, None, True, HTTP_B),
    "C": (3, 20003, 7655, False, None),
}


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def config(name: str, base: str, d: Path) -> str:
    octet, port, i2cp, floodfill, http = ROUTERS[name]
    host = f"{base}.{octet}"
    lines = [
        "log = file",
        f"logfile = {d}/i2pd.log",
        "loglevel = debug",
        "ipv4 = true",
        "ipv6 = false",
        "nat = false",
        f"host = {host}",
        f"address4 = {host}",
        f"port = {port}",
        "reservedrange = false",
        f"floodfill = {'true' if floodfill else 'false'}",
        "bandwidth = L",
        "notransit = false",
        "[ntcp2]",
        "enabled = true",
        "published = true",
        f"port = {port}",
        "[ssu2]",
        "enabled = false",
        "[http]",
        *(
            ["enabled = true", "address = 127.0.0.1", f"port = {http}", "strictheaders = false"]
            if http
            else ["enabled = false"]
        ),
        "[httpproxy]",
        "enabled = false",
        "[socksproxy]",
        "enabled = false",
        "[sam]",
        "enabled = false",
        "[bob]",
        "enabled = false",
        "[i2cp]",
        *(["enabled = true", "address = 127.0.0.1", f"port = {i2cp}"] if i2cp else ["enabled = false"]),
        "[i2pcontrol]",
        "enabled = false",
        "[upnp]",
        "enabled = false",
        "[addressbook]",
        "enabled = false",
        "[nettime]",
        "enabled = false",
        "[reseed]",
        "verify = false",
        "threshold = 0",
        "urls =",
        "[exploratory]",
        "inbound.length = 0",
        "outbound.length = 0",
        "inbound.quantity = 1",
        "outbound.quantity = 1",
        "[persist]",
        "profiles = false",
        "",
    ]
    return "\n".join(lines)


def start(name: str, d: Path) -> subprocess.Popen[bytes]:
    argv = [
        I2PD,
        f"--datadir={d / 'data'}",
        f"--conf={d / 'i2pd.conf'}",
        f"--tunconf={d / 'tunnels.conf'}",
        f"--tunnelsdir={d / 'tunnels.d'}",
    ]
    out = (d / "i2pd.stdout").open("ab")
    env = {**os.environ, "TZ": "UTC"}
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)


def stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 15
    for p in procs.values():
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_file(path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {timeout:g} s")
        time.sleep(0.2)


def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout:g} s")
        time.sleep(0.2)


def router_hash_b64(ri: bytes) -> str:
    """Base64 (I2P alphabet) of SHA-256 of the RouterIdentity at the start of a RouterInfo."""
    from garlicfarm.i2p.encoding import b64encode

    cert_len = int.from_bytes(ri[385:387], "big")
    return b64encode(hashlib.sha256(ri[: 387 + cert_len]).digest())


def seed(dirs: dict[str, Path]) -> dict[str, str]:
    """Copy each router's router.info into the others' netDb/r<c>/routerInfo-<hash>.dat (FS.cpp
    HashedStorage::Path, NetDb m_Storage("netDb", "r", "routerInfo-", "dat"))."""
    hashes = {}
    for name, d in dirs.items():
        ri = (d / "data" / "router.info").read_bytes()
        h = router_hash_b64(ri)
        hashes[name] = h
        for other, od in dirs.items():
            if other == name:
                continue
            target = od / "data" / "netDb" / f"r{h[0]}" / f"routerInfo-{h}.dat"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(ri)
    return hashes


class Log:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def text(self) -> str:
        try:
            return self.path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def mark(self) -> None:
        self.offset = len(self.text())

    def since(self) -> str:
        return self.text()[self.offset :]


def grep(text: str, *needles: str) -> list[str]:
    return [line for line in text.splitlines() if any(n in line for n in needles)]


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode(errors="replace")


def leaseset_items(html: str) -> list[str]:
    """The leaseset entries of i2pd's ?page=leasesets, tags stripped, one string each."""
    import re

    items = []
    for chunk in html.split('<div class="leaseset listitem')[1:]:
        text = re.sub(r"<[^>]+>", " ", chunk.split("</div>\r\n</div>\r\n</div>")[0])
        items.append(" ".join(text.replace('">', " ").split()))
    return items


async def scenario(reactor: Any, run: Path, dirs: dict[str, Path]) -> dict[str, Any]:
    from twisted.internet.endpoints import TCP4ClientEndpoint
    from twisted.internet.task import deferLater

    from garlicfarm.i2p.i2cp import SessionConfig
    from garlicfarm.i2p.keys import create_master, create_transient
    from garlicfarm.router.i2cp import I2CPPublisher
    from garlicfarm.router.interface import MetaLease

    logs = {n: Log(d / "i2pd.log") for n, d in dirs.items()}
    out: dict[str, Any] = {}

    async def until(pred: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred():
                return True
            await deferLater(reactor, 0.5, lambda: None)
        return pred()

    def page(tag: str) -> list[str]:
        html = fetch(f"http://127.0.0.1:{HTTP_B}/?page=leasesets")
        (run / f"B-leasesets-{tag}.html").write_text(html)
        return leaseset_items(html)

    session_options = {**ZERO_HOP, "inbound.length": str(HOPS), "outbound.length": str(HOPS)}
    out["session_options"] = session_options
    master = create_master(os.urandom)
    b32 = master.destination.b32
    out["master_b32"] = b32
    contents = (
        MetaLease(create_master(os.urandom).destination.b32, 100),
        MetaLease(create_master(os.urandom).destination.b32, 40),
    )
    key = b32[: -len(".b32.i2p")] if b32.endswith(".b32.i2p") else b32
    out["B_leasesets_before"] = page("0-before")

    # B answers a DatabaseStore with a reply token through its exploratory pool's outbound tunnel; until
    # that pool has made its (zero-hop) tunnels B logs "No outbound tunnels for DatabaseStore reply found"
    # and the publisher's router never hears the store confirmed (B stores it all the same)
    t0 = time.monotonic()
    ready = await until(lambda: "Creating destination outbound tunnel" in logs["B"].text(), 30)
    await deferLater(reactor, 1.0, lambda: None)
    out["B_pools_ready"] = {"ready": ready, "seconds": round(time.monotonic() - t0, 1)}

    # 1: the master key publishes through A
    for log in logs.values():
        log.mark()
    t0 = time.monotonic()
    now = int(reactor.seconds())
    cfg1 = SessionConfig.create(master.destination, master.signer, now * 1000, session_options)
    pub1 = I2CPPublisher(
        reactor,
        TCP4ClientEndpoint(reactor, "127.0.0.1", 7654),
        master,
        expires=600,
        session_config=cfg1,
        where="A",
    )
    await pub1.publish("", contents)
    say(f"publisher 1 (master key) sent the Meta LS2 of {b32} to A")
    stored1 = await until(
        lambda: any(key in line for line in grep(logs["B"].since(), "LeaseSet2 updated")), STORE_WAIT
    )
    confirmed1 = await until(
        lambda: any(key in line for line in grep(logs["A"].since(), "Publishing LeaseSet confirmed")), 15
    )
    out["first"] = {
        "stored_on_B": stored1,
        "confirmed_on_A": confirmed1,
        "seconds": round(time.monotonic() - t0, 1),
        "publisher_status": pub1.status(),
        "A_log": grep(logs["A"].since(), "I2CP", "Destination:", "NTCP2: Session", "established"),
        "B_log": grep(logs["B"].since(), "NetDb: Store request", "LeaseSet2", "DatabaseStore", key),
        "B_page": page("1-after-first"),
    }
    say(f"first: stored on B {stored1}, confirmed on A {confirmed1}")

    # 2: handover. A's session goes; C publishes with a transient key of the same master
    await pub1.stop("")
    await deferLater(reactor, 2.0, lambda: None)
    for log in logs.values():
        log.mark()
    t0 = time.monotonic()
    now = int(reactor.seconds())
    member = create_transient(master, os.urandom, now + 3600)
    cfg2 = SessionConfig.create(master.destination, master.signer, now * 1000, session_options)
    pub2 = I2CPPublisher(
        reactor,
        TCP4ClientEndpoint(reactor, "127.0.0.1", 7655),
        member,
        expires=900,
        session_config=cfg2,
        where="C",
    )
    signs = [0]
    real_sign = pub2.signer.sign

    def counting_sign(contents: Any) -> Any:
        signs[0] += 1
        return real_sign(contents)

    pub2.signer.sign = counting_sign  # count how often C's router makes publisher 2 sign anew
    await pub2.publish("", contents[::-1])
    say("publisher 2 (transient key) sent a newer Meta LS2 to C")
    stored2 = await until(
        lambda: any(key in line for line in grep(logs["B"].since(), "LeaseSet2 updated")), STORE_WAIT
    )
    confirmed2 = await until(
        lambda: any(key in line for line in grep(logs["C"].since(), "Publishing LeaseSet confirmed")), 15
    )
    out["second"] = {
        "stored_on_B": stored2,
        "confirmed_on_C": confirmed2,
        "seconds": round(time.monotonic() - t0, 1),
        "publisher_status": pub2.status(),
        "signed_times": signs[0],
        "C_log": grep(logs["C"].since(), "I2CP", "Destination:", "NTCP2: Session", "established"),
        "B_log": grep(logs["B"].since(), "NetDb: Store request", "LeaseSet2", "DatabaseStore", key),
        "B_page": page("2-after-handover"),
    }
    say(f"second: stored on B {stored2}, confirmed on C {confirmed2}")
    if LINGER:
        # i2pd verifies a publish by looking the leaseset up again, and its client side drops a Meta LS2
        # ("Unexpected client's DatabaseStore type"): see how often C then publishes it again
        logs["B"].mark()
        logs["C"].mark()
        signs[0] = 0
        await deferLater(reactor, LINGER, lambda: None)
        out["linger"] = {
            "seconds": LINGER,
            "signed_times": signs[0],
            "C_log": grep(logs["C"].since(), "Destination:"),
            "B_log": grep(logs["B"].since(), "NetDb: Store request: LeaseSet2", "LeaseSet2 updated", key),
        }
        say(
            f"linger {LINGER:g} s: B got "
            f"{sum('Store request: LeaseSet2' in line for line in out['linger']['B_log'])} more "
            f"stores; publisher 2 signed {signs[0]} times"
        )
    await pub2.stop("")

    # 3: a stale publisher (its clock 300 s behind) through A: B must keep the newer one
    await deferLater(reactor, 2.0, lambda: None)
    for log in logs.values():
        log.mark()
    t0 = time.monotonic()
    now = int(reactor.seconds())
    cfg3 = SessionConfig.create(master.destination, master.signer, now * 1000, session_options)
    pub3 = I2CPPublisher(
        reactor,
        TCP4ClientEndpoint(reactor, "127.0.0.1", 7654),
        master,
        expires=600,
        session_config=cfg3,
        where="A",
    )
    pub3.signer._clock_s = lambda: reactor.seconds() - 300  # test hack: a member whose clock is behind
    await pub3.publish("", contents)
    say("publisher 3 (master key, clock 300 s behind) sent an older Meta LS2 to A")
    confirmed3 = await until(
        lambda: any(key in line for line in grep(logs["A"].since(), "Publishing LeaseSet confirmed")),
        STORE_WAIT,
    )
    await deferLater(reactor, 1.0, lambda: None)
    b_lines = grep(logs["B"].since(), "NetDb: Store request", "LeaseSet2", "DatabaseStore", key)
    out["stale"] = {
        "confirmed_on_A": confirmed3,
        "received_by_B": any("Store request: LeaseSet2" in line and key in line for line in b_lines),
        "updated_on_B": any("LeaseSet2 updated" in line and key in line for line in b_lines),
        "seconds": round(time.monotonic() - t0, 1),
        "publisher_status": pub3.status(),
        "A_log": grep(logs["A"].since(), "I2CP", "Destination:"),
        "B_log": b_lines,
        "B_page": page("3-after-stale"),
    }
    say(f"stale: confirmed on A {confirmed3}, updated on B {out['stale']['updated_on_B']}")
    await pub3.stop("")
    return out


def inside(run: Path, net: str) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    base = "11.0.0" if net == "public" else "127.0.0"
    for octet, *_ in ROUTERS.values():
        if net == "public" or octet != 1:
            subprocess.run(["ip", "addr", "add", f"{base}.{octet}/32", "dev", "lo"], check=True)
    dirs = {}
    for name in ROUTERS:
        d = run / name
        (d / "data").mkdir(parents=True)
        (d / "tunnels.d").mkdir()
        (d / "tunnels.conf").write_text("")
        (d / "i2pd.conf").write_text(config(name, base, d))
        dirs[name] = d
    results: dict[str, Any] = {
        "net": net,
        "i2pd": subprocess.run(
            [I2PD, "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0],
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        # phase 1: each router makes its keys and router.info
        procs = {n: start(n, d) for n, d in dirs.items()}
        for d in dirs.values():
            wait_file(d / "data" / "router.info", 60)
        time.sleep(1)
        stop(procs)
        for d in dirs.values():  # keep phase 1 logs apart
            (d / "i2pd.log").rename(d / "i2pd.phase1.log")
        results["router_hashes"] = seed(dirs)
        say(f"seeded netDbs: {results['router_hashes']}")

        # phase 2: the testnet
        procs = {n: start(n, d) for n, d in dirs.items()}
        wait_port(7654, 60)
        wait_port(7655, 60)
        wait_port(HTTP_B, 60)
        say("routers up")

        from twisted.internet import reactor
        from twisted.internet.defer import Deferred
        from twisted.python.failure import Failure

        outcome: list[Any] = []

        def go() -> None:
            d = Deferred.fromCoroutine(scenario(reactor, run, dirs))
            d.addBoth(outcome.append)
            d.addBoth(lambda _: reactor.stop())

        reactor.callWhenRunning(go)
        reactor.run()
        if isinstance(outcome[0], Failure):
            results["error"] = outcome[0].getTraceback()
        else:
            results.update(outcome[0])
        # what each router said about its peers and tunnels
        for n, d in dirs.items():
            text = (d / "i2pd.log").read_text(errors="replace")
            results.setdefault("errors", {})[n] = grep(
                text, "error", "Error", "invalid IP", "invalid endpoint"
            )[:40]
    finally:
        stop(procs)
        (run / "results.json").write_text(json.dumps(results, indent=2))
    ok = (
        results.get("first", {}).get("stored_on_B")
        and results.get("second", {}).get("stored_on_B")
        and results.get("stale", {}).get("received_by_B")
        and not results.get("stale", {}).get("updated_on_B")
    )
    print(json.dumps({k: results.get(k) for k in ("net", "master_b32")} | {"works": bool(ok)}))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description="A 3-router i2pd testnet in a private network namespace (root): a Meta LS2 published "
        "through router A's I2CP must be stored by floodfill B, a newer one through C must replace it, "
        "an older one must not. Exit status 0 when all three hold.",
    )
    parser.add_argument(
        "--dir", type=Path, help="where the routers' logs and results go (new; default: a temp dir)"
    )
    parser.add_argument("--net", choices=("public", "loopback"), default="public")
    parser.add_argument("--inside", action="store_true")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--wait", type=float, default=STORE_WAIT, help="seconds to wait for each store on B")
    parser.add_argument("--linger", type=float, default=0.0, help="seconds to keep publisher 2 up afterwards")
    parser.add_argument("--hops", type=int, default=0, help="tunnel length of our I2CP sessions")
    args = parser.parse_args()
    if args.inside:
        globals()["STORE_WAIT"] = args.wait
        globals()["LINGER"] = args.linger
        globals()["HOPS"] = args.hops
        return inside(args.dir, args.net)
    if args.dir is None:
        args.dir = Path(tempfile.mkdtemp(prefix="garlicfarm-testnet-"))
    elif args.dir.exists() and any(args.dir.iterdir()):
        parser.error(f"{args.dir} is not empty: give a new directory")
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"testnet: logs and results in {args.dir}", file=sys.stderr)
    argv = [
        "unshare",
        "--net",
        "--pid",
        "--fork",
        "--kill-child",
        PYTHON,
        str(Path(__file__).resolve()),
        "--inside",
        "--dir",
        str(args.dir),
        "--net",
        args.net,
        "--wait",
        str(args.wait),
        "--linger",
        str(args.linger),
        "--hops",
        str(args.hops),
    ]
    env = {**os.environ, "PYTHONPATH": str(MAIN)}
    try:
        return subprocess.run(argv, env=env, timeout=args.timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        say(f"timed out after {args.timeout:g} s (everything in the namespace is killed with it)")
        return 2


if __name__ == "__main__":
    sys.exit(main())
