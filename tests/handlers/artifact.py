"""Build the stack with ``sam build`` and run what it produced, as Lambda would.

The build runs on a copy of the repository's template, functions and layer
source with one change: the architecture is this machine's (in the template,
and ``EDGEPROXY_LAMBDA_ARCH`` for the makefile builds), so the native wheels
the build installs (pydantic-core, PyYAML) import here. Everything else is
the template as shipped.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAMBDA_PYTHON = "3.12"  # template.yaml's runtime


def sam() -> Path:
    """The SAM CLI ``make test`` installs and names in ``$EDGEPROXY_SAM``."""
    found = os.environ.get("EDGEPROXY_SAM") or shutil.which("sam")
    assert found, "no SAM CLI: run the tests with make test (it installs one)"
    path = Path(found)
    assert path.exists(), f"SAM CLI not found at {path} (make test installs it)"
    return path


def lambda_python() -> Path:
    """A python3.12 interpreter (the Lambda runtime's version): on PATH, or pyenv's."""
    for candidate in (shutil.which(f"python{LAMBDA_PYTHON}"), *_pyenv_pythons()):
        if candidate and _runs(Path(candidate)):
            return Path(candidate)
    raise AssertionError(f"no working python{LAMBDA_PYTHON} (pyenv install {LAMBDA_PYTHON})")


def _pyenv_pythons() -> list[str]:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    return [
        str(p / "bin" / f"python{LAMBDA_PYTHON}") for p in sorted(root.glob(f"{LAMBDA_PYTHON}.*"))
    ]


def _runs(python: Path) -> bool:
    try:
        subprocess.run([str(python), "-c", "pass"], check=True, capture_output=True, timeout=30)  # noqa: S603
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _machine_architecture() -> tuple[str, str]:
    """(Lambda architecture, Web Adapter layer suffix) of this machine."""
    return ("arm64", "Arm64") if platform.machine() in ("aarch64", "arm64") else ("x86_64", "X86")


def build(work: Path) -> Path:
    """``sam build`` a copy of the stack under ``work``; returns the build directory."""
    source = work / "source"
    for part in ("functions", "shared"):
        shutil.copytree(
            ROOT / part,
            source / part,
            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"),
        )
    arch, adapter = _machine_architecture()
    template = (ROOT / "template.yaml").read_text()
    template = template.replace("arm64", arch).replace(
        "LambdaAdapterLayerArm64", f"LambdaAdapterLayer{adapter}"
    )
    (source / "template.yaml").write_text(template)
    out = work / "build"
    python = lambda_python()
    env = {
        **os.environ,
        "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SAM_CLI_TELEMETRY": "0",
        # The makefile builds (shared/Makefile, functions/stream/Makefile) install
        # wheels for this architecture instead of the template's arm64.
        "EDGEPROXY_LAMBDA_ARCH": arch,
    }
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [str(sam()), "build", "--template-file", "template.yaml", "--build-dir", str(out)],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out


def validate_lint() -> subprocess.CompletedProcess[str]:
    """``sam validate --lint`` on the template as shipped."""
    return subprocess.run(  # noqa: S603 - fixed arguments
        [str(sam()), "validate", "--lint", "--template-file", str(ROOT / "template.yaml")],
        cwd=ROOT,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
