"""The challenge cache forgets the least recently used host first: storing a challenge again counts as
a use, as taking a nonce count does."""

from __future__ import annotations

from garlicfarm.handshake import Algorithm, Challenge, ChallengeCache

T0 = 1_700_000_000.0
CHALLENGE = Challenge("farm", "nonce-1", Algorithm.SHA256, "op")
A, B, C = ("a:1", "farm"), ("b:1", "farm"), ("c:1", "farm")


def test_a_challenge_stored_again_is_kept_over_an_older_one() -> None:
    cache = ChallengeCache(max_entries=2)
    cache.put(A, CHALLENGE, T0)
    cache.put(B, CHALLENGE, T0)
    cache.put(A, CHALLENGE, T0 + 1)  # A is now the newest
    cache.put(C, CHALLENGE, T0 + 2)
    assert cache.get(A, T0 + 2) is not None
    assert cache.get(B, T0 + 2) is None


def test_a_challenge_used_is_kept_over_an_older_one() -> None:
    cache = ChallengeCache(max_entries=2)
    cache.put(A, CHALLENGE, T0)
    cache.put(B, CHALLENGE, T0)
    assert cache.take_nc(A, T0 + 1) is not None
    cache.put(C, CHALLENGE, T0 + 2)
    assert cache.get(A, T0 + 2) is not None
    assert cache.get(B, T0 + 2) is None
