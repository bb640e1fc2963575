"""Health scores from per-minute usage buckets (pure counter math for the health job).

Measured as the primary spec defines them ("How each metric is measured"):

- **score**: ``successes / (successes + failures)`` over the rolling window
  (10 minutes); with no recorded attempts a neutral 0.5, so a deployment that
  was failing minutes ago is not handed full traffic the moment its counters
  age out.
- **latency** and **throughput**: the per-request EWMA with alpha 0.2, in the
  order the answers finished. The hot path only ``ADD``s sums, per second
  of the minute an answer finished in (``Usage.seconds``: at most 60 per
  bucket), so the job replays them oldest second first: a second with ``n``
  answers of mean ``m`` moves the average as ``n`` requests of ``m`` would,
  ``e <- 0.8**n * e + (1 - 0.8**n) * m``. Only the order of answers that
  finished within the same second is lost (99 answers of 100 ms and then
  one of 1000 ms read 280 ms, as 000's formula gives; the per-minute mean
  read 109). Buckets written before the per-second sums existed (no bucket
  of the window has any) are replayed per minute, as before.
  Throughput counts only the successes that reported output tokens.

A deployment with no attempts in the window gets an explicit "no data" item
(``samples == 0``), and readers ignore health older than
``HEALTH_MAX_AGE_SECONDS``: metric strategies then fall back to a weighted
random order, as the spec says they must without data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from edgeproxy.routing.snapshot import Health, PoolSnapshot, Usage

WINDOW_MINUTES = 10
ALPHA = 0.2
NEUTRAL = 0.5
# The job runs every minute; five missed runs and its numbers no longer describe now.
HEALTH_MAX_AGE_SECONDS = 300.0


def _replay(samples: Iterable[tuple[int, float]]) -> float | None:
    """The per-request EWMA after ``(count, mean)`` groups of requests, oldest first."""
    average: float | None = None
    for count, mean in samples:
        if count <= 0:
            continue
        if average is None:
            # The first request seeds the EWMA; the rest of its minute then moves it.
            average, count = mean, count - 1
        keep = (1 - ALPHA) ** count
        average = keep * average + (1 - keep) * mean
    return average


Groups = list[tuple[int, float]]


def _groups(ordered: list[Usage]) -> tuple[Groups, Groups]:
    """(count, mean) groups of latency and of throughput, oldest first."""
    seconds = [
        sums
        for u in ordered
        for _, sums in sorted(u.seconds.items())
        if sums.successes or sums.rated
    ]
    if seconds:
        return (
            [(s.successes, s.latency_ms / s.successes) for s in seconds if s.successes],
            [(s.rated, s.tokens_per_s / s.rated) for s in seconds if s.rated],
        )
    # Only buckets of a release without per-second sums: one group per minute.
    return (
        [(u.successes, u.latency_ms_sum / u.successes) for u in ordered if u.successes],
        [
            (u.throughput_samples, u.output_tokens_per_s_sum / u.throughput_samples)
            for u in ordered
            if u.throughput_samples
        ],
    )


def health_from_usage(
    deployment_id: str, buckets: Iterable[Usage], now: float, minute: int | None = None
) -> Health:
    """The health of one deployment from its usage buckets in the window ending at ``now``.

    >>> health_from_usage("d", [], now=0.0).score
    0.5
    """
    ordered = sorted(buckets, key=lambda u: u.minute)
    successes = sum(u.successes for u in ordered)
    failures = sum(u.failures for u in ordered)
    samples = successes + failures
    latency, throughput = _groups(ordered)
    return Health(
        deployment_id=deployment_id,
        score=successes / samples if samples else NEUTRAL,
        ewma_latency_ms=_replay(latency),
        ewma_tokens_per_s=_replay(throughput),
        updated_at=now,
        samples=samples,
        minute=int(now // 60) if minute is None else minute,
    )


def window(now: float) -> tuple[int, int]:
    """The first and last minute buckets of the window ending at ``now``."""
    last = int(now // 60)
    return last - WINDOW_MINUTES + 1, last


def usable(health: Health, now: float) -> bool:
    """Whether a stored health item describes recent traffic."""
    return health.samples > 0 and now - health.updated_at <= HEALTH_MAX_AGE_SECONDS


def with_usable_health(snapshot: PoolSnapshot, now: float) -> PoolSnapshot:
    """The snapshot without health items that are stale or carry no data (what strategies rank by)."""
    kept = {d: h for d, h in snapshot.health.items() if usable(h, now)}
    return snapshot if len(kept) == len(snapshot.health) else replace(snapshot, health=kept)
