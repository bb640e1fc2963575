"""SSM and Secrets Manager failures become CredentialError with fixed texts (no sockets)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from edgeproxy.aws.secrets import AwsSecrets
from edgeproxy.errors import CredentialError

LEAKY = "AccessDenied for key sk-leaky at https://internal.example"


class FakeClient:
    """Answers or raises what it was given, for either service."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[dict[str, Any]] = []

    async def _answer(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    get_parameter = _answer
    get_secret_value = _answer


def secrets_with(client: FakeClient, opened: list[str]) -> AwsSecrets:
    @contextlib.asynccontextmanager
    async def open_client(service: str) -> AsyncIterator[FakeClient]:
        opened.append(service)
        yield client

    return AwsSecrets(open_client, contextlib.AsyncExitStack())


def client_error(code: str, operation: str = "GetParameter") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": LEAKY}}, operation)


async def test_values_are_read_and_each_client_is_opened_once() -> None:
    opened: list[str] = []
    client = FakeClient({"Parameter": {"Value": "sk-ssm"}})
    secrets = secrets_with(client, opened)
    assert await secrets.parameter("/edgeproxy/a") == "sk-ssm"
    assert await secrets.parameter("/edgeproxy/b") == "sk-ssm"
    assert opened == ["ssm"]
    assert client.calls[0] == {"Name": "/edgeproxy/a", "WithDecryption": True}


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ParameterNotFound", "SSM parameter '/edgeproxy/x' does not exist"),
        ("AccessDeniedException", "SSM parameter '/edgeproxy/x': access denied"),
        ("ThrottlingException", "cannot read SSM parameter '/edgeproxy/x': ThrottlingException"),
    ],
)
async def test_client_errors_become_fixed_texts(code: str, message: str) -> None:
    failure = client_error(code)
    with pytest.raises(CredentialError) as caught:
        await secrets_with(FakeClient(failure), []).parameter("/edgeproxy/x")
    assert str(caught.value) == message
    assert caught.value.__cause__ is failure


async def test_transport_errors_do_not_leak_the_endpoint() -> None:
    failure = EndpointConnectionError(endpoint_url="https://internal.example")
    with pytest.raises(CredentialError) as caught:
        await secrets_with(FakeClient(failure), []).secret("edgeproxy/x")
    assert str(caught.value) == (
        "cannot read Secrets Manager secret 'edgeproxy/x': EndpointConnectionError"
    )
    assert "internal.example" not in str(caught.value)


async def test_a_binary_only_secret_is_refused() -> None:
    client = FakeClient({"Name": "edgeproxy/x", "SecretBinary": b"sk-binary"})
    with pytest.raises(CredentialError, match="has no string value") as caught:
        await secrets_with(client, []).secret("edgeproxy/x")
    assert "sk-binary" not in str(caught.value)
