"""``AwsSecrets`` against moto's server: values come back, missing names are clear errors.

moto's full server (every service, unlike the DynamoDB-only embedded one)
runs in a thread for this module; names are unique per test because moto
keeps its state in process-wide memory.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import AsyncIterator, Iterator

import aioboto3
import pytest
from moto.server import ThreadedMotoServer

from edgeproxy.errors import CredentialError
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.state.secrets import AwsSecrets

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


@pytest.fixture
async def secrets(
    aws_session: aioboto3.Session, moto_kwargs: dict[str, str]
) -> AsyncIterator[AwsSecrets]:
    """An ``AwsSecrets`` on the moto server, its clients closed after the test."""
    async with contextlib.AsyncExitStack() as stack:
        yield AwsSecrets(functools.partial(aws_session.client, **moto_kwargs), stack)


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
