"""The deferred AWS session: the environment's keys exactly when botocore's chain takes them,
and the cold start's heavy imports left for the first call that needs them."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import botocore.session
import pytest

from edgeproxy.aws.session import DeferredSession, StaticCredentials, environment_credentials

KEYS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret/example"}


@pytest.mark.parametrize(
    "extra",
    [{}, {"AWS_SESSION_TOKEN": "token-1"}, {"AWS_SECURITY_TOKEN": "token-2"}],
)
def test_environment_keys_are_the_ones_botocore_finds(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str]
) -> None:
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**KEYS, **extra}.items():
        monkeypatch.setenv(name, value)
    ours = environment_credentials({**KEYS, **extra})
    theirs = botocore.session.Session().get_credentials().get_frozen_credentials()
    assert ours is not None
    frozen = ours.get_frozen_credentials()
    assert (frozen.access_key, frozen.secret_key, frozen.token) == tuple(theirs)[:3]


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"},
        {**KEYS, "AWS_PROFILE": "dev"},
        {**KEYS, "AWS_DEFAULT_PROFILE": "dev"},
        {**KEYS, "AWS_CREDENTIAL_EXPIRATION": "2030-01-01T00:00:00Z"},
    ],
)
def test_anything_else_is_left_to_botocore(environ: dict[str, str]) -> None:
    assert environment_credentials(environ) is None


def test_the_real_session_is_made_only_when_the_environment_is_not_enough() -> None:
    session = DeferredSession(KEYS)
    found = asyncio.run(session.get_credentials())
    assert found == StaticCredentials("AKIDEXAMPLE", "secret/example", None)
    assert session._session is None
    assert DeferredSession({}).session() is not None


def test_the_handler_imports_no_aws_session_nor_bedrock_before_it_needs_them() -> None:
    """Importing the Lambda handler and building it must not import aioboto3, botocore's
    session, the Bedrock modules, yaml (files and exports only) or the admin API (imported on
    the first request under /admin): the cold start's largest imports the first request
    does not need."""
    code = (
        "import sys; from edgeproxy.api.handler import build_handler; build_handler(); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(("
        "'aioboto3', 'aiobotocore', 'boto3', 'botocore.session', 'edgeproxy.upstream.bedrock', "
        "'yaml', 'edgeproxy.api.admin')))))"
    )
    env = {"AWS_REGION": "us-east-1", "EDGEPROXY_TABLE": "t", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == []
