"""``garlicfarm health``: is the node ready, as ``/readyz`` would answer, judged from its status (the
handshake's status header): the metrics listener need not be on.

The same checks as ``/readyz`` (:mod:`garlicfarm.metrics.health`); ``--verbose`` prints one line per
check (``[+]name ok`` or ``[-]name failed: reason``) and the verdict. Exit status 0 when ready, 1 when
not (or when the node cannot be asked: then the reason, on stderr). ``--wait S`` asks again every
second until the answer is ok or S seconds passed (systemd's ExecStartPost, after a start).
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from twisted.internet.task import deferLater

from garlicfarm.cli.farm import FarmCommandError, _config, _Formatter, _run_reactor
from garlicfarm.metrics.health import live_checks, ready_checks, render
from garlicfarm.metrics.snapshot import from_status
from garlicfarm.net.client import ClientError, FarmClient

#: ``garlicfarm health``: the node answered and is not ready
EXIT_NOT_READY = 1
#: seconds between two questions with --wait
WAIT_STEP = 1.0


def run_health(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    config = _config(args)
    client = FarmClient(None, config, timeout=args.timeout)

    kind = "livez" if args.live else "readyz"

    def judge(status: dict[str, Any]) -> tuple[int, str]:
        try:
            snapshot = from_status(status)
        except (KeyError, TypeError, ValueError):
            raise FarmCommandError(
                f"node {status.get('id', '?')} did not say what its health checks need (an older garlicfarm?)"
            ) from None
        checks = live_checks(snapshot) if args.live else ready_checks(snapshot)
        return render(kind, checks, verbose=args.verbose)

    async def job(reactor: Any) -> tuple[int, str]:
        client.reactor = reactor
        deadline = reactor.seconds() + args.wait
        while True:
            try:
                answer = judge(await client.status(args.endpoint))
            except ClientError:
                if reactor.seconds() >= deadline:
                    raise
            else:
                if answer[0] == 200 or reactor.seconds() >= deadline:
                    return answer
            await deferLater(reactor, WAIT_STEP)

    code, body = _run_reactor(job)
    stdout.write(body)
    return 0 if code == 200 else EXIT_NOT_READY


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = "say whether a running node is ready, as its /readyz would; exit status 0 when ready, 1 when not"
    parser = sub.add_parser(
        "health",
        help=text,
        description=text[0].upper() + text[1:] + ". Judged from the node's status (the metrics "
        "listener need not be on): running, a leader known, caught up applying, storage writable, the "
        "router answering (when asked for status). Prints 'ok', or the failed checks; --verbose lists "
        "every check.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="a node's TOML configuration")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="give up after S seconds")
    parser.add_argument("--endpoint", metavar="URI", help="ask this node instead (default: the config's own)")
    parser.add_argument("--verbose", action="store_true", help="one line per check, passed or failed")
    parser.add_argument("--live", action="store_true", help="the /livez checks instead (the reactor turns)")
    parser.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="S",
        help="ask again every second until the answer is ok (or the node answers at all) or S seconds "
        "passed, e.g. as a systemd ExecStartPost",
    )
    parser.set_defaults(run=run_health)
