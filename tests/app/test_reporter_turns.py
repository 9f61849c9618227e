"""The status reporter's turns (garlicfarm.app.publishing.StatusReporter) and the Meta LS role's
(MetaLSRole), on a task.Clock: failures counted and logged quietly until they last, a new leader
reported to at once (right after a report in flight), nothing after stop; the role publishing under
its master name, recording when its publisher delivered, stopping when another member is chosen."""

from __future__ import annotations

import json
import random
import types
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import Clock
from twisted.logger import LogEvent, LogLevel, capturedLogs, formatEvent

from garlicfarm.app.publishing import QUIET_FAILURES, MetaLSRole, NoLeader, StatusReporter
from garlicfarm.app.schema import LogMark
from garlicfarm.app.scoring import Lease
from garlicfarm.router.interface import LeafStatus, MetaLease, RouterStatus
from garlicfarm.wire import AppendEntriesResponse, Application, LogEntry

INTERVAL = 60.0


class Low(random.Random):
    """The lowest jitter: a retry after half its delay."""

    def random(self) -> float:
        return 0.0


class Reports:
    """Report attempts the test answers one by one."""

    def __init__(self) -> None:
        self.pending: list[Deferred[int]] = []

    async def report_once(self) -> int:
        d: Deferred[int] = Deferred()
        self.pending.append(d)
        return await d

    def succeed(self) -> None:
        self.pending.pop(0).callback(1)

    def fail(self, why: str = "no leader") -> None:
        self.pending.pop(0).errback(RuntimeError(why))


def reporter(clock: Clock) -> tuple[StatusReporter, Reports]:
    made = StatusReporter(
        clock,
        None,  # type: ignore[arg-type]  # report_once is the test's
        lambda leader, request: None,  # type: ignore[arg-type,return-value]
        None,  # type: ignore[arg-type]
        "farm",
        interval=INTERVAL,
        rng=Low(),
    )
    reports = Reports()
    made.report_once = reports.report_once  # type: ignore[method-assign]
    return made, reports


def started() -> tuple[Clock, StatusReporter, Reports]:
    """A reporter started on a new clock, its first report in flight."""
    clock = Clock()
    made, reports = reporter(clock)
    made.start()
    clock.advance(0)
    return clock, made, reports


def due(clock: Clock) -> list[float]:
    return [call.getTime() - clock.seconds() for call in clock.getDelayedCalls()]


@pytest.fixture
def logs() -> Iterator[Sequence[LogEvent]]:
    with capturedLogs() as events:
        yield events


def test_failures_in_a_row_are_counted_and_a_success_resets_them() -> None:
    clock, made, reports = started()
    for n in (1, 2, 3):
        reports.fail()
        assert (made.failures_in_a_row, made.failures) == (n, n)
        clock.advance(due(clock)[0])
    reports.succeed()
    assert (made.failures_in_a_row, made.failures, made.submitted) == (0, 3, 1)
    assert due(clock) == [INTERVAL]


def test_the_lowest_jitter_halves_a_retry() -> None:
    clock, _, reports = started()
    reports.fail()
    assert due(clock) == [0.25]  # the first retry's 0.5 s, jittered by 0.5


def test_failures_are_logged_at_debug_until_they_last(logs: Sequence[LogEvent]) -> None:
    clock, made, reports = started()
    for _ in range(QUIET_FAILURES):
        reports.fail("no leader yet")
        clock.advance(due(clock)[0])
    lines = [(e["log_level"], formatEvent(e)) for e in logs if "status report" in formatEvent(e)]
    assert lines == [
        (LogLevel.debug, "status report not committed (no leader yet); next try in 0.2s"),
        (LogLevel.debug, "status report not committed (no leader yet); next try in 0.5s"),
        (LogLevel.debug, "status report not committed (no leader yet); next try in 1.0s"),
        (LogLevel.info, "status report not committed (no leader yet); next try in 2.0s"),
    ]
    made.stop()


