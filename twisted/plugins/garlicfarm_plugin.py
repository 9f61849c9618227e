"""``twistd garlicfarm --config node.toml``: run one Garlic Farm node."""

from __future__ import annotations

from typing import Any

from twisted.application.service import IServiceMaker
from twisted.plugin import IPlugin
from twisted.python import usage
from zope.interface import implementer


class Options(usage.Options):
    optParameters = [["config", "c", None, "the node's TOML configuration (see `garlicfarm init`)"]]

    def postOptions(self) -> None:
        if not self["config"]:
            raise usage.UsageError("--config FILE is required")
        from garlicfarm.config import ConfigError, load_config

        try:  # here, so that twistd prints a bad configuration as a usage error, not a traceback
            self["node_config"] = load_config(self["config"])
        except ConfigError as e:
            raise usage.UsageError(str(e)) from None


@implementer(IServiceMaker, IPlugin)
class GarlicFarmServiceMaker:
    tapname = "garlicfarm"
    description = "A Garlic Farm node: Raft over authenticated TLS or I2P (I2P proposal 150)."
    options = Options

    def makeService(self, options: Options) -> Any:
        from garlicfarm.config import ConfigError, load_config
        from garlicfarm.process import settle_startup_objects
        from garlicfarm.service import GarlicFarmService
        from garlicfarm.storage import StorageError

        try:
            config = options.get("node_config") or load_config(options["config"])
            service = GarlicFarmService(config, exit_on_failure=True)
        except (ConfigError, StorageError) as e:
            raise usage.UsageError(str(e)) from None
        settle_startup_objects()  # twistd's process is this node's
        return service


service_maker = GarlicFarmServiceMaker()
