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
    """Token counts as the provider reported them (0 when it did not).

    ``prompt_tokens`` is every input token, OpenAI's way: it includes
    ``cache_read_tokens`` (read from the provider's prompt cache) and
    ``cache_write_tokens`` (written to it), which are priced apart
    (``routing.access.cost_usd``).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

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
        if not all(_count_or_absent(value) for value in (prompt, completion)):
            # Counts that are not counts are no report: the gateway's estimate stands in
            # (zeros would let the answer's tokens go unspent and uncounted).
            return None
        details = usage.get("prompt_tokens_details", usage.get("input_tokens_details"))
        details = details if isinstance(details, Mapping) else {}
        return cls(
            prompt_tokens=prompt if isinstance(prompt, int) else 0,
            completion_tokens=completion if isinstance(completion, int) else 0,
            cache_read_tokens=_count(details.get("cached_tokens")),
            cache_write_tokens=_count(details.get(CACHE_WRITE_FIELD)),
        )

    @classmethod
    def from_anthropic(cls, usage: Any, output_tokens: int | None = None) -> Usage:
        """Read an Anthropic ``usage`` object: its ``input_tokens`` leave out the cache's
        reads and writes, so they are added in (``output_tokens`` overrides its own)."""
        usage = usage if isinstance(usage, Mapping) else {}
        read = _count(usage.get("cache_read_input_tokens"))
        write = _count(usage.get("cache_creation_input_tokens"))
        output = output_tokens if output_tokens is not None else usage.get("output_tokens")
        return cls(_count(usage.get("input_tokens")) + read + write, _count(output), read, write)

    def openai_fields(self) -> dict[str, Any]:
        """This usage as an OpenAI ``usage`` object (cache counts in ``prompt_tokens_details``
        only when there are any; writes under OpenRouter's ``cache_write_tokens``)."""
        out: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cache_read_tokens or self.cache_write_tokens:
            out["prompt_tokens_details"] = {
                "cached_tokens": self.cache_read_tokens,
                CACHE_WRITE_FIELD: self.cache_write_tokens,
            }
        return out

    def counts(self) -> dict[str, int]:
        """The counts a trace keeps (cache counts only when there are any)."""
        out = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}
        if self.cache_read_tokens:
            out["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens:
            out["cache_write_tokens"] = self.cache_write_tokens
        return out

    def anthropic_fields(self) -> dict[str, int]:
        """The input side as Anthropic counts it: ``input_tokens`` without the cache's (the
        cache counts only when there are any)."""
        read, write = self.cache_read_tokens, self.cache_write_tokens
        out = {"input_tokens": max(0, self.prompt_tokens - read - write)}
        if read or write:
            out["cache_creation_input_tokens"] = write
            out["cache_read_input_tokens"] = read
        return out


# OpenAI's usage has no field for prompt-cache writes; OpenRouter's name is used.
CACHE_WRITE_FIELD = "cache_write_tokens"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


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


def _count_or_absent(value: Any) -> bool:
    """A usage field that is a count (a non-negative integer, not a bool) or not given."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)
