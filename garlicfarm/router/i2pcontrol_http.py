"""One bounded HTTP POST with Twisted's Agent: a timeout on the whole exchange, a cap on the answer's
size, and failures turned into one exception whose message an operator can act on.

Used by the I2PControl client and by :class:`garlicfarm.router.publishers.URLPublisher`.
"""

from __future__ import annotations

from OpenSSL import SSL
from twisted.internet import error
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IConsumer, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.python.failure import Failure
from twisted.web import http
from twisted.web.client import ResponseDone
from twisted.web.http import PotentialDataLoss
from twisted.web.http_headers import Headers
from twisted.web.iweb import UNKNOWN_LENGTH, IAgent, IBodyProducer, IResponse
from zope.interface import implementer

from garlicfarm.net.agent_errors import telling_cause
from garlicfarm.tls.errors import UnpinnedPeer

MAX_RESPONSE = 1 << 20
#: Twisted's (private) exception for a body cut short; looked up, so that a Twisted without it only
#: loses the plainer words, never the import
_DATA_LOSS: type[BaseException] | tuple[()] = getattr(http, "_DataLoss", ())


class RequestFailed(Exception):
    """The exchange failed; the message says how (refused, timed out, TLS, HTTP status, size)."""


class HTTPStatusError(RequestFailed):
    def __init__(self, code: int, phrase: str, excerpt: str) -> None:
        detail = f": {excerpt}" if excerpt else ""
        super().__init__(f"HTTP {code} {phrase}{detail}")
        self.code = code


class ResponseTooLarge(RequestFailed):
    pass


@implementer(IBodyProducer)
class _Body:
    """The whole request body, written at once: I2PControl requests are a few hundred bytes."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.length = len(data)

    def startProducing(self, consumer: IConsumer) -> Deferred[None]:
        consumer.write(self._data)
        return succeed(None)

    def stopProducing(self) -> None:
        pass

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass


class _Collector(Protocol):
    """Collects a response body up to ``limit`` bytes; beyond that, drops the connection and fails."""

    def __init__(self, limit: int, expected: int | None) -> None:
        self.limit = limit
        self.expected = expected
        self.chunks: list[bytes] = []
        self.size = 0
        self.done: Deferred[bytes] = Deferred(lambda _: self._abort())

    def connectionMade(self) -> None:
        if self.expected is not None and self.expected > self.limit:
            self._fail(
                ResponseTooLarge(f"the answer is {self.expected} bytes, more than the {self.limit} allowed")
            )

    def dataReceived(self, data: bytes) -> None:
        if self.done.called:
            return
        self.size += len(data)
        if self.size > self.limit:
            self._fail(ResponseTooLarge(f"the answer is larger than the {self.limit} bytes allowed"))
            return
        self.chunks.append(data)

    def connectionLost(self, reason: Failure = Failure(error.ConnectionDone())) -> None:  # noqa: B008
        if self.done.called:
            return
        if reason.check(ResponseDone, PotentialDataLoss):  # PotentialDataLoss: no length, closed at the end
            self.done.callback(b"".join(self.chunks))
        else:
            self.done.errback(reason)

    def _fail(self, exc: Exception) -> None:
        self._abort()
        if not self.done.called:
            self.done.errback(exc)

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.stopProducing()  # type: ignore[attr-defined]  # the response body transport


def _excerpt(body: bytes) -> str:
    return body[:200].decode("utf-8", "replace").strip()


async def _exchange(agent: IAgent, url: str, body: bytes, content_type: bytes, max_size: int) -> bytes:
    headers = Headers({b"Content-Type": [content_type], b"Accept": [b"application/json"]})
    response: IResponse = await agent.request(b"POST", url.encode("ascii"), headers, _Body(body))
    length = response.length if response.length is not UNKNOWN_LENGTH else None
    collector = _Collector(max_size, length if isinstance(length, int) else None)
    response.deliverBody(collector)  # type: ignore[no-untyped-call]
    data = await collector.done
    if not 200 <= response.code < 300:
        phrase = response.phrase.decode("latin-1", "replace")
        raise HTTPStatusError(response.code, phrase, _excerpt(data))
    return data


def post(
    agent: IAgent,
    clock: IReactorTime,
    url: str,
    body: bytes,
    *,
    timeout: float,
    max_size: int = MAX_RESPONSE,
    content_type: bytes = b"application/json",
) -> Deferred[bytes]:
    """POST ``body`` to ``url``; the answer's body if the status is 2xx. Fails with :class:`RequestFailed`."""
    d = Deferred.fromCoroutine(_exchange(agent, url, body, content_type, max_size))
    # Cancelling the Agent's request wraps the CancelledError; say what happened instead.
    d.addTimeout(
        timeout, clock, onTimeoutCancel=lambda _, t: Failure(RequestFailed(f"no answer within {t:g} s"))
    )

    def failed(failure: Failure) -> Failure:
        if failure.check(RequestFailed):
            return failure
        raise RequestFailed(describe(failure.value, timeout)) from failure.value

    return d.addErrback(failed)


def describe(exc: BaseException | None, timeout: float | None = None) -> str:
    """A short account of why a request failed, looking inside Twisted's wrapper exceptions."""
    if exc is not None:
        exc = telling_cause(exc)
    if isinstance(exc, error.TimeoutError | error.ConnectingCancelledError):
        return f"no answer within {timeout:g} s" if timeout is not None else "timed out"
    if isinstance(exc, error.ConnectionRefusedError):
        return "connection refused (is the router running, with I2PControl enabled on that port?)"
    if isinstance(exc, error.DNSLookupError):
        return f"cannot resolve the host: {exc}"
    if isinstance(exc, UnpinnedPeer):
        return str(exc)
    if isinstance(exc, SSL.Error):
        return f"TLS failed: {exc}"
    if isinstance(exc, _DATA_LOSS):  # fewer bytes than the Content-Length, or an unfinished chunked body
        return "the server closed the connection in the middle of the answer"
    if isinstance(exc, error.ConnectionLost | error.ConnectionDone):
        return "the server closed the connection without a complete answer (not an HTTP(S) server?)"
    if isinstance(exc, error.ConnectError):
        return f"cannot connect: {exc}"
    return f"{type(exc).__name__}: {exc}"
