"""A member's signing side of publishing: the farm's contents made into a signed Meta LS2 with this
member's key file, the last one kept for the console and the status, the offline signature watched.

Shared by the publishers that hand real Meta LS2 bytes on (the ``binary`` file, I2CP)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from garlicfarm.i2p.build import OFFLINE_WARNING_S, OfflineExpired, build, check_leaf
from garlicfarm.i2p.encoding import b32
from garlicfarm.i2p.keys import PrivateKeyFile
from garlicfarm.i2p.metals import MetaLeaseSet
from garlicfarm.router.interface import MetaLease
from garlicfarm.router.publishers import PublishError, write_atomically

_log = Logger()
#: a Meta LS2 is signed and sent again when this share of its lifetime is left
RENEW_AT = 0.5
#: the offline-expiry warning is logged at most this often (seconds)
WARN_EVERY_S = 3600.0
#: a member's reported publishing date further ahead of this clock than this is not followed
MAX_FARM_AHEAD_S = 60
#: leaves refused with a warning each, at most (then silently: the log stays bounded)
MAX_REMEMBERED = 256


@runtime_checkable
class SigningPublisher(Protocol):
    """A publisher that signs the Meta LS2 itself (i2cp, binary file): its signer, its live status."""

    signer: MetaLSSigner

    def status(self) -> dict[str, Any]: ...


class MetaLSSigner:
    def __init__(self, keys: PrivateKeyFile, expires: int, clock_s: Callable[[], float]) -> None:
        keys.check()
        self.keys = keys
        self.expires = expires
        self._clock_s = clock_s
        self.current: MetaLeaseSet | None = None
        self._last_published: int | None = None
        self._warned_at: float | None = None
        self._refused: set[str] = set()
        #: the newest ``published`` (s) any member reported in the farm's log, set by the node
        self.farm_newest: Callable[[], int | None] | None = None

    def sign(self, contents: Sequence[MetaLease]) -> MetaLeaseSet:
        """A new Meta LS2; :class:`OfflineExpired` once the member's offline signature is past. It is
        the live one (:attr:`current`, the status) only once its publisher delivered it:
        :meth:`published`."""
        now = self._clock_s()
        self.warn_if_expiring()
        leases = [(lease.destination, lease.weight) for lease in contents if self._is_leaf(lease.destination)]
        metals = build(self.keys, leases, int(now), expires=self.expires, last_published=self._newest(now))
        self._last_published = metals.published
        return metals

    def published(self, metals: MetaLeaseSet) -> None:
        """``metals`` reached its destination (the file, the router): it is the live one now."""
        self.current = metals

    def _newest(self, now: float) -> int | None:
        """The newest ``published`` to beat: this member's own, or the farm's (a handover must publish
        later than the member before it, whose clock may run ahead), unless that is implausibly far
        ahead of this clock (a member claiming 2100 must not push our dates there)."""
        newest = self._last_published
        farm = self.farm_newest() if self.farm_newest is not None else None
        if farm is not None and farm <= now + MAX_FARM_AHEAD_S:
            newest = farm if newest is None else max(newest, farm)
        return newest

    def _is_leaf(self, leaf: str) -> bool:
        """A leaf that is no destination (a member's made-up name) is left out, with one warning each."""
        why = check_leaf(leaf)
        if why is None:
            return True
        if leaf not in self._refused and len(self._refused) < MAX_REMEMBERED:
            self._refused.add(leaf)
            _log.warn(
                "Meta LS2: leaf {leaf} left out: {why} (a leaf is a base64 destination or a b32 address)",
                leaf=leaf[:80],
                why=why,
            )
        return False

    def withdraw(self) -> None:
        self.current = None

    def offline_left(self) -> float | None:
        offline = self.keys.offline
        return None if offline is None else offline.expires - self._clock_s()

    def warning(self) -> str | None:
        left = self.offline_left()
        if left is None or left > OFFLINE_WARNING_S:
            return None
        if left <= 0:
            return "the offline signature has expired: this member can no longer publish the Meta LS2"
        return f"the offline signature expires in {left / 86_400:.1f} days: make a new transient key"

    def warn_if_expiring(self) -> None:
        warning = self.warning()
        now = self._clock_s()
        if warning and (self._warned_at is None or now - self._warned_at >= WARN_EVERY_S):
            self._warned_at = now
            _log.warn("Meta LS2 of {master}: {warning}", master=self.keys.destination.b32, warning=warning)

    def status(self) -> dict[str, Any]:
        """What the console and ``status`` show of the live Meta LS2."""
        now = self._clock_s()
        offline = self.keys.offline
        out: dict[str, Any] = {
            "master": self.keys.destination.b32,
            "offlineExpires": offline.expires if offline else None,
            "warning": self.warning(),
            "published": None,
        }
        if self.current is not None:
            ls = self.current
            out.update(
                published=ls.published,
                expires=ls.expires_at,
                secondsLeft=max(0, int(ls.expires_at - now)),
                leases=[
                    {"hash": b32(lease.hash), "type": lease.entry_type, "cost": lease.cost, "end": lease.end}
                    for lease in ls.leases
                ],
            )
        return out


class BinaryFilePublisher:
    """``[publisher] kind = "file"``, ``format = "binary"``: the signed MetaLeaseSet's netDb bytes (no
    store type byte), written atomically as the JSON file is; ``stop`` removes the file, since a Meta
    LS2 cannot say "not publishing". Signed again (a new ``published``, a new expiry) when half of its
    lifetime is left, as the I2CP publisher sends it again: a Meta LS2 whose leases do not change must
    not expire in the file."""

    #: a failed renewal is tried again after this many seconds
    RETRY_S = 60.0

    def __init__(self, path: Path, keys: PrivateKeyFile, *, expires: int, reactor: IReactorTime) -> None:
        self.path = Path(path)
        self.reactor = reactor
        self.signer = MetaLSSigner(keys, expires, reactor.seconds)
        self._contents: tuple[MetaLease, ...] | None = None
        self._renewal: IDelayedCall | None = None

    def publish(self, master: str, contents: tuple[MetaLease, ...]) -> Deferred[None]:
        self._contents = contents
        try:
            self._write(contents)
        except PublishError as e:
            return fail(e)
        return succeed(None)

    def _write(self, contents: tuple[MetaLease, ...]) -> None:
        try:
            metals = self.signer.sign(contents)
            write_atomically(self.path, metals.encoded)
        except OfflineExpired as e:
            self._renew_in(self.RETRY_S)
            raise PublishError(str(e)) from None
        except OSError as e:
            # the file still holds the one written before, if any (the write is atomic), and so
            # does the status
            self._renew_in(self.RETRY_S)
            raise PublishError(f"{self.path}: cannot write the Meta LS2: {e.strerror or e}") from None
        self.signer.published(metals)
        self._renew_in(max(1.0, metals.expires * RENEW_AT))

    def _renew_in(self, seconds: float) -> None:
        if self._renewal is not None and self._renewal.active():
            self._renewal.cancel()
        self._renewal = self.reactor.callLater(seconds, self._renew)

    def _renew(self) -> None:
        self._renewal = None
        if self._contents is None:
            return
        try:
            self._write(self._contents)
        except PublishError as e:
            _log.warn("Meta LS2 not renewed (again in {retry:g} s): {why}", retry=self.RETRY_S, why=str(e))
        except Exception:  # never into the reactor: the next try is scheduled by _write or here
            _log.failure("Meta LS2 renewal failed unexpectedly")
            self._renew_in(self.RETRY_S)

    def stop(self, master: str) -> Deferred[None]:
        self._contents = None
        if self._renewal is not None and self._renewal.active():
            self._renewal.cancel()
        self._renewal = None
        self.signer.withdraw()
        try:
            self.path.unlink(missing_ok=True)
        except OSError as e:
            return fail(PublishError(f"{self.path}: cannot remove the Meta LS2: {e.strerror or e}"))
        return succeed(None)

    def status(self) -> dict[str, Any]:
        return {
            "state": "published" if self.signer.current else "idle",
            "router": str(self.path),
            **self.signer.status(),
        }
