"""Mixed farms of real JRaft (dmprinter) and garlicfarm nodes on loopback; a verdict per scenario.

Run by scripts/jraft-interop.sh after it has compiled JRaft (not in CI: JRaft is not vendored). Each
server has an advertised endpoint served by scripts/jraft_bridge.py (the handshake JRaft lacks) and a
real port behind it. The driver speaks the binary protocol itself, raw, through the bridges (a bridge in
front of a garlicfarm node does the handshake for it): it finds the leader with empty ClientRequests,
submits entries, adds and removes servers; at the end it stops everything and compares the committed
logs read from the nodes' own files (JRaft's store.* and server.state, garlicfarm's log.db).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from garlicfarm.storage.sqlite import SQLiteLogStore
from garlicfarm.wire import (
    AddServerRequest,
    Application,
    ClientRequest,
    ClusterServer,
    Configuration,
    LogEntry,
    RemoveServerRequest,
    Request,
    Response,
    ValueType,
    decode,
    encode,
)
from garlicfarm.wire.codec import decode_value, encode_value

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[1]
PASSWORD = "interop-secret"


class Farm:
    def __init__(self, root: Path, jraft: list[str], base_port: int) -> None:
        """``jraft``: the command that starts a JRaft node, to which ``server DIR PORT`` is added."""
        self.root = root
        self.jraft = jraft
        self.base = base_port
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.bridges: list[subprocess.Popen[bytes]] = []
        self.bridge_of: dict[int, subprocess.Popen[bytes]] = {}
        self.kind: dict[int, str] = {}
        root.mkdir(parents=True, exist_ok=True)
        (root / "credentials").write_text(PASSWORD + "\n")

    def real(self, i: int) -> int:
        return self.base + 10 * i

    def bridge(self, i: int) -> int:
        return self.base + 10 * i + 1

    def endpoint(self, i: int) -> str:
        return f"tcp://{HOST}:{self.bridge(i)}"

    def dir(self, i: int) -> Path:
        return self.root / f"server{i}"

    # ------------------------------------------------------------------------------------------ nodes

    def add_garlicfarm(self, i: int, peers: list[int], extra: str = "") -> None:
        self.kind[i] = "garlicfarm"
        self.dir(i).mkdir(parents=True, exist_ok=True)
        lines = [
            "[node]",
            f"id = {i}",
            'cluster = "farm"',
            f'endpoint = "{self.endpoint(i)}"',
            f'listen = "tcp:{self.real(i)}:interface={HOST}"',
            f'data_dir = "server{i}"',
            "[auth]",
            'username = "farm"',
            'password_file = "credentials"',
            "[peers]",
            *(f'{p} = "{self.endpoint(p)}"' for p in peers),
            extra,
        ]
        (self.root / f"node-{i}.toml").write_text("\n".join(lines) + "\n")
        self._bridge(i, "garlicfarm")
        self.start_garlicfarm(i)

    def start_garlicfarm(self, i: int) -> None:
        """(Re)start garlicfarm server ``i`` from its configuration and data (its bridge stays up)."""
        log = open(self.root / f"node-{i}.log", "ab")  # noqa: SIM115 - the process owns it
        self.procs[i] = subprocess.Popen(
            [sys.executable, "-m", "garlicfarm", "run", "--config", str(self.root / f"node-{i}.toml")],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    def add_jraft(self, i: int, members: list[int]) -> None:
        """``members``: the cluster.json servers (itself at its real port: JRaft listens there)."""
        self.kind[i] = "jraft"
        d = self.dir(i)
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.properties").write_text(f"server.id={i}\n")
        servers = [
            {"id": m, "endpoint": f"tcp://{HOST}:{self.real(m)}" if m == i else self.endpoint(m)}
            for m in members
        ]
        (d / "cluster.json").write_text(json.dumps({"logIndex": 0, "lastLogIndex": 0, "servers": servers}))
        self._bridge(i, "jraft")
        log = open(self.root / f"node-{i}.log", "ab")  # noqa: SIM115
        self.procs[i] = subprocess.Popen(
            [*self.jraft, "server", str(d), str(self.base + 500 + i)],
            cwd=d,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    def _bridge(self, i: int, front: str) -> None:
        log = open(self.root / f"bridge-{i}.log", "ab")  # noqa: SIM115
        script = Path(__file__).with_name("jraft_bridge.py")
        self.bridge_of[i] = subprocess.Popen(
            [
                sys.executable,
                str(script),
                "--listen",
                str(self.bridge(i)),
                "--target",
                str(self.real(i)),
                "--front",
                front,
                "--password-file",
                str(self.root / "credentials"),
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        self.bridges.append(self.bridge_of[i])

    def hold_inbound(self, i: int, hold: bool) -> None:
        """Stop (or resume) what reaches server ``i`` through its bridge: a path that drops packets."""
        os.kill(self.bridge_of[i].pid, signal.SIGSTOP if hold else signal.SIGCONT)

    def kill(self, i: int) -> None:
        proc = self.procs.pop(i)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def exited(self, i: int) -> int | None:
        proc = self.procs.get(i)
        return None if proc is None else proc.poll()

    def stop(self) -> None:
        for proc in [*self.procs.values(), *self.bridges]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)  # a held bridge, too, must see its SIGTERM
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*self.procs.values(), *self.bridges]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.procs, self.bridges = {}, []

    # ------------------------------------------------------------------------------------------ client

    def request(self, i: int, message: Request, timeout: float = 5.0) -> Response | None:
        """One request, raw, through server ``i``'s bridge (which does the handshake for garlicfarm)."""
        try:
            with socket.create_connection((HOST, self.bridge(i)), timeout=timeout) as s:
                s.sendall(encode(message))
                data = b""
                while len(data) < 26:
                    chunk = s.recv(26 - len(data))
                    if not chunk:
                        return None
                    data += chunk
        except OSError:
            return None
        response = decode(data)
        assert isinstance(response, Response)
        return response

    def alive(self) -> list[int]:
        return [i for i, p in self.procs.items() if p.poll() is None]

    def leader(self) -> int | None:
        probe = ClientRequest(entries=())
        for i in self.alive():
            r = self.request(i, probe, timeout=2.0)
            if r is not None and r.accepted:
                return i
        return None

    def wait_for_leader(self, within: float) -> tuple[int, float]:
        start = time.monotonic()
        while time.monotonic() - start < within:
            leader = self.leader()
            if leader is not None:
                return leader, time.monotonic() - start
            time.sleep(0.1)
        raise Failure(f"no leader within {within:.0f} s")

    def submit(self, entries: list[bytes], within: float = 30.0) -> int:
        message = ClientRequest(entries=tuple(LogEntry(0, Application(e)) for e in entries))
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            leader = self.leader()
            if leader is not None:
                r = self.request(leader, message, timeout=10.0)
                if r is not None and r.accepted:
                    return leader
            time.sleep(0.2)
        raise Failure(f"{len(entries)} entries not accepted within {within:.0f} s")

    def membership(self, request: Request, within: float = 180.0) -> tuple[int, Response]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            leader = self.leader()
            if leader is not None:
                r = self.request(leader, request, timeout=within)
                if r is not None and r.accepted:
                    return leader, r
            time.sleep(0.5)
        raise Failure(f"{type(request).__name__} not accepted within {within:.0f} s")

    # ------------------------------------------------------------------------------------------ logs

    def committed(self, i: int) -> list[tuple[int, int, bytes]]:
        """(term, value type, value) of each committed entry from 1, read from the node's files."""
        if self.kind[i] == "jraft":
            return read_jraft(self.dir(i))
        store = SQLiteLogStore(self.dir(i) / "log.db")
        try:
            stored = store.load()
        finally:
            store.close()  # it locks the file exclusively
        assert stored.snapshot is None, "a snapshot: compare from there (not needed below 5000 entries)"
        entries = stored.entries[: stored.hard_state.commit]
        return [(e.term, int(e.value_type), encode_value(e.value)) for e in entries]


