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

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from edgeproxy.header_values import parse_duration, seconds_until

_KINDS = ("requests", "tokens")
_COUNTS = ("limit", "remaining")


@dataclass(frozen=True, slots=True)
class RateNames:
    """One family's rate-limit header names; each codec names its family (``rate_names``)."""

    count: str  # a limit or remaining count, from {count} and {kind}
    reset: str  # when the {kind} budget resets
    instants: bool  # resets are RFC 3339 instants (else OpenAI-style durations)

    def reset_seconds(self, value: str, now: float) -> float | None:
        """Seconds until a reset this family wrote."""
        return seconds_until(value, now) if self.instants else parse_duration(value)

    def reset_value(self, seconds: float, now: float) -> str:
        """A reset ``seconds`` from ``now``, in this family's style."""
        return _instant(now + seconds) if self.instants else _duration(seconds)


OPENAI_RATES = RateNames("x-ratelimit-{count}-{kind}", "x-ratelimit-reset-{kind}", instants=False)
ANTHROPIC_RATES = RateNames(
    "anthropic-ratelimit-{kind}-{count}", "anthropic-ratelimit-{kind}-reset", instants=True
)
_FAMILIES = (OPENAI_RATES, ANTHROPIC_RATES)


def for_surface(passed: Mapping[str, str], names: RateNames, now: float) -> dict[str, str]:
    """``passed`` (other response headers too) plus the same numbers under ``names``.

    ``now``: epoch seconds, to turn an instant into a duration and back.

    >>> for_surface({"anthropic-ratelimit-requests-remaining": "7"}, OPENAI_RATES, 0.0)
    {'anthropic-ratelimit-requests-remaining': '7', 'x-ratelimit-remaining-requests': '7'}
    """
    out = dict(passed)
    counts, resets = _translations(names)
    for source, target in counts:
        if source in passed and target not in passed:
            out[target] = passed[source]
    for other, source, target in resets:
        seconds = other.reset_seconds(passed[source], now) if source in passed else None
        if seconds is not None and target not in passed:
            out[target] = names.reset_value(seconds, now)
    return out


@functools.cache
def _translations(
    names: RateNames,
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[RateNames, str, str], ...]]:
    """Each other family's header name beside the one it becomes under ``names`` (once)."""
    counts: list[tuple[str, str]] = []
    resets: list[tuple[RateNames, str, str]] = []
    for other in (family for family in _FAMILIES if family is not names):
        for kind in _KINDS:
            counts += [
                (other.count.format(count=c, kind=kind), names.count.format(count=c, kind=kind))
                for c in _COUNTS
            ]
            resets.append((other, other.reset.format(kind=kind), names.reset.format(kind=kind)))
    return tuple(counts), tuple(resets)


def _duration(seconds: float) -> str:
    """OpenAI's style: ``20ms`` under a second, else seconds (``1.5s``)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{round(seconds, 3):g}s"


def _instant(epoch: float) -> str:
    """Anthropic's style: RFC 3339 in UTC, whole seconds (rounded up: never too early)."""
    whole = int(epoch) + (0 if epoch == int(epoch) else 1)
    return datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
