"""Credential references resolve once per process and never show their values."""

from __future__ import annotations

import pytest

from edgeproxy.errors import CredentialError
from edgeproxy.service.credentials import CredentialResolver


async def test_env_references_resolve_and_hide_their_value() -> None:
    resolver = CredentialResolver({"OPENAI_API_KEY": "sk-live-123"})
    secret = await resolver.resolve("env:OPENAI_API_KEY")
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
        ("env:MISSING", "MISSING is not set"),
        ("OPENAI_API_KEY", "has no scheme"),
        ("vault:/x", "unknown credential scheme"),
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
