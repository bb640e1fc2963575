"""The status page at a glance: error rates, last errors, drains, each pool's standing.

Everything here is judged from what the status view already read: the
per-minute usage buckets (an error rate over the last ``ERROR_MINUTES``
minutes and the minute of the last error, by class: never a message or an
upstream's body), the configured switch (``enabled: false``: drained) and the
audit log's record of who drained it and when.

A pool's ``answer`` is what the router itself would do with a chat request
now (``next_deployment`` on the same snapshot, no caller, no binding): None
while some deployment can take it, else the status and code the gateway
answers (503 ``model_unavailable`` when every deployment is drained,
503 ``model_overloaded`` when every circuit is open, 429 when limits are the
blocker). Its ``state`` is ``down`` when it answers so, ``degraded`` when a
deployment is not available, drained, rejecting credentials or failing at
least ``DEGRADED_ERROR_RATE`` of its attempts, else ``healthy``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Sequence
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.routing.counters import FAILURE_COUNTERS
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.judge.pool import pool_refusal
from edgeproxy.routing.selection import Blocked, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import PoolSnapshot, Usage
from edgeproxy.routing.step import PoolFailure
from edgeproxy.state.audit import AuditEntry

ERROR_MINUTES = 5  # the window of the error rate (this minute and the four before)
LAST_ERROR_MINUTES = 60  # how far back a last error is looked for (buckets live about an hour)
DEGRADED_ERROR_RATE = 0.1
# What counts as the deployment's error: a request error is the caller's (a 400 relayed).
ERROR_CLASSES = (FailureClass.TRANSIENT, FailureClass.CONFIGURATION, FailureClass.THROTTLE)
AUDIT_SCAN = 200  # audit entries read for who drained a deployment
_STATE_RANK = {"down": 0, "degraded": 1, "healthy": 2}


def _errors_of(u: Usage) -> int:
    return sum(int(getattr(u, FAILURE_COUNTERS[cls])) for cls in ERROR_CLASSES)


def error_rate(buckets: Iterable[Usage], last_minute: int) -> dict[str, Any]:
    """Attempts and errors over the last ``ERROR_MINUTES`` minutes, by class.

    >>> error_rate([Usage("d", 9, requests=4, transient_failures=1)], 10)["rate"]
    0.25
    """
    recent = [u for u in buckets if last_minute - ERROR_MINUTES < u.minute <= last_minute]
    requests = sum(u.requests for u in recent)
    errors = sum(_errors_of(u) for u in recent)
    by_class = {
        cls.value: sum(int(getattr(u, name)) for u in recent)
        for cls, name in FAILURE_COUNTERS.items()
    }
    rate = round(errors / requests, 4) if requests else 0.0
    return {
        "minutes": ERROR_MINUTES,
        "requests": requests,
        "errors": errors,
        "rate": rate,
        "by_class": by_class,
    }


def last_error(buckets: Iterable[Usage]) -> dict[str, Any] | None:
    """The class and minute (epoch seconds of its start) of the latest error, if any.

    >>> last_error([Usage("d", 3, throttles=1), Usage("d", 2, transient_failures=2)])
    {'class': 'throttle', 'at': 180}
    """
    for u in sorted(buckets, key=lambda b: b.minute, reverse=True):
        found = [cls for cls in ERROR_CLASSES if getattr(u, FAILURE_COUNTERS[cls])]
        if found:
            worst = max(found, key=lambda cls: int(getattr(u, FAILURE_COUNTERS[cls])))
            return {"class": worst.value, "at": u.minute * 60}
    return None


def unfinished_streams(buckets: Iterable[Usage], last_minute: int, minutes: int) -> dict[str, Any]:
    """Complete streams that ended without a finish reason: over the last ``minutes``
    minutes, and the minute (epoch seconds of its start) of the latest in the buckets.

    >>> unfinished_streams([Usage("d", 3, unfinished_streams=2), Usage("d", 9)], 10, 5)
    {'minutes': 5, 'count': 0, 'last_at': 180}
    """
    held = sorted((u for u in buckets if u.unfinished_streams), key=lambda u: u.minute)
    count = sum(u.unfinished_streams for u in held if last_minute - minutes < u.minute)
    return {
        "minutes": minutes,
        "count": count,
        "last_at": held[-1].minute * 60 if held else None,
    }


def _operation(deployments: Sequence[Deployment]) -> Operation:
    """The operation to judge the pool by: chat if any deployment serves it."""
    served = {op for d in deployments for op in d.operations}
    return Operation.CHAT if Operation.CHAT in served or not served else min(served)


def answer(
    config: GatewayConfig, pool: str, snapshot: PoolSnapshot, now: float
) -> dict[str, Any] | None:
    """What the pool answers a request now: None while some deployment would take it."""
    deployments = config.pool(pool)
    request = RouteRequest(
        operation=_operation(deployments),
        strategy=functools.partial(config.strategy_for, pool),
        params=functools.partial(config.params_for, pool),
        sticky=False,
        quota_max_age=config.quota_max_age_seconds,
    )
    # The rng only orders candidates; whether any is left does not depend on it.
    pick = next_deployment(deployments, snapshot, request, now, random.Random(0))
    if not isinstance(pick, Blocked):
        return None
    # The error the judge renders for this block, as a request would get it.
    error = pool_refusal(PoolFailure(blocked=pick), now).error()
    fallbacks = sorted({m for chain in config.fallbacks if chain.model == pool for m in chain.to})
    return {
        "status": error.status,
        "code": error.code,
        "retry_after_s": None if pick.retry_after is None else round(pick.retry_after, 1),
        "fallbacks": fallbacks,
    }


def _troubled(row: dict[str, Any]) -> bool:
    return bool(
        row["status"] != "available"
        or row["drained"]
        or row["credential_rejections"] > 0
        or row["errors_5m"]["rate"] >= DEGRADED_ERROR_RATE
    )


def pool_state(rows: Sequence[dict[str, Any]], answered: dict[str, Any] | None) -> str:
    """``down``, ``degraded`` or ``healthy`` (see the module docstring)."""
    if answered is not None:
        return "down"
    return "degraded" if any(_troubled(r) for r in rows) else "healthy"


def trouble_first(pools: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Down pools, then degraded, then healthy; by name within each."""
    return sorted(pools, key=lambda p: (_STATE_RANK[p["state"]], p["pool"]))


