"""How long to wait before asking the same deployment again within one request.

A deployment nobody has tried yet in this request is used at once. Asking the
same one again waits 0.5 s, doubling per reuse up to 8 s, never less than the
configured ``retry_after_seconds``, plus up to 25% jitter so that a fleet of
retries does not arrive in lockstep; and never less than the provider's
Retry-After (honoured up to 60 s), which is not jittered: the provider named
the moment, and waiting past it only keeps the caller waiting.
"""

from __future__ import annotations

import random

from edgeproxy.config.router import CircuitSettings

FIRST_DELAY_SECONDS = 0.5
MAX_DELAY_SECONDS = 8.0
MAX_RETRY_AFTER_SECONDS = 60.0  # a provider's Retry-After is honoured up to this
JITTER = 0.25  # waits grow by up to 25% so that a fleet's retries and probes spread out


def capped_retry_after(seconds: float | None) -> float:
    """A provider's Retry-After as the gateway honours it: 0 if absent or negative, capped.

    >>> capped_retry_after(600.0), capped_retry_after(None)
    (60.0, 0.0)
    """
    return min(max(seconds or 0.0, 0.0), MAX_RETRY_AFTER_SECONDS)


def jittered(seconds: float, rng: random.Random) -> float:
    """``seconds`` grown by a random share of up to ``JITTER``."""
    return seconds * (1.0 + rng.uniform(0.0, JITTER))


def base_delay(reuse: int) -> float:
    """The unjittered delay before the ``reuse``-th reuse (1 = second try of a deployment)."""
    if reuse <= 0:
        return 0.0
    # Cap the exponent: 2**large is pointless once the ceiling is reached.
    return min(FIRST_DELAY_SECONDS * 2.0 ** min(reuse - 1, 16), MAX_DELAY_SECONDS)


def retry_delay(
    tries: int,
    settings: CircuitSettings,
    rng: random.Random,
    *,
    provider_retry_after: float | None = None,
) -> float:
    """Seconds to wait before asking a deployment already tried ``tries`` times in this request.

    >>> retry_delay(0, CircuitSettings(), random.Random(1))
    0.0
    >>> 0.5 <= retry_delay(1, CircuitSettings(), random.Random(1)) <= 0.625
    True
    """
    if tries <= 0:
        return 0.0
    own = jittered(max(base_delay(tries), float(settings.retry_after_seconds)), rng)
    # The provider's wait is exact, not jittered: asking later than it said is waiting for nothing.
    return max(own, capped_retry_after(provider_retry_after))
