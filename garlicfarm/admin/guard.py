"""Cross-site request forgery defences for the console's actions.

A browser attaches cached Digest credentials to any request for our origin, whoever's page sends it,
so an action also needs what another site cannot have or forge:

- an ``X-CSRF-Token`` header carrying the token from ``GET /api/session`` (another origin cannot read
  that response, and cannot add a custom header to a cross-origin request without a CORS preflight,
  which we never grant);
- no foreign ``Origin`` (and no ``Sec-Fetch-Site: cross-site``): a browser sends ``Origin`` with
  every POST; command-line clients send none;
- a JSON ``Content-Type``, which a plain HTML form cannot send.

A token is ``<window>.<mac>``: the number of the time window it was issued in (``window`` seconds
long, an hour by default) and an HMAC of the user name and that number under a per-process secret.
It is accepted in its own window and the next, so a token lives between one and two windows; no
server-side session is kept, and every token is useless once the process restarts. A token whose MAC
is right but whose window is over is *expired* (the page reloads its session and says so), any other
is *wrong*.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from collections.abc import Callable, Collection
from typing import Literal

CSRF_HEADER = "X-CSRF-Token"
#: how long a token's window is by default: a token lives between one and two of them
CSRF_WINDOW = 3600.0

Verdict = Literal["valid", "expired", "wrong"]


class CsrfTokens:
    """Issues and checks the time-windowed tokens; ``clock`` gives the time (``reactor.seconds``)."""

    def __init__(self, secret: bytes, clock: Callable[[], float], window: float = CSRF_WINDOW) -> None:
        if not window > 0:
            raise ValueError(f"the CSRF window must be positive, not {window!r}")
        self._secret = secret
        self._clock = clock
        self.window = window

    def _now_window(self) -> int:
        return math.floor(self._clock() / self.window)

    def _mac(self, user: str, window: int) -> bytes:
        message = b"csrf\x00" + user.encode("utf-8") + b"\x00" + str(window).encode("ascii")
        mac = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac[:24])

    def token_for(self, user: str) -> str:
        window = self._now_window()
        return f"{window}." + self._mac(user, window).decode("ascii")

    def check(self, user: str, token: str | None) -> Verdict:
        """Whether ``token`` is ``user``'s and current ("valid"), was but its time is over ("expired"),
        or is not theirs at all ("wrong", also when missing or malformed)."""
        if token is None:
            return "wrong"
        number, _, mac = token.partition(".")
        if not (number.isascii() and number.isdigit() and 0 < len(number) <= 20):
            return "wrong"
        window = int(number)
        if not hmac.compare_digest(mac.encode("utf-8", "replace"), self._mac(user, window)):
            return "wrong"
        now = self._now_window()
        if window > now:
            return "wrong"  # not issued by this process's clock: a token from the future
        return "valid" if now - window <= 1 else "expired"

    def valid(self, user: str, token: str | None) -> bool:
        return self.check(user, token) == "valid"


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
