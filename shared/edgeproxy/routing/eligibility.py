"""Whether one deployment may take an attempt now, and if not, why and until when.

Eligibility is decided by the operator's switch (``enabled: false`` drains a
deployment, before anything else is judged), what it can serve, its circuit, its
failure domain's capacity circuit, its capacity slots and its rpm/tpm
limits; never by live
metrics (a slow deployment is tried less often, not excluded). The same
verdict feeds the deployment status view (``available``, ``disabled``,
``cooldown``, ``half_open``, ``rate_limited``).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from enum import StrEnum

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.routing.circuit import AdmissionKind, admission
from edgeproxy.routing.quota import spent_for
from edgeproxy.routing.snapshot import OpenCause, PoolSnapshot, credential_key

# A held slot frees when its attempt ends, which nobody can foresee: ask again soon.
PARALLEL_RETRY_AFTER_S = 1.0
DEFAULT_QUOTA_MAX_AGE = 600.0  # GatewayConfig.quota_max_age_seconds's default
_SERVED_BY = {Operation.RESPONSES: frozenset({Operation.RESPONSES, Operation.CHAT})}


class Status(StrEnum):
    AVAILABLE = "available"
    DISABLED = (
        "disabled"  # drained by its operator (``enabled: false``): never tried, not even probed
    )
    HALF_OPEN = "half_open"  # cooldown over; one request may probe
    COOLDOWN = "cooldown"  # circuit open
    RATE_LIMITED = "rate_limited"  # failure domain throttled, or rpm/tpm limit reached
    INCOMPATIBLE = "incompatible"  # cannot serve this operation, modalities or features


class Limit(StrEnum):
    CAPACITY = "capacity"
    RPM = "rpm"
    TPM = "tpm"
    QUOTA = "quota"  # the provider reported the credential's quota spent
    PARALLEL = "parallel"  # every capacity slot held (``max_parallel_requests``)


@dataclass(frozen=True, slots=True)
class Eligibility:
    """One deployment's verdict at one moment.

    ``probe``: eligible only as the half-open probe (take the lease first).
    ``retry_after``: seconds until the blocker lifts (0 when eligible).
    """

    deployment_id: str
    status: Status
    eligible: bool
    probe: bool = False
    retry_after: float = 0.0
    cause: OpenCause | None = None
    limit: Limit | None = None
    # incompatible: ``operation:x``, ``native:x``, ``modality:a,b`` or ``feature:n,part:file``
    detail: str = ""

    @property
    def circuit_blocked(self) -> bool:
        """Blocked by its own circuit (open, or half-open with the probe taken)."""
        return not self.eligible and self.status in (Status.COOLDOWN, Status.HALF_OPEN)


def supports(
    dep: Deployment,
    operation: Operation | None,
    modalities: Set[str],
    *,
    native: bool = False,
    features: Set[str] = frozenset(),
) -> bool:
    """Whether ``dep`` can serve ``operation`` with inputs of ``modalities``.

    A Responses request is served natively (``responses`` listed) or, translated,
    by any chat deployment; ``native``: the request has no translation (it uses
    a feature only the native API has), so only deployments listing the
    operation itself serve it, and the others are filtered out before any
    attempt or rpm count is spent on them. ``features``: what the request
    uses that some adapters cannot carry (``routing.features``), matched
    against ``dep``'s provider kind (``Deployment.carriage``) the same way.
    """
    return unsupported(dep, operation, modalities, native=native, features=features) is None


def unsupported(
    dep: Deployment,
    operation: Operation | None,
    modalities: Set[str],
    *,
    native: bool = False,
    features: Set[str] = frozenset(),
) -> str | None:
    """What of the request ``dep`` cannot serve (``Eligibility.detail``), None if all of it."""
    if operation is not None:
        served_by = {operation} if native else _SERVED_BY.get(operation, {operation})
        if not served_by & dep.served_operations:
            return f"{'native' if native else 'operation'}:{operation.value}"
    missing = modalities - dep.modalities
    if missing:
        return "modality:" + ",".join(sorted(missing))
    lacking = dep.carriage.lacking(features)
    return "feature:" + ",".join(lacking) if lacking else None


def assess(
    dep: Deployment,
    snapshot: PoolSnapshot,
    now: float,
    minute: int,
    *,
    operation: Operation | None = None,
    modalities: Set[str] = frozenset(),
    quota_max_age: float = DEFAULT_QUOTA_MAX_AGE,
    native: bool = False,
    features: Set[str] = frozenset(),
) -> Eligibility:
    """The eligibility of ``dep`` at ``now`` (``minute``: the current usage bucket).

    ``quota_max_age``: seconds after which a quota reading is ignored.
    ``native``, ``features``: what the request needs of its adapter (see ``supports``).
    """
    if not dep.enabled:
        return Eligibility(dep.id, Status.DISABLED, eligible=False)
    lacking = unsupported(dep, operation, modalities, native=native, features=features)
    if lacking is not None:
        return Eligibility(dep.id, Status.INCOMPATIBLE, eligible=False, detail=lacking)
    circuit = snapshot.circuit(dep.id)
    gate = admission(circuit, now)
    if gate.kind is AdmissionKind.BLOCKED:
        status = Status.COOLDOWN if now < circuit.open_until else Status.HALF_OPEN
        return Eligibility(
            dep.id, status, eligible=False, retry_after=gate.retry_after, cause=circuit.cause
        )
    probe = gate.kind is AdmissionKind.PROBE
    limited = _limit(dep, snapshot, now, minute, quota_max_age)
    if limited is not None:
        limit, retry_after = limited
        return Eligibility(
            dep.id, Status.RATE_LIMITED, eligible=False, retry_after=retry_after, limit=limit
        )
    status = Status.HALF_OPEN if probe else Status.AVAILABLE
    return Eligibility(dep.id, status, eligible=True, probe=probe, cause=circuit.cause)


def _limit(
    dep: Deployment, snapshot: PoolSnapshot, now: float, minute: int, quota_max_age: float
) -> tuple[Limit, float] | None:
    throttled_until = snapshot.capacity(dep.domain).throttled_until
    if now < throttled_until:
        return Limit.CAPACITY, throttled_until - now
    if dep.credential:
        status = snapshot.quotas.get(credential_key(dep.credential))
        spent = spent_for(status, now, quota_max_age)
        if spent is not None:
            return Limit.QUOTA, spent
    cap = dep.max_parallel_requests
    if cap is not None and not snapshot.free_slots(dep.id, cap, now):
        return Limit.PARALLEL, PARALLEL_RETRY_AFTER_S
    usage = snapshot.usage_of(dep.id, minute)
    next_minute = max(0.0, (minute + 1) * 60.0 - now)
    if dep.rpm_limit is not None and usage.requests >= dep.rpm_limit:
        return Limit.RPM, next_minute
    if dep.tpm_limit is not None and usage.tpm_used >= dep.tpm_limit:
        return Limit.TPM, next_minute
    return None


def pool_status(
    deployments: list[Deployment],
    snapshot: PoolSnapshot,
    now: float,
    quota_max_age: float,
) -> list[Eligibility]:
    """Every deployment's status for the deployments view, regardless of request shape.

    ``quota_max_age``: the configuration's ``quota_max_age_seconds`` (no default,
    so no view can silently judge quota readings by another age).
    """
    minute = int(now // 60)
    return [assess(dep, snapshot, now, minute, quota_max_age=quota_max_age) for dep in deployments]
