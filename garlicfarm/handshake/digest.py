"""HTTP Digest (RFC 7616 SHA-256, RFC 2617 MD5), ``qop=auth`` only: response computation, and the
Digest meaning of challenges and credentials on top of :mod:`garlicfarm.handshake.authheader`.

Not supported, on purpose: ``-sess`` algorithms (nothing gained here, more state), ``auth-int`` (no
request bodies), ``userhash`` and ``username*`` (usernames are ASCII, see the configs), and the RFC 2069
form without ``qop`` (no ``nc``, so no replay protection).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping

import attrs

from garlicfarm.handshake.authheader import AuthItem, format_item
from garlicfarm.handshake.errors import CredentialsError

_HEX = frozenset("0123456789abcdefABCDEF")
QOP_AUTH = "auth"


class Algorithm(enum.Enum):
    """The two Digest algorithms offered; the value is the RFC's spelling."""

    SHA256 = "SHA-256"
    MD5 = "MD5"

    @classmethod
    def parse(cls, text: str | None) -> Algorithm | None:
        """The algorithm named by an ``algorithm`` parameter (absent means MD5, RFC 2617 §3.2.1), or
        ``None`` for anything else, ``-sess`` variants included."""
        if text is None:
            return cls.MD5
        return next((a for a in cls if a.value.lower() == text.lower()), None)

    def hexdigest(self, text: str) -> str:
        data = text.encode("utf-8")
        if self is Algorithm.MD5:
            # MD5 is what RFC 2617 peers speak; the flag only keeps FIPS builds from refusing it.
            return hashlib.md5(data, usedforsecurity=False).hexdigest()
        return hashlib.sha256(data).hexdigest()

    @property
    def hex_length(self) -> int:
        return 32 if self is Algorithm.MD5 else 64


def compute_response(
    algorithm: Algorithm,
    *,
    username: str,
    realm: str,
    password: str,
    method: str,
    uri: str,
    nonce: str,
    nc: str,
    cnonce: str,
    qop: str = QOP_AUTH,
) -> str:
    """The ``response`` parameter for ``qop=auth`` (RFC 7616 §3.4.1, RFC 2617 §3.2.2.1): lower-case hex.

    ``nc`` is the 8-hex-digit text as sent on the wire (the hash covers the text, not the number).
    """
    ha1 = algorithm.hexdigest(f"{username}:{realm}:{password}")
    ha2 = algorithm.hexdigest(f"{method}:{uri}")
    return algorithm.hexdigest(f"{ha1}:{nonce}:{nc}:{cnonce}:{qop}:{ha2}")


def format_nc(nc: int) -> str:
    return f"{nc:08x}"


@attrs.frozen
class Challenge:
    """A usable Digest challenge (``qop=auth`` offered, algorithm MD5 or SHA-256)."""

    realm: str
    nonce: str
    algorithm: Algorithm
    opaque: str | None = None
    stale: bool = False

    def to_header(self) -> str:
        params = [
            ("realm", self.realm, True),
            ("qop", QOP_AUTH, True),
            ("algorithm", self.algorithm.value, False),
            ("nonce", self.nonce, True),
        ]
        if self.opaque is not None:
            params.append(("opaque", self.opaque, True))
        if self.stale:
            params.append(("stale", "true", False))
        return format_item("Digest", params)

    @classmethod
    def from_item(cls, item: AuthItem) -> Challenge | None:
        """The challenge ``item`` carries, or ``None`` if it is not one we can answer."""
        if item.scheme != "digest":
            return None
        p = item.params
        algorithm = Algorithm.parse(p.get("algorithm"))
        qops = {q.strip().lower() for q in p.get("qop", "").split(",")}
        if algorithm is None or QOP_AUTH not in qops or "realm" not in p or not p.get("nonce"):
            return None
        return cls(p["realm"], p["nonce"], algorithm, p.get("opaque"), p.get("stale", "").lower() == "true")


@attrs.frozen
class DigestCredentials:
    """The parameters of an ``Authorization: Digest`` header, as sent (``nc`` keeps its text)."""

    username: str
    realm: str
    nonce: str
    uri: str
    algorithm: Algorithm
    nc: str
    cnonce: str
    response: str
    opaque: str | None = None
    qop: str = QOP_AUTH

    @property
    def nc_value(self) -> int:
        return int(self.nc, 16)

    def to_header(self) -> str:
        params = [
            ("username", self.username, True),
            ("realm", self.realm, True),
            ("uri", self.uri, True),
            ("algorithm", self.algorithm.value, False),
            ("nonce", self.nonce, True),
            ("nc", self.nc, False),
            ("cnonce", self.cnonce, True),
            ("qop", self.qop, False),
            ("response", self.response, True),
        ]
        if self.opaque is not None:
            params.append(("opaque", self.opaque, True))
        return format_item("Digest", params)

    @classmethod
    def answer(
        cls,
        challenge: Challenge,
        *,
        username: str,
        password: str,
        method: str,
        uri: str,
        nc: int,
        cnonce: str,
    ) -> DigestCredentials:
        """The credentials answering ``challenge`` for one request."""
        nc_text = format_nc(nc)
        response = compute_response(
            challenge.algorithm,
            username=username,
            realm=challenge.realm,
            password=password,
            method=method,
            uri=uri,
            nonce=challenge.nonce,
            nc=nc_text,
            cnonce=cnonce,
        )
        return cls(
            username,
            challenge.realm,
            challenge.nonce,
            uri,
            challenge.algorithm,
            nc_text,
            cnonce,
            response,
            challenge.opaque,
        )

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> DigestCredentials:
        """Check the parameters' presence and form; raises :class:`CredentialsError` saying what is wrong.

        Whether they are *right* (realm, uri, nonce, response) is the server's business.
        """
        missing = [
            name
            for name in ("username", "realm", "nonce", "uri", "response", "qop", "nc", "cnonce")
            if name not in params
        ]
        if missing:
            raise CredentialsError(f"missing {', '.join(missing)}")
        if params.get("userhash", "false").lower() != "false":
            raise CredentialsError("userhash is not supported")
        algorithm = Algorithm.parse(params.get("algorithm"))
        if algorithm is None:
            raise CredentialsError(f"unsupported algorithm {params['algorithm']!r}")
        if params["qop"].lower() != QOP_AUTH:
            raise CredentialsError(f"unsupported qop {params['qop']!r}")
        nc = params["nc"]
        if len(nc) != 8 or not set(nc) <= _HEX:
            raise CredentialsError(f"nc {nc!r} is not 8 hex digits")
        if int(nc, 16) == 0:
            raise CredentialsError("nc 00000000: a nonce count starts at 00000001 (RFC 7616 section 3.4)")
        if not params["cnonce"]:
            raise CredentialsError("empty cnonce")
        return cls(
            params["username"],
            params["realm"],
            params["nonce"],
            params["uri"],
            algorithm,
            nc,
            params["cnonce"],
            params["response"],
            params.get("opaque"),
            params["qop"],
        )
