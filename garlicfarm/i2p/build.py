"""From the farm's algorithm to a signed Meta LS2: leaves' hashes, costs, dates. Pure: ``now`` is given.

Weight to cost: the algorithm weighs a leaf 1..100, heavier is better; a MetaLease's cost is one byte,
lower is preferred. ``cost = 100 - weight``, so weight 100 is cost 0 and weight 1 is cost 99.
"""

from __future__ import annotations

from collections.abc import Sequence

from garlicfarm.i2p.destination import Destination
from garlicfarm.i2p.encoding import b32decode
from garlicfarm.i2p.errors import I2PFormatError
from garlicfarm.i2p.keys import PrivateKeyFile
from garlicfarm.i2p.metals import MAX_EXPIRES, MetaLease, MetaLeaseSet

#: below this many seconds left on the offline signature a member warns (log, console, status)
OFFLINE_WARNING_S = 7 * 86_400


def cost(weight: int) -> int:
    return 100 - max(1, min(100, weight))


def leaf_hash(leaf: str) -> bytes:
    """A leaf as configured or reported: a base64 Destination, or a ``.b32.i2p`` address."""
    text = leaf.strip()
    if text.lower().endswith(".b32.i2p"):
        return b32decode(text)
    return Destination.from_b64(text).hash


def check_leaf(leaf: str) -> str | None:
    """None when ``leaf`` is a destination or a b32 address, else why not."""
    try:
        leaf_hash(leaf)
    except I2PFormatError as e:
        return str(e)
    return None


class OfflineExpired(Exception):
    """The member's offline signature has expired: it may no longer sign for the master."""


def build(
    keys: PrivateKeyFile,
    leases: Sequence[tuple[str, int]],
    now: int,
    *,
    expires: int,
    last_published: int | None = None,
) -> MetaLeaseSet:
    """The Meta LS2 naming ``leases`` (leaf, weight), signed, ``published`` at ``now`` or one second
    past ``last_published`` when that is later (floodfills keep only the newest)."""
    if not 1 <= expires <= MAX_EXPIRES:
        raise ValueError(f"a Meta LS2 expires 1 to {MAX_EXPIRES} s after it is published")
    if keys.offline is not None and keys.offline.expires <= now:
        raise OfflineExpired(
            f"the offline signature of {keys.destination.b32} expired at {keys.offline.expires} "
            "(seconds since the epoch): this member may no longer sign its Meta LS2"
        )
    published = now if last_published is None else max(now, last_published + 1)
    end = published + expires
    entries = tuple(MetaLease(leaf_hash(leaf), cost(weight), end) for leaf, weight in leases)
    unsigned = MetaLeaseSet(keys.destination, published, expires, entries, offline=keys.offline)
    return unsigned.signed(keys.signer)