@pytest.mark.parametrize("outcome", ["succeed", "fail"])
def test_a_new_leader_during_a_report_gets_one_right_after_it(outcome: str) -> None:
    clock, made, reports = started()
    made.leader_changed()  # a report is in flight: never two at once
    assert due(clock) == [] and len(reports.pending) == 1
    getattr(reports, outcome)()
    assert due(clock) == [0]
    clock.advance(0)
    reports.succeed()
    assert due(clock) == [INTERVAL]  # once: the one after waits its interval


def test_a_new_leader_between_reports_is_reported_to_at_once() -> None:
    clock, made, reports = started()
    reports.succeed()
    clock.advance(10)
    made.leader_changed()
    assert due(clock) == [0]  # the interval's wait is cancelled, not left beside it
    clock.advance(0)
    assert len(reports.pending) == 1


def test_a_stopped_reporter_schedules_nothing() -> None:
    clock = Clock()
    made, reports = reporter(clock)
    made.leader_changed()  # not started yet
    assert due(clock) == [] and not made.running
    made.start()
    clock.advance(0)
    reports.succeed()
    made.stop()
    assert due(clock) == [] and not made.running
    made.leader_changed()
    assert due(clock) == []


# ------------------------------------------------------------------------------ the Meta LS role


class Hook:
    """A Meta LS publisher: delivers at once, or as ``answer`` says, or fails with ``error``."""

    def __init__(
        self,
        answer: Deferred[None] | None = None,
        error: Exception | None = None,
        stop_error: Exception | None = None,
    ) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.answer = answer
        self.error = error
        self.stop_error = stop_error

    def publish(self, master: str, contents: tuple[MetaLease, ...]) -> Deferred[None]:
        self.calls.append(("publish", master, contents))
        if self.error is not None:
            return fail(self.error)
        return self.answer if self.answer is not None else succeed(None)

    def stop(self, master: str) -> Deferred[None]:
        self.calls.append(("stop", master, None))
        return fail(self.stop_error) if self.stop_error is not None else succeed(None)


def role(hook: Hook, clock: Clock) -> tuple[MetaLSRole, Any]:
    shown = types.SimpleNamespace(publishing=False, last_published_ms=0, reactor=clock)
    return MetaLSRole(1, "farm-master", hook, shown), shown  # type: ignore[arg-type]


def test_the_role_publishes_under_its_master_and_records_when_it_was_delivered() -> None:
    clock = Clock()
    clock.advance(12.345)
    delivered: Deferred[None] = Deferred()
    hook = Hook(delivered)
    made, shown = role(hook, clock)
    made.changed(1, (Lease("d1", 2), Lease("d2", 1)))
    assert hook.calls == [("publish", "farm-master", (MetaLease("d1", 2), MetaLease("d2", 1)))]
    assert shown.publishing and shown.last_published_ms == 0  # not delivered yet
    delivered.callback(None)
    assert shown.last_published_ms == 12345


def test_the_role_publishes_again_only_when_the_leases_change() -> None:
    hook = Hook()
    made, _ = role(hook, Clock())
    made.changed(1, (Lease("d1", 1),))
    made.changed(1, (Lease("d1", 1),))
    assert len(hook.calls) == 1
    made.changed(1, (Lease("d1", 2),))
    assert [c[2] for c in hook.calls] == [(MetaLease("d1", 1),), (MetaLease("d1", 2),)]


def test_another_publisher_chosen_stops_this_one_and_it_may_come_back() -> None:
    hook = Hook()
    made, shown = role(hook, Clock())
    made.changed(1, (Lease("d1", 1),))
    made.changed(2, (Lease("d1", 1),))
    assert hook.calls[-1] == ("stop", "farm-master", None)
    assert not made.active and made.published is None and not shown.publishing
    made.changed(3, (Lease("d1", 1),))  # still not us: nothing more to stop
    assert len(hook.calls) == 2
    made.changed(1, (Lease("d1", 1),))  # chosen again: the same leases are published again
    assert [call[0] for call in hook.calls] == ["publish", "stop", "publish"]
    assert (made.active, shown.publishing) == (True, True)


