"""plain_reason: the one line a person reads when the client cannot reach a node (the CLI and the
console print it after ``cannot connect to URI: ``): a known cause in words, a TLS refusal with what
to check, and never a Failure's or a list's repr."""

from __future__ import annotations

import pytest
from OpenSSL import SSL
from twisted.internet import error as neterror
from twisted.internet.defer import CancelledError

from garlicfarm.net.client import plain_reason


def test_a_refused_connection_asks_whether_the_node_runs() -> None:
    assert plain_reason(neterror.ConnectionRefusedError()) == (
        "connection refused (is the node running and listening there?)"
    )


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (neterror.DNSLookupError("farm.invalid"), "cannot resolve the host name (farm.invalid)"),
        (neterror.DNSLookupError("a", "b"), "cannot resolve the host name (a)"),
        (neterror.DNSLookupError(), "cannot resolve the host name"),  # no empty brackets
        (neterror.DNSLookupError(""), "cannot resolve the host name"),
    ],
)
def test_a_host_name_that_does_not_resolve_is_named(error: neterror.DNSLookupError, reason: str) -> None:
    assert plain_reason(error) == reason


@pytest.mark.parametrize(
    "error", [neterror.TimeoutError(), neterror.ConnectingCancelledError(None), CancelledError()]
)
def test_every_kind_of_connect_timeout_reads_timed_out(error: BaseException) -> None:
    assert plain_reason(error) == "timed out"


@pytest.mark.parametrize(
    "known", ["certificate verify failed", "tlsv1 alert unknown ca", "no peer certificate"]
)
def test_a_tls_refusal_says_what_to_check(known: str) -> None:
    """OpenSSL's errors are lists of tuples: the known cause is picked out of one."""
    error = SSL.Error([("SSL routines", "", known)])
    assert plain_reason(error) == f"TLS refused: {known} (check [tls] ca and the peer's certificate)"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (SSL.Error([("SSL routines", "", "wrong version number")]), "Error"),  # a list's repr
        (neterror.ConnectError(string="[Failure instance: Traceback: boom]"), "ConnectError"),
        (RuntimeError("see the Failure above"), "RuntimeError"),
        (RuntimeError(), "RuntimeError"),  # nothing to say but its kind
    ],
)
def test_a_repr_or_an_empty_text_is_replaced_by_the_errors_kind(error: BaseException, reason: str) -> None:
    assert plain_reason(error) == reason


def test_any_other_error_is_its_own_text() -> None:
    assert plain_reason(neterror.ConnectionLost("the peer went away")) == (
        "Connection to the other side was lost in a non-clean fashion: the peer went away."
    )
    assert plain_reason(OSError("no route to host")) == "no route to host"
