"""The ``[metrics]`` table of a node's TOML file (optional: without ``listen`` nothing is served).

```toml
[metrics]
listen = "tcp:22650:interface=127.0.0.1"   # Twisted server endpoint (a bare port number means loopback)
username = "prometheus"                    # HTTP Basic auth, with password_file (both or neither)
password_file = "metrics-credentials"
tls = true                                 # HTTPS on loopback too (always off loopback); needs [tls]
```

On loopback the endpoints speak plain HTTP (with Basic auth when ``username`` is given), or HTTPS with
``tls = true`` (a TLS-terminating tunnel, or a local scraper that should not see the password in the
clear). Off loopback they need ``[tls]`` (the node's own certificate serves HTTPS) and ``username`` with
``password_file``: Prometheus speaks Basic auth, which is only safe inside TLS.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from garlicfarm.config import ConfigError, ExtraTable, NodeConfig, read_secret

#: the interfaces that count as loopback in a Twisted endpoint string (``\:`` escapes a colon)
_LOOPBACK = re.compile(r"(?:^|(?<!\\):)interface=(?:127\.[0-9.]+|\\:\\:1|localhost)(?:(?<!\\):|$)")


@attrs.frozen
class MetricsConfig:
    listen: str | None = None
    username: str | None = None
    password_file: Path | None = None
    #: serve HTTPS with the node's own certificate (off loopback; [tls] must be configured)
    tls: bool = False
    #: where ``[metrics]`` came from, for error messages
    source: str = "[metrics]"

    def password(self) -> str | None:
        if self.password_file is None:
            return None
        return read_secret(self.password_file, self.source)


def is_loopback(listen: str) -> bool:
    """Whether a Twisted server endpoint string binds a loopback interface only."""
    return listen.startswith(("tcp:", "tcp6:")) and _LOOPBACK.search(listen) is not None


def metrics_config(node: NodeConfig) -> MetricsConfig:
    read = ExtraTable.of(node, "metrics")
    table, where, text = read.table, read.where, read.text
    username, password_file = text("username"), text("password_file")
    if (username is None) != (password_file is None):
        raise ConfigError(f"{where} username and password_file go together (HTTP Basic auth), or neither")
    listen = table.get("listen")
    if isinstance(listen, int) and not isinstance(listen, bool):
        if not 1 <= listen <= 65535:
            raise ConfigError(f"{where} listen port {listen} out of range 1..65535")
        listen = f"tcp:{listen}:interface=127.0.0.1"
    else:
        listen = text("listen")
    tls = table.get("tls", False)
    if not isinstance(tls, bool):
        raise ConfigError(f"{where} tls must be true or false")
    if tls and node.tls is None:
        raise ConfigError(f"{where} tls = true needs [tls]: the node's certificate and key serve HTTPS")
    if listen is not None and not is_loopback(listen):
        if node.tls is None or username is None:
            raise ConfigError(
                f"{where} listen {listen!r} is not on loopback: that needs [tls] (HTTPS with the node's "
                "certificate) and username with password_file (HTTP Basic auth); or listen on "
                "interface=127.0.0.1"
            )
        if table.get("tls") is False:
            raise ConfigError(
                f"{where} tls = false, but listen {listen!r} is not on loopback: HTTPS only there"
            )
        tls = True
    return MetricsConfig(
        listen=listen,
        username=username,
        password_file=node.path.parent / password_file if password_file else None,
        tls=tls,
        source=where,
    )
