"""Client-side cache of Digest challenges, so that later connections go straight to request 2.

The proposal asks for at least an hour. An entry carries the last ``nc`` sent with its nonce; every
request 2 takes the next one, so ``nc`` strictly increases across connections as the server requires.
Shared by all outbound handshakes of one node; not thread-safe (one reactor thread drives it).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import attrs

from garlicfarm.handshake.digest import Challenge
from garlicfarm.handshake.errors import ConfigError

DEFAULT_CACHE_LIFETIME = 3600.0
DEFAULT_MAX_ENTRIES = 1024
MAX_NC = 0xFFFFFFFF

#: (Host header value, cluster name)
CacheKey = tuple[str, str]


@attrs.frozen
class CachedChallenge:
    challenge: Challenge
    stored_at: float
    last_nc: int = 0
    #: set when this challenge came from a ``stale=true`` 401: another stale answer then fails
    #: instead of looping
    retried_stale: bool = False


class ChallengeCache:
    """Challenges by ``(host, cluster)``, each kept ``lifetime`` seconds; at most ``max_entries``
    (least recently used dropped first)."""

    def __init__(
        self, *, lifetime: float = DEFAULT_CACHE_LIFETIME, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        if not (lifetime > 0 and math.isfinite(lifetime)):
            raise ConfigError(f"cache lifetime must be a positive number of seconds, not {lifetime!r}")
        if max_entries < 1:
            raise ConfigError(f"max_entries must be at least 1, not {max_entries!r}")
        self._lifetime = lifetime
        self._max_entries = max_entries
        self._entries: OrderedDict[CacheKey, CachedChallenge] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey, now: float) -> CachedChallenge | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not now - entry.stored_at <= self._lifetime:
            del self._entries[key]
            return None
        return entry

    def put(self, key: CacheKey, challenge: Challenge, now: float, *, retried_stale: bool = False) -> None:
        self._entries[key] = CachedChallenge(challenge, now, 0, retried_stale)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def take_nc(self, key: CacheKey, now: float) -> tuple[CachedChallenge, int] | None:
        """The live entry for ``key`` and the next ``nc`` to send with it (recorded as used at once,
        so it is never sent twice even if this connection fails), or ``None``."""
        entry = self.get(key, now)
        if entry is None:
            return None
        if entry.last_nc >= MAX_NC:  # nc space exhausted: start over with a fresh challenge
            del self._entries[key]
            return None
        entry = attrs.evolve(entry, last_nc=entry.last_nc + 1)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        return entry, entry.last_nc

    def confirm(self, key: CacheKey) -> None:
        """The entry just worked: a later stale answer may be retried again."""
        entry = self._entries.get(key)
        if entry is not None and entry.retried_stale:
            self._entries[key] = attrs.evolve(entry, retried_stale=False)

    def discard(self, key: CacheKey) -> None:
        self._entries.pop(key, None)