def summary(pools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The counts of the summary bar (a deployment is counted once however many pools)."""
    rows = {r["id"]: r for p in pools for r in p["deployments"]}.values()
    states = [p["state"] for p in pools]
    statuses = [r["status"] for r in rows]
    requests = sum(r["errors_5m"]["requests"] for r in rows)
    errors = sum(r["errors_5m"]["errors"] for r in rows)
    return {
        "pools": {
            "total": len(pools),
            "down": states.count("down"),
            "degraded": states.count("degraded"),
        },
        "deployments": {
            "total": len(statuses),
            "cooldown": statuses.count("cooldown"),
            "half_open": statuses.count("half_open"),
            "rate_limited": statuses.count("rate_limited"),
            "drained": sum(1 for r in rows if r["drained"]),
        },
        "errors_5m": {
            "minutes": ERROR_MINUTES,
            "requests": requests,
            "errors": errors,
            "rate": round(errors / requests, 4) if requests else 0.0,
        },
    }


def drains(entries: Iterable[AuditEntry], ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """For each of ``ids``: the newest audited change of its ``enabled`` to false (who, when).

    Entries come newest first; a drain older than the entries read is not found.
    """
    wanted = {f"deployments[{i}].enabled": i for i in ids}
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        for change in entry.changes:
            dep = wanted.get(str(change.get("path")))
            if dep is None or dep in found or change.get("new") is not False:
                continue
            found[dep] = {"at": entry.at, "actor": entry.actor}
    return found
