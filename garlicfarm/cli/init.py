"""``garlicfarm init DIR --nodes N``: write a ready local farm (CA, certificates, configurations).

User errors raise :class:`InitError` (one line, for stderr; the command exits 1).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TextIO

from garlicfarm.farminit import (
    DEFAULT_BASE_PORT,
    HOST,
    MAX_NODES,
    METRICS_OFFSET,
    FarmSpec,
    InitError,
    create_farm,
)

__all__ = ["InitError", "add_parser", "run_init"]


def run_init(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    spec = FarmSpec(
        directory=Path(args.directory),
        nodes=args.nodes,
        base_port=args.base_port,
        cluster=args.cluster,
        username=args.username,
        metrics_base_port=args.metrics_base_port,
        metrics=not args.no_metrics,
    )
    farm = create_farm(spec, force=args.force)
    stdout.write(f"wrote a farm of {spec.nodes} node(s) to {spec.directory}:\n")
    stdout.write("  ca.pem ca.key credentials master.dat\n")
    for k in range(1, spec.nodes + 1):
        metrics = f", metrics on http://{HOST}:{spec.metrics_port(k)}/metrics" if spec.metrics else ""
        stdout.write(
            f"  node-{k}.toml node-{k}.pem node-{k}.key node-{k}.dat node-{k}.session node-{k}-leaf.dat"
            f"  (listens on {spec.endpoint(k)}{metrics})\n"
        )
    stdout.write(
        "keep ca.key (it signs nodes added later), credentials, node-*.key and the .dat key files private "
        "(mode 0600);\nmaster.dat is the Meta LS2's master key: on a real farm keep it offline, members need "
        "only their node-K.dat\n"
    )
    if farm.stale:
        names = ", ".join(p.name for p in farm.stale)
        stdout.write(f"left from an earlier farm (old certificates, old Raft state; delete them): {names}\n")
    stdout.write("start each node, e.g. in its own terminal:\n")
    for config in farm.configs:
        stdout.write(f"  garlicfarm run --config {shlex.quote(str(config))}\n")
    stdout.write(f"then: garlicfarm status --config {shlex.quote(str(farm.configs[0]))}\n")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = sub.add_parser(
        "init",
        help="create a ready local farm: CA, node certificates, I2P keys and configurations",
        description="Create DIR with a farm CA (ca.pem, ca.key), a certificate and key per node "
        "(node-K.pem, node-K.key), a shared random password (credentials), the Meta LS2's master "
        "destination (master.dat), per node a transient signing key the master vouches for "
        "(node-K.dat), a presigned I2CP session (node-K.session) and a leaf destination for its "
        "stand-in router (node-K-leaf.dat), and a configuration per node (node-K.toml). "
        "Node K listens on 127.0.0.1 port P+K-1 with mutual TLS, and every "
        "node lists all N as its peers; it serves /metrics, /livez and /readyz on 127.0.0.1 port M+K-1 "
        "(plain HTTP on loopback). Keys and credentials are written with mode 0600. The command "
        "refuses to replace an existing farm and checks the ports are free now. Then start each node "
        "with 'garlicfarm run --config DIR/node-K.toml'.",
    )
    init.add_argument("directory", metavar="DIR", help="where to write the farm (created if missing)")
    init.add_argument(
        "--nodes", type=int, required=True, metavar="N", help=f"number of nodes, 1 to {MAX_NODES}"
    )
    init.add_argument(
        "--base-port",
        type=int,
        default=DEFAULT_BASE_PORT,
        metavar="P",
        help="node K listens on port P+K-1 (default %(default)s)",
    )
    init.add_argument(
        "--metrics-base-port",
        type=int,
        metavar="M",
        help=f"node K serves /metrics on port M+K-1 (default P+{METRICS_OFFSET})",
    )
    init.add_argument("--no-metrics", action="store_true", help="write no [metrics] table")
    init.add_argument(
        "--cluster", default="farm", help="cluster name, in the handshake's path (default %(default)s)"
    )
    init.add_argument(
        "--username", default="farm", help="the username nodes authenticate as (default %(default)s)"
    )
    init.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing farm in DIR (with a new CA) and skip the free-port check",
    )
    init.set_defaults(run=run_init)
