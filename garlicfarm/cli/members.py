"""``garlicfarm members``: the farm's members in one table, from any node (like ``etcdctl member list
-w table`` with ``endpoint status``).

The node given (``--config``, or ``--endpoint``) is asked for its status; a follower that knows the
leader is followed to it, whose status has each member's lag (its match index) as well. Then every
member is asked for its own status (its role, term and commit index), unless ``--local``. The first
line says which node answered.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any, TextIO

import attrs
from twisted.internet.defer import Deferred, TimeoutError

from garlicfarm.cli.farm import EXIT_NO_LEADER, _config, _Formatter, _run_reactor
from garlicfarm.net.client import ClientError, FarmClient

#: seconds each member has to answer when asked for its own status
PROBE_SECONDS = 5.0


@attrs.frozen
class MemberView:
    """What ``members`` learnt: the status of the node that was asked, the status that answered for
    the farm (the leader's, when it could be reached; else the same), and each member's own status or
    why it could not be had."""

    asked: Mapping[str, Any]
    answered: Mapping[str, Any]
    #: why the leader could not be asked (None: it was, or is the asked node, or none is known)
    leader_error: str | None = None
    #: member id -> its own status, or the error asking it (an absent id: not asked)
    own: Mapping[int, Mapping[str, Any] | str] = attrs.field(factory=dict)


def endpoint_of(status: Mapping[str, Any], server: int, peers: Mapping[int, str]) -> str | None:
    """Where to reach ``server``: this configuration's [peers] entry wins (as the node's does), then
    the endpoint the farm's configuration advertises."""
    if server in peers:
        return peers[server]
    for member in status["members"]:
        if int(member["id"]) == server:
            endpoint: str | None = member.get("endpoint")
            return endpoint
    return None


async def gather(
    client: FarmClient, endpoint: str | None, peers: Mapping[int, str], probe: bool, probe_seconds: float
) -> MemberView:
    asked = await client.status(endpoint)
    answered, leader_error = asked, None
    leader = asked.get("leader")
    if asked["role"] != "leader" and leader is not None:
        where = endpoint_of(asked, int(leader), peers)
        try:
            if where is None:
                raise ClientError(f"server {leader} has no endpoint in the configuration")
            answered = await _within(client.status(where), client, probe_seconds)
        except ClientError as e:
            leader_error = str(e)
    own: dict[int, Mapping[str, Any] | str] = {}
    if probe:
        known = {int(asked["id"]): asked, int(answered["id"]): answered}
        ids = [int(m["id"]) for m in answered["members"]]
        waits = {
            i: _probe(client, endpoint_of(answered, i, peers), probe_seconds) for i in ids if i not in known
        }
        for i in ids:
            if i in known:
                own[i] = known[i]
            else:
                own[i] = await waits[i]
    return MemberView(asked, answered, leader_error, own)


async def _within(coroutine: Any, client: FarmClient, seconds: float) -> dict[str, Any]:
    d: Deferred[dict[str, Any]] = Deferred.fromCoroutine(coroutine)
    d.addTimeout(seconds, client.reactor)
    try:
        return await d
    except TimeoutError:
        raise ClientError(f"no answer within {seconds:g} s") from None


def _probe(client: FarmClient, endpoint: str | None, seconds: float) -> Deferred[Mapping[str, Any] | str]:
    """A member's own status, or a one-line reason; started now, awaited later (members in parallel)."""

    async def ask() -> Mapping[str, Any] | str:
        if endpoint is None:
            return "no endpoint known"
        try:
            return await _within(client.status(endpoint), client, seconds)
        except ClientError as e:
            return str(e)

    return Deferred.fromCoroutine(ask())


def rows(view: MemberView) -> list[dict[str, Any]]:
    """One row per member of the answering node's configuration (the JSON form of the table)."""
    answered = view.answered
    leader = answered.get("leader")
    result = []
    for member in answered["members"]:
        server = int(member["id"])
        own = view.own.get(server)
        reached = isinstance(own, Mapping)
        row: dict[str, Any] = {
            "id": server,
            "endpoint": member.get("endpoint"),
            "role": own["role"] if isinstance(own, Mapping) else ("leader" if server == leader else None),
            "term": own["term"] if isinstance(own, Mapping) else None,
            "commit_index": own["commit_index"] if isinstance(own, Mapping) else None,
            "match_index": member.get("match"),
            "lag": member.get("lag"),
            "report_age_s": member.get("report_age_s"),
            "health": member.get("health"),
            "reachable": reached if own is not None else None,
            "error": own if isinstance(own, str) else None,
        }
        if server == int(answered["id"]) and own is None:  # --local: the answering node knows itself
            row.update(role=answered["role"], term=answered["term"], commit_index=answered["commit_index"])
        result.append(row)
    return result


