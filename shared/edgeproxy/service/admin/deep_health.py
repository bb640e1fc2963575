"""``GET /health/deep``: every deployment's standing, read from the shared state.

One ``read_pool`` per pool (concurrently): availability as the router sees
it, the circuit's state and cause, when it may be tried again, the health
job's score, this minute's rpm/tpm use against the limits, and the count of
consecutive upstream credential rejections (401/403; a deployment with any
is degraded from the first one, before its health score notices).

A deployment whose credential this process cannot resolve (an unset
``env:`` variable, a missing parameter, a refused reference) is not
``available`` whatever its circuit says: every request to it would fail
before its call. Its row says ``credential_unresolved`` and why, checked
with the gateway's own resolver (the CLI reading the table directly has
none: it cannot know the gateway's environment).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.routing.circuit import effective_state
from edgeproxy.routing.eligibility import Eligibility, Status, pool_status
from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.state.store import AdminStore, SnapshotRequest

# Why a credential reference cannot be resolved here (None: it can).
CredentialCheck = Callable[[str], Awaitable[str | None]]
UNRESOLVED = "credential_unresolved"


def deployment_row(
    dep: Deployment, status: Eligibility, snapshot: PoolSnapshot, now: float
) -> dict[str, Any]:
    """One deployment's row, as ``/health/deep`` lists it."""
    c = snapshot.circuit(dep.id)
    health = snapshot.health_of(dep.id)
    usage = snapshot.usage_of(dep.id, int(now // 60))
    return {
        "id": dep.id,
        "status": status.status.value,
        "available": status.eligible,
        "circuit": {
            "state": effective_state(c, now).value,
            "cause": c.cause.value if c.cause else None,
            "reason": c.reason,
        },
        "limit": status.limit.value if status.limit else None,
        "retry_after_ms": int(status.retry_after * 1000),
        "health_score": round(health.score, 4),
        "health_updated_at": health.updated_at or None,
        "rpm": {"used": usage.requests, "limit": dep.rpm_limit},
        "tpm": {"used": usage.tpm_used, "limit": dep.tpm_limit},
        "inflight": snapshot.inflight_of(dep.id),
        "credential_rejections": health.credential_rejections,
    }


async def pool_report(
    store: AdminStore,
    config: GatewayConfig,
    pool: str,
    now: float,
    credentials: CredentialCheck | None = None,
) -> dict[str, Any]:
    """One pool's deployments, as ``/health/deep`` lists them."""
    deployments = config.pool(pool)
    snapshot = await store.read_pool(SnapshotRequest.of(pool, deployments, now))
    statuses = pool_status(deployments, snapshot, now, config.quota_max_age_seconds)
    rows = [
        deployment_row(dep, status, snapshot, now)
        for dep, status in zip(deployments, statuses, strict=True)
    ]
    if credentials is not None:
        for dep, row in zip(deployments, rows, strict=True):
            await _check_credential(dep, row, credentials)
    return {"pool": pool, "deployments": rows}


async def _check_credential(
    dep: Deployment, row: dict[str, Any], credentials: CredentialCheck
) -> None:
    if not dep.credential or row["status"] == Status.DISABLED.value:
        return  # a drained deployment is shown as drained, whatever its credential
    problem = await credentials(dep.credential)
    if problem is not None:
        row.update(status=UNRESOLVED, available=False, credential_problem=problem)


def _degraded(row: dict[str, Any]) -> bool:
    return bool(row["status"] != Status.AVAILABLE.value or row["credential_rejections"] > 0)


async def deep_health(
    store: AdminStore,
    config: GatewayConfig,
    config_version: int,
    now: float,
    credentials: CredentialCheck | None = None,
) -> dict[str, Any]:
    """Every pool's report; ``status`` is ``degraded`` if any deployment is not available.

    ``credentials``: the gateway's check of a credential reference (see the module doc).
    """
    pools = await asyncio.gather(
        *(pool_report(store, config, pool, now, credentials) for pool in config.public_models())
    )
    degraded = any(_degraded(row) for pool in pools for row in pool["deployments"])
    return {
        "status": "degraded" if degraded else "ok",
        "checked_at": now,
        "config_version": config_version,
        "pools": list(pools),
    }
