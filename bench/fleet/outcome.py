"""A success's outcome write, as the gateway builds it: one definition for the simulator
(``engine``) and the bucket-size measurement (``bucket_size``), so both write the
gateway's attributes with values as long as the gateway's."""

from __future__ import annotations

import random

from edgeproxy.routing import counters
from edgeproxy.routing.snapshot import Second
from edgeproxy.state.store import UsageDelta


def outcome(
    rng: random.Random,
    deployment: str,
    minute: int,
    second: int,
    latency_s: float,
    reserve: int | None,
) -> UsageDelta:
    """A success's outcome write as ``routing.effects`` and ``admission.ended`` build it
    (``reserve``: the tokens its admission reserved; None: no tpm limit, no reservation)."""
    prompt, completion = rng.randint(20, 2000), rng.randint(20, 800)
    per_s = completion / latency_s
    latency_ms = int(latency_s * 1000)
    return UsageDelta(
        deployment,
        minute,
        inflight=-1,
        reserved_tokens=0 if reserve is None else prompt + completion - reserve,
        successes=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        latency_ms_sum=latency_ms,
        output_tokens_per_s_sum=per_s,
        throughput_samples=1,
        **counters.latency_counter(latency_ms),
        seconds={second: Second(1, latency_ms, 1, per_s)},
    )