def read_jraft(d: Path) -> list[tuple[int, int, bytes]]:
    """JRaft's committed log, read as its FileBasedSequentialLogStore reads it."""
    state = (d / "server.state").read_bytes()
    commit = struct.unpack_from(">q", state, 8)[0] if len(state) >= 20 else 0
    start = struct.unpack(">q", (d / "store.sti").read_bytes()[:8])[0]
    assert start == 1, "compacted: not expected below 5000 entries"
    raw_index = (d / "store.idx").read_bytes()
    index = [w for (w,) in struct.iter_unpack(">q", raw_index)]
    data = (d / "store.data").read_bytes()
    out = []
    for k in range(min(commit, len(index))):
        lo = index[k]
        hi = index[k + 1] if k + 1 < len(index) else len(data)
        if hi - lo < 9:
            raise Failure(f"{d.name}: corrupt store at index {k + 1} ({lo}..{hi})")
        term, value_type = struct.unpack_from(">qB", data, lo)
        out.append((term, value_type, data[lo + 9 : hi]))
    return out


class Failure(Exception):
    pass


def compare(farm: Farm, nodes: list[int], expect: list[bytes]) -> str:
    logs = {i: farm.committed(i) for i in nodes}
    longest = max(logs.values(), key=len)
    for i, log in logs.items():
        for k, (mine, ref) in enumerate(zip(log, longest, strict=False), start=1):
            if mine != ref:
                raise Failure(f"server {i} committed {mine[:2]} at index {k}, another {ref[:2]}")
    for i, log in logs.items():
        values = {v for _t, vt, v in log if vt == ValueType.APPLICATION}
        missing = [e for e in expect if e not in values]
        if missing:
            raise Failure(
                f"server {i} lacks {len(missing)} of the {len(expect)} entries (e.g. {missing[0]!r})"
            )
    return ", ".join(f"{i}:{len(log)}" for i, log in sorted(logs.items()))


