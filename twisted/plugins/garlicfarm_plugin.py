"""``twistd garlicfarm --config node.toml``: run one Garlic Farm node (as ``garlicfarm run`` does)."""

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
        from garlicfarm.twistd import fail

        try:  # here, so that a bad configuration is one line, not a traceback
            self["node_config"] = load_config(self["config"])
        except ConfigError as e:
            fail(str(e))


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
        from garlicfarm.twistd import TwistdNode, fail, own_files

        server_options = getattr(options, "parent", None) or {}
        try:
            config = options.get("node_config") or load_config(options["config"])
            service = GarlicFarmService(config, exit_on_failure=True)
        except (ConfigError, StorageError) as e:
            fail(str(e))
        except OSError as e:
            fail(f"{e.strerror}: {e.filename}")
        own_files(server_options, config.data_dir)
        settle_startup_objects()  # twistd's process is this node's
        return TwistdNode(service, server_options)


service_maker = GarlicFarmServiceMaker()
