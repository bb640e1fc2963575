"""What the Lambda layer ships is what runs on Lambda: no mock, no embedded DynamoDB, no runner.

``sam build`` builds the layer (``BuildMethod: makefile``) with
``shared/Makefile``: it installs the lock ``requirements.txt`` and copies the
``edgeproxy`` folder of ``ContentUri``, minus any ``__pycache__`` and
``*.pyc``, into ``python/`` (then compiles it). These tests list the same
files from template.yaml and the working tree, so they see what a build
would package without the ``sam`` CLI (tests/handlers checks the build).
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from edgeproxy.api.admin.page import ASSETS
from edgeproxy_dev.template import default_template_path, load_template

ROOT = default_template_path().parent
# What shared/Makefile deletes from its copy of the package (matched at any depth).
SAM_EXCLUDES = ("__pycache__", "*.pyc")
DEV_ONLY = {"moto", "uvicorn", "werkzeug", "edgeproxy_dev", "pytest", "tests", "bench"}
DEV_NAME = re.compile(r"^(local|dev|mock.*|moto.*|.*_dev|tests?|testing|fixtures|conftest)$")


def _layer_resource() -> dict[str, Any]:
    resources = load_template(default_template_path())["Resources"]
    [layer] = [r for r in resources.values() if r["Type"] == "AWS::Serverless::LayerVersion"]
    return dict(layer)


def _excluded(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in SAM_EXCLUDES)


def _packaged(folder: Path) -> list[Path]:
    """The files a layer build copies from ``folder`` (relative paths, as under ``python/``)."""
    found: list[Path] = []
    for path in sorted(folder.iterdir()):
        if _excluded(path.name):
            continue
        if path.is_dir():
            found.extend(path.name / sub for sub in _packaged(path))
        else:
            found.append(Path(path.name))
    return found


@pytest.fixture(scope="module")
def content() -> Path:
    layer = _layer_resource()
    assert layer["Metadata"]["BuildMethod"] == "makefile"  # shared/Makefile, described above
    return ROOT / layer["Properties"]["ContentUri"]


@pytest.fixture(scope="module")
def shipped(content: Path) -> list[Path]:
    makefile = (content / "Makefile").read_text()
    assert 'cp -R edgeproxy "$(ARTIFACTS_DIR)/python/"' in makefile
    return [Path("edgeproxy") / p for p in _packaged(content / "edgeproxy")]


def _imported(source: str) -> set[str]:
    """Top-level names of every module a source file imports (absolute imports only)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_layer_holds_the_package_and_its_requirements_only(shipped: list[Path]) -> None:
    others = {str(p) for p in shipped if p.suffix != ".py"}
    page = {f"edgeproxy/admin_ui/{name}" for name in ASSETS}  # the status page's files
    assert others == {"edgeproxy/py.typed", *page}
    assert {p.parts[0] for p in shipped if p.suffix == ".py"} == {"edgeproxy"}
    assert Path("edgeproxy/runtime.py") in shipped  # the walk found the package itself


def test_the_wheel_ships_the_status_page_too() -> None:
    # pyproject's package-data: a wheel install serves /admin/ as the layer does.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["edgeproxy"]
    for name in ASSETS:
        assert any(fnmatch.fnmatch(f"admin_ui/{name}", pattern) for pattern in patterns), name


def test_no_shipped_module_is_dev_or_test_code(shipped: list[Path]) -> None:
    dev = [p for p in shipped if any(DEV_NAME.match(part) for part in p.with_suffix("").parts)]
    assert dev == []


def test_no_shipped_module_imports_a_dev_dependency(content: Path, shipped: list[Path]) -> None:
    imports = {
        str(p): found
        for p in shipped
        if p.suffix == ".py" and (found := _imported((content / p).read_text()) & DEV_ONLY)
    }
    assert imports == {}


def test_every_shipped_module_imports_without_the_dev_packages(content: Path) -> None:
    # A fresh interpreter that refuses every dev-only package, with the layer folder first on
    # the path: importing each shipped module proves none needs them at run time.
    blocker = f"""
import importlib, pkgutil, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {sorted(DEV_ONLY)!r}:
            raise ImportError("dev-only package imported: " + name)
sys.meta_path.insert(0, Refuse())
sys.path.insert(0, {str(content)!r})
import edgeproxy
assert edgeproxy.__file__.startswith({str(content)!r}), edgeproxy.__file__
for info in pkgutil.walk_packages(edgeproxy.__path__, "edgeproxy."):
    importlib.import_module(info.name)
print("imported", len(sys.modules))
"""
    result = subprocess.run(  # noqa: S603 - our own interpreter and a fixed script
        [sys.executable, "-c", blocker], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