# ------------------------------------------------------------------------------------------ scenarios


def values(tag: str, n: int) -> list[bytes]:
    return [json.dumps({"s": tag, "n": k}, separators=(",", ":")).encode() for k in range(n)]


def failover(farm: Farm, tag: str, notes: list[str]) -> None:
    leader, took = farm.wait_for_leader(30)
    notes.append(f"first leader {leader} ({farm.kind[leader]}) after {took:.1f} s")
    before = values(tag + "-a", 20)
    for v in before:
        farm.submit([v])
    time.sleep(3)
    farm.kill(leader)
    killed_at = time.monotonic()
    new, _ = farm.wait_for_leader(30)
    took = time.monotonic() - killed_at
    notes.append(f"killed it; leader {new} ({farm.kind[new]}) after {took:.1f} s")
    if took > 10:
        raise Failure(f"leader {took:.1f} s after the loss (> 10 s); " + "; ".join(notes))
    after = values(tag + "-b", 20)
    for v in after:
        farm.submit([v])
    time.sleep(6)
    survivors = farm.alive()
    farm.stop()
    notes.append("committed " + compare(farm, survivors, before + after))


def s_2jraft_1gf(farm: Farm, notes: list[str]) -> None:
    farm.add_jraft(1, [1, 2, 3])
    farm.add_jraft(2, [1, 2, 3])
    farm.add_garlicfarm(3, [1, 2, 3])
    failover(farm, "s1", notes)


def s_1jraft_2gf(farm: Farm, notes: list[str]) -> None:
    farm.add_jraft(1, [1, 2, 3])
    farm.add_garlicfarm(2, [1, 2, 3])
    farm.add_garlicfarm(3, [1, 2, 3])
    failover(farm, "s2", notes)


