"""A ready local farm in one directory: a CA, one certificate and TOML configuration per node, credentials,
and the I2P keys of its Meta LS2.

Every node listens on 127.0.0.1 (node K on ``base_port + K - 1``) and lists all nodes as peers, so
starting each ``node-K.toml`` gives a working farm. Each also serves ``/metrics``, ``/livez`` and
``/readyz`` on loopback (node K on ``metrics_base_port + K - 1``, by default ``base_port + 50 + K - 1``).
``ca.key`` stays in the directory, so that an operator can sign certificates for nodes added later.

I2P: ``master.dat`` is the Meta LS2's master destination with its private key (an operator keeps it
offline; here it stays beside ``ca.key``); each member gets ``node-K.dat``, a transient key the master
vouches for until its offline signature expires, ``node-K.session``, an I2CP session config the master
signed (what i2pd needs), and ``node-K-leaf.dat``, a real leaf destination its stand-in router serves.
The member chosen to publish writes the signed Meta LS2 to ``node-K/metals.bin``.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import time
from collections.abc import Iterable
from pathlib import Path

import attrs

from garlicfarm.i2p.i2cp import SESSION_OPTIONS, SessionConfig
from garlicfarm.i2p.keys import PrivateKeyFile, create_master, create_transient
from garlicfarm.tls import issue_node, new_ca, write_certified_key, write_file

HOST = "127.0.0.1"
#: node K listens on 22600 + K - 1: in 22556-22762, a span with no IANA assignment (9001, the old
#: default, is Tor's ORPort, which an I2P router's host may well run); see docs/operations.md
DEFAULT_BASE_PORT = 22600
#: the metrics listeners follow the nodes' ports at this distance by default (the admin console that
#: scripts/run.sh adds is at +100)
METRICS_OFFSET = 50
MAX_NODES = 255
#: how long a member's transient key is valid (garlicfarm keys transient --days makes a new one)
TRANSIENT_DAYS = 90
#: the node files, in the order they are written
NODE_SUFFIXES = (".key", ".pem", ".dat", ".session", "-leaf.dat", ".toml")
SHARED = ("ca.key", "ca.pem", "credentials", "master.dat")

# The cluster name is a path segment of the handshake's request target (see garlicfarm.handshake.config).
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
# The username goes into Digest quoted-strings: printable ASCII, without the quote and backslash.
_USERNAME = re.compile(r"[ !#-\[\]-~]+")


class InitError(Exception):
    """A one-line error for the user (bad option, busy port, existing farm); nothing was written."""


@attrs.frozen
class FarmSpec:
    directory: Path
    nodes: int
    base_port: int = DEFAULT_BASE_PORT
    cluster: str = "farm"
    username: str = "farm"
    #: node K serves /metrics on this + K - 1 (None: base_port + METRICS_OFFSET)
    metrics_base_port: int | None = None
    #: write a [metrics] table per node
    metrics: bool = True

    def port(self, node: int) -> int:
        return self.base_port + node - 1

    def metrics_port(self, node: int) -> int:
        base = self.base_port + METRICS_OFFSET if self.metrics_base_port is None else self.metrics_base_port
        return base + node - 1

    def ports(self) -> list[int]:
        """Every port the farm's nodes listen on: the nodes', then their metrics listeners'."""
        nodes = range(1, self.nodes + 1)
        return [self.port(k) for k in nodes] + ([self.metrics_port(k) for k in nodes] if self.metrics else [])

    def endpoint(self, node: int) -> str:
        return f"tcp://{HOST}:{self.port(node)}"

    def node_files(self, node: int) -> list[Path]:
        return [self.directory / f"node-{node}{suffix}" for suffix in NODE_SUFFIXES]

    def files(self) -> list[Path]:
        """Every file :func:`create_farm` writes, in the order it writes them."""
        shared = [self.directory / name for name in SHARED]
        return shared + [f for k in range(1, self.nodes + 1) for f in self.node_files(k)]


