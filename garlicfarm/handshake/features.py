"""Optional protocol features, offered in a header JRaft never sends.

Both sides name what they speak beyond JRaft's protocol: the initiator in its requests, the server in
its 101. A peer that sends no such header (JRaft behind a handshake bridge, an older garlicfarm) speaks
none of them, and gets plain JRaft behaviour.
"""

from __future__ import annotations

FEATURES_HEADER = "GarlicFarm-Features"
#: RequestVoteRequest with commitIndex 2^64-1 is a pre-vote (docs/raft.md)
PRE_VOTE = "pre-vote"
#: a leader answers a ClientRequest with accepted=1 only once the entry *committed* (JRaft answers
#: once it has appended; a client that does not see this feature cannot call the index committed)
COMMIT_ACK = "commit-ack"
#: leadership transfer: RequestVoteRequests with commitIndex 2^64-3 (TimeoutNow) and 2^64-2 (a vote for
#: the server a leader handed over to), see docs/raft.md
TRANSFER = "transfer"
#: what this implementation speaks
OUR_FEATURES: tuple[str, ...] = (PRE_VOTE, COMMIT_ACK, TRANSFER)


def parse_features(value: str | None) -> frozenset[str]:
    """The features in a header value: comma-separated tokens, case-insensitive; junk is ignored."""
    if not value:
        return frozenset()
    return frozenset(token.strip().lower() for token in value.split(",") if token.strip())


def format_features(features: tuple[str, ...] = OUR_FEATURES) -> str:
    return ", ".join(features)
