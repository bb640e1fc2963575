"""``make build`` and ``make lock`` find python3.12 the way the tests do, or say how to get it.

``infra/lambda-python.sh`` is the Makefile's finder; ``artifact.lambda_python``
is the tests'. Both look on PATH first (a pyenv shim whose version is not
active does not run, so it does not count), then among pyenv's versions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.handlers import artifact

ROOT = artifact.ROOT
FINDER = ROOT / "infra" / "lambda-python.sh"
MESSAGE = "put python3.12 on PATH, or pyenv install 3.12"


def _find(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own script
        [str(FINDER)], env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def bare_path(tmp_path: Path) -> Path:
    """A PATH with the tools make needs and a pyenv shim for 3.12 that is not active."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "make", "cksum", "cut", "dirname", "mkdir", "cat", "rm", "touch"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    shim = bin_dir / "python3.12"
    shim.write_text('#!/bin/sh\necho "pyenv: python3.12: command not found" >&2\nexit 127\n')
    shim.chmod(0o755)
    return bin_dir


def test_the_finder_agrees_with_the_tests() -> None:
    found = _find(dict(os.environ))
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == artifact.lambda_python()


def test_an_inactive_shim_is_skipped_for_pyenvs_own_version(
    bare_path: Path, tmp_path: Path
) -> None:
    real = artifact.lambda_python()
    pyenv = tmp_path / "pyenv"
    version_bin = pyenv / "versions" / "3.12.99" / "bin"
    version_bin.mkdir(parents=True)
    (version_bin / "python3.12").symlink_to(real)
    found = _find({"PATH": str(bare_path), "PYENV_ROOT": str(pyenv), "HOME": str(tmp_path)})
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(version_bin / "python3.12")


def test_without_python312_make_build_stops_with_one_line_saying_how(
    bare_path: Path, tmp_path: Path
) -> None:
    env = {"PATH": str(bare_path), "PYENV_ROOT": str(tmp_path / "none"), "HOME": str(tmp_path)}
    found = _find(env)
    assert (found.returncode, found.stdout) == (1, "")
    assert found.stderr.count("\n") == 1
    assert MESSAGE in found.stderr
    # make build: the SAM CLI's venv is taken as installed (an empty stamp), so the
    # only thing that can stop it is the finder, before sam is ever started.
    sam_venv = tmp_path / "sam"
    sam_venv.mkdir()
    version = re.search(r"^SAM_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert version is not None
    (sam_venv / f".installed-{version[1]}").touch()
    built = subprocess.run(  # noqa: S603 - fixed arguments
        [str(bare_path / "make"), "--no-print-directory", "build", f"SAM_VENV={sam_venv}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert built.returncode != 0
    assert MESSAGE in built.stderr
    assert "sam" not in built.stdout
