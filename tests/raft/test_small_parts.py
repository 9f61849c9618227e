"""The core's small parts on their own: the options' bounds at n and one past, what counts as a vote,
a follower's progress through its states, and the log's record of what is not yet written.
Statement deletion of raft/ found each of these unchecked by the tests of the whole core."""

from __future__ import annotations

from typing import Any

import pytest

from garlicfarm.raft.log import RaftLog
from garlicfarm.raft.progress import Progress, ProgressState
from garlicfarm.raft.types import PRE_VOTE_MARKER, TIMEOUT_NOW_MARKER, RaftOptions, is_vote_grant
from garlicfarm.wire import RequestVoteResponse
from tests.raft.harness import entry, log_of

# ------------------------------------------------------------------------------------ options


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ({"heartbeat_ticks": 0}, "need 1 <= heartbeat_ticks < election_ticks"),
        ({"election_ticks": 2, "heartbeat_ticks": 2}, "need 1 <= heartbeat_ticks < election_ticks"),
        ({"max_backoff_ticks": 0}, "max_backoff_ticks must be at least 1"),
        ({"campaign_rank_ticks": -1}, "campaign_rank_ticks must not be negative"),
        ({"max_entries_per_append": 0}, "max_entries_per_append and max_inflight must be at least 1"),
        ({"max_inflight": 0}, "max_entries_per_append and max_inflight must be at least 1"),
    ],
)
def test_options_out_of_bounds_are_refused_in_words(fields: dict[str, Any], refusal: str) -> None:
    with pytest.raises(ValueError, match=f"^{refusal}$"):
        RaftOptions(**fields)


def test_options_at_their_bounds_are_taken() -> None:
    options = RaftOptions(
        election_ticks=2,
        heartbeat_ticks=1,
        max_backoff_ticks=1,
        campaign_rank_ticks=0,
        max_entries_per_append=1,
        max_inflight=1,
    )
    assert (options.election_ticks, options.heartbeat_ticks, options.max_inflight) == (2, 1, 1)


# ------------------------------------------------------------------------------------ votes


@pytest.mark.parametrize(
    ("accepted", "next_index", "grant"),
    [
        (True, 0, True),
        (False, 0, False),
        (True, PRE_VOTE_MARKER, False),  # a pre-vote's grant promises nothing
        (True, TIMEOUT_NOW_MARKER, False),  # the answer to a TimeoutNow
    ],
)
def test_only_a_real_vote_granted_is_a_vote(accepted: bool, next_index: int, grant: bool) -> None:
    response = RequestVoteResponse(source=2, destination=1, term=3, next_index=next_index, accepted=accepted)
    assert is_vote_grant(response) is grant


# ------------------------------------------------------------------------------------ progress


def busy() -> Progress:
    """A follower's progress in the middle of everything: entries and a snapshot chunk in flight."""
    pr = Progress(10)
    pr.match, pr.next, pr.paused, pr.stalled_beats = 7, 12, True, 3
    pr.inflight.extend([9, 11])
    pr.snapshot_index, pr.snapshot_offset, pr.snapshot_expect = 5, 4096, 8192
    return pr


def test_a_snapshot_transfer_starts_from_its_first_byte() -> None:
    pr = busy()
    pr.become_snapshot(20)
    assert (pr.state, pr.snapshot_index, pr.snapshot_offset, pr.snapshot_expect) == (
        ProgressState.SNAPSHOT,
        20,
        0,
        None,
    )
    assert (pr.paused, list(pr.inflight)) == (False, [])


@pytest.mark.parametrize("state", [ProgressState.PROBE, ProgressState.REPLICATE])
def test_probing_or_replicating_starts_after_what_it_holds(state: ProgressState) -> None:
    pr = busy()
    (pr.become_probe if state is ProgressState.PROBE else pr.become_replicate)()
    assert (pr.state, pr.match, pr.next, pr.paused, list(pr.inflight)) == (state, 7, 8, False, [])


def test_an_acknowledgement_is_news_only_past_the_match() -> None:
    pr = busy()
    assert pr.acknowledge(7) is False  # a heartbeat's answer: the stall count stays
    assert (pr.match, pr.stalled_beats, list(pr.inflight)) == (7, 3, [9, 11])
    assert pr.acknowledge(9) is True
    assert (pr.match, pr.next, pr.stalled_beats, list(pr.inflight)) == (9, 12, 0, [11])
    assert pr.acknowledge(14) is True
    assert (pr.match, pr.next, list(pr.inflight)) == (14, 15, [])


# ------------------------------------------------------------------------------------ the log


def unwritten(log: RaftLog) -> int | None:
    return log.unpersisted_from  # (a call: mypy would keep the property narrowed)


def test_what_is_not_yet_written_starts_at_the_first_change() -> None:
    log = RaftLog(0, 0, log_of(1, 1, 1))
    assert unwritten(log) is None
    log.append([entry(2)])
    assert unwritten(log) == 4
    log.truncate_and_append(2, [entry(3), entry(3)])  # replaces 3 and 4 with two entries of term 3
    assert unwritten(log) == 3
    assert [log.term_at(i) for i in range(1, 6)] == [1, 1, 3, 3, None]
    assert log.take_unpersisted() == (3, [entry(3), entry(3)])
    assert unwritten(log) is None
