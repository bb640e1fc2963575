"""Operations on sticky bindings: unbind a caller, invalidate a pool, report binding share.

These are what the admin API will expose (and what ``edgeproxy bindings``
calls now). The request path itself never calls them: bindings are created,
renewed and cleared by ``Outcomes`` after each attempt.

How stickiness behaves (the policy the rest of the package implements):

* **Caller**: the SHA-256 of the client's API key (``key:<hex>``), else the
  grant (``grant:<id>``), else the client IP bucket (``ip:<v4>`` or
  ``ip:<v6 /64>``); see ``routing.affinity.caller_id``. The raw key is never
  stored.
* **Binding**: (caller, pool, protocol) -> deployment, one item in the state
  table, idle TTL ``sticky.idle_ttl_seconds`` (3600 s unless the pool
  overrides it), on unless ``sticky.enabled: false``.
* **Renewal**: a success on the bound deployment rewrites the binding only
  once less than half its TTL remains (``affinity.should_renew``). One write
  per half-TTL per conversation instead of one per request, and a binding in
  use can never lapse: between two renewals at least half a TTL is left.
* **Replacement**: a success anywhere else (no binding, expired, from an
  older pool generation, or the bound deployment was skipped because it was
  ineligible, incompatible with the request, or removed) re-points the
  binding to the deployment that served. A conditional write keeps
  concurrent creators honest: the loser keeps the winner's binding.
* **Invalidation**: ``invalidate_pool`` bumps the pool's generation; every
  binding written under an older generation reads as absent from then on,
  without touching each item.

Usage::

    await unbind(store, "sk-live-...", "gpt-4o")          # a raw key is hashed first
    await unbind(store, "ip:2001:db8::/64", "gpt-4o")     # or a caller id as stored
    generation = await invalidate_pool(store, "gpt-4o")
    report = await binding_share(store, config, "gpt-4o", minutes=60, now=time.time())
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.errors import ModelNotFound
from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.routing.snapshot import Binding, BindingKey, Usage
from edgeproxy.state.store import AdminStore, SnapshotRequest

CALLER_PREFIXES = ("key:", "grant:", "ip:")
PROTOCOLS = (*(f"openai.{op.value}" for op in Operation), "anthropic.messages")


def resolve_caller(value: str) -> str:
    """The caller id for ``value``: a caller id as stored, a bare IP, or else a raw API key.

    >>> resolve_caller("ip:203.0.113.7")
    'ip:203.0.113.7'
    >>> resolve_caller("2001:db8::1")
    'ip:2001:db8::/64'
    >>> resolve_caller("sk-test")[:8]
    'key:f3ab'
    """
    value = value.strip()
    if value.startswith(CALLER_PREFIXES):
        return value
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return caller_id(key_digest(value), None, None)
    return caller_id(None, None, value)


def looks_like_caller_id(value: str) -> bool:
    """Whether ``value`` is a caller id or an IP address (not something to hash as a key)."""
    if value.strip().startswith(CALLER_PREFIXES):
        return True
    try:
        ipaddress.ip_address(value.strip())
    except ValueError:
        return False
    return True


async def unbind(
    store: AdminStore, caller: str, pool: str, protocol: str = "openai.chat"
) -> Binding | None:
    """Drop one caller's binding in ``pool``; returns what it named (None if there was none).

    ``caller`` goes through ``resolve_caller``. The returned binding may have
    expired already (it was still stored); the delete is unconditional.
    """
    key = BindingKey(resolve_caller(caller), pool, protocol)
    snapshot = await store.read_pool(
        SnapshotRequest(pool=pool, deployment_ids=(), domains=(), minute=0, binding=key)
    )
    if snapshot.binding is not None:
        await store.delete_binding(key)
    return snapshot.binding


async def invalidate_pool(store: AdminStore, pool: str) -> int:
    """Invalidate every binding of ``pool`` at once; returns the pool's new generation."""
    return await store.bump_pool_generation(pool)


@dataclass(frozen=True, slots=True)
class DeploymentShare:
    """One deployment's part of a pool's traffic over the report window.

    ``weight_share``: its configured weight over the pool's total weight.
    ``traffic_share``: its attempts (``requests``) over the pool's attempts.
    ``sticky_share``: its binding-routed successes over the pool's (the
    "binding share" to compare with ``weight_share``).
    """

    deployment_id: str
    weight: float
    weight_share: float
    requests: int
    successes: int
    sticky_hits: int
    traffic_share: float
    sticky_share: float


@dataclass(frozen=True, slots=True)
class PoolShare:
    """Binding share versus configured weight for one pool.

    ``sticky_fraction``: successes that a binding routed, over all successes.
    ``moved``: half the sum of ``|traffic_share - weight_share|``, the share
    of traffic that went elsewhere than the weights alone would send it (0:
    exactly as weighted, 1: entirely against the weights). Priority tiers
    move traffic too; this does not tell the two causes apart.
    """

    pool: str
    first_minute: int
    last_minute: int
    deployments: tuple[DeploymentShare, ...]
    requests: int
    sticky_fraction: float
    moved: float


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def share_of(
    pool: str,
    deployments: Sequence[Deployment],
    usage: Mapping[str, Sequence[Usage]],
    first_minute: int,
    last_minute: int,
) -> PoolShare:
    """Compute the report from usage buckets (pure; ``binding_share`` reads them)."""
    totals = {
        d.id: (
            sum(u.requests for u in usage.get(d.id, ())),
            sum(u.successes for u in usage.get(d.id, ())),
            sum(u.sticky_hits for u in usage.get(d.id, ())),
        )
        for d in deployments
    }
    weight = sum(d.weight for d in deployments)
    requests = sum(r for r, _, _ in totals.values())
    successes = sum(s for _, s, _ in totals.values())
    sticky = sum(h for _, _, h in totals.values())
    shares = tuple(
        DeploymentShare(
            deployment_id=d.id,
            weight=d.weight,
            weight_share=_ratio(d.weight, weight),
            requests=totals[d.id][0],
            successes=totals[d.id][1],
            sticky_hits=totals[d.id][2],
            traffic_share=_ratio(totals[d.id][0], requests),
            sticky_share=_ratio(totals[d.id][2], sticky),
        )
        for d in deployments
    )
    moved = sum(abs(s.traffic_share - s.weight_share) for s in shares) / 2 if requests else 0.0
    return PoolShare(
        pool=pool,
        first_minute=first_minute,
        last_minute=last_minute,
        deployments=shares,
        requests=requests,
        sticky_fraction=_ratio(sticky, successes),
        moved=moved,
    )


async def binding_share(
    store: AdminStore, config: GatewayConfig, pool: str, *, minutes: int = 60, now: float
) -> PoolShare:
    """Binding share versus configured weight in ``pool`` over the last ``minutes`` minutes.

    Reads the per-minute usage counters of every deployment of the pool (one
    query each, concurrently). Raises ``ModelNotFound`` for an unknown pool.
    """
    if minutes <= 0:
        raise ValueError("minutes must be positive")
    deployments = config.pool(pool)
    if not deployments:
        raise ModelNotFound(f"The model `{pool}` does not exist.", param="model")
    last = int(now // 60)
    first = last - minutes + 1
    buckets = await asyncio.gather(
        *(store.read_usage(d.id, first, last, d.counter_shards) for d in deployments)
    )
    usage = {d.id: found for d, found in zip(deployments, buckets, strict=True)}
    return share_of(pool, deployments, usage, first, last)
