"""The ``[admin]`` table of a node's TOML file (optional: without ``listen`` there is no console).

```toml
[admin]
listen = "tcp:9101:interface=127.0.0.1"   # Twisted server endpoint; [tls] wraps it in TLS (server-only)
                                           # (a bare port number, listen = 9101, means loopback)
username = "admin"                         # default: [auth] username
password_file = "admin-credentials"        # default: [auth] password_file
url = "https://farm-1.example:9101/"       # the console's public address (default: from listen)
origins = ["https://console.example"]      # extra Origins allowed to POST (default: the Host's own)
sample_interval = 10                       # seconds between health samples (an hour is kept)
max_connections = 64                       # open console connections; more are closed at once
request_deadline = 30                      # seconds to send a whole request (no byte resets it)
```

``garlicfarm.config`` keeps unknown tables in ``NodeConfig.extra``; this module reads ``[admin]`` from
there, as :mod:`garlicfarm.app.config` does for the application's tables.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import attrs

from garlicfarm.config import ConfigError, ExtraTable, NodeConfig, read_secret

HISTORY_SECONDS = 3600.0


@attrs.frozen
class AdminConfig:
    listen: str | None = None
    username: str = "farm"
    password_file: Path | None = None
    url: str | None = None
    origins: tuple[str, ...] = ()
    sample_interval: float = 10.0
    max_connections: int = 64
    request_deadline: float = 30.0
    #: where ``[admin]`` came from, for error messages
    source: str = "[admin]"

    def password(self) -> str:
        if self.password_file is None:
            raise ConfigError(f"{self.source}: no password_file")
        return read_secret(self.password_file, self.source)

    @property
    def samples_kept(self) -> int:
        return max(1, round(HISTORY_SECONDS / self.sample_interval))


def admin_config(node: NodeConfig) -> AdminConfig:
    read = ExtraTable.of(node, "admin")
    table, where, text = read.table, read.where, read.text
    username, password_file = text("username"), text("password_file")
    if (username is None) != (password_file is None):
        raise ConfigError(f"{where} username and password_file go together (or neither: the farm's)")
    url = text("url")
    if url is not None and urlsplit(url).scheme not in ("http", "https"):
        raise ConfigError(f"{where} url must be an http:// or https:// address")
    origins = table.get("origins", [])
    if not isinstance(origins, list) or not all(isinstance(o, str) and "://" in o for o in origins):
        raise ConfigError(f"{where} origins must be a list of origins such as 'https://host:port'")
    interval = table.get("sample_interval", 10.0)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not 0.1 <= interval <= 600:
        raise ConfigError(f"{where} sample_interval must be a number of seconds from 0.1 to 600")
    max_connections = table.get("max_connections", 64)
    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or not max_connections >= 1:
        raise ConfigError(f"{where} max_connections must be a positive integer")
    deadline = table.get("request_deadline", 30.0)
    if isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 1 <= deadline <= 3600:
        raise ConfigError(f"{where} request_deadline must be a number of seconds from 1 to 3600")
    listen = table.get("listen")
    if isinstance(listen, int) and not isinstance(listen, bool):
        if not 1 <= listen <= 65535:
            raise ConfigError(f"{where} listen port {listen} out of range 1..65535")
        listen = f"tcp:{listen}:interface=127.0.0.1"
    else:
        listen = text("listen")
    return AdminConfig(
        listen=listen,
        username=username or node.username,
        password_file=node.path.parent / password_file if password_file else node.password_file,
        url=url,
        origins=tuple(o.rstrip("/").lower() for o in origins),
        sample_interval=float(interval),
        max_connections=max_connections,
        request_deadline=float(deadline),
        source=where,
    )
