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

What each kind's adapter can carry of a request is declared here too
(``CARRIAGE``), as data: routing filters on it before selection
(``routing/eligibility.py``) and the adapter checks it as its last guard
(``upstream/adapter.py``), so the two cannot disagree.

    kind            operations                                content parts      refuses
    openai          chat, completions, embeddings, responses  any                -
    openai_compat   chat, completions, embeddings, responses  any                -
    azure           chat, embeddings                          any                -
    anthropic       chat                                      text, image_url    n > 1
    bedrock         chat                                      text, image_url    n > 1, response_format, image links
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import dataclass
from enum import StrEnum

from edgeproxy.config.policies import Operation

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


# A request's features (``routing/features.py`` computes them from a chat body).
CHOICES = "n"  # n > 1: several choices in one answer
RESPONSE_FORMAT = "response_format"  # a response_format other than plain text
IMAGE_LINK = "image_link"  # an image given as a link, not as a data: URL
PART = "part:"  # ``part:<type>``: a content part of that type in a user or assistant turn
_DESCRIPTIONS = {
    CHOICES: ("n > 1 (several choices in one answer)", "n"),
    RESPONSE_FORMAT: ("a response_format other than text", "response_format"),
    IMAGE_LINK: ("an image given as a link (not a base64 data: URL)", "messages"),
}


@dataclass(frozen=True, slots=True)
class Carriage:
    """What one provider kind's adapter can carry.

    ``operations``: the operations it translates (a deployment serves those of
    its ``operations`` list that are here). ``parts``: the content part types
    it translates (None: it passes any through). ``refuses``: the features it
    cannot carry.
    """

    operations: frozenset[Operation]
    parts: frozenset[str] | None = None
    refuses: frozenset[str] = frozenset()

    @property
    def limited(self) -> bool:
        """Whether it refuses any feature (if not, a request's features need not be read)."""
        return self.parts is not None or bool(self.refuses)

    def lacking(self, features: Set[str]) -> tuple[str, ...]:
        """The features of ``features`` it cannot carry, sorted (empty: it carries them all)."""
        return tuple(sorted(f for f in features if self._refuses(f)))

    def _refuses(self, feature: str) -> bool:
        if feature.startswith(PART):
            return self.parts is not None and feature.removeprefix(PART) not in self.parts
        return feature in self.refuses


_OPENAI_OPERATIONS = frozenset(
    {Operation.CHAT, Operation.COMPLETIONS, Operation.EMBEDDINGS, Operation.RESPONSES}
)
_TRANSLATED_PARTS = frozenset({"text", "image_url"})
CARRIAGE = {
    ProviderKind.OPENAI: Carriage(_OPENAI_OPERATIONS),
    ProviderKind.OPENAI_COMPAT: Carriage(_OPENAI_OPERATIONS),
    ProviderKind.AZURE: Carriage(frozenset({Operation.CHAT, Operation.EMBEDDINGS})),
    # Messages returns one choice per answer.
    ProviderKind.ANTHROPIC: Carriage(
        frozenset({Operation.CHAT}), _TRANSLATED_PARTS, frozenset({CHOICES})
    ),
    # Converse returns one choice, has no response_format and takes image bytes, not links.
    ProviderKind.BEDROCK: Carriage(
        frozenset({Operation.CHAT}),
        _TRANSLATED_PARTS,
        frozenset({CHOICES, RESPONSE_FORMAT, IMAGE_LINK}),
    ),
}


def describe(feature: str) -> tuple[str, str]:
    """A feature as a client reads it in a refusal, and the request parameter that holds it."""
    if feature.startswith(PART):
        return f"a content part of type {feature.removeprefix(PART)!r}", "messages"
    return _DESCRIPTIONS.get(feature, (feature, "messages"))


def uncarried(lacking: Mapping[ProviderKind, Set[str]]) -> tuple[str, str]:
    """The refusal of a request no deployment can carry, ``lacking``: each deployment kind
    and the request's features it cannot carry (none empty). Its message names each
    feature and the kinds that cannot carry it; its parameter is the first feature's."""
    features = sorted(set().union(*lacking.values()))
    clauses = []
    for feature in features:
        kinds = " or ".join(sorted(k.value for k, fs in lacking.items() if feature in fs))
        clauses.append(f"{describe(feature)[0]} is not supported by {kinds} deployments")
    return "; ".join(clauses), describe(features[0])[1]


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