def test_a_publisher_that_fails_to_stop_is_logged_and_no_longer_publishing(logs: Sequence[LogEvent]) -> None:
    made, shown = role(Hook(stop_error=OSError("I2CP gone")), Clock())
    made.changed(1, (Lease("d1", 1),))
    made.changed(2, (Lease("d1", 1),))
    failed = [e for e in logs if "hook failed" in formatEvent(e)]
    assert [formatEvent(e) for e in failed] == ["the Meta LS publisher hook failed to stop"]
    assert failed[0]["log_failure"].check(OSError)
    assert made.active is False and not shown.publishing


def test_a_publisher_that_fails_is_logged_and_kept_from_the_caller(logs: Sequence[LogEvent]) -> None:
    clock = Clock()
    clock.advance(5)
    hook = Hook(error=OSError("router gone"))
    made, shown = role(hook, clock)
    outcome: list[object] = []
    made.changed(1, (Lease("d1", 1),))
    made.republish().addBoth(outcome.append)  # type: ignore[union-attr]
    assert outcome == [None]
    failed = [e for e in logs if "hook failed" in formatEvent(e)]
    assert [formatEvent(e) for e in failed] == ["the Meta LS publisher hook failed to publish"] * 2
    assert all(e["log_failure"].check(OSError) for e in failed)
    assert shown.last_published_ms == 0


def test_a_report_the_leader_refuses_is_a_failure_not_a_submission() -> None:
    """A follower's report goes to the leader; a refusal (the leader naming itself, or no one) ends
    the try with NoLeader, never as a report sent."""
    made, sent = follower_reporter(2, [AppendEntriesResponse(source=2, destination=2, accepted=False)])
    result = submitted(made)
    assert [to for to, _ in sent] == [2]
    assert isinstance(result, NoLeader) and str(result) == "the leader did not take the report"


def follower_reporter(
    leader: int | None, answers: list[AppendEntriesResponse]
) -> tuple[StatusReporter, list[tuple[int, Any]]]:
    """A reporter on a follower that knows ``leader``; the leader's answers given in turn."""
    core = types.SimpleNamespace(is_leader=lambda: False, leader_id=leader)
    sent: list[tuple[int, Any]] = []

    def send(to: int, request: object) -> Deferred[AppendEntriesResponse]:
        sent.append((to, request))
        return succeed(answers.pop(0))

    made = StatusReporter(
        Clock(),
        types.SimpleNamespace(core=core),  # type: ignore[arg-type]
        send,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        "farm",
    )
    return made, sent


def submitted(made: StatusReporter, data: bytes = b"{}") -> object:
    outcome: list[object] = []
    Deferred.fromCoroutine(made.submit(data)).addErrback(lambda f: f.value).addBoth(outcome.append)
    [result] = outcome
    return result


def test_a_follower_s_report_goes_to_its_leader_as_one_entry_and_commits_at_the_index_before_next() -> None:
    made, sent = follower_reporter(2, [AppendEntriesResponse(source=2, accepted=True, next_index=8)])
    assert submitted(made, b'{"id":1}') == 7  # the index of the entry: next_index - 1
    [(to, request)] = sent
    assert to == 2 and request.entries == (LogEntry(0, Application(b'{"id":1}')),)  # its term: the leader's


def test_a_redirect_is_followed_once_more_then_the_report_fails() -> None:
    """A leader naming a third server: the follower asks again (its core may have learnt the new
    leader meanwhile), twice in all, then gives up on this report."""
    redirect = AppendEntriesResponse(source=2, destination=3, accepted=False)
    made, sent = follower_reporter(2, [redirect, redirect, redirect])
    result = submitted(made)
    assert isinstance(result, NoLeader) and str(result) == "the leader did not take the report"
    assert [to for to, _ in sent] == [2, 2]


def test_a_follower_that_knows_no_leader_says_so_and_sends_nothing() -> None:
    made, sent = follower_reporter(None, [])
    result = submitted(made)
    assert isinstance(result, NoLeader) and str(result) == "no leader known" and sent == []


def test_a_new_role_is_not_publishing_and_says_false_not_null() -> None:
    made, _ = role(Hook(), Clock())
    assert made.active is False  # the node's status says "publishing": false


class FailingRouter:
    async def router_status(self) -> Any:
        raise OSError("x" * 300)

    async def leaf_status(self) -> Any:
        raise AssertionError("not asked")