def s_jraft_joins_garlicfarm(farm: Farm, notes: list[str]) -> None:
    for i in (1, 2, 3):
        farm.add_garlicfarm(i, [1, 2, 3])
    farm.add_jraft(4, [4])  # started alone, as JRaft's addsrv script does: it elects itself
    farm.wait_for_leader(30)
    filled = values("s3", 1100)
    for k in range(0, len(filled), 100):
        farm.submit(filled[k : k + 100])
    time.sleep(6)  # the lone JRaft node has elected itself and committed its own configuration
    start = time.monotonic()
    by, _ = farm.membership(AddServerRequest(entries=(LogEntry(0, ClusterServer(4, farm.endpoint(4))),)))
    notes.append(
        f"JRaft 4 (own 1-entry log) added by {by} ({farm.kind[by]}) in {time.monotonic() - start:.1f} s"
    )
    later = values("s3-after", 10)
    for v in later:
        farm.submit([v])
    time.sleep(6)
    by, _ = farm.membership(RemoveServerRequest(entries=(LogEntry(0, ClusterServer(4)),)), within=60)
    deadline = time.monotonic() + 30
    while farm.exited(4) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    notes.append(f"removed by {by} ({farm.kind[by]}); JRaft 4 exit status {farm.exited(4)}")
    if farm.exited(4) is None:
        raise Failure("JRaft 4 did not leave after its removal; " + "; ".join(notes))
    gone = values("s3-gone", 5)
    for v in gone:
        farm.submit([v])
    time.sleep(3)
    farm.stop()
    notes.append("committed " + compare(farm, [1, 2, 3], filled + later + gone))
    notes.append("JRaft 4 " + compare(farm, [1, 2, 4], filled + later))


def s_garlicfarm_joins_jraft(farm: Farm, notes: list[str]) -> None:
    farm.add_jraft(1, [1, 2])
    farm.add_jraft(2, [1, 2])
    farm.add_garlicfarm(3, [1, 2])  # not a founder: waits to be invited
    leader, took = farm.wait_for_leader(30)
    notes.append(f"JRaft leader {leader} after {took:.1f} s")
    filled = values("s4", 300)
    for k in range(0, len(filled), 50):
        farm.submit(filled[k : k + 50])
    time.sleep(3)
    by, _ = farm.membership(AddServerRequest(entries=(LogEntry(0, ClusterServer(3, farm.endpoint(3))),)))
    notes.append(f"garlicfarm 3 added by {by} ({farm.kind[by]})")
    later = values("s4-after", 10)
    for v in later:
        farm.submit([v])
    time.sleep(8)
    farm.stop()
    notes.append("committed " + compare(farm, [1, 2, 3], filled + later))


def s_jraft_removes_garlicfarm(farm: Farm, notes: list[str]) -> None:
    """JRaft leads (the garlicfarm node times out after 5-10 s, JRaft after 3-5 s) and removes it."""
    farm.add_jraft(1, [1, 2, 3])
    farm.add_jraft(2, [1, 2, 3])
    farm.add_garlicfarm(3, [1, 2, 3], extra="[raft]\nelection_ticks = 100\nheartbeat_ticks = 10")
    leader, took = farm.wait_for_leader(30)
    notes.append(f"leader {leader} ({farm.kind[leader]}) after {took:.1f} s")
    first = values("s5", 10)
    for v in first:
        farm.submit([v])
    by, _ = farm.membership(RemoveServerRequest(entries=(LogEntry(0, ClusterServer(3)),)), within=60)
    notes.append(f"garlicfarm 3 removed by {by} ({farm.kind[by]})")
    time.sleep(5)
    later = values("s5-after", 10)
    for v in later:
        farm.submit([v])
    time.sleep(5)
    farm.stop()
    config = [e for e in farm.committed(1) if e[1] == ValueType.CONFIGURATION][-1]
    servers = decode_value(config[2], ValueType.CONFIGURATION, 0, len(config[2]))
    assert isinstance(servers, Configuration)
    if 3 in servers.ids():
        raise Failure("server 3 is still in the committed configuration")
    notes.append("committed " + compare(farm, [1, 2], first + later))


#: how long nothing reaches the lagging server after it restarts, in that scenario (s)
HELD_FOR = 20.0


