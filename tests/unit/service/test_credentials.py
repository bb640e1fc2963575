"""Credential references resolve once per process and never show their values."""

from __future__ import annotations

import pytest

from edgeproxy.errors import CredentialError
from edgeproxy.service.credentials import CredentialResolver


async def test_env_references_resolve_and_hide_their_value() -> None:
    resolver = CredentialResolver({"EDGEPROXY_CRED_OPENAI": "sk-live-123"})
    secret = await resolver.resolve("env:EDGEPROXY_CRED_OPENAI")
    assert secret is not None
    assert secret.get_secret_value() == "sk-live-123"
    assert "sk-live-123" not in repr(secret)
    assert await resolver.resolve(None) is None


async def test_each_reference_is_fetched_once() -> None:
    calls: list[str] = []

    async def ssm(path: str) -> str:
        calls.append(path)
        return "sk-from-ssm"

    resolver = CredentialResolver({}, ssm=ssm)
    for _ in range(3):
        secret = await resolver.resolve("ssm:/edgeproxy/openai")
        assert secret is not None
        assert secret.get_secret_value() == "sk-from-ssm"
    assert calls == ["/edgeproxy/openai"]


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("env:EDGEPROXY_CRED_MISSING", "EDGEPROXY_CRED_MISSING is not set"),
        ("OPENAI_API_KEY", "is not a credential reference"),
        ("vault:/x", "is not a credential reference"),
        ("secretsmanager:edgeproxy/x", "not available"),
    ],
)
async def test_unresolvable_references_name_the_reference(reference: str, message: str) -> None:
    with pytest.raises(CredentialError, match=message):
        await CredentialResolver({}).resolve(reference)


async def test_a_fetcher_s_credential_error_reaches_the_caller_unchanged() -> None:
    failure = CredentialError("SSM parameter '/edgeproxy/x' does not exist")

    async def ssm(path: str) -> str:
        raise failure

    with pytest.raises(CredentialError) as caught:
        await CredentialResolver({}, ssm=ssm).resolve("ssm:/edgeproxy/x")
    assert caught.value is failure


async def test_a_failed_fetch_is_not_cached() -> None:
    answers: list[str | None] = [None, "sk-second"]

    async def secretsmanager(name: str) -> str:
        value = answers.pop(0)
        if value is None:
            raise CredentialError(f"Secrets Manager secret {name!r}: access denied")
        return value

    resolver = CredentialResolver({}, secretsmanager=secretsmanager)
    with pytest.raises(CredentialError):
        await resolver.resolve("secretsmanager:edgeproxy/x")
    secret = await resolver.resolve("secretsmanager:edgeproxy/x")
    assert secret is not None
    assert secret.get_secret_value() == "sk-second"


GATEWAY_ENV = {
    "EDGEPROXY_LOCAL_ADMIN_KEY": "ep-bootstrap-admin",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-of-the-function",
    "AWS_REGION": "us-east-1",
    "EDGEPROXY_CRED_COPY_OF_ADMIN": "ep-bootstrap-admin",
    "EDGEPROXY_CRED_COPY_OF_AWS": "aws-secret-of-the-function",
    "EDGEPROXY_CRED_FINE": "sk-upstream",
}


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("env:AWS_SECRET_ACCESS_KEY", "not an environment variable named EDGEPROXY_CRED_"),
        ("env:EDGEPROXY_LOCAL_ADMIN_KEY", "not an environment variable named EDGEPROXY_CRED_"),
        ("env:EDGEPROXY_CRED_", "not an environment variable named"),
        ("ssm:/other/openai", "not an SSM parameter under /edgeproxy/"),
        ("ssm:/edgeproxy/../other", "not an SSM parameter under /edgeproxy/"),
        ("ssm:/edgeproxy/admin-key", "bootstrap admin key cannot be an upstream"),
        ("secretsmanager:prod/openai", "not a Secrets Manager secret named edgeproxy/"),
        ("env:EDGEPROXY_CRED_COPY_OF_AWS", "one of the gateway's own secrets"),
        ("ssm:/edgeproxy/copy-of-admin", "one of the gateway's own secrets"),
    ],
)
async def test_gateway_secrets_are_never_upstream_credentials(reference: str, message: str) -> None:
    async def ssm(path: str) -> str:
        return (
            "ep-ssm-admin" if path in ("/edgeproxy/admin-key", "/edgeproxy/copy-of-admin") else "x"
        )

    resolver = CredentialResolver(GATEWAY_ENV, ssm=ssm, bootstrap_ref="ssm:/edgeproxy/admin-key")
    with pytest.raises(CredentialError, match=message):
        await resolver.resolve(reference)
    fine = await resolver.resolve("env:EDGEPROXY_CRED_FINE")
    assert fine is not None
    assert fine.get_secret_value() == "sk-upstream"
    admin = await resolver.resolve_bootstrap("ssm:/edgeproxy/admin-key")  # the key ring's read
    assert admin is not None
    assert admin.get_secret_value() == "ep-ssm-admin"


async def test_a_local_bootstrap_key_by_env_is_protected_by_value() -> None:
    resolver = CredentialResolver(GATEWAY_ENV, bootstrap_ref="env:EDGEPROXY_LOCAL_ADMIN_KEY")
    with pytest.raises(CredentialError, match="own secrets"):
        await resolver.resolve("env:EDGEPROXY_CRED_COPY_OF_ADMIN")
