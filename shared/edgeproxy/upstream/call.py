"""What goes into one upstream attempt and what comes back, as plain values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.models import UpstreamLimits
from edgeproxy.config.policies import Operation
from edgeproxy.upstream.headers import RateLimitInfo


@dataclass(frozen=True, slots=True)
class UpstreamCall:
    """One attempt against one deployment.

    ``body`` is the client's OpenAI-format body; only ``model`` is replaced
    (by ``deployment.upstream_model``) and ``stream`` is made to match
    ``stream``; every other field, known or not, is passed on unchanged
    (translated for Anthropic). ``credential`` is the resolved secret, never
    a reference. ``extra_headers`` are forwarded, except auth and hop-by-hop
    headers, which the client sets itself.
    """

    deployment: Deployment
    operation: Operation
    body: Mapping[str, Any]
    stream: bool = False
    credential: str | None = field(default=None, repr=False)  # never in a repr or log
    response_timeout_s: float = 600.0
    idle_timeout_s: float | None = None
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    limits: UpstreamLimits = field(default_factory=UpstreamLimits)  # gateway.upstream_limits
    egress: EgressSettings = field(default_factory=EgressSettings)  # gateway.egress (at connect)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def from_openai(cls, usage: Any) -> Usage | None:
        """Read an OpenAI ``usage`` object (chat's or the Responses API's); ``None`` if none."""
        if not isinstance(usage, Mapping):
            return None
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        return cls(
            prompt_tokens=prompt if isinstance(prompt, int) else 0,
            completion_tokens=completion if isinstance(completion, int) else 0,
        )


@dataclass(frozen=True, slots=True)
class UpstreamResponse:
    """A successful (2xx) JSON answer, already in OpenAI format.

    ``headers``: the upstream's headers the client may see (``headers.passthrough``).
    """

    status: int
    body: dict[str, Any]
    usage: Usage
    rate_limits: RateLimitInfo | None
    elapsed_s: float
    request_id: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # passed on (headers.passthrough)


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One item of an upstream stream.

    ``chunk`` is an OpenAI ``chat.completion.chunk`` dict (its ``model`` is the
    upstream's own). The protocol's end marker (``[DONE]``, ``message_stop``)
    arrives as a last event with ``done=True`` and ``chunk=None``.
    """

    chunk: dict[str, Any] | None
    done: bool = False


DONE = StreamEvent(chunk=None, done=True)