def s_lagging_garlicfarm_restarts(farm: Farm, notes: list[str]) -> None:
    """The garlicfarm server dies, the JRaft pair commits on without it, and it comes back with its
    shorter log: it must not keep the farm leaderless (JRaft has no pre-vote: each election it starts
    makes the JRaft servers adopt its term and step down, while its log loses every vote)."""
    farm.add_jraft(1, [1, 2, 3])
    farm.add_jraft(2, [1, 2, 3])
    farm.add_garlicfarm(3, [1, 2, 3])
    leader, took = farm.wait_for_leader(30)
    notes.append(f"first leader {leader} ({farm.kind[leader]}) after {took:.1f} s")
    before = values("s6-a", 10)
    for v in before:
        farm.submit([v])
    farm.kill(3)
    during = values("s6-b", 30)
    for v in during:
        farm.submit([v])
    # It comes back where nothing reaches it for a while (its bridge stopped: the leader's heartbeats
    # and the JRaft servers' vote requests wait), so it campaigns, with a log the JRaft servers refuse.
    farm.hold_inbound(3, True)
    farm.start_garlicfarm(3)
    restarted = time.monotonic()
    # a leader within 10 s of every loss, watched for 30 s after the restart
    gaps: list[float] = []
    lost_at: float | None = None
    held = True
    while time.monotonic() - restarted < 30:
        if held and time.monotonic() - restarted > HELD_FOR:
            farm.hold_inbound(3, False)
            held = False
        leader_now = farm.leader()
        now = time.monotonic()
        if leader_now is None and lost_at is None:
            lost_at = now
        elif leader_now is not None and lost_at is not None:
            gaps.append(now - lost_at)
            lost_at = None
        if lost_at is not None and now - lost_at > 10:
            raise Failure(f"no leader for {now - lost_at:.1f} s after the lagging server restarted")
        time.sleep(0.1)
    if lost_at is not None:
        gaps.append(time.monotonic() - lost_at)
    notes.append(
        f"restarted the lagging garlicfarm server: {len(gaps)} leaderless stretch(es)"
        + (f", the longest {max(gaps):.1f} s" if gaps else "")
    )
    after = values("s6-c", 10)
    for v in after:
        farm.submit([v])
    time.sleep(6)
    farm.stop()
    notes.append("committed " + compare(farm, [1, 2, 3], before + during + after))


SCENARIOS: dict[str, Callable[[Farm, list[str]], None]] = {
    "2 JRaft + 1 garlicfarm, leader killed": s_2jraft_1gf,
    "1 JRaft + 2 garlicfarm, leader killed": s_1jraft_2gf,
    "JRaft joiner into a garlicfarm farm of > 1,000 entries, then removed": s_jraft_joins_garlicfarm,
    "garlicfarm joiner into a JRaft-led farm": s_garlicfarm_joins_jraft,
    "JRaft leader removes a garlicfarm server": s_jraft_removes_garlicfarm,
    "2 JRaft + 1 garlicfarm, the garlicfarm server restarts lagging": s_lagging_garlicfarm_restarts,
}


def jraft_command(classes: str | None) -> list[str]:
    if classes is None:
        return [sys.executable, "-m", "tests.interop.jraft_peer_server"]
    return ["java", "-cp", classes, "net.data.technology.jraft.App"]


def main() -> int:
    parser = argparse.ArgumentParser()
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--classes", help="the classpath of a compiled JRaft (dmprinter)")
    which.add_argument(
        "--model", action="store_true", help="JRaft-behaviour peers (tests/interop) instead of JRaft"
    )
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--base-port", type=int, default=28200)
    parser.add_argument("--only", help="run the scenarios whose title contains this")
    args = parser.parse_args()
    failed = 0
    for n, (title, scenario) in enumerate(SCENARIOS.items(), start=1):
        if args.only and args.only not in title:
            continue
        farm = Farm(args.work / f"scenario-{n}", jraft_command(args.classes), args.base_port + 100 * n)
        notes: list[str] = []
        started = time.monotonic()
        try:
            scenario(farm, notes)
            verdict = "PASS"
        except (Failure, AssertionError) as e:
            verdict, failed = f"FAIL: {e}", failed + 1
        finally:
            farm.stop()
        print(f"[{n}] {title}: {verdict} ({time.monotonic() - started:.0f} s)")
        for note in notes:
            print(f"    {note}")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
