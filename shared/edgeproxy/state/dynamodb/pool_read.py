"""One routing decision's items: which keys a ``SnapshotRequest`` reads, and its snapshot.

Split from the read itself so that several requests can share one
BatchGetItem (``DynamoStore.read_pools``): the union of their keys is read
once and each request's snapshot is cut from what was found.
"""

from __future__ import annotations

from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.state import items, keys
from edgeproxy.state.counter_shards import summed
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.items import Item
from edgeproxy.state.store import SnapshotRequest


def minutes(request: SnapshotRequest) -> tuple[int, ...]:
    """The usage buckets a decision reads: the previous minute (when it ranks by
    counters) and the current one."""
    if not request.previous_minute:
        return (request.minute,)
    return (request.minute - 1, request.minute)


def counted(request: SnapshotRequest) -> list[str]:
    """The deployments whose usage buckets the decision reads."""
    deps = request.deployment_ids if request.usage_ids is None else request.usage_ids
    return list(deps)


def wanted(request: SnapshotRequest) -> list[keys.Key]:
    """Circuits, health, the usage buckets asked for, capacity, quotas, the binding
    with its pool's generation."""
    deps = list(request.deployment_ids)
    found = [keys.circuit_key(d) for d in deps]
    found += [keys.health_key(d) for d in deps]
    found += [
        k
        for d in counted(request)
        for m in minutes(request)
        for k in keys.usage_shard_keys(d, m, request.shards_of(d))
    ]
    found += [keys.capacity_key(d) for d in request.domains]
    found += [keys.slot_key(d, i) for d, cap in request.slots for i in range(cap)]
    found += [keys.quota_key(c) for c in request.credentials]
    if request.binding is not None:
        # The pool's generation only decides whether the binding is still valid.
        found += [keys.binding_key(request.binding), keys.pool_key(request.pool)]
    return found


def _bucket(
    found: dict[keys.Key, Item], deployment_id: str, minute: int, shards: int, schema: TableSchema
) -> Item | None:
    """One minute bucket: its shard items summed (None: no shard was found)."""
    parts = [found[k] for k in keys.usage_shard_keys(deployment_id, minute, shards) if k in found]
    return summed(parts, schema.ttl)


def snapshot(
    request: SnapshotRequest, found: dict[keys.Key, Item], schema: TableSchema
) -> PoolSnapshot:
    """``request``'s view of the items ``found`` (absent keys: their defaults)."""
    deps = list(request.deployment_ids)
    binding = None
    if request.binding is not None and (k := keys.binding_key(request.binding)) in found:
        binding = items.binding_from(request.binding, found[k], schema.ttl)
    return PoolSnapshot(
        circuits={
            d: items.circuit_from(d, found[k]) for d in deps if (k := keys.circuit_key(d)) in found
        },
        capacities={
            d: items.capacity_from(d, found[k])
            for d in request.domains
            if (k := keys.capacity_key(d)) in found
        },
        usage={
            d: [
                items.usage_from(d, m, bucket)
                for m in minutes(request)
                if (bucket := _bucket(found, d, m, request.shards_of(d), schema)) is not None
            ]
            for d in counted(request)
        },
        health={
            d: items.health_from(d, found[k]) for d in deps if (k := keys.health_key(d)) in found
        },
        binding=binding,
        pool_generation=items.get_int(found.get(keys.pool_key(request.pool), {}), "generation"),
        quotas={
            c: items.quota_status_from(c, found[k])
            for c in request.credentials
            if (k := keys.quota_key(c)) in found
        },
        slots={
            d: {
                i: items.get_float(found[k], "until")
                for i in range(cap)
                if (k := keys.slot_key(d, i)) in found
            }
            for d, cap in request.slots
        },
    )
