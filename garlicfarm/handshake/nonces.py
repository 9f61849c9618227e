"""Server-side nonce state, shared by every inbound connection of one server.

Nonces are stateless: ``base64url(issued_at ‖ random ‖ HMAC(secret, issued_at ‖ random))``. Issuing one
stores nothing, so a flood of request 1s costs no memory. Only nonces that were *used* with valid
credentials are tracked, with the ``nc`` values accepted, to refuse replays: each ``nc`` once, in any
order within ``NC_WINDOW`` of the highest (a sliding window, as IPsec's anti-replay: a client's
concurrent connections take ``nc`` 1, 2, 3 in order and may reach us in another). That table is
bounded: when full, the entry issued earliest is dropped and the issue time of everything dropped so
far becomes a watermark — an untracked nonce issued at or before it may have been used already, so it
is refused as stale (the client just takes the fresh challenge), never accepted. A replay is therefore
never admitted, whatever the eviction order.

Not thread-safe: one reactor thread drives it.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import heapq
import hmac
import math
import string
import struct
from collections.abc import Callable

from garlicfarm.handshake.errors import ConfigError

DEFAULT_NONCE_LIFETIME = 3600.0
DEFAULT_MAX_TRACKED = 10_000
#: how far below the highest ``nc`` accepted for a nonce an ``nc`` not seen yet is still accepted
NC_WINDOW = 64
_WINDOW_MASK = (1 << NC_WINDOW) - 1

_TIME = struct.Struct(">d")
_RANDOM_LEN = 12
_MAC_LEN = 16
_RAW_LEN = _TIME.size + _RANDOM_LEN + _MAC_LEN  # 36 bytes: a multiple of 3, so base64 has no padding
_TEXT_LEN = _RAW_LEN * 4 // 3
# base64url only: b64decode would also take '+' and '/', a second spelling of the same nonce, which the
# nc table (keyed by the text) would track apart.
_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")


class NonceVerdict(enum.Enum):
    ACCEPTED = "accepted"
    EXPIRED = "expired"  # ours, older than the lifetime
    FORGOTTEN = "forgotten"  # ours, but issued before the eviction watermark: treated as stale
    UNKNOWN = "unknown"  # not ours: forged, mangled, or from before a restart (another secret)
    REPLAYED = "replayed"  # nc accepted before for this nonce, or NC_WINDOW or more below the highest


class NonceRegistry:
    """Issues nonces and admits ``(nonce, nc)`` pairs.

    ``random_bytes`` is the randomness source (``os.urandom`` at the edge); ``lifetime`` is how long a
    nonce stays usable after it was issued (at least the hour the proposal asks clients to cache);
    ``max_tracked`` bounds the used-nonce table.
    """

    def __init__(
        self,
        random_bytes: Callable[[int], bytes],
        *,
        lifetime: float = DEFAULT_NONCE_LIFETIME,
        max_tracked: int = DEFAULT_MAX_TRACKED,
    ) -> None:
        if not (lifetime > 0 and math.isfinite(lifetime)):
            raise ConfigError(f"nonce lifetime must be a positive number of seconds, not {lifetime!r}")
        if max_tracked < 1:
            raise ConfigError(f"max_tracked must be at least 1, not {max_tracked!r}")
        self._random_bytes = random_bytes
        self._secret = random_bytes(32)
        self._lifetime = lifetime
        self._max_tracked = max_tracked
        #: per used nonce: the highest nc accepted, and a bit per nc below it (bit i: highest - i)
        self._accepted: dict[str, tuple[int, int]] = {}
        self._by_issue: list[tuple[float, str]] = []  # heap over the tracked nonces
        self._watermark = -math.inf
        # Clients echo it (RFC 7616 §3.3); it carries no state and the server does not check it.
        self.opaque = _b64(self._mac(b"opaque"))

    @property
    def lifetime(self) -> float:
        return self._lifetime

    def __len__(self) -> int:
        """Number of used nonces tracked."""
        return len(self._accepted)

    def issue(self, now: float) -> str:
        body = _TIME.pack(now) + self._random_bytes(_RANDOM_LEN)
        return _b64(body + self._mac(body))

    def issued_at(self, nonce: str) -> float | None:
        """When ``nonce`` was issued, or ``None`` if it is not a nonce of this registry."""
        if len(nonce) != _TEXT_LEN or not _ALPHABET.issuperset(nonce):
            return None
        # 48 base64url characters always decode, to 36 bytes
        raw = base64.urlsafe_b64decode(nonce)
        body, mac = raw[:-_MAC_LEN], raw[-_MAC_LEN:]
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        (issued,) = _TIME.unpack_from(body)
        return float(issued)

    def admit(self, nonce: str, nc: int, now: float) -> NonceVerdict:
        """Judge ``nonce`` with count ``nc``, recording ``nc`` if accepted.

        Call it only for credentials whose digest already checked out, so a forger cannot burn
        ``nc`` values and lock the real client out of its nonce.
        """
        issued = self.issued_at(nonce)
        if issued is None:
            return NonceVerdict.UNKNOWN
        # `not <=` rather than `>`: a NaN time counts as expired.
        if not now - issued <= self._lifetime:
            return NonceVerdict.EXPIRED
        self._forget_expired(now)
        seen = self._accepted.get(nonce)
        if seen is None:
            if issued <= self._watermark:
                return NonceVerdict.FORGOTTEN
            heapq.heappush(self._by_issue, (issued, nonce))
            self._accepted[nonce] = (nc, 1)
        else:
            highest, mask = seen
            if nc > highest:
                # (a jump past the window keeps no bit: no shift by up to 2**32 bits, a 512 MiB int)
                above = nc - highest
                kept = (mask << above) & _WINDOW_MASK if above < NC_WINDOW else 0
                self._accepted[nonce] = (nc, kept | 1)
            else:
                below = highest - nc
                if below >= NC_WINDOW or mask >> below & 1:
                    return NonceVerdict.REPLAYED
                self._accepted[nonce] = (highest, mask | 1 << below)
        while len(self._by_issue) > self._max_tracked:
            self._drop_oldest()
        return NonceVerdict.ACCEPTED

    def _forget_expired(self, now: float) -> None:
        while self._by_issue and not now - self._by_issue[0][0] <= self._lifetime:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        issued, nonce = heapq.heappop(self._by_issue)
        del self._accepted[nonce]
        # Also on expiry: should `now` ever step back, a purged nonce must not come back untracked.
        self._watermark = max(self._watermark, issued)

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self._secret, data, hashlib.sha256).digest()[:_MAC_LEN]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
