"""Operator actions on circuits: status, manual close, force-open for maintenance.

Each action is a conditional write on the circuit version the operator read
(``GET /admin/circuits/{deployment}``), in one transaction with its audit
entry, exactly like the router's own transitions: an admin and a request
deciding from the same version cannot both commit. A maintenance circuit is
open (cause ``maintenance``) until its expiry, then half-open: one probe
checks the deployment before traffic returns. A closed circuit routes at once.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.errors import RequestError, VersionConflict
from edgeproxy.routing import circuit
from edgeproxy.routing.circuit import AdmissionKind, admission, effective_state
from edgeproxy.routing.snapshot import Circuit
from edgeproxy.service.admin import audit
from edgeproxy.state.store import AdminStore

MAX_MAINTENANCE_SECONDS = 30 * 86400  # a forgotten window still ends


def circuit_view(c: Circuit, now: float) -> dict[str, Any]:
    """A circuit as the admin API shows it (the state is the effective one at ``now``)."""
    gate = admission(c, now)
    blocked = gate.kind is AdmissionKind.BLOCKED
    return {
        "deployment": c.deployment_id,
        "state": effective_state(c, now).value,
        "cause": c.cause.value if c.cause else None,
        "reason": c.reason,
        "open_until": c.open_until if c.open_until > now else None,
        "retry_after_ms": int(gate.retry_after * 1000) if blocked else 0,
        "failures": c.failures,
        "level": c.level,
        "probe_in_flight": c.probe_owner is not None and now < c.probe_until,
        "version": c.version,
    }


async def _write(
    store: AdminStore, current: Circuit, new: Circuit, actor: str, action: str, now: float
) -> Circuit:
    changes: list[dict[str, Any]] = [
        {"path": "state", "old": current.state.value, "new": new.state.value},
        {"path": "cause", "old": _cause(current), "new": _cause(new)},
    ]
    if new.reason is not None:
        changes.append({"path": "reason", "new": new.reason})
    if new.open_until > now:
        changes.append({"path": "open_until", "new": new.open_until})
    record = audit.entry(actor, action, current.deployment_id, changes, now)
    if not await store.write_circuit_audited(new, current.version, record):
        latest = await store.read_circuit(current.deployment_id)
        raise _stale(current.version, latest.version)
    return new


def _cause(c: Circuit) -> str | None:
    return c.cause.value if c.cause else None


def _stale(sent: int, current: int) -> VersionConflict:
    return VersionConflict(
        f"The circuit changed: version {sent} is stale, the current version is {current}. "
        "Read it again and retry.",
        param="version",
    )


async def _current(store: AdminStore, deployment_id: str, expected_version: int) -> Circuit:
    current = await store.read_circuit(deployment_id)
    if current.version != expected_version:
        raise _stale(expected_version, current.version)
    return current


async def force_open(
    store: AdminStore,
    deployment_id: str,
    expected_version: int,
    *,
    until: float,
    reason: str,
    actor: str,
    now: float,
) -> Circuit:
    """Open the circuit for maintenance until ``until`` (epoch seconds)."""
    if not now < until <= now + MAX_MAINTENANCE_SECONDS:
        raise RequestError(
            f"The maintenance window must end in the future and within "
            f"{MAX_MAINTENANCE_SECONDS // 86400} days.",
            param="until",
        )
    current = await _current(store, deployment_id, expected_version)
    new = circuit.force_open(current, now, until, reason)
    return await _write(store, current, new, actor, "circuit.force-open", now)


async def force_close(
    store: AdminStore, deployment_id: str, expected_version: int, *, actor: str, now: float
) -> Circuit:
    """Close the circuit now (whatever opened it); the deployment routes again at once."""
    current = await _current(store, deployment_id, expected_version)
    new = circuit.force_close(current, now)
    return await _write(store, current, new, actor, "circuit.close", now)
