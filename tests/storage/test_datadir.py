"""The data directory is made and checked for writing before the store opens in it."""

from __future__ import annotations

import errno
import os
import types
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
    assert info.value.directory == str(tmp_path)


def test_a_write_refused_by_the_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "open", refuse)  # what mkstemp creates its file with
    with pytest.raises(DataDirNotWritable) as info:
        prepare_data_dir(tmp_path)
    assert str(info.value) == f"{tmp_path}: {PREFIX}: cannot create a file in it: Read-only file system"


def test_a_file_where_the_directory_should_be(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("")
    with pytest.raises(StorageError) as info:
        prepare_data_dir(tmp_path / "data")
    assert str(info.value) == f"{tmp_path / 'data'}: cannot create the data directory: File exists"
    assert not isinstance(info.value, DataDirNotWritable)


def test_a_directory_the_mount_will_not_let_us_make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "makedirs", refuse)
    with pytest.raises(DataDirNotWritable) as info:
        prepare_data_dir(tmp_path / "data")
    assert str(info.value) == f"{tmp_path / 'data'}: {PREFIX}: cannot create it: Read-only file system"


@pytest.mark.parametrize(
    ("flags", "why"), [(os.ST_RDONLY, "read-only file system"), (0, "permission denied")]
)
def test_access_refused_says_whether_the_mount_is_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: int, why: str
) -> None:
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    monkeypatch.setattr(os, "statvfs", lambda path: types.SimpleNamespace(f_flag=flags))
    with pytest.raises(DataDirNotWritable) as info:
        prepare_data_dir(tmp_path)
    assert str(info.value) == f"{tmp_path}: {PREFIX}: {why}"


def test_a_mount_that_cannot_be_asked_is_taken_for_permissions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unknown(path: object) -> None:
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    monkeypatch.setattr(os, "statvfs", unknown)
    with pytest.raises(DataDirNotWritable, match="permission denied$"):
        prepare_data_dir(tmp_path)


@pytest.mark.parametrize("needed", [os.W_OK, os.X_OK])
def test_a_directory_we_may_not_write_or_enter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, needed: int
) -> None:
    """Creating a file needs both write and search permission on the directory."""
    monkeypatch.setattr(os, "access", lambda path, mode, **kwargs: not mode & needed)
    with pytest.raises(DataDirNotWritable):
        prepare_data_dir(tmp_path)


def test_the_probe_is_made_in_the_data_directory_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a file made there shows what its mount allows (elsewhere, /tmp may well be writable)."""
    directory = tmp_path / "data"
    directory.mkdir()
    real_open = os.open

    def refuse_inside(path: str, *args: object, **kwargs: object) -> int:
        if str(path).startswith(str(directory)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse_inside)
    with pytest.raises(DataDirNotWritable, match="cannot create a file in it: Read-only file system"):
        prepare_data_dir(directory)


def test_a_probe_that_fails_for_another_reason_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "open", full)
    with pytest.raises(StorageError) as info:
        prepare_data_dir(tmp_path)
    assert (
        str(info.value) == f"{tmp_path}: cannot create a file in the data directory: No space left on device"
    )
    assert not isinstance(info.value, DataDirNotWritable)
