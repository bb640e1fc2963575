"""One upstream target (an entry of ``deployments:``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field

from edgeproxy.config.base import Positive, Strict
from edgeproxy.config.policies import Operation, OperationPolicyOverride
from edgeproxy.config.roles import Role


class ProviderKind(StrEnum):
    OPENAI = "openai"
    OPENAI_COMPAT = "openai_compat"
    ANTHROPIC = "anthropic"


class Deployment(Strict):
    """One upstream target."""

    id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]
    model: Annotated[str, Field(min_length=1)]
    group: str | None = None
    provider: ProviderKind
    base_url: Annotated[str, Field(pattern=r"^https?://")]
    upstream_model: Annotated[str, Field(min_length=1)]
    credential: str | None = None
    weight: Annotated[float, Field(ge=0)] = 1.0
    priority: int = 0
    rpm_limit: Positive | None = None
    tpm_limit: Positive | None = None
    failure_domain: str | None = None
    input_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    output_price_per_mtok: Annotated[float, Field(ge=0)] | None = None
    modalities: frozenset[Literal["text", "image", "audio"]] = frozenset({"text"})
    operations: frozenset[Operation] = frozenset({Operation.CHAT, Operation.EMBEDDINGS})
    execution_policy_overrides: dict[Operation, OperationPolicyOverride] = Field(
        default_factory=dict
    )
    stream_usage: bool | None = None
    # Key reservation: callers below this role never select this deployment.
    min_role: Role = Role.FREE
    # Continues a trailing assistant message (prefill) instead of rejecting it;
    # only such deployments receive the continuation of a cut stream.
    supports_prefill: bool = False

    @property
    def asks_stream_usage(self) -> bool:
        """Whether streamed chats ask this upstream for a final usage chunk.

        Token counts of streams (tpm limits, usage-based-tpm, throughput) come
        from that chunk. On by default for ``openai``; OpenAI-compatible
        servers may reject ``stream_options``, so for them it is opt-in
        (``stream_usage: true``); Anthropic streams always report usage.
        """
        if self.stream_usage is not None:
            return self.stream_usage and self.provider is not ProviderKind.ANTHROPIC
        return self.provider is ProviderKind.OPENAI

    @property
    def pool_key(self) -> str:
        """``model`` or ``model:group``: the pool this deployment belongs to."""
        return f"{self.model}:{self.group}" if self.group else self.model

    @property
    def domain(self) -> str:
        """The failure domain; a deployment without one is its own domain."""
        return self.failure_domain or f"deployment:{self.id}"
