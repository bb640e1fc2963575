"""Quota sources: where the scheduled quota refresh reads each provider credential's quota.

A source names a fetcher from ``FETCHERS`` and that fetcher's parameters,
validated like the rest of the configuration: an unknown fetcher or an
unknown parameter fails at load time with the list of what is known (001
warns that a selector nobody checks silently never resolves).

    quota_sources:
      - name: openrouter
        fetcher: openrouter-key            # GET {base_url}/key
        credential: env:OPENROUTER_API_KEY
        params: {base_url: https://openrouter.ai/api/v1}
      - name: acme
        fetcher: json                      # any JSON endpoint, values picked by dotted paths
        credential: ssm:/edgeproxy/acme
        params: {url: https://acme.example/v1/usage, remaining: data.remaining,
                 limit: data.limit, reset: data.reset_at, unit: requests}
      - name: openai-probe
        fetcher: probe                     # the cheapest request; reads its rate-limit headers
        credential: env:OPENAI_API_KEY
        params: {base_url: https://api.openai.com/v1, model: gpt-4o-mini}

The snapshot it stores applies to every deployment whose ``credential`` is the
same reference.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from edgeproxy.config.base import Positive, Strict

Unit = Literal["requests", "tokens", "usd"]


class OpenRouterKeyParams(Strict):
    """``GET {base_url}/key``: ``data.limit_remaining`` of ``data.limit`` credits (USD)."""

    base_url: str


class JsonParams(Strict):
    """Any JSON endpoint; ``remaining``/``limit``/``reset`` are dotted paths into the answer.

    ``reset`` is read as ``reset_format``: epoch seconds, seconds from now, or
    an ISO 8601 instant.
    """

    url: str
    remaining: str
    limit: str | None = None
    reset: str | None = None
    reset_format: Literal["epoch", "seconds", "iso"] = "epoch"
    unit: Unit = "requests"
    auth_header: str = "authorization"
    auth_scheme: str = "Bearer"


class ProbeParams(Strict):
    """The cheapest call (one output token) to read the provider's rate-limit headers."""

    base_url: str
    model: str
    provider: Literal["openai", "anthropic"] = "openai"


FETCHERS: dict[str, type[Strict]] = {
    "openrouter-key": OpenRouterKeyParams,
    "json": JsonParams,
    "probe": ProbeParams,
}


class QuotaSource(Strict):
    """One credential's quota source: a fetcher and its parameters."""

    name: str = Field(min_length=1)
    fetcher: str
    credential: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: Positive = 10

    @model_validator(mode="after")
    def _known(self) -> QuotaSource:
        kind = FETCHERS.get(self.fetcher)
        if kind is None:
            known = ", ".join(sorted(FETCHERS))
            raise ValueError(f"unknown quota fetcher {self.fetcher!r} (known: {known})")
        try:
            kind.model_validate(self.params)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors()
            )
            known = ", ".join(kind.model_fields)
            raise ValueError(
                f"quota source {self.name!r} ({self.fetcher}): {problems} (parameters: {known})"
            ) from None
        return self

    def parsed(self) -> Strict:
        """The parameters as the fetcher's model (validated at load)."""
        return FETCHERS[self.fetcher].model_validate(self.params)
