"""Edges of the admission path that a deleted statement showed untested: a stopped rate-limited log
leaves no delayed call behind, and a TLS peer that sent no certificate names no server."""

from __future__ import annotations

from twisted.internet.task import Clock
from twisted.logger import Logger

from garlicfarm.net.budget import RateLimitedLog
from garlicfarm.net.identity import certificate_name


def test_a_stopped_log_leaves_no_timer() -> None:
    clock = Clock()
    events = RateLimitedLog(clock, Logger(namespace="test"), 10.0)
    events.event("a", "first {n}", n=1)
    events.event("b", "second {n}", n=2)
    assert len(clock.getDelayedCalls()) == 2
    events.stop()
    assert clock.getDelayedCalls() == []
    assert events.open_windows == 0


class _NoCertificate:
    def getPeerCertificate(self) -> None:
        return None


def test_a_tls_peer_without_a_certificate_names_no_server() -> None:
    assert certificate_name(_NoCertificate()) is None
