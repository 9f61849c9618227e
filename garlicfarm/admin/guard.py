"""Cross-site request forgery defences for the console's actions.

A browser attaches cached Digest credentials to any request for our origin, whoever's page sends it,
so an action also needs what another site cannot have or forge:

- an ``X-CSRF-Token`` header carrying the token from ``GET /api/session`` (another origin cannot read
  that response, and cannot add a custom header to a cross-origin request without a CORS preflight,
  which we never grant);
- no foreign ``Origin`` (and no ``Sec-Fetch-Site: cross-site``): a browser sends ``Origin`` with
  every POST; command-line clients send none;
- a JSON ``Content-Type``, which a plain HTML form cannot send.

The token is an HMAC of the user name under a per-process secret: stable for a user for the life of
the process (no server-side session to keep), and useless once the process restarts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Collection

CSRF_HEADER = "X-CSRF-Token"


class CsrfTokens:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def token_for(self, user: str) -> str:
        mac = hmac.new(self._secret, b"csrf\x00" + user.encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:24]).decode("ascii")

    def valid(self, user: str, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(
            token.encode("utf-8", "replace"), self.token_for(user).encode("ascii")
        )


def origin_refusal(
    origin: str | None, fetch_site: str | None, scheme: str, host: str | None, allowed: Collection[str]
) -> str | None:
    """Why a state-changing request's origin is unacceptable, or None.

    ``allowed`` holds extra origins from ``[admin] origins``; the request's own ``scheme://Host`` is
    always allowed (a DNS-rebound name gets no further: the browser holds no credentials for it).
    """
    if fetch_site is not None and fetch_site.lower() not in ("same-origin", "none"):
        return f"Sec-Fetch-Site: {fetch_site}"
    if origin is None:
        return None
    own = f"{scheme}://{host}".lower() if host else None
    if origin.lower().rstrip("/") in allowed or origin.lower() == own:
        return None
    return f"Origin {origin!r} is not this console's ({own})"
