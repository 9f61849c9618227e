"""``garlicfarm run/status/submit/add-server/remove-server``: operate a node and its farm."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from garlicfarm.admin.config import admin_config
from garlicfarm.app.schema import ignored_reason
from garlicfarm.config import ConfigError, NodeConfig, load_config
from garlicfarm.handshake import COMMIT_ACK
from garlicfarm.logs import LOG_LEVELS, log_observer
from garlicfarm.net.client import ClientError, FarmClient
from garlicfarm.net.endpoints import EndpointRefused, parse_network_endpoint
from garlicfarm.storage import StorageError
from garlicfarm.wire import (
    AddServerRequest,
    Application,
    ClientRequest,
    ClusterServer,
    LogEntry,
    RemoveServerRequest,
)

if TYPE_CHECKING:  # the console's client (twisted.web) is imported by the commands that use it
    from garlicfarm.admin.client import AdminClient


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default where it has one (not "default: None" on required options)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or action.default in (None, False):
            return action.help
        return super()._get_help_string(action)


class FarmCommandError(Exception):
    """A one-line error for the user; the command exits 1."""


def _config(args: argparse.Namespace) -> NodeConfig:
    try:
        return load_config(args.config)
    except ConfigError as e:
        raise FarmCommandError(str(e)) from None


def _run_reactor(job: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
    """Run ``job(reactor)`` to completion on the global reactor and return its result."""
    from twisted.internet import reactor

    box: list[Any] = []

    def start() -> None:
        d: Deferred[Any] = Deferred.fromCoroutine(job(reactor))
        d.addBoth(box.append).addBoth(lambda _: reactor.stop())

    reactor.callWhenRunning(start)
    reactor.run()
    if box and isinstance(box[0], Failure):
        error = box[0].value
        if isinstance(error, AlreadyMember):
            raise error
        if isinstance(error, ClientError | ConfigError | FarmCommandError) or _is_console_error(error):
            raise FarmCommandError(str(error))
        box[0].raiseException()
    return box[0] if box else None


def _is_console_error(error: BaseException | None) -> bool:
    from garlicfarm.admin.client import AdminClientError

    return isinstance(error, AdminClientError)


#: ``garlicfarm status`` (and ``members``, ``health``'s callers): the node knows no leader, or stopped
EXIT_NO_LEADER = 2


def run_status(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    config = _config(args)
    client = FarmClient(None, config, timeout=args.timeout)

    async def job(reactor: Any) -> dict[str, Any]:
        client.reactor = reactor
        return await client.status(args.endpoint)

    status = _run_reactor(job)
    if args.brief:
        members = ",".join(str(m["id"]) for m in status["members"])
        leader = "no leader" if status["leader"] is None else f"leader {status['leader']}"
        flags = "  REMOVED from the farm: stop it or add it back" if status.get("removed") else ""
        if status.get("stopped_by"):
            flags += f"  STOPPED: {status['stopped_by']}"
        if status.get("clock_warning"):
            flags += f"  CLOCK: {status['clock_skew_s']:+.0f} s off the farm's time"
        stdout.write(
            f"node {status['id']}: {status['role']:<13} term {status['term']:<4} {leader:<10}  "
            f"commit {status['commit_index']}  members [{members}]{flags}\n"
        )
    else:
        stdout.write(json.dumps(status, indent=2) + "\n")
    # a leader that loses its quorum steps down within an election timeout (check-quorum): no leader
    return 0 if status.get("leader") is not None and not status.get("stopped_by") else EXIT_NO_LEADER


def run_submit(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    config = _config(args)
    text = args.json if args.json != "-" else stdin.read()
    try:
        value = json.loads(text)
    except ValueError as e:
        raise FarmCommandError(f"not valid JSON: {e}") from None
    data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    request = ClientRequest(entries=(LogEntry(0, Application(data)),))
    client = FarmClient(None, config, timeout=args.timeout)

    async def job(reactor: Any) -> int:
        client.reactor = reactor
        response = await client.request_leader(request, "")  # main() names the command
        return response.next_index - 1

    index = _run_reactor(job)
    ignored = ignored_reason(data, config.cluster)
    if ignored is not None:  # committed all the same: say that it does nothing, and why
        sys.stderr.write(
            f"garlicfarm submit: warning: entry {index} is committed but ignored by the farm's application "
            f'({ignored}): its records are JSON objects with "cluster": {json.dumps(config.cluster)} '
            '(status records, admin commands: docs/protocol.md, "Application layer")\n'
        )
    if COMMIT_ACK in client.leader_features:
        stdout.write(f"{index}\n")  # a garlicfarm leader answers once the entry committed
    else:
        # JRaft answers accepted=1 once it has appended: the entry may still be lost
        stdout.write(f"{index} appended, not known to be committed (the leader answers on append)\n")


class AlreadyMember(Exception):
    """add-server of a server that is a member at that endpoint already: nothing to do (exit 0)."""


def _not_yet_member(members: list[dict[str, Any]], server: int, endpoint: str) -> None:
    """Raise unless ``server`` is new: :class:`AlreadyMember` at the same endpoint (exit 0), a
    :class:`FarmCommandError` at another (exit 1)."""
    current = {int(m["id"]): m.get("endpoint") for m in members}
    if server not in current:
        return
    if current[server] == endpoint:
        raise AlreadyMember(f"server {server} is already a member (at {endpoint}): nothing to do")
    raise FarmCommandError(
        f"add server {server}: it is already a member, at {current[server]}, not {endpoint} "
        "(remove-server it first to move it)"
    )


def run_add_server(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    config = _config(args)
    try:
        parse_network_endpoint(args.endpoint)  # what the leader accepts: refuse a typo here, plainly
    except EndpointRefused as e:
        raise FarmCommandError(f"add server {args.id}: {e}") from None
    console = None if args.raft else _console(config, args.timeout)
    try:
        if console is not None:
            answer = _add_by_console(config, console, args.id, args.endpoint)
            stdout.write(f"server {args.id} added (by the leader, server {answer['result']['by_leader']})\n")
        else:
            _add_by_raft(config, args)
            stdout.write(f"server {args.id} added\n")
    except AlreadyMember as e:
        stdout.write(f"{e}\n")


def _add_by_console(config: NodeConfig, console: AdminClient, server: int, endpoint: str) -> Any:
    async def job(reactor: Any) -> Any:
        console.reactor = reactor
        overview = await console.get(_action_path(config, "").rstrip("/"))
        _not_yet_member(overview["members"], server, endpoint)
        return await console.post(_action_path(config, "add-member"), {"id": server, "endpoint": endpoint})

    return _run_reactor(job)


def _add_by_raft(config: NodeConfig, args: argparse.Namespace) -> None:
    request = AddServerRequest(entries=(LogEntry(0, ClusterServer(args.id, args.endpoint)),))
    _membership(config, request, f"add server {args.id}", args.timeout, new=(args.id, args.endpoint))


def run_remove_server(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    config = _config(args)
    console = None if args.raft else _console(config, args.timeout)
    if console is not None:
        answer = _ask_console(console, _action_path(config, "remove-member"), {"id": args.id})
        stdout.write(f"server {args.id} removed (by the leader, server {answer['result']['by_leader']})\n")
        return
    request = RemoveServerRequest(entries=(LogEntry(0, ClusterServer(args.id)),))
    _membership(config, request, f"remove server {args.id}", args.timeout, member=args.id)
    stdout.write(f"server {args.id} removed\n")


def _console(config: NodeConfig, timeout: float) -> AdminClient | None:
    """A client of this node's admin console, or None when the node has none (no ``[admin] listen``)."""
    from garlicfarm.admin.client import AdminClient
    from garlicfarm.admin.service import admin_url

    try:
        admin = admin_config(config)
        url = admin_url(admin, config.tls)
        if url is None:
            return None
        return AdminClient(None, url, admin.username, admin.password(), config.tls, timeout)
    except ConfigError as e:
        raise FarmCommandError(str(e)) from None


