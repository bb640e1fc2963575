"""Value types the router decides on: one pool's shared state at one moment.

The store reads these in one round trip and writes them back with conditional
writes; the core only ever sees them as plain immutable values. Times are
epoch seconds (floats) supplied by the caller, never read from a clock here.
A ``version`` of 0 means "no item stored yet".
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum


class CircuitState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class OpenCause(StrEnum):
    TRANSIENT = "transient"
    CONFIGURATION = "configuration"
    MAINTENANCE = "maintenance"  # forced open by an operator until ``open_until``


@dataclass(frozen=True, slots=True)
class Circuit:
    """Circuit-breaker state of one deployment, shared by the whole fleet.

    ``failures`` counts transient failures inside the fixed window that began at
    ``window_start``. While open, ``open_until`` is when the cooldown ends; after
    that the circuit is half-open and at most one request may hold the probe
    lease (``probe_owner`` until ``probe_until``). ``level`` is the exponent of
    the exponential cooldown after failed probes. ``opened_at`` is when the
    circuit last opened (kept after it closes): a failure of an attempt that
    started before then is late and must not count again. ``reason`` is the
    operator's note when the circuit was forced open for maintenance.
    """

    deployment_id: str
    state: CircuitState = CircuitState.CLOSED
    failures: int = 0
    window_start: float = 0.0
    open_until: float = 0.0
    level: int = 0
    probe_owner: str | None = None
    probe_until: float = 0.0
    cause: OpenCause | None = None
    version: int = 0
    opened_at: float = 0.0
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Capacity:
    """Capacity circuit of one failure domain: throttled until ``throttled_until``."""

    domain: str
    throttled_until: float = 0.0
    version: int = 0


SECONDS_PER_BUCKET = 60


@dataclass(frozen=True, slots=True)
class Second:
    """The answers one deployment finished in one second: what the EWMA replays, in order.

    ``successes`` answers with ``latency_ms`` in total; ``rated`` of them
    reported output tokens, at ``tokens_per_s`` in total. Summed with ``+``
    (ADD in the store), so any number of instances may add to one second.
    """

    successes: int = 0
    latency_ms: int = 0
    rated: int = 0
    tokens_per_s: float = 0.0

    def __add__(self, other: Second) -> Second:
        return Second(
            self.successes + other.successes,
            self.latency_ms + other.latency_ms,
            self.rated + other.rated,
            self.tokens_per_s + other.tokens_per_s,
        )


def added_seconds(a: Mapping[int, Second], b: Mapping[int, Second]) -> dict[int, Second]:
    """Two buckets' ``seconds`` summed second by second."""
    out = dict(a)
    for second, sums in b.items():
        out[second] = out[second] + sums if second in out else sums
    return out


@dataclass(frozen=True, slots=True)
class Usage:
    """Counters of one deployment in one minute bucket (``minute`` = epoch // 60).

    The one definition of the usage counters: every field after ``minute``
    but ``seconds`` is a counter, stored under its own name, and a ``Usage``
    of increments is what the store adds to a bucket. A new counter is one
    new field here. ``seconds``: the answers finished in this minute, by
    second (0-59; at most 60 entries, however busy the minute), so the health
    job replays the per-request EWMA in order to the second; the per-minute
    sums (``latency_ms_sum``...) count in the attempt's start bucket instead.
    """

    deployment_id: str
    minute: int
    requests: int = 0
    inflight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    successes: int = 0
    failures: int = 0
    latency_ms_sum: int = 0
    output_tokens_per_s_sum: float = 0.0
    throughput_samples: int = 0  # successes that reported output tokens (throughput's divisor)
    sticky_hits: int = 0
    # Admitted against tpm limits: estimates at start, reconciled to actual usage at the end.
    reserved_tokens: int = 0

    # Failures by class (routing.counters.FAILURE_COUNTERS) and successes by latency
    # (routing.counters.LATENCY_BOUNDS_MS): what the status page's sparklines read.
    transient_failures: int = 0
    configuration_failures: int = 0
    throttles: int = 0
    request_errors: int = 0
    unfinished_streams: int = 0  # complete streams with no finish reason (000's anomaly)
    latency_le_100: int = 0
    latency_le_250: int = 0
    latency_le_500: int = 0
    latency_le_1000: int = 0
    latency_le_2500: int = 0
    latency_le_5000: int = 0
    latency_le_10000: int = 0
    latency_le_30000: int = 0
    latency_over_30000: int = 0
    # 001's prefill lease: uncached prompt tokens an attempt holds from its start to its
    # first token, and 1 when they make it large (``routing.prefill``); held like in-flight.
    prefill_tokens: int = 0
    prefill_elephants: int = 0
    seconds: Mapping[int, Second] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def tpm_used(self) -> int:
        """What counts against a tpm limit: reservations, or usage where that is more."""
        return max(self.tokens, self.reserved_tokens)

    def counted(self, more: Mapping[str, int]) -> Usage:
        """These increments plus ``more`` (counters by name, as ``routing.counters`` gives)."""
        return replace(self, **{name: getattr(self, name) + n for name, n in more.items()})


