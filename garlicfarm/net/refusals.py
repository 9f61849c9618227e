"""Why inbound connections were refused or dropped: a fixed set of reasons, counted.

The metrics endpoint labels its counter with these reasons only. Nothing a peer sends (an address, an
OpenSSL message, a user name) becomes a label: a flood of odd connections moves counts, never the
number of series.
"""

from __future__ import annotations

import enum


class Refusal(enum.StrEnum):
    #: the HTTP upgrade's Digest handshake was refused (wrong credentials, cluster, malformed request)
    HANDSHAKE = "handshake"
    #: the handshake did not complete within [limits] handshake_timeout
    HANDSHAKE_TIMEOUT = "handshake_timeout"
    #: the TLS handshake failed (no or an untrusted client certificate, an unpinned one, not TLS)
    TLS = "tls"
    #: pushed out of the unauthenticated budget by a newer connection ([limits] max_unauthenticated)
    EVICTED = "evicted"
    #: authenticated with the authenticated budget full ([limits] max_inbound)
    OVER_BUDGET = "over_budget"
    #: its partly received message would take the node past [limits] max_buffered
    BUFFER_BUDGET = "buffer_budget"
    #: a member's certificate with requests in another member's name
    IMPERSONATION = "impersonation"
    #: malformed messages, a response where a request belongs, too many requests pipelined
    PROTOCOL = "protocol"
    #: silent for [limits] idle_timeout
    IDLE = "idle"
    #: a request reached this node while it stops (or after it stopped)
    STOPPING = "stopping"
    #: anything else (a request that could not be answered, no answer in time)
    OTHER = "other"


class RefusalCounts:
    """Refused or dropped inbound connections per :class:`Refusal`, every reason present from 0."""

    def __init__(self) -> None:
        self._counts = dict.fromkeys(Refusal, 0)

    def count(self, reason: Refusal) -> None:
        self._counts[reason] += 1

    def read(self) -> dict[str, int]:
        return {str(reason): n for reason, n in self._counts.items()}
