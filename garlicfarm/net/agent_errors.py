"""The reason inside twisted.web's wrapper exceptions (ResponseFailed, ResponseNeverReceived,
RequestTransmissionFailed), which say only "a list of Failures": shared by the clients that talk HTTP
through an Agent (the console client, I2PControl)."""

from __future__ import annotations

from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.python.failure import Failure


def telling_cause(exc: BaseException) -> BaseException:
    """``exc``'s first wrapped reason that is not the lost connection following it (a timeout's
    cancellation, a TLS refusal), else its first, looking through nested wrappers; ``exc`` itself
    when it wraps nothing."""
    reasons = getattr(exc, "reasons", None) or []
    inner = [r.value for r in reasons if isinstance(r, Failure) and r.value is not None]
    if not inner:
        return exc
    lost = ConnectionLost | ConnectionDone
    return telling_cause(next((e for e in inner if not isinstance(e, lost)), inner[0]))
