"""HTTP Digest for the console, on the handshake's own pieces: :func:`compute_response`,
:class:`DigestCredentials` and :class:`NonceRegistry` (nc replay checks), with SHA-256 offered first
and MD5 second (browsers may only speak MD5).

Each farm brings one credential; a user is whoever's digest matches, and may see the farms whose
credential matched (two farms sharing a username but not a password stay apart).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

import attrs

from garlicfarm.handshake import authheader
from garlicfarm.handshake.digest import Algorithm, Challenge, DigestCredentials, compute_response
from garlicfarm.handshake.errors import AuthHeaderSyntaxError, CredentialsError
from garlicfarm.handshake.nonces import NonceRegistry, NonceVerdict

REALM = "garlicfarm-admin"
# Hashed for an unknown user, so that "unknown user" costs the same as "wrong password".
_DUMMY_PASSWORD = "\x00garlicfarm-no-such-user"  # noqa: S105 - never matches


@attrs.frozen
class Credential:
    farm: str
    username: str
    password: str = attrs.field(repr=False)


@attrs.frozen
class User:
    name: str
    farms: frozenset[str]


@attrs.frozen
class Refused:
    """Why a request is not authenticated; ``stale`` tells the client to retry with a fresh nonce."""

    reason: str
    stale: bool = False


class DigestGuard:
    def __init__(self, nonces: NonceRegistry, realm: str = REALM) -> None:
        self.nonces = nonces
        self.realm = realm

    def challenges(self, now: float, stale: bool = False) -> list[str]:
        """``WWW-Authenticate`` values: SHA-256 first, then MD5, one fresh nonce."""
        nonce = self.nonces.issue(now)
        return [
            Challenge(self.realm, nonce, algorithm, self.nonces.opaque, stale).to_header()
            for algorithm in (Algorithm.SHA256, Algorithm.MD5)
        ]

    def authenticate(
        self,
        authorization: str | None,
        method: str,
        uri: str,
        credentials: Iterable[Credential],
        now: float,
    ) -> User | Refused:
        if authorization is None:
            return Refused("no credentials")
        if authheader.credentials_scheme(authorization) != "digest":
            return Refused("not Digest")
        try:
            c = DigestCredentials.from_params(authheader.parse_credentials(authorization).params)
        except (AuthHeaderSyntaxError, CredentialsError) as e:
            return Refused(f"bad credentials: {e}")
        if c.realm != self.realm:
            return Refused(f"realm {c.realm!r}")
        if c.uri != uri:
            return Refused(f"uri {c.uri!r} is not the request target")
        candidates = [k for k in credentials if k.username == c.username]
        farms = frozenset(k.farm for k in candidates if self._matches(c, method, k.password))
        if not candidates:
            self._matches(c, method, _DUMMY_PASSWORD)
            return Refused(f"unknown user {c.username!r}")
        if not farms:
            return Refused(f"wrong password for user {c.username!r}")
        # Only now, with the digest proven, may the nonce's nc state change.
        verdict = self.nonces.admit(c.nonce, c.nc_value, now)
        if verdict is not NonceVerdict.ACCEPTED:
            # REPLAYED is stale too, as in the handshake: an nc far behind a browser's later parallel
            # requests (or a true repeat), from a client that has just proved it knows the password.
            return Refused(f"{verdict.value} nonce", stale=True)
        return User(c.username, farms)

    def _matches(self, c: DigestCredentials, method: str, password: str) -> bool:
        expected = compute_response(
            c.algorithm,
            username=c.username,
            realm=c.realm,
            password=password,
            method=method,
            uri=c.uri,
            nonce=c.nonce,
            nc=c.nc,
            cnonce=c.cnonce,
            qop=c.qop,
        )
        return hmac.compare_digest(expected.encode("ascii"), c.response.lower().encode("utf-8"))
