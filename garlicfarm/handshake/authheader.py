"""RFC 7235 syntax of ``WWW-Authenticate`` and ``Authorization`` values: schemes, auth-params,
quoted-strings. Scheme-agnostic; Digest meaning lives in :mod:`garlicfarm.handshake.digest`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from garlicfarm.handshake.errors import AuthHeaderSyntaxError

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68 = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_OWS = " \t"


@attrs.frozen
class AuthItem:
    """One challenge or credentials: the scheme (lower-cased) with either auth-params (names
    lower-cased) or a token68 (``Basic dXNlcjpwYXNz``)."""

    scheme: str
    params: Mapping[str, str] = attrs.field(factory=dict)
    token68: str | None = None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip(self, chars: str) -> bool:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in chars:
            self.pos += 1
        return self.pos > start

    def run_of(self, allowed: frozenset[str]) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in allowed:
            self.pos += 1
        return self.text[start : self.pos]

    def token(self) -> str:
        tok = self.run_of(_TCHAR)
        if not tok:
            raise AuthHeaderSyntaxError(f"expected a token at character {self.pos}")
        return tok

    def quoted_string(self) -> str:
        assert self.peek() == '"'
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            c = self.text[self.pos]
            self.pos += 1
            if c == '"':
                return "".join(out)
            if c == "\\":
                if self.pos >= len(self.text):
                    break
                c = self.text[self.pos]
                self.pos += 1
            if c != "\t" and (c < " " or c == "\x7f"):
                raise AuthHeaderSyntaxError("control character in quoted-string")
            out.append(c)
        raise AuthHeaderSyntaxError("unterminated quoted-string")

    def token68_then_end(self) -> str | None:
        """A token68 if one follows *and* ends the item; else ``None`` with the position unchanged."""
        start = self.pos
        tok = self.run_of(_TOKEN68)
        if tok:
            tok += self.run_of(frozenset("="))
            self.skip(_OWS)
            if self.at_end() or self.peek() == ",":
                return tok
        self.pos = start
        return None

    def params(self, *, stop_at_next_scheme: bool) -> dict[str, str]:
        """``#auth-param`` up to the end, or (for challenge lists) up to the next scheme."""
        out: dict[str, str] = {}
        while True:
            self.skip(_OWS + ",")  # RFC 7230 §7: empty list elements are allowed
            if self.at_end():
                return out
            start = self.pos
            name = self.token().lower()
            self.skip(_OWS)
            if self.peek() != "=":
                if stop_at_next_scheme:
                    self.pos = start  # `name` is the next challenge's scheme
                    return out
                raise AuthHeaderSyntaxError(f"expected '=' after {name!r}")
            self.pos += 1
            self.skip(_OWS)
            value = self.quoted_string() if self.peek() == '"' else self.token()
            if name in out:
                raise AuthHeaderSyntaxError(f"duplicate parameter {name!r}")
            out[name] = value
            self.skip(_OWS)
            if not self.at_end() and self.peek() != ",":
                raise AuthHeaderSyntaxError(f"expected ',' at character {self.pos}")


def parse_challenges(value: str) -> list[AuthItem]:
    """Every challenge in one ``WWW-Authenticate`` value (RFC 7235 allows several per header)."""
    scanner = _Scanner(value)
    items: list[AuthItem] = []
    while True:
        scanner.skip(_OWS + ",")
        if scanner.at_end():
            return items
        scheme = scanner.token().lower()
        if not scanner.skip(" ") or scanner.at_end() or scanner.peek() == ",":
            items.append(AuthItem(scheme))
            continue
        token68 = scanner.token68_then_end()
        if token68 is not None:
            items.append(AuthItem(scheme, token68=token68))
            continue
        items.append(AuthItem(scheme, scanner.params(stop_at_next_scheme=True)))


def parse_credentials(value: str) -> AuthItem:
    """The one credentials of an ``Authorization`` value."""
    scanner = _Scanner(value)
    scanner.skip(_OWS)
    scheme = scanner.token().lower()
    if scanner.at_end():
        return AuthItem(scheme)
    if not scanner.skip(" "):
        raise AuthHeaderSyntaxError("expected a space after the scheme")
    token68 = scanner.token68_then_end()
    if token68 is not None:
        if not scanner.at_end():
            raise AuthHeaderSyntaxError("text after token68")
        return AuthItem(scheme, token68=token68)
    return AuthItem(scheme, scanner.params(stop_at_next_scheme=False))


def credentials_scheme(value: str) -> str:
    """The scheme of an ``Authorization`` value, lower-cased, without parsing the rest (so a Basic
    header is recognised as Basic whatever follows)."""
    words = value.split(maxsplit=1)
    return words[0].lower() if words else ""


def quote(value: str) -> str:
    """``value`` as an RFC 7230 quoted-string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_item(scheme: str, params: Iterable[tuple[str, str, bool]]) -> str:
    """``scheme name=value, name="value", ...``; each param is ``(name, value, quoted)``."""
    parts = [f"{name}={quote(value) if quoted else value}" for name, value, quoted in params]
    return f"{scheme} {', '.join(parts)}"
