"""The per-minute counters behind the status page: failures by class, successes by latency.

An attempt's outcome adds these to its minute bucket (``Usage``) in the same
``ADD`` as the basic counters: a failure one to its class's counter, a
success one to the latency bucket its time falls in. The page reads them
back as sparklines; the median of a minute is estimated from the buckets.

>>> latency_counter(320)
{'latency_le_500': 1}
>>> failure_counter(FailureClass.THROTTLE)
{'throttles': 1}
"""

from __future__ import annotations

from collections.abc import Collection

from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Usage
from edgeproxy.routing.stream.completeness import MISSING_FINISH_REASON

# Upper bounds (ms) of the latency buckets; past the last, ``latency_over_30000``.
LATENCY_BOUNDS_MS = (100, 250, 500, 1000, 2500, 5000, 10000, 30000)
LATENCY_FIELDS = (*(f"latency_le_{b}" for b in LATENCY_BOUNDS_MS), "latency_over_30000")

# The failure classes that reached an upstream, by the counter they add to.
FAILURE_COUNTERS = {
    FailureClass.TRANSIENT: "transient_failures",
    FailureClass.CONFIGURATION: "configuration_failures",
    FailureClass.THROTTLE: "throttles",
    FailureClass.REQUEST: "request_errors",
}


def latency_counter(latency_ms: float) -> dict[str, int]:
    """The one latency bucket a success of ``latency_ms`` adds to."""
    for bound, name in zip(LATENCY_BOUNDS_MS, LATENCY_FIELDS, strict=False):
        if latency_ms <= bound:
            return {name: 1}
    return {LATENCY_FIELDS[-1]: 1}


def failure_counter(cls: FailureClass) -> dict[str, int]:
    """The class counter a failure adds to (none for the gateway's own or incompatible)."""
    name = FAILURE_COUNTERS.get(cls)
    return {name: 1} if name is not None else {}


def anomaly_counter(anomalies: Collection[str]) -> dict[str, int]:
    """What a complete stream's anomalies add: one unfinished stream when it stated no reason.

    >>> anomaly_counter(("missing_finish_reason", "empty"))
    {'unfinished_streams': 1}
    """
    return {"unfinished_streams": 1} if MISSING_FINISH_REASON in anomalies else {}


def median_ms(usage: Usage) -> float | None:
    """The minute's median success latency, interpolated inside its bucket (None: none).

    >>> median_ms(Usage("d", 0, latency_le_100=1, latency_le_250=1, latency_le_500=2))
    250.0
    """
    counts = [int(getattr(usage, name)) for name in LATENCY_FIELDS]
    total = sum(counts)
    if total == 0:
        return None
    half = total / 2
    below = 0
    lower = 0.0
    for bound, count in zip((*LATENCY_BOUNDS_MS, None), counts, strict=True):
        if count and below + count >= half:
            if bound is None:
                return lower  # past the last bound: at least that long
            return lower + (bound - lower) * (half - below) / count
        below += count
        lower = float(bound) if bound is not None else lower
    return lower