def test_a_router_that_does_not_answer_is_named_in_the_reporters_router_error_cut_at_200() -> None:
    made = StatusReporter(
        Clock(),
        None,  # type: ignore[arg-type]
        lambda leader, request: None,  # type: ignore[arg-type,return-value]
        FailingRouter(),  # type: ignore[arg-type]
        "farm",
    )
    assert made.router_error is None  # nothing known to be wrong yet
    outcome: list[object] = []
    Deferred.fromCoroutine(made.report_once()).addErrback(lambda f: f.value).addBoth(outcome.append)
    assert isinstance(outcome[0], OSError)
    said: Any = made.router_error  # (read again: mypy holds it None since the assert above)
    assert said == ("OSError: " + "x" * 300)[:200] and len(said) == 200


class FlakyRouter:
    """Fails its first status read, then answers."""

    def __init__(self) -> None:
        self.calls = 0

    async def router_status(self) -> RouterStatus:
        self.calls += 1
        if self.calls == 1:
            raise OSError("refused")
        return RouterStatus("OK ö", uptime_ms=5)

    async def leaf_status(self) -> list[LeafStatus]:
        return []


def test_a_report_carries_the_master_and_the_log_mark_and_a_router_that_answers_clears_its_error() -> None:
    submitted_data: list[bytes] = []

    async def submit(data: bytes) -> int:
        submitted_data.append(data)
        return 9

    mark = LogMark(7, "ab" * 32)
    made = StatusReporter(
        Clock(),
        types.SimpleNamespace(core=types.SimpleNamespace(id=3)),  # type: ignore[arg-type]
        lambda leader, request: None,  # type: ignore[arg-type,return-value]
        FlakyRouter(),  # type: ignore[arg-type]
        "farm",
        master="master.b32.i2p",
        log_mark=lambda: mark,
    )
    made.submit = submit  # type: ignore[method-assign]
    outcomes: list[object] = []
    for _ in range(2):
        Deferred.fromCoroutine(made.report_once()).addErrback(lambda f: f.value).addBoth(outcomes.append)
        if len(outcomes) == 1:
            assert made.router_error == "OSError: refused" and made.router_answered is False
    assert outcomes[1] == 9
    assert made.router_error is None and made.router_answered is True
    [data] = submitted_data
    record = json.loads(data)
    # compact, and UTF-8 as it is (the record's bytes are what the log and every member hold)
    assert data == json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    assert "OK ö".encode() in data
    assert record["id"] == 3 and record["meta"]["destination"] == "master.b32.i2p"
    assert record["log"] == {"index": 7, "digest": "ab" * 32}


def test_a_new_reporter_s_defaults_and_state_before_it_starts() -> None:
    made = StatusReporter(
        Clock(),
        None,  # type: ignore[arg-type]
        lambda leader, request: None,  # type: ignore[arg-type,return-value]
        None,  # type: ignore[arg-type]
        "farm",
    )
    assert (made.interval, made.max_backoff, made.publish_config, made.master) == (60.0, 15.0, "auto", None)
    assert made.publishing is False and made.last_published_ms == 0
    assert made.router_answered is False and made.router_error is None and made.running is False
    assert (made.submitted, made.failures, made.failures_in_a_row) == (0, 0, 0)
    made.stop()  # before start: nothing to cancel, nothing raised
    assert made.running is False


def test_a_reporter_started_again_while_its_report_is_in_flight_waits_for_it() -> None:
    """stop() then start() while a report is in flight: no second report beside it, and one chain
    of reports afterwards (the next right after the one in flight, then one an interval)."""
    clock, made, reports = started()
    made.stop()
    made.start()
    clock.advance(0)
    assert len(reports.pending) == 1 and due(clock) == []
    reports.succeed()
    assert due(clock) == [0]
    clock.advance(0)
    reports.succeed()
    assert due(clock) == [INTERVAL]


def test_a_reporter_started_twice_runs_one_chain_of_reports() -> None:
    clock = Clock()
    made, reports = reporter(clock)
    made.start()
    made.start()
    assert due(clock) == [0]
    clock.advance(0)
    assert len(reports.pending) == 1
    reports.succeed()
    assert due(clock) == [INTERVAL]
