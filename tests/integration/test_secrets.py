"""``AwsSecrets`` against moto's server: values come back, missing names are clear errors.

moto's full server (every service, unlike the DynamoDB-only embedded one)
runs in a thread for this module; names are unique per test because moto
keeps its state in process-wide memory. Each test runs with both clients:
botocore's (``session.client``) and the lean one the gateway opens
(``lean_opener``: AWS's JSON protocol over aiohttp, endpoint from
``AWS_ENDPOINT_URL``). Denied reads: ``test_iam_server.py`` (IAM enforced).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aioboto3
import pytest
from moto.server import ThreadedMotoServer

from edgeproxy.aws.secrets import AwsSecrets, lean_opener
from edgeproxy.aws.session import DeferredSession
from edgeproxy.clients import secrets_options
from edgeproxy.errors import CredentialError
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.settings import Settings

SECRET_VALUE = "sk-live-do-not-print"


@pytest.fixture(scope="module")
def moto_kwargs() -> Iterator[dict[str, str]]:
    """Client keyword arguments for a moto server (dummy credentials, fixed region)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield {
            "endpoint_url": f"http://{host}:{port}",
            "region_name": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
    finally:
        server.stop()


def lean_environ(moto_kwargs: dict[str, str]) -> dict[str, str]:
    """A function's environment on the moto server: static keys, ``AWS_ENDPOINT_URL``, no config."""
    return {
        "AWS_ACCESS_KEY_ID": moto_kwargs["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": moto_kwargs["aws_secret_access_key"],
        "AWS_REGION": moto_kwargs["region_name"],
        "AWS_ENDPOINT_URL": moto_kwargs["endpoint_url"],
        "AWS_CONFIG_FILE": "/nonexistent/aws-config",  # as on Lambda: none
    }


def botocore_refused(service: str) -> Any:
    raise AssertionError(f"the lean opener fell back to botocore for {service}")


@pytest.fixture(params=["botocore", "lean"])
async def secrets(
    request: pytest.FixtureRequest, aws_session: aioboto3.Session, moto_kwargs: dict[str, str]
) -> AsyncIterator[AwsSecrets]:
    """An ``AwsSecrets`` on the moto server, its clients closed after the test."""
    async with contextlib.AsyncExitStack() as stack:
        if request.param == "botocore":
            yield AwsSecrets(functools.partial(aws_session.client, **moto_kwargs), stack)
        else:
            environ = lean_environ(moto_kwargs)
            session = DeferredSession(environ)
            opener = lean_opener(
                session,
                "us-east-1",
                environ,
                botocore_refused,
                secrets_options(Settings()),
                random.Random(0).random,
            )
            yield AwsSecrets(opener, stack)


@pytest.fixture
async def stored(aws_session: aioboto3.Session, moto_kwargs: dict[str, str]) -> dict[str, str]:
    """A SecureString parameter and a secret holding ``SECRET_VALUE``, by kind."""
    names = {"ssm": f"/edgeproxy/{uuid.uuid4().hex}", "secret": f"edgeproxy/{uuid.uuid4().hex}"}
    async with aws_session.client("ssm", **moto_kwargs) as ssm:
        await ssm.put_parameter(Name=names["ssm"], Value=SECRET_VALUE, Type="SecureString")
    async with aws_session.client("secretsmanager", **moto_kwargs) as manager:
        await manager.create_secret(Name=names["secret"], SecretString=SECRET_VALUE)
    return names


async def test_stored_values_are_read(secrets: AwsSecrets, stored: dict[str, str]) -> None:
    assert await secrets.parameter(stored["ssm"]) == SECRET_VALUE
    assert await secrets.secret(stored["secret"]) == SECRET_VALUE


async def test_the_resolver_reads_references_through_it(
    secrets: AwsSecrets, stored: dict[str, str]
) -> None:
    resolver = CredentialResolver({}, ssm=secrets.parameter, secretsmanager=secrets.secret)
    for reference in (f"ssm:{stored['ssm']}", f"secretsmanager:{stored['secret']}"):
        secret = await resolver.resolve(reference)
        assert secret is not None
        assert secret.get_secret_value() == SECRET_VALUE


async def test_a_missing_parameter_is_a_clear_error(
    secrets: AwsSecrets, stored: dict[str, str]
) -> None:
    missing = stored["ssm"] + "-absent"
    with pytest.raises(CredentialError) as caught:
        await secrets.parameter(missing)
    assert str(caught.value) == f"SSM parameter {missing!r} does not exist"
    assert SECRET_VALUE not in str(caught.value)


async def test_a_missing_secret_is_a_clear_error(
    secrets: AwsSecrets, stored: dict[str, str]
) -> None:
    missing = stored["secret"] + "-absent"
    with pytest.raises(CredentialError) as caught:
        await secrets.secret(missing)
    assert str(caught.value) == f"Secrets Manager secret {missing!r} does not exist"
    assert SECRET_VALUE not in str(caught.value)


# The first request's admin key, as a fresh Lambda process resolves it (runtime.open_credentials).
CHILD = """
import asyncio, contextlib, json, sys
from edgeproxy.aws.session import DeferredSession
from edgeproxy.runtime import open_credentials, process_rng
from edgeproxy.settings import Settings

async def main():
    settings = Settings.from_env()
    before = set(sys.modules)
    async with contextlib.AsyncExitStack() as stack:
        resolver = open_credentials(settings, stack, DeferredSession(), process_rng())
        found = await resolver.resolve_bootstrap(settings.admin_key_ref)
    heavy = ("aioboto3", "aiobotocore", "botocore.session")
    print(json.dumps({
        "resolved": found is not None and found.get_secret_value() == sys.argv[1],
        "imported": sorted(m for m in set(sys.modules) - before if m.startswith(heavy)),
    }))

asyncio.run(main())
"""


def test_an_ssm_admin_key_resolves_without_importing_aioboto3(
    moto_kwargs: dict[str, str], stored: dict[str, str]
) -> None:
    environ = {
        "PATH": os.environ.get("PATH", ""),
        **lean_environ(moto_kwargs),
        "EDGEPROXY_ADMIN_KEY_REF": f"ssm:{stored['ssm']}",
    }
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", CHILD, SECRET_VALUE],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert SECRET_VALUE not in done.stdout + done.stderr
    assert json.loads(done.stdout) == {"resolved": True, "imported": []}
