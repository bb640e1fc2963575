"""Health scores from per-minute usage buckets (pure counter math for the health job).

Score: ``successes / (successes + failures)`` over the rolling window (10
minutes); with no recorded attempts, a neutral 0.5, so a deployment that was
failing minutes ago is not handed full traffic the moment its counters age
out. Latency and throughput: an EWMA (alpha 0.2) over the window's per-minute
means, oldest first. Per-request EWMAs would need a read-modify-write of one
hot item per completion; per-minute means keep the hot path at ``ADD`` only.
"""

from __future__ import annotations

from collections.abc import Iterable

from edgeproxy.routing.snapshot import Health, Usage

WINDOW_MINUTES = 10
ALPHA = 0.2
NEUTRAL = 0.5


def _ewma(values: Iterable[float]) -> float | None:
    average: float | None = None
    for value in values:
        average = value if average is None else ALPHA * value + (1 - ALPHA) * average
    return average


def health_from_usage(deployment_id: str, buckets: Iterable[Usage], now: float) -> Health:
    """The health of one deployment from its usage buckets in the window.

    >>> health_from_usage("d", [], now=0.0).score
    0.5
    """
    ordered = sorted(buckets, key=lambda u: u.minute)
    successes = sum(u.successes for u in ordered)
    failures = sum(u.failures for u in ordered)
    score = successes / (successes + failures) if successes + failures else NEUTRAL
    served = [u for u in ordered if u.successes > 0]
    return Health(
        deployment_id=deployment_id,
        score=score,
        ewma_latency_ms=_ewma(u.latency_ms_sum / u.successes for u in served),
        ewma_tokens_per_s=_ewma(u.output_tokens_per_s_sum / u.successes for u in served),
        updated_at=now,
    )


def window(now: float) -> tuple[int, int]:
    """The first and last minute buckets of the window ending at ``now``."""
    last = int(now // 60)
    return last - WINDOW_MINUTES + 1, last
