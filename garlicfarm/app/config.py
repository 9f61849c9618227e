"""The application's configuration tables in a node's TOML file (all optional).

```toml
[app]
interval = 60              # seconds between status reports
publish_config = "auto"    # off | on | auto: may this node publish the Meta LS2?
master = "..."             # the Meta LS2's master (b32); default: [publisher] keys', or "<cluster>-master"

[router]
kind = "static"            # static (no router: a healthy stand-in, or status_file) | i2pcontrol
url = "https://127.0.0.1:7650/jsonrpc"
password_file = "i2pcontrol.password"
pin = "sha256:..."         # the router's certificate fingerprint, needed off loopback
leaves = ["base64 destination", ...]   # this node's leaf destinations in the Meta LS2
status_file = "router.json"            # static: a JSON RouterStatus/leaves file, re-read each time

[publisher]
kind = "file"              # file | i2cp | command | url | none
path = "metals.json"       # file
format = "json"            # file: json (the contents, unsigned) | binary (the signed Meta LS2)
keys = "member.dat"        # file (binary) and i2cp: this member's key file (garlicfarm keys)
expires = 3600             # binary and i2cp: seconds a Meta LS2 is valid (1..65535)
i2cp = "tcp:127.0.0.1:7654"            # i2cp: the router's I2CP, a Twisted client endpoint
session = "member.session"             # i2cp: a session config the master signed (i2pd)
username = "..."                       # i2cp: where the router asks for I2CP authentication (Java I2P)
password_file = "i2cp.password"        #   with the password alone in a file
command = ["sign-metals", "--stdin"]   # command
url = "http://127.0.0.1:8080/metals"   # url

[archive]
dir = "archive"            # default: <data_dir>/archive
retention_days = 90
```
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from garlicfarm.config import ConfigError, NodeConfig
from garlicfarm.i2p.build import check_leaf

DEFAULT_ROUTER_URL = "https://127.0.0.1:7650/jsonrpc"
DEFAULT_I2CP = "tcp:127.0.0.1:7654"


#: a century: a longer retention is "keep all", which 0 says (and dates that far back do not exist)
MAX_RETENTION_DAYS = 36_500


@attrs.frozen
class AppConfig:
    interval: float = 60.0
    publish_config: str = "auto"
    master: str = "farm-master"
    #: whether [app] master was set (it must then name the key file's destination)
    master_given: bool = False
    router_kind: str = "static"
    router_url: str = DEFAULT_ROUTER_URL
    router_password_file: Path | None = None
    router_pin: str | None = None
    leaves: tuple[str, ...] = ()
    status_file: Path | None = None
    publisher_kind: str = "file"
    publisher_path: Path | None = None
    publisher_command: tuple[str, ...] = ()
    publisher_url: str | None = None
    publisher_format: str = "json"
    publisher_keys: Path | None = None
    publisher_expires: int = 3600
    publisher_i2cp: str = DEFAULT_I2CP
    publisher_session: Path | None = None
    publisher_username: str | None = None
    publisher_password_file: Path | None = None
    archive_dir: Path | None = None
    retention_days: int = 90


def app_config(node: NodeConfig) -> AppConfig:
    extra = node.extra
    base = node.path.parent
    where = str(node.path)

    def table(name: str) -> Mapping[str, Any]:
        value = extra.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: {name} must be a table ([{name}])")
        return value

    def optional(section: str, values: Mapping[str, Any], key: str) -> str | None:
        value = values.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f"{where}: [{section}] {key} must be a non-empty string")
        return value

    def text(section: str, values: Mapping[str, Any], key: str, default: str) -> str:
        value = optional(section, values, key)
        return default if value is None else value

    def path(section: str, values: Mapping[str, Any], key: str) -> Path | None:
        value = optional(section, values, key)
        return base / value if value else None

    app, router, publisher, archive = table("app"), table("router"), table("publisher"), table("archive")
    interval = app.get("interval", 60.0)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not 0.05 <= interval <= 86_400:
        raise ConfigError(f"{where}: [app] interval must be a number of seconds from 0.05 to 86400")
    publish_config = text("app", app, "publish_config", "auto")
    if publish_config not in ("off", "on", "auto"):
        raise ConfigError(f"{where}: [app] publish_config must be off, on or auto")
    router_kind = text("router", router, "kind", "static")
    if router_kind not in ("static", "i2pcontrol"):
        raise ConfigError(f"{where}: [router] kind must be static or i2pcontrol")
    leaves = router.get("leaves", [f"{node.cluster}-leaf-{node.id}"])
    if not isinstance(leaves, list) or not all(isinstance(x, str) and x for x in leaves):
        raise ConfigError(f"{where}: [router] leaves must be a list of destinations")
    publisher_kind = text("publisher", publisher, "kind", "file")
    if publisher_kind not in ("file", "i2cp", "command", "url", "none"):
        raise ConfigError(f"{where}: [publisher] kind must be file, i2cp, command, url or none")
    publisher_format = text("publisher", publisher, "format", "json")
    if publisher_format not in ("json", "binary"):
        raise ConfigError(f"{where}: [publisher] format must be json or binary")
    keys = path("publisher", publisher, "keys")
    if keys is None and (
        publisher_kind == "i2cp" or (publisher_kind == "file" and publisher_format == "binary")
    ):
        raise ConfigError(
            f"{where}: [publisher] keys = FILE is needed to sign the Meta LS2 (garlicfarm keys transient)"
        )
    if keys is not None and "leaves" in router:
        for leaf in leaves:
            why = check_leaf(leaf)
            if why is not None:
                raise ConfigError(
                    f"{where}: [router] leaves: {leaf[:60]!r} is neither a base64 destination nor a "
                    f".b32.i2p address ({why})"
                )
    expires = publisher.get("expires", 3600)
    if isinstance(expires, bool) or not isinstance(expires, int) or not 1 <= expires <= 65_535:
        raise ConfigError(f"{where}: [publisher] expires must be a whole number of seconds from 1 to 65535")
    command = publisher.get("command", [])
    if not isinstance(command, list) or not all(isinstance(x, str) for x in command):
        raise ConfigError(f"{where}: [publisher] command must be a list of strings (argv)")
    if publisher_kind == "command" and not command:
        raise ConfigError(f"{where}: [publisher] kind = command needs command = [...]")
    if publisher_kind == "url" and not publisher.get("url"):
        raise ConfigError(f"{where}: [publisher] kind = url needs url")
    retention = archive.get("retention_days", 90)
    if (
        isinstance(retention, bool)
        or not isinstance(retention, int)
        or not 0 <= retention <= MAX_RETENTION_DAYS
    ):
        raise ConfigError(
            f"{where}: [archive] retention_days must be a whole number of days from 0 to "
            f"{MAX_RETENTION_DAYS} (0 keeps all)"
        )
    return AppConfig(
        interval=float(interval),
        publish_config=publish_config,
        master=text("app", app, "master", f"{node.cluster}-master"),
        master_given="master" in app,
        router_kind=router_kind,
        router_url=text("router", router, "url", DEFAULT_ROUTER_URL),
        router_password_file=path("router", router, "password_file"),
        router_pin=optional("router", router, "pin"),
        leaves=tuple(leaves),
        status_file=path("router", router, "status_file"),
        publisher_kind=publisher_kind,
        publisher_path=path("publisher", publisher, "path")
        or node.data_dir / ("metals.bin" if publisher_format == "binary" else "metals.json"),
        publisher_command=tuple(command),
        publisher_url=optional("publisher", publisher, "url"),
        publisher_format=publisher_format,
        publisher_keys=keys,
        publisher_expires=expires,
        publisher_i2cp=text("publisher", publisher, "i2cp", DEFAULT_I2CP),
        publisher_session=path("publisher", publisher, "session"),
        publisher_username=optional("publisher", publisher, "username"),
        publisher_password_file=path("publisher", publisher, "password_file"),
        archive_dir=path("archive", archive, "dir") or node.data_dir / "archive",
        retention_days=retention,
    )
