"""The data directory is made and checked for writing before the store opens in it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from garlicfarm.storage import DataDirNotWritable, StorageError, prepare_data_dir

PREFIX = "the data directory is not writable (read-only file system or permissions)"


def test_a_missing_directory_is_made_and_no_probe_is_left(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b"
    prepare_data_dir(directory)
    assert directory.is_dir()
    assert list(directory.iterdir()) == []


def test_access_refused_by_the_permissions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    with pytest.raises(DataDirNotWritable) as info:
        prepare_data_dir(tmp_path)
    assert str(info.value) == f"{tmp_path}: {PREFIX}: permission denied"


def test_a_write_refused_by_the_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "open", refuse)  # what mkstemp creates its file with
    with pytest.raises(DataDirNotWritable) as info:
        prepare_data_dir(tmp_path)
    assert str(info.value) == f"{tmp_path}: {PREFIX}: cannot create a file in it: Read-only file system"


def test_a_file_where_the_directory_should_be(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("")
    with pytest.raises(StorageError, match="data"):
        prepare_data_dir(tmp_path / "data")
