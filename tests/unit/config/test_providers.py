"""Provider kinds: what azure, bedrock and the headers/query maps need, checked at load."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.config.deployment import AzureAuth, Deployment, ProviderKind
from edgeproxy.config.loader import parse_config
from edgeproxy.config.providers import DEFAULT_AZURE_API_VERSION
from edgeproxy.errors import ConfigError


def dep(provider: str, **fields: Any) -> dict[str, Any]:
    base = {"id": "d1", "model": "m", "provider": provider, "upstream_model": "u"}
    if provider != "bedrock":
        base["base_url"] = "https://example.openai.azure.com"
    return {**base, **fields}


def problems(**fields: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config({"deployments": [fields]}, "edgeproxy.yaml")
    return str(caught.value)


def test_azure_defaults_its_api_version_and_key_header() -> None:
    loaded = parse_config(
        {"deployments": [dep("azure", credential="env:EDGEPROXY_CRED_AZ")]}, "x"
    ).deployments[0]
    assert loaded.provider is ProviderKind.AZURE
    assert loaded.azure_api_version == DEFAULT_AZURE_API_VERSION == "2024-10-21"
    assert loaded.auth is None  # api-key
    assert loaded.asks_stream_usage
    entra = Deployment.model_validate(dep("azure", auth="entra", api_version="2025-01-01-preview"))
    assert (entra.auth, entra.azure_api_version) == (AzureAuth.ENTRA, "2025-01-01-preview")


def test_bedrock_needs_no_base_url_nor_credential() -> None:
    loaded = Deployment.model_validate(dep("bedrock", region="eu-central-1"))
    assert (loaded.base_url, loaded.region, loaded.credential) == (None, "eu-central-1", None)
    assert not loaded.asks_stream_usage  # its streams always report usage
    assert not Deployment.model_validate(dep("bedrock", stream_usage=True)).asks_stream_usage


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dep("openai", base_url=None), "base_url: required for openai deployments"),
        (
            dep("bedrock", credential="env:X"),
            "bedrock deployments sign with the function's IAM role",
        ),
        (dep("bedrock", headers={"x-a": "b"}), "headers/query: not supported for bedrock"),
        (dep("bedrock", region="mars-1"), "region: 'mars-1' is not an AWS region name"),
        (dep("openai", region="us-east-1"), "region: only bedrock deployments have a region"),
        (dep("openai", api_version="2024-10-21"), "api_version: only azure deployments"),
        (dep("anthropic", auth="entra"), "auth: only azure deployments"),
        (dep("azure", auth="oauth"), "deployments[0].auth"),
        (dep("azure", api_version=" "), "api_version: must not be empty"),
        (dep("azure", query={"api-version": "x"}), "query.api-version: set api_version instead"),
        (dep("openai", query={"": "x"}), "query: a parameter name must not be empty"),
        (dep("openai", headers={"Authorization": "Bearer x"}), "headers.Authorization: reserved"),
        (dep("azure", headers={"api-key": "k"}), "headers.api-key: reserved"),
        (dep("openai", headers={"Host": "evil"}), "headers.Host: reserved"),
        (dep("openai", headers={"Content-Length": "1"}), "headers.Content-Length: reserved"),
        (dep("openai", headers={"bad name": "x"}), "'bad name' is not a valid header name"),
        (dep("openai", headers={"x-a": "one\r\nx-b: two"}), "headers.x-a: the value holds a line"),
    ],
)
def test_what_does_not_fit_the_kind_fails_at_load_with_its_location(
    fields: dict[str, Any], message: str
) -> None:
    text = problems(**fields)
    assert text.startswith("edgeproxy.yaml: deployments[0]")
    assert message in text


def test_header_values_are_not_repeated_in_errors() -> None:
    text = problems(**dep("openai", headers={"x-secret": "sk-live-0123456789\n"}))
    assert "sk-live-0123456789" not in text


def test_every_problem_is_reported_at_once() -> None:
    text = problems(**dep("bedrock", credential="env:X", api_version="1", region="nowhere"))
    assert "credential:" in text
    assert "api_version:" in text
    assert "region:" in text