@dataclass(frozen=True, slots=True)
class Health:
    """Scores written by the scheduled health job; absent means neutral 0.5 / no data.

    ``samples``: attempts with a verdict in the job's window (0: the job saw no
    traffic, so metric strategies must not rank by these numbers).
    ``minute``: the bucket the job ran for (a run never overwrites a later one).
    ``credential_rejections``: consecutive upstream 401/403 answers (configuration
    class), counted by the outcome writes and reset by the next success.
    """

    deployment_id: str
    score: float = 0.5
    ewma_latency_ms: float | None = None
    ewma_tokens_per_s: float | None = None
    updated_at: float = 0.0
    credential_rejections: int = 0
    samples: int = 0
    minute: int = 0


@dataclass(frozen=True, slots=True)
class Quota:
    """One provider credential's remaining quota in one unit, as last reported.

    ``credential`` is ``credential_key`` of the deployment's credential
    reference (never the secret). ``source`` is the fetcher's name, or
    ``headers`` for rate-limit headers captured from answers. ``error`` is the
    last failed refresh, kept beside the last good numbers (a failed fetch
    never deletes them; ``fetched_at`` says how old they are).
    """

    credential: str
    unit: str
    remaining: float | None = None
    limit: float | None = None
    reset_at: float | None = None
    source: str = ""
    fetched_at: float = 0.0


@dataclass(frozen=True, slots=True)
class QuotaStatus:
    """Every unit's quota of one credential, and its last refresh failure."""

    credential: str
    quotas: tuple[Quota, ...] = ()
    error: str | None = None
    error_at: float = 0.0


def credential_key(reference: str) -> str:
    """The key a credential's quota is stored under: a digest of its reference."""
    return hashlib.sha256(reference.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class BindingKey:
    """Sticky binding identity: (caller, pool, protocol/operation)."""

    caller: str
    pool: str
    protocol: str


@dataclass(frozen=True, slots=True)
class Binding:
    key: BindingKey
    deployment_id: str
    expires_at: float
    generation: int = 0
    version: int = 0


@dataclass(frozen=True, slots=True)
class PoolSnapshot:
    """Everything one routing decision needs, read in one round trip."""

    circuits: dict[str, Circuit] = field(default_factory=dict)
    capacities: dict[str, Capacity] = field(default_factory=dict)
    usage: dict[str, list[Usage]] = field(default_factory=dict)
    health: dict[str, Health] = field(default_factory=dict)
    binding: Binding | None = None
    pool_generation: int = 0
    quotas: dict[str, QuotaStatus] = field(default_factory=dict)  # by credential key
    # Capacity slots held, by deployment: slot index -> until when (``max_parallel_requests``).
    slots: dict[str, dict[int, float]] = field(default_factory=dict)

    def circuit(self, deployment_id: str) -> Circuit:
        return self.circuits.get(deployment_id) or Circuit(deployment_id)

    def capacity(self, domain: str) -> Capacity:
        return self.capacities.get(domain) or Capacity(domain)

    def health_of(self, deployment_id: str) -> Health:
        return self.health.get(deployment_id) or Health(deployment_id)

    def usage_of(self, deployment_id: str, minute: int) -> Usage:
        """Usage in the current bucket ``minute`` (zero if none recorded)."""
        for u in self.usage.get(deployment_id, []):
            if u.minute == minute:
                return u
        return Usage(deployment_id, minute)

    def last_success_at(self, deployment_id: str) -> float | None:
        """When the latest answer this read shows on ``deployment_id`` finished (to the
        second, from the last two buckets' ``seconds``); None: none in that time."""
        finished = [
            u.minute * SECONDS_PER_BUCKET + second
            for u in self.usage.get(deployment_id, [])
            for second, sums in u.seconds.items()
            if sums.successes > 0
        ]
        return max(finished, default=None)

    def free_slots(self, deployment_id: str, cap: int, now: float) -> list[int]:
        """The capacity slots of ``deployment_id`` (``cap`` of them) not held at ``now``."""
        held = self.slots.get(deployment_id, {})
        return [i for i in range(cap) if held.get(i, 0.0) < now]

    def inflight_of(self, deployment_id: str) -> int:
        """In-flight attempts: the last two buckets summed, so a crash leaks at most 2 min."""
        return max(0, sum(u.inflight for u in self.usage.get(deployment_id, [])))

    def prefill_of(self, deployment_id: str) -> tuple[int, int]:
        """Uncached prompt tokens in prefill and large prefills among them, fleet-wide.

        Read like ``inflight_of`` (the last two buckets summed), so a lease whose
        instance died stops counting within two minutes.
        """
        buckets = self.usage.get(deployment_id, [])
        tokens = sum(u.prefill_tokens for u in buckets)
        return max(0, tokens), max(0, sum(u.prefill_elephants for u in buckets))
