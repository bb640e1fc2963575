"""Response headers the gateway acts on or passes on: Retry-After and provider rate limits.

Every parser here is pure and takes ``now`` (epoch seconds) where a header
carries an absolute time, so tests need no clock. Unparseable values are
ignored (``None``): a provider's odd header must never fail a request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from edgeproxy.header_values import number as _number
from edgeproxy.header_values import parse_duration as parse_duration
from edgeproxy.header_values import seconds_until as seconds_until

# Passed on to the client (``passthrough``): rate-limit state and the provider's own timing.
PASSED_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
PASSED_NAMES = frozenset({"openai-processing-ms"})
_PASSED_VALUE = re.compile(r"^[A-Za-z0-9 .:+\-_]{1,64}$")  # numbers, durations, instants


def parse_retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``retry-after``; ``None`` if absent.

    ``retry-after-ms`` (sent by OpenAI) wins because it is more precise.
    ``retry-after`` may be delta-seconds or an HTTP-date; a date in the past
    means 0. ``headers`` must look up names case-insensitively (httpx does).

    >>> parse_retry_after({"retry-after": "2"}, now=0.0)
    2.0
    """
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)


def passthrough(headers: Mapping[str, str], secrets: Sequence[str | None]) -> dict[str, str]:
    """The upstream's headers a client may see: rate limits and processing time only.

    Only these names, only short plain values (a number, a duration, an
    instant), and never one holding a secret (an upstream echoing its key).

    >>> passthrough({"x-ratelimit-remaining-requests": "9", "set-cookie": "a=b"}, ())
    {'x-ratelimit-remaining-requests': '9'}
    """
    out: dict[str, str] = {}
    for name, value in headers.items():
        name = name.lower()
        if not (name in PASSED_NAMES or name.startswith(PASSED_PREFIXES)):
            continue
        if not _PASSED_VALUE.match(value) or any(s and s in value for s in secrets):
            continue
        out[name] = value
    return out


def _int(value: str | None) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


@dataclass(frozen=True, slots=True)
class RateLimitInfo:
    """A provider's own view of the credential's remaining quota, from one answer.

    Reset values are seconds from the answer's arrival until the window refills.
    """

    limit_requests: int | None = None
    remaining_requests: int | None = None
    reset_requests_s: float | None = None
    limit_tokens: int | None = None
    remaining_tokens: int | None = None
    reset_tokens_s: float | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], now: float) -> RateLimitInfo | None:
        """Parse OpenAI ``x-ratelimit-*`` or Anthropic ``anthropic-ratelimit-*`` headers.

        Returns ``None`` when the answer carried none of them.
        """
        openai = cls(
            limit_requests=_int(headers.get("x-ratelimit-limit-requests")),
            remaining_requests=_int(headers.get("x-ratelimit-remaining-requests")),
            reset_requests_s=parse_duration(headers.get("x-ratelimit-reset-requests")),
            limit_tokens=_int(headers.get("x-ratelimit-limit-tokens")),
            remaining_tokens=_int(headers.get("x-ratelimit-remaining-tokens")),
            reset_tokens_s=parse_duration(headers.get("x-ratelimit-reset-tokens")),
        )
        if openai != _EMPTY:
            return openai
        prefix = "anthropic-ratelimit-"
        anthropic = cls(
            limit_requests=_int(headers.get(prefix + "requests-limit")),
            remaining_requests=_int(headers.get(prefix + "requests-remaining")),
            reset_requests_s=seconds_until(headers.get(prefix + "requests-reset"), now),
            limit_tokens=_int(headers.get(prefix + "tokens-limit")),
            remaining_tokens=_int(headers.get(prefix + "tokens-remaining")),
            reset_tokens_s=seconds_until(headers.get(prefix + "tokens-reset"), now),
        )
        return None if anthropic == _EMPTY else anthropic


_EMPTY = RateLimitInfo()


def request_id(headers: Mapping[str, str]) -> str | None:
    """The provider's request id (OpenAI ``x-request-id``, Anthropic ``request-id``)."""
    return headers.get("x-request-id") or headers.get("request-id")
