"""``garlicfarm members``: the node's per-member details in its status, and the table built from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock

from garlicfarm.app.members import MAX_DETAILED, health
from garlicfarm.cli.members import MemberView, as_json, gather, table
from garlicfarm.net.client import ClientError
from tests.metrics.nodes import make_node

EP = {i: f"tcp://127.0.0.1:{22600 + i - 1}" for i in (1, 2, 3)}


def test_the_status_details_each_member(tmp_path: Path) -> None:
    node = make_node(tmp_path, MemoryReactorClock())
    status = node.status()
    (member,) = status["members"]
    assert member["id"] == 1 and member["endpoint"] == "tcp://127.0.0.1:9001"
    assert member["match"] == status["last_log_index"]
    assert member["lag"] == 0
    assert member["report_age_s"] is not None and member["report_age_s"] < 60
    assert member["health"] == "ok"
    # it travels in the 101's header: bounded, and plain JSON
    assert len(json.dumps(member)) < 200
    assert MAX_DETAILED >= 7


def test_health_words() -> None:
    assert health(None, 60) == "down"
    assert health(10, 60) == "ok"
    assert health(10, 60, lag=51) == "lagging"
    assert health(10, 60, net_status="FIREWALLED") == "lagging"
    assert health(200, 60) == "stale"
    assert health(10, 60, ahead=True) == "stale"
    assert health(400, 60) == "down"


def status(node: int, role: str, leader: int | None, lagging: bool = False) -> dict[str, Any]:
    members = []
    for i in (1, 2, 3):
        m: dict[str, Any] = {"id": i, "endpoint": EP[i], "report_age_s": 3.2, "health": "ok"}
        if role == "leader":
            m.update(match=100 if i != 3 or not lagging else 40, lag=0 if i != 3 or not lagging else 60)
            if i == 3 and lagging:
                m["health"] = "lagging"
        else:
            m.update(match=None, lag=None)
        members.append(m)
    return {
        "id": node,
        "role": role,
        "term": 4,
        "leader": leader,
        "commit_index": 100,
        "cluster": "farm",
        "members": members,
    }


class FakeClient:
    """FarmClient's status(), from a table of endpoint -> status or error."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.reactor = Clock()
        self.answers = answers
        self.asked: list[str | None] = []

    async def status(self, endpoint: str | None = None) -> dict[str, Any]:
        self.asked.append(endpoint)
        answer = self.answers[endpoint or EP[1]]
        if isinstance(answer, Exception):
            raise answer
        if answer is None:  # never answers
            d: Deferred[dict[str, Any]] = Deferred()
            return await d
        result: dict[str, Any] = answer
        return result


def run(work: Any) -> Any:
    """The result of a coroutine or Deferred that needs no more time to pass."""
    box: list[Any] = []
    d = work if isinstance(work, Deferred) else Deferred.fromCoroutine(work)
    d.addBoth(box.append)
    assert box, "finished without waiting"
    return box[0]


def test_a_follower_is_followed_to_the_leader_and_every_member_asked() -> None:
    client = FakeClient(
        {
            EP[1]: status(1, "follower", 2),
            EP[2]: status(2, "leader", 2, lagging=True),
            EP[3]: ClientError(f"cannot connect to {EP[3]}: connection refused"),
        }
    )
    view = run(gather(client, None, {}, True, 5.0))  # type: ignore[arg-type]
    assert isinstance(view, MemberView)
    assert view.answered["id"] == 2 and view.leader_error is None
    out = table(view)
    lines = out.splitlines()
    assert lines[0] == "farm farm: answered by node 2 (leader, term 4), asked through node 1 (follower)"
    assert lines[1].split() == ["ID", "ENDPOINT", "ROLE", "TERM", "COMMIT", "LAG", "LAST", "STATUS", "HEALTH"]
    assert lines[2].split() == ["1", EP[1], "follower", "4", "100", "0", "3s", "ago", "ok"]
    assert lines[3].split() == ["2", EP[2], "leader", "4", "100", "0", "3s", "ago", "ok"]
    assert lines[4].split() == ["3", EP[3], "unreachable", "-", "-", "60", "3s", "ago", "lagging"]
    assert lines[5] == f"  node 3: cannot connect to {EP[3]}: connection refused"
    document = as_json(view)
    assert document["answered_by"] == 2 and document["asked"] == 1 and document["leader"] == 2
    assert [m["lag"] for m in document["members"]] == [0, 0, 60]
    assert document["members"][2]["reachable"] is False


def test_a_leader_that_does_not_answer_leaves_the_followers_view() -> None:
    client = FakeClient({EP[1]: status(1, "follower", 2), EP[2]: None, EP[3]: status(3, "follower", 2)})
    d = Deferred.fromCoroutine(gather(client, None, {2: EP[2]}, False, 5.0))  # type: ignore[arg-type]
    client.reactor.advance(6)
    view = run(d)
    assert view.answered["id"] == 1
    first = table(view).splitlines()[0]
    assert first == (
        "farm farm: answered by node 1 (follower, term 4); the leader, node 2, did not answer "
        "(no answer within 5 s): no lag"
    )


def test_no_leader_known_says_so_and_local_asks_nobody_else() -> None:
    client = FakeClient({EP[1]: status(1, "candidate", None)})
    view = run(gather(client, None, {}, False, 5.0))  # type: ignore[arg-type]
    assert client.asked == [None]
    lines = table(view).splitlines()
    assert lines[0] == "farm farm: answered by node 1 (candidate, term 4); no leader known: no lag"
    assert lines[2].split()[:5] == ["1", EP[1], "candidate", "4", "100"]
    assert lines[3].split()[:5] == ["2", EP[2], "?", "-", "-"]
