"""The Authorization and WWW-Authenticate grammar at its edges (RFC 7235): optional whitespace
wherever the grammar allows it, a scheme alone, token68 forms, and every malformed form refused with
AuthHeaderSyntaxError and its words — never another exception, whatever the bytes."""

from __future__ import annotations

import pytest

from garlicfarm.handshake import AuthHeaderSyntaxError, Challenge
from garlicfarm.handshake.authheader import (
    AuthItem,
    parse_challenges,
    parse_credentials,
)


@pytest.mark.parametrize(
    ("value", "item"),
    [
        ("Digest", AuthItem("digest")),
        ('  Digest username="a"', AuthItem("digest", {"username": "a"})),
        ('Digest username = "a" , realm=b', AuthItem("digest", {"username": "a", "realm": "b"})),
        ('Digest username="a"  ', AuthItem("digest", {"username": "a"})),
        ("Bearer abc==  ", AuthItem("bearer", token68="abc==")),
        ('Digest a="q\\"uote\\\\"', AuthItem("digest", {"a": 'q"uote\\'})),
    ],
)
def test_credentials_with_the_whitespace_the_grammar_allows(value: str, item: AuthItem) -> None:
    assert parse_credentials(value) == item


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("Digest\tusername=a", "expected a space after the scheme"),
        ("Bearer abc, x", "text after token68"),
        ("Digest username x=1", "expected '=' after 'username'"),
        ('Digest a="x\\', "unterminated quoted-string"),  # a backslash with nothing after it
        ('Digest a="x', "unterminated quoted-string"),
        ('Digest a="x\x01"', "control character in quoted-string"),
        ('Digest a="x\x7fy"', "control character in quoted-string"),  # DEL
        ("Digest a=b, a=c", "duplicate parameter 'a'"),
        ("Digest a=b c=d", "expected ',' at character 11"),
    ],
)
def test_malformed_credentials_are_named(value: str, words: str) -> None:
    with pytest.raises(AuthHeaderSyntaxError) as info:
        parse_credentials(value)
    assert str(info.value) == words


def test_challenges_with_a_bare_scheme_and_whitespace() -> None:
    assert parse_challenges('Negotiate, Digest realm = "farm" ,nonce=n') == [
        AuthItem("negotiate"),
        AuthItem("digest", {"realm": "farm", "nonce": "n"}),
    ]
    assert parse_challenges("Basic") == [AuthItem("basic")]
    assert parse_challenges("Basic ") == [AuthItem("basic")]


def test_only_a_digest_challenge_is_answered() -> None:
    params = {"realm": "farm", "nonce": "n", "qop": "auth", "algorithm": "SHA-256"}
    assert Challenge.from_item(AuthItem("digest", params)) is not None
    assert Challenge.from_item(AuthItem("bearer", params)) is None


def test_names_are_read_whole_after_a_comma() -> None:
    assert parse_credentials("Digest a=b, Xa=1,XXb=2") == AuthItem(
        "digest", {"a": "b", "xa": "1", "xxb": "2"}
    )
    assert parse_challenges("Basic, Xyz realm=a") == [AuthItem("basic"), AuthItem("xyz", {"realm": "a"})]
