"""``garlicfarm submit`` calls an index committed only when the leader says it answers on commit
(issue 15): a JRaft leader answers accepted=1 once it has appended."""

from __future__ import annotations

import argparse
import asyncio
import io
from typing import Any

import pytest

from garlicfarm.cli import farm
from garlicfarm.handshake import COMMIT_ACK, PRE_VOTE
from garlicfarm.wire import AppendEntriesResponse


class _FakeClient:
    features: frozenset[str] = frozenset()

    def __init__(self, _reactor: Any, _config: Any, timeout: float = 30.0) -> None:
        self.leader_features: frozenset[str] = frozenset()

    async def request_leader(self, _request: Any, _what: str) -> AppendEntriesResponse:
        self.leader_features = self.features
        return AppendEntriesResponse(source=1, destination=1, term=3, next_index=42, accepted=True)


@pytest.mark.parametrize(
    ("features", "printed"),
    [
        (frozenset({PRE_VOTE, COMMIT_ACK}), "41\n"),
        (frozenset(), "41 appended, not known to be committed (the leader answers on append)\n"),
    ],
    ids=["garlicfarm-leader", "jraft-leader"],
)
def test_submit_says_appended_unless_the_leader_acks_commits(
    features: frozenset[str], printed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = type("Client", (_FakeClient,), {"features": features})
    monkeypatch.setattr(farm, "FarmClient", client)
    monkeypatch.setattr(farm, "_config", lambda _args: argparse.Namespace(cluster="farm"))
    monkeypatch.setattr(farm, "_run_reactor", lambda job: asyncio.run(job(None)))
    out = io.StringIO()
    farm.run_submit(argparse.Namespace(json='{"a": 1}', timeout=5.0), io.StringIO(), out)
    assert out.getvalue() == printed
