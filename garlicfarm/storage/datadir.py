"""The node's data directory, made and checked before anything is opened in it.

A read-only mount (or a directory this user may not write) would otherwise surface as whatever the
first write trips over, SQLite's ``disk I/O error (SQLITE_IOERR_LOCK)`` for one; here it is one line
naming the directory (:class:`~garlicfarm.storage.interface.DataDirNotWritable`).
"""

from __future__ import annotations

import errno
import os
import tempfile

from garlicfarm.storage.interface import DataDirNotWritable, StorageError

#: what a write refused by the mount or the permissions fails with
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def _why_not(directory: str) -> str:
    """Why ``os.access`` refused: the mount, else the permissions."""
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied"


def prepare_data_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` if missing and make sure a file can be created in it, or raise a
    :class:`StorageError` (:class:`DataDirNotWritable` when the mount or permissions forbid it)."""
    directory = os.fspath(path)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        if e.errno in UNWRITABLE_ERRNOS:
            raise DataDirNotWritable(directory, f"cannot create it: {e.strerror}") from None
        raise StorageError(f"{directory}: cannot create the data directory: {e.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise DataDirNotWritable(directory, _why_not(directory))
    try:  # access() trusts the mode bits; only a write shows what the mount, ACLs or SELinux allow
        fd, probe = tempfile.mkstemp(prefix=".garlicfarm-probe-", dir=directory)
    except OSError as e:
        if e.errno in UNWRITABLE_ERRNOS:
            raise DataDirNotWritable(directory, f"cannot create a file in it: {e.strerror}") from None
        raise StorageError(f"{directory}: cannot create a file in the data directory: {e.strerror}") from None
    os.close(fd)
    os.unlink(probe)
