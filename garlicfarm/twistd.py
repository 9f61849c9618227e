"""``twistd garlicfarm`` behaves as ``garlicfarm run`` does: logs at info with sub-second times, a
pidfile and a log file per node, one-line errors with exit status 1, and status 0 after SIGTERM.

The plugin (twisted/plugins/garlicfarm_plugin.py) stays light; this is what it loads to make the node.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from twisted.application.service import MultiService
from twisted.internet.error import CannotListenError
from twisted.logger import ILogObserver, Logger
from twisted.python.components import Componentized
from twisted.python.logfile import LogFile

from garlicfarm.config import ConfigError
from garlicfarm.logs import log_observer
from garlicfarm.process import start_node, why_not_started
from garlicfarm.service import GarlicFarmService

#: twistd's defaults, which several nodes started from one directory would share
DEFAULT_PIDFILE = "twistd.pid"
DEFAULT_LOGFILE = "twistd.log"


class StartFailed(Exception):
    """A daemonised node that could not start: twistd's parent process prints this and exits 1."""


def fail(message: str) -> NoReturn:
    """One line on the terminal's stderr (twistd has redirected ``sys.stderr`` into its log), exit 1."""
    stream = sys.__stderr__ or sys.stderr
    stream.write(f"twistd garlicfarm: {message}\n")
    stream.flush()
    raise SystemExit(1)


def own_files(server_options: Any, data_dir: Path) -> None:
    """Give the node a pidfile (and, daemonised, a log file) in its data directory unless the operator
    named one: twistd's ``twistd.pid`` in the working directory keeps a second node from starting."""
    if server_options.get("pidfile") == os.path.abspath(DEFAULT_PIDFILE):
        server_options["pidfile"] = str((data_dir / DEFAULT_PIDFILE).absolute())
    if not server_options.get("nodaemon") and not server_options.get("logfile"):
        server_options["logfile"] = str((data_dir / DEFAULT_LOGFILE).absolute())


def twistd_observer(server_options: Any) -> ILogObserver | None:
    """The observer ``garlicfarm run`` uses, writing where twistd would; None when the operator chose
    a logger of their own (``--logger``, ``--syslog``)."""
    if server_options.get("logger") or server_options.get("syslog"):
        return None
    logfile = server_options.get("logfile")
    if logfile == "-" or (server_options.get("nodaemon") and not logfile):
        return log_observer(sys.stdout)
    return log_observer(LogFile.fromFullPath(logfile or DEFAULT_LOGFILE))  # type: ignore[no-untyped-call]


class TwistdNode(MultiService):
    """The node as twistd's application: starts it as ``garlicfarm run`` does and sets the exit status."""

    log = Logger()

    def __init__(self, node: GarlicFarmService, server_options: Any) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.node = node
        self.server_options = server_options
        node.setServiceParent(self)  # type: ignore[no-untyped-call]

    def setServiceParent(self, parent: Any) -> None:
        super().setServiceParent(parent)  # type: ignore[no-untyped-call]
        observer = twistd_observer(self.server_options)
        if observer is not None and isinstance(parent, Componentized):
            parent.setComponent(ILogObserver, observer)  # type: ignore[no-untyped-call]  # AppLogger uses it

    def privilegedStartService(self) -> None:
        # twistd binds the Raft port here, before startService
        try:
            super().privilegedStartService()  # type: ignore[no-untyped-call]
        except (CannotListenError, ConfigError, OSError) as e:
            self._refuse(why_not_started(self.node, e) or str(e))

    def startService(self) -> None:
        self.running = 1
        error = start_node(self.node)
        if error is not None:
            self._refuse(error)
        reactor = self.node.reactor
        reactor.addSystemEventTrigger("after", "shutdown", self._exit_status)

    def _refuse(self, error: str) -> NoReturn:
        if self.server_options.get("statusPipe") is not None:  # daemonised: the parent prints it
            raise StartFailed(error)
        pidfile = self.server_options.get("pidfile")
        if pidfile:  # twistd removes it only after an Exception, and we exit without a traceback
            Path(pidfile).unlink(missing_ok=True)
        fail(error)

    def _exit_status(self) -> None:
        # SIGTERM is how an operator stops a node: exit 0 as `garlicfarm run` does, not by the signal
        # (twistd re-raises the signal that stopped the reactor when it has ended)
        self.node.reactor._exitSignal = None
        failure = self.node.failure
        if failure is not None:
            message = f"node {self.node.config.id} stopped: {failure.getErrorMessage()}"
            atexit.register(_exit, 1, message)  # after twistd has removed its pidfile


def _exit(status: int, message: str) -> None:
    stream = sys.__stderr__ or sys.stderr
    stream.write(f"twistd garlicfarm: {message}\n")
    stream.flush()
    sys.stdout.flush()
    os._exit(status)