def _need_console(config: NodeConfig, timeout: float) -> AdminClient:
    console = _console(config, timeout)
    if console is None:
        raise FarmCommandError(f"{config.path}: this command needs the admin console ([admin] listen)")
    return console


def _ask_console(console: AdminClient, path: str, body: dict[str, Any] | None = None) -> Any:
    """GET ``path`` (``body`` None) or POST ``body`` to it; the console's JSON answer."""

    async def job(reactor: Any) -> Any:
        console.reactor = reactor
        return await (console.get(path) if body is None else console.post(path, body))

    return _run_reactor(job)


def _action_path(config: NodeConfig, action: str) -> str:
    return f"/api/farms/{quote(config.cluster, safe='')}/{action}"


def run_console_action(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    """exclude / include / publish / export-config / import-config, through the node's console."""
    config = _config(args)
    console = _need_console(config, args.timeout)
    if args.action in ("export-config", "overview"):
        path = _action_path(config, "config") if args.action == "export-config" else _action_path(config, "")
        stdout.write(json.dumps(_ask_console(console, path.rstrip("/")), indent=2) + "\n")
        return
    if args.action == "import-config":
        text = stdin.read() if args.file == "-" else _read(args.file)
        try:
            document = json.loads(text)
        except ValueError as e:
            raise FarmCommandError(f"{args.file}: not valid JSON: {e}") from None
        body: dict[str, Any] = {"config": document, "dry_run": args.dry_run}
    elif args.action in ("exclude", "include"):
        body = {"destination": args.destination}
    else:
        body = {}
    action = "import" if args.action == "import-config" else args.action
    if action == "step-down":
        answer = _run_reactor(lambda reactor: _step_down(reactor, config, console, args.timeout))
    else:
        answer = _ask_console(console, _action_path(config, action), body)
    stdout.write(json.dumps(answer["result"], indent=2) + "\n")


async def _step_down(reactor: Any, config: NodeConfig, console: AdminClient, timeout: float) -> Any:
    """Ask this node's console; on a follower, forward to the leader's console (found in the leader's
    status), with this node's console credentials. Fails naming the leader and its console."""
    from garlicfarm.admin.client import AdminClient, AdminClientError

    console.reactor = reactor
    path = _action_path(config, "step-down")
    try:
        return await console.post(path, {})
    except AdminClientError as e:
        leader = e.answer.get("leader")
        if not isinstance(leader, int) or leader == config.id or "not the leader" not in str(e):
            raise
        refused = e
    client = FarmClient(reactor, config, timeout=timeout)
    members = {int(m["id"]): m.get("endpoint") for m in (await client.status())["members"]}
    endpoint = config.peers.get(leader) or members.get(leader)
    if endpoint is None:
        raise FarmCommandError(f"{refused}; server {leader}'s endpoint is not known here")
    url = (await client.status(endpoint)).get("admin_url")
    if url is None:
        raise FarmCommandError(
            f"server {config.id} is not the leader; server {leader} leads (at {endpoint}) and has no "
            "console: run step-down with its configuration"
        )
    there = AdminClient(reactor, url, console.username, console.password, config.tls, timeout)
    try:
        return await there.post(path, {})
    except AdminClientError as e:
        raise FarmCommandError(
            f"server {config.id} is not the leader; server {leader} leads, its console at {url} answered: {e}"
        ) from None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise FarmCommandError(f"{path}: {e.strerror}") from None


def _membership(
    config: NodeConfig,
    request: Any,
    what: str,
    timeout: float,
    member: int | None = None,
    new: tuple[int, str] | None = None,
) -> None:
    """Ask the leader for a membership change; ``member``: a server that must be a member now;
    ``new``: a server (id, endpoint) that must not be (see :func:`_not_yet_member`)."""
    client = FarmClient(None, config, timeout=timeout)

    async def job(reactor: Any) -> None:
        client.reactor = reactor
        if new is not None:
            _not_yet_member((await client.status())["members"], *new)
        if member is not None:
            members = {int(m["id"]) for m in (await client.status())["members"]}
            if member not in members:
                listed = ", ".join(map(str, sorted(members)))
                raise FarmCommandError(f"{what}: server {member} is not a member (members: {listed})")
        await client.request_leader(request, what)

    _run_reactor(job)


def run_node(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> None:
    """Run one node in the foreground (what `twistd -n garlicfarm --config FILE` does)."""
    from twisted.internet import reactor
    from twisted.logger import globalLogBeginner

    from garlicfarm.process import settle_startup_objects, start_node
    from garlicfarm.service import GarlicFarmService

    config = _config(args)
    try:
        service = GarlicFarmService(config, reactor, exit_on_failure=True)
    except (ConfigError, StorageError) as e:
        raise FarmCommandError(str(e)) from None
    # stderr stays the terminal's: the command's last line is its one-line error, not a log event
    globalLogBeginner.beginLoggingTo(
        [log_observer(sys.stderr, args.log_level, args.log_format)], redirectStandardIO=False
    )
    refused: list[str] = []

    def start() -> None:
        # a busy port (Raft, [admin], [metrics]): one line and a non-zero exit, not a traceback
        error = start_node(service)
        if error is not None:
            refused.append(error)
            reactor.stop()
            return
        settle_startup_objects()

    reactor.callWhenRunning(start)
    reactor.addSystemEventTrigger("before", "shutdown", service.stopService)
    profile = os.environ.get("GARLICFARM_CPROFILE")
    if profile:
        _profiled(reactor, profile)
    reactor.run()
    if refused:
        raise FarmCommandError(refused[0])
    if service.failure is not None:
        raise FarmCommandError(f"node {config.id} stopped: {service.failure.getErrorMessage()}")


def _profiled(reactor: Any, out: str) -> None:
    """GARLICFARM_CPROFILE=FILE: profile the running node (cProfile) from 5 s after it started, past
    the imports and the start-up, until it stops; the statistics go to FILE (``python -m pstats``)."""
    import cProfile

    profiler = cProfile.Profile()
    reactor.callLater(5.0, profiler.enable)

    def dump() -> None:
        profiler.disable()
        profiler.dump_stats(out)

    reactor.addSystemEventTrigger("after", "shutdown", dump)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def add_parser(name: str, help: str) -> argparse.ArgumentParser:
        """A subcommand whose --help repeats its one-line help as the description and shows defaults."""
        return sub.add_parser(
            name, help=help, description=help[0].upper() + help[1:] + ".", formatter_class=_Formatter
        )

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--config", required=True, metavar="FILE", help="a node's TOML configuration")
        parser.add_argument(
            "--timeout", type=float, default=30.0, metavar="S", help="give up after S seconds"
        )

    run = add_parser("run", help="run one node in the foreground (like `twistd -n garlicfarm`)")
    run.add_argument("--config", required=True, metavar="FILE", help="the node's TOML configuration")
    run.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the least severe events to show",
    )
    run.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text lines, or one JSON object per event for log collectors",
    )
    run.set_defaults(run=run_node)

    status = add_parser(
        "status",
        help=f"print a running node's status as JSON; exit status {EXIT_NO_LEADER} when it knows no leader "
        "(no quorum) or has stopped",
    )
    common(status)
    status.add_argument("--endpoint", metavar="URI", help="ask this node instead (default: the config's own)")
    status.add_argument("--brief", action="store_true", help="one line instead of JSON")
    status.set_defaults(run=run_status)

    submit = add_parser(
        "submit",
        help="commit an Application entry through the leader; prints the committed index (or, from a "
        "leader that answers on append, as JRaft does, the index marked 'appended')",
    )
    common(submit)
    submit.add_argument("json", help="the entry, as JSON ('-' reads stdin)")
    submit.set_defaults(run=run_submit)

    add = add_parser("add-server", help="add a server to the farm (it is caught up first)")
    common(add)
    add.add_argument("--id", type=int, required=True, help="the new server's id")
    add.add_argument("--endpoint", required=True, help="its endpoint, e.g. tcp://127.0.0.1:22603")
    add.add_argument(
        "--raft", action="store_true", help="use the Raft client protocol, not the admin console"
    )
    add.set_defaults(run=run_add_server)

    remove = add_parser("remove-server", help="remove a server (possibly the leader) from the farm")
    common(remove)
    remove.add_argument("--id", type=int, required=True, help="the server's id")
    remove.add_argument(
        "--raft", action="store_true", help="use the Raft client protocol, not the admin console"
    )
    remove.set_defaults(run=run_remove_server)

    # Through the node's admin console (JSON API, docs/admin.md): the node needs [admin] listen.
    for action, text in (
        ("overview", "print the farm overview the console shows (members, lag, publisher, Meta LS)"),
        ("exclude", "exclude a destination hash from the Meta LS2 (committed through the leader)"),
        ("include", "include an excluded destination hash again"),
        ("publish", "publish the Meta LS2 again now (on the publisher's node)"),
        (
            "step-down",
            "hand the leadership to another member now, without an election timeout (on a follower's node: "
            "forwarded to the leader's console)",
        ),
        ("export-config", "print the farm's configuration (members, exclusions, settings) as JSON"),
        ("import-config", "bring the farm to an exported configuration (adds members, aligns exclusions)"),
    ):
        parser = add_parser(action, help=text + "; via the admin console")
        common(parser)
        if action in ("exclude", "include"):
            parser.add_argument("destination", help="the destination hash (base32 or base64)")
        if action == "import-config":
            parser.add_argument("file", help="the exported configuration ('-' reads stdin)")
            parser.add_argument("--dry-run", action="store_true", help="only show what would change")
        parser.set_defaults(run=run_console_action, action=action)
