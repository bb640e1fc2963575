"""One routing decision's items: which keys a ``SnapshotRequest`` reads, and its snapshot.

Split from the read itself so that several requests can share one
BatchGetItem (``DynamoStore.read_pools``): the union of their keys is read
once and each request's snapshot is cut from what was found.
"""

from __future__ import annotations

from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.state import items, keys
from edgeproxy.state.items import Item
from edgeproxy.state.key_items import key_usage_from
from edgeproxy.state.schema import TableSchema
from edgeproxy.state.store import SnapshotRequest


def minutes(request: SnapshotRequest) -> tuple[int, int]:
    """The usage buckets a decision reads: the previous minute and the current one."""
    return (request.minute - 1, request.minute)


def wanted(request: SnapshotRequest) -> list[keys.Key]:
    """Circuits, the last two usage buckets, health, capacity, generation, quotas,
    the binding and the client key's bucket and spend (when asked for)."""
    deps = list(request.deployment_ids)
    found = [keys.circuit_key(d) for d in deps]
    found += [keys.health_key(d) for d in deps]
    found += [keys.usage_key(d, m) for d in deps for m in minutes(request)]
    found += [keys.capacity_key(d) for d in request.domains]
    found.append(keys.pool_key(request.pool))
    found += [keys.quota_key(c) for c in request.credentials]
    if request.binding is not None:
        found.append(keys.binding_key(request.binding))
    if request.key_id is not None:
        found += [
            keys.key_usage_key(request.key_id, request.minute),
            keys.key_spend_key(request.key_id),
        ]
    return found


def snapshot(
    request: SnapshotRequest, found: dict[keys.Key, Item], schema: TableSchema
) -> PoolSnapshot:
    """``request``'s view of the items ``found`` (absent keys: their defaults)."""
    deps = list(request.deployment_ids)
    key_usage = None
    if request.key_id is not None:
        key_usage = key_usage_from(
            request.minute,
            found.get(keys.key_usage_key(request.key_id, request.minute), {}),
            found.get(keys.key_spend_key(request.key_id), {}),
        )
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
                items.usage_from(d, m, found[k])
                for m in minutes(request)
                if (k := keys.usage_key(d, m)) in found
            ]
            for d in deps
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
        key_usage=key_usage,
    )
