"""What the scheduled jobs' Lambda modules import: their clients are the project's own.

Each job's ``app`` module is imported in a fresh interpreter (as Lambda starts
one), with this checkout's package first on the path, and its ``sys.modules``
is read back: the modules named here are the ones a job's cold start used to
pay for without needing them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import edgeproxy

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = Path(edgeproxy.__file__).resolve().parents[1]
# aioboto3 and botocore's session: the project's DynamoClient and lean SSM/Secrets
# Manager clients sign their own calls (aws_session.DeferredSession).
AWS_SDK = ("aioboto3", "aiobotocore", "boto3", "botocore.session")
# The request path (service, upstream HTTP client): the health job only reads and writes
# the store.
REQUEST_PATH = ("aiohttp", "httpx", "edgeproxy.service.gateway", "edgeproxy.upstream.client")


def loaded(function: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules starting with ``prefixes`` that importing ``functions/<function>/app.py``
    loads in a fresh interpreter (its handler built, as at a cold start)."""
    code = (
        "import sys; import app; "
        f"print(' '.join(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))"
    )
    env = {
        "AWS_REGION": "us-east-1",
        "EDGEPROXY_TABLE": "t",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(PACKAGE_ROOT),
    }
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code],
        cwd=ROOT / "functions" / function,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


@pytest.mark.parametrize("function", ["health_job", "quota_refresh"])
def test_a_job_imports_no_aws_sdk(function: str) -> None:
    assert loaded(function, AWS_SDK) == []


def test_the_health_job_imports_neither_the_request_path_nor_an_http_client() -> None:
    assert loaded("health_job", REQUEST_PATH) == []
