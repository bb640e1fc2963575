"""One upstream target (an entry of ``deployments:``)."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, PrivateAttr, model_validator

from edgeproxy.config.base import Positive, Strict
from edgeproxy.config.policies import Operation, OperationPolicyOverride
from edgeproxy.config.providers import (
    CARRIAGE,
    DEFAULT_AZURE_API_VERSION,
    AzureAuth,
    Carriage,
    ProviderKind,
    provider_problems,
)
from edgeproxy.config.roles import Role

__all__ = ["AzureAuth", "Deployment", "ProviderKind"]

MAX_COUNTER_SHARDS = 32  # a decision reads 2 buckets x N shards: keep it within a BatchGetItem
MAX_PARALLEL_SLOTS = 64  # one slot item each, read with the pool: keep the read small


class Deployment(Strict):
    """One upstream target."""

    id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]
    model: Annotated[str, Field(min_length=1)]
    group: str | None = None
    provider: ProviderKind
    # Required, except for bedrock (an endpoint override there): config/providers.py.
    base_url: Annotated[str, Field(pattern=r"^https?://")] | None = None
    upstream_model: Annotated[str, Field(min_length=1)]
    credential: str | None = None
    region: str | None = None  # bedrock: the AWS region (default: the function's own)
    api_version: str | None = None  # azure: the api-version query parameter
    auth: AzureAuth | None = None  # azure: api_key (default) or entra
    # Added to every upstream request (not bedrock); header values count as secrets.
    headers: dict[str, str] = Field(default_factory=dict)
    query: dict[str, str] = Field(default_factory=dict)
    # False drains it: no strategy, binding or probe sends it traffic (weight keeps 000's meaning).
    enabled: bool = True
    weight: Annotated[float, Field(ge=0)] = 1.0
    priority: int = 0
    rpm_limit: Positive | None = None
    tpm_limit: Positive | None = None
    # Attempts in flight at once, fleet-wide (a self-hosted server's slots): each
    # attempt holds one of this many slot items (state/keys.py "Capacity slots").
    max_parallel_requests: Annotated[int, Field(ge=1, le=MAX_PARALLEL_SLOTS)] | None = None
    # Tokens the deployment's model holds (prompt plus output) and writes at most: a
    # request over either is not sent here (routing/estimates/window.py).
    context_window: Positive | None = None
    max_output_tokens: Positive | None = None
    # Usage items per minute bucket (state/keys.py "Sharded hot counters"): past ~400
    # attempts per second one item's partition throttles the counters; N items take N times that.
    counter_shards: Annotated[int, Field(ge=1, le=MAX_COUNTER_SHARDS)] = 1
    failure_domain: str | None = None
    input_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    output_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    # Prompt-cache reads and writes (Anthropic, OpenAI, Bedrock report them apart).
    # Unset: the input price, as before they were priced apart; never a guessed ratio.
    cache_read_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    cache_write_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    # 000's search-unit basis (reranking/search): cents per search unit. Only
    # price-based ordering reads it; spend counts tokens (no rerank endpoint here).
    search_unit_cents: Annotated[float, Field(ge=0)] | None = None
    modalities: frozenset[Literal["text", "image", "audio"]] = frozenset({"text"})
    operations: frozenset[Operation] = frozenset({Operation.CHAT, Operation.EMBEDDINGS})
    execution_policy_overrides: dict[Operation, OperationPolicyOverride] = Field(
        default_factory=dict
    )
    stream_usage: bool | None = None
    # False: a stream's end marker without a finish reason is a cut stream, not an answer
    # (llama.cpp's server ends a running stream that way when it drops it).
    trust_stream_end: bool = True
    # Key reservation: callers below this role never select this deployment (see reserved_for).
    min_role: Role = Role.FREE
    # Continues a trailing assistant message (prefill) instead of rejecting it;
    # only such deployments receive the continuation of a cut stream.
    supports_prefill: bool = False
    # Set by the configuration that holds it (``shared_reservations``), never by a document.
    _credential_role: Role | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _fits_its_provider(self) -> Self:
        problems = provider_problems(
            self.provider,
            base_url=self.base_url,
            credential=self.credential,
            region=self.region,
            api_version=self.api_version,
            auth=self.auth,
            headers=self.headers,
            query=self.query,
        )
        if problems:
            raise ValueError(f"{self.id}: " + "; ".join(problems))
        return self

    @property
    def reserved_for(self) -> Role:
        """The lowest caller role that may select it: its ``min_role``, raised to the strictest
        ``min_role`` of the deployments sharing its credential (001: a reservation is the
        credential's, so a second deployment cannot open it to lower roles)."""
        return self._credential_role or self.min_role

    def sharing(self, strictest: Role | None) -> Deployment:
        """This deployment with ``strictest`` as its credential's reservation (itself when
        that changes nothing; a copy otherwise, as configurations may share instances)."""
        wanted = (
            strictest if strictest is not None and strictest.rank > self.min_role.rank else None
        )
        if wanted == self._credential_role:
            return self
        copy = self.model_copy()
        copy._credential_role = wanted
        return copy

    @property
    def azure_api_version(self) -> str:
        """The ``api-version`` an Azure deployment sends (``DEFAULT_AZURE_API_VERSION`` if unset)."""
        return self.api_version or DEFAULT_AZURE_API_VERSION

    @property
    def asks_stream_usage(self) -> bool:
        """Whether streamed chats ask this upstream for a final usage chunk.

        Token counts of streams (tpm limits, usage-based-tpm, throughput) come
        from that chunk. On by default for ``openai``; OpenAI-compatible
        servers may reject ``stream_options``, so for them it is opt-in
        (``stream_usage: true``); Azure takes it like OpenAI (API versions
        since 2024-09-01); Anthropic and Bedrock streams always report usage.
        """
        if self.provider in (ProviderKind.ANTHROPIC, ProviderKind.BEDROCK):
            return False
        if self.stream_usage is not None:
            return self.stream_usage
        return self.provider in (ProviderKind.OPENAI, ProviderKind.AZURE)

    @property
    def carriage(self) -> Carriage:
        """What its provider kind's adapter can carry (``config.providers.CARRIAGE``)."""
        return CARRIAGE[self.provider]

    @property
    def served_operations(self) -> frozenset[Operation]:
        """``operations`` its provider's adapter can carry out: Anthropic and Bedrock translate
        chat only, Azure chat and embeddings, whatever the list says (embeddings is a default)."""
        return self.operations & self.carriage.operations

    @property
    def pool_key(self) -> str:
        """``model`` or ``model:group``: the pool this deployment belongs to."""
        return f"{self.model}:{self.group}" if self.group else self.model

    @property
    def domain(self) -> str:
        """The failure domain; a deployment without one is its own domain."""
        return self.failure_domain or f"deployment:{self.id}"


def shared_reservations(deployments: list[Deployment]) -> list[Deployment]:
    """``deployments`` with each one's ``reserved_for`` set: the strictest ``min_role`` among
    those naming the same ``credential`` reference (no credential: its own ``min_role``).

    Computed once, when a configuration is validated, from the declared roles only: the
    order of the deployments does not matter, and lowering the stricter declaration
    lowers every deployment of the credential with it.
    """
    strictest: dict[str, Role] = {}
    for dep in deployments:
        if dep.credential is not None:
            held = strictest.get(dep.credential, Role.FREE)
            strictest[dep.credential] = dep.min_role if dep.min_role.rank > held.rank else held
    return [d.sharing(strictest.get(d.credential) if d.credential else None) for d in deployments]