@attrs.frozen
class Farm:
    spec: FarmSpec
    files: tuple[Path, ...]
    #: what ``--force`` left of an earlier farm: files of nodes beyond ``nodes``, and data directories
    stale: tuple[Path, ...] = ()

    @property
    def configs(self) -> tuple[Path, ...]:
        return tuple(f for f in self.files if f.suffix == ".toml")


def validate(spec: FarmSpec) -> None:
    if not 1 <= spec.nodes <= MAX_NODES:
        raise InitError(f"--nodes must be from 1 to {MAX_NODES}, not {spec.nodes}")
    if spec.base_port < 1 or spec.port(spec.nodes) > 65535:
        raise InitError(f"ports {spec.base_port}..{spec.port(spec.nodes)} do not fit in 1..65535")
    if spec.metrics:
        first, last = spec.metrics_port(1), spec.metrics_port(spec.nodes)
        if first < 1 or last > 65535:
            raise InitError(f"metrics ports {first}..{last} do not fit in 1..65535")
        if abs(first - spec.base_port) < spec.nodes:
            raise InitError(
                f"metrics ports {first}..{last} overlap the nodes' ports {spec.base_port}.."
                f"{spec.port(spec.nodes)}: give --metrics-base-port (or --no-metrics)"
            )
    if not _SEGMENT.fullmatch(spec.cluster) or spec.cluster in {".", ".."}:
        raise InitError(f"--cluster must be letters, digits or '._~-', not {spec.cluster!r}")
    if not _USERNAME.fullmatch(spec.username):
        raise InitError(f"--username must be printable ASCII without '\"' or '\\', not {spec.username!r}")


def busy_ports(ports: Iterable[int], host: str = HOST) -> list[int]:
    """The ports a server could not listen on now."""
    busy = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As Twisted's listenTCP does: connections in TIME_WAIT do not keep a server from listening.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError:
                busy.append(port)
    return busy


@attrs.frozen
class NodeI2P:
    """What a node's configuration names of the farm's I2P keys."""

    master_b32: str
    leaf_b64: str


def node_config(spec: FarmSpec, node: int, i2p: NodeI2P | None = None) -> str:
    """``node-K.toml``, as :func:`garlicfarm.config.load_config` reads it."""

    def q(value: str) -> str:
        return json.dumps(value)  # a JSON string of printable ASCII is a TOML basic string

    peers = "".join(f"{k} = {q(spec.endpoint(k))}\n" for k in range(1, spec.nodes + 1))
    return (
        f"# Garlic Farm node {node} of {spec.nodes}, written by `garlicfarm init`.\n"
        "# Relative paths are relative to this file's directory.\n"
        "\n[node]\n"
        f"id = {node}\n"
        f"cluster = {q(spec.cluster)}\n"
        f"endpoint = {q(spec.endpoint(node))}\n"
        "# A plain Twisted endpoint: the node adds TLS from [tls].\n"
        f"listen = {q(f'tcp:{spec.port(node)}:interface={HOST}')}\n"
        f"data_dir = {q(f'node-{node}')}\n"
        "\n[auth]\n"
        f"username = {q(spec.username)}\n"
        'password_file = "credentials"\n'
        "\n[tls]\n"
        'ca = "ca.pem"\n'
        f"cert = {q(f'node-{node}.pem')}\n"
        f"key = {q(f'node-{node}.key')}\n"
        + _metrics_table(spec, node)
        + "\n# The members the farm starts with: id = endpoint.\n"
        "[peers]\n"
        f"{peers}" + ("" if i2p is None else _i2p_tables(node, i2p))
    )


def _metrics_table(spec: FarmSpec, node: int) -> str:
    if not spec.metrics:
        return ""
    return (
        "\n# /metrics, /livez and /readyz for Prometheus and health checks, plain HTTP on loopback\n"
        "# (docs/operations.md, Monitoring). Off loopback: HTTPS and Basic auth.\n"
        f"[metrics]\nlisten = {spec.metrics_port(node)}\n"
    )


