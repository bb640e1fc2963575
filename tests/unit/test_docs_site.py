"""The documentation site builds strictly, and strict means a broken link fails it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.docs import DOCS, REPO

pytestmark = pytest.mark.slow  # a few mkdocs builds: about 15 s


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the project's own site build
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(DOCS, root / "docs")
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(copy(tmp_path), tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "status-page-glance.png").is_file()


def test_a_broken_anchor_or_page_fails_the_build(tmp_path: Path) -> None:
    root = copy(tmp_path)
    page = root / "docs" / "keys.md"
    page.write_text(page.read_text() + "\n[gone](routing.md#no-such-heading)\n")
    done = build(root, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr
    page.write_text(page.read_text().replace("routing.md#no-such-heading", "no-such-page.md"))
    done = build(root, tmp_path / "site2")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr


def test_every_page_is_in_the_nav(tmp_path: Path) -> None:
    root = copy(tmp_path)
    (root / "docs" / "orphan.md").write_text("# Orphan\n")
    done = build(root, tmp_path / "site")
    assert done.returncode != 0
    assert "orphan.md" in done.stderr
