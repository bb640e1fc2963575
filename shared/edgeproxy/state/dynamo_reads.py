"""The reads of ``DynamoStore``: one routing decision's items, and the configuration.

Consistency: ``read_pool`` is the one read on every request, and it is
*eventually consistent* (half the read units of a strongly consistent read;
DynamoDB may answer without a write of the last second or so). A stale read
cannot break a transition, because every transition decided on it is a
conditional write that checks the stored item, not the read: a circuit's
(``write_circuit``, on its version: a stale read loses and gets the winner,
so a half-open probe still has one owner), a binding's (``put_binding``, on
deployment and version, or absence), admission (``admit``/``admit_key``, the
rpm/tpm condition on the counter itself), a throttle (``extend_capacity``,
only ever longer) and a quota reading (``put_quota``, only newer). What a
stale read can do is route one request on state a second old: one more
attempt on a deployment whose circuit just opened, a count that misses the
last requests (ordering only; limits are exact at admission), a key's spend
or a pool's invalidation seen up to that much later. The reads whose answer
is acted on without such a condition stay strongly consistent: the
configuration (``load_config``), client keys, and the jobs' and the admin
plane's own reads (the admin views built on ``read_pool``, deep health and a
binding's lookup, share its consistency).

``read_pool`` asks only for the items its request names: ``SnapshotRequest.of``
leaves out the usage buckets the pool's strategies and limits never look at,
and the pool item (its generation) unless a binding is read.
"""

from __future__ import annotations

from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.state import items, keys
from edgeproxy.state.key_items import key_usage_from
from edgeproxy.state.schema import TableSchema
from edgeproxy.state.store import SnapshotRequest, StoredConfig
from edgeproxy.state.table import Table


class DynamoReads:
    """``read_pool`` and ``load_config`` (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema

    async def read_pool(self, request: SnapshotRequest) -> PoolSnapshot:
        """Circuits, the last two usage buckets, health, capacity, binding, generation, quotas.

        With ``request.key_id``, also the client key's minute bucket and spend
        (its tpm limit and budget are checked on the same read).
        """
        minutes: tuple[int, ...] = (request.minute - 1, request.minute)
        if not request.previous_minute:
            minutes = (request.minute,)
        deps = list(request.deployment_ids)
        counted = deps if request.usage_ids is None else list(request.usage_ids)
        wanted = [keys.circuit_key(d) for d in deps]
        wanted += [keys.health_key(d) for d in deps]
        wanted += [keys.usage_key(d, m) for d in counted for m in minutes]
        wanted += [keys.capacity_key(d) for d in request.domains]
        wanted += [keys.quota_key(c) for c in request.credentials]
        if request.binding is not None:
            # The pool's generation only decides whether the binding is still valid.
            wanted += [keys.binding_key(request.binding), keys.pool_key(request.pool)]
        if request.key_id is not None:
            key_bucket = keys.key_usage_key(request.key_id, request.minute)
            wanted += [key_bucket, keys.key_spend_key(request.key_id)]
        found = await self._table.batch_get(wanted, consistent=False)
        key_usage = None
        if request.key_id is not None:
            key_usage = key_usage_from(
                request.minute,
                found.get(key_bucket, {}),
                found.get(keys.key_spend_key(request.key_id), {}),
            )

        binding = None
        if request.binding is not None and (k := keys.binding_key(request.binding)) in found:
            binding = items.binding_from(request.binding, found[k], self._schema.ttl)
        return PoolSnapshot(
            circuits={
                d: items.circuit_from(d, found[k])
                for d in deps
                if (k := keys.circuit_key(d)) in found
            },
            capacities={
                d: items.capacity_from(d, found[k])
                for d in request.domains
                if (k := keys.capacity_key(d)) in found
            },
            usage={
                d: [
                    items.usage_from(d, m, found[k])
                    for m in minutes
                    if (k := keys.usage_key(d, m)) in found
                ]
                for d in counted
            },
            health={
                d: items.health_from(d, found[k])
                for d in deps
                if (k := keys.health_key(d)) in found
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

    async def load_config(self) -> StoredConfig | None:
        """The stored configuration document, or None if none was saved."""
        response = await self._table.call(
            "get_item", Key=self._table.key(keys.config_key()), ConsistentRead=True
        )
        item = response.get("Item")
        if not item:
            return None
        return StoredConfig(
            document=items.get_text(item, "document") or "", version=items.get_int(item, "version")
        )
