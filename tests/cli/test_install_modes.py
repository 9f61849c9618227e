"""Both ways of installing the project give `twistd garlicfarm`: a plain `pip install -e .` (setuptools'
default editable mode, no deprecated `editable_mode=compat`) and a regular `pip install .`
(regression, issue 16: the default editable mode installed an import hook that Twisted's plugin scan
cannot see)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Twisted's plugin scan, run in the new environment: which tapnames it finds, and where garlicfarm is.
PROBE = """
import garlicfarm
from twisted.application.service import IServiceMaker
from twisted.plugin import getPlugins
print(garlicfarm.__file__)
print(sorted(p.tapname for p in getPlugins(IServiceMaker)))
"""


def _source_copy(tmp_path: Path) -> Path:
    """The files a build reads, copied, so that the build's own files never land in the checkout."""
    src = tmp_path / "src"
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "dropin.cache")
    shutil.copytree(ROOT / "garlicfarm", src / "garlicfarm", ignore=ignore)
    shutil.copytree(ROOT / "twisted", src / "twisted", ignore=ignore)
    return src


def _venv(path: Path) -> Path:
    """A fresh venv that sees this environment's dependencies (Twisted and the rest) but not its
    garlicfarm: a path line in a .pth adds the directory without running the .pth files in it."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "outer-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _install_and_probe(tmp_path: Path, *pip_args: str) -> tuple[str, str]:
    src = _source_copy(tmp_path)
    python = _venv(tmp_path / "venv")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", *pip_args, str(src)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    assert "editable_mode" not in install.stderr and "deprecat" not in install.stderr.lower()
    probe = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False
    )
    assert probe.returncode == 0, probe.stderr
    where, tapnames = probe.stdout.splitlines()
    return where, tapnames


@pytest.mark.e2e
def test_plain_editable_install_gives_the_twistd_plugin(tmp_path: Path) -> None:
    where, tapnames = _install_and_probe(tmp_path, "-e")
    assert "'garlicfarm'" in tapnames
    assert where == str(tmp_path / "src" / "garlicfarm" / "__init__.py")  # the source tree itself


@pytest.mark.e2e
def test_regular_install_gives_the_twistd_plugin(tmp_path: Path) -> None:
    where, tapnames = _install_and_probe(tmp_path)
    assert "'garlicfarm'" in tapnames
    assert "site-packages" in where
