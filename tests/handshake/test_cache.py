"""The client's challenge cache."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import Algorithm, CachedChallenge, Challenge, ChallengeCache, ConfigError
from garlicfarm.handshake.cache import MAX_NC
from tests.handshake.helpers import HOUR, T0

KEY = ("127.0.0.1:9001", "farm")
CHALLENGE = Challenge("farm", "n", Algorithm.SHA256, "op")


def test_entries_live_an_hour() -> None:
    cache = ChallengeCache()
    cache.put(KEY, CHALLENGE, T0)
    assert cache.get(KEY, T0 + HOUR) is not None
    assert cache.get(KEY, T0 + HOUR + 1) is None
    assert len(cache) == 0  # expired entries are dropped when seen


def test_take_nc_counts_up() -> None:
    cache = ChallengeCache()
    assert cache.take_nc(KEY, T0) is None
    cache.put(KEY, CHALLENGE, T0)
    assert [cache.take_nc(KEY, T0 + i) for i in range(3)] == [
        (CachedChallenge(CHALLENGE, T0, n), n) for n in (1, 2, 3)
    ]


def test_exhausted_nc_starts_over() -> None:
    cache = ChallengeCache()
    cache.put(KEY, CHALLENGE, T0)
    cache._entries[KEY] = CachedChallenge(CHALLENGE, T0, MAX_NC - 1)  # skip 4 billion connections
    assert cache.take_nc(KEY, T0) is not None
    assert cache.take_nc(KEY, T0) is None
    assert len(cache) == 0


def test_bounded_least_recently_used() -> None:
    cache = ChallengeCache(max_entries=2)
    for host in "abc":
        cache.put((host, "farm"), CHALLENGE, T0)
    assert cache.get(("a", "farm"), T0) is None
    assert cache.take_nc(("b", "farm"), T0) is not None  # b is now the most recently used
    cache.put(("d", "farm"), CHALLENGE, T0)
    assert [cache.get((h, "farm"), T0) is not None for h in "bcd"] == [True, False, True]


def test_confirm_and_discard() -> None:
    cache = ChallengeCache()
    cache.put(KEY, CHALLENGE, T0, retried_stale=True)
    cache.confirm(KEY)
    entry = cache.get(KEY, T0)
    assert entry is not None
    assert not entry.retried_stale
    cache.discard(KEY)
    cache.discard(KEY)
    cache.confirm(KEY)
    assert cache.get(KEY, T0) is None


@pytest.mark.parametrize("kwargs", [{"lifetime": 0}, {"max_entries": 0}])
def test_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        ChallengeCache(**kwargs)  # type: ignore[arg-type]
