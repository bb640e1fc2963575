"""What the status page shows: every pool's standing now, and each deployment's last hour.

``status_report`` (``GET /admin/status``) is ``/health/deep``'s row per
deployment, read the same way (one ``read_pool`` per pool, concurrently),
with what an operator looks at beside it: the weight and priority, the
health job's EWMAs, the credential's quota snapshot and its age, the
circuit's end and version. Availability is judged exactly as the router and
``/v1/models/{model}/deployments`` judge it (the configured quota age).
Beside that, what makes trouble visible at a glance (``service/admin/standing.py``):
each deployment's error rate and last error, its streams that ended without a finish
reason (000's anomaly, over the page's window, and the last one), whether it is drained
(``enabled: false``, with who drained it and when from the audit log), each pool's state and what it answers when
it cannot serve, the summary counts; pools come in trouble first.

``history`` (``GET /admin/history``) is one value per minute from the
per-minute usage items: requests, successes, failures by class, the median
latency estimated from the latency buckets, and tokens.
"""

from __future__ import annotations

import asyncio
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import NotFound
from edgeproxy.routing.counters import FAILURE_COUNTERS, median_ms
from edgeproxy.routing.eligibility import Eligibility, pool_status
from edgeproxy.routing.snapshot import PoolSnapshot, Usage, credential_key
from edgeproxy.service.admin import standing
from edgeproxy.service.admin.deep_health import deployment_row
from edgeproxy.state.store import AdminStore, SnapshotRequest

STATUS_MAX_MINUTES = standing.LAST_ERROR_MINUTES  # the buckets the status view reads
HISTORY_MAX_MINUTES = 180  # usage buckets are kept about an hour; a little more is harmless


def _quota(dep: Deployment, snapshot: PoolSnapshot, now: float) -> dict[str, Any] | None:
    """The deployment's credential quota as last reported, with each reading's age."""
    if not dep.credential:
        return None
    found = snapshot.quotas.get(credential_key(dep.credential))
    if found is None:
        return None
    units = [
        {
            "unit": q.unit,
            "remaining": q.remaining,
            "limit": q.limit,
            "reset_at": q.reset_at,
            "source": q.source,
            "age_s": round(max(0.0, now - q.fetched_at), 1),
        }
        for q in found.quotas
    ]
    error = None
    if found.error:
        error = {"message": found.error, "age_s": round(max(0.0, now - found.error_at), 1)}
    return {"units": units, "error": error}


def _row(
    dep: Deployment,
    snapshot: PoolSnapshot,
    status: Eligibility,
    buckets: list[Usage],
    now: float,
    minutes: int,
) -> dict[str, Any]:
    row = deployment_row(dep, status, snapshot, now)
    c = snapshot.circuit(dep.id)
    health = snapshot.health_of(dep.id)
    row["circuit"].update(
        open_until=c.open_until if c.open_until > now else None, version=c.version
    )
    row.update(
        weight=dep.weight,
        priority=dep.priority,
        ewma_latency_ms=health.ewma_latency_ms,
        ewma_tokens_per_s=health.ewma_tokens_per_s,
        health_samples=health.samples,
        quota=_quota(dep, snapshot, now),
        enabled=dep.enabled,
        drained=not dep.enabled,
        drain=None,
        errors_5m=standing.error_rate(buckets, int(now // 60)),
        last_error=standing.last_error(buckets),
        unfinished_streams=standing.unfinished_streams(buckets, int(now // 60), minutes),
    )
    return row


async def _pool(
    store: AdminStore, config: GatewayConfig, pool: str, now: float, minutes: int
) -> dict[str, Any]:
    deployments = config.pool(pool)
    snapshot = await store.read_pool(SnapshotRequest.of(pool, deployments, now))
    statuses = pool_status(deployments, snapshot, now, config.quota_max_age_seconds)
    last = int(now // 60)
    first = last - standing.LAST_ERROR_MINUTES + 1
    usage = await asyncio.gather(
        *(store.read_usage(d.id, first, last, d.counter_shards) for d in deployments)
    )
    sticky = config.sticky_for(pool)
    rows = [
        _row(dep, snapshot, status, buckets, now, minutes)
        for dep, status, buckets in zip(deployments, statuses, usage, strict=True)
    ]
    answer = standing.answer(config, pool, snapshot, now)
    return {
        "pool": pool,
        "state": standing.pool_state(rows, answer),
        "answer": answer,
        "strategy": config.strategy_for(pool, 0).value,
        "sticky": {"enabled": sticky.enabled, "idle_ttl_seconds": sticky.idle_ttl_seconds},
        "deployments": rows,
    }


async def _with_drains(store: AdminStore, pools: list[dict[str, Any]]) -> None:
    """Each drained deployment's audited drain (read only when some deployment is drained)."""
    drained = [r for p in pools for r in p["deployments"] if r["drained"]]
    if not drained:
        return
    entries, _ = await store.read_audit(standing.AUDIT_SCAN)
    found = standing.drains(entries, {r["id"] for r in drained})
    for row in drained:
        row["drain"] = found.get(row["id"])


async def status_report(
    store: AdminStore,
    config: GatewayConfig,
    config_version: int,
    now: float,
    minutes: int = STATUS_MAX_MINUTES,
) -> dict[str, Any]:
    """Every pool's deployments, as the status page shows them: pools in trouble first.

    ``minutes``: the page's window, over which unfinished streams are counted.
    """
    found = await asyncio.gather(
        *(_pool(store, config, p, now, minutes) for p in config.public_models())
    )
    pools = standing.trouble_first(found)
    await _with_drains(store, pools)
    return {
        "checked_at": now,
        "config_version": config_version,
        "summary": standing.summary(pools),
        "pools": pools,
    }


def series(buckets: list[Usage], first: int, last: int) -> dict[str, Any]:
    """Per-minute values over ``[first, last]`` (a minute without a bucket is all zero).

    >>> series([Usage("d", 11, requests=3, successes=2, latency_le_100=2)], 10, 11)["requests"]
    [0, 3]
    """
    by_minute = {u.minute: u for u in buckets}
    minutes = [by_minute.get(m) or Usage("", m) for m in range(first, last + 1)]
    return {
        "requests": [u.requests for u in minutes],
        "successes": [u.successes for u in minutes],
        "failures": {
            cls.value: [getattr(u, name) for u in minutes] for cls, name in FAILURE_COUNTERS.items()
        },
        "p50_ms": [median_ms(u) for u in minutes],
        "tokens": [u.tokens for u in minutes],
    }


async def history(
    store: AdminStore, config: GatewayConfig, pool: str, *, minutes: int, now: float
) -> dict[str, Any]:
    """The last ``minutes`` minutes (this one included) of every deployment of ``pool``."""
    deployments = config.pool(pool)
    if not deployments:
        raise NotFound(f"No deployment serves the pool `{pool}`.", param="pool")
    last = int(now // 60)
    first = last - minutes + 1
    found = await asyncio.gather(
        *(store.read_usage(d.id, first, last, d.counter_shards) for d in deployments)
    )
    return {
        "pool": pool,
        "first_minute": first,
        "last_minute": last,
        "deployments": [
            {"id": d.id, **series(buckets, first, last)}
            for d, buckets in zip(deployments, found, strict=True)
        ],
    }
