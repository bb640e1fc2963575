"""The upstream's rate-limit headers in the names of the client's surface.

The gateway passes on what the serving upstream said about its limits
(``upstream.headers.passthrough``): its own headers as they came, plus the
same numbers under the other family's names, so an OpenAI client reads
``x-ratelimit-*`` whatever the provider, and an Anthropic client reads
``anthropic-ratelimit-*``:

    anthropic-ratelimit-requests-limit      <-> x-ratelimit-limit-requests
    anthropic-ratelimit-tokens-remaining    <-> x-ratelimit-remaining-tokens
    anthropic-ratelimit-requests-reset      <-> x-ratelimit-reset-requests
        (an RFC 3339 instant)                   (a duration: "1.5s", "20ms")

Anthropic's input/output-token families have no OpenAI name and pass as they
are. ``openai-processing-ms`` passes on both surfaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from edgeproxy.header_values import parse_duration, seconds_until

_KINDS = ("requests", "tokens")
_COUNTS = ("limit", "remaining")


def for_surface(passed: Mapping[str, str], anthropic: bool, now: float) -> dict[str, str]:
    """``passed`` (other response headers too) plus the translated rate-limit names.

    ``now``: epoch seconds, to turn an instant into a duration and back.

    >>> for_surface({"anthropic-ratelimit-requests-remaining": "7"}, False, 0.0)
    {'anthropic-ratelimit-requests-remaining': '7', 'x-ratelimit-remaining-requests': '7'}
    """
    out = dict(passed)
    for kind in _KINDS:
        for count in _COUNTS:
            ours, theirs = f"x-ratelimit-{count}-{kind}", f"anthropic-ratelimit-{kind}-{count}"
            source, target = (ours, theirs) if anthropic else (theirs, ours)
            if source in passed and target not in passed:
                out[target] = passed[source]
        ours, theirs = f"x-ratelimit-reset-{kind}", f"anthropic-ratelimit-{kind}-reset"
        if anthropic and ours in passed and theirs not in passed:
            seconds = parse_duration(passed[ours])
            if seconds is not None:
                out[theirs] = _instant(now + seconds)
        elif not anthropic and theirs in passed and ours not in passed:
            seconds = seconds_until(passed[theirs], now)
            if seconds is not None:
                out[ours] = _duration(seconds)
    return out


def _duration(seconds: float) -> str:
    """OpenAI's style: ``20ms`` under a second, else seconds (``1.5s``)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{round(seconds, 3):g}s"


def _instant(epoch: float) -> str:
    """Anthropic's style: RFC 3339 in UTC, whole seconds (rounded up: never too early)."""
    whole = int(epoch) + (0 if epoch == int(epoch) else 1)
    return datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
