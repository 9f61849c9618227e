"""Entry point of the ``garlicfarm`` command."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from garlicfarm import __version__

#: the modules of the subcommands, in the order ``--help`` lists them
COMMAND_MODULES = ("inspect", "keys", "simulate", "chaos", "init", "farm", "members", "health", "pipeline")
#: commands whose process lives long (a node): only their own module is imported, not every other
#: command's (the simulator, the chaos test, the pipeline's options, the console's client...)
LEAN_COMMANDS = {"run": "farm"}
#: errors a command reports in one line (exit status 1), by module: "module.Class"
_ONE_LINE_ERRORS = (
    "garlicfarm.cli.inspect.InspectError",
    "garlicfarm.cli.farm.FarmCommandError",
    "garlicfarm.cli.init.InitError",
    "garlicfarm.pipeline.options.PipelineError",
)
#: failures that said what went wrong already (exit status 1, nothing more)
_SAID_ERRORS = ("garlicfarm.cli.simulate.SimulationFailed", "garlicfarm.cli.chaos.ChaosFailed")


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="garlicfarm",
        description="Garlic Farm (I2P proposal 150): Raft over authenticated TLS or I2P connections.",
    )
    parser.add_argument("--version", action="version", version=f"garlicfarm {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in modules:
        module = importlib.import_module(f"garlicfarm.cli.{name}")
        add = getattr(module, "add_parsers", None) or module.add_parser
        add(sub)
    return parser


def _loaded(names: Sequence[str]) -> tuple[type[BaseException], ...]:
    """The exception classes named, of the modules this process imported (the others cannot raise)."""
    found = []
    for dotted in names:
        module, _, name = dotted.rpartition(".")
        if module in sys.modules:
            found.append(getattr(sys.modules[module], name))
    return tuple(found)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    lean = LEAN_COMMANDS.get(argv[0]) if argv else None
    args = build_parser((lean,) if lean else COMMAND_MODULES).parse_args(argv)
    try:
        code = args.run(args, sys.stdin, sys.stdout)  # None: success; some commands return a status
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if isinstance(e, _loaded(_SAID_ERRORS)):
            return 1
        if isinstance(e, _loaded(_ONE_LINE_ERRORS)):
            sys.stderr.write(f"garlicfarm {args.command}: {e}\n")
            return 1
        if isinstance(e, OSError):
            sys.stderr.write(f"garlicfarm {args.command}: {e.strerror}: {e.filename}\n")
            return 1
        raise
    return int(code or 0)