def describe(view: MemberView) -> str:
    """The first line: which node was asked, which answered, and what that means for the lag column."""
    asked, answered = view.asked, view.answered
    cluster = answered.get("cluster", "?")
    who = f"node {answered['id']} ({answered['role']}, term {answered['term']})"
    line = f"farm {cluster}: answered by {who}"
    if asked["id"] != answered["id"]:
        line += f", asked through node {asked['id']} ({asked['role']})"
    leader = answered.get("leader")
    if answered["role"] != "leader":
        if leader is None:
            line += "; no leader known: no lag"
        elif view.leader_error is None:
            line += f"; it is not the leader (node {leader} is): no lag"
        else:
            line += f"; the leader, node {leader}, did not answer ({view.leader_error}): no lag"
    return line


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds < 120:
        return f"{seconds:.0f}s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


HEADERS = ("ID", "ENDPOINT", "ROLE", "TERM", "COMMIT", "LAG", "LAST STATUS", "HEALTH")


def table(view: MemberView) -> str:
    body = []
    for row in rows(view):
        role = row["role"] or "?"
        if row["reachable"] is False:
            role = "unreachable"
        body.append(
            (
                str(row["id"]),
                _cell(row["endpoint"]),
                role,
                _cell(row["term"]),
                _cell(row["commit_index"]),
                _cell(row["lag"]),
                _age(row["report_age_s"]),
                _cell(row["health"]),
            )
        )
    widths = [max(len(r[i]) for r in [HEADERS, *body]) for i in range(len(HEADERS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in [HEADERS, *body]
    ]
    notes = [f"  node {row['id']}: {row['error']}" for row in rows(view) if row["error"]]
    return "\n".join([describe(view), *lines, *notes]) + "\n"


def as_json(view: MemberView) -> dict[str, Any]:
    return {
        "cluster": view.answered.get("cluster"),
        "asked": view.asked["id"],
        "answered_by": view.answered["id"],
        "leader": view.answered.get("leader"),
        "term": view.answered["term"],
        "leader_error": view.leader_error,
        "members": rows(view),
    }


def has_leader(status: Mapping[str, Any]) -> bool:
    """Whether a node's status shows a working farm: a leader known and the node not stopped."""
    return status.get("leader") is not None and not status.get("stopped_by")


def run_members(args: argparse.Namespace, stdin: TextIO, stdout: TextIO) -> int:
    config = _config(args)
    client = FarmClient(None, config, timeout=args.timeout)
    peers = dict(config.peers)

    async def job(reactor: Any) -> MemberView:
        client.reactor = reactor
        probe = min(args.timeout, PROBE_SECONDS)
        return await gather(client, args.endpoint, peers, not args.local, probe)

    view: MemberView = _run_reactor(job)
    if args.json:
        stdout.write(json.dumps(as_json(view), indent=2) + "\n")
    else:
        stdout.write(table(view))
    return 0 if has_leader(view.answered) else EXIT_NO_LEADER


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    text = "list the farm's members in a table: role, term, commit index, lag, last status report, health"
    parser = sub.add_parser(
        "members",
        help=text,
        description=text[0].upper() + text[1:] + ". The node asked (--config, or --endpoint) answers, or "
        "the leader it knows (only the leader knows each member's lag); then each member is asked for "
        f"its own role, term and commit index ({PROBE_SECONDS:g} s each; --local asks nobody else). "
        f"Exit status {EXIT_NO_LEADER} when no leader is known.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="a node's TOML configuration")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="give up after S seconds")
    parser.add_argument("--endpoint", metavar="URI", help="ask this node instead (default: the config's own)")
    parser.add_argument("--json", action="store_true", help="JSON instead of a table")
    parser.add_argument("--local", action="store_true", help="only what the node asked (or its leader) knows")
    parser.set_defaults(run=run_members)