def _i2p_tables(node: int, i2p: NodeI2P) -> str:
    return (
        "\n# The Meta LS2 (docs/router.md). A stand-in router serves one leaf destination; when the\n"
        f"# farm chooses this member it signs the Meta LS2 with its transient key (node-{node}.dat) and\n"
        f'# writes it to node-{node}/metals.bin. With a real i2pd: kind = "i2cp",\n'
        f'# i2cp = "tcp:127.0.0.1:7654", session = "node-{node}.session".\n'
        f"[app]\nmaster = {json.dumps(i2p.master_b32)}\n"
        f'\n[router]\nkind = "static"\nleaves = [{json.dumps(i2p.leaf_b64)}]\n'
        "\n[publisher]\n"
        'kind = "file"\n'
        'format = "binary"\n'
        f"path = {json.dumps(f'node-{node}/metals.bin')}\n"
        f"keys = {json.dumps(f'node-{node}.dat')}\n"
    )


def _earlier(spec: FarmSpec) -> list[Path]:
    """What an earlier farm left in the directory: its files, and nodes' data directories (Raft state)."""
    if not spec.directory.is_dir():
        return []
    shared = [p for p in (spec.directory / n for n in SHARED) if p.exists()]
    return sorted([*shared, *spec.directory.glob("node-*")])


def _session(master: PrivateKeyFile) -> bytes:
    date_ms = int(time.time() * 1000)
    return SessionConfig.create(master.destination, master.signer, date_ms, SESSION_OPTIONS).encoded


def create_farm(spec: FarmSpec, *, force: bool = False) -> Farm:
    """Write the farm described by ``spec``. Without ``force``, refuses to replace an existing farm's
    files and to use ports that are busy now; with it, overwrites and does not check ports."""
    validate(spec)
    if spec.directory.exists() and not spec.directory.is_dir():
        raise InitError(f"{spec.directory} exists and is not a directory")
    if not force:
        earlier = _earlier(spec)
        if earlier:
            raise InitError(
                f"{spec.directory} already holds a farm ({earlier[0].name} exists); "
                "use another directory, or --force to replace it (a new CA: old certificates stop working)"
            )
        owner = {spec.port(k): f"node {k}" for k in range(1, spec.nodes + 1)}
        if spec.metrics:
            owner |= {spec.metrics_port(k): f"node {k}'s metrics" for k in range(1, spec.nodes + 1)}
        busy = busy_ports(spec.ports())
        if busy:
            which = ", ".join(f"{p} ({owner[p]})" for p in busy)
            verb = "port {} is" if len(busy) == 1 else "ports {} are"
            raise InitError(
                f"{verb.format(which)} in use on {HOST}; "
                "choose another --base-port, or --force to skip this check"
            )
    spec.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    d = spec.directory
    ca = new_ca(f"garlicfarm {spec.cluster} CA")
    write_certified_key(ca, d / "ca.pem", d / "ca.key", overwrite=force)
    write_file(d / "credentials", (secrets.token_urlsafe(32) + "\n").encode(), 0o600, overwrite=force)
    master = create_master(secrets.token_bytes)
    write_file(d / "master.dat", master.encoded, 0o600, overwrite=force)
    expires = int(time.time()) + TRANSIENT_DAYS * 86_400
    for k in range(1, spec.nodes + 1):
        key, cert, transient, session, leaf, config = spec.node_files(k)
        write_certified_key(issue_node(ca, f"node-{k}"), cert, key, overwrite=force)
        write_file(
            transient, create_transient(master, secrets.token_bytes, expires).encoded, 0o600, overwrite=force
        )
        write_file(session, _session(master), 0o644, overwrite=force)
        leaf_keys = create_master(secrets.token_bytes)
        write_file(leaf, leaf_keys.encoded, 0o600, overwrite=force)
        i2p = NodeI2P(master.destination.b32, leaf_keys.destination.b64)
        write_file(config, node_config(spec, k, i2p).encode(), 0o644, overwrite=force)
    written = spec.files()
    return Farm(spec, tuple(written), tuple(p for p in _earlier(spec) if p not in written))
