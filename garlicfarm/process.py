"""What a process that is one node (``garlicfarm run``, ``twistd garlicfarm``) sets up for itself.

Not done by :class:`~garlicfarm.service.GarlicFarmService`: a program that embeds the service owns
its process, its garbage collector included.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from twisted.internet.error import CannotListenError
from twisted.python.failure import Failure

from garlicfarm.config import ConfigError

if TYPE_CHECKING:
    from garlicfarm.service import GarlicFarmService


def settle_startup_objects() -> None:
    """Take what starting up made (modules, the configuration, the loaded log) out of the cyclic
    garbage collector's generations: it lives as long as the process, and every full collection
    would walk all of it again. Measured in a leader under load (bench/farm_bench.py, 3 nodes): full
    collections went from ~24 ms each to ~3 ms, and committed entries/s rose by about 15 %."""
    gc.collect()
    gc.freeze()


def listen_failed(listen: str, what: str, failure: Failure) -> ConfigError:
    """A listener of ``what`` (``[admin] listen``) that could not bind, as one line."""
    error = failure.value
    reason = error.socketError if isinstance(error, CannotListenError) else failure.getErrorMessage()
    return ConfigError(f"cannot listen on {listen} ({what}): {reason}")


def why_not_started(service: GarlicFarmService, error: Exception) -> str | None:
    """The one line that says why ``service`` could not start (a busy port of any of its listeners, a
    certificate it cannot load), or None for an error that is not one of those."""
    if isinstance(error, CannotListenError):
        return f"cannot listen on {service.config.listen}: {error.socketError}"
    if isinstance(error, ConfigError):
        return str(error)
    if isinstance(error, OSError):
        return f"{error.strerror}: {error.filename}"
    return None


def start_node(service: GarlicFarmService) -> str | None:
    """Start ``service``; None, or why it could not (:func:`why_not_started`). The caller ends the
    process with status 1."""
    try:
        service.startService()
    except (CannotListenError, ConfigError, OSError) as e:
        return why_not_started(service, e)
    return None
