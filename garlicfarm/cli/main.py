"""Entry point of the ``garlicfarm`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from garlicfarm import __version__
from garlicfarm.cli import chaos, farm, health, init, inspect, keys, members, pipeline, simulate
from garlicfarm.pipeline.options import PipelineError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="garlicfarm",
        description="Garlic Farm (I2P proposal 150): Raft over authenticated TLS or I2P connections.",
    )
    parser.add_argument("--version", action="version", version=f"garlicfarm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    inspect.add_parsers(sub)
    keys.add_parsers(sub)
    simulate.add_parser(sub)
    chaos.add_parser(sub)
    init.add_parser(sub)
    farm.add_parsers(sub)
    members.add_parser(sub)
    health.add_parser(sub)
    pipeline.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.run(args, sys.stdin, sys.stdout)  # None: success; some commands return a status
    except (simulate.SimulationFailed, chaos.ChaosFailed):
        return 1
    except (inspect.InspectError, farm.FarmCommandError, init.InitError, PipelineError) as e:
        sys.stderr.write(f"garlicfarm {args.command}: {e}\n")
        return 1
    except OSError as e:
        sys.stderr.write(f"garlicfarm {args.command}: {e.strerror}: {e.filename}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    return int(code or 0)
