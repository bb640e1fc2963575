"""What each provider kind needs of a deployment, checked when the configuration loads.

    kind            base_url    credential              region   api_version / auth   headers / query
    openai          required    Bearer key              -        -                    yes
    openai_compat   required    Bearer key (optional)   -        -                    yes
    anthropic       required    x-api-key               -        -                    yes
    azure           required    api-key, or Entra token -        yes (defaulted)      yes
    bedrock         override    none: the IAM role      optional -                    -

``headers`` and ``query`` are added to every request a deployment sends; a
header the client sets itself (auth, framing, hop-by-hop) cannot be set
there, so a typo cannot replace the key or break the framing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum

DEFAULT_AZURE_API_VERSION = "2024-10-21"  # the latest GA data-plane version when written

# Headers the client sets itself, or that describe one hop only (RFC 9110 7.6.1).
RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "proxy-authorization",
        "anthropic-version",
        "host",
        "content-length",
        "content-type",
        "content-encoding",
        "accept-encoding",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "cookie",
    }
)
# A deployment's own headers may not set these either: the adapter sets ``accept``.
_DEPLOYMENT_RESERVED = RESERVED_HEADERS | {"accept"}
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP field name (RFC 9110 5.1)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a header value may hold tabs, not these
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")


class ProviderKind(StrEnum):
    OPENAI = "openai"
    OPENAI_COMPAT = "openai_compat"
    ANTHROPIC = "anthropic"
    AZURE = "azure"
    BEDROCK = "bedrock"


class AzureAuth(StrEnum):
    """How an Azure deployment presents its credential."""

    API_KEY = "api_key"  # api-key: <credential>
    ENTRA = "entra"  # Authorization: Bearer <credential> (a Microsoft Entra ID token)


def provider_problems(
    kind: ProviderKind,
    *,
    base_url: str | None,
    credential: str | None,
    region: str | None,
    api_version: str | None,
    auth: AzureAuth | None,
    headers: Mapping[str, str],
    query: Mapping[str, str],
) -> list[str]:
    """Every way these fields do not fit ``kind`` (empty: they fit)."""
    problems: list[str] = []
    if kind is ProviderKind.BEDROCK:
        if credential is not None:
            problems.append(
                "credential: bedrock deployments sign with the function's IAM role; remove it"
            )
        if headers or query:
            problems.append("headers/query: not supported for bedrock deployments")
        if region is not None and not _REGION.match(region):
            problems.append(f"region: {region!r} is not an AWS region name (like us-east-1)")
    else:
        if base_url is None:
            problems.append(f"base_url: required for {kind.value} deployments")
        if region is not None:
            problems.append("region: only bedrock deployments have a region")
    if kind is not ProviderKind.AZURE:
        if api_version is not None:
            problems.append("api_version: only azure deployments have an api_version")
        if auth is not None:
            problems.append("auth: only azure deployments choose how they authenticate")
    elif api_version is not None and not api_version.strip():
        problems.append("api_version: must not be empty")
    problems.extend(_header_problems(headers))
    for name in query:
        if not name:
            problems.append("query: a parameter name must not be empty")
        elif kind is ProviderKind.AZURE and name.lower() == "api-version":
            problems.append("query.api-version: set api_version instead")
    return problems


def _header_problems(headers: Mapping[str, str]) -> list[str]:
    problems: list[str] = []
    for name, value in headers.items():
        if not _TOKEN.match(name):
            problems.append(f"headers: {name!r} is not a valid header name")
        elif name.lower() in _DEPLOYMENT_RESERVED:
            problems.append(
                f"headers.{name}: reserved (the gateway sets it; credentials go in credential)"
            )
        elif _CONTROL.search(value):
            # The value is not repeated: it may be a secret.
            problems.append(f"headers.{name}: the value holds a line break or control character")
    return problems
